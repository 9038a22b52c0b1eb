//! A deadline lent to a non-deadline thread: the kernel expresses it along
//! PI futexes (a deadline waiter on a `PiMutex` boosts the owner into the
//! deadline class, transitively), so heir-rt does not count it as
//! *unexpressible*; through a `Boost::User` condition variable nothing
//! expresses it, and that is counted and said.
//!
//! The deadline waiter is not pinned (a `SCHED_DEADLINE` thread must be
//! allowed on every CPU of its root domain), has a small reservation, and
//! returns itself to `SCHED_OTHER` while it runs; every other thread is
//! pinned to the test's CPU.

use std::sync::mpsc;
use std::sync::Arc;

use heir::sys::{self, now_ns};
use heir::{Boost, PiCondvar, PiMutex, Urgency, WaitResult};
use heir_core::ObjId;

use crate::common::*;

/// The kernel's effective priority of `tid` (field 18 of `stat`, PI
/// included): -101 in the deadline class, -1 - rt_priority for FIFO.
fn kernel_prio(tid: i32) -> i32 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    let rest = &s[s.rfind(')').expect("comm") + 1..];
    rest.split_whitespace()
        .nth(15)
        .expect("prio field")
        .parse()
        .expect("prio")
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

/// Spawns the deadline thread (unpinned, 0.2 ms every 10 ms, its own
/// change through the registry) that runs `f`, then returns itself to
/// `SCHED_OTHER`. `None` (after printing why) when admission refuses it.
fn spawn_deadline<T: Send + 'static>(
    test: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<std::thread::JoinHandle<Option<T>>> {
    let (ready_tx, ready) = mpsc::channel::<Result<(), heir::Error>>();
    let h = std::thread::spawn(move || {
        sys::set_affinity(0, &sys::allowed_cpus()).expect("every CPU");
        let dl = sys::SchedAttr {
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
        let r = f();
        heir::thread::set_sched(&heir::sched::other(0)).expect("back to SCHED_OTHER");
        Some(r)
    });
    match ready.recv().expect("report") {
        Ok(()) => Some(h),
        Err(e) if e.errno() == libc::EBUSY => {
            // Admission refused (other deadline work on the machine): not
            // this test's subject.
            eprintln!("{test}: SKIPPED: SCHED_DEADLINE refused: {e}");
            let _ = h.join();
            None
        }
        Err(e) => panic!("SCHED_DEADLINE: {e}"),
    }
}

#[test]
fn a_deadline_lent_along_pi_mutexes_is_the_kernels_and_not_counted() {
    let Some(rt) = rt_or_skip("deadline_lend::pi_mutex", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let (m1, m2) = (Arc::new(PiMutex::new(())), Arc::new(PiMutex::new(())));
    // O2 (FIFO 10) holds m2 until told; O1 (FIFO 20) holds m1 and blocks on
    // m2: the deadline waiter on m1 reaches O2 through two PI futexes.
    let (go2, rx2) = mpsc::channel::<()>();
    let (held_tx, held) = mpsc::channel::<()>();
    let m2o = m2.clone();
    let (o2, o2_tid) = spawn_fifo_tid(cpu, 10, move || {
        let g = m2o.lock_until(limit).expect("O2 locks m2");
        held_tx.send(()).expect("held");
        let _ = rx2.recv();
        drop(g);
    });
    held.recv().expect("O2 holds m2");
    let (m1o, m2o) = (m1.clone(), m2.clone());
    let (held_tx, held) = mpsc::channel::<()>();
    let (o1, o1_tid) = spawn_fifo_tid(cpu, 20, move || {
        let g1 = m1o.lock_until(limit).expect("O1 locks m1");
        held_tx.send(()).expect("held");
        let g2 = m2o.lock_until(limit).expect("O1 gets m2 after O2");
        drop(g2);
        drop(g1);
    });
    held.recv().expect("O1 holds m1");
    assert!(
        eventually(limit, || heir::thread::info(o1_tid)
            .and_then(|i| i.blocked_on)
            == Some(ObjId::from(m2.raw().id()))),
        "O1 blocks on m2"
    );
    let before = heir::thread::apply_stats();
    let m1w = m1.clone();
    let Some(w) = spawn_deadline("deadline_lend::pi_mutex", move || {
        m1w.lock_until(limit).map(|_| ()).is_ok()
    }) else {
        go2.send(()).expect("go");
        o1.join().expect("O1");
        o2.join().expect("O2");
        return;
    };
    // The kernel lends the waiter's deadline to O1 and on to O2.
    assert!(
        eventually(limit, || kernel_prio(o2_tid) == -101
            && kernel_prio(o1_tid) == -101),
        "O1 and O2 run in the deadline class (kernel prio {} and {})",
        kernel_prio(o1_tid),
        kernel_prio(o2_tid)
    );
    // The engine says the same (a deadline urgency), and heir-rt left it
    // to the kernel: nothing unexpressible, nothing to report.
    assert!(matches!(
        heir::thread::info(o2_tid).expect("O2 registered").effective,
        Urgency::Deadline { .. }
    ));
    let d = heir::thread::apply_stats().since(&before);
    assert_eq!(d.unexpressible, 0, "{d:?}");
    assert!(
        d.problems(|_| None).is_empty(),
        "{:?}",
        d.problems(|_| None)
    );
    go2.send(()).expect("go");
    assert_eq!(w.join().expect("waiter"), Some(true), "the waiter got m1");
    o1.join().expect("O1");
    o2.join().expect("O2");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_deadline_lent_through_a_user_boost_condvar_is_counted_and_said() {
    let Some(rt) = rt_or_skip("deadline_lend::user_condvar", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_boost(Boost::User).expect("condvar"));
    let (go, rx) = mpsc::channel::<()>();
    let (hm, hc) = (m.clone(), c.clone());
    let (h, htid) = spawn_fifo_tid(cpu, 10, move || {
        if rx.recv().is_ok() {
            *hm.lock().expect("lock") = true;
            hc.signal().expect("signal");
        }
    });
    c.helpers_add(htid).expect("helper");
    let before = heir::thread::apply_stats();
    let (wm, wc) = (m.clone(), c.clone());
    let Some(w) = spawn_deadline("deadline_lend::user_condvar", move || {
        let mut g = wm.lock().expect("lock");
        let mut r = WaitResult::Woken;
        while !*g && r == WaitResult::Woken {
            r = wc.wait_until(&mut g, limit).expect("wait");
        }
        r
    }) else {
        drop(go);
        h.join().expect("helper");
        return;
    };
    // The engine lends the helper the waiter's deadline; nothing can give
    // it to the kernel: the helper stays FIFO 10, and that is counted.
    assert!(
        eventually(limit, || matches!(
            heir::thread::info(htid).map(|i| i.effective),
            Some(Urgency::Deadline { .. })
        )),
        "the engine lends the helper a deadline"
    );
    assert_eq!(kernel_prio(htid), -11, "the helper stays SCHED_FIFO 10");
    let d = heir::thread::apply_stats().since(&before);
    assert_eq!(
        (d.unexpressible, d.last_unexpressible_tid),
        (1, htid),
        "{d:?}"
    );
    let said = d.problems(|t| (t == htid).then(|| "Helper".to_string()));
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("1 boost could not be expressed")
            && said[0].contains("condition variable")
            && said[0].contains("Helper, tid")
            && !said[0].contains("not implemented"),
        "{said:?}"
    );
    go.send(()).expect("go");
    assert_eq!(w.join().expect("waiter"), Some(WaitResult::Woken));
    h.join().expect("helper");
    heir::thread::check_invariants().expect("invariants");
}
