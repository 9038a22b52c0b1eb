//! glibc's own `pthread_*` functions, for the objects heir leaves to glibc
//! (`--mutex keep`, `--gpm off`, process-shared and priority-ceiling
//! objects), and the two that change a thread's priority. Resolved with `dlsym(RTLD_NEXT, …)`: eagerly by the
//! library's constructor, else on first use, with a per-thread guard so
//! that a `dlsym` which itself locked a mutex could not recurse (glibc
//! 2.34 and later use their own internal locks there: the guard is a
//! belt for other C libraries). A symbol that cannot be resolved makes
//! the call return `ENOSYS`.

use std::cell::Cell;
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{
    clockid_t, pthread_barrier_t, pthread_barrierattr_t, pthread_cond_t, pthread_condattr_t,
    pthread_mutex_t, pthread_mutexattr_t, timespec,
};

thread_local! {
    static RESOLVING: Cell<bool> = const { Cell::new(false) };
}

macro_rules! reals {
    ($( $idx:literal $name:ident = $sym:literal : fn($($arg:ident : $ty:ty),*); )*) => {
        const NAMES: [&CStr; COUNT] = [$($sym),*];
        static ADDR: [AtomicUsize; COUNT] = [const { AtomicUsize::new(0) }; COUNT];

        $(
            /// glibc's function of the same name.
            ///
            /// # Safety
            ///
            /// The arguments must be valid for glibc's function.
            pub(crate) unsafe fn $name($($arg: $ty),*) -> c_int {
                match addr($idx) {
                    Some(a) => {
                        type F = unsafe extern "C" fn($($ty),*) -> c_int;
                        // SAFETY: `a` is the address dlsym returned for this very name in glibc, whose C signature is F.
                        let f = unsafe { std::mem::transmute::<usize, F>(a) };
                        // SAFETY: the caller passes valid arguments.
                        unsafe { f($($arg),*) }
                    }
                    None => libc::ENOSYS,
                }
            }
        )*
    };
}

const COUNT: usize = 28;

reals! {
    0 mutex_init = c"pthread_mutex_init": fn(m: *mut pthread_mutex_t, a: *const pthread_mutexattr_t);
    1 mutex_lock = c"pthread_mutex_lock": fn(m: *mut pthread_mutex_t);
    2 mutex_trylock = c"pthread_mutex_trylock": fn(m: *mut pthread_mutex_t);
    3 mutex_timedlock = c"pthread_mutex_timedlock": fn(m: *mut pthread_mutex_t, t: *const timespec);
    4 mutex_clocklock = c"pthread_mutex_clocklock": fn(m: *mut pthread_mutex_t, c: clockid_t, t: *const timespec);
    5 mutex_unlock = c"pthread_mutex_unlock": fn(m: *mut pthread_mutex_t);
    6 mutex_destroy = c"pthread_mutex_destroy": fn(m: *mut pthread_mutex_t);
    7 mutex_consistent = c"pthread_mutex_consistent": fn(m: *mut pthread_mutex_t);
    8 cond_init = c"pthread_cond_init": fn(c: *mut pthread_cond_t, a: *const pthread_condattr_t);
    9 cond_wait = c"pthread_cond_wait": fn(c: *mut pthread_cond_t, m: *mut pthread_mutex_t);
    10 cond_timedwait = c"pthread_cond_timedwait": fn(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, t: *const timespec);
    11 cond_clockwait = c"pthread_cond_clockwait": fn(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, k: clockid_t, t: *const timespec);
    12 cond_signal = c"pthread_cond_signal": fn(c: *mut pthread_cond_t);
    13 cond_broadcast = c"pthread_cond_broadcast": fn(c: *mut pthread_cond_t);
    14 cond_destroy = c"pthread_cond_destroy": fn(c: *mut pthread_cond_t);
    15 barrier_init = c"pthread_barrier_init": fn(b: *mut pthread_barrier_t, a: *const pthread_barrierattr_t, n: libc::c_uint);
    16 barrier_wait = c"pthread_barrier_wait": fn(b: *mut pthread_barrier_t);
    17 barrier_destroy = c"pthread_barrier_destroy": fn(b: *mut pthread_barrier_t);
    18 setschedparam = c"pthread_setschedparam": fn(t: libc::pthread_t, p: c_int, s: *const libc::sched_param);
    19 setschedprio = c"pthread_setschedprio": fn(t: libc::pthread_t, p: c_int);
    20 nanosleep = c"nanosleep": fn(req: *const timespec, rem: *mut timespec);
    21 clock_nanosleep = c"clock_nanosleep": fn(c: clockid_t, f: c_int, req: *const timespec, rem: *mut timespec);
    22 sem_wait = c"sem_wait": fn(s: *mut libc::sem_t);
    23 sem_post = c"sem_post": fn(s: *mut libc::sem_t);
    24 sem_init = c"sem_init": fn(s: *mut libc::sem_t, pshared: c_int, value: libc::c_uint);
    25 sem_trywait = c"sem_trywait": fn(s: *mut libc::sem_t);
    26 sem_timedwait = c"sem_timedwait": fn(s: *mut libc::sem_t, t: *const timespec);
    27 sem_clockwait = c"sem_clockwait": fn(s: *mut libc::sem_t, c: clockid_t, t: *const timespec);
}

