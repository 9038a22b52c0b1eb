//! The process-wide runtime: one [`heir_core::Engine`] plus the thread
//! registry, behind one lock (the *engine lock*).
//!
//! # Locking rule
//!
//! - The engine lock is a kernel PI futex (`FUTEX_LOCK_PI2`), so a thread that
//!   holds it inherits the priority of every thread waiting for it: a helper
//!   de-boosted under the lock cannot be starved by a middle-priority thread
//!   while a more urgent thread needs the lock. Except a thread lowering
//!   *itself*: after a hand-over the kernel may not lend the remaining
//!   waiters' priority to the new owner, so the caller's own de-boost waits
//!   until the lock is let go while others wait for it
//!   (`self_lowering_waits`).
//! - It is never held across a system call that can sleep. Under it heir-rt
//!   only calls `sched_setattr` on `SCHED_FIFO`/`SCHED_RR`/`SCHED_OTHER`
//!   threads (never on another thread that is `SCHED_DEADLINE`, by its base
//!   or by the kernel's word: `foreign_deadline`), `tgkill(…, 0)`, `tgkill` of the wake signal (ending a
//!   kernel-boosted condition-variable wait), `sched_getattr` and
//!   `FUTEX_UNLOCK_PI` (of a mutex, or of a kernel wait's word by the helper
//!   it names) — none of which sleeps. Futex *waits* (condition variables, contended mutexes)
//!   happen after it is released; futex *wakes* of condition-variable waiters
//!   happen after it is released too. While a tracer holds the trace hook
//!   ([`crate::trace`]; `heir run --trace` gives it its ftrace instance's
//!   `trace_marker`), one `write` records each change applied (into the
//!   kernel's ring buffer: it never sleeps).
//! - It is never taken recursively, and no user code runs under it.
//!
//! A contended [`crate::PiMutex`] between threads the engine would not
//! change (a *lazy wait*, see the mutex module) takes no engine lock: it
//! is published, and `state` (every taker of the engine lock, before
//! anything else, and again when it lets go) tells the engine of it, so
//! every caller still sees every wait.
//!
//! # Applying changes
//!
//! Every engine operation returns the tasks whose effective urgency changed.
//! heir-rt applies them **under the engine lock**, and applies the engine's
//! *current* effective urgency of each task (not the `new` value of the
//! change), skipping tasks whose last applied value is already right. Two
//! threads applying changes for the same target therefore cannot reorder:
//! the later lock holder writes the later engine state. The one exception is
//! the caller's own de-boost in `signal`/`broadcast`, deferred until the woken
//! waiter has been made runnable (the kernel's PI-CV does both under one
//! runqueue lock); the deferred step re-reads the engine under the lock, so
//! it is exact too.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use heir_core::{
    Changes, CondId, Engine, EngineError, MutexId, ObjId, ObjKind, Protocol, Source, TaskId,
    Urgency,
};

use crate::lock::{Acquired, Mutex, MutexGuard, RawLock};
use crate::sched;
use crate::sys::{self, SchedAttr};
use crate::Error;

/// Writes a successful `sched_setattr` of `tid` into the trace hook
/// (`heir prio …`, [`crate::trace`]): the kernel has no event for it.
fn mark_prio(tid: i32, attr: &SchedAttr) {
    if crate::trace::tracing() {
        let prio = crate::trace::kernel_prio(attr);
        crate::trace::mark(format_args!("prio {} {tid} {prio}", sys::now_ns()));
    }
}

/// `ThreadShared::wake` value: the thread is (about to be) asleep.
pub(crate) const PARKED: u32 = 1;
/// `ThreadShared::wake` value: the thread was handed what it waited for.
pub(crate) const UNPARKED: u32 = 0;

/// The part of a registered thread that outlives the engine lock: its tid and
/// the futex word it sleeps on when it waits on a condition variable or an
/// engine-managed mutex (one word per thread: a thread waits for one thing at
/// a time).
#[derive(Debug)]
pub(crate) struct ThreadShared {
    pub tid: i32,
    pub wake: AtomicU32,
    /// The PI futex word of a kernel-boosted condition-variable wait
    /// ([`crate::condvar::Lend::Kernel`]): the TID of the helper it names
    /// while the thread waits, 0 otherwise. Only this thread ever sleeps on
    /// it, so the kernel keeps no state for it once that sleep ends.
    pub boost: AtomicU32,
    /// A contended [`crate::PiMutex`] wait the engine has not been told of
    /// ([`LAZY_IDLE`], [`LAZY_WAITING`], [`LAZY_PROMOTED`]): see
    /// "Lazy mutex waits" in the module docs.
    pub lazy: AtomicU32,
    /// While `lazy` is [`LAZY_WAITING`]: the mutex waited for.
    pub lazy_mutex: AtomicPtr<crate::mutex::RawPiMutex>,
}

/// `ThreadShared::lazy`: no lazy wait.
pub(crate) const LAZY_IDLE: u32 = 0;
/// `ThreadShared::lazy`: the thread waits in the kernel for a PI mutex the
/// engine does not know it waits for.
pub(crate) const LAZY_WAITING: u32 = 1;
/// `ThreadShared::lazy`: a lazy wait the engine was told of under the
/// engine lock ([`State::reconcile`]): the waiter finishes it under the
/// engine lock.
pub(crate) const LAZY_PROMOTED: u32 = 2;

/// Non-zero while the engine may hold a wait on something other than a
/// [`crate::PiMutex`] (a condition variable, a ceiling or engine mutex, a
/// gang, an endpoint): set when such an operation takes the engine lock,
/// recomputed when it lets it go. While it is zero a contended `PiMutex`
/// wait leaves the engine alone (the kernel's PI futex does the mutex's
/// inheritance) and is told to the engine lazily.
pub(crate) static HEIR_WAITS: AtomicU32 = AtomicU32::new(0);

/// Non-zero if a lazy wait ([`LAZY_WAITING`]) may have been published
/// since [`State::reconcile`] last looked: a waiter publishes its wait,
/// then sets this if it reads zero; `reconcile` (under the engine lock)
/// clears it, then scans every thread (all SeqCst), so it either sees
/// the wait or the waiter sees zero and sets it again. A flag rather than
/// a count: while lazy waits follow each other it stays set, and a
/// contended lock only reads it — no read-modify-write of a line that
/// both CPUs of a hand-off would pull back and forth every turn.
pub(crate) static LAZY_ANY: AtomicU32 = AtomicU32::new(0);

/// What heir-rt last applied to each registered thread, readable without
/// the engine lock: a slot per `tid % APPLIED_SLOTS` holding `tid << 32 |
/// key` ([`applied_key`]), written under the engine lock whenever the
/// applied urgency changes. A lazy `PiMutex` wait ([`HEIR_WAITS`]) is
/// taken only when its waiter is not more urgent than the owner here: the
/// engine would then change nothing (no `sched_setattr`), whatever the
/// class — in particular it lends `SCHED_OTHER` owners a nice value, which
/// the kernel's PI futex does not.
static APPLIED: [AtomicU64; APPLIED_SLOTS] = [const { AtomicU64::new(0) }; APPLIED_SLOTS];
const APPLIED_SLOTS: usize = 1024;

/// An order-preserving key of a fixed-priority or nice urgency (0 for a
/// deadline: not compared, the engine path is taken).
fn applied_key(u: Urgency) -> u32 {
    match u {
        Urgency::Other { nice } => (20 - i32::from(nice)).clamp(1, 40) as u32,
        Urgency::Fixed { prio } => 100 + u32::from(prio),
        Urgency::Deadline { .. } => 0,
    }
}

