//! Object kinds other than mutexes and condvars, through the generic
//! operations: each is one [`Spec`], and the walk treats it like any other.
//!
//! ```text
//! endpoint request r:  C(80) ─▶ r ─▶ S1(10)   → retargeted ─▶ S2(20)
//! gang G (floor 50):   G ─▶ A(10), B(20)      A ─▶ m ─▶ L(5): L at 50 too
//! ```
//!
//! [`Spec`]: heir_core::Spec

use heir_core::{Engine, EngineError, ObjId, Protocol, Source, Spec, Urgency};

fn fx(p: u8) -> Urgency {
    Urgency::fixed(p)
}

/// An endpoint request donates to the one server that took it: a second
/// server is untouched, and moving the request moves the donation.
#[test]
fn an_endpoint_donates_to_the_server_that_took_the_call() {
    let mut e = Engine::new();
    let (s1, s2, c) = (e.add_task(fx(10)), e.add_task(fx(20)), e.add_task(fx(80)));
    let r = e.add_object(Spec::ENDPOINT);
    e.add_target(r, s1).unwrap();
    let ch = e.block(c, r).unwrap();
    assert_eq!(ch.len(), 1);
    assert_eq!(e.effective(s1).unwrap().urgency, fx(80));
    assert_eq!(e.effective(s2).unwrap().urgency, fx(20));
    assert_eq!(
        e.add_target(r, s2),
        Err(EngineError::TargetLimit {
            object: r,
            limit: 1
        })
    );
    e.remove_target(r, s1).unwrap();
    e.add_target(r, s2).unwrap();
    assert_eq!(e.effective(s1).unwrap().urgency, fx(10));
    assert_eq!(e.effective(s2).unwrap().urgency, fx(80));
    let woken = e.wake_top(r).unwrap();
    assert_eq!(woken.value, Some(c));
    assert_eq!(e.effective(s2).unwrap().urgency, fx(20));
}

/// A gang's floor lifts its targets while set; a member that drops out
/// (notifies) loses it at once; the floor flows on through a PI mutex the
/// member waits on (the lock-inherited part of the GPM paper's Invariant 1).
#[test]
fn a_gang_floor_lifts_its_members_and_flows_through_locks() {
    let mut e = Engine::new();
    let (a, b, l) = (e.add_task(fx(10)), e.add_task(fx(20)), e.add_task(fx(5)));
    let g = e.add_object(Spec::GANG);
    let m = e.add_mutex(Protocol::Inherit);
    e.add_target(g, a).unwrap();
    e.add_target(g, b).unwrap();
    e.lock(l, m).unwrap();
    e.lock(a, m).unwrap();
    let ch = e.set_floor(g, Some(fx(50))).unwrap();
    let changed: Vec<_> = ch.iter().map(|c| (c.task, c.new.urgency)).collect();
    assert_eq!(changed, vec![(a, fx(50)), (b, fx(50)), (l, fx(50))]);
    let floor = |task| Source::Floor { object: g, task };
    assert_eq!(e.effective(l).unwrap().source, floor(a));
    assert_eq!(e.effective(b).unwrap().source, floor(b));
    // A notifies: it leaves the gang's targets; L loses the floor with it.
    e.remove_target(g, a).unwrap();
    assert_eq!(e.effective(a).unwrap().urgency, fx(10));
    assert_eq!(e.effective(l).unwrap().urgency, fx(10));
    // The gang stops: B falls back.
    e.set_floor(g, None).unwrap();
    assert_eq!(e.effective(b).unwrap().urgency, fx(20));
    assert_eq!(e.spec(g).unwrap().floor, None);
}

/// Generic operations check the kind-independent rules: unknown objects,
/// duplicate and missing targets.
#[test]
fn generic_operations_refuse_bad_arguments() {
    let mut e = Engine::new();
    let t = e.add_task(fx(10));
    let g = e.add_object(Spec::GANG);
    let nowhere = ObjId(99, 0);
    assert_eq!(
        e.add_target(nowhere, t),
        Err(EngineError::UnknownObject(nowhere))
    );
    assert_eq!(
        e.block(t, nowhere),
        Err(EngineError::UnknownObject(nowhere))
    );
    e.add_target(g, t).unwrap();
    assert_eq!(
        e.add_target(g, t),
        Err(EngineError::AlreadyTarget { object: g, task: t })
    );
    e.remove_target(g, t).unwrap();
    assert_eq!(
        e.remove_target(g, t),
        Err(EngineError::NotTarget { object: g, task: t })
    );
}
