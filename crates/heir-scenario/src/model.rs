//! The scenario model: what a scenario file means, once read and checked.
//!
//! Every consumer (simulator, real-time runner, analysis) reads this model,
//! never the JSON. Names are resolved to indices; every event keeps the key it
//! had in the file (after workgen-style renaming of repeated keys) and its
//! JSON path, so later stages can report errors where the user wrote them.
//!
//! Units: all times are microseconds, as in rt-app, unless a field says `_ns`.

use std::fmt;

/// Index into [`Scenario::tasks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskIdx(pub usize);

/// Index into [`Scenario::resources`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResIdx(pub usize);

/// A whole scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The `global` object (defaults when absent).
    pub global: Global,
    /// Resources in order of declaration, then of first use.
    pub resources: Vec<Resource>,
    /// Tasks in file order.
    pub tasks: Vec<Task>,
    /// Non-fatal findings (unknown `global` keys, ignored rt-app options).
    pub warnings: Vec<Warning>,
    /// heir (NOVA donation): the RPC model and what the donation model adds
    /// (passive servers, call timeouts, nested calls).
    pub rpc: Rpc,
}

/// How RPC endpoints lend a waiting caller's scheduling context
/// (`global.ipc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IpcModel {
    /// PI-CV (the PI-CV paper; the default): every serving thread of an endpoint
    /// is a helper of each caller's reply condvar.
    #[default]
    PiCv,
    /// NOVA donation (timeslice donation and helping): a call lends the
    /// caller's context to the one thread serving that request, until the
    /// reply; a caller that finds every server busy helps them until one
    /// can take its call.
    Donation,
}

impl IpcModel {
    /// The name the scenario file uses (`"pi-cv"`, `"donation"`).
    pub fn name(&self) -> &'static str {
        match self {
            IpcModel::PiCv => "pi-cv",
            IpcModel::Donation => "donation",
        }
    }
}

/// heir (NOVA donation): the RPC model of the scenario and its per-task and
/// per-call additions. Empty (the default) for a scenario without them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rpc {
    /// `global.ipc`.
    pub model: IpcModel,
    /// Tasks with `"passive": true`: no scheduling context of their own,
    /// they run only on donated time.
    pub passive: Vec<TaskIdx>,
    /// The `call` events that carry more than `server` and one `run` (a
    /// `timeout`, a nested `call`, blocking or repeated handler events), by
    /// their event's JSON path.
    pub calls: Vec<CallAt>,
}

impl Rpc {
    /// Whether task `t` is passive.
    pub fn is_passive(&self, t: TaskIdx) -> bool {
        self.passive.contains(&t)
    }

    /// What the `call` event at `path` carries beyond `server` and one
    /// `run`.
    pub fn call_at(&self, path: &str) -> Option<&CallSpec> {
        self.calls.iter().find(|c| c.path == path).map(|c| &c.spec)
    }
}

/// A `call` event that carries more than `server` and one `run`.
#[derive(Clone, Debug, PartialEq)]
pub struct CallAt {
    /// The event's JSON path.
    pub path: String,
    /// The call, with its nested calls.
    pub spec: CallSpec,
}

/// One call: to `endpoint`, with the handler the serving thread runs for it
/// before it replies.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSpec {
    /// A [`ResourceKind::Endpoint`].
    pub endpoint: ResIdx,
    /// µs of work the server does for the call: the sum of the handler's
    /// `run`s at this level (the whole handler for a plain call). The
    /// faces that do not model handlers (`heir run`, `heir analyze`) use
    /// this.
    pub run: Micros,
    /// µs after which the caller stops waiting (the call is aborted).
    pub timeout_us: Option<u64>,
    /// The handler (donation model): what the serving thread does, in file
    /// order, before it replies. A plain call's is its one `run`.
    pub handler: Vec<HandlerStep>,
}

impl CallSpec {
    /// The nested calls of the handler, in order (not their own nested
    /// calls).
    pub fn nested(&self) -> impl Iterator<Item = &CallSpec> {
        self.handler.iter().filter_map(|h| match &h.event {
            HandlerEvent::Call(c) => Some(&**c),
            _ => None,
        })
    }

