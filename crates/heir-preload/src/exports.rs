//! The `pthread_*` symbols the library defines ahead of glibc's. One
//! unversioned definition each: the dynamic linker binds a program's
//! reference of any version to it (`pthread_cond_wait@GLIBC_2.3.2`, the
//! one programs link, and the old `@GLIBC_2.2.5` alike — both then use
//! heir's object, consistently).

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::Ordering;

use libc::{
    clockid_t, pthread_barrier_t, pthread_barrierattr_t, pthread_cond_t, pthread_condattr_t,
    pthread_mutex_t, pthread_mutexattr_t, timespec,
};

use crate::objects::{
    bury_barrier, bury_cond, bury_mutex, BarrierSlot, BarrierState, CondSlot, CondState, MutexSlot,
    MutexState, BARRIER_TAG, KIND_GLIBC, KIND_ROBUST,
};
use crate::record::{self, Kind};
use crate::{config, real, summary};

// ---------------------------------------------------------------- start-up

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    let cfg = config::get();
    real::resolve_all();
    if let Some(p) = &cfg.trace_marker {
        // Without the marker the program runs untraced (heir exec says
        // the trace has no heir events).
        let _ = heir::trace::sink_into(std::path::Path::new(p));
    }
    record::open();
    // SAFETY: registering plain `extern "C" fn()` handlers.
    unsafe {
        libc::atexit(at_exit);
        libc::pthread_atfork(None, None, Some(in_child));
    }
}

extern "C" fn at_exit() {
    summary::write();
}

extern "C" fn in_child() {
    // The child's one thread has a new tid: heir's cached one is stale.
    heir::thread::after_fork_in_child();
    summary::reset_in_child();
    record::open();
}

// ----------------------------------------------------------------- helpers

fn now_realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a local the call fills.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// An absolute time on `clock` as heir's deadline (`CLOCK_MONOTONIC` ns).
/// A `CLOCK_REALTIME` time is converted once, at the call (a later jump
/// of the real-time clock does not move it).
///
/// # Safety
///
/// `abs` is NULL or points to a `timespec`.
unsafe fn deadline(clock: clockid_t, abs: *const timespec) -> Result<u64, c_int> {
    if abs.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: non-null, the caller's timespec.
    let ts = unsafe { ptr::read(abs) };
    if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return Err(libc::EINVAL);
    }
    let abs_ns = (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64;
    match clock {
        libc::CLOCK_MONOTONIC => Ok(abs_ns),
        libc::CLOCK_REALTIME => {
            let (real, mono) = (now_realtime_ns(), heir::sys::now_ns());
            Ok(mono.saturating_add(abs_ns.saturating_sub(real)))
        }
        _ => Err(libc::EINVAL),
    }
}

// ------------------------------------------------------------------ mutexes

/// The program's mutex seen as heir's slot.
///
/// # Safety
///
/// `m` points to a live `pthread_mutex_t`.
unsafe fn mslot<'a>(m: *mut pthread_mutex_t) -> &'a MutexSlot {
    // SAFETY: same size (checked at compile time) and alignment (8); the
    // fields heir touches are atomics.
    unsafe { &*(m as *const MutexSlot) }
}

/// glibc keeps this mutex.
///
/// # Safety
///
/// As [`mslot`].
unsafe fn m_glibc(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: the caller's live mutex.
    !config::get().mutex_inherit
        || unsafe { mslot(m) }.kind.load(Ordering::Relaxed) & KIND_GLIBC != 0
}

/// heir's state of the mutex, created on first use.
///
/// # Safety
///
/// As [`mslot`], and not glibc's ([`m_glibc`]).
#[inline]
pub(crate) unsafe fn mstate<'a>(m: *mut pthread_mutex_t) -> &'a MutexState {
    // SAFETY: the caller's live mutex.
    let slot = unsafe { mslot(m) };
    let p = slot.state.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: only heir installs pointers in the slot (Box::into_raw),
        // freed after destroy and a quarantine.
        return unsafe { &*p };
    }
    // SAFETY: forwarded.
    unsafe { mstate_first(slot) }
}

