//! Gang priority management (GPM, L-GPM) on real SCHED_FIFO threads
//! pinned to one CPU: the GPM paper's Fig. 1 without and with GPM (order of
//! events, and the member's priority read from `/proc` while boosted), a
//! second run refused, a masked member left alone, a wait's timeout and the
//! eventfd, remove and exit counted as notify, and a gang boost combined
//! with a PI mutex's (Invariant 1).

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier as StdBarrier};

use heir::gang::{
    self, Barrier, ControlWord, Gang, GangAttr, GangWait, Notified, PointResult, BARRIER_BIT,
};
use heir::sys::{self, now_ns};
use heir::{PiMutex, Urgency};

use crate::common::*;

/// What a member thread is told to do.
enum Cmd {
    Notify,
    Lock,
    Unlock,
    Withdraw(u32),
}

/// What it answers.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Notified(Notified),
    Done,
    Withdrew { counted: bool },
}

/// A SCHED_FIFO `prio` thread on `cpu` that sleeps on a channel and runs
/// commands (it holds `m` between `Lock` and `Unlock`).
struct Member {
    tid: i32,
    word: ControlWord,
    tx: mpsc::Sender<Cmd>,
    rx: mpsc::Receiver<Reply>,
    h: std::thread::JoinHandle<()>,
}

impl Member {
    fn spawn(cpu: u32, prio: u8, bits: u32, m: Arc<PiMutex<()>>, g: Arc<Gang>) -> Member {
        let (tx, crx) = mpsc::channel::<Cmd>();
        let (rtx, rx) = mpsc::channel::<Reply>();
        let word = ControlWord::new(bits);
        let (h, tid) = spawn_fifo_tid(cpu, prio, move || {
            let mut guard = None;
            while let Ok(c) = crx.recv() {
                let r = match c {
                    Cmd::Notify => Reply::Notified(g.notify().expect("a member's notify")),
                    Cmd::Lock => {
                        guard = Some(m.lock().expect("lock"));
                        Reply::Done
                    }
                    Cmd::Unlock => {
                        guard = None;
                        Reply::Done
                    }
                    Cmd::Withdraw(_) => Reply::Done,
                };
                if rtx.send(r).is_err() {
                    break;
                }
            }
            drop(guard);
        });
        Member {
            tid,
            word,
            tx,
            rx,
            h,
        }
    }

    fn ask(&self, c: Cmd) -> Reply {
        if let Cmd::Withdraw(bits) = c {
            // The control word is changed by CAS, without a system call;
            // any thread holding the handle may do it for the test.
            let before = self.word.deactivate(bits);
            return Reply::Withdrew {
                counted: before.counted(),
            };
        }
        self.tx.send(c).expect("send");
        self.rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("member answers")
    }

    fn stop(self) {
        drop(self.tx);
        self.h.join().expect("member thread");
    }
}

fn set_prio(tid: i32) -> u32 {
    sys::sched_getattr(tid)
        .expect("sched_getattr")
        .sched_priority
}

/// Kernel prio of a FIFO `p` thread as `/proc` shows it.
fn fifo(p: i32) -> i32 {
    -1 - p
}

/// The GPM paper's Fig. 1 on one CPU: T_L (FIFO 10, active member) works 20 ms
/// of CPU time before its barrier point; T_M (FIFO 20, no member) busy-loops
/// 100 ms from 2 ms; T_H (FIFO 30, passive member) starts the barrier at
/// 4 ms and waits for its completion. Times in ns from the start.
struct Fig1 {
    l_arrives: u64,
    m_ends: u64,
    h_completes: u64,
    /// T_L's `/proc` prio and set priority, read by T_H right after `start`.
    l_kernel_prio_at_start: i32,
    l_set_prio_at_start: u32,
    outcome: gang::RunOutcome,
    wait: GangWait,
    point: PointResult,
    /// T_L's set priority and `/proc` prio after its release.
    l_after: (u32, i32),
}

