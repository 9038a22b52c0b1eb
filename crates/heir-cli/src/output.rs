//! Input and output shared by the commands: reading a scenario file,
//! duration flags, aligned text tables, one-object JSON on stdout, and output
//! files that are never left half-written.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use heir_runner::run::{RealRun, RunError};
use heir_scenario::limits::{beyond_time_limit_s, ThreadLimit};
use heir_scenario::{Policy, Scenario, Sched, Warning};
use heir_sim::{Observer, Report, SimError, TaskReport};
use heir_viz::{ChromeTrace, SvgGantt, SvgOptions, Tee};

use crate::disturb::{disturbance_json, task_disturbance_json};
use crate::CliError;

/// µs → ms with three decimals; `-` when there is no value.
pub fn ms(us: Option<f64>) -> String {
    match us {
        Some(v) => format!("{:.3}", v / 1000.0),
        None => "-".to_string(),
    }
}

/// `SCHED_FIFO/90`, `SCHED_OTHER/0` (nice), `SCHED_DEADLINE/10000:40000:40000`
/// (runtime:deadline:period µs).
pub fn sched_label(s: &Sched) -> String {
    match (s.policy, s.dl) {
        (Policy::Deadline, Some(dl)) => format!(
            "{}/{}:{}:{}",
            s.policy.name(),
            dl.runtime_us,
            dl.deadline_us,
            dl.period_us
        ),
        (Policy::Deadline, None) | (Policy::Idle, _) => s.policy.name().to_string(),
        _ => format!("{}/{}", s.policy.name(), s.priority),
    }
}

/// The scheduling label of every thread of `scenario`, by thread name.
/// A passive server (NOVA donation model: no scheduling context of
/// its own) is shown, with `passive`, as `passive` (`heir sim`); otherwise
/// as what its thread runs as on real threads: `SCHED_IDLE (passive)`
/// (`heir run` runs it at `SCHED_IDLE`, and the kernel lends it each
/// caller's priority while it serves).
pub fn thread_scheds(scenario: &Scenario, passive: bool) -> Vec<(String, String)> {
    scenario
        .tasks
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            let label = if scenario.rpc.is_passive(heir_scenario::TaskIdx(i)) {
                if passive {
                    "passive".to_string()
                } else {
                    "SCHED_IDLE (passive)".to_string()
                }
            } else {
                sched_label(&t.sched)
            };
            t.thread_names()
                .into_iter()
                .map(move |n| (n, label.clone()))
        })
        .collect()
}

/// Prints the reader's warnings to stderr as `heir: warning: file:line:col: …`.
pub fn print_warnings(file: &str, warnings: &[Warning]) {
    for w in warnings {
        eprintln!("heir: warning: {file}:{w}");
    }
}

/// Reads the input file at `path`: its name as given (for messages) and its
/// text. An unreadable file is bad input (exit 2).
pub fn read_input(path: &Path) -> Result<(String, String), CliError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {file}"))
        .map_err(CliError::bad_input)?;
    Ok((file, text))
}

/// Bad input found in `file`: `file:line:col: …` when the error's text
/// starts with its position (`has_position`), `file: …` otherwise.
pub fn bad_input_in(file: &str, has_position: bool, e: impl std::fmt::Display) -> CliError {
    let sep = if has_position { ":" } else { ": " };
    CliError::bad_input(anyhow!("{file}{sep}{e}"))
}

/// What a face does with the scenario, which sets how many threads it may
/// have (docs/SCENARIO.md §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Face {
    /// `heir run` (and anything that also runs real threads): real threads,
    /// at most [`heir_scenario::limits::MAX_THREADS`].
    Run,
    /// `heir sim`, `heir report` without real runs: a simulated thread each.
    Sim,
    /// `heir analyze` (without `--compare`): a task of the analysis each.
    Analyze,
}

impl Face {
    /// The thread limit of the face: `heir run`'s fixed limit, or what the
    /// machine's available memory holds at the face's bytes per thread.
    pub fn thread_limit(self, name: &str) -> ThreadLimit {
        let per_thread = match self {
            Face::Run => return ThreadLimit::fixed(name, heir_scenario::limits::MAX_THREADS),
            Face::Sim => heir_sim::BYTES_PER_THREAD,
            Face::Analyze => heir_analysis::BYTES_PER_THREAD,
        };
        ThreadLimit::from_available_memory(name, per_thread)
    }
}

