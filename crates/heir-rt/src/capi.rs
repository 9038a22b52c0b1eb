//! The C API (`include/heir.h`): pthread-style functions returning 0 or a
//! positive errno (`heir_gettid` alone returns a value, as `pthread_self`).
//!
//! Every object type is a struct in the caller's storage holding an
//! atomic pointer to heir's state and a magic number: `*_init` installs
//! the state at once; a static initialiser (`HEIR_MUTEX_INITIALIZER`,
//! `HEIR_COND_INITIALIZER`, `HEIR_CEILING_MUTEX_INITIALIZER(prio)`) sets
//! the magic number with a null pointer, and the first call on the object
//! installs the state ([`crate::lazy::installed`]). `*_destroy` frees the
//! state and clears both, so a later call on the destroyed object returns
//! `EINVAL` instead of crashing; so does a NULL or never-initialised
//! (zeroed) object. The state lives in the process's heap: objects are
//! process-private (`HEIR_PROCESS_SHARED` is refused with `ENOTSUP`).
//! Deadlines are absolute `CLOCK_MONOTONIC` times. Thread ids are kernel
//! tids (`gettid()`), 0 meaning the calling thread; a tid that is not a
//! live thread of this process returns `ESRCH`.
//!
//! The names of the previous release are kept one release as deprecated
//! aliases (declared with `__attribute__((deprecated))` in `heir.h`),
//! at the end of this file.
#![allow(non_camel_case_types)]

use std::ffi::c_void;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, Ordering};

use heir_core::{Protocol, Urgency};

use crate::ceiling::RawEngineMutex;
use crate::condvar::{Lend, PiCondvar, WaitResult};
use crate::donate::Endpoint;
use crate::gang::{self, Barrier, ControlWord, Gang, GangAttr, GangWait, Notified, PointResult};
use crate::lazy;
use crate::mutex::RawPiMutex;
use crate::queue::PrioQueue;
use crate::{thread, Error};

/// The magic number of a live (or statically initialised) `heir_mutex_t`;
/// `HEIR_MUTEX_INITIALIZER`'s second field.
pub const MAGIC_MUTEX: u32 = 0x6865_6d78; // "hemx"
/// `heir_cond_t`'s; `HEIR_COND_INITIALIZER`'s second field.
pub const MAGIC_COND: u32 = 0x6865_6376; // "hecv"
/// `heir_ceiling_mutex_t`'s; `HEIR_CEILING_MUTEX_INITIALIZER`'s second
/// field.
pub const MAGIC_CEIL: u32 = 0x6865_6365; // "hece"
const MAGIC_QUEUE: u32 = 0x6865_7175; // "hequ"
const MAGIC_RPC: u32 = 0x6865_7270; // "herp"
const MAGIC_GANG: u32 = 0x6865_676e; // "hegn"
const MAGIC_BARRIER: u32 = 0x6865_6272; // "hebr"

/// `heir_*_attr_t`'s `pshared`: the object is used by the threads of one
/// process (the only use heir supports).
pub const HEIR_PROCESS_PRIVATE: i32 = 0;
/// `heir_*_attr_t`'s `pshared`: shared between processes: refused with
/// `ENOTSUP` (heir's state lives in one process's heap, and its engine
/// knows one process's threads).
pub const HEIR_PROCESS_SHARED: i32 = 1;

/// `heir_cond_attr_t`'s `lend`: heir lends a waiter's priority to the
/// helpers with `sched_setattr` ([`Lend::User`]; the default).
pub const HEIR_LEND_USER: i32 = 0;
/// `heir_cond_attr_t`'s `lend`: the waiter sleeps in `FUTEX_LOCK_PI` on a
/// word naming one helper, and the kernel lends its priority or deadline
/// ([`Lend::Kernel`]).
pub const HEIR_LEND_KERNEL: i32 = 1;

/// A C handle: the caller's storage, an atomic pointer to heir's state and
/// a magic number.
trait Handle {
    /// heir's state behind it.
    type Inner;
    /// Its magic number.
    const MAGIC: u32;
    fn ptr(&self) -> &AtomicPtr<Self::Inner>;
    fn magic(&self) -> &AtomicU32;
    /// The state a static initialiser stands for, made on first use
    /// (`Ok(None)`: this type has no static initialiser).
    fn lazy(&self) -> Result<Option<Self::Inner>, Error> {
        Ok(None)
    }
}