fn fig1(cpu: u32, gpm: bool) -> Fig1 {
    let b = Arc::new(Barrier::new(GangAttr { gpm }).expect("barrier"));
    let t0 = now_ns() + 50 * MS;
    let limit = t0 + 3_000 * MS;
    let ready = Arc::new(StdBarrier::new(4));
    let l_tid = Arc::new(AtomicI32::new(0));
    let (l_arrives, m_ends, h_completes) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let l = {
        let (b, ready, l_tid, l_arrives) =
            (b.clone(), ready.clone(), l_tid.clone(), l_arrives.clone());
        spawn_fifo(cpu, 10, move || {
            let _w = b.add_member(sys::gettid(), true).expect("add_member");
            l_tid.store(sys::gettid(), Ordering::Release);
            ready.wait();
            sys::sleep_until(t0);
            assert!(busy_cpu(20 * MS, limit), "T_L's work within the bound");
            l_arrives.store(now_ns() - t0, Ordering::Release);
            let p = b.point_until(Some(limit));
            let me = sys::gettid();
            (p, (my_prio(), kernel_prio(me)))
        })
    };
    let m = {
        let (ready, m_ends) = (ready.clone(), m_ends.clone());
        spawn_fifo(cpu, 20, move || {
            ready.wait();
            sys::sleep_until(t0 + 2 * MS);
            while now_ns() < t0 + 102 * MS {
                std::hint::spin_loop();
            }
            m_ends.store(now_ns() - t0, Ordering::Release);
        })
    };
    let h = {
        let (b, ready, l_tid, h_completes) =
            (b.clone(), ready.clone(), l_tid.clone(), h_completes.clone());
        spawn_fifo(cpu, 30, move || {
            let w = b.add_member(sys::gettid(), true).expect("add_member");
            // A passive member: counts for the gang priority, never active.
            w.deactivate(BARRIER_BIT);
            ready.wait();
            sys::sleep_until(t0 + 4 * MS);
            let outcome = b.start().expect("start");
            let lt = l_tid.load(Ordering::Acquire);
            let (kp, sp) = (kernel_prio(lt), set_prio(lt));
            let wait = b.wait_until(Some(limit)).expect("wait");
            h_completes.store(now_ns() - t0, Ordering::Release);
            b.release();
            (outcome, wait, kp, sp)
        })
    };
    ready.wait();
    let (point, l_after) = l.join().expect("T_L");
    m.join().expect("T_M");
    let (outcome, wait, kp, sp) = h.join().expect("T_H");
    Fig1 {
        l_arrives: l_arrives.load(Ordering::Acquire),
        m_ends: m_ends.load(Ordering::Acquire),
        h_completes: h_completes.load(Ordering::Acquire),
        l_kernel_prio_at_start: kp,
        l_set_prio_at_start: sp,
        outcome,
        wait,
        point,
        l_after,
    }
}

#[test]
fn gpm_fig1_the_gang_lifts_t_l_above_t_m() {
    let Some(rt) = rt_or_skip("gang::fig1", 30) else {
        return;
    };
    for gpm in [false, true] {
        let r = fig1(rt.cpu, gpm);
        let what = if gpm { "GPM on" } else { "GPM off" };
        let ms = |ns: u64| ns as f64 / 1e6;
        eprintln!(
            "{what}: T_L at its point {:.1} ms, T_M done {:.1} ms, barrier complete {:.1} ms",
            ms(r.l_arrives),
            ms(r.m_ends),
            ms(r.h_completes)
        );
        assert_eq!(r.wait, GangWait::Completed, "{what}");
        assert_eq!(r.point, PointResult::Released, "{what}");
        assert_eq!(r.outcome.active, 1, "{what}: T_L active, T_H passive");
        assert_eq!(r.outcome.priority, Some(Urgency::fixed(30)), "{what}");
        assert_eq!(r.l_after, (10, fifo(10)), "{what}: T_L back at 10");
        assert!(r.l_arrives <= r.h_completes, "{what}: completion after T_L");
        if gpm {
            assert_eq!(r.outcome.boosted, 1);
            assert_eq!(
                (r.l_kernel_prio_at_start, r.l_set_prio_at_start),
                (fifo(30), 30),
                "T_L runs at the gang priority while boosted"
            );
            assert!(
                r.l_arrives < r.m_ends && r.h_completes < r.m_ends,
                "with GPM, T_L reaches its point and the barrier completes before T_M stops"
            );
        } else {
            assert_eq!(r.outcome.boosted, 0);
            assert_eq!(
                (r.l_kernel_prio_at_start, r.l_set_prio_at_start),
                (fifo(10), 10),
                "no boost without GPM"
            );
            assert!(
                r.l_arrives > r.m_ends,
                "without GPM, T_L reaches its point only after T_M stops"
            );
        }
    }
    heir::thread::check_invariants().expect("invariants");
}

