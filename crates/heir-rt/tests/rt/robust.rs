//! A held mutex outlives its owner (issue 7, item 4): a PI mutex whose
//! owner exits holding it is robust — the next locker gets `EOWNERDEAD`
//! holding it, makes it consistent, and it works again (or, unlocked
//! without that, is not recoverable); a ceiling mutex cannot be destroyed
//! while held, and its holder keeps its priority.

use std::sync::Arc;

use heir::capi::*;
use heir::{CeilingMutex, Error, PiMutex, RawEngineMutex, RawPiMutex, Urgency};

use crate::common::*;

fn zeroed<T>() -> T {
    // SAFETY: the handle structs are a pointer and an integer; all-zero is
    // their "not initialised" state.
    unsafe { std::mem::zeroed() }
}

/// True if thread `tid` of this process sleeps (state S or D).
fn sleeping(tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.get(s.rfind(')')? + 1..)?;
            after
                .split_whitespace()
                .next()
                .map(|st| st == "S" || st == "D")
        })
        .unwrap_or(false)
}

/// Locks `m` on a new thread that then exits without unlocking.
fn die_holding(m: &Arc<RawPiMutex>) {
    let m2 = m.clone();
    std::thread::spawn(move || m2.lock().expect("lock"))
        .join()
        .expect("owner thread");
}

