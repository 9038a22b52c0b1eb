//! [`PiCondvar`]: a condition variable whose waiters lend their urgency to
//! declared helpers (seed 000's PI-CV), in user space.
//!
//! - Waiters are queued *in the engine* (most urgent first, FIFO among
//!   equals); each sleeps on its own per-thread futex word, so `signal` wakes
//!   exactly the waiter the engine picks.
//! - `wait`: under the engine lock, one engine operation gives the mutex up
//!   and blocks the waiter on the condvar (`cond_wait_release` for a PI
//!   futex the kernel hands over, `cond_wait_unlock` for an engine mutex
//!   with hand-off), so helpers are boosted before the waiter sleeps and the
//!   cycle check sees the mutex already released — the textbook pattern, a
//!   helper blocked on that mutex to signal, is no deadlock. Then, still
//!   under the lock, the futex word is released; the futex wait happens
//!   after the engine lock is dropped.
//! - `signal`/`broadcast`: under the engine lock, `cond_signal` marks the
//!   chosen waiters woken and applies the revocations of other threads; the
//!   futex wake happens after the lock is dropped; the signaller's own
//!   de-boost is applied only after the wake (see [`crate::rt`]).
//! - `wait_until` with an absolute `CLOCK_MONOTONIC` deadline: on timeout the
//!   waiter re-checks its word *under the engine lock*; if a concurrent
//!   `signal` already chose it, the wait counts as woken (the signal is not
//!   lost), else `cancel_wait` revokes its donation.
//! - The associated mutex is re-acquired after waking (a PI futex lock).

use std::sync::atomic::Ordering;

use heir_core::CondId;

use crate::ceiling::RawEngineMutex;
use crate::mutex::{PiMutexGuard, RawPiMutex};
use crate::rt::{self, State, PARKED, UNPARKED};
use crate::sys::{self, FutexWait};
use crate::Error;

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// A `signal` or `broadcast` chose this waiter.
    Woken,
    /// The deadline passed first; the donation was revoked.
    TimedOut,
}

/// A PI condition variable with helpers.
#[derive(Debug)]
pub struct PiCondvar {
    id: CondId,
}

impl PiCondvar {
    /// A new condition variable with no helpers.
    pub fn new() -> Self {
        PiCondvar {
            id: rt::state().new_cond(),
        }
    }

    /// The engine's id.
    pub fn id(&self) -> CondId {
        self.id
    }

    /// Declares thread `tid` (of this process) a helper: waiters lend it
    /// their urgency while they wait (`pthread_cond_helpers_add`).
    pub fn helpers_add(&self, tid: i32) -> Result<(), Error> {
        let mut st = rt::state();
        let t = st.task_of_tid(tid)?;
        let ch = st.engine.helper_add(self.id, t)?;
        st.apply(&ch);
        Ok(())
    }

    /// Removes helper `tid`, revoking what it inherited through this
    /// condition variable (`pthread_cond_helpers_del`).
    pub fn helpers_del(&self, tid: i32) -> Result<(), Error> {
        let mut st = rt::state();
        let t = st.lookup_tid(tid).ok_or(Error::NoSuchThread(tid))?;
        let ch = st.engine.helper_del(self.id, t)?;
        st.apply(&ch);
        Ok(())
    }

    /// The helpers' tids.
    pub fn helpers(&self) -> Vec<i32> {
        let st = rt::state();
        st.engine
            .helpers(self.id)
            .map(|hs| hs.iter().filter_map(|&h| st.tid_of(h)).collect())
            .unwrap_or_default()
    }

    /// Waits until signalled; `guard`'s mutex is released while waiting and
    /// held again on return.
    pub fn wait<T: ?Sized>(&self, guard: &mut PiMutexGuard<'_, T>) -> Result<(), Error> {
        self.wait_raw(guard.raw(), None).map(|_| ())
    }