macro_rules! handle_type {
    ($(#[$doc:meta])* $name:ident, $inner:ty) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug)]
        pub struct $name {
            p: AtomicPtr<$inner>,
            magic: AtomicU32,
        }
    };
}

macro_rules! handle_impl {
    ($name:ident, $inner:ty, $magic:expr) => {
        impl Handle for $name {
            type Inner = $inner;
            const MAGIC: u32 = $magic;
            fn ptr(&self) -> &AtomicPtr<$inner> {
                &self.p
            }
            fn magic(&self) -> &AtomicU32 {
                &self.magic
            }
        }
    };
    ($name:ident, $inner:ty, $magic:expr, lazy $make:expr) => {
        impl Handle for $name {
            type Inner = $inner;
            const MAGIC: u32 = $magic;
            fn ptr(&self) -> &AtomicPtr<$inner> {
                &self.p
            }
            fn magic(&self) -> &AtomicU32 {
                &self.magic
            }
            fn lazy(&self) -> Result<Option<$inner>, Error> {
                #[allow(clippy::redundant_closure_call)]
                ($make)(self).map(Some)
            }
        }
    };
}

handle_type!(
    /// `heir_mutex_t`: a PI mutex (kernel PI futex).
    heir_mutex_t,
    RawPiMutex
);
handle_type!(
    /// `heir_cond_t`: a PI condition variable with helpers.
    heir_cond_t,
    PiCondvar
);
handle_type!(
    /// `heir_queue_t`: the PI-CV paper's bounded priority queue (Fig. 5) of
    /// `void *` items.
    heir_queue_t,
    PrioQueue<usize>
);
handle_type!(
    /// `heir_rpc_t`: a donating RPC endpoint of `void *` requests and
    /// replies ([`crate::donate::Endpoint`]).
    heir_rpc_t,
    Endpoint<usize, usize>
);
handle_type!(
    /// `heir_gang_t`: a gang (GPM's gang priority management, L-GPM:
    /// [`crate::gang::Gang`]).
    heir_gang_t,
    Gang
);
handle_type!(
    /// `heir_barrier_t`: a barrier on a gang ([`crate::gang::Barrier`]).
    heir_barrier_t,
    Barrier
);

impl heir_mutex_t {
    /// A statically initialised mutex (C's `HEIR_MUTEX_INITIALIZER`).
    pub const fn initializer() -> heir_mutex_t {
        heir_mutex_t {
            p: AtomicPtr::new(std::ptr::null_mut()),
            magic: AtomicU32::new(MAGIC_MUTEX),
        }
    }
}

impl heir_cond_t {
    /// A statically initialised condition variable (C's
    /// `HEIR_COND_INITIALIZER`).
    pub const fn initializer() -> heir_cond_t {
        heir_cond_t {
            p: AtomicPtr::new(std::ptr::null_mut()),
            magic: AtomicU32::new(MAGIC_COND),
        }
    }
}

/// `heir_ceiling_mutex_t`: an immediate-priority-ceiling mutex; its
/// ceiling is kept in the handle for `HEIR_CEILING_MUTEX_INITIALIZER`.
#[repr(C)]
#[derive(Debug)]
pub struct heir_ceiling_mutex_t {
    p: AtomicPtr<RawEngineMutex>,
    magic: AtomicU32,
    prio: AtomicI32,
}

impl heir_ceiling_mutex_t {
    /// The static initialiser's value for ceiling `prio` (C's
    /// `HEIR_CEILING_MUTEX_INITIALIZER(prio)`).
    pub const fn initializer(prio: i32) -> heir_ceiling_mutex_t {
        heir_ceiling_mutex_t {
            p: AtomicPtr::new(std::ptr::null_mut()),
            magic: AtomicU32::new(MAGIC_CEIL),
            prio: AtomicI32::new(prio),
        }
    }
}

fn ceiling_of(prio: i32) -> Result<RawEngineMutex, Error> {
    if !(1..=99).contains(&prio) {
        return Err(Error::Invalid);
    }
    Ok(RawEngineMutex::new(Protocol::Ceiling(Urgency::fixed(
        prio as u8,
    ))))
}

handle_impl!(heir_mutex_t, RawPiMutex, MAGIC_MUTEX, lazy |_: &heir_mutex_t| Ok(RawPiMutex::new()));
handle_impl!(heir_cond_t, PiCondvar, MAGIC_COND, lazy |_: &heir_cond_t| Ok(PiCondvar::new()));
handle_impl!(
    heir_ceiling_mutex_t,
    RawEngineMutex,
    MAGIC_CEIL,
    lazy |h: &heir_ceiling_mutex_t| ceiling_of(h.prio.load(Ordering::Relaxed))
);
handle_impl!(heir_queue_t, PrioQueue<usize>, MAGIC_QUEUE);
handle_impl!(heir_rpc_t, Endpoint<usize, usize>, MAGIC_RPC);
handle_impl!(heir_gang_t, Gang, MAGIC_GANG);
handle_impl!(heir_barrier_t, Barrier, MAGIC_BARRIER);

/// Resolves a C handle to its state, installing a statically initialised
/// object's on first use.
///
/// # Safety
/// `h` must be null or point at a handle that is zeroed, destroyed,
/// statically initialised, or initialised by its `*_init`, and that no
/// `*_destroy` frees concurrently (the C contract: no call may overlap the
/// object's destroy).
unsafe fn get<'a, H: Handle>(h: *const H) -> Result<&'a H::Inner, Error> {
    // SAFETY: the caller guarantees `h` is null or readable.
    let Some(h) = (unsafe { h.as_ref() }) else {
        return Err(Error::Invalid);
    };
    if h.magic().load(Ordering::Acquire) != H::MAGIC {
        return Err(Error::Invalid);
    }
    let p = h.ptr().load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: a live handle's pointer came from `Box::into_raw` in
        // `init` or `installed` and is freed only by `destroy`.
        return Ok(unsafe { &*p });
    }
    let Some(state) = h.lazy()? else {
        return Err(Error::Invalid);
    };
    // SAFETY: only `init` and `installed` store pointers in the handle,
    // both from `Box::into_raw`; `destroy` frees them, never concurrently
    // with a call on the object (the caller's contract).
    Ok(unsafe { lazy::installed(h.ptr(), move || state) }.0)
}

/// Initialises `*h` with `state` (`EINVAL` if `h` is null).
///
/// # Safety
/// `h` null or writable memory for an `H` that no other thread uses.
unsafe fn init<H: Handle>(h: *mut H, state: Result<H::Inner, Error>) -> i32 {
    // SAFETY: the caller guarantees `h` is null or writable.
    let Some(h) = (unsafe { h.as_ref() }) else {
        return libc::EINVAL;
    };
    match state {
        Ok(s) => {
            h.ptr().store(Box::into_raw(Box::new(s)), Ordering::Release);
            h.magic().store(H::MAGIC, Ordering::Release);
            0
        }
        Err(e) => e.errno(),
    }
}

/// Destroys `*h`: `EINVAL` if it is not a live object, `EBUSY` (nothing
/// changed) if `busy` says a thread uses it; a statically initialised
/// object never used is destroyed without state to free.
///
/// # Safety
/// As [`get`]; no other call on the object overlaps this one.
unsafe fn destroy<H: Handle>(h: *mut H, busy: impl FnOnce(&H::Inner) -> bool) -> i32 {
    // SAFETY: the caller guarantees `h` is null or readable.
    let Some(hr) = (unsafe { h.as_ref() }) else {
        return libc::EINVAL;
    };
    if hr.magic().load(Ordering::Acquire) != H::MAGIC {
        return libc::EINVAL;
    }
    let p = hr.ptr().load(Ordering::Acquire);
    // SAFETY: a live pointer from `Box::into_raw` (see `get`).
    if let Some(s) = unsafe { p.as_ref() } {
        if busy(s) {
            return libc::EBUSY;
        }
    }
    hr.ptr().store(std::ptr::null_mut(), Ordering::Release);
    hr.magic().store(0, Ordering::Release);
    if !p.is_null() {
        // SAFETY: from `Box::into_raw`; unreachable through the handle now
        // and no call overlaps the destroy (the caller's contract).
        drop(unsafe { Box::from_raw(p) });
    }
    0
}

fn rc(r: Result<(), Error>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.errno(),
    }
}

/// `tid`, or the calling thread's for 0.
fn tid_or_self(tid: libc::pid_t) -> i32 {
    if tid == 0 {
        crate::rt::tid()
    } else {
        tid
    }
}