/// Reads and checks the scenario file at `path` within `limit` threads and
/// prints the reader's warnings; returns the file's name as given (for
/// messages) and the scenario. An unreadable file or a reader error is bad
/// input (exit 2).
pub fn read_scenario(path: &Path, limit: &ThreadLimit) -> Result<(String, Scenario), CliError> {
    let file = path.display().to_string();
    let scenario = heir_scenario::load_with(path, limit).map_err(CliError::bad_input)?;
    print_warnings(&file, &scenario.warnings);
    Ok((file, scenario))
}

/// Reads a scenario file within `limit` threads and applies `--protocol
/// NAME=P` overrides to it (an override that names no mutex is bad input,
/// exit 2).
pub fn read_scenario_with(
    path: &Path,
    limit: &ThreadLimit,
    overrides: &[heir_scenario::protocols::Override],
) -> Result<(String, Scenario), CliError> {
    let (file, mut scenario) = read_scenario(path, limit)?;
    heir_scenario::protocols::apply(&mut scenario, overrides)
        .map_err(|e| CliError::bad_input(anyhow!("{file}: {e}")))?;
    Ok((file, scenario))
}

/// `--gpm on|off` (GPM): replaces `global.gpm` in the scenario, for
/// every face that reads it.
pub fn apply_gpm(scenario: &mut Scenario, gpm: Option<crate::sim::OnOff>) {
    if let Some(g) = gpm {
        scenario.global.gpm = g.enabled();
    }
}

/// `, gpm on` for a header line when the scenario has gangs (GPM);
/// empty otherwise.
pub fn gpm_shown(scenario: &Scenario) -> String {
    let gangs = scenario
        .resources
        .iter()
        .any(|r| matches!(r.kind, heir_scenario::ResourceKind::Gang { .. }));
    if gangs {
        format!(", gpm {}", on_off(scenario.global.gpm))
    } else {
        String::new()
    }
}

/// Parses one `--protocol NAME=P`.
pub fn parse_override(s: &str) -> Result<heir_scenario::protocols::Override, String> {
    heir_scenario::protocols::Override::parse(s)
}

/// `, protocols all=bwi m=none` for a header line; empty without overrides.
pub fn overrides_shown(raw: &[heir_scenario::protocols::Override]) -> String {
    if raw.is_empty() {
        return String::new();
    }
    let words: Vec<String> = raw.iter().map(|o| o.shown()).collect();
    format!(", protocols {}", words.join(" "))
}

/// Parses `--duration`: seconds (a positive decimal, at least 1 µs) into
/// whole µs, within heir's time limit — the rule `global.duration` obeys,
/// with the same message.
pub fn parse_seconds(s: &str) -> Result<u64, String> {
    use heir_scenario::limits::{duration_us, DurationError};
    let positive = || format!("expected seconds as a positive number (at least 1 µs), found {s:?}");
    let v: f64 = s.trim().parse().map_err(|_| positive())?;
    duration_us(v).map_err(|e| match e {
        DurationError::BeyondLimit => beyond_time_limit_s("duration", s.trim()),
        DurationError::NotPositive => positive(),
    })
}

/// A scenario the simulator refuses: bad input (exit 2), as
/// `FILE:LINE:COL: at PATH: cannot simulate: MESSAGE`, or
/// `FILE: cannot simulate: PATH: MESSAGE` when the error has no position.
pub fn sim_error(file: &str, e: &SimError) -> CliError {
    CliError::bad_input(match e.position() {
        Some((line, column)) => anyhow!(
            "{file}:{line}:{column}: at {}: cannot simulate: {}",
            e.path(),
            e.message()
        ),
        None => anyhow!("{file}: cannot simulate: {e}"),
    })
}

