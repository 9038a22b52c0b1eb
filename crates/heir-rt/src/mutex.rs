//! [`PiMutex`]: the kernel's PI futex, with the engine told about contention.
//!
//! # Protocol
//!
//! The futex word holds the owner's TID (`FUTEX_TID_MASK`) and the
//! `FUTEX_WAITERS` bit, exactly as glibc's `PTHREAD_PRIO_INHERIT` mutexes:
//!
//! - **Fast lock**: CAS `0 → tid`. The engine is not told.
//! - **Fast unlock**: CAS `tid → 0`, possible only while `FUTEX_WAITERS` is
//!   clear and the engine does not record the caller as owner.
//! - **Contended lock** (a *chain* step, numbered as in the code):
//!   1. set `FUTEX_WAITERS` from user space, so the owner can no longer
//!      unlock on the fast path: from now on its unlock takes the engine lock;
//!   2. under the engine lock, re-read the owner TID; report it to the engine
//!      with `acquire` (on its behalf) if the engine does not know it, and
//!      block the caller with `lock` — the engine now propagates the caller's
//!      urgency past the owner (into condition-variable helpers, seed 000
//!      Fig. 7), while the kernel boosts the owner itself;
//!   3. sleep in `FUTEX_LOCK_PI2`, outside the engine lock;
//!   4. on return, under the engine lock: `acquire` for the caller (after
//!      dropping a stale owner), or `cancel_wait` on timeout.
//! - **Slow unlock**: under the engine lock, `release` in the engine (the
//!   caller's own boost from the engine ends; the kernel keeps it boosted by
//!   its kernel waiters until the futex changes hands) then `FUTEX_UNLOCK_PI`
//!   (which does not sleep) — so a contender reading the word under the
//!   engine lock never sees an owner the engine has already dropped.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

use heir_core::{LockResult, MutexId, Protocol, TaskId};

use crate::rt::{self, State};
use crate::sys::{self, FUTEX_TID_MASK, FUTEX_WAITERS};
use crate::Error;

/// A PI mutex without data (the C API's `heir_mutex_t`).
#[derive(Debug)]
pub struct RawPiMutex {
    word: AtomicU32,
    /// The TID the engine records as owner (0: none). Written under the
    /// engine lock; read by the owner's unlock to pick the slow path.
    tracked: AtomicU32,
    id: MutexId,
}

impl RawPiMutex {
    /// A new unlocked mutex.
    pub fn new() -> Self {
        let id = rt::state().new_mutex(Protocol::Inherit);
        RawPiMutex {
            word: AtomicU32::new(0),
            tracked: AtomicU32::new(0),
            id,
        }
    }

    /// The engine's id of this mutex.
    pub fn id(&self) -> MutexId {
        self.id
    }

    /// True if the calling thread owns it.
    pub fn is_owned_by_current(&self) -> bool {
        self.word.load(Ordering::Relaxed) & FUTEX_TID_MASK == rt::tid() as u32
    }

    /// The owner's TID, if locked.
    pub fn owner_tid(&self) -> Option<i32> {
        match self.word.load(Ordering::Relaxed) & FUTEX_TID_MASK {
            0 => None,
            t => Some(t as i32),
        }
    }

