//! heir-sim: a deterministic discrete-event simulator driven by heir-core.
//!
//! [`simulate`] runs an rt-app scenario ([`heir_scenario::Scenario`]) on
//! simulated CPUs and streams what happened to an [`Observer`] (the Chrome
//! trace and SVG writers of `heir-viz` are observers); it returns a
//! [`Report`] with per-thread job counts, deadline misses and response-time
//! statistics, the same schema `heir run` produces on real threads.
//!
//! Every dependency between threads — mutexes, condition variables, queues,
//! barriers, suspend points, RPC endpoints — goes through one
//! [`heir_core::Engine`]: the simulator never computes inheritance itself, it
//! applies the engine's [`heir_core::Changes`] to its run queues.
//!
//! # Time and ordering guarantees
//!
//! - Time is an integer number of nanoseconds since the start (`u64`);
//!   scenario µs are converted exactly (× 1000). No time passes heir's
//!   time limit ([`heir_scenario::limits::MAX_TIME_NS`], 100 days): a
//!   duration beyond it is refused, and a run without a duration that would
//!   pass it stops with an error. Time arithmetic saturates, so a scenario
//!   built in code with larger values cannot overflow.
//! - Future events (thread starts, end of `run` work, wake-ups of `sleep` and
//!   `timer`, ends of `runtime`, slice expiries) sit in a priority queue (a
//!   sorted vector, a radix heap beyond 32 pending events) ordered by
//!   `(time, sequence)`, `sequence` being the insertion counter: **events at
//!   the same instant fire in the order they were scheduled**.
//! - Each event is processed to completion before the next one: its
//!   consequences — wake-ups, engine changes, scheduling decisions and the
//!   zero-time operations (lock, unlock, signal, …) of the threads it puts on
//!   a CPU — all happen before the next event of the same instant.
//! - The `run` completion of a preempted thread is invalidated lazily: each
//!   thread carries generation counters, and a popped event whose generation
//!   is stale is dropped.
//! - All lock/unlock/signal/broadcast/push/pop/call bookkeeping takes zero
//!   simulated time; only `run`, `runtime`, `sleep`, `timer` and blocking
//!   make time pass for a thread.
//!
//! # Reproducibility
//!
//! The only randomness is a SplitMix64 generator seeded from
//! [`SimConfig::seed`] or `global.seed` (never from the OS), drawn in a fixed
//! order: a [`heir_scenario::Micros::Uniform`] duration is drawn when its
//! event starts (a `call`'s work when the call starts). Same scenario, same
//! config → bit-for-bit the same [`Report`] and trace.
//!
//! # Threads
//!
//! Each task runs `instance` threads ([`heir_scenario::Task::thread_names`]).
//! A thread sleeps `delay`, then runs `loops` × (its phases in order, each
//! `loops` × its events); `loops: -1` runs until the end of the simulation.
//! A phase's `cpus`/`sched` apply at the start of each of its passes. A
//! thread that finishes its loops exits and leaves the engine (unless it
//! still owns a mutex: then it stays its owner forever, as a real thread that
//! exits holding a lock).
//!
//! # CPUs and scheduling
//!
//! The CPU count is [`SimConfig::cpus`] when given (a CPU the scenario
//! names beyond it is refused), else 1 + the largest CPU index the scenario
//! names (at least 1): see [`cpu_count`]. A thread whose affinity is a single CPU is pinned there (partitioned
//! scheduling); a thread allowed on several CPUs (or with no `cpus`: all) is
//! scheduled globally: when it becomes ready it preempts the allowed CPU that
//! is idle or runs the least urgent thread, if it is more urgent; a CPU that
//! frees picks the most urgent ready thread allowed on it.
//!
//! Scheduling is preemptive by **effective** urgency
//! ([`heir_core::Engine::effective`]), with `SCHED_FIFO` semantics:
//!
//! - FIFO among equal urgency; a preempted thread goes back to the **head**
//!   of its level; a thread that wakes goes to the **tail**; `yield` puts the
//!   thread at the tail of its level;
//! - when the engine changes the effective urgency of a ready thread, a raise
//!   puts it at the tail of its new level, a lowering at the head (Linux
//!   `rt_mutex_setprio`); a running thread that is lowered below a ready one
//!   is preempted (to the head of its new level);
//! - `SCHED_RR`: round-robin among equals with a 100 ms slice (a preempted
//!   thread keeps the rest of its slice); a `SCHED_OTHER` thread boosted to
//!   a real-time urgency behaves as `SCHED_FIFO`, as in Linux;
//! - `SCHED_OTHER`, `SCHED_BATCH` and `SCHED_IDLE` threads run below every
//!   real-time thread, round-robin among themselves (no wake-up preemption)
//!   with a slice of 4 ms × (CFS weight of the nice value) / 1024 — 4 ms at
//!   nice 0, 346 ms at nice -20, 58 µs at nice 19, weight 3 for SCHED_IDLE;
//! - `SCHED_DEADLINE` threads run above every other class, earliest
//!   absolute deadline first (FIFO among equal deadlines, a preempted thread
//!   re-queued after the equal ones), each on a CBS reservation
//!   with Linux's rules (hard reservation: throttled at zero budget until
//!   its replenishment instant); partitioned, or global EDF for threads free
//!   on several CPUs. Mutex protocols: `inherit` is Linux's deadline
//!   inheritance (parameters only, boosted owners never throttled), `bwi`
//!   is M-BWI (the owner runs on lent reservations, remote waiters
//!   spin, FIFO hand-off); PI-CV and RPC lend reservations as `bwi` does. The
//!   rules, step by step, are in the `sim::dl` module's docs.
//! - **Affinity inheritance** (`global.bwi_affinity`, default on; the M-BWI
//!   paper's §4): a lent reservation runs only on the CPUs its own task may use, where
//!   its bandwidth was admitted. An owner holding several reservations is a
//!   candidate on each CPU at the deadline of its most urgent reservation
//!   allowed there (its own reservation on its own CPUs), consumes that
//!   reservation's budget, and runs on one CPU at a time; it moves to another
//!   CPU when a more urgent reservation of its may run there now. Off, an owner
//!   runs every reservation it holds within its own affinity (the M-BWI paper's Fig. 3:
//!   the donor's bandwidth lands on a CPU that never admitted it). The
//!   spin rule is unchanged: a waiter whose owner runs on another CPU
//!   spins on its own. Details in the `sim::aff` module's docs.
//! - **Migrations**: [`TaskReport::migrations`] counts, per thread, the
//!   times it ran (for a positive time) on another CPU than the one it
//!   last ran on — the CPU changes between its consecutive `Exec` slices.
//!
//! # Events (rt-app semantics)
//!
//! - `run`: CPU work, progresses only while running. `runtime`: the thread
//!   is busy until the wall-clock instant start + duration, whether it ran or
//!   was preempted meanwhile. `sleep`: blocked for the duration.
//! - `timer {ref, period}`: exactly rt-app's: per timer (shared by name
//!   across threads; `unique` timers are per thread) `t_next` starts at the
//!   first user's start time, `+= period` at each use; the thread sleeps
//!   until `t_next` if it is in the future, else (overrun) `relative` timers
//!   set `t_next = now` and `absolute` ones keep it.
//! - `lock`/`unlock`: engine mutexes (hand-off to the top waiter on unlock).
//!   `wait {ref, mutex}`: unlock the mutex, wait on the condvar; when
//!   signalled, the thread re-acquires the mutex at once on its own behalf
//!   (like `FUTEX_CMP_REQUEUE_PI`: it becomes ready if the mutex is free, else
//!   it blocks on it and donates to its owner). `signal`/`broad` wake the top
//!   waiter / every waiter; a signal without waiter is lost.
//! - `barrier`: rt-app's algorithm with an internal mutex and condvar.
//!   `suspend`/`resume`: a condvar wait / broadcast on the suspend point
//!   (a resume with nobody suspended is lost).
//! - `push`/`pop` (heir): the PI-CV paper's Fig. 5 exactly — a PI mutex, `more` and
//!   `less` condvars, items ordered by the pusher's base priority.
//! - `call {server, run}` / `serve` (heir): per endpoint a request queue
//!   ordered by caller base priority (FIFO among equal), a PI mutex, a `more`
//!   condvar, and per calling thread a reply condvar and a `done` flag.
//!
//! # Helpers (PI-CV)
//!
//! With PI-CV on (`global.pi_cv`, overridden by [`SimConfig::pi_cv`]) the
//! simulator registers, before the start: the declared helpers of each
//! condvar (every thread of each helper task); every pusher thread of a
//! queue as helper of its `more`, every popper of its `less`; every server
//! thread of an endpoint as helper of each caller's reply condvar. Barrier,
//! suspend and `more` condvars of endpoints have no helpers. With PI-CV off,
//! none. A helper that itself waits on the condvar it helps (a thread that
//! both pushes and pops one queue, say) stops helping it for the duration of
//! its wait — it cannot signal while it waits, and the engine would refuse
//! the wait as a cycle — and helps again once woken.
//!
//! # Jobs, response times, deadline misses
//!
//! A thread with `timer` events: its first job is released when it starts
//! (when its program opens with the timer, that first timer releases it);
//! each `timer` event completes the current job and releases the next one at
//! the timer's release instant (`t_next`, or now after a relative overrun);
//! response = completion − release; a job completing after the next release
//! (`now > t_next` after `+= period`) is a deadline miss. A thread without
//! timers counts each pass of a phase's event list as a job, never missed:
//! the first is released when the thread starts, each next one when the
//! previous pass ends, i.e. when its last event completes (the end of a
//! `sleep`, the hand-off of a mutex, …), even if the thread only gets a CPU
//! later — as rt-app's tutorial draws periods. Jobs still open at the end
//! are not counted as jobs; a timer thread's open job whose deadline (its
//! release plus the period drawn for it: the next release, as its `Release`
//! trace event says) is at or before the end of the run is a miss too
//! (`unfinished_misses`, also counted in `deadline_misses`). (After an `absolute` overrun, the next job's `Release` trace
//! event carries the release instant, which is in the past.)
//!
//! Statistics are streamed ([`ResponseStats`]): nothing grows with simulated
//! time (no per-job vector, no event log).
//!
//! # Deadlocks and the end of a run
//!
//! When the engine refuses a block because it would close a cycle, the run
//! ends at that instant with [`Report::deadlock`] naming the cycle (threads
//! and resources; internal objects are named like `q.more`,
//! `rpc.reply[Client1]`). Otherwise the run ends at the duration
//! ([`SimConfig::duration_us`], else `global.duration`; events at exactly the
//! end are processed), or when every thread has exited, or when nothing is
//! left to happen (every live thread blocked for good). A scenario that
//! loops forever without a finite duration is refused, and so is a run in
//! which simulated time stops advancing ([`ZERO_TIME_STEP_LIMIT`] zero-time
//! operations at one instant: a loop of lock/unlock/signal without any
//! `run`, `sleep` or `timer`) — an error, never a hang.
//!
//! # The trace
//!
//! [`Observer::start`] first, with the CPUs, threads and resources (scenario
//! resources first, in order, then internal objects). Then, in time order:
//! `Exec` slices (closed when the thread leaves the CPU or its effective
//! urgency or donor changes; zero-length slices are not reported), `Release`,
//! `Complete`, `Instant`s and a `Boost` for every engine change. Last,
//! [`Observer::finish`].
//!
//! # Counting events
//!
//! [`Report::events`] = future events popped from their queue (stale ones
//! included) + context switches (a thread put on a CPU). This is the unit of
//! the benchmark's "events/s".
#![forbid(unsafe_code)]

