//! `SCHED_DEADLINE`: EDF with CBS reservations, Linux's deadline
//! inheritance (`inherit`) and M-BWI (`bwi`), on M-BWI's figures.

use heir_scenario::protocols::{apply, Override};
use heir_scenario::Scenario;
use heir_sim::{InstantKind, Report, SimConfig};

use crate::common::*;

fn parse(text: &str) -> Scenario {
    heir_scenario::parse_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

/// `sc` with every mutex under `protocol`.
fn under(mut sc: Scenario, protocol: &str) -> Scenario {
    let o = Override::parse(&format!("all={protocol}")).expect("parses");
    apply(&mut sc, &[o]).expect("applies");
    sc
}

fn reservation(r: &Report, name: &str) -> (u64, u64) {
    let s = task_report(r, name).server.expect("a deadline thread");
    (s.throttled, s.replenished)
}

/// Merged slices of CPU 0 until `until_ms`, as (thread, start, end).
fn timeline(rec: &Rec, until_ms: f64) -> Vec<(String, f64, f64)> {
    rec.merged_before(0, until_ms)
}

#[test]
fn an_overrunning_job_is_throttled_and_replenished_period_by_period() {
    // Q = 2 ms every 10 ms, one job of 5 ms: 0–2, 10–12, 20–21.
    let sc = parse(
        r#"{ "global": { "duration": 0.05 },
            "tasks": { "D": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000,
                              "dl-period": 10000, "loop": 1, "run": 5000 } } }"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(max_ms(&r, "D"), 21.0);
    assert_eq!(reservation(&r, "D"), (2, 2));
    assert_eq!(
        timeline(&rec, 50.0),
        rows(&[("D", 0.0, 2.0), ("D", 10.0, 12.0), ("D", 20.0, 21.0)])
    );
}

#[test]
fn earliest_deadline_first_fifo_among_equal_deadlines_above_fifo() {
    // A and B have the same deadline (10 ms): A, queued first, runs first
    // and B does not preempt it; E (deadline 1 + 4 = 5 ms) preempts A,
    // which goes back behind B (Linux inserts a deadline after the equal
    // ones already queued); the SCHED_FIFO/99 task runs only when no
    // deadline task is ready.
    let sc = parse(
        r#"{ "global": { "duration": 0.02 },
            "tasks": {
              "A": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 10000, "loop": 1, "run": 2000 },
              "B": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 10000, "loop": 1, "run": 2000 },
              "E": { "policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 4000, "delay": 1000, "loop": 1, "run": 1000 },
              "F": { "policy": "SCHED_FIFO", "priority": 99, "loop": 1, "run": 1000 }
            } }"#,
    );
    let (_, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        timeline(&rec, 20.0),
        rows(&[
            ("A", 0.0, 1.0),
            ("E", 1.0, 2.0),
            ("B", 2.0, 4.0),
            ("A", 4.0, 5.0),
            ("F", 5.0, 6.0)
        ])
    );
}

#[test]
fn global_edf_runs_the_m_earliest_deadlines() {
    // Two CPUs, three tasks free on both: the two earliest deadlines run;
    // the latest waits for a CPU.
    let sc = parse(
        r#"{ "global": { "duration": 0.02 },
            "tasks": {
              "Late":  { "policy": "SCHED_DEADLINE", "dl-runtime": 4000, "dl-period": 20000, "cpus": [0, 1], "loop": 1, "run": 2000 },
              "Mid":   { "policy": "SCHED_DEADLINE", "dl-runtime": 4000, "dl-period": 10000, "cpus": [0, 1], "loop": 1, "run": 2000 },
              "Early": { "policy": "SCHED_DEADLINE", "dl-runtime": 4000, "dl-period": 5000, "cpus": [0, 1], "loop": 1, "run": 2000 }
            } }"#,
    );
    let (r, _) = run(&sc, &SimConfig::default());
    assert_eq!(max_ms(&r, "Early"), 2.0);
    assert_eq!(max_ms(&r, "Mid"), 2.0);
    assert_eq!(max_ms(&r, "Late"), 4.0);
}

#[test]
fn fig1_budget_exhausted_inside_the_critical_section() {
    let sc = example("mbwi-fig1.json");
    // none: tau3 is throttled at 4 ms with M held until 20 ms.
    let (r, rec) = run(&under(sc.clone(), "none"), &SimConfig::default());
    assert_eq!((max_ms(&r, "tau1"), max_ms(&r, "tau3")), (21.0, 22.0));
    assert_eq!(reservation(&r, "tau3"), (1, 1));
    assert_eq!(
        timeline(&rec, 40.0),
        rows(&[
            ("tau3", 0.0, 4.0),
            ("tau3", 20.0, 22.0),
            ("tau1", 22.0, 23.0)
        ])
    );
    // inherit (Linux): the boosted tau3 is never throttled.
    let (r, _) = run(&under(sc.clone(), "inherit"), &SimConfig::default());
    assert_eq!((max_ms(&r, "tau1"), max_ms(&r, "tau3")), (5.0, 6.0));
    assert_eq!(reservation(&r, "tau3"), (0, 1));
    // bwi: tau3 consumes tau1's budget (2–5 ms), tau1 waits for its
    // reservation's replenishment at 12 ms.
    let (r, rec) = run(&under(sc, "bwi"), &SimConfig::default());
    assert_eq!((max_ms(&r, "tau1"), max_ms(&r, "tau3")), (11.0, 6.0));
    assert_eq!(reservation(&r, "tau1"), (1, 1));
    let on_tau1: Vec<(f64, f64)> = rec
        .slices()
        .into_iter()
        .filter(|s| s.0 == "tau3" && s.4.as_deref() == Some("tau1"))
        .map(|s| (s.1, s.2))
        .collect();
    assert_eq!(on_tau1, vec![(2.0, 5.0)]);
}

