//! PI-CV (the PI-CV paper): a waiter on a condvar donates to every helper, until it
//! is woken (signal, broadcast), times out (cancel_wait) or the helper is
//! removed; helpers added while waiters wait are boosted at once; boosts are
//! transitive through other condvars and PI mutexes.

use heir_core::{Engine, Protocol, TaskId, Urgency};

use crate::support::{fx, run_table, Case, Op::*, World};

/// ```text
/// C(80) ─▶ cv ─▶ P(10)     consumer C waits, producer P helps: P at 80 (C)
/// D(60) ─┘   └─▶ Q(30)     (second waiter D, second helper Q where used)
/// ```
fn world() -> World {
    World::new(
        &[("C", 80), ("D", 60), ("P", 10), ("Q", 30), ("R", 95)],
        &[("m", Protocol::Inherit)],
        &["cv", "cv2"],
    )
}

#[test]
fn helper_boost_and_revoke() {
    run_table(
        world,
        &[
            Case {
                name: "wait boosts the helper",
                setup: &[HelperAdd("cv", "P")],
                op: Wait("C", "cv"),
                value: "",
                changes: &[("P", 10, "P", 80, "C")],
                after: &[("C", 80, "C"), ("P", 80, "C")],
            },
            Case {
                name: "signal wakes the top waiter and revokes its donation",
                setup: &[HelperAdd("cv", "P"), Wait("C", "cv")],
                op: Signal("cv"),
                value: "C",
                changes: &[("P", 80, "C", 10, "P")],
                after: &[("P", 10, "P")],
            },
            Case {
                name: "signal with two waiters: the helper falls to the next one",
                setup: &[HelperAdd("cv", "P"), Wait("D", "cv"), Wait("C", "cv")],
                op: Signal("cv"),
                value: "C",
                changes: &[("P", 80, "C", 60, "D")],
                after: &[("P", 60, "D")],
            },
            Case {
                name: "broadcast wakes all in order and revokes everything",
                setup: &[HelperAdd("cv", "P"), Wait("D", "cv"), Wait("C", "cv")],
                op: Broadcast("cv"),
                value: "C,D",
                changes: &[("P", 80, "C", 10, "P")],
                after: &[("P", 10, "P")],
            },
            Case {
                name: "timeout of the top waiter: the helper falls to the next one",
                setup: &[HelperAdd("cv", "P"), Wait("C", "cv"), Wait("D", "cv")],
                op: Cancel("C"),
                value: "",
                changes: &[("P", 80, "C", 60, "D")],
                after: &[("P", 60, "D")],
            },
            Case {
                name: "timeout of a lesser waiter changes nothing",
                setup: &[HelperAdd("cv", "P"), Wait("C", "cv"), Wait("D", "cv")],
                op: Cancel("D"),
                value: "",
                changes: &[],
                after: &[("P", 80, "C")],
            },
            Case {
                name: "helper_del while a waiter waits revokes at once",
                setup: &[HelperAdd("cv", "P"), Wait("C", "cv")],
                op: HelperDel("cv", "P"),
                value: "",
                changes: &[("P", 80, "C", 10, "P")],
                after: &[("P", 10, "P")],
            },
            Case {
                name: "helper added while a waiter waits is boosted at once",
                setup: &[Wait("C", "cv")],
                op: HelperAdd("cv", "P"),
                value: "",
                changes: &[("P", 10, "P", 80, "C")],
                after: &[("P", 80, "C")],
            },
            Case {
                name: "every helper is boosted, in helper order",
                setup: &[HelperAdd("cv", "Q"), HelperAdd("cv", "P")],
                op: Wait("C", "cv"),
                value: "",
                changes: &[("Q", 30, "Q", 80, "C"), ("P", 10, "P", 80, "C")],
                after: &[("P", 80, "C"), ("Q", 80, "C")],
            },
            Case {
                name: "a helper more urgent than the waiter is not boosted",
                setup: &[HelperAdd("cv", "R"), HelperAdd("cv", "P")],
                op: Wait("C", "cv"),
                value: "",
                changes: &[("P", 10, "P", 80, "C")],
                after: &[("R", 95, "R"), ("P", 80, "C")],
            },
            Case {
                name: "a condvar without helpers donates to nobody",
                setup: &[],
                op: Wait("R", "cv"),
                value: "",
                changes: &[],
                after: &[("P", 10, "P"), ("Q", 30, "Q")],
            },
            Case {
                name: "transitive through two condvars: C ─▶ cv ─▶ Q ─▶ cv2 ─▶ P",
                setup: &[
                    HelperAdd("cv", "Q"),
                    HelperAdd("cv2", "P"),
                    Wait("Q", "cv2"),
                ],
                op: Wait("C", "cv"),
                value: "",
                changes: &[("Q", 30, "Q", 80, "C"), ("P", 30, "Q", 80, "C")],
                after: &[("Q", 80, "C"), ("P", 80, "C")],
            },
            Case {
                name: "a blocked helper removed mid-chain unwinds the chain below it",
                setup: &[
                    HelperAdd("cv", "Q"),
                    HelperAdd("cv2", "P"),
                    Wait("Q", "cv2"),
                    Wait("C", "cv"),
                ],
                op: HelperDel("cv", "Q"),
                value: "",
                changes: &[("Q", 80, "C", 30, "Q"), ("P", 80, "C", 30, "Q")],
                after: &[("Q", 30, "Q"), ("P", 30, "Q")],
            },
        ],
    );
}

