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
//! - **Robust** ([`crate::robust`]): a held mutex is linked on its owner's
//!   robust list (the kernel's, shared with glibc), so when the owner exits
//!   holding it the kernel sets `FUTEX_OWNER_DIED` and hands it to a waiter
//!   or leaves it ownerless; the next owner gets [`Error::OwnerDead`]
//!   (holding it), must [`RawPiMutex::make_consistent`] it, and an unlock
//!   without that makes it not recoverable — `PTHREAD_MUTEX_ROBUST`'s
//!   contract. A word with no owner is taken in user space only when no
//!   waiter is queued (`FUTEX_WAITERS` clear); otherwise the kernel decides.

use std::sync::atomic::Ordering;

use heir_core::{LockResult, MutexId, Protocol, TaskId};

use crate::lock::{Acquired, Mutex, MutexGuard, RawLock, RawTryLock};
use crate::robust::{self, List, RobustWord, CONSISTENT, INCONSISTENT, NOT_RECOVERABLE};
use crate::rt::{self, State};
use crate::sys::{self, FUTEX_OWNER_DIED, FUTEX_TID_MASK, FUTEX_WAITERS};
use crate::Error;

/// A PI mutex without data (the C API's `heir_mutex_t`). Robust where the
/// thread's robust list can be joined ([`crate::robust`]): when its owner
/// exits holding it, the next locker gets [`Error::OwnerDead`].
#[derive(Debug)]
pub struct RawPiMutex {
    /// The futex word and its robust-list link: on the heap, so the
    /// address the kernel and the owner's list know never moves.
    w: Box<RobustWord>,
    id: MutexId,
}

impl RawPiMutex {
    /// A new unlocked mutex.
    pub fn new() -> Self {
        let id = rt::state().new_mutex(Protocol::Inherit);
        RawPiMutex {
            w: Box::default(),
            id,
        }
    }

    /// The engine's id of this mutex.
    pub fn id(&self) -> MutexId {
        self.id
    }

    /// True if the calling thread owns it.
    pub fn is_owned_by_current(&self) -> bool {
        self.w.word.load(Ordering::Relaxed) & FUTEX_TID_MASK == rt::tid() as u32
    }

    /// The owner's TID, if locked.
    pub fn owner_tid(&self) -> Option<i32> {
        match self.w.word.load(Ordering::Relaxed) & FUTEX_TID_MASK {
            0 => None,
            t => Some(t as i32),
        }
    }

    /// Locks if nobody holds it: [`Error::Busy`] if somebody does. Like
    /// [`RawPiMutex::lock`], `Err(Error::OwnerDead)` means the caller holds
    /// it now.
    pub fn try_lock(&self) -> Result<(), Error> {
        self.recoverable()?;
        let me = rt::tid() as u32;
        let list = List::current();
        if let Some(l) = list {
            l.pending(&self.w);
        }
        let died = if self.take(0, me) {
            false
        } else if self.take(FUTEX_OWNER_DIED, me) {
            true
        } else {
            if let Some(l) = list {
                l.done();
            }
            return Err(Error::Busy);
        };
        self.acquired(list, died)
    }

    /// Locks, blocking as long as needed.
    pub fn lock(&self) -> Result<(), Error> {
        self.lock_until(None)
    }

    /// Locks, giving up at the absolute `CLOCK_MONOTONIC` deadline
    /// ([`Error::TimedOut`]). A cycle is refused with [`Error::Deadlock`],
    /// state unchanged.
    ///
    /// [`Error::OwnerDead`]: the previous owner exited holding it; the
    /// caller **holds** it now, and must call
    /// [`make_consistent`](Self::make_consistent) before it unlocks, or the
    /// mutex becomes unusable ([`Error::NotRecoverable`] for every later
    /// lock) — as `pthread_mutex_lock` on a robust mutex.
    pub fn lock_until(&self, deadline_ns: Option<u64>) -> Result<(), Error> {
        self.recoverable()?;
        let me = rt::tid() as u32;
        let list = List::current();
        if let Some(l) = list {
            l.pending(&self.w);
        }
        let r = if self.take(0, me) {
            Ok(false)
        } else {
            self.lock_slow(deadline_ns)
        };
        match r {
            Ok(died) => self.acquired(list, died),
            Err(e) => {
                if let Some(l) = list {
                    l.done();
                }
                Err(e)
            }
        }
    }