#[test]
fn fig4_and_fig5_tau2_preempts_without_bwi_and_waits_with_it() {
    let sc = example("mbwi-fig4-5.json");
    // Fig. 4 (inherit): tau2 preempts tau3 inside the critical section.
    let (r, rec) = run(&under(sc.clone(), "inherit"), &SimConfig::default());
    assert_eq!(
        timeline(&rec, 13.0),
        rows(&[("tau3", 0.0, 5.0), ("tau2", 5.0, 13.0)])
    );
    assert_eq!(
        (max_ms(&r, "tau1"), max_ms(&r, "tau2"), max_ms(&r, "tau3")),
        (42.0, 8.0, 48.0)
    );
    // Fig. 5 (bwi): tau3 runs on tau1's reservation (deadline 28 ms) from 4 ms;
    // tau2 (deadline 29 ms) waits until that budget is exhausted at 12 ms.
    let (r, rec) = run(&under(sc, "bwi"), &SimConfig::default());
    assert_eq!(
        timeline(&rec, 20.0),
        rows(&[("tau3", 0.0, 12.0), ("tau2", 12.0, 20.0)])
    );
    let shaded: Vec<(f64, f64)> = rec
        .slices()
        .into_iter()
        .filter(|s| s.0 == "tau3" && s.4.as_deref() == Some("tau1"))
        .map(|s| (s.1, s.2))
        .collect();
    assert_eq!(shaded, vec![(4.0, 12.0), (28.0, 30.0)]);
    assert_eq!(
        (max_ms(&r, "tau1"), max_ms(&r, "tau2"), max_ms(&r, "tau3")),
        (50.0, 15.0, 46.0)
    );
    // Throttled at 12, 36 and 60 ms; replenished at 28 and 52 ms.
    assert_eq!(reservation(&r, "tau1"), (3, 2));
}

#[test]
fn fig2_owner_on_the_donor_server_spinning_waiter_fifo_hand_off() {
    let (r, rec) = run(&example("mbwi-fig2.json"), &SimConfig::default());
    let at = |ms: f64| -> Vec<(String, InstantKind, String)> {
        rec.instants()
            .into_iter()
            .filter(|i| i.0 == ms)
            .map(|i| (i.1, i.2, i.3))
            .collect()
    };
    // 6 ms: tauB blocks; tauC runs on tauB's reservation.
    assert_eq!(
        at(6.0),
        vec![(s("tauB"), InstantKind::LockBlocked, s("M1"))]
    );
    assert!(rec
        .slices()
        .iter()
        .any(|x| x.0 == "tauC" && x.1 == 6.0 && x.2 == 14.0 && x.4.as_deref() == Some("tauB")));
    // 9 ms: tauA spins (tauC runs on the other CPU).
    assert_eq!(
        at(9.0),
        vec![
            (s("tauA"), InstantKind::LockBlocked, s("M1")),
            (s("tauA"), InstantKind::Spin, s("M1"))
        ]
    );
    // 14 ms: FIFO hand-off to tauB; 18 ms: to tauA, which stops spinning.
    assert_eq!(
        at(14.0),
        vec![
            (s("tauC"), InstantKind::Unlock, s("M1")),
            (s("tauB"), InstantKind::Lock, s("M1"))
        ]
    );
    assert_eq!(
        at(18.0)
            .into_iter()
            .filter(|i| i.1 != InstantKind::Throttle)
            .collect::<Vec<_>>(),
        vec![
            (s("tauB"), InstantKind::Unlock, s("M1")),
            (s("tauA"), InstantKind::Lock, s("M1"))
        ]
    );
    // tauA spun 9–18 ms on its CPU: it never left it.
    assert!(rec
        .slices()
        .iter()
        .any(|x| x.0 == "tauA" && x.1 == 3.0 && x.2 == 20.0));
    assert_eq!(
        (max_ms(&r, "tauA"), max_ms(&r, "tauB"), max_ms(&r, "tauC")),
        (17.0, 14.0, 19.0)
    );
}

#[test]
fn linux_inherit_gives_a_fifo_owner_a_fresh_deadline_and_no_throttle() {
    // L (SCHED_FIFO) holds m for 5 ms; W (2 ms every 10 ms) blocks on it
    // at 1 ms; X (deadline 13 ms) arrives at 1 ms too.
    let text = r#"{ "global": { "duration": 0.03 },
        "resources": { "m": { "type": "mutex", "protocol": "inherit" } },
        "tasks": {
          "L": { "policy": "SCHED_FIFO", "priority": 10, "loop": 1, "lock": "m", "run": 5000, "unlock": "m" },
          "W": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "delay": 1000, "loop": 1,
                 "lock": "m", "run": 500, "unlock": "m" },
          "X": { "policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 12000, "delay": 1000, "loop": 1, "run": 1000 }
        } }"#;
    // inherit: L's entity gets deadline 1 + 10 = 11 ms < 13 ms: X waits; L
    // runs its 5 ms through W's 2 ms budget (replenished, not throttled).
    // W, woken at 5 ms with 2 ms left before its deadline 11 ms, gets a new
    // period (2 / 6 > 2 / 10): deadline 15 ms, after X's.
    let (_, rec) = run(&parse(text), &SimConfig::default());
    assert_eq!(
        timeline(&rec, 30.0),
        rows(&[("L", 0.0, 5.0), ("X", 5.0, 6.0), ("W", 6.0, 6.5)])
    );
    // bwi: L runs on W's reservation until its 2 ms are gone (3 ms), then at
    // its own SCHED_FIFO priority: X preempts it; W's reservation is back at
    // 11 ms.
    let (_, rec) = run(&under(parse(text), "bwi"), &SimConfig::default());
    assert_eq!(
        timeline(&rec, 30.0),
        rows(&[
            ("L", 0.0, 3.0),
            ("X", 3.0, 4.0),
            ("L", 4.0, 6.0),
            ("W", 11.0, 11.5)
        ])
    );
}

