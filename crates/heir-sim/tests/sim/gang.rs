//! Gang priority management (GPM): the examples with exact values,
//! GPM off against on; masked runs, failed runs, timeouts; the gang
//! priority through a PI mutex (Invariant 1's lock-inherited part).

use heir_core::Urgency;
use heir_sim::{InstantKind, SimConfig};

use crate::common::*;

/// The example `name` with `global.gpm` set to `gpm`.
fn example_gpm(name: &str, gpm: bool) -> heir_scenario::Scenario {
    let mut sc = example(name);
    sc.global.gpm = gpm;
    sc
}

/// (runs, failed runs, [(waiter, completed, timeouts, min, mean, p99, max µs)])
/// of gang `name`.
type GangRow = (
    String,
    u64,
    u64,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);
fn gang(r: &heir_sim::Report, name: &str) -> (u64, u64, Vec<GangRow>) {
    let g = r.gangs.iter().find(|g| g.name == name).expect("gang");
    (
        g.runs,
        g.failed_runs,
        g.waiters
            .iter()
            .map(|w| {
                let l = &w.latency_us;
                (
                    w.thread.clone(),
                    w.completed,
                    w.timeouts,
                    l.min,
                    l.mean,
                    l.p99,
                    l.max,
                )
            })
            .collect(),
    )
}

/// One waiter's row with every latency `us`.
fn row(waiter: &str, completed: u64, timeouts: u64, us: Option<f64>) -> GangRow {
    (s(waiter), completed, timeouts, us, us, us, us)
}

/// The gang instants: (at ms, thread, kind).
fn gang_instants(rec: &Rec) -> Vec<(f64, String, InstantKind)> {
    use InstantKind::*;
    rec.instants()
        .into_iter()
        .filter(|i| {
            matches!(
                i.2,
                GangRun | GangRunFailed | GangNotify | GangWait | GangDone | GangTimeout
            )
        })
        .map(|i| (i.0, i.1, i.2))
        .collect()
}

#[test]
fn fig1_gpm_off_tm_delays_the_barrier() {
    // S runs the gang at 1 ms and waits. T_H reaches its barrier point at
    // 2 and notifies; T_L (10) runs 2-3, T_M (50, released at 3) preempts
    // it until 8: T_L notifies at 9 — 8 ms after gang_run. S serves 9-10
    // and posts the resumption; T_H resumes 10-11, T_L 11-12 (Fig. 1).
    let (r, rec) = run(&example_gpm("gpm-fig1.json", false), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("T_H", 0.0, 2.0),
            ("T_L", 2.0, 3.0),
            ("T_M", 3.0, 8.0),
            ("T_L", 8.0, 9.0),
            ("S", 9.0, 10.0),
            ("T_H", 10.0, 11.0),
            ("T_L", 11.0, 12.0),
        ])
    );
    // Nobody is boosted by the gang: T_L runs at its own 10 throughout.
    assert!(rec
        .slices_of("T_L")
        .iter()
        .all(|x| x.2 == Urgency::fixed(10) && x.3.is_none()));
    assert_eq!(gang(&r, "G"), (1, 0, vec![row("S", 1, 0, Some(8000.0))]));
    assert_eq!(
        gang_instants(&rec),
        vec![
            (1.0, s("S"), InstantKind::GangRun),
            (1.0, s("S"), InstantKind::GangWait),
            (2.0, s("T_H"), InstantKind::GangNotify),
            (9.0, s("T_L"), InstantKind::GangNotify),
            (9.0, s("S"), InstantKind::GangDone),
        ]
    );
    assert_eq!(max_ms(&r, "T_H"), 11.0);
    assert_eq!(max_ms(&r, "T_M"), 5.0);
    assert_eq!(max_ms(&r, "S"), 9.0);
}

