//! Soundness of the EDF analysis for constrained-deadline reservation sets
//! with mutexes, per protocol (`none`, `inherit` = Linux's deadline
//! inheritance, `bwi` = M-BWI), on one CPU, partitioned on two, and global
//! on two: every set is simulated and no simulated response may exceed its
//! bound. Prints, per protocol and placement, how many sets and tasks got a
//! finite bound (`cargo test -p heir-analysis --test analysis soundness_edf
//! -- --nocapture`; `HEIR_EDF_SETS=N` sets per protocol, default 1200;
//! `HEIR_EDF_DUMP=1` writes each violating set as a scenario file
//! `/tmp/edf-PROTOCOL-K.json`, for `heir sim --trace`).

use heir_analysis::analyze_set;
use heir_analysis::gen::{
    generate_deadline_with, to_scenario, DlGen, DlPlacement, ScenarioOptions,
};
use heir_analysis::model::MutexProtocol;
use heir_analysis::rng::Rng;
use heir_scenario::TimerMode;
use heir_sim::{simulate, NullObserver, SimConfig};

/// Per (protocol, placement): what was checked.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    sets: u64,
    /// Sets whose every task has a finite bound.
    sets_bounded: u64,
    tasks: u64,
    tasks_bounded: u64,
    /// Bounded tasks whose bound is below their server deadline `D`
    /// (Spuri's response-time bound).
    tighter: u64,
    /// Bounded tasks with at least one simulated job.
    checked: u64,
    jobs: u64,
    violations: u64,
    max_ratio: f64,
}

fn sets_per_protocol() -> u64 {
    std::env::var("HEIR_EDF_SETS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1200)
}

#[test]
fn soundness_edf_constrained_deadlines_with_mutexes() {
    let protocols = [
        ("none", MutexProtocol::None),
        ("inherit", MutexProtocol::Inherit),
        ("bwi", MutexProtocol::Bwi),
    ];
    let placements = [
        ("1 CPU", DlPlacement::OneCpu),
        ("2 CPUs partitioned", DlPlacement::Partitioned2),
        ("2 CPUs global", DlPlacement::Global2),
    ];
    let n = sets_per_protocol();
    let mut failures: Vec<String> = Vec::new();
    let mut all = Vec::new();
    for (pi, &(pname, protocol)) in protocols.iter().enumerate() {
        let mut tallies = [Tally::default(); 3];
        for k in 0..n {
            // Half the sets on one CPU, a third partitioned, a sixth global.
            let pl = match k % 6 {
                0..=2 => 0,
                3 | 4 => 1,
                _ => 2,
            };
            let seed = 0xedf0 ^ (pi as u64) << 40 ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut rng = Rng::new(seed);
            let g = DlGen {
                tasks: 2 + rng.range_u64(0, 3) as usize,
                utilisation: if pl == 2 {
                    0.4 + 1.2 * rng.f64()
                } else {
                    0.2 + 0.75 * rng.f64()
                },
                resources: 1 + rng.range_u64(0, 2) as usize,
                protocol,
                placement: placements[pl].1,
                constrained: 0.7,
            };
            let set = generate_deadline_with(&mut rng, &g);
            let opts = ScenarioOptions {
                duration_s: 0.5,
                seed: k,
                random_offsets: rng.chance(0.5),
                shuffle: true,
                ranges: rng.chance(0.3),
                timer_mode: if rng.chance(0.5) {
                    TimerMode::Relative
                } else {
                    TimerMode::Absolute
                },
            };
            let sc = to_scenario(&set, &opts, &mut Rng::new(k));
            let report =
                analyze_set(&set).unwrap_or_else(|e| panic!("{pname} set {k} refused: {e}"));
            let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver)
                .unwrap_or_else(|e| panic!("{pname} set {k}: the simulator refused: {e}"));
            let t = &mut tallies[pl];
            t.sets += 1;
            let bounded = report.tasks.iter().filter(|b| b.wcrt_us.is_some()).count() as u64;
            t.tasks += report.tasks.len() as u64;
            t.tasks_bounded += bounded;
            if bounded == report.tasks.len() as u64 {
                t.sets_bounded += 1;
            }
            for b in &report.tasks {
                let Some(bound) = b.wcrt_us else { continue };
                let server_d =
                    set.tasks
                        .iter()
                        .find(|x| x.name == b.name)
                        .and_then(|x| match x.class {
                            heir_analysis::model::Class::Deadline { deadline, .. } => {
                                Some(deadline)
                            }
                            _ => None,
                        });
                if server_d.is_some_and(|d| bound * 1000.0 < d as f64) {
                    t.tighter += 1;
                }
                let st = sim
                    .tasks
                    .iter()
                    .find(|s| s.name == b.name)
                    .expect("task in the report");
                let Some(max) = st.response_us.max else {
                    continue;
                };
                t.checked += 1;
                t.jobs += st.jobs;
                t.max_ratio = t.max_ratio.max(max / bound);
                if (max * 1000.0).round() > (bound * 1000.0).round() {
                    t.violations += 1;
                    if std::env::var("HEIR_EDF_DUMP").is_ok() {
                        let f = format!("/tmp/edf-{pname}-{k}.json");
                        std::fs::write(&f, dump(&sc)).expect("dump");
                        eprintln!("DUMP {f}");
                    }
                    failures.push(format!(
                        "{pname}, {}: set {k}: task {} simulated max {max} µs > bound {bound} µs (B = {:?})\nset: {set:#?}\noptions: {opts:?}",
                        placements[pl].0, b.name, b.blocking_us
                    ));
                }
            }
        }
        for (pl, t) in tallies.iter().enumerate() {
            eprintln!(
                "edf soundness {pname:>7}, {:<18}: {:>4} sets, {:>4} all bounded ({:.3}), tasks {}/{} bounded ({:.3}), {} below D, {} checked, {} jobs, {} violations, max simulated/bound {:.3}",
                placements[pl].0,
                t.sets,
                t.sets_bounded,
                t.sets_bounded as f64 / t.sets.max(1) as f64,
                t.tasks_bounded,
                t.tasks,
                t.tasks_bounded as f64 / t.tasks.max(1) as f64,
                t.tighter,
                t.checked,
                t.jobs,
                t.violations,
                t.max_ratio
            );
        }
        all.push(tallies);
    }
    for f in &failures {
        eprintln!("violation: {}", f.lines().next().unwrap_or(""));
    }
    assert!(
        failures.is_empty(),
        "{} violations; first:\n{}",
        failures.len(),
        failures[0]
    );
}