/// The PI-CV paper's Fig. 7 (paper priorities 1 = most urgent; here SCHED_FIFO
/// Consumer 40 > Annoyer 30 > Producer 20 > Mutex 10). The consumer waits on
/// the condvar the producer helps; the producer blocks on the PI mutex M held
/// by the Mutex thread; the boost reaches the Mutex thread.
///
/// ```text
/// Cons(40) ─▶ cv ─▶ Prod(20) ─▶ M ─▶ Mutex(10)     Prod, Mutex at 40 (Cons)
/// Annoy(30)  (runnable, never boosted)
/// unwinding: Mutex unlocks M → Prod owns M, Mutex back to 10;
///            Prod unlocks M (no change), signals cv → Prod back to 20.
/// ```
#[test]
fn picv_fig7_cond_then_mutex() {
    let mut w = World::new(
        &[("Cons", 40), ("Annoy", 30), ("Prod", 20), ("Mutex", 10)],
        &[("M", Protocol::Inherit)],
        &["more"],
    );
    w.run(&[HelperAdd("more", "Prod"), Lock("Mutex", "M")]);

    let (_, ch) = w.apply(Wait("Cons", "more")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("Prod", 20, "Prod", 40, "Cons")]);

    let (v, ch) = w.apply(Lock("Prod", "M")).unwrap();
    assert_eq!(v, "blocked");
    assert_eq!(w.change_rows(&ch), vec![("Mutex", 10, "Mutex", 40, "Cons")]);
    // The Mutex thread now outranks the annoyer.
    assert!(w.e.effective(w.t("Mutex")).unwrap().urgency > fx(30));
    w.assert_eff(&[("Annoy", 30, "Annoy")], "annoyer untouched");

    let (v, ch) = w.apply(Unlock("Mutex", "M")).unwrap();
    assert_eq!(v, "Prod");
    assert_eq!(w.change_rows(&ch), vec![("Mutex", 40, "Cons", 10, "Mutex")]);
    w.assert_eff(
        &[("Prod", 40, "Cons")],
        "producer keeps the consumer's boost",
    );

    let (v, ch) = w.apply(Unlock("Prod", "M")).unwrap();
    assert_eq!((v.as_str(), ch.len()), ("-", 0));

    let (v, ch) = w.apply(Signal("more")).unwrap();
    assert_eq!(v, "Cons");
    assert_eq!(w.change_rows(&ch), vec![("Prod", 40, "Cons", 20, "Prod")]);
    for t in ["Cons", "Annoy", "Prod", "Mutex"] {
        assert_eq!(w.eff(t).1, t, "{t} back to its own urgency");
    }
}