#[test]
fn fig1_gpm_on_tl_runs_at_the_gang_priority() {
    // gang_run at 1 lifts T_L to the gang priority 90 (T_H's, shown as the
    // donor); T_M (50) released at 3 cannot preempt it: T_L notifies at 4
    // — 3 ms after gang_run — and drops back to 10. S serves 4-5, T_H
    // resumes 5-6, then T_M 6-11 and T_L 11-12.
    let (r, rec) = run(&example_gpm("gpm-fig1.json", true), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("T_H", 0.0, 2.0),
            ("T_L", 2.0, 4.0),
            ("S", 4.0, 5.0),
            ("T_H", 5.0, 6.0),
            ("T_M", 6.0, 11.0),
            ("T_L", 11.0, 12.0),
        ])
    );
    assert_eq!(
        rec.slices_of("T_L"),
        vec![
            (2.0, 4.0, Urgency::fixed(90), Some(s("T_H"))),
            (11.0, 12.0, Urgency::fixed(10), None),
        ]
    );
    let gang_boosts: Vec<_> = rec.boosts().into_iter().filter(|b| b.0 <= 4.0).collect();
    assert_eq!(
        gang_boosts,
        vec![
            (1.0, s("T_L"), Some(s("T_H")), Urgency::fixed(90)),
            (4.0, s("T_L"), None, Urgency::fixed(10)),
        ]
    );
    assert_eq!(gang(&r, "G"), (1, 0, vec![row("S", 1, 0, Some(3000.0))]));
    assert_eq!(max_ms(&r, "T_H"), 6.0);
    assert_eq!(max_ms(&r, "T_M"), 8.0);
    assert_eq!(max_ms(&r, "S"), 4.0);
}

#[test]
fn pi_mutex_gpm_on_the_gang_priority_flows_through_the_lock() {
    // L (30) blocks on m held by N (20) at 1: N inherits 30. gang_run at
    // 1.5 (H passive: not waited for, but its 90 is the gang priority)
    // lifts the blocked L to 90, and N with it through m: M (50, at 2)
    // cannot preempt. N's 4 ms end at 4.5 (0.5 + 0.5 + 3); L takes m and
    // runs 4.5-5.5 at 90; its notify at 5.5 ends the run: 4 ms.
    let (r, rec) = run(
        &example_gpm("gpm-gang-pi-mutex.json", true),
        &SimConfig::default(),
    );
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("H", 0.0, 0.5),
            ("N", 0.5, 4.5),
            ("L", 4.5, 5.5),
            ("M", 5.5, 10.5),
        ])
    );
    assert_eq!(
        rec.slices_of("N"),
        vec![
            (0.5, 1.0, Urgency::fixed(20), None),
            (1.0, 1.5, Urgency::fixed(30), Some(s("L"))),
            (1.5, 4.5, Urgency::fixed(90), Some(s("H"))),
        ]
    );
    assert_eq!(
        rec.slices_of("L"),
        vec![(4.5, 5.5, Urgency::fixed(90), Some(s("H")))]
    );
    // The boosts at gang_run: L (blocked) and, through m, N; at the
    // unlock N falls back to 20; at the notify L to 30.
    let boosts: Vec<_> = rec.boosts().into_iter().filter(|b| b.0 >= 1.5).collect();
    assert_eq!(
        boosts,
        vec![
            (1.5, s("L"), Some(s("H")), Urgency::fixed(90)),
            (1.5, s("N"), Some(s("H")), Urgency::fixed(90)),
            (4.5, s("N"), None, Urgency::fixed(20)),
            (5.5, s("L"), None, Urgency::fixed(30)),
        ]
    );
    assert_eq!(gang(&r, "G"), (1, 0, vec![row("S", 1, 0, Some(4000.0))]));
    assert_eq!(max_ms(&r, "M"), 8.5);
}

#[test]
fn pi_mutex_gpm_off_m_preempts_the_owner() {
    // N runs at L's 30 only: M (50) preempts it 2-7; N's last 2.5 ms end
    // at 9.5, L runs 9.5-10.5 and notifies: 9 ms after gang_run.
    let (r, rec) = run(
        &example_gpm("gpm-gang-pi-mutex.json", false),
        &SimConfig::default(),
    );
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("H", 0.0, 0.5),
            ("N", 0.5, 2.0),
            ("M", 2.0, 7.0),
            ("N", 7.0, 9.5),
            ("L", 9.5, 10.5),
        ])
    );
    assert_eq!(gang(&r, "G"), (1, 0, vec![row("S", 1, 0, Some(9000.0))]));
    assert_eq!(max_ms(&r, "M"), 5.0);
}

