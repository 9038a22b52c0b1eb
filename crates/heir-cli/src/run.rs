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

use anyhow::{anyhow, Context};
use heir::run::{run_scenario, RunConfig, RunError};

use crate::exit::DEADLOCK;
use crate::output::{deadlock_line, print_json, print_warnings, report_table, thread_scheds};
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

/// Parses a duration in seconds (a positive decimal) into whole µs.
fn parse_seconds(s: &str) -> Result<u64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("expected seconds as a positive number, found {s:?}"))?;
    let us = (v * 1e6).round();
    if !v.is_finite() || v <= 0.0 || us < 1.0 || us >= u64::MAX as f64 / 1000.0 {
        return Err(format!(
            "expected seconds as a positive number (at least 1 µs), found {s:?}"
        ));
    }
    Ok(us as u64)
}

/// Runs `heir run`.
pub fn main(args: Args) -> CliResult {
    let file = args.file.display().to_string();
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {file}"))
        .map_err(CliError::bad_input)?;
    let scenario = heir_scenario::parse_str(&text, &file).map_err(CliError::bad_input)?;
    print_warnings(&file, &scenario.warnings);
    let config = RunConfig {
        duration_us: args.duration,
        pi_cv: args.pi_cv.map(OnOff::enabled),
        calibration_ns_per_loop: None,
    };
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    let report = run_scenario(&scenario, &config).map_err(|e| {
        let err = anyhow!(e).context(format!("{file}: cannot run"));
        match err.downcast_ref::<RunError>() {
            Some(RunError::Runtime(_)) | Some(RunError::Spawn { .. }) => CliError::failure(err),
            _ => CliError::bad_input(err),
        }
    })?;
    if args.json {
        print_json(&report).map_err(CliError::failure)?;
    } else {
        print!(
            "{file}: mode {}, ran {:.3} s, pi_cv {}\nresponse times in ms\n\n{}",
            report.mode,
            report.duration_us / 1e6,
            if pi_cv { "on" } else { "off" },
            report_table(&report, &thread_scheds(&scenario)).render()
        );
        if let Some(line) = deadlock_line(&report) {
            println!("\n{line}");
        }
    }
    if report.deadlock.is_some() {
        return Err(CliError::quiet(DEADLOCK));
    }
    Ok(())
}
