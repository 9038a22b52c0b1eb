//! A deadline lent to a non-deadline thread: the kernel expresses it along
//! PI futexes (a deadline waiter on a `PiMutex` boosts the owner into the
//! deadline class, transitively), so heir-rt does not count it as
//! *unexpressible*; through a `Lend::User` condition variable nothing
//! expresses it, and that is counted and said.
//!
//! And heir-rt never calls `sched_setattr` on a `SCHED_DEADLINE` thread
//! from another thread (demoting a blocked one leaked its admitted
//! bandwidth on this kernel): neither to restore its deadline base nor to
//! boost a thread whose registered base is stale.
//!
//! The deadline threads are not pinned (a `SCHED_DEADLINE` thread must be
//! allowed on every CPU of its root domain), has a small reservation, and
//! returns itself to `SCHED_OTHER` while it runs; every other thread is
//! pinned to the test's CPU.

use std::sync::mpsc;
use std::sync::Arc;

use heir::sys::{self, now_ns};
use heir::{Lend, PiCondvar, PiMutex, Urgency, WaitResult};
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

/// Spawns a deadline thread (unpinned, 0.2 ms every `period_ms` = its
/// relative deadline; its own change through the registry) that runs `f`,
/// then returns itself to `SCHED_OTHER`. `None` (after printing why) when
/// admission refuses it.
fn spawn_deadline<T: Send + 'static>(
    test: &str,
    period_ms: u64,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<std::thread::JoinHandle<Option<T>>> {
    let (ready_tx, ready) = mpsc::channel::<Result<(), heir::Error>>();
    let h = std::thread::spawn(move || {
        sys::set_affinity(0, &sys::allowed_cpus()).expect("every CPU");
        let dl = sys::SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_runtime: 200_000,
            sched_deadline: period_ms * MS,
            sched_period: period_ms * MS,
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
    let Some(w) = spawn_deadline("deadline_lend::pi_mutex", 10, move || {
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
    let c = Arc::new(PiCondvar::with_lend(Lend::User).expect("condvar"));
    let (go, rx) = mpsc::channel::<()>();
    let (hm, hc) = (m.clone(), c.clone());
    let (h, htid) = spawn_fifo_tid(cpu, 10, move || {
        if rx.recv().is_ok() {
            *hm.lock().expect("lock") = true;
            hc.signal().expect("signal");
        }
    });
    c.add_helper(htid).expect("helper");
    let before = heir::thread::apply_stats();
    let (wm, wc) = (m.clone(), c.clone());
    let Some(w) = spawn_deadline("deadline_lend::user_condvar", 10, move || {
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

#[test]
fn a_deadline_helpers_base_is_never_rewritten_from_another_thread() {
    let Some(_rt) = rt_or_skip("deadline_lend::no_foreign_restore", 20) else {
        return;
    };
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::User).expect("condvar"));
    // The helper: SCHED_DEADLINE by its own `set_sched` (its base), 20 ms.
    let (tid_tx, tid_rx) = mpsc::channel::<i32>();
    let (stop, stopped) = mpsc::channel::<()>();
    let Some(h) = spawn_deadline("deadline_lend::no_foreign_restore", 20, move || {
        tid_tx.send(sys::gettid()).expect("tid");
        let _ = stopped.recv();
    }) else {
        return;
    };
    let htid = tid_rx.recv().expect("helper tid");
    let base = sys::sched_getattr(htid).expect("sched_getattr");
    c.add_helper(htid).expect("helper");
    let before = heir::thread::apply_stats();
    // A more urgent deadline waiter (10 ms) lends the helper its deadline
    // (nothing can express it: counted) and times out: the de-boost, made
    // by the waiter's thread, is the helper's own base — not written.
    let (wm, wc) = (m.clone(), c.clone());
    let Some(w) = spawn_deadline("deadline_lend::no_foreign_restore", 10, move || {
        let mut g = wm.lock().expect("lock");
        let r = wc.wait_until(&mut g, now_ns() + 30 * MS).expect("wait");
        let after = heir::thread::apply_stats();
        (r, after)
    }) else {
        drop(stop);
        h.join().expect("helper");
        return;
    };
    let (r, after) = w.join().expect("waiter").expect("waiter ran");
    assert_eq!(r, WaitResult::TimedOut);
    let d = after.since(&before);
    assert_eq!(d.setattr_calls, 0, "no sched_setattr on the helper: {d:?}");
    assert_eq!(
        (d.unexpressible, d.last_unexpressible_tid),
        (1, htid),
        "{d:?}"
    );
    assert_eq!(
        sys::sched_getattr(htid).expect("sched_getattr"),
        base,
        "the helper keeps its own deadline attributes"
    );
    assert_eq!(
        heir::thread::info(htid).expect("registered").applied,
        heir::thread::info(htid).expect("registered").base_urgency
    );
    drop(stop);
    assert!(limit > now_ns(), "bounded");
    h.join().expect("helper");
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_thread_that_made_itself_deadline_behind_heirs_back_is_not_demoted() {
    let Some(rt) = rt_or_skip("deadline_lend::stale_base", 20) else {
        return;
    };
    let limit = now_ns() + 5_000 * MS;
    let m = Arc::new(PiMutex::new(false));
    let c = Arc::new(PiCondvar::with_lend(Lend::User).expect("condvar"));
    // The helper joins heir with its current (non-deadline) attributes,
    // then makes itself SCHED_DEADLINE with a raw sched_setattr — not
    // through `thread::set_sched` — so the registry's base is stale.
    let (ready_tx, ready) = mpsc::channel::<Result<i32, i32>>();
    let (go, rx) = mpsc::channel::<()>();
    let (hm, hc) = (m.clone(), c.clone());
    let h = std::thread::spawn(move || {
        sys::set_affinity(0, &sys::allowed_cpus()).expect("every CPU");
        heir::thread::register().expect("join");
        let me = sys::gettid();
        let dl = heir::deadline::attr(200, 20_000, 20_000);
        if let Err(e) = sys::sched_setattr(me, &dl) {
            ready_tx.send(Err(e)).expect("report");
            return;
        }
        ready_tx.send(Ok(me)).expect("report");
        if rx.recv().is_ok() {
            *hm.lock().expect("lock") = true;
            hc.signal().expect("signal");
        }
        // Back to SCHED_OTHER by itself, running; then out of the registry.
        let _ = heir::deadline::leave_class(&heir::sched::other(0));
        heir::thread::unregister();
    });
    let htid = match ready.recv().expect("report") {
        Ok(t) => t,
        Err(e) if e == libc::EBUSY => {
            eprintln!("deadline_lend::stale_base: SKIPPED: SCHED_DEADLINE refused (EBUSY)");
            h.join().expect("helper");
            return;
        }
        Err(e) => panic!("SCHED_DEADLINE: {}", sys::errno_name(e)),
    };
    c.add_helper(htid).expect("helper");
    let before = heir::thread::apply_stats();
    // A FIFO 30 waiter: the engine lends the helper FIFO 30, which heir-rt
    // would write with sched_setattr from the waiter's thread — a deadline
    // thread, asleep, demoted to SCHED_FIFO: refused.
    let (wm, wc) = (m.clone(), c.clone());
    let (w, _) = spawn_fifo_tid(rt.cpu, 30, move || {
        let mut g = wm.lock().expect("lock");
        let mut r = WaitResult::Woken;
        while !*g && r == WaitResult::Woken {
            r = wc.wait_until(&mut g, limit).expect("wait");
        }
        r
    });
    assert!(
        eventually(limit, || heir::thread::info(htid).map(|i| i.effective)
            == Some(Urgency::fixed(30))),
        "the engine lends the helper FIFO 30"
    );
    assert_eq!(
        sys::sched_getattr(htid)
            .expect("sched_getattr")
            .sched_policy,
        sys::SCHED_DEADLINE,
        "the helper is still SCHED_DEADLINE"
    );
    let d = heir::thread::apply_stats().since(&before);
    assert_eq!(
        (d.unexpressible, d.last_unexpressible_tid),
        (1, htid),
        "{d:?}"
    );
    go.send(()).expect("go");
    assert_eq!(w.join().expect("waiter"), WaitResult::Woken);
    h.join().expect("helper");
}
