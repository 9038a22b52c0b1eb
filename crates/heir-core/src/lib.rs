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
//! - **effective**: the urgency the scheduler must use ([`Effective`]):
//!   `eff(t) = max(base(t), floors of the ceiling mutexes t owns, top
//!   contribution of every object t is a target of)`.
//! - **donor**: the task whose *base* urgency an effective urgency is (the task
//!   itself when it is not boosted, and for a ceiling floor).
//! - **object**: something a task can be blocked on: a **mutex** ([`MutexId`])
//!   or a **condvar** ([`CondId`]).
//! - **owner**: the task holding a mutex.
//! - **helper**: a task declared (`pthread_cond_helpers_add`, seed 000 §4) as
//!   the one that will signal a condvar.
//! - **waiter**: a task blocked on an object. Each task waits on at most one
//!   object ([`Blocker`]).
//! - **top waiter**: the waiter of an object with the greatest *effective*
//!   urgency, the earliest enqueued among equals. Its effective value is the
//!   object's **top contribution**.
//! - **target**: the task(s) an object donates its top contribution to: the
//!   owner of a [`Protocol::Inherit`] mutex, every helper of a condvar. Mutexes
//!   with [`Protocol::None`] and [`Protocol::Ceiling`] have no target.
//! - **pi_waiters**: per task, the objects with waiters it is a target of (the
//!   rtmutex name); `eff` is recomputed from them in O(len).
//! - **wait-for graph**: nodes are tasks and objects; edges go from a blocked
//!   task to its object, from a mutex to its owner (every protocol) and from a
//!   condvar to each of its helpers. It is kept acyclic (a DAG: a condvar with
//!   several helpers fans out).
//! - **chain**: a path of the wait-for graph; its length is the number of
//!   blocked tasks on it. Boosts flow down chains: a blocked task can itself be
//!   a target and passes what it inherits on.
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
//! # How the seeds map onto edges
//!
//! - **PI mutex** (classic priority inheritance, rtmutex): waiter → mutex →
//!   owner, [`Protocol::Inherit`]. [`Engine::unlock`] hands the mutex to the
//!   top waiter directly; [`Engine::acquire`]/[`Engine::release`] let a
//!   runtime record ownership the kernel decided (PI futexes).
//! - **PI-CV** (seed 000): waiter → condvar → each helper; helpers can be added
//!   and removed at any time, also while waiters wait (the boost is applied or
//!   revoked at once); signal, broadcast and timeout ([`Engine::cancel_wait`])
//!   revoke the woken waiters' donation. Transitive with PI mutexes and other
//!   condvars (seed 000 Fig. 3 and Fig. 7). `pthread_cond_wait(c, m)` gives
//!   `m` up atomically with starting to wait, and so does the engine:
//!   [`Engine::cond_wait_unlock`] (hand-off) and [`Engine::cond_wait_release`]
//!   (the kernel hands over) are one operation whose cycle check sees `m`
//!   already released — a helper blocked on `m` to signal is the normal
//!   pattern, not a deadlock.
//! - **Immediate priority ceiling** (seed 004): owning a
//!   [`Protocol::Ceiling`] mutex puts a floor under the owner from the moment
//!   it locks; nested ceilings take the maximum and unwind on unlock. Waiters
//!   of a ceiling mutex do not donate (but still form wait-for edges, so a
//!   deadlock through them is still refused).
//! - *Next, designed for but not implemented:*
//!   - bandwidth inheritance (seed 001) needs nothing new in the graph:
//!     [`Urgency::Deadline`] carries the donor's absolute deadline and
//!     reservation server, the engine only ever compares urgencies, and the
//!     donor tells the scheduler whose budget to run on;
//!   - IPC donation and helping (seed 002): a new object kind of the internal
//!     object enum (`state::Obj`), an endpoint whose waiters are blocked
//!     clients and whose target is the server (donation, and helping by
//!     clients that find it busy; an abort is [`Engine::cancel_wait`]);
//!   - gang boosts (seed 003): a gang object whose contribution is the gang
//!     priority and whose targets are the active members until they notify
//!     (seed 003 Invariant 1).
//!
//!   Each new kind only has to name its targets and whether it donates; the
//!   chain walk, the cycle refusal and the invariants are written against
//!   objects, not kinds.
//!
//! # Ordering guarantees
//!
//! - Waiters of an object are ordered by effective urgency, FIFO (enqueue
//!   order) among equals; [`Engine::unlock`] and [`Engine::cond_signal`] pick
//!   the first, [`Engine::cond_broadcast`] wakes in that order. A waiter whose
//!   effective urgency changes keeps its enqueue position among equals.
//! - Ties in `eff`: the task's own base and ceiling floors win over an equal
//!   inherited contribution (a task is boosted only when strictly more urgent
//!   than it would be alone); among equal inherited contributions the
//!   earliest-enqueued top waiter wins. Results are deterministic.
//! - [`Changes`]: each task at most once, with its effective value before the
//!   operation (`old`) and after (`new`), `old != new`, in the order the chain
//!   walk first changed them (breadth-first from the edge that changed; for
//!   [`Engine::unlock`] the previous owner comes before the new one). The
//!   `*_into` variants ([`Engine::lock_into`], [`Engine::unlock_into`],
//!   [`Engine::cond_wait_into`], [`Engine::cond_wait_unlock_into`],
//!   [`Engine::cond_signal_into`]) write the
//!   same changes into a caller's buffer, cleared first, so that a caller
//!   reusing one buffer (the simulator) moves no [`Changes`] around.
//! - Every error leaves the engine unchanged: operations check everything
//!   before mutating.
//!
//! # Propagation
//!
//! Every operation reduces to a few deltas on the wait-for graph (Zircon
//! style): *add-edge* (a task blocks, a helper is added, a mutex gets an
//! owner), *remove-edge* (a waiter leaves, a helper is removed, an owner
//! unlocks) and *base-changed* (a base or a ceiling floor changes). Each delta
//! queues the tasks whose inputs changed (skipping those an input strictly
//! below their effective urgency cannot change); then one chain walk
//! (`Engine::walk`, an explicit breadth-first worklist) recomputes them and
//! moves along the chains only as far as values actually change. Because
//! every chain is at most [`MAX_CHAIN_DEPTH`] long and the graph is acyclic,
//! the walk is bounded.
//!
//! In debug builds every mutating operation ends with
//! [`Engine::check_invariants`] (disable with [`Engine::set_debug_checks`] for
//! very large worlds).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod invariants;
mod probe;
mod state;
mod urgency;
mod walk;