fn publish_applied(tid: i32, u: Urgency) {
    let slot = &APPLIED[tid as u32 as usize % APPLIED_SLOTS];
    slot.store(
        (u64::from(tid as u32) << 32) | u64::from(applied_key(u)),
        Ordering::SeqCst,
    );
}

fn unpublish_applied(tid: i32) {
    let slot = &APPLIED[tid as u32 as usize % APPLIED_SLOTS];
    let v = slot.load(Ordering::SeqCst);
    if v >> 32 == u64::from(tid as u32) {
        let _ = slot.compare_exchange(v, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// The key heir-rt last applied to `tid`, if it is published and not a
/// deadline (see [`APPLIED`]).
fn applied_of(tid: i32) -> Option<u32> {
    let v = APPLIED[tid as u32 as usize % APPLIED_SLOTS].load(Ordering::SeqCst);
    let key = (v & 0xffff_ffff) as u32;
    (v >> 32 == u64::from(tid as u32) && key != 0).then_some(key)
}

/// True if a lazy wait of `waiter` for a mutex `owner` holds changes
/// nothing the engine would apply: both published, the waiter not more
/// urgent than the owner.
pub(crate) fn lazy_wait_is_exact(waiter: i32, owner: i32) -> bool {
    matches!((applied_of(waiter), applied_of(owner)), (Some(w), Some(o)) if w <= o)
}

/// A registered thread.
#[derive(Debug)]
struct ThreadRec {
    shared: Arc<ThreadShared>,
    base: SchedAttr,
    base_urgency: Urgency,
    /// What heir-rt last told the kernel (the base urgency at registration).
    applied: Urgency,
    /// While the thread sleeps in a kernel-boosted condition-variable wait:
    /// the helper its word names (the kernel boosts that helper).
    kernel_helper: Option<TaskId>,
    /// While the thread sleeps in a donating call ([`crate::donate`]): the
    /// server its request ticket names (the kernel boosts that server).
    donation_server: Option<TaskId>,
    /// How many threads' kernel waits name this thread: while not zero,
    /// part of its engine urgency is the kernel's to apply
    /// ([`State::wanted`]).
    carried: u32,
    /// The thread called heir-rt itself ([`State::current`]): its exit
    /// runs the thread-local hook that purges it. A thread only named by
    /// others (a helper, a gang member added by tid) has none.
    hooked: bool,
}

/// What the registry knows about a thread (the public face is the
/// `thread` module's `info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Kernel thread id.
    pub tid: i32,
    /// The attributes saved at registration.
    pub base: SchedAttr,
    /// The base, as an urgency.
    pub base_urgency: Urgency,
    /// The engine's effective urgency now.
    pub effective: Urgency,
    /// What heir-rt last applied with `sched_setattr`.
    pub applied: Urgency,
    /// What the engine records the thread as blocked on (a contended
    /// [`crate::PiMutex`], an engine mutex or a [`crate::PiCondvar`]).
    pub blocked_on: Option<heir_core::ObjId>,
    /// The helper a kernel-boosted condition-variable wait of this thread
    /// names ([`crate::condvar::Lend::Kernel`]): the kernel, not
    /// `sched_setattr`, lends that helper this thread's urgency.
    pub kernel_helper: Option<i32>,
}

/// Counters of what heir-rt did to the kernel, and of what it could not do
/// — errors no caller could be given, because they happen while applying
/// a change on another thread's behalf or while cleaning up after a thread
/// that left. Read with `thread::apply_stats` (C: `heir_apply_stats`);
/// `heir run` reports a run's ([`ApplyStats::since`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// `sched_setattr` calls made.
    pub setattr_calls: u64,
    /// Calls that failed (other than a vanished thread): the thread kept
    /// the attributes it had.
    pub setattr_errors: u64,
    /// The last failure's errno (0 if none).
    pub last_errno: i32,
    /// The thread whose `sched_setattr` failed last (0 if none).
    pub last_error_tid: i32,
    /// Urgencies that could not be expressed for the target and were not
    /// applied: a deadline lent through something the kernel does not
    /// carry (a condition variable's `sched_setattr` boost, `Lend::User`).
    /// A deadline the kernel lends itself — along PI mutexes and
    /// `Lend::Kernel` waits, its deadline inheritance — is not counted.
    /// Also counted: any change for another thread that is
    /// `SCHED_DEADLINE` while its registered base says otherwise (heir-rt
    /// never writes a deadline thread's attributes from another thread).
    pub unexpressible: u64,
    /// The thread of the last one (0 if none).
    pub last_unexpressible_tid: i32,
    /// Threads found gone (`ESRCH`) and dropped from the registry.
    pub vanished: u64,
    /// Engine operations that failed while heir-rt released, cancelled or
    /// removed what a departing thread or a dropped condition variable left
    /// behind (the rest of the clean-up went on).
    pub engine_errors: u64,
    /// The last of those (`None` if none).
    pub last_engine_error: Option<EngineError>,
}

impl ApplyStats {
    /// What happened after `before` (an earlier reading): the counts' growth,
    /// and each "last" field where its count grew (else empty).
    pub fn since(&self, before: &ApplyStats) -> ApplyStats {
        let setattr_errors = self.setattr_errors.saturating_sub(before.setattr_errors);
        let unexpressible = self.unexpressible.saturating_sub(before.unexpressible);
        let engine_errors = self.engine_errors.saturating_sub(before.engine_errors);
        ApplyStats {
            setattr_calls: self.setattr_calls.saturating_sub(before.setattr_calls),
            setattr_errors,
            last_errno: if setattr_errors > 0 {
                self.last_errno
            } else {
                0
            },
            last_error_tid: if setattr_errors > 0 {
                self.last_error_tid
            } else {
                0
            },
            unexpressible,
            last_unexpressible_tid: if unexpressible > 0 {
                self.last_unexpressible_tid
            } else {
                0
            },
            vanished: self.vanished.saturating_sub(before.vanished),
            engine_errors,
            last_engine_error: if engine_errors > 0 {
                self.last_engine_error.clone()
            } else {
                None
            },
        }
    }

    fn setattr_failed(&mut self, tid: i32, errno: i32) {
        self.setattr_errors += 1;
        self.last_errno = errno;
        self.last_error_tid = tid;
    }

    pub(crate) fn engine_failed(&mut self, e: EngineError) {
        self.engine_errors += 1;
        self.last_engine_error = Some(e);
    }

    /// One sentence per kind of trouble counted (none when nothing went
    /// wrong): failed `sched_setattr` calls, boosts that could not be
    /// expressed, threads that vanished, engine errors during clean-up. A
    /// tid is followed by its thread's name when `thread_name` knows it.
    pub fn problems(&self, thread_name: impl Fn(i32) -> Option<String>) -> Vec<String> {
        let who = |tid: i32| match thread_name(tid) {
            Some(name) => format!("{name}, tid {tid}"),
            None => format!("tid {tid}"),
        };
        let last_engine_error = self
            .last_engine_error
            .as_ref()
            .map_or_else(String::new, ToString::to_string);
        let them = if self.vanished == 1 { "it" } else { "them" };
        [
            (
                self.setattr_errors,
                "sched_setattr call",
                format!(
                    "failed (last: {} on {})",
                    sys::errno_name(self.last_errno),
                    who(self.last_error_tid)
                ),
            ),
            (
                self.unexpressible,
                "boost",
                format!(
                    "could not be expressed (a deadline lent through a condition variable's sched_setattr boost, last {}: the kernel lends a deadline only along PI futexes — a PI mutex, or a Lend::Kernel condition variable's named helper)",
                    who(self.last_unexpressible_tid)
                ),
            ),
            (
                self.vanished,
                "thread",
                format!("vanished before a change reached {them} (dropped from the registry)"),
            ),
            (
                self.engine_errors,
                "engine error",
                format!("while cleaning up after a thread or a condition variable (last: {last_engine_error})"),
            ),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, what, rest)| format!("{n} {what}{} {rest}", plural(n)))
        .collect()
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// True if `tid` is a `SCHED_DEADLINE` thread other than the caller — by
/// its registered base, or by what the kernel says now (a base can be
/// stale: a thread that made itself deadline without
/// `thread::set_sched`). heir-rt never calls `sched_setattr` on such a
/// thread: a deadline thread changes its own attributes, while it runs
/// (docs/DEADLINE.md §1). Known hazard on this kernel: demoting a
/// *blocked* `SCHED_DEADLINE` thread to another policy from another thread
/// leaked its admitted bandwidth until the root domain was rebuilt (issue
/// 9); and even an unchanged deadline base written from outside is a
/// `sched_setattr` of a deadline thread that heir-rt has no reason to
/// make. The kernel read is one `sched_getattr`, which does not sleep (the
/// locking rule allows it under the engine lock); a thread that changes
/// its own policy between that read and the write is outside what user
/// space can exclude — the reason `thread::set_sched` is the one way.
fn foreign_deadline(tid: i32, base: &SchedAttr) -> bool {
    if tid == self::tid() {
        return false;
    }
    base.sched_policy == sys::SCHED_DEADLINE
        || sys::sched_getattr(tid).is_ok_and(|k| k.sched_policy == sys::SCHED_DEADLINE)
}

/// The state behind the engine lock.
#[derive(Debug)]
pub(crate) struct State {
    pub engine: Engine,
    threads: HashMap<TaskId, ThreadRec>,
    by_tid: HashMap<i32, TaskId>,
    /// The engine mutexes that are [`crate::PiMutex`]es (PI futexes).
    pi_futex: std::collections::HashSet<MutexId>,
    /// The engine objects of donating calls' waits ([`crate::donate`]): one
    /// per request ticket somebody sleeps on (keyed by the ticket's
    /// address), its one target the server the ticket names.
    donate_objs: HashMap<usize, ObjId>,
    /// The robustness state of each live [`crate::RawEngineMutex`] (its
    /// `CONSISTENT` / `INCONSISTENT` / `NOT_RECOVERABLE` word): marked
    /// inconsistent by [`State::purge`] when its owner goes.
    pub(crate) engine_robust: HashMap<MutexId, Arc<AtomicU32>>,
    pub stats: ApplyStats,
    /// Every gang ([`crate::gang`]), under the engine lock.
    pub(crate) gangs: crate::gang::Gangs,
    /// The calling thread's own de-boost, left for after the engine lock
    /// because other threads waited for it ([`self_lowering_waits`]):
    /// re-applied by the guard once the lock is let go.
    self_lowering: Option<TaskId>,
}

/// What the mutex fast path needs of the calling thread, in one
/// thread-local: its tid and its robust-list head ([`crate::robust`]), so
/// a lock or an unlock looks the thread up once (in a shared library, as
/// `heir exec`'s, each thread-local access is a call).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Me {
    /// The thread's tid; 0 until first looked up.
    pub tid: i32,
    /// Its robust-list head as [`crate::robust`] probed it.
    pub head: usize,
}

thread_local! {
    // Constant-initialised and without a destructor: an access is the
    // address of the slot, with no lazy-initialisation state to test.
    static ME: std::cell::Cell<Me> = const { std::cell::Cell::new(Me { tid: 0, head: 0 }) };
}

/// Where glibc keeps every thread's tid and robust-list head, as offsets
/// from the thread pointer (its `struct pthread`, whose fields glibc's own
/// mutexes read the same way): the tid's offset in the low 32 bits, the
/// head's in the high ones; 0 until probed, 1 if not found (then
/// [`me`] keeps its own copy in a thread-local). Reading them costs no
/// thread-local lookup, which in a shared library (`heir exec`'s) is a
/// call per access; and glibc's tid is right in a child of `fork` too.
static GLIBC_SELF: AtomicU64 = AtomicU64::new(0);
const GLIBC_SELF_UNUSABLE: u64 = 1;

/// The calling thread's [`Me`], looked up on first use.
#[inline]
pub(crate) fn me() -> Me {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    {
        let o = GLIBC_SELF.load(Ordering::Relaxed);
        if o > GLIBC_SELF_UNUSABLE {
            let tp = thread_pointer();
            // SAFETY: `probe_glibc_self` found glibc's `struct pthread` at
            // the thread pointer with the tid at this offset (the same
            // layout for every thread of the process: one glibc); a thread
            // running this code is alive, so its descriptor is.
            let tid = unsafe { std::ptr::read((tp + (o & 0xffff_ffff) as usize) as *const i32) };
            return Me {
                tid,
                head: tp + (o >> 32) as usize,
            };
        }
    }
    let m = ME.with(std::cell::Cell::get);
    if m.tid != 0 {
        m
    } else {
        me_first()
    }
}

/// The thread pointer (`%fs:0`: glibc's `struct pthread` of the calling
/// thread on x86-64, which is also what `pthread_self` returns).
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[inline]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: reads the word at %fs:0, the TCB's self pointer on x86-64
    // Linux (always mapped for a thread); no memory is written.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
            options(nostack, readonly, preserves_flags, pure));
    }
    tp
}

