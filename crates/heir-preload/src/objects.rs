//! heir's state behind the program's `pthread_*_t` objects.

use std::collections::VecDeque;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, Ordering};

use heir::condvar::WaitResult;
use heir::{Error, PiCondvar, PiMutex, RawPiMutex};

use crate::learn::{Action, Learner};
use crate::summary;

/// glibc's `__kind` bits that make a mutex glibc's: process-shared
/// (`PTHREAD_MUTEX_PSHARED_BIT`) and priority protect
/// (`PTHREAD_MUTEX_PRIO_PROTECT_NP`).
pub(crate) const KIND_GLIBC: i32 = 128 | 64;
/// glibc's robust bit in `__kind` (`PTHREAD_MUTEX_ROBUST_NORMAL_NP`).
pub(crate) const KIND_ROBUST: i32 = 16;

/// The program's `pthread_mutex_t` as heir uses it (glibc's 40 bytes):
/// the state pointer over `__lock`/`__count`, `__kind` where glibc has it.
#[repr(C)]
pub(crate) struct MutexSlot {
    pub state: AtomicPtr<MutexState>,
    _owner: u32,
    _nusers: u32,
    pub kind: AtomicI32,
    _rest: [u32; 5],
}

const _: () =
    assert!(std::mem::size_of::<MutexSlot>() == std::mem::size_of::<libc::pthread_mutex_t>());
const _: () = assert!(std::mem::offset_of!(MutexSlot, kind) == 16);

/// One interposed mutex.
#[derive(Debug)]
pub(crate) struct MutexState {
    pub raw: RawPiMutex,
    /// Recursive locks beyond the first (the owner's only).
    pub count: AtomicU32,
    /// `PTHREAD_MUTEX_NORMAL` / `RECURSIVE` / `ERRORCHECK` (adaptive is
    /// normal).
    pub kind: i32,
    pub robust: bool,
}

impl MutexState {
    pub fn new(kind: i32) -> MutexState {
        summary::MUTEXES.inc();
        MutexState {
            raw: RawPiMutex::new(),
            count: AtomicU32::new(0),
            kind: kind & 3,
            robust: kind & KIND_ROBUST != 0,
        }
    }

    fn owner_dead(&self) -> c_int {
        if self.robust {
            libc::EOWNERDEAD
        } else {
            // A normal mutex whose owner died: glibc's would block its
            // lockers for ever; heir hands it over as it is.
            let _ = self.raw.make_consistent();
            0
        }
    }

    /// `pthread_mutex_lock` / timed (deadline: `CLOCK_MONOTONIC` ns).
    /// The caller's own mutex is found on the contended path (heir-rt
    /// refuses it with an empty-cycle `Deadlock` while the caller's tid is
    /// in the word): the uncontended lock looks the thread up once.
    #[inline]
    pub fn lock(&self, deadline_ns: Option<u64>) -> c_int {
        match self.raw.lock_until(deadline_ns) {
            Ok(()) => 0,
            Err(e) => self.lock_failed(e),
        }
    }

    /// A lock that did not simply get the mutex: the caller's own
    /// (recursive count or `EDEADLK`), a dead owner's, or an error.
    #[cold]
    #[inline(never)]
    fn lock_failed(&self, e: Error) -> c_int {
        match e {
            Error::OwnerDead => self.owner_dead(),
            Error::Deadlock { .. } if self.raw.is_owned_by_current() => self.relock(),
            e => e.errno(),
        }
    }

    fn relock(&self) -> c_int {
        if self.kind == libc::PTHREAD_MUTEX_RECURSIVE {
            let c = self.count.load(Ordering::Relaxed);
            if c == u32::MAX {
                return libc::EAGAIN;
            }
            self.count.store(c + 1, Ordering::Relaxed);
            0
        } else {
            // Errorcheck: EDEADLK. Normal: glibc's PI mutex would block
            // for ever; heir says EDEADLK.
            libc::EDEADLK
        }
    }

    #[inline]
    pub fn trylock(&self) -> c_int {
        match self.raw.try_lock() {
            Ok(()) => 0,
            Err(e) => self.trylock_failed(e),
        }
    }