pub use urgency::{ServerId, Urgency};

use smallvec::SmallVec;
use state::{CondState, MutexState, Obj, TaskState, WaitQueue};

/// The longest dependency chain the engine accepts, in blocked tasks (Linux's
/// `max_lock_depth`). An operation that would create a longer chain is
/// refused with [`EngineError::ChainTooLong`].
pub const MAX_CHAIN_DEPTH: usize = 1024;

/// A task (thread) in the engine's arena. Ids are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u32);
/// A mutex in the engine's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MutexId(pub u32);
/// A condition variable in the engine's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CondId(pub u32);

/// How a mutex's waiters affect its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// No inheritance: waiters wait, the owner runs at its own urgency.
    None,
    /// Priority inheritance: the owner inherits its top waiter's urgency.
    Inherit,
    /// Immediate priority ceiling (seed 004): the owner runs at least at the
    /// ceiling from the moment it locks. Waiters do not donate.
    Ceiling(Urgency),
}

/// A task's effective urgency and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effective {
    /// The urgency the scheduler must use for the task.
    pub urgency: Urgency,
    /// The task whose base urgency this is: the task itself when not boosted,
    /// else the donor at the root of the boosting chain (for a ceiling, the
    /// task itself).
    pub donor: TaskId,
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

/// What a task is blocked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// Blocked in [`Engine::lock`] on an owned mutex.
    Mutex(MutexId),
    /// Blocked in [`Engine::cond_wait`].
    Cond(CondId),
}

