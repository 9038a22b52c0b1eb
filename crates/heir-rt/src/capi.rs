//! The C API (`include/heir.h`): pthread-style functions returning 0 or a
//! positive errno.
//!
//! Every object type is a small struct holding a pointer to a heap object
//! and a magic number; `*_destroy` frees the object and clears both, so a
//! later call on the destroyed object returns `EINVAL` instead of crashing.
//! A NULL object pointer also returns `EINVAL`. Deadlines are absolute
//! `CLOCK_MONOTONIC` times. Thread ids are kernel tids (`gettid()`); a tid
//! that is not a live thread of this process returns `ESRCH`.
#![allow(non_camel_case_types)]

use std::ffi::c_void;
use std::os::fd::AsRawFd;

use heir_core::{Protocol, Urgency};

use crate::ceiling::RawEngineMutex;
use crate::condvar::{Boost, PiCondvar, WaitResult};
use crate::donate::Endpoint;
use crate::gang::{self, Barrier, ControlWord, Gang, GangAttr, GangWait, Notified, PointResult};
use crate::mutex::RawPiMutex;
use crate::queue::PrioQueue;
use crate::{thread, Error};

const MAGIC_MUTEX: u32 = 0x6865_6d78; // "hemx"
const MAGIC_COND: u32 = 0x6865_6376; // "hecv"
const MAGIC_CEIL: u32 = 0x6865_6365; // "hece"
const MAGIC_QUEUE: u32 = 0x6865_7175; // "hequ"
const MAGIC_RPC: u32 = 0x6865_7270; // "herp"

/// `heir_mutex_t`: a PI mutex (kernel PI futex).
#[repr(C)]
#[derive(Debug)]
pub struct heir_mutex_t {
    p: *mut c_void,
    magic: u32,
}

/// `heir_cond_t`: a PI condition variable with helpers.
#[repr(C)]
#[derive(Debug)]
pub struct heir_cond_t {
    p: *mut c_void,
    magic: u32,
}

/// `heir_ceiling_mutex_t`: an immediate-priority-ceiling mutex.
#[repr(C)]
#[derive(Debug)]
pub struct heir_ceiling_mutex_t {
    p: *mut c_void,
    magic: u32,
}

/// `heir_queue_t`: the priority queue of the PI-CV paper's Fig. 5 of `void *` items.
#[repr(C)]
#[derive(Debug)]
pub struct heir_queue_t {
    p: *mut c_void,
    magic: u32,
}

/// `heir_rpc_t`: a donating RPC endpoint of `void *` requests and replies
/// ([`crate::donate::Endpoint`]).
#[repr(C)]
#[derive(Debug)]
pub struct heir_rpc_t {
    p: *mut c_void,
    magic: u32,
}

fn rc(r: Result<(), Error>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.errno(),
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

macro_rules! handle {
    ($name:ident, $ty:ty, $inner:ty, $magic:expr) => {
        /// Resolves a C handle to its object.
        ///
        /// # Safety
        /// `h` must be null or point at a handle struct that is either
        /// zeroed, destroyed, or initialised by the matching `*_init` and not
        /// moved since.
        unsafe fn $name<'a>(h: *const $ty) -> Result<&'a $inner, Error> {
            // SAFETY: the caller guarantees `h` is null or readable.
            let Some(h) = (unsafe { h.as_ref() }) else {
                return Err(Error::Invalid);
            };
            if h.magic != $magic || h.p.is_null() {
                return Err(Error::Invalid);
            }
            // SAFETY: a live handle's `p` came from `Box::into_raw` of this
            // type in `*_init` and is freed only by `*_destroy`.
            Ok(unsafe { &*(h.p as *const $inner) })
        }
    };
}

handle!(mutex_of, heir_mutex_t, RawPiMutex, MAGIC_MUTEX);
handle!(cond_of, heir_cond_t, PiCondvar, MAGIC_COND);
handle!(ceil_of, heir_ceiling_mutex_t, RawEngineMutex, MAGIC_CEIL);
handle!(queue_of, heir_queue_t, PrioQueue<usize>, MAGIC_QUEUE);
handle!(rpc_of, heir_rpc_t, Endpoint<usize, usize>, MAGIC_RPC);

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

/// Registers the calling thread with its current scheduling attributes.
#[no_mangle]
pub extern "C" fn heir_thread_join() -> i32 {
    rc(thread::join().map(|_| ()))
}

/// Leaves the registry, restoring the caller's base attributes.
#[no_mangle]
pub extern "C" fn heir_thread_leave() -> i32 {
    thread::leave();
    0
}

/// The caller's kernel tid.
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
    /// lent through a `HEIR_BOOST_USER` condition variable (a deadline the
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
    // SAFETY: the caller guarantees `out` is null or writable.
    let Some(out) = (unsafe { out.as_mut() }) else {
        return libc::EINVAL;
    };
    *out = heir_apply_stats_t::from(&thread::apply_stats());
    0
}