/// `sc` with `global.bwi_affinity` set to `on`.
fn affinity(mut sc: Scenario, on: bool) -> Scenario {
    sc.global.bwi_affinity = on;
    sc
}

/// Per thread (scenario order): (jobs, misses, max response ms, migrations).
fn figures(r: &Report) -> Vec<(String, u64, u64, f64, u64)> {
    r.tasks
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.jobs,
                t.deadline_misses,
                t.response_us.max.expect("a job completed") / 1000.0,
                t.migrations.expect("the simulator counts migrations"),
            )
        })
        .collect()
}

fn fig(rows: &[(&str, u64, u64, f64, u64)]) -> Vec<(String, u64, u64, f64, u64)> {
    rows.iter()
        .map(|&(n, j, m, r, g)| (n.to_string(), j, m, r, g))
        .collect()
}

#[test]
fn fig3_affinity_inheritance_keeps_the_lent_server_on_its_cpu() {
    let sc = example("mbwi-fig3.json");
    assert!(sc.global.bwi_affinity, "the file sets it on");
    // Both: tau1 takes M at 1 ms; tau2 blocks at 2 ms and spins on CPU1
    // (tau1 runs on CPU0) until tau3 preempts tau1 at 3 ms.
    for on in [true, false] {
        let (_, rec) = run(&affinity(sc.clone(), on), &SimConfig::default());
        let spins: Vec<(f64, String)> = rec
            .instants()
            .into_iter()
            .filter(|i| i.2 == InstantKind::Spin)
            .map(|i| (i.0, i.1))
            .collect();
        assert_eq!(spins, vec![(2.0, s("tau2"))], "bwi_affinity {on}");
        assert_eq!(rec.merged(1)[0], (s("tau2"), 2.0, 3.0), "bwi_affinity {on}");
    }
    // On (heir's default): tau2's reservation runs on CPU1 only. tau1 finishes
    // its section there in it (3–7 ms) while tau3 runs on CPU0 (3–8 ms),
    // then comes back to CPU0 for its last 1 ms: no miss, 2 migrations.
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("tau1", 0.0, 3.0), ("tau3", 3.0, 8.0), ("tau1", 8.0, 9.0)])
    );
    assert_eq!(
        rec.merged(1),
        rows(&[("tau2", 2.0, 3.0), ("tau1", 3.0, 7.0), ("tau2", 7.0, 8.0)])
    );
    let lent: Vec<(f64, f64, Option<String>)> = rec
        .slices()
        .into_iter()
        .filter(|x| x.0 == "tau1")
        .map(|x| (x.1, x.2, x.4))
        .collect();
    assert_eq!(
        lent,
        vec![
            (0.0, 3.0, None),
            (3.0, 7.0, Some(s("tau2"))),
            (8.0, 9.0, None)
        ]
    );
    assert_eq!(
        figures(&r),
        fig(&[
            ("tau1", 1, 0, 9.0, 2),
            ("tau2", 1, 0, 6.0, 0),
            ("tau3", 1, 0, 5.0, 0)
        ])
    );
    // Off (the figure): tau1 runs tau2's reservation (deadline 10 ms) on CPU0,
    // ahead of tau3 (11 ms), which completes at 12 ms: a miss at 11 ms.
    let (r, rec) = run(&affinity(sc, false), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("tau1", 0.0, 7.0),
            ("tau3", 7.0, 12.0),
            ("tau1", 12.0, 13.0)
        ])
    );
    assert_eq!(
        rec.merged(1),
        rows(&[("tau2", 2.0, 3.0), ("tau2", 7.0, 8.0)])
    );
    assert_eq!(rec.completions("tau3"), vec![(12.0, 9.0, true)]);
    assert_eq!(
        figures(&r),
        fig(&[
            ("tau1", 1, 0, 13.0, 0),
            ("tau2", 1, 0, 6.0, 0),
            ("tau3", 1, 1, 9.0, 0)
        ])
    );
}

#[test]
fn fig3_under_inherit_and_none() {
    let sc = example("mbwi-fig3.json");
    // inherit (Linux): tau1 keeps its own deadline (25 ms): tau3 runs
    // 3–8 ms; tau1's runtime runs out at 10 ms and is replenished from
    // tau2's; tau2 gets M at 12 ms, past its deadline (10 ms).
    let (r, rec) = run(&under(sc.clone(), "inherit"), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("tau1", 0.0, 3.0), ("tau3", 3.0, 8.0), ("tau1", 8.0, 13.0)])
    );
    assert_eq!(
        figures(&r),
        fig(&[
            ("tau1", 1, 0, 13.0, 0),
            ("tau2", 1, 1, 11.0, 0),
            ("tau3", 1, 0, 5.0, 0)
        ])
    );
    assert_eq!(reservation(&r, "tau1"), (0, 1));
    // none: tau1 is throttled inside M at 10 ms until 25 ms.
    let (r, _) = run(&under(sc, "none"), &SimConfig::default());
    assert_eq!(
        figures(&r),
        fig(&[
            ("tau1", 1, 1, 28.0, 0),
            ("tau2", 1, 1, 26.0, 0),
            ("tau3", 1, 0, 5.0, 0)
        ])
    );
    assert_eq!(reservation(&r, "tau1"), (1, 1));
}