#[test]
fn a_second_run_fails_until_every_active_member_notified() {
    let Some(rt) = rt_or_skip("gang::second_run", 20) else {
        return;
    };
    let m = Arc::new(PiMutex::new(()));
    let g = Arc::new(Gang::new().expect("gang"));
    let low = Member::spawn(rt.cpu, 10, 1, m.clone(), g.clone());
    let high = Member::spawn(rt.cpu, 25, 0, m.clone(), g.clone());
    g.add_member(low.tid, &low.word).expect("add low");
    g.add_member(high.tid, &high.word).expect("add high");
    assert!(g.has_member(low.tid) && !g.has_member(sys::gettid()));
    // The test thread is no member: refused, nothing changed.
    assert_eq!(g.notify(), Err(heir::Error::NotMember(sys::gettid())));
    // The previous release's call without a gang: harmless for a thread
    // in none.
    #[allow(deprecated)]
    let old = gang::notify();
    assert_eq!(old, Notified::NotCounted);
    assert_eq!(low.ask(Cmd::Notify), Reply::Notified(Notified::NotCounted));
    let o = g.run(1).expect("run");
    assert_eq!((o.active, o.boosted), (1, 1));
    assert_eq!(o.priority, Some(Urgency::fixed(25)));
    assert_eq!(kernel_prio(low.tid), fifo(25));
    assert!(low.word.load().counted() && low.word.load().boosted());
    let again = g.run(1);
    assert_eq!(again, Err(heir::Error::GangRunning { pending: 1 }));
    assert_eq!(again.unwrap_err().errno(), libc::EBUSY);
    assert_eq!(kernel_prio(low.tid), fifo(25), "nothing changed");
    assert_eq!(g.pending(), 1);
    // Notify before the wait: counted, the wait then returns at once.
    assert_eq!(
        low.ask(Cmd::Notify),
        Reply::Notified(Notified::Counted { completed: true })
    );
    assert_eq!(
        low.ask(Cmd::Notify),
        Reply::Notified(Notified::NotCounted),
        "a second notify counts nothing"
    );
    assert_eq!(kernel_prio(low.tid), fifo(10));
    assert!(!low.word.load().counted());
    assert_eq!(
        g.wait_until(Some(now_ns())).expect("wait"),
        GangWait::Completed
    );
    g.run(1).expect("a run after completion");
    assert_eq!(
        low.ask(Cmd::Notify),
        Reply::Notified(Notified::Counted { completed: true })
    );
    heir::thread::check_invariants().expect("invariants");
    low.stop();
    high.stop();
}

#[test]
fn a_masked_member_is_not_counted_nor_boosted() {
    let Some(rt) = rt_or_skip("gang::mask", 20) else {
        return;
    };
    let m = Arc::new(PiMutex::new(()));
    let g = Arc::new(Gang::new().expect("gang"));
    let a = Member::spawn(rt.cpu, 10, 0b01, m.clone(), g.clone());
    let b = Member::spawn(rt.cpu, 12, 0b10, m.clone(), g.clone());
    let c = Member::spawn(rt.cpu, 30, 0, m.clone(), g.clone());
    for x in [&a, &b, &c] {
        g.add_member(x.tid, &x.word).expect("add_member");
    }
    let o = g.run(0b01).expect("run");
    assert_eq!((o.active, o.priority), (1, Some(Urgency::fixed(30))));
    assert_eq!(kernel_prio(a.tid), fifo(30), "active: boosted");
    assert_eq!(kernel_prio(b.tid), fifo(12), "masked out: untouched");
    assert_eq!(set_prio(b.tid), 12);
    assert!(!b.word.load().counted() && !b.word.load().boosted());
    assert_eq!(b.ask(Cmd::Notify), Reply::Notified(Notified::NotCounted));
    // A counted member withdrawing learns it was counted, and notifies.
    assert_eq!(
        a.ask(Cmd::Withdraw(0b01)),
        Reply::Withdrew { counted: true }
    );
    assert_eq!(
        a.ask(Cmd::Notify),
        Reply::Notified(Notified::Counted { completed: true })
    );
    assert_eq!(kernel_prio(a.tid), fifo(10));
    // Withdrawn, it is not counted by the next run.
    let o = g.run(0b01).expect("run");
    assert_eq!(o.active, 0, "nobody active: complete at once");
    assert!(g.is_complete());
    heir::thread::check_invariants().expect("invariants");
    for x in [a, b, c] {
        x.stop();
    }
}

