//! Inheritance through the engine: PI mutexes, immediate priority ceiling,
//! PI-CV through a queue, transitive condvar → mutex, deadlocks.

use heir_core::Urgency;
use heir_scenario::{EventKind, MutexProtocol};
use heir_sim::SimConfig;

use crate::common::*;

fn f(p: u8) -> Urgency {
    Urgency::fixed(p)
}

/// L (10) holds m for 4 ms, H (30) wants it at 1 ms, M (20) arrives at 2 ms.
fn three_tasks(protocol: MutexProtocol) -> heir_scenario::Scenario {
    let mut b = B::new();
    let m = b.mutex("m", protocol);
    b.task(fifo(
        "L",
        10,
        vec![
            EventKind::Lock(m),
            run_us(4000),
            EventKind::Unlock(m),
            run_us(1000),
        ],
    ));
    b.task(
        fifo(
            "H",
            30,
            vec![EventKind::Lock(m), run_us(1000), EventKind::Unlock(m)],
        )
        .delay(1000),
    );
    b.task(fifo("M", 20, vec![run_us(3000)]).delay(2000));
    b.sc
}

#[test]
fn classic_priority_inheritance() {
    //   before 1 ms:  L ─owns─▶ m          after H blocks:  H(30) ─▶ m ─▶ L(10→30)
    // L runs its critical section at 30 (donor H) from 1 to 4 ms: M, ready
    // at 2 ms, does not run in between. Then H 4-5, M 5-8, L 8-9.
    let (r, rec) = run(&three_tasks(MutexProtocol::Inherit), &SimConfig::default());
    assert_eq!(
        rec.slices(),
        vec![
            (s("L"), 0.0, 1.0, f(10), None),
            (s("L"), 1.0, 4.0, f(30), Some(s("H"))),
            (s("H"), 4.0, 5.0, f(30), None),
            (s("M"), 5.0, 8.0, f(20), None),
            (s("L"), 8.0, 9.0, f(10), None),
        ]
    );
    assert_eq!(
        rec.boosts(),
        vec![
            (1.0, s("L"), Some(s("H")), f(30)),
            (4.0, s("L"), None, f(10)),
        ]
    );
    // H: released at 1, done at 5.
    assert_eq!(task_report(&r, "H").response_us.max, Some(4000.0));
}

#[test]
fn no_protocol_means_unbounded_inversion() {
    // Same scenario without inheritance: M preempts L while H waits.
    // L 0-2, M 2-5, L 5-7 (unlock), H 7-8, L 8-9.
    let (r, rec) = run(&three_tasks(MutexProtocol::None), &SimConfig::default());
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("L", 0.0, 2.0),
            ("M", 2.0, 5.0),
            ("L", 5.0, 7.0),
            ("H", 7.0, 8.0),
            ("L", 8.0, 9.0),
        ])
    );
    assert!(rec.boosts().is_empty());
    assert_eq!(task_report(&r, "H").response_us.max, Some(7000.0));
}

#[test]
fn immediate_priority_ceiling() {
    // Ceiling 30: L runs at 30 from the moment it locks (donor: itself), so
    // neither H (1 ms, equal urgency: FIFO) nor M (2 ms) preempts it; H gets
    // m at once when L unlocks at 4 ms and is never blocked on it (done at
    // 5 ms, 4 ms after its release, as with inheritance, but without ever
    // blocking).
    let (r, rec) = run(
        &three_tasks(MutexProtocol::Ceiling(30)),
        &SimConfig::default(),
    );
    assert_eq!(
        rec.slices(),
        vec![
            (s("L"), 0.0, 4.0, f(30), None),
            (s("H"), 4.0, 5.0, f(30), None),
            (s("M"), 5.0, 8.0, f(20), None),
            (s("L"), 8.0, 9.0, f(10), None),
        ]
    );
    assert_eq!(
        rec.boosts(),
        vec![(0.0, s("L"), None, f(30)), (4.0, s("L"), None, f(10))]
    );
    assert!(!rec
        .instants()
        .iter()
        .any(|i| i.2 == heir_sim::InstantKind::LockBlocked));
    assert_eq!(task_report(&r, "H").response_us.max, Some(4000.0));
}

/// Consumer (30) pops an empty queue; Producer (10) works 20 ms then pushes;
/// Annoyer (20) arrives at 5 ms with 10 ms of work.
fn producer_consumer() -> heir_scenario::Scenario {
    let mut b = B::new();
    let q = b.queue("q", 4);
    b.task(fifo("Consumer", 30, vec![EventKind::Pop(q), run_us(5000)]));
    b.task(fifo(
        "Producer",
        10,
        vec![run_us(20_000), EventKind::Push(q)],
    ));
    b.task(fifo("Annoyer", 20, vec![run_us(10_000)]).delay(5000));
    b.sc
}

