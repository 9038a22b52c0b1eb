//! heir-scenario: reads rt-app JSON files (plus heir's extensions) into a
//! checked [`Scenario`]. (Skeleton: the reader is being written.)
#![forbid(unsafe_code)]

pub mod model;

pub use model::*;

use std::path::Path;

/// A scenario that cannot be read: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {}{message}", path.as_ref().map(|p| format!("at {p}: ")).unwrap_or_default())]
pub struct ScenarioError {
    pub file: String,
    /// 1-based; 0 when the error has no position in the text.
    pub line: u32,
    pub column: u32,
    /// JSON path (`tasks.Client1.phases.p1.run1`) when known.
    pub path: Option<String>,
    pub message: String,
}

/// Reads a scenario from text; `file` names it in errors.
pub fn parse_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let _ = (text, file);
    todo!()
}

/// Reads a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: 0,
        column: 0,
        path: None,
        message: format!("cannot read: {e}"),
    })?;
    parse_str(&text, &file)
}
