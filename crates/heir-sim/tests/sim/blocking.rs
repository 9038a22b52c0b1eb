//! Handlers that block (the NOVA paper's Figs. 5–6, donation model): a server that
//! locks a mutex or sleeps while it runs on donated time parks the lent
//! timeslices; when it unblocks it runs on the most urgent one, the others
//! follow as the first leaves.

use crate::common::*;
use heir_core::Urgency;
use heir_scenario::{MutexProtocol, ResourceKind, Scenario};
use heir_sim::{InstantKind, SimConfig};

fn instants_of(rec: &Rec, kind: InstantKind) -> Vec<(f64, String)> {
    rec.instants()
        .into_iter()
        .filter(|i| i.2 == kind)
        .map(|i| (i.0, i.1))
        .collect()
}

/// The example with mutex `m` under protocol `p`.
fn with_protocol(mut sc: Scenario, p: MutexProtocol) -> Scenario {
    for r in &mut sc.resources {
        if r.name == "m" {
            r.kind = ResourceKind::Mutex { protocol: p };
        }
    }
    sc
}

fn parse(text: &str) -> Scenario {
    heir_scenario::parse_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

fn replies(rec: &Rec) -> Vec<f64> {
    instants_of(rec, InstantKind::Reply)
        .into_iter()
        .map(|x| x.0)
        .collect()
}

#[test]
fn fig5_6_a_handler_blocked_on_a_pi_mutex_passes_the_lent_time_on_to_the_owner() {
    let (r, rec) = run(&example("nova-fig5-6-blocking.json"), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("O", 0.0, 0.5),
            ("L", 0.5, 1.0),
            ("Z", 1.0, 1.5),
            ("O", 1.5, 3.0),
            ("Z", 3.0, 3.5),
            ("L", 3.5, 5.5),
            ("Z", 5.5, 7.5),
            ("L", 7.5, 8.0)
        ])
    );
    let b = Some(s("B"));
    // Whose time Z runs on: B's (before and after blocking on m and in the
    // sleep: the most urgent parked timeslice), then D's once B leaves.
    assert_eq!(
        rec.slices_of("Z"),
        vec![
            (1.0, 1.5, Urgency::fixed(40), b.clone()),
            (3.0, 3.5, Urgency::fixed(40), b.clone()),
            (5.5, 6.5, Urgency::fixed(40), b.clone()),
            (6.5, 7.5, Urgency::fixed(30), Some(s("D"))),
        ]
    );
    // Z blocked on m: B's timeslice reaches O through the PI mutex.
    assert_eq!(
        rec.slices_of("O"),
        vec![
            (0.0, 0.5, Urgency::fixed(5), None),
            (1.5, 3.0, Urgency::fixed(40), b),
        ]
    );
    assert_eq!(replies(&rec), vec![6.5, 7.5]);
    assert_eq!(
        ["O", "B", "D", "L", "Z"].map(|t| max_ms(&r, t)),
        [3.0, 5.5, 6.3, 7.5, 6.5]
    );
    assert_eq!(r.deadlock, None);
}

#[test]
fn fig5_without_inheritance_the_lent_timeslices_stay_parked_on_the_blocked_server() {
    let sc = with_protocol(example("nova-fig5-6-blocking.json"), MutexProtocol::None);
    let (r, rec) = run(&sc, &SimConfig::default());
    // 1.5 ms: Z blocks on m; B's and (from 1.5 ms) D's timeslices are
    // parked on Z; L and O run at their own priorities. 6 to 8 ms: Z
    // sleeps, everything lent to it is parked, the CPU idles.
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("O", 0.0, 0.5),
            ("L", 0.5, 1.0),
            ("Z", 1.0, 1.5),
            ("L", 1.5, 4.0),
            ("O", 4.0, 5.5),
            ("Z", 5.5, 6.0),
            ("Z", 8.0, 10.0)
        ])
    );
    assert_eq!(
        rec.slices_of("Z"),
        vec![
            (1.0, 1.5, Urgency::fixed(40), Some(s("B"))),
            (5.5, 6.0, Urgency::fixed(40), Some(s("B"))),
            (8.0, 9.0, Urgency::fixed(40), Some(s("B"))),
            (9.0, 10.0, Urgency::fixed(30), Some(s("D"))),
        ]
    );
    assert_eq!(
        rec.slices_of("O"),
        vec![
            (0.0, 0.5, Urgency::fixed(5), None),
            (4.0, 5.5, Urgency::fixed(5), None),
        ]
    );
    assert_eq!(replies(&rec), vec![9.0, 10.0]);
    assert_eq!(
        ["O", "B", "D", "L", "Z"].map(|t| max_ms(&r, t)),
        [5.5, 8.0, 8.8, 3.5, 9.0]
    );
}

