//! The exact contents of [`heir_core::Changes`]: each task once, first old
//! and final new value, donors included, in propagation order; tasks that
//! end where they started are not reported.

use heir_core::{Effective, Engine, Protocol, Source, Urgency};

use crate::support::{fx, Op::*, World};

/// ```text
/// before: H(40) owns c (ceiling 95), H ─▶ m ─▶ L(10), M(50) ─▶ m
///         L at 95 (source c@H: H's ceiling, through m)
/// unlock(L, m): L back to 10; H owns m, unchanged at 95
/// unlock(H, c): H falls to what M gives it: 50, donor M
/// ```
#[test]
fn unlock_changes_in_order_with_donors() {
    let mut w = World::new(
        &[("L", 10), ("H", 40), ("M", 50)],
        &[("m", Protocol::Inherit), ("c", Protocol::Ceiling(fx(95)))],
        &[],
    );
    // H holds ceiling mutex c (H at 95), then blocks on m held by L.
    w.run(&[
        Lock("L", "m"),
        Lock("H", "c"),
        Lock("H", "m"),
        Lock("M", "m"),
    ]);
    w.assert_eff(&[("L", 95, "c@H"), ("H", 95, "c@H")], "before");
    let (v, ch) = w.apply(Unlock("L", "m")).unwrap();
    assert_eq!(v, "H");
    assert_eq!(w.change_rows(&ch), vec![("L", 95, "c@H", 10, "L")]);
    // H drops its ceiling: it now inherits M (50 > 40), donor M.
    let (_, ch) = w.apply(Unlock("H", "c")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("H", 95, "c@H", 50, "M")]);
}

/// A task whose value goes away and comes back within one op is not
/// reported: here a waiter moves from one object to another through
/// handoff and ends at the same value.
#[test]
fn net_zero_changes_are_dropped() {
    let mut e = Engine::new();
    let o = e.add_task(Urgency::fixed(10));
    let a = e.add_task(Urgency::fixed(70));
    let b = e.add_task(Urgency::fixed(70));
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(o, m).unwrap();
    e.lock(a, m).unwrap();
    e.lock(b, m).unwrap();
    // Unlock: o falls to 10; a owns m and inherits b's 70 — equal to its
    // own base, so a is unchanged and not reported.
    let out = e.unlock(o, m).unwrap();
    assert_eq!(out.value, Some(a));
    assert_eq!(out.changes.len(), 1);
    assert_eq!(out.changes[0].task, o);
    assert_eq!(
        out.changes[0].new,
        Effective {
            urgency: Urgency::fixed(10),
            source: Source::Task(o)
        }
    );
    assert_eq!(
        e.effective(a).unwrap(),
        Effective {
            urgency: Urgency::fixed(70),
            source: Source::Task(a)
        }
    );
}

/// A donor-only change (same urgency, different donor) is a change.
#[test]
fn donor_only_change_is_reported() {
    let mut w = World::new(
        &[("O", 10), ("X", 60), ("Y", 60)],
        &[("m", Protocol::Inherit)],
        &[],
    );
    w.run(&[Lock("O", "m"), Lock("X", "m"), Lock("Y", "m")]);
    let (_, ch) = w.apply(Cancel("X")).unwrap();
    assert_eq!(w.change_rows(&ch), vec![("O", 60, "X", 60, "Y")]);
}

/// Deadline urgencies flow through the same edges: the earliest deadline
/// is the most urgent and wins over fixed priorities (SCHED_DEADLINE >
/// SCHED_FIFO); the donor is the waiter whose deadline it is.
#[test]
fn deadline_urgency_is_inherited_like_any_other() {
    let mut e = Engine::new();
    let owner = e.add_task(Urgency::fixed(99));
    let d1 = Urgency::deadline(2_000_000);
    let d2 = Urgency::deadline(1_000_000);
    let w1 = e.add_task(d1);
    let w2 = e.add_task(d2);
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(owner, m).unwrap();
    let ch = e.lock(w1, m).unwrap().changes;
    assert_eq!(
        ch[0].new,
        Effective {
            urgency: d1,
            source: Source::Task(w1)
        }
    );
    let ch = e.lock(w2, m).unwrap().changes;
    assert_eq!(
        ch[0].new,
        Effective {
            urgency: d2,
            source: Source::Task(w2)
        }
    );
    assert_eq!(e.waiters(m).unwrap().collect::<Vec<_>>(), vec![w2, w1]);
}

/// Equal deadlines are equal (FIFO among them, as Linux's EDF): a second
/// waiter with the same absolute deadline queues behind the first and does
/// not take over as the owner's donor.
#[test]
fn equal_deadlines_are_fifo() {
    let mut e = Engine::new();
    let owner = e.add_task(Urgency::fixed(10));
    let d = Urgency::deadline(5_000_000);
    let w1 = e.add_task(d);
    let w2 = e.add_task(d);
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(owner, m).unwrap();
    e.lock(w2, m).unwrap();
    let ch = e.lock(w1, m).unwrap().changes;
    assert!(ch.is_empty(), "{ch:?}");
    assert_eq!(e.effective(owner).unwrap().donor(), w2);
    assert_eq!(e.waiters(m).unwrap().collect::<Vec<_>>(), vec![w2, w1]);
}