#[test]
fn pi_cv_through_a_queue() {
    //   Consumer(30) ─wait─▶ q.more ─helper─▶ Producer(10→30)
    // The producer works at the consumer's urgency until it pushes: the
    // annoyer waits. Producer 0-20 (donor Consumer), Consumer 20-25,
    // Annoyer 25-35.
    let (r, rec) = run(&producer_consumer(), &pi_cv(true));
    assert_eq!(
        rec.slices(),
        vec![
            (s("Producer"), 0.0, 20.0, f(30), Some(s("Consumer"))),
            (s("Consumer"), 20.0, 25.0, f(30), None),
            (s("Annoyer"), 25.0, 35.0, f(20), None),
        ]
    );
    assert_eq!(
        rec.boosts()[0],
        (0.0, s("Producer"), Some(s("Consumer")), f(30))
    );
    assert_eq!(task_report(&r, "Consumer").response_us.max, Some(25_000.0));
    assert_eq!(task_report(&r, "Annoyer").response_us.max, Some(30_000.0));
}

#[test]
fn without_pi_cv_the_annoyer_delays_the_consumer() {
    // Producer 0-5, Annoyer 5-15, Producer 15-30, Consumer 30-35.
    let (r, rec) = run(&producer_consumer(), &pi_cv(false));
    assert_eq!(
        rec.merged(0),
        rows(&[
            ("Producer", 0.0, 5.0),
            ("Annoyer", 5.0, 15.0),
            ("Producer", 15.0, 30.0),
            ("Consumer", 30.0, 35.0),
        ])
    );
    assert_eq!(task_report(&r, "Consumer").response_us.max, Some(35_000.0));
}

#[test]
fn transitive_condvar_then_mutex() {
    // The PI-CV paper's Fig. 7, one pass each:
    //   Consumer(30) ─▶ q.more ─helper─▶ Producer ─▶ M ─owner─▶ Mutex(5→30)
    // 0-1 Mutex locks M; 1 Consumer waits on q.more (Producer boosted to 30);
    // 1-6 Producer (30); 6 Producer blocks on M: Mutex inherits 30 through
    // the chain; 6-15 Mutex finishes its 10 ms; 15-22 Producer (still 30
    // through q.more); 22 push; 22-27 Consumer; 27-37 Annoyer (arrived at 5).
    let mut b = B::new();
    let q = b.queue("q", 4);
    let m = b.mutex("M", MutexProtocol::Inherit);
    b.task(fifo(
        "Mutex",
        5,
        vec![EventKind::Lock(m), run_us(10_000), EventKind::Unlock(m)],
    ));
    b.task(fifo("Consumer", 30, vec![EventKind::Pop(q), run_us(5000)]).delay(1000));
    b.task(
        fifo(
            "Producer",
            10,
            vec![
                run_us(5000),
                EventKind::Lock(m),
                run_us(2000),
                EventKind::Unlock(m),
                run_us(5000),
                EventKind::Push(q),
            ],
        )
        .delay(1000),
    );
    b.task(fifo("Annoyer", 20, vec![run_us(10_000)]).delay(5000));
    let (r, rec) = b.run();
    assert_eq!(
        rec.slices(),
        vec![
            (s("Mutex"), 0.0, 1.0, f(5), None),
            (s("Producer"), 1.0, 6.0, f(30), Some(s("Consumer"))),
            (s("Mutex"), 6.0, 15.0, f(30), Some(s("Consumer"))),
            (s("Producer"), 15.0, 22.0, f(30), Some(s("Consumer"))),
            (s("Consumer"), 22.0, 27.0, f(30), None),
            (s("Annoyer"), 27.0, 37.0, f(20), None),
        ]
    );
    let b6: Vec<_> = rec.boosts().into_iter().filter(|b| b.0 == 6.0).collect();
    assert_eq!(b6, vec![(6.0, s("Mutex"), Some(s("Consumer")), f(30))]);
    assert_eq!(r.duration_us, 37_000.0);
    assert!(r.deadlock.is_none());
}

