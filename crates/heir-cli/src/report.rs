//! `heir report FILE [--vary WHAT] [--real SECONDS] [-o report.html]`: one
//! self-contained HTML page (heir-viz's [`ReportPage`]) with the three faces
//! of a scenario side by side, for each setting compared. `--vary` says
//! which ([`Vary`]): PI-CV off and on (the default, as `heir demo` compares
//! them), the mutex protocols of one mutex or all (`protocol=NAME=P1,P2,…`),
//! gang priority management off and on (`gpm`), or the IPC model
//! (`ipc`: PI-CV helpers, NOVA donation); everything else is the file's (or
//! `--protocol`'s) in every setting. For each setting: simulated, analysed (heir-analysis' bound) and, with `--real
//! SECONDS` and the privilege, real response times (mean, p90, p99, max,
//! misses); the response-time CDFs; the Gantt charts of the simulation and
//! of the real run (drawn from its kernel trace, `heir run --trace`) for
//! the same window; who lent to whom, for how long.
//!
//! Without the privilege for real-time threads, or without tracefs, the
//! page says what is missing and why (and the command still succeeds);
//! the page is written under a temporary name and renamed when complete.
//!
//! Exit codes: 0 ok; 1 a run failed; 2 bad input (file, flags, output path).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use heir_runner::run::{RealRun, RunConfig, RunError, TraceConfig};
use heir_scenario::protocols::Override;
use heir_scenario::{IpcModel, ResourceKind, Scenario};
use heir_sim::{Report, SimConfig};
use heir_viz::report::{Face, FaceReport, ReportPage, SettingReport, TaskFigures};
use heir_viz::{BoostSummary, ResponseSamples, SvgGantt, SvgOptions};
use heir_viz::{Observer, TraceEvent, TraceInfo};

use crate::output::{on_off, overrides_shown, parse_override, parse_seconds, PendingFile};
use crate::{CliError, CliResult};

/// `heir report` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: an rt-app JSON file, with heir's extensions.
    pub file: PathBuf,
    /// Also run the scenario on real threads for this many seconds per
    /// setting (needs root: real-time priorities and tracefs); 0: no real
    /// run.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub real: f64,
    /// The page to write.
    #[arg(
        short = 'o',
        long = "out",
        value_name = "report.html",
        default_value = "report.html"
    )]
    pub out: PathBuf,
    /// Simulated duration in seconds (replaces global.duration).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub duration: Option<u64>,
    /// A mutex protocol instead of the file's, in every setting: NAME=P or
    /// all=P (see `heir sim --help`).
    #[arg(long = "protocol", value_name = "NAME=P", value_parser = parse_override)]
    pub protocol: Vec<heir_scenario::protocols::Override>,
    /// What the settings compared vary: pi-cv (off, on), gpm (off, on),
    /// ipc (pi-cv, donation), or protocol=NAME=P1,P2,… (NAME a mutex or
    /// all; P as in --protocol), one setting per protocol.
    #[arg(long, value_name = "WHAT", default_value = "pi-cv", value_parser = Vary::parse)]
    pub vary: Vary,
    /// Start of the Gantt charts' window, in ms from the start.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = crate::sim::parse_ms)]
    pub window_from: f64,
    /// Length of the Gantt charts' window, in ms.
    #[arg(long, value_name = "MS", default_value_t = 200.0, value_parser = crate::sim::parse_ms)]
    pub window: f64,
}

/// What one face of a run keeps for the page: a Gantt chart of the
/// window, every response time, the boosts.
pub struct Collector {
    gantt: SvgGantt,
    samples: ResponseSamples,
    boosts: BoostSummary,
}

impl Collector {
    /// A collector drawing the window `(start, length)` (ns) under `title`.
    pub fn new(window: (u64, u64), title: &str) -> Collector {
        Collector {
            gantt: SvgGantt::new(SvgOptions {
                window_start_ns: window.0,
                window_ns: window.1,
                title: title.to_string(),
                width_px: 1180,
                lane_px: 30,
                ..SvgOptions::default()
            }),
            samples: ResponseSamples::default(),
            boosts: BoostSummary::default(),
        }
    }
}

