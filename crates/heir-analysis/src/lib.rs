//! heir-analysis: schedulability analysis of the scenario files heir
//! simulates and runs.
//!
//! One file, three faces: the task model is extracted from the same
//! [`heir_scenario::Scenario`] the simulator executes ([`extract`]): periods
//! from `timer`, WCETs from the `max` of `run`/`runtime`, critical sections
//! from `lock`/`unlock`, RPCs from `call`/`serve`. Then:
//!
//! - **fixed priority** (uniprocessor and partitioned): response-time
//!   analysis with the blocking term of each protocol — none (reported
//!   unbounded when a medium task can run during the inversion), priority
//!   inheritance (Sha, Rajkumar, Lehoczky 1990), immediate priority ceiling,
//!   and PI-CV RPC (the PI-CV paper's §5, Eq. 1-5) — in [`fp`];
//! - **the PI-CV paper's `I_i`** computed exactly in polynomial time as a
//!   maximum-weight bipartite matching ([`matching`],
//!   [`Analyzer::rpc_interference`]);
//! - **EDF / CBS admission** for `SCHED_DEADLINE` reservations: on one CPU
//!   the exact processor-demand criterion by QPA ([`pdc`]), globally GFB
//!   (sufficient); their guarantees under every mutex protocol, M-BWI
//!   included, pinned or global ([`dl`]);
//! - **gang latency** (the GPM paper's Properties 1-2): from `gang_run` to the
//!   last member's `gang_notify`, per gang, gpm on or off ([`gang`]);
//! - **random task sets** (UUniFast, RandFixedSum, log-uniform periods,
//!   critical-section and RPC profiles) and **sweeps** of the schedulability
//!   ratio against utilisation per protocol, in parallel and reproducible
//!   from one seed ([`gen`], [`sweep`]).
//!
//! Every bound is an integer number of nanoseconds computed exactly; the
//! report gives µs. `docs/ANALYSIS.md` states the equations and assumptions.
//!
//! ```
//! use heir_analysis::{analyze_set, model::{Call, Server, Task, TaskSet}};
//! // The PI-CV paper's Table I (times in ns).
//! let ms = 1_000_000;
//! let set = TaskSet {
//!     tasks: vec![
//!         Task::fixed("Client1", 0, 90, 40 * ms, 10 * ms, vec![], vec![Call { server: 0, wcet: 4_500_000 }]),
//!         Task::fixed("Client2", 0, 80, 50 * ms, 10 * ms, vec![], vec![Call { server: 0, wcet: 4_500_000 }]),
//!         Task::fixed("Annoyer", 0, 70, 60 * ms, 10 * ms, vec![], vec![]),
//!     ],
//!     servers: vec![Server { name: "Server".into(), cpu: 0, priority: 50, inherits: true }],
//!     mutexes: vec![],
//!     pi_cv: true,
//! };
//! let report = analyze_set(&set).unwrap();
//! assert_eq!(report.task("Client1").unwrap().wcrt_us, Some(19_000.0));
//! assert_eq!(report.task("Client2").unwrap().wcrt_us, Some(29_000.0));
//! ```
#![forbid(unsafe_code)]

pub mod dl;
pub mod edf;
pub mod error;
pub mod extract;
pub mod fp;
pub mod gang;
pub mod gen;
pub mod matching;
pub mod model;
pub mod pdc;
pub mod report;
pub mod rng;
pub mod svg;
pub mod sweep;

pub use error::{AnalysisError, CancelFlag, ErrorKind, Location};
pub use fp::{Analyzer, TaskResult, Unbounded};
pub use model::{Family, TaskSet};
pub use report::{AnalysisReport, TaskBound};

use heir_scenario::Scenario;

/// The memory one thread of a scenario needs in the analysis (its task in
/// the [`TaskSet`], the analyzer's per-task tables, its result and report
/// line), estimated for `heir analyze`'s thread limit: a file whose threads
/// would not fit in the machine's available memory at this much each is
/// refused. Dense task × mutex and task × server tables come on top
/// (docs/ANALYSIS.md, "Large sets").
pub const BYTES_PER_THREAD: u64 = 3072;

/// Why a scenario with gangs has no per-task bounds.
pub const GANG_TASKS_NOTE: &str = "per-task bounds are not computed for a scenario with gangs: the task model has no gang boosts (docs/ANALYSIS.md §10)";

/// What to analyse a scenario under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `None`: as the file says (each mutex's protocol, `global.pi_cv`).
    /// `Some(p)`: every mutex and server under protocol family `p`.
    pub protocol: Option<Family>,
}