/// Initialises a PI mutex.
///
/// # Safety
/// `m` must be null or point at writable memory for a `heir_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_init(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: the caller guarantees `m` is null or writable.
    let Some(m) = (unsafe { m.as_mut() }) else {
        return libc::EINVAL;
    };
    m.p = Box::into_raw(Box::new(RawPiMutex::new())) as *mut c_void;
    m.magic = MAGIC_MUTEX;
    0
}

/// Locks a PI mutex.
///
/// # Safety
/// `m` as for [`heir_mutex_init`], initialised.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_lock(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { mutex_of(m) }.and_then(|m| m.lock()))
}

/// Locks a PI mutex if free (`EBUSY` otherwise; `EOWNERDEAD` as
/// [`heir_mutex_lock`]).
///
/// # Safety
/// As [`heir_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_trylock(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { mutex_of(m) }.and_then(|m| m.try_lock()))
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
    rc(unsafe { mutex_of(m) }.and_then(|m| m.make_consistent()))
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
    rc(unsafe { mutex_of(m) }.and_then(|m| {
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
    rc(unsafe { mutex_of(m) }.and_then(|m| m.unlock()))
}

/// Destroys a PI mutex (`EBUSY` if locked).
///
/// # Safety
/// As [`heir_mutex_lock`]; no other thread may use `m` concurrently.
#[no_mangle]
pub unsafe extern "C" fn heir_mutex_destroy(m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    if let Err(e) = unsafe { mutex_of(m) }.and_then(|x| {
        if x.owner_tid().is_some() {
            Err(Error::Busy)
        } else {
            Ok(())
        }
    }) {
        return e.errno();
    }
    // SAFETY: validated above: `m` is a live handle.
    let m = unsafe { &mut *m };
    // SAFETY: `p` came from Box::into_raw in heir_mutex_init.
    drop(unsafe { Box::from_raw(m.p as *mut RawPiMutex) });
    m.p = std::ptr::null_mut();
    m.magic = 0;
    0
}

/// Initialises a PI condition variable (no helpers).
///
/// # Safety
/// `c` must be null or point at writable memory for a `heir_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_init(c: *mut heir_cond_t) -> i32 {
    // SAFETY: the caller guarantees `c` is null or writable.
    let Some(c) = (unsafe { c.as_mut() }) else {
        return libc::EINVAL;
    };
    c.p = Box::into_raw(Box::new(PiCondvar::new())) as *mut c_void;
    c.magic = MAGIC_COND;
    0
}

/// `heir_cond_init_boost`'s `boost`: helpers boosted with `sched_setattr`
/// ([`Boost::User`], as `heir_cond_init`).
pub const HEIR_BOOST_USER: i32 = 0;
/// `heir_cond_init_boost`'s `boost`: the kernel boosts a helper from a
/// `FUTEX_LOCK_PI` wait ([`Boost::Kernel`]).
pub const HEIR_BOOST_KERNEL: i32 = 1;

/// Initialises a PI condition variable (no helpers) whose waiters boost
/// its helpers as `boost` says (`HEIR_BOOST_USER` or `HEIR_BOOST_KERNEL`);
/// `EINVAL` for another value, `EBUSY` if `HEIR_BOOST_KERNEL` finds the
/// program's own handler on heir's wake signal (`SIGRTMAX - 2`).
///
/// # Safety
/// `c` must be null or point at writable memory for a `heir_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_init_boost(c: *mut heir_cond_t, boost: i32) -> i32 {
    // SAFETY: the caller guarantees `c` is null or writable.
    let Some(c) = (unsafe { c.as_mut() }) else {
        return libc::EINVAL;
    };
    let boost = match boost {
        HEIR_BOOST_USER => Boost::User,
        HEIR_BOOST_KERNEL => Boost::Kernel,
        _ => return libc::EINVAL,
    };
    match PiCondvar::with_boost(boost) {
        Ok(cv) => {
            c.p = Box::into_raw(Box::new(cv)) as *mut c_void;
            c.magic = MAGIC_COND;
            0
        }
        Err(e) => e.errno(),
    }
}