/// A scenario from inline JSON.
fn scenario(text: &str) -> heir_scenario::Scenario {
    heir_scenario::parse_str(text, "gang.json").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_masked_run_leaves_out_the_members_without_its_bits() {
    // A and B are members (bit 0); B moves itself to bit 1 only. S runs
    // the gang with mask 1 at 1 ms: A is lifted to 40 (B's priority, the
    // gang priority: passive members count), B is not waited for and not
    // boosted. A notifies at 3 (after 2 ms of work: the run's latency).
    // Then S runs mask 2 at 3: now B alone is active (the gang priority
    // is its own 40: no boost); it wakes at 3, runs 3-4 and notifies:
    // latency 1 ms.
    let sc = scenario(
        r#"{
        "global": {"default_policy": "SCHED_FIFO"},
        "resources": {"G": {"type": "gang", "members": ["A", "B"]}},
        "tasks": {
            "A": {"priority": 10, "loop": 1, "run": 3000, "gang_notify": "G"},
            "B": {"priority": 40, "loop": 1, "gang_passive": "G",
                  "gang_active": {"gang": "G", "bits": 2}, "sleep": 3000,
                  "run": 1000, "gang_notify": "G"},
            "S": {"priority": 99, "loop": 1, "delay": 1000,
                  "gang_run": {"gang": "G", "mask": 1}, "gang_wait": "G",
                  "gang_run1": {"gang": "G", "mask": 2},
                  "gang_wait1": {"gang": "G", "timeout": 10000}}
        }}"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.slices_of("A"),
        vec![
            (0.0, 1.0, Urgency::fixed(10), None),
            (1.0, 3.0, Urgency::fixed(40), Some(s("B"))),
        ]
    );
    assert!(rec
        .slices_of("B")
        .iter()
        .all(|x| x.2 == Urgency::fixed(40) && x.3.is_none()));
    // The first run waits for A only (3 - 1 = 2 ms); the second for B
    // (4 - 3 = 1 ms).
    let (runs, failed, waiters) = gang(&r, "G");
    assert_eq!((runs, failed), (2, 0));
    let w = &waiters[0];
    assert_eq!(
        (w.0.as_str(), w.1, w.2, w.3, w.6),
        ("S", 2, 0, Some(1000.0), Some(2000.0))
    );
    assert_eq!(
        gang_instants(&rec),
        vec![
            (1.0, s("S"), InstantKind::GangRun),
            (1.0, s("S"), InstantKind::GangWait),
            (3.0, s("A"), InstantKind::GangNotify),
            (3.0, s("S"), InstantKind::GangDone),
            (3.0, s("S"), InstantKind::GangRun),
            (3.0, s("S"), InstantKind::GangWait),
            (4.0, s("B"), InstantKind::GangNotify),
            (4.0, s("S"), InstantKind::GangDone),
        ]
    );
}

#[test]
fn a_run_in_progress_makes_a_second_run_fail_and_change_nothing() {
    // S runs the gang at 1 (A lifted to 50, C's priority); I, at 2, runs
    // it again while A has not notified: the run fails (counted, traced)
    // and A stays at 50 with the same run: A notifies at 4 — 3 ms after
    // the first gang_run. I's later run, at 5, succeeds: A, asleep, is
    // lifted again (while it sleeps) and notifies when it wakes at 5.5
    // (0.5 ms).
    let sc = scenario(
        r#"{
        "global": {"default_policy": "SCHED_FIFO"},
        "resources": {"G": {"type": "gang", "members": ["A", "C"]}},
        "tasks": {
            "A": {"priority": 10, "loop": 1, "run": 4000, "gang_notify": "G",
                  "sleep": 1500, "gang_notify1": "G"},
            "C": {"priority": 50, "loop": 1, "gang_passive": "G", "sleep": 10000},
            "S": {"priority": 99, "loop": 1, "delay": 1000,
                  "gang_run": "G", "gang_wait": "G"},
            "I": {"priority": 98, "loop": 1, "delay": 2000,
                  "gang_run": "G", "sleep": 3000, "gang_run1": "G", "gang_wait": "G"}
        }}"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.slices_of("A"),
        vec![
            (0.0, 1.0, Urgency::fixed(10), None),
            (1.0, 2.0, Urgency::fixed(50), Some(s("C"))),
            (2.0, 4.0, Urgency::fixed(50), Some(s("C"))),
        ]
    );
    let a_boosts: Vec<_> = rec.boosts().into_iter().filter(|b| b.1 == "A").collect();
    assert_eq!(
        a_boosts,
        vec![
            (1.0, s("A"), Some(s("C")), Urgency::fixed(50)),
            (4.0, s("A"), None, Urgency::fixed(10)),
            (5.0, s("A"), Some(s("C")), Urgency::fixed(50)),
            (5.5, s("A"), None, Urgency::fixed(10)),
        ]
    );
    assert_eq!(
        gang(&r, "G"),
        (
            2,
            1,
            vec![row("S", 1, 0, Some(3000.0)), row("I", 1, 0, Some(500.0))]
        )
    );
    let failed: Vec<_> = gang_instants(&rec)
        .into_iter()
        .filter(|i| i.2 == InstantKind::GangRunFailed)
        .collect();
    assert_eq!(failed, vec![(2.0, s("I"), InstantKind::GangRunFailed)]);
}

