//! A chain the kernel cannot follow alone: H blocks on PI mutex M owned by X,
//! X waits on condition C whose helper is Y. Y must run at H's priority (the
//! engine carries the boost past the mutex owner into the helper).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use heir::sys::now_ns;
use heir::{PiCondvar, PiMutex, WaitResult};

use crate::common::*;

#[test]
fn mutex_owner_waiting_on_a_condvar_passes_the_boost_to_its_helper() {
    let Some(rt) = rt_or_skip("chain", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let m = Arc::new(PiMutex::new(()));
    let cm = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::new());
    let y_prio = Arc::new(AtomicU32::new(0));
    let y_signal = Arc::new(AtomicU64::new(0));
    let h_locked = Arc::new(AtomicU64::new(0));
    let annoy = Arc::new(AtomicU64::new(0));
    let t0 = now_ns() + 30 * MS;
    let limit = t0 + 500 * MS;

    // X (prio 10): holds M while waiting on C.
    let (xm, xcm, xc) = (m.clone(), cm.clone(), c.clone());
    let x = spawn_fifo(cpu, 10, move || {
        heir::sys::sleep_until(t0);
        let _g = xm.lock().expect("X locks M");
        let mut done = xcm.lock().expect("X locks cm");
        while !*done {
            assert_eq!(
                xc.wait_until(&mut done, limit).expect("wait"),
                WaitResult::Woken
            );
        }
    });
    // Y (prio 3): the helper of C; works 10 ms, then signals.
    let (ycm, yc, yp, ys) = (cm.clone(), c.clone(), y_prio.clone(), y_signal.clone());
    let (y, y_tid) = spawn_fifo_tid(cpu, 3, move || {
        heir::sys::sleep_until(t0 + 2 * MS);
        let start = thread_cpu_ns();
        let mut maxp = 0;
        while thread_cpu_ns() - start < 10 * MS && now_ns() < limit {
            maxp = maxp.max(my_prio());
        }
        yp.store(maxp, Ordering::SeqCst);
        let mut done = ycm.lock().expect("Y locks cm");
        *done = true;
        ys.store(now_ns(), Ordering::SeqCst);
        yc.signal().expect("signal");
    });
    c.add_helper(y_tid).expect("helper");
    // H (prio 30): blocks on M at t0 + 1 ms — once X holds M and waits on
    // C (Y then runs at X's priority, 10). The file-like timing alone is
    // not enough: if something outside the test holds the CPU across t0 and
    // t0 + 1 ms (a host stealing the virtual CPU), H would run before X and
    // take M first.
    let (hm, hl) = (m.clone(), h_locked.clone());
    let h = spawn_fifo(cpu, 30, move || {
        heir::sys::sleep_until(t0 + MS);
        while heir::thread::info(y_tid).map(|i| i.applied) != Some(heir::Urgency::fixed(10)) {
            assert!(now_ns() < limit, "X never waited on C holding M");
            heir::sys::sleep_until(now_ns() + 100_000);
        }
        let _g = hm.lock().expect("H locks M");
        hl.store(now_ns(), Ordering::SeqCst);
    });
    // Annoyer (prio 20) at t0 + 4 ms.
    let a = annoy.clone();
    let ann = spawn_fifo(cpu, 20, move || {
        heir::sys::sleep_until(t0 + 4 * MS);
        a.store(now_ns(), Ordering::SeqCst);
        assert!(busy_cpu(2 * MS, limit));
    });
    for t in [x, y, h, ann] {
        t.join().expect("thread");
    }
    heir::thread::check_invariants().expect("invariants");
    assert_eq!(
        y_prio.load(Ordering::SeqCst),
        30,
        "Y inherited H's priority"
    );
    let g = |a: &AtomicU64| a.load(Ordering::SeqCst);
    assert!(g(&annoy) > g(&y_signal));
    assert!(g(&annoy) > g(&h_locked));
}
