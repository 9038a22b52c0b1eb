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

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use heir_core::{LockResult, MutexId, Protocol, TaskId, Urgency};

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
            if let Ok(ch) = st.engine.release(owner, self.id) {
                st.apply(&ch);
            }
        }
        st.free_mutex(self.id, self.protocol);
    }
}

/// An immediate-priority-ceiling mutex protecting a `T`.
pub struct CeilingMutex<T: ?Sized> {
    raw: RawEngineMutex,
    data: UnsafeCell<T>,
}

// SAFETY: access to `data` is serialised by the mutex.
unsafe impl<T: ?Sized + Send> Send for CeilingMutex<T> {}
// SAFETY: `&CeilingMutex` gives `&mut T` only through an exclusive guard.
unsafe impl<T: ?Sized + Send> Sync for CeilingMutex<T> {}

impl<T> CeilingMutex<T> {
    /// A mutex with ceiling `ceiling` (normally `Urgency::fixed(prio)`).
    pub fn new(ceiling: Urgency, v: T) -> Self {
        CeilingMutex {
            raw: RawEngineMutex::new(Protocol::Ceiling(ceiling)),
            data: UnsafeCell::new(v),
        }
    }
}

impl<T: ?Sized> CeilingMutex<T> {
    /// Raises the caller to the ceiling and locks.
    pub fn lock(&self) -> Result<CeilingMutexGuard<'_, T>, Error> {
        self.raw.lock()?;
        Ok(CeilingMutexGuard {
            mutex: self,
            _not_send: PhantomData,
        })
    }

    /// The raw mutex.
    pub fn raw(&self) -> &RawEngineMutex {
        &self.raw
    }
}

/// Exclusive access to a [`CeilingMutex`]'s data; unlocks on drop.
pub struct CeilingMutexGuard<'a, T: ?Sized> {
    mutex: &'a CeilingMutex<T>,
    _not_send: PhantomData<*const ()>,
}

impl<T: ?Sized> Deref for CeilingMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the calling thread owns the mutex.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for CeilingMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: exclusive ownership, and `&mut self` excludes other
        // references from this guard.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for CeilingMutexGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.mutex.raw.unlock();
    }
}
