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
//!      urgency past the owner (into condition-variable helpers, the PI-CV paper's
//!      Fig. 7), while the kernel boosts the owner itself;
//!   3. sleep in `FUTEX_LOCK_PI2`, outside the engine lock;
//!   4. on return, under the engine lock: `acquire` for the caller (after
//!      dropping a stale owner), or `cancel_wait` on timeout.
//! - **Slow unlock**: under the engine lock, `release` in the engine (the
//!   caller's own boost from the engine ends; the kernel keeps it boosted by
//!   its kernel waiters until the futex changes hands) then `FUTEX_UNLOCK_PI`
//!   (which does not sleep) — so a contender reading the word under the
//!   engine lock never sees an owner the engine has already dropped.
//! - **Lazy waits** (the contended lock and unlock without the engine
//!   lock): while no thread waits in the engine on anything but a
//!   `PiMutex` (`rt::HEIR_WAITS`) and the caller is not more urgent than
//!   the owner by what heir-rt last applied (so the engine would change
//!   nothing and call no `sched_setattr`), the caller publishes its wait
//!   in its registry record and sleeps in `FUTEX_LOCK_PI2` at once; the
//!   kernel's PI futex boosts the owner. Whoever takes the engine lock
//!   next — any operation, a query such as `thread::info` included —
//!   first tells the engine of every published lazy wait (steps 1-2 on the
//!   waiter's behalf: `promote`), so the engine sees every chain through
//!   mutexes before it walks one (PI-CV through a mutex, the PI-CV paper's Fig. 7)
//!   or answers a question; a promoted waiter finishes with step 4. An
//!   owner the engine does not record releases without the engine lock
//!   too, announcing it in `tracked` (`RELEASING`) so that a contender
//!   never records an owner that is letting go.
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

/// `RobustWord::tracked` bit: its owner (the TID beside it) is releasing
/// the word without the engine (a lazy unlock): not to be recorded.
const RELEASING: u32 = 0x8000_0000;

