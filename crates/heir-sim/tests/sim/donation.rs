//! NOVA donation (timeslice donation and helping, `global.ipc:
//! "donation"`): the examples' instants and response times, worked out by
//! hand in each file's header comment.

use crate::common::*;
use heir_core::Urgency;
use heir_sim::{InstantKind, SimConfig};

fn replies(rec: &Rec) -> Vec<(f64, String)> {
    rec.instants()
        .into_iter()
        .filter(|i| i.2 == InstantKind::Reply)
        .map(|i| (i.0, i.1))
        .collect()
}

#[test]
fn fig3_left_donation_lends_the_callers_timeslice_to_the_server() {
    let sc = example("nova-fig3-donation.json");
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("C", 0.0, 1.0),
            ("S", 1.0, 4.0),
            ("C", 4.0, 5.0),
            ("T", 5.0, 7.0)
        ])
    );
    // S serves on C's timeslice, at C's priority.
    assert_eq!(
        rec.slices_of("S"),
        vec![(1.0, 4.0, Urgency::fixed(30), Some(s("C")))]
    );
    assert_eq!((max_ms(&r, "C"), max_ms(&r, "T")), (5.0, 5.0));
    assert_eq!(r.deadlock, None);
    // PI-CV off: the call lends nothing; T preempts S (priority inversion).
    let (r, rec) = run(&sc, &pi_cv(false));
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("C", 0.0, 1.0),
            ("S", 1.0, 2.0),
            ("T", 2.0, 4.0),
            ("S", 4.0, 6.0),
            ("C", 6.0, 7.0)
        ])
    );
    assert_eq!((max_ms(&r, "C"), max_ms(&r, "T")), (7.0, 2.0));
}

#[test]
fn fig3_right_a_helper_lends_its_timeslice_to_the_busy_passive_server() {
    let (r, rec) = run(&example("nova-fig3-helping.json"), &SimConfig::default());
    assert_eq!(rec.merged(0), rows(&[("S", 0.0, 5.0), ("M", 5.0, 7.0)]));
    // Whose time S runs on: C's, then H's (helping, then H's own call).
    assert_eq!(
        rec.slices_of("S"),
        vec![
            (0.0, 1.0, Urgency::fixed(20), Some(s("C"))),
            // Helping until 4 ms, then H's own call (the slice is cut
            // where the helping link becomes a donation).
            (1.0, 4.0, Urgency::fixed(40), Some(s("H"))),
            (4.0, 5.0, Urgency::fixed(40), Some(s("H"))),
        ]
    );
    assert_eq!(replies(&rec), vec![(4.0, s("S")), (5.0, s("S"))]);
    assert_eq!(
        (max_ms(&r, "C"), max_ms(&r, "H"), max_ms(&r, "M")),
        (7.0, 4.0, 5.5)
    );
}

#[test]
fn an_aborted_call_leaves_a_passive_server_stalled_until_a_later_caller_helps() {
    let (r, rec) = run(&example("nova-abort-passive.json"), &SimConfig::default());
    assert_eq!(
        rec.slices_of("S"),
        vec![
            (0.0, 1.0, Urgency::fixed(20), Some(s("C"))),
            (2.0, 4.0, Urgency::fixed(30), Some(s("L"))),
            (4.0, 5.0, Urgency::fixed(30), Some(s("L"))),
        ]
    );
    let aborts: Vec<_> = rec
        .instants()
        .into_iter()
        .filter(|i| i.2 == InstantKind::Abort)
        .map(|i| (i.0, i.1, i.3))
        .collect();
    assert_eq!(aborts, vec![(1.0, s("C"), s("s"))]);
    // The orphaned request ends at 4 ms (nobody replied to), L's at 5 ms.
    assert_eq!(replies(&rec), vec![(4.0, s("S")), (5.0, s("S"))]);
    assert_eq!(task_report(&r, "C").aborted_calls, Some(1));
    assert_eq!(task_report(&r, "L").aborted_calls, Some(0));
    assert_eq!((max_ms(&r, "C"), max_ms(&r, "L")), (1.0, 3.0));
}