/// Reads an absolute CLOCK_MONOTONIC deadline.
///
/// # Safety
/// `ts` must be null or point at a readable `struct timespec`.
unsafe fn deadline(ts: *const libc::timespec) -> Result<u64, Error> {
    // SAFETY: the caller guarantees `ts` is null or readable.
    let Some(t) = (unsafe { ts.as_ref() }) else {
        return Err(Error::Invalid);
    };
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        return Err(Error::Invalid);
    }
    Ok(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// Reads an optional absolute CLOCK_MONOTONIC deadline (null: none).
///
/// # Safety
/// `ts` must be null or point at a readable `struct timespec`.
unsafe fn opt_deadline(ts: *const libc::timespec) -> Result<Option<u64>, Error> {
    if ts.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller guarantee; not null.
    unsafe { deadline(ts) }.map(Some)
}

/// Writes `v` to `*out` if `out` is not null.
///
/// # Safety
/// `out` null or writable.
unsafe fn put<T>(out: *mut T, v: T) {
    // SAFETY: the caller guarantees `out` is null or writable.
    if let Some(o) = unsafe { out.as_mut() } {
        *o = v;
    }
}

/// Writes `v` to `*out`; `EINVAL` if `out` is null.
///
/// # Safety
/// `out` null or writable.
unsafe fn put_req<T>(out: *mut T, v: T) -> Result<(), Error> {
    // SAFETY: the caller guarantees `out` is null or writable.
    let o = unsafe { out.as_mut() }.ok_or(Error::Invalid)?;
    *o = v;
    Ok(())
}

// ------------------------------------------------------------------ threads

/// Registers the calling thread with its current scheduling attributes
/// (its base from now on). Calls on heir objects register it themselves.
#[no_mangle]
pub extern "C" fn heir_thread_register() -> i32 {
    rc(thread::register().map(|_| ()))
}

/// The calling thread leaves the registry, back at its base attributes.
#[no_mangle]
pub extern "C" fn heir_thread_unregister() -> i32 {
    thread::unregister();
    0
}

/// The caller's kernel tid (cannot fail: the one function returning a
/// value, as `pthread_self`).
#[no_mangle]
pub extern "C" fn heir_gettid() -> libc::pid_t {
    thread::current_tid()
}

/// Checks the engine's invariants and the kernel attributes of every
/// registered thread; 0 if they hold, `EFAULT` if not.
#[no_mangle]
pub extern "C" fn heir_check_invariants() -> i32 {
    rc(thread::check_invariants())
}

/// `heir_apply_stats_t`: what heir-rt applied to the kernel and what it
/// could not, since the process started ([`thread::apply_stats`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct heir_apply_stats_t {
    /// `sched_setattr` calls made.
    pub setattr_calls: u64,
    /// Calls that failed (other than a vanished thread).
    pub setattr_errors: u64,
    /// The last failure's errno (0 if none).
    pub last_errno: i32,
    /// The thread whose `sched_setattr` failed last (0 if none).
    pub last_error_tid: libc::pid_t,
    /// Boosts not applied because nothing can express them: a deadline
    /// lent through a `HEIR_LEND_USER` condition variable (a deadline the
    /// kernel lends along PI futexes is not counted).
    pub unexpressible: u64,
    /// The thread of the last one (0 if none).
    pub last_unexpressible_tid: libc::pid_t,
    /// The errno the C API gives for the last engine error below (0 if
    /// none).
    pub last_engine_errno: i32,
    /// Threads found gone and dropped from the registry.
    pub vanished: u64,
    /// Engine errors while cleaning up after a thread or an object.
    pub engine_errors: u64,
}

impl From<&thread::ApplyStats> for heir_apply_stats_t {
    fn from(s: &thread::ApplyStats) -> Self {
        heir_apply_stats_t {
            setattr_calls: s.setattr_calls,
            setattr_errors: s.setattr_errors,
            last_errno: s.last_errno,
            last_error_tid: s.last_error_tid,
            unexpressible: s.unexpressible,
            last_unexpressible_tid: s.last_unexpressible_tid,
            last_engine_errno: s
                .last_engine_error
                .clone()
                .map_or(0, |e| Error::from(e).errno()),
            vanished: s.vanished,
            engine_errors: s.engine_errors,
        }
    }
}

/// Fills `*out` with what heir-rt applied to the kernel and what it could
/// not (`EINVAL` if `out` is null).
///
/// # Safety
/// `out` must be null or point at writable memory for a
/// `heir_apply_stats_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_apply_stats(out: *mut heir_apply_stats_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { put_req(out, heir_apply_stats_t::from(&thread::apply_stats())) })
}

// ------------------------------------------------------------------ mutexes

/// `heir_mutex_attr_t`: how a PI mutex is made (NULL: the defaults).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct heir_mutex_attr_t {
    /// [`HEIR_PROCESS_PRIVATE`] (`HEIR_PROCESS_SHARED`: `ENOTSUP`).
    pub pshared: i32,
}

/// `ENOTSUP` for a process-shared attribute, `EINVAL` for another value.
fn pshared(p: i32) -> Result<(), Error> {
    match p {
        HEIR_PROCESS_PRIVATE => Ok(()),
        HEIR_PROCESS_SHARED => Err(Error::Os {
            op: "process-shared heir object",
            errno: libc::ENOTSUP,
        }),
        _ => Err(Error::Invalid),
    }
}

/// Initialises a PI mutex (`attr` null: the defaults).
///
/// # Safety
/// `m` must be null or point at writable memory for a `heir_mutex_t`;
/// `attr` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_init(
    m: *mut heir_mutex_t,
    attr: *const heir_mutex_attr_t,
) -> i32 {
    // SAFETY: the caller guarantees `attr` is null or readable.
    let a = unsafe { attr.as_ref() }.copied().unwrap_or_default();
    // SAFETY: forwarded caller guarantee.
    unsafe { init(m, pshared(a.pshared).map(|()| RawPiMutex::new())) }
}

/// Locks a PI mutex.
///
/// # Safety
/// `m` null, or a live or statically initialised handle.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_lock(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.lock()))
}

/// Locks a PI mutex if free (`EBUSY` otherwise; `EOWNERDEAD` as
/// [`heir_mutex_lock`]).
///
/// # Safety
/// As [`heir_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_trylock(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.try_lock()))
}

/// Locks a PI mutex, giving up at `abstime` (CLOCK_MONOTONIC).
///
/// # Safety
/// As [`heir_mutex_lock`]; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_timedlock(
    m: *mut heir_mutex_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    rc(unsafe { get(m) }.and_then(|m| {
        // SAFETY: forwarded caller guarantee on `abstime`.
        let d = unsafe { deadline(abstime) }?;
        m.lock_until(Some(d))
    }))
}

/// Unlocks a PI mutex (`EPERM` if the caller does not own it).
///
/// # Safety
/// As [`heir_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_unlock(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.unlock()))
}

