//! Waiter order: by effective urgency, FIFO (enqueue order) among equals;
//! unlock, signal and broadcast follow it; a waiter whose urgency changes is
//! re-sorted but keeps its enqueue order among equals.
//!
//! ```text
//! A1(30) A2(30) B(50) A3(30) enqueue in this order ─▶ m
//! wake order: B, A1, A2, A3
//! ```

use heir_core::Protocol;

use crate::support::{Op::*, World};

fn world() -> World {
    World::new(
        &[
            ("O", 10),
            ("A1", 30),
            ("A2", 30),
            ("B", 50),
            ("A3", 30),
            ("H", 90),
        ],
        &[("m", Protocol::Inherit), ("n", Protocol::Inherit)],
        &["cv"],
    )
}

#[test]
fn mutex_waiters_by_urgency_then_fifo() {
    let mut w = world();
    w.run(&[
        Lock("O", "m"),
        Lock("A1", "m"),
        Lock("A2", "m"),
        Lock("B", "m"),
        Lock("A3", "m"),
    ]);
    assert_eq!(w.waiters("m"), "B,A1,A2,A3");
    let mut order = Vec::new();
    let mut owner = "O";
    for _ in 0..4 {
        let (next, _) = w.apply(Unlock(owner, "m")).unwrap();
        let next: &'static str = w.name(w.t(&next));
        order.push(next);
        owner = next;
    }
    assert_eq!(order, ["B", "A1", "A2", "A3"]);
}

#[test]
fn signal_and_broadcast_follow_wake_order() {
    let mut w = world();
    w.run(&[
        Wait("A1", "cv"),
        Wait("A2", "cv"),
        Wait("B", "cv"),
        Wait("A3", "cv"),
    ]);
    assert_eq!(w.waiters("cv"), "B,A1,A2,A3");
    assert_eq!(w.apply(Signal("cv")).unwrap().0, "B");
    assert_eq!(w.apply(Signal("cv")).unwrap().0, "A1");
    assert_eq!(w.apply(Broadcast("cv")).unwrap().0, "A2,A3");
    assert_eq!(w.apply(Signal("cv")).unwrap().0, "-");
    assert_eq!(w.waiters("cv"), "");
}

#[test]
fn boosted_waiter_moves_ahead_and_back_keeping_fifo() {
    let mut w = world();
    // A1 owns n before it waits on m; H then blocks on n and boosts A1,
    // which passes B in m's queue; when H leaves, A1 returns to its FIFO
    // place among the 30s (ahead of A2, which enqueued later).
    w.run(&[
        Lock("O", "m"),
        Lock("A1", "n"),
        Lock("A1", "m"),
        Lock("A2", "m"),
        Lock("B", "m"),
    ]);
    assert_eq!(w.waiters("m"), "B,A1,A2");
    let (_, ch) = w.apply(Lock("H", "n")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![("A1", 30, "A1", 90, "H"), ("O", 50, "B", 90, "H")]
    );
    assert_eq!(w.waiters("m"), "A1,B,A2");
    let (_, ch) = w.apply(Cancel("H")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![("A1", 90, "H", 30, "A1"), ("O", 90, "H", 50, "B")]
    );
    assert_eq!(w.waiters("m"), "B,A1,A2");
    assert_eq!(w.apply(Unlock("O", "m")).unwrap().0, "B");
}

#[test]
fn equal_contributions_earliest_enqueued_top_waiter_is_donor() {
    // O owns m and n; X(40) waits on n first, then Y(40) on m: O is at 40
    // with donor X (the earlier top waiter), whichever object it sits on.
    let mut w = World::new(
        &[("O", 10), ("X", 40), ("Y", 40)],
        &[("m", Protocol::Inherit), ("n", Protocol::Inherit)],
        &[],
    );
    w.run(&[Lock("O", "m"), Lock("O", "n"), Lock("X", "n")]);
    let (_, ch) = w.apply(Lock("Y", "m")).unwrap();
    assert!(ch.is_empty());
    w.assert_eff(&[("O", 40, "X")], "earliest top waiter");
    let (_, ch) = w.apply(Cancel("X")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("O", 40, "X", 40, "Y")]);
}