/// The PI-CV paper's Fig. 3: F waits on a condvar helped by D and G. Here B and C
/// wait on mutex mB owned by A, D on mD owned by A, E on mE owned by D.
///
/// ```text
///   B(20) ─▶ mB ─▶ A(10)          before F waits: A at 40 (E), D at 40 (E)
///   C(30) ─┘       ▲
///   E(40) ─▶ mE ─▶ D(15) ─▶ mD ─┘
///   F(70) ─▶ cv ─▶ D               after: D, A and G at 70 (F)
///               └▶ G(5)
/// ```
#[test]
fn picv_fig3_dag() {
    let mut w = World::new(
        &[
            ("A", 10),
            ("B", 20),
            ("C", 30),
            ("D", 15),
            ("E", 40),
            ("F", 70),
            ("G", 5),
        ],
        &[
            ("mB", Protocol::Inherit),
            ("mD", Protocol::Inherit),
            ("mE", Protocol::Inherit),
        ],
        &["cv"],
    );
    w.run(&[
        Lock("A", "mB"),
        Lock("A", "mD"),
        Lock("D", "mE"),
        Lock("B", "mB"),
        Lock("C", "mB"),
        Lock("E", "mE"),
        Lock("D", "mD"),
        HelperAdd("cv", "D"),
        HelperAdd("cv", "G"),
    ]);
    w.assert_eff(
        &[("A", 40, "E"), ("D", 40, "E"), ("G", 5, "G")],
        "before F waits",
    );

    let (_, ch) = w.apply(Wait("F", "cv")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![
            ("D", 40, "E", 70, "F"),
            ("G", 5, "G", 70, "F"),
            ("A", 40, "E", 70, "F"),
        ]
    );

    let (v, ch) = w.apply(Signal("cv")).unwrap();
    assert_eq!(v, "F");
    assert_eq!(
        w.change_rows(&ch),
        vec![
            ("D", 70, "F", 40, "E"),
            ("G", 70, "F", 5, "G"),
            ("A", 70, "F", 40, "E"),
        ]
    );

    // E leaves: A falls to C, D to its own.
    let (_, ch) = w.apply(Cancel("E")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![("D", 40, "E", 15, "D"), ("A", 40, "E", 30, "C")]
    );
}

/// An unbalanced diamond: the two paths from F to A have different lengths,
/// so the breadth-first walk reaches A before the longer path has caught
/// up, and again afterwards. A ends right and is reported once.
///
/// ```text
///   F(70) ─▶ cv ─▶ D(15) ─▶ mD ─▶ A(10)
///               └▶ G(5) ─▶ mG ─▶ H(8) ─▶ mH ─┘
/// ```
#[test]
fn unbalanced_diamond_is_reported_once() {
    let mut w = World::new(
        &[("A", 10), ("D", 15), ("F", 70), ("G", 5), ("H", 8)],
        &[
            ("mD", Protocol::Inherit),
            ("mG", Protocol::Inherit),
            ("mH", Protocol::Inherit),
        ],
        &["cv"],
    );
    w.run(&[
        Lock("A", "mD"),
        Lock("A", "mH"),
        Lock("H", "mG"),
        Lock("D", "mD"),
        Lock("G", "mG"),
        Lock("H", "mH"),
        HelperAdd("cv", "D"),
        HelperAdd("cv", "G"),
    ]);
    w.assert_eff(&[("A", 15, "D"), ("H", 8, "H")], "before");

    let (_, ch) = w.apply(Wait("F", "cv")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![
            ("D", 15, "D", 70, "F"),
            ("G", 5, "G", 70, "F"),
            ("A", 15, "D", 70, "F"),
            ("H", 8, "H", 70, "F"),
        ]
    );

    // Revoke: A is recomputed while H still carries F's urgency (A stays at
    // 70), then again once H has dropped: one change for A, with its value
    // before the op and its final value.
    let (_, ch) = w.apply(Signal("cv")).unwrap();
    assert_eq!(
        w.change_rows(&ch),
        vec![
            ("D", 70, "F", 15, "D"),
            ("G", 70, "F", 5, "G"),
            ("H", 70, "F", 8, "H"),
            ("A", 70, "F", 15, "D"),
        ]
    );
}

/// A condvar with many helpers: all inherit, all are revoked (the fan-out of the
/// PI-CV paper's Fig. 13).
#[test]
fn sixteen_helpers_all_inherit_and_unwind() {
    let mut e = Engine::new();
    let client = e.add_task(fx(90));
    let cv = e.add_cond();
    let helpers: Vec<TaskId> = (0..16).map(|i| e.add_task(fx(1 + i))).collect();
    for &h in &helpers {
        e.helper_add(cv, h).unwrap();
    }
    let ch = e.cond_wait(client, cv).unwrap();
    assert_eq!(ch.iter().map(|c| c.task).collect::<Vec<_>>(), helpers);
    assert!(ch
        .iter()
        .all(|c| c.new.urgency == fx(90) && c.new.donor() == client));
    let out = e.cond_signal(cv).unwrap();
    assert_eq!(out.value, Some(client));
    assert_eq!(out.changes.len(), 16);
    for (c, &h) in out.changes.iter().zip(&helpers) {
        assert_eq!((c.task, c.new.donor()), (h, h));
    }
    assert_eq!(e.helpers(cv).unwrap(), helpers.as_slice());
    assert_eq!(e.base(helpers[3]).unwrap(), Urgency::fixed(4));
}
