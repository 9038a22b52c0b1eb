//! rt-app synchronisation events: wait/signal/broadcast, barrier,
//! suspend/resume, queue push/pop, RPC call/serve.

use heir_scenario::{EventKind, Micros, MutexProtocol};
use heir_sim::{InstantKind, SimConfig};

use crate::common::*;

#[test]
fn wait_then_signal_reacquires_the_mutex() {
    // W (20) waits on c; S (10) signals at 2 ms while holding m: W wakes,
    // blocks on m (S inherits 20), gets it when S unlocks and preempts S.
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    let c = b.cond("c", &[]);
    b.task(fifo(
        "W",
        20,
        vec![
            EventKind::Lock(m),
            EventKind::Wait { cond: c, mutex: m },
            EventKind::Unlock(m),
            run_us(1000),
        ],
    ));
    b.task(fifo(
        "S",
        10,
        vec![
            run_us(2000),
            EventKind::Lock(m),
            EventKind::Signal(c),
            EventKind::Unlock(m),
            run_us(1000),
        ],
    ));
    let (r, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[("S", 0.0, 2.0), ("W", 2.0, 3.0), ("S", 3.0, 4.0)])
    );
    use InstantKind::*;
    assert_eq!(
        rec.instants(),
        vec![
            (0.0, s("W"), Lock, s("m")),
            (0.0, s("W"), Unlock, s("m")),
            (0.0, s("W"), Wait, s("c")),
            (2.0, s("S"), Lock, s("m")),
            (2.0, s("S"), Signal, s("c")),
            (2.0, s("W"), Woken, s("c")),
            (2.0, s("W"), LockBlocked, s("m")),
            (2.0, s("S"), Unlock, s("m")),
            (2.0, s("W"), Lock, s("m")),
            (2.0, s("W"), Unlock, s("m")),
        ]
    );
    assert_eq!(task_report(&r, "W").response_us.max, Some(3000.0));
}

#[test]
fn a_signal_without_waiter_is_lost() {
    // S signals at 0 before W waits: W waits forever, the run ends at 0.
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    let c = b.cond("c", &[]);
    b.task(fifo("S", 20, vec![EventKind::Signal(c)]));
    b.task(fifo(
        "W",
        10,
        vec![
            EventKind::Lock(m),
            EventKind::Wait { cond: c, mutex: m },
            EventKind::Unlock(m),
        ],
    ));
    let (r, _) = b.run();
    assert_eq!(task_report(&r, "S").jobs, 1);
    assert_eq!(task_report(&r, "W").jobs, 0);
    assert_eq!(r.duration_us, 0.0);
}

#[test]
fn broadcast_wakes_all_in_urgency_order() {
    // W1 (30) and W2 (20) wait; S (10) broadcasts at 1 ms: both wake and
    // queue on m behind S; W1 gets it first.
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    let c = b.cond("c", &[]);
    let waiter = |n: &str, p| {
        fifo(
            n,
            p,
            vec![
                EventKind::Lock(m),
                EventKind::Wait { cond: c, mutex: m },
                EventKind::Unlock(m),
                run_us(1000),
            ],
        )
    };
    b.task(waiter("W2", 20));
    b.task(waiter("W1", 30));
    b.task(fifo(
        "S",
        10,
        vec![
            run_us(1000),
            EventKind::Lock(m),
            EventKind::Broadcast(c),
            EventKind::Unlock(m),
        ],
    ));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[("S", 0.0, 1.0), ("W1", 1.0, 2.0), ("W2", 2.0, 3.0)])
    );
}

#[test]
fn barrier_releases_everyone_when_the_last_arrives() {
    // Three threads on three CPUs run 1, 2, 3 ms, meet at the barrier, then
    // run 1 ms each; twice. Rendezvous at 3 ms and at 3 + 1 + 3 = 7 ms.
    let mut b = B::new();
    let bar = b.barrier("sync", 3);
    for (i, (n, w)) in [("X", 1000), ("Y", 2000), ("Z", 3000)]
        .into_iter()
        .enumerate()
    {
        b.task(
            fifo(
                n,
                10,
                vec![run_us(w), EventKind::Barrier(bar), run_us(1000)],
            )
            .cpus(Some(vec![i as u32]))
            .loops(Some(2)),
        );
    }
    let (r, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[("X", 0.0, 1.0), ("X", 3.0, 5.0), ("X", 7.0, 8.0)])
    );
    assert_eq!(
        rec.merged(1),
        rows(&[("Y", 0.0, 2.0), ("Y", 3.0, 6.0), ("Y", 7.0, 8.0)])
    );
    assert_eq!(rec.merged(2), rows(&[("Z", 0.0, 8.0)]));
    let arrivals: Vec<(f64, String)> = rec
        .instants()
        .into_iter()
        .filter(|i| i.2 == InstantKind::Barrier)
        .map(|i| (i.0, i.1))
        .collect();
    assert_eq!(
        arrivals,
        vec![
            (1.0, s("X")),
            (2.0, s("Y")),
            (3.0, s("Z")),
            (5.0, s("X")),
            (6.0, s("Y")),
            (7.0, s("Z"))
        ]
    );
    assert_eq!(r.duration_us, 8000.0);
}

