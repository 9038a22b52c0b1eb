//! `heir run FILE`: run a scenario file on real threads (SCHED_FIFO,
//! SCHED_DEADLINE, … from the file, pinned to the file's `cpus`, `run` as calibrated busy loops, timers
//! on CLOCK_MONOTONIC absolute), and print the same table and `--json`
//! schema as `heir sim`, with `"mode":"real"` — plus what heir-rt could not
//! apply to the kernel during the run (failed `sched_setattr` calls, boosts
//! it cannot express, …): `heir run: …` lines after the table when there is
//! any, and always the `"apply"` object in the JSON; then the calibration
//! (ns per busy loop on each CPU of the run) and how close each job's
//! `run` came to its nominal CPU time, p50 and p99 (a line after the
//! table; JSON: `"calibration"`). `--compare` also
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
//!
//! `--partition`: the only change `heir run` makes to the machine, on
//! request: each set of CPUs the file pins deadline threads to becomes a
//! root domain of its own for the run (`heir_runner::partition`), printed, and
//! restored at the end, on error and on SIGINT/SIGTERM/SIGHUP (exit 128 +
//! the signal).

use std::path::PathBuf;

use anyhow::anyhow;
use heir_runner::run::{run, Placement, RunConfig, TraceConfig};

use crate::disturb::disturbance_lines;
use crate::exit::deadlock_exit;
use crate::output::{
    aborted_line, apply_lines, bwi_table, calibration_line, deadlock_line, gang_table, gpm_shown,
    log_json, ms, on_off, overrides_shown, parse_override, parse_seconds, print_json,
    print_run_note, read_scenario_with, real_vs_sim_gangs, real_vs_sim_table, report_table,
    run_error, run_json, sim_error, sim_json, thread_scheds, PendingFile, RunOutputs,
};
use crate::sim::OnOff;
use crate::{CliError, CliResult};
use heir_runner::run::RealTrace;
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
    /// Gang priority management (GPM; replaces global.gpm): off
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
    /// Record the kernel's view of the run (sched_switch, wake-ups, PI
    /// boosts, migrations, and heir's own events) in a dedicated ftrace
    /// instance and write it as a Chrome trace with the tracks and names of
    /// `heir sim --trace` (docs/TRACING.md). Needs root (tracefs).
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// Also write the kernel's records of the run (its ring-buffer pages,
    /// heir's markers among them) as a trace.dat in trace-cmd's format:
    /// `trace-cmd report OUT.dat`, `kernelshark OUT.dat`
    /// (docs/TRACING.md). Needs root (tracefs).
    #[arg(long, value_name = "OUT.dat")]
    pub trace_dat: Option<PathBuf>,
    /// Write an SVG Gantt chart of the run, drawn from the kernel's trace
    /// (as `--trace` records it).
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<PathBuf>,
    /// Start of the SVG chart's time window, in ms from the run's start.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = crate::sim::parse_ms)]
    pub svg_from: f64,
    /// Length of the SVG chart's time window, in ms.
    #[arg(long, value_name = "MS", default_value_t = 200.0, value_parser = crate::sim::parse_ms)]
    pub svg_span: f64,
    /// For the run, make each set of CPUs the file pins SCHED_DEADLINE
    /// threads to a root domain of its own (cgroup v1: a child cpuset with
    /// cpu_exclusive and sched_load_balance 0 in the top one; cgroup v2: a
    /// cpuset.cpus.partition root holding the process); prints what it
    /// changes, restores it at the end, on error and on SIGINT, SIGTERM or
    /// SIGHUP. Needs root. Without it, nothing on the machine changes.
    #[arg(long)]
    pub partition: bool,
    /// The ftrace instance's buffer per CPU, in KiB (default: 4 MiB per
    /// second of run, 4 to 256 MiB).
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u32).range(64..=4_194_304))]
    pub trace_buffer_kb: Option<u32>,
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
    let (file, mut scenario) = read_scenario_with(
        &args.file,
        &crate::output::Face::Run.thread_limit("heir run"),
        &args.protocol,
    )?;
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
        trace: (args.trace.is_some() || args.svg.is_some() || args.trace_dat.is_some()).then_some(
            TraceConfig {
                buffer_kb_per_cpu: args.trace_buffer_kb,
                dat: args.trace_dat.is_some(),
            },
        ),
        partition: args.partition,
    };
    if args.partition {
        // Before any thread starts: every thread inherits the blocked
        // signals, and only the signal thread takes them.
        heir_runner::partition::restore_on_signals(report_signal)
            .map_err(|e| CliError::failure(anyhow!("--partition: {e}")))?;
    }
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    if args.svg_span <= 0.0 {
        return Err(CliError::bad_input(anyhow!("--svg-span must be positive")));
    }
    let title = format!(
        "{file}: real run (kernel trace), PI-CV {}{}{}",
        on_off(pi_cv),
        gpm_shown(&scenario),
        overrides_shown(&args.protocol)
    );
    let window = (
        (args.svg_from * 1e6).round() as u64,
        (args.svg_span * 1e6).round() as u64,
    );
    // Output paths are checked before anything runs; the files are made
    // after the run (nothing is left behind by an interrupted run).
    for p in [&args.trace, &args.svg, &args.trace_dat]
        .into_iter()
        .flatten()
    {
        drop(PendingFile::create(p).map_err(CliError::bad_input)?);
    }
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
    let mut written = match &real.trace {
        Some(t) => {
            let mut outputs = RunOutputs::with_svg_window(
                args.trace.as_deref(),
                args.svg.as_deref(),
                &title,
                Some(window),
            )?;
            outputs.trace_metadata("trace", trace_metadata(t));
            t.replay(&mut outputs.observer());
            outputs.commit().map_err(CliError::failure)?
        }
        None => Vec::new(),
    };
    if let (Some(path), Some(dat)) = (&args.trace_dat, &real.dat) {
        written.push(crate::trace_dat::write(path, dat)?);
    }
    if real.disturbance.lost_ns > 0 {
        // The verdict and the main disturber (the whole list is in the
        // report).
        let lines = disturbance_lines(&real);
        if let Some(first) = lines.first() {
            eprintln!("heir: warning: the run was {first}");
        }
        if let Some(by) = lines.iter().find(|l| l.starts_with("  by ")) {
            eprintln!("heir: warning: most of it {}", by.trim_start());
        }
    }
    if let Some(t) = &real.trace {
        if let Some(w) = dropped_warning(t) {
            eprintln!("heir: warning: {w}");
        }
    }
    if args.json {
        let mut json = run_json(&real).map_err(CliError::failure)?;
        if args.log {
            if let serde_json::Value::Object(fields) = &mut json {
                fields.insert("log".to_string(), log_json(&real));
            }
        }
        if let (Some(t), serde_json::Value::Object(fields)) = (&real.trace, &mut json) {
            let mut v: serde_json::Value = serde_json::from_str(&trace_metadata(t))
                .map_err(|e| CliError::failure(anyhow!(e)))?;
            v["files"] = written.iter().map(|p| p.display().to_string()).collect();
            fields.insert("trace".to_string(), v);
        }
        if let (Some((r, cpus)), serde_json::Value::Object(fields)) = (&sim, &mut json) {
            let sim_json = sim_json(r, *cpus).map_err(CliError::failure)?;
            fields.insert("simulated".to_string(), sim_json);
        }
        print_json(&json).map_err(CliError::failure)?;
    } else {
        print!(
            "{file}: mode {}, ran {:.3} s, pi_cv {}{}{}\nresponse times in ms\n\n{}",
            report.mode,
            report.duration_us / 1e6,
            on_off(pi_cv),
            gpm_shown(&scenario),
            overrides_shown(&args.protocol),
            report_table(report, &thread_scheds(&scenario, false)).render()
        );
        if let Some(t) = gang_table(report) {
            print!(
                "\ngangs: latency from gang_run to the last gang_notify, in ms\n\n{}",
                t.render()
            );
        }
        if let Some(line) = aborted_line(report) {
            println!("\n{line}");
        }
        println!("\n{}", calibration_line(&real));
        println!("{}", disturbance_lines(&real).join("\n"));
        if let Some(table) = bwi_table(&real) {
            print!("\n{table}");
        }
        if let Some((sim, _)) = &sim {
            print!(
                "\nreal beside simulated (heir sim of the same file, {:.3} s), response times in ms\n\n{}",
                sim.duration_us / 1e6,
                real_vs_sim_table(report, sim).render()
            );
            if let Some(t) = real_vs_sim_gangs(report, sim) {
                print!(
                    "\ngangs real beside simulated: latency from gang_run to the last gang_notify, in ms\n\n{}",
                    t.render()
                );
            }
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
        if let Some(t) = &real.trace {
            println!("\n{}", trace_line(t));
            for path in &written {
                println!("wrote {}", path.display());
            }
        }
    }
    deadlock_exit(report.deadlock.is_some())
}

