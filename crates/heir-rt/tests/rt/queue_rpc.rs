//! PrioQueue order and RPC inheritance.

use std::sync::Arc;

use heir::rpc::Endpoint;
use heir::sys::now_ns;
use heir::{PrioQueue, Urgency};

use crate::common::*;

#[test]
fn queue_pops_most_urgent_first_fifo_among_equals() {
    let q = PrioQueue::new(8);
    for (v, p) in [(1, 10), (2, 30), (3, 20), (4, 30), (5, 10)] {
        q.push_until(v, Urgency::fixed(p), None).expect("push");
    }
    let order: Vec<u32> = (0..5).map(|_| q.pop().expect("pop")).collect();
    assert_eq!(order, vec![2, 4, 3, 1, 5]);
    assert_eq!(
        q.pop_until(Some(now_ns())).expect("pop"),
        None,
        "empty: times out"
    );
}

#[test]
fn full_queue_push_times_out() {
    let q = PrioQueue::new(1);
    q.push_until(1u8, Urgency::fixed(1), None).expect("push");
    let r = q.push_until(2u8, Urgency::fixed(1), Some(now_ns() + MS));
    assert_eq!(r, Err(heir::Error::TimedOut));
    assert_eq!(q.len().expect("len"), 1);
}

fn rpc(rt: &Rt, pi_cv: bool) -> (u32, u32) {
    let ep = Arc::new(Endpoint::<u64, u32>::new(pi_cv));
    let limit = now_ns() + 2000 * MS;
    let e = ep.clone();
    let (server, stid) = spawn_fifo_tid(rt.cpu, 10, move || {
        let mut prio = 0;
        e.serve_until(Some(limit), |x| {
            prio = my_prio();
            (x * 2) as u32
        })
        .expect("serve");
        prio
    });
    ep.add_server(stid).expect("server");
    let e = ep.clone();
    let client = spawn_fifo(rt.cpu, 30, move || {
        let c = e.caller().expect("caller");
        e.call(&c, 21).expect("call")
    });
    let answer = client.join().expect("client");
    let server_prio = server.join().expect("server");
    heir::thread::check_invariants().expect("invariants");
    (answer, server_prio)
}

#[test]
fn rpc_server_inherits_the_callers_priority_with_pi_cv() {
    let Some(rt) = rt_or_skip("queue_rpc::rpc_pi_cv", 10) else {
        return;
    };
    assert_eq!(rpc(&rt, true), (42, 30));
}

#[test]
fn rpc_server_keeps_its_priority_without_pi_cv() {
    let Some(rt) = rt_or_skip("queue_rpc::rpc_no_pi_cv", 10) else {
        return;
    };
    assert_eq!(rpc(&rt, false), (42, 10));
}

/// `remove_server` undoes `add_server`: with PI-CV, the server stops being
/// a helper of every caller's reply condition (adding it again is refused
/// while it still is one); a thread that is no server is refused.
#[test]
fn rpc_remove_server_undoes_add_server() {
    let ep = Endpoint::<u64, u32>::new(true);
    let me = heir::thread::register().expect("register");
    ep.add_server(me).expect("server");
    let _c = ep.caller().expect("caller");
    assert!(
        matches!(
            ep.add_server(me),
            Err(heir::Error::Engine(
                heir_core::EngineError::HelperExists { .. }
            ))
        ),
        "a helper of the caller's reply condition already"
    );
    assert_eq!(ep.remove_server(me), Ok(()));
    assert_eq!(ep.remove_server(me), Err(heir::Error::NotServing));
    ep.add_server(me)
        .expect("a server again: no helper was left behind");
    assert_eq!(ep.remove_server(me), Ok(()));
}