/// [`mstate`] of a mutex without heir's state yet (a static initialiser's).
///
/// # Safety
///
/// As [`mstate`].
#[cold]
#[inline(never)]
unsafe fn mstate_first<'a>(slot: &MutexSlot) -> &'a MutexState {
    // SAFETY: only heir installs pointers in the slot (Box::into_raw),
    // freed after destroy and a quarantine.
    unsafe {
        installed(
            &slot.state,
            || MutexState::new(slot.kind.load(Ordering::Relaxed)),
            &summary::MUTEXES,
        )
    }
}

/// The state behind `slot`, made by `make` and installed on first use
/// (heir-rt's [`heir::lazy::installed`], as behind `heir.h`'s static
/// initialisers); a thread that loses the race to install it undoes its
/// count in `made`.
///
/// # Safety
///
/// Every non-null pointer in `slot` came from `Box::into_raw` and stays
/// valid for `'a` (heir frees it only after destroy and a quarantine).
unsafe fn installed<'a, T>(
    slot: &std::sync::atomic::AtomicPtr<T>,
    make: impl FnOnce() -> T,
    made: &summary::Counter,
) -> &'a T {
    // SAFETY: the caller's contract, forwarded.
    let (state, how) = unsafe { heir::lazy::installed(slot, make) };
    if how == heir::lazy::Install::Lost {
        made.undo();
    }
    state
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut pthread_mutex_t,
    a: *const pthread_mutexattr_t,
) -> c_int {
    // SAFETY: `a` is NULL or initialised (the caller).
    let at = unsafe { real::mutex_attr(a) };
    if !config::get().mutex_inherit || at.pshared || at.protect {
        summary::MUTEXES_GLIBC.inc();
        // SAFETY: the caller's arguments.
        return unsafe { real::mutex_init(m, a) };
    }
    if m.is_null() {
        return libc::EINVAL;
    }
    let kind = (at.kind & 3) | if at.robust { KIND_ROBUST } else { 0 };
    // SAFETY: `m` is the caller's storage, 40 bytes: zeroed, then heir's.
    unsafe { ptr::write_bytes(m, 0, 1) };
    // SAFETY: just zeroed.
    let slot = unsafe { mslot(m) };
    slot.kind.store(kind, Ordering::Relaxed);
    let st = Box::into_raw(Box::new(MutexState::new(kind)));
    slot.state.store(st, Ordering::Release);
    0
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_lock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    unsafe {
        if record::active() {
            return recorded_lock(m);
        }
        if m_glibc(m) {
            return real::mutex_lock(m);
        }
        mstate(m).lock(None)
    }
}

/// `pthread_mutex_lock` traced or recorded ([`record`]): a lock that
/// finds the mutex held is marked `blocked` first.
///
/// # Safety
///
/// glibc's contract for `pthread_mutex_lock`.
#[cold]
#[inline(never)]
unsafe fn recorded_lock(m: *mut pthread_mutex_t) -> c_int {
    let b = record::begin();
    let mut blocked = false;
    // SAFETY: the caller's mutex.
    let r = unsafe {
        if m_glibc(m) {
            match real::mutex_trylock(m) {
                libc::EBUSY => {
                    blocked = true;
                    record::mark("blocked", m as usize);
                    real::mutex_lock(m)
                }
                r => r,
            }
        } else {
            let s = mstate(m);
            if s.raw.is_owned_by_current() {
                s.lock(None)
            } else {
                match s.trylock() {
                    libc::EBUSY => {
                        blocked = true;
                        record::mark("blocked", m as usize);
                        s.lock(None)
                    }
                    r => r,
                }
            }
        }
    };
    if blocked {
        locked(b, m, r)
    } else {
        if r == 0 || r == libc::EOWNERDEAD {
            record::mark("lock", m as usize);
            record::end_at_begin(b, Kind::Lock, m as u64, 0);
        }
        r
    }
}

