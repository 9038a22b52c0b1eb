//! `Protocol::None`: waiters wait, the owner keeps its own urgency; the
//! mutex still hands over to its top waiter and still counts for cycles.
//!
//! ```text
//! H(90) ─▶ m ─▶ L(10)        L stays at 10
//! ```

use heir_core::{EngineError, Node, Protocol};

use crate::support::{run_table, Case, Op::*, World};

fn world() -> World {
    World::new(
        &[("L", 10), ("H", 90), ("M", 50), ("M2", 50)],
        &[("m", Protocol::None), ("pi", Protocol::Inherit)],
        &["cv"],
    )
}

#[test]
fn no_donation() {
    run_table(
        world,
        &[
            Case {
                name: "a more urgent waiter does not boost the owner",
                setup: &[Lock("L", "m")],
                op: Lock("H", "m"),
                value: "blocked",
                changes: &[],
                after: &[("L", 10, "L"), ("H", 90, "H")],
            },
            Case {
                name: "unlock hands over to the top waiter",
                setup: &[Lock("L", "m"), Lock("M", "m"), Lock("H", "m")],
                op: Unlock("L", "m"),
                value: "H",
                changes: &[],
                after: &[("L", 10, "L"), ("H", 90, "H")],
            },
            Case {
                name: "a boosted waiter of a no-PI mutex does not pass it on",
                setup: &[Lock("L", "m"), Lock("M", "pi"), Lock("M", "m")],
                op: Lock("H", "pi"),
                value: "blocked",
                changes: &[("M", 50, "M", 90, "H")],
                after: &[("L", 10, "L"), ("M", 90, "H")],
            },
        ],
    );
}

#[test]
fn no_pi_mutexes_still_form_cycles() {
    let mut w = world();
    w.run(&[Lock("L", "m"), Lock("H", "pi"), Lock("L", "pi")]);
    w.refuse(
        Lock("H", "m"),
        EngineError::Cycle {
            cycle: vec![
                Node::Task(w.t("H")),
                Node::Object(w.m("m").into()),
                Node::Task(w.t("L")),
                Node::Object(w.m("pi").into()),
                Node::Task(w.t("H")),
            ],
        },
    );
}
