//! `Lend::Kernel`: a waiter sleeps in `FUTEX_LOCK_PI` on a word naming a
//! helper, and the *kernel* boosts that helper — read from
//! `/proc/self/task/TID/stat` (the effective priority, PI included), while
//! `sched_getattr` (what heir-rt set) stays at the helper's base.

use std::sync::mpsc;
use std::sync::Arc;

use heir::sys::{self, now_ns};
use heir::{Lend, PiCondvar, PiMutex, Urgency, WaitResult};

use crate::common::*;

/// The kernel's effective priority of `tid` as `/proc` shows it (field 18
/// of `stat`): -1 - rt_priority for a real-time task, -101 for a deadline
/// task, 20 + nice for a fair one. PI boosting included.
fn kernel_prio(tid: i32) -> i32 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    let rest = &s[s.rfind(')').expect("comm") + 1..];
    rest.split_whitespace()
        .nth(15)
        .expect("prio field")
        .parse()
        .expect("prio")
}

/// The `sched_priority` heir-rt (or the thread) set for `tid`.
fn set_prio(tid: i32) -> u32 {
    sys::sched_getattr(tid)
        .expect("sched_getattr")
        .sched_priority
}

/// Polls (sleeping 100 µs) until `f` holds; false at `limit`.
fn eventually(limit: u64, mut f: impl FnMut() -> bool) -> bool {
    while !f() {
        if now_ns() >= limit {
            return false;
        }
        sys::sleep_until(now_ns() + 100_000);
    }
    true
}

/// A waiter (FIFO 30) on `c` under `m` until `flag` is set; returns how
/// its last wait ended.
fn waiter(
    cpu: u32,
    m: Arc<PiMutex<bool>>,
    c: Arc<PiCondvar>,
    limit: u64,
) -> (std::thread::JoinHandle<WaitResult>, i32) {
    spawn_fifo_tid(cpu, 30, move || {
        let mut g = m.lock().expect("lock");
        let mut r = WaitResult::Woken;
        while !*g && r == WaitResult::Woken {
            r = c.wait_until(&mut g, limit).expect("wait");
        }
        r
    })
}

/// A helper (FIFO `prio`) that sleeps on a channel; on a message it sets
/// the flag and signals.
fn helper(
    cpu: u32,
    prio: u8,
    m: Arc<PiMutex<bool>>,
    c: Arc<PiCondvar>,
) -> (std::thread::JoinHandle<()>, i32, mpsc::Sender<()>) {
    let (tx, rx) = mpsc::channel::<()>();
    let (h, tid) = spawn_fifo_tid(cpu, prio, move || {
        if rx.recv().is_ok() {
            *m.lock().expect("lock") = true;
            c.signal().expect("signal");
        }
    });
    (h, tid, tx)
}