/// The scenario of a generated set as a file (for `heir sim --trace`): the
/// events `to_scenario` writes (run, lock, unlock, timer).
fn dump(sc: &heir_scenario::Scenario) -> String {
    use heir_scenario::{EventKind, Micros, MutexProtocol, Policy, ResourceKind, TimerMode};
    let res = |i: usize| sc.resources[i].name.clone();
    let mut resources = Vec::new();
    for r in &sc.resources {
        if let ResourceKind::Mutex { protocol } = &r.kind {
            let p = match protocol {
                MutexProtocol::None => "none",
                MutexProtocol::Inherit => "inherit",
                MutexProtocol::Bwi => "bwi",
                _ => "inherit",
            };
            resources.push(format!(
                r#""{}": {{"type": "mutex", "protocol": "{p}"}}"#,
                r.name
            ));
        }
    }
    let mut tasks = Vec::new();
    for t in &sc.tasks {
        let mut ev = Vec::new();
        for (k, e) in t.phases[0].events.iter().enumerate() {
            let us = |m: &Micros| match m {
                Micros::Fixed(v) => format!("{v}"),
                Micros::Uniform { min, max } => format!(r#"{{"min": {min}, "max": {max}}}"#),
            };
            ev.push(match &e.kind {
                EventKind::Run(m) => format!(r#""run{k}": {}"#, us(m)),
                EventKind::Lock(r) => format!(r#""lock{k}": "{}""#, res(r.0)),
                EventKind::Unlock(r) => format!(r#""unlock{k}": "{}""#, res(r.0)),
                EventKind::Timer { timer, period } => {
                    let mode = match &sc.resources[timer.0].kind {
                        ResourceKind::Timer {
                            mode: TimerMode::Absolute,
                            ..
                        } => r#", "mode": "absolute""#,
                        _ => "",
                    };
                    format!(
                        r#""timer": {{"ref": "{}", "period": {}{mode}}}"#,
                        res(timer.0),
                        us(period)
                    )
                }
                other => format!(r#""unknown{k}": "{other:?}""#),
            });
        }
        let sched = match (&t.sched.policy, &t.sched.dl) {
            (Policy::Deadline, Some(dl)) => format!(
                r#""policy": "SCHED_DEADLINE", "dl-runtime": {}, "dl-deadline": {}, "dl-period": {}"#,
                dl.runtime_us, dl.deadline_us, dl.period_us
            ),
            _ => format!(r#""priority": {}"#, t.sched.priority),
        };
        let cpus = t
            .cpus
            .as_ref()
            .map(|c| format!("{c:?}"))
            .unwrap_or("[0, 1]".into());
        tasks.push(format!(
            r#""{}": {{{sched}, "cpus": {cpus}, "delay": {}, {}}}"#,
            t.name,
            t.delay_us,
            ev.join(", ")
        ));
    }
    format!(
        "{{\"global\": {{\"duration\": {}}},\n \"resources\": {{{}}},\n \"tasks\": {{\n  {}}}}}\n",
        sc.global.duration_s.unwrap_or(1.0),
        resources.join(", "),
        tasks.join(",\n  ")
    )
}
