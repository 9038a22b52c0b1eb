//! The scenario in the engine's terms: one mapping, used by every face that
//! builds an engine from a scenario (the simulator, the real-time runner).
//!
//! - [`urgency`]: a scheduling class and priority → the engine's base
//!   [`Urgency`];
//! - [`protocol`]: a mutex's protocol → the engine's [`Protocol`] (a
//!   ceiling clamped to a real-time priority);
//! - [`side_protocol`]: the protocol of the mutexes heir adds inside
//!   barriers and suspend points (inheritance when `pi_enabled`);
//! - [`gang_floor`]: the urgency a running gang puts under its active
//!   members (GPM's gang priority, and what it means under
//!   `SCHED_DEADLINE`);
//! - [`Roles`]: who pushes to and pops from each queue, who serves and
//!   calls each endpoint — declared in the resource, or used by a task's
//!   events (PI-CV's helpers are derived from these).

use heir_core::{Protocol, Urgency};

use crate::{EventKind, Global, MutexProtocol, Policy, ResourceKind, Scenario, Sched};

/// The engine's base urgency of a scheduling class.
///
/// `SCHED_FIFO`/`SCHED_RR` → the real-time priority (clamped to 1..=99);
/// `SCHED_OTHER`/`SCHED_BATCH` → the nice value (clamped to -20..=19);
/// `SCHED_IDLE` → [`Urgency::LOWEST`]. `SCHED_DEADLINE` tasks have a
/// deadline urgency that depends on time (their absolute deadline); before
/// any job is released they are ordered by relative deadline.
pub fn urgency(s: &Sched) -> Urgency {
    match (s.policy, s.dl) {
        (Policy::Deadline, Some(dl)) => Urgency::deadline(dl.deadline_us.saturating_mul(1000)),
        (Policy::Fifo | Policy::Rr | Policy::Deadline, _) => {
            Urgency::fixed(s.priority.clamp(1, 99) as u8)
        }
        (Policy::Other | Policy::Batch, _) => Urgency::other(s.priority.clamp(-20, 19) as i8),
        (Policy::Idle, _) => Urgency::LOWEST,
    }
}

/// The engine's protocol of a scenario mutex: the same protocol, its
/// ceiling (a real-time priority) clamped to 1..=99 and made an urgency
/// ([`heir_core::Protocol::to_engine`]). `bwi` stays `bwi`: the engine
/// lends urgency for it as for `inherit` and records that the budget is
/// lent too; charging it is the faces' part (see [`Protocol`]).
pub fn protocol(p: &MutexProtocol) -> Protocol {
    p.to_engine()
}

/// The protocol of the mutexes inside barriers and suspend points:
/// inheritance when the scenario enables it (`global.pi_enabled`), as
/// rt-app's own pthread mutexes.
pub fn side_protocol(g: &Global) -> Protocol {
    if g.pi_enabled {
        Protocol::Inherit
    } else {
        Protocol::None
    }
}

/// GPM: the floor a running gang puts under each active member that
/// has not notified — the gang priority, from the base (user) urgencies of
/// *all* its members, passive and active — or `None` when the gang boosts
/// nobody (`global.gpm: false`, the GPM paper's no-GPM baseline, or every member
/// a `SCHED_DEADLINE` thread).
///
/// The gang priority is the most urgent base that is **not** a deadline:
/// a floor lends urgency, never time (a budget), so it never lifts a
/// fixed-priority or `SCHED_OTHER` member into the deadline class, where
/// it would have no reservation to run on; and a `SCHED_DEADLINE` member is
/// never boosted — it already runs above every fixed priority, and
/// changing its parameters would reset its CBS reservation (on real threads:
/// `sched_setattr` of a deadline thread, which may be blocked, leaks
/// admitted bandwidth). Under a gang with deadline members, the
/// fixed-priority members thus run at the highest fixed priority among the
/// members, and Property 1's interference is every deadline thread plus
/// the fixed-priority threads at or above that priority (docs/GANG.md).
pub fn gang_floor(g: &Global, member_bases: impl IntoIterator<Item = Urgency>) -> Option<Urgency> {
    if !g.gpm {
        return None;
    }
    member_bases
        .into_iter()
        .filter(|u| !matches!(u, Urgency::Deadline { .. }))
        .max()
}

/// GPM: whether a member with membership bits `bits` is an active
/// member of a `gang_run` with `mask` (they share a bit).
pub fn gang_active(bits: u32, mask: u32) -> bool {
    bits & mask & crate::GANG_ALL_BITS != 0
}