/// Marks a PI mutex whose owner died consistent again (after
/// `EOWNERDEAD`, by its new owner): `EPERM` if the caller does not hold it,
/// `EINVAL` if it is not inconsistent.
///
/// # Safety
/// As [`heir_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_consistent(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.make_consistent()))
}

/// Destroys a PI mutex (`EBUSY` if locked).
///
/// # Safety
/// As [`heir_mutex_lock`]; no other call on `m` overlaps this one.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_destroy(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(m, |x: &RawPiMutex| x.owner_tid().is_some()) }
}

// --------------------------------------------------- condition variables

/// `heir_cond_attr_t`: how a PI condition variable is made (NULL: the
/// defaults, all zero).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct heir_cond_attr_t {
    /// [`HEIR_PROCESS_PRIVATE`] (`HEIR_PROCESS_SHARED`: `ENOTSUP`).
    pub pshared: i32,
    /// How a waiter's priority reaches the helpers: [`HEIR_LEND_USER`]
    /// (the default) or [`HEIR_LEND_KERNEL`].
    pub lend: i32,
}

/// The condition variable `attr` asks for.
fn cond_of_attr(a: heir_cond_attr_t) -> Result<PiCondvar, Error> {
    pshared(a.pshared)?;
    match a.lend {
        HEIR_LEND_USER => Ok(PiCondvar::new()),
        HEIR_LEND_KERNEL => PiCondvar::with_lend(Lend::Kernel),
        _ => Err(Error::Invalid),
    }
}

/// Initialises a PI condition variable without helpers (`attr` null: the
/// defaults). `EINVAL` for an unknown `lend`, `ENOTSUP` for a
/// process-shared one, `EBUSY` if `HEIR_LEND_KERNEL` finds the program's
/// own handler on heir's wake signal (`SIGRTMAX - 2`).
///
/// # Safety
/// `c` null or writable memory for a `heir_cond_t`; `attr` null or
/// readable.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_init(c: *mut heir_cond_t, attr: *const heir_cond_attr_t) -> i32 {
    // SAFETY: the caller guarantees `attr` is null or readable.
    let a = unsafe { attr.as_ref() }.copied().unwrap_or_default();
    // SAFETY: forwarded caller guarantee.
    unsafe { init(c, cond_of_attr(a)) }
}

/// Waits on `c` with the PI mutex `m`, until `deadline_ns`.
///
/// # Safety
/// `c`, `m` null or live or statically initialised handles.
unsafe fn cond_wait_pi(
    c: *mut heir_cond_t,
    m: *mut heir_mutex_t,
    deadline_ns: Result<Option<u64>, Error>,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    let r = unsafe { get(c) }.and_then(|c| {
        // SAFETY: forwarded caller guarantee.
        let m = unsafe { get(m) }?;
        match c.wait_raw(m, deadline_ns?)? {
            WaitResult::Woken => Ok(()),
            WaitResult::TimedOut => Err(Error::TimedOut),
        }
    });
    rc(r)
}

/// Waits on `c` with the ceiling mutex `m`, until `deadline_ns`.
///
/// # Safety
/// As [`cond_wait_pi`].
unsafe fn cond_wait_ceiling(
    c: *mut heir_cond_t,
    m: *mut heir_ceiling_mutex_t,
    deadline_ns: Result<Option<u64>, Error>,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    let r = unsafe { get(c) }.and_then(|c| {
        // SAFETY: forwarded caller guarantee.
        let m = unsafe { get(m) }?;
        match c.wait_engine(m, deadline_ns?)? {
            WaitResult::Woken => Ok(()),
            WaitResult::TimedOut => Err(Error::TimedOut),
        }
    });
    rc(r)
}

/// Waits on `c`; `m` (held by the caller) is released while waiting.
///
/// # Safety
/// `c` and `m` null or live or statically initialised handles.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_wait(c: *mut heir_cond_t, m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { cond_wait_pi(c, m, Ok(None)) }
}

/// Waits on `c` until `abstime` (CLOCK_MONOTONIC); `ETIMEDOUT` on timeout.
///
/// # Safety
/// As [`heir_cond_wait`]; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_timedwait(
    c: *mut heir_cond_t,
    m: *mut heir_mutex_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { cond_wait_pi(c, m, deadline(abstime).map(Some)) }
}

/// [`heir_cond_wait`] with a ceiling mutex held by the caller.
///
/// # Safety
/// As [`heir_cond_wait`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_wait_ceiling(
    c: *mut heir_cond_t,
    m: *mut heir_ceiling_mutex_t,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { cond_wait_ceiling(c, m, Ok(None)) }
}

/// [`heir_cond_timedwait`] with a ceiling mutex held by the caller.
///
/// # Safety
/// As [`heir_cond_timedwait`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_timedwait_ceiling(
    c: *mut heir_cond_t,
    m: *mut heir_ceiling_mutex_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { cond_wait_ceiling(c, m, deadline(abstime).map(Some)) }
}

/// Wakes the most urgent waiter of `c`.
///
/// # Safety
/// `c` null or a live or statically initialised handle.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_signal(c: *mut heir_cond_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(c) }.and_then(|c| c.signal().map(|_| ())))
}

/// Wakes every waiter of `c`, most urgent first.
///
/// # Safety
/// As [`heir_cond_signal`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_broadcast(c: *mut heir_cond_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(c) }.and_then(|c| c.broadcast().map(|_| ())))
}

/// Makes thread `tid` (0: the caller) a helper of `c` (`EEXIST` if it is
/// one, `ESRCH` if it is not a thread of this process).
///
/// # Safety
/// As [`heir_cond_signal`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_add_helper(c: *mut heir_cond_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(c) }.and_then(|c| c.add_helper(tid_or_self(tid))))
}

/// Removes helper `tid` (0: the caller) from `c` (`ENOENT` if it is not
/// one), revoking what it inherited through `c`.
///
/// # Safety
/// As [`heir_cond_signal`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_remove_helper(c: *mut heir_cond_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(c) }.and_then(|c| c.remove_helper(tid_or_self(tid))))
}

/// Destroys `c` (`EBUSY` if threads wait on it).
///
/// # Safety
/// As [`heir_cond_signal`]; no other call on `c` overlaps this one.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_destroy(c: *mut heir_cond_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(c, |x: &PiCondvar| x.has_waiters()) }
}

// --------------------------------------------------------- ceiling mutexes

