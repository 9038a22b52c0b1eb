//! The run report: the same schema for `heir sim` (`mode: "sim"`) and
//! `heir run` (`mode: "real"`).

use serde::Serialize;

use crate::stats::ResponseSummary;

/// `{"mode":…,"duration_us":…,"tasks":{NAME:{…}},"deadlock":null}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `"sim"` (heir-sim) or `"real"` (heir-rt).
    pub mode: &'static str,
    /// How long the run lasted (µs): the duration, or the instant every
    /// thread exited, or the instant of the deadlock.
    pub duration_us: f64,
    /// Per thread, in scenario order (serialized as an object keyed by name).
    #[serde(serialize_with = "tasks_as_map")]
    pub tasks: Vec<TaskReport>,
    /// The dependency cycle that stopped the run, if any.
    pub deadlock: Option<DeadlockReport>,
    /// heir (GPM): per gang, its runs and the latency its waiters saw
    /// (serialized as an object keyed by gang name; absent without gangs).
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "gangs_as_map")]
    pub gangs: Vec<GangReport>,
    /// Not serialized: scheduling events processed (for benchmarks); for the
    /// simulator, future events popped plus context switches.
    #[serde(skip)]
    pub events: u64,
}

/// One thread's results:
/// `{"jobs":…,"deadline_misses":…,"unfinished_misses":…,"response_us":{…}}`,
/// then `"server":{…}` for a deadline thread and `"migrations":…` when the
/// run counts them (the simulator does, for every thread).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskReport {
    /// Thread name (the key of the `tasks` object).
    #[serde(skip)]
    pub name: String,
    /// Jobs completed.
    pub jobs: u64,
    /// Jobs that missed their deadline (the next release): completed after
    /// it, or not completed when the run ended ([`TaskReport::unfinished_misses`]).
    pub deadline_misses: u64,
    /// Jobs released whose deadline passed before the run ended and that
    /// had not completed; also counted in `deadline_misses`.
    pub unfinished_misses: u64,
    /// Response times of the completed jobs (µs).
    pub response_us: ResponseSummary,
    /// A `SCHED_DEADLINE` thread's reservation, under the JSON key
    /// `server` (absent for other threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerStats>,
    /// Times the thread ran on another CPU than the one it last ran on (0
    /// when pinned). The simulator counts every thread; absent (`None`)
    /// for real runs, which do not observe it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// heir (NOVA donation): calls of the thread that timed out and were aborted;
    /// present for the threads of tasks whose calls have a `timeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted_calls: Option<u64>,
}

/// A gang's results (GPM):
/// `{"runs":…,"failed_runs":…,"waiters":{THREAD:{…}}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GangReport {
    /// The gang's name (the key of the `gangs` object).
    #[serde(skip)]
    pub name: String,
    /// `gang_run`s that started a run.
    pub runs: u64,
    /// `gang_run`s that failed (changing nothing) because a run was in
    /// progress.
    pub failed_runs: u64,
    /// Per thread that called `gang_wait` on the gang, in thread order
    /// (serialized as an object keyed by thread name).
    #[serde(serialize_with = "waits_as_map")]
    pub waiters: Vec<GangWaitReport>,
}

/// What one thread's `gang_wait`s on a gang saw:
/// `{"completed":…,"timeouts":…,"latency_us":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GangWaitReport {
    /// The waiting thread (the key of the `waiters` object).
    #[serde(skip)]
    pub thread: String,
    /// `gang_wait`s that returned because the run they waited for
    /// completed (every active member notified): one latency each.
    pub completed: u64,
    /// `gang_wait`s that returned at their timeout.
    pub timeouts: u64,
    /// Per completed wait, the run's latency: from its `gang_run` to the
    /// last active member's `gang_notify` (µs) — the GPM paper's figure.
    pub latency_us: ResponseSummary,
}

/// What happened to a deadline thread's reservation:
/// `{"throttled":…,"replenished":…}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerStats {
    /// Times its budget ran out and it was throttled.
    pub throttled: u64,
    /// Times it was replenished (after a throttle, or — a boosted thread —
    /// at once with its donor's budget).
    pub replenished: u64,
}

/// `{"kind":"deadlock","at_us":…,"cycle":["A","m2","B","m1","A"]}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadlockReport {
    /// A deadlock (a cycle of waits), or a livelock (NOVA donation: servers
    /// that would help each other forever).
    pub kind: DeadlockKind,
    /// When the cycle closed (µs).
    pub at_us: f64,
    /// Alternating task and resource names; first and last are the same.
    pub cycle: Vec<String>,
}

/// What stopped a run: `"deadlock"` or `"livelock"` in JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeadlockKind {
    /// Threads wait for each other in a cycle (mutexes, condvars, calls).
    #[default]
    Deadlock,
    /// The NOVA paper's Fig. 7: a cycle that goes through a helping link (a caller
    /// that found a server busy and helps it): with timeslice donation the
    /// servers would help each other forever.
    Livelock,
}

impl DeadlockKind {
    /// `"deadlock"` or `"livelock"`.
    pub fn word(&self) -> &'static str {
        match self {
            DeadlockKind::Deadlock => "deadlock",
            DeadlockKind::Livelock => "livelock",
        }
    }
}

fn tasks_as_map<S: serde::Serializer>(tasks: &[TaskReport], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(tasks.len()))?;
    for t in tasks {
        m.serialize_entry(&t.name, t)?;
    }
    m.end()
}

fn gangs_as_map<S: serde::Serializer>(gangs: &[GangReport], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(gangs.len()))?;
    for g in gangs {
        m.serialize_entry(&g.name, g)?;
    }
    m.end()
}

fn waits_as_map<S: serde::Serializer>(waits: &[GangWaitReport], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(waits.len()))?;
    for w in waits {
        m.serialize_entry(&w.thread, w)?;
    }
    m.end()
}
