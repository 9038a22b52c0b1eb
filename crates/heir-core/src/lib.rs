//! heir-core: the inheritance engine — who waits for whom, and the effective
//! urgency that follows.
//!
//! The engine is pure bookkeeping: no clock, no threads, no I/O. The simulator
//! (`heir-sim`) and the runtime (`heir-rt`) both drive it with the same calls
//! and apply the [`Changes`] it returns (re-queue a thread in the simulator,
//! `sched_setattr` on a real thread).
//!
//! # Vocabulary
//!
//! The words below are used the same way in prose, identifiers and comments
//! (rtmutex.c and Zircon's owned wait queues use them the same way).
//!
//! - **task**: a thread ([`TaskId`]).
//! - **base**: the task's own [`Urgency`], what `chrt` would show.
//! - **object** ([`ObjId`]): something a task can be blocked on, of some
//!   **kind** — a **mutex** ([`MutexId`]), a **condvar** ([`CondId`]), an IPC
//!   **endpoint**, a **gang**, or a kind made up by a test. What an object
//!   does is its [`Spec`]: whether it **donates**, how many **targets** it
//!   has, and its **floor**.
//! - **waiter**: a task blocked on an object (each task on at most one).
//! - **top waiter**: the waiter of an object with the greatest *effective*
//!   urgency, the earliest enqueued among equals.
//! - **target**: a task an object acts on: a mutex's **owner**, a condvar's
//!   **helpers** (declared with `pthread_cond_helpers_add`, the PI-CV paper's §4), the
//!   server serving an endpoint's request, a gang's active members.
//! - **floor**: an urgency an object puts under each of its targets whoever
//!   waits: a ceiling mutex's ceiling (IPCP), a running gang's priority
//!   (GPM).
//! - **contribution** of an object to its targets: the maximum of its floor
//!   and, if it donates, its top waiter's effective urgency. A task's
//!   **inputs** are the objects it is a target of that contribute now.
//! - **effective**: the urgency the scheduler must use ([`Effective`]):
//!   `eff(t) = max(base(t), contribution of each input of t)`.
//! - **source** ([`Source`]): where an effective urgency comes from — the
//!   task whose base it is, or the object whose floor it is and the task it
//!   lifts. The **donor** is that task: the task itself when not boosted or
//!   under its own ceiling, else the root of the boosting chain.
//! - **scheduling context** ([`ContextId`]): whose *time* a task runs on, as
//!   opposed to whose *urgency* (seL4 MCS). An object of its own arena: an
//!   optional [`Reservation`] (`SCHED_DEADLINE`: runtime, relative
//!   deadline, period) and its [`Budget`] (remaining budget, absolute
//!   deadline, throttled). A task is **bound** to at most one; a
//!   **passive** task ([`Engine::add_passive_task`]) to none, and runs only
//!   on lent time. Blocked tasks lend theirs along the edges of objects
//!   that lend time ([`Spec::lends_budget`]). The engine keeps no clock:
//!   the face that runs time applies the CBS rules through the engine
//!   ([`Engine::start`], [`Engine::wakeup`], [`Engine::consume`],
//!   [`Engine::throttle`], [`Engine::replenish`]) with its own instants;
//!   the engine answers which context a running task consumes
//!   ([`Engine::consumer`]), which contexts come with the urgencies that
//!   reach it ([`Engine::donors`]) and where a blocked task's time goes
//!   ([`Engine::time_goes_to`]).
//! - **wait-for graph**: nodes are tasks and objects ([`Node`]); edges go
//!   from a blocked task to its object and from an object to each of its
//!   targets, whatever the object contributes. It is kept acyclic (a DAG: a
//!   condvar with several helpers fans out).
//! - **chain**: a path of the wait-for graph; its length is the number of
//!   blocked tasks on it. Boosts flow down chains: a blocked task can itself
//!   be a target and passes what it inherits on.
//! - **cycle**: a closed path of the wait-for graph, i.e. a deadlock. An
//!   operation that would close one is refused with [`EngineError::Cycle`],
//!   which names it.
//!
//! ```text
//!   A(90) ─▶ m1 ─▶ B(50) ─▶ cv ─▶ C(10)
//!                              └─▶ D(20)
//! ```
//!
//! A waits on PI mutex m1, owned by B; B waits on condvar cv, helped by C and
//! D. B, C and D are targets down A's chains: `eff(B) = eff(C) = eff(D) = 90`,
//! donor A for all three. When cv is signalled, C and D fall back to 10 and
//! 20; when B releases m1 to A, B falls back to 50.
//!
//! # How the papers map onto objects
//!
//! - **PI mutex** (classic priority inheritance, rtmutex): waiter → mutex →
//!   owner, [`Protocol::Inherit`]. [`Engine::unlock`] hands the mutex to the
//!   top waiter directly; [`Engine::acquire`]/[`Engine::release`] let a
//!   runtime record ownership the kernel decided (PI futexes).
//! - **PI-CV** (the PI-CV paper): waiter → condvar → each helper; helpers can be added
//!   and removed at any time, also while waiters wait (the boost is applied or
//!   revoked at once); signal, broadcast and timeout ([`Engine::cancel_wait`])
//!   revoke the woken waiters' donation. Transitive with PI mutexes and other
//!   condvars (the PI-CV paper's Fig. 3 and Fig. 7). `pthread_cond_wait(c, m)` gives
//!   `m` up atomically with starting to wait, and so does the engine:
//!   [`Engine::cond_wait_unlock`] (hand-off) and [`Engine::cond_wait_release`]
//!   (the kernel hands over) are one operation whose cycle check sees `m`
//!   already released — a helper blocked on `m` to signal is the normal
//!   pattern, not a deadlock.
//! - **Immediate priority ceiling** (IPCP): a [`Protocol::Ceiling`] mutex
//!   has a floor, the ceiling, under its owner from the moment it locks;
//!   nested ceilings take the maximum and unwind on unlock. Its waiters do
//!   not donate (but still form wait-for edges, so a deadlock through them
//!   is still refused).
//! - **Bandwidth inheritance** (M-BWI): [`Urgency::Deadline`] orders by
//!   absolute deadline alone; a blocked task lends its scheduling context
//!   down its chain (`bwi` mutexes, condvars, endpoints: [`Spec::lends_budget`]),
//!   and the owner runs on the earliest-deadline context it holds that is
//!   not throttled ([`Engine::consumer`]).
//! - **IPC donation and helping** (NOVA donation): an object of [`Spec::ENDPOINT`]
//!   per request; its one target is the server that took the call
//!   ([`Engine::add_target`] / [`Engine::remove_target`] as servers take and
//!   drop requests), so the caller lends to that server only.
//! - **Gang boosts** (GPM): an object of [`Spec::GANG`] whose targets are
//!   the active members that have not notified, and whose floor
//!   ([`Engine::set_floor`]) is the gang priority while the gang runs.
//!
//! The chain walk, the cycle refusal and the invariants read only the
//! [`Spec`] of an object: a new kind is a new `Spec` value.
//!
//! # Budgets are exclusive
//!
//! A condvar with several helpers fans one waiter's *urgency* out to each of
//! them; its *time* must not be: a reservation's budget is consumed by at
//! most one CPU at a time. The engine cannot enforce that (it has no CPUs):
//! [`Engine::consumer`] takes the face's exclusions as a predicate (a
//! context another CPU consumes), and the face picks, for each CPU, a
//! context no other CPU is consuming and that is not throttled.
//!
//! # Ordering guarantees
//!
//! - Waiters of an object are ordered by effective urgency, FIFO (enqueue
//!   order) among equals; [`Engine::unlock`] and [`Engine::cond_signal`] pick
//!   the first, [`Engine::cond_broadcast`] wakes in that order. A waiter whose
//!   effective urgency changes keeps its enqueue position among equals.
//! - Ties in `eff`: the task's own base wins over an equal contribution (a
//!   task is boosted only when strictly more urgent than it would be alone);
//!   then floors, the one that has applied to the task longest first (since
//!   the later of its [`Engine::set_floor`] and the task becoming a target);
//!   then top waiters, the earliest enqueued first. Results are
//!   deterministic.
//! - [`Changes`]: each task at most once, with its effective value before the
//!   operation (`old`) and after (`new`), `old != new`, in the order the chain
//!   walk first changed them (breadth-first from the edge that changed; for
//!   [`Engine::unlock`] the previous owner comes before the new one). The
//!   `*_into` variants ([`Engine::lock_into`], [`Engine::unlock_into`],
//!   [`Engine::cond_wait_into`], [`Engine::cond_wait_unlock_into`],
//!   [`Engine::cond_signal_into`]) write the same changes into a caller's
//!   buffer, cleared first, so that a caller reusing one buffer (the
//!   simulator) moves no [`Changes`] around.
//! - Every error leaves the engine unchanged: operations check everything
//!   before mutating.
//!
//! # Propagation
//!
//! Every operation reduces to a few deltas on the wait-for graph (Zircon
//! style): *add-edge* (a task blocks, an object gets a target),
//! *remove-edge* (a waiter leaves, a target is dropped) and *base-changed*
//! (a base or a floor changes). Each delta queues the tasks whose inputs
//! changed (skipping those an input strictly below their effective urgency
//! cannot change); then one chain walk (`Engine::walk`, an explicit
//! breadth-first worklist) recomputes them and moves along the chains only
//! as far as values actually change. Because every chain is at most
//! [`MAX_CHAIN_DEPTH`] long and the graph is acyclic, the walk is bounded.
//!
//! # Cost along a chain (the NOVA paper's Fig. 9)
//!
//! Changing the top donor of a chain of `n` tasks changes the effective
//! urgency of all `n`, and every one is in the [`Changes`]: the faces need
//! each (the simulator re-queues it, the runtime calls `sched_setattr`, a
//! blocked task included: it may be a waiter in a kernel PI chain), so
//! link, unlink and abort are O(n) by contract. NOVA (the NOVA paper's §IV) keeps
//! no urgency in the graph and walks donation links when it schedules;
//! heir keeps every effective urgency exact after every call instead, and
//! makes the walk cheap: a plain chain (objects with one target) is
//! followed without the worklist, the new contribution is carried down as
//! a delta (one strictly more urgent than a task's value *is* its new
//! value; an object that is a task's only input gives it the contribution
//! or its base: the task's inputs are not re-read), values are kept packed
//! (`packed.rs`), and a long list of changes is handed over without a copy.
//! The check before a block is O(1) for a caller nothing waits upstream of
//! (a client serving nobody) while fewer than [`MAX_CHAIN_DEPTH`] tasks are
//! blocked, O(n) (a walk down the chain) for a server calling on. A reply
//! by the root of a chain (the order a chain unwinds in) is O(1). Figures:
//! docs/PERFORMANCE.md.
//!
//! In debug builds every mutating operation ends with
//! [`Engine::check_invariants`] (disable with [`Engine::set_debug_checks`] for
//! very large worlds).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod budget;
mod cond;
mod context;
mod graph;
mod invariants;
mod mutex;
mod object;
mod packed;
mod probe;
pub mod protocol;
mod state;
mod task;
mod urgency;
mod walk;