/// Waits on `c`; `m` (held by the caller) is released while waiting.
///
/// # Safety
/// `c` and `m` initialised handles (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_cond_wait(c: *mut heir_cond_t, m: *mut heir_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantees.
    let r = unsafe { cond_of(c) }.and_then(|c| {
        // SAFETY: forwarded caller guarantee.
        let m = unsafe { mutex_of(m) }?;
        c.wait_raw(m, None).map(|_| ())
    });
    rc(r)
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
    let r = unsafe { cond_of(c) }.and_then(|c| {
        // SAFETY: forwarded caller guarantees.
        let m = unsafe { mutex_of(m) }?;
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { deadline(abstime) }?;
        match c.wait_raw(m, Some(d))? {
            WaitResult::Woken => Ok(()),
            WaitResult::TimedOut => Err(Error::TimedOut),
        }
    });
    rc(r)
}

/// Wakes the most urgent waiter of `c`.
///
/// # Safety
/// `c` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_cond_signal(c: *mut heir_cond_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { cond_of(c) }.and_then(|c| c.signal().map(|_| ())))
}

/// Wakes every waiter of `c`, most urgent first.
///
/// # Safety
/// `c` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_cond_broadcast(c: *mut heir_cond_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { cond_of(c) }.and_then(|c| c.broadcast().map(|_| ())))
}

/// Declares thread `helper` a helper of `c` (`EEXIST` if already one,
/// `ESRCH` if not a thread of this process).
///
/// # Safety
/// `c` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_cond_helpers_add(c: *mut heir_cond_t, helper: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { cond_of(c) }.and_then(|c| c.helpers_add(helper)))
}

/// Removes helper `helper` from `c` (`ENOENT` if not one), revoking what it
/// inherited through `c`.
///
/// # Safety
/// `c` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_cond_helpers_del(c: *mut heir_cond_t, helper: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { cond_of(c) }.and_then(|c| c.helpers_del(helper)))
}

/// Destroys `c` (`EBUSY` if threads wait on it).
///
/// # Safety
/// `c` an initialised handle (or null); not used concurrently.
#[no_mangle]
pub unsafe extern "C" fn heir_cond_destroy(c: *mut heir_cond_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { cond_of(c) } {
        Ok(x) if x.has_waiters() => return libc::EBUSY,
        Ok(_) => {}
        Err(e) => return e.errno(),
    }
    // SAFETY: validated above: `c` is a live handle.
    let c = unsafe { &mut *c };
    // SAFETY: `p` came from Box::into_raw in heir_cond_init.
    drop(unsafe { Box::from_raw(c.p as *mut PiCondvar) });
    c.p = std::ptr::null_mut();
    c.magic = 0;
    0
}

/// Initialises a ceiling mutex with real-time priority ceiling `prio`
/// (1..=99).
///
/// # Safety
/// `m` null or writable memory for a `heir_ceiling_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_init(m: *mut heir_ceiling_mutex_t, prio: i32) -> i32 {
    if !(1..=99).contains(&prio) {
        return libc::EINVAL;
    }
    // SAFETY: the caller guarantees `m` is null or writable.
    let Some(m) = (unsafe { m.as_mut() }) else {
        return libc::EINVAL;
    };
    let raw = RawEngineMutex::new(Protocol::Ceiling(Urgency::fixed(prio as u8)));
    m.p = Box::into_raw(Box::new(raw)) as *mut c_void;
    m.magic = MAGIC_CEIL;
    0
}

/// Raises the caller to the ceiling and locks. `EOWNERDEAD`: the previous
/// owner exited holding it and the caller holds it now (repair, then
/// [`heir_ceiling_mutex_consistent`]); `ENOTRECOVERABLE`: it was unlocked
/// inconsistent.
///
/// # Safety
/// `m` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_lock(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { ceil_of(m) }.and_then(|m| m.lock()))
}