/// The analytic worst case of a scenario: extracts the task model (see
/// [`extract`]), applies `options`, and bounds every periodic thread.
///
/// Errors (all "bad input"): what the model does not cover, a missing
/// period, a task over 100%, a cycle of nested locks — each with the JSON
/// path (and line:column when the reader gave one) of the culprit.
pub fn analyze_scenario(
    scenario: &Scenario,
    options: &Options,
) -> Result<AnalysisReport, AnalysisError> {
    analyze_scenario_on(scenario, options, None)
}

/// [`analyze_scenario`] on `cpus` CPUs (`heir analyze --compare --cpus`;
/// `None`: 1 + the largest CPU the scenario names). The count matters for
/// `SCHED_DEADLINE` tasks free on every CPU (global EDF).
pub fn analyze_scenario_on(
    scenario: &Scenario,
    options: &Options,
    cpus: Option<u32>,
) -> Result<AnalysisReport, AnalysisError> {
    analyze_scenario_with(scenario, options, cpus, None)
}

/// [`analyze_scenario_on`] that stops early, with
/// [`ErrorKind::Cancelled`], once `cancel` is set (checked between tasks
/// and gangs and every few thousand fixed-point steps): Python's Ctrl-C.
pub fn analyze_scenario_cancellable(
    scenario: &Scenario,
    options: &Options,
    cpus: Option<u32>,
    cancel: &CancelFlag,
) -> Result<AnalysisReport, AnalysisError> {
    analyze_scenario_with(scenario, options, cpus, Some(cancel))
}

fn analyze_scenario_with(
    scenario: &Scenario,
    options: &Options,
    cpus: Option<u32>,
    cancel: Option<&CancelFlag>,
) -> Result<AnalysisReport, AnalysisError> {
    if gang::has_gangs(scenario) {
        // GPM: the gang bounds. The per-task model has no gang boosts
        // (a member runs above its own priority while a run is pending), so
        // the per-task bounds are not computed beside them.
        return Ok(AnalysisReport {
            schedulable: false,
            protocol: format!("gpm {}", if scenario.global.gpm { "on" } else { "off" }),
            tasks: Vec::new(),
            skipped: Vec::new(),
            admissions: Vec::new(),
            gangs: gang::analyze_gangs_with(scenario, cpus, cancel)?,
            tasks_note: Some(GANG_TASKS_NOTE.to_string()),
        });
    }
    let ex = extract::extract_on(scenario, cpus)?;
    let (set, protocol) = match options.protocol {
        Some(p) => (ex.set.with_protocol(p), p.name().to_string()),
        None => {
            let label = format!(
                "as written (PI-CV {})",
                if ex.set.pi_cv { "on" } else { "off" }
            );
            (ex.set, label)
        }
    };
    if let (true, Some(e)) = (set.pi_cv, ex.pi_cv_refusal) {
        return Err(e);
    }
    let mut report = analyze_set_with(&set, cancel)?;
    report.protocol = protocol;
    report.skipped = ex.skipped;
    Ok(report)
}

/// Validates and analyses a task set (the `protocol` label is "as written").
pub fn analyze_set(set: &TaskSet) -> Result<AnalysisReport, AnalysisError> {
    analyze_set_with(set, None)
}

/// [`analyze_set`] that stops early, with [`ErrorKind::Cancelled`], once
/// `cancel` is set.
pub fn analyze_set_cancellable(
    set: &TaskSet,
    cancel: &CancelFlag,
) -> Result<AnalysisReport, AnalysisError> {
    analyze_set_with(set, Some(cancel))
}

fn analyze_set_with(
    set: &TaskSet,
    cancel: Option<&CancelFlag>,
) -> Result<AnalysisReport, AnalysisError> {
    set.validate()?;
    let mut analyzer = Analyzer::new();
    if let Some(c) = cancel {
        analyzer.cancel_with(c.clone());
    }
    let results = analyzer.analyze(set);
    if error::is_cancelled(cancel) {
        return Err(AnalysisError::cancelled());
    }
    let tasks: Vec<TaskBound> = set
        .tasks
        .iter()
        .zip(&results)
        .map(|(t, r)| TaskBound::new(set, t, r))
        .collect();
    Ok(AnalysisReport {
        schedulable: tasks.iter().all(|t| t.schedulable),
        protocol: format!(
            "as written (PI-CV {})",
            if set.pi_cv { "on" } else { "off" }
        ),
        tasks,
        skipped: Vec::new(),
        admissions: analyzer.admissions().to_vec(),
        gangs: Vec::new(),
        tasks_note: None,
    })
}
