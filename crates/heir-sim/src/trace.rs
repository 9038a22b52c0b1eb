//! The trace stream: what the simulator (and the real-time runner) tell an
//! observer while they run, so that writers can stream it (memory stays flat).

use heir_core::Urgency;

/// What an observer learns before the first event.
#[derive(Clone, Debug, PartialEq)]
pub struct SimInfo {
    pub cpus: u32,
    /// One per thread, indexed by the `thread` fields of events.
    pub threads: Vec<ThreadInfo>,
    /// Resource names, indexed by `resource` fields of events.
    pub resources: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ThreadInfo {
    pub name: String,
    pub base: Urgency,
}

/// Instant kinds (trace instants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstantKind {
    Lock,
    LockBlocked,
    Unlock,
    Wait,
    Signal,
    Broadcast,
    Woken,
    Push,
    Pop,
    Call,
    Reply,
    Barrier,
    Suspend,
    Resume,
}

/// One event. Times are ns since the start.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent {
    /// `thread` ran on `cpu` during `[start_ns, end_ns)` at `urgency`; when
    /// boosted, `donor` is the thread it inherited from.
    Exec {
        cpu: u32,
        thread: usize,
        start_ns: u64,
        end_ns: u64,
        urgency: Urgency,
        donor: Option<usize>,
    },
    /// A job of `thread` was released; its deadline (next release) if periodic.
    Release {
        thread: usize,
        at_ns: u64,
        deadline_ns: Option<u64>,
    },
    /// A job completed at `at_ns` with `response_ns`; `missed` if late.
    Complete {
        thread: usize,
        at_ns: u64,
        response_ns: u64,
        missed: bool,
    },
    /// A synchronisation instant on a resource.
    Instant {
        thread: usize,
        at_ns: u64,
        kind: InstantKind,
        resource: Option<usize>,
    },
    /// `to`'s effective urgency changed because of `donor` (`None`: back to
    /// its own base or ceiling).
    Boost {
        at_ns: u64,
        to: usize,
        donor: Option<usize>,
        urgency: Urgency,
    },
}

/// Receives the trace stream.
pub trait Observer {
    fn start(&mut self, _info: &SimInfo) {}
    fn event(&mut self, _ev: &TraceEvent) {}
    fn finish(&mut self, _end_ns: u64) {}
}

/// Ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullObserver;

impl Observer for NullObserver {}