#[cold]
#[inline(never)]
fn me_first() -> Me {
    if GLIBC_SELF.load(Ordering::Relaxed) == 0 {
        GLIBC_SELF.store(probe_glibc_self(), Ordering::Relaxed);
        if GLIBC_SELF.load(Ordering::Relaxed) > GLIBC_SELF_UNUSABLE {
            return me();
        }
    }
    let m = Me {
        tid: sys::gettid(),
        head: crate::robust::probe(),
    };
    ME.with(|c| c.set(m));
    m
}

/// [`GLIBC_SELF`] for this process: glibc's `struct pthread` has the tid,
/// an unused pid, `robust_prev`, then `robust_head` (`nptl/descr.h`), so
/// the head the kernel has registered for the calling thread must lie
/// just past the thread pointer, with the calling thread's tid 16 bytes
/// before it; anything else (another C library, a head of heir's, a
/// layout that moved) is [`GLIBC_SELF_UNUSABLE`].
#[cold]
fn probe_glibc_self() -> u64 {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    {
        let tp = thread_pointer();
        let head = crate::robust::probe();
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as usize;
        if me == tp && head > tp + 16 && head - tp < 4096 {
            let tid_off = head - tp - 16;
            // SAFETY: inside the calling thread's live descriptor (the
            // thread pointer and its registered robust head are both in
            // it, `head` within 4 KiB past `tp`).
            let tid = unsafe { std::ptr::read((tp + tid_off) as *const i32) };
            if tid == sys::gettid() {
                return tid_off as u64 | ((head - tp) as u64) << 32;
            }
        }
    }
    GLIBC_SELF_UNUSABLE
}

/// The calling thread's tid (cached).
#[inline]
pub fn tid() -> i32 {
    me().tid
}

/// In the child of `fork`: its one thread has a new tid, and the cached
/// one (the parent's thread's) would name a thread of another process.
/// Looked up again at the next use (the robust list's head too).
pub(crate) fn refresh_tid() {
    ME.with(|c| c.set(Me { tid: 0, head: 0 }));
}

/// The engine lock's raw lock: a kernel PI futex word (0, or the holder's
/// TID and `FUTEX_WAITERS`), taken with a CAS or `FUTEX_LOCK_PI2`. A futex
/// error other than an interruption or a timeout aborts the process: it
/// means this thread already holds the lock (a bug in heir-rt), and going
/// on would corrupt the engine state.
pub(crate) struct PiFutex {
    word: AtomicU32,
}