/// The `--json` report of `heir sim`: the [`Report`] with the number of
/// simulated CPUs after `mode`.
pub fn sim_json(report: &Report, cpus: u32) -> Result<serde_json::Value> {
    let value = serde_json::to_value(report).context("serialising the report")?;
    let serde_json::Value::Object(fields) = value else {
        return Ok(value);
    };
    let mut out = serde_json::Map::new();
    for (k, v) in fields {
        let after_mode = k == "mode";
        out.insert(k, v);
        if after_mode {
            out.insert("cpus".to_string(), cpus.into());
        }
    }
    Ok(serde_json::Value::Object(out))
}

/// The `--json` report of `heir run`: the [`Report`] (`mode: "real"`) with
/// `"apply"` — what heir-rt applied to the kernel during the run and
/// what it could not ([`heir::thread::ApplyStats`]) — and `"calibration"`
/// last ([`calibration_json`]).
pub fn run_json(real: &RealRun) -> Result<serde_json::Value> {
    let mut value = serde_json::to_value(&real.report).context("serialising the report")?;
    if let serde_json::Value::Object(fields) = &mut value {
        if let Some(serde_json::Value::Object(tasks)) = fields.get_mut("tasks") {
            for b in &real.bwi {
                if let Some(serde_json::Value::Object(t)) = tasks.get_mut(&b.task) {
                    t.insert("bwi".to_string(), bwi_json(b));
                }
            }
            for d in real.disturbance.threads.iter().filter(|d| d.lost_ns > 0) {
                if let Some(serde_json::Value::Object(t)) = tasks.get_mut(&d.thread) {
                    t.insert("disturbance".to_string(), task_disturbance_json(real, d));
                }
            }
        }
        fields.insert("disturbance".to_string(), disturbance_json(real));
        fields.insert("apply".to_string(), apply_json(real));
        fields.insert("calibration".to_string(), calibration_json(real));
    }
    Ok(value)
}

/// `"calibration"`: ns per busy loop on each CPU of the run and how it was
/// found, and each job's `run` CPU time against its nominal sum:
/// `{"source":"measured"|"file","ns_per_loop":{CPU:…},"samples":{CPU:…},
/// "run_jobs":…,"run_error_pct":{"p50":…,"p99":…},
/// "run_wall_error_pct":{"p50":…,"p99":…}}` (errors `null` without jobs
/// that `run`; the wall-clock error includes preemption, rt-app's `run`
/// column's meaning).
pub fn calibration_json(real: &RealRun) -> serde_json::Value {
    let c = &real.calibration;
    let a = &real.run_accuracy;
    let per_cpu = |f: &dyn Fn(&heir_runner::run::CpuCalibration) -> serde_json::Value| {
        c.cpus
            .iter()
            .map(|x| (x.cpu.to_string(), f(x)))
            .collect::<serde_json::Map<_, _>>()
    };
    serde_json::json!({
        "source": if c.measured { "measured" } else { "file" },
        "ns_per_loop": per_cpu(&|x| serde_json::json!(x.ns_per_loop)),
        "samples": per_cpu(&|x| serde_json::json!(x.samples)),
        "run_jobs": a.jobs(),
        "run_error_pct": {"p50": a.cpu_error_pct(0.5), "p99": a.cpu_error_pct(0.99)},
        "run_wall_error_pct": {"p50": a.wall_error_pct(0.5), "p99": a.wall_error_pct(0.99)},
    })
}

/// The text report's calibration line: ns per loop per CPU, and the
/// per-job `run` error (p50 / p99, CPU time; wall clock in brackets).
pub fn calibration_line(real: &RealRun) -> String {
    let c = &real.calibration;
    let a = &real.run_accuracy;
    let cpus: Vec<String> = c
        .cpus
        .iter()
        .map(|x| format!("{:.4} on CPU {}", x.ns_per_loop, x.cpu))
        .collect();
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:+.3} %"));
    format!(
        "calibration ({}): ns per loop {}; run per job vs nominal CPU time over {} jobs: p50 {}, p99 {} (wall clock: p50 {}, p99 {})",
        if c.measured { "measured" } else { "global.calibration" },
        cpus.join(", "),
        a.jobs(),
        pct(a.cpu_error_pct(0.5)),
        pct(a.cpu_error_pct(0.99)),
        pct(a.wall_error_pct(0.5)),
        pct(a.wall_error_pct(0.99)),
    )
}

