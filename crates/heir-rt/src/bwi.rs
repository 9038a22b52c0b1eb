//! `"protocol": "bwi"` on a stock kernel: an approximation of M-BWI
//! (M-BWI) in user space, over a kernel PI futex ([`RawPiMutex`]).
//!
//! M-BWI: a deadline waiter lends its reservation — budget *and* deadline — to
//! the owner; the owner runs on the earliest-deadline reservation it holds, and
//! when that budget is spent the reservation is replenished with its deadline
//! postponed by its period (the M-BWI paper's Fig. 5, `Rep(S1)`): a task with a
//! deadline between the two then preempts the owner. Linux's deadline
//! inheritance does less (docs/DEADLINE.md §3): a boosted owner is never
//! throttled, the donor's budget is never charged, and a *deadline* owner
//! keeps its own deadline (so a middle task preempts it).
//!
//! What heir-rt does, and how exact each part is:
//!
//! - **The donor's deadline** (approximation). The kernel gives the donor's
//!   deadline only to a *non-deadline* owner (now + D, runtime Q of the
//!   waiter). So a `SCHED_DEADLINE` thread that acquires a `bwi` mutex
//!   leaves the deadline class for `SCHED_FIFO` [`OWNER_FIFO_PRIORITY`]
//!   while it holds one — its own change, while it runs — and returns to its
//!   reservation after its last `bwi` unlock (retrying while admission
//!   refuses it: its old bandwidth is only released at its 0-lag time).
//!   While it holds the mutex without waiters it therefore runs below every
//!   deadline task (M-BWI: on its own reservation, at its own deadline) and on no
//!   budget of its own.
//! - **The budget a boosted owner consumes** (exact measurement, one
//!   caveat). A deadline waiter reads its remaining runtime (`dl.runtime`
//!   of `/proc/self/task/TID/sched`) and the owner's CPU clock before it
//!   blocks; what the owner's CPU clock advanced while it waited is what
//!   the owner ran boosted by it — exactly, with one waiter; with several
//!   waiters each counts the owner's whole time (M-BWI charges only the
//!   earliest-deadline reservation).
//! - **The throttle** (approximation). The waiter blocks on the PI futex
//!   with a timeout of its remaining budget (wall-clock: the owner cannot
//!   run more than that meanwhile). When the owner has consumed it, the
//!   waiter withdraws — the kernel de-boosts the owner at once — and waits
//!   again: the kernel boosts the owner anew with runtime Q and deadline
//!   *now* + D (M-BWI: the spent deadline + P; the same order whenever the
//!   budget ran out before the waiter's spent deadline + P − D, as in
//!   Fig. 5). A task whose deadline lies between the two runs in between,
//!   as after `Rep(S1)`. The waiter's own kernel runtime is not charged for
//!   what it lent (no interface does that).
//! - **Spinning on a remote owner** (not done). M-BWI makes a waiter whose
//!   owner *runs* on another CPU spin. User space cannot know that an owner
//!   is running right now: `/proc/TID/stat` says `R` for running *or*
//!   runnable and its CPU is the last one it ran on, both stale by the
//!   time they are read. Spinning on a guess would burn the waiter's budget
//!   at deadline priority for nothing; heir-rt always blocks, and the
//!   kernel boosts the owner wherever it is (on its own CPU).

use std::collections::HashMap;

use crate::deadline;
use crate::mutex::RawPiMutex;
use crate::sys;
use crate::Error;

/// The `SCHED_FIFO` priority a deadline thread runs at while it holds a
/// `bwi` mutex: above every other program's fixed-priority thread, below
/// every deadline task.
pub const OWNER_FIFO_PRIORITY: u8 = 98;

/// A budget left (ns) below which a lent budget counts as spent: the
/// timeout's wake-up latency.
const SPENT_SLACK_NS: u64 = 50_000;

/// What one thread lent to one owner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lent {
    /// The owner's CPU time while boosted by this thread (ns).
    pub consumed_ns: u64,
    /// Times this thread's lent budget ran out (and it withdrew).
    pub throttles: u64,
}

/// A thread's `bwi` state and counts.
#[derive(Clone, Debug, Default)]
pub struct BwiThread {
    /// `bwi` mutexes held.
    held: u32,
    /// The reservation to return to after the last `bwi` unlock.
    own: Option<sys::SchedAttr>,
    /// Per owner tid, what this thread lent it.
    pub lent: HashMap<i32, Lent>,
    /// Failed returns to its reservation (`EBUSY` until its 0-lag time).
    pub readmit_retries: u64,
    /// When its lent budget ran out (ns), since last taken.
    throttle_times: Vec<u64>,
}

impl BwiThread {
    /// Locks `m` until the absolute `end`: a deadline caller lends with
    /// accounting and throttles (module docs); then a deadline caller leaves
    /// the deadline class while it holds `bwi` mutexes.
    pub fn lock(&mut self, m: &RawPiMutex, end: u64) -> Result<(), Error> {
        let me = sys::gettid();
        let attr = sys::sched_getattr(me).map_err(|errno| Error::Os {
            op: "sched_getattr",
            errno,
        })?;
        if attr.sched_policy == sys::SCHED_DEADLINE {
            self.lend(m, me, end)?;
            if self.held == 0 {
                self.own = Some(attr);
                // Through the registry, so that heir-rt's base for this
                // thread is what it runs at (the registry restores a
                // thread's base after a lend it cannot express).
                let fifo = crate::sched::fifo(OWNER_FIFO_PRIORITY);
                let _ = deadline::leave_class(&fifo);
                let _ = crate::thread::set_sched(&fifo);
            }
        } else {
            m.lock_until(Some(end))?;
        }
        self.held += 1;
        Ok(())
    }