#[test]
fn a_wait_that_times_out_counts_a_timeout_and_no_latency() {
    // L (10, member) needs 3 ms to its notify; S runs the gang at 1 and
    // waits at most 1 ms: the wait returns at 2 (timeout, no latency). L
    // keeps its boost until its notify at 3. S waits again at 4: the run
    // completed at 3 (2 ms after gang_run) and S has not recorded it yet.
    let sc = scenario(
        r#"{
        "global": {"default_policy": "SCHED_FIFO"},
        "resources": {"G": {"type": "gang", "members": ["L", "H"]}},
        "tasks": {
            "L": {"priority": 10, "loop": 1, "run": 3000, "gang_notify": "G"},
            "H": {"priority": 60, "loop": 1, "gang_passive": "G", "sleep": 9000},
            "S": {"priority": 99, "loop": 1, "delay": 1000, "gang_run": "G",
                  "gang_wait": {"gang": "G", "timeout": 1000},
                  "sleep": 2000, "gang_wait1": "G"}
        }}"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        gang(&r, "G"),
        (
            1,
            0,
            vec![(
                s("S"),
                1,
                1,
                Some(2000.0),
                Some(2000.0),
                Some(2000.0),
                Some(2000.0)
            )]
        )
    );
    assert_eq!(
        gang_instants(&rec),
        vec![
            (1.0, s("S"), InstantKind::GangRun),
            (1.0, s("S"), InstantKind::GangWait),
            (2.0, s("S"), InstantKind::GangTimeout),
            (3.0, s("L"), InstantKind::GangNotify),
            (4.0, s("S"), InstantKind::GangDone),
        ]
    );
    assert_eq!(
        rec.slices_of("L"),
        vec![
            (0.0, 1.0, Urgency::fixed(10), None),
            (1.0, 2.0, Urgency::fixed(60), Some(s("H"))),
            (2.0, 3.0, Urgency::fixed(60), Some(s("H"))),
        ]
    );
}

#[test]
fn leaving_or_exiting_counts_as_notify_and_an_empty_run_completes_at_once() {
    // A and B are members lifted to 70 (C's priority) at 1 ms. A leaves
    // the gang at 2 (gang_remove: its notify), B ends its program at 3
    // without notifying (its exit: its notify): the run completes at 3,
    // 2 ms after gang_run. S's second gang_run at 4 finds no member left
    // but C, which is passive: no active member, complete at once (0).
    let sc = scenario(
        r#"{
        "global": {"default_policy": "SCHED_FIFO"},
        "resources": {"G": {"type": "gang", "members": ["A", "B", "C"]}},
        "tasks": {
            "A": {"priority": 20, "loop": 1, "run": 2000, "gang_remove": "G", "run1": 1000},
            "B": {"priority": 10, "loop": 1, "run": 1000},
            "C": {"priority": 70, "loop": 1, "gang_passive": "G", "sleep": 9000},
            "S": {"priority": 99, "loop": 1, "delay": 1000, "gang_run": "G",
                  "gang_wait": "G", "sleep": 1000, "gang_run1": "G", "gang_wait1": "G"}
        }}"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    // A runs 0-2 (boosted to 70 from 1) and leaves at 2, back to 20; B,
    // still at 70, runs its 1 ms 2-3 and exits; A's last 1 ms 3-4.
    assert_eq!(
        rec.merged(0),
        rows(&[("A", 0.0, 2.0), ("B", 2.0, 3.0), ("A", 3.0, 4.0)])
    );
    assert_eq!(
        rec.slices_of("B"),
        vec![(2.0, 3.0, Urgency::fixed(70), Some(s("C")))]
    );
    assert_eq!(
        gang(&r, "G"),
        // Latencies 2 ms and 0; the p99 is the histogram's bucket bound
        // (within 2^-10 of 2 ms).
        (
            2,
            0,
            vec![(
                s("S"),
                2,
                0,
                Some(0.0),
                Some(1000.0),
                Some(1999.872),
                Some(2000.0)
            )]
        )
    );
}

