//! `heir sim FILE`: simulate a scenario file, deterministically from its seed.
//!
//! Prints a per-thread table (or, with `--json`, exactly one JSON object:
//! the [`heir_sim::Report`]), and optionally writes a Chrome trace
//! (`--trace`, for ui.perfetto.dev) and an SVG Gantt chart of the first
//! 200 ms (`--svg`). Output files are written under a temporary name and
//! renamed when complete: bad input leaves none behind.
//!
//! Exit codes: 0 ok; 2 bad input (unreadable file, reader error, a scenario
//! the simulator refuses, bad flags) with nothing on stdout; 3 the run
//! deadlocked (the report, its cycle and the files are still produced).

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use heir_sim::{Report, SimConfig};

use crate::exit::DEADLOCK;
use crate::output::{
    deadlock_line, print_json, print_warnings, report_table, thread_scheds, RunOutputs,
};
use crate::{CliError, CliResult};

/// `on` / `off`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    /// True for `on`.
    pub fn enabled(self) -> bool {
        self == OnOff::On
    }
}

/// `heir sim` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: an rt-app JSON file, with heir's extensions.
    pub file: PathBuf,
    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a Chrome trace-event JSON file (open it in ui.perfetto.dev).
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// Write an SVG Gantt chart of the first 200 ms.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<PathBuf>,
    /// Seed of every random draw (replaces global.seed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Simulated duration in seconds (replaces global.duration).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub duration: Option<u64>,
    /// PI-CV on condition variables with helpers (replaces global.pi_cv).
    #[arg(long, value_name = "on|off")]
    pub pi_cv: Option<OnOff>,
    /// Start of the SVG chart's time window, in ms of simulated time.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = parse_ms)]
    pub svg_from: f64,
    /// Length of the SVG chart's time window, in ms (the chart keeps only
    /// this window in memory, however long the run).
    #[arg(long, value_name = "MS", default_value_t = 200.0, value_parser = parse_ms)]
    pub svg_span: f64,
}

/// Parses a non-negative number of milliseconds.
fn parse_ms(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v < 1e12 => Ok(v),
        _ => Err(format!(
            "expected milliseconds as a non-negative number, found {s:?}"
        )),
    }
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

/// Runs `heir sim`.
pub fn main(args: Args) -> CliResult {
    let file = args.file.display().to_string();
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {file}"))
        .map_err(CliError::bad_input)?;
    let scenario = heir_scenario::parse_str(&text, &file).map_err(CliError::bad_input)?;
    print_warnings(&file, &scenario.warnings);

    let config = SimConfig {
        seed: args.seed,
        duration_us: args.duration,
        pi_cv: args.pi_cv.map(OnOff::enabled),
    };
    let seed = config.seed.unwrap_or(scenario.global.seed);
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    let title = format!(
        "{file}: simulated, PI-CV {}, seed {seed}",
        if pi_cv { "on" } else { "off" }
    );
    if args.svg_span <= 0.0 {
        return Err(CliError::bad_input(anyhow!("--svg-span must be positive")));
    }
    let window = (
        (args.svg_from * 1e6).round() as u64,
        (args.svg_span * 1e6).round() as u64,
    );
    let mut outputs = RunOutputs::with_svg_window(
        args.trace.as_deref(),
        args.svg.as_deref(),
        &title,
        Some(window),
    )?;
    let report = heir_sim::simulate(&scenario, &config, &mut outputs.observer())
        .map_err(|e| CliError::bad_input(anyhow!(e).context(format!("{file}: cannot simulate"))))?;
    let written = outputs.commit().map_err(CliError::failure)?;

    if args.json {
        print_json(&report).map_err(CliError::failure)?;
    } else {
        print!(
            "{}",
            text_report(&file, seed, pi_cv, &report, &thread_scheds(&scenario))
        );
        for path in &written {
            println!("wrote {}", path.display());
        }
    }
    if report.deadlock.is_some() {
        return Err(CliError::quiet(DEADLOCK));
    }
    Ok(())
}

/// The readable report: a header line, the per-thread table, and the
/// deadlock with its cycle, if any.
fn text_report(
    file: &str,
    seed: u64,
    pi_cv: bool,
    report: &Report,
    scheds: &[(String, String)],
) -> String {
    let mut out = format!(
        "{file}: mode {}, simulated {:.3} s, seed {seed}, pi_cv {}\nresponse times in ms\n\n",
        report.mode,
        report.duration_us / 1e6,
        if pi_cv { "on" } else { "off" }
    );
    out.push_str(&report_table(report, scheds).render());
    if let Some(line) = deadlock_line(report) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_parse_to_microseconds() {
        assert_eq!(parse_seconds("60"), Ok(60_000_000));
        assert_eq!(parse_seconds("0.5"), Ok(500_000));
        assert_eq!(parse_seconds("1e-6"), Ok(1));
        for bad in ["0", "-1", "abc", "nan", "inf", "1e-9", "1e300"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
