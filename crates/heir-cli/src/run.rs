//! `heir run FILE`: run a scenario file on real threads (SCHED_FIFO,
//! SCHED_DEADLINE, … from the file, pinned to the file's `cpus`, `run` as calibrated busy loops, timers
//! on CLOCK_MONOTONIC absolute), and print the same table and `--json`
//! schema as `heir sim`, with `"mode":"real"` — plus what heir-rt could not
//! apply to the kernel during the run (failed `sched_setattr` calls, boosts
//! it cannot express, …): `heir run: …` lines after the table when there is
//! any, and always the `"apply"` object in the JSON. `--compare` also
//! simulates the same file (same protocols, PI-CV and duration; first, so a
//! file the simulator refuses never runs) and prints the simulated figures
//! beside the real ones (JSON: `"simulated"`).
//!
//! CPUs: a CPU the file names that another program's real-time threads (or
//! another `heir run`) use moves to a free CPU (`--placement free`, the
//! default) or stays (`--placement as-written`); a file that names no CPU runs on the
//! quietest one. Either way a warning on stderr says what else runs there,
//! and another program's real-time thread that ran on the run's CPUs during
//! the run is a warning too.
//!
//! Exit codes: 0 ok; 1 the runtime failed; 2 bad input — unreadable file,
//! reader error, no finite duration (set `global.duration` or pass
//! `--duration`), a feature the runner lacks, no permission for real-time
//! priorities, a SCHED_DEADLINE task the kernel does not admit (named, with
//! its runtime, period and the free bandwidth) or cannot pin, or a program the simulator refuses as well (an unlock of a
//! mutex not held, a zero-time loop: the same path and message as `heir
//! sim`) — with nothing on stdout; 3 the run hit a deadlock (the report and
//! its cycle are printed). RT throttling is never touched.

use std::path::PathBuf;

use heir::run::{run, Placement, RunConfig};

use crate::exit::deadlock_exit;
use crate::output::{
    aborted_line, apply_lines, bwi_table, deadlock_line, log_json, ms, on_off, overrides_shown,
    parse_override, parse_seconds, print_json, print_run_note, read_scenario_with,
    real_vs_sim_table, report_table, run_error, run_json, sim_error, sim_json, thread_scheds,
};
use crate::sim::OnOff;
use crate::{CliError, CliResult};
use heir_sim::{NullObserver, SimConfig};

/// `heir run` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: an rt-app JSON file, with heir's extensions.
    pub file: PathBuf,
    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run duration in seconds (replaces global.duration).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub duration: Option<u64>,
    /// PI-CV on condition variables with helpers (replaces global.pi_cv).
    #[arg(long, value_name = "on|off")]
    pub pi_cv: Option<OnOff>,
    /// Gang priority management (seed 003; replaces global.gpm): off
    /// keeps the gangs' waiting and counting but boosts nobody.
    #[arg(long, value_name = "on|off")]
    pub gpm: Option<OnOff>,
    /// A mutex protocol instead of the file's: NAME=P for one mutex, all=P
    /// for every mutex (later ones win); P is none, inherit, bwi, ceiling
    /// (the file's ceiling, or the highest locker's priority) or ceiling:N.
    #[arg(long = "protocol", value_name = "NAME=P", value_parser = parse_override)]
    pub protocol: Vec<heir_scenario::protocols::Override>,
    /// Where the file's CPUs run: `free` moves a CPU that another
    /// program's real-time threads (or another heir run) use to a free one,
    /// `as-written` keeps the file's numbers; both say so on stderr.
    #[arg(long, value_name = "free|as-written", default_value = "free")]
    pub placement: PlacementArg,
    /// Also print each thread's first events (up to 64), all threads in
    /// time order: when each ended, in ms from the start (JSON: "log").
    #[arg(long)]
    pub log: bool,
    /// Also simulate the file (same protocols, PI-CV and duration) and
    /// print each task's simulated jobs, misses and response times beside
    /// the real ones (JSON: "simulated", the `heir sim --json` object).
    #[arg(long)]
    pub compare: bool,
}

/// `--placement`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementArg {
    /// Move busy CPUs to free ones.
    Free,
    /// Keep the file's CPU numbers.
    AsWritten,
}

/// Runs `heir run`.
pub fn main(args: Args) -> CliResult {
    let (file, mut scenario) = read_scenario_with(&args.file, &args.protocol)?;
    crate::output::apply_gpm(&mut scenario, args.gpm);
    let config = RunConfig {
        duration_us: args.duration,
        pi_cv: args.pi_cv.map(OnOff::enabled),
        calibration_ns_per_loop: None,
        placement: match args.placement {
            PlacementArg::Free => Placement::Free,
            PlacementArg::AsWritten => Placement::AsWritten,
        },
        on_note: Some(print_run_note),
    };
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    // Simulated first: a file the simulator refuses never runs.
    let sim = if args.compare {
        let sim_config = SimConfig {
            seed: None,
            duration_us: args.duration,
            pi_cv: Some(pi_cv),
            cpus: None,
        };
        let cpus = heir_sim::cpu_count(&scenario, &sim_config).map_err(|e| sim_error(&file, &e))?;
        let r = heir_sim::simulate(&scenario, &sim_config, &mut NullObserver)
            .map_err(|e| sim_error(&file, &e))?;
        Some((r, cpus))
    } else {
        None
    };
    let real = run(&scenario, &config).map_err(|e| run_error(e, format!("{file}: cannot run")))?;
    let report = &real.report;
    if args.json {
        let mut json = run_json(&real).map_err(CliError::failure)?;
        if args.log {
            if let serde_json::Value::Object(fields) = &mut json {
                fields.insert("log".to_string(), log_json(&real));
            }
        }
        if let (Some((r, cpus)), serde_json::Value::Object(fields)) = (&sim, &mut json) {
            let sim_json = sim_json(r, *cpus).map_err(CliError::failure)?;
            fields.insert("simulated".to_string(), sim_json);
        }
        print_json(&json).map_err(CliError::failure)?;
    } else {
        print!(
            "{file}: mode {}, ran {:.3} s, pi_cv {}{}\nresponse times in ms\n\n{}",
            report.mode,
            report.duration_us / 1e6,
            on_off(pi_cv),
            overrides_shown(&args.protocol),
            report_table(report, &thread_scheds(&scenario, false)).render()
        );
        if let Some(line) = aborted_line(report) {
            println!("\n{line}");
        }
        if let Some(table) = bwi_table(&real) {
            print!("\n{table}");
        }
        if let Some((sim, _)) = &sim {
            print!(
                "\nreal beside simulated (heir sim of the same file, {:.3} s), response times in ms\n\n{}",
                sim.duration_us / 1e6,
                real_vs_sim_table(report, sim).render()
            );
            if let Some(line) = deadlock_line(sim) {
                println!("\nsimulated: {line}");
            }
        }
        if args.log {
            println!("\nlog (ms from the start, when each event ended)");
            for (us, thread, what) in &real.log {
                println!("{:>10}  {thread}  {what}", ms(Some(*us)));
            }
        }
        if let Some(line) = deadlock_line(report) {
            println!("\n{line}");
        }
        // What heir-rt could not apply to the kernel (only when something
        // went wrong).
        let lines = apply_lines(&real);
        if !lines.is_empty() {
            println!("\n{}", lines.join("\n"));
        }
    }
    deadlock_exit(report.deadlock.is_some())
}
