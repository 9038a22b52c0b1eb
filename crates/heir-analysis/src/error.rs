//! Why a scenario or a task set cannot be analysed.

use std::fmt;

/// Where in the scenario file a problem is: JSON path and, when known, the
/// 1-based line and column of the key (0 when unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub line: u32,
    pub column: u32,
}

impl Location {
    /// A location with a JSON path only.
    pub fn path(path: impl Into<String>) -> Location {
        Location {
            path: path.into(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: at {}", self.line, self.column, self.path)
        } else {
            write!(f, "at {}", self.path)
        }
    }
}

/// What kind of problem an [`AnalysisError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The scenario uses something outside the analysed model (a condvar
    /// wait, a sleep, a task on several CPUs, a cross-CPU mutex, ...).
    Unsupported,
    /// A periodic task without a period (no `timer`).
    MissingPeriod,
    /// A task whose own demand exceeds its period (utilisation > 1).
    Overload,
    /// Nested critical sections taken in opposite orders: a possible deadlock.
    LockCycle,
    /// An inconsistent task set (an index out of range, a zero period, ...).
    Invalid,
}

/// A scenario or task set the analysis refuses, with where and why. The CLI
/// maps every kind to exit code 2 (bad input).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", at.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
pub struct AnalysisError {
    pub kind: ErrorKind,
    pub at: Option<Location>,
    pub message: String,
}

impl AnalysisError {
    /// An error of `kind` at `at`.
    pub fn new(kind: ErrorKind, at: Option<Location>, message: impl Into<String>) -> AnalysisError {
        AnalysisError {
            kind,
            at,
            message: message.into(),
        }
    }
}
