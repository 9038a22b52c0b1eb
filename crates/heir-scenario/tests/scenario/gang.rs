//! Gangs (GPM): the `gang` resource, the gang events, `global.gpm`,
//! and their errors with positions.

use heir_scenario::{
    EventKind, GangOp, ResIdx, ResourceKind, TaskIdx, GANG_ALL_BITS, GANG_DEFAULT_BITS,
};

use crate::common::*;

#[test]
fn gang_events_read_with_their_defaults() {
    let s = ok(r#"{
      "resources": {"G": {"type": "gang", "members": ["B", "A"]}},
      "tasks": {
        "A": {"gang_run": "G", "gang_run1": {"gang": "G", "mask": 6},
              "gang_wait": "G", "gang_wait1": {"gang": "G", "timeout": 500},
              "gang_notify": "G", "gang_insert": "H", "gang_remove": "H",
              "gang_active": "G", "gang_active1": {"gang": "G", "bits": 4},
              "gang_passive": "G", "gang_passive1": {"gang": "G", "bits": 1},
              "gang_wait2": {"gang": "G"}},
        "B": {"run": 1}
      }
    }"#);
    assert_eq!(
        *res_kind(&s, "G", "gang"),
        ResourceKind::Gang {
            members: vec![TaskIdx(1), TaskIdx(0)]
        }
    );
    // A gang used but not declared is created with no members.
    assert_eq!(
        *res_kind(&s, "H", "gang"),
        ResourceKind::Gang { members: vec![] }
    );
    let (g, h) = (ResIdx(0), ResIdx(1));
    let ev = |gang, op| EventKind::Gang { gang, op };
    assert_eq!(
        kinds(&s, 0, 0),
        vec![
            ev(
                g,
                GangOp::Run {
                    mask: GANG_ALL_BITS
                }
            ),
            ev(g, GangOp::Run { mask: 6 }),
            ev(g, GangOp::Wait { timeout_us: None }),
            ev(
                g,
                GangOp::Wait {
                    timeout_us: Some(500)
                }
            ),
            ev(g, GangOp::Notify),
            ev(h, GangOp::Insert),
            ev(h, GangOp::Remove),
            ev(
                g,
                GangOp::Active {
                    bits: GANG_DEFAULT_BITS
                }
            ),
            ev(g, GangOp::Active { bits: 4 }),
            ev(
                g,
                GangOp::Passive {
                    bits: GANG_ALL_BITS
                }
            ),
            ev(g, GangOp::Passive { bits: 1 }),
            ev(g, GangOp::Wait { timeout_us: None }),
        ]
    );
    assert!(s.global.gpm);
    let off = ok(r#"{"global": {"gpm": false}, "tasks": {"A": {"gang_run": "G", "run": 1}}}"#);
    assert!(!off.global.gpm);
}

#[test]
fn gang_errors_name_the_path() {
    let cases = [
        (r#""resources": {"G": {"type": "gang", "members": ["A", "Z"]}}, "#, r#""run": 1"#,
         "resources.G.members[1]", "member \"Z\" is not a task; the tasks are: \"A\", \"B\""),
        (r#""resources": {"G": {"type": "gang", "members": ["A", "A"]}}, "#, r#""run": 1"#,
         "resources.G.members[1]", "member \"A\" is listed twice"),
        (r#""resources": {"G": {"type": "gang", "members": "A"}}, "#, r#""run": 1"#,
         "resources.G.members", "expected an array of task names, found \"A\""),
        (r#""resources": {"G": {"type": "gang", "members": [], "mask": 1}}, "#, r#""run": 1"#,
         "resources.G.mask", "unknown key \"mask\" in a gang: expected \"type\", \"members\""),
        (r#""resources": {"G1": {"type": "gang", "members": ["B", "A"]}, "G2": {"type": "gang", "members": ["A"]}}, "#, r#""run": 1"#,
         "resources.G2.members[0]", "task \"A\" is already a member of gang \"G1\" (at resources.G1.members[1]): a thread is a member of at most one gang"),
        ("", r#""gang_run": {"gang": "G", "mask": 0}"#,
         "tasks.A.gang_run.mask", "expected a mask (an integer 1..=268435455: 28 membership bits), found 0"),
        ("", r#""gang_run": {"gang": "G", "mask": 268435456}"#,
         "tasks.A.gang_run.mask", "expected a mask (an integer 1..=268435455: 28 membership bits), found 268435456"),
        ("", r#""gang_active": {"gang": "G", "bits": -1}"#,
         "tasks.A.gang_active.bits", "expected bits (an integer 1..=268435455: 28 membership bits), found -1"),
        ("", r#""gang_wait": {"gang": "G", "timeout": 0}"#,
         "tasks.A.gang_wait.timeout", "timeout must be positive (µs > 0), found 0"),
        ("", r#""gang_wait": {"gang": "G", "mask": 1}"#,
         "tasks.A.gang_wait.mask", "unknown key \"mask\" in a gang_wait: expected \"gang\", \"timeout\""),
        ("", r#""gang_run": {"mask": 1}"#,
         "tasks.A.gang_run", "missing \"gang\": a gang_run needs \"gang\" (gang name)"),
        ("", r#""gang_run": 3"#,
         "tasks.A.gang_run", "expected a gang name (a string) or {\"gang\": gang, \"mask\": …}, found 3"),
        ("", r#""gang_notify": {"gang": "G"}"#,
         "tasks.A.gang_notify", "expected a string (gang name), found an object"),
        (r#""resources": {"G": {"type": "mutex"}}, "#, r#""lock": "G", "gang_notify": "G", "unlock": "G""#,
         "tasks.A.gang_notify", "\"G\" is declared as a mutex at resources.G and used as a gang at tasks.A.gang_notify"),
        (r#""global": {"gpm": 1}, "#, r#""run": 1"#,
         "global.gpm", "expected true or false, found 1"),
    ];
    for (top, body, path, message) in cases {
        let text = format!(r#"{{{top}"tasks": {{"A": {{{body}}}, "B": {{"run": 1}}}}}}"#);
        let e = err(&text);
        assert_eq!(e.message, message, "{top}{body}");
        assert_eq!(e.path.as_deref(), Some(path), "{top}{body}");
        assert!(e.line > 0, "{top}{body}: a position");
    }
}

#[test]
fn only_gang_wait_lets_time_pass() {
    // A looping task of gang events only spins at one instant unless it
    // waits: gang_wait can block, the others cannot.
    assert!(
        ok(r#"{"tasks": {"A": {"loop": -1, "gang_run": "G", "gang_wait": "G"}}}"#)
            .warnings
            .is_empty()
    );
    let e = err(r#"{"tasks": {"A": {"loop": -1, "gang_run": "G", "gang_notify": "G"}}}"#);
    assert!(e.message.contains("never lets time pass"), "{e}");
}
