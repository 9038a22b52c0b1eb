//! heir-rt (`libheir`): heir's inheritance engine on real Linux threads.
//!
//! No Linux library lets a thread waiting on a condition variable lend its
//! priority to the thread that will signal it; heir-rt does it in user space
//! on a stock kernel (PI-CV, and the library approach of the GPM paper's §4.2),
//! driven by the same [`heir_core::Engine`] as the simulator.
//!
//! - [`thread`]: the registry — a thread registers with its base attributes
//!   (`sched_getattr`, saved exactly) and unregisters on exit; effective urgencies
//!   are applied with `sched_setattr` when the engine says they changed.
//! - [`PiMutex`]: the kernel's PI futex (`FUTEX_LOCK_PI2`/`FUTEX_UNLOCK_PI`,
//!   TID fast path, as glibc's `PTHREAD_PRIO_INHERIT`); contention is also
//!   recorded in the engine so boosts continue past the owner into
//!   condition-variable helpers (the PI-CV paper's Fig. 7).
//! - [`PiCondvar`]: condition variable with helpers (`add_helper` /
//!   `remove_helper`):
//!   waiters are woken in priority order and lend their urgency to the
//!   helpers while they wait.
//! - [`CeilingMutex`]: immediate priority ceiling (IPCP).
//! - [`PrioQueue`] (the PI-CV paper's Fig. 5) and [`rpc::Endpoint`].
//! - [`donate::Endpoint`]: RPC where the caller's priority or deadline goes
//!   to the thread serving its request, in the kernel (the NOVA paper's donation
//!   and helping through a PI futex per request).
//! - [`gang`]: gang priority management (the GPM paper's L-GPM) through the
//!   engine's gang object, and a barrier on it.
//! - [`lock`]: the one [`lock::Mutex`] and guard over a raw lock, behind
//!   [`PiMutex`], [`CeilingMutex`] and the engine lock.
//! - [`capi`]: the C API (`heir.h`).
//! - [`trace`]: the hook a tracer sets to receive what heir-rt does
//!   (boosts, `sched_setattr` calls, condition-variable events).
//!
//! The locking rule and what is saved and restored are in [`rt`]'s docs and
//! `docs/RUNTIME.md`.
//!
//! # Names
//!
//! The Rust names follow heir.h's: membership is one verb pair,
//! `add_ROLE` / `remove_ROLE` ([`PiCondvar::add_helper`],
//! [`PrioQueue::add_producer`], [`rpc::Endpoint::add_server`],
//! [`gang::Gang::add_member`], …), taking the thread's tid, except where
//! only the calling thread can take the role (a donating server,
//! [`donate::Endpoint::add_server`]); every gang call names its gang;
//! "boost" means only a thread running above its base priority because
//! another lends it — how a condition variable's waiters lend is its
//! [`Lend`]. The previous release's names stay one release as
//! `#[deprecated]` aliases (docs/RUNTIME.md lists them).
//!
//! This is the library a C or Rust program links. Running a scenario file
//! on real threads (`heir run`: the file's tasks, the busy loops and their
//! calibration, the CPU survey, the kernel's trace) is the `heir-runner`
//! crate's job, on top of it: libheir depends on neither the scenario
//! reader nor the report.

#![deny(
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    unsafe_op_in_unsafe_fn
)]

pub mod bwi;
pub mod capi;
pub mod caps;
pub mod ceiling;
pub mod condvar;
pub mod deadline;
pub mod donate;
pub mod gang;
pub mod lazy;
pub mod lock;
pub mod mutex;
pub mod queue;
pub mod robust;
pub mod rpc;
pub mod rt;
pub mod sched;
pub mod sys;
pub mod thread;
pub mod trace;

pub use ceiling::{CeilingMutex, CeilingMutexGuard, RawEngineMutex};
#[allow(deprecated)]
pub use condvar::Boost;
pub use condvar::{Lend, PiCondvar, WaitResult};
pub use heir_core::{Node, Urgency};
pub use mutex::{PiMutex, PiMutexGuard, RawPiMutex};
pub use queue::PrioQueue;