    fn recoverable(&self) -> Result<(), Error> {
        if self.w.state.load(Ordering::Acquire) == NOT_RECOVERABLE {
            Err(Error::NotRecoverable)
        } else {
            Ok(())
        }
    }

    /// CAS `from → me`.
    fn take(&self, from: u32, me: u32) -> bool {
        self.w
            .word
            .compare_exchange(from, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// After the caller got the futex (`died`: it carried
    /// `FUTEX_OWNER_DIED`): links it on the caller's robust list, ends the
    /// pending operation, and reports the mutex's state.
    fn acquired(&self, list: Option<List>, died: bool) -> Result<(), Error> {
        if let Some(l) = list {
            l.link(&self.w);
            l.done();
        }
        if died {
            self.w.state.store(INCONSISTENT, Ordering::Release);
            return Err(Error::OwnerDead);
        }
        if self.w.state.load(Ordering::Acquire) == NOT_RECOVERABLE {
            // Made unusable while this thread waited for it.
            let _ = self.unlock();
            return Err(Error::NotRecoverable);
        }
        Ok(())
    }

    /// Marks a mutex whose owner died consistent again: the caller (its
    /// owner, after [`Error::OwnerDead`]) has repaired what it protects
    /// (`pthread_mutex_consistent`). [`Error::NotOwner`] if the caller does
    /// not hold it, [`Error::Invalid`] if it is not inconsistent.
    pub fn make_consistent(&self) -> Result<(), Error> {
        if !self.is_owned_by_current() {
            return Err(Error::NotOwner);
        }
        self.w
            .state
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
        self.w.state.load(Ordering::Acquire) == NOT_RECOVERABLE
    }

    /// The contended lock; `Ok(true)` if the futex came with
    /// `FUTEX_OWNER_DIED` (its owner exited holding it). The steps are the
    /// module docs'.
    fn lock_slow(&self, deadline_ns: Option<u64>) -> Result<bool, Error> {
        let me = rt::tid() as u32;
        loop {
            let v = self.w.word.load(Ordering::Relaxed);
            if v == 0 || v == FUTEX_OWNER_DIED {
                // Free, or left by a dead owner with nobody waiting in the
                // kernel: taken in user space (no kernel PI state exists
                // without FUTEX_WAITERS).
                if self.take(v, me) {
                    return Ok(v == FUTEX_OWNER_DIED);
                }
                continue;
            }
            let owner = v & FUTEX_TID_MASK;
            if owner == me {
                return Err(Error::Deadlock { cycle: Vec::new() });
            }
            // No owner but waiters: the owner died and the kernel is handing
            // the futex to its top waiter. Only the kernel may decide.
            let tracked = if owner == 0 {
                false
            } else {
                if !self.force_slow_unlock(v) {
                    continue;
                }
                self.wait_in_engine()?
            };
            // Step 3: sleep in the kernel.
            let r = sys::futex_lock_pi(&self.w.word, deadline_ns);
            if let Some(died) = self.after_kernel_lock(r, tracked)? {
                return Ok(died);
            }
        }
    }

    /// Step 1: sets `FUTEX_WAITERS` in the word last read as `v`, which
    /// forces the owner onto the slow unlock path; false if the word
    /// changed meanwhile (read it again).
    fn force_slow_unlock(&self, v: u32) -> bool {
        v & FUTEX_WAITERS != 0
            || self
                .w
                .word
                .compare_exchange(v, v | FUTEX_WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Step 2, under the engine lock: tells the engine who owns the mutex
    /// and that the caller waits for it. True if the engine now records the
    /// wait; false if the owner is gone or not a live thread of this
    /// process (kernel-only PI then).
    fn wait_in_engine(&self) -> Result<bool, Error> {
        let mut st = rt::state();
        let owner_tid = self.w.word.load(Ordering::Relaxed) & FUTEX_TID_MASK;
        if owner_tid == 0 {
            return Ok(false);
        }
        let me_t = st.current()?;
        let Ok(owner_t) = st.task_of_tid(owner_tid as i32) else {
            return Ok(false);
        };
        self.record_owner(&mut st, owner_t, owner_tid)?;
        let o = st.engine.lock(me_t, self.id)?;
        st.apply(&o.changes);
        if o.value == LockResult::Acquired {
            // Cannot happen (the owner was just recorded); undo and let the
            // kernel decide.
            let ch = st.engine.release(me_t, self.id)?;
            st.apply(&ch);
            return Ok(false);
        }
        Ok(true)
    }

    /// Step 4, under the engine lock: reports the outcome `r` of
    /// `FUTEX_LOCK_PI2` to the engine. `Some(died)` once the caller owns the
    /// futex, `None` to try again (interrupted), or the error (the wait,
    /// if `tracked`, cancelled in the engine).
    fn after_kernel_lock(&self, r: sys::Errno, tracked: bool) -> Result<Option<bool>, Error> {
        let mut st = rt::state();
        let me_t = st.current()?;
        if r == 0 {
            return self.owned_after_kernel(&mut st, me_t).map(Some);
        }
        if tracked && st.engine.blocked_on(me_t)? == Some(self.id.into()) {
            let ch = st.engine.cancel_wait(me_t)?;
            st.apply(&ch);
        }
        match r {
            e if e == libc::ETIMEDOUT => Err(Error::TimedOut),
            e if e == libc::EDEADLK => Err(Error::Deadlock { cycle: Vec::new() }),
            e if e == libc::EINTR || e == libc::EAGAIN => Ok(None),
            e => Err(Error::Os {
                op: "FUTEX_LOCK_PI2",
                errno: e,
            }),
        }
    }

    /// The kernel made the caller (`me_t`) the owner: the engine's owner
    /// becomes the caller too (a stale one dropped). True if the futex came
    /// with `FUTEX_OWNER_DIED`.
    fn owned_after_kernel(&self, st: &mut State, me_t: TaskId) -> Result<bool, Error> {
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
        self.w.tracked.store(rt::tid() as u32, Ordering::Relaxed);
        // The kernel keeps FUTEX_OWNER_DIED when it hands over the futex of
        // a dead owner (or lets us take it over).
        Ok(self.w.word.fetch_and(!FUTEX_OWNER_DIED, Ordering::AcqRel) & FUTEX_OWNER_DIED != 0)
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
        self.w.tracked.store(owner_tid, Ordering::Relaxed);
        Ok(())
    }

    /// Unlocks. [`Error::NotOwner`] if the caller does not own it. Unlocking
    /// a mutex left inconsistent (after [`Error::OwnerDead`], without
    /// [`make_consistent`](Self::make_consistent)) makes it unusable.
    pub fn unlock(&self) -> Result<(), Error> {
        let me = rt::tid() as u32;
        if self.w.word.load(Ordering::Relaxed) & FUTEX_TID_MASK != me {
            return Err(Error::NotOwner);
        }
        let list = self.release_prepare();
        if self.w.tracked.load(Ordering::Relaxed) != me && self.take_back(me) {
            if let Some(l) = list {
                l.done();
            }
            return Ok(());
        }
        let mut st = rt::state();
        self.unlock_locked(&mut st)
    }

    /// CAS `me → 0`.
    fn take_back(&self, me: u32) -> bool {
        self.w
            .word
            .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    /// Before the owner releases it: an inconsistent mutex becomes not
    /// recoverable, and it leaves the owner's robust list (announced as
    /// pending until the futex is released: [`List::done`] on the list
    /// returned). Idempotent.
    fn release_prepare(&self) -> Option<List> {
        if self.w.state.load(Ordering::Relaxed) == INCONSISTENT {
            self.w.state.store(NOT_RECOVERABLE, Ordering::Release);
        }
        let list = List::current();
        if let Some(l) = list {
            if robust::linked(&self.w) {
                l.pending(&self.w);
                l.unlink(&self.w);
            }
        }
        list
    }

    /// The slow unlock, under the engine lock (see the module docs).
    pub(crate) fn unlock_locked(&self, st: &mut State) -> Result<(), Error> {
        let me = rt::tid() as u32;
        let v = self.w.word.load(Ordering::Relaxed);
        if v & FUTEX_TID_MASK != me {
            return Err(Error::NotOwner);
        }
        let list = self.release_prepare();
        if self.w.tracked.load(Ordering::Relaxed) == me {
            if let Some(t) = st.lookup_tid(me as i32) {
                if st.engine.owner(self.id)? == Some(t) {
                    let ch = st.engine.release(t, self.id)?;
                    st.apply(&ch);
                }
            }
            self.w.tracked.store(0, Ordering::Relaxed);
        }
        let r = if self.take_back(me) {
            Ok(())
        } else {
            sys::futex_unlock_pi(&self.w.word).map_err(|errno| Error::Os {
                op: "FUTEX_UNLOCK_PI",
                errno,
            })
        };
        if let Some(l) = list {
            l.done();
        }
        r
    }

    /// Destroys the mutex; [`Error::Busy`] (and the mutex back) while a
    /// thread holds it (`pthread_mutex_destroy`). A mutex whose owner died
    /// holding it has no owner and may be destroyed.
    pub fn destroy(self) -> Result<(), (Self, Error)> {
        if self.owner_tid().is_some() {
            return Err((self, Error::Busy));
        }
        drop(self);
        Ok(())
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
        let owner = self.w.word.load(Ordering::Relaxed) & FUTEX_TID_MASK;
        if owner == rt::tid() as u32 {
            // Dropped by its owner while held: off the owner's list first.
            if let Some(l) = List::current() {
                l.pending(&self.w);
                l.unlink(&self.w);
                l.done();
            }
        } else if owner != 0 && sys::is_own_thread(owner as i32) {
            // Held by another live thread: its robust list still links the
            // word, and the kernel would write it when that thread exits.
            // Leak it (a few bytes) rather than leave a dangling link.
            let w = std::mem::take(&mut self.w);
            std::mem::forget(w);
        }
    }
}

// SAFETY: a `RawPiMutex` is held by the thread whose TID is in its futex
// word, and only one TID fits: `acquire`/`try_acquire` return `Ok` only
// once the caller's TID is in the word — a user-space CAS from no owner,
// or the kernel's `FUTEX_LOCK_PI2` hand-over — and nobody else can write
// their own TID there until it is cleared. `release` is `unlock`, which
// refuses a caller whose TID is not in the word (`NotOwner`).
unsafe impl RawLock for RawPiMutex {
    fn acquire(&self, deadline_ns: Option<u64>) -> Result<Acquired, Error> {
        held(self.lock_until(deadline_ns))
    }

    fn release(&self) {
        // A guard's drop has no caller to report to: the only failures are
        // "not the owner" (impossible for a guard) and a futex error that
        // leaves the word to the kernel.
        let _ = self.unlock();
    }
}

// SAFETY: as for `RawLock` above; a `Busy` try is a refusal, not a hold.
unsafe impl RawTryLock for RawPiMutex {
    fn try_acquire(&self) -> Result<Option<Acquired>, Error> {
        match self.try_lock() {
            Err(Error::Busy) => Ok(None),
            r => held(r).map(Some),
        }
    }
}

/// The raw mutex's outcome as [`Acquired`]: [`Error::OwnerDead`] means the
/// caller holds it, from a dead owner.
fn held(r: Result<(), Error>) -> Result<Acquired, Error> {
    match r {
        Ok(()) => Ok(Acquired::Clean),
        Err(Error::OwnerDead) => Ok(Acquired::OwnerDied),
        Err(e) => Err(e),
    }
}

/// A PI mutex protecting a `T`: [`Mutex`] over [`RawPiMutex`]
/// ([`Mutex::lock`], [`Mutex::lock_until`], [`Mutex::try_lock`],
/// [`Mutex::lock_recover`] after its owner's death).
pub type PiMutex<T> = Mutex<RawPiMutex, T>;

/// Exclusive access to a [`PiMutex`]'s data; unlocks on drop.
pub type PiMutexGuard<'a, T> = MutexGuard<'a, RawPiMutex, T>;

impl<T> Mutex<RawPiMutex, T> {
    /// A new unlocked PI mutex holding `v`.
    pub fn new(v: T) -> Self {
        Mutex::from_raw(RawPiMutex::new(), v)
    }
}

impl<T: ?Sized> MutexGuard<'_, RawPiMutex, T> {
    /// After [`Mutex::lock_recover`] said the previous owner died: the
    /// data is repaired, the mutex usable again.
    pub fn make_consistent(&self) -> Result<(), Error> {
        self.raw().make_consistent()
    }
}
