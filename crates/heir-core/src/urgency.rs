//! Urgency: how much right to run a task has, whatever the scheduling class.
//!
//! Seed 000 §3 says "priority" stands for any urgency the scheduler orders by: a
//! fixed priority, an absolute deadline (EDF), a reservation server (CBS). heir
//! keeps one totally ordered type so that the engine's "max over waiters" works
//! unchanged for every class. Greater means *more urgent*.
//!
//! Class order follows Linux: `SCHED_DEADLINE` > `SCHED_FIFO`/`SCHED_RR` >
//! `SCHED_OTHER`. Within a class:
//! - [`Urgency::Deadline`]: the earlier absolute deadline is more urgent;
//! - [`Urgency::Fixed`]: the higher real-time priority (1..=99) is more urgent;
//! - [`Urgency::Other`]: the lower nice value (-20..=19) is more urgent.

use core::cmp::Ordering;
use core::fmt;

/// A reservation server (CBS / SCHED_DEADLINE budget) identifier, used by
/// bandwidth inheritance (seed 001): an owner that inherits a deadline runs on
/// the donor's server. Reserved for the EDF work; fixed priority ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerId(pub u32);

/// The urgency of a task. See the module docs for the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Urgency {
    /// `SCHED_OTHER` / `SCHED_BATCH`: a nice value, -20 (most urgent) ..= 19.
    Other {
        /// The nice value; lower is more urgent.
        nice: i8,
    },
    /// `SCHED_FIFO` / `SCHED_RR`: a real-time priority, 1 ..= 99 (most urgent).
    Fixed {
        /// The real-time priority; higher is more urgent.
        prio: u8,
    },
    /// `SCHED_DEADLINE` / EDF: an absolute deadline in ns, with the reservation
    /// server whose budget the work runs on.
    Deadline {
        /// Absolute deadline in ns; earlier is more urgent.
        abs_ns: u64,
        /// The reservation server whose budget the work runs on (ties
        /// between equal deadlines are broken by server id, lower first).
        server: ServerId,
    },
}

impl Urgency {
    /// The least urgent value there is (`SCHED_OTHER`, nice 19).
    pub const LOWEST: Urgency = Urgency::Other { nice: 19 };

    /// A fixed real-time priority.
    pub const fn fixed(prio: u8) -> Urgency {
        Urgency::Fixed { prio }
    }

    /// A `SCHED_OTHER` nice value.
    pub const fn other(nice: i8) -> Urgency {
        Urgency::Other { nice }
    }

    #[inline]
    fn class_rank(&self) -> u8 {
        match self {
            Urgency::Other { .. } => 0,
            Urgency::Fixed { .. } => 1,
            Urgency::Deadline { .. } => 2,
        }
    }

    /// True if `self` is a real-time class (fixed priority or deadline).
    pub fn is_realtime(&self) -> bool {
        !matches!(self, Urgency::Other { .. })
    }
}

impl Ord for Urgency {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // The common case first (two fixed priorities): one test.
        if let (Urgency::Fixed { prio: a }, Urgency::Fixed { prio: b }) = (self, other) {
            return a.cmp(b);
        }
        match (self, other) {
            (Urgency::Other { nice: a }, Urgency::Other { nice: b }) => b.cmp(a),
            (Urgency::Fixed { prio: a }, Urgency::Fixed { prio: b }) => a.cmp(b),
            (
                Urgency::Deadline {
                    abs_ns: a,
                    server: sa,
                },
                Urgency::Deadline {
                    abs_ns: b,
                    server: sb,
                },
            ) => b.cmp(a).then(sb.cmp(sa)),
            _ => self.class_rank().cmp(&other.class_rank()),
        }
    }
}

impl PartialOrd for Urgency {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Urgency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Urgency::Other { nice } => write!(f, "nice {nice}"),
            Urgency::Fixed { prio } => write!(f, "prio {prio}"),
            Urgency::Deadline { abs_ns, server } => {
                write!(f, "deadline {abs_ns}ns (server {})", server.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_across_and_within_classes() {
        let d = |abs_ns| Urgency::Deadline {
            abs_ns,
            server: ServerId(0),
        };
        assert!(d(10) > d(20));
        assert!(d(u64::MAX) > Urgency::fixed(99));
        assert!(Urgency::fixed(2) > Urgency::fixed(1));
        assert!(Urgency::fixed(1) > Urgency::other(-20));
        assert!(Urgency::other(-20) > Urgency::other(0));
        assert_eq!(Urgency::LOWEST, Urgency::other(19));
        assert!(Urgency::other(18) > Urgency::LOWEST);
    }
}
