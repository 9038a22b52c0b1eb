//! heir-scenario: reads rt-app JSON files (plus heir's extensions) into a
//! checked [`Scenario`].
//!
//! ```
//! let text = r#"{
//!     "global": { "default_policy": "SCHED_FIFO", "pi_enabled": true },
//!     "tasks": {
//!         "A": { "priority": 10, "lock": "m", "run": 1000, "unlock": "m", "run": 50 }
//!     }
//! }"#;
//! let s = heir_scenario::parse_str(text, "a.json").unwrap();
//! let keys: Vec<_> = s.tasks[0].phases[0].events.iter().map(|e| e.key.as_str()).collect();
//! assert_eq!(keys, ["lock", "run", "unlock", "run1"]);
//! ```
//!
//! The file format — every key, default, unit, heir extension and error — is
//! described in `docs/SCENARIO.md`. In short:
//!
//! * [`json`] reads the text into a tree that keeps positions, member order
//!   and repeated keys, and accepts rt-app's leniencies (comments, trailing
//!   commas, `"suspend",` without a value);
//! * the model is then built and checked: names resolve to indices, every
//!   [`Event`] keeps its (workgen-renamed) key, JSON path, line and column.
//!
//! Errors are [`ScenarioError`]s that display as
//! `file:line:col: at JSON.PATH: message`; the first error stops the read.
//! Non-fatal findings are [`Warning`]s in [`Scenario::warnings`], in the
//! order they were found.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod build;
pub mod json;
pub mod messages;
pub mod model;

pub use model::*;

use std::path::Path;

/// A scenario that cannot be read: where, and what was expected.
///
/// Displays as `file:line:col: at JSON.PATH: message` (without the
/// `at JSON.PATH: ` part when the error is not inside a value, e.g. trailing
/// text after the document).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {}{message}", path.as_ref().map(|p| format!("at {p}: ")).unwrap_or_default())]
pub struct ScenarioError {
    /// The file name given to [`parse_str`] or the path given to [`load`].
    pub file: String,
    /// 1-based; 0 when the error has no position in the text.
    pub line: u32,
    /// 1-based, counting characters (a tab counts as one); 0 with `line`.
    pub column: u32,
    /// JSON path (`tasks.Client1.phases.p1.run1`) when known.
    pub path: Option<String>,
    /// What was expected, and what was found.
    pub message: String,
}

impl ScenarioError {
    fn at(
        lines: &json::LineIndex<'_>,
        file: &str,
        offset: usize,
        path: String,
        message: String,
    ) -> Self {
        let (line, column) = lines.line_col(offset);
        ScenarioError {
            file: file.to_string(),
            line,
            column,
            path: (!path.is_empty()).then_some(path),
            message,
        }
    }
}

/// Reads a scenario from text; `file` names it in errors.
///
/// Stops at the first error. Never panics, whatever the text.
pub fn parse_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let lines = json::LineIndex::new(text);
    let root = json::parse(text)
        .map_err(|e| ScenarioError::at(&lines, file, e.offset, e.path, e.message))?;
    build::build(&root, &lines).map_err(|f| ScenarioError::at(&lines, file, f.at, f.path, f.msg))
}

/// Reads a scenario file (UTF-8); errors name the file as `path` displays.
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
