//! `heir sim FILE`: simulate a scenario file, deterministically from its seed.
//!
//! Prints a header (file, simulated time, CPUs, seed, PI-CV, and GPM for a
//! file with gangs), a per-thread table, the gangs' table (GPM: per
//! gang and waiting thread, the latency from `gang_run` to the last
//! notify), the reservations' `deadline servers:` line and, on several CPUs, the
//! threads' migrations (or, with `--json`, exactly one JSON object: the
//! [`heir_sim::Report`] with `"cpus"`, the number of simulated CPUs, after
//! `"mode"`), and optionally writes a Chrome trace
//! (`--trace`, for ui.perfetto.dev) and an SVG Gantt chart of the first
//! 200 ms (`--svg`). Output files are written under a temporary name and
//! renamed when complete: bad input leaves none behind.
//!
//! Exit codes: 0 ok; 2 bad input (unreadable file, reader error, a scenario
//! the simulator refuses, bad flags) with nothing on stdout; 3 the run
//! deadlocked (the report, its cycle and the files are still produced).

use std::path::PathBuf;

use anyhow::anyhow;
use heir_scenario::limits::MAX_CPUS;
use heir_sim::{Report, SimConfig};

use crate::exit::deadlock_exit;
use crate::output::{
    aborted_line, apply_gpm, deadlock_line, gang_table, gpm_shown, migration_line, on_off,
    overrides_shown, parse_override, parse_seconds, print_json, read_scenario_with, report_table,
    server_line, sim_error, sim_json, thread_scheds, RunOutputs,
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
    /// Gang priority management (GPM; replaces global.gpm): off
    /// keeps the gangs' waiting and counting but boosts nobody.
    #[arg(long, value_name = "on|off")]
    pub gpm: Option<OnOff>,
    /// A mutex protocol instead of the file's: NAME=P for one mutex, all=P
    /// for every mutex (later ones win); P is none, inherit, bwi, ceiling
    /// (the file's ceiling, or the highest locker's priority) or ceiling:N.
    #[arg(long = "protocol", value_name = "NAME=P", value_parser = parse_override)]
    pub protocol: Vec<heir_scenario::protocols::Override>,
    /// Number of simulated CPUs (1 to 1024); every CPU the file names must
    /// be below it. Default: 1 + the largest CPU number the file names.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_CPUS)))]
    pub cpus: Option<u32>,
    /// Start of the SVG chart's time window, in ms of simulated time.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = parse_ms)]
    pub svg_from: f64,
    /// Length of the SVG chart's time window, in ms (the chart keeps only
    /// this window in memory, however long the run).
    #[arg(long, value_name = "MS", default_value_t = 200.0, value_parser = parse_ms)]
    pub svg_span: f64,
}

/// Parses a non-negative number of milliseconds.
pub fn parse_ms(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..1e12).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected milliseconds as a non-negative number, found {s:?}"
        )),
    }
}

/// Runs `heir sim`.
pub fn main(args: Args) -> CliResult {
    let (file, mut scenario) = read_scenario_with(
        &args.file,
        &crate::output::Face::Sim.thread_limit("heir sim"),
        &args.protocol,
    )?;
    apply_gpm(&mut scenario, args.gpm);
    let config = SimConfig {
        seed: args.seed,
        duration_us: args.duration,
        pi_cv: args.pi_cv.map(OnOff::enabled),
        cpus: args.cpus,
    };
    let seed = config.seed.unwrap_or(scenario.global.seed);
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    let title = format!(
        "{file}: simulated, PI-CV {}, seed {seed}{}{}",
        on_off(pi_cv),
        gpm_shown(&scenario),
        overrides_shown(&args.protocol)
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
    let cpus = heir_sim::cpu_count(&scenario, &config).map_err(|e| sim_error(&file, &e))?;
    let report = heir_sim::simulate(&scenario, &config, &mut outputs.observer())
        .map_err(|e| sim_error(&file, &e))?;
    let written = outputs.commit().map_err(CliError::failure)?;

    if args.json {
        let json = sim_json(&report, cpus).map_err(CliError::failure)?;
        print_json(&json).map_err(CliError::failure)?;
    } else {
        print!(
            "{}",
            text_report(
                &file,
                seed,
                (
                    pi_cv,
                    &format!(
                        "{}{}",
                        gpm_shown(&scenario),
                        overrides_shown(&args.protocol)
                    ),
                ),
                cpus,
                &report,
                &thread_scheds(&scenario, true),
            )
        );
        for path in &written {
            println!("wrote {}", path.display());
        }
    }
    deadlock_exit(report.deadlock.is_some())
}

/// The readable report: a header line, the per-thread table, and the
/// deadlock with its cycle, if any.
fn text_report(
    file: &str,
    seed: u64,
    (pi_cv, protocols): (bool, &str),
    cpus: u32,
    report: &Report,
    scheds: &[(String, String)],
) -> String {
    let mut out = format!(
        "{file}: mode {}, simulated {:.3} s on {cpus} CPU{}, seed {seed}, pi_cv {}{protocols}\nresponse times in ms\n\n",
        report.mode,
        report.duration_us / 1e6,
        if cpus == 1 { "" } else { "s" },
        on_off(pi_cv)
    );
    out.push_str(&report_table(report, scheds).render());
    if let Some(t) = gang_table(report) {
        out.push_str("\ngangs: latency from gang_run to the last gang_notify, in ms\n\n");
        out.push_str(&t.render());
    }
    if let Some(line) = server_line(report) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = aborted_line(report) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = migration_line(report, cpus) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = deadlock_line(report) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    out
}