pub mod bench;
mod queue;
mod rng;
mod sim;

/// The report and trace types, from `heir-report` (shared with the
/// real-time face and the chart writers).
pub use heir_report::{
    DeadlockReport, InstantKind, NullObserver, Observer, Report, ResponseStats, ResponseSummary,
    TaskReport, ThreadInfo, TraceEvent, TraceInfo,
};
pub use rng::SplitMix64;
pub use sim::{
    cpu_count, Footprint, Simulator, OTHER_BASE_SLICE_NS, RR_SLICE_NS, ZERO_TIME_STEP_LIMIT,
};

use heir_scenario::Scenario;

/// The memory one simulated thread needs, estimated for the readers'
/// thread limit (`heir sim` refuses a file whose threads would not fit in
/// the machine's available memory at this much each): its `Thread`, `Cold`
/// record and engine task (≈ 1.5 KB), its response-time histogram (at most
/// 1 KiB), its share of the scenario and the allocator's slack, rounded up
/// (docs/PERFORMANCE.md, "heir sim and heir analyze at scale").
pub const BYTES_PER_THREAD: u64 = 4096;

/// Overrides of what the scenario file says.
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    /// Replaces `global.seed`.
    pub seed: Option<u64>,
    /// Replaces `global.duration` (µs, at most
    /// [`heir_scenario::limits::MAX_TIME_US`]).
    pub duration_us: Option<u64>,
    /// Replaces `global.pi_cv`.
    pub pi_cv: Option<bool>,
    /// The number of simulated CPUs (1 to
    /// [`heir_scenario::limits::MAX_CPUS`]); every CPU the scenario names
    /// must be below it. `None`: 1 + the largest CPU number the scenario
    /// names (see [`cpu_count`]).
    pub cpus: Option<u32>,
}

