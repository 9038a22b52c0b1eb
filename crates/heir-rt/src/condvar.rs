//! [`PiCondvar`]: a condition variable whose waiters lend their urgency to
//! declared helpers (PI-CV), in user space.
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
//!
//! # How a waiter lends to the helpers: [`Lend`]
//!
//! With [`Lend::User`] (the default) heir-rt applies every change the
//! engine reports with `sched_setattr` on the helpers, as above. With
//! [`Lend::Kernel`] the waiter sleeps instead in `FUTEX_LOCK_PI` on its own
//! PI futex word (`ThreadShared::boost`), which holds the TID of one helper
//! (the condition variable's first helper that is another live thread of
//! this process): the kernel makes that helper the word's owner and boosts
//! it to the waiter's priority — or deadline, which `sched_setattr` cannot
//! lend — and on along its PI futex chain (a helper blocked on a
//! [`crate::PiMutex`] boosts that mutex's owner), exactly as for a PI
//! mutex. The engine still records the wait (wake order, cycles, chains
//! through heir's own objects); `State::wanted` leaves the named helper's
//! share of it to the kernel, and further helpers are boosted with
//! `sched_setattr` (the kernel has one owner per word and a thread sleeps
//! on one word).
//!
//! The word's "lock" is never held by the helper in any other sense, so
//! the wait must be ended from outside:
//!
//! - the signaller *is* the named helper: `FUTEX_UNLOCK_PI` under the
//!   engine lock — the kernel hands the word to the waiter, wakes it and
//!   drops the helper's boost in one system call;
//! - any other signaller (or a helper leaving, or deleted): the word is
//!   cleared and the waiter gets [`sys::wake_signal`] (`tgkill`, under the
//!   engine lock, before its `wake` word is set, so the no-op handler only
//!   ever runs inside heir-rt's wait); the kernel restarts the interrupted
//!   `FUTEX_LOCK_PI`, finds the word free and gives it to the waiter, which
//!   then reads its `wake` word (under the engine lock if not yet set): woken,
//!   or arm again naming another helper;
//! - the helper exits: the kernel hands the word to the waiter (with
//!   `FUTEX_OWNER_DIED`), which arms again;
//! - the deadline: `ETIMEDOUT`, as for a user wait.
//!
//! A kernel wait that cannot be armed (no other helper alive, or the kernel
//! refuses the word: a PI chain back to the waiter) becomes a user wait.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use heir_core::{CondId, TaskId};

use crate::ceiling::RawEngineMutex;
use crate::mutex::{PiMutexGuard, RawPiMutex};
use crate::rt::{self, State, ThreadShared, PARKED, UNPARKED};
use crate::sys::{self, FutexWait};
use crate::Error;

/// How a condition variable's waiters lend their urgency to its helpers
/// (see the module docs; the C API's `heir_cond_attr_t.lend`,
/// `HEIR_LEND_USER` / `HEIR_LEND_KERNEL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lend {
    /// heir-rt applies the engine's effective urgencies with
    /// `sched_setattr` on every helper (two system calls per helper and
    /// wait: the boost and the de-boost). A deadline cannot be lent to a
    /// non-deadline helper this way. Needs nothing of the process.
    #[default]
    User,
    /// The waiter sleeps in `FUTEX_LOCK_PI` on a word naming one helper:
    /// the kernel boosts it (priority or deadline, transitively through PI
    /// futexes), and a signal by that helper wakes the waiter in one system
    /// call; other helpers get `sched_setattr`. Another signaller ends the
    /// wait with [`sys::wake_signal`], for which heir-rt installs a no-op
    /// handler.
    Kernel,
}

/// The previous release's name of [`Lend`] ("boost" now means only a
/// thread running above its base priority).
#[deprecated(note = "renamed `Lend`")]
pub type Boost = Lend;