    /// Tries to lock without blocking.
    pub fn try_lock(&self) -> bool {
        let me = rt::tid() as u32;
        self.word
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Locks, blocking as long as needed.
    pub fn lock(&self) -> Result<(), Error> {
        self.lock_until(None)
    }

    /// Locks, giving up at the absolute `CLOCK_MONOTONIC` deadline
    /// ([`Error::TimedOut`]). A cycle is refused with [`Error::Deadlock`],
    /// state unchanged.
    pub fn lock_until(&self, deadline_ns: Option<u64>) -> Result<(), Error> {
        if self.try_lock() {
            return Ok(());
        }
        self.lock_slow(deadline_ns)
    }

    fn lock_slow(&self, deadline_ns: Option<u64>) -> Result<(), Error> {
        let me = rt::tid() as u32;
        loop {
            let v = self.word.load(Ordering::Relaxed);
            if v & FUTEX_TID_MASK == 0 {
                if self
                    .word
                    .compare_exchange(
                        v,
                        me | (v & FUTEX_WAITERS),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    return Ok(());
                }
                continue;
            }
            if v & FUTEX_TID_MASK == me {
                return Err(Error::Deadlock { cycle: Vec::new() });
            }
            // Step 1: force the owner onto the slow unlock path.
            if v & FUTEX_WAITERS == 0
                && self
                    .word
                    .compare_exchange(v, v | FUTEX_WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            // Step 2: tell the engine who owns it and that we wait.
            let tracked = {
                let mut st = rt::state();
                let owner_tid = self.word.load(Ordering::Relaxed) & FUTEX_TID_MASK;
                if owner_tid == 0 {
                    continue;
                }
                let me_t = st.current()?;
                match st.task_of_tid(owner_tid as i32) {
                    Ok(owner_t) => {
                        self.record_owner(&mut st, owner_t, owner_tid)?;
                        let o = st.engine.lock(me_t, self.id)?;
                        st.apply(&o.changes);
                        if o.value == LockResult::Acquired {
                            // Cannot happen (the owner was just recorded);
                            // undo and let the kernel decide.
                            let ch = st.engine.release(me_t, self.id)?;
                            st.apply(&ch);
                            false
                        } else {
                            true
                        }
                    }
                    // The owner is not a live thread of ours: kernel-only PI.
                    Err(_) => false,
                }
            };
            // Step 3: sleep in the kernel.
            let r = sys::futex_lock_pi(&self.word, deadline_ns);
            // Step 4: report the outcome.
            let mut st = rt::state();
            let me_t = st.current()?;
            if r == 0 {
                if let Some(x) = st.engine.owner(self.id)? {
                    if x != me_t {
                        let ch = st.engine.release(x, self.id)?;
                        st.apply(&ch);
                    }
                }
                if st.engine.owner(self.id)? != Some(me_t) {
                    let ch = st.engine.acquire(me_t, self.id)?;
                    st.apply(&ch);
                }
                self.tracked.store(me, Ordering::Relaxed);
                return Ok(());
            }
            if tracked && st.engine.blocked_on(me_t)? == Some(self.id.into()) {
                let ch = st.engine.cancel_wait(me_t)?;
                st.apply(&ch);
            }
            match r {
                e if e == libc::ETIMEDOUT => return Err(Error::TimedOut),
                e if e == libc::EDEADLK => return Err(Error::Deadlock { cycle: Vec::new() }),
                e if e == libc::EINTR || e == libc::EAGAIN => {}
                e => {
                    return Err(Error::Os {
                        op: "FUTEX_LOCK_PI2",
                        errno: e,
                    })
                }
            }
        }
    }

    /// Makes the engine's owner of this mutex `owner_t` (dropping a stale
    /// one). Under the engine lock.
    fn record_owner(&self, st: &mut State, owner_t: TaskId, owner_tid: u32) -> Result<(), Error> {
        match st.engine.owner(self.id)? {
            Some(x) if x == owner_t => {}
            Some(x) => {
                let ch = st.engine.release(x, self.id)?;
                st.apply(&ch);
                let ch = st.engine.acquire(owner_t, self.id)?;
                st.apply(&ch);
            }
            None => {
                let ch = st.engine.acquire(owner_t, self.id)?;
                st.apply(&ch);
            }
        }
        self.tracked.store(owner_tid, Ordering::Relaxed);
        Ok(())
    }

    /// Unlocks. [`Error::NotOwner`] if the caller does not own it.
    pub fn unlock(&self) -> Result<(), Error> {
        let me = rt::tid() as u32;
        if self.tracked.load(Ordering::Relaxed) != me
            && self
                .word
                .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        {
            return Ok(());
        }
        let mut st = rt::state();
        self.unlock_locked(&mut st)
    }

    /// The slow unlock, under the engine lock (see the module docs).
    pub(crate) fn unlock_locked(&self, st: &mut State) -> Result<(), Error> {
        let me = rt::tid() as u32;
        let v = self.word.load(Ordering::Relaxed);
        if v & FUTEX_TID_MASK != me {
            return Err(Error::NotOwner);
        }
        if self.tracked.load(Ordering::Relaxed) == me {
            if let Some(t) = st.lookup_tid(me as i32) {
                if st.engine.owner(self.id)? == Some(t) {
                    let ch = st.engine.release(t, self.id)?;
                    st.apply(&ch);
                }
            }
            self.tracked.store(0, Ordering::Relaxed);
        }
        if self
            .word
            .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return Ok(());
        }
        sys::futex_unlock_pi(&self.word).map_err(|errno| Error::Os {
            op: "FUTEX_UNLOCK_PI",
            errno,
        })
    }
}

impl Default for RawPiMutex {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for RawPiMutex {
    fn drop(&mut self) {
        rt::state().free_mutex(self.id, Protocol::Inherit);
    }
}

/// A PI mutex protecting a `T` (parking_lot-style guard API).
pub struct PiMutex<T: ?Sized> {
    raw: RawPiMutex,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex hands out access to `data` to one thread at a time.
unsafe impl<T: ?Sized + Send> Send for PiMutex<T> {}
// SAFETY: as above: `&PiMutex` only gives `&mut T` through an exclusive guard.
unsafe impl<T: ?Sized + Send> Sync for PiMutex<T> {}

impl<T> PiMutex<T> {
    /// A new unlocked mutex holding `v`.
    pub fn new(v: T) -> Self {
        PiMutex {
            raw: RawPiMutex::new(),
            data: UnsafeCell::new(v),
        }
    }
}

impl<T: ?Sized> PiMutex<T> {
    /// Locks, blocking as long as needed.
    pub fn lock(&self) -> Result<PiMutexGuard<'_, T>, Error> {
        self.raw.lock()?;
        Ok(PiMutexGuard::new(self))
    }

    /// Locks, giving up at the absolute deadline.
    pub fn lock_until(&self, deadline_ns: u64) -> Result<PiMutexGuard<'_, T>, Error> {
        self.raw.lock_until(Some(deadline_ns))?;
        Ok(PiMutexGuard::new(self))
    }

    /// Locks if free.
    pub fn try_lock(&self) -> Option<PiMutexGuard<'_, T>> {
        self.raw.try_lock().then(|| PiMutexGuard::new(self))
    }

    /// The raw mutex.
    pub fn raw(&self) -> &RawPiMutex {
        &self.raw
    }
}

/// Exclusive access to a [`PiMutex`]'s data; unlocks on drop.
pub struct PiMutexGuard<'a, T: ?Sized> {
    mutex: &'a PiMutex<T>,
    _not_send: PhantomData<*const ()>,
}

impl<'a, T: ?Sized> PiMutexGuard<'a, T> {
    fn new(mutex: &'a PiMutex<T>) -> Self {
        PiMutexGuard {
            mutex,
            _not_send: PhantomData,
        }
    }

    /// The raw mutex (for [`crate::PiCondvar`]).
    pub fn raw(&self) -> &RawPiMutex {
        &self.mutex.raw
    }
}

impl<T: ?Sized> Deref for PiMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the calling thread owns the mutex.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for PiMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves exclusive ownership; `&mut self` that no
        // other reference from it is live.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for PiMutexGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.mutex.raw.unlock();
    }
}
