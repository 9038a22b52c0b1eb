//! The donation model's keys (NOVA donation): `global.ipc`, `passive`, a call's
//! `timeout` and handler — what they read into, and every error, with its
//! file:line:col and JSON path.

use heir_scenario::{CallSpec, HandlerEvent, IpcModel, Micros, TaskIdx};

use crate::common::*;

/// A scenario under `"ipc": ipc` with server `S` of endpoint `e` and task
/// `A` whose body is `a`.
fn with(ipc: &str, a: &str) -> String {
    format!(r#"{{"global": {{"ipc": "{ipc}"}}, "tasks": {{"S": {{"serve": "e"}}, "A": {{{a}}}}}}}"#)
}

fn don(a: &str) -> String {
    with("donation", a)
}

const NEEDS: &str = "needs the donation model: set \"ipc\": \"donation\" in global";

#[test]
fn keys_of_the_donation_model_need_it() {
    let pi = |a: &str| with("pi-cv", a);
    let cases = [
        (
            pi(r#""call": {"server": "e", "run": 1, "timeout": 5}"#),
            format!("t.json:1:101: at tasks.A.call.timeout: a call's \"timeout\" {NEEDS}"),
        ),
        (
            pi(r#""call": {"server": "e", "run": 1, "call": {"server": "e", "run": 1}}"#),
            format!("t.json:1:101: at tasks.A.call.call: a nested \"call\" {NEEDS}"),
        ),
        (
            pi(r#""lock": "m", "unlock": "m", "call": {"server": "e", "run": 1, "lock": "m", "unlock": "m"}"#),
            format!("t.json:1:129: at tasks.A.call.lock: a handler's \"lock\" {NEEDS}"),
        ),
        (
            pi(r#""call": {"server": "e", "run": 1, "sleep": 5}"#),
            format!("t.json:1:101: at tasks.A.call.sleep: a handler's \"sleep\" {NEEDS}"),
        ),
        (
            pi(r#""call": {"server": "e", "run": 1, "run": 2}"#),
            format!("t.json:1:101: at tasks.A.call.run1: a handler's second \"run\" {NEEDS}"),
        ),
        (
            pi(r#""passive": true, "serve": "e""#),
            "t.json:1:78: at tasks.A.passive: a passive task runs only on time donated through \
             calls: it needs \"ipc\": \"donation\" in global"
                .to_string(),
        ),
        (
            // The default model is "pi-cv".
            r#"{"tasks": {"S": {"serve": "e"}, "A": {"call": {"server": "e", "run": 1, "timeout": 5}}}}"#
                .to_string(),
            format!("t.json:1:73: at tasks.A.call.timeout: a call's \"timeout\" {NEEDS}"),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err_str(&text), want, "{text}");
    }
}

#[test]
fn bad_values_of_the_donation_keys() {
    let cases = [
        (
            don(r#""call": {"server": "e", "run": 1, "timeout": 0}"#),
            "t.json:1:115: at tasks.A.call.timeout: timeout must be positive (µs > 0), found 0",
        ),
        (
            don(r#""call": {"server": "e", "run": 1, "timeout": -3}"#),
            "t.json:1:115: at tasks.A.call.timeout: expected µs as a non-negative integer, found -3",
        ),
        (
            don(r#""passive": 1, "serve": "e""#),
            "t.json:1:81: at tasks.A.passive: expected true or false, found 1",
        ),
        (
            r#"{"global": {"ipc": "nova"}, "tasks": {"A": {"run": 1}}}"#.to_string(),
            "t.json:1:20: at global.ipc: expected \"pi-cv\" or \"donation\", found \"nova\"",
        ),
        (
            don(r#""call": {"server": "e", "run": 1, "sleep": -1}"#),
            "t.json:1:113: at tasks.A.call.sleep: expected µs as a non-negative integer or \
             {\"min\":…,\"max\":…}, found -1",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err_str(&text), want, "{text}");
    }
}

#[test]
fn a_passive_task_only_serves() {
    assert_eq!(
        err_str(&don(r#""passive": true, "serve": "e", "run": 5"#)),
        "t.json:1:81: at tasks.A.passive: task \"A\" is passive (it runs only on donated time): \
         its events must all be \"serve\", but tasks.A.run is not"
    );
    // Also in a phase.
    assert_eq!(
        err_str(&don(
            r#""passive": true, "phases": {"p": {"serve": "e"}, "q": {"sleep": 5}}"#
        )),
        "t.json:1:81: at tasks.A.passive: task \"A\" is passive (it runs only on donated time): \
         its events must all be \"serve\", but tasks.A.phases.q.sleep is not"
    );
}

#[test]
fn a_passive_task_has_no_deadline_reservation() {
    // Found by heir-fuzz: a passive SCHED_DEADLINE server ran on its own
    // budget. No time of its own means no reservation either.
    let expected = "at tasks.A.passive: task \"A\" is passive (it runs only on donated time): \
                    it cannot have a SCHED_DEADLINE reservation of its own; remove its \"policy\" \
                    or \"passive\"";
    let e = err_str(&don(
        r#""policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000, "passive": true, "serve": "e""#,
    ));
    assert!(e.ends_with(expected), "{e}");
    // Also when a phase makes it one.
    let e = err_str(&don(
        r#""passive": true, "phases": {"p": {"serve": "e"}, "q": {"policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000, "serve": "e"}}"#,
    ));
    assert!(e.ends_with(expected), "{e}");
}

#[test]
fn the_keys_of_a_call_object() {
    let cases = [
        (
            don(r#""call": {"server": "e", "run": 1, "yield": 1}"#),
            "t.json:1:104: at tasks.A.call.yield: unknown key \"yield\" in a call: expected \
             \"server\", \"timeout\", \"run\", \"lock\", \"unlock\", \"sleep\", \"call\"",
        ),
        (
            don(r#""call": {"server": "e", "run": 1, "server": "e"}"#),
            "t.json:1:104: at tasks.A.call.server1: duplicate key \"server\" in a call",
        ),
        (
            don(r#""call": {"server": "e", "timeout": 5, "run": 1, "timeout": 6}"#),
            "t.json:1:118: at tasks.A.call.timeout1: duplicate key \"timeout\" in a call",
        ),
        (
            don(r#""call": {"server": "e", "timeout": 5}"#),
            "t.json:1:78: at tasks.A.call: missing \"run\": a call needs \"server\" (an \
             endpoint) and \"run\" (µs of work done by the server)",
        ),
        (
            don(r#""call": {"server": "e", "run": 1, "call": {"run": 1}}"#),
            "t.json:1:112: at tasks.A.call.call: missing \"server\": a call needs \"server\" \
             (endpoint name)",
        ),
        (
            don(r#""signal": "m", "call": {"server": "e", "run": 1, "lock": "m", "unlock": "m"}"#),
            "t.json:1:127: at tasks.A.call.lock: \"m\" is used as a cond at tasks.A.signal and \
             as a mutex at tasks.A.call.lock",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err_str(&text), want, "{text}");
    }
}

#[test]
fn a_handler_gives_back_the_mutexes_it_takes() {
    let cases = [
        (
            don(r#""call": {"server": "e", "run": 1, "unlock": "m"}"#),
            "t.json:1:114: at tasks.A.call.unlock: this handler unlocks mutex \"m\", which it \
             does not hold at this point: lock \"m\" earlier in the same handler",
        ),
        (
            don(r#""call": {"server": "e", "lock": "m", "run": 1, "lock": "m", "unlock": "m"}"#),
            "t.json:1:125: at tasks.A.call.lock1: this handler locks mutex \"m\", which it \
             already holds: it locked it at tasks.A.call.lock and has not unlocked it since (a \
             mutex cannot be locked twice)",
        ),
        (
            don(r#""call": {"server": "e", "run": 1, "lock": "m"}"#),
            "t.json:1:78: at tasks.A.call: this handler ends holding mutex \"m\" (locked at \
             tasks.A.call.lock): unlock \"m\" before the handler ends, the server replies \
             without it",
        ),
        (
            // A nested call's handler is its own: the outer lock does not
            // count there.
            don(
                r#""call": {"server": "e", "lock": "m", "run": 1, "call": {"server": "e", "run": 1, "unlock": "m"}, "unlock": "m"}"#,
            ),
            "t.json:1:161: at tasks.A.call.call.unlock: this handler unlocks mutex \"m\", which \
             it does not hold at this point: lock \"m\" earlier in the same handler",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err_str(&text), want, "{text}");
    }
}

#[test]
fn a_handler_is_read_in_file_order_with_workgen_names() {
    let s = ok(&don(
        r#""call": {"server": "e", "timeout": 900, "run": 10, "lock": "m", "run": {"min": 1, "max": 5},
                   "unlock": "m", "sleep": 7, "call": {"server": "f", "run": 3}}},
           "F": {"serve": "f""#,
    ));
    assert_eq!(s.rpc.model, IpcModel::Donation);
    let at = s.rpc.call_at("tasks.A.call").expect("recorded");
    let steps: Vec<(&str, &HandlerEvent)> = at
        .handler
        .iter()
        .map(|h| (h.path.as_str(), &h.event))
        .collect();
    let m = res(&s, "m", "mutex").0;
    let f = res(&s, "f", "endpoint").0;
    let nested = CallSpec {
        endpoint: heir_scenario::ResIdx(f),
        run: Micros::Fixed(3),
        timeout_us: None,
        handler: vec![heir_scenario::HandlerStep {
            path: "tasks.A.call.call.run".into(),
            event: HandlerEvent::Run(Micros::Fixed(3)),
        }],
    };
    assert_eq!(
        steps,
        vec![
            ("tasks.A.call.run", &HandlerEvent::Run(Micros::Fixed(10))),
            (
                "tasks.A.call.lock",
                &HandlerEvent::Lock(heir_scenario::ResIdx(m))
            ),
            (
                "tasks.A.call.run1",
                &HandlerEvent::Run(Micros::Uniform { min: 1, max: 5 })
            ),
            (
                "tasks.A.call.unlock",
                &HandlerEvent::Unlock(heir_scenario::ResIdx(m))
            ),
            ("tasks.A.call.sleep", &HandlerEvent::Sleep(Micros::Fixed(7))),
            ("tasks.A.call.call", &HandlerEvent::Call(Box::new(nested))),
        ]
    );
    assert_eq!(at.timeout_us, Some(900));
    // The faces without handlers read the runs added up.
    assert_eq!(at.run, Micros::Uniform { min: 11, max: 15 });
    assert_eq!(
        kinds(&s, 1, 0),
        vec![heir_scenario::EventKind::Call {
            endpoint: heir_scenario::ResIdx(res(&s, "e", "endpoint").0),
            run: Micros::Uniform { min: 11, max: 15 },
        }]
    );
    // A plain call is not recorded.
    let s = ok(&don(r#""call": {"server": "e", "run": 4}"#));
    assert!(s.rpc.calls.is_empty());
    assert!(!s.rpc.is_passive(TaskIdx(0)));
}
