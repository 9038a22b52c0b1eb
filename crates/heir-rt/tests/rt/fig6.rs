//! The PI-CV paper's Fig. 6 on real threads: consumer (prio 30) waits on an empty
//! queue filled by a producer (prio 10); an annoyer (prio 20) wakes up while
//! the consumer waits. All pinned to one CPU; timestamps are recorded by the
//! threads themselves (CLOCK_MONOTONIC).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use heir::sys::now_ns;
use heir::{PrioQueue, Urgency};

use crate::common::*;

#[derive(Default)]
struct Times {
    cons_wait: AtomicU64,
    cons_woken: AtomicU64,
    cons_done: AtomicU64,
    prod_signal: AtomicU64,
    prod_prio_before_push: AtomicU32,
    annoy_start: AtomicU64,
    annoy_end: AtomicU64,
}

fn scenario(rt: &Rt, helpers: bool) -> Arc<Times> {
    let cpu = rt.cpu;
    let q = Arc::new(PrioQueue::<u32>::new(4));
    let tm = Arc::new(Times::default());
    let t0 = now_ns() + 30 * MS;
    let limit = t0 + 500 * MS;

    let (qp, tp) = (q.clone(), tm.clone());
    let (prod, prod_tid) = spawn_fifo_tid(cpu, 10, move || {
        heir::sys::sleep_until(t0 + MS);
        assert!(busy_cpu(30 * MS, limit), "producer work bounded");
        tp.prod_prio_before_push.store(my_prio(), Ordering::SeqCst);
        tp.prod_signal.store(now_ns(), Ordering::SeqCst);
        qp.push_until(7, Urgency::fixed(10), Some(limit))
            .expect("push");
    });
    if helpers {
        q.add_producer(prod_tid).expect("add producer");
    }
    let (qc, tc) = (q.clone(), tm.clone());
    let cons = spawn_fifo(cpu, 30, move || {
        heir::sys::sleep_until(t0);
        tc.cons_wait.store(now_ns(), Ordering::SeqCst);
        let item = qc.pop_until(Some(limit)).expect("pop");
        tc.cons_woken.store(now_ns(), Ordering::SeqCst);
        assert_eq!(item, Some(7));
        assert!(busy_cpu(5 * MS, limit));
        tc.cons_done.store(now_ns(), Ordering::SeqCst);
    });
    let ta = tm.clone();
    let ann = spawn_fifo(cpu, 20, move || {
        heir::sys::sleep_until(t0 + 10 * MS);
        ta.annoy_start.store(now_ns(), Ordering::SeqCst);
        assert!(busy_cpu(20 * MS, limit));
        ta.annoy_end.store(now_ns(), Ordering::SeqCst);
    });
    prod.join().expect("producer");
    cons.join().expect("consumer");
    ann.join().expect("annoyer");
    heir::thread::check_invariants().expect("invariants");
    tm
}

fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::SeqCst)
}

#[test]
fn with_helpers_the_annoyer_waits_for_the_signal() {
    let Some(rt) = rt_or_skip("fig6::with_helpers", 20) else {
        return;
    };
    let t = scenario(&rt, true);
    // The producer ran at the consumer's priority until it pushed.
    assert_eq!(t.prod_prio_before_push.load(Ordering::SeqCst), 30);
    assert!(get(&t.cons_wait) < get(&t.prod_signal));
    assert!(get(&t.prod_signal) < get(&t.cons_woken));
    // The annoyer did not run between the consumer's wait and the signal;
    // it starts only after the consumer is done.
    assert!(get(&t.annoy_start) > get(&t.prod_signal));
    assert!(get(&t.annoy_start) >= get(&t.cons_done));
}

#[test]
fn without_helpers_the_annoyer_preempts_the_producer() {
    let Some(rt) = rt_or_skip("fig6::without_helpers", 20) else {
        return;
    };
    let t = scenario(&rt, false);
    assert_eq!(t.prod_prio_before_push.load(Ordering::SeqCst), 10);
    // Priority inversion: the annoyer ran (start to end) while the consumer
    // was waiting for the producer's signal.
    assert!(get(&t.cons_wait) < get(&t.annoy_start));
    assert!(get(&t.annoy_end) < get(&t.prod_signal));
    assert!(get(&t.prod_signal) < get(&t.cons_woken));
}