/// Marks and records a lock of `m` that returned `r` (when it got it;
/// a timed lock that timed out is recorded as given up).
fn locked(b: record::Begin, m: *mut pthread_mutex_t, r: c_int) -> c_int {
    if r == 0 || r == libc::EOWNERDEAD {
        record::mark("lock", m as usize);
        record::end(b, Kind::Lock, m as u64, 0);
    } else if r == libc::ETIMEDOUT {
        record::end_flagged(b, Kind::GaveUp, m as u64, 0, record::TIMED_OUT);
    }
    r
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_trylock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's mutex.
    let r = unsafe {
        if m_glibc(m) {
            real::mutex_trylock(m)
        } else {
            mstate(m).trylock()
        }
    };
    if record::active() && (r == 0 || r == libc::EOWNERDEAD) {
        record::mark("lock", m as usize);
        record::end_at_begin(b, Kind::Lock, m as u64, 0);
    }
    r
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_clocklock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's mutex and time.
    let r = unsafe { clocklock(m, clock, abs) };
    if record::active() {
        locked(b, m, r)
    } else {
        r
    }
}

/// `pthread_mutex_clocklock`, unrecorded.
///
/// # Safety
///
/// glibc's contract for `pthread_mutex_clocklock`.
unsafe fn clocklock(m: *mut pthread_mutex_t, clock: clockid_t, abs: *const timespec) -> c_int {
    // SAFETY: the caller's mutex and time.
    unsafe {
        if m_glibc(m) {
            return real::mutex_clocklock(m, clock, abs);
        }
        let s = mstate(m);
        if s.raw.is_owned_by_current() {
            // Recursive count, or EDEADLK: never blocks.
            return s.lock(None);
        }
        match s.trylock() {
            libc::EBUSY => {}
            r => return r,
        }
        match deadline(clock, abs) {
            Ok(d) => s.lock(Some(d)),
            Err(e) => e,
        }
    }
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_timedlock` (`CLOCK_REALTIME`).
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe {
        if m_glibc(m) {
            return real::mutex_timedlock(m, abs);
        }
        pthread_mutex_clocklock(m, libc::CLOCK_REALTIME, abs)
    }
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_unlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    if record::active() {
        recorded_unlock(m);
    }
    // SAFETY: the caller's mutex.
    unsafe {
        if m_glibc(m) {
            return real::mutex_unlock(m);
        }
        mstate(m).unlock()
    }
}

/// The marker and the record of an unlock of `m`, before it (out of the
/// untraced unlock's way).
#[cold]
#[inline(never)]
fn recorded_unlock(m: *mut pthread_mutex_t) {
    record::mark("unlock", m as usize);
    record::instant(Kind::Unlock, m as u64, 0);
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_consistent`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_consistent(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    unsafe {
        if m_glibc(m) {
            return real::mutex_consistent(m);
        }
        match mstate(m).raw.make_consistent() {
            Ok(()) => 0,
            Err(e) => e.errno(),
        }
    }
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_consistent_np`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_consistent_np(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    unsafe { pthread_mutex_consistent(m) }
}

/// # Safety
///
/// glibc's contract for `pthread_mutex_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    unsafe {
        if m_glibc(m) {
            return real::mutex_destroy(m);
        }
        let slot = mslot(m);
        let p = slot.state.load(Ordering::Acquire);
        if p.is_null() {
            return 0;
        }
        // SAFETY: heir's installed pointer.
        if (*p).raw.owner_tid().is_some() {
            return libc::EBUSY;
        }
        if slot
            .state
            .compare_exchange(p, ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: taken out of the slot: this destroy owns it now.
            bury_mutex(Box::from_raw(p));
        }
        0
    }
}

// glibc's `__pthread_mutex_*` aliases (old libstdc++ and others call them).

/// # Safety
///
/// As [`pthread_mutex_init`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_init(
    m: *mut pthread_mutex_t,
    a: *const pthread_mutexattr_t,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_init(m, a) }
}
/// # Safety
///
/// As [`pthread_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_lock(m) }
}
/// # Safety
///
/// As [`pthread_mutex_trylock`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_trylock(m) }
}
/// # Safety
///
/// As [`pthread_mutex_unlock`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_unlock(m) }
}
/// # Safety
///
/// As [`pthread_mutex_destroy`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_destroy(m) }
}

// --------------------------------------------------------- condition variables

/// # Safety
///
/// `c` points to a live `pthread_cond_t`.
unsafe fn cslot<'a>(c: *mut pthread_cond_t) -> &'a CondSlot {
    // SAFETY: same size (checked), alignment 8, atomics.
    unsafe { &*(c as *const CondSlot) }
}