/// Errors of heir-rt operations. Each maps to an errno for the C API
/// ([`Error::errno`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A system call failed.
    #[error("{op} failed: errno {errno}")]
    Os {
        /// The call.
        op: &'static str,
        /// Its errno.
        errno: i32,
    },
    /// The tid is not a live thread of this process.
    #[error("tid {0} is not a thread of this process")]
    NoSuchThread(i32),
    /// The operation would deadlock. `cycle` is the engine's wait-for cycle
    /// (empty when the kernel found it, or for re-locking an owned mutex).
    #[error("deadlock: the operation would close a dependency cycle")]
    Deadlock {
        /// The cycle, first node repeated last.
        cycle: Vec<heir_core::Node>,
    },
    /// The deadline passed.
    #[error("timed out")]
    TimedOut,
    /// The caller does not own the mutex.
    #[error("the calling thread does not own the mutex")]
    NotOwner,
    /// The mutex is held (or waited for): it cannot be destroyed, or (try
    /// lock) taken now.
    #[error("the mutex is busy")]
    Busy,
    /// The mutex's previous owner exited holding it. The caller holds it
    /// now and must make it consistent before unlocking it
    /// (`EOWNERDEAD`).
    #[error("the owner of the mutex died holding it; the caller holds it now")]
    OwnerDead,
    /// The mutex was unlocked after its owner died without being made
    /// consistent: it cannot be locked again (`ENOTRECOVERABLE`).
    #[error("the mutex is not recoverable")]
    NotRecoverable,
    /// The object was destroyed (or never initialised) — C API.
    #[error("invalid or destroyed object")]
    Invalid,
    /// The engine refused the operation.
    #[error("engine: {0}")]
    Engine(heir_core::EngineError),
    /// A consistency check failed.
    #[error("invariant violated: {0}")]
    Invariant(String),
    /// A donating endpoint has no server ([`donate::Endpoint`]).
    #[error("the endpoint has no server")]
    NoServer,
    /// The thread is not a server of the endpoint, or (the caller) has no
    /// received request to reply to.
    #[error("the calling thread serves no request of the endpoint")]
    NotServing,
    /// The kernel refused a donating call's wait because it would close a
    /// cycle of threads waiting for each other (`EDEADLK`). `tids` is the
    /// cycle as heir recorded it, from the caller back to the caller
    /// (empty if it runs through something heir does not record, such as
    /// a PI mutex); `livelock` when one of its edges is helping (the NOVA paper's
    /// Fig. 7: servers that would help each other forever).
    #[error("{}: calls form a cycle (tids {tids:?})", if *livelock { "livelock" } else { "deadlock" })]
    CallCycle {
        /// The threads of the cycle, first repeated last.
        tids: Vec<i32>,
        /// True if an edge of the cycle is helping, not donation.
        livelock: bool,
    },
    /// [`gang::Gang::run`] before every member counted in the previous run
    /// notified (`EBUSY`): nothing was changed.
    #[error("the gang's previous run is in progress ({pending} members have not notified)")]
    GangRunning {
        /// Members of the previous run that have not notified.
        pending: u32,
    },
    /// The thread is a member of a gang already (at most one), or the
    /// control word is another member's (`EEXIST`).
    #[error("tid {tid} is a member of gang {gang} already (or its control word is taken)")]
    AlreadyMember {
        /// The thread.
        tid: i32,
        /// The gang it is in.
        gang: u32,
    },
    /// The thread is a member of no gang (`ENOENT`).
    #[error("tid {0} is a member of no gang")]
    NotMember(i32),
}

impl Error {
    /// The errno the C API returns for this error.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Os { errno, .. } => *errno,
            Error::NoSuchThread(_) => libc::ESRCH,
            Error::Deadlock { .. } => libc::EDEADLK,
            Error::TimedOut => libc::ETIMEDOUT,
            Error::NotOwner => libc::EPERM,
            Error::Busy => libc::EBUSY,
            Error::OwnerDead => libc::EOWNERDEAD,
            Error::NotRecoverable => libc::ENOTRECOVERABLE,
            Error::Invalid => libc::EINVAL,
            Error::Engine(heir_core::EngineError::Cycle { .. }) => libc::EDEADLK,
            Error::Engine(heir_core::EngineError::HelperExists { .. }) => libc::EEXIST,
            Error::Engine(heir_core::EngineError::NotHelper { .. }) => libc::ENOENT,
            Error::Engine(heir_core::EngineError::NotOwner { .. }) => libc::EPERM,
            Error::Engine(heir_core::EngineError::ChainTooLong { .. }) => libc::ELOOP,
            Error::Engine(_) => libc::EINVAL,
            Error::Invariant(_) => libc::EFAULT,
            Error::NoServer => libc::ESRCH,
            Error::NotServing => libc::EPERM,
            Error::CallCycle { .. } => libc::EDEADLK,
            Error::GangRunning { .. } => libc::EBUSY,
            Error::AlreadyMember { .. } => libc::EEXIST,
            Error::NotMember(_) => libc::ENOENT,
        }
    }
}

impl From<heir_core::EngineError> for Error {
    fn from(e: heir_core::EngineError) -> Self {
        match e {
            heir_core::EngineError::Cycle { cycle } => Error::Deadlock { cycle },
            e => Error::Engine(e),
        }
    }
}