/// Why a simulation could not run (the scenario is fine for reading but not
/// for simulating, e.g. no finite duration).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// `path` is the JSON path of what is wrong (`global.duration`,
    /// `tasks.T1`, `tasks.T1.phases.p1.unlock`), `line` and `column` where
    /// it is in the file (0 when it has no position, e.g. a missing
    /// duration). Displays as `LINE:COLUMN: at PATH: MESSAGE`, or
    /// `PATH: MESSAGE` without a position.
    #[error("{}{path}: {message}", if *line > 0 { format!("{line}:{column}: at ") } else { String::new() })]
    Invalid {
        /// JSON path of the offending object.
        path: String,
        /// 1-based line of the offending task or event in the file; 0 when
        /// unknown.
        line: u32,
        /// 1-based column (characters); 0 with `line`.
        column: u32,
        /// What is wrong and what was expected.
        message: String,
    },
}

impl SimError {
    /// The JSON path of what is wrong.
    pub fn path(&self) -> &str {
        match self {
            SimError::Invalid { path, .. } => path,
        }
    }

    /// The line and column in the file, when known.
    pub fn position(&self) -> Option<(u32, u32)> {
        match self {
            SimError::Invalid { line, column, .. } if *line > 0 => Some((*line, *column)),
            SimError::Invalid { .. } => None,
        }
    }

    /// What is wrong, without path or position.
    pub fn message(&self) -> &str {
        match self {
            SimError::Invalid { message, .. } => message,
        }
    }
}

impl From<heir_scenario::messages::Refusal> for SimError {
    fn from(r: heir_scenario::messages::Refusal) -> SimError {
        SimError::Invalid {
            path: r.path,
            line: r.line,
            column: r.column,
            message: r.message,
        }
    }
}

/// Simulates `scenario`, streaming trace events to `obs`.
pub fn simulate(
    scenario: &Scenario,
    config: &SimConfig,
    obs: &mut dyn Observer,
) -> Result<Report, SimError> {
    Simulator::new(scenario, config, obs)?.run()
}
