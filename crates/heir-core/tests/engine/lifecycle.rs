//! Task lifecycle and base changes: remove_task drops a helper from every
//! helper set, set_base re-propagates, acquire/release record ownership the
//! engine did not see.

use heir_core::{EngineError, ObjId, Protocol};

use crate::support::{fx, run_table, Case, Op::*, World};

fn world() -> World {
    World::new(
        &[("W", 80), ("P", 10), ("Q", 20), ("O", 5), ("X", 50)],
        &[("m", Protocol::Inherit), ("mc", Protocol::Ceiling(fx(60)))],
        &["cv", "cv2"],
    )
}

/// ```text
/// before: W(80) ─▶ cv ─▶ P(10)    P at 80 (W)
///                     └─▶ Q(20)   Q at 80 (W)
/// remove_task(P): P is gone; Q still inherits; a new helper inherits too
/// ```
#[test]
fn remove_task_revokes_what_a_helper_inherited() {
    let mut w = world();
    w.run(&[
        HelperAdd("cv", "P"),
        HelperAdd("cv2", "P"),
        HelperAdd("cv", "Q"),
        Wait("W", "cv"),
    ]);
    w.assert_eff(&[("P", 80, "W"), ("Q", 80, "W")], "before");
    let (p, q, o, cv, cv2) = (w.t("P"), w.t("Q"), w.t("O"), w.c("cv"), w.c("cv2"));
    let (_, ch) = w.apply(Remove("P")).unwrap();
    assert!(ch.is_empty(), "no other task changes: {ch:?}");
    assert_eq!(w.e.effective(p), Err(EngineError::StaleTask(p)));
    assert_eq!(w.e.helpers(cv).unwrap(), &[q]);
    assert!(w.e.helpers(cv2).unwrap().is_empty());
    assert!(w.e.tasks().all(|t| t != p));
    // A new helper inherits at once; signal revokes only live helpers.
    let (_, ch) = w.apply(HelperAdd("cv", "O")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("O", 5, "O", 80, "W")]);
    assert_eq!(w.e.helpers(cv).unwrap(), &[q, o]);
    let (v, ch) = w.apply(Signal("cv")).unwrap();
    assert_eq!(v, "W");
    assert_eq!(
        w.change_rows(&ch),
        vec![("Q", 80, "W", 20, "Q"), ("O", 80, "W", 5, "O")]
    );
}

/// ```text
/// W(80) ─▶ m ─▶ O(5) ─▶ cv ─▶ P(10)    (O blocked on cv helped by P)
/// set_base(W): the new value runs down to P; set_base(O) above W: O
/// becomes its own donor and P follows.
/// ```
#[test]
fn set_base_propagates() {
    run_table(
        || {
            let mut w = world();
            w.run(&[
                Lock("O", "m"),
                HelperAdd("cv", "P"),
                Wait("O", "cv"),
                Lock("W", "m"),
            ]);
            w
        },
        &[
            Case {
                name: "raising the head's base raises the chain",
                setup: &[],
                op: SetBase("W", 90),
                value: "",
                changes: &[
                    ("W", 80, "W", 90, "W"),
                    ("O", 80, "W", 90, "W"),
                    ("P", 80, "W", 90, "W"),
                ],
                after: &[("P", 90, "W")],
            },
            Case {
                name: "lowering the head's base lowers the chain, down to P's own",
                setup: &[],
                op: SetBase("W", 7),
                value: "",
                changes: &[
                    ("W", 80, "W", 7, "W"),
                    ("O", 80, "W", 7, "W"),
                    ("P", 80, "W", 10, "P"),
                ],
                after: &[("O", 7, "W"), ("P", 10, "P")],
            },
            Case {
                name: "a middle task's base above the donor's: it becomes the donor",
                setup: &[],
                op: SetBase("O", 85),
                value: "",
                changes: &[("O", 80, "W", 85, "O"), ("P", 80, "W", 85, "O")],
                after: &[("W", 80, "W"), ("O", 85, "O"), ("P", 85, "O")],
            },
            Case {
                name: "a middle task's base equal to the donor's: own base wins the tie",
                setup: &[],
                op: SetBase("O", 80),
                value: "",
                changes: &[("O", 80, "W", 80, "O"), ("P", 80, "W", 80, "O")],
                after: &[("O", 80, "O"), ("P", 80, "O")],
            },
            Case {
                name: "a boosted tail's base below the boost: nothing visible changes",
                setup: &[],
                op: SetBase("P", 1),
                value: "",
                changes: &[],
                after: &[("P", 80, "W")],
            },
        ],
    );
}

