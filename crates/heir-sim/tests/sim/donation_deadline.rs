//! The donation model with `SCHED_DEADLINE` callers: the server's work is
//! charged to the lent reservation it runs on (budget consumed, throttled when
//! it runs out).

use crate::common::*;
use heir_core::Urgency;
use heir_scenario::Scenario;
use heir_sim::{InstantKind, SimConfig};

fn parse(text: &str) -> Scenario {
    heir_scenario::parse_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

/// (ms, thread) of the throttle and replenish instants.
fn budget_events(rec: &Rec) -> Vec<(f64, String, InstantKind)> {
    rec.instants()
        .into_iter()
        .filter(|i| matches!(i.2, InstantKind::Throttle | InstantKind::Replenish))
        .map(|i| (i.0, i.1, i.2))
        .collect()
}

const ONE_CALLER: &str = r#"{
  "global": { "ipc": "donation", "duration": 0.03 },
  "tasks": {
    "S": { "passive": true, "cpus": [0], "loop": -1, "serve": "s" },
    "C": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000,
           "cpus": [0], "loop": 1, "call": { "server": "s", "run": 3000 } }
  }
}"#;

#[test]
fn a_passive_server_runs_on_its_deadline_callers_budget_and_is_throttled_with_it() {
    // C (2 ms every 10 ms) calls passive S for 3 ms of work. S runs on C's
    // reservation: 0–2 ms at C's deadline (10 ms); C's budget is spent by S's
    // work, C's reservation is throttled at 2 ms and S stops with it (no other
    // reservation lent to it); replenished at 10 ms (deadline 20 ms), S
    // finishes 10–11 ms and replies: C's response 11 ms.
    let (r, rec) = run(&parse(ONE_CALLER), &SimConfig::default());
    assert_eq!(
        rec.slices_of("S"),
        vec![
            (0.0, 2.0, Urgency::deadline(10_000_000), Some(s("C"))),
            (10.0, 11.0, Urgency::deadline(20_000_000), Some(s("C"))),
        ]
    );
    assert_eq!(
        budget_events(&rec),
        vec![
            (2.0, s("C"), InstantKind::Throttle),
            (10.0, s("C"), InstantKind::Replenish),
        ]
    );
    assert_eq!(max_ms(&r, "C"), 11.0);
    let srv = task_report(&r, "C").server.expect("C has a reservation");
    assert_eq!((srv.throttled, srv.replenished), (1, 1));
    assert_eq!(task_report(&r, "S").server, None);
}

#[test]
fn a_deadline_helper_pays_for_the_rest_of_the_request_and_for_its_own_call() {
    // As above, plus D (3 ms every 20 ms, released at 1 ms) that calls S
    // for 1 ms, then runs 1.5 ms itself.
    //   0–2   S on C's reservation (deadline 10 ms, earlier than D's 21 ms);
    //         C throttled at 2 ms
    //   2     D runs, calls S: busy, D helps. S finishes C's request on
    //         D's reservation (2–3 ms) and replies to C — C stays throttled
    //         until 10 ms (response 10 ms); S takes D's call (3–4 ms, D's
    //         reservation). D's budget: 3 − 2 = 1 ms left
    //   4–5   D runs on the 1 ms left: throttled at 5 ms with 0.5 ms to
    //         go; replenished at 21 ms (deadline 41 ms), done at 21.5 ms
    //         (response 20.5 ms)
    let two = ONE_CALLER.replace(
        r#""call": { "server": "s", "run": 3000 } }"#,
        r#""call": { "server": "s", "run": 3000 } },
    "D": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 20000,
           "cpus": [0], "loop": 1, "delay": 1000,
           "call": { "server": "s", "run": 1000 }, "run": 1500 }"#,
    );
    let (r, rec) = run(&parse(&two), &SimConfig::default());
    assert_eq!(
        rec.slices_of("S"),
        vec![
            (0.0, 2.0, Urgency::deadline(10_000_000), Some(s("C"))),
            (2.0, 3.0, Urgency::deadline(21_000_000), Some(s("D"))),
            (3.0, 4.0, Urgency::deadline(21_000_000), Some(s("D"))),
        ]
    );
    assert_eq!(
        rec.slices_of("D"),
        vec![
            (4.0, 5.0, Urgency::deadline(21_000_000), None),
            (21.0, 21.5, Urgency::deadline(41_000_000), None),
        ]
    );
    assert_eq!(
        budget_events(&rec),
        vec![
            (2.0, s("C"), InstantKind::Throttle),
            (5.0, s("D"), InstantKind::Throttle),
            (10.0, s("C"), InstantKind::Replenish),
            (21.0, s("D"), InstantKind::Replenish),
        ]
    );
    assert_eq!((max_ms(&r, "C"), max_ms(&r, "D")), (10.0, 20.5));
    for t in ["C", "D"] {
        let srv = task_report(&r, t).server.expect("a reservation");
        assert_eq!((srv.throttled, srv.replenished), (1, 1), "{t}");
    }
}