/// Unlocks and restores the caller (to the next outer ceiling or its base).
///
/// # Safety
/// `m` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_unlock(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { ceil_of(m) }.and_then(|m| m.unlock()))
}

/// Marks a ceiling mutex whose owner died consistent again (after
/// `EOWNERDEAD`, by its new owner): `EPERM` if the caller does not hold
/// it, `EINVAL` if it is not inconsistent.
///
/// # Safety
/// `m` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_consistent(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { ceil_of(m) }.and_then(|m| m.make_consistent()))
}

/// Destroys a ceiling mutex (`EBUSY`, nothing changed, while a thread
/// holds or waits for it).
///
/// # Safety
/// `m` an initialised handle (or null); not used concurrently.
#[no_mangle]
pub unsafe extern "C" fn heir_ceiling_mutex_destroy(m: *mut heir_ceiling_mutex_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { ceil_of(m) } {
        Ok(x) if x.is_busy() => return libc::EBUSY,
        Ok(_) => {}
        Err(e) => return e.errno(),
    }
    // SAFETY: validated above.
    let m = unsafe { &mut *m };
    // SAFETY: `p` came from Box::into_raw in heir_ceiling_mutex_init.
    drop(unsafe { Box::from_raw(m.p as *mut RawEngineMutex) });
    m.p = std::ptr::null_mut();
    m.magic = 0;
    0
}

/// Initialises a queue of at most `capacity` items.
///
/// # Safety
/// `q` null or writable memory for a `heir_queue_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_init(q: *mut heir_queue_t, capacity: u32) -> i32 {
    // SAFETY: the caller guarantees `q` is null or writable.
    let Some(q) = (unsafe { q.as_mut() }) else {
        return libc::EINVAL;
    };
    if capacity == 0 {
        return libc::EINVAL;
    }
    q.p = Box::into_raw(Box::new(PrioQueue::<usize>::new(capacity as usize))) as *mut c_void;
    q.magic = MAGIC_QUEUE;
    0
}

/// Pushes `item` at the caller's effective priority (blocks while full).
///
/// # Safety
/// `q` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_queue_push(q: *mut heir_queue_t, item: *mut c_void) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { queue_of(q) }.and_then(|q| q.push(item as usize)))
}

/// Pops the most urgent item into `*item` (blocks while empty).
///
/// # Safety
/// `q` an initialised handle (or null); `item` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_queue_pop(q: *mut heir_queue_t, item: *mut *mut c_void) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { queue_of(q) }.and_then(|q| {
        // SAFETY: the caller guarantees `item` is null or writable.
        let out = unsafe { item.as_mut() }.ok_or(Error::Invalid)?;
        *out = q.pop()? as *mut c_void;
        Ok(())
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
    let r = unsafe { queue_of(q) }.and_then(|q| {
        // SAFETY: the caller guarantees `item` is null or writable.
        let out = unsafe { item.as_mut() }.ok_or(Error::Invalid)?;
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { deadline(abstime) }?;
        *out = q.pop_until(Some(d))?.ok_or(Error::TimedOut)? as *mut c_void;
        Ok(())
    });
    rc(r)
}

/// Declares `tid` a producer of `q` (helper of its "more" condition).
///
/// # Safety
/// `q` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_queue_add_producer(q: *mut heir_queue_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { queue_of(q) }.and_then(|q| q.add_producer(tid)))
}

/// Declares `tid` a consumer of `q` (helper of its "less" condition).
///
/// # Safety
/// `q` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_queue_add_consumer(q: *mut heir_queue_t, tid: libc::pid_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { queue_of(q) }.and_then(|q| q.add_consumer(tid)))
}

/// Destroys a queue: `EBUSY` (nothing changed) while a thread is inside
/// a call on it — a push waiting for room, a pop or timed pop waiting for
/// an item, one on its way in or out.
///
/// # Safety
/// `q` an initialised handle (or null); no call on it may *start*
/// concurrently (one already inside is refused with `EBUSY`).
#[no_mangle]
pub unsafe extern "C" fn heir_queue_destroy(q: *mut heir_queue_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { queue_of(q) } {
        Err(e) => return e.errno(),
        Ok(x) if x.is_busy() => return libc::EBUSY,
        Ok(_) => {}
    }
    // SAFETY: validated above.
    let q = unsafe { &mut *q };
    // SAFETY: `p` came from Box::into_raw in heir_queue_init.
    drop(unsafe { Box::from_raw(q.p as *mut PrioQueue<usize>) });
    q.p = std::ptr::null_mut();
    q.magic = 0;
    0
}