#[test]
fn fig5_the_reply_goes_back_along_the_donation_path_only() {
    let (r, rec) = run(&example("nova-fig5.json"), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("Y", 0.0, 1.0), ("Z", 1.0, 5.0), ("M", 5.0, 6.0)])
    );
    assert_eq!(
        rec.slices_of("Z"),
        vec![
            (1.0, 2.0, Urgency::fixed(20), Some(s("A"))),
            (2.0, 4.0, Urgency::fixed(40), Some(s("H"))),
            (4.0, 5.0, Urgency::fixed(40), Some(s("H"))),
        ]
    );
    // Z replies to Y at 4 ms on H's timeslice: Y does not run then (nor
    // on H's time); it replies to A at 6 ms, after M, on A's time.
    assert_eq!(
        replies(&rec),
        vec![(4.0, s("Z")), (5.0, s("Z")), (6.0, s("Y"))]
    );
    assert_eq!(
        (max_ms(&r, "A"), max_ms(&r, "H"), max_ms(&r, "M")),
        (6.0, 3.0, 3.5)
    );
}

#[test]
fn fig7_servers_that_would_help_each_other_forever_are_a_livelock() {
    let (r, rec) = run(&example("nova-fig7.json"), &SimConfig::default());
    let d = r.deadlock.expect("livelock");
    assert_eq!(d.kind, heir_report::DeadlockKind::Livelock);
    assert_eq!(d.at_us, 2000.0);
    assert_eq!(d.cycle, vec![s("Z"), s("y"), s("Y"), s("z"), s("Z")]);
    assert_eq!(rec.merged(0), rows(&[("Y", 0.0, 1.0), ("Z", 1.0, 2.0)]));
}

#[test]
fn table1_under_pi_cv_is_unchanged_by_the_donation_code() {
    // The PI-CV model stays the default: no aborted_calls in its report.
    let (r, _) = run(&example("table1-client-server.json"), &config(200));
    assert!(r.tasks.iter().all(|t| t.aborted_calls.is_none()));
}

/// Y serves `y`, then calls `y` itself; with `other`, passive Y2 serves
/// `y` too. C (prio 30) calls `y` first.
fn serves_and_calls(other: bool) -> heir_scenario::Scenario {
    let y2 = if other {
        r#""Y2": { "passive": true, "cpus": [0], "loop": -1, "serve": "y" },"#
    } else {
        ""
    };
    heir_scenario::parse_str(
        &format!(
            r#"{{
        "global": {{ "default_policy": "SCHED_FIFO", "ipc": "donation", "duration": 0.01 }},
        "tasks": {{
            "Y": {{ "priority": 20, "cpus": [0], "loop": 1,
                   "serve": "y", "call": {{ "server": "y", "run": 1000 }} }},
            {y2}
            "C": {{ "priority": 30, "cpus": [0], "loop": 1,
                   "call": {{ "server": "y", "run": 1000 }} }}
        }}
    }}"#
        ),
        "t.json",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_server_calling_its_own_endpoint_helps_the_other_servers_not_itself() {
    // 0 ms: C calls y (nobody waits yet): C helps; Y takes C's call and
    // serves it on C's time (0–1 ms). 1 ms: Y calls y: Y2 has never run,
    // Y helps it — not itself (it cannot take its own call) — and Y2
    // serves Y's call on Y's time (1–2 ms). No livelock.
    let (r, rec) = run(&serves_and_calls(true), &SimConfig::default());
    assert_eq!(r.deadlock, None);
    assert_eq!(
        rec.slices_of("Y2"),
        vec![(1.0, 2.0, Urgency::fixed(20), Some(s("Y")))]
    );
    assert_eq!(replies(&rec), vec![(1.0, s("Y")), (2.0, s("Y2"))]);
    assert_eq!((max_ms(&r, "C"), max_ms(&r, "Y")), (1.0, 2.0));
}

#[test]
fn a_sole_server_calling_its_own_endpoint_is_a_livelock() {
    // Nobody else can take Y's call: Y would help itself forever.
    let (r, _) = run(&serves_and_calls(false), &SimConfig::default());
    let d = r.deadlock.expect("livelock");
    assert_eq!(d.kind, heir_report::DeadlockKind::Livelock);
    assert_eq!(d.at_us, 1000.0);
    assert_eq!(d.cycle, vec![s("Y"), s("y"), s("Y")]);
}