#[test]
fn a_pi_mutex_whose_owner_exited_is_recovered() {
    assert!(
        heir::robust::available(),
        "glibc's robust list is joinable here"
    );
    let m = Arc::new(RawPiMutex::new());
    die_holding(&m);
    assert_eq!(m.owner_tid(), None, "the kernel cleared the dead owner");
    assert_eq!(m.lock(), Err(Error::OwnerDead));
    assert!(m.is_owned_by_current(), "EOWNERDEAD: the caller holds it");
    assert_eq!(m.make_consistent(), Ok(()));
    assert_eq!(
        m.make_consistent(),
        Err(Error::Invalid),
        "already consistent"
    );
    assert_eq!(m.unlock(), Ok(()));
    // Usable again, by anybody.
    assert_eq!(m.lock(), Ok(()));
    assert_eq!(m.unlock(), Ok(()));
    let m2 = m.clone();
    std::thread::spawn(move || {
        m2.lock().expect("lock");
        m2.unlock().expect("unlock");
    })
    .join()
    .expect("thread");
    assert_eq!(m.try_lock(), Ok(()));
    assert_eq!(m.unlock(), Ok(()));
    let m = Arc::try_unwrap(m).expect("one owner");
    assert!(m.destroy().is_ok());
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_waiter_blocked_when_the_owner_exits_gets_owner_dead() {
    let m = Arc::new(RawPiMutex::new());
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
    let m2 = m.clone();
    let owner = std::thread::spawn(move || {
        m2.lock().expect("lock");
        locked_tx.send(()).expect("send");
        exit_rx.recv().expect("exit");
    });
    locked_rx.recv().expect("locked");
    let m3 = m.clone();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        tid_tx.send(heir::sys::gettid()).expect("tid");
        let r = m3.lock_until(Some(heir::sys::now_ns() + 10_000 * MS));
        let held = m3.is_owned_by_current();
        let c = m3.make_consistent();
        m3.unlock().expect("unlock");
        (r, held, c)
    });
    // Let the waiter block in the kernel, then let the owner exit.
    let wtid = tid_rx.recv().expect("tid");
    let deadline = heir::sys::now_ns() + 5_000 * MS;
    while !sleeping(wtid) {
        assert!(heir::sys::now_ns() < deadline, "the waiter never blocked");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    exit_tx.send(()).expect("exit");
    owner.join().expect("owner");
    assert_eq!(
        waiter.join().expect("waiter"),
        (Err(Error::OwnerDead), true, Ok(()))
    );
    assert_eq!(m.lock(), Ok(()), "consistent again");
    assert_eq!(m.unlock(), Ok(()));
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn unlocked_without_consistent_it_is_not_recoverable() {
    let m = Arc::new(RawPiMutex::new());
    die_holding(&m);
    assert_eq!(m.try_lock(), Err(Error::OwnerDead));
    assert_eq!(m.unlock(), Ok(()));
    assert_eq!(m.lock(), Err(Error::NotRecoverable));
    assert_eq!(m.try_lock(), Err(Error::NotRecoverable));
    assert!(!m.is_owned_by_current());
    // The typed mutex never hands out what a dead owner left half done...
    let p = Arc::new(PiMutex::new(1u32));
    let p2 = p.clone();
    std::thread::spawn(move || std::mem::forget(p2.lock().expect("lock")))
        .join()
        .expect("thread");
    assert_eq!(p.lock().err(), Some(Error::OwnerDead));
    assert_eq!(p.lock().err(), Some(Error::NotRecoverable));
    // ...unless asked to recover it.
    let q = Arc::new(PiMutex::new(1u32));
    let q2 = q.clone();
    std::thread::spawn(move || {
        let mut g = q2.lock().expect("lock");
        *g = 2;
        std::mem::forget(g);
    })
    .join()
    .expect("thread");
    {
        let (mut g, died) = q.lock_recover().expect("recover");
        assert!(died);
        assert_eq!(*g, 2);
        *g = 3;
        g.make_consistent().expect("consistent");
    }
    assert_eq!(*q.lock().expect("lock"), 3);
}

#[test]
fn c_api_owner_death_then_consistent() {
    struct Handle(heir_mutex_t);
    // SAFETY: the handle is used by one thread at a time below (the owner,
    // joined, then this thread); the object it points to is thread-safe.
    unsafe impl Send for Handle {}
    let mut h = Box::new(Handle(zeroed()));
    // SAFETY: live handle struct, not moved after init (boxed).
    assert_eq!(unsafe { heir_mutex_init(&mut h.0, std::ptr::null()) }, 0);
    let p = &mut h.0 as *mut heir_mutex_t as usize;
    std::thread::spawn(move || {
        // SAFETY: `p` points at the initialised, boxed handle, alive until
        // after this thread is joined.
        unsafe { heir_mutex_lock(p as *mut heir_mutex_t) }
    })
    .join()
    .map(|r| assert_eq!(r, 0))
    .expect("owner");
    // SAFETY: live, initialised handle.
    unsafe {
        let m = &mut h.0;
        assert_eq!(heir_mutex_trylock(m), libc::EOWNERDEAD);
        assert_eq!(heir_mutex_destroy(m), libc::EBUSY, "held (by us)");
        assert_eq!(heir_mutex_consistent(m), 0);
        assert_eq!(heir_mutex_consistent(m), libc::EINVAL);
        assert_eq!(heir_mutex_unlock(m), 0);
        assert_eq!(heir_mutex_consistent(m), libc::EPERM, "not held");
        assert_eq!(heir_mutex_lock(m), 0);
        assert_eq!(heir_mutex_unlock(m), 0);
        assert_eq!(heir_mutex_destroy(m), 0);
    }
    // The same, never made consistent: ENOTRECOVERABLE, and destroy works.
    let mut h = Box::new(Handle(zeroed()));
    // SAFETY: as above.
    assert_eq!(unsafe { heir_mutex_init(&mut h.0, std::ptr::null()) }, 0);
    let p = &mut h.0 as *mut heir_mutex_t as usize;
    std::thread::spawn(move || {
        // SAFETY: as above.
        unsafe { heir_mutex_lock(p as *mut heir_mutex_t) }
    })
    .join()
    .map(|r| assert_eq!(r, 0))
    .expect("owner");
    // SAFETY: live, initialised handle.
    unsafe {
        let m = &mut h.0;
        assert_eq!(heir_mutex_lock(m), libc::EOWNERDEAD);
        assert_eq!(heir_mutex_unlock(m), 0);
        assert_eq!(heir_mutex_lock(m), libc::ENOTRECOVERABLE);
        assert_eq!(heir_mutex_trylock(m), libc::ENOTRECOVERABLE);
        assert_eq!(heir_mutex_destroy(m), 0);
    }
}

#[test]
fn a_held_ceiling_mutex_is_not_destroyed() {
    let Some(rt) = rt_or_skip("robust::ceiling_destroy", 10) else {
        return;
    };
    let seen = spawn_fifo(rt.cpu, 10, || {
        let mut k: heir_ceiling_mutex_t = zeroed();
        let mut seen = Vec::new();
        // SAFETY: live handle struct, not moved after init.
        unsafe {
            assert_eq!(heir_ceiling_mutex_init(&mut k, 40), 0);
            assert_eq!(heir_ceiling_mutex_lock(&mut k), 0);
            seen.push(my_prio());
            assert_eq!(heir_ceiling_mutex_destroy(&mut k), libc::EBUSY);
            seen.push(my_prio());
            assert_eq!(heir_ceiling_mutex_unlock(&mut k), 0, "still usable");
            seen.push(my_prio());
            assert_eq!(heir_ceiling_mutex_destroy(&mut k), 0);
        }
        // The Rust API: destroy refuses while held; a mutex dropped while
        // held releases its holder.
        let m = RawEngineMutex::new(heir_core::Protocol::Ceiling(Urgency::fixed(50)));
        m.lock().expect("lock");
        seen.push(my_prio());
        let (m, e) = m.destroy().expect_err("held");
        assert_eq!(e, Error::Busy);
        seen.push(my_prio());
        drop(m);
        seen.push(my_prio());
        let c = CeilingMutex::new(Urgency::fixed(30), ());
        drop(c.lock().expect("lock"));
        assert!(!c.raw().is_busy());
        heir::thread::check_invariants().expect("invariants");
        seen
    })
    .join()
    .expect("thread");
    assert_eq!(seen, [40, 40, 10, 50, 50, 10]);
}

/// glibc's robust mutexes and heir's share each thread's robust list: both
/// keep working when they are locked and unlocked interleaved, and both are
/// recovered when the thread exits holding some of each.
#[test]
fn glibc_robust_mutexes_and_heirs_share_the_list() {
    struct G(Box<libc::pthread_mutex_t>);
    // SAFETY: a pthread mutex may be used from any thread; the box keeps
    // its address.
    unsafe impl Send for G {}
    unsafe impl Sync for G {}
    fn robust(pi: bool) -> G {
        // SAFETY: zeroed attr/mutex storage is initialised by the calls
        // below before use; the mutex is boxed (never moves).
        unsafe {
            let mut a: libc::pthread_mutexattr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_mutexattr_init(&mut a), 0);
            assert_eq!(
                libc::pthread_mutexattr_setrobust(&mut a, libc::PTHREAD_MUTEX_ROBUST),
                0
            );
            if pi {
                assert_eq!(
                    libc::pthread_mutexattr_setprotocol(&mut a, libc::PTHREAD_PRIO_INHERIT),
                    0
                );
            }
            let mut m: Box<libc::pthread_mutex_t> = Box::new(std::mem::zeroed());
            assert_eq!(libc::pthread_mutex_init(&mut *m, &a), 0);
            libc::pthread_mutexattr_destroy(&mut a);
            G(m)
        }
    }
    fn ptr(g: &G) -> *mut libc::pthread_mutex_t {
        &*g.0 as *const libc::pthread_mutex_t as *mut libc::pthread_mutex_t
    }
    let g1 = Arc::new(robust(true));
    let g2 = Arc::new(robust(false));
    let h1 = Arc::new(RawPiMutex::new());
    let h2 = Arc::new(RawPiMutex::new());
    let (a, b, c, d) = (g1.clone(), g2.clone(), h1.clone(), h2.clone());
    std::thread::spawn(move || {
        // SAFETY: initialised robust mutexes, alive (Arc) for the thread.
        unsafe {
            assert_eq!(libc::pthread_mutex_lock(ptr(&a)), 0);
            c.lock().expect("h1");
            assert_eq!(libc::pthread_mutex_lock(ptr(&b)), 0);
            d.lock().expect("h2");
            // The list is h2, g2, h1, g1: unlock from its middle and end.
            assert_eq!(libc::pthread_mutex_unlock(ptr(&a)), 0);
            d.unlock().expect("h2");
        }
        // Exit holding g2 and h1.
    })
    .join()
    .expect("thread");
    // SAFETY: initialised robust mutexes.
    unsafe {
        assert_eq!(libc::pthread_mutex_lock(ptr(&g2)), libc::EOWNERDEAD);
        assert_eq!(libc::pthread_mutex_consistent(ptr(&g2)), 0);
        assert_eq!(libc::pthread_mutex_unlock(ptr(&g2)), 0);
        assert_eq!(
            libc::pthread_mutex_lock(ptr(&g1)),
            0,
            "unlocked before the exit"
        );
        assert_eq!(libc::pthread_mutex_unlock(ptr(&g1)), 0);
    }
    assert_eq!(h1.lock(), Err(Error::OwnerDead));
    assert_eq!(h1.make_consistent(), Ok(()));
    assert_eq!(h1.unlock(), Ok(()));
    assert_eq!(h2.lock(), Ok(()), "unlocked before the exit");
    assert_eq!(h2.unlock(), Ok(()));
}