/// glibc keeps this condition variable (`keep`, or process-shared).
///
/// # Safety
///
/// As [`cslot`].
unsafe fn c_glibc(c: *mut pthread_cond_t) -> bool {
    // SAFETY: the caller's live condition variable.
    !config::get().cond_ours() || unsafe { cslot(c) }.wrefs.load(Ordering::Relaxed) & 1 != 0
}

/// # Safety
///
/// As [`cslot`], not glibc's.
unsafe fn cstate<'a>(c: *mut pthread_cond_t) -> &'a CondState {
    // SAFETY: the caller's live condition variable.
    let slot = unsafe { cslot(c) };
    // SAFETY: only heir installs pointers in the slot (Box::into_raw),
    // freed after destroy and a quarantine.
    unsafe {
        installed(
            &slot.state,
            || CondState::new(libc::CLOCK_REALTIME),
            &summary::CONDS,
        )
    }
}

/// # Safety
///
/// glibc's contract for `pthread_cond_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    a: *const pthread_condattr_t,
) -> c_int {
    // SAFETY: `a` NULL or initialised.
    let (clock, pshared) = unsafe { real::cond_attr(a) };
    if !config::get().cond_ours() || pshared {
        summary::CONDS_GLIBC.inc();
        // SAFETY: the caller's arguments.
        return unsafe { real::cond_init(c, a) };
    }
    if c.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's 48 bytes, zeroed then heir's.
    unsafe { ptr::write_bytes(c, 0, 1) };
    let st = Box::into_raw(Box::new(CondState::new(clock)));
    // SAFETY: just zeroed.
    unsafe { cslot(c) }.state.store(st, Ordering::Release);
    0
}

/// # Safety
///
/// `c` heir's, `m` the caller's mutex.
unsafe fn cond_wait_on(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, d: Option<u64>) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        let cs = cstate(c);
        if m_glibc(m) {
            return cs.wait_glibc(m, d);
        }
        cs.wait(mstate(m), d)
    }
}

/// # Safety
///
/// glibc's contract for `pthread_cond_wait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    let b = waiting(c);
    // SAFETY: the caller's objects.
    let r = unsafe {
        if c_glibc(c) {
            real::cond_wait(c, m)
        } else {
            cond_wait_on(c, m, None)
        }
    };
    woken(b, c, m, r)
}

/// Before a wait on `c`: its mark, and the clocks if recording.
fn waiting(c: *mut pthread_cond_t) -> record::Begin {
    if !record::active() {
        return record::Begin::default();
    }
    record::mark("wait", c as usize);
    record::begin()
}

/// After a wait on `c` with `m` that returned `r` (a timed wait that
/// timed out is flagged).
fn woken(b: record::Begin, c: *mut pthread_cond_t, m: *mut pthread_mutex_t, r: c_int) -> c_int {
    if record::active() {
        record::mark("woken", c as usize);
        let flags = if r == libc::ETIMEDOUT {
            record::TIMED_OUT
        } else {
            0
        };
        record::end_flagged(b, Kind::Wait, c as u64, m as u64, flags);
    }
    r
}

/// # Safety
///
/// glibc's contract for `pthread_cond_timedwait` (the clock of its
/// attributes, `CLOCK_REALTIME` by default).
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    let b = waiting(c);
    // SAFETY: the caller's objects.
    let r = unsafe {
        if c_glibc(c) {
            real::cond_timedwait(c, m, abs)
        } else {
            match deadline(cstate(c).clock, abs) {
                Ok(d) => cond_wait_on(c, m, Some(d)),
                Err(e) => e,
            }
        }
    };
    woken(b, c, m, r)
}

/// # Safety
///
/// glibc's contract for `pthread_cond_clockwait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    let b = waiting(c);
    // SAFETY: the caller's objects.
    let r = unsafe {
        if c_glibc(c) {
            real::cond_clockwait(c, m, clock, abs)
        } else {
            match deadline(clock, abs) {
                Ok(d) => cond_wait_on(c, m, Some(d)),
                Err(e) => e,
            }
        }
    };
    woken(b, c, m, r)
}

