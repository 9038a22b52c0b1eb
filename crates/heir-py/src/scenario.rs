//! A scenario read by heir's reader, with the changes `heir sim` makes from
//! its flags (`--protocol`, `--pi-cv`, `--gpm`, `--duration`), applied by
//! the same library functions.

use std::path::PathBuf;
use std::sync::Arc;

use heir_scenario::limits::{beyond_time_limit_s, duration_us, DurationError, ThreadLimit};
use heir_scenario::protocols::{self, Override};
use heir_scenario::Scenario;
use pyo3::prelude::*;

use crate::errors::{raise, scenario_error, At};

/// The threads a scenario read from Python may have: what the machine's
/// memory holds for a model of each (`heir sim`'s limit, the tighter of the
/// simulator's and the analysis' bytes per thread, so that every scenario
/// read can be both simulated and analysed). The package runs no real
/// threads: `heir run`'s 1024-thread limit does not apply.
fn thread_limit() -> ThreadLimit {
    let per_thread = heir_sim::BYTES_PER_THREAD.max(heir_analysis::BYTES_PER_THREAD);
    ThreadLimit::from_available_memory("heir sim", per_thread)
}

/// A checked scenario (immutable: every `with_*` returns a new one).
#[pyclass(module = "heir._heir", name = "NativeScenario", frozen)]
#[derive(Clone)]
pub struct NativeScenario {
    /// The scenario, changes applied.
    pub(crate) scenario: Arc<Scenario>,
    /// The file's name as given (for messages and titles).
    pub(crate) file: String,
    /// The `--protocol` overrides applied, in order (for titles).
    pub(crate) overrides: Vec<Override>,
    /// `--duration`, in µs.
    pub(crate) duration_us: Option<u64>,
}

impl NativeScenario {
    fn changed(&self, f: impl FnOnce(&mut Scenario)) -> NativeScenario {
        let mut s = (*self.scenario).clone();
        f(&mut s);
        NativeScenario {
            scenario: Arc::new(s),
            ..self.clone()
        }
    }
}

#[pymethods]
impl NativeScenario {
    /// Reads and checks the scenario file at `path` (`heir sim`'s reader and
    /// thread limit).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<NativeScenario> {
        let file = path.display().to_string();
        let scenario =
            heir_scenario::load_with(&path, &thread_limit()).map_err(|e| scenario_error(py, &e))?;
        Ok(NativeScenario {
            scenario: Arc::new(scenario),
            file,
            overrides: Vec::new(),
            duration_us: None,
        })
    }

    /// Reads and checks a scenario from JSON text; `name` names it in errors.
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str, name: &str) -> PyResult<NativeScenario> {
        let scenario = heir_scenario::parse_str_with(text, name, &thread_limit())
            .map_err(|e| scenario_error(py, &e))?;
        Ok(NativeScenario {
            scenario: Arc::new(scenario),
            file: name.to_string(),
            overrides: Vec::new(),
            duration_us: None,
        })
    }

    /// `--protocol NAME=P` / `all=P`, each in order.
    fn with_protocol(&self, py: Python<'_>, overrides: Vec<String>) -> PyResult<NativeScenario> {
        let mut parsed = Vec::new();
        for o in &overrides {
            let p = Override::parse(o)
                .map_err(|m| self.file_error(py, format!("{}: --protocol: {m}", self.file), &m))?;
            parsed.push(p);
        }
        let mut s = (*self.scenario).clone();
        protocols::apply(&mut s, &parsed)
            .map_err(|m| self.file_error(py, format!("{}: {m}", self.file), &m))?;
        let mut all = self.overrides.clone();
        all.extend(parsed);
        Ok(NativeScenario {
            scenario: Arc::new(s),
            overrides: all,
            ..self.clone()
        })
    }

    /// `--pi-cv on|off`: replaces `global.pi_cv`.
    fn with_pi_cv(&self, on: bool) -> NativeScenario {
        self.changed(|s| s.global.pi_cv = on)
    }

    /// `--gpm on|off`: replaces `global.gpm`.
    fn with_gpm(&self, on: bool) -> NativeScenario {
        self.changed(|s| s.global.gpm = on)
    }

    /// `--duration S`: replaces `global.duration` (at least 1 µs, at most
    /// heir's time limit).
    pub(crate) fn with_duration(&self, py: Python<'_>, seconds: f64) -> PyResult<NativeScenario> {
        let us = duration_us(seconds).map_err(|e| {
            let m = match e {
                DurationError::BeyondLimit => beyond_time_limit_s("duration", &seconds.to_string()),
                DurationError::NotPositive => format!(
                    "expected seconds as a positive number (at least 1 µs), found {seconds}"
                ),
            };
            self.file_error(py, format!("{}: {m}", self.file), &m)
        })?;
        Ok(NativeScenario {
            duration_us: Some(us),
            ..self.clone()
        })
    }

    /// The file's name as given.
    #[getter]
    fn file(&self) -> String {
        self.file.clone()
    }

    /// `global.pi_cv` (after `with_pi_cv`).
    #[getter]
    fn pi_cv(&self) -> bool {
        self.scenario.global.pi_cv
    }

    /// `global.gpm` (after `with_gpm`).
    #[getter]
    fn gpm(&self) -> bool {
        self.scenario.global.gpm
    }

    /// `global.seed`.
    #[getter]
    fn seed(&self) -> u64 {
        self.scenario.global.seed
    }

    /// The simulated duration in seconds: `with_duration`'s, else
    /// `global.duration` (None when the file has none).
    #[getter]
    fn duration_s(&self) -> Option<f64> {
        match self.duration_us {
            Some(us) => Some(us as f64 / 1e6),
            None => self.scenario.global.duration_s,
        }
    }

    /// The overrides applied, as `NAME=P`.
    #[getter]
    fn protocols(&self) -> Vec<String> {
        self.overrides.iter().map(Override::shown).collect()
    }

    /// The tasks' names, in file order.
    #[getter]
    fn task_names(&self) -> Vec<String> {
        self.scenario.tasks.iter().map(|t| t.name.clone()).collect()
    }

    /// The reader's warnings, as text.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.scenario
            .warnings
            .iter()
            .map(|w| format!("{}:{w}", self.file))
            .collect()
    }
}

impl NativeScenario {
    /// A `heir.ScenarioError` about the whole file (no line, column or
    /// path): `text` is the full message, `message` its part after the
    /// file name.
    fn file_error(&self, py: Python<'_>, text: String, message: &str) -> PyErr {
        raise(
            py,
            "ScenarioError",
            text,
            At {
                file: &self.file,
                line: 0,
                column: 0,
                path: None,
            },
            message,
        )
    }
}