/// What a lazy contended lock came to ([`RawPiMutex::lock_lazy`]).
enum Lazy {
    /// The caller owns the mutex (`true`: with `FUTEX_OWNER_DIED`).
    Got(bool),
    /// Interrupted: read the word again.
    Again,
    /// Take the engine path.
    Eager,
}

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
    /// A new unlocked mutex (`inherit` in the engine).
    pub fn new() -> Self {
        Self::with_protocol(Protocol::Inherit)
    }

    /// A new unlocked mutex that the engine knows as an M-BWI (`bwi`)
    /// mutex: the same PI futex, the kernel's inheritance (heir-runner
    /// adds M-BWI's budget accounting, [`crate::bwi`]); the engine walks
    /// it as `inherit` for urgency and lends its waiters' scheduling
    /// contexts along it.
    pub fn new_bwi() -> Self {
        Self::with_protocol(Protocol::Bwi)
    }

    fn with_protocol(protocol: Protocol) -> Self {
        let id = rt::state().new_pi_mutex(protocol);
        RawPiMutex {
            w: Box::default(),
            id,
        }
    }

    /// The engine's id of this mutex.
    pub fn id(&self) -> MutexId {
        self.id
    }

    /// Its protocol in the engine: `inherit`, or `bwi` ([`Self::new_bwi`]).
    pub fn protocol(&self) -> Protocol {
        rt::state()
            .mutex_protocol(self.id)
            .unwrap_or(Protocol::Inherit)
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
    #[inline]
    pub fn try_lock(&self) -> Result<(), Error> {
        let me = rt::me();
        let list = List::of(me);
        if let Some(l) = list {
            l.pending(&self.w);
        }
        if self.take(0, me.tid as u32) {
            return self.acquired(list);
        }
        self.try_lock_slow(me.tid as u32, list)
    }

    /// [`RawPiMutex::try_lock`] when the word was not 0: a dead owner's
    /// word, or busy.
    #[inline(never)]
    fn try_lock_slow(&self, me: u32, list: Option<List>) -> Result<(), Error> {
        let r = if let Err(e) = self.recoverable() {
            Err(e)
        } else if self.take(FUTEX_OWNER_DIED, me) {
            Ok(true)
        } else {
            Err(Error::Busy)
        };
        self.after_slow_lock(list, r)
    }

    /// Locks, blocking as long as needed.
    #[inline]
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
    ///
    /// The uncontended case (the word 0: CAS to the caller's tid, linked
    /// on its robust list) is inlined; the rest is
    /// `lock_until_slow`. A mutex made not recoverable is
    /// free (0), so the fast path may take it: `acquired`
    /// sees the state and lets it go again.
    #[inline]
    pub fn lock_until(&self, deadline_ns: Option<u64>) -> Result<(), Error> {
        let me = rt::me();
        let list = List::of(me);
        if let Some(l) = list {
            l.pending(&self.w);
        }
        if self.take(0, me.tid as u32) {
            return self.acquired(list);
        }
        self.lock_until_slow(deadline_ns, list)
    }

    /// [`RawPiMutex::lock_until`] past its first CAS (the operation
    /// announced pending on `list`).
    #[inline(never)]
    fn lock_until_slow(&self, deadline_ns: Option<u64>, list: Option<List>) -> Result<(), Error> {
        let r = match self.recoverable() {
            Ok(()) => self.lock_slow(deadline_ns),
            Err(e) => Err(e),
        };
        self.after_slow_lock(list, r)
    }

    /// The end of a lock that left the fast path: `r` is what it came to
    /// (`Ok(died)`: the caller owns the futex).
    fn after_slow_lock(&self, list: Option<List>, r: Result<bool, Error>) -> Result<(), Error> {
        match r {
            Ok(false) => self.acquired(list),
            Ok(true) => {
                self.link(list);
                self.w.state.store(INCONSISTENT, Ordering::Release);
                Err(Error::OwnerDead)
            }
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
    #[inline]
    fn take(&self, from: u32, me: u32) -> bool {
        self.w
            .word
            .compare_exchange(from, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Links the word, just taken, on the caller's robust `list` and ends
    /// the pending operation.
    #[inline]
    fn link(&self, list: Option<List>) {
        if let Some(l) = list {
            l.link(&self.w);
            l.done();
        }
    }

    /// After the caller got the futex (clean: without
    /// `FUTEX_OWNER_DIED`): links it on the caller's robust list, ends the
    /// pending operation, and reports the mutex's state.
    #[inline]
    fn acquired(&self, list: Option<List>) -> Result<(), Error> {
        self.link(list);
        if self.w.state.load(Ordering::Acquire) == NOT_RECOVERABLE {
            return self.not_recoverable();
        }
        Ok(())
    }

    /// Made unusable while this thread waited for it (or before its fast
    /// path took the free word): let go again.
    #[cold]
    #[inline(never)]
    fn not_recoverable(&self) -> Result<(), Error> {
        let _ = self.unlock();
        Err(Error::NotRecoverable)
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
            if owner != 0 {
                match self.lock_lazy(deadline_ns, owner)? {
                    Lazy::Got(died) => return Ok(died),
                    Lazy::Again => continue,
                    Lazy::Eager => {}
                }
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

    /// The lazy contended lock (module docs, "Lazy waits"): while no
    /// thread waits in the engine on anything but a `PiMutex`
    /// ([`rt::HEIR_WAITS`] is zero) and the caller is not more urgent than
    /// the `owner` (so the engine would change nothing: no `sched_setattr`,
    /// [`rt::lazy_wait_is_exact`]) the caller publishes its wait and
    /// sleeps in `FUTEX_LOCK_PI2` without the engine lock; the kernel's PI
    /// futex boosts the owner. If the engine was told of the wait
    /// meanwhile (promoted), it is finished under the engine lock as step
    /// 4. [`Lazy::Eager`]: take the engine path instead.
    fn lock_lazy(&self, deadline_ns: Option<u64>, owner: u32) -> Result<Lazy, Error> {
        let me = rt::tid();
        let exact = || {
            rt::HEIR_WAITS.load(Ordering::SeqCst) == 0 && rt::lazy_wait_is_exact(me, owner as i32)
        };
        if !exact() {
            return Ok(Lazy::Eager);
        }
        let Some(sh) = rt::current_shared() else {
            return Ok(Lazy::Eager);
        };
        sh.lazy_mutex.store(
            self as *const RawPiMutex as *mut RawPiMutex,
            Ordering::Release,
        );
        sh.lazy.store(rt::LAZY_WAITING, Ordering::SeqCst);
        if rt::LAZY_ANY.load(Ordering::SeqCst) == 0 {
            rt::LAZY_ANY.store(1, Ordering::SeqCst);
        }
        // Withdraw if an operation that may add a wait on something else
        // started meanwhile (it may not have seen this wait: see
        // `rt::state`), unless it promoted this one already.
        let promoted = if !exact() {
            if self.end_lazy(&sh) {
                return Ok(Lazy::Eager);
            }
            true
        } else {
            false
        };
        let r = sys::futex_lock_pi(&self.w.word, deadline_ns);
        if !promoted && self.end_lazy(&sh) {
            return match r {
                0 => Ok(Lazy::Got(self.clear_owner_died())),
                e if e == libc::ETIMEDOUT => Err(Error::TimedOut),
                // The kernel saw a cycle of PI futexes: the engine path
                // names it (every lazy wait in it is promoted first).
                e if e == libc::EDEADLK => Ok(Lazy::Eager),
                e if e == libc::EINTR || e == libc::EAGAIN => Ok(Lazy::Again),
                e => Err(Error::Os {
                    op: "FUTEX_LOCK_PI2",
                    errno: e,
                }),
            };
        }
        // Promoted: the engine records the wait; step 4 as usual.
        sh.lazy.store(rt::LAZY_IDLE, Ordering::SeqCst);
        match self.after_kernel_lock(r, true)? {
            Some(died) => Ok(Lazy::Got(died)),
            None => Ok(Lazy::Again),
        }
    }

    /// Ends the caller's lazy wait if nobody promoted it: true if it was
    /// still lazy (the engine never heard of it).
    fn end_lazy(&self, sh: &rt::ThreadShared) -> bool {
        sh.lazy
            .compare_exchange(
                rt::LAZY_WAITING,
                rt::LAZY_IDLE,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
    }

    /// Under the engine lock ([`State::reconcile`]): tells the engine of
    /// the lazy wait of `t` for this mutex — steps 1 and 2 on its behalf.
    /// Nothing is recorded if the mutex is free, handed to `t` already, or
    /// being released by its owner (`t` then records itself as owner when
    /// it wakes, step 4).
    pub(crate) fn promote(&self, st: &mut State, t: TaskId) {
        let Some(t_tid) = st.tid_of(t) else {
            return;
        };
        let owner_tid = loop {
            let v = self.w.word.load(Ordering::Relaxed);
            let owner = v & FUTEX_TID_MASK;
            if owner == 0 || owner == t_tid as u32 {
                return;
            }
            if self.force_slow_unlock(v) {
                break owner;
            }
        };
        let Ok(owner_t) = st.task_of_tid(owner_tid as i32) else {
            return;
        };
        match self.record_owner(st, owner_t, owner_tid) {
            Ok(true) => {}
            Ok(false) => return,
            Err(_) => return,
        }
        match st.engine.lock(t, self.id) {
            Ok(o) => {
                st.apply(&o.changes);
                if o.value == LockResult::Acquired {
                    if let Ok(ch) = st.engine.release(t, self.id) {
                        st.apply(&ch);
                    }
                }
            }
            Err(e) => st.engine_failed(e),
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
        let mut st = rt::state_for_mutex();
        let owner_tid = self.w.word.load(Ordering::Relaxed) & FUTEX_TID_MASK;
        if owner_tid == 0 {
            return Ok(false);
        }
        let me_t = st.current()?;
        let Ok(owner_t) = st.task_of_tid(owner_tid as i32) else {
            return Ok(false);
        };
        if !self.record_owner(&mut st, owner_t, owner_tid)? {
            return Ok(false);
        }
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
        let mut st = rt::state_for_mutex();
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
        Ok(self.clear_owner_died())
    }

    /// After the kernel made the caller the owner: clears
    /// `FUTEX_OWNER_DIED`, which the kernel keeps when it hands over the
    /// futex of a dead owner (or lets the caller take it over); true if it
    /// was set. Read first: only the kernel sets the bit, and not while a
    /// live thread owns the word, so the common case costs no
    /// read-modify-write of the contended line.
    fn clear_owner_died(&self) -> bool {
        self.w.word.load(Ordering::Acquire) & FUTEX_OWNER_DIED != 0
            && self.w.word.fetch_and(!FUTEX_OWNER_DIED, Ordering::AcqRel) & FUTEX_OWNER_DIED != 0
    }

    /// Makes the engine's owner of this mutex `owner_t` (dropping a stale
    /// one), the word's owner `owner_tid`. Under the engine lock. False
    /// (nothing recorded) if that owner is releasing it without the engine
    /// (a lazy unlock) or no longer owns it.
    fn record_owner(&self, st: &mut State, owner_t: TaskId, owner_tid: u32) -> Result<bool, Error> {
        if !self.claim_tracked(owner_tid) {
            return Ok(false);
        }
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
        Ok(true)
    }

    /// Under the engine lock: makes `tracked` name `owner_tid`, so that
    /// owner's unlock takes the engine path — unless it is releasing the
    /// word without the engine ([`RELEASING`] set by its lazy unlock) or
    /// the word no longer names it (it released before the claim).
    fn claim_tracked(&self, owner_tid: u32) -> bool {
        loop {
            let cur = self.w.tracked.load(Ordering::SeqCst);
            if cur & RELEASING != 0 {
                return false;
            }
            if cur != owner_tid
                && self
                    .w
                    .tracked
                    .compare_exchange(cur, owner_tid, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
            {
                continue;
            }
            if self.w.word.load(Ordering::SeqCst) & FUTEX_TID_MASK == owner_tid {
                return true;
            }
            // Released meanwhile: undo (the owner's unlock finished).
            let _ =
                self.w
                    .tracked
                    .compare_exchange(owner_tid, cur, Ordering::SeqCst, Ordering::SeqCst);
            return false;
        }
    }

    /// Unlocks. [`Error::NotOwner`] if the caller does not own it. Unlocking
    /// a mutex left inconsistent (after [`Error::OwnerDead`], without
    /// [`make_consistent`](Self::make_consistent)) makes it unusable.
    ///
    /// The uncontended case (the word is the caller's tid alone, the state
    /// consistent, the engine not recording the caller as owner: off the
    /// robust list, CAS to 0) is inlined; the rest is
    /// `unlock_slow`.
    #[inline]
    pub fn unlock(&self) -> Result<(), Error> {
        let me = rt::me();
        let tid = me.tid as u32;
        if self.w.word.load(Ordering::Relaxed) == tid
            && self.w.state.load(Ordering::Relaxed) == CONSISTENT
            && self.w.tracked.load(Ordering::SeqCst) != tid
        {
            let list = List::of(me);
            if let Some(l) = list {
                l.pending(&self.w);
                l.unlink(&self.w);
            }
            if self.take_back(tid) {
                if let Some(l) = list {
                    l.done();
                }
                return Ok(());
            }
        }
        self.unlock_slow(tid)
    }

    /// [`RawPiMutex::unlock`] past its fast path (idempotent: the fast path
    /// may have left the robust list already).
    #[inline(never)]
    fn unlock_slow(&self, me: u32) -> Result<(), Error> {
        let v = self.w.word.load(Ordering::Relaxed);
        if v & FUTEX_TID_MASK != me {
            return Err(Error::NotOwner);
        }
        let list = self.release_prepare();
        if self.w.tracked.load(Ordering::SeqCst) != me {
            // With `FUTEX_WAITERS` set (only the kernel's hand-over clears
            // it) the CAS cannot succeed: not tried, so a contended turn
            // does one read-modify-write fewer on the word's line.
            if v & FUTEX_WAITERS == 0 && self.take_back(me) {
                if let Some(l) = list {
                    l.done();
                }
                return Ok(());
            }
            // Contended, and the engine does not record the caller as
            // owner: released without the engine lock, unless a contender
            // records the caller first (`claim_tracked`).
            if self
                .w
                .tracked
                .compare_exchange(0, me | RELEASING, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // `take_back` failed: `FUTEX_WAITERS` is set, and only the
                // kernel's hand-over clears it — straight to the kernel.
                let r = self.unlock_in_kernel();
                let _ = self.w.tracked.compare_exchange(
                    me | RELEASING,
                    0,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
                if let Some(l) = list {
                    l.done();
                }
                return r;
            }
        }
        let mut st = rt::state_for_unlock(self);
        self.unlock_locked(&mut st)
    }

    /// The futex part of an unlock: CAS, else `FUTEX_UNLOCK_PI` (the
    /// kernel hands it to its top waiter).
    fn release_word(&self, me: u32) -> Result<(), Error> {
        if self.take_back(me) {
            Ok(())
        } else {
            self.unlock_in_kernel()
        }
    }

    /// `FUTEX_UNLOCK_PI`: the kernel hands the futex to its top waiter (or
    /// clears it if there is none).
    fn unlock_in_kernel(&self) -> Result<(), Error> {
        sys::futex_unlock_pi(&self.w.word).map_err(|errno| Error::Os {
            op: "FUTEX_UNLOCK_PI",
            errno,
        })
    }

    /// CAS `me → 0`.
    #[inline]
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
        let r = self.release_word(me);
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
        rt::state().free_mutex(self.id);
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
    #[inline]
    fn acquire(&self, deadline_ns: Option<u64>) -> Result<Acquired, Error> {
        held(self.lock_until(deadline_ns))
    }

    #[inline]
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
#[inline]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `bwi` mutex is a PI futex that the engine knows as `bwi`; a
    /// plain one is `inherit`. Both lock and unlock alike.
    #[test]
    fn a_bwi_mutex_is_bwi_in_the_engine_and_locks_as_a_pi_mutex() {
        let (pi, bwi) = (RawPiMutex::new(), RawPiMutex::new_bwi());
        assert_eq!(pi.protocol(), Protocol::Inherit);
        assert_eq!(bwi.protocol(), Protocol::Bwi);
        for m in [&pi, &bwi] {
            m.lock().expect("lock");
            assert!(m.is_owned_by_current());
            m.unlock().expect("unlock");
            assert_eq!(m.owner_tid(), None);
        }
    }
}