#[test]
fn fig6_tau4_waits_for_the_section_under_bwi_and_preempts_it_otherwise() {
    let sc = example("mbwi-fig6.json");
    // bwi: tau1 blocks at 2 ms and lends its reservation (deadline 12 ms) to
    // tau3, which finishes its section in it on CPU1 (2–4 ms); tau4
    // (15 ms), released at 3 ms, waits for the unlock and for tau1.
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("tau2", 0.0, 8.0), ("tau3", 8.0, 9.0)])
    );
    assert_eq!(
        rec.merged(1),
        rows(&[("tau3", 0.0, 4.0), ("tau1", 4.0, 6.0), ("tau4", 6.0, 10.0)])
    );
    let lent: Vec<(f64, f64)> = rec
        .slices()
        .into_iter()
        .filter(|x| x.0 == "tau3" && x.4.as_deref() == Some("tau1"))
        .map(|x| (x.1, x.2))
        .collect();
    assert_eq!(lent, vec![(2.0, 4.0)]);
    assert_eq!(
        figures(&r),
        fig(&[
            ("tau1", 1, 0, 4.0, 0),
            ("tau2", 1, 0, 8.0, 0),
            ("tau3", 1, 0, 9.0, 1),
            ("tau4", 1, 0, 7.0, 0)
        ])
    );
    // inherit (tau3 keeps its own deadline, 30 ms) and none: tau4
    // preempts tau3 inside A at 3 ms; A is free only at 8 ms.
    for p in ["inherit", "none"] {
        let (r, rec) = run(&under(sc.clone(), p), &SimConfig::default());
        assert_eq!(
            rec.merged(1),
            rows(&[("tau3", 0.0, 3.0), ("tau4", 3.0, 7.0), ("tau3", 7.0, 9.0)]),
            "{p}"
        );
        assert_eq!(
            rec.merged(0),
            rows(&[("tau2", 0.0, 8.0), ("tau1", 8.0, 10.0)]),
            "{p}"
        );
        assert_eq!(
            figures(&r),
            fig(&[
                ("tau1", 1, 0, 8.0, 0),
                ("tau2", 1, 0, 8.0, 0),
                ("tau3", 1, 0, 9.0, 0),
                ("tau4", 1, 0, 4.0, 0)
            ]),
            "{p}"
        );
    }
}

#[test]
fn fig2_nobody_migrates() {
    // tauC and tauB share CPU0 and tauA spins on CPU1 throughout: every
    // thread runs on one CPU only.
    let (r, _) = run(&example("mbwi-fig2.json"), &SimConfig::default());
    let m: Vec<(String, Option<u64>)> = r
        .tasks
        .iter()
        .map(|t| (t.name.clone(), t.migrations))
        .collect();
    assert_eq!(
        m,
        vec![
            (s("tauA"), Some(0)),
            (s("tauB"), Some(0)),
            (s("tauC"), Some(0))
        ]
    );
}

#[test]
fn a_global_thread_migrates_when_its_cpu_is_taken() {
    // G (free on both CPUs) runs on CPU0; P0 (pinned there, earlier
    // deadline) takes CPU0 at 1 ms, and G goes on on CPU1 (1 migration);
    // at 2 ms P1 takes CPU1 and CPU0 is free again: G comes back
    // (2 migrations). Pinned threads never migrate.
    let sc = parse(
        r#"{ "global": { "duration": 0.02, "default_policy": "SCHED_DEADLINE" },
            "tasks": {
              "G":  { "dl-runtime": 9000, "dl-period": 20000, "cpus": [0, 1], "loop": 1, "run": 5000 },
              "P0": { "dl-runtime": 2000, "dl-period": 4000, "cpus": [0], "delay": 1000, "loop": 1, "run": 1000 },
              "P1": { "dl-runtime": 2000, "dl-period": 4000, "cpus": [1], "delay": 2000, "loop": 1, "run": 2000 }
            } }"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("G", 0.0, 1.0), ("P0", 1.0, 2.0), ("G", 2.0, 5.0)])
    );
    assert_eq!(rec.merged(1), rows(&[("G", 1.0, 2.0), ("P1", 2.0, 4.0)]));
    let m: Vec<Option<u64>> = r.tasks.iter().map(|t| t.migrations).collect();
    assert_eq!(m, vec![Some(2), Some(0), Some(0)]);
}

#[test]
fn spread_owners_keep_the_invariants() {
    // The simulator's own checks after each figure, affinity inheritance
    // on and off.
    for name in ["mbwi-fig3.json", "mbwi-fig6.json", "mbwi-fig2.json"] {
        for on in [true, false] {
            let sc = affinity(example(name), on);
            let mut obs = heir_sim::NullObserver;
            let mut sim = heir_sim::Simulator::new(&sc, &SimConfig::default(), &mut obs)
                .expect("valid scenario");
            sim.run().expect("runs");
            sim.check_invariants()
                .unwrap_or_else(|e| panic!("{name} bwi_affinity {on}: {e}"));
        }
    }
}

