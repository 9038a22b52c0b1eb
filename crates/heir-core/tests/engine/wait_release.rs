//! A condvar wait that gives its mutex up in the same step
//! (`cond_wait_unlock`, `cond_wait_release`), as `pthread_cond_wait(c, m)`
//! does: the cycle check sees the graph after the release, so the textbook
//! pattern — a helper blocked on the waiter's mutex, about to signal — is no
//! deadlock.
//!
//! ```text
//! before                         after cond_wait_unlock(C, cv, m)
//! P(10) ─▶ m ─▶ C(80)            C(80) ─▶ cv ─▶ P(10)   P owns m, at 80 (C)
//!   ▲               (C helps     D(60) ─▶ m ─▶ P         (second waiter D)
//!   └── cv ◀── helper P)
//! ```

use heir_core::{EngineError, Node, Protocol};

use crate::support::{run_table, Case, Op::*, World};

fn world() -> World {
    World::new(
        &[("C", 80), ("D", 60), ("P", 10), ("H", 90), ("L", 30)],
        &[
            ("m", Protocol::Inherit),
            ("m2", Protocol::Inherit),
            ("pc", Protocol::Ceiling(crate::support::fx(70))),
        ],
        &["cv"],
    )
}

#[test]
fn waits_that_release_their_mutex() {
    run_table(
        world,
        &[
            Case {
                name: "textbook pattern: the blocked helper gets m and the waiter's priority",
                setup: &[HelperAdd("cv", "P"), Lock("C", "m"), Lock("P", "m")],
                op: WaitUnlock("C", "cv", "m"),
                value: "P",
                changes: &[("P", 10, "P", 80, "C")],
                after: &[("C", 80, "C"), ("P", 80, "C")],
            },
            Case {
                name: "kernel hand-over: m is released, the helper inherits while blocked on it",
                setup: &[HelperAdd("cv", "P"), Lock("C", "m"), Lock("P", "m")],
                op: WaitRelease("C", "cv", "m"),
                value: "",
                changes: &[("P", 10, "P", 80, "C")],
                after: &[("C", 80, "C"), ("P", 80, "C")],
            },
            Case {
                name: "the remaining waiters of m donate to its new owner",
                setup: &[
                    HelperAdd("cv", "P"),
                    Lock("C", "m"),
                    Lock("P", "m"),
                    Lock("H", "m"),
                ],
                // H (90), m's top waiter, gets m; P stays blocked on m and
                // inherits C's 80 through cv (H, at 90, gains nothing); C
                // loses H's 90.
                op: WaitUnlock("C", "cv", "m"),
                value: "H",
                changes: &[("C", 90, "H", 80, "C"), ("P", 10, "P", 80, "C")],
                after: &[("H", 90, "H"), ("P", 80, "C"), ("C", 80, "C")],
            },
            Case {
                name: "the waiter's inherited boost through m ends with the release",
                setup: &[Lock("L", "m"), Lock("H", "m"), HelperAdd("cv", "P")],
                op: WaitUnlock("L", "cv", "m"),
                value: "H",
                changes: &[("L", 90, "H", 30, "L"), ("P", 10, "P", 30, "L")],
                after: &[("L", 30, "L"), ("H", 90, "H"), ("P", 30, "L")],
            },
            Case {
                name: "a ceiling mutex given up takes its floor with it",
                setup: &[Lock("L", "pc"), HelperAdd("cv", "P")],
                op: WaitUnlock("L", "cv", "pc"),
                value: "-",
                changes: &[("L", 70, "pc@L", 30, "L"), ("P", 10, "P", 30, "L")],
                after: &[("L", 30, "L"), ("P", 30, "L")],
            },
        ],
    );
}

/// The same pattern with the two steps apart (wait, then unlock) is refused:
/// this is the false EDEADLK users saw before the atomic operation.
#[test]
fn wait_before_unlock_sees_a_cycle_that_the_atomic_wait_does_not() {
    let mut w = world();
    w.run(&[HelperAdd("cv", "P"), Lock("C", "m"), Lock("P", "m")]);
    let (c, p, m, cv) = (w.t("C"), w.t("P"), w.m("m"), w.c("cv"));
    w.refuse(
        Wait("C", "cv"),
        EngineError::Cycle {
            cycle: vec![
                Node::Task(c),
                Node::Object(cv.into()),
                Node::Task(p),
                Node::Object(m.into()),
                Node::Task(c),
            ],
        },
    );
    w.run(&[WaitUnlock("C", "cv", "m")]);
    assert_eq!(w.e.owner(m).unwrap(), Some(p));
    assert_eq!(w.waiters("cv"), "C");
    // P signals and unlocks: C is woken and can take m back.
    w.run(&[Signal("cv"), Unlock("P", "m"), Lock("C", "m")]);
    assert_eq!(w.e.owner(m).unwrap(), Some(c));
    w.assert_eff(&[("P", 10, "P"), ("C", 80, "C")], "after the round trip");
}

/// A cycle that does not go through the released mutex is still a deadlock:
/// refused, nothing changed, the cycle named.
///
/// ```text
/// P(10) ─▶ m2 ─▶ C(80)     C owns m and m2, waits on cv releasing m only:
///   ▲                      C ─▶ cv ─▶ P ─▶ m2 ─▶ C
///   └── cv (helper P)
/// ```
#[test]
fn a_cycle_through_another_mutex_is_still_refused() {
    let mut w = world();
    w.run(&[
        HelperAdd("cv", "P"),
        Lock("C", "m"),
        Lock("C", "m2"),
        Lock("P", "m2"),
    ]);
    let (c, p, m2, cv) = (w.t("C"), w.t("P"), w.m("m2"), w.c("cv"));
    let cycle = vec![
        Node::Task(c),
        Node::Object(cv.into()),
        Node::Task(p),
        Node::Object(m2.into()),
        Node::Task(c),
    ];
    w.refuse(
        WaitUnlock("C", "cv", "m"),
        EngineError::Cycle {
            cycle: cycle.clone(),
        },
    );
    w.refuse(WaitRelease("C", "cv", "m"), EngineError::Cycle { cycle });
}

#[test]
fn preconditions() {
    let mut w = world();
    w.run(&[Lock("D", "m")]);
    let (c, m) = (w.t("C"), w.m("m"));
    w.refuse(
        WaitUnlock("C", "cv", "m"),
        EngineError::NotOwner { task: c, mutex: m },
    );
    w.refuse(
        WaitRelease("C", "cv", "m"),
        EngineError::NotOwner { task: c, mutex: m },
    );
    w.run(&[Lock("C", "m2"), Lock("C", "m")]);
    w.refuse(WaitUnlock("C", "cv", "m2"), EngineError::AlreadyBlocked(c));
}