#[test]
fn wait_times_out_and_the_eventfd_is_readable_exactly_when_complete() {
    let Some(rt) = rt_or_skip("gang::timeout", 20) else {
        return;
    };
    let m = Arc::new(PiMutex::new(()));
    let g = Arc::new(Gang::new().expect("gang"));
    let a = Member::spawn(rt.cpu, 10, 1, m.clone(), g.clone());
    g.add_member(a.tid, &a.word).expect("add_member");
    let readable = |g: &Gang| sys::poll_readable(g.fd(), 0).expect("poll");
    assert!(readable(&g), "no run yet: a wait would return at once");
    g.run(1).expect("run");
    assert!(!readable(&g), "a run in progress");
    let t = now_ns();
    assert_eq!(
        g.wait_until(Some(t + 20 * MS)).expect("wait"),
        GangWait::TimedOut
    );
    assert!(now_ns() >= t + 20 * MS, "not before its deadline");
    assert!(!readable(&g));
    assert_eq!(kernel_prio(a.tid), fifo(10), "one member: gang prio 10");
    // From another thread: the notify wakes a waiter sleeping in wait.
    let g = Arc::new(g);
    let waiter = {
        let g = g.clone();
        spawn_fifo(rt.cpu, 40, move || {
            let r = g.wait_until(Some(now_ns() + 5_000 * MS)).expect("wait");
            (r, now_ns())
        })
    };
    assert!(
        eventually(now_ns() + 2_000 * MS, || g.pending() == 1),
        "the run is still pending"
    );
    let notified_at = now_ns();
    assert_eq!(
        a.ask(Cmd::Notify),
        Reply::Notified(Notified::Counted { completed: true })
    );
    let (r, woke) = waiter.join().expect("waiter");
    assert_eq!(r, GangWait::Completed);
    assert!(woke >= notified_at);
    assert!(readable(&g), "complete: POLLIN");
    assert!(
        sys::poll_readable(g.fd(), 0).expect("poll"),
        "polling does not consume it"
    );
    a.stop();
}

#[test]
fn remove_and_exit_count_as_notify() {
    let Some(rt) = rt_or_skip("gang::remove", 20) else {
        return;
    };
    let m = Arc::new(PiMutex::new(()));
    let g = Arc::new(Gang::new().expect("gang"));
    let a = Member::spawn(rt.cpu, 10, 1, m.clone(), g.clone());
    let b = Member::spawn(rt.cpu, 15, 1, m.clone(), g.clone());
    let p = Member::spawn(rt.cpu, 35, 0, m.clone(), g.clone());
    for x in [&a, &b, &p] {
        g.add_member(x.tid, &x.word).expect("add_member");
    }
    assert!(matches!(
        g.add_member(a.tid, &a.word),
        Err(heir::Error::AlreadyMember { .. })
    ));
    let other = Gang::new().expect("gang");
    assert!(
        matches!(other.add_member(a.tid, &ControlWord::new(1)), Err(heir::Error::AlreadyMember { tid, .. }) if tid == a.tid),
        "a thread is a member of at most one gang"
    );
    let o = g.run(1).expect("run");
    assert_eq!(o.active, 2);
    assert_eq!(
        (kernel_prio(a.tid), kernel_prio(b.tid)),
        (fifo(35), fifo(35))
    );
    assert_eq!(
        other.remove_member(a.tid),
        Err(heir::Error::NotMember(a.tid)),
        "not a member of that gang: refused"
    );
    assert!(a.word.load().member() && g.has_member(a.tid));
    assert_eq!(
        g.remove_member(a.tid),
        Ok(Notified::Counted { completed: false })
    );
    assert_eq!(kernel_prio(a.tid), fifo(10), "removal ends its boost");
    assert!(!a.word.load().member());
    assert!(!g.has_member(a.tid));
    assert_eq!(g.remove_member(a.tid), Err(heir::Error::NotMember(a.tid)));
    assert_eq!(g.pending(), 1);
    // b exits while counted: its exit leaves the gang, counted.
    b.stop();
    assert_eq!(
        g.wait_until(Some(now_ns())).expect("wait"),
        GangWait::Completed
    );
    assert_eq!(g.members(), vec![p.tid]);
    heir::thread::check_invariants().expect("invariants");
    a.stop();
    p.stop();
}