/// acquire/release: ownership recorded after the fact (PI futex fast path,
/// kernel-chosen owner).
#[test]
fn acquire_and_release() {
    let mut w = world();
    let (p, q, x, m) = (w.t("P"), w.t("Q"), w.t("X"), w.m("m"));
    // P took m on the fast path; Q contends: the runtime records P first.
    let (_, ch) = w.apply(Acquire("P", "m")).unwrap();
    assert!(ch.is_empty());
    assert_eq!(w.e.owner(m).unwrap(), Some(p));
    // Recording it twice is harmless.
    assert!(w.apply(Acquire("P", "m")).unwrap().1.is_empty());
    w.run(&[Lock("Q", "m"), Lock("X", "m")]);
    w.assert_eff(&[("P", 50, "X")], "P inherits the top waiter");
    // Slow-path unlock: P releases; its waiters stay blocked on m.
    let (_, ch) = w.apply(Release("P", "m")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("P", 50, "X", 10, "P")]);
    assert_eq!(w.e.owner(m).unwrap(), None);
    assert_eq!(w.e.blocked_on(x).unwrap(), Some(ObjId::from(m)));
    // The kernel gives m to Q (not the top waiter): Q is unblocked, owns m
    // and inherits X.
    let (_, ch) = w.apply(Acquire("Q", "m")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("Q", 20, "Q", 50, "X")]);
    assert_eq!(w.e.blocked_on(q).unwrap(), None);
    assert_eq!(w.e.owner(m).unwrap(), Some(q));
    assert_eq!(w.waiters("m"), "X");
    // A lock on a mutex owned in the engine blocks as usual.
    w.refuse(
        Acquire("P", "m"),
        EngineError::AlreadyOwned { mutex: m, owner: q },
    );
}

/// Late ownership while the owner waits elsewhere: it stays blocked there
/// and passes the inherited urgency on.
///
/// ```text
/// X(50) ─▶ m (no owner recorded)       O(5) ─▶ cv ─▶ P(10)
/// acquire(O, m): X ─▶ m ─▶ O ─▶ cv ─▶ P: O and P at 50 (X)
/// ```
#[test]
fn late_acquire_while_blocked_elsewhere() {
    let mut w = world();
    w.run(&[
        Lock("Q", "m"),
        Lock("X", "m"),
        Release("Q", "m"),
        HelperAdd("cv", "P"),
        Wait("O", "cv"),
    ]);
    let (_, ch) = w.apply(Acquire("O", "m")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![("O", 5, "O", 50, "X"), ("P", 10, "P", 50, "X")]
    );
    assert_eq!(
        w.e.blocked_on(w.t("O")).unwrap(),
        Some(ObjId::from(w.c("cv")))
    );
}

/// A lock on a free mutex that still has waiters (left by release): the
/// caller takes it and inherits them; a ceiling mutex gives its floor.
#[test]
fn lock_of_a_released_mutex_with_waiters() {
    let mut w = world();
    w.run(&[Lock("Q", "m"), Lock("X", "m"), Release("Q", "m")]);
    let (v, ch) = w.apply(Lock("P", "m")).unwrap();
    assert_eq!(v, "acquired");
    assert_eq!(w.change_rows(&ch), vec![("P", 10, "P", 50, "X")]);
    let (v, ch) = w.apply(Lock("P", "mc")).unwrap();
    assert_eq!(v, "acquired");
    assert_eq!(w.change_rows(&ch), vec![("P", 50, "X", 60, "mc@P")]);
}