/// Initialises a ceiling mutex with real-time priority ceiling `prio`
/// (1..=99; `EINVAL` otherwise).
///
/// # Safety
/// `m` null or writable memory for a `heir_ceiling_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_init(m: *mut heir_ceiling_mutex_t, prio: i32) -> i32 {
    if !(1..=99).contains(&prio) {
        return libc::EINVAL;
    }
    // SAFETY: the caller guarantees `m` is null or writable.
    if let Some(h) = unsafe { m.as_ref() } {
        h.prio.store(prio, Ordering::Relaxed);
    }
    // SAFETY: forwarded caller guarantee.
    unsafe { init(m, ceiling_of(prio)) }
}

/// Raises the caller to the ceiling and locks. `EOWNERDEAD`: the previous
/// owner exited holding it and the caller holds it now (repair, then
/// [`heir_ceiling_mutex_consistent`]); `ENOTRECOVERABLE`: it was unlocked
/// inconsistent.
///
/// # Safety
/// `m` null or a live or statically initialised handle.
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_lock(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.lock()))
}

/// Locks if no thread holds the mutex (`EBUSY` otherwise), as
/// [`heir_ceiling_mutex_lock`].
///
/// # Safety
/// As [`heir_ceiling_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_trylock(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.try_lock()))
}

/// Locks as [`heir_ceiling_mutex_lock`], giving up at `abstime`
/// (`ETIMEDOUT`).
///
/// # Safety
/// As [`heir_ceiling_mutex_lock`]; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_timedlock(
    m: *mut heir_ceiling_mutex_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    rc(unsafe { get(m) }.and_then(|m| {
        // SAFETY: forwarded caller guarantee on `abstime`.
        let d = unsafe { deadline(abstime) }?;
        m.lock_until(Some(d))
    }))
}

/// Unlocks and restores the caller (to the next outer ceiling or its base).
///
/// # Safety
/// As [`heir_ceiling_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_unlock(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.unlock()))
}

/// Marks a ceiling mutex whose owner died consistent again (after
/// `EOWNERDEAD`, by its new owner): `EPERM` if the caller does not hold
/// it, `EINVAL` if it is not inconsistent.
///
/// # Safety
/// As [`heir_ceiling_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_consistent(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(m) }.and_then(|m| m.make_consistent()))
}

/// Destroys a ceiling mutex (`EBUSY`, nothing changed, while a thread
/// holds or waits for it).
///
/// # Safety
/// As [`heir_ceiling_mutex_lock`]; no other call on `m` overlaps this one.
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_destroy(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(m, |x: &RawEngineMutex| x.is_busy()) }
}

// ------------------------------------------------------------------ queues

/// Initialises a queue of at most `capacity` items (`EINVAL` for 0).
///
/// # Safety
/// `q` null or writable memory for a `heir_queue_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_init(q: *mut heir_queue_t, capacity: u32) -> i32 {
    if capacity == 0 {
        return libc::EINVAL;
    }
    // SAFETY: forwarded caller guarantee.
    unsafe { init(q, Ok(PrioQueue::<usize>::new(capacity as usize))) }
}

/// Pushes `item` at the caller's effective priority, waiting while the
/// queue is full until `deadline_ns`.
///
/// # Safety
/// `q` null or a live handle.
unsafe fn queue_push(
    q: *mut heir_queue_t,
    item: *mut c_void,
    deadline_ns: Result<Option<u64>, Error>,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(q) }.and_then(|q| {
        let d = deadline_ns?;
        let prio = thread::current_urgency()?;
        q.push_until(item as usize, prio, d)
    }))
}

/// Pushes `item` at the caller's effective priority (blocks while full).
///
/// # Safety
/// `q` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_push(q: *mut heir_queue_t, item: *mut c_void) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { queue_push(q, item, Ok(None)) }
}

/// Pushes like [`heir_queue_push`], giving up at `abstime` (`ETIMEDOUT`,
/// nothing queued).
///
/// # Safety
/// As [`heir_queue_push`]; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_timedpush(
    q: *mut heir_queue_t,
    item: *mut c_void,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { queue_push(q, item, deadline(abstime).map(Some)) }
}

/// Pops the most urgent item into `*item` (blocks while empty).
///
/// # Safety
/// `q` null or a live handle; `item` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_pop(q: *mut heir_queue_t, item: *mut *mut c_void) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(q) }.and_then(|q| {
        if item.is_null() {
            return Err(Error::Invalid);
        }
        let v = q.pop()? as *mut c_void;
        // SAFETY: the caller guarantees `item` is null or writable.
        unsafe { put_req(item, v) }
    });
    rc(r)
}

/// Pops like [`heir_queue_pop`], giving up at `abstime` (`ETIMEDOUT`).
///
/// # Safety
/// As [`heir_queue_pop`]; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_timedpop(
    q: *mut heir_queue_t,
    item: *mut *mut c_void,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(q) }.and_then(|q| {
        if item.is_null() {
            return Err(Error::Invalid);
        }
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { deadline(abstime) }?;
        let v = q.pop_until(Some(d))?.ok_or(Error::TimedOut)? as *mut c_void;
        // SAFETY: the caller guarantees `item` is null or writable.
        unsafe { put_req(item, v) }
    });
    rc(r)
}

/// Makes `tid` (0: the caller) a producer of `q` (a helper of its "more"
/// condition).
///
/// # Safety
/// `q` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_add_producer(q: *mut heir_queue_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(q) }.and_then(|q| q.add_producer(tid_or_self(tid))))
}

/// `tid` (0: the caller) stops being a producer of `q`.
///
/// # Safety
/// `q` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_remove_producer(q: *mut heir_queue_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(q) }.and_then(|q| q.remove_producer(tid_or_self(tid))))
}

/// Makes `tid` (0: the caller) a consumer of `q` (a helper of its "less"
/// condition).
///
/// # Safety
/// `q` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_add_consumer(q: *mut heir_queue_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(q) }.and_then(|q| q.add_consumer(tid_or_self(tid))))
}

/// `tid` (0: the caller) stops being a consumer of `q`.
///
/// # Safety
/// `q` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_remove_consumer(q: *mut heir_queue_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(q) }.and_then(|q| q.remove_consumer(tid_or_self(tid))))
}

/// Destroys a queue: `EBUSY` (nothing changed) while a thread is inside
/// a call on it — a push waiting for room, a pop or timed pop waiting for
/// an item, one on its way in or out.
///
/// # Safety
/// `q` null or a live handle; no call on it may *start* concurrently (one
/// already inside is refused with `EBUSY`).
#[no_mangle]
pub unsafe extern "C" fn heir_queue_destroy(q: *mut heir_queue_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(q, |x: &PrioQueue<usize>| x.is_busy()) }
}

// -------------------------------------------------------------------- RPC