    /// Waits until signalled or until the absolute `CLOCK_MONOTONIC`
    /// deadline.
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut PiMutexGuard<'_, T>,
        deadline_ns: u64,
    ) -> Result<WaitResult, Error> {
        self.wait_raw(guard.raw(), Some(deadline_ns))
    }

    /// Waits with `mutex` held by the caller (the C API's form).
    pub fn wait_raw(
        &self,
        mutex: &RawPiMutex,
        deadline_ns: Option<u64>,
    ) -> Result<WaitResult, Error> {
        self.wait_any(mutex, deadline_ns)
    }

    /// Waits with an engine-managed mutex (protocol none or ceiling) held by
    /// the caller.
    pub fn wait_engine(
        &self,
        mutex: &RawEngineMutex,
        deadline_ns: Option<u64>,
    ) -> Result<WaitResult, Error> {
        self.wait_any(mutex, deadline_ns)
    }

    fn wait_any(&self, mutex: &dyn CvMutex, deadline_ns: Option<u64>) -> Result<WaitResult, Error> {
        if !mutex.owned() {
            return Err(Error::NotOwner);
        }
        let me_tid = rt::tid();
        let (shared, next_owner) = {
            let mut st = rt::state();
            let me = st.current()?;
            let sh = st.shared(me).ok_or(Error::NoSuchThread(me_tid))?;
            sh.wake.store(PARKED, Ordering::Relaxed);
            // Give the mutex up and start waiting in one engine operation.
            let m = mutex.engine_id();
            let gave_up = if mutex.engine_handoff() {
                st.engine
                    .cond_wait_unlock(me, self.id, m)
                    .map(|o| (o.changes, o.value))
            } else if st.engine.owner(m)? == Some(me) {
                st.engine
                    .cond_wait_release(me, self.id, m)
                    .map(|ch| (ch, None))
            } else {
                // Locked on the fast path: the engine never saw the owner,
                // so nobody's chain goes through it.
                st.engine.cond_wait(me, self.id).map(|ch| (ch, None))
            };
            let (ch, next) = match gave_up {
                Ok(r) => r,
                Err(e) => {
                    sh.wake.store(UNPARKED, Ordering::Relaxed);
                    return Err(e.into());
                }
            };
            st.apply(&ch);
            let next = next.and_then(|t| st.shared(t));
            if let Some(n) = &next {
                n.wake.store(UNPARKED, Ordering::Release);
            }
            if let Err(e) = mutex.release_word(&mut st) {
                let ch = st.engine.cancel_wait(me)?;
                st.apply(&ch);
                sh.wake.store(UNPARKED, Ordering::Relaxed);
                return Err(e);
            }
            (sh, next)
        };
        if let Some(n) = next_owner {
            sys::futex_wake(&n.wake, 1);
        }
        let mut result = WaitResult::Woken;
        loop {
            if shared.wake.load(Ordering::Acquire) == UNPARKED {
                break;
            }
            if sys::futex_wait(&shared.wake, PARKED, deadline_ns) == FutexWait::TimedOut {
                let mut st = rt::state();
                if shared.wake.load(Ordering::Acquire) == PARKED {
                    if let Some(me) = st.lookup_tid(me_tid) {
                        let ch = st.engine.cancel_wait(me)?;
                        st.apply(&ch);
                    }
                    shared.wake.store(UNPARKED, Ordering::Relaxed);
                    result = WaitResult::TimedOut;
                }
                break;
            }
        }
        mutex.relock()?;
        Ok(result)
    }

    /// Wakes the most urgent waiter, if any; returns whether one was woken.
    pub fn signal(&self) -> Result<bool, Error> {
        let me_tid = rt::tid();
        let (woken, deferred) = {
            let mut st = rt::state();
            let me = st.lookup_tid(me_tid);
            let o = st.engine.cond_signal(self.id)?;
            let sh = o.value.and_then(|t| st.shared(t));
            if let Some(sh) = &sh {
                sh.wake.store(UNPARKED, Ordering::Release);
            }
            let d = st.apply_except(&o.changes, me);
            (sh, if d { me } else { None })
        };
        let any = woken.is_some();
        if let Some(sh) = woken {
            sys::futex_wake(&sh.wake, 1);
        }
        if let Some(me) = deferred {
            rt::state().sync(me);
        }
        Ok(any)
    }

    /// Wakes every waiter, most urgent first; returns how many.
    pub fn broadcast(&self) -> Result<usize, Error> {
        let me_tid = rt::tid();
        let (woken, deferred) = {
            let mut st = rt::state();
            let me = st.lookup_tid(me_tid);
            let o = st.engine.cond_broadcast(self.id)?;
            let shs: Vec<_> = o.value.iter().filter_map(|&t| st.shared(t)).collect();
            for sh in &shs {
                sh.wake.store(UNPARKED, Ordering::Release);
            }
            let d = st.apply_except(&o.changes, me);
            (shs, if d { me } else { None })
        };
        for sh in &woken {
            sys::futex_wake(&sh.wake, 1);
        }
        if let Some(me) = deferred {
            rt::state().sync(me);
        }
        Ok(woken.len())
    }
}

impl Default for PiCondvar {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PiCondvar {
    fn drop(&mut self) {
        rt::state().free_cond(self.id);
    }
}

/// A mutex a condition variable can release and re-acquire.
trait CvMutex {
    fn owned(&self) -> bool;
    /// The engine's id of the mutex.
    fn engine_id(&self) -> heir_core::MutexId;
    /// True if the engine hands the mutex to its next owner
    /// (`cond_wait_unlock`); false if the kernel does (`cond_wait_release`).
    fn engine_handoff(&self) -> bool;
    /// Under the engine lock, after the engine gave the mutex up: releases
    /// what lives outside the engine (the futex word of a PI mutex).
    fn release_word(&self, st: &mut State) -> Result<(), Error>;
    fn relock(&self) -> Result<(), Error>;
}

impl CvMutex for RawPiMutex {
    fn owned(&self) -> bool {
        self.is_owned_by_current()
    }
    fn engine_id(&self) -> heir_core::MutexId {
        self.id()
    }
    fn engine_handoff(&self) -> bool {
        false
    }
    fn release_word(&self, st: &mut State) -> Result<(), Error> {
        // The engine no longer records the caller as owner: this is the
        // futex part of the slow unlock only.
        self.unlock_locked(st)
    }
    fn relock(&self) -> Result<(), Error> {
        self.lock()
    }
}

impl CvMutex for RawEngineMutex {
    fn owned(&self) -> bool {
        self.is_owned_by_current()
    }
    fn engine_id(&self) -> heir_core::MutexId {
        self.id()
    }
    fn engine_handoff(&self) -> bool {
        true
    }
    fn release_word(&self, _st: &mut State) -> Result<(), Error> {
        // Entirely in the engine: nothing else to release.
        Ok(())
    }
    fn relock(&self) -> Result<(), Error> {
        self.lock()
    }
}

impl PiCondvar {
    /// True if some thread waits on it now.
    pub fn has_waiters(&self) -> bool {
        rt::state().cond_waited(self.id)
    }
}