#[test]
fn a_deadline_waiter_lends_one_reservation_to_all_helpers_consumed_by_one_cpu_at_a_time() {
    // W (Q = 4 ms every 50 ms) waits on c, whose helpers H1 (CPU 0) and H2
    // (CPU 1) are SCHED_FIFO 10; M1 and M2 (SCHED_FIFO 50, one per CPU)
    // arrive with W. W lends its one reservation to both helpers: one helper at
    // a time runs on it (the other is preempted by its M), 4 ms in all,
    // then the reservation is throttled until 51 ms (its replenishment).
    let sc = parse(
        r#"{ "global": { "duration": 0.06 },
            "resources": { "m": { "type": "mutex" },
                           "c": { "type": "cond", "helpers": ["H1", "H2"] } },
            "tasks": {
              "H1": { "policy": "SCHED_FIFO", "priority": 10, "cpus": [0], "loop": 1,
                      "run": 20000, "signal": "c" },
              "H2": { "policy": "SCHED_FIFO", "priority": 10, "cpus": [1], "loop": 1,
                      "run": 20000, "signal": "c" },
              "M1": { "policy": "SCHED_FIFO", "priority": 50, "cpus": [0], "delay": 1000,
                      "loop": 1, "run": 30000 },
              "M2": { "policy": "SCHED_FIFO", "priority": 50, "cpus": [1], "delay": 1000,
                      "loop": 1, "run": 30000 },
              "W": { "policy": "SCHED_DEADLINE", "dl-runtime": 4000, "dl-period": 50000,
                     "cpus": [0, 1], "delay": 1000, "loop": 1,
                     "lock": "m", "wait": { "ref": "c", "mutex": "m" }, "unlock": "m" } } }"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    let lent: Vec<(String, f64, f64)> = rec
        .slices()
        .into_iter()
        .filter(|s| s.4.as_deref() == Some("W"))
        .map(|s| (s.0, s.1, s.2))
        .collect();
    // H1, the first helper to run at 1 ms, takes the reservation: 1–5 ms.
    assert_eq!(lent, rows(&[("H1", 1.0, 5.0)]));
    assert_eq!(reservation(&r, "W"), (1, 1));
    // H2 ran on nothing lent: its M preempted it at 1 ms for 30 ms.
    assert_eq!(
        rec.cpu_slices(1),
        rows(&[("H2", 0.0, 1.0), ("M2", 1.0, 31.0), ("H2", 31.0, 50.0)])
    );
    assert!(rec
        .instants()
        .iter()
        .any(|i| i.0 == 5.0 && i.1 == "W" && i.2 == InstantKind::Throttle));
}

#[test]
fn mbwi_fig5_periodic_over_two_seconds_under_each_protocol() {
    // The periodic Figs. 4–5 file the analysis reads (examples/
    // mbwi-fig5.json): per task (jobs, misses, of which unfinished, max
    // response ms). tau2 is the task the analysis guarantees under bwi
    // (24 ms): it never misses and stays within 14 ms. tau3's 20 ms
    // section delays tau1 under every protocol; under Linux's inheritance
    // the boosted tau3 is never throttled and keeps its own deadline, and
    // tau1 misses 53 of its 55 completed jobs. Under each protocol tau1's
    // job open when the run ends at 2 s is past its deadline: one miss more.
    let table = |p: &str| {
        let (r, _) = run(&under(example("mbwi-fig5.json"), p), &SimConfig::default());
        ["tau1", "tau2", "tau3"].map(|n| {
            let t = task_report(&r, n);
            (
                t.jobs,
                t.deadline_misses,
                t.unfinished_misses,
                max_ms(&r, n),
            )
        })
    };
    assert_eq!(
        table("bwi"),
        [(54, 28, 1, 51.0), (83, 0, 0, 14.0), (28, 0, 0, 48.0)]
    );
    assert_eq!(
        table("inherit"),
        [(55, 54, 1, 43.0), (83, 0, 0, 13.0), (27, 0, 0, 68.0)]
    );
    assert_eq!(
        table("none"),
        [(55, 28, 1, 48.0), (83, 0, 0, 13.0), (27, 0, 0, 68.0)]
    );
}

/// The default configuration on `n` CPUs.
fn cpus(n: u32) -> SimConfig {
    SimConfig {
        cpus: Some(n),
        ..SimConfig::default()
    }
}

/// The (time, thread) of every `Spin` instant.
fn spins(rec: &Rec) -> Vec<(f64, String)> {
    rec.instants()
        .into_iter()
        .filter(|i| i.2 == InstantKind::Spin)
        .map(|i| (i.0, i.1))
        .collect()
}

