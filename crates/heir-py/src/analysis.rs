//! `heir.analyze` (as `heir analyze`) and `heir.generate` (heir-analysis's
//! random task sets, as a sweep draws them).

use heir_analysis::gen::{
    generate as gen_set, to_scenario, GenParams, ScenarioOptions, UtilGenerator,
};
use heir_analysis::model::{Class, TaskSet};
use heir_analysis::rng::Rng;
use heir_analysis::{
    analyze_scenario_cancellable, analyze_set_cancellable, AnalysisError, AnalysisReport,
    CancelFlag, Family, Options,
};
use std::sync::atomic::Ordering;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::errors::{raise, At};
use crate::scenario::NativeScenario;

/// The generators' names, as a sweep configuration's `generator` spells
/// them.
pub(crate) const GENERATORS: [&str; 2] = ["uunifast", "randfixedsum"];

/// A protocol family by name (`heir analyze --protocol FAMILY`'s parser:
/// `none`, `inherit`, `ceiling`, `pi-cv`).
fn family(name: Option<&str>) -> PyResult<Option<Family>> {
    match name {
        None => Ok(None),
        Some(n) => Family::parse(n).map(Some).ok_or_else(|| {
            let names: Vec<&str> = Family::ALL.iter().map(|p| p.name()).collect();
            PyValueError::new_err(format!(
                "unknown protocol {n:?}: expected one of {}",
                names.join(", ")
            ))
        }),
    }
}

/// `AnalysisError`, with the file and the culprit's position.
fn analysis_error(py: Python<'_>, file: &str, e: &AnalysisError) -> PyErr {
    let (line, column, path) = match &e.at {
        Some(l) => (l.line, l.column, Some(l.path.as_str())),
        None => (0, 0, None),
    };
    let sep = if line > 0 { ":" } else { ": " };
    raise(
        py,
        "AnalysisError",
        format!("{file}{sep}{e}"),
        At {
            file,
            line,
            column,
            path,
        },
        &e.message,
    )
}

/// The report as JSON: the verdict, what was analysed, per task every field
/// of the bound (µs), the threads skipped and why.
fn report_json(r: &AnalysisReport) -> String {
    let tasks: Vec<Value> = r
        .tasks
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "cpu": t.cpu,
                "priority": t.priority,
                "period_us": t.period_us,
                "deadline_us": t.deadline_us,
                "wcet_us": t.wcet_us,
                "demand_us": t.demand_us,
                "blocking_us": t.blocking_us,
                "wcrt_us": t.wcrt_us,
                "schedulable": t.schedulable,
                "reason": t.reason,
            })
        })
        .collect();
    let skipped: Vec<Value> = r
        .skipped
        .iter()
        .map(|(name, why)| json!({"name": name, "why": why}))
        .collect();
    json!({
        "schedulable": r.schedulable,
        "protocol": r.protocol,
        "tasks": tasks,
        "skipped": skipped,
        "json": r.to_json(),
    })
    .to_string()
}

/// Analyses `scenario` (as `heir analyze FILE [--protocol FAMILY]`): JSON.
#[pyfunction]
#[pyo3(signature = (scenario, protocol=None, cpus=None))]
pub fn analyze(
    py: Python<'_>,
    scenario: &NativeScenario,
    protocol: Option<&str>,
    cpus: Option<u32>,
) -> PyResult<String> {
    let options = Options {
        protocol: family(protocol)?,
    };
    let sc = scenario.scenario.clone();
    let cancel = CancelFlag::default();
    let flag = cancel.clone();
    let r = crate::interruptible(
        py,
        move || analyze_scenario_cancellable(&sc, &options, cpus, &flag),
        Some(&|| cancel.store(true, Ordering::Relaxed)),
    )?
    .map_err(|e| analysis_error(py, &scenario.file, &e))?;
    Ok(report_json(&r))
}

/// A generated task set.
#[pyclass(module = "heir._heir", name = "NativeTaskSet", frozen)]
pub struct NativeTaskSet {
    set: TaskSet,
    seed: u64,
}