/// Initialises a donating RPC endpoint without servers.
///
/// # Safety
/// `ep` null or writable memory for a `heir_rpc_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_init(ep: *mut heir_rpc_t) -> i32 {
    // SAFETY: the caller guarantees `ep` is null or writable.
    let Some(ep) = (unsafe { ep.as_mut() }) else {
        return libc::EINVAL;
    };
    ep.p = Box::into_raw(Box::new(Endpoint::<usize, usize>::new())) as *mut c_void;
    ep.magic = MAGIC_RPC;
    0
}

/// Destroys an endpoint (`EBUSY` while a call is in flight or a server
/// waits in receive).
///
/// # Safety
/// `ep` an initialised handle (or null); no thread inside a `heir_rpc_*`
/// call on it.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_destroy(ep: *mut heir_rpc_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { rpc_of(ep) } {
        Err(e) => return e.errno(),
        Ok(e) if !e.is_quiet() => return libc::EBUSY,
        Ok(_) => {}
    }
    // SAFETY: validated above.
    let ep = unsafe { &mut *ep };
    // SAFETY: `p` came from Box::into_raw in heir_rpc_init.
    drop(unsafe { Box::from_raw(ep.p as *mut Endpoint<usize, usize>) });
    ep.p = std::ptr::null_mut();
    ep.magic = 0;
    0
}

/// Makes the calling thread a server (`passive`: `SCHED_IDLE` first).
///
/// # Safety
/// `ep` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_server_join(ep: *mut heir_rpc_t, passive: i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { rpc_of(ep) }.and_then(|e| e.join_server(passive != 0)))
}

/// The calling thread stops serving the endpoint.
///
/// # Safety
/// `ep` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_server_leave(ep: *mut heir_rpc_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { rpc_of(ep) }.and_then(|e| e.leave_server()))
}

/// Calls with `req`; the reply goes to `*resp`. `abstime` null: no
/// timeout.
///
/// # Safety
/// `ep` an initialised handle (or null); `resp` null or writable;
/// `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_call(
    ep: *mut heir_rpc_t,
    req: *mut c_void,
    resp: *mut *mut c_void,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { rpc_of(ep) }.and_then(|e| {
        // SAFETY: the caller guarantees `resp` is null or writable.
        let out = unsafe { resp.as_mut() }.ok_or(Error::Invalid)?;
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        *out = e.call_until(req as usize, d)? as *mut c_void;
        Ok(())
    });
    rc(r)
}

/// Receives a request into `*req` (`ETIMEDOUT` at `abstime` if none came).
///
/// # Safety
/// `ep` an initialised handle (or null); `req` null or writable; `abstime`
/// null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_receive(
    ep: *mut heir_rpc_t,
    req: *mut *mut c_void,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { rpc_of(ep) }.and_then(|e| {
        // SAFETY: the caller guarantees `req` is null or writable.
        let out = unsafe { req.as_mut() }.ok_or(Error::Invalid)?;
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        *out = e.receive_until(d)?.ok_or(Error::TimedOut)? as *mut c_void;
        Ok(())
    });
    rc(r)
}

/// Replies `resp` to the request the calling server received.
///
/// # Safety
/// `ep` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_rpc_reply(ep: *mut heir_rpc_t, resp: *mut c_void) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { rpc_of(ep) }.and_then(|e| e.reply(resp as usize)))
}

const MAGIC_GANG: u32 = 0x6865_676e; // "hegn"
const MAGIC_BARRIER: u32 = 0x6865_6272; // "hebr"

/// `heir_gang_t`: a gang (GPM's gang priority management, L-GPM:
/// [`crate::gang::Gang`]).
#[repr(C)]
#[derive(Debug)]
pub struct heir_gang_t {
    p: *mut c_void,
    magic: u32,
}

/// `heir_gang_attr_t`: how a gang is created ([`GangAttr`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct heir_gang_attr_t {
    /// Nonzero: `heir_gang_run` boosts the active members (GPM); 0: it
    /// counts them and boosts nobody (the no-GPM baseline).
    pub boost: i32,
}