#[test]
fn three_cpus_a_blocked_reservation_spins_before_a_later_reservation_runs() {
    // M-BWI's rule: a blocked waiter's reservation stays in the EDF competition
    // at its own deadline; picked, it runs the owner if the owner runs
    // nowhere, else it spins. Three CPUs, one bwi mutex M:
    //   O  (20/100 ms) holds M from 0 for 10 ms of work;
    //   W1 (10/20, d 21) and W2 (12/30, d 31) lock M at 1 ms;
    //   X  (3/5, d 7) runs 2–5 ms; L (5/40, d 43) arrives at 3 ms.
    //
    //   CPU0  O O|X X X|L L L L L|             O on its own reservation 0–2
    //   CPU1    W1 spin|O on W1's reservation . . .|W1|
    //   CPU2    W2 spin . . . . . . . . . . . . .|W2|
    //         0 1 2 3 4 5 6 7 8 9 10 11 12
    //
    // 1 ms: O runs on CPU0, so W1 and W2 spin. 2 ms: X preempts O (the
    // latest deadline running); O runs nowhere: W1's reservation (the earliest)
    // runs it on CPU1, and W2's reservation — picked on CPU2 while O runs on
    // W1's — spins on. 3 ms: L's deadline is later than every running
    // one: it waits for X's CPU (5 ms). 10 ms: M goes to W1 (FIFO), which
    // runs 10–11 on its CPU; W2 spins until 11 ms, then runs 11–12.
    // (Before this rule, W2 slept from 2 ms on and CPU2 idled until L ran
    // there at 3 ms, ahead of W2's earlier deadline.)
    let sc = parse(
        r#"{ "global": { "duration": 0.05, "default_policy": "SCHED_DEADLINE" },
            "resources": { "M": { "type": "mutex", "protocol": "bwi" } },
            "tasks": {
              "O":  { "dl-runtime": 20000, "dl-period": 100000, "loop": 1,
                      "lock": "M", "run": 10000, "unlock": "M" },
              "W1": { "dl-runtime": 10000, "dl-period": 20000, "delay": 1000, "loop": 1,
                      "lock": "M", "run": 1000, "unlock": "M" },
              "W2": { "dl-runtime": 12000, "dl-period": 30000, "delay": 1000, "loop": 1,
                      "lock": "M", "run": 1000, "unlock": "M" },
              "X":  { "dl-runtime": 3000, "dl-period": 5000, "delay": 2000, "loop": 1, "run": 3000 },
              "L":  { "dl-runtime": 5000, "dl-period": 40000, "delay": 3000, "loop": 1, "run": 5000 }
            } }"#,
    );
    let (r, rec) = run(&sc, &cpus(3));
    assert_eq!(
        rec.merged(0),
        rows(&[("O", 0.0, 2.0), ("X", 2.0, 5.0), ("L", 5.0, 10.0)])
    );
    assert_eq!(
        rec.merged(1),
        rows(&[("W1", 1.0, 2.0), ("O", 2.0, 10.0), ("W1", 10.0, 11.0)])
    );
    // W2 leaves CPU2 and is picked again at 2 ms, the instant O stops
    // running (its reservation is lent for that instant): a second `Spin`
    // instant, no gap.
    assert_eq!(rec.merged(2), rows(&[("W2", 1.0, 12.0)]));
    assert_eq!(
        spins(&rec),
        vec![(1.0, s("W1")), (1.0, s("W2")), (2.0, s("W2"))]
    );
    // O runs on W1's reservation from 2 ms.
    let o: Vec<(f64, f64, Option<String>)> = rec
        .slices_of("O")
        .into_iter()
        .map(|x| (x.0, x.1, x.3))
        .collect();
    assert_eq!(o, vec![(0.0, 2.0, None), (2.0, 10.0, Some(s("W1")))]);
    // W1's 10 ms: 1 spun, 8 lent to O, 1 its own: throttled at 11 ms.
    // W2 spun 11 of its 12 ms; L spent its 5 ms.
    assert_eq!(
        (
            reservation(&r, "W1"),
            reservation(&r, "W2"),
            reservation(&r, "L")
        ),
        ((1, 0), (0, 0), (1, 0))
    );
    assert_eq!(
        figures(&r),
        fig(&[
            ("O", 1, 0, 10.0, 1),
            ("W1", 1, 0, 10.0, 0),
            ("W2", 1, 0, 11.0, 0),
            ("X", 1, 0, 3.0, 0),
            ("L", 1, 0, 7.0, 0)
        ])
    );
}

#[test]
fn a_waiter_preempted_while_spinning_spins_again_then_runs_the_owner() {
    // Two CPUs, one bwi mutex M:
    //   O (6/25 ms, d 25) holds M from 0 for 10 ms of work;
    //   W (8/30, d 31) locks M at 1 ms;
    //   X (2/10, d 12) runs 2–4 ms; Y (2/8, d 11) runs 3–5 ms.
    //
    //   CPU0  O O O|Y Y|W W|O on W's reservation|W|
    //   CPU1    W|X X|O O O|
    //         0 1 2 3 4 5 6 7 8 9 10 11 12
    //
    // 1 ms: O runs on CPU0: W spins on CPU1. 2 ms: X preempts W (the
    // latest deadline running), which waits in its run queue, spinning.
    // 3 ms: Y preempts O; O runs nowhere, so W's reservation is lent, but O's
    // own (d 25) is earlier and no CPU is free. 4 ms: X ends; O runs on
    // its own reservation on CPU1, so W's reservation, when picked, spins: at 5 ms,
    // when Y ends, W spins again on CPU0. 7 ms: O's own 6 ms are spent
    // (throttled): O runs nowhere and W's reservation, running on CPU0, runs
    // it there (O migrates) until the unlock at 11 ms; W runs 11–12.
    // (Before this rule, W slept from 3 ms on and CPU0 idled 5–7 ms.)
    let sc = parse(
        r#"{ "global": { "duration": 0.05, "default_policy": "SCHED_DEADLINE" },
            "resources": { "M": { "type": "mutex", "protocol": "bwi" } },
            "tasks": {
              "O": { "dl-runtime": 6000, "dl-period": 25000, "loop": 1,
                     "lock": "M", "run": 10000, "unlock": "M" },
              "W": { "dl-runtime": 8000, "dl-period": 30000, "delay": 1000, "loop": 1,
                     "lock": "M", "run": 1000, "unlock": "M" },
              "X": { "dl-runtime": 2000, "dl-period": 10000, "delay": 2000, "loop": 1, "run": 2000 },
              "Y": { "dl-runtime": 2000, "dl-period": 8000, "delay": 3000, "loop": 1, "run": 2000 }
            } }"#,
    );
    let (r, rec) = run(&sc, &cpus(2));
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("O", 0.0, 3.0),
            ("Y", 3.0, 5.0),
            ("W", 5.0, 7.0),
            ("O", 7.0, 11.0),
            ("W", 11.0, 12.0)
        ])
    );
    assert_eq!(
        rec.merged(1),
        rows(&[("W", 1.0, 2.0), ("X", 2.0, 4.0), ("O", 4.0, 7.0)])
    );
    assert_eq!(spins(&rec), vec![(1.0, s("W")), (5.0, s("W"))]);
    let o: Vec<(f64, f64, Option<String>)> = rec
        .slices_of("O")
        .into_iter()
        .map(|x| (x.0, x.1, x.3))
        .collect();
    assert_eq!(
        o,
        vec![
            (0.0, 3.0, None),
            (4.0, 7.0, None),
            (7.0, 11.0, Some(s("W")))
        ]
    );
    // W's 8 ms: 1 + 2 spun, 4 lent, 1 its own: throttled at 12 ms. O's own
    // 6 ms ran out at 7 ms: its job ends at its replenishment (25 ms).
    assert_eq!(
        (reservation(&r, "W"), reservation(&r, "O")),
        ((1, 0), (1, 1))
    );
    assert_eq!(
        figures(&r),
        fig(&[
            ("O", 1, 0, 25.0, 2),
            ("W", 1, 0, 11.0, 1),
            ("X", 1, 0, 2.0, 0),
            ("Y", 1, 0, 2.0, 0)
        ])
    );
}

