//! A timeout and a helper removal revoke the boost. The helper samples its
//! own priority (yielding between samples so an equal-priority waiter whose
//! timeout expired can run); each sample is (t_before, t_after, prio).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use heir::sys::now_ns;
use heir::{PiCondvar, PiMutex, WaitResult};

use crate::common::*;

fn sample_until(until: u64) -> Vec<(u64, u64, u32)> {
    let mut v = Vec::new();
    while now_ns() < until {
        let a = now_ns();
        let p = my_prio();
        let b = now_ns();
        v.push((a, b, p));
        // SAFETY: sched_yield has no arguments.
        unsafe { libc::sched_yield() };
    }
    v
}

/// Checks the samples against the waiter's blocked interval: inside it the
/// helper runs at `boosted`, outside at `base`.
fn check(samples: &[(u64, u64, u32)], from: u64, to: u64, base: u32, boosted: u32) {
    let mut inside = 0;
    for &(a, b, p) in samples {
        if b < from || a > to {
            assert_eq!(p, base, "sample at {a}..{b} outside [{from},{to}]");
        } else if a > from && b < to {
            assert_eq!(p, boosted, "sample at {a}..{b} inside [{from},{to}]");
            inside += 1;
        }
    }
    assert!(inside > 0, "the helper ran while boosted");
    assert_eq!(samples.last().map(|s| s.2), Some(base), "back at base");
}

/// The scene both tests share, on `cpu` from `t0` (30 ms from now): a helper
/// (FIFO 10) samples its priority from `t0` to `t0 + 60 ms` and is declared
/// a helper of `c`; a waiter (FIFO 30) locks a PI mutex at `t0 + 5 ms`,
/// stores the start of its wait in `from`, waits on `c` until
/// `deadline(t0)` (evaluated just before the wait) and stores the end of
/// its wait in `to`.
struct Scene {
    t0: u64,
    c: Arc<PiCondvar>,
    htid: i32,
    helper: JoinHandle<Vec<(u64, u64, u32)>>,
    waiter: JoinHandle<WaitResult>,
    from: Arc<AtomicU64>,
    to: Arc<AtomicU64>,
}

fn scene(cpu: u32, deadline: impl FnOnce(u64) -> u64 + Send + 'static) -> Scene {
    let t0 = now_ns() + 30 * MS;
    let (helper, htid) = spawn_fifo_tid(cpu, 10, move || {
        heir::sys::sleep_until(t0);
        sample_until(t0 + 60 * MS)
    });
    let c = Arc::new(PiCondvar::new());
    c.add_helper(htid).expect("helper");
    let (from, to) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (cc, f, t) = (c.clone(), from.clone(), to.clone());
    let waiter = spawn_fifo(cpu, 30, move || {
        let m = PiMutex::new(());
        heir::sys::sleep_until(t0 + 5 * MS);
        let mut g = m.lock().expect("lock");
        f.store(now_ns(), Ordering::SeqCst);
        let r = cc.wait_until(&mut g, deadline(t0)).expect("wait");
        t.store(now_ns(), Ordering::SeqCst);
        r
    });
    Scene {
        t0,
        c,
        htid,
        helper,
        waiter,
        from,
        to,
    }
}

#[test]
fn timeout_revokes_the_boost() {
    let Some(rt) = rt_or_skip("revoke::timeout", 20) else {
        return;
    };
    // The waiter times out 20 ms into its wait.
    let sc = scene(rt.cpu, |_| now_ns() + 20 * MS);
    assert_eq!(sc.waiter.join().expect("waiter"), WaitResult::TimedOut);
    let samples = sc.helper.join().expect("helper");
    check(
        &samples,
        sc.from.load(Ordering::SeqCst),
        sc.to.load(Ordering::SeqCst),
        10,
        30,
    );
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn helper_removal_revokes_the_boost() {
    let Some(rt) = rt_or_skip("revoke::helper_del", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let sc = scene(cpu, |t0| t0 + 50 * MS);
    // A higher-priority thread removes the helper 15 ms into the wait.
    let del_at = Arc::new(AtomicU64::new(0));
    let (cd, d, htid, t0) = (sc.c.clone(), del_at.clone(), sc.htid, sc.t0);
    let remover = spawn_fifo(cpu, 40, move || {
        heir::sys::sleep_until(t0 + 20 * MS);
        cd.remove_helper(htid).expect("remove_helper");
        d.store(now_ns(), Ordering::SeqCst);
    });
    remover.join().expect("remover");
    assert_eq!(sc.waiter.join().expect("waiter"), WaitResult::TimedOut);
    let samples = sc.helper.join().expect("helper");
    check(
        &samples,
        sc.from.load(Ordering::SeqCst),
        del_at.load(Ordering::SeqCst),
        10,
        30,
    );
    assert!(sc.c.helpers().is_empty());
    heir::thread::check_invariants().expect("invariants");
}