/// A node of the wait-for graph, used to name a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// A task.
    Task(TaskId),
    /// A mutex.
    Mutex(MutexId),
    /// A condition variable.
    Cond(CondId),
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
pub enum EngineError {
    /// No such task (never added, or removed).
    #[error("unknown task {0:?}")]
    UnknownTask(TaskId),
    /// No such mutex.
    #[error("unknown mutex {0:?}")]
    UnknownMutex(MutexId),
    /// No such condition variable.
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
    /// The operation would close a cycle in the wait-for graph. `cycle` starts
    /// and ends at the same node.
    #[error("deadlock: the operation would close a dependency cycle")]
    Cycle {
        /// The nodes around the cycle, first == last: for a block, starting
        /// at the task that tried to block; for [`Engine::helper_add`] and
        /// [`Engine::acquire`], at the task that would become helper/owner.
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
/// `PartialEq` compares the logical state (tasks, objects, edges, effective
/// values, the enqueue counter), not the scratch buffers the walks reuse: an
/// operation that fails leaves an engine equal to a clone taken before it.
#[derive(Clone, Debug)]
pub struct Engine {
    tasks: Vec<TaskState>,
    mutexes: Vec<MutexState>,
    conds: Vec<CondState>,
    /// Next enqueue sequence number (FIFO order among equal waiters).
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
            && self.mutexes == other.mutexes
            && self.conds == other.conds
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
            mutexes: Vec::new(),
            conds: Vec::new(),
            next_seq: 0,
            blocked_count: 0,
            debug_checks: true,
            scratch: walk::Scratch::default(),
        }
    }

    /// Turns the per-operation invariant check of debug builds on (default)
    /// or off. No effect in release builds, where it never runs.
    pub fn set_debug_checks(&mut self, on: bool) {
        self.debug_checks = on;
    }

    // ----- validation helpers (no mutation) -----

    fn live(&self, t: TaskId) -> Result<&TaskState, EngineError> {
        match self.tasks.get(t.0 as usize) {
            Some(ts) if ts.alive => Ok(ts),
            _ => Err(EngineError::UnknownTask(t)),
        }
    }

    fn mutex(&self, m: MutexId) -> Result<&MutexState, EngineError> {
        self.mutexes
            .get(m.0 as usize)
            .ok_or(EngineError::UnknownMutex(m))
    }

    fn cond(&self, c: CondId) -> Result<&CondState, EngineError> {
        self.conds
            .get(c.0 as usize)
            .ok_or(EngineError::UnknownCond(c))
    }

    // ----- tasks -----