/// `--log`: `[{"at_us":…,"thread":"A","event":"tasks.A.lock"},…]`, in time
/// order.
pub fn log_json(real: &RealRun) -> serde_json::Value {
    serde_json::Value::Array(
        real.log
            .iter()
            .map(|(us, t, w)| serde_json::json!({ "at_us": us, "thread": t, "event": w }))
            .collect(),
    )
}

/// A thread's `"bwi"` object (only for threads with a non-zero figure):
/// `{"lent_us":…,"consumed_us":…,"throttles":…,"readmit_retries":…,
/// "lent_to":{OWNER:{"consumed_us":…,"throttles":…}}}`.
fn bwi_json(b: &heir::bwi::BwiReport) -> serde_json::Value {
    let to: serde_json::Map<String, serde_json::Value> = b
        .pairs
        .iter()
        .map(|(o, us, th)| {
            (
                o.clone(),
                serde_json::json!({ "consumed_us": us, "throttles": th }),
            )
        })
        .collect();
    serde_json::json!({
        "lent_us": b.lent_us,
        "consumed_us": b.consumed_us,
        "throttles": b.throttles,
        "readmit_retries": b.readmit_retries,
        "lent_to": to,
    })
}

/// The `bwi` table of a run with `bwi` figures (none without): per thread,
/// the budget it lent and consumed (ms) and its throttles, under a line
/// saying what is exact and what approximates M-BWI.
pub fn bwi_table(real: &RealRun) -> Option<String> {
    if real.bwi.is_empty() {
        return None;
    }
    let mut t = Table::new(["task", "lent", "consumed", "throttles", "lent to"]);
    for b in &real.bwi {
        let to: Vec<String> = b
            .pairs
            .iter()
            .map(|(o, us, th)| format!("{o} {} ms/{th}", ms(Some(*us))))
            .collect();
        t.row([
            b.task.clone(),
            ms(Some(b.lent_us)),
            ms(Some(b.consumed_us)),
            b.throttles.to_string(),
            if to.is_empty() {
                "-".to_string()
            } else {
                to.join(", ")
            },
        ]);
    }
    Some(format!(
        "bwi in ms (user-space approximation of M-BWI on a stock kernel: lent/consumed = \
         an owner's CPU time while boosted, measured; throttles emulated by the waiter \
         withdrawing; a deadline owner runs SCHED_FIFO while it holds a bwi mutex — \
         docs/DEADLINE.md)\n\n{}",
        t.render()
    ))
}

/// `{"setattr_calls":…,"setattr_errors":…,"last_setattr_error":{"errno":1,
/// "name":"EPERM","tid":…,"thread":"A"}|null,"unexpressible":…,
/// "last_unexpressible":{"tid":…,"thread":"A"}|null,"vanished":…,
/// "engine_errors":…,"last_engine_error":"…"|null}`.
fn apply_json(real: &RealRun) -> serde_json::Value {
    let a = &real.apply;
    let last_setattr_error = (a.setattr_errors > 0).then(|| {
        serde_json::json!({
            "errno": a.last_errno,
            "name": heir::sys::errno_name(a.last_errno),
            "tid": a.last_error_tid,
            "thread": real.thread_name(a.last_error_tid),
        })
    });
    let last_unexpressible = (a.unexpressible > 0).then(|| {
        serde_json::json!({
            "tid": a.last_unexpressible_tid,
            "thread": real.thread_name(a.last_unexpressible_tid),
        })
    });
    serde_json::json!({
        "setattr_calls": a.setattr_calls,
        "setattr_errors": a.setattr_errors,
        "last_setattr_error": last_setattr_error,
        "unexpressible": a.unexpressible,
        "last_unexpressible": last_unexpressible,
        "vanished": a.vanished,
        "engine_errors": a.engine_errors,
        "last_engine_error": a.last_engine_error.as_ref().map(ToString::to_string),
    })
}

/// `heir run: …` lines for what heir-rt could not apply to the kernel
/// during the run (none when nothing went wrong).
pub fn apply_lines(real: &RealRun) -> Vec<String> {
    real.apply
        .problems(|tid| real.thread_name(tid))
        .into_iter()
        .map(|p| format!("heir run: {p}"))
        .collect()
}

