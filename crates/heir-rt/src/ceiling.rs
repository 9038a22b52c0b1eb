//! [`CeilingMutex`]: immediate priority ceiling (IPCP), and
//! [`RawEngineMutex`], a hand-off mutex whose queue and protocol live in the
//! engine.
//!
//! `lock` raises the caller to the ceiling at once (before it enters the
//! critical section), whether or not anybody contends; `unlock` hands the
//! mutex to the most urgent waiter and restores the caller. Nested ceilings
//! compose as glibc's `PTHREAD_PRIO_PROTECT` priority map does: the engine
//! keeps the maximum over every ceiling mutex the thread holds, so unlocking
//! an inner mutex returns to the outer ceiling, not to the base.
//!
//! Waiters sleep on their per-thread futex word; ownership is handed over
//! under the engine lock (no barging), and the wake happens after it is
//! dropped.
//!
//! **Robust**, as a [`crate::RawPiMutex`] (and `PTHREAD_MUTEX_ROBUST`): a
//! thread that exits (or leaves heir) holding one does not hand what it
//! protects on silently. Its clean-up ([`crate::rt`]'s purge) marks the
//! mutex inconsistent and hands it to the top waiter; that waiter, or the
//! next locker, gets [`Error::OwnerDead`] *holding* it (at the ceiling),
//! repairs the data and calls [`RawEngineMutex::make_consistent`].
//! Unlocked without that, the mutex is not recoverable: every later lock,
//! and every waiter it is handed to, gets [`Error::NotRecoverable`].

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use heir_core::{LockResult, MutexId, Protocol, TaskId, Urgency};

use crate::lock::{Acquired, Mutex, MutexGuard, RawLock};
use crate::rt::{self, State, ThreadShared, PARKED, UNPARKED};
use crate::sys::{self, FutexWait};
use crate::Error;

/// A mutex managed entirely by the engine (protocol `None`, `Inherit` or
/// `Ceiling`), with hand-off to the top waiter.
#[derive(Debug)]
pub struct RawEngineMutex {
    id: MutexId,
    protocol: Protocol,
    /// [`CONSISTENT`], [`INCONSISTENT`] or [`NOT_RECOVERABLE`]; shared
    /// with the engine state, whose purge of a dead owner marks it.
    robust: Arc<AtomicU32>,
}

/// Robustness state: usable.
pub(crate) const CONSISTENT: u32 = 0;
/// Robustness state: its owner went holding it; its next owner must make
/// it consistent.
pub(crate) const INCONSISTENT: u32 = 1;
/// Robustness state: unlocked while inconsistent; unusable.
pub(crate) const NOT_RECOVERABLE: u32 = 2;

impl RawEngineMutex {
    /// A new unlocked mutex with `protocol`.
    pub fn new(protocol: Protocol) -> Self {
        let robust = Arc::new(AtomicU32::new(CONSISTENT));
        let mut st = rt::state();
        let id = st.new_mutex(protocol);
        st.engine_robust.insert(id, robust.clone());
        RawEngineMutex {
            id,
            protocol,
            robust,
        }
    }

    /// The engine's id.
    pub fn id(&self) -> MutexId {
        self.id
    }

    /// The protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Locks, blocking as long as needed. [`Error::OwnerDead`]: the
    /// previous owner went holding it, and the caller holds it now (see
    /// the module docs); [`Error::NotRecoverable`]: it is unusable.
    pub fn lock(&self) -> Result<(), Error> {
        self.lock_until(None)
    }