#[test]
fn without_affinity_inheritance_the_lender_misses_while_its_cpu_idles() {
    // The other face of the M-BWI paper's Fig. 3 (there tau3, on the owner's CPU,
    // misses): the lender's own CPU idles while its reservation waits for the
    // owner's. Two CPUs, one bwi mutex M:
    //   O (10/50 ms, CPU0) holds M from 0 for 6 ms of work;
    //   W (6/10, d 11, CPU1) locks M at 1 ms;
    //   Z (8/8, d 10, CPU0) runs 8 ms from 2 ms.
    // 1 ms: O runs on CPU0: W spins on CPU1. 2 ms: Z preempts O; O runs
    // nowhere, so W sleeps and lends its reservation (d 11).
    //
    // "bwi_affinity": false — O runs W's reservation only on its own CPU, where
    // Z's deadline (10) is earlier: CPU1 idles 2–14 ms; O runs 10–14 on
    // W's reservation, W 14–15: W misses its deadline (11 ms).
    //   CPU0  O O|Z Z Z Z Z Z Z Z|O O O O|
    //   CPU1    W|. . . . . . . . . . . .|W|
    //
    // true — W's reservation runs O on CPU1, where it was admitted (O
    // migrates): O 2–6, W 6–7, O's job ends on CPU0 after Z (10 ms).
    //   CPU0  O O|Z Z Z Z Z Z Z Z|
    //   CPU1    W|O O O O|W|
    let text = |on: bool| {
        format!(
            r#"{{ "global": {{ "duration": 0.03, "default_policy": "SCHED_DEADLINE", "bwi_affinity": {on} }},
            "resources": {{ "M": {{ "type": "mutex", "protocol": "bwi" }} }},
            "tasks": {{
              "O": {{ "dl-runtime": 10000, "dl-period": 50000, "cpus": [0], "loop": 1,
                     "lock": "M", "run": 6000, "unlock": "M", "timer": {{ "ref": "tO", "period": 50000 }} }},
              "W": {{ "dl-runtime": 6000, "dl-period": 10000, "cpus": [1], "delay": 1000, "loop": 1,
                     "lock": "M", "run": 1000, "unlock": "M", "timer": {{ "ref": "tW", "period": 10000 }} }},
              "Z": {{ "dl-runtime": 8000, "dl-period": 8000, "cpus": [0], "delay": 2000, "loop": 1,
                     "run": 8000, "timer": {{ "ref": "tZ", "period": 8000 }} }}
            }} }}"#
        )
    };
    let (r, rec) = run(&parse(&text(false)), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[("O", 0.0, 2.0), ("Z", 2.0, 10.0), ("O", 10.0, 14.0)])
    );
    assert_eq!(rec.merged(1), rows(&[("W", 1.0, 2.0), ("W", 14.0, 15.0)]));
    assert_eq!(rec.completions("W"), vec![(15.0, 14.0, true)]);
    assert_eq!(
        figures(&r),
        fig(&[
            ("O", 1, 0, 14.0, 0),
            ("W", 1, 1, 14.0, 0),
            ("Z", 1, 0, 8.0, 0)
        ])
    );
    let (r, rec) = run(&parse(&text(true)), &SimConfig::default());
    assert_eq!(rec.merged(0), rows(&[("O", 0.0, 2.0), ("Z", 2.0, 10.0)]));
    assert_eq!(
        rec.merged(1),
        rows(&[("W", 1.0, 2.0), ("O", 2.0, 6.0), ("W", 6.0, 7.0)])
    );
    assert_eq!(
        figures(&r),
        fig(&[
            ("O", 1, 0, 10.0, 1),
            ("W", 1, 0, 6.0, 0),
            ("Z", 1, 0, 8.0, 0)
        ])
    );
}

