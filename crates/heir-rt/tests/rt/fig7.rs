//! The PI-CV paper's Fig. 7 on real threads: the consumer's boost reaches the owner of
//! a PI mutex the producer (a helper) blocks on: consumer → PI-CV → producer →
//! PI mutex → "Mutex" thread. Pinned to one CPU; thread-recorded timestamps.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use heir::sys::now_ns;
use heir::{PiMutex, PrioQueue, Urgency};

use crate::common::*;

#[derive(Default)]
struct Times {
    cons_woken: AtomicU64,
    prod_signal: AtomicU64,
    mutex_unlock: AtomicU64,
    mutex_max_prio: AtomicU32,
    annoy_start: AtomicU64,
}

#[test]
fn boost_reaches_the_mutex_owner_through_the_producer() {
    let Some(rt) = rt_or_skip("fig7", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let q = Arc::new(PrioQueue::<u32>::new(4));
    let m = Arc::new(PiMutex::new(0u32));
    let tm = Arc::new(Times::default());
    let t0 = now_ns() + 30 * MS;
    let limit = t0 + 500 * MS;

    // "Mutex" (prio 5) locks M first and works 15 ms inside.
    let m_held = Arc::new(AtomicBool::new(false));
    let (mm, tmm, mh) = (m.clone(), tm.clone(), m_held.clone());
    let mutex_thread = spawn_fifo(cpu, 5, move || {
        heir::sys::sleep_until(t0);
        let mut g = mm.lock().expect("lock M");
        mh.store(true, Ordering::SeqCst);
        let start = thread_cpu_ns();
        let mut maxp = 0;
        while thread_cpu_ns() - start < 15 * MS && now_ns() < limit {
            maxp = maxp.max(my_prio());
        }
        *g += 1;
        tmm.mutex_max_prio.store(maxp, Ordering::SeqCst);
        tmm.mutex_unlock.store(now_ns(), Ordering::SeqCst);
        drop(g);
    });
    // Producer (prio 10): works 5 ms, then needs M, then pushes. It starts
    // once "Mutex" holds M: the 2 ms between their starts are not enough if
    // something outside the test holds the CPU across them (a host stealing
    // the virtual CPU) — the producer would then take M first.
    let (qp, mp, tp, ph) = (q.clone(), m.clone(), tm.clone(), m_held.clone());
    let (prod, prod_tid) = spawn_fifo_tid(cpu, 10, move || {
        heir::sys::sleep_until(t0 + 2 * MS);
        while !ph.load(Ordering::SeqCst) {
            assert!(now_ns() < limit, "\"Mutex\" never locked M");
            heir::sys::sleep_until(now_ns() + 100_000);
        }
        assert!(busy_cpu(5 * MS, limit));
        {
            let mut g = mp.lock().expect("producer locks M");
            *g += 1;
        }
        tp.prod_signal.store(now_ns(), Ordering::SeqCst);
        qp.push_until(1, Urgency::fixed(10), Some(limit))
            .expect("push");
    });
    q.add_producer(prod_tid).expect("helper");
    // Consumer (prio 30) waits for an item.
    let (qc, tc) = (q.clone(), tm.clone());
    let cons = spawn_fifo(cpu, 30, move || {
        heir::sys::sleep_until(t0 + MS);
        assert_eq!(qc.pop_until(Some(limit)).expect("pop"), Some(1));
        tc.cons_woken.store(now_ns(), Ordering::SeqCst);
    });
    // Annoyer (prio 20) wakes while "Mutex" holds M on the producer's behalf.
    let ta = tm.clone();
    let ann = spawn_fifo(cpu, 20, move || {
        heir::sys::sleep_until(t0 + 10 * MS);
        ta.annoy_start.store(now_ns(), Ordering::SeqCst);
        assert!(busy_cpu(5 * MS, limit));
    });
    for h in [mutex_thread, prod, cons, ann] {
        h.join().expect("thread");
    }
    heir::thread::check_invariants().expect("invariants");
    let g = |a: &AtomicU64| a.load(Ordering::SeqCst);
    // The mutex owner ran at the consumer's priority (applied by heir: the
    // kernel's own PI boost is not visible through sched_getattr).
    assert_eq!(tm.mutex_max_prio.load(Ordering::SeqCst), 30);
    // The annoyer waited until the chain unwound: M unlocked, item pushed,
    // consumer woken.
    assert!(g(&tm.annoy_start) > g(&tm.mutex_unlock));
    assert!(g(&tm.annoy_start) > g(&tm.prod_signal));
    assert!(g(&tm.annoy_start) > g(&tm.cons_woken));
    assert!(g(&tm.mutex_unlock) < g(&tm.prod_signal));
}

/// A contended `PiMutex` wait between equal priorities is not told to the
/// engine when it starts (a lazy wait: the kernel's PI futex does the
/// mutex's inheritance). When a condition-variable waiter later boosts the
/// helper that sleeps in that wait, the engine is told first, so the boost
/// walks on through the mutex to its owner: heir-rt applies it to the
/// owner with `sched_setattr` (the kernel's PI adds nothing heir-rt would
/// see there), and the engine records the helper blocked on the mutex.
#[test]
fn a_lazy_mutex_wait_is_told_to_the_engine_before_a_boost_walks_through_it() {
    let Some(rt) = rt_or_skip("fig7::lazy", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(0u32));
    let cv = Arc::new(heir::PiCondvar::new());
    let cm = Arc::new(PiMutex::new(false));
    // Owner (FIFO 10) holds M until told.
    let (held, go) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (om, oh, og) = (m.clone(), held.clone(), go.clone());
    let (owner, otid) = spawn_fifo_tid(cpu, 10, move || {
        let mut g = om.lock().expect("owner locks M");
        oh.store(true, Ordering::SeqCst);
        while !og.load(Ordering::SeqCst) && now_ns() < limit {
            heir::sys::sleep_until(now_ns() + 200_000);
        }
        *g += 1;
    });
    assert!(eventually(limit, || held.load(Ordering::SeqCst)));
    // Helper (FIFO 10, as the owner): blocks on M, then signals cv.
    let (hm, hcv, hcm) = (m.clone(), cv.clone(), cm.clone());
    let (helper, htid) = spawn_fifo_tid(cpu, 10, move || {
        let g = hm.lock().expect("helper locks M");
        drop(g);
        *hcm.lock().expect("helper locks cm") = true;
        hcv.signal().expect("signal");
    });
    cv.add_helper(htid).expect("helper");
    // The helper sleeps in FUTEX_LOCK_PI on M; nobody has looked at the
    // engine since (`/proc` only), so its wait may still be lazy.
    let asleep = |tid: i32| {
        let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
        s.rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next().map(|x| x == "S"))
            .unwrap_or(false)
    };
    assert!(eventually(limit, || asleep(htid)), "the helper blocks on M");
    assert_eq!(set_prio(otid), 10, "equal priorities: nothing to lend yet");
    // Waiter (FIFO 30) waits on cv: the boost goes to the helper and on
    // through M to the owner.
    let (wcv, wcm) = (cv.clone(), cm.clone());
    let waiter = spawn_fifo(cpu, 30, move || {
        let mut g = wcm.lock().expect("waiter locks cm");
        while !*g {
            wcv.wait_until(&mut g, limit).expect("wait");
            if now_ns() > limit {
                return false;
            }
        }
        true
    });
    assert!(
        eventually(limit, || set_prio(otid) == 30),
        "heir-rt lends the owner FIFO 30 through cv, the helper and M (sched_setattr prio {})",
        set_prio(otid)
    );
    let hi = heir::thread::info(htid).expect("helper registered");
    assert_eq!(hi.blocked_on, Some(heir_core::ObjId::from(m.raw().id())));
    assert_eq!(hi.effective, Urgency::fixed(30));
    assert_eq!(
        heir::thread::info(otid)
            .expect("owner registered")
            .effective,
        Urgency::fixed(30)
    );
    heir::thread::check_invariants().expect("invariants");
    go.store(true, Ordering::SeqCst);
    assert!(waiter.join().expect("waiter"), "signalled in time");
    helper.join().expect("helper");
    owner.join().expect("owner");
}

fn set_prio(tid: i32) -> u32 {
    heir::sys::sched_getattr(tid)
        .expect("sched_getattr")
        .sched_priority
}