/// # Safety
///
/// glibc's contract for `pthread_cond_signal`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    if record::active() {
        record::mark("signal", c as usize);
        record::instant(Kind::Signal, c as u64, 0);
    }
    // SAFETY: the caller's object.
    unsafe {
        if c_glibc(c) {
            return real::cond_signal(c);
        }
        cstate(c).signal()
    }
}

/// # Safety
///
/// glibc's contract for `pthread_cond_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    if record::active() {
        record::mark("broadcast", c as usize);
        record::instant(Kind::Broadcast, c as u64, 0);
    }
    // SAFETY: the caller's object.
    unsafe {
        if c_glibc(c) {
            return real::cond_broadcast(c);
        }
        cstate(c).broadcast()
    }
}

/// # Safety
///
/// glibc's contract for `pthread_cond_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's object.
    unsafe {
        if c_glibc(c) {
            return real::cond_destroy(c);
        }
        let slot = cslot(c);
        let p = slot.state.load(Ordering::Acquire);
        if p.is_null() {
            return 0;
        }
        // SAFETY: heir's pointer.
        if (*p).busy() {
            return libc::EBUSY;
        }
        if slot
            .state
            .compare_exchange(p, ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: out of the slot, owned here.
            bury_cond(Box::from_raw(p));
        }
        0
    }
}

// ----------------------------------------------------------------- barriers

/// # Safety
///
/// `b` points to a live `pthread_barrier_t`.
unsafe fn bslot<'a>(b: *mut pthread_barrier_t) -> &'a BarrierSlot {
    // SAFETY: same size (checked), alignment 8, atomics.
    unsafe { &*(b as *const BarrierSlot) }
}

/// # Safety
///
/// As [`bslot`].
unsafe fn b_glibc(b: *mut pthread_barrier_t) -> bool {
    // SAFETY: the caller's live barrier.
    !config::get().gpm || unsafe { bslot(b) }.tag.load(Ordering::Relaxed) != BARRIER_TAG
}

/// # Safety
///
/// glibc's contract for `pthread_barrier_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_init(
    b: *mut pthread_barrier_t,
    a: *const pthread_barrierattr_t,
    count: libc::c_uint,
) -> c_int {
    // SAFETY: `a` NULL or initialised.
    let pshared = unsafe { real::barrier_pshared(a) };
    if !config::get().gpm || pshared {
        summary::BARRIERS_GLIBC.inc();
        // SAFETY: the caller's arguments.
        return unsafe { real::barrier_init(b, a, count) };
    }
    if b.is_null() || count == 0 {
        return libc::EINVAL;
    }
    // SAFETY: the caller's 32 bytes, zeroed then heir's.
    unsafe { ptr::write_bytes(b, 0, 1) };
    // SAFETY: just zeroed.
    let slot = unsafe { bslot(b) };
    slot.state.store(
        Box::into_raw(Box::new(BarrierState::new(count))),
        Ordering::Release,
    );
    slot.tag.store(BARRIER_TAG, Ordering::Release);
    0
}

/// # Safety
///
/// glibc's contract for `pthread_barrier_wait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int {
    if !record::active() {
        // SAFETY: the caller's barrier.
        return unsafe { barrier_wait(b) };
    }
    record::mark("barrier", b as usize);
    let t = record::begin();
    // SAFETY: the caller's barrier.
    let r = unsafe { barrier_wait(b) };
    record::end(t, Kind::Barrier, b as u64, 0);
    r
}

/// `pthread_barrier_wait`, unrecorded.
///
/// # Safety
///
/// glibc's contract for `pthread_barrier_wait`.
unsafe fn barrier_wait(b: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's barrier.
    unsafe {
        if b_glibc(b) {
            return real::barrier_wait(b);
        }
        let p = bslot(b).state.load(Ordering::Acquire);
        if p.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: heir's pointer.
        (*p).wait()
    }
}

/// # Safety
///
/// glibc's contract for `pthread_barrier_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_destroy(b: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's barrier.
    unsafe {
        if b_glibc(b) {
            return real::barrier_destroy(b);
        }
        let slot = bslot(b);
        let p = slot.state.load(Ordering::Acquire);
        if p.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: heir's pointer.
        if (*p).busy() {
            return libc::EBUSY;
        }
        slot.state.store(ptr::null_mut(), Ordering::Release);
        // SAFETY: out of the slot, owned here.
        bury_barrier(Box::from_raw(p));
        0
    }
}