/// After a signal ended a `--partition` run: what was restored.
fn report_signal(sig: i32, failed: &[String]) {
    let name = match sig {
        2 => "SIGINT",
        15 => "SIGTERM",
        1 => "SIGHUP",
        _ => "a signal",
    };
    if failed.is_empty() {
        eprintln!(
            "heir: {name}: the run was stopped; --partition: restored the cpusets as they were"
        );
    } else {
        eprintln!(
            "heir: {name}: the run was stopped; --partition: could not restore: {}",
            failed.join("; ")
        );
    }
}

/// The trace's recording, as the JSON object put in the Chrome trace's
/// metadata (`otherData.trace`) and in `heir run --json` (`"trace"`).
pub fn trace_metadata(t: &RealTrace) -> String {
    let s = &t.stats;
    let per_cpu: serde_json::Map<String, serde_json::Value> = s
        .dropped
        .iter()
        .map(|(c, n)| (c.to_string(), serde_json::json!(n)))
        .collect();
    serde_json::json!({
        "source": "ftrace",
        "instance": s.instance,
        "clock": "mono",
        "kernel_records": s.kernel_records,
        "heir_markers": s.markers,
        "dropped_events": s.lost_total(),
        "dropped_per_cpu": per_cpu,
        "unreadable_lines": s.unreadable,
    })
    .to_string()
}

/// One line about the recording: what it read, what the kernel dropped.
pub fn trace_line(t: &RealTrace) -> String {
    let s = &t.stats;
    format!(
        "kernel trace ({}): {} scheduler records and {} heir events of the run's threads, {} dropped",
        s.instance,
        s.kernel_records,
        s.markers,
        s.lost_total()
    )
}

/// A warning when the kernel dropped events (the trace misses part of the
/// run).
pub fn dropped_warning(t: &RealTrace) -> Option<String> {
    let n = t.stats.lost_total();
    (n > 0).then(|| {
        format!(
            "the kernel dropped {n} trace events (per CPU: {:?}): the trace misses part of the run; a larger --trace-buffer-kb keeps more",
            t.stats.dropped
        )
    })
}
