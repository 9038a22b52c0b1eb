//! Every refused operation returns its typed error and leaves the engine
//! equal to a clone taken before it.

use heir_core::{CondId, EngineError as E, MutexId, Protocol, TaskId};

use crate::support::{fx, Op::*, World};

fn world() -> World {
    let mut w = World::new(
        &[("A", 10), ("B", 20), ("C", 30), ("Gone", 5)],
        &[("m", Protocol::Inherit), ("n", Protocol::None)],
        &["cv"],
    );
    w.run(&[
        Lock("A", "m"),
        Lock("B", "m"),
        HelperAdd("cv", "A"),
        Wait("C", "cv"),
        Remove("Gone"),
    ]);
    w
}

#[test]
fn unknown_ids() {
    let mut w = world();
    let ghost = TaskId(99, 0);
    let gone = w.t("Gone");
    let (a, m, cv) = (w.t("A"), w.m("m"), w.c("cv"));
    let (nm, nc) = (MutexId(7, 0), CondId(7, 0));
    let before = w.e.clone();
    let e = &mut w.e;
    assert_eq!(e.lock(ghost, m), Err(E::UnknownTask(ghost)));
    assert_eq!(e.lock(gone, m), Err(E::StaleTask(gone)));
    assert_eq!(e.lock(a, nm), Err(E::UnknownMutex(nm)));
    assert_eq!(e.unlock(ghost, m), Err(E::UnknownTask(ghost)));
    assert_eq!(e.unlock(a, nm), Err(E::UnknownMutex(nm)));
    assert_eq!(e.acquire(ghost, m), Err(E::UnknownTask(ghost)));
    assert_eq!(e.acquire(a, nm), Err(E::UnknownMutex(nm)));
    assert_eq!(e.release(ghost, m), Err(E::UnknownTask(ghost)));
    assert_eq!(e.release(a, nm), Err(E::UnknownMutex(nm)));
    assert_eq!(e.cond_wait(ghost, cv), Err(E::UnknownTask(ghost)));
    assert_eq!(e.cond_wait(a, nc), Err(E::UnknownCond(nc)));
    assert_eq!(e.cond_signal(nc), Err(E::UnknownCond(nc)));
    assert_eq!(e.cond_broadcast(nc), Err(E::UnknownCond(nc)));
    assert_eq!(e.cancel_wait(ghost), Err(E::UnknownTask(ghost)));
    assert_eq!(e.helper_add(nc, a), Err(E::UnknownCond(nc)));
    assert_eq!(e.helper_add(cv, ghost), Err(E::UnknownTask(ghost)));
    assert_eq!(e.helper_del(nc, a), Err(E::UnknownCond(nc)));
    assert_eq!(e.helper_del(cv, gone), Err(E::StaleTask(gone)));
    assert_eq!(e.set_base(ghost, fx(1)), Err(E::UnknownTask(ghost)));
    assert_eq!(e.remove_task(gone), Err(E::StaleTask(gone)));
    assert_eq!(e.base(ghost), Err(E::UnknownTask(ghost)));
    assert_eq!(e.effective(gone), Err(E::StaleTask(gone)));
    assert_eq!(e.blocked_on(ghost), Err(E::UnknownTask(ghost)));
    assert_eq!(e.owner(nm), Err(E::UnknownMutex(nm)));
    assert_eq!(e.helpers(nc), Err(E::UnknownCond(nc)));
    assert_eq!(w.e, before);
}

#[test]
fn state_errors() {
    let mut w = world();
    let (a, b, c, m, n, cv) = (w.t("A"), w.t("B"), w.t("C"), w.m("m"), w.m("n"), w.c("cv"));
    // Unlock/release by a non-owner, of a free mutex.
    w.refuse(Unlock("C", "m"), E::NotOwner { task: c, mutex: m });
    w.refuse(Unlock("B", "m"), E::NotOwner { task: b, mutex: m });
    w.refuse(Unlock("A", "n"), E::NotOwner { task: a, mutex: n });
    w.refuse(Release("C", "m"), E::NotOwner { task: c, mutex: m });
    // Blocking a blocked task.
    w.refuse(Lock("B", "n"), E::AlreadyBlocked(b));
    w.refuse(Wait("C", "cv"), E::AlreadyBlocked(c));
    // Cancelling a runnable task.
    w.refuse(Cancel("A"), E::NotBlocked(a));
    // Removing a task that owns or waits.
    w.refuse(Remove("A"), E::Busy { task: a });
    w.refuse(Remove("B"), E::Busy { task: b });
    w.refuse(Remove("C"), E::Busy { task: c });
    // Helper set.
    w.refuse(HelperAdd("cv", "A"), E::HelperExists { cond: cv, task: a });
    w.refuse(HelperDel("cv", "B"), E::NotHelper { cond: cv, task: b });
    // Acquire of a mutex someone else owns.
    w.refuse(Acquire("C", "m"), E::AlreadyOwned { mutex: m, owner: a });
    // The world is still usable and consistent.
    assert_eq!(w.apply(Unlock("A", "m")).unwrap().0, "B");
}

#[test]
fn errors_render_readably() {
    let msg = E::NotOwner {
        task: TaskId(3, 0),
        mutex: MutexId(1, 0),
    }
    .to_string();
    assert_eq!(msg, "task TaskId(3) does not own mutex MutexId(1)");
    assert_eq!(
        E::ChainTooLong { limit: 1024 }.to_string(),
        "dependency chain longer than 1024"
    );
}