impl Observer for Collector {
    fn start(&mut self, info: &TraceInfo) {
        self.gantt.start(info);
        self.samples.start(info);
        self.boosts.start(info);
    }
    fn event(&mut self, ev: &TraceEvent) {
        self.gantt.event(ev);
        self.samples.event(ev);
        self.boosts.event(ev);
    }
    fn finish(&mut self, end_ns: u64) {
        self.gantt.finish(end_ns);
        self.samples.finish(end_ns);
        self.boosts.finish(end_ns);
    }
}

/// What `heir report --vary` compares: each value gives the page's
/// settings, the scenario changed in one respect.
#[derive(Clone, Debug, PartialEq)]
pub enum Vary {
    /// PI-CV off, then on (`global.pi_cv`).
    PiCv,
    /// Gang priority management off, then on (`global.gpm`).
    Gpm,
    /// The RPC model: PI-CV helpers, then NOVA donation (`global.ipc`).
    Ipc,
    /// One setting per protocol, applied to one mutex or all
    /// (`protocol=NAME=P1,P2,…`).
    Protocol(Vec<Override>),
}

impl Vary {
    /// Parses `--vary`.
    pub fn parse(s: &str) -> Result<Vary, String> {
        const EXPECTED: &str =
            "expected pi-cv, gpm, ipc or protocol=NAME=P1,P2,… (NAME a mutex or all)";
        match s.trim() {
            "pi-cv" => Ok(Vary::PiCv),
            "gpm" => Ok(Vary::Gpm),
            "ipc" => Ok(Vary::Ipc),
            other => {
                let Some(rest) = other.strip_prefix("protocol=") else {
                    return Err(format!("{EXPECTED}; found {s:?}"));
                };
                let Some((name, list)) = rest.split_once('=') else {
                    return Err(format!("{EXPECTED}; found {s:?} (no protocols)"));
                };
                let each = list
                    .split(',')
                    .map(|p| Override::parse(&format!("{name}={p}")))
                    .collect::<Result<Vec<_>, _>>()?;
                if each.len() < 2 {
                    return Err(format!(
                        "--vary protocol=NAME=P1,P2,…: at least two protocols to compare; found {s:?}"
                    ));
                }
                Ok(Vary::Protocol(each))
            }
        }
    }

    /// The settings this compares, in order, each `scenario` changed in
    /// this one respect; an error when the scenario has nothing it
    /// changes (no gang for `gpm`, no RPC for `ipc`, no such mutex).
    pub fn settings(&self, file: &str, scenario: &Scenario) -> Result<Vec<Setting>, String> {
        let with = |label: String, change: &dyn Fn(&mut Scenario)| {
            let mut sc = scenario.clone();
            change(&mut sc);
            Setting {
                label,
                scenario: sc,
            }
        };
        match self {
            Vary::PiCv => Ok(SETTINGS
                .iter()
                .map(|&on| Setting::pi_cv(scenario, on))
                .collect()),
            Vary::Gpm => {
                let gangs = scenario
                    .resources
                    .iter()
                    .any(|r| matches!(r.kind, ResourceKind::Gang { .. }));
                if !gangs {
                    return Err(format!(
                        "{file}: --vary gpm: the scenario has no gang, so GPM changes nothing"
                    ));
                }
                Ok([false, true]
                    .into_iter()
                    .map(|on| with(format!("GPM {}", on_off(on)), &|sc| sc.global.gpm = on))
                    .collect())
            }
            Vary::Ipc => {
                let endpoints = scenario
                    .resources
                    .iter()
                    .any(|r| matches!(r.kind, ResourceKind::Endpoint { .. }));
                if !endpoints {
                    return Err(format!(
                        "{file}: --vary ipc: the scenario has no RPC endpoint, so the IPC model changes nothing"
                    ));
                }
                Ok([IpcModel::PiCv, IpcModel::Donation]
                    .into_iter()
                    .map(|m| with(format!("IPC {}", m.name()), &|sc| sc.rpc.model = m))
                    .collect())
            }
            Vary::Protocol(each) => each
                .iter()
                .map(|o| {
                    let mut sc = scenario.clone();
                    heir_scenario::protocols::apply(&mut sc, std::slice::from_ref(o))
                        .map_err(|e| format!("{file}: --vary {}: {e}", o.shown()))?;
                    Ok(Setting {
                        label: o.shown(),
                        scenario: sc,
                    })
                })
                .collect(),
        }
    }
}

