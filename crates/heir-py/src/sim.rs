//! `heir.simulate`: one simulation (as `heir sim --json`), and what can be
//! drawn from it afterwards — the Perfetto trace, the SVG Gantt chart, every
//! job's response time — by simulating it again with the writers attached
//! (the simulator is deterministic: the same run, event for event).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use heir_scenario::Scenario;
use heir_sim::{NullObserver, Observer, SimConfig, SimError};
use heir_viz::{ChromeTrace, ResponseSamples, SvgGantt, SvgOptions, TraceEvent, TraceInfo};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

use crate::errors::{raise, At};
use crate::interruptible;
use crate::scenario::NativeScenario;

/// An observer that a flag set from another thread stops (Ctrl-C).
struct Cancellable<O> {
    inner: O,
    stop: Arc<AtomicBool>,
}

impl<O: Observer> Observer for Cancellable<O> {
    fn start(&mut self, info: &TraceInfo) {
        self.inner.start(info)
    }
    fn event(&mut self, ev: &TraceEvent) {
        self.inner.event(ev)
    }
    fn finish(&mut self, end_ns: u64) {
        self.inner.finish(end_ns)
    }
    fn wants_events(&self) -> bool {
        self.inner.wants_events()
    }
    fn cancelled(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Simulates `sc` under `cfg` into `obs` on its own thread, interruptible:
/// Ctrl-C stops the simulation within 65536 events and raises
/// `KeyboardInterrupt`.
fn simulate_into<O: Observer + Send + 'static>(
    py: Python<'_>,
    sc: Arc<Scenario>,
    cfg: SimConfig,
    obs: O,
) -> PyResult<Result<(heir_sim::Report, u32, O), SimError>> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut obs = Cancellable {
        inner: obs,
        stop: stop.clone(),
    };
    interruptible(
        py,
        move || {
            let cpus = heir_sim::cpu_count(&sc, &cfg)?;
            let r = heir_sim::simulate(&sc, &cfg, &mut obs)?;
            Ok((r, cpus, obs.inner))
        },
        Some(&|| stop.store(true, Ordering::Relaxed)),
    )
}

/// A simulated run, ready to be simulated again with observers.
#[pyclass(module = "heir._heir", name = "NativeRun", frozen)]
pub struct NativeRun {
    scenario: Arc<Scenario>,
    config: SimConfig,
    file: String,
    /// The title of the trace and the chart (as `heir sim` writes it).
    title: String,
}

/// `SimulationError`: the simulator refuses the scenario (the CLI's text).
fn sim_error(py: Python<'_>, file: &str, e: &SimError) -> PyErr {
    let (line, column) = e.position().unwrap_or((0, 0));
    let text = match e.position() {
        Some((line, column)) => format!(
            "{file}:{line}:{column}: at {}: cannot simulate: {}",
            e.path(),
            e.message()
        ),
        None => format!("{file}: cannot simulate: {e}"),
    };
    let path = e.path();
    raise(
        py,
        "SimulationError",
        text,
        At {
            file,
            line,
            column,
            path: (!path.is_empty()).then_some(path),
        },
        e.message(),
    )
}

/// `heir sim`'s `--json` report: the report with `"cpus"` after `"mode"`.
fn report_json(report: &heir_sim::Report, cpus: u32) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(report)?;
    let serde_json::Value::Object(fields) = value else {
        return serde_json::to_string(&value);
    };
    let mut out = serde_json::Map::new();
    for (k, v) in fields {
        let after_mode = k == "mode";
        out.insert(k, v);
        if after_mode {
            out.insert("cpus".to_string(), cpus.into());
        }
    }
    serde_json::to_string(&serde_json::Value::Object(out))
}