/// Initialises a donating RPC endpoint without servers.
///
/// # Safety
/// `ep` null or writable memory for a `heir_rpc_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_init(ep: *mut heir_rpc_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { init(ep, Ok(Endpoint::<usize, usize>::new())) }
}

/// Destroys an endpoint (`EBUSY` while a call is in flight or a server
/// waits in receive).
///
/// # Safety
/// `ep` null or a live handle; no thread inside a `heir_rpc_*` call on it.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_destroy(ep: *mut heir_rpc_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(ep, |e: &Endpoint<usize, usize>| !e.is_quiet()) }
}

/// A server serves in its own thread: `tid` must name the caller.
fn self_only(tid: libc::pid_t) -> Result<(), Error> {
    if tid_or_self(tid) == crate::rt::tid() {
        Ok(())
    } else {
        Err(Error::Invalid)
    }
}

/// Makes the calling thread (`tid` 0 or its own) a server (`passive`:
/// `SCHED_IDLE` first).
///
/// # Safety
/// `ep` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_add_server(
    ep: *mut heir_rpc_t,
    tid: libc::pid_t,
    passive: i32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(ep) }.and_then(|e| {
        self_only(tid)?;
        e.add_server(passive != 0)
    }))
}

/// The calling thread (`tid` 0 or its own) stops serving the endpoint.
///
/// # Safety
/// `ep` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_remove_server(ep: *mut heir_rpc_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(ep) }.and_then(|e| {
        self_only(tid)?;
        e.remove_server()
    }))
}

/// Calls with `req`; the reply goes to `*resp`. `abstime` null: no
/// timeout.
///
/// # Safety
/// `ep` null or a live handle; `resp` null or writable; `abstime` null or
/// readable.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_call(
    ep: *mut heir_rpc_t,
    req: *mut c_void,
    resp: *mut *mut c_void,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(ep) }.and_then(|e| {
        if resp.is_null() {
            return Err(Error::Invalid);
        }
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        let v = e.call_until(req as usize, d)? as *mut c_void;
        // SAFETY: the caller guarantees `resp` is null or writable.
        unsafe { put_req(resp, v) }
    });
    rc(r)
}

/// Receives a request into `*req` (`ETIMEDOUT` at `abstime` if none came).
///
/// # Safety
/// `ep` null or a live handle; `req` null or writable; `abstime` null or
/// readable.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_receive(
    ep: *mut heir_rpc_t,
    req: *mut *mut c_void,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(ep) }.and_then(|e| {
        if req.is_null() {
            return Err(Error::Invalid);
        }
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        let v = e.receive_until(d)?.ok_or(Error::TimedOut)? as *mut c_void;
        // SAFETY: the caller guarantees `req` is null or writable.
        unsafe { put_req(req, v) }
    });
    rc(r)
}

/// Replies `resp` to the request the calling server received.
///
/// # Safety
/// `ep` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_reply(ep: *mut heir_rpc_t, resp: *mut c_void) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(ep) }.and_then(|e| e.reply(resp as usize)))
}

// ------------------------------------------------------------------- gangs

/// `heir_gang_attr_t`: how a gang is made (NULL: `{ .gpm = 1 }`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct heir_gang_attr_t {
    /// Nonzero: `heir_gang_run` boosts the active members (GPM); 0: it
    /// counts them and boosts nobody (the no-GPM baseline). (C also names
    /// it `boost`, deprecated.)
    pub gpm: i32,
}

/// Initialises a gang without members (`attr` null: `{ .gpm = 1 }`). An
/// errno if no eventfd can be made.
///
/// # Safety
/// `g` null or writable memory for a `heir_gang_t`; `attr` null or
/// readable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_init(g: *mut heir_gang_t, attr: *const heir_gang_attr_t) -> i32 {
    // SAFETY: the caller guarantees `attr` is null or readable.
    let gpm = unsafe { attr.as_ref() }.is_none_or(|a| a.gpm != 0);
    // SAFETY: forwarded caller guarantee.
    unsafe { init(g, Gang::with_attr(GangAttr { gpm })) }
}

/// Destroys a gang's handle: the gang goes away once its last member has
/// left (its members stay boosted until they notify).
///
/// # Safety
/// `g` null or a live handle; no other call on it overlaps this one.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_destroy(g: *mut heir_gang_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(g, |_: &Gang| false) }
}

/// Makes thread `tid` (0: the caller) a passive member with control word
/// `*cw`. `EEXIST` if the thread is in a gang already (at most one) or the
/// word is another member's, `ESRCH` if `tid` is not a thread of this
/// process, `EINVAL` for a null or misaligned `cw`.
///
/// # Safety
/// `g` null or a live handle; `cw` null or a `uint32_t` that stays
/// allocated and in place until the thread leaves the gang, changed only
/// atomically (`heir_gang_activate`/`_deactivate` or C11 atomics).
#[no_mangle]
pub unsafe extern "C" fn heir_gang_add_member(
    g: *mut heir_gang_t,
    tid: libc::pid_t,
    cw: *mut u32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(g) }.and_then(|g| {
        // SAFETY: the caller promises the word's lifetime and atomic use.
        let w = unsafe { ControlWord::from_ptr(cw) }.ok_or(Error::Invalid)?;
        g.add_member(tid_or_self(tid), &w)
    });
    rc(r)
}

/// Thread `tid` (0: the caller) leaves gang `g`; if the run in progress
/// counted it and it had not notified, this is its notify. `ENOENT` if it
/// is not a member of `g`.
///
/// # Safety
/// `g` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_remove_member(g: *mut heir_gang_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(g) }.and_then(|g| g.remove_member(tid_or_self(tid)).map(|_| ())))
}

/// `*member` = 1 if thread `tid` (0: the caller) is a member of `g`, else
/// 0 (a member found exited has left).
///
/// # Safety
/// `g` null or a live handle; `member` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_has_member(
    g: *mut heir_gang_t,
    tid: libc::pid_t,
    member: *mut i32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(g) }.and_then(|g| {
        let is = g.has_member(tid_or_self(tid));
        // SAFETY: the caller guarantees `member` is null or writable.
        unsafe { put_req(member, i32::from(is)) }
    }))
}

/// A gang's id into `*id` (never 0).
///
/// # Safety
/// `g` null or a live handle; `id` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_id(g: *mut heir_gang_t, id: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantees.
    rc(unsafe { get(g) }.and_then(|g| unsafe { put_req(id, g.id().0) }))
}