#[pymethods]
impl NativeTaskSet {
    /// The set as JSON: tasks (µs), servers, mutexes, PI-CV.
    fn to_json(&self) -> String {
        let s = &self.set;
        let tasks: Vec<Value> = s
            .tasks
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "cpu": t.cpu,
                    "priority": match t.class { Class::Fixed { priority } => Some(priority), Class::Deadline { .. } => None },
                    "period_us": t.period as f64 / 1000.0,
                    "deadline_us": t.deadline as f64 / 1000.0,
                    "wcet_us": t.wcet as f64 / 1000.0,
                    "demand_us": t.demand as f64 / 1000.0,
                    "utilisation": t.utilisation(),
                    "sections": t.sections.iter().map(|c| json!({
                        "mutex": s.mutexes.get(c.mutex).map(|m| m.name.clone()),
                        "length_us": c.length as f64 / 1000.0,
                        "inside": c.parent,
                    })).collect::<Vec<_>>(),
                    "calls": t.calls.iter().map(|c| json!({
                        "server": s.servers.get(c.server).map(|x| x.name.clone()),
                        "wcet_us": c.wcet as f64 / 1000.0,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "tasks": tasks,
            "servers": s.servers.iter().map(|x| json!({"name": x.name, "cpu": x.cpu, "priority": x.priority})).collect::<Vec<_>>(),
            "mutexes": s.mutexes.iter().map(|m| json!({
                "name": m.name,
                "protocol": m.protocol.to_string(),
            })).collect::<Vec<_>>(),
            "pi_cv": s.pi_cv,
        })
        .to_string()
    }

    /// The analysis of the set under a protocol family (None: as generated,
    /// PI-CV on), as JSON.
    #[pyo3(signature = (protocol=None))]
    fn analyze(&self, py: Python<'_>, protocol: Option<&str>) -> PyResult<String> {
        let set = match family(protocol)? {
            Some(p) => self.set.with_protocol(p),
            None => self.set.clone(),
        };
        let cancel = CancelFlag::default();
        let flag = cancel.clone();
        let mut r = crate::interruptible(
            py,
            move || analyze_set_cancellable(&set, &flag),
            Some(&|| cancel.store(true, Ordering::Relaxed)),
        )?
        .map_err(|e| analysis_error(py, "<generated>", &e))?;
        if let Some(p) = protocol {
            r.protocol = p.to_string();
        }
        Ok(report_json(&r))
    }

    /// A scenario that runs the set (`heir_analysis::gen::to_scenario`):
    /// `duration_s` simulated seconds, `global.seed` = the set's seed. The
    /// duration is checked as `Scenario.with_duration` checks it (positive,
    /// at least 1 µs, within heir's time limit; the same `ScenarioError`).
    fn to_scenario(&self, py: Python<'_>, duration_s: f64) -> PyResult<NativeScenario> {
        let opts = ScenarioOptions {
            duration_s,
            seed: self.seed,
            ..ScenarioOptions::default()
        };
        let mut rng = Rng::new(self.seed);
        let sc = NativeScenario {
            scenario: std::sync::Arc::new(to_scenario(&self.set, &opts, &mut rng)),
            file: "<generated>".to_string(),
            overrides: Vec::new(),
            duration_us: None,
        };
        sc.with_duration(py, duration_s)
    }
}

/// One random task set (heir-analysis's generator, as a sweep draws them):
/// parameters as the sweep configuration's, each `None` for the default.
#[pyfunction]
#[pyo3(signature = (n_tasks, utilisation, generator, seed, resources=None, access_probability=None,
                    cs_us=None, nest_probability=None, servers=None, call_probability=None,
                    call_us=None, periods_us=None, period_granularity_us=None))]
#[allow(clippy::too_many_arguments)]
pub fn generate(
    n_tasks: usize,
    utilisation: f64,
    generator: &str,
    seed: u64,
    resources: Option<usize>,
    access_probability: Option<f64>,
    cs_us: Option<(u64, u64)>,
    nest_probability: Option<f64>,
    servers: Option<usize>,
    call_probability: Option<f64>,
    call_us: Option<(u64, u64)>,
    periods_us: Option<(u64, u64)>,
    period_granularity_us: Option<u64>,
) -> PyResult<NativeTaskSet> {
    let bad = |m: String| PyValueError::new_err(m);
    let generator = match generator {
        "uunifast" => UtilGenerator::Uunifast,
        "randfixedsum" => UtilGenerator::Randfixedsum,
        g => {
            return Err(bad(format!(
                "unknown generator {g:?}: expected one of {}",
                GENERATORS.join(", ")
            )))
        }
    };
    let d = GenParams::default();
    let params = GenParams {
        tasks: n_tasks,
        generator,
        period_min_us: periods_us.map_or(d.period_min_us, |p| p.0),
        period_max_us: periods_us.map_or(d.period_max_us, |p| p.1),
        period_granularity_us: period_granularity_us.unwrap_or(d.period_granularity_us),
        resources: resources.unwrap_or(d.resources),
        access_probability: access_probability.unwrap_or(d.access_probability),
        cs_us: cs_us.unwrap_or(d.cs_us),
        nest_probability: nest_probability.unwrap_or(d.nest_probability),
        servers: servers.unwrap_or(d.servers),
        call_probability: call_probability.unwrap_or(d.call_probability),
        call_us: call_us.unwrap_or(d.call_us),
    };
    // The sweep configuration's checks, for the same parameters.
    if n_tasks == 0 {
        return Err(bad("n_tasks: expected at least 1 task".into()));
    }
    if !(utilisation > 0.0 && utilisation <= n_tasks as f64) {
        return Err(bad(format!(
            "utilisation: expected 0 < u ≤ n_tasks, got {utilisation}"
        )));
    }
    if n_tasks + params.servers > heir_analysis::gen::TOP_PRIORITY as usize {
        return Err(bad(format!(
            "{n_tasks} tasks and {} servers need distinct SCHED_FIFO priorities: at most {} in all",
            params.servers,
            heir_analysis::gen::TOP_PRIORITY
        )));
    }
    if params.resources > 64 {
        return Err(bad("resources: expected at most 64".into()));
    }
    for (what, p) in [
        ("access_probability", params.access_probability),
        ("nest_probability", params.nest_probability),
        ("call_probability", params.call_probability),
    ] {
        if !(0.0..=1.0).contains(&p) {
            return Err(bad(format!(
                "{what}: expected a probability in [0, 1], got {p}"
            )));
        }
    }
    for (what, (a, b)) in [
        ("cs_us", params.cs_us),
        ("call_us", params.call_us),
        ("periods_us", (params.period_min_us, params.period_max_us)),
    ] {
        if a == 0 || a > b {
            return Err(bad(format!(
                "{what}: expected (min, max) with 0 < min ≤ max, got ({a}, {b})"
            )));
        }
    }
    if params.period_granularity_us == 0 || params.period_granularity_us > params.period_min_us {
        return Err(bad(
            "period_granularity_us: expected 1 ≤ granularity ≤ the minimum period".into(),
        ));
    }
    let mut rng = Rng::new(seed);
    Ok(NativeTaskSet {
        set: gen_set(&params, utilisation, &mut rng),
        seed,
    })
}