pub use budget::Wakeup;
pub use context::{Budget, Consumed, ContextId, Donor, Reservation, Stall, TimeError};
pub use object::{CondId, MutexId, ObjId, ObjKind, Spec};
pub use protocol::{Family, Protocol};
pub use urgency::Urgency;

use smallvec::SmallVec;
use state::{ContextState, ObjState, TaskState};

/// The longest dependency chain the engine accepts, in blocked tasks (Linux's
/// `max_lock_depth`). An operation that would create a longer chain is
/// refused with [`EngineError::ChainTooLong`].
pub const MAX_CHAIN_DEPTH: usize = 1024;

/// A task (thread) in the engine's arena: `.0` is its slot, `.1` the
/// slot's generation. A removed task's slot is reused by a later task
/// with the next generation, so a stale id is refused
/// ([`EngineError::StaleTask`]), never taken for the new task.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u32, pub u32);

/// `TaskId(3)` for generation 0 (a slot's first task), `TaskId(3, gen 2)`
/// after.
impl core::fmt::Debug for TaskId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        object::fmt_id(f, "TaskId", self.0, self.1)
    }
}

/// Where an effective urgency comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// The base urgency of this task: the task itself when it is not
    /// boosted, else the donor at the root of the boosting chain.
    Task(TaskId),
    /// The floor of `object` (a ceiling mutex, a running gang) under
    /// `task`, one of its targets; passed on down `task`'s chain like any
    /// other urgency.
    Floor {
        /// The object whose floor it is.
        object: ObjId,
        /// The target it lifts.
        task: TaskId,
    },
}