/// `gang_run`: counts the members whose control word shares a bit with
/// `mask` and boosts them to the gang priority until each notifies; the
/// number counted into `*active` (if not null). `EBUSY` (nothing changed)
/// while members of the previous run have not all notified; `EINVAL` for
/// a mask of 0 or outside `HEIR_GANG_MASK`.
///
/// # Safety
/// `g` null or a live handle; `active` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_run(g: *mut heir_gang_t, mask: u32, active: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(g) }.and_then(|g| g.run(mask));
    match r {
        Ok(o) => {
            // SAFETY: the caller guarantees `active` is null or writable.
            unsafe { put(active, o.active) };
            0
        }
        Err(e) => e.errno(),
    }
}

/// `gang_wait`: 0 once every member counted in the run in progress has
/// notified (at once if none is in progress), `ETIMEDOUT` at `abstime`
/// (CLOCK_MONOTONIC; null: no timeout).
///
/// # Safety
/// `g` null or a live handle; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_wait(
    g: *mut heir_gang_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(g) }.and_then(|g| {
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        match g.wait_until(d)? {
            GangWait::Completed => Ok(()),
            GangWait::TimedOut => Err(Error::TimedOut),
        }
    });
    rc(r)
}

/// `gang_notify` by the calling thread, a member of `g` (`ENOENT` if it is
/// not): ends its gang boost and discounts it; `*counted` (if not null) 1
/// if the run in progress counted it and it had not notified, else 0.
///
/// # Safety
/// `g` null or a live handle; `counted` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_notify(g: *mut heir_gang_t, counted: *mut i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(g) }.and_then(|g| g.notify());
    match r {
        Ok(n) => {
            // SAFETY: the caller guarantees `counted` is null or writable.
            unsafe { put(counted, i32::from(matches!(n, Notified::Counted { .. }))) };
            0
        }
        Err(e) => e.errno(),
    }
}

/// The gang's eventfd into `*fd`: readable (`POLLIN`) exactly when
/// `heir_gang_wait` would return at once. Poll it; do not read or close
/// it.
///
/// # Safety
/// `g` null or a live handle; `fd` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_fd(g: *mut heir_gang_t, fd: *mut i32) -> i32 {
    // SAFETY: forwarded caller guarantees.
    rc(unsafe { get(g) }.and_then(|g| unsafe { put_req(fd, g.fd().as_raw_fd()) }))
}

/// Sets (`set`) or clears membership bits of `*cw`; the word before into
/// `*before` (if not null).
///
/// # Safety
/// `cw` null or a live, aligned `uint32_t` only changed atomically;
/// `before` null or writable.
unsafe fn word_change(cw: *mut u32, bits: u32, before: *mut u32, set: bool) -> i32 {
    // SAFETY: forwarded caller guarantee (the handle lives for this call).
    let Some(w) = (unsafe { ControlWord::from_ptr(cw) }) else {
        return libc::EINVAL;
    };
    let old = if set {
        w.activate(bits)
    } else {
        w.deactivate(bits)
    };
    // SAFETY: the caller guarantees `before` is null or writable.
    unsafe { put(before, old.0) };
    0
}

/// Sets membership bits of control word `*cw` (`bits & HEIR_GANG_MASK`)
/// with one atomic operation, no system call; the word before into
/// `*before` (if not null). `EINVAL` for a null or misaligned `cw`.
///
/// # Safety
/// `cw` null or a live, aligned `uint32_t` only changed atomically;
/// `before` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_activate(cw: *mut u32, bits: u32, before: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { word_change(cw, bits, before, true) }
}

/// Clears membership bits of `*cw` as [`heir_gang_activate`] sets them. If
/// the word before has `HEIR_GANG_RUN`, the thread was counted by a run
/// and must still call `heir_gang_notify`.
///
/// # Safety
/// As [`heir_gang_activate`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_deactivate(cw: *mut u32, bits: u32, before: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { word_change(cw, bits, before, false) }
}

// ---------------------------------------------------------------- barriers

/// Initialises a barrier on a new gang (`gpm` nonzero: GPM; 0: the same
/// barrier without boosts).
///
/// # Safety
/// `b` null or writable memory for a `heir_barrier_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_init(b: *mut heir_barrier_t, gpm: i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { init(b, Barrier::new(GangAttr { gpm: gpm != 0 })) }
}

/// Destroys a barrier: `EBUSY` while one is active (started, not
/// released). Its members leave its gang when they exit or are removed.
///
/// # Safety
/// `b` null or a live handle; no thread inside a `heir_barrier_*` call on
/// it.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_destroy(b: *mut heir_barrier_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { destroy(b, |x: &Barrier| x.is_active()) }
}

/// Thread `tid` (0: the caller) becomes a member of the barrier: `active` nonzero,
/// counted by every barrier; 0, a passive member that only counts for the
/// gang priority (an initiator). `EEXIST` if it is in a gang already.
///
/// # Safety
/// `b` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_add_member(
    b: *mut heir_barrier_t,
    tid: libc::pid_t,
    active: i32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(b) }.and_then(|b| b.add_member(tid_or_self(tid), active != 0).map(|_| ())))
}

/// Thread `tid` (0: the caller) leaves the barrier (its notify if a
/// barrier counts it); `ENOENT` if it is not a member.
///
/// # Safety
/// `b` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_remove_member(
    b: *mut heir_barrier_t,
    tid: libc::pid_t,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(b) }.and_then(|b| b.remove_member(tid_or_self(tid)).map(|_| ())))
}

/// The initiator: sets the barrier-active flag and runs the gang (members
/// counted into `*active` if not null). `EBUSY` if a barrier is active.
///
/// # Safety
/// `b` null or a live handle; `active` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_start(b: *mut heir_barrier_t, active: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { get(b) }.and_then(|b| b.start()) {
        Ok(o) => {
            // SAFETY: the caller guarantees `active` is null or writable.
            unsafe { put(active, o.active) };
            0
        }
        Err(e) => e.errno(),
    }
}

/// Waits for the barrier's completion (every counted member at its
/// barrier point): 0, or `ETIMEDOUT` at `abstime` (null: none).
///
/// # Safety
/// `b` null or a live handle; `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_wait(
    b: *mut heir_barrier_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(b) }.and_then(|b| {
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        match b.wait_until(d)? {
            GangWait::Completed => Ok(()),
            GangWait::TimedOut => Err(Error::TimedOut),
        }
    });
    rc(r)
}

/// The initiator releases the members blocked at their barrier points.
///
/// # Safety
/// `b` null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_release(b: *mut heir_barrier_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { get(b) }.map(|b| b.release()))
}

