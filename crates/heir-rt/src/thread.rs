//! The thread registry: register, unregister, inspect.
//!
//! A thread registers the first time it uses heir-rt (or explicitly with
//! [`register`]); another thread can name it by tid (e.g. as a helper) before
//! that, which registers it on its behalf. Registering saves the thread's
//! attributes exactly as `sched_getattr` reports them (the *base*); heir-rt
//! only ever writes attributes derived from the base and restores the base
//! itself when the boost ends. A thread that used heir-rt is unregistered
//! when it exits (a thread-local destructor): what it owned in the engine is
//! released, its wait cancelled, and it is dropped from every helper set, so
//! nobody keeps an urgency it lent. [`unregister`] does the same and
//! restores the caller's base attributes.
//!
//! This module is the public face of the registry, which lives with the
//! engine lock in [`crate::rt`]: it only calls into `rt`, never the other
//! way.

use heir_core::Urgency;

use crate::rt;
pub use crate::rt::{ApplyStats, ThreadInfo};
use crate::sys::{self, SchedAttr};
use crate::Error;

/// The calling thread's kernel tid.
pub fn current_tid() -> i32 {
    rt::tid()
}

/// Registers the calling thread with its current attributes; returns its
/// tid. Idempotent (C: `heir_thread_register`).
pub fn register() -> Result<i32, Error> {
    let mut st = rt::state();
    st.current()?;
    Ok(rt::tid())
}

/// The previous release's name of [`register`] (`join` means something
/// else to `std::thread` and pthreads).
#[deprecated(note = "renamed `register`")]
pub fn join() -> Result<i32, Error> {
    register()
}

/// Sets the calling thread's attributes (`sched_setattr`) and makes them its
/// base, registering it if needed. Fails with `EPERM` without the privilege.
pub fn set_sched(attr: &SchedAttr) -> Result<(), Error> {
    let me = rt::tid();
    let mut st = rt::state();
    let t = st.current()?;
    sys::sched_setattr(me, attr).map_err(|errno| Error::Os {
        op: "sched_setattr",
        errno,
    })?;
    let base = sys::sched_getattr(me).map_err(|errno| Error::Os {
        op: "sched_getattr",
        errno,
    })?;
    st.set_base(t, base)
}

/// Unregisters the calling thread: releases what it owns in the engine,
/// drops it from every helper set (revoking what it inherited through them)
/// and restores its base attributes (C: `heir_thread_unregister`).
pub fn unregister() {
    let me = rt::tid();
    let mut st = rt::state();
    if let Some(t) = st.lookup_tid(me) {
        st.restore_base(t);
        st.purge(t);
    }
}

/// The previous release's name of [`unregister`].
#[deprecated(note = "renamed `unregister`")]
pub fn leave() {
    unregister()
}

/// What the registry knows about `tid`, if registered.
pub fn info(tid: i32) -> Option<ThreadInfo> {
    let st = rt::state();
    let t = st.lookup_tid(tid)?;
    st.info(t)
}

/// The engine's effective urgency of the calling thread (registering it if
/// needed).
pub fn current_urgency() -> Result<Urgency, Error> {
    let mut st = rt::state();
    let t = st.current()?;
    Ok(st.engine.effective(t)?.urgency)
}

/// Number of registered threads.
pub fn registered() -> usize {
    rt::state().registered()
}

/// Checks the engine's invariants and that every registered thread's kernel
/// attributes are exactly what heir-rt applied.
pub fn check_invariants() -> Result<(), Error> {
    rt::state().check()
}

/// The engine's arena sizes: (task slots, object slots). A slot is
/// reused once what held it is gone (a thread's task when it leaves, a
/// mutex's, condvar's or gang's object when it is dropped), so these stay
/// at the most threads and objects ever alive at once.
pub fn engine_slots() -> (usize, usize) {
    let st = rt::state();
    (st.engine.task_slots(), st.engine.object_slots())
}

/// Counters of what heir-rt applied to the kernel and of what it could
/// not (failed `sched_setattr` calls, boosts it cannot express, vanished
/// threads, engine errors during clean-up), with the last error of each
/// kind: since the process started.
pub fn apply_stats() -> ApplyStats {
    rt::state().stats.clone()
}

/// Pins the calling thread to `cpus`.
pub fn pin_current(cpus: &[u32]) -> Result<(), Error> {
    sys::set_affinity(0, cpus).map_err(|errno| Error::Os {
        op: "sched_setaffinity",
        errno,
    })
}

/// The engine task of a registered tid.
pub fn task_of(tid: i32) -> Option<heir_core::TaskId> {
    rt::state().lookup_tid(tid)
}

/// For a `pthread_atfork` child handler (heir exec's preload library):
/// the calling thread — the child's only one — refreshes its cached tid.
/// The rest of heir's state is the parent's: the records of the parent's
/// threads stay (a child that only execs or exits never reaches them), so
/// a child that goes on using heir objects the parent's threads held is
/// outside what heir supports (as POSIX allows only async-signal-safe
/// calls there).
pub fn after_fork_in_child() {
    crate::rt::refresh_tid();
}
