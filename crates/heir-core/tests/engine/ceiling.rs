//! Immediate priority ceiling (IPCP): the owner of a ceiling mutex runs
//! at least at the ceiling from the moment it locks; nested ceilings take the
//! maximum and unwind in any order; waiters do not donate.
//!
//! ```text
//! T(10) owns c50 (ceiling 50)          T at 50, source c50@T (a floor)
//! T(10) owns c50, c70                  T at 70
//! H(90) ─▶ c50 ─▶ T                    T stays at 50: ceiling waiters donate nothing
//! ```

use heir_core::Protocol;

use crate::support::{fx, run_table, Case, Op::*, World};

fn world() -> World {
    World::new(
        &[("T", 10), ("U", 20), ("H", 90), ("W", 60), ("X", 50)],
        &[
            ("c50", Protocol::Ceiling(fx(50))),
            ("c70", Protocol::Ceiling(fx(70))),
            ("c5", Protocol::Ceiling(fx(5))),
            ("pi", Protocol::Inherit),
        ],
        &[],
    )
}

#[test]
fn ceiling_floor() {
    run_table(
        world,
        &[
            Case {
                name: "lock raises the owner at once, source the ceiling",
                setup: &[],
                op: Lock("T", "c50"),
                value: "acquired",
                changes: &[("T", 10, "T", 50, "c50@T")],
                after: &[("T", 50, "c50@T")],
            },
            Case {
                name: "unlock restores",
                setup: &[Lock("T", "c50")],
                op: Unlock("T", "c50"),
                value: "-",
                changes: &[("T", 50, "c50@T", 10, "T")],
                after: &[("T", 10, "T")],
            },
            Case {
                name: "nested: the higher ceiling wins",
                setup: &[Lock("T", "c50")],
                op: Lock("T", "c70"),
                value: "acquired",
                changes: &[("T", 50, "c50@T", 70, "c70@T")],
                after: &[("T", 70, "c70@T")],
            },
            Case {
                name: "nested, LIFO unwind: back to the outer ceiling",
                setup: &[Lock("T", "c50"), Lock("T", "c70")],
                op: Unlock("T", "c70"),
                value: "-",
                changes: &[("T", 70, "c70@T", 50, "c50@T")],
                after: &[("T", 50, "c50@T")],
            },
            Case {
                name: "nested, non-LIFO unwind: releasing the lower keeps the higher",
                setup: &[Lock("T", "c50"), Lock("T", "c70")],
                op: Unlock("T", "c50"),
                value: "-",
                changes: &[],
                after: &[("T", 70, "c70@T")],
            },
            Case {
                name: "a ceiling below the base changes nothing",
                setup: &[],
                op: Lock("T", "c5"),
                value: "acquired",
                changes: &[],
                after: &[("T", 10, "T")],
            },
            Case {
                name: "a waiter of a ceiling mutex donates nothing",
                setup: &[Lock("T", "c50")],
                op: Lock("H", "c50"),
                value: "blocked",
                changes: &[],
                after: &[("T", 50, "c50@T"), ("H", 90, "H")],
            },
            Case {
                name: "handoff: the new owner gets the floor, the old one loses it",
                setup: &[Lock("T", "c70"), Lock("U", "c70")],
                op: Unlock("T", "c70"),
                value: "U",
                changes: &[("T", 70, "c70@T", 10, "T"), ("U", 20, "U", 70, "c70@U")],
                after: &[("T", 10, "T"), ("U", 70, "c70@U")],
            },
            Case {
                name: "inheritance above the ceiling wins, donor the waiter",
                setup: &[Lock("T", "c50"), Lock("T", "pi")],
                op: Lock("W", "pi"),
                value: "blocked",
                changes: &[("T", 50, "c50@T", 60, "W")],
                after: &[("T", 60, "W")],
            },
            Case {
                name: "inheritance equal to the ceiling: the floor wins the tie",
                setup: &[Lock("T", "c50"), Lock("T", "pi")],
                op: Lock("X", "pi"),
                value: "blocked",
                changes: &[],
                after: &[("T", 50, "c50@T")],
            },
            Case {
                name: "the ceiling holder passes its floor on when it blocks on a PI mutex",
                setup: &[Lock("U", "pi"), Lock("T", "c70")],
                op: Lock("T", "pi"),
                value: "blocked",
                changes: &[("U", 20, "U", 70, "c70@T")],
                after: &[("T", 70, "c70@T"), ("U", 70, "c70@T")],
            },
        ],
    );
}