/// One setting of the page: its label and the scenario as it runs it.
#[derive(Clone, Debug)]
pub struct Setting {
    /// How the page names it: `PI-CV off`, `GPM on`, `IPC donation`,
    /// `m=inherit`.
    pub label: String,
    /// The scenario with this setting applied.
    pub scenario: Scenario,
}

impl Setting {
    /// PI-CV `on` or off, the rest as in `scenario`.
    pub fn pi_cv(scenario: &Scenario, on: bool) -> Setting {
        let mut sc = scenario.clone();
        sc.global.pi_cv = on;
        Setting {
            label: format!("PI-CV {}", on_off(on)),
            scenario: sc,
        }
    }
}

/// One setting's runs, as the page needs them.
pub struct SettingRuns {
    /// The setting.
    pub setting: Setting,
    /// The simulation and what was collected of it.
    pub sim: (Report, Collector),
    /// The real run, and what was collected of its kernel trace (if it was
    /// traced).
    pub real: Option<(Report, Option<Collector>)>,
    /// The priority inversions of the whole simulation and of the real
    /// run's trace (`heir inversions`), by face label.
    pub inversions: Vec<(String, heir_viz::report::InversionTable)>,
}

/// PI-CV's settings: off, then on.
pub const SETTINGS: [bool; 2] = [false, true];

/// Simulates `setting`, collecting into `extra` too (e.g. the demo's
/// files).
pub fn simulate(
    file: &str,
    setting: &Setting,
    duration_us: Option<u64>,
    window: (u64, u64),
    extra: Option<&mut dyn Observer>,
) -> Result<(Report, Collector), CliError> {
    let mut c = Collector::new(window, &format!("{file}: simulated, {}", setting.label));
    let config = SimConfig {
        duration_us,
        ..SimConfig::default()
    };
    let mut tee = heir_viz::Tee::new();
    tee.push(&mut c);
    if let Some(e) = extra {
        tee.push(e);
    }
    let r = heir_sim::simulate(&setting.scenario, &config, &mut tee)
        .map_err(|e| CliError::bad_input(anyhow!("{file}: {e}")))?;
    Ok((r, c))
}

/// How the page's note on skipped real runs begins (the page's
/// introduction then leaves the reason to it).
const NO_REAL_RUN: &str = "No real run: ";

/// The page's note when the real runs are skipped for `why` (heir-rt's
/// reason, e.g. `no permission to set SCHED_FIFO (…)`).
pub fn no_real_run_note(why: &str) -> String {
    format!("{NO_REAL_RUN}{why}.")
}

/// The one line on stderr when `heir COMMAND`'s real runs are skipped for
/// `why`.
pub fn no_real_run_line(command: &str, why: &str) -> String {
    format!(
        "heir {command}: no real-threads run: {why}; the report page has the simulation and the analysis only"
    )
}

/// The real runs of `heir COMMAND` are skipped for `why`: said once on
/// stderr, and in the page's notes.
pub fn skip_real(command: &str, why: &str, notes: &mut Vec<String>) {
    eprintln!("{}", no_real_run_line(command, why));
    notes.push(no_real_run_note(why));
}

/// Why this process may not run `scenario` on real threads, asked before
/// any run starts (heir-rt's own check, which [`run_real`] meets again):
/// `None` when it may, or when no task needs a real-time policy.
pub fn real_run_refused(scenario: &Scenario) -> Option<String> {
    let needs_rt = scenario.tasks.iter().any(|t| {
        t.sched.policy.is_realtime()
            || t.phases
                .iter()
                .any(|p| p.sched.is_some_and(|s| s.policy.is_realtime()))
    });
    if needs_rt {
        heir::caps::Capabilities::detect().realtime_missing()
    } else {
        None
    }
}

/// Runs `setting` on real threads for `seconds`, traced when tracefs
/// allows (else untraced, with a note in `notes`). `Ok(Err(why))` when
/// this process may not use real-time priorities.
pub fn run_real(
    file: &str,
    setting: &Setting,
    seconds: f64,
    notes: &mut Vec<String>,
) -> Result<Result<RealRun, String>, CliError> {
    let mut config = RunConfig {
        duration_us: Some((seconds * 1e6) as u64),
        on_note: Some(crate::output::print_run_note),
        trace: Some(TraceConfig::default()),
        ..RunConfig::default()
    };
    loop {
        match heir_runner::run::run(&setting.scenario, &config) {
            Ok(r) => {
                disturbance_notes(&r, &setting.label, notes);
                return Ok(Ok(r));
            }
            Err(RunError::NoPrivilege(why)) => return Ok(Err(why)),
            Err(RunError::Trace(e)) if config.trace.is_some() => {
                notes.push(format!(
                    "Real runs are not traced ({e}): no real Gantt chart, CDF or boosts."
                ));
                config.trace = None;
            }
            Err(e) => {
                return Err(CliError::failure(
                    anyhow!(e).context(format!("{file}: real-threads run ({})", setting.label)),
                ))
            }
        }
    }
}