impl PiFutex {
    pub(crate) const fn new() -> Self {
        PiFutex {
            word: AtomicU32::new(0),
        }
    }
}

// SAFETY: the futex word holds at most one TID. `acquire` returns `Ok` only
// once the caller's TID is in it: its own CAS from 0, or the kernel's
// `FUTEX_LOCK_PI2`, which returns 0 only to the thread it made the owner.
// `release` clears it only if it holds the caller's TID (CAS), else asks
// the kernel, which refuses a caller that is not the owner (`EPERM`).
unsafe impl RawLock for PiFutex {
    fn acquire(&self, deadline_ns: Option<u64>) -> Result<Acquired, Error> {
        let me = tid() as u32;
        if self
            .word
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Ok(Acquired::Clean);
        }
        loop {
            match sys::futex_lock_pi(&self.word, deadline_ns) {
                0 => return Ok(Acquired::Clean),
                e if e == libc::EINTR || e == libc::EAGAIN => continue,
                e if e == libc::ETIMEDOUT => return Err(Error::TimedOut),
                e => {
                    eprintln!("heir: engine lock: futex error {e}; aborting");
                    std::process::abort();
                }
            }
        }
    }

    fn release(&self) {
        let me = tid() as u32;
        if self
            .word
            .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters are queued in the kernel: it hands the lock over.
            let _ = sys::futex_unlock_pi(&self.word);
        }
    }
}

static STATE: Mutex<PiFutex, Option<State>> = Mutex::from_raw(PiFutex::new(), None);

/// The engine lock, held. `heir`: taken for something other than a
/// `PiMutex` (see [`HEIR_WAITS`]), recomputed when it is let go.
pub(crate) struct StateGuard(
    ManuallyDrop<MutexGuard<'static, PiFutex, Option<State>>>,
    bool,
    /// The `PiMutex` this guard's holder is unlocking (null: none): lazy
    /// waits for it are not promoted ([`state_for_unlock`]).
    *const crate::mutex::RawPiMutex,
);