    /// Whether this call or one of its nested calls has a `timeout`.
    pub fn has_timeout(&self) -> bool {
        self.timeout_us.is_some() || self.nested().any(CallSpec::has_timeout)
    }
}

/// One event of a call's handler (donation model), where it is in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct HandlerStep {
    /// The event's JSON path (workgen names: `tasks.A.call.run1`).
    pub path: String,
    /// What it does.
    pub event: HandlerEvent,
}

/// What a handler's event does, on the serving thread.
#[derive(Clone, Debug, PartialEq)]
pub enum HandlerEvent {
    /// Burn CPU for that long, on the time the server runs on.
    Run(Micros),
    /// Lock a mutex (the server may block: a *blocked handler*).
    Lock(ResIdx),
    /// Unlock a mutex the handler locked.
    Unlock(ResIdx),
    /// Sleep (the server blocks; its lent time waits for it).
    Sleep(Micros),
    /// A nested call, made on the time the server runs on.
    Call(Box<CallSpec>),
}

/// The `global` object.
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    /// `duration` in seconds; `None` for rt-app's `-1` (run until every task
    /// ends) or when absent.
    pub duration_s: Option<f64>,
    /// rt-app's `default_policy`: the policy of tasks that set none
    /// (default `SCHED_OTHER`).
    pub default_policy: Policy,
    /// rt-app's `pi_enabled`: the default mutex protocol is `inherit` when
    /// true, `none` when false (rt-app's default: false).
    pub pi_enabled: bool,
    /// heir extension: PI-CV on condition variables with helpers (default true).
    pub pi_cv: bool,
    /// heir extension: under `bwi` mutexes, a reservation lent to an owner is
    /// used only on the CPUs its own task may run on (affinity inheritance,
    /// the M-BWI paper's §4; default true). False: lent reservations run within the
    /// owner's affinity (the behaviour of the M-BWI paper's Fig. 3).
    pub bwi_affinity: bool,
    /// heir extension: the seed of every random draw (default 0).
    pub seed: u64,
    /// heir extension (GPM): gang priority management (default
    /// true). False keeps every gang's waiting and counting but boosts
    /// nobody: the GPM paper's no-GPM baseline.
    pub gpm: bool,
    /// rt-app's `calibration` when it is an integer: ns per loop.
    pub calibration_ns_per_loop: Option<u64>,
}

/// A scheduling policy, as rt-app names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER` (CFS/EEVDF); `priority` is a nice value.
    Other,
    /// `SCHED_BATCH`; `priority` is a nice value.
    Batch,
    /// `SCHED_IDLE`; no priority.
    Idle,
    /// `SCHED_FIFO`; `priority` is 1..=99.
    Fifo,
    /// `SCHED_RR`; `priority` is 1..=99.
    Rr,
    /// `SCHED_DEADLINE`; parameters in [`Sched::dl`].
    Deadline,
}

impl Policy {
    /// True for `SCHED_FIFO`, `SCHED_RR` and `SCHED_DEADLINE`.
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
    /// rt-app's spelling, e.g. `SCHED_FIFO`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }
}

/// `SCHED_DEADLINE` parameters (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlParams {
    /// `dl-runtime` (> 0).
    pub runtime_us: u64,
    /// `dl-deadline` (defaults to the period; runtime ≤ deadline ≤ period).
    pub deadline_us: u64,
    /// `dl-period` (defaults to the runtime).
    pub period_us: u64,
}

/// Scheduling attributes of a task or a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sched {
    /// The scheduling policy.
    pub policy: Policy,
    /// Real-time priority (1..=99) for FIFO/RR; nice (-20..=19) for
    /// OTHER/BATCH; 0 otherwise. rt-app's default: 10 for RT, 0 for others.
    pub priority: i32,
    /// `Some` exactly when `policy` is [`Policy::Deadline`].
    pub dl: Option<DlParams>,
}

/// A µs quantity: fixed, or uniform in `[min, max]` (heir extension), drawn
/// from the seeded RNG each time the event runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Micros {
    /// An integer in the file: always this many µs.
    Fixed(u64),
    /// `{"min": a, "max": b}` in the file (`min <= max`).
    Uniform {
        /// The smallest value drawn.
        min: u64,
        /// The largest value drawn.
        max: u64,
    },
}

