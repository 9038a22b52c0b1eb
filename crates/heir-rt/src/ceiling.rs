//! [`CeilingMutex`]: immediate priority ceiling (seed 004), and
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

use std::sync::atomic::Ordering;
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
}

impl RawEngineMutex {
    /// A new unlocked mutex with `protocol`.
    pub fn new(protocol: Protocol) -> Self {
        RawEngineMutex {
            id: rt::state().new_mutex(protocol),
            protocol,
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

    /// Locks, blocking as long as needed.
    pub fn lock(&self) -> Result<(), Error> {
        self.lock_until(None)
    }

    /// Locks, giving up at the absolute `CLOCK_MONOTONIC` deadline.
    pub fn lock_until(&self, deadline_ns: Option<u64>) -> Result<(), Error> {
        let me_tid = rt::tid();
        let shared = {
            let mut st = rt::state();
            let me = st.current()?;
            let o = st.engine.lock(me, self.id)?;
            st.apply(&o.changes);
            if o.value == LockResult::Acquired {
                return Ok(());
            }
            let sh = st.shared(me).ok_or(Error::NoSuchThread(me_tid))?;
            sh.wake.store(PARKED, Ordering::Relaxed);
            sh
        };
        loop {
            if shared.wake.load(Ordering::Acquire) == UNPARKED {
                return Ok(());
            }
            if sys::futex_wait(&shared.wake, PARKED, deadline_ns) == FutexWait::TimedOut {
                let mut st = rt::state();
                if shared.wake.load(Ordering::Acquire) == UNPARKED {
                    return Ok(());
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

    /// Unlocks and hands the mutex to the most urgent waiter.
    pub fn unlock(&self) -> Result<(), Error> {
        let me_tid = rt::tid();
        let (next, deferred) = {
            let mut st = rt::state();
            let me = st.lookup_tid(me_tid).ok_or(Error::NotOwner)?;
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
        st.free_mutex(self.id, self.protocol);
    }
}

// SAFETY: the engine records one owner per mutex and changes it only under
// the engine lock: `lock_until` returns `Ok` only once the engine made the
// caller the owner (at once, or by a hand-off in `unlock` before the
// caller's wake), and `unlock` — `release` — refuses a caller the engine
// does not record as owner (`NotOwner`) and hands ownership to exactly one
// waiter.
unsafe impl RawLock for RawEngineMutex {
    fn acquire(&self, deadline_ns: Option<u64>) -> Result<Acquired, Error> {
        self.lock_until(deadline_ns).map(|()| Acquired::Clean)
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