/// A task's effective urgency and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effective {
    /// The urgency the scheduler must use for the task.
    pub urgency: Urgency,
    /// Whose base or which object's floor this urgency is.
    pub source: Source,
}

impl Effective {
    /// The donor: the task whose base this urgency is, or the task a floor
    /// lifts (the task itself for its own ceiling).
    pub fn donor(&self) -> TaskId {
        match self.source {
            Source::Task(t) | Source::Floor { task: t, .. } => t,
        }
    }
}

/// One task whose effective urgency an operation changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// The task.
    pub task: TaskId,
    /// Its effective value before the operation.
    pub old: Effective,
    /// Its effective value after the operation (never equal to `old`).
    pub new: Effective,
}

/// The tasks whose effective urgency changed, each at most once, in the order
/// the propagation reached them.
pub type Changes = SmallVec<[Change; 4]>;

/// A node of the wait-for graph, used to name a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// A task.
    Task(TaskId),
    /// An object (see [`Engine::spec`] for its kind).
    Object(ObjId),
}

/// Result of [`Engine::lock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockResult {
    /// The caller owns the mutex now.
    Acquired,
    /// The mutex is owned; the caller is blocked on it.
    Blocked,
}

/// Errors. Every error leaves the engine state unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No such task (never added).
    #[error("unknown task {0:?}")]
    UnknownTask(TaskId),
    /// A task id whose task was removed: its slot is free, or holds a
    /// later task (another generation).
    #[error("task {0:?} was removed (a stale id)")]
    StaleTask(TaskId),
    /// No such object.
    #[error("unknown object {0:?}")]
    UnknownObject(ObjId),
    /// An object id (of any kind) whose object was removed: its slot is
    /// free, or holds a later object (another generation).
    #[error("object {0:?} was removed (a stale id)")]
    StaleObject(ObjId),
    /// [`Engine::remove_object`] of an object that has waiters, or of a
    /// mutex that has an owner.
    #[error("object {object:?} still has waiters or an owner")]
    ObjectBusy {
        /// The object.
        object: ObjId,
    },
    /// No such mutex (no object, or not a mutex).
    #[error("unknown mutex {0:?}")]
    UnknownMutex(MutexId),
    /// No such condition variable (no object, or not a condvar).
    #[error("unknown condition variable {0:?}")]
    UnknownCond(CondId),
    /// The task is blocked; it cannot block again.
    #[error("task {0:?} is already blocked")]
    AlreadyBlocked(TaskId),
    /// The task is not blocked (nothing to cancel).
    #[error("task {0:?} is not blocked")]
    NotBlocked(TaskId),
    /// Unlock or release by a task that is not the owner.
    #[error("task {task:?} does not own mutex {mutex:?}")]
    NotOwner {
        /// The caller.
        task: TaskId,
        /// The mutex.
        mutex: MutexId,
    },
    /// [`Engine::remove_task`] on a task that is blocked or owns a mutex.
    #[error("task {task:?} still owns or waits on something")]
    Busy {
        /// The task.
        task: TaskId,
    },
    /// [`Engine::helper_add`] of a task that already helps the condvar.
    #[error("task {task:?} is already a helper of {cond:?}")]
    HelperExists {
        /// The condvar.
        cond: CondId,
        /// The task.
        task: TaskId,
    },
    /// [`Engine::helper_del`] of a task that does not help the condvar.
    #[error("task {task:?} is not a helper of {cond:?}")]
    NotHelper {
        /// The condvar.
        cond: CondId,
        /// The task.
        task: TaskId,
    },
    /// [`Engine::add_target`] of a task that already is a target.
    #[error("task {task:?} is already a target of {object:?}")]
    AlreadyTarget {
        /// The object.
        object: ObjId,
        /// The task.
        task: TaskId,
    },
    /// [`Engine::remove_target`] of a task that is not a target.
    #[error("task {task:?} is not a target of {object:?}")]
    NotTarget {
        /// The object.
        object: ObjId,
        /// The task.
        task: TaskId,
    },
    /// [`Engine::add_target`] beyond the object's [`Spec::max_targets`].
    #[error("object {object:?} already has its {limit} target(s)")]
    TargetLimit {
        /// The object.
        object: ObjId,
        /// Its limit.
        limit: u16,
    },
    /// The operation would close a cycle in the wait-for graph. `cycle` starts
    /// and ends at the same node.
    #[error("deadlock: the operation would close a dependency cycle")]
    Cycle {
        /// The nodes around the cycle, first == last: for a block, starting
        /// at the task that tried to block; for a new target
        /// ([`Engine::helper_add`], [`Engine::acquire`], …), at the task that
        /// would become the target.
        cycle: Vec<Node>,
    },
    /// The operation would create a chain longer than [`MAX_CHAIN_DEPTH`].
    #[error("dependency chain longer than {limit}")]
    ChainTooLong {
        /// [`MAX_CHAIN_DEPTH`].
        limit: usize,
    },
    /// [`Engine::acquire`] of a mutex another task owns in the engine.
    #[error("mutex {mutex:?} is owned by task {owner:?}")]
    AlreadyOwned {
        /// The mutex.
        mutex: MutexId,
        /// Its current owner.
        owner: TaskId,
    },
    /// No such scheduling context (its slot was never used).
    #[error("unknown scheduling context {0:?}")]
    UnknownContext(ContextId),
    /// A context id whose context was removed: its slot is free, or holds
    /// a later context (another generation).
    #[error("scheduling context {0:?} was removed (a stale id)")]
    StaleContext(ContextId),
    /// [`Engine::bind`] of, or [`Engine::remove_context`] on, a context
    /// bound to a task.
    #[error("scheduling context {context:?} is bound to task {task:?}")]
    ContextBound {
        /// The context.
        context: ContextId,
        /// The task it is bound to.
        task: TaskId,
    },
    /// [`Engine::bind`] of a task that is bound to a context already.
    #[error("task {task:?} is bound to scheduling context {context:?} already")]
    HasContext {
        /// The task.
        task: TaskId,
        /// Its context.
        context: ContextId,
    },
    /// [`Engine::unbind`] of a passive task (bound to no context).
    #[error("task {0:?} is passive (no scheduling context)")]
    Passive(TaskId),
    /// A reservation with a zero field, or a budget beyond `i64::MAX` ns.
    #[error("invalid reservation {0:?}: every field must be at least 1 ns")]
    BadReservation(Reservation),
    /// A CBS rule that needs a reservation (or, for
    /// [`Engine::replenish_inherited`], inherited parameters) on a context
    /// without one.
    #[error("scheduling context {0:?} has no reservation")]
    NoReservation(ContextId),
    /// [`Engine::throttle`] of a throttled context.
    #[error("scheduling context {0:?} is throttled already")]
    Throttled(ContextId),
    /// [`Engine::replenish`] of a context that is not throttled.
    #[error("scheduling context {0:?} is not throttled")]
    NotThrottled(ContextId),
}

