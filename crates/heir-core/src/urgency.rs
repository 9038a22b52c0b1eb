//! Urgency: how much right to run a task has, whatever the scheduling class.
//!
//! The PI-CV paper's §3 says "priority" stands for any urgency the scheduler orders by: a
//! fixed priority or an absolute deadline (EDF). heir keeps one totally
//! ordered type so that the engine's "max over waiters" works unchanged for
//! every class. Greater means *more urgent*. Whose *time* (reservation
//! budget) the work runs on is not part of the urgency: that is the
//! scheduling context ([`crate::ContextId`]).
//!
//! Class order follows Linux: `SCHED_DEADLINE` > `SCHED_FIFO`/`SCHED_RR` >
//! `SCHED_OTHER`. Within a class:
//! - [`Urgency::Deadline`]: the earlier absolute deadline is more urgent;
//!   equal deadlines are equal (FIFO among them, as Linux's EDF: the wait
//!   queues and the faces' run queues keep arrival order);
//! - [`Urgency::Fixed`]: the higher real-time priority (1..=99) is more urgent;
//! - [`Urgency::Other`]: the lower nice value (-20..=19) is more urgent.

use core::cmp::Ordering;
use core::fmt;

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
    /// `SCHED_DEADLINE` / EDF: an absolute deadline in ns.
    Deadline {
        /// Absolute deadline in ns; earlier is more urgent.
        abs_ns: u64,
    },
}

impl Urgency {
    /// The least urgent value there is (`SCHED_OTHER`, nice 19).
    pub const LOWEST: Urgency = Urgency::Other { nice: 19 };

    /// A fixed real-time priority.
    pub const fn fixed(prio: u8) -> Urgency {
        Urgency::Fixed { prio }
    }

    /// An absolute deadline (ns).
    pub const fn deadline(abs_ns: u64) -> Urgency {
        Urgency::Deadline { abs_ns }
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
            (Urgency::Deadline { abs_ns: a }, Urgency::Deadline { abs_ns: b }) => b.cmp(a),
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
            Urgency::Deadline { abs_ns } => write!(f, "deadline {abs_ns}ns"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_across_and_within_classes() {
        let d = Urgency::deadline;
        assert!(d(10) > d(20));
        assert_eq!(d(10), d(10));
        assert!(d(u64::MAX) > Urgency::fixed(99));
        assert!(Urgency::fixed(2) > Urgency::fixed(1));
        assert!(Urgency::fixed(1) > Urgency::other(-20));
        assert!(Urgency::other(-20) > Urgency::other(0));
        assert_eq!(Urgency::LOWEST, Urgency::other(19));
        assert!(Urgency::other(18) > Urgency::LOWEST);
    }
}
