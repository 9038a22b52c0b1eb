//! What one process interposed, appended as one JSON line to
//! `HEIR_EXEC_SUMMARY` when it exits (`heir exec` adds up the lines of
//! every process of the run: the program and its children).

use std::sync::atomic::{AtomicU64, Ordering};

/// A counter of the summary.
pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }
    /// One more.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// One less (a lost race to create the same object).
    pub fn undo(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
    fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
    /// The count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Mutexes on heir's PI mutexes.
pub static MUTEXES: Counter = Counter::new();
/// Mutexes left to glibc (process-shared, priority ceiling, `keep`).
pub static MUTEXES_GLIBC: Counter = Counter::new();
/// Condition variables on heir's.
pub static CONDS: Counter = Counter::new();
/// Condition variables left to glibc (process-shared, `keep`).
pub static CONDS_GLIBC: Counter = Counter::new();
/// Waits on a heir condition variable with a glibc mutex (no boost).
pub static COND_FALLBACK_WAITS: Counter = Counter::new();
/// Barriers on heir's.
pub static BARRIERS: Counter = Counter::new();
/// Barriers left to glibc (process-shared, `--gpm off`).
pub static BARRIERS_GLIBC: Counter = Counter::new();
/// Helpers learned (added to a condition variable).
pub static HELPERS_LEARNED: Counter = Counter::new();
/// Learned helpers dropped (expired, evicted, or waiting themselves).
pub static HELPERS_DROPPED: Counter = Counter::new();
/// Threads a barrier lent its waiters' priority to (per barrier round).
pub static BARRIER_BOOSTS: Counter = Counter::new();
/// Barrier waits that outlasted the grace (and looked for threads to
/// lend to).
pub static BARRIER_SLOW: Counter = Counter::new();
/// Condition-variable waits whose lending would have closed a cycle (the
/// helpers were dropped, the wait went on).
pub static COND_CYCLES: Counter = Counter::new();
/// Barrier waits whose lending would have closed a cycle (waited without).
pub static BARRIER_CYCLES: Counter = Counter::new();
/// Condition-variable waits.
pub static COND_WAITS: Counter = Counter::new();
/// Unlocks refused because the caller did not hold the mutex (`EPERM`):
/// a mutex used as a semaphore, locked by one thread and unlocked by
/// another (undefined in POSIX; glibc's normal mutexes allow it, no PI
/// mutex does).
pub static UNLOCK_NOT_OWNER: Counter = Counter::new();

/// Every counter, for [`reset_in_child`].
static ALL: [&Counter; 15] = [
    &MUTEXES,
    &MUTEXES_GLIBC,
    &CONDS,
    &CONDS_GLIBC,
    &COND_FALLBACK_WAITS,
    &BARRIERS,
    &BARRIERS_GLIBC,
    &HELPERS_LEARNED,
    &HELPERS_DROPPED,
    &BARRIER_SLOW,
    &BARRIER_BOOSTS,
    &COND_WAITS,
    &COND_CYCLES,
    &BARRIER_CYCLES,
    &UNLOCK_NOT_OWNER,
];

static APPLY_AT_FORK: std::sync::Mutex<Option<heir::thread::ApplyStats>> =
    std::sync::Mutex::new(None);

/// In a fork child: it counts from zero (its parent's line has the rest).
pub fn reset_in_child() {
    for c in ALL {
        c.reset();
    }
    if let Ok(mut a) = APPLY_AT_FORK.lock() {
        *a = Some(heir::thread::apply_stats());
    }
}

/// The summary line of this process.
pub fn line() -> String {
    let cfg = crate::config::get();
    let now = heir::thread::apply_stats();
    let a = match APPLY_AT_FORK.lock().ok().and_then(|g| g.clone()) {
        Some(base) => now.since(&base),
        None => now,
    };
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    let comm: String = comm
        .trim()
        .chars()
        .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
        .collect();
    format!(
        concat!(
            "{{\"pid\":{},\"comm\":\"{}\",\"config\":{{\"mutex\":\"{}\",\"cond\":\"{}\",",
            "\"gpm\":\"{}\",\"gpm_grace_us\":{},\"helpers\":{},\"ttl_ms\":{}}},",
            "\"mutexes\":{},\"mutexes_glibc\":{},\"conds\":{},\"conds_glibc\":{},",
            "\"cond_waits\":{},\"cond_fallback_waits\":{},\"barriers\":{},\"barriers_glibc\":{},",
            "\"helpers_learned\":{},\"helpers_dropped\":{},\"cond_cycles\":{},\"barrier_slow_waits\":{},\"barrier_boosts\":{},\"barrier_cycles\":{},\"unlock_not_owner\":{},",
            "\"setattr_calls\":{},\"setattr_errors\":{},\"vanished\":{},\"engine_errors\":{}}}\n"
        ),
        std::process::id(),
        comm,
        if cfg.mutex_inherit { "inherit" } else { "keep" },
        match (cfg.cond_ours(), cfg.cond_learn) {
            (false, _) => "glibc",
            (true, true) => "learn",
            (true, false) => "off",
        },
        if cfg.gpm { "on" } else { "off" },
        cfg.gpm_grace_ns / 1_000,
        cfg.helpers,
        cfg.ttl_ns / 1_000_000,
        MUTEXES.get(),
        MUTEXES_GLIBC.get(),
        CONDS.get(),
        CONDS_GLIBC.get(),
        COND_WAITS.get(),
        COND_FALLBACK_WAITS.get(),
        BARRIERS.get(),
        BARRIERS_GLIBC.get(),
        HELPERS_LEARNED.get(),
        HELPERS_DROPPED.get(),
        COND_CYCLES.get(),
        BARRIER_SLOW.get(),
        BARRIER_BOOSTS.get(),
        BARRIER_CYCLES.get(),
        UNLOCK_NOT_OWNER.get(),
        a.setattr_calls,
        a.setattr_errors,
        a.vanished,
        a.engine_errors,
    )
}

/// Appends the line to `HEIR_EXEC_SUMMARY` (one `write`, so lines of
/// processes writing at once do not interleave).
pub fn write() {
    let Some(dest) = crate::config::get().summary.as_deref() else {
        return;
    };
    let line = line();
    if let Some(fd) = dest.strip_prefix("fd:") {
        if let Ok(fd) = fd.parse::<i32>() {
            heir::sys::write_fd(fd, line.as_bytes());
        }
        return;
    }
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dest)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
