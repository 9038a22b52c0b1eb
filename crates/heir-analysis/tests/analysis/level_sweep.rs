//! The level sweep (`Analyzer::sweep_from(0)`) gives exactly the bounds of
//! the per-task analysis (`sweep_from(usize::MAX)`, the reference): every
//! field of every task's result — WCRT, blocking term, why unbounded — on
//! random sets with every protocol family, mutexes of mixed protocols,
//! nested sections, servers above and below the clients, tied priorities,
//! two CPUs, overloads, responses longer than the period, and
//! `SCHED_DEADLINE` reservations (pinned and global) sharing the CPUs.

use heir_analysis::gen::{generate, generate_deadline, CsProfile, GenParams};
use heir_analysis::model::{Class, MutexProtocol, TaskSet};
use heir_analysis::rng::Rng;
use heir_analysis::{Analyzer, Family};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// `b` appended to `a` on CPU `cpu` (mutexes and servers re-indexed).
fn merge(a: &mut TaskSet, b: TaskSet, cpu: u32) {
    let (nm, ns) = (a.mutexes.len(), a.servers.len());
    for mut t in b.tasks {
        t.name = format!("{}c{cpu}", t.name);
        if t.global_cpus.is_none() {
            t.cpu = cpu;
        }
        t.sections.iter_mut().for_each(|s| s.mutex += nm);
        t.calls.iter_mut().for_each(|c| c.server += ns);
        a.tasks.push(t);
    }
    for mut m in b.mutexes {
        m.name = format!("{}c{cpu}", m.name);
        a.mutexes.push(m);
    }
    for mut s in b.servers {
        s.name = format!("{}c{cpu}", s.name);
        s.cpu = cpu;
        a.servers.push(s);
    }
}

/// One random fixed-priority set for one CPU.
fn fixed_part(rng: &mut Rng) -> TaskSet {
    let nest = if rng.chance(0.3) { 0.4 } else { 0.0 };
    let params = GenParams {
        tasks: rng.range_u64(1, 30) as usize,
        resources: rng.range_u64(0, 6) as usize,
        access_probability: [0.1, 0.3, 0.6][rng.range_u64(0, 2) as usize],
        cs_us: [CsProfile::Short, CsProfile::Medium, CsProfile::Long][rng.range_u64(0, 2) as usize]
            .range_us(),
        nest_probability: nest,
        servers: rng.range_u64(0, 3) as usize,
        call_probability: [0.0, 0.2, 0.5][rng.range_u64(0, 2) as usize],
        period_granularity_us: [1, 1_000, 10_000][rng.range_u64(0, 2) as usize],
        ..GenParams::default()
    };
    let u = [0.3, 0.6, 0.85, 0.97, 1.05][rng.range_u64(0, 4) as usize];
    let mut set = generate(&params, u, rng);
    if rng.chance(0.4) {
        // Tied priorities (a few levels), as rt-app's 1..99 gives at scale.
        let levels = rng.range_u64(1, 4) as i32;
        for t in &mut set.tasks {
            t.class = Class::Fixed {
                priority: 50 + rng.range_u64(0, levels as u64) as i32,
            };
        }
    }
    if rng.chance(0.4) {
        // Servers anywhere, also above their clients.
        for s in &mut set.servers {
            s.priority = rng.range_u64(1, 99) as i32;
        }
    }
    match rng.range_u64(0, 5) {
        0 => set.with_protocol(Family::None),
        1 => set.with_protocol(Family::Inherit),
        2 => set.with_protocol(Family::Ceiling),
        3 => set.with_protocol(Family::PiCv),
        4 if nest == 0.0 => {
            // Mixed protocols (nesting across protocols is refused).
            for m in &mut set.mutexes {
                m.protocol = match rng.range_u64(0, 3) {
                    0 => MutexProtocol::None,
                    1 => MutexProtocol::Inherit,
                    2 => MutexProtocol::Ceiling(rng.range_u64(1, 99) as i32),
                    _ => MutexProtocol::Bwi,
                };
            }
            set.pi_cv = rng.chance(0.5);
            set
        }
        _ => set,
    }
}

/// A random set: one or two CPUs, with or without reservations.
fn random_set(seed: u64) -> TaskSet {
    let mut rng = Rng::new(seed);
    let mut set = fixed_part(&mut rng);
    let two = rng.chance(0.4);
    if two {
        let b = fixed_part(&mut rng);
        if b.pi_cv == set.pi_cv {
            merge(&mut set, b, 1);
        }
    }
    if rng.chance(0.3) {
        let global = (two && rng.chance(0.5)).then_some(2);
        let u = [0.1, 0.3][rng.range_u64(0, 1) as usize];
        let k = rng.range_u64(1, 4) as usize;
        let d = generate_deadline(&mut rng, k, u, 1, global);
        merge(&mut set, d, 0);
    }
    set
}

fn same_bounds(seed: u64) -> Result<bool, TestCaseError> {
    let set = random_set(seed);
    if set.validate().is_err() {
        return Ok(false);
    }
    let reference = Analyzer::new().sweep_from(usize::MAX).analyze(&set);
    let swept = Analyzer::new().sweep_from(0).analyze(&set);
    prop_assert_eq!(&swept, &reference, "seed {}: {:#?}", seed, set);
    let sched = reference.iter().all(|r| r.schedulable);
    prop_assert_eq!(Analyzer::new().sweep_from(0).schedulable(&set), sched);
    prop_assert_eq!(
        Analyzer::new().sweep_from(usize::MAX).schedulable(&set),
        sched
    );
    Ok(true)
}

#[test]
fn level_sweep_gives_the_per_task_bounds() {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 3000,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let valid = std::cell::Cell::new(0usize);
    runner
        .run(&any::<u64>(), |seed| {
            if same_bounds(seed)? {
                valid.set(valid.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    // Most generated sets are valid: the comparison is not vacuous.
    assert!(valid.get() > 1500, "only {} valid sets", valid.get());
}

/// A large set (200 tasks, 10 mutexes, tied and distinct priorities), both
/// ways.
#[test]
fn level_sweep_on_a_large_set() {
    let params = GenParams {
        tasks: 200,
        resources: 10,
        access_probability: 0.2,
        cs_us: CsProfile::Short.range_us(),
        servers: 2,
        call_probability: 0.1,
        ..GenParams::default()
    };
    for seed in 0..4 {
        let mut set = generate(&params, 0.75, &mut Rng::new(seed));
        if seed % 2 == 1 {
            for (k, t) in set.tasks.iter_mut().enumerate() {
                t.class = Class::Fixed {
                    priority: 99 - (k / 10) as i32,
                };
            }
        }
        let reference = Analyzer::new().sweep_from(usize::MAX).analyze(&set);
        assert!(reference.iter().any(|r| r.blocking.is_some_and(|b| b > 0)));
        assert_eq!(Analyzer::new().analyze(&set), reference, "seed {seed}");
    }
}
