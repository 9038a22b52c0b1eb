//! Soundness: thousands of random scenarios, simulated over a bounded
//! horizon; every simulated response time must be at most its analytic
//! bound. A violation is a bug in the analysis or in the simulator.

use heir_analysis::gen::{generate, to_scenario, GenParams, ScenarioOptions, UtilGenerator};
use heir_analysis::rng::Rng;
use heir_analysis::{analyze_scenario, analyze_set, Family, Options, TaskSet};
use heir_scenario::TimerMode;
use heir_sim::{simulate, NullObserver, SimConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// `a` on CPU 0 and `b` on CPU 1, as one partitioned set.
fn partitioned(a: TaskSet, b: TaskSet) -> TaskSet {
    let mut out = a;
    let (nm, ns) = (out.mutexes.len(), out.servers.len());
    for mut t in b.tasks {
        t.name = format!("{}b", t.name);
        t.cpu = 1;
        t.sections.iter_mut().for_each(|s| s.mutex += nm);
        t.calls.iter_mut().for_each(|c| c.server += ns);
        out.tasks.push(t);
    }
    for mut m in b.mutexes {
        m.name = format!("{}b", m.name);
        out.mutexes.push(m);
    }
    for mut sv in b.servers {
        sv.name = format!("{}b", sv.name);
        sv.cpu = 1;
        out.servers.push(sv);
    }
    out
}

/// Pairs checked, and how many reached their bound exactly.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    checked: usize,
    tight: usize,
}

/// Checks one set under one protocol; `Err` describes the violation.
fn check(
    set: &TaskSet,
    protocol: Family,
    opts: &ScenarioOptions,
    seed: u64,
) -> Result<Tally, String> {
    let set = set.with_protocol(protocol);
    let report = analyze_set(&set).map_err(|e| format!("generated set refused: {e}"))?;
    let sc = to_scenario(&set, opts, &mut Rng::new(seed));
    // The scenario, read back through the extraction, gives the same bounds.
    let extracted = analyze_scenario(&sc, &Options::default())
        .map_err(|e| format!("extraction refused the scenario: {e}"))?;
    if extracted.tasks != report.tasks {
        return Err(format!(
            "extraction differs:\n{:#?}\nvs\n{:#?}",
            extracted.tasks, report.tasks
        ));
    }
    let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver)
        .map_err(|e| format!("simulator refused: {e}"))?;
    if let Some(d) = &sim.deadlock {
        return Err(format!("the simulator deadlocked: {:?}", d.cycle));
    }
    let mut tally = Tally::default();
    for b in &report.tasks {
        let Some(bound) = b.wcrt_us else { continue };
        let t = sim
            .tasks
            .iter()
            .find(|t| t.name == b.name)
            .ok_or("task missing from the report")?;
        if let Some(max) = t.response_us.max {
            tally.checked += 1;
            if (max * 1000.0).round() == (bound * 1000.0).round() {
                tally.tight += 1;
            }
            // Both sides are whole ns / 1000: compare in ns.
            if (max * 1000.0).round() > (bound * 1000.0).round() {
                return Err(format!(
                    "{protocol:?}: task {} simulated max {max} µs > bound {bound} µs (B = {:?})\nset: {set:#?}\noptions: {opts:?}",
                    b.name, b.blocking_us
                ));
            }
        }
    }
    Ok(tally)
}

fn params(tasks: usize, resources: usize, servers: usize, nest: f64) -> GenParams {
    GenParams {
        tasks,
        generator: UtilGenerator::Uunifast,
        period_min_us: 5_000,
        period_max_us: 100_000,
        period_granularity_us: 5_000,
        resources,
        access_probability: 0.5,
        cs_us: (100, 3_000),
        nest_probability: nest,
        servers,
        call_probability: 0.5,
        call_us: (100, 3_000),
    }
}

#[test]
fn simulated_response_times_never_exceed_the_bounds() {
    let config = Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let strategy = (
        any::<u64>(),
        2usize..7,
        0usize..4,
        0usize..3,
        0.2f64..0.95,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    );
    let tally = std::cell::Cell::new(Tally::default());
    runner
        .run(
            &strategy,
            |(seed, tasks, resources, servers, util, nest, offsets, relative)| {
                let mut rng = Rng::new(seed);
                let p = params(tasks, resources, servers, if nest { 0.5 } else { 0.0 });
                let mut set = generate(&p, util, &mut rng);
                // One case in four: a second, independent set on CPU 1.
                if seed % 4 == 1 {
                    let other = generate(&p, util, &mut rng);
                    set = partitioned(set, other);
                }
                let opts = ScenarioOptions {
                    duration_s: 1.0,
                    seed,
                    random_offsets: offsets,
                    shuffle: true,
                    ranges: seed % 3 == 0,
                    timer_mode: if relative {
                        TimerMode::Relative
                    } else {
                        TimerMode::Absolute
                    },
                };
                for p in Family::ALL {
                    let t = check(&set, p, &opts, seed).map_err(TestCaseError::fail)?;
                    let sum = tally.get();
                    tally.set(Tally {
                        checked: sum.checked + t.checked,
                        tight: sum.tight + t.tight,
                    });
                }
                Ok(())
            },
        )
        .unwrap();
    // The property is not vacuous: most tasks have a bound and run jobs.
    let Tally { checked, tight } = tally.get();
    eprintln!(
        "soundness: {checked} (task, protocol) pairs checked, {tight} at their bound exactly"
    );
    assert!(
        checked > 5_000,
        "only {checked} (task, protocol) pairs checked"
    );
}