#[test]
fn suspend_and_resume() {
    // A (20) suspends after 1 ms; B (10) resumes it at 4 ms: A preempts B.
    let mut b = B::new();
    let sa = b.suspend("A", 0);
    b.task(fifo(
        "A",
        20,
        vec![run_us(1000), EventKind::Suspend(sa), run_us(1000)],
    ));
    b.task(fifo(
        "B",
        10,
        vec![run_us(3000), EventKind::Resume(sa), run_us(1000)],
    ));
    let (_, rec) = b.run();
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("A", 0.0, 1.0),
            ("B", 1.0, 4.0),
            ("A", 4.0, 5.0),
            ("B", 5.0, 6.0)
        ])
    );
}

#[test]
fn a_resume_with_nobody_suspended_is_lost() {
    let mut b = B::new();
    let sa = b.suspend("A", 0);
    b.task(fifo("A", 10, vec![EventKind::Suspend(sa)]).delay(2000));
    b.task(fifo("B", 20, vec![run_us(1000), EventKind::Resume(sa)]));
    let (r, _) = b.run();
    assert_eq!(task_report(&r, "A").jobs, 0);
    assert_eq!(task_report(&r, "B").jobs, 1);
    assert_eq!(r.duration_us, 2000.0);
}

#[test]
fn bounded_queue_blocks_the_pusher_when_full() {
    // Capacity 2: P (20) pushes 3 items; the third waits on q.less until C
    // (10, boosted to 20 through q.less with PI-CV) pops one.
    let mut b = B::new();
    let q = b.queue("q", 2);
    b.task(fifo(
        "P",
        20,
        vec![EventKind::Push(q), EventKind::Push(q), EventKind::Push(q)],
    ));
    b.task(fifo("C", 10, vec![EventKind::Pop(q), run_us(1000)]).loops(Some(3)));
    let (r, rec) = b.run();
    use InstantKind::*;
    let ops: Vec<(f64, String, InstantKind)> = rec
        .instants()
        .into_iter()
        .filter(|i| matches!(i.2, Push | Pop | Wait))
        .map(|i| (i.0, i.1, i.2))
        .collect();
    // P pushes twice, finds the queue full and waits on q.less (C, its
    // helper, inherits 20); C pops and signals q.less: P wakes, re-locks
    // q.mutex (C inherits again through it), gets it when C unlocks,
    // preempts C and pushes its third item. C then pops at 1 and 2 ms.
    assert_eq!(
        ops,
        vec![
            (0.0, s("P"), Push),
            (0.0, s("P"), Push),
            (0.0, s("P"), Wait),
            (0.0, s("C"), Pop),
            (0.0, s("P"), Push),
            (1.0, s("C"), Pop),
            (2.0, s("C"), Pop),
        ]
    );
    // C: 3 jobs of 1 ms; P: one job done at 0 after the third push.
    assert_eq!(task_report(&r, "C").jobs, 3);
    assert_eq!(task_report(&r, "P").response_us.max, Some(0.0));
    assert_eq!(rec.merged(0), rows(&[("C", 0.0, 3.0)]));
    assert!(rec
        .boosts()
        .contains(&(0.0, s("C"), Some(s("P")), heir_core::Urgency::fixed(20))));
}

/// C (20) works 1 ms, calls the endpoint (2 ms of work), works 1 ms; S (5)
/// serves; X (10) arrives at 1.5 ms with 3 ms of work.
fn rpc() -> heir_scenario::Scenario {
    let mut b = B::new();
    let ep = b.endpoint("ep");
    b.task(fifo(
        "C",
        20,
        vec![
            run_us(1000),
            EventKind::Call {
                endpoint: ep,
                run: Micros::Fixed(2000),
            },
            run_us(1000),
        ],
    ));
    b.task(fifo("S", 5, vec![EventKind::Serve(ep)]).loops(None));
    b.task(fifo("X", 10, vec![run_us(3000)]).delay(1500));
    b.sc
}

/// Simulates [`rpc`] for 10 ms with PI-CV on or off.
fn run_rpc(on: bool) -> (heir_sim::Report, Rec) {
    let cfg = SimConfig {
        duration_us: Some(10_000),
        ..pi_cv(on)
    };
    run(&rpc(), &cfg)
}