    /// A try that did not get the mutex: the caller's own (recursive
    /// count or `EBUSY`), a dead owner's, busy, or an error.
    #[cold]
    #[inline(never)]
    fn trylock_failed(&self, e: Error) -> c_int {
        match e {
            Error::Busy if self.raw.is_owned_by_current() => {
                if self.kind == libc::PTHREAD_MUTEX_RECURSIVE {
                    self.relock()
                } else {
                    libc::EBUSY
                }
            }
            Error::OwnerDead => self.owner_dead(),
            e => e.errno(),
        }
    }

    /// `pthread_mutex_unlock`. The recursive count is non-zero only while
    /// its owner holds the mutex more than once, so the ownership check is
    /// heir-rt's unlock's own, but for that case.
    #[inline]
    pub fn unlock(&self) -> c_int {
        let c = self.count.load(Ordering::Relaxed);
        if c > 0 {
            return self.unlock_recursive(c);
        }
        match self.raw.unlock() {
            Ok(()) => 0,
            Err(e) => Self::unlock_failed(e),
        }
    }

    #[cold]
    #[inline(never)]
    fn unlock_recursive(&self, c: u32) -> c_int {
        if !self.raw.is_owned_by_current() {
            summary::UNLOCK_NOT_OWNER.inc();
            return libc::EPERM;
        }
        self.count.store(c - 1, Ordering::Relaxed);
        0
    }

    #[cold]
    #[inline(never)]
    fn unlock_failed(e: Error) -> c_int {
        if e == Error::NotOwner {
            summary::UNLOCK_NOT_OWNER.inc();
            return libc::EPERM;
        }
        e.errno()
    }
}

/// The program's `pthread_cond_t` (glibc's 48 bytes): the state pointer
/// over `__wseq`; glibc's `__wrefs` (offset 36) has bit 0 set in a
/// process-shared one glibc initialised.
#[repr(C)]
pub(crate) struct CondSlot {
    pub state: AtomicPtr<CondState>,
    _a: [u32; 7],
    pub wrefs: AtomicU32,
    _b: [u32; 2],
}

const _: () =
    assert!(std::mem::size_of::<CondSlot>() == std::mem::size_of::<libc::pthread_cond_t>());
const _: () = assert!(std::mem::offset_of!(CondSlot, wrefs) == 36);

/// One interposed condition variable.
pub(crate) struct CondState {
    pub cv: PiCondvar,
    pub clock: libc::clockid_t,
    learner: PiMutex<Learner>,
    /// Waits with a mutex left to glibc: a sequence futex.
    seq: AtomicU32,
    seq_waiters: AtomicU32,
    /// Threads inside [`CondState::wait`], its retry without helpers
    /// included: what `pthread_cond_destroy` must not destroy under them
    /// ([`CondState::busy`]). A signal's fast path is `PiCondvar`'s own
    /// count.
    waiters: AtomicU32,
    /// The last signaller the learner saw and when: a helper that signals
    /// again within a quarter of the time to live skips the learner.
    fast_tid: AtomicI32,
    fast_ns: std::sync::atomic::AtomicU64,
}