/// `heir_barrier_t`: a barrier on a gang ([`crate::gang::Barrier`]).
#[repr(C)]
#[derive(Debug)]
pub struct heir_barrier_t {
    p: *mut c_void,
    magic: u32,
}

handle!(gang_of, heir_gang_t, Gang, MAGIC_GANG);
handle!(barrier_of, heir_barrier_t, Barrier, MAGIC_BARRIER);

/// Creates a gang without members (`attr` null: boosting, as
/// `{ .boost = 1 }`). `EINVAL` if `g` is null; an errno if no eventfd can
/// be made.
///
/// # Safety
/// `g` null or writable memory for a `heir_gang_t`; `attr` null or
/// readable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_create(
    g: *mut heir_gang_t,
    attr: *const heir_gang_attr_t,
) -> i32 {
    // SAFETY: the caller guarantees `g` is null or writable.
    let Some(g) = (unsafe { g.as_mut() }) else {
        return libc::EINVAL;
    };
    // SAFETY: the caller guarantees `attr` is null or readable.
    let boost = unsafe { attr.as_ref() }.is_none_or(|a| a.boost != 0);
    match Gang::with_attr(GangAttr { boost }) {
        Ok(gang) => {
            g.p = Box::into_raw(Box::new(gang)) as *mut c_void;
            g.magic = MAGIC_GANG;
            0
        }
        Err(e) => e.errno(),
    }
}

/// Closes a gang: the handle is invalid afterwards; the gang goes away
/// once its last member has left (its members stay boosted until they
/// notify).
///
/// # Safety
/// `g` an initialised handle (or null); no other thread uses the handle
/// concurrently.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_close(g: *mut heir_gang_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    if let Err(e) = unsafe { gang_of(g) } {
        return e.errno();
    }
    // SAFETY: validated above.
    let g = unsafe { &mut *g };
    // SAFETY: `p` came from Box::into_raw in heir_gang_create.
    drop(unsafe { Box::from_raw(g.p as *mut Gang) });
    g.p = std::ptr::null_mut();
    g.magic = 0;
    0
}

/// Makes thread `tid` a passive member with control word `*cw` (its
/// membership bits are the word's). `EEXIST` if the thread is in a gang
/// already (at most one) or the word is another member's, `ESRCH` if
/// `tid` is not a thread of this process, `EINVAL` for a null or
/// misaligned `cw`.
///
/// # Safety
/// `g` an initialised handle (or null); `cw` null or a `uint32_t` that
/// stays allocated and in place until the thread leaves the gang
/// (`heir_gang_remove`, or its exit), changed only atomically (with the
/// `heir_gang_set_*` functions or C11 atomics).
#[no_mangle]
pub unsafe extern "C" fn heir_gang_insert(
    g: *mut heir_gang_t,
    tid: libc::pid_t,
    cw: *mut u32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { gang_of(g) }.and_then(|g| {
        // SAFETY: the caller promises the word's lifetime and atomic use.
        let w = unsafe { ControlWord::from_ptr(cw) }.ok_or(Error::Invalid)?;
        g.insert(tid, &w)
    });
    rc(r)
}

/// Thread `tid` leaves its gang; if the run in progress counted it and it
/// had not notified, this is its notify. `ENOENT` if it is in no gang.
#[no_mangle]
pub extern "C" fn heir_gang_remove(tid: libc::pid_t) -> i32 {
    rc(gang::remove(tid).map(|_| ()))
}

/// The id of the gang thread `tid` is a member of, into `*id`: `ENOENT` if
/// none, `EINVAL` if `id` is null. Compare with `heir_gang_id`.
///
/// # Safety
/// `id` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_get(tid: libc::pid_t, id: *mut u32) -> i32 {
    // SAFETY: the caller guarantees `id` is null or writable.
    let Some(id) = (unsafe { id.as_mut() }) else {
        return libc::EINVAL;
    };
    match gang::get(tid) {
        Some(g) => {
            *id = g.0;
            0
        }
        None => libc::ENOENT,
    }
}

/// A gang's id into `*id` (never 0).
///
/// # Safety
/// `g` an initialised handle (or null); `id` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_id(g: *mut heir_gang_t, id: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { gang_of(g) }.and_then(|g| {
        // SAFETY: the caller guarantees `id` is null or writable.
        let out = unsafe { id.as_mut() }.ok_or(Error::Invalid)?;
        *out = g.id().0;
        Ok(())
    });
    rc(r)
}