fn addr(i: usize) -> Option<usize> {
    let slot = ADDR.get(i)?;
    let a = slot.load(Ordering::Acquire);
    if a != 0 {
        return Some(a);
    }
    // A recursive call (dlsym locking a mutex) gets nothing rather than
    // looping.
    if RESOLVING.try_with(|r| r.replace(true)).unwrap_or(true) {
        return None;
    }
    let name = NAMES.get(i)?;
    // SAFETY: RTLD_NEXT and a NUL-terminated name are dlsym's contract.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    let _ = RESOLVING.try_with(|r| r.set(false));
    if p == 0 {
        return None;
    }
    slot.store(p, Ordering::Release);
    Some(p)
}

/// Resolves every symbol now (the library's constructor).
pub(crate) fn resolve_all() {
    for i in 0..COUNT {
        let _ = addr(i);
    }
}

/// The attribute getters glibc exports (not interposed: called directly).
mod attr {
    use super::*;
    extern "C" {
        pub fn pthread_mutexattr_gettype(a: *const pthread_mutexattr_t, t: *mut c_int) -> c_int;
        pub fn pthread_mutexattr_getrobust(a: *const pthread_mutexattr_t, r: *mut c_int) -> c_int;
        pub fn pthread_mutexattr_getpshared(a: *const pthread_mutexattr_t, p: *mut c_int) -> c_int;
        pub fn pthread_mutexattr_getprotocol(a: *const pthread_mutexattr_t, p: *mut c_int)
            -> c_int;
        pub fn pthread_condattr_getclock(a: *const pthread_condattr_t, c: *mut clockid_t) -> c_int;
        pub fn pthread_condattr_getpshared(a: *const pthread_condattr_t, p: *mut c_int) -> c_int;
        pub fn pthread_barrierattr_getpshared(
            a: *const pthread_barrierattr_t,
            p: *mut c_int,
        ) -> c_int;
    }
}

/// A mutex attribute object, read.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MutexAttr {
    pub kind: c_int,
    pub robust: bool,
    pub pshared: bool,
    pub protect: bool,
}

/// Reads `a` (NULL: the defaults).
///
/// # Safety
///
/// `a` is NULL or an initialised `pthread_mutexattr_t`.
pub(crate) unsafe fn mutex_attr(a: *const pthread_mutexattr_t) -> MutexAttr {
    let mut out = MutexAttr::default();
    if a.is_null() {
        return out;
    }
    let (mut t, mut r, mut p, mut pr) = (0, 0, 0, 0);
    // SAFETY: `a` is an initialised attribute object (the caller), the
    // outputs are locals.
    unsafe {
        attr::pthread_mutexattr_gettype(a, &mut t);
        attr::pthread_mutexattr_getrobust(a, &mut r);
        attr::pthread_mutexattr_getpshared(a, &mut p);
        attr::pthread_mutexattr_getprotocol(a, &mut pr);
    }
    out.kind = t;
    out.robust = r == libc::PTHREAD_MUTEX_ROBUST;
    out.pshared = p == libc::PTHREAD_PROCESS_SHARED;
    out.protect = pr == libc::PTHREAD_PRIO_PROTECT;
    out
}

/// A condition variable's attributes: (clock, process-shared).
///
/// # Safety
///
/// `a` is NULL or an initialised `pthread_condattr_t`.
pub(crate) unsafe fn cond_attr(a: *const pthread_condattr_t) -> (clockid_t, bool) {
    if a.is_null() {
        return (libc::CLOCK_REALTIME, false);
    }
    let (mut c, mut p) = (libc::CLOCK_REALTIME, 0);
    // SAFETY: as above.
    unsafe {
        attr::pthread_condattr_getclock(a, &mut c);
        attr::pthread_condattr_getpshared(a, &mut p);
    }
    (c, p == libc::PTHREAD_PROCESS_SHARED)
}

/// Whether a barrier attribute says process-shared.
///
/// # Safety
///
/// `a` is NULL or an initialised `pthread_barrierattr_t`.
pub(crate) unsafe fn barrier_pshared(a: *const pthread_barrierattr_t) -> bool {
    if a.is_null() {
        return false;
    }
    let mut p = 0;
    // SAFETY: as above.
    unsafe { attr::pthread_barrierattr_getpshared(a, &mut p) };
    p == libc::PTHREAD_PROCESS_SHARED
}