    /// Blocks on `m` as a deadline waiter: its remaining budget is the
    /// timeout; a spent budget withdraws and waits for the replenishment.
    fn lend(&mut self, m: &RawPiMutex, me: i32, end: u64) -> Result<(), Error> {
        let mut spent_on: Option<(i32, u64)> = None;
        loop {
            if m.try_lock().is_ok() {
                return Ok(());
            }
            let owner = m.owner_tid().unwrap_or(0);
            let budget = deadline::proc_sched(me)
                .and_then(|s| s.dl_runtime_ns)
                .unwrap_or(0)
                .max(0) as u64;
            // What this owner already took of this budget.
            let spent = match spent_on {
                Some((o, s)) if o == owner => s,
                _ => 0,
            };
            let left = budget.saturating_sub(spent);
            let c0 = sys::thread_cpu_ns_of(owner);
            let r = if left > SPENT_SLACK_NS {
                m.lock_until(Some((sys::now_ns() + left).min(end)))
            } else {
                Err(Error::TimedOut)
            };
            let used = match (c0, sys::thread_cpu_ns_of(owner)) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            };
            let pair = self.lent.entry(owner).or_default();
            pair.consumed_ns += used;
            match r {
                Ok(()) => return Ok(()),
                Err(Error::TimedOut) if sys::now_ns() < end => {
                    if used + spent + SPENT_SLACK_NS >= budget {
                        // Spent: withdrawn (the owner is de-boosted); the
                        // next wait lends a fresh budget and deadline.
                        pair.throttles += 1;
                        spent_on = None;
                        self.throttle_times.push(sys::now_ns());
                    } else {
                        // The owner was kept off its CPU: the rest of the
                        // budget is still lent.
                        spent_on = Some((owner, spent + used));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The times (ns) its lent budget ran out since the last call.
    pub fn take_throttle_times(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.throttle_times)
    }

    /// Unlocks `m`; after the last `bwi` unlock, returns to the caller's
    /// reservation (its own change), retrying every millisecond until the
    /// absolute `end` while admission refuses it.
    pub fn unlock(&mut self, m: &RawPiMutex, end: u64) -> Result<(), Error> {
        m.unlock()?;
        self.held = self.held.saturating_sub(1);
        if self.held == 0 {
            if let Some(own) = self.own.take() {
                while let Err(e) = crate::thread::set_sched(&own) {
                    if e.errno() != libc::EBUSY || sys::now_ns() >= end {
                        break;
                    }
                    self.readmit_retries += 1;
                    sys::sleep_until(sys::now_ns() + 1_000_000);
                }
            }
        }
        Ok(())
    }
}

/// One thread's `bwi` figures over a run (µs), for the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BwiReport {
    /// The thread.
    pub task: String,
    /// Its budget that boosted owners consumed (as a waiter).
    pub lent_us: f64,
    /// Other threads' budget it consumed while boosted (as an owner).
    pub consumed_us: f64,
    /// Times its lent budget ran out.
    pub throttles: u64,
    /// Failed returns to its reservation after a `bwi` unlock.
    pub readmit_retries: u64,
    /// Per owner: (owner, what this thread lent it in µs, throttles).
    pub pairs: Vec<(String, f64, u64)>,
}

/// The report of each thread with a non-zero `bwi` figure, in `threads`
/// order: (name, tid, its state).
pub fn reports(threads: &[(String, i32, &BwiThread)]) -> Vec<BwiReport> {
    let name_of = |tid: i32| {
        threads
            .iter()
            .find(|(_, t, _)| *t == tid)
            .map_or_else(|| format!("tid {tid}"), |(n, _, _)| n.clone())
    };
    let mut out = Vec::new();
    for (name, tid, b) in threads {
        let consumed_ns: u64 = threads
            .iter()
            .filter_map(|(_, _, o)| o.lent.get(tid))
            .map(|l| l.consumed_ns)
            .sum();
        let mut pairs: Vec<(String, f64, u64)> = b
            .lent
            .iter()
            .filter(|(_, l)| l.consumed_ns > 0 || l.throttles > 0)
            .map(|(o, l)| (name_of(*o), l.consumed_ns as f64 / 1000.0, l.throttles))
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let r = BwiReport {
            task: name.clone(),
            lent_us: b.lent.values().map(|l| l.consumed_ns).sum::<u64>() as f64 / 1000.0,
            consumed_us: consumed_ns as f64 / 1000.0,
            throttles: b.lent.values().map(|l| l.throttles).sum(),
            readmit_retries: b.readmit_retries,
            pairs,
        };
        if r.lent_us > 0.0 || r.consumed_us > 0.0 || r.throttles > 0 || r.readmit_retries > 0 {
            out.push(r);
        }
    }
    out
}
