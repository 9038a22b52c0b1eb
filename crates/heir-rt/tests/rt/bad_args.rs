//! Bad arguments to the C API return an error code, never crash.

use std::ptr;

use heir::capi::*;

fn zeroed<T>() -> T {
    // SAFETY: the handle structs are a pointer and an integer; all-zero is
    // their "not initialised" state.
    unsafe { std::mem::zeroed() }
}

#[test]
fn unknown_and_foreign_tids_are_refused() {
    let mut c: heir_cond_t = zeroed();
    // SAFETY: `c` is a live handle struct.
    unsafe {
        assert_eq!(heir_cond_init(&mut c, std::ptr::null()), 0);
        assert_eq!(
            heir_cond_add_helper(&mut c, 0x3fff_fff0),
            libc::ESRCH,
            "unknown tid"
        );
        assert_eq!(
            heir_cond_add_helper(&mut c, 1),
            libc::ESRCH,
            "init: another process"
        );
        assert_eq!(
            heir_cond_add_helper(&mut c, -5),
            libc::ESRCH,
            "negative tid"
        );
        assert_eq!(heir_cond_remove_helper(&mut c, 0x3fff_fff0), libc::ESRCH);
        let me = heir_gettid();
        assert_eq!(heir_cond_add_helper(&mut c, me), 0);
        assert_eq!(heir_cond_add_helper(&mut c, me), libc::EEXIST, "twice");
        assert_eq!(heir_cond_remove_helper(&mut c, me), 0);
        assert_eq!(
            heir_cond_remove_helper(&mut c, me),
            libc::ENOENT,
            "not a helper"
        );
        assert_eq!(heir_cond_destroy(&mut c), 0);
    }
}

#[test]
fn destroyed_and_uninitialised_objects_are_refused() {
    let mut c: heir_cond_t = zeroed();
    let mut m: heir_mutex_t = zeroed();
    let mut q: heir_queue_t = zeroed();
    let mut k: heir_ceiling_mutex_t = zeroed();
    // SAFETY: all pointers are live handle structs or null.
    unsafe {
        assert_eq!(heir_cond_signal(&mut c), libc::EINVAL, "never initialised");
        assert_eq!(heir_mutex_lock(&mut m), libc::EINVAL);
        assert_eq!(heir_cond_init(&mut c, std::ptr::null()), 0);
        assert_eq!(heir_mutex_init(&mut m, std::ptr::null()), 0);
        assert_eq!(heir_cond_destroy(&mut c), 0);
        assert_eq!(heir_cond_signal(&mut c), libc::EINVAL, "destroyed");
        assert_eq!(heir_cond_broadcast(&mut c), libc::EINVAL);
        assert_eq!(heir_cond_add_helper(&mut c, heir_gettid()), libc::EINVAL);
        assert_eq!(heir_cond_wait(&mut c, &mut m), libc::EINVAL);
        assert_eq!(heir_cond_destroy(&mut c), libc::EINVAL, "double destroy");
        assert_eq!(heir_cond_signal(ptr::null_mut()), libc::EINVAL, "null");
        assert_eq!(heir_mutex_lock(ptr::null_mut()), libc::EINVAL);
        assert_eq!(heir_queue_push(&mut q, ptr::null_mut()), libc::EINVAL);
        assert_eq!(heir_ceiling_mutex_lock(&mut k), libc::EINVAL);
        assert_eq!(
            heir_ceiling_mutex_init(&mut k, 0),
            libc::EINVAL,
            "ceiling out of range"
        );
        assert_eq!(heir_ceiling_mutex_init(&mut k, 100), libc::EINVAL);
        assert_eq!(heir_queue_init(&mut q, 0), libc::EINVAL, "zero capacity");
        // Mutex misuse.
        assert_eq!(heir_mutex_unlock(&mut m), libc::EPERM, "not the owner");
        assert_eq!(heir_mutex_lock(&mut m), 0);
        assert_eq!(heir_mutex_lock(&mut m), libc::EDEADLK, "relock by owner");
        assert_eq!(heir_mutex_trylock(&mut m), libc::EBUSY);
        assert_eq!(heir_mutex_destroy(&mut m), libc::EBUSY, "locked");
        assert_eq!(heir_mutex_unlock(&mut m), 0);
        assert_eq!(heir_mutex_destroy(&mut m), 0);
        assert_eq!(heir_mutex_unlock(&mut m), libc::EINVAL, "destroyed");
        // Waiting without holding the mutex; bad timespec.
        assert_eq!(heir_cond_init(&mut c, std::ptr::null()), 0);
        assert_eq!(heir_mutex_init(&mut m, std::ptr::null()), 0);
        assert_eq!(heir_cond_wait(&mut c, &mut m), libc::EPERM);
        let bad = libc::timespec {
            tv_sec: 0,
            tv_nsec: 2_000_000_000,
        };
        assert_eq!(heir_mutex_lock(&mut m), 0);
        assert_eq!(heir_cond_timedwait(&mut c, &mut m, &bad), libc::EINVAL);
        assert_eq!(
            heir_cond_timedwait(&mut c, &mut m, ptr::null()),
            libc::EINVAL
        );
        let past = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1,
        };
        assert_eq!(heir_cond_timedwait(&mut c, &mut m, &past), libc::ETIMEDOUT);
        assert_eq!(
            heir_mutex_unlock(&mut m),
            0,
            "mutex held again after the timeout"
        );
        assert_eq!(heir_mutex_destroy(&mut m), 0);
        assert_eq!(heir_cond_destroy(&mut c), 0);
        assert_eq!(heir_check_invariants(), 0);
    }
}

#[test]
fn waiting_as_your_own_helper_is_a_refused_cycle() {
    let mut c: heir_cond_t = zeroed();
    let mut m: heir_mutex_t = zeroed();
    // SAFETY: live handle structs.
    unsafe {
        assert_eq!(heir_cond_init(&mut c, std::ptr::null()), 0);
        assert_eq!(heir_mutex_init(&mut m, std::ptr::null()), 0);
        assert_eq!(heir_cond_add_helper(&mut c, heir_gettid()), 0);
        assert_eq!(heir_mutex_lock(&mut m), 0);
        assert_eq!(heir_cond_wait(&mut c, &mut m), libc::EDEADLK);
        // State unchanged: the mutex is still ours.
        assert_eq!(heir_mutex_unlock(&mut m), 0);
        assert_eq!(heir_cond_remove_helper(&mut c, heir_gettid()), 0);
        assert_eq!(heir_cond_destroy(&mut c), 0);
        assert_eq!(heir_mutex_destroy(&mut m), 0);
    }
}
