//! One point of the simulator's scaling benchmark
//! (`scripts/bench-sim-scale.sh` runs one process per point, so that the
//! peak RSS is this point's own).
//!
//! ```sh
//! cargo run --release -p heir-sim --example sim_scale -- TASKS CPUS {none|mutex} [SECONDS] [--simso FILE]
//! ```
//!
//! Builds [`heir_sim::bench::periodic_set`] (seed 1) as a scenario,
//! simulates it for `SECONDS` (default: long enough for about 2 M jobs,
//! at least 1 s) and prints one line:
//! `tasks cpus locks seconds jobs events wall_s cpu_s ns_per_job peak_rss_kb scenario_rss_kb`
//! (`wall_s`: the simulation's wall time, building included; `cpu_s` its
//! CPU time (`/proc/thread-self/schedstat`), which `ns_per_job` is
//! divided from; `peak_rss_kb`
//! is `VmHWM`, the process's peak, scenario included; `scenario_rss_kb` the
//! RSS once the scenario is built, before the simulator is). `--simso FILE` also writes the task set for
//! `scripts/simso_run.py` (one `period_ms wcet_ms priority` line per task).
//! `--json FILE` writes the same set as a scenario file for `heir sim` and
//! `heir analyze` (`scripts/bench-cli-scale.sh`: global `duration` the
//! `SECONDS` above, `SCHED_FIFO`, priority inheritance; on one CPU
//! every task pinned to CPU 0; each task an
//! absolute timer of its period, then its `run`, and `lock; run; unlock`
//! of its mutex) and exits without simulating.

use std::process::ExitCode;
use std::time::Instant;

use heir_sim::bench::{periodic_scenario, periodic_set};
use heir_sim::{NullObserver, SimConfig, Simulator};

/// CPU time of this thread (ns), from `/proc/thread-self/schedstat`:
/// unlike wall time it does not count the time other processes of a busy
/// machine hold the core.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// `VmHWM` (peak) or `VmRSS` (now) of this process, kB.
fn status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: sim_scale TASKS CPUS {none|mutex} [SECONDS] [--simso FILE] [--json FILE]";
    let (mut pos, mut simso, mut json) = (Vec::new(), None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--simso" => simso = it.next().cloned(),
            "--json" => json = it.next().cloned(),
            "--bench" => {}
            _ => pos.push(a.clone()),
        }
    }
    let (Some(tasks), Some(cpus), Some(locks)) = (
        pos.first().and_then(|s| s.parse::<usize>().ok()),
        pos.get(1).and_then(|s| s.parse::<u32>().ok()),
        pos.get(2).filter(|s| *s == "none" || *s == "mutex"),
    ) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let set = periodic_set(1, tasks, cpus, locks == "mutex");
    // Default: long enough for about 2 M jobs (at least 1 s).
    let jobs_per_s: f64 = set.iter().map(|t| 1e6 / t.period_us as f64).sum();
    let secs: f64 = pos
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| (2e6 / jobs_per_s).ceil().max(1.0));
    if let Some(path) = simso {
        let text: String = set
            .iter()
            .map(|t| {
                format!(
                    "{} {} {}\n",
                    t.period_us as f64 / 1000.0,
                    t.wcet_us as f64 / 1000.0,
                    t.priority
                )
            })
            .collect();
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("{path}: {e}");
            return ExitCode::from(1);
        }
    }
    if let Some(path) = json {
        return match std::fs::write(&path, scenario_json(&set, secs, cpus)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{path}: {e}");
                ExitCode::from(1)
            }
        };
    }
    let sc = periodic_scenario(&set, 1);
    drop(set);
    let cfg = SimConfig {
        duration_us: Some((secs * 1e6) as u64),
        cpus: Some(cpus),
        ..SimConfig::default()
    };
    let mut obs = NullObserver;
    let scenario_kb = status_kb("VmRSS:").unwrap_or(0);
    let t0 = Instant::now();
    let c0 = cpu_ns();
    let report = match Simulator::new(&sc, &cfg, &mut obs).and_then(|mut s| s.run()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("simulation failed: {e}");
            return ExitCode::from(1);
        }
    };
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = match (c0, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall_s,
    };
    let jobs: u64 = report.tasks.iter().map(|t| t.jobs).sum();
    println!(
        "{tasks} {cpus} {locks} {secs} {jobs} {} {wall_s:.3} {cpu_s:.3} {:.1} {} {scenario_kb}",
        report.events,
        cpu_s * 1e9 / jobs.max(1) as f64,
        status_kb("VmHWM:").unwrap_or(0)
    );
    ExitCode::SUCCESS
}

/// The set as an rt-app scenario file (the tasks of [`periodic_scenario`],
/// one line each), simulated for `secs`; on one CPU every task is pinned
/// to CPU 0 (the same schedule, and one `heir analyze` accepts).
fn scenario_json(set: &[heir_sim::bench::PeriodicTask], secs: f64, cpus: u32) -> String {
    let pin = if cpus == 1 { "\"cpus\": [0], " } else { "" };
    let mut out = format!(
        "{{\n\"global\": {{\"duration\": {secs}, \"default_policy\": \"SCHED_FIFO\", \"pi_enabled\": true}},\n\"tasks\": {{\n"
    );
    for (i, t) in set.iter().enumerate() {
        let mut events = format!(
            "\"timer\": {{\"ref\": \"tm{i}\", \"period\": {}, \"mode\": \"absolute\"}}",
            t.period_us
        );
        let outside = t.wcet_us - t.section_us;
        if outside > 0 {
            events.push_str(&format!(", \"run\": {outside}"));
        }
        if let Some(m) = t.mutex {
            events.push_str(&format!(
                ", \"lock\": \"m{m}\", \"run\": {}, \"unlock\": \"m{m}\"",
                t.section_us
            ));
        }
        let sep = if i + 1 < set.len() { "," } else { "" };
        out.push_str(&format!(
            "\"t{i}\": {{\"priority\": {}, {pin}{events}}}{sep}\n",
            t.priority
        ));
    }
    out.push_str("}\n}\n");
    out
}