#[test]
fn the_kernel_boosts_the_helper_and_its_signal_ends_the_boost() {
    let Some(rt) = rt_or_skip("kernel_boost::owner", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    assert_eq!(c.lend(), Lend::Kernel);
    let (h, htid, go) = helper(cpu, 10, m.clone(), c.clone());
    c.add_helper(htid).expect("helper");
    assert_eq!(kernel_prio(htid), -11, "FIFO 10 before any wait");
    let (w, wtid) = waiter(cpu, m.clone(), c.clone(), limit);
    assert!(
        eventually(limit, || kernel_prio(htid) == -31),
        "the helper runs at the waiter's FIFO 30 (kernel prio {})",
        kernel_prio(htid)
    );
    let wi = heir::thread::info(wtid).expect("waiter registered");
    assert_eq!(wi.kernel_helper, Some(htid), "the waiter's word names it");
    assert_eq!(
        set_prio(htid),
        10,
        "heir-rt did not sched_setattr the helper"
    );
    let hi = heir::thread::info(htid).expect("helper registered");
    assert_eq!(hi.effective, Urgency::fixed(30), "the engine agrees");
    assert_eq!(hi.applied, Urgency::fixed(10), "and left it to the kernel");
    heir::thread::check_invariants().expect("invariants while waiting");
    go.send(()).expect("go");
    assert_eq!(w.join().expect("waiter"), WaitResult::Woken);
    h.join().expect("helper");
    heir::thread::check_invariants().expect("invariants after");
}

#[test]
fn another_signaller_wakes_a_kernel_waiter_and_the_boost_ends() {
    let Some(rt) = rt_or_skip("kernel_boost::other", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    let (hold_tx, hold_rx) = mpsc::channel::<()>();
    let (h, htid) = spawn_fifo_tid(cpu, 10, move || {
        let _ = hold_rx.recv();
    });
    c.add_helper(htid).expect("helper");
    let (w, _) = waiter(cpu, m.clone(), c.clone(), limit);
    assert!(eventually(limit, || kernel_prio(htid) == -31), "boosted");
    // Not the named helper: the wait ends with the wake signal.
    let (sm, sc) = (m.clone(), c.clone());
    spawn_fifo(cpu, 20, move || {
        *sm.lock().expect("lock") = true;
        sc.signal().expect("signal")
    })
    .join()
    .expect("signaller");
    assert_eq!(w.join().expect("waiter"), WaitResult::Woken);
    assert_eq!(kernel_prio(htid), -11, "the helper is back at FIFO 10");
    hold_tx.send(()).expect("release");
    h.join().expect("helper");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_kernel_wait_times_out_and_the_boost_ends() {
    let Some(rt) = rt_or_skip("kernel_boost::timeout", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    let (hold_tx, hold_rx) = mpsc::channel::<()>();
    let (h, htid) = spawn_fifo_tid(cpu, 10, move || {
        let _ = hold_rx.recv();
    });
    c.add_helper(htid).expect("helper");
    let (w, _) = waiter(cpu, m.clone(), c.clone(), now_ns() + 50 * MS);
    assert_eq!(w.join().expect("waiter"), WaitResult::TimedOut);
    assert_eq!(kernel_prio(htid), -11, "no boost after the timeout");
    assert!(!c.has_waiters());
    hold_tx.send(()).expect("release");
    h.join().expect("helper");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn the_kernel_boost_follows_the_helpers_pi_mutex_to_its_owner() {
    let Some(rt) = rt_or_skip("kernel_boost::transitive", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    // A glibc PRIO_INHERIT mutex heir-rt knows nothing about: only the
    // kernel can carry the boost past the helper to its owner.
    let pm = GlibcPiMutex::new();
    let (t_go, t_rx) = mpsc::channel::<()>();
    let (t_locked_tx, t_locked) = mpsc::channel::<()>();
    let tm = pm.clone();
    let (third, ttid) = spawn_fifo_tid(cpu, 5, move || {
        tm.lock();
        t_locked_tx.send(()).expect("locked");
        let _ = t_rx.recv();
        tm.unlock();
    });
    t_locked.recv().expect("third holds the mutex");
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    let (hm, hc, hpm) = (m.clone(), c.clone(), pm.clone());
    let (h_go, h_rx) = mpsc::channel::<()>();
    let (h, htid) = spawn_fifo_tid(cpu, 10, move || {
        // Blocks on the third thread's mutex, then signals.
        let _ = h_rx.recv();
        hpm.lock();
        hpm.unlock();
        *hm.lock().expect("lock") = true;
        hc.signal().expect("signal");
    });
    c.add_helper(htid).expect("helper");
    h_go.send(()).expect("go");
    assert!(
        eventually(limit, || kernel_prio(ttid) == -11),
        "the helper's block on the mutex lends the third thread FIFO 10"
    );
    let (w, _) = waiter(cpu, m.clone(), c.clone(), limit);
    assert!(
        eventually(limit, || kernel_prio(ttid) == -31),
        "the third thread runs at the waiter's FIFO 30 (kernel prio {})",
        kernel_prio(ttid)
    );
    assert_eq!(kernel_prio(htid), -31, "and so does the helper");
    assert_eq!(set_prio(ttid), 5, "by the kernel alone");
    assert_eq!(set_prio(htid), 10, "by the kernel alone");
    t_go.send(()).expect("release");
    assert_eq!(w.join().expect("waiter"), WaitResult::Woken);
    h.join().expect("helper");
    third.join().expect("third");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_deadline_waiter_lends_its_deadline_to_a_fifo_helper() {
    let Some(rt) = rt_or_skip("kernel_boost::deadline", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    let (h, htid, go) = helper(cpu, 10, m.clone(), c.clone());
    c.add_helper(htid).expect("helper");
    let (wm, wc) = (m.clone(), c.clone());
    let (ready_tx, ready) = mpsc::channel::<Result<(), heir::Error>>();
    // Not pinned: a SCHED_DEADLINE thread must be allowed on every CPU of
    // its root domain.
    let w = std::thread::spawn(move || {
        sys::set_affinity(0, &sys::allowed_cpus()).expect("every CPU");
        // Small reservation (2 % of a CPU); the thread restores its own
        // policy while it runs, never another thread's while it is blocked.
        let dl = heir::sys::SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_runtime: 200_000,
            sched_deadline: 10 * MS,
            sched_period: 10 * MS,
            ..Default::default()
        };
        if let Err(e) = heir::thread::set_sched(&dl) {
            ready_tx.send(Err(e)).expect("report");
            return None;
        }
        ready_tx.send(Ok(())).expect("report");
        let mut g = wm.lock().expect("lock");
        let mut r = WaitResult::Woken;
        while !*g && r == WaitResult::Woken {
            r = wc.wait_until(&mut g, limit).expect("wait");
        }
        drop(g);
        heir::thread::set_sched(&heir::sched::other(0)).expect("back to SCHED_OTHER");
        Some(r)
    });
    match ready.recv().expect("report") {
        Ok(()) => {}
        Err(e) if e.errno() == libc::EBUSY => {
            // Admission refused (other deadline work on the machine): not
            // this test's subject.
            eprintln!("kernel_boost::deadline: SKIPPED: SCHED_DEADLINE refused: {e}");
            go.send(()).expect("go");
            h.join().expect("helper");
            return;
        }
        Err(e) => panic!("SCHED_DEADLINE: {e}"),
    }
    assert!(
        eventually(limit, || kernel_prio(htid) == -101),
        "the FIFO helper runs in the deadline class (kernel prio {})",
        kernel_prio(htid)
    );
    assert_eq!(set_prio(htid), 10, "heir-rt did not (and could not) set it");
    go.send(()).expect("go");
    assert_eq!(w.join().expect("waiter"), Some(WaitResult::Woken));
    h.join().expect("helper");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_deleted_helper_hands_the_kernel_boost_to_the_next() {
    let Some(rt) = rt_or_skip("kernel_boost::fan_out", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    let (h1, h1tid, go1) = helper(cpu, 10, m.clone(), c.clone());
    let (h2, h2tid, go2) = helper(cpu, 12, m.clone(), c.clone());
    c.add_helper(h1tid).expect("helper 1");
    c.add_helper(h2tid).expect("helper 2");
    let (w, wtid) = waiter(cpu, m.clone(), c.clone(), limit);
    assert!(
        eventually(limit, || kernel_prio(h1tid) == -31),
        "first helper: kernel"
    );
    assert_eq!(set_prio(h1tid), 10);
    assert!(
        eventually(limit, || set_prio(h2tid) == 30),
        "second: sched_setattr"
    );
    c.remove_helper(h1tid).expect("del");
    assert!(
        eventually(limit, || heir::thread::info(wtid)
            .and_then(|i| i.kernel_helper)
            == Some(h2tid)),
        "the wait names the second helper now"
    );
    assert!(
        eventually(limit, || kernel_prio(h2tid) == -31),
        "boosted by the kernel"
    );
    assert!(
        eventually(limit, || set_prio(h2tid) == 12),
        "its sched_setattr boost undone"
    );
    assert_eq!(
        kernel_prio(h1tid),
        -11,
        "the deleted helper is back at FIFO 10"
    );
    heir::thread::check_invariants().expect("invariants while waiting");
    drop(go1);
    h1.join().expect("helper 1");
    go2.send(()).expect("go");
    assert_eq!(w.join().expect("waiter"), WaitResult::Woken);
    h2.join().expect("helper 2");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_kernel_waiter_outlives_its_helper() {
    let Some(rt) = rt_or_skip("kernel_boost::helper_exits", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::Kernel).expect("kernel boost"));
    let (h, htid, go) = helper(cpu, 10, m.clone(), c.clone());
    c.add_helper(htid).expect("helper");
    let (w, wtid) = waiter(cpu, m.clone(), c.clone(), limit);
    assert!(eventually(limit, || kernel_prio(htid) == -31), "boosted");
    drop(go); // the helper exits without signalling
    h.join().expect("helper");
    assert!(
        eventually(limit, || heir::thread::info(wtid)
            .is_some_and(
                |i| i.kernel_helper.is_none() && i.blocked_on.is_some()
            )),
        "the waiter still waits, naming nobody"
    );
    heir::thread::check_invariants().expect("invariants while waiting");
    let (sm, sc) = (m.clone(), c.clone());
    spawn_fifo(cpu, 20, move || {
        *sm.lock().expect("lock") = true;
        sc.signal().expect("signal")
    })
    .join()
    .expect("signaller");
    assert_eq!(w.join().expect("waiter"), WaitResult::Woken);
    heir::thread::check_invariants().expect("invariants");
}

/// A glibc `pthread_mutex_t` with `PTHREAD_PRIO_INHERIT`.
struct GlibcPiMutex(std::cell::UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads; it is only
// reached through pthread calls.
unsafe impl Sync for GlibcPiMutex {}
// SAFETY: as above.
unsafe impl Send for GlibcPiMutex {}

impl GlibcPiMutex {
    /// Initialised in place, in the `Arc` it never leaves.
    fn new() -> Arc<Self> {
        // SAFETY: a zeroed pthread_mutex_t is initialised right below,
        // before any use.
        let m = Arc::new(GlibcPiMutex(std::cell::UnsafeCell::new(unsafe {
            std::mem::zeroed()
        })));
        // SAFETY: zeroed attr initialised before use and destroyed after;
        // the mutex is live memory nobody uses yet.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            libc::pthread_mutexattr_init(&mut attr);
            libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
            libc::pthread_mutex_init(m.0.get(), &attr);
            libc::pthread_mutexattr_destroy(&mut attr);
        }
        m
    }
    fn lock(&self) {
        // SAFETY: an initialised mutex.
        assert_eq!(unsafe { libc::pthread_mutex_lock(self.0.get()) }, 0);
    }
    fn unlock(&self) {
        // SAFETY: an initialised mutex held by the caller.
        assert_eq!(unsafe { libc::pthread_mutex_unlock(self.0.get()) }, 0);
    }
}