/// What took the real run's CPUs ([`crate::disturb::disturbance_lines`]),
/// as the page's notes: the verdict and each disturbed thread, and the
/// fair server's setting once per page. A disturbed run also says so on
/// stderr.
fn disturbance_notes(real: &RealRun, label: &str, notes: &mut Vec<String>) {
    let lines = crate::disturb::disturbance_lines(real);
    let split = lines
        .iter()
        .position(|l| l.starts_with("fair server"))
        .unwrap_or(lines.len());
    let (verdict, fair) = lines.split_at(split);
    for (i, line) in verdict.iter().enumerate() {
        if i == 0 && real.disturbance.lost_ns > 0 {
            eprintln!("heir: warning: real run, {label}: {line}");
        }
        notes.push(format!("Real run, {label}: {}", line.trim_start()));
    }
    if !notes.iter().any(|n| n.starts_with("fair server")) {
        notes.extend(fair.iter().map(|l| l.trim_start().to_string()));
    }
}

/// The label of a real run's inversions on the page.
pub const REAL_TRACE: &str = "real (kernel trace)";

/// The priority inversions a real run's kernel trace shows (`None`:
/// not traced).
pub fn real_inversions(real: &RealRun) -> Option<heir_viz::report::InversionTable> {
    let t = real.trace.as_ref()?;
    let mut chrome = heir_viz::ChromeTrace::new(Vec::new());
    t.replay(&mut chrome);
    let bytes = chrome.into_inner().ok()?;
    crate::inversions::table_of(&bytes)
}

/// A real run's report and, from its trace, the collected face.
pub fn collect_real(
    real: &RealRun,
    window: (u64, u64),
    file: &str,
    label: &str,
) -> (Report, Option<Collector>) {
    let c = real.trace.as_ref().map(|t| {
        let mut c = Collector::new(window, &format!("{file}: real run (kernel trace), {label}"));
        t.replay(&mut c);
        c
    });
    (real.report.clone(), c)
}

fn figures(report: &Report, task: &str) -> TaskFigures {
    match report.tasks.iter().find(|t| t.name == task) {
        Some(t) => TaskFigures {
            jobs: Some(t.jobs),
            misses: Some(t.deadline_misses),
            mean_us: t.response_us.mean,
            p90_us: t.response_us.p90,
            p99_us: t.response_us.p99,
            max_us: t.response_us.max,
        },
        None => TaskFigures::default(),
    }
}

/// `n` and `what`, plural when `n` is not 1 (`3 tasks`).
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// What the analysis gives one setting: a row per task (its bound as the
/// maximum), each task without a bound with why (`"Client1: unbounded
/// priority inversion: …"`), and the threads it does not bound because
/// they are not tasks (servers).
struct Bounds {
    rows: Vec<TaskFigures>,
    unbounded: Vec<String>,
    not_tasks: Vec<String>,
}

/// heir-analysis' bound of each task in `scenario` (one setting's), and
/// why some have none.
fn analysis(scenario: &Scenario, tasks: &[String]) -> Bounds {
    match heir_analysis::analyze_scenario(scenario, &heir_analysis::Options::default()) {
        Ok(r) => {
            let rows = tasks
                .iter()
                .map(|t| TaskFigures {
                    max_us: r.task(t).and_then(|b| b.wcrt_us),
                    ..TaskFigures::default()
                })
                .collect();
            let (mut unbounded, mut not_tasks) = (Vec::new(), Vec::new());
            for t in tasks {
                let why = match (r.task(t), r.skipped.iter().find(|(n, _)| n == t)) {
                    (Some(b), _) if b.wcrt_us.is_some() => continue,
                    (Some(b), _) => b.reason.clone().unwrap_or_else(|| "unbounded".into()),
                    (None, Some((_, why))) => why.clone(),
                    (None, None) => match &r.tasks_note {
                        Some(note) => note.clone(),
                        None => {
                            not_tasks.push(t.clone());
                            continue;
                        }
                    },
                };
                unbounded.push(format!("{t}: {why}"));
            }
            Bounds {
                rows,
                unbounded,
                not_tasks,
            }
        }
        Err(e) => Bounds {
            rows: vec![TaskFigures::default(); tasks.len()],
            unbounded: vec![e.to_string()],
            not_tasks: Vec::new(),
        },
    }
}