/// A bound on how often one kernel wait re-arms (a helper left, a signal
/// re-armed it, the kernel refused the word) before it goes on as a user
/// wait: no loop at real-time priority.
const MAX_REARMS: u32 = 16;

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
    lend: Lend,
    /// Threads inside a wait: counted up under the engine lock before the
    /// waiter gives its mutex up, down when its wait returns. A `signal`
    /// or `broadcast` that finds 0 has no waiter to wake and returns
    /// without the engine lock: a thread that waits before the signal
    /// (in the mutex's order) has counted itself before it released the
    /// mutex, so the signaller, holding or having taken the mutex since,
    /// sees it. A waiter already chosen but not yet returned only sends
    /// a signal down the slow path.
    waiters: AtomicU32,
}

/// Counts a waiter out of [`PiCondvar::waiters`] on every way out of a
/// wait.
struct Waiting<'a>(&'a AtomicU32);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

impl PiCondvar {
    /// A new condition variable with no helpers, [`Lend::User`].
    pub fn new() -> Self {
        PiCondvar {
            id: rt::state().new_cond(),
            lend: Lend::User,
            waiters: AtomicU32::new(0),
        }
    }

    /// A new condition variable with no helpers whose waiters lend to them
    /// as `lend` says. [`Lend::Kernel`] installs the no-op handler of
    /// [`sys::wake_signal`] first: `Err(Error::Os { op: "sigaction", errno:
    /// EBUSY })` if the program has its own handler on that signal.
    pub fn with_lend(lend: Lend) -> Result<Self, Error> {
        if lend == Lend::Kernel {
            sys::install_wake_handler().map_err(|errno| Error::Os {
                op: "sigaction",
                errno,
            })?;
        }
        Ok(PiCondvar {
            id: rt::state().new_cond(),
            lend,
            waiters: AtomicU32::new(0),
        })
    }

    /// The previous release's name of [`PiCondvar::with_lend`].
    #[deprecated(note = "renamed `with_lend`")]
    pub fn with_boost(lend: Lend) -> Result<Self, Error> {
        Self::with_lend(lend)
    }

    /// How its waiters lend to its helpers.
    pub fn lend(&self) -> Lend {
        self.lend
    }

    /// The previous release's name of [`PiCondvar::lend`].
    #[deprecated(note = "renamed `lend`")]
    pub fn boost(&self) -> Lend {
        self.lend
    }

    /// The engine's id.
    pub fn id(&self) -> CondId {
        self.id
    }

    /// Declares thread `tid` (of this process) a helper: waiters lend it
    /// their urgency while they wait (the PI-CV paper's
    /// `pthread_cond_helpers_add`; C: `heir_cond_add_helper`).
    pub fn add_helper(&self, tid: i32) -> Result<(), Error> {
        let mut st = rt::state();
        let t = st.task_of_tid(tid)?;
        let ch = st.engine.helper_add(self.id, t)?;
        st.apply(&ch);
        Ok(())
    }

    /// Removes helper `tid`, revoking what it inherited through this
    /// condition variable (the PI-CV paper's `pthread_cond_helpers_del`;
    /// C: `heir_cond_remove_helper`).
    pub fn remove_helper(&self, tid: i32) -> Result<(), Error> {
        let mut st = rt::state();
        let t = st.lookup_tid(tid).ok_or(Error::NoSuchThread(tid))?;
        st.rearm_waiters_naming(t, Some(self.id));
        let ch = st.engine.helper_del(self.id, t)?;
        st.apply(&ch);
        Ok(())
    }

    /// The previous release's name of [`PiCondvar::add_helper`].
    #[deprecated(note = "renamed `add_helper`")]
    pub fn helpers_add(&self, tid: i32) -> Result<(), Error> {
        self.add_helper(tid)
    }

