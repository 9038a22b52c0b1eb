//! Scheduling contexts: which contexts a task may run on (`donors`, most
//! urgent first) and where a blocked task's time goes (`time_goes_to`).
//!
//! ```text
//! A(90) ─▶ m1 ─▶ B(50) ─▶ cv ─▶ C(10)      A lends its context to B, and
//!                              └─▶ D(20)    both lend theirs to C and D
//! ```

use heir_core::{Donor, Engine, Protocol, Reservation, Source, Stall, TimeError, Urgency};

fn fx(p: u8) -> Urgency {
    Urgency::fixed(p)
}

#[test]
fn donors_are_every_upstream_context_most_urgent_first() {
    let mut e = Engine::new();
    let (a, b, c, d) = (
        e.add_task(fx(90)),
        e.add_task(fx(50)),
        e.add_task(fx(10)),
        e.add_task(fx(20)),
    );
    let m1 = e.add_mutex(Protocol::Inherit);
    let cv = e.add_cond();
    e.helper_add(cv, c).unwrap();
    e.helper_add(cv, d).unwrap();
    e.lock(b, m1).unwrap();
    e.lock(a, m1).unwrap();
    e.cond_wait(b, cv).unwrap();
    let ctx = |t| e.context(t).unwrap();
    let donor = |t, p| Donor {
        urgency: fx(p),
        source: Source::Task(t),
        context: ctx(t),
    };
    let mut out = Vec::new();
    e.donors(c, &mut out).unwrap();
    assert_eq!(out, vec![donor(a, 90), donor(b, 50), donor(c, 10)]);
    e.donors(d, &mut out).unwrap();
    assert_eq!(out, vec![donor(a, 90), donor(b, 50), donor(d, 20)]);
    e.donors(a, &mut out).unwrap();
    assert_eq!(out, vec![donor(a, 90)]);
    // Each task owns a distinct context.
    let all: Vec<_> = [a, b, c, d].iter().map(|&t| ctx(t)).collect();
    assert!(all.iter().all(Option::is_some));
    assert_eq!(e.bound_to(all[2].unwrap()).unwrap(), Some(c));
}

/// A floor lends urgency, not time: it is listed with the context of the
/// task it lifts, here the owner of the ceiling mutex, which waits on a PI
/// mutex held by L.
#[test]
fn a_floor_is_listed_with_the_context_of_the_task_it_lifts() {
    let mut e = Engine::new();
    let (h, l) = (e.add_task(fx(40)), e.add_task(fx(10)));
    let c95 = e.add_mutex(Protocol::Ceiling(fx(95)));
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(l, m).unwrap();
    e.lock(h, c95).unwrap();
    e.lock(h, m).unwrap();
    let mut out = Vec::new();
    e.donors(l, &mut out).unwrap();
    let floor = Source::Floor {
        object: c95.into(),
        task: h,
    };
    assert_eq!(
        out.iter()
            .map(|d| (d.urgency, d.source, d.context))
            .collect::<Vec<_>>(),
        vec![
            (fx(95), floor, e.context(h).unwrap()),
            (fx(40), Source::Task(h), e.context(h).unwrap()),
            (fx(10), Source::Task(l), e.context(l).unwrap()),
        ]
    );
    assert_eq!(e.effective(l).unwrap().source, floor);
}

#[test]
fn time_goes_to_the_runnable_ends_or_says_where_it_stops() {
    let mut e = Engine::new();
    let (a, b, c, d, x) = (
        e.add_task(fx(90)),
        e.add_task(fx(50)),
        e.add_task(fx(10)),
        e.add_task(fx(20)),
        e.add_task(fx(30)),
    );
    let m1 = e.add_mutex(Protocol::Inherit);
    let plain = e.add_mutex(Protocol::None);
    let cv = e.add_cond();
    let lonely = e.add_cond();
    e.helper_add(cv, c).unwrap();
    e.helper_add(cv, d).unwrap();
    e.lock(b, m1).unwrap();
    e.lock(a, m1).unwrap();
    e.cond_wait(b, cv).unwrap();
    let mut out = Vec::new();
    e.time_goes_to(a, &mut out).unwrap();
    assert_eq!(out, vec![c, d], "fan-out through cv: either helper");
    e.time_goes_to(c, &mut out).unwrap();
    assert_eq!(out, vec![c], "a runnable task's time is its own");
    // Blocked on a mutex without inheritance: the time stops there.
    e.lock(c, plain).unwrap();
    e.lock(x, plain).unwrap();
    assert_eq!(
        e.time_goes_to(x, &mut out),
        Err(TimeError::Stalled(Stall::NotDonating {
            task: x,
            object: plain.into()
        }))
    );
    // Blocked on a condvar nobody helps: no target.
    e.unlock(c, plain).unwrap();
    e.cond_wait(c, lonely).unwrap();
    assert_eq!(
        e.time_goes_to(c, &mut out),
        Err(TimeError::Stalled(Stall::NoTarget {
            task: c,
            object: lonely.into()
        }))
    );
    // A's time now reaches only D (C waits on `lonely`).
    e.time_goes_to(a, &mut out).unwrap();
    assert_eq!(out, vec![d]);
}

#[test]
fn a_reservation_belongs_to_its_context() {
    let mut e = Engine::new();
    let r = Reservation {
        runtime_ns: 2_000_000,
        deadline_ns: 10_000_000,
        period_ns: 10_000_000,
    };
    let t = e
        .add_task_with(Urgency::deadline(10_000_000), Some(r))
        .unwrap();
    let u = e.add_task(fx(10));
    let (ct, cu) = (
        e.context(t).unwrap().unwrap(),
        e.context(u).unwrap().unwrap(),
    );
    assert_eq!(e.reservation(ct).unwrap(), Some(r));
    assert_eq!(e.reservation(cu).unwrap(), None);
    e.set_reservation(cu, Some(r)).unwrap();
    assert_eq!(e.reservation(cu).unwrap(), Some(r));
    e.check_invariants().unwrap();
}

/// Many donors reached twice (a condvar with two helpers, both blocked on
/// the server's mutex): each is listed once, most urgent first. Past a few
/// dozen entries `donors` remembers what it listed in a bit set instead of
/// scanning the list.
///
/// ```text
/// W0(20) … W39(59) ─▶ cv ─▶ A(10) ─▶ m ─▶ S(5)
///                        └─▶ B(11) ─┘
/// ```
#[test]
fn many_donors_through_a_diamond_are_listed_once() {
    let mut e = Engine::new();
    let s = e.add_task(fx(5));
    let a = e.add_task(fx(10));
    let b = e.add_task(fx(11));
    let m = e.add_mutex(Protocol::Inherit);
    let cv = e.add_cond();
    e.lock(s, m).unwrap();
    e.helper_add(cv, a).unwrap();
    e.helper_add(cv, b).unwrap();
    e.lock(a, m).unwrap();
    e.lock(b, m).unwrap();
    let ws: Vec<_> = (0..40u8).map(|i| e.add_task(fx(20 + i))).collect();
    for &w in &ws {
        e.cond_wait(w, cv).unwrap();
    }
    let mut out = Vec::new();
    e.donors(s, &mut out).unwrap();
    let mut expected: Vec<_> = ws.iter().rev().copied().collect();
    expected.extend([b, a, s]);
    let got: Vec<_> = out.iter().map(|d| d.source).collect();
    let expected: Vec<_> = expected.into_iter().map(Source::Task).collect();
    assert_eq!(got, expected);
    assert_eq!(out[0].urgency, e.effective(s).unwrap().urgency);
}
