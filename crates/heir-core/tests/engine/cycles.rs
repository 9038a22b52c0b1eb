//! Cycle refusal and the chain bound: the refused operation names the cycle
//! (first == last, starting at the task that tried to block or, for
//! helper_add/acquire, the task that would become a target) and leaves the
//! engine exactly as it was.

use heir_core::{Engine, EngineError, Node, Protocol, Urgency, MAX_CHAIN_DEPTH};

use crate::support::{Op::*, World};

fn world() -> World {
    World::new(
        &[("A", 10), ("B", 20), ("C", 30)],
        &[
            ("m1", Protocol::Inherit),
            ("m2", Protocol::Inherit),
            ("mc", Protocol::Ceiling(crate::support::fx(40))),
        ],
        &["cv", "cv2"],
    )
}

/// ```text
/// before:  A owns m1, B owns m2, B ─▶ m1 ─▶ A
/// refused: A ─▶ m2 ─▶ B ─▶ m1 ─▶ A
/// ```
#[test]
fn two_lock_deadlock_names_the_cycle() {
    let mut w = world();
    w.run(&[Lock("A", "m1"), Lock("B", "m2"), Lock("B", "m1")]);
    let (a, b, m1, m2) = (w.t("A"), w.t("B"), w.m("m1"), w.m("m2"));
    w.refuse(
        Lock("A", "m2"),
        EngineError::Cycle {
            cycle: vec![
                Node::Task(a),
                Node::Object(m2.into()),
                Node::Task(b),
                Node::Object(m1.into()),
                Node::Task(a),
            ],
        },
    );
    // A is still runnable and can go on.
    assert_eq!(w.e.blocked_on(a).unwrap(), None);
    assert_eq!(w.apply(Unlock("A", "m1")).unwrap().0, "B");
}

/// ```text
/// refused: A ─▶ m1 ─▶ A   (re-locking a mutex A owns)
/// ```
#[test]
fn self_relock_is_a_two_node_cycle() {
    let mut w = world();
    w.run(&[Lock("A", "m1")]);
    let (a, m1) = (w.t("A"), w.m("m1"));
    w.refuse(
        Lock("A", "m1"),
        EngineError::Cycle {
            cycle: vec![Node::Task(a), Node::Object(m1.into()), Node::Task(a)],
        },
    );
    // Same for a ceiling mutex (no donation, still a wait-for edge).
    w.run(&[Lock("A", "mc")]);
    let mc = w.m("mc");
    w.refuse(
        Lock("A", "mc"),
        EngineError::Cycle {
            cycle: vec![Node::Task(a), Node::Object(mc.into()), Node::Task(a)],
        },
    );
}

/// ```text
/// before:  A owns m1, A ─▶ cv ─▶ B (B helps cv)
/// refused: B ─▶ m1 ─▶ A ─▶ cv ─▶ B
/// ```
#[test]
fn cycle_through_a_condvar() {
    let mut w = world();
    w.run(&[Lock("A", "m1"), HelperAdd("cv", "B"), Wait("A", "cv")]);
    let (a, b, m1, cv) = (w.t("A"), w.t("B"), w.m("m1"), w.c("cv"));
    w.refuse(
        Lock("B", "m1"),
        EngineError::Cycle {
            cycle: vec![
                Node::Task(b),
                Node::Object(m1.into()),
                Node::Task(a),
                Node::Object(cv.into()),
                Node::Task(b),
            ],
        },
    );
}

/// ```text
/// refused: A ─▶ cv ─▶ A   (waiting on a condvar one helps)
/// ```
#[test]
fn waiting_on_a_condvar_one_helps() {
    let mut w = world();
    w.run(&[HelperAdd("cv", "B"), HelperAdd("cv", "A")]);
    let (a, cv) = (w.t("A"), w.c("cv"));
    w.refuse(
        Wait("A", "cv"),
        EngineError::Cycle {
            cycle: vec![Node::Task(a), Node::Object(cv.into()), Node::Task(a)],
        },
    );
}