fn face(
    face: Face,
    label: &str,
    report: &Report,
    tasks: &[String],
    c: Option<&Collector>,
) -> FaceReport {
    FaceReport {
        face,
        label: label.to_string(),
        rows: tasks.iter().map(|t| figures(report, t)).collect(),
        samples: match c {
            Some(c) => tasks.iter().map(|t| c.samples.sorted(t)).collect(),
            None => Vec::new(),
        },
    }
}

/// One setting's parameters (the one the settings vary among them).
fn params(scenario: &Scenario, overrides: &str) -> Vec<(String, String)> {
    let mut p = vec![(
        "PI-CV".to_string(),
        on_off(scenario.global.pi_cv).to_string(),
    )];
    if scenario
        .resources
        .iter()
        .any(|r| matches!(r.kind, ResourceKind::Gang { .. }))
    {
        p.push(("GPM".to_string(), on_off(scenario.global.gpm).to_string()));
    }
    let mutexes: Vec<String> = scenario
        .resources
        .iter()
        .filter_map(|r| match &r.kind {
            ResourceKind::Mutex { protocol } => Some(format!("{} {}", r.name, protocol.name())),
            _ => None,
        })
        .collect();
    if !mutexes.is_empty() {
        p.push(("mutex protocols".to_string(), mutexes.join(", ")));
    }
    if !overrides.is_empty() {
        p.push((
            "overrides".to_string(),
            overrides.trim_start_matches(", ").to_string(),
        ));
    }
    p.push(("IPC".to_string(), scenario.rpc.model.name().to_string()));
    p.push(("seed".to_string(), scenario.global.seed.to_string()));
    p
}