#[test]
fn rpc_with_pi_cv_the_server_runs_at_the_callers_priority() {
    // C 0-1, calls: S serves at 20 (helper of reply[C]) 1-3, X (10) cannot
    // preempt; C 3-4; X 4-7.
    let (r, rec) = run_rpc(true);
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("C", 0.0, 1.0),
            ("S", 1.0, 3.0),
            ("C", 3.0, 4.0),
            ("X", 4.0, 7.0)
        ])
    );
    assert_eq!(task_report(&r, "C").response_us.max, Some(4000.0));
    let names = &rec.info.as_ref().unwrap().resources;
    assert!(names.contains(&s("ep.reply[C]")));
    assert!(rec.slices().contains(&(
        s("S"),
        1.0,
        3.0,
        heir_core::Urgency::fixed(20),
        Some(s("C"))
    )));
}

#[test]
fn rpc_without_pi_cv_the_server_is_preempted() {
    // C 0-1, S 1-1.5 (prio 5), X 1.5-4.5, S 4.5-6, C 6-7.
    let (r, rec) = run_rpc(false);
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("C", 0.0, 1.0),
            ("S", 1.0, 1.5),
            ("X", 1.5, 4.5),
            ("S", 4.5, 6.0),
            ("C", 6.0, 7.0)
        ])
    );
    assert_eq!(task_report(&r, "C").response_us.max, Some(7000.0));
}

/// The textbook condition-variable pattern (issue: a false deadlock): the
/// consumer waits on `c` holding `m` while the producer, a helper of `c`, is
/// blocked on `m` to signal. The wait gives `m` up as it starts waiting, so
/// the producer gets `m` at once and runs at the consumer's priority until
/// it signals; with PI-CV off the annoyer preempts it.
///
/// ```text
/// CPU0  Consumer(30): lock m, run 2 ms, wait(c, m), unlock m, run 1 ms
/// CPU1  Producer(10): at 0.5 ms lock m (blocks), run 1 ms, signal c, unlock m
///       Annoyer(20):  at 2.5 ms run 3 ms
/// ```
#[test]
fn wait_hands_its_mutex_to_a_helper_blocked_on_it() {
    for pi_cv in [true, false] {
        let mut b = B::new();
        b.sc.global.pi_cv = pi_cv;
        let m = b.mutex("m", MutexProtocol::Inherit);
        let c = b.cond("c", &[1]);
        b.task(fifo(
            "Consumer",
            30,
            vec![
                EventKind::Lock(m),
                run_us(2000),
                EventKind::Wait { cond: c, mutex: m },
                EventKind::Unlock(m),
                run_us(1000),
            ],
        ));
        b.task(
            fifo(
                "Producer",
                10,
                vec![
                    EventKind::Lock(m),
                    run_us(1000),
                    EventKind::Signal(c),
                    EventKind::Unlock(m),
                ],
            )
            .cpus(Some(vec![1]))
            .delay(500),
        );
        b.task(
            fifo("Annoyer", 20, vec![run_us(3000)])
                .cpus(Some(vec![1]))
                .delay(2500),
        );
        let (r, rec) = b.run();
        assert!(r.deadlock.is_none(), "pi_cv {pi_cv}: {:?}", r.deadlock);
        use InstantKind::*;
        let at_2ms: Vec<_> = rec.instants().into_iter().filter(|i| i.0 == 2.0).collect();
        assert_eq!(
            at_2ms,
            vec![
                (2.0, s("Consumer"), Unlock, s("m")),
                (2.0, s("Producer"), Lock, s("m")),
                (2.0, s("Consumer"), Wait, s("c")),
            ],
            "pi_cv {pi_cv}"
        );
        if pi_cv {
            assert_eq!(
                rec.merged(1),
                rows(&[("Producer", 2.0, 3.0), ("Annoyer", 3.0, 6.0)])
            );
            let producer: Vec<_> = rec
                .slices()
                .into_iter()
                .filter(|sl| sl.0 == "Producer")
                .collect();
            assert_eq!(
                producer,
                vec![(
                    s("Producer"),
                    2.0,
                    3.0,
                    heir_core::Urgency::fixed(30),
                    Some(s("Consumer"))
                )]
            );
            assert_eq!(task_report(&r, "Consumer").response_us.max, Some(4000.0));
        } else {
            assert_eq!(
                rec.merged(1),
                rows(&[
                    ("Producer", 2.0, 2.5),
                    ("Annoyer", 2.5, 5.5),
                    ("Producer", 5.5, 6.0)
                ])
            );
            assert_eq!(task_report(&r, "Consumer").response_us.max, Some(7000.0));
        }
    }
}