// ------------------------------------------------------- scheduling changes

/// After the calling thread changed its own scheduling attributes: heir's
/// saved base follows, if heir has it registered (else nothing to do).
fn own_sched_changed() {
    record::sched_now();
    let me = heir::rt::tid();
    if heir::thread::info(me).is_none() {
        return;
    }
    if let Ok(attr) = heir::sys::sched_getattr(me) {
        let _ = heir::thread::set_sched(&attr);
    }
}

/// glibc's `pthread_setschedparam`; when the thread is the caller, heir's
/// saved base follows (else the end of a boost would restore the old one).
/// Another thread's change is not seen by heir (docs/EXEC.md).
///
/// # Safety
///
/// glibc's contract for `pthread_setschedparam`.
#[no_mangle]
pub unsafe extern "C" fn pthread_setschedparam(
    t: libc::pthread_t,
    policy: c_int,
    param: *const libc::sched_param,
) -> c_int {
    // SAFETY: the caller's arguments.
    let r = unsafe { real::setschedparam(t, policy, param) };
    // SAFETY: pthread_self has no preconditions.
    if r == 0 && t == unsafe { libc::pthread_self() } {
        own_sched_changed();
    }
    r
}

/// glibc's `pthread_setschedprio`, as [`pthread_setschedparam`].
///
/// # Safety
///
/// glibc's contract for `pthread_setschedprio`.
#[no_mangle]
pub unsafe extern "C" fn pthread_setschedprio(t: libc::pthread_t, prio: c_int) -> c_int {
    // SAFETY: the caller's arguments.
    let r = unsafe { real::setschedprio(t, prio) };
    // SAFETY: pthread_self has no preconditions.
    if r == 0 && t == unsafe { libc::pthread_self() } {
        own_sched_changed();
    }
    r
}

// ------------------------------------------- recorded, otherwise glibc's

/// glibc's `sem_post`, recorded (`heir exec --scenario`).
///
/// # Safety
///
/// glibc's contract for `sem_post`.
#[no_mangle]
pub unsafe extern "C" fn sem_post(s: *mut libc::sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    let r = unsafe { real::sem_post(s) };
    keep_errno(|| record::instant(Kind::SemPost, s as u64, 0));
    r
}

/// glibc's `sem_wait`, recorded (`heir exec --scenario`).
///
/// # Safety
///
/// glibc's contract for `sem_wait`.
#[no_mangle]
pub unsafe extern "C" fn sem_wait(s: *mut libc::sem_t) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's semaphore.
    let r = unsafe { real::sem_wait(s) };
    if r == 0 {
        keep_errno(|| record::end(b, Kind::SemWait, s as u64, 0));
    }
    r
}

/// glibc's `sem_init`, recorded with the initial value.
///
/// # Safety
///
/// glibc's contract for `sem_init`.
#[no_mangle]
pub unsafe extern "C" fn sem_init(
    s: *mut libc::sem_t,
    pshared: c_int,
    value: libc::c_uint,
) -> c_int {
    // SAFETY: the caller's semaphore.
    let r = unsafe { real::sem_init(s, pshared, value) };
    if r == 0 {
        keep_errno(|| record::instant(Kind::SemInit, s as u64, u64::from(value)));
    }
    r
}

/// glibc's `sem_trywait`, recorded when it took a unit.
///
/// # Safety
///
/// glibc's contract for `sem_trywait`.
#[no_mangle]
pub unsafe extern "C" fn sem_trywait(s: *mut libc::sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    let r = unsafe { real::sem_trywait(s) };
    if r == 0 {
        keep_errno(|| record::instant(Kind::SemWait, s as u64, 0));
    }
    r
}

/// A timed semaphore wait that returned `r`: a unit taken, or a wait
/// that gave up (its time is recorded: a thread blocked there).
fn sem_timed(b: record::Begin, s: *mut libc::sem_t, r: c_int) -> c_int {
    // SAFETY: __errno_location returns the calling thread's errno.
    let timed_out = r != 0 && unsafe { *libc::__errno_location() } == libc::ETIMEDOUT;
    if r == 0 {
        keep_errno(|| record::end(b, Kind::SemWait, s as u64, 0));
    } else if timed_out {
        keep_errno(|| record::end_flagged(b, Kind::GaveUp, s as u64, 0, record::TIMED_OUT));
    }
    r
}