/// The page of `runs` (one per setting).
pub fn page(
    file: &str,
    scenario: &Scenario,
    runs: &[SettingRuns],
    window: (u64, u64),
    overrides: &str,
    mut notes: Vec<String>,
) -> ReportPage {
    let tasks: Vec<String> = runs
        .first()
        .map(|r| r.sim.0.tasks.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default();
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut intro = vec![format!(
        "Scenario {file}: simulated {:.3} s per setting, seed {}.",
        runs.first().map_or(0.0, |r| r.sim.0.duration_us / 1e6),
        scenario.global.seed
    )];
    match runs.iter().find_map(|r| r.real.as_ref()) {
        Some((real, _)) => intro.push(format!(
            "Real threads: {:.3} s per setting, on this machine.",
            real.duration_us / 1e6
        )),
        // A skipped run's note says why.
        None if notes.iter().any(|n| n.starts_with(NO_REAL_RUN)) => {}
        None => intro.push("No real run (heir report --real SECONDS, as root).".to_string()),
    }
    let mut settings = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let label = r.setting.label.clone();
        let scenario = &r.setting.scenario;
        let (sim, sim_c) = &r.sim;
        let mut faces = vec![face(Face::Simulated, "simulated", sim, &tasks, Some(sim_c))];
        let bounds = analysis(scenario, &tasks);
        if !bounds.unbounded.is_empty() {
            notes.push(format!(
                "{label}: no analysis bound for {}: {}",
                count(bounds.unbounded.len(), "task"),
                bounds.unbounded.join("; ")
            ));
        }
        if !bounds.not_tasks.is_empty() {
            let note = format!(
                "No analysis bound for {}: the analysis bounds the tasks with a deadline; a server's work is counted in its callers' bounds.",
                bounds.not_tasks.join(", ")
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        faces.push(FaceReport {
            face: Face::Analysed,
            label: "analysis bound".to_string(),
            rows: bounds.rows,
            samples: Vec::new(),
        });
        let mut gantts = vec![(
            format!(
                "simulated, {:.3}–{:.3} ms",
                ms(window.0),
                ms(window.0 + window.1)
            ),
            sim_c.gantt.render_inline(&format!("s{i}-")),
        )];
        let mut boosts = vec![("simulated".to_string(), sim_c.boosts.rows())];
        if let Some((real, real_c)) = &r.real {
            faces.push(face(Face::Real, "real", real, &tasks, real_c.as_ref()));
            if let Some(c) = real_c {
                gantts.push((
                    "real run (the kernel's trace), same window".to_string(),
                    c.gantt.render_inline(&format!("r{i}-")),
                ));
                boosts.push(("real (kernel trace)".to_string(), c.boosts.rows()));
            }
        }
        settings.push(SettingReport {
            label,
            params: params(scenario, overrides),
            faces,
            gantts,
            boosts,
            inversions: r.inversions.clone(),
        });
    }
    ReportPage {
        title: format!("heir report: {file}"),
        intro,
        tasks,
        settings,
        notes,
    }
}

/// Writes `page` to `path` (temporary name, then rename).
pub fn write_page(path: &Path, page: &ReportPage) -> anyhow::Result<PathBuf> {
    let (pending, mut file) = PendingFile::create(path)?;
    file.write_all(page.render().as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    pending.commit(file)
}

/// Runs `heir report`.
pub fn main(args: Args) -> CliResult {
    // Real runs (`--real S`) make real threads: heir run's limit.
    let face = if args.real > 0.0 {
        crate::output::Face::Run.thread_limit("heir report --real")
    } else {
        crate::output::Face::Sim.thread_limit("heir report")
    };
    let (file, scenario) = crate::output::read_scenario_with(&args.file, &face, &args.protocol)?;
    if !(args.real.is_finite() && args.real >= 0.0) {
        return Err(CliError::bad_input(anyhow!(
            "--real must be a non-negative number of seconds, got {}",
            args.real
        )));
    }
    if args.window <= 0.0 {
        return Err(CliError::bad_input(anyhow!("--window must be positive")));
    }
    let window = (
        (args.window_from * 1e6).round() as u64,
        (args.window * 1e6).round() as u64,
    );
    // The output path is checked before anything runs.
    drop(PendingFile::create(&args.out).map_err(CliError::bad_input)?);
    let settings = args
        .vary
        .settings(&file, &scenario)
        .map_err(|e| CliError::bad_input(anyhow!(e)))?;
    let mut notes = Vec::new();
    let mut runs = Vec::new();
    let mut may_run = args.real > 0.0;
    if may_run {
        if let Some(why) = real_run_refused(&scenario) {
            skip_real("report", &why, &mut notes);
            may_run = false;
        }
    }
    for setting in settings {
        // The whole simulation as a trace, for its inversions.
        let mut chrome = heir_viz::ChromeTrace::new(Vec::new());
        let sim = simulate(&file, &setting, args.duration, window, Some(&mut chrome))?;
        let mut inversions = Vec::new();
        if let Some(t) = chrome
            .into_inner()
            .ok()
            .and_then(|b| crate::inversions::table_of(&b))
        {
            inversions.push(("simulated".to_string(), t));
        }
        let real = if may_run {
            eprintln!(
                "heir report: running on real threads for {} s ({})...",
                args.real, setting.label
            );
            match run_real(&file, &setting, args.real, &mut notes)? {
                Ok(r) => {
                    if let Some(t) = &r.trace {
                        let lost = t.stats.lost_total();
                        if lost > 0 {
                            notes.push(format!(
                                "{}: the kernel dropped {lost} trace events: the real Gantt chart and boosts miss part of the run.",
                                setting.label
                            ));
                        }
                    }
                    if let Some(t) = real_inversions(&r) {
                        inversions.push((REAL_TRACE.to_string(), t));
                    }
                    Some(collect_real(&r, window, &file, &setting.label))
                }
                Err(why) => {
                    skip_real("report", &why, &mut notes);
                    may_run = false;
                    None
                }
            }
        } else {
            None
        };
        runs.push(SettingRuns {
            setting,
            sim,
            real,
            inversions,
        });
    }
    let page = page(
        &file,
        &scenario,
        &runs,
        window,
        &overrides_shown(&args.protocol),
        notes,
    );
    let path = write_page(&args.out, &page).map_err(CliError::bad_input)?;
    println!("wrote {}", path.display());
    Ok(())
}