#[test]
fn a_job_whose_work_ends_with_its_budget_completes_before_a_simultaneous_preemption() {
    // A: Q = 2 ms, D = P = 10 ms, one job of exactly 2 ms. B: Q = 1 ms,
    // D = P = 3 ms, released at 2 ms (deadline 5 ms, earlier than A's).
    // At 2 ms A's work ends, its budget reaches 0 and B is released: A's
    // work completes first (rule 5 of `sim::dl`), its server is throttled
    // as it leaves the CPU (runtime 0, replenished at 10 ms), then B runs
    // 2–3 ms. Processing B's release first would preempt A with its budget
    // at 0: throttled with its work done but its job not ended, A would
    // complete only after the replenishment, at 10 ms.
    let sc = parse(
        r#"{ "global": { "duration": 0.02, "default_policy": "SCHED_DEADLINE" },
            "tasks": {
              "A": { "dl-runtime": 2000, "dl-period": 10000, "loop": 1, "run": 2000 },
              "B": { "dl-runtime": 1000, "dl-period": 3000, "delay": 2000, "loop": 1, "run": 1000 }
            } }"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        timeline(&rec, 20.0),
        rows(&[("A", 0.0, 2.0), ("B", 2.0, 3.0)])
    );
    assert_eq!(rec.completions("A"), vec![(2.0, 2.0, false)]);
    assert_eq!(rec.completions("B"), vec![(3.0, 1.0, false)]);
    // Exited: the replenishment finds no thread to run.
    assert_eq!(reservation(&r, "A"), (1, 0));
}

#[test]
fn a_bwi_waiter_handed_the_mutex_keeps_its_budget() {
    // One CPU. O (Q 1, D = P 20 ms) locks M at 0 for 0.5 ms of work; X
    // (2/2.9/10) is released at 0.1 ms (deadline 3.0) and runs 2 ms; W
    // (2/4/10, released at 0.2, deadline 4.2) runs when X is done, at
    // 2.1 ms, and blocks on M: its server runs O, 2.1–2.5 (W's runtime
    // 2 − 0.4 = 1.6 ms). At 2.5 O hands M over. W never left its server
    // (M-BWI): it goes on with 1.6 ms and its deadline 4.2, runs its
    // 1.5 ms, 2.5–4.0, and completes 3.8 ms after its release. Through the
    // CBS wake-up rule it would have been cut to Q/D·(4.2 − 2.5) = 0.85 ms
    // (1.6 > 0.85: the revised rule for D < P), throttled at 3.35 until
    // 10.2 and completed at 10.85.
    let sc = parse(
        r#"{ "global": { "duration": 0.02, "default_policy": "SCHED_DEADLINE" },
            "resources": { "M": { "type": "mutex", "protocol": "bwi" } },
            "tasks": {
              "O": { "dl-runtime": 1000, "dl-period": 20000, "loop": 1,
                     "lock": "M", "run": 500, "unlock": "M" },
              "X": { "dl-runtime": 2000, "dl-deadline": 2900, "dl-period": 10000, "delay": 100,
                     "loop": 1, "run": 2000 },
              "W": { "dl-runtime": 2000, "dl-deadline": 4000, "dl-period": 10000, "delay": 200,
                     "loop": 1, "lock": "M", "run": 1500, "unlock": "M" }
            } }"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        timeline(&rec, 20.0),
        rows(&[
            ("O", 0.0, 0.1),
            ("X", 0.1, 2.1),
            ("O", 2.1, 2.5),
            ("W", 2.5, 4.0)
        ])
    );
    assert_eq!(rec.completions("O"), vec![(2.5, 2.5, false)]);
    assert_eq!(rec.completions("W"), vec![(4.0, 3.8, false)]);
    assert_eq!(reservation(&r, "W"), (0, 0));
}

#[test]
fn a_constrained_server_woken_after_its_deadline_waits_for_its_next_period() {
    // One CPU, M without inheritance. O (Q 30, D = P 100 ms) locks M at 0
    // for 10 ms of work. W (Q 2, D 5, P 20 ms; released at 1 ms, deadline
    // 6) preempts O at 1 ms and blocks on M; O goes on and hands M over at
    // 10 ms. W wakes at 10 ms, after its deadline (6) and before its next
    // period (1 + 20 = 21): Linux's dl_check_constrained_dl throttles it
    // until 21 ms, where it is replenished (deadline 26, 2 ms) and runs its
    // 1 ms in M: done at 22 ms, 21 ms after its release (no timer: no job
    // deadline to miss). Through
    // the wake-up rule alone (a fresh period at 10 ms, deadline 15) it
    // would run 10–11.
    let sc = parse(
        r#"{ "global": { "duration": 0.05, "default_policy": "SCHED_DEADLINE" },
            "resources": { "M": { "type": "mutex", "protocol": "none" } },
            "tasks": {
              "O": { "dl-runtime": 30000, "dl-period": 100000, "loop": 1,
                     "lock": "M", "run": 10000, "unlock": "M" },
              "W": { "dl-runtime": 2000, "dl-deadline": 5000, "dl-period": 20000, "delay": 1000,
                     "loop": 1, "lock": "M", "run": 1000, "unlock": "M" }
            } }"#,
    );
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        timeline(&rec, 50.0),
        rows(&[("O", 0.0, 10.0), ("W", 21.0, 22.0)])
    );
    assert_eq!(rec.completions("O"), vec![(10.0, 10.0, false)]);
    assert_eq!(rec.completions("W"), vec![(22.0, 21.0, false)]);
    assert_eq!(reservation(&r, "W"), (1, 1));
}
