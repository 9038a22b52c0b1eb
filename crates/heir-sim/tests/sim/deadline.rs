//! `SCHED_DEADLINE`: EDF with constant-bandwidth servers, Linux's deadline
//! inheritance (`inherit`) and M-BWI (`bwi`), on seed 001's figures.

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

fn max_ms(r: &Report, name: &str) -> f64 {
    task_report(r, name)
        .response_us
        .max
        .expect("a job completed")
        / 1000.0
}

fn server(r: &Report, name: &str) -> (u64, u64) {
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
    assert_eq!(server(&r, "D"), (2, 2));
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
    let sc = example("seed001-fig1.json");
    // none: tau3 is throttled at 4 ms with M held until 20 ms.
    let (r, rec) = run(&under(sc.clone(), "none"), &SimConfig::default());
    assert_eq!((max_ms(&r, "tau1"), max_ms(&r, "tau3")), (21.0, 22.0));
    assert_eq!(server(&r, "tau3"), (1, 1));
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
    assert_eq!(server(&r, "tau3"), (0, 1));
    // bwi: tau3 consumes tau1's budget (2–5 ms), tau1 waits for its
    // server's replenishment at 12 ms.
    let (r, rec) = run(&under(sc, "bwi"), &SimConfig::default());
    assert_eq!((max_ms(&r, "tau1"), max_ms(&r, "tau3")), (11.0, 6.0));
    assert_eq!(server(&r, "tau1"), (1, 1));
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
    let sc = example("seed001-fig4-5.json");
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
    // Fig. 5 (bwi): tau3 runs on tau1's server (deadline 28 ms) from 4 ms;
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
    assert_eq!(server(&r, "tau1"), (3, 2));
}

#[test]
fn fig2_owner_on_the_donor_server_spinning_waiter_fifo_hand_off() {
    let (r, rec) = run(&example("seed001-fig2.json"), &SimConfig::default());
    let at = |ms: f64| -> Vec<(String, InstantKind, String)> {
        rec.instants()
            .into_iter()
            .filter(|i| i.0 == ms)
            .map(|i| (i.1, i.2, i.3))
            .collect()
    };
    // 6 ms: tauB blocks; tauC runs on tauB's server.
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
    // bwi: L runs on W's server until its 2 ms are gone (3 ms), then at
    // its own SCHED_FIFO priority: X preempts it; W's server is back at
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

#[test]
fn a_deadline_waiter_lends_one_server_to_all_helpers_consumed_by_one_cpu_at_a_time() {
    // W (Q = 4 ms every 50 ms) waits on c, whose helpers H1 (CPU 0) and H2
    // (CPU 1) are SCHED_FIFO 10; M1 and M2 (SCHED_FIFO 50, one per CPU)
    // arrive with W. W lends its one server to both helpers: one helper at
    // a time runs on it (the other is preempted by its M), 4 ms in all,
    // then the server is throttled until 51 ms (its replenishment).
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
    // H1, the first helper to run at 1 ms, takes the server: 1–5 ms.
    assert_eq!(lent, rows(&[("H1", 1.0, 5.0)]));
    assert_eq!(server(&r, "W"), (1, 1));
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