    /// The previous release's name of [`PiCondvar::remove_helper`].
    #[deprecated(note = "renamed `remove_helper`")]
    pub fn helpers_del(&self, tid: i32) -> Result<(), Error> {
        self.remove_helper(tid)
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
        crate::trace::mark_cond("wait", self.id);
        let me_tid = rt::tid();
        let (shared, next_owner, kernel, _waiting) = {
            let mut st = rt::state();
            let me = st.current()?;
            // Counted before the mutex is given up (see `waiters`).
            self.waiters.fetch_add(1, Ordering::SeqCst);
            let waiting = Waiting(&self.waiters);
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
            // Armed before the changes are applied, so that the helper the
            // kernel boosts gets no `sched_setattr` for it.
            let kernel = self.lend == Lend::Kernel && st.arm_kernel_wait(me, self.id);
            st.apply(&ch);
            let next = next.and_then(|t| st.shared(t));
            if let Some(n) = &next {
                n.wake.store(UNPARKED, Ordering::Release);
            }
            if let Err(e) = mutex.release_word(&mut st) {
                st.disarm(me);
                sh.boost.store(0, Ordering::Release);
                let ch = st.engine.cancel_wait(me)?;
                st.apply(&ch);
                sh.wake.store(UNPARKED, Ordering::Relaxed);
                return Err(e);
            }
            (sh, next, kernel, waiting)
        };
        if let Some(n) = next_owner {
            sys::futex_wake(&n.wake, 1);
        }
        let result = if kernel {
            self.sleep_kernel(&shared, me_tid, deadline_ns)?
        } else {
            sleep_user(&shared, me_tid, deadline_ns)?
        };
        mutex.relock()?;
        if result == WaitResult::Woken {
            crate::trace::mark_cond("woken", self.id);
        }
        Ok(result)
    }

    /// A kernel-boosted wait's sleep (see the module docs), armed.
    fn sleep_kernel(
        &self,
        sh: &ThreadShared,
        me_tid: i32,
        deadline_ns: Option<u64>,
    ) -> Result<WaitResult, Error> {
        let mut rearms = 0;
        loop {
            if sh.wake.load(Ordering::Acquire) == UNPARKED {
                return Ok(WaitResult::Woken);
            }
            let r = sys::futex_lock_pi(&sh.boost, deadline_ns);
            if r == libc::EINTR {
                continue;
            }
            // The sleep is over, and only this thread sleeps on the word:
            // the kernel holds no state for it any more.
            sh.boost.store(0, Ordering::Release);
            if r == 0 && sh.wake.load(Ordering::Acquire) == UNPARKED {
                return Ok(WaitResult::Woken);
            }
            let mut st = rt::state();
            if sh.wake.load(Ordering::Acquire) == UNPARKED {
                return Ok(WaitResult::Woken);
            }
            let Some(me) = st.lookup_tid(me_tid) else {
                // Dropped from the registry (cannot happen while waiting):
                // a spurious wake-up.
                return Ok(WaitResult::Woken);
            };
            st.disarm(me);
            if r == libc::ETIMEDOUT {
                let ch = st.engine.cancel_wait(me)?;
                st.apply(&ch);
                st.sync_helpers(self.id);
                sh.wake.store(UNPARKED, Ordering::Relaxed);
                return Ok(WaitResult::TimedOut);
            }
            // The helper left (0 with the word handed over, ESRCH, EAGAIN),
            // a kick re-armed the wait (0), or the kernel refused the word
            // (EDEADLK: a PI chain from the helper back to this thread).
            rearms += 1;
            let again = (r == 0 || r == libc::ESRCH || r == libc::EAGAIN)
                && rearms <= MAX_REARMS
                && st.arm_kernel_wait(me, self.id);
            st.sync_helpers(self.id);
            if !again {
                drop(st);
                return sleep_user(sh, me_tid, deadline_ns);
            }
        }
    }

