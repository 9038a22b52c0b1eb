//! `heir::donate::Endpoint` (NOVA donation on real threads): a caller sleeps in
//! `FUTEX_LOCK_PI` on its request's word, which names the thread serving
//! it, and the *kernel* boosts exactly that thread — read from `/proc`
//! (PI included), while `sched_getattr` stays at the server's base.
//! Donation, transitivity (nested call, PI mutex), helping, a deadline
//! caller, and a cycle the kernel refuses (named as a livelock).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use heir::donate::Endpoint;
use heir::sys::{self, now_ns};
use heir::{PiMutex, Urgency};

use crate::common::*;

/// The request that makes a test server reply and exit.
pub const QUIT: u32 = u32::MAX;

/// A server of `ep` (SCHED_FIFO `prio`, or passive: `prio` 0) pinned to
/// `cpu`, answering `handler(x)` until [`QUIT`] or `limit`; returns once it
/// has joined, with its tid.
pub fn server(
    cpu: u32,
    prio: u8,
    ep: Arc<Endpoint<u32, u32>>,
    limit: u64,
    mut handler: impl FnMut(u32) -> u32 + Send + 'static,
) -> (JoinHandle<()>, i32) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        sys::set_affinity(0, &[cpu]).expect("pin");
        if prio > 0 {
            heir::thread::set_sched(&heir::sched::fifo(prio)).expect("SCHED_FIFO");
        }
        ep.add_server(prio == 0).expect("join");
        tx.send(heir::thread::current_tid()).expect("tid");
        loop {
            let x = match ep.receive_until(Some(limit)) {
                Ok(Some(x)) => x,
                other => {
                    eprintln!("server {}: receive: {other:?}", sys::gettid());
                    break;
                }
            };
            let quit = x == QUIT;
            let r = if quit { 0 } else { handler(x) };
            ep.reply(r).expect("reply");
            if quit {
                break;
            }
        }
    });
    let tid = rx.recv().expect("server tid");
    (h, tid)
}

/// Sends [`QUIT`] to `n` servers of `ep` and joins them.
pub fn quit(ep: &Endpoint<u32, u32>, hs: Vec<JoinHandle<()>>) {
    for _ in 0..hs.len() {
        ep.call_until(QUIT, Some(now_ns() + 2_000 * MS))
            .expect("quit");
    }
    for h in hs {
        h.join().expect("server");
    }
}

/// The `sched_priority` set for `tid` (never the kernel's PI boost).
fn set_prio(tid: i32) -> u32 {
    sys::sched_getattr(tid)
        .expect("sched_getattr")
        .sched_priority
}