impl CondState {
    pub fn new(clock: libc::clockid_t) -> CondState {
        summary::CONDS.inc();
        let cfg = crate::config::get();
        CondState {
            cv: PiCondvar::new(),
            clock,
            learner: PiMutex::new(Learner::new(cfg.helpers, cfg.ttl_ns)),
            seq: AtomicU32::new(0),
            seq_waiters: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            fast_tid: AtomicI32::new(0),
            fast_ns: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn apply(&self, l: &mut Learner, acts: crate::learn::Actions) {
        for a in acts.iter() {
            match a {
                Action::Add(t) => match self.cv.add_helper(t) {
                    Ok(()) => {
                        summary::HELPERS_LEARNED.inc();
                        if heir::trace::tracing() {
                            heir::trace::mark(format_args!(
                                "heir_exec learn cond={} helper={t}",
                                self.cv.id().0
                            ));
                        }
                    }
                    Err(e) if e.errno() == libc::EEXIST => {}
                    Err(_) => l.forget(t),
                },
                Action::Del(t) => {
                    if self.cv.remove_helper(t).is_ok() {
                        summary::HELPERS_DROPPED.inc();
                        if heir::trace::tracing() {
                            heir::trace::mark(format_args!(
                                "heir_exec drop cond={} helper={t}",
                                self.cv.id().0
                            ));
                        }
                    }
                }
            }
        }
    }

    /// The learning rule's side of a signal or broadcast.
    pub fn learn_signal(&self) {
        if !crate::config::get().cond_learn {
            return;
        }
        let me = heir::rt::tid();
        let now = heir::sys::now_ns();
        let ttl = crate::config::get().ttl_ns;
        if self.fast_tid.load(Ordering::Acquire) == me
            && now.saturating_sub(self.fast_ns.load(Ordering::Acquire)) < ttl / 4
        {
            return;
        }
        if let Ok(mut l) = self.learner.lock() {
            let acts = l.on_signal(me, now);
            if !acts.is_empty() {
                self.apply(&mut l, acts);
            }
            if l.helpers().any(|t| t == me) {
                self.fast_ns.store(now, Ordering::Release);
                self.fast_tid.store(me, Ordering::Release);
            }
        }
    }

    fn learn_wait(&self) {
        if !crate::config::get().cond_learn {
            return;
        }
        let me = heir::rt::tid();
        if let Ok(mut l) = self.learner.lock() {
            self.fast_tid.store(0, Ordering::Release);
            let acts = l.on_wait(me, heir::sys::now_ns());
            if !acts.is_empty() {
                self.apply(&mut l, acts);
            }
        }
    }

    /// Waits with a heir mutex.
    pub fn wait(&self, m: &MutexState, deadline_ns: Option<u64>) -> c_int {
        if !m.raw.is_owned_by_current() {
            return libc::EPERM;
        }
        summary::COND_WAITS.inc();
        self.learn_wait();
        let saved = m.count.swap(0, Ordering::Relaxed);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut r = self.cv.wait_raw(&m.raw, deadline_ns);
        if matches!(r, Err(Error::Deadlock { .. })) {
            // Lending would close a cycle (a learned helper waits for a
            // mutex this thread holds): refused, state unchanged. The
            // helpers go, and the wait goes on without them.
            summary::COND_CYCLES.inc();
            if let Ok(mut l) = self.learner.lock() {
                self.fast_tid.store(0, Ordering::Release);
                let acts = l.drain();
                self.apply(&mut l, acts);
            }
            r = self.cv.wait_raw(&m.raw, deadline_ns);
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        m.count.store(saved, Ordering::Relaxed);
        match r {
            Ok(WaitResult::Woken) => 0,
            Ok(WaitResult::TimedOut) => libc::ETIMEDOUT,
            Err(Error::OwnerDead) => m.owner_dead(),
            Err(e) => e.errno(),
        }
    }

    /// Waits with a mutex glibc keeps: no boost (counted).
    ///
    /// # Safety
    ///
    /// `m` is a glibc mutex the caller holds.
    pub unsafe fn wait_glibc(
        &self,
        m: *mut libc::pthread_mutex_t,
        deadline_ns: Option<u64>,
    ) -> c_int {
        summary::COND_FALLBACK_WAITS.inc();
        let s = self.seq.load(Ordering::Acquire);
        self.seq_waiters.fetch_add(1, Ordering::AcqRel);
        // SAFETY: `m` is the caller's glibc mutex.
        let r = unsafe { crate::real::mutex_unlock(m) };
        if r != 0 {
            self.seq_waiters.fetch_sub(1, Ordering::AcqRel);
            return r;
        }
        let w = heir::sys::futex_wait(&self.seq, s, deadline_ns);
        self.seq_waiters.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: as above.
        let r = unsafe { crate::real::mutex_lock(m) };
        if r != 0 {
            return r;
        }
        if w == heir::sys::FutexWait::TimedOut && self.seq.load(Ordering::Acquire) == s {
            libc::ETIMEDOUT
        } else {
            0
        }
    }

    pub fn signal(&self) -> c_int {
        // Learning after the wake: dropping an expired helper may lower
        // the caller itself, which must not happen before the wake.
        // Without waiters `PiCondvar::signal` returns at once (its own
        // count of waiters, no engine lock).
        let r = match self.cv.signal() {
            Ok(_) => 0,
            Err(e) => e.errno(),
        };
        if self.seq_waiters.load(Ordering::Acquire) > 0 {
            self.seq.fetch_add(1, Ordering::AcqRel);
            heir::sys::futex_wake(&self.seq, 1);
        }
        self.learn_signal();
        r
    }

    pub fn broadcast(&self) -> c_int {
        // Without waiters `PiCondvar::broadcast` returns at once (its own
        // count of waiters, no engine lock).
        let r = match self.cv.broadcast() {
            Ok(_) => 0,
            Err(e) => e.errno(),
        };
        if self.seq_waiters.load(Ordering::Acquire) > 0 {
            self.seq.fetch_add(1, Ordering::AcqRel);
            heir::sys::futex_wake(&self.seq, i32::MAX);
        }
        self.learn_signal();
        r
    }

    pub fn busy(&self) -> bool {
        self.seq_waiters.load(Ordering::Acquire) > 0
            || self.waiters.load(Ordering::SeqCst) > 0
            || self.cv.has_waiters()
    }
}

/// The program's `pthread_barrier_t` (glibc's 32 bytes): the state
/// pointer, and a tag where glibc keeps its `shared` word.
#[repr(C)]
pub(crate) struct BarrierSlot {
    pub state: AtomicPtr<BarrierState>,
    _in_round: u32,
    pub tag: AtomicU32,
    _rest: [u32; 4],
}

const _: () =
    assert!(std::mem::size_of::<BarrierSlot>() == std::mem::size_of::<libc::pthread_barrier_t>());

/// Tag of a barrier heir initialised (glibc's `shared` word is 0 or 128).
pub(crate) const BARRIER_TAG: u32 = 0x6865_6972;

/// What the lenders of a round share (under [`BarrierState::slow`]).
#[derive(Debug, Default)]
struct Lending {
    /// Who arrived in the previous round: the gang.
    last: Vec<i32>,
    /// Helpers added in this round.
    boosted: Vec<i32>,
}

/// One interposed barrier. Its fast path is glibc's kind: an arrival
/// counter and a generation futex word, no engine. A thread that has
/// waited [`crate::config::Config::gpm_grace_ns`] without the round
/// completing takes the slow path: the previous round's threads that have
/// not arrived become helpers of a PI condition variable it waits on, so
/// they run at its priority until they arrive (gang priority management,
/// learned: the gang is who arrived last round).
pub(crate) struct BarrierState {
    count: u32,
    arrived: AtomicU32,
    gen: AtomicU32,
    /// This round's arrivals, in order (0: not yet).
    slots: Vec<AtomicI32>,
    /// Set (under `slow`) while some waiter lends.
    lending: std::sync::atomic::AtomicBool,
    slow: PiMutex<Lending>,
    cv: PiCondvar,
}

impl BarrierState {
    pub fn new(count: u32) -> BarrierState {
        summary::BARRIERS.inc();
        BarrierState {
            count,
            arrived: AtomicU32::new(0),
            gen: AtomicU32::new(0),
            slots: (0..count).map(|_| AtomicI32::new(0)).collect(),
            lending: std::sync::atomic::AtomicBool::new(false),
            slow: PiMutex::new(Lending::default()),
            cv: PiCondvar::new(),
        }
    }

    pub fn wait(&self) -> c_int {
        let me = heir::rt::tid();
        let gen = self.gen.load(Ordering::SeqCst);
        let i = self.arrived.fetch_add(1, Ordering::SeqCst);
        if let Some(s) = self.slots.get(i as usize) {
            s.store(me, Ordering::SeqCst);
        }
        if i + 1 >= self.count {
            return self.complete();
        }
        // Fast: wait for the generation to move, `grace` at most.
        let grace = crate::config::get().gpm_grace_ns;
        let until = heir::sys::now_ns().saturating_add(grace);
        while self.gen.load(Ordering::SeqCst) == gen {
            if grace == 0
                || heir::sys::futex_wait(&self.gen, gen, Some(until))
                    == heir::sys::FutexWait::TimedOut
            {
                break;
            }
        }
        if self.gen.load(Ordering::SeqCst) != gen {
            return 0;
        }
        // Slow: lend to the late, wait on the condition variable.
        summary::BARRIER_SLOW.inc();
        let mut g = match self.slow.lock() {
            Ok(g) => g,
            Err(e) => return e.errno(),
        };
        self.lending.store(true, Ordering::SeqCst);
        if self.gen.load(Ordering::SeqCst) == gen {
            self.lend(&mut g, me);
        }
        if g.boosted.is_empty() {
            // Nobody to lend to (the late are not last round's threads,
            // or already arrived): wait as the fast path does.
            drop(g);
            while self.gen.load(Ordering::SeqCst) == gen {
                heir::sys::futex_wait(&self.gen, gen, None);
            }
            return 0;
        }
        while self.gen.load(Ordering::SeqCst) == gen {
            match self.cv.wait(&mut g) {
                Ok(()) => {}
                Err(Error::Deadlock { .. }) => {
                    // A late thread waits for something this one holds
                    // (a mutex): lending would close a cycle, refused with
                    // the state unchanged. Wait without lending.
                    summary::BARRIER_CYCLES.inc();
                    for t in std::mem::take(&mut g.boosted) {
                        let _ = self.cv.remove_helper(t);
                    }
                    drop(g);
                    while self.gen.load(Ordering::SeqCst) == gen {
                        heir::sys::futex_wait(&self.gen, gen, None);
                    }
                    return 0;
                }
                Err(e) => return e.errno(),
            }
        }
        0
    }

    /// The last arrival: the gang for the next round, the generation
    /// moves, every waiter goes.
    fn complete(&self) -> c_int {
        let mut g = match self.slow.lock() {
            Ok(g) => g,
            Err(e) => return e.errno(),
        };
        g.last.clear();
        for s in &self.slots {
            let t = s.swap(0, Ordering::SeqCst);
            if t != 0 {
                g.last.push(t);
            }
        }
        self.arrived.store(0, Ordering::SeqCst);
        self.gen.fetch_add(1, Ordering::SeqCst);
        heir::sys::futex_wake(&self.gen, i32::MAX);
        let mut r = libc::PTHREAD_BARRIER_SERIAL_THREAD;
        if self.lending.swap(false, Ordering::SeqCst) {
            // Wake first, then drop the helpers: the caller is often one
            // of them, and its de-boost before the wake would let a
            // middle-priority thread delay the waiters it releases.
            if let Err(e) = self.cv.broadcast() {
                r = e.errno();
            }
            for t in std::mem::take(&mut g.boosted) {
                let _ = self.cv.remove_helper(t);
            }
        }
        r
    }

    /// Makes last round's threads that have not arrived (and are not
    /// helpers yet) the helpers of the waiters.
    fn lend(&self, g: &mut Lending, me: i32) {
        let arrived: Vec<i32> = self
            .slots
            .iter()
            .map(|s| s.load(Ordering::SeqCst))
            .filter(|&t| t != 0)
            .collect();
        let late: Vec<i32> = g
            .last
            .iter()
            .copied()
            .filter(|t| *t != me && !arrived.contains(t) && !g.boosted.contains(t))
            .collect();
        for t in late {
            if self.cv.add_helper(t).is_ok() {
                summary::BARRIER_BOOSTS.inc();
                g.boosted.push(t);
            }
        }
    }

    pub fn busy(&self) -> bool {
        self.arrived.load(Ordering::SeqCst) != 0
    }
}

/// States destroyed, freed [`crate::QUARANTINE`] destroys later (held
/// only to be dropped).
type Dead = Box<dyn std::any::Any + Send>;

static GRAVE: std::sync::Mutex<VecDeque<Dead>> = std::sync::Mutex::new(VecDeque::new());

fn bury(d: Dead) {
    let old = match GRAVE.lock() {
        Ok(mut g) => {
            g.push_back(d);
            if g.len() > crate::QUARANTINE {
                g.pop_front()
            } else {
                None
            }
        }
        Err(_) => None,
    };
    drop(old);
}

pub(crate) fn bury_mutex(b: Box<MutexState>) {
    bury(b);
}
pub(crate) fn bury_cond(b: Box<CondState>) {
    bury(b);
}
pub(crate) fn bury_barrier(b: Box<BarrierState>) {
    bury(b);
}
