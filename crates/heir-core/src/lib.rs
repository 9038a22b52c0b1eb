//! heir-core: the inheritance engine.
//!
//! (API skeleton: bodies are filled in by the engine implementation. The
//! signatures and types here are the contract other crates code against.)
#![forbid(unsafe_code)]

mod urgency;

pub use urgency::{ServerId, Urgency};

use smallvec::SmallVec;

/// The longest dependency chain the engine walks (Linux's `max_lock_depth`).
pub const MAX_CHAIN_DEPTH: usize = 1024;

/// A task (thread) in the engine's arena.
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
    pub urgency: Urgency,
    /// The task whose base urgency this is: the task itself when not boosted,
    /// else the donor at the root of the boosting chain (for a ceiling, the
    /// task itself).
    pub donor: TaskId,
}

/// One task whose effective urgency an operation changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub task: TaskId,
    pub old: Effective,
    pub new: Effective,
}

/// The tasks whose effective urgency changed, each at most once, in the order
/// the propagation reached them.
pub type Changes = SmallVec<[Change; 4]>;

/// What a task is blocked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocker {
    Mutex(MutexId),
    Cond(CondId),
}

/// A node of the wait-for graph, used to name a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Task(TaskId),
    Mutex(MutexId),
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
    #[error("unknown task {0:?}")]
    UnknownTask(TaskId),
    #[error("unknown mutex {0:?}")]
    UnknownMutex(MutexId),
    #[error("unknown condition variable {0:?}")]
    UnknownCond(CondId),
    #[error("task {0:?} is already blocked")]
    AlreadyBlocked(TaskId),
    #[error("task {0:?} is not blocked")]
    NotBlocked(TaskId),
    #[error("task {task:?} does not own mutex {mutex:?}")]
    NotOwner { task: TaskId, mutex: MutexId },
    #[error("task {task:?} still owns or waits on something")]
    Busy { task: TaskId },
    #[error("task {task:?} is already a helper of {cond:?}")]
    HelperExists { cond: CondId, task: TaskId },
    #[error("task {task:?} is not a helper of {cond:?}")]
    NotHelper { cond: CondId, task: TaskId },
    /// The operation would close a cycle in the wait-for graph. `cycle` starts
    /// and ends at the same node.
    #[error("deadlock: the operation would close a dependency cycle")]
    Cycle { cycle: Vec<Node> },
    #[error("dependency chain longer than {limit}")]
    ChainTooLong { limit: usize },
}

/// A violated invariant, found by [`Engine::check_invariants`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invariant violated: {0}")]
pub struct InvariantError(pub String);

/// An operation's value together with the changes it caused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<T> {
    pub value: T,
    pub changes: Changes,
}

/// The engine. See the crate docs.
#[derive(Clone, Debug, Default)]
pub struct Engine {}

// CONTRACT (skeleton): every method below is part of the API other crates use.
#[allow(unused_variables)]
impl Engine {
    pub fn new() -> Engine {
        todo!()
    }
    /// Adds a task with a base urgency; it is runnable, owns nothing.
    pub fn add_task(&mut self, base: Urgency) -> TaskId {
        todo!()
    }
    /// Removes a task: it must be neither blocked nor owning a mutex
    /// ([`EngineError::Busy`]); it is dropped from every helper set (revoking
    /// what it inherited through them). Returns the changes of other tasks.
    pub fn remove_task(&mut self, t: TaskId) -> Result<Changes, EngineError> {
        todo!()
    }
    pub fn set_base(&mut self, t: TaskId, base: Urgency) -> Result<Changes, EngineError> {
        todo!()
    }
    pub fn base(&self, t: TaskId) -> Result<Urgency, EngineError> {
        todo!()
    }
    pub fn effective(&self, t: TaskId) -> Result<Effective, EngineError> {
        todo!()
    }
    pub fn blocked_on(&self, t: TaskId) -> Result<Option<Blocker>, EngineError> {
        todo!()
    }
    pub fn add_mutex(&mut self, protocol: Protocol) -> MutexId {
        todo!()
    }
    pub fn owner(&self, m: MutexId) -> Result<Option<TaskId>, EngineError> {
        todo!()
    }
    pub fn add_cond(&mut self) -> CondId {
        todo!()
    }
    pub fn helpers(&self, c: CondId) -> Result<&[TaskId], EngineError> {
        todo!()
    }
    /// Locks `m` for `t`, or blocks `t` on it (waiters ordered by effective
    /// urgency, FIFO among equals). A cycle (including re-locking a mutex `t`
    /// owns) is refused with [`EngineError::Cycle`].
    pub fn lock(&mut self, t: TaskId, m: MutexId) -> Result<Outcome<LockResult>, EngineError> {
        todo!()
    }
    /// Unlocks `m` (owned by `t`) and hands it to the top waiter, which is
    /// unblocked and owns it on return (`value`).
    pub fn unlock(
        &mut self,
        t: TaskId,
        m: MutexId,
    ) -> Result<Outcome<Option<TaskId>>, EngineError> {
        todo!()
    }
    /// Records that `t` acquired `m` where the engine could not see it (a
    /// user-space fast path, or a contended acquisition the kernel completed).
    /// Pre: `m` has no owner in the engine; `t` is runnable or blocked on `m`
    /// (then it is unblocked). Post: `t` owns `m`; remaining waiters donate
    /// to `t` (per protocol).
    pub fn acquire(&mut self, t: TaskId, m: MutexId) -> Result<Changes, EngineError> { todo!() }
    /// `t` gives `m` up without handing it to a waiter (the kernel chooses
    /// the next owner; it reports back with [`Engine::acquire`]). Pre: `t`
    /// owns `m`. Post: `m` has no owner; its waiters stay blocked on it.
    pub fn release(&mut self, t: TaskId, m: MutexId) -> Result<Changes, EngineError> { todo!() }
    /// Blocks `t` on `c`: its urgency flows to every helper of `c` (PI-CV).
    /// Releasing the associated mutex is the caller's business.
    pub fn cond_wait(&mut self, t: TaskId, c: CondId) -> Result<Changes, EngineError> {
        todo!()
    }
    /// Wakes the top waiter of `c` (most urgent, FIFO among equals), if any.
    pub fn cond_signal(&mut self, c: CondId) -> Result<Outcome<Option<TaskId>>, EngineError> {
        todo!()
    }
    /// Wakes every waiter of `c`, in wake order.
    pub fn cond_broadcast(&mut self, c: CondId) -> Result<Outcome<Vec<TaskId>>, EngineError> {
        todo!()
    }
    /// Takes `t` off whatever it is blocked on (timeout, abort), revoking its
    /// donation.
    pub fn cancel_wait(&mut self, t: TaskId) -> Result<Changes, EngineError> {
        todo!()
    }
    pub fn helper_add(&mut self, c: CondId, t: TaskId) -> Result<Changes, EngineError> {
        todo!()
    }
    pub fn helper_del(&mut self, c: CondId, t: TaskId) -> Result<Changes, EngineError> {
        todo!()
    }
    /// Recomputes every effective urgency from scratch and checks the
    /// structure; compares with the incrementally maintained state.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        todo!()
    }
}