impl Micros {
    /// The largest value it can take (a WCET for analysis).
    pub fn max(self) -> u64 {
        match self {
            Micros::Fixed(v) => v,
            Micros::Uniform { max, .. } => max,
        }
    }
    /// The smallest value it can take.
    pub fn min(self) -> u64 {
        match self {
            Micros::Fixed(v) => v,
            Micros::Uniform { min, .. } => min,
        }
    }
}

/// A task object of `tasks`. `instance` copies run as separate threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The key in `tasks`.
    pub name: String,
    /// JSON path of the task object, e.g. `tasks.Client1`.
    pub path: String,
    /// 1-based line and column of the task's key in the file (0 when the
    /// task was not read from a file).
    pub line: u32,
    /// See [`line`](Self::line).
    pub column: u32,
    /// Number of threads (rt-app's `instance`, default 1; 0 creates none).
    pub instance: u32,
    /// Scheduling attributes at start (`policy`, `priority`, `dl-*`).
    pub sched: Sched,
    /// CPU affinity; `None` means every CPU.
    pub cpus: Option<Vec<u32>>,
    /// Start delay (µs).
    pub delay_us: u64,
    /// Number of times the whole phase list runs; `None` = forever (-1).
    pub loops: Option<u64>,
    /// At least one phase. A task without `phases` has one phase named `""`.
    pub phases: Vec<Phase>,
}

impl Task {
    /// Thread names: the task's name when `instance == 1`, else `name-0`,
    /// `name-1`, ... (rt-app's `<task_name>-<index>` scheme).
    pub fn thread_names(&self) -> Vec<String> {
        if self.instance == 1 {
            vec![self.name.clone()]
        } else {
            (0..self.instance)
                .map(|i| format!("{}-{}", self.name, i))
                .collect()
        }
    }
}

/// A phase: events run in order, `loops` times.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// The key in `phases`; `""` for a task without `phases`.
    pub name: String,
    /// JSON path of the phase object (the task's path for a task without
    /// `phases`).
    pub path: String,
    /// 1-based line and column of the phase's key (the task's key for a
    /// task without `phases`; 0 when not read from a file).
    pub line: u32,
    /// See [`line`](Self::line).
    pub column: u32,
    /// Default 1.
    pub loops: u64,
    /// Affinity change at the start of the phase (else unchanged).
    pub cpus: Option<Vec<u32>>,
    /// Scheduling change at the start of the phase (else unchanged).
    pub sched: Option<Sched>,
    /// The events, in file order (a `sync` is two events: signal, wait).
    pub events: Vec<Event>,
}

/// One event, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The key, after renaming repeated keys as rt-app's workgen does
    /// (`run`, `run1`, `run2`, ...).
    pub key: String,
    /// JSON path, e.g. `tasks.Client1.phases.p1.run1`.
    pub path: String,
    /// 1-based line and column of the key in the file.
    pub line: u32,
    /// See [`line`](Self::line).
    pub column: u32,
    /// What the event does.
    pub kind: EventKind,
}

/// Timer reference modes (rt-app `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerMode {
    /// Default: after an overrun the next period counts from now.
    Relative,
    /// The reference never moves: releases stay at `delay + k·period`.
    Absolute,
}