    /// Wakes the most urgent waiter, if any; returns whether one was woken.
    pub fn signal(&self) -> Result<bool, Error> {
        crate::trace::mark_cond("signal", self.id);
        if self.waiters.load(Ordering::SeqCst) == 0 {
            // Nobody to wake: no engine lock (see `waiters`).
            return Ok(false);
        }
        let me_tid = rt::tid();
        let (any, woken, deferred) = {
            let mut st = rt::state();
            let me = st.lookup_tid(me_tid);
            let o = st.engine.cond_signal(self.id)?;
            let sh = o.value.and_then(|t| wake_locked(&mut st, t, me_tid));
            let d = st.apply_except(&o.changes, me);
            (o.value.is_some(), sh, if d { me } else { None })
        };
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
        crate::trace::mark_cond("broadcast", self.id);
        if self.waiters.load(Ordering::SeqCst) == 0 {
            return Ok(0);
        }
        let me_tid = rt::tid();
        let (n, woken, deferred) = {
            let mut st = rt::state();
            let me = st.lookup_tid(me_tid);
            let o = st.engine.cond_broadcast(self.id)?;
            let shs: Vec<_> = o
                .value
                .iter()
                .filter_map(|&t| wake_locked(&mut st, t, me_tid))
                .collect();
            let d = st.apply_except(&o.changes, me);
            (o.value.len(), shs, if d { me } else { None })
        };
        for sh in &woken {
            sys::futex_wake(&sh.wake, 1);
        }
        if let Some(me) = deferred {
            rt::state().sync(me);
        }
        Ok(n)
    }
}

/// A user wait's sleep on the `wake` word; on timeout the wait is
/// cancelled under the engine lock unless a signal chose it meanwhile.
fn sleep_user(
    sh: &ThreadShared,
    me_tid: i32,
    deadline_ns: Option<u64>,
) -> Result<WaitResult, Error> {
    loop {
        if sh.wake.load(Ordering::Acquire) == UNPARKED {
            return Ok(WaitResult::Woken);
        }
        if sys::futex_wait(&sh.wake, PARKED, deadline_ns) == FutexWait::TimedOut {
            let mut st = rt::state();
            if sh.wake.load(Ordering::Acquire) == UNPARKED {
                return Ok(WaitResult::Woken);
            }
            if let Some(me) = st.lookup_tid(me_tid) {
                let ch = st.engine.cancel_wait(me)?;
                st.apply(&ch);
            }
            sh.wake.store(UNPARKED, Ordering::Relaxed);
            return Ok(WaitResult::TimedOut);
        }
    }
}

/// Under the engine lock, for waiter `w` the engine just woke: marks it
/// woken and, if it sleeps in a kernel wait, ends that wait (the named
/// helper — the caller, `me_tid`, or not — as in the module docs).
/// Returns the waiter to wake on its `wake` word after the lock, if that
/// is how it sleeps.
fn wake_locked(st: &mut State, w: TaskId, me_tid: i32) -> Option<Arc<ThreadShared>> {
    let sh = st.shared(w)?;
    match st.disarm(w) {
        None => {
            sh.wake.store(UNPARKED, Ordering::Release);
            Some(sh)
        }
        Some((_, h_tid)) if h_tid == me_tid => {
            sh.wake.store(UNPARKED, Ordering::Release);
            // The caller owns the word: the kernel hands it to the waiter
            // (or, if it is not asleep yet, frees it) and ends the boost.
            if sys::futex_unlock_pi(&sh.boost).is_err() {
                // The waiter already left the kernel (timed out): make
                // sure it does not sleep again.
                st.kick(w);
            }
            None
        }
        Some(_) => {
            // Kicked before `wake` is set: the waiter cannot leave the wait
            // before the signal is pending, so its handler runs in heir-rt.
            st.kick(w);
            sh.wake.store(UNPARKED, Ordering::Release);
            None
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A signal or broadcast with no waiter returns without the engine
    /// lock: it completes while another thread holds that lock.
    #[test]
    fn signal_without_waiters_does_not_take_the_engine_lock() {
        let cv = Arc::new(PiCondvar::new());
        let held = rt::state();
        let (tx, rx) = mpsc::channel();
        let c = Arc::clone(&cv);
        let t = std::thread::spawn(move || {
            let r = (c.signal(), c.broadcast());
            let _ = tx.send(r);
        });
        let got = rx.recv_timeout(Duration::from_secs(10));
        drop(held);
        t.join().expect("signaller");
        let (signal, broadcast) = got.expect("signal with no waiter waited for the engine lock");
        assert!(!signal.expect("signal"));
        assert_eq!(broadcast.expect("broadcast"), 0);
    }
}
