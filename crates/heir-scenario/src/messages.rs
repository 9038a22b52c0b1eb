//! The wording of errors found while a scenario *executes* — in the
//! simulator (`heir sim`) or on real threads (`heir run`) — so both faces
//! name the same cause with the same words and the same JSON path.
//!
//! Each function returns the message; the caller reports it with the path
//! it documents (an [`Event`]'s `path`, or a [`Task`](crate::Task)'s), displayed as
//! `PATH: MESSAGE` by both faces.

use crate::Event;

/// A thread releases a mutex it does not hold: an `unlock` of a mutex the
/// thread does not own, or a `wait` whose mutex it does not own (a wait
/// releases its mutex). Reported at `ev.path`.
pub fn mutex_not_held(ev: &Event, thread: &str, mutex: &str) -> String {
    format!(
        "{}:{}: thread {thread} releases mutex {mutex} which it does not hold",
        ev.line, ev.column
    )
}

/// A thread keeps executing zero-time events (lock, unlock, signal, …)
/// without ever waiting for time or for another thread: a loop without
/// `run`/`runtime`/`sleep`/`timer`. `at_us` is when it started, from the
/// start of the run. Reported at the task's path ([`Task::path`](crate::Task::path)).
pub fn zero_time_loop(thread: &str, at_us: f64) -> String {
    format!(
        "no time passes: thread {thread} keeps executing zero-time events at {at_us} µs (a loop without run/runtime/sleep/timer?)"
    )
}