/// ```text
/// before:  C ─▶ cv (no helper), B ─▶ m1 ─▶ C
/// refused: helper_add(cv, B): B ─▶ m1 ─▶ C ─▶ cv ─▶ B
/// also:    helper_add(cv, C): C ─▶ cv ─▶ C
/// ```
#[test]
fn helper_add_that_closes_a_cycle() {
    let mut w = world();
    w.run(&[Lock("C", "m1"), Wait("C", "cv"), Lock("B", "m1")]);
    let (b, c, m1, cv) = (w.t("B"), w.t("C"), w.m("m1"), w.c("cv"));
    w.refuse(
        HelperAdd("cv", "B"),
        EngineError::Cycle {
            cycle: vec![
                Node::Task(b),
                Node::Object(m1.into()),
                Node::Task(c),
                Node::Object(cv.into()),
                Node::Task(b),
            ],
        },
    );
    w.refuse(
        HelperAdd("cv", "C"),
        EngineError::Cycle {
            cycle: vec![Node::Task(c), Node::Object(cv.into()), Node::Task(c)],
        },
    );
    // Adding a helper that is not upstream is fine.
    w.run(&[HelperAdd("cv", "A")]);
}

/// ```text
/// before:  A owns m1 (unknown to the engine: not yet recorded), A ─▶ cv ─▶ B,
///          B ─▶ m1 (no owner recorded)
/// refused: acquire(A, m1): A ─▶ cv ─▶ B ─▶ m1 ─▶ A
/// ```
#[test]
fn late_acquire_that_closes_a_cycle() {
    let mut w = world();
    w.run(&[Lock("C", "m1"), Lock("B", "m1"), Release("C", "m1")]);
    w.run(&[HelperAdd("cv", "B"), Wait("A", "cv")]);
    let (a, b, m1, cv) = (w.t("A"), w.t("B"), w.m("m1"), w.c("cv"));
    w.refuse(
        Acquire("A", "m1"),
        EngineError::Cycle {
            cycle: vec![
                Node::Task(a),
                Node::Object(cv.into()),
                Node::Task(b),
                Node::Object(m1.into()),
                Node::Task(a),
            ],
        },
    );
}

/// A chain of exactly MAX_CHAIN_DEPTH blocked tasks is accepted; the block
/// that would make it MAX_CHAIN_DEPTH + 1 is refused, whether added at the
/// head, at the tail, or by joining two chains in the middle.
#[test]
fn chain_longer_than_the_bound_is_refused() {
    let mut e = Engine::new();
    e.set_debug_checks(false);
    let n = MAX_CHAIN_DEPTH;
    // t[0] ─▶ m[1] ─▶ t[1] ─▶ m[2] ─▶ … ─▶ m[n] ─▶ t[n]: n blocked tasks.
    let t: Vec<_> = (0..=n + 1)
        .map(|_| e.add_task(Urgency::fixed(10)))
        .collect();
    let m: Vec<_> = (0..=n + 1)
        .map(|_| e.add_mutex(Protocol::Inherit))
        .collect();
    for i in 0..=n {
        e.lock(t[i], m[i]).unwrap();
    }
    for i in (1..=n).rev() {
        e.lock(t[i - 1], m[i]).unwrap();
    }
    e.check_invariants().unwrap();
    let head = e.add_task(Urgency::fixed(99));

    // At the head: head ─▶ m[0] ─▶ t[0] … is n + 1 blocked tasks.
    let before = e.clone();
    assert_eq!(
        e.lock(head, m[0]),
        Err(EngineError::ChainTooLong {
            limit: MAX_CHAIN_DEPTH
        })
    );
    assert_eq!(e, before);

    // At the tail: t[n] ─▶ m[n+1] (owned by t[n+1]) is n + 1 as well.
    e.lock(t[n + 1], m[n + 1]).unwrap();
    let before = e.clone();
    assert_eq!(
        e.lock(t[n], m[n + 1]),
        Err(EngineError::ChainTooLong {
            limit: MAX_CHAIN_DEPTH
        })
    );
    assert_eq!(e, before);

    // In the middle: cut the chain (t[500] times out), then rejoin it with
    // one more link in between.
    e.cancel_wait(t[500]).unwrap();
    e.check_invariants().unwrap();
    let mid = e.add_task(Urgency::fixed(10));
    let mm = e.add_mutex(Protocol::Inherit);
    e.lock(mid, mm).unwrap();
    e.lock(mid, m[501]).unwrap(); // mid ─▶ m[501] ─▶ t[501] … (n - 500 + 1)
    let before = e.clone();
    // t[500] ─▶ mm ─▶ mid: 500 blocked upstream + t[500] + 524 blocked from
    // mid down (mid, t[501..n]) = 1025.
    assert_eq!(
        e.lock(t[500], mm),
        Err(EngineError::ChainTooLong {
            limit: MAX_CHAIN_DEPTH
        })
    );
    assert_eq!(e, before);

    // After the cut, the head fits: head, t[0..500] is 501 blocked tasks.
    e.lock(head, m[0]).unwrap();
    assert_eq!(e.effective(t[500]).unwrap().donor(), head);
    assert_eq!(e.effective(t[0]).unwrap().donor(), head);
    e.check_invariants().unwrap();
}