/// Who plays which part at each queue and endpoint, by resource index:
/// declared in the resource, or using it in an event. Task indices, sorted,
/// each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roles {
    /// Tasks that push to each queue.
    pub pushers: Vec<Vec<usize>>,
    /// Tasks that pop from each queue.
    pub poppers: Vec<Vec<usize>>,
    /// Tasks that serve each endpoint.
    pub servers: Vec<Vec<usize>>,
    /// Tasks that call each endpoint.
    pub callers: Vec<Vec<usize>>,
}

impl Roles {
    /// The roles of every resource of `sc`.
    pub fn of(sc: &Scenario) -> Roles {
        let n = sc.resources.len();
        let mut r = Roles {
            pushers: vec![Vec::new(); n],
            poppers: vec![Vec::new(); n],
            servers: vec![Vec::new(); n],
            callers: vec![Vec::new(); n],
        };
        for (i, res) in sc.resources.iter().enumerate() {
            match &res.kind {
                ResourceKind::Queue {
                    pushers, poppers, ..
                } => {
                    r.pushers[i].extend(pushers.iter().map(|t| t.0));
                    r.poppers[i].extend(poppers.iter().map(|t| t.0));
                }
                ResourceKind::Endpoint { servers, callers } => {
                    r.servers[i].extend(servers.iter().map(|t| t.0));
                    r.callers[i].extend(callers.iter().map(|t| t.0));
                }
                _ => {}
            }
        }
        for (ti, task) in sc.tasks.iter().enumerate() {
            for ev in task.phases.iter().flat_map(|p| p.events.iter()) {
                match ev.kind {
                    EventKind::Push(q) => r.pushers[q.0].push(ti),
                    EventKind::Pop(q) => r.poppers[q.0].push(ti),
                    EventKind::Serve(e) => r.servers[e.0].push(ti),
                    EventKind::Call { endpoint, .. } => r.callers[endpoint.0].push(ti),
                    _ => {}
                }
            }
        }
        for l in r
            .pushers
            .iter_mut()
            .chain(r.poppers.iter_mut())
            .chain(r.servers.iter_mut())
            .chain(r.callers.iter_mut())
        {
            l.sort_unstable();
            l.dedup();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_map_to_urgencies() {
        let s = |policy, priority| Sched {
            policy,
            priority,
            dl: None,
        };
        assert_eq!(urgency(&s(Policy::Fifo, 120)), Urgency::fixed(99));
        assert_eq!(urgency(&s(Policy::Rr, 0)), Urgency::fixed(1));
        assert_eq!(urgency(&s(Policy::Other, -30)), Urgency::other(-20));
        assert_eq!(urgency(&s(Policy::Batch, 5)), Urgency::other(5));
        assert_eq!(urgency(&s(Policy::Idle, 0)), Urgency::LOWEST);
        assert_eq!(
            protocol(&MutexProtocol::Ceiling(300)),
            Protocol::Ceiling(Urgency::fixed(99))
        );
        assert_eq!(protocol(&MutexProtocol::Bwi), Protocol::Bwi);
    }

    #[test]
    fn gang_floor_is_the_most_urgent_base_short_of_a_deadline() {
        let mut g = crate::parse_str(r#"{"tasks": {"A": {"run": 1}}}"#, "g.json")
            .unwrap()
            .global;
        let dl = Urgency::deadline(1_000);
        let cases: [(&[Urgency], Option<Urgency>); 5] = [
            (&[], None),
            (
                &[Urgency::fixed(10), Urgency::fixed(50)],
                Some(Urgency::fixed(50)),
            ),
            (
                &[Urgency::other(0), Urgency::fixed(3)],
                Some(Urgency::fixed(3)),
            ),
            (
                &[dl, Urgency::fixed(20), Urgency::other(-5)],
                Some(Urgency::fixed(20)),
            ),
            (&[dl, dl], None),
        ];
        for (bases, want) in cases {
            assert_eq!(gang_floor(&g, bases.iter().copied()), want, "{bases:?}");
        }
        g.gpm = false;
        assert_eq!(gang_floor(&g, [Urgency::fixed(50)]), None);
        assert!(gang_active(1, crate::GANG_ALL_BITS));
        assert!(!gang_active(2, 1));
        assert!(!gang_active(0, crate::GANG_ALL_BITS));
    }
}