/// Simulates `scenario` (seed: `seed`, else `global.seed`; CPUs: `cpus`,
/// else from the file) and returns `heir sim --json`'s report as JSON text
/// and the run, for its trace, chart and samples.
#[pyfunction]
#[pyo3(signature = (scenario, seed=None, cpus=None))]
pub fn simulate(
    py: Python<'_>,
    scenario: &NativeScenario,
    seed: Option<u64>,
    cpus: Option<u32>,
) -> PyResult<(String, NativeRun)> {
    let config = SimConfig {
        seed,
        duration_us: scenario.duration_us,
        pi_cv: Some(scenario.scenario.global.pi_cv),
        cpus,
    };
    let outcome = simulate_into(py, scenario.scenario.clone(), config.clone(), NullObserver)?;
    let (report, cpus, _) = outcome.map_err(|e| sim_error(py, &scenario.file, &e))?;
    let json = report_json(&report, cpus)
        .map_err(|e| PyOSError::new_err(format!("serialising the report: {e}")))?;
    let s = &scenario.scenario;
    let gangs = s
        .resources
        .iter()
        .any(|r| matches!(r.kind, heir_scenario::ResourceKind::Gang { .. }));
    let on_off = |b: bool| if b { "on" } else { "off" };
    let mut title = format!(
        "{}: simulated, PI-CV {}, seed {}",
        scenario.file,
        on_off(s.global.pi_cv),
        seed.unwrap_or(s.global.seed)
    );
    if gangs {
        title.push_str(&format!(", gpm {}", on_off(s.global.gpm)));
    }
    if !scenario.overrides.is_empty() {
        let words: Vec<String> = scenario.overrides.iter().map(|o| o.shown()).collect();
        title.push_str(&format!(", protocols {}", words.join(" ")));
    }
    Ok((
        json,
        NativeRun {
            scenario: s.clone(),
            config,
            file: scenario.file.clone(),
            title,
        },
    ))
}

/// `path`'s temporary sibling: `.NAME.tmp-PID`.
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `body` to a temporary file beside `path`, then renames it over
/// `path`: no half-written file is ever left.
fn write_whole(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> PyResult<()> {
    let tmp = temporary(path);
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        body(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        PyOSError::new_err(format!("cannot write {}: {e}", path.display()))
    })
}

impl NativeRun {
    /// Simulates again, into `obs`.
    fn again<O: Observer + Send + 'static>(&self, py: Python<'_>, obs: O) -> PyResult<O> {
        let outcome = simulate_into(py, self.scenario.clone(), self.config.clone(), obs)?;
        outcome
            .map(|(_, _, obs)| obs)
            .map_err(|e| sim_error(py, &self.file, &e))
    }
}

#[pymethods]
impl NativeRun {
    /// Writes the run's Chrome trace-event JSON (open it in
    /// ui.perfetto.dev) to `path`.
    fn trace(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        // The trace streams into memory, then goes to the file whole.
        let obs = self.again(py, ChromeTrace::new(Vec::<u8>::new()))?;
        let bytes = obs
            .into_inner()
            .map_err(|e| PyOSError::new_err(format!("writing the trace: {e}")))?;
        write_whole(&path, |w| w.write_all(&bytes))
    }

    /// Writes the SVG Gantt chart of `span_ms` from `from_ms` to `path`.
    fn svg(&self, py: Python<'_>, path: PathBuf, from_ms: f64, span_ms: f64) -> PyResult<()> {
        let opts = SvgOptions {
            title: self.title.clone(),
            window_start_ns: (from_ms.max(0.0) * 1e6).round() as u64,
            window_ns: (span_ms.max(0.0) * 1e6).round() as u64,
            ..SvgOptions::default()
        };
        let gantt = self.again(py, SvgGantt::new(opts))?;
        write_whole(&path, |w| gantt.write_svg(w))
    }

    /// Every job's response time in ns, per thread, in completion order.
    fn response_times(&self, py: Python<'_>) -> PyResult<Vec<(String, Vec<u64>)>> {
        let s = self.again(py, ResponseSamples::default())?;
        Ok(s.names
            .iter()
            .cloned()
            .zip(s.samples.iter().cloned())
            .collect())
    }

    /// The title of the trace and the chart.
    #[getter]
    fn title(&self) -> String {
        self.title.clone()
    }
}