/// `helper_add` joins the chain upstream of a condvar to the chain below the
/// new helper: refused when that makes more than MAX_CHAIN_DEPTH blocked
/// tasks (state unchanged), accepted at exactly MAX_CHAIN_DEPTH, and the
/// boost then reaches the bottom of the joined chain.
///
/// ```text
///   u0(90) ─▶ mu1 ─▶ u1 … ─▶ u599 ─▶ cv        (600 blocked)
///   d0 ─▶ md1 ─▶ d1 ─▶ … ─▶ md425 ─▶ d425      (425 blocked)
///   helper_add(cv, d0): 1025 → refused; after d0 times out,
///   helper_add(cv, d1): 600 + 424 = 1024 → accepted.
/// ```
#[test]
fn helper_add_longer_than_the_bound_is_refused() {
    let mut e = Engine::new();
    e.set_debug_checks(false);
    let (a, b) = (600, MAX_CHAIN_DEPTH + 1 - 600);
    let u: Vec<_> = (0..a)
        .map(|i| e.add_task(Urgency::fixed(if i == 0 { 90 } else { 10 })))
        .collect();
    let mu: Vec<_> = (0..a).map(|_| e.add_mutex(Protocol::Inherit)).collect();
    for i in 1..a {
        e.lock(u[i], mu[i]).unwrap();
    }
    for i in (1..a).rev() {
        e.lock(u[i - 1], mu[i]).unwrap();
    }
    let cv = e.add_cond();
    e.cond_wait(u[a - 1], cv).unwrap();
    let d: Vec<_> = (0..=b).map(|_| e.add_task(Urgency::fixed(10))).collect();
    let md: Vec<_> = (0..=b).map(|_| e.add_mutex(Protocol::Inherit)).collect();
    for i in 1..=b {
        e.lock(d[i], md[i]).unwrap();
    }
    for i in (1..=b).rev() {
        e.lock(d[i - 1], md[i]).unwrap();
    }
    e.check_invariants().unwrap();

    let before = e.clone();
    assert_eq!(
        e.helper_add(cv, d[0]),
        Err(EngineError::ChainTooLong {
            limit: MAX_CHAIN_DEPTH
        })
    );
    assert_eq!(e, before);

    e.cancel_wait(d[0]).unwrap();
    let changes = e.helper_add(cv, d[1]).unwrap();
    assert_eq!(changes.len(), b);
    assert_eq!(e.effective(d[b]).unwrap().donor(), u[0]);
    assert_eq!(e.effective(d[b]).unwrap().urgency, Urgency::fixed(90));
    e.check_invariants().unwrap();
}
