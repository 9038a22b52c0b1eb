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