/// The exit a refused or failed real-threads run maps to, with `context`
/// (which names the file) before the runner's message: a runtime or thread
/// start failure is a failure (exit 1); anything else — no privilege, no
/// finite duration, a feature the runner lacks — is bad input (exit 2).
pub fn run_error(e: RunError, context: String) -> CliError {
    let failure = matches!(
        e,
        RunError::Runtime(_)
            | RunError::Spawn { .. }
            | RunError::Trace(heir_runner::tracefs::TraceError::Io { .. })
    );
    let err = anyhow!(e).context(context);
    if failure {
        CliError::failure(err)
    } else {
        CliError::bad_input(err)
    }
}

/// Prints a note of `heir run` about its CPUs on stderr, as a warning.
pub fn print_run_note(note: &str) {
    eprintln!("heir: warning: {note}");
}

/// `on` or `off`.
pub fn on_off(enabled: bool) -> &'static str {
    if enabled {
        "on"
    } else {
        "off"
    }
}

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A text table: a header row, then rows, columns padded to their widest
/// cell and separated by two spaces.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers (the first column left-aligned,
    /// the others right-aligned).
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let align = (0..header.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Table {
            header,
            align,
            rows: Vec::new(),
        }
    }

    /// Sets the alignment of column `col`.
    pub fn align(mut self, col: usize, a: Align) -> Self {
        if let Some(slot) = self.align.get_mut(col) {
            *slot = a;
        }
        self
    }

    /// Adds a row (missing cells are blank).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table as lines of text.
    pub fn render(&self) -> String {
        let cols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut width = vec![0usize; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let cell = r.get(i).map(String::as_str).unwrap_or("");
                let pad = w - cell.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                match self.align.get(i).copied().unwrap_or(Align::Right) {
                    Align::Left => {
                        line.push_str(cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `heir run --compare`: per task, the real run's jobs, misses, mean and
/// maximum response (ms) beside the simulation's of the same file.
pub fn real_vs_sim_table(real: &Report, sim: &Report) -> Table {
    let mut t = Table::new([
        "task",
        "jobs real",
        "sim",
        "misses real",
        "sim",
        "mean real",
        "sim",
        "max real",
        "sim",
    ]);
    for r in &real.tasks {
        let s = sim.tasks.iter().find(|s| s.name == r.name);
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
        t.row([
            r.name.clone(),
            r.jobs.to_string(),
            or_dash(s.map(|s| s.jobs.to_string())),
            r.deadline_misses.to_string(),
            or_dash(s.map(|s| s.deadline_misses.to_string())),
            ms(r.response_us.mean),
            ms(s.and_then(|s| s.response_us.mean)),
            ms(r.response_us.max),
            ms(s.and_then(|s| s.response_us.max)),
        ]);
    }
    t
}

/// `heir run --compare` of a file with gangs (GPM): per gang and
/// waiter, the real and the simulated completed waits, timeouts, mean and
/// maximum latency (ms); `None` without gangs.
pub fn real_vs_sim_gangs(real: &Report, sim: &Report) -> Option<Table> {
    if real.gangs.is_empty() && sim.gangs.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "gang",
        "waiter",
        "waits real",
        "sim",
        "timeouts real",
        "sim",
        "mean real",
        "sim",
        "max real",
        "sim",
    ])
    .align(1, Align::Left);
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    for g in &sim.gangs {
        let rg = real.gangs.iter().find(|r| r.name == g.name);
        for w in &g.waiters {
            let rw = rg.and_then(|r| r.waiters.iter().find(|x| x.thread == w.thread));
            t.row([
                g.name.clone(),
                w.thread.clone(),
                or_dash(rw.map(|r| r.completed.to_string())),
                w.completed.to_string(),
                or_dash(rw.map(|r| r.timeouts.to_string())),
                w.timeouts.to_string(),
                ms(rw.and_then(|r| r.latency_us.mean)),
                ms(w.latency_us.mean),
                ms(rw.and_then(|r| r.latency_us.max)),
                ms(w.latency_us.max),
            ]);
        }
        // Waiters only the real run saw.
        for rw in rg.iter().flat_map(|r| &r.waiters) {
            if !g.waiters.iter().any(|w| w.thread == rw.thread) {
                t.row([
                    g.name.clone(),
                    rw.thread.clone(),
                    rw.completed.to_string(),
                    "-".to_string(),
                    rw.timeouts.to_string(),
                    "-".to_string(),
                    ms(rw.latency_us.mean),
                    ms(None),
                    ms(rw.latency_us.max),
                    ms(None),
                ]);
            }
        }
    }
    Some(t)
}

/// The per-thread table of a run report: task, policy/prio, jobs, misses
/// (those of jobs that had not completed when the run ended, if any, said
/// after: `3 (1 unfinished)`), then response-time statistics in ms.
pub fn report_table(report: &Report, scheds: &[(String, String)]) -> Table {
    let mut t = Table::new([
        "task",
        "policy/prio",
        "jobs",
        "misses",
        "min",
        "mean",
        "p50",
        "p90",
        "p99",
        "max",
    ])
    .align(1, Align::Left);
    for task in &report.tasks {
        let sched = scheds
            .iter()
            .find(|(n, _)| *n == task.name)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| "-".to_string());
        let r = &task.response_us;
        t.row([
            task.name.clone(),
            sched,
            task.jobs.to_string(),
            misses_cell(task),
            ms(r.min),
            ms(r.mean),
            ms(r.p50),
            ms(r.p90),
            ms(r.p99),
            ms(r.max),
        ]);
    }
    t
}

/// A thread's misses, and how many of them are jobs that had not completed
/// when the run ended: `3`, `3 (1 unfinished)`.
fn misses_cell(task: &TaskReport) -> String {
    match task.unfinished_misses {
        0 => task.deadline_misses.to_string(),
        u => format!("{} ({u} unfinished)", task.deadline_misses),
    }
}

/// GPM: one row per gang and waiting thread — runs and failed runs
/// of the gang, the thread's completed waits and timeouts, and the
/// latency from `gang_run` to the last `gang_notify` (ms); `None` without
/// gangs.
pub fn gang_table(report: &Report) -> Option<Table> {
    if report.gangs.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "gang", "waiter", "runs", "failed", "waits", "timeouts", "min", "mean", "p99", "max",
    ])
    .align(1, Align::Left);
    for g in &report.gangs {
        if g.waiters.is_empty() {
            t.row([
                g.name.clone(),
                "-".to_string(),
                g.runs.to_string(),
                g.failed_runs.to_string(),
                "0".to_string(),
                "0".to_string(),
                ms(None),
                ms(None),
                ms(None),
                ms(None),
            ]);
        }
        for w in &g.waiters {
            let l = &w.latency_us;
            t.row([
                g.name.clone(),
                w.thread.clone(),
                g.runs.to_string(),
                g.failed_runs.to_string(),
                w.completed.to_string(),
                w.timeouts.to_string(),
                ms(l.min),
                ms(l.mean),
                ms(l.p99),
                ms(l.max),
            ]);
        }
    }
    Some(t)
}