impl Drop for StateGuard {
    fn drop(&mut self) {
        // A lazy waiter that read an applied urgency this guard changed is
        // promoted here (see `RawPiMutex::lock_lazy`).
        if let Some(st) = self.0.as_mut() {
            st.reconcile(self.2);
        }
        if self.1 {
            let w = self.0.as_ref().is_some_and(State::heir_waits);
            HEIR_WAITS.store(u32::from(w), Ordering::SeqCst);
        }
        let lowering = self.0.as_mut().and_then(|st| st.self_lowering.take());
        // SAFETY: the guard is dropped exactly once, here, and `self.0` is
        // not used after (`drop` consumes the `StateGuard`).
        unsafe { ManuallyDrop::drop(&mut self.0) };
        if let Some(t) = lowering {
            // The engine lock is let go: its waiters have had it. Apply the
            // caller's own de-boost now, under the lock again (at most
            // `SELF_LOWERING_RETRIES` times deferred once more).
            SELF_LOWERING_DEPTH.with(|d| d.set(d.get() + 1));
            state().sync(t);
            SELF_LOWERING_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
}

thread_local! {
    /// How many deferred self de-boosts the calling thread is re-applying
    /// (nested: each may be deferred once more by new waiters).
    static SELF_LOWERING_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// After this many deferrals in a row, a thread's own de-boost is applied
/// under the engine lock even while others wait for it (bounded work; the
/// kernel's priority inheritance then covers every waiter that blocked
/// while this thread held the lock, only not one queued before a hand-over).
const SELF_LOWERING_RETRIES: u32 = 4;

/// `FUTEX_WAITERS` of a PI futex word: threads wait in the kernel.
const FUTEX_WAITERS: u32 = 0x8000_0000;

/// True while threads wait in the kernel for the engine lock.
pub(crate) fn engine_lock_waited() -> bool {
    STATE.raw().word.load(Ordering::Relaxed) & FUTEX_WAITERS != 0
}

/// True if `sched_setattr` of thread `tid` from `applied` to `want`
/// must wait until the engine lock is let go: it is the calling
/// thread lowering itself while other threads wait for the lock.
///
/// The kernel does not always lend the lock's waiters' priority to its
/// holder then: a thread that got the lock *handed over* by
/// `FUTEX_UNLOCK_PI` while another waiter stayed queued has that waiter
/// among its PI waiters, but its cached top PI waiter is refreshed only
/// when a waiter blocks, leaves or changes priority — not at the hand-
/// over, when the new owner was the top waiter and needed no boost.
/// `sched_setattr` computes the effective priority from that stale
/// cache, so a holder that lowers itself runs at its lowered priority
/// with a more urgent thread waiting for the lock, and a thread in
/// between preempts it (seen with ftrace in the `gang` bench: a gang
/// member's notify de-boosted it to FIFO 12 with the last member, at
/// 16, queued; a FIFO 13 load ran its 5 ms burst first).
fn self_lowering_waits(tid: i32, applied: Urgency, want: Urgency) -> bool {
    tid == self::tid()
        && want < applied
        && engine_lock_waited()
        && SELF_LOWERING_DEPTH.with(|d| d.get()) < SELF_LOWERING_RETRIES
}

impl Deref for StateGuard {
    type Target = State;
    fn deref(&self) -> &State {
        match self.0.as_ref() {
            Some(s) => s,
            None => unreachable_state(),
        }
    }
}

impl DerefMut for StateGuard {
    fn deref_mut(&mut self) -> &mut State {
        match self.0.as_mut() {
            Some(s) => s,
            None => unreachable_state(),
        }
    }
}

fn unreachable_state() -> ! {
    // `state()` initialises before handing out a guard.
    eprintln!("heir: runtime state missing; aborting");
    std::process::abort()
}

/// Takes the engine lock, for anything (a [`crate::PiMutex`]'s contended
/// path uses [`state_for_mutex`]): lazy mutex waits are told to the engine
/// first ([`State::reconcile`]), so the caller sees every wait.
pub(crate) fn state() -> StateGuard {
    lock_state(true, std::ptr::null())
}

/// Takes the engine lock for a [`crate::PiMutex`]'s contended lock or
/// unlock, which never adds a wait on anything else ([`HEIR_WAITS`]).
pub(crate) fn state_for_mutex() -> StateGuard {
    lock_state(false, std::ptr::null())
}

/// [`state_for_mutex`] for the slow unlock of `m`: a lazy wait for `m`
/// itself is left lazy. The kernel hands `m` to a waiter at this unlock,
/// which ends that wait, and the waiter was not more urgent than the
/// unlocker when it published it; promoted, it would record the unlocker
/// as owner and make the waiter finish under the engine lock, whose own
/// reconcile promotes the first thread's next wait for `m` — in a
/// hand-off back and forth, every later turn would take the engine lock.
pub(crate) fn state_for_unlock(m: &crate::mutex::RawPiMutex) -> StateGuard {
    lock_state(false, m)
}

fn lock_state(heir: bool, unlocking: *const crate::mutex::RawPiMutex) -> StateGuard {
    let mut g = match STATE.lock() {
        Ok(g) => g,
        // Without a deadline `acquire` returns only once it holds the lock
        // (or aborts): not reached.
        Err(e) => {
            eprintln!("heir: engine lock: {e}; aborting");
            std::process::abort()
        }
    };
    if g.is_none() {
        *g = Some(State {
            engine: Engine::new(),
            threads: HashMap::new(),
            by_tid: HashMap::new(),
            pi_futex: std::collections::HashSet::new(),
            donate_objs: HashMap::new(),
            engine_robust: HashMap::new(),
            stats: ApplyStats::default(),
            gangs: crate::gang::Gangs::default(),
            self_lowering: None,
        });
    }
    if heir {
        // Before reading `LAZY_ANY`: a lazy waiter publishes itself,
        // then reads this (both SeqCst), so either it sees the flag and
        // withdraws, or this sees its wait and promotes it.
        HEIR_WAITS.store(1, Ordering::SeqCst);
    }
    let mut st = StateGuard(ManuallyDrop::new(g), heir, unlocking);
    st.reconcile(unlocking);
    st
}

thread_local! {
    /// The calling thread's registry record, once known (a lazy wait is
    /// published there without the engine lock).
    static SHARED: std::cell::OnceCell<Arc<ThreadShared>> = const { std::cell::OnceCell::new() };
}

/// The calling thread's shared record (registering it on first use), or
/// `None` if it cannot be registered.
pub(crate) fn current_shared() -> Option<Arc<ThreadShared>> {
    SHARED
        .try_with(|c| {
            if let Some(s) = c.get() {
                return Some(s.clone());
            }
            let s = {
                let mut st = state();
                let t = st.current().ok()?;
                st.shared(t)?
            };
            let _ = c.set(s.clone());
            Some(s)
        })
        .ok()
        .flatten()
}

/// Drops the calling thread from the registry when it exits.
struct Member;

impl Drop for Member {
    fn drop(&mut self) {
        let me = tid();
        let mut st = state();
        if let Some(&t) = st.by_tid.get(&me) {
            st.purge(t);
        }
    }
}

thread_local! {
    static MEMBER: Member = const { Member };
}

impl State {
    /// Tells the engine of every published lazy `PiMutex` wait (see
    /// [`HEIR_WAITS`]): each becomes [`LAZY_PROMOTED`], recorded as the
    /// contended lock's steps 1-2 would have, and its waiter finishes it
    /// under the engine lock.
    fn reconcile(&mut self, unlocking: *const crate::mutex::RawPiMutex) {
        if LAZY_ANY.load(Ordering::SeqCst) == 0 {
            return;
        }
        // Cleared before the scan: a wait published after it sets the
        // flag again (see `LAZY_ANY`).
        LAZY_ANY.store(0, Ordering::SeqCst);
        let waiting: Vec<(TaskId, Arc<ThreadShared>)> = self
            .threads
            .iter()
            .filter(|(_, r)| r.shared.lazy.load(Ordering::SeqCst) == LAZY_WAITING)
            .map(|(&t, r)| (t, r.shared.clone()))
            .collect();
        let mut left = false;
        for (t, sh) in waiting {
            let m = sh.lazy_mutex.load(Ordering::Acquire);
            if !unlocking.is_null() && std::ptr::eq(m, unlocking) {
                left = true;
                continue;
            }
            if m.is_null()
                || sh
                    .lazy
                    .compare_exchange(
                        LAZY_WAITING,
                        LAZY_PROMOTED,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_err()
            {
                continue;
            }
            // SAFETY: the waiter published `m`, a `RawPiMutex` it borrows
            // for its whole `lock` call, before `LAZY_WAITING`; once
            // promoted it does not return from `lock` before it has taken
            // the engine lock, which this thread holds: `m` is alive and
            // does not move until this guard is let go.
            let m = unsafe { &*m };
            m.promote(self, t);
        }
        if left {
            // A wait left lazy: the next engine-lock take looks again.
            LAZY_ANY.store(1, Ordering::SeqCst);
        }
    }

    /// True if some registered thread is blocked, in the engine, on
    /// something other than a `PiMutex` (see [`HEIR_WAITS`]).
    fn heir_waits(&self) -> bool {
        self.threads
            .keys()
            .any(|&t| match self.engine.blocked_on(t) {
                Ok(Some(o)) => {
                    !(matches!(self.engine.spec(o).map(|s| s.kind), Ok(ObjKind::Mutex))
                        && self.pi_futex.contains(&MutexId(o.0, o.1)))
                }
                _ => false,
            })
    }

    /// The task of `tid`, registering it (base read with `sched_getattr`) if
    /// it is a thread of this process not yet known.
    pub(crate) fn task_of_tid(&mut self, tid: i32) -> Result<TaskId, Error> {
        if let Some(&t) = self.by_tid.get(&tid) {
            return Ok(t);
        }
        if !sys::is_own_thread(tid) {
            return Err(Error::NoSuchThread(tid));
        }
        let base = sys::sched_getattr(tid).map_err(|errno| Error::Os {
            op: "sched_getattr",
            errno,
        })?;
        Ok(self.register(tid, base))
    }

    fn register(&mut self, tid: i32, base: SchedAttr) -> TaskId {
        let base_urgency = sched::urgency_of(&base);
        let t = self.engine.add_task(base_urgency);
        self.threads.insert(
            t,
            ThreadRec {
                shared: Arc::new(ThreadShared {
                    tid,
                    wake: AtomicU32::new(UNPARKED),
                    boost: AtomicU32::new(0),
                    lazy: AtomicU32::new(LAZY_IDLE),
                    lazy_mutex: AtomicPtr::new(std::ptr::null_mut()),
                }),
                base,
                base_urgency,
                applied: base_urgency,
                kernel_helper: None,
                donation_server: None,
                carried: 0,
                hooked: false,
            },
        );
        self.by_tid.insert(tid, t);
        publish_applied(tid, base_urgency);
        t
    }

    /// The calling thread's task (registered on first use; its exit drops
    /// it from the registry).
    pub(crate) fn current(&mut self) -> Result<TaskId, Error> {
        let me = tid();
        let hooked = MEMBER.try_with(|_| ()).is_ok();
        let t = self.task_of_tid(me)?;
        if let Some(r) = self.threads.get_mut(&t) {
            r.hooked |= hooked;
        }
        Ok(t)
    }

    /// True if `t`'s exit purges it by itself (see `ThreadRec::hooked`).
    pub(crate) fn hooked(&self, t: TaskId) -> bool {
        self.threads.get(&t).is_some_and(|r| r.hooked)
    }

    /// The shared part of a registered task.
    pub(crate) fn shared(&self, t: TaskId) -> Option<Arc<ThreadShared>> {
        self.threads.get(&t).map(|r| r.shared.clone())
    }

    /// The tid of a registered task.
    pub(crate) fn tid_of(&self, t: TaskId) -> Option<i32> {
        self.threads.get(&t).map(|r| r.shared.tid)
    }

    /// The task of a tid, if registered.
    pub(crate) fn lookup_tid(&self, tid: i32) -> Option<TaskId> {
        self.by_tid.get(&tid).copied()
    }

    /// The urgency heir-rt must give `t` with `sched_setattr`: the engine's
    /// effective urgency, less what the kernel lends it itself — the
    /// contribution of a condition variable whose top waiter sleeps in a
    /// kernel wait naming `t` (the kernel boosts `t` to that waiter's
    /// priority or deadline, and on along `t`'s PI futex chain). `None` for
    /// an unknown task.
    pub(crate) fn wanted(&self, t: TaskId) -> Option<Urgency> {
        let eff = self.engine.effective(t).ok()?.urgency;
        let rec = self.threads.get(&t)?;
        if rec.carried == 0 {
            return Some(eff);
        }
        let mut u = self.engine.base(t).ok()?;
        for &o in self.engine.targets_of(t).ok()? {
            let Ok(spec) = self.engine.spec(o) else {
                continue;
            };
            if let Some(f) = spec.floor {
                u = u.max(f);
            }
            if !spec.donates {
                continue;
            }
            let Some(top) = self.engine.waiters(o).ok().and_then(|mut w| w.next()) else {
                continue;
            };
            let carried = self
                .threads
                .get(&top)
                .is_some_and(|r| r.kernel_helper == Some(t) || r.donation_server == Some(t));
            if !carried {
                if let Ok(e) = self.engine.effective(top) {
                    u = u.max(e.urgency);
                }
            }
        }
        Some(u)
    }

    /// True if the kernel itself lends `t` its engine urgency: the donor
    /// (the base at the root of `t`'s boost) reaches `t` through kernel
    /// waits only — each thread on the way sleeps in `FUTEX_LOCK_PI` on a
    /// PI mutex owned by the next ([`crate::PiMutex`]: the engine's
    /// `inherit` and `bwi` mutexes are all PI futexes) or on a
    /// kernel-boosted condition-variable word naming the next
    /// ([`State::arm_kernel_wait`]). The kernel then boosts `t` — into the
    /// deadline class for a deadline donor (docs/DEADLINE.md §3) — which
    /// `sched_setattr` could not do.
    fn kernel_lends(&self, t: TaskId) -> bool {
        let Ok(eff) = self.engine.effective(t) else {
            return false;
        };
        let Source::Task(mut cur) = eff.source else {
            return false;
        };
        // A wait-for chain visits each thread at most once.
        for _ in 0..self.threads.len() {
            if cur == t {
                return true;
            }
            let next = match self.engine.blocked_on(cur) {
                Ok(Some(o)) => match self.engine.spec(o).map(|s| (s.kind, s.protocol())) {
                    Ok((ObjKind::Mutex, Some(Protocol::Inherit | Protocol::Bwi))) => {
                        self.engine.owner(MutexId(o.0, o.1)).ok().flatten()
                    }
                    Ok((ObjKind::Cond, _)) => self.threads.get(&cur).and_then(|r| r.kernel_helper),
                    Ok((ObjKind::Endpoint, _)) => {
                        self.threads.get(&cur).and_then(|r| r.donation_server)
                    }
                    _ => None,
                },
                _ => None,
            };
            match next {
                Some(n) => cur = n,
                None => return false,
            }
        }
        false
    }

    /// Makes the kernel's attributes of `t` match what heir-rt must apply
    /// ([`State::wanted`]). Returns false if the thread vanished.
    fn sync_one(&mut self, t: TaskId) -> bool {
        let r = self.sync_one_inner(t);
        if let Some(rec) = self.threads.get(&t) {
            publish_applied(rec.shared.tid, rec.applied);
        }
        r
    }

    fn sync_one_inner(&mut self, t: TaskId) -> bool {
        let Some(want) = self.wanted(t) else {
            return true;
        };
        let Some(rec) = self.threads.get_mut(&t) else {
            return true;
        };
        if rec.applied == want {
            return true;
        }
        let tid = rec.shared.tid;
        match sched::attr_for(&rec.base, rec.base_urgency, want) {
            None => {
                rec.applied = want;
                // A deadline the kernel lends `t` itself (its deadline
                // inheritance along PI futexes) is expressed, just not by
                // heir-rt: only the others are counted.
                if !self.kernel_lends(t) {
                    self.stats.unexpressible += 1;
                    self.stats.last_unexpressible_tid = tid;
                }
                true
            }
            Some(_) if foreign_deadline(tid, &rec.base) => {
                // Never from another thread on a SCHED_DEADLINE thread
                // (`foreign_deadline`). With a deadline base this is the
                // restore of that base, which the kernel still has (heir-rt
                // writes nothing else to a deadline thread): nothing to do.
                // A base that says otherwise is stale (the thread made
                // itself deadline without `thread::set_sched`): the
                // engine's urgency is not applied, and that is counted.
                if rec.base.sched_policy != sys::SCHED_DEADLINE {
                    self.stats.unexpressible += 1;
                    self.stats.last_unexpressible_tid = tid;
                }
                rec.applied = want;
                true
            }
            Some(_) if self_lowering_waits(tid, rec.applied, want) => {
                // Left as applied (still the higher urgency); the guard
                // re-applies it once the lock is let go.
                self.self_lowering = Some(t);
                true
            }
            Some(attr) => {
                self.stats.setattr_calls += 1;
                match sys::sched_setattr(tid, &attr) {
                    Ok(()) => {
                        rec.applied = want;
                        mark_prio(tid, &attr);
                        true
                    }
                    Err(e) if e == libc::ESRCH => false,
                    Err(e) => {
                        self.stats.setattr_failed(tid, e);
                        true
                    }
                }
            }
        }
    }

    /// Applies `changes` (see the module docs): each changed task gets the
    /// engine's current effective urgency.
    pub(crate) fn apply(&mut self, changes: &Changes) {
        self.apply_except(changes, None);
    }

    /// Like [`State::apply`], but a de-boost of `defer` is left for later;
    /// returns true if one was left.
    pub(crate) fn apply_except(&mut self, changes: &Changes, defer: Option<TaskId>) -> bool {
        let mut deferred = false;
        let mut dead = Vec::new();
        if crate::trace::tracing() {
            self.mark_boosts(changes);
        }
        for c in changes {
            if Some(c.task) == defer && c.new.urgency < c.old.urgency {
                // Nothing to defer when heir-rt has nothing to change (the
                // kernel carried the boost).
                let rec = self.threads.get(&c.task).map(|r| r.applied);
                if rec.is_some() && rec != self.wanted(c.task) {
                    deferred = true;
                }
                continue;
            }
            if !self.sync_one(c.task) {
                dead.push(c.task);
            }
        }
        for t in dead {
            self.stats.vanished += 1;
            self.purge(t);
        }
        deferred
    }

    /// Writes each change into the trace hook (`heir boost …`,
    /// [`crate::trace`]): the thread, the donor at the root of its boost,
    /// the new effective urgency.
    fn mark_boosts(&self, changes: &Changes) {
        let now = sys::now_ns();
        for c in changes {
            let Some(tid) = self.tid_of(c.task) else {
                continue;
            };
            let u = crate::trace::urgency_code(c.new.urgency);
            match c.new.source {
                Source::Task(d) if d == c.task => {
                    crate::trace::mark(format_args!("boost {now} {tid} - {u}"));
                }
                Source::Task(d) => {
                    let d = self.tid_of(d).unwrap_or(0);
                    crate::trace::mark(format_args!("boost {now} {tid} {d} {u}"));
                }
                _ => {
                    crate::trace::mark(format_args!("boost {now} {tid} = {u}"));
                }
            }
        }
    }

    /// `t`'s thread was found gone (a gang member's pidfd): counted as
    /// vanished and purged.
    pub(crate) fn vanished(&mut self, t: TaskId) {
        self.stats.vanished += 1;
        self.purge(t);
    }

    /// Re-applies the engine's current urgency of `t` (the deferred step).
    pub(crate) fn sync(&mut self, t: TaskId) {
        if !self.sync_one(t) {
            self.stats.vanished += 1;
            self.purge(t);
        }
    }

    /// Drops `t` from the engine and the registry: releases what it owns in
    /// the engine, cancels its wait, removes it from every helper set, and
    /// applies what that changes for others. Its own attributes are left
    /// alone (`thread::unregister` restores them first: [`State::restore_base`]).
    ///
    /// A PI mutex it owns is only released in the engine (the kernel hands
    /// the futex on, robustly). An engine mutex (a ceiling mutex) it owns
    /// is marked inconsistent and handed to its top waiter, woken here (a
    /// futex wake does not sleep), which gets [`Error::OwnerDead`] holding
    /// it — or, without waiters, the next locker does.
    pub(crate) fn purge(&mut self, t: TaskId) {
        let owned: Vec<MutexId> = self
            .engine
            .owned(t)
            .map(Iterator::collect)
            .unwrap_or_default();
        // Leaving its gang counts as its notify (the GPM paper's §2).
        let mut all = crate::gang::purge_member(self, t);
        for m in owned {
            if self.pi_futex.contains(&m) {
                let r = self.engine.release(t, m);
                self.collect(r, &mut all);
                continue;
            }
            if let Some(w) = self.engine_robust.get(&m) {
                w.store(crate::ceiling::INCONSISTENT, Ordering::Release);
            }
            match self.engine.unlock(t, m) {
                Ok(o) => {
                    all.extend(o.changes);
                    if let Some(sh) = o.value.and_then(|n| self.shared(n)) {
                        sh.wake.store(UNPARKED, Ordering::Release);
                        sys::futex_wake(&sh.wake, 1);
                    }
                }
                Err(e) => self.stats.engine_failed(e),
            }
        }
        self.rearm_waiters_naming(t, None);
        let _ = self.disarm(t);
        if matches!(self.engine.blocked_on(t), Ok(Some(_))) {
            let r = self.engine.cancel_wait(t);
            self.collect(r, &mut all);
        }
        let r = self.engine.remove_task(t);
        self.collect(r, &mut all);
        if let Some(rec) = self.threads.remove(&t) {
            self.by_tid.remove(&rec.shared.tid);
            unpublish_applied(rec.shared.tid);
        }
        all.retain(|c| c.task != t);
        self.apply(&all);
    }

    /// Adds the changes of a clean-up step to `all`, or counts its error
    /// (the clean-up goes on: nobody waits for its outcome).
    fn collect(&mut self, r: Result<Changes, EngineError>, all: &mut Changes) {
        match r {
            Ok(c) => all.extend(c),
            Err(e) => self.stats.engine_failed(e),
        }
    }

    /// Counts an engine error of a clean-up (a dropped object's release,
    /// helpers removed) that has nobody to report to.
    pub(crate) fn engine_failed(&mut self, e: EngineError) {
        self.stats.engine_failed(e);
    }

    /// Restores `t`'s base attributes in the kernel (if heir-rt changed
    /// them).
    pub(crate) fn restore_base(&mut self, t: TaskId) {
        if let Some(rec) = self.threads.get_mut(&t) {
            if rec.applied != rec.base_urgency && !foreign_deadline(rec.shared.tid, &rec.base) {
                self.stats.setattr_calls += 1;
                match sys::sched_setattr(rec.shared.tid, &rec.base) {
                    Ok(()) => {
                        rec.applied = rec.base_urgency;
                        mark_prio(rec.shared.tid, &rec.base);
                    }
                    Err(e) => self.stats.setattr_failed(rec.shared.tid, e),
                }
            }
            publish_applied(rec.shared.tid, rec.applied);
        }
    }

    /// A new engine mutex with `protocol` (in the slot of the last object
    /// removed, if any: the engine reuses slots, with a new generation).
    pub(crate) fn new_mutex(&mut self, protocol: Protocol) -> MutexId {
        self.engine.add_mutex(protocol)
    }

    /// A new engine mutex for a [`crate::PiMutex`] (a PI futex):
    /// `protocol` is `inherit` or `bwi`, both the kernel's inheritance.
    pub(crate) fn new_pi_mutex(&mut self, protocol: Protocol) -> MutexId {
        let m = self.new_mutex(protocol);
        self.pi_futex.insert(m);
        m
    }

    /// Mutex `m`'s protocol in the engine (`None`: no such mutex).
    pub(crate) fn mutex_protocol(&self, m: MutexId) -> Option<Protocol> {
        self.engine.protocol(m).ok()
    }

    /// Removes a mutex from the engine if nobody owns or waits on it (else
    /// it stays, owned or waited on, as the kernel's word does).
    pub(crate) fn free_mutex(&mut self, m: MutexId) {
        if self.remove_object(m.into()) {
            self.pi_futex.remove(&m);
        }
    }

    /// Removes object `o` from the engine unless it is busy (waited on,
    /// owned): its slot is reused by a later object, and its id is refused
    /// from then on.
    /// True if it was removed.
    pub(crate) fn remove_object(&mut self, o: ObjId) -> bool {
        match self.engine.remove_object(o) {
            Ok(ch) => {
                self.apply(&ch);
                true
            }
            Err(EngineError::ObjectBusy { .. }) => false,
            Err(e) => {
                self.stats.engine_failed(e);
                false
            }
        }
    }

    /// A new engine condition variable.
    pub(crate) fn new_cond(&mut self) -> CondId {
        self.engine.add_cond()
    }

    /// Drops every helper of `c` and returns it to the pool if nobody waits.
    pub(crate) fn free_cond(&mut self, c: CondId) {
        let helpers: Vec<TaskId> = self
            .engine
            .helpers(c)
            .map(|h| h.to_vec())
            .unwrap_or_default();
        for h in helpers {
            match self.engine.helper_del(c, h) {
                Ok(ch) => self.apply(&ch),
                Err(e) => self.stats.engine_failed(e),
            }
        }
        self.remove_object(c.into());
    }

    /// Checks the engine's invariants and that the kernel holds, for every
    /// registered thread, exactly the attributes heir-rt applied.
    pub(crate) fn check(&self) -> Result<(), Error> {
        self.engine
            .check_invariants()
            .map_err(|e| Error::Invariant(e.0))?;
        for (&t, rec) in &self.threads {
            self.engine.effective(t).map_err(Error::Engine)?;
            let want = self.wanted(t).unwrap_or(rec.applied);
            if want != rec.applied && sched::attr_for(&rec.base, rec.base_urgency, want).is_some() {
                return Err(Error::Invariant(format!(
                    "tid {}: engine says {} (the kernel's part aside), heir-rt applied {}",
                    rec.shared.tid, want, rec.applied
                )));
            }
            if let Ok(k) = sys::sched_getattr(rec.shared.tid) {
                if let Some(want) = sched::attr_for(&rec.base, rec.base_urgency, rec.applied) {
                    let same = k.sched_policy == want.sched_policy
                        && (k.sched_priority == want.sched_priority)
                        && (k.sched_policy == sys::SCHED_FIFO
                            || k.sched_policy == sys::SCHED_RR
                            || k.sched_nice == want.sched_nice);
                    if !same {
                        return Err(Error::Invariant(format!(
                            "tid {}: kernel has policy {} prio {} nice {}, expected policy {} prio {} nice {}",
                            rec.shared.tid,
                            k.sched_policy,
                            k.sched_priority,
                            k.sched_nice,
                            want.sched_policy,
                            want.sched_priority,
                            want.sched_nice
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// What the registry knows about `t`.
    pub(crate) fn info(&self, t: TaskId) -> Option<ThreadInfo> {
        let rec = self.threads.get(&t)?;
        Some(ThreadInfo {
            tid: rec.shared.tid,
            base: rec.base,
            base_urgency: rec.base_urgency,
            effective: self.engine.effective(t).ok()?.urgency,
            applied: rec.applied,
            blocked_on: self.engine.blocked_on(t).ok()?,
            kernel_helper: rec.kernel_helper.and_then(|h| self.tid_of(h)),
        })
    }

    /// True if some registered thread waits for mutex `m`.
    pub(crate) fn mutex_waited(&self, m: MutexId) -> bool {
        self.waited(m.into())
    }

    /// True if some registered thread waits on `c`.
    pub(crate) fn cond_waited(&self, c: CondId) -> bool {
        self.waited(c.into())
    }

    /// True if some thread waits on `b` (every engine task is a registered
    /// thread: tasks are added in `register` and removed in `purge`).
    fn waited(&self, b: ObjId) -> bool {
        self.engine.waiters(b).is_ok_and(|w| w.len() > 0)
    }

    /// Number of registered threads.
    pub(crate) fn registered(&self) -> usize {
        self.threads.len()
    }

    /// A donating call's wait, in the engine ([`crate::donate`]): the
    /// calling thread blocks on the engine object of the request ticket
    /// `key`, whose target is the server `server_tid` the ticket names.
    /// The kernel lends the urgency (the caller sleeps in `FUTEX_LOCK_PI`
    /// on the ticket): the wait is marked as carried by the kernel, so
    /// heir-rt makes no `sched_setattr` for it. A block that would close a
    /// cycle (servers calling each other) is refused before the caller
    /// sleeps: `Err(Deadlock)` with the cycle, nothing changed.
    pub(crate) fn donate_block(&mut self, key: usize, server_tid: i32) -> Result<(), Error> {
        let me = self.current()?;
        let server = self.task_of_tid(server_tid)?;
        let (o, new) = match self.donate_objs.get(&key) {
            Some(&o) => (o, false),
            None => (self.engine.add_object(heir_core::Spec::ENDPOINT), true),
        };
        let mut r = Ok(());
        if new {
            r = self.engine.add_target(o, server).map(|ch| self.apply(&ch));
        }
        let r = r.and_then(|()| {
            // Marked before the changes are applied: `wanted` leaves out
            // what the kernel carries.
            let blocked = self.engine.block(me, o);
            if blocked.is_ok() {
                if let Some(rec) = self.threads.get_mut(&me) {
                    rec.donation_server = Some(server);
                }
                if let Some(hr) = self.threads.get_mut(&server) {
                    hr.carried += 1;
                }
            }
            blocked.map(|ch| self.apply(&ch))
        });
        match r {
            Ok(()) => {
                self.donate_objs.insert(key, o);
                Ok(())
            }
            Err(e) => {
                if new {
                    self.remove_object(o);
                }
                Err(e.into())
            }
        }
    }

    /// Ends the calling thread's donating wait on ticket `key`
    /// ([`State::donate_block`]): it leaves the engine object, which is
    /// removed once nobody waits on it.
    pub(crate) fn donate_unblock(&mut self, key: usize) {
        let Ok(me) = self.current() else {
            return;
        };
        let server = self
            .threads
            .get_mut(&me)
            .and_then(|r| r.donation_server.take());
        if let Some(hr) = server.and_then(|s| self.threads.get_mut(&s)) {
            hr.carried = hr.carried.saturating_sub(1);
        }
        if matches!(self.engine.blocked_on(me), Ok(Some(_))) {
            match self.engine.cancel_wait(me) {
                Ok(ch) => self.apply(&ch),
                Err(e) => self.stats.engine_failed(e),
            }
        }
        if let Some(&o) = self.donate_objs.get(&key) {
            if !self.waited(o) && self.remove_object(o) {
                self.donate_objs.remove(&key);
            }
        }
    }

    /// The threads of a cycle the engine named, as tids (tasks only).
    pub(crate) fn cycle_tids(&self, cycle: &[heir_core::Node]) -> Vec<i32> {
        cycle
            .iter()
            .filter_map(|n| match n {
                heir_core::Node::Task(t) => self.tid_of(*t),
                _ => None,
            })
            .collect()
    }

    /// Arms a kernel-boosted wait of `w` (just blocked on `c` in the
    /// engine, engine lock held): names in `w`'s word the first helper of
    /// `c` that is another live thread of this process. False if there is
    /// none (the wait then boosts with `sched_setattr` only).
    pub(crate) fn arm_kernel_wait(&mut self, w: TaskId, c: CondId) -> bool {
        let helpers = self
            .engine
            .helpers(c)
            .map(|h| h.to_vec())
            .unwrap_or_default();
        let pick = helpers.into_iter().find_map(|h| {
            let tid = self.tid_of(h)?;
            (h != w && sys::is_own_thread(tid)).then_some((h, tid))
        });
        let Some((h, h_tid)) = pick else {
            return false;
        };
        let Some(rec) = self.threads.get_mut(&w) else {
            return false;
        };
        rec.kernel_helper = Some(h);
        rec.shared.boost.store(h_tid as u32, Ordering::Release);
        if let Some(hr) = self.threads.get_mut(&h) {
            hr.carried += 1;
        }
        true
    }

    /// Ends the kernel part of `w`'s wait in the registry: the helper its
    /// word named (returned, with its tid) no longer has that boost carried
    /// by the kernel as far as `sched_setattr` is concerned. The word itself
    /// is the caller's to release.
    pub(crate) fn disarm(&mut self, w: TaskId) -> Option<(TaskId, i32)> {
        let h = self.threads.get_mut(&w)?.kernel_helper.take()?;
        let hr = self.threads.get_mut(&h)?;
        hr.carried = hr.carried.saturating_sub(1);
        Some((h, hr.shared.tid))
    }

    /// Ends a kernel-boosted wait of `w` from another thread without waking
    /// it for good: its word is cleared and the wake signal interrupts its
    /// `FUTEX_LOCK_PI`, which the kernel restarts, finds free and takes;
    /// the waiter then decides under the engine lock (woken if its `wake`
    /// word says so, else it arms again). Engine lock held: `tgkill` does
    /// not sleep.
    pub(crate) fn kick(&mut self, w: TaskId) {
        if let Some(rec) = self.threads.get(&w) {
            rec.shared.boost.store(0, Ordering::Release);
            // ESRCH: the waiter is gone, nothing to end.
            let _ = sys::tgkill(rec.shared.tid, sys::wake_signal());
        }
    }

    /// Kernel waits that name helper `h` (of condition variable `c` only,
    /// if given) are disarmed and kicked: they arm again naming another
    /// helper. Used when `h` stops being a helper or leaves.
    pub(crate) fn rearm_waiters_naming(&mut self, h: TaskId, c: Option<CondId>) {
        let waiters: Vec<TaskId> = match c {
            Some(c) => self
                .engine
                .waiters(c)
                .map(|w| w.collect())
                .unwrap_or_default(),
            None => self.threads.keys().copied().collect(),
        };
        for w in waiters {
            if self.threads.get(&w).and_then(|r| r.kernel_helper) == Some(h) {
                self.disarm(w);
                self.kick(w);
            }
        }
    }

    /// Re-applies every helper of `c` (after a kernel wait on it was
    /// disarmed while its waiter still waits).
    pub(crate) fn sync_helpers(&mut self, c: CondId) {
        let helpers = self
            .engine
            .helpers(c)
            .map(|h| h.to_vec())
            .unwrap_or_default();
        for h in helpers {
            self.sync(h);
        }
    }

    /// Re-reads `t`'s base (after the user changed its attributes).
    pub(crate) fn set_base(&mut self, t: TaskId, base: SchedAttr) -> Result<(), Error> {
        let Some(rec) = self.threads.get_mut(&t) else {
            return Err(Error::NoSuchThread(0));
        };
        let bu = sched::urgency_of(&base);
        rec.base = base;
        rec.base_urgency = bu;
        rec.applied = bu;
        publish_applied(rec.shared.tid, bu);
        let ch = self.engine.set_base(t, bu).map_err(Error::Engine)?;
        self.apply(&ch);
        // The thread's own change may be absent from `ch` (its effective
        // urgency may stay the same while its base moved): re-sync it.
        self.sync(t);
        Ok(())
    }
}
