//! `heir run FILE`: run a scenario file on real threads (SCHED_FIFO from the
//! file, pinned to the file's `cpus`, `run` as calibrated busy loops, timers
//! on CLOCK_MONOTONIC absolute), and print the same table and `--json`
//! schema as `heir sim`, with `"mode":"real"`.
//!
//! Exit codes: 0 ok; 2 bad input — unreadable file, reader error, no finite
//! duration (set `global.duration` or pass `--duration`), a feature the
//! runner lacks, or no permission for real-time priorities — with nothing on
//! stdout; 3 the run hit a deadlock (the report and its cycle are printed).
//! RT throttling is never touched.

use std::path::PathBuf;

use heir::run::{run_scenario, RunConfig};

use crate::exit::deadlock_exit;
use crate::output::{
    deadlock_line, on_off, parse_seconds, print_json, read_scenario, report_table, run_error,
    thread_scheds,
};
use crate::sim::OnOff;
use crate::{CliError, CliResult};

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
}

/// Runs `heir run`.
pub fn main(args: Args) -> CliResult {
    let (file, scenario) = read_scenario(&args.file)?;
    let config = RunConfig {
        duration_us: args.duration,
        pi_cv: args.pi_cv.map(OnOff::enabled),
        calibration_ns_per_loop: None,
    };
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    let report = run_scenario(&scenario, &config)
        .map_err(|e| run_error(e, format!("{file}: cannot run")))?;
    if args.json {
        print_json(&report).map_err(CliError::failure)?;
    } else {
        print!(
            "{file}: mode {}, ran {:.3} s, pi_cv {}\nresponse times in ms\n\n{}",
            report.mode,
            report.duration_us / 1e6,
            on_off(pi_cv),
            report_table(&report, &thread_scheds(&scenario)).render()
        );
        if let Some(line) = deadlock_line(&report) {
            println!("\n{line}");
        }
    }
    deadlock_exit(report.deadlock.is_some())
}