    /// Adds a task with a base urgency; it is runnable, owns nothing.
    ///
    /// Post: `effective(t) == Effective { urgency: base, donor: t }`.
    pub fn add_task(&mut self, base: Urgency) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        self.tasks.push(TaskState::new(id, base));
        self.scratch.add_task();
        id
    }

    /// Removes a task: it must be neither blocked nor owning a mutex
    /// ([`EngineError::Busy`]); it is dropped from every helper set (revoking
    /// what it inherited through them). Returns the changes of other tasks.
    ///
    /// Pre: `t` is live, not blocked, owns nothing. Post: `t` is unknown to
    /// every query; no helper set names it. Since a task that is not blocked
    /// donates to nobody, no other task changes: the result is empty.
    pub fn remove_task(&mut self, t: TaskId) -> Result<Changes, EngineError> {
        let ts = self.live(t)?;
        if ts.blocked.is_some() || !ts.owned.is_empty() {
            return Err(EngineError::Busy { task: t });
        }
        let helps = core::mem::take(&mut self.tasks[t.0 as usize].helps);
        for c in helps {
            self.conds[c.0 as usize].helpers.retain(|h| *h != t);
        }
        let ts = &mut self.tasks[t.0 as usize];
        ts.alive = false;
        ts.pi_waiters.clear();
        ts.floor = None;
        ts.eff = Effective {
            urgency: ts.base,
            donor: t,
        };
        self.debug_validate();
        Ok(Changes::new())
    }

    /// Changes `t`'s base urgency (a `sched_setattr` by the application).
    ///
    /// Pre: `t` is live. Post: `base(t) == base`; the new value propagates
    /// down every chain from `t` (a base-changed delta).
    pub fn set_base(&mut self, t: TaskId, base: Urgency) -> Result<Changes, EngineError> {
        self.live(t)?;
        self.tasks[t.0 as usize].base = base;
        self.enqueue(t);
        self.changes()
    }

    /// The task's base urgency.
    pub fn base(&self, t: TaskId) -> Result<Urgency, EngineError> {
        Ok(self.live(t)?.base)
    }

    /// The task's effective urgency and its donor.
    pub fn effective(&self, t: TaskId) -> Result<Effective, EngineError> {
        Ok(self.live(t)?.eff)
    }

    /// What the task is blocked on, if anything.
    pub fn blocked_on(&self, t: TaskId) -> Result<Option<Blocker>, EngineError> {
        Ok(self.live(t)?.blocked.map(Blocker::from))
    }

    /// The mutexes `t` owns, in acquisition order.
    pub fn owned(&self, t: TaskId) -> Result<&[MutexId], EngineError> {
        Ok(&self.live(t)?.owned)
    }

    /// The condvars `t` helps, in the order it was added to them.
    pub fn helping(&self, t: TaskId) -> Result<&[CondId], EngineError> {
        Ok(&self.live(t)?.helps)
    }

    /// Every live task, in id order.
    pub fn tasks(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, ts)| ts.alive)
            .map(|(i, _)| TaskId(i as u32))
    }

    // ----- objects -----

    /// Adds a mutex with its protocol; it is free.
    pub fn add_mutex(&mut self, protocol: Protocol) -> MutexId {
        let id = MutexId(self.mutexes.len() as u32);
        self.mutexes.push(MutexState {
            protocol,
            owner: None,
            queue: WaitQueue::default(),
        });
        self.scratch.add_mutex();
        id
    }

    /// The mutex's protocol.
    pub fn protocol(&self, m: MutexId) -> Result<Protocol, EngineError> {
        Ok(self.mutex(m)?.protocol)
    }

    /// The mutex's owner, if any.
    pub fn owner(&self, m: MutexId) -> Result<Option<TaskId>, EngineError> {
        Ok(self.mutex(m)?.owner)
    }

    /// Adds a condition variable without helpers.
    pub fn add_cond(&mut self) -> CondId {
        let id = CondId(self.conds.len() as u32);
        self.conds.push(CondState {
            helpers: SmallVec::new(),
            queue: WaitQueue::default(),
        });
        self.scratch.add_cond();
        id
    }

    /// The helpers of `c`, in the order they were added.
    pub fn helpers(&self, c: CondId) -> Result<&[TaskId], EngineError> {
        Ok(&self.cond(c)?.helpers)
    }

    /// The waiters of an object in wake order (top waiter first).
    pub fn waiters(
        &self,
        b: Blocker,
    ) -> Result<impl ExactSizeIterator<Item = TaskId> + '_, EngineError> {
        let q = match b {
            Blocker::Mutex(m) => &self.mutex(m)?.queue,
            Blocker::Cond(c) => &self.cond(c)?.queue,
        };
        Ok(q.waiters.iter().map(|w| w.task))
    }

    // ----- mutexes -----

    /// Locks `m` for `t`, or blocks `t` on it (waiters ordered by effective
    /// urgency, FIFO among equals). A cycle (including re-locking a mutex `t`
    /// owns) is refused with [`EngineError::Cycle`].
    ///
    /// Pre: `t` live and not blocked ([`EngineError::AlreadyBlocked`]); the
    /// block closes no cycle and creates no chain longer than
    /// [`MAX_CHAIN_DEPTH`]. Post, `Acquired` (the mutex had no owner): `t`
    /// owns `m`; a ceiling raises `t` at once; waiters left by
    /// [`Engine::release`] donate to `t` (per protocol). Post, `Blocked`: `t`
    /// is a waiter of `m`; with [`Protocol::Inherit`] its urgency flows to
    /// the owner and on down the chain.
    pub fn lock(&mut self, t: TaskId, m: MutexId) -> Result<Outcome<LockResult>, EngineError> {
        self.outcome_of(LockResult::Acquired, |e, out| e.lock_into(t, m, out))
    }

    /// [`Engine::lock`] writing its changes into `out` (cleared first)
    /// instead of returning them: a caller that keeps one buffer for every
    /// operation moves no [`Changes`] around. Same pre/postconditions; on
    /// error `out` is empty and the engine unchanged.
    pub fn lock_into(
        &mut self,
        t: TaskId,
        m: MutexId,
        out: &mut Changes,
    ) -> Result<LockResult, EngineError> {
        out.clear();
        let ts = self.live(t)?;
        let blocked = ts.blocked.is_some();
        let owner = self.mutex(m)?.owner;
        if blocked {
            return Err(EngineError::AlreadyBlocked(t));
        }
        let value = match owner {
            None => {
                self.attach_owner(m, t);
                LockResult::Acquired
            }
            Some(_) => {
                self.check_block(t, Obj::Mutex(m))?;
                self.add_edge(t, Obj::Mutex(m));
                LockResult::Blocked
            }
        };
        self.propagate(out);
        Ok(value)
    }

    /// Unlocks `m` (owned by `t`) and hands it to the top waiter, which is
    /// unblocked and owns it on return (`value`).
    ///
    /// Pre: `t` owns `m` ([`EngineError::NotOwner`]). Post: `t` no longer
    /// inherits through `m` nor keeps its ceiling; if `m` had waiters, the top
    /// one is runnable and owns `m`, and the remaining waiters donate to it
    /// (per protocol); else `m` is free.
    pub fn unlock(
        &mut self,
        t: TaskId,
        m: MutexId,
    ) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.unlock_into(t, m, out))
    }

    /// [`Engine::unlock`] writing its changes into `out` (cleared first);
    /// returns the task the mutex was handed to. On error `out` is empty and
    /// the engine unchanged.
    pub fn unlock_into(
        &mut self,
        t: TaskId,
        m: MutexId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        self.live(t)?;
        if self.mutex(m)?.owner != Some(t) {
            return Err(EngineError::NotOwner { task: t, mutex: m });
        }
        self.detach_owner(m);
        let next = self.mutexes[m.0 as usize].queue.top().map(|w| w.task);
        if let Some(w) = next {
            self.remove_edge(w);
            self.attach_owner(m, w);
        }
        self.propagate(out);
        Ok(next)
    }

    /// Records that `t` acquired `m` where the engine could not see it (a
    /// user-space fast path, or a contended acquisition the kernel completed).
    /// Pre: `m` has no owner in the engine; `t` is runnable or blocked on `m`
    /// (then it is unblocked). Post: `t` owns `m`; remaining waiters donate
    /// to `t` (per protocol).
    ///
    /// Also accepted: `m` already owned by `t` (nothing changes, empty
    /// result), and `t` blocked on *another* object (ownership recorded late
    /// while `t` waits elsewhere: it stays blocked there; refused with
    /// [`EngineError::Cycle`] if a waiter of `m` is downstream of `t`).
    /// Errors: [`EngineError::AlreadyOwned`] if another task owns `m`.
    pub fn acquire(&mut self, t: TaskId, m: MutexId) -> Result<Changes, EngineError> {
        let ts = self.live(t)?;
        let blocked = ts.blocked;
        let ms = self.mutex(m)?;
        match ms.owner {
            Some(o) if o == t => return Ok(Changes::new()),
            Some(o) => return Err(EngineError::AlreadyOwned { mutex: m, owner: o }),
            None => {}
        }
        let has_waiters = !ms.queue.is_empty();
        match blocked {
            Some(Obj::Mutex(x)) if x == m => self.remove_edge(t),
            Some(_) if has_waiters => self.check_target_edge(Obj::Mutex(m), t)?,
            _ => {}
        }
        self.attach_owner(m, t);
        self.changes()
    }

    /// `t` gives `m` up without handing it to a waiter (the kernel chooses
    /// the next owner; it reports back with [`Engine::acquire`]). Pre: `t`
    /// owns `m`. Post: `m` has no owner; its waiters stay blocked on it.
    pub fn release(&mut self, t: TaskId, m: MutexId) -> Result<Changes, EngineError> {
        self.live(t)?;
        if self.mutex(m)?.owner != Some(t) {
            return Err(EngineError::NotOwner { task: t, mutex: m });
        }
        self.detach_owner(m);
        self.changes()
    }

    // ----- condition variables -----

    /// Blocks `t` on `c`: its urgency flows to every helper of `c` (PI-CV).
    /// Releasing the associated mutex is the caller's business.
    ///
    /// Pre: `t` live, not blocked; `t` is not upstream of `c` (waiting on a
    /// condvar one helps, directly or through a chain, is a cycle); no chain
    /// longer than [`MAX_CHAIN_DEPTH`]. Post: `t` is a waiter of `c`; every
    /// helper's `eff` is at least `eff(t)`, transitively.
    pub fn cond_wait(&mut self, t: TaskId, c: CondId) -> Result<Changes, EngineError> {
        self.changes_of(|e, out| e.cond_wait_into(t, c, out))
    }

    /// [`Engine::cond_wait`] writing its changes into `out` (cleared first).
    /// On error `out` is empty and the engine unchanged.
    pub fn cond_wait_into(
        &mut self,
        t: TaskId,
        c: CondId,
        out: &mut Changes,
    ) -> Result<(), EngineError> {
        out.clear();
        let ts = self.live(t)?;
        let blocked = ts.blocked.is_some();
        self.cond(c)?;
        if blocked {
            return Err(EngineError::AlreadyBlocked(t));
        }
        self.check_block(t, Obj::Cond(c))?;
        self.add_edge(t, Obj::Cond(c));
        self.propagate(out);
        Ok(())
    }

    /// `pthread_cond_wait(c, m)`: unlocks `m` (owned by `t`), handing it to
    /// its top waiter as [`Engine::unlock`] does, and blocks `t` on `c`, in
    /// one step. Returns the task `m` was handed to.
    ///
    /// A wait gives its mutex up atomically with starting to wait, and the
    /// engine sees the same order: the cycle check is made on the graph
    /// *after* the release. In the textbook pattern — a helper of `c` blocked
    /// on `m` to signal `c` — the helper becomes `m`'s owner and no cycle
    /// closes, where [`Engine::cond_wait`] followed by [`Engine::unlock`]
    /// would see `t → c → helper → m → t` and refuse.
    ///
    /// Pre: `t` live, not blocked, owner of `m` ([`EngineError::NotOwner`]);
    /// after the release, the block closes no cycle and creates no chain
    /// longer than [`MAX_CHAIN_DEPTH`]. Post: as [`Engine::unlock`] of `m`
    /// (the top waiter, if any, owns `m` and is runnable) then
    /// [`Engine::cond_wait`] of `c`: `t` is a waiter of `c` and owns `m` no
    /// more. Changes: each task once, net of both steps. On error nothing
    /// changes (`m` stays `t`'s).
    pub fn cond_wait_unlock(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
    ) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.cond_wait_unlock_into(t, c, m, out))
    }

    /// [`Engine::cond_wait_unlock`] writing its changes into `out` (cleared
    /// first); returns the task `m` was handed to. On error `out` is empty
    /// and the engine unchanged.
    pub fn cond_wait_unlock_into(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        self.cond_wait_giving_up(t, c, m, true, out)
    }

    /// `pthread_cond_wait(c, m)` for a mutex the kernel hands over (a PI
    /// futex): releases `m` as [`Engine::release`] does — its waiters stay
    /// blocked on it, ownerless until [`Engine::acquire`] — and blocks `t`
    /// on `c`, in one step, checked on the graph after the release (see
    /// [`Engine::cond_wait_unlock`]).
    ///
    /// Pre: `t` live, not blocked, owner of `m`; the block closes no cycle
    /// once `m` is released. Post: `m` has no owner; `t` is a waiter of `c`.
    /// On error nothing changes.
    pub fn cond_wait_release(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
    ) -> Result<Changes, EngineError> {
        self.changes_of(|e, out| e.cond_wait_giving_up(t, c, m, false, out).map(|_| ()))
    }

    /// [`Engine::cond_wait_unlock`] (`handoff`) and
    /// [`Engine::cond_wait_release`]: checks, then the deltas remove-edge
    /// `m → t`, (hand-off) remove-edge `w → m` and add-edge `m → w`, and
    /// add-edge `t → c`, then one chain walk.
    fn cond_wait_giving_up(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
        handoff: bool,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        let blocked = self.live(t)?.blocked.is_some();
        self.cond(c)?;
        let ms = self.mutex(m)?;
        if blocked {
            return Err(EngineError::AlreadyBlocked(t));
        }
        if ms.owner != Some(t) {
            return Err(EngineError::NotOwner { task: t, mutex: m });
        }
        let next = if handoff {
            ms.queue.top().map(|w| w.task)
        } else {
            None
        };
        let cut = probe::Cut {
            mutex: m,
            unblocked: next,
        };
        self.check_block_releasing(t, Obj::Cond(c), cut)?;
        self.detach_owner(m);
        if let Some(w) = next {
            self.remove_edge(w);
            self.attach_owner(m, w);
        }
        self.add_edge(t, Obj::Cond(c));
        self.propagate(out);
        Ok(next)
    }

    /// Wakes the top waiter of `c` (most urgent, FIFO among equals), if any.
    ///
    /// Post: the woken task is runnable; its donation to the helpers is
    /// revoked (they fall back to the next waiter's contribution, or their
    /// own). A signal without waiters is lost (`value == None`).
    pub fn cond_signal(&mut self, c: CondId) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.cond_signal_into(c, out))
    }

    /// [`Engine::cond_signal`] writing its changes into `out` (cleared
    /// first); returns the woken task. On error `out` is empty.
    pub fn cond_signal_into(
        &mut self,
        c: CondId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        // A signal without waiters is lost: nothing changes, no walk.
        let Some(w) = self.cond(c)?.queue.top().map(|w| w.task) else {
            return Ok(None);
        };
        self.remove_edge(w);
        self.propagate(out);
        Ok(Some(w))
    }

    /// Wakes every waiter of `c`, in wake order.
    ///
    /// Post: `c` has no waiters; its helpers inherit nothing through it.
    pub fn cond_broadcast(&mut self, c: CondId) -> Result<Outcome<Vec<TaskId>>, EngineError> {
        if self.cond(c)?.queue.is_empty() {
            // Lost, as a signal without waiters: nothing changes.
            return Ok(Outcome {
                value: Vec::new(),
                changes: Changes::new(),
            });
        }
        let woken = self.remove_all_edges(Obj::Cond(c));
        self.outcome(woken)
    }

    /// Takes `t` off whatever it is blocked on (timeout, abort), revoking its
    /// donation.
    ///
    /// Pre: `t` is blocked ([`EngineError::NotBlocked`]). Post: `t` is
    /// runnable and owns nothing more than before; the targets of its former
    /// object lose its contribution.
    pub fn cancel_wait(&mut self, t: TaskId) -> Result<Changes, EngineError> {
        if self.live(t)?.blocked.is_none() {
            return Err(EngineError::NotBlocked(t));
        }
        self.remove_edge(t);
        self.changes()
    }

    /// Declares `t` a helper of `c` (`pthread_cond_helpers_add`).
    ///
    /// Pre: `t` live and not already a helper ([`EngineError::HelperExists`]);
    /// no waiter of `c` is downstream of `t` ([`EngineError::Cycle`], from `t`
    /// back to `t`); no chain longer than [`MAX_CHAIN_DEPTH`]. Post: `t` is
    /// the last helper of `c`; if `c` has waiters, `t` inherits the top
    /// contribution at once (and passes it on if blocked).
    pub fn helper_add(&mut self, c: CondId, t: TaskId) -> Result<Changes, EngineError> {
        let cs = self.cond(c)?;
        let exists = cs.helpers.contains(&t);
        let has_waiters = !cs.queue.is_empty();
        self.live(t)?;
        if exists {
            return Err(EngineError::HelperExists { cond: c, task: t });
        }
        if has_waiters {
            self.check_target_edge(Obj::Cond(c), t)?;
        }
        self.attach_helper(c, t);
        self.changes()
    }

    /// Removes `t` from the helpers of `c` (`pthread_cond_helpers_del`).
    ///
    /// Pre: `t` live and a helper of `c` ([`EngineError::NotHelper`]). Post:
    /// what `t` inherited through `c` is revoked at once, transitively.
    pub fn helper_del(&mut self, c: CondId, t: TaskId) -> Result<Changes, EngineError> {
        let is_helper = self.cond(c)?.helpers.contains(&t);
        self.live(t)?;
        if !is_helper {
            return Err(EngineError::NotHelper { cond: c, task: t });
        }
        self.detach_helper(c, t);
        self.changes()
    }

    /// Recomputes every effective urgency from scratch and checks the
    /// structure; compares with the incrementally maintained state.
    ///
    /// Checked: every blocked task is in its object's waiters exactly once and
    /// no other task is, and the engine's count of blocked tasks agrees; waiter entries carry the task's effective value and
    /// are in (urgency desc, enqueue asc) order with unique sequence numbers;
    /// owner and helper relations agree on both sides; `pi_waiters` and
    /// ceiling floors match what the task owns and helps; the wait-for graph
    /// is acyclic with every chain at most [`MAX_CHAIN_DEPTH`]; and every
    /// effective value (urgency and donor) equals a from-scratch evaluation
    /// in topological order that shares no code with the chain walk.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        invariants::check(self)
    }

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