/// `gang_run`: counts the members whose control word shares a bit with
/// `mask` and boosts them to the gang priority until each notifies; the
/// number counted into `*active` (if not null). `EBUSY` (nothing changed)
/// while members of the previous run have not all notified; `EINVAL` for
/// a mask of 0 or outside `HEIR_GANG_MASK`.
///
/// # Safety
/// `g` an initialised handle (or null); `active` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_run(g: *mut heir_gang_t, mask: u32, active: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { gang_of(g) }.and_then(|g| g.run(mask));
    match r {
        Ok(o) => {
            // SAFETY: the caller guarantees `active` is null or writable.
            if let Some(a) = unsafe { active.as_mut() } {
                *a = o.active;
            }
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
/// `g` an initialised handle (or null); `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_wait(
    g: *mut heir_gang_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { gang_of(g) }.and_then(|g| {
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        match g.wait_until(d)? {
            GangWait::Completed => Ok(()),
            GangWait::TimedOut => Err(Error::TimedOut),
        }
    });
    rc(r)
}

/// `gang_notify` for the calling thread: ends its gang boost and
/// discounts it. Always 0 (harmless for a thread that is no member or was
/// not counted); `*counted` (if not null) is 1 if it was counted, else 0.
///
/// # Safety
/// `counted` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_notify(counted: *mut i32) -> i32 {
    let n = gang::notify();
    // SAFETY: the caller guarantees `counted` is null or writable.
    if let Some(c) = unsafe { counted.as_mut() } {
        *c = i32::from(matches!(n, Notified::Counted { .. }));
    }
    0
}

/// The gang's eventfd into `*fd`: readable (`POLLIN`) exactly when
/// `heir_gang_wait` would return at once. Poll it; do not read or close
/// it.
///
/// # Safety
/// `g` an initialised handle (or null); `fd` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_fd(g: *mut heir_gang_t, fd: *mut i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { gang_of(g) }.and_then(|g| {
        // SAFETY: the caller guarantees `fd` is null or writable.
        let out = unsafe { fd.as_mut() }.ok_or(Error::Invalid)?;
        *out = g.fd().as_raw_fd();
        Ok(())
    });
    rc(r)
}

/// Sets membership bits of control word `*cw` (`bits & HEIR_GANG_MASK`)
/// with one atomic operation, no system call; returns the word before (0
/// for a null `cw`). `HEIR_GANG_RUN` in the result: a run counted the
/// thread.
///
/// # Safety
/// `cw` null or a live, aligned `uint32_t` only changed atomically.
#[no_mangle]
pub unsafe extern "C" fn heir_gang_set_active(cw: *mut u32, bits: u32) -> u32 {
    // SAFETY: forwarded caller guarantee (the handle lives for this call).
    unsafe { ControlWord::from_ptr(cw) }.map_or(0, |w| w.set_active(bits).0)
}

/// Clears membership bits of `*cw` as [`heir_gang_set_active`] sets them;
/// returns the word before. If it has `HEIR_GANG_RUN`, the thread was
/// counted by a run and must still call `heir_gang_notify`.
///
/// # Safety
/// As [`heir_gang_set_active`].
#[no_mangle]
pub unsafe extern "C" fn heir_gang_set_passive(cw: *mut u32, bits: u32) -> u32 {
    // SAFETY: forwarded caller guarantee (the handle lives for this call).
    unsafe { ControlWord::from_ptr(cw) }.map_or(0, |w| w.set_passive(bits).0)
}

/// Creates a barrier on a new gang (`boost` nonzero: GPM; 0: the same
/// barrier without boosts).
///
/// # Safety
/// `b` null or writable memory for a `heir_barrier_t`.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_init(b: *mut heir_barrier_t, boost: i32) -> i32 {
    // SAFETY: the caller guarantees `b` is null or writable.
    let Some(b) = (unsafe { b.as_mut() }) else {
        return libc::EINVAL;
    };
    match Barrier::new(GangAttr { boost: boost != 0 }) {
        Ok(x) => {
            b.p = Box::into_raw(Box::new(x)) as *mut c_void;
            b.magic = MAGIC_BARRIER;
            0
        }
        Err(e) => e.errno(),
    }
}

