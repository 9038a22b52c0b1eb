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
    pub fn lock(&self, deadline_ns: Option<u64>) -> c_int {
        if self.raw.is_owned_by_current() {
            return self.relock();
        }
        match self.raw.lock_until(deadline_ns) {
            Ok(()) => 0,
            Err(Error::OwnerDead) => self.owner_dead(),
            Err(e) => e.errno(),
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

    pub fn trylock(&self) -> c_int {
        if self.raw.is_owned_by_current() {
            return if self.kind == libc::PTHREAD_MUTEX_RECURSIVE {
                self.relock()
            } else {
                libc::EBUSY
            };
        }
        match self.raw.try_lock() {
            Ok(()) => 0,
            Err(Error::OwnerDead) => self.owner_dead(),
            Err(e) => e.errno(),
        }
    }

    pub fn unlock(&self) -> c_int {
        if !self.raw.is_owned_by_current() {
            return libc::EPERM;
        }
        let c = self.count.load(Ordering::Relaxed);
        if c > 0 {
            self.count.store(c - 1, Ordering::Relaxed);
            return 0;
        }
        match self.raw.unlock() {
            Ok(()) => 0,
            Err(e) => e.errno(),
        }
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
        }
    }

    fn apply(&self, l: &mut Learner, acts: crate::learn::Actions) {
        for a in acts.iter() {
            match a {
                Action::Add(t) => match self.cv.helpers_add(t) {
                    Ok(()) => {
                        summary::HELPERS_LEARNED.inc();
                        if heir::tracefs::tracing() {
                            heir::tracefs::mark(format_args!(
                                "heir_exec learn cond={} helper={t}",
                                self.cv.id().0
                            ));
                        }
                    }
                    Err(e) if e.errno() == libc::EEXIST => {}
                    Err(_) => l.forget(t),
                },
                Action::Del(t) => {
                    if self.cv.helpers_del(t).is_ok() {
                        summary::HELPERS_DROPPED.inc();
                        if heir::tracefs::tracing() {
                            heir::tracefs::mark(format_args!(
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
        if let Ok(mut l) = self.learner.lock() {
            let acts = l.on_signal(me, heir::sys::now_ns());
            if !acts.is_empty() {
                self.apply(&mut l, acts);
            }
        }
    }

    fn learn_wait(&self) {
        if !crate::config::get().cond_learn {
            return;
        }
        let me = heir::rt::tid();
        if let Ok(mut l) = self.learner.lock() {
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
        let r = self.cv.wait_raw(&m.raw, deadline_ns);
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
        self.learn_signal();
        let r = match self.cv.signal() {
            Ok(_) => 0,
            Err(e) => e.errno(),
        };
        if self.seq_waiters.load(Ordering::Acquire) > 0 {
            self.seq.fetch_add(1, Ordering::AcqRel);
            heir::sys::futex_wake(&self.seq, 1);
        }
        r
    }

    pub fn broadcast(&self) -> c_int {
        self.learn_signal();
        let r = match self.cv.broadcast() {
            Ok(_) => 0,
            Err(e) => e.errno(),
        };
        if self.seq_waiters.load(Ordering::Acquire) > 0 {
            self.seq.fetch_add(1, Ordering::AcqRel);
            heir::sys::futex_wake(&self.seq, i32::MAX);
        }
        r
    }

    pub fn busy(&self) -> bool {
        self.seq_waiters.load(Ordering::Acquire) > 0 || self.cv.has_waiters()
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

#[derive(Debug, Default)]
struct Round {
    arrived: Vec<i32>,
    /// Who arrived in the previous round: the gang.
    last: Vec<i32>,
    /// Helpers added in this round.
    boosted: Vec<i32>,
    gen: u64,
}

/// One interposed barrier: the threads that arrived wait on a PI
/// condition variable whose helpers are the previous round's threads that
/// have not arrived yet.
pub(crate) struct BarrierState {
    round: PiMutex<Round>,
    cv: PiCondvar,
    count: usize,
}

impl BarrierState {
    pub fn new(count: u32) -> BarrierState {
        summary::BARRIERS.inc();
        BarrierState {
            round: PiMutex::new(Round::default()),
            cv: PiCondvar::new(),
            count: count as usize,
        }
    }

    pub fn wait(&self) -> c_int {
        let me = heir::rt::tid();
        let mut g = match self.round.lock() {
            Ok(g) => g,
            Err(e) => return e.errno(),
        };
        let gen = g.gen;
        g.arrived.push(me);
        if g.arrived.len() >= self.count {
            for t in std::mem::take(&mut g.boosted) {
                let _ = self.cv.helpers_del(t);
            }
            g.last = std::mem::take(&mut g.arrived);
            g.gen = g.gen.wrapping_add(1);
            let r = self.cv.broadcast();
            drop(g);
            return match r {
                Ok(_) => libc::PTHREAD_BARRIER_SERIAL_THREAD,
                Err(e) => e.errno(),
            };
        }
        if g.arrived.len() == 1 {
            // The round's first arrival lends to last round's others.
            let others: Vec<i32> = g.last.iter().copied().filter(|&t| t != me).collect();
            for t in others {
                if self.cv.helpers_add(t).is_ok() {
                    summary::BARRIER_BOOSTS.inc();
                    g.boosted.push(t);
                }
            }
        } else if let Some(i) = g.boosted.iter().position(|&t| t == me) {
            g.boosted.swap_remove(i);
            let _ = self.cv.helpers_del(me);
        }
        while g.gen == gen {
            if let Err(e) = self.cv.wait(&mut g) {
                return e.errno();
            }
        }
        0
    }

    pub fn busy(&self) -> bool {
        self.round.lock().map_or(true, |g| !g.arrived.is_empty())
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