/// What an event does. Resource operands are indices into
/// [`Scenario::resources`], of the kind the event needs (checked by the reader).
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// `run`: µs of CPU work.
    Run(Micros),
    /// `runtime`: µs of wall-clock time spent runnable.
    Runtime(Micros),
    /// `sleep`: µs of sleep.
    Sleep(Micros),
    /// `timer`: wait for the next period of a timer resource.
    Timer {
        /// A [`ResourceKind::Timer`].
        timer: ResIdx,
        /// The period (µs, > 0).
        period: Micros,
    },
    /// `lock`: `pthread_mutex_lock` on a [`ResourceKind::Mutex`].
    Lock(ResIdx),
    /// `unlock`: `pthread_mutex_unlock` on a [`ResourceKind::Mutex`].
    Unlock(ResIdx),
    /// `wait`: `pthread_cond_wait(cond, mutex)`; the task must hold `mutex`.
    Wait {
        /// A [`ResourceKind::Cond`].
        cond: ResIdx,
        /// A [`ResourceKind::Mutex`].
        mutex: ResIdx,
    },
    /// `signal`: `pthread_cond_signal` on a [`ResourceKind::Cond`].
    Signal(ResIdx),
    /// `broad`: `pthread_cond_broadcast` on a [`ResourceKind::Cond`].
    Broadcast(ResIdx),
    /// `barrier`: rt-app's barrier (all users of the name meet).
    Barrier(ResIdx),
    /// `suspend`: wait on the task's own suspend resource until resumed.
    Suspend(ResIdx),
    /// `resume NAME`: wake every thread suspended on `NAME`'s suspend
    /// resource (a resume that finds nobody suspended is lost, as in rt-app).
    Resume(ResIdx),
    /// `yield`: `sched_yield()`.
    Yield,
    /// heir: `push QUEUE`: push one item, at the pusher's priority.
    Push(ResIdx),
    /// heir: `pop QUEUE`: pop the most urgent item.
    Pop(ResIdx),
    /// heir: `call {server, run}`: RPC to an endpoint; `run` µs of work done
    /// by the serving thread on the caller's behalf.
    Call {
        /// A [`ResourceKind::Endpoint`].
        endpoint: ResIdx,
        /// µs of work the server does for this call.
        run: Micros,
    },
    /// heir: `serve ENDPOINT`: take the most urgent request, run it, reply.
    Serve(ResIdx),
    /// heir (GPM): an operation on a gang (`gang_run`, `gang_wait`,
    /// `gang_notify`, `gang_insert`, `gang_remove`, `gang_active`,
    /// `gang_passive`) by the running thread.
    Gang {
        /// A [`ResourceKind::Gang`].
        gang: ResIdx,
        /// What the thread does to it.
        op: GangOp,
    },
}

/// Every membership bit of a gang member's control word: the lower 28
/// bits (the GPM paper's §2; the upper four are the inheritance status).
pub const GANG_ALL_BITS: u32 = 0x0FFF_FFFF;

/// The membership bits a member starts with (listed in the gang's
/// `members`, or joined by `gang_insert`), and the bits `gang_active` sets
/// when it names none: bit 0, which the default mask of `gang_run`
/// covers — so a plain barrier needs no `gang_active`.
pub const GANG_DEFAULT_BITS: u32 = 1;

/// heir (GPM): what a gang event does (the GPM paper's Listing 1, by the
/// running thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GangOp {
    /// `gang_run`: boost the active members — those whose membership bits
    /// and `mask` share a bit — to the gang priority until each notifies.
    /// Fails, changing nothing, while a run is in progress.
    Run {
        /// The mask (1..=[`GANG_ALL_BITS`]; default every bit).
        mask: u32,
    },
    /// `gang_wait`: wait until every active member of the run in progress
    /// has notified (at once when none is in progress), or until the
    /// timeout.
    Wait {
        /// µs after which the wait gives up (`None`: no timeout).
        timeout_us: Option<u64>,
    },
    /// `gang_notify`: the caller's boost is revoked and it is counted
    /// (harmless when it is not an active member of a run in progress).
    Notify,
    /// `gang_insert`: the caller joins the gang (with
    /// [`GANG_DEFAULT_BITS`]); a thread is a member of at most one gang.
    Insert,
    /// `gang_remove`: the caller leaves the gang (as `gang_notify` first
    /// when it is an active member that has not notified).
    Remove,
    /// `gang_active`: the caller sets these membership bits (no system
    /// call: its control word).
    Active {
        /// The bits set (1..=[`GANG_ALL_BITS`]; default
        /// [`GANG_DEFAULT_BITS`]).
        bits: u32,
    },
    /// `gang_passive`: the caller clears these membership bits.
    Passive {
        /// The bits cleared (1..=[`GANG_ALL_BITS`]; default every bit).
        bits: u32,
    },
}

