//! The periodic sets of the scaling benchmark (`bench::periodic_set`,
//! `scripts/bench-sim-scale.sh`) are what they say, and simulate
//! deterministically: one job per period for every task that keeps up.

use heir_sim::bench::{periodic_scenario, periodic_set};
use heir_sim::{NullObserver, SimConfig};

#[test]
fn periodic_sets_have_the_stated_shape() {
    for (tasks, cpus, mutexes) in [(10, 1, false), (200, 4, true), (1000, 1, true)] {
        let set = periodic_set(1, tasks, cpus, mutexes);
        assert_eq!(set.len(), tasks);
        let mut u = 0.0;
        for t in &set {
            assert!((10_000..=1_000_000).contains(&t.period_us), "{t:?}");
            assert_eq!(t.period_us % 1000, 0, "whole ms: {t:?}");
            assert!(t.wcet_us >= 1 && t.wcet_us <= t.period_us, "{t:?}");
            assert!(t.section_us <= t.wcet_us && t.section_us <= 50, "{t:?}");
            assert!((1..=98).contains(&t.priority), "{t:?}");
            assert_eq!(t.mutex.is_some(), mutexes && t.wcet_us >= 2, "{t:?}");
            u += t.wcet_us as f64 / t.period_us as f64;
        }
        // UUniFast to 0.5 per CPU; rounding to whole µs (at least 1)
        // moves it a little.
        let want = 0.5 * f64::from(cpus);
        assert!((u - want).abs() < 0.01 * want + tasks as f64 * 1e-4, "{u}");
        // Rate-monotonic: a shorter period never has a lower priority.
        for a in &set {
            for b in &set {
                if a.period_us < b.period_us {
                    assert!(a.priority >= b.priority, "{a:?} vs {b:?}");
                }
            }
        }
        if mutexes {
            // One mutex per 8 tasks, each shared by up to 8 of them.
            let n = tasks / 8;
            let mut users = vec![0; n];
            set.iter()
                .filter_map(|t| t.mutex)
                .for_each(|m| users[m] += 1);
            assert!(users.iter().all(|&k| (1..=8).contains(&k)), "{users:?}");
        }
    }
    assert_eq!(periodic_set(3, 50, 2, true), periodic_set(3, 50, 2, true));
}

#[test]
fn periodic_scenario_simulates_one_job_per_period_deterministically() {
    // 200 tasks, shared mutexes, global on 4 CPUs, 2 s: utilisation 0.5
    // per CPU, so every task keeps up and completes every job released
    // before the last period (each job is counted when the next starts).
    let set = periodic_set(1, 200, 4, true);
    let sc = periodic_scenario(&set, 1);
    let cfg = SimConfig {
        duration_us: Some(2_000_000),
        cpus: Some(4),
        ..SimConfig::default()
    };
    let r1 = heir_sim::simulate(&sc, &cfg, &mut NullObserver).expect("simulate");
    let r2 = heir_sim::simulate(&sc, &cfg, &mut NullObserver).expect("simulate");
    assert_eq!(r1, r2);
    assert_eq!(r1.tasks.len(), 200);
    for (t, rep) in set.iter().zip(&r1.tasks) {
        let periods = 2_000_000 / t.period_us;
        assert!(
            rep.jobs + 1 >= periods && rep.jobs <= periods,
            "{}: {} jobs for {periods} periods",
            rep.name,
            rep.jobs
        );
        assert_eq!(rep.deadline_misses, 0, "{}", rep.name);
        let min = rep.response_us.min.expect("jobs");
        assert!(
            min >= t.wcet_us as f64,
            "{}: {min} µs < {} µs of work",
            rep.name,
            t.wcet_us
        );
    }
}

/// Issue 21 (B): threads on CPUs 0..3 of a 1024-CPU machine. The extra
/// CPUs are idle: the run is the same as on 4 CPUs — the report, every
/// trace event, the events counted — and they cost nothing (the
/// balancing pass looks at as many CPUs), under fixed priorities and under
/// deadline reservations with a `bwi` mutex and mixed affinities (affinity
/// inheritance).
#[test]
fn idle_cpus_change_nothing_and_cost_nothing() {
    let mut fixed = String::from(r#"{"global": {"default_policy": "SCHED_FIFO"}, "tasks": {"#);
    for i in 0..10 {
        fixed += &format!(
            r#""t{i}": {{"priority": {}, "cpus": [0, 1, 2, 3], "run": {}, "lock": "m",
               "run1": 20, "unlock": "m", "sleep": {}, "timer": {{"ref": "tm{i}", "period": {}}}}},"#,
            10 + 5 * i,
            100 + 20 * i,
            50 * (i % 4 + 1),
            600 + 50 * i
        );
    }
    fixed += r#""rr": {"policy": "SCHED_RR", "priority": 20, "cpus": [1, 2], "run": 3000, "sleep": 1000},
        "nice": {"policy": "SCHED_OTHER", "cpus": [0, 1, 2, 3], "run": 2000, "sleep": 500}}}"#;
    let deadline = r#"{
      "resources": {"b": {"type": "mutex", "protocol": "bwi"}},
      "tasks": {
        "d0": {"policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "cpus": [0],
               "run": 500, "lock": "b", "run1": 300, "unlock": "b", "timer": {"ref": "a", "period": 10000}},
        "d1": {"policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 15000, "cpus": [1, 2],
               "run": 700, "lock": "b", "run1": 400, "unlock": "b", "timer": {"ref": "c", "period": 15000}},
        "d2": {"policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 12000, "cpus": [2, 3],
               "run": 600, "lock": "b", "run1": 500, "unlock": "b", "timer": {"ref": "e", "period": 12000}},
        "f": {"policy": "SCHED_FIFO", "priority": 50, "cpus": [0, 1, 2, 3], "run": 1000, "sleep": 3000}
      }
    }"#;
    for (name, text, events, visited) in [
        ("fixed", fixed.as_str(), 22_719, 54_181),
        ("deadline", deadline, 409, 101),
    ] {
        let sc = heir_scenario::parse_str(text, name).unwrap_or_else(|e| panic!("{e}"));
        let run_on = |cpus: u32| {
            let cfg = SimConfig {
                duration_us: Some(200_000),
                cpus: Some(cpus),
                ..SimConfig::default()
            };
            let mut rec = crate::common::Rec::default();
            let mut sim = heir_sim::Simulator::new(&sc, &cfg, &mut rec).expect("valid");
            let report = sim.run().expect("simulate");
            let visited = sim.cpus_visited();
            drop(sim);
            (report, visited, rec)
        };
        let (r4, v4, rec4) = run_on(4);
        let (r1024, v1024, rec1024) = run_on(1024);
        assert_eq!(r4, r1024, "{name}");
        assert_eq!(rec4.events, rec1024.events, "{name}");
        assert_eq!(rec4.end, rec1024.end, "{name}");
        assert_eq!(v4, v1024, "{name}: CPUs looked at");
        assert!(r4.tasks.iter().all(|t| t.jobs > 0), "{name}: {r4:?}");
        assert_eq!((r4.events, v4), (events, visited), "{name}");
    }
}
