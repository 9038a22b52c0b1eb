//! Scheduling attributes and their mapping to engine urgencies.
//!
//! A registered thread's *base* is the `struct sched_attr` read with
//! `sched_getattr` when it joined, kept byte for byte so that restoring it is
//! exact (policy, priority, nice, `SCHED_FLAG_RESET_ON_FORK`, deadline
//! parameters, utilisation clamps as reported).

use heir_core::Urgency;

use crate::sys::{self, SchedAttr};

/// The engine urgency of a base attribute set.
///
/// - `SCHED_FIFO`/`SCHED_RR` → [`Urgency::Fixed`] with the rt priority;
/// - `SCHED_OTHER`/`SCHED_BATCH` → [`Urgency::Other`] with the nice value;
/// - `SCHED_IDLE` → [`Urgency::LOWEST`];
/// - `SCHED_DEADLINE` → [`deadline_monotonic`] of its *relative* deadline.
pub fn urgency_of(attr: &SchedAttr) -> Urgency {
    match attr.sched_policy {
        sys::SCHED_FIFO | sys::SCHED_RR => Urgency::fixed(attr.sched_priority.clamp(1, 99) as u8),
        sys::SCHED_DEADLINE => deadline_monotonic(attr.sched_deadline),
        sys::SCHED_IDLE => Urgency::LOWEST,
        _ => Urgency::other(attr.sched_nice.clamp(-20, 19) as i8),
    }
}

/// The urgency of a `SCHED_DEADLINE` thread whose *relative* deadline
/// (`sched_attr.sched_deadline`) is `relative_deadline_ns`:
/// deadline-monotonic order, the shorter relative deadline first.
///
/// The engine's [`Urgency::Deadline`] field is named `abs_ns` because the
/// engine means an *absolute* deadline (earliest deadline first). heir-rt
/// does not track a deadline thread's absolute deadline — the kernel moves
/// it at every replenishment — so it stores the relative deadline there:
/// between deadline threads that is deadline-monotonic priority, a fixed
/// order, until bandwidth inheritance (M-BWI, the next step) tracks the
/// absolute deadline and the donor's reservation. Never compare a value made
/// here with an absolute deadline.
pub fn deadline_monotonic(relative_deadline_ns: u64) -> Urgency {
    Urgency::deadline(relative_deadline_ns)
}

/// The attributes that make a thread whose base is `base` run at `eff`, or
/// `None` when `eff` cannot be expressed for it (a deadline urgency lent to a
/// non-deadline thread: left to bandwidth inheritance, the thread keeps what
/// it has).
///
/// - `eff` equal to the base urgency → the base itself (exact restore);
/// - [`Urgency::Fixed`] → `SCHED_RR` if the base is RR, else `SCHED_FIFO`, at
///   that priority (a `SCHED_OTHER` thread switches to FIFO while boosted);
///   nice, flags and clamps are kept from the base;
/// - [`Urgency::Other`] → the base's fair policy (`SCHED_IDLE` becomes
///   `SCHED_OTHER`) with that nice value.
pub fn attr_for(base: &SchedAttr, base_urgency: Urgency, eff: Urgency) -> Option<SchedAttr> {
    if eff == base_urgency {
        return Some(*base);
    }
    let mut a = *base;
    a.sched_flags &= sys::SCHED_FLAG_RESET_ON_FORK;
    match eff {
        Urgency::Fixed { prio } => {
            if base.sched_policy == sys::SCHED_DEADLINE {
                return None;
            }
            a.sched_policy = if base.sched_policy == sys::SCHED_RR {
                sys::SCHED_RR
            } else {
                sys::SCHED_FIFO
            };
            a.sched_priority = u32::from(prio);
            a.sched_runtime = 0;
            a.sched_deadline = 0;
            a.sched_period = 0;
            Some(a)
        }
        Urgency::Other { nice } => {
            if base.sched_policy != sys::SCHED_OTHER && base.sched_policy != sys::SCHED_BATCH {
                if base.sched_policy == sys::SCHED_IDLE {
                    a.sched_policy = sys::SCHED_OTHER;
                } else {
                    return None;
                }
            }
            a.sched_nice = i32::from(nice);
            a.sched_priority = 0;
            Some(a)
        }
        Urgency::Deadline { .. } => None,
    }
}

/// A `SCHED_FIFO` attribute set at `prio` (nice 0).
pub fn fifo(prio: u8) -> SchedAttr {
    SchedAttr {
        sched_policy: sys::SCHED_FIFO,
        sched_priority: u32::from(prio),
        ..SchedAttr::default()
    }
}

/// A `SCHED_OTHER` attribute set with `nice`.
pub fn other(nice: i8) -> SchedAttr {
    SchedAttr {
        sched_policy: sys::SCHED_OTHER,
        sched_nice: i32::from(nice),
        ..SchedAttr::default()
    }
}

/// The urgency the kernel is currently told for `tid` (its `sched_getattr`
/// view, which excludes kernel PI boosting).
pub fn kernel_urgency(tid: i32) -> Result<Urgency, sys::Errno> {
    sys::sched_getattr(tid).map(|a| urgency_of(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_thread_boosted_to_fifo_and_restored_exactly() {
        let mut base = other(5);
        base.sched_flags = sys::SCHED_FLAG_RESET_ON_FORK;
        let bu = urgency_of(&base);
        assert_eq!(bu, Urgency::other(5));
        let boosted = attr_for(&base, bu, Urgency::fixed(30)).unwrap();
        assert_eq!(boosted.sched_policy, sys::SCHED_FIFO);
        assert_eq!(boosted.sched_priority, 30);
        assert_eq!(boosted.sched_nice, 5);
        assert_eq!(boosted.sched_flags, sys::SCHED_FLAG_RESET_ON_FORK);
        assert_eq!(attr_for(&base, bu, bu), Some(base));
    }

    #[test]
    fn rr_stays_rr_and_deadline_is_not_lent_to_fixed() {
        let mut base = fifo(10);
        base.sched_policy = sys::SCHED_RR;
        let bu = urgency_of(&base);
        let b = attr_for(&base, bu, Urgency::fixed(20)).unwrap();
        assert_eq!((b.sched_policy, b.sched_priority), (sys::SCHED_RR, 20));
        let dl = Urgency::deadline(5);
        assert_eq!(attr_for(&base, bu, dl), None);
        let idle = SchedAttr {
            sched_policy: sys::SCHED_IDLE,
            ..SchedAttr::default()
        };
        let iu = urgency_of(&idle);
        assert_eq!(iu, Urgency::LOWEST);
        let o = attr_for(&idle, iu, Urgency::other(0)).unwrap();
        assert_eq!((o.sched_policy, o.sched_nice), (sys::SCHED_OTHER, 0));
    }

    #[test]
    fn deadline_threads_are_ordered_by_relative_deadline() {
        let dl = |d: u64| SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_runtime: 1_000_000,
            sched_deadline: d,
            sched_period: 20_000_000,
            ..SchedAttr::default()
        };
        let short = urgency_of(&dl(5_000_000));
        let long = urgency_of(&dl(10_000_000));
        assert_eq!(short, deadline_monotonic(5_000_000));
        assert!(short > long, "the shorter relative deadline is more urgent");
        assert!(
            long > Urgency::fixed(99),
            "deadline above every fixed priority"
        );
    }
}
