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
    /// The caller's cancel flag was set while the analysis ran (Ctrl-C in
    /// Python): no result.
    Cancelled,
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

impl AnalysisError {
    /// The analysis stopped because its cancel flag was set.
    pub fn cancelled() -> AnalysisError {
        AnalysisError::new(ErrorKind::Cancelled, None, "the analysis was cancelled")
    }
}

/// A flag the caller sets to stop an analysis early
/// ([`crate::analyze_scenario_cancellable`], [`crate::Analyzer::cancel_with`]):
/// it is read between tasks and every few thousand fixed-point steps.
pub type CancelFlag = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// Whether `flag` is set (`None`: never).
pub(crate) fn is_cancelled(flag: Option<&CancelFlag>) -> bool {
    flag.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}