/// glibc's `sem_timedwait`, recorded.
///
/// # Safety
///
/// glibc's contract for `sem_timedwait`.
#[no_mangle]
pub unsafe extern "C" fn sem_timedwait(s: *mut libc::sem_t, abs: *const timespec) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's arguments.
    let r = unsafe { real::sem_timedwait(s, abs) };
    sem_timed(b, s, r)
}

/// glibc's `sem_clockwait`, recorded.
///
/// # Safety
///
/// glibc's contract for `sem_clockwait`.
#[no_mangle]
pub unsafe extern "C" fn sem_clockwait(
    s: *mut libc::sem_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's arguments.
    let r = unsafe { real::sem_clockwait(s, clock, abs) };
    sem_timed(b, s, r)
}

/// Runs `f` (recording), leaving `errno` as the forwarded call set it.
fn keep_errno(f: impl FnOnce()) {
    // SAFETY: __errno_location returns the calling thread's errno.
    let e = unsafe { *libc::__errno_location() };
    f();
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = e };
}

/// A `timespec` in ns (0 for NULL).
///
/// # Safety
///
/// `t` is NULL or points to a `timespec`.
unsafe fn ts_ns(t: *const timespec) -> u64 {
    if t.is_null() {
        return 0;
    }
    // SAFETY: non-null, the caller's.
    let t = unsafe { ptr::read(t) };
    (t.tv_sec.max(0) as u64).saturating_mul(1_000_000_000) + t.tv_nsec.max(0) as u64
}

/// glibc's `nanosleep`, recorded (`heir exec --scenario`).
///
/// # Safety
///
/// glibc's contract for `nanosleep`.
#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's arguments.
    let r = unsafe { real::nanosleep(req, rem) };
    // SAFETY: as above.
    let asked = unsafe { ts_ns(req) };
    keep_errno(|| record::end(b, Kind::Sleep, asked, 0));
    r
}

/// glibc's `clock_nanosleep`, recorded (`heir exec --scenario`).
///
/// # Safety
///
/// glibc's contract for `clock_nanosleep`.
#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    let b = record::begin();
    // SAFETY: the caller's arguments.
    let r = unsafe { real::clock_nanosleep(clock, flags, req, rem) };
    let abs = u64::from(flags & libc::TIMER_ABSTIME != 0);
    // SAFETY: as above.
    let asked = unsafe { ts_ns(req) };
    keep_errno(|| record::end(b, Kind::Sleep, asked, abs));
    r
}

/// `usleep`, through glibc's `nanosleep` and recorded: glibc's own
/// `usleep` calls its internal `nanosleep`, which no interposer sees.
///
/// # Safety
///
/// None beyond `usleep`'s (no pointer argument).
#[no_mangle]
pub unsafe extern "C" fn usleep(usec: libc::useconds_t) -> c_int {
    let req = timespec {
        tv_sec: (usec / 1_000_000) as libc::time_t,
        tv_nsec: (usec % 1_000_000) as libc::c_long * 1000,
    };
    // SAFETY: a local request, no remainder wanted.
    unsafe { nanosleep(&req, ptr::null_mut()) }
}

/// `sleep`, through glibc's `nanosleep` and recorded (as [`usleep`]):
/// the seconds left when a signal interrupted it, rounded up, else 0.
///
/// # Safety
///
/// None beyond `sleep`'s (no pointer argument).
#[no_mangle]
pub unsafe extern "C" fn sleep(secs: libc::c_uint) -> libc::c_uint {
    let req = timespec {
        tv_sec: secs as libc::time_t,
        tv_nsec: 0,
    };
    let mut rem = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: local request and remainder.
    if unsafe { nanosleep(&req, &mut rem) } == 0 {
        return 0;
    }
    (rem.tv_sec.max(0) as libc::c_uint).saturating_add(libc::c_uint::from(rem.tv_nsec > 0))
}