impl GangOp {
    /// The event's name in the file (`"gang_run"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            GangOp::Run { .. } => "gang_run",
            GangOp::Wait { .. } => "gang_wait",
            GangOp::Notify => "gang_notify",
            GangOp::Insert => "gang_insert",
            GangOp::Remove => "gang_remove",
            GangOp::Active { .. } => "gang_active",
            GangOp::Passive { .. } => "gang_passive",
        }
    }
}

/// A mutex protocol, as the scenario names it: the one vocabulary
/// ([`heir_core::Protocol`]: `none`, `inherit`, `bwi`, `ceiling`) with a
/// ceiling given as a real-time priority (1..=99). The engine's form is
/// [`heir_core::Protocol::to_engine`]'s (`engine::protocol`).
pub type MutexProtocol = heir_core::Protocol<i32>;

/// A named resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    /// The name in the file. Names are unique per kind, not overall: a
    /// suspend point is named after its task, a `unique*` timer is named
    /// `<ref>@<task>`, and a mutex and a cond may share a name when some
    /// `wait`/`sync` uses them together (as rt-app's `video-short.json`
    /// does).
    pub name: String,
    /// Where it was declared, or first used.
    pub path: String,
    /// What it is.
    pub kind: ResourceKind,
}

/// The kinds of resources, with what the reader derived from their uses.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceKind {
    /// A pthread mutex.
    Mutex {
        /// Declared, or `inherit`/`none` from `global.pi_enabled`.
        protocol: MutexProtocol,
    },
    /// A condition variable; `helpers` are tasks (every thread of each).
    Cond {
        /// Declared `helpers`, in file order (empty when undeclared).
        helpers: Vec<TaskIdx>,
    },
    /// heir: a bounded priority queue (the PI-CV paper's Fig. 5): one mutex and two
    /// condvars. With `pi_cv`, pushers help "more", poppers help "less".
    Queue {
        /// Items it holds (≥ 1, default 16).
        capacity: u32,
        /// Tasks with a `push` on it, in order of first use.
        pushers: Vec<TaskIdx>,
        /// Tasks with a `pop` on it, in order of first use.
        poppers: Vec<TaskIdx>,
    },
    /// rt-app barrier: `users` = number of threads that use it.
    Barrier {
        /// The sum of `instance` over the tasks that use it.
        users: u32,
    },
    /// rt-app timer; `unique` timers are per thread.
    Timer {
        /// The mode given by any of its uses (they must agree), else
        /// relative.
        mode: TimerMode,
        /// A `ref` starting with `unique`: one timer per thread.
        unique: bool,
    },
    /// A task's suspend point (named after the task).
    Suspend {
        /// The task whose threads suspend on it.
        task: TaskIdx,
    },
    /// heir: an RPC endpoint, served by `servers`, called by `callers`.
    Endpoint {
        /// Tasks with a `serve` on it, in order of first use (at least one).
        servers: Vec<TaskIdx>,
        /// Tasks with a `call` to it, in order of first use.
        callers: Vec<TaskIdx>,
    },
    /// heir (GPM): a gang. Its `members` are members from the start,
    /// with [`GANG_DEFAULT_BITS`]; others join with `gang_insert`.
    Gang {
        /// Declared `members`, in file order (every thread of each task).
        members: Vec<TaskIdx>,
    },
}

impl ResourceKind {
    /// A word for messages: "mutex", "cond", "queue", ...
    pub fn word(&self) -> &'static str {
        match self {
            ResourceKind::Mutex { .. } => "mutex",
            ResourceKind::Cond { .. } => "cond",
            ResourceKind::Queue { .. } => "queue",
            ResourceKind::Barrier { .. } => "barrier",
            ResourceKind::Timer { .. } => "timer",
            ResourceKind::Suspend { .. } => "suspend point",
            ResourceKind::Endpoint { .. } => "endpoint",
            ResourceKind::Gang { .. } => "gang",
        }
    }
}

/// A non-fatal finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// JSON path of what it is about.
    pub path: String,
    /// 1-based line of the token it is about.
    pub line: u32,
    /// 1-based column (in characters) of that token.
    pub column: u32,
    /// What was found and why it is not an error.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.line, self.column, self.path, self.message
        )
    }
}