/// A violated invariant, found by [`Engine::check_invariants`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invariant violated: {0}")]
pub struct InvariantError(pub String);

/// An operation's value together with the changes it caused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<T> {
    /// What the operation returns.
    pub value: T,
    /// The effective-urgency changes it caused.
    pub changes: Changes,
}

/// The engine. See the crate docs.
///
/// `PartialEq` compares the logical state (tasks, objects, contexts, edges,
/// effective values, the enqueue counter), not the scratch buffers the walks
/// reuse: an operation that fails leaves an engine equal to a clone taken
/// before it.
#[derive(Clone, Debug)]
pub struct Engine {
    tasks: Vec<TaskState>,
    objs: Vec<ObjState>,
    contexts: Vec<ContextState>,
    /// Free task slots (removed tasks), reused last-freed first.
    free_tasks: Vec<u32>,
    /// Free context slots (removed contexts), reused last-freed first.
    free_contexts: Vec<u32>,
    /// Free object slots (removed objects), reused last-freed first.
    free_objs: Vec<u32>,
    /// Next sequence number (FIFO order among equal waiters and floors).
    next_seq: u64,
    /// Number of blocked tasks (derived from `tasks`, kept for the probes:
    /// no chain can count more blocked tasks than this).
    blocked_count: usize,
    /// Run [`Engine::check_invariants`] after each mutating op (debug builds).
    debug_checks: bool,
    scratch: walk::Scratch,
}

