//! heir's errors as the Python exceptions of `heir._errors`
//! (`ScenarioError`, `SimulationError`, `AnalysisError`, `ConfigError`),
//! with the file, line, column and JSON path the Rust error carries.

use pyo3::prelude::*;

/// Where an error is: file, line and column (0 when unknown), JSON path.
pub(crate) struct At<'a> {
    pub file: &'a str,
    pub line: u32,
    pub column: u32,
    pub path: Option<&'a str>,
}

/// An exception of class `class` (in `heir._errors`) whose text is `text`
/// (the CLI's message) with the position `at` and the bare `message`.
pub(crate) fn raise(py: Python<'_>, class: &str, text: String, at: At<'_>, message: &str) -> PyErr {
    let pos = |n: u32| (n > 0).then_some(n);
    let made = py
        .import("heir._errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| {
            c.call1((
                text,
                at.file,
                pos(at.line),
                pos(at.column),
                at.path,
                message,
            ))
        });
    match made {
        Ok(value) => PyErr::from_value(value),
        Err(e) => e,
    }
}

/// The reader's error, as `ScenarioError`.
pub(crate) fn scenario_error(py: Python<'_>, e: &heir_scenario::ScenarioError) -> PyErr {
    raise(
        py,
        "ScenarioError",
        e.to_string(),
        At {
            file: &e.file,
            line: e.line,
            column: e.column,
            path: e.path.as_deref(),
        },
        &e.message,
    )
}
