//! A passive server (`SCHED_IDLE`) of a `heir::donate::Endpoint` runs on
//! lent time only: while a caller waits it runs at the caller's priority
//! (above a SCHED_FIFO hog on its CPU); when the call times out it is left
//! mid-request, idle again, and makes no progress under the hog; a later
//! caller finds it busy and helps it finish, then is served.
//!
//! Asserted: the outcomes (timed out, served, in that order), the kernel
//! priority in each phase, and that no work is done in the phase without a
//! lender — never how long anything took.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use heir::donate::Endpoint;
use heir::sys::{self, now_ns};

use crate::common::*;
use crate::donation::{quit, server};

/// What the director saw, asserted by the test thread.
#[derive(Debug)]
struct Seen {
    first: Result<u32, heir::Error>,
    prio_lent: i32,
    progress_lent: u64,
    prio_unlent: (i32, u32),
    progress_unlent: u64,
    prio_helped: i32,
    second: Result<u32, heir::Error>,
    progress_end: u64,
}

#[test]
fn a_timed_out_call_leaves_the_passive_server_mid_request_and_a_later_caller_helps_it_finish() {
    let Some(rt) = rt_or_skip("donation_abort::passive", 30) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 8_000 * MS;
    let ep = Arc::new(Endpoint::<u32, u32>::new());
    let progress = Arc::new(AtomicU64::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    // Request x: x ms of CPU work in 100 µs steps, each counted.
    let (p, o) = (progress.clone(), order.clone());
    let (hs, stid) = server(cpu, 0, ep.clone(), limit, move |x| {
        for _ in 0..x * 10 {
            if !busy_cpu(100_000, limit) {
                break;
            }
            p.fetch_add(1, Ordering::Relaxed);
            // Boosted to its caller's own FIFO priority, the server keeps
            // the CPU from that caller when its timeout fires (FIFO among
            // equals) unless it yields: the abort takes effect when the
            // caller runs.
            sys::sched_yield();
        }
        o.lock().expect("order").push(x);
        x
    });
    assert_eq!(ep.servers(), vec![(stid, true)]);
    assert_eq!(kernel_policy(stid), sys::SCHED_IDLE, "passive: SCHED_IDLE");
    let (e, pr) = (ep.clone(), progress.clone());
    // The director (FIFO 50) sleeps between its observations; it starts
    // every other thread (the test thread, FIFO 1, would not run under the
    // hog).
    let director = spawn_fifo(cpu, 50, move || {
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        // A FIFO-10 hog keeps the CPU busy, bounded by `limit`.
        let hog = spawn_fifo(cpu, 10, move || {
            while !st.load(Ordering::Relaxed) && now_ns() < limit {
                std::hint::spin_loop();
            }
        });
        let e1 = e.clone();
        let a = spawn_fifo(cpu, 20, move || e1.call_until(30, Some(now_ns() + 20 * MS)));
        sys::sleep_until(now_ns() + 5 * MS);
        let prio_lent = kernel_prio(stid);
        let first = a.join().expect("first caller");
        let progress_lent = pr.load(Ordering::Relaxed);
        let prio_unlent = (kernel_prio(stid), kernel_policy(stid));
        sys::sleep_until(now_ns() + 50 * MS);
        let progress_unlent = pr.load(Ordering::Relaxed) - progress_lent;
        let e2 = e.clone();
        let b = spawn_fifo(cpu, 30, move || e2.call_until(1, Some(limit)));
        sys::sleep_until(now_ns() + 2 * MS);
        let prio_helped = kernel_prio(stid);
        let second = b.join().expect("second caller");
        stop.store(true, Ordering::Relaxed);
        hog.join().expect("hog");
        Seen {
            first,
            prio_lent,
            progress_lent,
            prio_unlent,
            progress_unlent,
            prio_helped,
            second,
            progress_end: pr.load(Ordering::Relaxed),
        }
    });
    let seen = director.join().expect("director");
    assert_eq!(seen.first, Err(heir::Error::TimedOut), "{seen:?}");
    assert_eq!(
        seen.prio_lent, -21,
        "lent the first caller's FIFO 20: {seen:?}"
    );
    assert!(seen.progress_lent > 0, "it ran while lent: {seen:?}");
    assert!(seen.progress_lent < 300, "and did not finish: {seen:?}");
    assert_eq!(
        seen.prio_unlent,
        (20, sys::SCHED_IDLE),
        "back to SCHED_IDLE (nice 0) once the call aborted: {seen:?}"
    );
    assert_eq!(
        seen.progress_unlent, 0,
        "no progress under the hog without a lender: {seen:?}"
    );
    assert_eq!(
        seen.prio_helped, -31,
        "the second caller helps the busy server: {seen:?}"
    );
    assert_eq!(seen.second, Ok(1), "then is served: {seen:?}");
    assert_eq!(
        *order.lock().expect("order"),
        vec![30, 1],
        "the aborted request was finished first"
    );
    assert_eq!(
        seen.progress_end, 310,
        "all of both requests' work: {seen:?}"
    );
    quit(&ep, vec![hs]);
}

/// A server that takes a request after its call's deadline never gets it,
/// even while the timed-out caller has not run yet to withdraw it: the
/// caller (FIFO 10) times out at 10 ms under a FIFO 20 hog (5..50 ms), the
/// server (FIFO 40) calls `receive` at 30 ms. Before, the server received
/// and ran the request and the caller then got `TimedOut` (or the reply).
#[test]
fn a_request_whose_deadline_passed_is_never_received() {
    let Some(rt) = rt_or_skip("donation_abort::expired", 30) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 8_000 * MS;
    let ep = Arc::new(Endpoint::<u32, u32>::new());
    let t0 = now_ns() + 20 * MS;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let e = ep.clone();
    let srv = spawn_fifo(cpu, 40, move || {
        e.add_server(false).expect("join");
        ready_tx.send(()).expect("ready");
        sys::sleep_until(t0 + 30 * MS);
        let got = e.receive_until(Some(t0 + 60 * MS));
        let taken_at = now_ns();
        if matches!(got, Ok(Some(_))) {
            let _ = e.reply(0);
        }
        let _ = e.remove_server();
        (got, taken_at)
    });
    ready_rx.recv().expect("server ready");
    let hog = spawn_fifo(cpu, 20, move || {
        sys::sleep_until(t0 + 5 * MS);
        while now_ns() < (t0 + 50 * MS).min(limit) {
            std::hint::spin_loop();
        }
    });
    let e = ep.clone();
    let caller = spawn_fifo(cpu, 10, move || {
        sys::sleep_until(t0);
        e.call_until(7, Some(t0 + 10 * MS))
    });
    let called = caller.join().expect("caller");
    hog.join().expect("hog");
    let (got, taken_at) = srv.join().expect("server");
    assert_eq!(called, Err(heir::Error::TimedOut));
    assert!(
        matches!(got, Ok(None)),
        "the server got {got:?} at {} ms, after the call's deadline (10 ms)",
        (taken_at as i64 - t0 as i64) / MS as i64
    );
    assert!(ep.is_quiet(), "nothing left in flight");
}
