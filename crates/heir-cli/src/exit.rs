//! Exit codes: 0 success, 1 failure, 2 bad input (or missing privilege),
//! 3 deadlock found.

use std::fmt;

/// Exit code for bad input (a scenario or config that cannot be used).
pub const BAD_INPUT: i32 = 2;
/// Exit code for a run that ended in a deadlock.
pub const DEADLOCK: i32 = 3;

/// An error with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    /// The process exit code.
    pub code: i32,
    /// What went wrong (empty for [`CliError::quiet`]).
    pub error: anyhow::Error,
}

impl CliError {
    /// Bad input: exit 2.
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        CliError {
            code: BAD_INPUT,
            error: error.into(),
        }
    }
    /// A failure: exit 1.
    pub fn failure(error: impl Into<anyhow::Error>) -> Self {
        CliError {
            code: 1,
            error: error.into(),
        }
    }
    /// A run that completed but must exit with `code` (its output is already
    /// printed), e.g. a deadlock.
    pub fn quiet(code: i32) -> Self {
        CliError {
            code,
            error: anyhow::anyhow!(""),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> Self {
        CliError::failure(error)
    }
}

/// What a command returns.
pub type CliResult = Result<(), CliError>;

/// Exit 3 (quietly: the report is already printed) when a run deadlocked,
/// success otherwise.
pub fn deadlock_exit(deadlocked: bool) -> CliResult {
    if deadlocked {
        Err(CliError::quiet(DEADLOCK))
    } else {
        Ok(())
    }
}

/// Prints the error (if any) to stderr and returns the process exit code.
pub fn report(result: CliResult) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            let msg = format!("{:#}", e.error);
            if !msg.is_empty() {
                eprintln!("heir: error: {msg}");
            }
            e.code
        }
    }
}
