//! Priority inheritance through chains of PI mutexes.
//!
//! ```text
//! before (setup):  B(50) ─▶ m2 ─▶ C(10)          C at 50 (donor B)
//! after lock:      A(90) ─▶ m1 ─▶ B(50) ─▶ m2 ─▶ C(10)
//!                  B and C at 90, donor A
//! unwinding:       C unlocks m2 → B owns m2 (still 90 via m1), C back to 10;
//!                  B unlocks m1 → A owns m1, B back to 50.
//! ```

use heir_core::Protocol;

use crate::support::{run_table, Case, Op::*, World};

fn world() -> World {
    World::new(
        &[("A", 90), ("B", 50), ("C", 10), ("D", 20)],
        &[("m1", Protocol::Inherit), ("m2", Protocol::Inherit)],
        &[],
    )
}

const BUILD: &[crate::support::Op] = &[Lock("C", "m2"), Lock("B", "m1"), Lock("B", "m2")];
const FULL: &[crate::support::Op] = &[
    Lock("C", "m2"),
    Lock("B", "m1"),
    Lock("B", "m2"),
    Lock("A", "m1"),
];

#[test]
fn chain_through_two_mutexes() {
    run_table(
        world,
        &[
            Case {
                name: "B blocks on m2: C inherits B",
                setup: &[Lock("C", "m2"), Lock("B", "m1")],
                op: Lock("B", "m2"),
                value: "blocked",
                changes: &[("C", 10, "C", 50, "B")],
                after: &[("A", 90, "A"), ("B", 50, "B"), ("C", 50, "B")],
            },
            Case {
                name: "A blocks on m1: the boost runs down the chain to C",
                setup: BUILD,
                op: Lock("A", "m1"),
                value: "blocked",
                changes: &[("B", 50, "B", 90, "A"), ("C", 50, "B", 90, "A")],
                after: &[("A", 90, "A"), ("B", 90, "A"), ("C", 90, "A")],
            },
            Case {
                name: "a less urgent waiter joins m1: nothing changes",
                setup: FULL,
                op: Lock("D", "m1"),
                value: "blocked",
                changes: &[],
                after: &[("B", 90, "A"), ("C", 90, "A"), ("D", 20, "D")],
            },
            Case {
                name: "C unlocks m2: B owns it and keeps A's boost, C unwinds",
                setup: FULL,
                op: Unlock("C", "m2"),
                value: "B",
                changes: &[("C", 90, "A", 10, "C")],
                after: &[("B", 90, "A"), ("C", 10, "C")],
            },
            Case {
                name: "then B unlocks m1: A owns it, B unwinds",
                setup: &[
                    Lock("C", "m2"),
                    Lock("B", "m1"),
                    Lock("B", "m2"),
                    Lock("A", "m1"),
                    Unlock("C", "m2"),
                ],
                op: Unlock("B", "m1"),
                value: "A",
                changes: &[("B", 90, "A", 50, "B")],
                after: &[("A", 90, "A"), ("B", 50, "B"), ("C", 10, "C")],
            },
            Case {
                name: "A times out: the whole chain falls back to B's urgency",
                setup: FULL,
                op: Cancel("A"),
                value: "",
                changes: &[("B", 90, "A", 50, "B"), ("C", 90, "A", 50, "B")],
                after: &[("A", 90, "A"), ("B", 50, "B"), ("C", 50, "B")],
            },
            Case {
                name: "B times out on m2: C unwinds, B keeps A's boost",
                setup: FULL,
                op: Cancel("B"),
                value: "",
                changes: &[("C", 90, "A", 10, "C")],
                after: &[("B", 90, "A"), ("C", 10, "C")],
            },
            Case {
                name: "the remaining waiter donates to the new owner",
                setup: &[Lock("C", "m1"), Lock("A", "m1"), Lock("D", "m1")],
                op: Unlock("C", "m1"),
                value: "A",
                changes: &[("C", 90, "A", 10, "C")],
                after: &[("A", 90, "A"), ("C", 10, "C"), ("D", 20, "D")],
            },
            Case {
                name: "handoff to a less urgent waiter: the next one boosts it",
                setup: &[Lock("C", "m1"), Lock("B", "m1"), Lock("D", "m1")],
                op: Unlock("C", "m1"),
                value: "B",
                changes: &[("C", 50, "B", 10, "C")],
                after: &[("B", 50, "B"), ("C", 10, "C"), ("D", 20, "D")],
            },
        ],
    );
}

/// Every link of a long chain carries the head's urgency, and it unwinds
/// link by link.
#[test]
fn long_chain_boosts_every_link() {
    let mut e = heir_core::Engine::new();
    let n = 16;
    let tasks: Vec<_> = (0..n)
        .map(|i| e.add_task(crate::support::fx(10 + i as u8)))
        .collect();
    let ms: Vec<_> = (0..n).map(|_| e.add_mutex(Protocol::Inherit)).collect();
    for i in 0..n {
        e.lock(tasks[i], ms[i]).unwrap();
    }
    // tasks[i] blocks on ms[i-1] (owned by tasks[i-1]), from the tail: the
    // most urgent task (n-1) is at the head of the chain.
    for i in 1..n {
        e.lock(tasks[i], ms[i - 1]).unwrap();
    }
    for &t in &tasks {
        assert_eq!(
            e.effective(t).unwrap().urgency,
            crate::support::fx(10 + n as u8 - 1)
        );
        assert_eq!(e.effective(t).unwrap().donor(), tasks[n - 1]);
    }
    // The most urgent task times out: every link falls to the next head.
    let ch = e.cancel_wait(tasks[n - 1]).unwrap();
    assert_eq!(ch.len(), n - 1);
    for (k, c) in ch.iter().enumerate() {
        // Propagation order: from the head of the chain to its tail.
        assert_eq!(c.task, tasks[n - 2 - k]);
        assert_eq!(c.new.urgency, crate::support::fx(10 + n as u8 - 2));
        assert_eq!(c.new.donor(), tasks[n - 2]);
    }
    e.check_invariants().unwrap();
}
