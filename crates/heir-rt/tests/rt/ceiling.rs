//! Immediate priority ceiling: lock raises at once, nested ceilings restore
//! to the outer one, unlock restores the base.

use heir::{CeilingMutex, Urgency};

use crate::common::*;

#[test]
fn nested_ceilings_raise_and_restore_exactly() {
    let Some(rt) = rt_or_skip("ceiling::nested", 10) else {
        return;
    };
    let seen = spawn_fifo(rt.cpu, 10, || {
        let outer = CeilingMutex::new(Urgency::fixed(40), 0u32);
        let inner = CeilingMutex::new(Urgency::fixed(50), 0u32);
        let mut seen = vec![my_prio()];
        let mut g1 = outer.lock().expect("outer");
        *g1 += 1;
        seen.push(my_prio());
        {
            let mut g2 = inner.lock().expect("inner");
            *g2 += 1;
            seen.push(my_prio());
        }
        seen.push(my_prio());
        drop(g1);
        seen.push(my_prio());
        heir::thread::check_invariants().expect("invariants");
        seen
    })
    .join()
    .expect("thread");
    assert_eq!(seen, vec![10, 40, 50, 40, 10]);
}

#[test]
fn other_thread_is_lifted_to_fifo_and_restored_to_other() {
    let Some(rt) = rt_or_skip("ceiling::other", 10) else {
        return;
    };
    let cpu = rt.cpu;
    let out = std::thread::spawn(move || {
        heir::sys::set_affinity(0, &[cpu]).expect("pin");
        heir::thread::set_sched(&heir::sched::other(3)).expect("nice 3");
        let m = CeilingMutex::new(Urgency::fixed(20), ());
        let me = heir::sys::gettid();
        let before = heir::sys::sched_getattr(me).expect("attr");
        let g = m.lock().expect("lock");
        let during = heir::sys::sched_getattr(me).expect("attr");
        drop(g);
        let after = heir::sys::sched_getattr(me).expect("attr");
        (before, during, after)
    })
    .join()
    .expect("thread");
    let (before, during, after) = out;
    assert_eq!(
        (before.sched_policy, before.sched_nice),
        (heir::sys::SCHED_OTHER, 3)
    );
    assert_eq!(
        (during.sched_policy, during.sched_priority),
        (heir::sys::SCHED_FIFO, 20)
    );
    assert_eq!(after, before, "base restored exactly");
}
