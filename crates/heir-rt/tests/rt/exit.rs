//! A thread exiting while boosted leaves nothing behind: it is dropped from
//! the registry and every helper set, and the engine stays consistent; a
//! thread that leaves explicitly gets its base attributes back.

use std::sync::Arc;

use heir::sys::now_ns;
use heir::{PiCondvar, PiMutex, WaitResult};

use crate::common::*;

#[test]
fn boosted_helper_exits_cleanly() {
    let Some(rt) = rt_or_skip("exit::boosted_helper", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let t0 = now_ns() + 30 * MS;
    let (helper, htid) = spawn_fifo_tid(cpu, 10, move || {
        heir::sys::sleep_until(t0);
        let until = now_ns() + 20 * MS;
        let mut maxp = 0;
        while now_ns() < until {
            maxp = maxp.max(my_prio());
            // SAFETY: no arguments.
            unsafe { libc::sched_yield() };
        }
        maxp
    });
    let c = Arc::new(PiCondvar::new());
    c.add_helper(htid).expect("helper");
    let cc = c.clone();
    let waiter = spawn_fifo(cpu, 30, move || {
        let m = PiMutex::new(());
        let mut g = m.lock().expect("lock");
        cc.wait_until(&mut g, t0 + 60 * MS).expect("wait")
    });
    // The helper was boosted, then exited while the waiter still waits.
    assert_eq!(helper.join().expect("helper"), 30);
    assert_eq!(
        heir::thread::info(htid),
        None,
        "exited helper dropped from the registry"
    );
    assert!(c.helpers().is_empty(), "and from the helper set");
    heir::thread::check_invariants().expect("invariants while the waiter waits");
    assert_eq!(waiter.join().expect("waiter"), WaitResult::TimedOut);
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn leave_restores_the_base_of_a_boosted_thread() {
    let Some(rt) = rt_or_skip("exit::leave", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (helper, htid) = spawn_fifo_tid(cpu, 10, move || {
        rx.recv().expect("go");
        let boosted = my_prio();
        heir::thread::unregister();
        let after = my_prio();
        done_tx.send(()).expect("done");
        (boosted, after)
    });
    let c = Arc::new(PiCondvar::new());
    c.add_helper(htid).expect("helper");
    let cc = c.clone();
    let waiter = spawn_fifo(cpu, 30, move || {
        let m = PiMutex::new(());
        let mut g = m.lock().expect("lock");
        cc.wait_until(&mut g, now_ns() + 2000 * MS).expect("wait")
    });
    // Let the waiter block, then let the helper look and leave.
    let deadline = now_ns() + 1000 * MS;
    while heir::thread::info(htid).map(|i| i.applied) != Some(heir::Urgency::fixed(30)) {
        assert!(now_ns() < deadline, "helper never boosted");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    tx.send(()).expect("go");
    done_rx.recv().expect("done");
    assert_eq!(helper.join().expect("helper"), (30, 10));
    assert!(c.helpers().is_empty());
    c.signal().expect("signal");
    assert_eq!(waiter.join().expect("waiter"), WaitResult::Woken);
    heir::thread::check_invariants().expect("invariants");
}