    /// Locks, giving up at the absolute `CLOCK_MONOTONIC` deadline; owner
    /// death as [`RawEngineMutex::lock`].
    pub fn lock_until(&self, deadline_ns: Option<u64>) -> Result<(), Error> {
        if self.is_not_recoverable() {
            return Err(Error::NotRecoverable);
        }
        let me_tid = rt::tid();
        let shared = {
            let mut st = rt::state();
            let me = st.current()?;
            let o = st.engine.lock(me, self.id)?;
            st.apply(&o.changes);
            if o.value == LockResult::Acquired {
                drop(st);
                return self.acquired();
            }
            let sh = st.shared(me).ok_or(Error::NoSuchThread(me_tid))?;
            sh.wake.store(PARKED, Ordering::Relaxed);
            sh
        };
        loop {
            if shared.wake.load(Ordering::Acquire) == UNPARKED {
                return self.acquired();
            }
            if sys::futex_wait(&shared.wake, PARKED, deadline_ns) == FutexWait::TimedOut {
                let mut st = rt::state();
                if shared.wake.load(Ordering::Acquire) == UNPARKED {
                    drop(st);
                    return self.acquired();
                }
                if let Some(me) = st.lookup_tid(me_tid) {
                    let ch = st.engine.cancel_wait(me)?;
                    st.apply(&ch);
                }
                shared.wake.store(UNPARKED, Ordering::Relaxed);
                return Err(Error::TimedOut);
            }
        }
    }

    /// Locks if no thread holds it, without blocking: [`Error::Busy`] if
    /// one does (the caller included); owner death as
    /// [`RawEngineMutex::lock`]. The test and the lock are one engine
    /// operation under the engine lock, so no thread takes it in between.
    pub fn try_lock(&self) -> Result<(), Error> {
        if self.is_not_recoverable() {
            return Err(Error::NotRecoverable);
        }
        let mut st = rt::state();
        let me = st.current()?;
        // With hand-off to the top waiter, a mutex with waiters always has
        // an owner: no owner means no thread is queued ahead of the caller.
        if st.engine.owner(self.id)?.is_some() {
            return Err(Error::Busy);
        }
        let o = st.engine.lock(me, self.id)?;
        st.apply(&o.changes);
        drop(st);
        debug_assert_eq!(o.value, LockResult::Acquired);
        self.acquired()
    }

    /// The caller holds the mutex now: reports its robustness state.
    fn acquired(&self) -> Result<(), Error> {
        match self.robust.load(Ordering::Acquire) {
            INCONSISTENT => Err(Error::OwnerDead),
            NOT_RECOVERABLE => {
                // Made unusable while this thread waited: passed on to the
                // next waiter, which learns the same.
                let _ = self.unlock();
                Err(Error::NotRecoverable)
            }
            _ => Ok(()),
        }
    }