/// Invariant 1 with a PI mutex: member M (FIFO 10) holds a `PiMutex` that
/// W (FIFO `w`) waits for; the gang's priority is 30 (a passive member).
/// While boosted, M runs at max(w, 30); after its notify at w; after its
/// unlock at 10. The kernel's view (`/proc`, PI included) and heir's
/// engine agree.
#[test]
fn a_gang_boost_and_a_pi_mutex_boost_combine_as_invariant_1_says() {
    let Some(rt) = rt_or_skip("gang::pi_mutex", 30) else {
        return;
    };
    // (waiter priority, M while boosted, M after notify)
    let cases = [(40, 40, 40), (20, 30, 20)];
    for (w, boosted, after) in cases {
        let mx = Arc::new(PiMutex::new(()));
        let g = Arc::new(Gang::new().expect("gang"));
        let mem = Member::spawn(rt.cpu, 10, 1, mx.clone(), g.clone());
        let pas = Member::spawn(rt.cpu, 30, 0, mx.clone(), g.clone());
        g.add_member(mem.tid, &mem.word).expect("add_member");
        g.add_member(pas.tid, &pas.word).expect("add_member");
        assert_eq!(mem.ask(Cmd::Lock), Reply::Done);
        let waiter = {
            let mx = mx.clone();
            spawn_fifo(rt.cpu, w as u8, move || {
                drop(mx.lock().expect("waiter lock"));
            })
        };
        let limit = now_ns() + 2_000 * MS;
        assert!(
            eventually(limit, || kernel_prio(mem.tid) == fifo(w)),
            "w={w}: M inherits the waiter's priority (prio {})",
            kernel_prio(mem.tid)
        );
        g.run(1).expect("run");
        assert_eq!(kernel_prio(mem.tid), fifo(boosted), "w={w}: while boosted");
        let info = heir::thread::info(mem.tid).expect("registered");
        assert_eq!(
            info.effective,
            Urgency::fixed(boosted as u8),
            "w={w}: engine"
        );
        assert_eq!(
            mem.ask(Cmd::Notify),
            Reply::Notified(Notified::Counted { completed: true })
        );
        assert_eq!(
            kernel_prio(mem.tid),
            fifo(after),
            "w={w}: after notify: max(user, lock-inherited)"
        );
        heir::thread::check_invariants().expect("invariants while holding");
        assert_eq!(mem.ask(Cmd::Unlock), Reply::Done);
        waiter.join().expect("waiter");
        assert_eq!(kernel_prio(mem.tid), fifo(10), "w={w}: after unlock");
        assert_eq!(set_prio(mem.tid), 10);
        mem.stop();
        pas.stop();
    }
    // And a member that blocks on a PI mutex while boosted passes the gang
    // priority on to the owner (lock-inherited from a gang boost).
    let mx = Arc::new(PiMutex::new(()));
    let g = Arc::new(Gang::new().expect("gang"));
    let owner = Member::spawn(rt.cpu, 5, 0, mx.clone(), g.clone());
    let mem = Member::spawn(rt.cpu, 10, 1, mx.clone(), g.clone());
    let pas = Member::spawn(rt.cpu, 30, 0, mx.clone(), g.clone());
    g.add_member(mem.tid, &mem.word).expect("add_member");
    g.add_member(pas.tid, &pas.word).expect("add_member");
    assert_eq!(owner.ask(Cmd::Lock), Reply::Done);
    g.run(1).expect("run");
    mem.tx.send(Cmd::Lock).expect("send");
    let limit = now_ns() + 2_000 * MS;
    assert!(
        eventually(limit, || kernel_prio(owner.tid) == fifo(30)),
        "the owner inherits the gang priority through the mutex (prio {})",
        kernel_prio(owner.tid)
    );
    assert_eq!(owner.ask(Cmd::Unlock), Reply::Done);
    assert_eq!(mem.rx.recv().expect("locked"), Reply::Done);
    assert_eq!(kernel_prio(owner.tid), fifo(5));
    assert_eq!(mem.ask(Cmd::Unlock), Reply::Done);
    assert_eq!(
        mem.ask(Cmd::Notify),
        Reply::Notified(Notified::Counted { completed: true })
    );
    assert_eq!(kernel_prio(mem.tid), fifo(10));
    heir::thread::check_invariants().expect("invariants");
    for x in [owner, mem, pas] {
        x.stop();
    }
}