/// `deadline servers: tau1 throttled 2, replenished 2; …` — one line for
/// the `SCHED_DEADLINE` threads of a report, if it has any.
pub fn server_line(report: &Report) -> Option<String> {
    let parts: Vec<String> = report
        .tasks
        .iter()
        .filter_map(|t| {
            t.server.map(|s| {
                format!(
                    "{} throttled {}, replenished {}",
                    t.name, s.throttled, s.replenished
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| format!("deadline servers: {}", parts.join("; ")))
}

/// `aborted calls: Client 1, Other 0` — per thread whose calls have a
/// `timeout` (NOVA donation), the calls that timed out and were aborted.
pub fn aborted_line(report: &Report) -> Option<String> {
    let parts: Vec<String> = report
        .tasks
        .iter()
        .filter_map(|t| t.aborted_calls.map(|n| format!("{} {n}", t.name)))
        .collect();
    (!parts.is_empty()).then(|| format!("aborted calls: {}", parts.join(", ")))
}

/// `migrations: A 0, B 2` — per thread, the times it ran on another CPU
/// than the one it last ran on; only with several CPUs, and only for
/// reports that count them (the simulator's).
pub fn migration_line(report: &Report, cpus: u32) -> Option<String> {
    if cpus < 2 {
        return None;
    }
    let parts: Option<Vec<String>> = report
        .tasks
        .iter()
        .map(|t| t.migrations.map(|m| format!("{} {m}", t.name)))
        .collect();
    parts
        .filter(|p| !p.is_empty())
        .map(|p| format!("migrations: {}", p.join(", ")))
}

/// The deadlock line of a report, if it deadlocked:
/// `deadlock at 4.000 ms: A -> m2 -> B -> m1 -> A` (`livelock at …` for
/// servers that would help each other forever, the NOVA paper's Fig. 7).
pub fn deadlock_line(report: &Report) -> Option<String> {
    report.deadlock.as_ref().map(|d| {
        format!(
            "{} at {} ms: {}",
            d.kind.word(),
            ms(Some(d.at_us)),
            d.cycle.join(" -> ")
        )
    })
}

/// Writes `value` as one pretty-printed JSON object on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    // Buffered: stdout alone writes each line (a system call per line of
    // a report of 100,000 tasks).
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value).context("writing JSON to stdout")?;
    writeln!(out).context("writing to stdout")?;
    out.flush().context("writing to stdout")
}

/// A file written under a temporary name beside its target and renamed over
/// the target once complete; dropped before [`PendingFile::commit`], it
/// removes the temporary file, so no half-written output is ever left.
#[derive(Debug)]
pub struct PendingFile {
    tmp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl PendingFile {
    /// Creates the temporary file beside `target`.
    pub fn create(target: &Path) -> Result<(PendingFile, File)> {
        let name = target
            .file_name()
            .with_context(|| format!("{}: not a file name", target.display()))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = target.with_file_name(tmp_name);
        let file = File::create(&tmp).with_context(|| {
            format!(
                "cannot create {} (written first as {})",
                target.display(),
                tmp.display()
            )
        })?;
        Ok((
            PendingFile {
                tmp,
                target: target.to_path_buf(),
                committed: false,
            },
            file,
        ))
    }

    /// The file it will become.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs `file` (the one [`PendingFile::create`] returned) and renames it
    /// over the target.
    pub fn commit(mut self, file: File) -> Result<PathBuf> {
        file.sync_all()
            .with_context(|| format!("writing {}", self.target.display()))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.target)
            .with_context(|| format!("cannot create {}", self.target.display()))?;
        self.committed = true;
        Ok(self.target.clone())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The trace and SVG writers of one run, and where they go.
pub struct RunOutputs {
    trace: Option<(PendingFile, ChromeTrace<File>)>,
    svg: Option<(PathBuf, SvgGantt)>,
}

impl RunOutputs {
    /// Opens a Chrome trace at `trace` (a temporary file for now) and keeps
    /// an SVG Gantt chart for `svg`. A path that cannot be created is bad
    /// input.
    pub fn new(
        trace: Option<&Path>,
        svg: Option<&Path>,
        svg_title: &str,
    ) -> Result<RunOutputs, CliError> {
        Self::with_svg_window(trace, svg, svg_title, None)
    }

    /// As [`RunOutputs::new`], drawing the SVG over `window` = (start, length)
    /// in ns instead of the default first 200 ms.
    pub fn with_svg_window(
        trace: Option<&Path>,
        svg: Option<&Path>,
        svg_title: &str,
        window: Option<(u64, u64)>,
    ) -> Result<RunOutputs, CliError> {
        let trace = match trace {
            Some(path) => {
                let (pending, file) = PendingFile::create(path).map_err(CliError::bad_input)?;
                Some((pending, ChromeTrace::new(file)))
            }
            None => None,
        };
        let svg = svg.map(|p| {
            let mut opts = SvgOptions {
                title: svg_title.to_string(),
                ..SvgOptions::default()
            };
            if let Some((start, len)) = window {
                opts.window_start_ns = start;
                opts.window_ns = len;
            }
            (p.to_path_buf(), SvgGantt::new(opts))
        });
        Ok(RunOutputs { trace, svg })
    }

    /// Adds `key` = `json` to the Chrome trace's metadata (`otherData`),
    /// if a trace is written.
    pub fn trace_metadata(&mut self, key: &str, json: String) {
        if let Some((_, t)) = &mut self.trace {
            t.set_metadata(key, json);
        }
    }

    /// The observer to give the run: every writer at once.
    pub fn observer(&mut self) -> Tee<'_> {
        let mut tee = Tee::new();
        if let Some((_, t)) = &mut self.trace {
            tee.push(t as &mut dyn Observer);
        }
        if let Some((_, s)) = &mut self.svg {
            tee.push(s as &mut dyn Observer);
        }
        tee
    }

    /// Finishes every file (temporary name, then rename) and returns the
    /// paths written, trace first.
    pub fn commit(self) -> Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        if let Some((pending, trace)) = self.trace {
            let what = pending.target().display().to_string();
            let file = trace
                .into_inner()
                .with_context(|| format!("cannot write {what}"))?;
            written.push(pending.commit(file)?);
        }
        if let Some((path, svg)) = self.svg {
            let (pending, file) = PendingFile::create(&path)?;
            let mut w = BufWriter::new(file);
            svg.write_svg(&mut w)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let file = w
                .into_inner()
                .map_err(|e| e.into_error())
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(pending.commit(file)?);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heir_scenario::DlParams;

    #[test]
    fn ms_has_three_decimals() {
        assert_eq!(ms(Some(29_000.0)), "29.000");
        assert_eq!(ms(Some(18_995.4)), "18.995");
        assert_eq!(ms(None), "-");
    }

    #[test]
    fn seconds_parse_to_microseconds() {
        assert_eq!(parse_seconds("60"), Ok(60_000_000));
        assert_eq!(parse_seconds("0.5"), Ok(500_000));
        assert_eq!(parse_seconds("1e-6"), Ok(1));
        for bad in ["0", "-1", "abc", "nan", "inf", "1e-9", "1e300"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
        // The time limit, with global.duration's message.
        assert_eq!(parse_seconds("8640000"), Ok(8_640_000_000_000));
        assert_eq!(
            parse_seconds("1e11"),
            Err("duration 1e11 s is beyond heir's time limit of 8640000 s (100 days)".to_string())
        );
        assert_eq!(
            parse_seconds("-2"),
            Err("expected seconds as a positive number (at least 1 µs), found \"-2\"".to_string())
        );
    }

    #[test]
    fn sched_labels() {
        let s = |policy, priority, dl| {
            sched_label(&Sched {
                policy,
                priority,
                dl,
            })
        };
        assert_eq!(s(Policy::Fifo, 90, None), "SCHED_FIFO/90");
        assert_eq!(s(Policy::Other, -5, None), "SCHED_OTHER/-5");
        assert_eq!(s(Policy::Idle, 0, None), "SCHED_IDLE");
        let dl = DlParams {
            runtime_us: 10,
            deadline_us: 30,
            period_us: 40,
        };
        assert_eq!(s(Policy::Deadline, 0, Some(dl)), "SCHED_DEADLINE/10:30:40");
    }

    #[test]
    fn table_pads_and_aligns_columns() {
        let mut t = Table::new(["task", "jobs"]);
        t.row(["Client1", "1500"]);
        t.row(["A", "7"]);
        assert_eq!(t.render(), "task     jobs\nClient1  1500\nA           7\n");
        let mut t = Table::new(["a", "b"]).align(1, Align::Left);
        t.row(["xx", "y"]);
        t.row(["z"]);
        assert_eq!(t.render(), "a   b\nxx  y\nz\n");
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("heir-output-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_pending_file_appears_only_on_commit() {
        let dir = scratch("commit");
        let target = dir.join("out.json");
        let (pending, mut file) = PendingFile::create(&target).unwrap();
        file.write_all(b"{}").unwrap();
        assert_eq!(
            names(&dir),
            [format!(".out.json.tmp-{}", std::process::id())]
        );
        assert!(!target.exists());
        assert_eq!(pending.commit(file).unwrap(), target);
        assert_eq!(names(&dir), ["out.json"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dropped_pending_file_leaves_nothing() {
        let dir = scratch("drop");
        let target = dir.join("out.svg");
        std::fs::write(&target, "old").unwrap();
        {
            let (_pending, mut file) = PendingFile::create(&target).unwrap();
            file.write_all(b"half").unwrap();
        }
        // The previous file is untouched, the temporary one is gone.
        assert_eq!(names(&dir), ["out.svg"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