#[test]
fn the_kernel_boosts_exactly_the_serving_thread() {
    let Some(rt) = rt_or_skip("donation::exact", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let ep = Arc::new(Endpoint::<u32, u32>::new());
    let go = Arc::new(AtomicBool::new(false));
    let serving = Arc::new(AtomicI32::new(0));
    let mut hs = Vec::new();
    let mut tids = Vec::new();
    for _ in 0..2 {
        let (g, s) = (go.clone(), serving.clone());
        let (h, tid) = server(cpu, 10, ep.clone(), limit, move |x| {
            s.store(sys::gettid(), Ordering::Release);
            wait_flag(&g, limit);
            x + 1
        });
        hs.push(h);
        tids.push(tid);
    }
    assert_eq!(ep.servers().len(), 2);
    let e = ep.clone();
    let caller = spawn_fifo(cpu, 30, move || e.call(7));
    assert!(eventually(limit, || serving.load(Ordering::Acquire) != 0));
    let s = serving.load(Ordering::Acquire);
    let other = if s == tids[0] { tids[1] } else { tids[0] };
    assert!(
        eventually(limit, || kernel_prio(s) == -31),
        "the serving thread runs at the caller's FIFO 30 (kernel prio {})",
        kernel_prio(s)
    );
    assert_eq!(kernel_prio(other), -11, "the other server is not boosted");
    assert_eq!(set_prio(s), 10, "no sched_setattr: the kernel boosts it");
    go.store(true, Ordering::Release);
    assert_eq!(caller.join().expect("caller"), Ok(8));
    assert!(
        eventually(limit, || kernel_prio(s) == -11),
        "the reply ends the boost"
    );
    quit(&ep, hs);
}

#[test]
fn the_boost_goes_on_through_a_nested_call_and_a_pi_mutex() {
    let Some(rt) = rt_or_skip("donation::transitive", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let outer = Arc::new(Endpoint::<u32, u32>::new());
    let inner = Arc::new(Endpoint::<u32, u32>::new());
    let m = Arc::new(PiMutex::new(0u32));
    let (go_inner, go_owner) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // The mutex's owner (FIFO 5) holds it until told.
    let held = Arc::new(AtomicBool::new(false));
    let (om, oh, og) = (m.clone(), held.clone(), go_owner.clone());
    let (owner, otid) = spawn_fifo_tid(cpu, 5, move || {
        let mut g = om.lock().expect("lock");
        oh.store(true, Ordering::Release);
        wait_flag(&og, limit);
        *g += 1;
    });
    assert!(eventually(limit, || held.load(Ordering::Acquire)));
    // Inner server (FIFO 5): waits until told.
    let gi = go_inner.clone();
    let (hi, itid) = server(cpu, 5, inner.clone(), limit, move |x| {
        wait_flag(&gi, limit);
        x * 2
    });
    // Outer server (FIFO 10): calls the inner endpoint, then takes the mutex.
    let (inn, mm) = (inner.clone(), m.clone());
    let (ho, stid) = server(cpu, 10, outer.clone(), limit, move |x| {
        let y = inn.call(x).expect("nested call");
        let g = mm.lock().expect("lock");
        y + *g
    });
    let e = outer.clone();
    let caller = spawn_fifo(cpu, 30, move || e.call(5));
    assert!(
        eventually(limit, || kernel_prio(itid) == -31),
        "the inner server runs at FIFO 30 through the nested call (kernel prio {})",
        kernel_prio(itid)
    );
    assert_eq!(kernel_prio(stid), -31, "and so does the outer one");
    assert_eq!(kernel_prio(otid), -6, "the mutex owner is not involved yet");
    go_inner.store(true, Ordering::Release);
    assert!(
        eventually(limit, || kernel_prio(otid) == -31),
        "the outer server blocked on the PI mutex: its owner runs at FIFO 30 (kernel prio {})",
        kernel_prio(otid)
    );
    // heir's engine records the contention too, and the donation through
    // the calls (their waits go through the engine): it lends the owner
    // the caller's FIFO 30 by `sched_setattr` as well.
    assert_eq!(set_prio(otid), 30);
    assert!(eventually(limit, || kernel_prio(itid) == -6), "inner done");
    go_owner.store(true, Ordering::Release);
    assert_eq!(caller.join().expect("caller"), Ok(11));
    owner.join().expect("owner");
    assert!(eventually(limit, || kernel_prio(stid) == -11));
    quit(&outer, vec![ho]);
    quit(&inner, vec![hi]);
}

#[test]
fn a_more_urgent_caller_helps_the_busy_server_then_is_served() {
    let Some(rt) = rt_or_skip("donation::helping", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let ep = Arc::new(Endpoint::<u32, u32>::new());
    let go = Arc::new(AtomicBool::new(false));
    let order = Arc::new(Mutex::new(Vec::new()));
    let (g, o) = (go.clone(), order.clone());
    let (hs, stid) = server(cpu, 10, ep.clone(), limit, move |x| {
        o.lock().expect("order").push(x);
        if x == 1 {
            wait_flag(&g, limit);
        }
        x + 100
    });
    let e = ep.clone();
    let low = spawn_fifo(cpu, 20, move || e.call(1));
    assert!(
        eventually(limit, || kernel_prio(stid) == -21),
        "donation from the FIFO-20 caller"
    );
    let e = ep.clone();
    let high = spawn_fifo(cpu, 30, move || e.call(2));
    assert!(
        eventually(limit, || kernel_prio(stid) == -31),
        "the FIFO-30 caller finds the server busy and helps it (kernel prio {})",
        kernel_prio(stid)
    );
    assert_eq!(*order.lock().expect("order"), vec![1], "still serving 1");
    go.store(true, Ordering::Release);
    assert_eq!(high.join().expect("high"), Ok(102));
    assert_eq!(low.join().expect("low"), Ok(101));
    assert_eq!(*order.lock().expect("order"), vec![1, 2]);
    assert!(eventually(limit, || kernel_prio(stid) == -11));
    quit(&ep, vec![hs]);
}

#[test]
fn a_deadline_caller_puts_the_server_in_the_deadline_class() {
    let Some(rt) = rt_or_skip("donation::deadline", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let ep = Arc::new(Endpoint::<u32, u32>::new());
    let go = Arc::new(AtomicBool::new(false));
    let g = go.clone();
    let (hs, stid) = server(cpu, 10, ep.clone(), limit, move |x| {
        wait_flag(&g, limit);
        x + 1
    });
    let (ready_tx, ready) = std::sync::mpsc::channel::<Result<(), heir::Error>>();
    let e = ep.clone();
    // Not pinned: a SCHED_DEADLINE thread must be allowed on every CPU of
    // its root domain. It restores its own policy after the call (never
    // another thread's while blocked).
    let caller = std::thread::spawn(move || {
        sys::set_affinity(0, &sys::allowed_cpus()).expect("every CPU");
        let dl = sys::SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_runtime: 200_000,
            sched_deadline: 10 * MS,
            sched_period: 10 * MS,
            ..Default::default()
        };
        if let Err(err) = heir::thread::set_sched(&dl) {
            ready_tx.send(Err(err)).expect("report");
            return None;
        }
        ready_tx.send(Ok(())).expect("report");
        let r = e.call(41);
        heir::thread::set_sched(&heir::sched::other(0)).expect("back to SCHED_OTHER");
        Some(r)
    });
    match ready.recv().expect("report") {
        Ok(()) => {}
        Err(err) if err.errno() == libc::EBUSY => {
            eprintln!("donation::deadline: SKIPPED: SCHED_DEADLINE refused: {err}");
            caller.join().expect("caller");
            quit(&ep, vec![hs]);
            return;
        }
        Err(err) => panic!("SCHED_DEADLINE: {err}"),
    }
    assert!(
        eventually(limit, || kernel_prio(stid) == -101),
        "the FIFO server runs in the deadline class (kernel prio {})",
        kernel_prio(stid)
    );
    assert_eq!(set_prio(stid), 10, "heir-rt did not (and could not) set it");
    go.store(true, Ordering::Release);
    assert_eq!(caller.join().expect("caller"), Some(Ok(42)));
    assert!(eventually(limit, || kernel_prio(stid) == -11));
    quit(&ep, vec![hs]);
}

#[test]
fn servers_calling_each_other_are_reported_as_a_livelock_with_the_cycle() {
    let Some(rt) = rt_or_skip("donation::cycle", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let y = Arc::new(Endpoint::<u32, u32>::new());
    let z = Arc::new(Endpoint::<u32, u32>::new());
    let seen = Arc::new(Mutex::new(None));
    // Y serves by calling Z; Z serves by calling Y (the NOVA paper's Fig. 7).
    let zc = z.clone();
    let (hy, ytid) = server(cpu, 10, y.clone(), limit, move |x| {
        zc.call_until(x, Some(limit)).expect("Y's call to Z")
    });
    let (yc, s) = (y.clone(), seen.clone());
    let (hz, ztid) = server(cpu, 10, z.clone(), limit, move |x| {
        let r = yc.call_until(x, Some(limit));
        *s.lock().expect("seen") = Some(r.clone());
        r.unwrap_or(1000)
    });
    let e = y.clone();
    let c = spawn_fifo(cpu, 30, move || e.call(1));
    assert_eq!(
        c.join().expect("client"),
        Ok(1000),
        "Z's refused call did not block Y"
    );
    let got = seen.lock().expect("seen").clone();
    match got {
        Some(Err(heir::Error::CallCycle { tids, livelock })) => {
            assert_eq!(tids, vec![ztid, ytid, ztid], "the cycle, named");
            assert!(livelock, "Z helps busy Y: a helping edge");
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert_eq!(
        heir::Error::CallCycle {
            tids: vec![],
            livelock: true
        }
        .errno(),
        libc::EDEADLK
    );
    quit(&y, vec![hy]);
    quit(&z, vec![hz]);
}

/// Donation goes through the engine like every other wait: while Y serves
/// the client's request by calling Z, the engine has the client (FIFO 30)
/// lending to Y and Y lending to Z, so Z's engine urgency is 30; Z's call
/// back to Y would close a cycle, and the engine refuses it before the
/// kernel sees it — the cycle named (Z, Y, Z), Z's urgency and the
/// engine's invariants unchanged, nothing left blocked.
#[test]
fn a_donation_cycle_is_refused_by_the_engine_with_the_state_unchanged() {
    let Some(rt) = rt_or_skip("donation::engine_cycle", 20) else {
        return;
    };
    let cpu = rt.cpu;
    let limit = now_ns() + 5_000 * MS;
    let y = Arc::new(Endpoint::<u32, u32>::new());
    let z = Arc::new(Endpoint::<u32, u32>::new());
    type Seen = Option<(
        Urgency,
        Option<Urgency>,
        Result<u32, heir::Error>,
        Urgency,
        Result<(), heir::Error>,
    )>;
    let seen: Arc<Mutex<Seen>> = Arc::new(Mutex::new(None));
    let zc = z.clone();
    let (hy, ytid) = server(cpu, 10, y.clone(), limit, move |x| {
        zc.call_until(x, Some(limit)).expect("Y's call to Z")
    });
    let (yc, s) = (y.clone(), seen.clone());
    let (hz, ztid) = server(cpu, 10, z.clone(), limit, move |x| {
        let before = heir::thread::current_urgency().expect("urgency");
        let me = heir::thread::current_tid();
        let applied = heir::thread::info(me).map(|i| i.applied);
        let r = yc.call_until(x, Some(limit));
        let after = heir::thread::current_urgency().expect("urgency");
        let inv = heir::thread::check_invariants();
        *s.lock().expect("seen") = Some((before, applied, r.clone(), after, inv));
        r.unwrap_or(1000)
    });
    let e = y.clone();
    let c = spawn_fifo(cpu, 30, move || e.call(1));
    assert_eq!(c.join().expect("client"), Ok(1000));
    let got = seen.lock().expect("seen").clone();
    let Some((before, applied, r, after, inv)) = got else {
        panic!("Z never ran its handler");
    };
    assert_eq!(before, Urgency::fixed(30), "the engine sees both donations");
    assert_eq!(
        applied,
        Some(Urgency::fixed(10)),
        "the kernel lends it: heir-rt makes no sched_setattr"
    );
    match r {
        Err(heir::Error::CallCycle { tids, livelock }) => {
            assert_eq!(tids, vec![ztid, ytid, ztid], "the cycle, named");
            assert!(livelock, "Z helps busy Y: a helping edge");
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert_eq!(after, before, "the refusal changed Z's urgency");
    assert_eq!(inv, Ok(()), "invariants after the refusal");
    // Once the calls are over nobody is left boosted in the engine.
    assert!(eventually(limit, || heir::thread::info(ztid)
        .is_some_and(|i| i.effective == Urgency::fixed(10))));
    quit(&y, vec![hy]);
    quit(&z, vec![hz]);
    heir::thread::check_invariants().expect("invariants at the end");
}