/// A passive server Z whose handler for B sleeps 2 ms (1 to 3 ms); three
/// helping callers (prio 20, 35, 30) call while it sleeps: their timeslices are
/// parked on Z with B's. L is background work.
fn staggered(b_timeout: &str) -> Scenario {
    parse(&format!(
        r#"{{
        "global": {{ "default_policy": "SCHED_FIFO", "ipc": "donation", "duration": 0.02 }},
        "tasks": {{
            "Z": {{ "passive": true, "cpus": [0], "loop": -1, "serve": "z" }},
            "B": {{ "priority": 40, "cpus": [0], "loop": 1,
                   "call": {{ "server": "z", {b_timeout} "run": 1000, "sleep": 2000, "run": 1000 }} }},
            "H20": {{ "priority": 20, "cpus": [0], "loop": 1, "delay": 1100,
                     "call": {{ "server": "z", "run": 500 }} }},
            "H35": {{ "priority": 35, "cpus": [0], "loop": 1, "delay": 1200,
                     "call": {{ "server": "z", "run": 500 }} }},
            "H30": {{ "priority": 30, "cpus": [0], "loop": 1, "delay": 1300,
                     "call": {{ "server": "z", "run": 500 }} }},
            "L": {{ "priority": 10, "cpus": [0], "loop": 1, "run": 10000 }}
        }}
    }}"#
    ))
}

#[test]
fn fig6_staggered_wakeup_the_server_wakes_on_the_most_urgent_parked_timeslice_the_rest_follow() {
    let (r, rec) = run(&staggered(""), &SimConfig::default());
    assert_eq!(
        rec.slices_of("Z"),
        vec![
            (0.0, 1.0, Urgency::fixed(40), Some(s("B"))),
            (3.0, 4.0, Urgency::fixed(40), Some(s("B"))),
            (4.0, 4.5, Urgency::fixed(35), Some(s("H35"))),
            (4.5, 5.0, Urgency::fixed(30), Some(s("H30"))),
            (5.0, 5.5, Urgency::fixed(20), Some(s("H20"))),
        ]
    );
    // L runs while every timeslice lent to Z is parked (1 to 3 ms, but
    // for the helping callers' calls), and after.
    assert_eq!(
        rec.slices_of("L"),
        vec![
            (1.0, 1.1, Urgency::fixed(10), None),
            (1.1, 1.2, Urgency::fixed(10), None),
            (1.2, 1.3, Urgency::fixed(10), None),
            (1.3, 3.0, Urgency::fixed(10), None),
            (5.5, 13.5, Urgency::fixed(10), None),
        ]
    );
    assert_eq!(replies(&rec), vec![4.0, 4.5, 5.0, 5.5]);
    assert_eq!(
        ["B", "H35", "H30", "H20", "L"].map(|t| max_ms(&r, t)),
        [4.0, 3.3, 3.7, 4.4, 13.5]
    );
}

#[test]
fn fig6_a_parked_timeslice_that_leaves_hands_the_wakeup_to_the_next() {
    // B's call times out at 2.5 ms while Z sleeps: its timeslice leaves
    // the parked ones. Z wakes at 3 ms on the most urgent that is left
    // (H35's) and finishes B's orphaned request on it.
    let (r, rec) = run(&staggered(r#""timeout": 2500,"#), &SimConfig::default());
    assert_eq!(
        rec.slices_of("Z"),
        vec![
            (0.0, 1.0, Urgency::fixed(40), Some(s("B"))),
            (3.0, 4.0, Urgency::fixed(35), Some(s("H35"))),
            (4.0, 4.5, Urgency::fixed(35), Some(s("H35"))),
            (4.5, 5.0, Urgency::fixed(30), Some(s("H30"))),
            (5.0, 5.5, Urgency::fixed(20), Some(s("H20"))),
        ]
    );
    assert_eq!(instants_of(&rec, InstantKind::Abort), vec![(2.5, s("B"))]);
    assert_eq!(task_report(&r, "B").aborted_calls, Some(1));
    assert_eq!(
        ["B", "H35", "H30", "H20", "L"].map(|t| max_ms(&r, t)),
        [2.5, 3.3, 3.7, 4.4, 13.5]
    );
}