#[test]
fn two_lock_deadlock_is_reported_with_its_cycle() {
    // A locks m1 and works; B (more urgent, 1 ms) locks m2, works 2 ms, blocks
    // on m1 at 3 ms (A inherits); A blocks on m2 at 4 ms: the cycle.
    let mut b = B::new();
    let m1 = b.mutex("m1", MutexProtocol::Inherit);
    let m2 = b.mutex("m2", MutexProtocol::Inherit);
    // Lock `outer`, work 2 ms, lock `inner`, release both: AB-BA ordering.
    let nested = |outer, inner| {
        vec![
            EventKind::Lock(outer),
            run_us(2000),
            EventKind::Lock(inner),
            EventKind::Unlock(inner),
            EventKind::Unlock(outer),
        ]
    };
    b.task(fifo("A", 10, nested(m1, m2)));
    b.task(fifo("B", 20, nested(m2, m1)).delay(1000));
    let (r, rec) = b.run();
    let d = r.deadlock.expect("deadlock");
    assert_eq!(d.at_us, 4000.0);
    assert_eq!(d.cycle, vec!["A", "m2", "B", "m1", "A"]);
    assert_eq!(r.duration_us, 4000.0);
    assert_eq!(rec.end, Some(4_000_000));
    assert_eq!(
        rec.merged(0),
        rows(&[("A", 0.0, 1.0), ("B", 1.0, 3.0), ("A", 3.0, 4.0)])
    );
}

#[test]
fn relocking_an_owned_mutex_is_a_self_deadlock() {
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    b.task(fifo(
        "T",
        10,
        vec![run_us(1000), EventKind::Lock(m), EventKind::Lock(m)],
    ));
    let (r, _) = b.run();
    let d = r.deadlock.expect("deadlock");
    assert_eq!(d.at_us, 1000.0);
    assert_eq!(d.cycle, vec!["T", "m", "T"]);
}

#[test]
fn a_helper_waiting_for_the_waiter_is_a_deadlock_with_pi_cv() {
    // A holds m2 and waits on cv, whose declared helper B is blocked on m2:
    //   A ─▶ cv ─helper─▶ B ─▶ m2 ─owner─▶ A
    // With PI-CV the engine refuses the wait: deadlock at 1 ms. Without
    // PI-CV there is no helper edge: both just block forever and the run
    // ends when nothing is left to happen.
    let build = || {
        let mut b = B::new();
        let m1 = b.mutex("m1", MutexProtocol::Inherit);
        let m2 = b.mutex("m2", MutexProtocol::Inherit);
        let cv = b.cond("cv", &[1]);
        b.task(fifo(
            "A",
            10,
            vec![
                EventKind::Lock(m2),
                EventKind::Lock(m1),
                run_us(1000),
                EventKind::Wait {
                    cond: cv,
                    mutex: m1,
                },
            ],
        ));
        b.task(
            fifo(
                "B",
                20,
                vec![
                    EventKind::Lock(m2),
                    EventKind::Signal(cv),
                    EventKind::Unlock(m2),
                ],
            )
            .delay(500),
        );
        b.sc
    };
    let (r, _) = run(&build(), &pi_cv(true));
    let d = r.deadlock.expect("deadlock");
    assert_eq!(d.at_us, 1000.0);
    assert_eq!(d.cycle, vec!["A", "cv", "B", "m2", "A"]);
    let (r, _) = run(&build(), &pi_cv(false));
    assert!(r.deadlock.is_none());
    assert_eq!(r.duration_us, 1000.0);
    assert_eq!(task_report(&r, "A").jobs, 0);
    assert_eq!(task_report(&r, "B").jobs, 0);
}

#[test]
fn a_helper_waiting_on_its_own_condvar_is_not_a_deadlock() {
    // W pushes and pops the same queue, so with PI-CV it helps q.more and
    // q.less. It pops the empty queue first: it waits on q.more, which it
    // helps; the simulator takes it out of q.more's helpers for the wait
    // (else the engine would refuse the wait as the cycle W → q.more → W).
    // P (5, boosted to 20 as q.more's other helper) pushes at 1 ms: W wakes,
    // helps again, works 1 ms, pushes its own item and pops it.
    //   W: [pop q, run 1 ms, push q, pop q]   P: [run 1 ms, push q]
    let mut b = B::new();
    let q = b.queue("q", 4);
    b.task(fifo(
        "W",
        20,
        vec![
            EventKind::Pop(q),
            run_us(1000),
            EventKind::Push(q),
            EventKind::Pop(q),
        ],
    ));
    b.task(fifo("P", 5, vec![run_us(1000), EventKind::Push(q)]));
    let (r, rec) = b.run();
    assert!(r.deadlock.is_none(), "{:?}", r.deadlock);
    // W waits at 0; P 0-1 pushes; W 1-2 pops, works, pushes and pops.
    assert!(rec
        .boosts()
        .contains(&(0.0, s("P"), Some(s("W")), Urgency::fixed(20))));
    assert_eq!(rec.merged(0), rows(&[("P", 0.0, 1.0), ("W", 1.0, 2.0)]));
    assert_eq!(task_report(&r, "W").jobs, 1);
    assert_eq!(task_report(&r, "P").jobs, 1);
}
