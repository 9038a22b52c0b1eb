//! The textbook condition-variable pattern on real threads: the consumer
//! waits on `cv` holding `m` while the producer, a helper of `cv`, is blocked
//! on `m` to signal. The wait gives `m` up as it starts waiting, so this is
//! no deadlock (it returned EDEADLK every time when the engine saw the wait
//! before the release): the producer gets `m`, runs at the consumer's
//! priority until it signals, and the consumer's wait returns.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use heir::sys::now_ns;
use heir::{PiCondvar, PiMutex};
use heir_core::ObjId;

use crate::common::*;

#[test]
fn wait_releases_the_mutex_a_blocked_helper_needs() {
    let Some(rt) = rt_or_skip("textbook_pattern", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let m = Arc::new(PiMutex::new(false));
    let cv = Arc::new(PiCondvar::new());
    let limit = now_ns() + 5_000 * MS;
    let producer_prio = Arc::new(AtomicU32::new(0));

    // Producer (prio 10), helper of cv: locks m (blocks: the consumer holds
    // it), then signals under m.
    let (mp, cvp, pp) = (m.clone(), cv.clone(), producer_prio.clone());
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (prod, prod_tid) = spawn_fifo_tid(cpu, 10, move || {
        go_rx.recv().expect("go");
        let mut g = mp.lock().expect("producer locks m");
        pp.store(my_prio(), Ordering::SeqCst);
        *g = true;
        cvp.signal().expect("signal");
        drop(g);
    });
    cv.add_helper(prod_tid).expect("add_helper");

    // Consumer (prio 30): holds m until the engine shows the producer
    // blocked on it, then waits on cv with m.
    let (mc, cvc) = (m.clone(), cv.clone());
    let cons = spawn_fifo(cpu, 30, move || {
        let mut g = mc.lock().expect("consumer locks m");
        go_tx.send(()).expect("go");
        let blocked = Some(ObjId::from(mc.raw().id()));
        while heir::thread::info(prod_tid).and_then(|i| i.blocked_on) != blocked {
            assert!(now_ns() < limit, "the producer never blocked on m");
            heir::sys::sleep_until(now_ns() + MS);
        }
        while !*g {
            cvc.wait(&mut g)
                .expect("the wait must not report a deadlock");
            assert!(now_ns() < limit, "not signalled in time");
        }
    });
    cons.join().expect("consumer");
    prod.join().expect("producer");
    // Between the consumer's wait and its signal the producer held m and
    // ran at the consumer's priority, lent through cv.
    assert_eq!(producer_prio.load(Ordering::SeqCst), 30);
    heir::thread::check_invariants().expect("invariants");
}