/// A member's barrier point: if a barrier is active, notify and block
/// until released (`*released` = 1) or `abstime` (`ETIMEDOUT`); else go on
/// (`*released` = 0). `released` and `abstime` may be null.
///
/// # Safety
/// `b` null or a live handle; `abstime` null or readable; `released` null
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_point(
    b: *mut heir_barrier_t,
    abstime: *const libc::timespec,
    released: *mut i32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { get(b) }.and_then(|b| {
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        Ok(b.point_until(d))
    });
    match r {
        Ok(p) => {
            // SAFETY: the caller guarantees `released` is null or writable.
            unsafe { put(released, i32::from(p == PointResult::Released)) };
            if p == PointResult::TimedOut {
                libc::ETIMEDOUT
            } else {
                0
            }
        }
        Err(e) => e.errno(),
    }
}

/// The barrier's gang's eventfd into `*fd` (as `heir_gang_fd`: readable
/// when the barrier is complete or none runs).
///
/// # Safety
/// `b` null or a live handle; `fd` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_fd(b: *mut heir_barrier_t, fd: *mut i32) -> i32 {
    // SAFETY: forwarded caller guarantees.
    rc(unsafe { get(b) }.and_then(|b| unsafe { put_req(fd, b.gang().fd().as_raw_fd()) }))
}

// ------------------------------------- deprecated names (one release)
//
// The previous release's names, kept as thin wrappers for one release so
// that programs built against it still link; `heir.h` declares them
// deprecated. `heir_mutex_init`, `heir_cond_init` and `heir_gang_notify`
// changed their arguments (no alias can keep the old ones).

/// Deprecated: [`heir_thread_register`].
#[no_mangle]
pub extern "C" fn heir_thread_join() -> i32 {
    heir_thread_register()
}

/// Deprecated: [`heir_thread_unregister`].
#[no_mangle]
pub extern "C" fn heir_thread_leave() -> i32 {
    heir_thread_unregister()
}

/// `heir_cond_init_boost`'s `boost` (deprecated): [`HEIR_LEND_USER`].
pub const HEIR_BOOST_USER: i32 = HEIR_LEND_USER;
/// `heir_cond_init_boost`'s `boost` (deprecated): [`HEIR_LEND_KERNEL`].
pub const HEIR_BOOST_KERNEL: i32 = HEIR_LEND_KERNEL;

/// Deprecated: [`heir_cond_init`] with `{ .lend = boost }`.
///
/// # Safety
/// As [`heir_cond_init`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_init_boost(c: *mut heir_cond_t, boost: i32) -> i32 {
    let a = heir_cond_attr_t {
        pshared: HEIR_PROCESS_PRIVATE,
        lend: boost,
    };
    // SAFETY: forwarded caller guarantee; `a` is a local.
    unsafe { heir_cond_init(c, &a) }
}

/// Deprecated: [`heir_cond_add_helper`].
///
/// # Safety
/// As [`heir_cond_add_helper`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_helpers_add(c: *mut heir_cond_t, helper: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_cond_add_helper(c, helper) }
}

/// Deprecated: [`heir_cond_remove_helper`].
///
/// # Safety
/// As [`heir_cond_remove_helper`].
#[no_mangle]
pub unsafe extern "C" fn heir_cond_helpers_del(c: *mut heir_cond_t, helper: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_cond_remove_helper(c, helper) }
}

/// Deprecated: [`heir_rpc_add_server`] for the caller.
///
/// # Safety
/// As [`heir_rpc_add_server`].
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_server_join(ep: *mut heir_rpc_t, passive: i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_rpc_add_server(ep, 0, passive) }
}

/// Deprecated: [`heir_rpc_remove_server`] for the caller.
///
/// # Safety
/// As [`heir_rpc_remove_server`].
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_server_leave(ep: *mut heir_rpc_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_rpc_remove_server(ep, 0) }
}

/// Deprecated: [`heir_gang_init`].
///
/// # Safety
/// As [`heir_gang_init`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_create(
    g: *mut heir_gang_t,
    attr: *const heir_gang_attr_t,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { heir_gang_init(g, attr) }
}

/// Deprecated: [`heir_gang_destroy`].
///
/// # Safety
/// As [`heir_gang_destroy`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_close(g: *mut heir_gang_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_gang_destroy(g) }
}

/// Deprecated: [`heir_gang_add_member`].
///
/// # Safety
/// As [`heir_gang_add_member`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_insert(
    g: *mut heir_gang_t,
    tid: libc::pid_t,
    cw: *mut u32,
) -> i32 {
    // SAFETY: forwarded caller guarantees.
    unsafe { heir_gang_add_member(g, tid, cw) }
}

/// Deprecated (no handle): thread `tid` leaves its gang, whichever it is;
/// `ENOENT` if it is in none. [`heir_gang_remove_member`] takes the gang.
#[no_mangle]
pub extern "C" fn heir_gang_remove(tid: libc::pid_t) -> i32 {
    rc(gang::remove_tid(tid_or_self(tid), None).map(|_| ()))
}

/// Deprecated (no handle): the id of `tid`'s gang into `*id`, `ENOENT` if
/// it is in none. [`heir_gang_has_member`] takes the gang.
///
/// # Safety
/// `id` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_get(tid: libc::pid_t, id: *mut u32) -> i32 {
    if id.is_null() {
        return libc::EINVAL;
    }
    match gang::gang_of(tid_or_self(tid)) {
        // SAFETY: the caller guarantees `id` is null or writable.
        Some(g) => rc(unsafe { put_req(id, g.0) }),
        None => libc::ENOENT,
    }
}

/// Deprecated (returns the word, not an errno): [`heir_gang_activate`].
///
/// # Safety
/// As [`heir_gang_activate`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_set_active(cw: *mut u32, bits: u32) -> u32 {
    let mut before = 0;
    // SAFETY: forwarded caller guarantee; `before` is a local.
    unsafe { heir_gang_activate(cw, bits, &mut before) };
    before
}

/// Deprecated (returns the word, not an errno): [`heir_gang_deactivate`].
///
/// # Safety
/// As [`heir_gang_activate`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_set_passive(cw: *mut u32, bits: u32) -> u32 {
    let mut before = 0;
    // SAFETY: forwarded caller guarantee; `before` is a local.
    unsafe { heir_gang_deactivate(cw, bits, &mut before) };
    before
}

/// Deprecated: [`heir_barrier_add_member`] for the caller.
///
/// # Safety
/// As [`heir_barrier_add_member`].
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_join(b: *mut heir_barrier_t, active: i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_barrier_add_member(b, 0, active) }
}

/// Deprecated: [`heir_barrier_remove_member`] for the caller.
///
/// # Safety
/// As [`heir_barrier_remove_member`].
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_leave(b: *mut heir_barrier_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    unsafe { heir_barrier_remove_member(b, 0) }
}