/// docs/GANG.md §3: the gang priority is the most urgent member base short
/// of a deadline; deadline members are never boosted.
fn deadline_gang(gpm: bool) -> heir_scenario::Scenario {
    let mut sc = scenario(
        r#"{
        "global": {"default_policy": "SCHED_FIFO"},
        "resources": {"G": {"type": "gang", "members": ["D", "H", "L"]}},
        "tasks": {
            "D": {"policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000,
                  "loop": 1, "sleep": 1500, "run": 500, "gang_notify": "G"},
            "H": {"priority": 50, "loop": 1, "gang_passive": "G", "sleep": 20000},
            "L": {"priority": 10, "loop": 1, "run": 3000, "gang_notify": "G"},
            "M": {"priority": 30, "loop": 1, "delay": 2000, "run": 5000},
            "S": {"priority": 99, "loop": 1, "delay": 1000, "gang_run": "G", "gang_wait": "G"}
        }}"#,
    );
    sc.global.gpm = gpm;
    sc
}

#[test]
fn under_deadline_members_the_gang_priority_is_the_highest_fixed_one() {
    // At 1 gang_run: D and L are active (H passive). The gang priority is
    // H's 50, not D's deadline: L runs at 50 (M, 30, released at 2, cannot
    // preempt it); D is not boosted: it wakes at 1.5 on its own reservation
    // (CBS: a new deadline 1.5 + 10 = 11.5 ms), runs 1.5-2 above every
    // fixed priority and notifies. L's 3 ms end at 3.5: latency 2.5 ms.
    let (r, rec) = run(&deadline_gang(true), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("L", 0.0, 1.5),
            ("D", 1.5, 2.0),
            ("L", 2.0, 3.5),
            ("M", 3.5, 8.5),
        ])
    );
    assert_eq!(
        rec.slices_of("D"),
        vec![(1.5, 2.0, Urgency::deadline(11_500_000), None)]
    );
    assert_eq!(
        rec.slices_of("L"),
        vec![
            (0.0, 1.0, Urgency::fixed(10), None),
            (1.0, 1.5, Urgency::fixed(50), Some(s("H"))),
            (2.0, 3.5, Urgency::fixed(50), Some(s("H"))),
        ]
    );
    // The gang boosts nobody but L; D's one change is its own reservation's
    // new deadline at its wake-up (its base, no donor).
    assert_eq!(
        rec.boosts(),
        vec![
            (1.0, s("L"), Some(s("H")), Urgency::fixed(50)),
            (1.5, s("D"), None, Urgency::deadline(11_500_000)),
            (3.5, s("L"), None, Urgency::fixed(10)),
        ]
    );
    assert_eq!(gang(&r, "G"), (1, 0, vec![row("S", 1, 0, Some(2500.0))]));
}

#[test]
fn under_deadline_members_gpm_off_lets_m_preempt() {
    // L at its own 10: M preempts it 2-7; L's last 1.5 ms end at 8.5:
    // latency 7.5 ms.
    let (r, rec) = run(&deadline_gang(false), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("L", 0.0, 1.5),
            ("D", 1.5, 2.0),
            ("M", 2.0, 7.0),
            ("L", 7.0, 8.5),
        ])
    );
    assert_eq!(gang(&r, "G"), (1, 0, vec![row("S", 1, 0, Some(7500.0))]));
}

#[test]
fn a_pending_member_that_waits_for_its_own_gang_is_a_deadlock() {
    // S is an active member: its gang_wait would wait for itself.
    let sc = scenario(
        r#"{
        "global": {"default_policy": "SCHED_FIFO"},
        "resources": {"G": {"type": "gang", "members": ["S"]}},
        "tasks": {"S": {"priority": 10, "loop": 1, "run": 1000, "gang_run": "G", "gang_wait": "G"}}
        }"#,
    );
    let (r, _) = run(&sc, &SimConfig::default());
    let d = r.deadlock.expect("deadlock");
    assert_eq!(d.cycle, ["S", "G", "S"]);
    assert_eq!(d.at_us, 1000.0);
}