impl PartialEq for Engine {
    fn eq(&self, other: &Engine) -> bool {
        self.tasks == other.tasks
            && self.objs == other.objs
            && self.contexts == other.contexts
            && self.free_tasks == other.free_tasks
            && self.free_contexts == other.free_contexts
            && self.free_objs == other.free_objs
            && self.next_seq == other.next_seq
    }
}

impl Eq for Engine {}

impl Default for Engine {
    fn default() -> Engine {
        Engine::new()
    }
}

impl Engine {
    /// An empty engine.
    pub fn new() -> Engine {
        Engine {
            tasks: Vec::new(),
            objs: Vec::new(),
            contexts: Vec::new(),
            free_tasks: Vec::new(),
            free_contexts: Vec::new(),
            free_objs: Vec::new(),
            next_seq: 0,
            blocked_count: 0,
            debug_checks: true,
            scratch: walk::Scratch::default(),
        }
    }

    /// The slots of the task arena: the most tasks ever live at once
    /// (removed tasks' slots are reused, see [`TaskId`]).
    pub fn task_slots(&self) -> usize {
        self.tasks.len()
    }

    /// The slots of the object arena: the most objects ever live at once
    /// (removed objects' slots are reused, see [`ObjId`]).
    pub fn object_slots(&self) -> usize {
        self.objs.len()
    }

