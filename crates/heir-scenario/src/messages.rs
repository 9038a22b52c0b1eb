//! The wording of errors found while a scenario *executes* — in the
//! simulator (`heir sim`) or on real threads (`heir run`) — so both faces
//! name the same cause with the same words, at the same place.
//!
//! Each function returns the message; both faces report it with the JSON
//! path, line and column it documents (an [`Event`](crate::Event)'s, or a
//! [`Task`](crate::Task)'s), displayed as `LINE:COLUMN: at PATH: MESSAGE`.
//! The reader refuses most such programs before they run (its own checks);
//! these are the words for what gets past it.

/// A thread releases a mutex it does not hold: an `unlock` of a mutex the
/// thread does not own. Reported at the event.
pub fn mutex_not_held(thread: &str, mutex: &str) -> String {
    format!("thread {thread} releases mutex {mutex} which it does not hold")
}

/// A thread waits on a condition variable with a mutex it does not hold (a
/// wait releases its mutex). Reported at the event.
pub fn wait_without_mutex(thread: &str, cond: &str, mutex: &str) -> String {
    format!("thread {thread} waits on {cond} with mutex {mutex}, which it does not hold")
}

/// A thread keeps executing zero-time events (lock, unlock, signal, …)
/// without ever waiting for time or for another thread: a loop without
/// `run`/`runtime`/`sleep`/`timer`. `at_us` is when it started, from the
/// start of the run. Reported at the task.
pub fn zero_time_loop(thread: &str, at_us: f64) -> String {
    format!(
        "no time passes: thread {thread} keeps executing zero-time events at {at_us} µs (a loop without run/runtime/sleep/timer?)"
    )
}

/// A scenario a face cannot execute as given, with where: the JSON path,
/// and the line and column in the file (0 when it has no position, e.g. a
/// command-line flag). Displays as `LINE:COLUMN: at PATH: MESSAGE`, or
/// `PATH: MESSAGE` without a position; the faces turn it into their own
/// error type with the same fields.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{path}: {message}", if *line > 0 { format!("{line}:{column}: at ") } else { String::new() })]
pub struct Refusal {
    /// The JSON path (or the flag) at fault.
    pub path: String,
    /// 1-based line; 0 without a position.
    pub line: u32,
    /// 1-based column; 0 without a position.
    pub column: u32,
    /// What is wrong.
    pub message: String,
}

impl Refusal {
    /// A refusal at task `t`.
    pub fn at_task(t: &crate::Task, message: impl Into<String>) -> Refusal {
        Refusal {
            path: t.path.clone(),
            line: t.line,
            column: t.column,
            message: message.into(),
        }
    }
}

/// The number of CPUs a face runs `scenario` on: `stated` (a command
/// line's `--cpus`) when given, else 1 + the largest CPU number the
/// scenario names (at least 1).
///
/// Refused: a `stated` count of 0 or over [`crate::limits::MAX_CPUS`], and
/// a task or phase that names a CPU beyond the count.
pub fn cpu_count(scenario: &crate::Scenario, stated: Option<u32>) -> Result<u32, Refusal> {
    use crate::limits::MAX_CPUS;
    // The largest CPU each task names (in its own `cpus` or a phase's).
    let named = scenario.tasks.iter().filter_map(|t| {
        t.cpus
            .iter()
            .chain(t.phases.iter().filter_map(|p| p.cpus.as_ref()))
            .flatten()
            .copied()
            .max()
            .map(|c| (t, c))
    });
    let limit = match stated {
        None => MAX_CPUS,
        Some(n) if n == 0 || n > MAX_CPUS => {
            return Err(Refusal {
                path: "--cpus".into(),
                line: 0,
                column: 0,
                message: format!("expected a number of CPUs from 1 to {MAX_CPUS}, found {n}"),
            })
        }
        Some(n) => n,
    };
    let mut max = 0;
    for (t, c) in named {
        if c >= limit {
            let why = match stated {
                Some(n) => format!(
                    "the simulation has {n} CPU{} (--cpus {n}): CPU numbers go from 0 to {}",
                    if n == 1 { "" } else { "s" },
                    n - 1
                ),
                None => format!(
                    "heir's limit is {MAX_CPUS} CPUs: CPU numbers go from 0 to {}",
                    MAX_CPUS - 1
                ),
            };
            return Err(Refusal::at_task(
                t,
                format!("task {} runs on CPU {c}, but {why}", t.name),
            ));
        }
        max = max.max(c);
    }
    Ok(stated.unwrap_or(max + 1))
}
