//! The trace stream: what the simulator (and the real-time runner) tell an
//! observer while they run, so that writers can stream it (memory stays flat).

use heir_core::Urgency;

/// What an observer learns before the first event.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceInfo {
    /// Number of CPUs (indices `0..cpus`).
    pub cpus: u32,
    /// One per thread, indexed by the `thread` fields of events.
    pub threads: Vec<ThreadInfo>,
    /// Resource names, indexed by `resource` fields of events.
    pub resources: Vec<String>,
}

/// A thread of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadInfo {
    /// Thread name (`Task` or `Task-<i>` for instances).
    pub name: String,
    /// Base urgency at the start.
    pub base: Urgency,
}

/// Instant kinds (trace instants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstantKind {
    /// The thread acquired the mutex (also on hand-off from an unlock).
    Lock,
    /// The thread blocked on the mutex.
    LockBlocked,
    /// The thread released the mutex.
    Unlock,
    /// The thread started waiting on the condvar.
    Wait,
    /// `pthread_cond_signal` on the condvar.
    Signal,
    /// `pthread_cond_broadcast` on the condvar.
    Broadcast,
    /// The thread was woken from the condvar.
    Woken,
    /// An item was pushed into the queue.
    Push,
    /// An item was popped from the queue.
    Pop,
    /// An RPC request was queued at the endpoint.
    Call,
    /// The server replied to a caller of the endpoint.
    Reply,
    /// The thread arrived at the barrier.
    Barrier,
    /// The thread suspended itself.
    Suspend,
    /// The thread resumed the suspend point.
    Resume,
    /// The thread's deadline reservation ran out of budget: throttled until its
    /// replenishment (no resource).
    Throttle,
    /// The thread's deadline reservation was replenished (no resource).
    Replenish,
    /// The thread started spinning on its CPU for the mutex (M-BWI: the
    /// owner runs on another CPU).
    Spin,
    /// The thread's call timed out and was aborted (NOVA donation; the
    /// resource is the endpoint).
    Abort,
    /// The thread ran the gang (GPM `gang_run`): its active members
    /// are boosted from now on.
    GangRun,
    /// The thread's `gang_run` failed: a run of the gang was in progress.
    GangRunFailed,
    /// The thread notified the gang (`gang_notify`, or `gang_remove` /
    /// exit of an active member): its boost is revoked.
    GangNotify,
    /// The thread started waiting for the gang's run to complete.
    GangWait,
    /// The thread's `gang_wait` returned: every active member notified.
    GangDone,
    /// The thread's `gang_wait` returned at its timeout.
    GangTimeout,
    /// The thread joined the gang (`gang_insert`).
    GangInsert,
    /// The thread left the gang (`gang_remove`, or its exit).
    GangRemove,
    /// Real runs: the thread is runnable while a thread outside the run
    /// holds its CPU (another program, the fair server, a kernel thread:
    /// `heir run`'s measured disturbance; no resource).
    Displaced,
    /// Real runs: the thread's CPU is no longer held by a thread outside
    /// the run (it runs, or stops being runnable).
    Undisplaced,
}

/// One event. Times are ns since the start.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent {
    /// `thread` ran on `cpu` during `[start_ns, end_ns)` at `urgency`; when
    /// boosted, `donor` is the thread it inherited from.
    Exec {
        /// CPU index.
        cpu: u32,
        /// Thread index (into [`TraceInfo::threads`]).
        thread: usize,
        /// Slice start (ns).
        start_ns: u64,
        /// Slice end (ns), exclusive.
        end_ns: u64,
        /// Effective urgency during the slice.
        urgency: Urgency,
        /// The donor thread when boosted.
        donor: Option<usize>,
    },
    /// A job of `thread` was released; its deadline (next release) if periodic.
    Release {
        /// Thread index.
        thread: usize,
        /// Release instant (ns).
        at_ns: u64,
        /// Absolute deadline (ns), for periodic threads.
        deadline_ns: Option<u64>,
    },
    /// A job completed at `at_ns` with `response_ns`; `missed` if late.
    Complete {
        /// Thread index.
        thread: usize,
        /// Completion instant (ns).
        at_ns: u64,
        /// Completion − release (ns).
        response_ns: u64,
        /// Completed after its deadline.
        missed: bool,
    },
    /// A synchronisation instant on a resource.
    Instant {
        /// Thread index.
        thread: usize,
        /// When (ns).
        at_ns: u64,
        /// What happened.
        kind: InstantKind,
        /// Resource index (into [`TraceInfo::resources`]).
        resource: Option<usize>,
    },
    /// `to`'s effective urgency changed because of `donor` (`None`: back to
    /// its own base or ceiling).
    Boost {
        /// When (ns).
        at_ns: u64,
        /// The thread whose effective urgency changed.
        to: usize,
        /// The donor thread, `None` when back to its own base or ceiling.
        donor: Option<usize>,
        /// The new effective urgency.
        urgency: Urgency,
    },
}

/// Receives the trace stream.
pub trait Observer {
    /// Called once, before any event.
    fn start(&mut self, _info: &TraceInfo) {}
    /// Called for each event, in time order (see the crate docs for the
    /// exceptions: a `Release` may carry an earlier instant).
    fn event(&mut self, _ev: &TraceEvent) {}
    /// Called once at the end with the simulated end time.
    fn finish(&mut self, _end_ns: u64) {}
    /// Whether [`Observer::event`] wants to be called at all. Returning
    /// false lets the producer skip building events (the benchmarks'
    /// [`NullObserver`]); `start` and `finish` are still called.
    fn wants_events(&self) -> bool {
        true
    }
    /// Asked now and then (every 65536 events of the simulator): true stops
    /// the run early, as if its duration ended there. A caller that must
    /// stay interruptible (the Python package, on Ctrl-C) sets it from
    /// another thread; the report of a stopped run is the caller's to
    /// discard.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullObserver;

impl Observer for NullObserver {
    fn wants_events(&self) -> bool {
        false
    }
}
