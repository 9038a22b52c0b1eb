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
//!   [`Event`] keeps its (workgen-renamed) key, JSON path, line and column;
//!   every count that sizes an allocation and every time is within
//!   [`limits`];
//! * last, each task's program is walked as its threads will run it: no
//!   relock, no unlock or wait without the mutex, no task that never lets
//!   time pass while looping — so that the simulator, the real-time runner
//!   and the analysis refuse the same files the same way.
//!
//! Errors are [`ScenarioError`]s that display as
//! `file:line:col: at JSON.PATH: message`; the first error stops the read.
//! Non-fatal findings are [`Warning`]s in [`Scenario::warnings`], in the
//! order they were found.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod build;
pub mod engine;
pub mod json;
pub mod limits;
pub mod messages;
pub mod model;
pub mod protocols;

pub use model::*;

use std::path::Path;

/// A scenario that cannot be read: where, and what was expected.
///
/// Displays as `file:line:col: at JSON.PATH: message` (without the
/// `at JSON.PATH: ` part when the error is not inside a value, e.g. trailing
/// text after the document; without `line:col:` when it has no position,
/// e.g. a file that cannot be read).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{}{}{message}", position(*line, *column), path.as_ref().map(|p| format!("at {p}: ")).unwrap_or_default())]
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

/// `LINE:COLUMN: `, or a space when there is no position.
fn position(line: u32, column: u32) -> String {
    if line == 0 {
        " ".to_string()
    } else {
        format!("{line}:{column}: ")
    }
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
///
/// At most [`limits::MAX_THREADS`] threads (the real-thread limit,
/// [`limits::ThreadLimit::default`]); [`parse_str_with`] takes the face's.
pub fn parse_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    parse_str_with(text, file, &limits::ThreadLimit::default())
}

/// [`parse_str`] with the face's thread limit: `instance` of a task and the
/// threads of all tasks beyond `threads.max` are refused at the offending
/// value, with `threads`' message.
pub fn parse_str_with(
    text: &str,
    file: &str,
    threads: &limits::ThreadLimit,
) -> Result<Scenario, ScenarioError> {
    check_size(text.len(), file)?;
    let lines = json::LineIndex::new(text);
    // The tasks' objects are read again one at a time while they are
    // built: the whole file's tree never exists at once.
    let (root, deferred) = json::parse_deferring_tasks(text)
        .map_err(|e| ScenarioError::at(&lines, file, e.offset, e.path, e.message))?;
    build::build(&root, &deferred, &lines, threads)
        .map_err(|f| ScenarioError::at(&lines, file, f.at, f.path, f.msg))
}

/// Reads a scenario from the bytes of a file, which must be UTF-8 text;
/// `file` names it in errors.
///
/// Bytes that are not UTF-8 are an error at the first of them (line,
/// column, and the JSON path of the value it falls in), unless a syntax
/// error comes before. Otherwise as [`parse_str`].
pub fn parse_bytes(bytes: &[u8], file: &str) -> Result<Scenario, ScenarioError> {
    parse_bytes_with(bytes, file, &limits::ThreadLimit::default())
}

/// [`parse_bytes`] with the face's thread limit (as [`parse_str_with`]).
pub fn parse_bytes_with(
    bytes: &[u8],
    file: &str,
    threads: &limits::ThreadLimit,
) -> Result<Scenario, ScenarioError> {
    check_size(bytes.len(), file)?;
    let bad = match std::str::from_utf8(bytes) {
        Ok(text) => return parse_str_with(text, file, threads),
        Err(e) => e,
    };
    let at = bad.valid_up_to();
    // Valid by definition of `valid_up_to`.
    let text = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let lines = json::LineIndex::new(text);
    let path = json::path_at_end(text)
        .map_err(|e| ScenarioError::at(&lines, file, e.offset, e.path, e.message))?;
    let len = bad.error_len().unwrap_or(bytes.len() - at).min(4);
    let shown: Vec<String> = bytes[at..at + len]
        .iter()
        .map(|b| format!("0x{b:02X}"))
        .collect();
    let what = if len == 1 { "byte" } else { "bytes" };
    Err(ScenarioError::at(
        &lines,
        file,
        at,
        path,
        format!(
            "invalid UTF-8 ({what} {}): a scenario file is UTF-8 text",
            shown.join(" ")
        ),
    ))
}

/// Refuses a file larger than [`limits::MAX_FILE_BYTES`].
fn check_size(len: usize, file: &str) -> Result<(), ScenarioError> {
    if len <= limits::MAX_FILE_BYTES {
        return Ok(());
    }
    Err(ScenarioError {
        file: file.to_string(),
        line: 0,
        column: 0,
        path: None,
        message: format!(
            "the file is {len} bytes, over heir's limit of {} bytes (16 MiB)",
            limits::MAX_FILE_BYTES
        ),
    })
}

/// Reads a scenario file (UTF-8, see [`parse_bytes`]); errors name the file
/// as `path` displays. A file over [`limits::MAX_FILE_BYTES`] is refused
/// before it is read. At most [`limits::MAX_THREADS`] threads:
/// [`load_with`] takes the face's limit.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_with(path, &limits::ThreadLimit::default())
}

/// [`load`] with the face's thread limit (as [`parse_str_with`]): `heir
/// sim` and `heir analyze` pass what the machine's memory holds, `heir run`
/// [`limits::MAX_THREADS`].
pub fn load_with(path: &Path, threads: &limits::ThreadLimit) -> Result<Scenario, ScenarioError> {
    use std::io::Read;
    let file = path.display().to_string();
    let cannot_read = |e: std::io::Error| ScenarioError {
        file: file.clone(),
        line: 0,
        column: 0,
        path: None,
        message: format!("cannot read: {e}"),
    };
    let f = std::fs::File::open(path).map_err(cannot_read)?;
    let len = f.metadata().map_err(cannot_read)?.len();
    check_size(usize::try_from(len).unwrap_or(usize::MAX), &file)?;
    let mut bytes = Vec::new();
    // One byte more than the limit: a file that grew since is still refused.
    f.take(limits::MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    parse_bytes_with(&bytes, &file, threads)
}