/// Destroys a barrier: `EBUSY` while one is active (started, not
/// released). Its members leave its gang when they exit or call
/// `heir_barrier_leave` before.
///
/// # Safety
/// `b` an initialised handle (or null); no thread inside a
/// `heir_barrier_*` call on it.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_destroy(b: *mut heir_barrier_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { barrier_of(b) } {
        Err(e) => return e.errno(),
        Ok(x) if x.is_active() => return libc::EBUSY,
        Ok(_) => {}
    }
    // SAFETY: validated above.
    let b = unsafe { &mut *b };
    // SAFETY: `p` came from Box::into_raw in heir_barrier_init.
    drop(unsafe { Box::from_raw(b.p as *mut Barrier) });
    b.p = std::ptr::null_mut();
    b.magic = 0;
    0
}

/// The calling thread joins the barrier: `active` nonzero, counted by
/// every barrier; 0, a passive member that only counts for the gang
/// priority (an initiator). `EEXIST` if it is in a gang already.
///
/// # Safety
/// `b` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_join(b: *mut heir_barrier_t, active: i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { barrier_of(b) }.and_then(|b| {
        if active != 0 {
            b.join().map(|_| ())
        } else {
            b.join_passive().map(|_| ())
        }
    }))
}

/// The calling thread leaves the barrier (its notify if a barrier counts
/// it); `ENOENT` if it is no member.
///
/// # Safety
/// `b` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_leave(b: *mut heir_barrier_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { barrier_of(b) }.and_then(|b| b.leave().map(|_| ())))
}

/// The initiator: sets the barrier-active flag and runs the gang (members
/// counted into `*active` if not null). `EBUSY` if a barrier is active.
///
/// # Safety
/// `b` an initialised handle (or null); `active` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_start(b: *mut heir_barrier_t, active: *mut u32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    match unsafe { barrier_of(b) }.and_then(|b| b.start()) {
        Ok(o) => {
            // SAFETY: the caller guarantees `active` is null or writable.
            if let Some(a) = unsafe { active.as_mut() } {
                *a = o.active;
            }
            0
        }
        Err(e) => e.errno(),
    }
}

/// Waits for the barrier's completion (every counted member at its
/// barrier point): 0, or `ETIMEDOUT` at `abstime` (null: none).
///
/// # Safety
/// `b` an initialised handle (or null); `abstime` null or readable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_wait(
    b: *mut heir_barrier_t,
    abstime: *const libc::timespec,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { barrier_of(b) }.and_then(|b| {
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
/// `b` an initialised handle (or null).
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_release(b: *mut heir_barrier_t) -> i32 {
    // SAFETY: forwarded caller guarantee.
    rc(unsafe { barrier_of(b) }.map(|b| b.release()))
}

/// A member's barrier point: if a barrier is active, notify and block
/// until released (`*released` = 1) or `abstime` (`ETIMEDOUT`); else go on
/// (`*released` = 0). `released` and `abstime` may be null.
///
/// # Safety
/// `b` an initialised handle (or null); `abstime` null or readable;
/// `released` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_point(
    b: *mut heir_barrier_t,
    abstime: *const libc::timespec,
    released: *mut i32,
) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { barrier_of(b) }.and_then(|b| {
        // SAFETY: forwarded caller guarantee.
        let d = unsafe { opt_deadline(abstime) }?;
        Ok(b.point_until(d))
    });
    match r {
        Ok(p) => {
            // SAFETY: the caller guarantees `released` is null or writable.
            if let Some(x) = unsafe { released.as_mut() } {
                *x = i32::from(p == PointResult::Released);
            }
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
/// `b` an initialised handle (or null); `fd` null or writable.
#[no_mangle]
pub unsafe extern "C" fn heir_barrier_fd(b: *mut heir_barrier_t, fd: *mut i32) -> i32 {
    // SAFETY: forwarded caller guarantee.
    let r = unsafe { barrier_of(b) }.and_then(|b| {
        // SAFETY: the caller guarantees `fd` is null or writable.
        let out = unsafe { fd.as_mut() }.ok_or(Error::Invalid)?;
        *out = b.gang().fd().as_raw_fd();
        Ok(())
    });
    rc(r)
}