    /// Marks a mutex whose owner died consistent again: the caller (its
    /// owner, after [`Error::OwnerDead`]) has repaired what it protects.
    /// [`Error::NotOwner`] if the caller does not hold it,
    /// [`Error::Invalid`] if it is not inconsistent.
    pub fn make_consistent(&self) -> Result<(), Error> {
        if !self.is_owned_by_current() {
            return Err(Error::NotOwner);
        }
        self.robust
            .compare_exchange(
                INCONSISTENT,
                CONSISTENT,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .map(|_| ())
            .map_err(|_| Error::Invalid)
    }

    /// True if it is unusable: unlocked while inconsistent.
    pub fn is_not_recoverable(&self) -> bool {
        self.robust.load(Ordering::Acquire) == NOT_RECOVERABLE
    }

    /// Unlocks and hands the mutex to the most urgent waiter. Unlocking it
    /// while inconsistent (after [`Error::OwnerDead`], without
    /// [`RawEngineMutex::make_consistent`]) makes it not recoverable.
    pub fn unlock(&self) -> Result<(), Error> {
        let me_tid = rt::tid();
        let (next, deferred) = {
            let mut st = rt::state();
            let me = st.lookup_tid(me_tid).ok_or(Error::NotOwner)?;
            if st.engine.owner(self.id)? == Some(me) {
                let _ = self.robust.compare_exchange(
                    INCONSISTENT,
                    NOT_RECOVERABLE,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            let (sh, d) = self.unlock_inner(&mut st, me, true)?;
            (sh, if d { Some(me) } else { None })
        };
        if let Some(sh) = next {
            sys::futex_wake(&sh.wake, 1);
        }
        if let Some(me) = deferred {
            rt::state().sync(me);
        }
        Ok(())
    }

    fn unlock_inner(
        &self,
        st: &mut State,
        me: TaskId,
        defer: bool,
    ) -> Result<(Option<Arc<ThreadShared>>, bool), Error> {
        if st.engine.owner(self.id)? != Some(me) {
            return Err(Error::NotOwner);
        }
        let o = st.engine.unlock(me, self.id)?;
        let sh = o.value.and_then(|t| st.shared(t));
        if let Some(sh) = &sh {
            sh.wake.store(UNPARKED, Ordering::Release);
        }
        let d = st.apply_except(&o.changes, defer.then_some(me));
        Ok((sh, d))
    }

    /// True if the calling thread owns it.
    pub fn is_owned_by_current(&self) -> bool {
        let st = rt::state();
        match st.lookup_tid(rt::tid()) {
            Some(me) => st.engine.owner(self.id).ok().flatten() == Some(me),
            None => false,
        }
    }
}

impl RawEngineMutex {
    /// True if a thread holds it or waits for it.
    pub fn is_busy(&self) -> bool {
        let st = rt::state();
        st.engine.owner(self.id).ok().flatten().is_some() || st.mutex_waited(self.id)
    }

    /// Destroys the mutex; [`Error::Busy`] (and the mutex back, nothing
    /// changed) while a thread holds or waits for it — a ceiling mutex's
    /// holder keeps running at the ceiling until it unlocks.
    pub fn destroy(self) -> Result<(), (Self, Error)> {
        if self.is_busy() {
            return Err((self, Error::Busy));
        }
        drop(self);
        Ok(())
    }
}

impl Drop for RawEngineMutex {
    /// A mutex dropped while held (only possible once no thread borrows
    /// it) is released in the engine first: its holder does not stay at
    /// the ceiling for good.
    fn drop(&mut self) {
        let mut st = rt::state();
        if let Ok(Some(owner)) = st.engine.owner(self.id) {
            match st.engine.release(owner, self.id) {
                Ok(ch) => st.apply(&ch),
                Err(e) => st.engine_failed(e),
            }
        }
        st.engine_robust.remove(&self.id);
        st.free_mutex(self.id);
    }
}

// SAFETY: the engine records one owner per mutex and changes it only under
// the engine lock: `lock_until` returns `Ok` or `OwnerDead` (mapped to
// `Acquired::OwnerDied`) only once the engine made the caller the owner (at
// once, or by a hand-off in `unlock` or a dead owner's purge before the
// caller's wake) — its other errors leave it not holding the mutex
// (`NotRecoverable` after handing it on) — and `unlock` — `release` —
// refuses a caller the engine does not record as owner (`NotOwner`) and
// hands ownership to exactly one waiter.
unsafe impl RawLock for RawEngineMutex {
    fn acquire(&self, deadline_ns: Option<u64>) -> Result<Acquired, Error> {
        match self.lock_until(deadline_ns) {
            Ok(()) => Ok(Acquired::Clean),
            // Held, from an owner that went holding it.
            Err(Error::OwnerDead) => Ok(Acquired::OwnerDied),
            Err(e) => Err(e),
        }
    }

    fn release(&self) {
        // A guard's drop has no caller to report to; a guard's thread is
        // the owner, and the engine's refusals leave the state unchanged.
        let _ = self.unlock();
    }
}

/// An immediate-priority-ceiling mutex protecting a `T`: [`Mutex`] over a
/// [`RawEngineMutex`] with [`Protocol::Ceiling`].
pub type CeilingMutex<T> = Mutex<RawEngineMutex, T>;

/// Exclusive access to a [`CeilingMutex`]'s data; unlocks on drop.
pub type CeilingMutexGuard<'a, T> = MutexGuard<'a, RawEngineMutex, T>;

impl<T> Mutex<RawEngineMutex, T> {
    /// A mutex with ceiling `ceiling` (normally `Urgency::fixed(prio)`):
    /// [`Mutex::lock`] raises the caller to the ceiling and locks.
    pub fn new(ceiling: Urgency, v: T) -> Self {
        Mutex::from_raw(RawEngineMutex::new(Protocol::Ceiling(ceiling)), v)
    }
}

impl<T: ?Sized> MutexGuard<'_, RawEngineMutex, T> {
    /// After [`Mutex::lock_recover`] said the previous owner died: the
    /// data is repaired, the mutex usable again.
    pub fn make_consistent(&self) -> Result<(), Error> {
        self.raw().make_consistent()
    }
}