    /// Turns the per-operation invariant check of debug builds on (default)
    /// or off. No effect in release builds, where it never runs.
    pub fn set_debug_checks(&mut self, on: bool) {
        self.debug_checks = on;
    }

    /// Recomputes every effective urgency from scratch and checks the
    /// structure; compares with the incrementally maintained state.
    ///
    /// Checked: every blocked task is in its object's waiters exactly once
    /// and no other task is, and the engine's count of blocked tasks agrees;
    /// waiter entries carry the task's effective value and are in (urgency
    /// desc, enqueue asc) order with unique sequence numbers; target
    /// relations agree on both sides and respect each spec's target limit;
    /// inputs are exactly the contributing objects each task is a target of;
    /// contexts and their tasks agree (each bound to at most one, both
    /// sides), removed contexts are free and unbound, and a throttled
    /// context has a reservation; the wait-for graph is acyclic with
    /// every chain at most [`MAX_CHAIN_DEPTH`]; and every effective value
    /// (urgency and source) equals a from-scratch evaluation in topological
    /// order that shares no code with the chain walk.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        invariants::check(self)
    }

    // ----- lookups (no mutation) -----

    /// The public form of a packed effective value: its source's ids with
    /// the generations of their slots.
    #[inline]
    pub(crate) fn public(&self, e: packed::Eff) -> Effective {
        e.public(
            |t| self.tasks[t as usize].gen,
            |o| self.objs[o as usize].gen,
        )
    }

    #[inline]
    fn live(&self, t: TaskId) -> Result<&TaskState, EngineError> {
        match self.tasks.get(t.0 as usize) {
            Some(ts) if ts.alive && ts.gen == t.1 => Ok(ts),
            Some(_) => Err(EngineError::StaleTask(t)),
            None => Err(EngineError::UnknownTask(t)),
        }
    }

    /// The live object `o` names: `unknown` if its slot was never used,
    /// [`EngineError::StaleObject`] if its object was removed.
    #[inline]
    fn slot(&self, o: ObjId, unknown: EngineError) -> Result<&ObjState, EngineError> {
        match self.objs.get(o.0 as usize) {
            Some(os) if os.alive && os.gen == o.1 => Ok(os),
            Some(_) => Err(EngineError::StaleObject(o)),
            None => Err(unknown),
        }
    }

    #[inline]
    fn obj(&self, o: ObjId) -> Result<&ObjState, EngineError> {
        self.slot(o, EngineError::UnknownObject(o))
    }

    #[inline]
    fn mutex(&self, m: MutexId) -> Result<&ObjState, EngineError> {
        match self.slot(m.into(), EngineError::UnknownMutex(m))? {
            os if os.spec.kind == ObjKind::Mutex => Ok(os),
            _ => Err(EngineError::UnknownMutex(m)),
        }
    }

    #[inline]
    fn cond(&self, c: CondId) -> Result<&ObjState, EngineError> {
        match self.slot(c.into(), EngineError::UnknownCond(c))? {
            os if os.spec.kind == ObjKind::Cond => Ok(os),
            _ => Err(EngineError::UnknownCond(c)),
        }
    }

    // ----- result plumbing -----

    /// Runs the chain walk; `Ok` with its changes.
    #[inline]
    fn changes(&mut self) -> Result<Changes, EngineError> {
        self.changes_of(|e, out| {
            e.propagate(out);
            Ok(())
        })
    }

    /// Runs the chain walk; `Ok(value)` with its changes.
    #[inline]
    fn outcome<T>(&mut self, value: T) -> Result<Outcome<T>, EngineError> {
        let mut res = Ok(Outcome {
            value,
            changes: Changes::new(),
        });
        if let Ok(out) = &mut res {
            self.propagate(&mut out.changes);
        }
        res
    }

    /// Runs `op` (an `*_into` operation, or a propagation) with the changes
    /// buffer of the result itself. Built in place, with no early return:
    /// the result is written in the caller's slot and the changes are not
    /// copied on the way out.
    #[inline]
    fn changes_of(
        &mut self,
        op: impl FnOnce(&mut Engine, &mut Changes) -> Result<(), EngineError>,
    ) -> Result<Changes, EngineError> {
        let mut res = Ok(Changes::new());
        if let Ok(out) = &mut res {
            if let Err(e) = op(self, out) {
                res = Err(e);
            }
        }
        res
    }

    /// [`Engine::changes_of`] for an operation that also returns a value
    /// (`value` is only the placeholder until `op` returns).
    #[inline]
    fn outcome_of<T>(
        &mut self,
        value: T,
        op: impl FnOnce(&mut Engine, &mut Changes) -> Result<T, EngineError>,
    ) -> Result<Outcome<T>, EngineError> {
        let mut res = Ok(Outcome {
            value,
            changes: Changes::new(),
        });
        if let Ok(out) = &mut res {
            match op(self, &mut out.changes) {
                Ok(v) => out.value = v,
                Err(e) => res = Err(e),
            }
        }
        res
    }

    /// Debug builds: run [`Engine::check_invariants`] after a mutating op.
    #[inline]
    fn debug_validate(&self) {
        #[cfg(debug_assertions)]
        if self.debug_checks {
            let r = self.check_invariants();
            debug_assert!(r.is_ok(), "heir-core: {r:?}");
        }
    }
}
