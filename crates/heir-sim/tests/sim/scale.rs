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
