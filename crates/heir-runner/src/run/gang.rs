//! `heir run` of gangs (GPM): each gang resource is a [`Gang`] of
//! heir-rt (L-GPM: the gang priority applied with `sched_setattr` through
//! the engine, combined with lock inheritance as Invariant 1 says), with
//! the simulator's semantics (docs/GANG.md §2):
//!
//! - the members a gang lists join it before the run starts, each with its
//!   own [`ControlWord`] holding [`GANG_DEFAULT_BITS`]; `gang_insert` joins
//!   with those bits, `gang_remove` leaves, and a thread that finishes its
//!   program leaves its gang (as `gang_notify` first if it was counted);
//! - `gang_active` / `gang_passive` set / clear the caller's bits (one CAS,
//!   no system call); `gang_run` is [`Gang::run`] with the event's mask (a
//!   run in progress: it fails and is counted in `failed_runs`);
//!   `gang_notify` is [`Gang::notify`] for a member of that gang (harmless
//!   otherwise); `gang_wait` is [`Gang::wait_until`] with min(timeout, end
//!   of the run) as its deadline;
//! - `global.gpm: false` (`--gpm off`) makes every gang with
//!   [`GangAttr`] `gpm: false`: the same counting and waiting, no boost.
//!
//! **Latency** (the report's `gangs`, the simulator's schema): from a run's
//! `gang_run` (the time taken just before [`Gang::run`]) to its last
//! notify (the time taken just before the completing [`Gang::notify`] or
//! [`Gang::remove_member`]). The operations that change the count — run, notify,
//! remove, a finished thread's leaving — take the gang's *book* (a
//! [`PiMutex`]) around the heir-rt call, so that the completing notify
//! knows it completes the run (it is counted and is the last pending
//! member) and publishes the run's number and latency in one atomic word
//! before it wakes the waiters. Waiters never take the book: each reads
//! that word when its wait returns and records the run once (a wait that
//! returns at once records the last completed run's, if this thread has not
//! yet: the simulator's rule), so a woken waiter never contends with the
//! member that woke it.
//!
//! **Trace** (`heir run --trace`): the simulator's instants, as markers:
//! `gang_run`, `gang_run_failed`, `gang_notify`, `gang_wait` (a wait that
//! blocks), `gang_done` (a wait that returns with the run complete),
//! `gang_timeout`, `gang_insert`, `gang_remove`, on the gang.

use std::sync::atomic::{AtomicU64, Ordering};

use heir_report::{GangReport, GangWaitReport, ResponseStats};
use heir_scenario::{Event, GangOp, Scenario, GANG_DEFAULT_BITS};

use super::{Ctx, Res, RunError, Shared, Stop};
use crate::tracefs;
use heir::gang::{ControlWord, Gang, GangAttr, GangWait, MASK_BITS};
use heir::mutex::PiMutex;
use heir::{sys, Error};

/// A gang resource of the run.
pub(super) struct RunGang {
    /// The heir-rt gang.
    pub gang: Gang,
    /// Its runs and failed runs, and the start of the run in progress:
    /// taken around every operation that changes the count.
    book: PiMutex<Book>,
    /// The last completed run: its number (high 24 bits) and latency in ns
    /// (low 40 bits: up to 18 minutes), written before the completing
    /// notify wakes the waiters; 0 before any.
    done: AtomicU64,
}

/// What the book keeps.
#[derive(Default)]
struct Book {
    runs: u64,
    failed: u64,
    /// When the run in progress started (ns).
    start: u64,
}

/// Bits of [`RunGang::done`] for the latency.
const LATENCY_BITS: u32 = 40;

fn pack(run: u64, latency_ns: u64) -> u64 {
    (run << LATENCY_BITS) | latency_ns.min((1 << LATENCY_BITS) - 1)
}

fn unpack(v: u64) -> (u64, u64) {
    (v >> LATENCY_BITS, v & ((1 << LATENCY_BITS) - 1))
}

impl RunGang {
    /// A gang that boosts when `gpm` is on.
    pub fn new(gpm: bool) -> Result<RunGang, Error> {
        Ok(RunGang {
            gang: Gang::with_attr(GangAttr { gpm })?,
            book: PiMutex::new(Book::default()),
            done: AtomicU64::new(0),
        })
    }

    /// `(runs, failed runs)` so far.
    fn counts(&self) -> (u64, u64) {
        match self.book.lock() {
            Ok(b) => (b.runs, b.failed),
            Err(_) => (0, 0),
        }
    }
}

/// One thread's `gang_wait`s on one gang.
#[derive(Default)]
pub(super) struct Waits {
    /// The gang (a resource index).
    pub res: usize,
    pub latency: ResponseStats,
    pub timeouts: u64,
    /// The last run whose latency it recorded.
    seen: u64,
}

/// Each thread's control word, in start order (its membership bits while
/// it is a member of a gang).
pub(super) fn control_words(scenario: &Scenario) -> Vec<ControlWord> {
    let n: usize = scenario.tasks.iter().map(|t| t.instance as usize).sum();
    (0..n)
        .map(|_| ControlWord::new(GANG_DEFAULT_BITS))
        .collect()
}

/// The gang a thread of task `ti` is a member of at the start (the first
/// gang that lists it; the reader refuses a task listed in two).
pub(super) fn initial_gang(scenario: &Scenario, ti: usize) -> Option<usize> {
    scenario.resources.iter().position(|r| match &r.kind {
        heir_scenario::ResourceKind::Gang { members } => members.iter().any(|m| m.0 == ti),
        _ => false,
    })
}

/// Inserts the members every gang lists (`tids`: the threads' tids in
/// start order), before the run starts.
pub(super) fn insert_members(scenario: &Scenario, sh: &Shared, tids: &[i32]) -> Result<(), Error> {
    let mut k = 0;
    for (ti, t) in scenario.tasks.iter().enumerate() {
        for _ in 0..t.instance {
            if let Some(r) = initial_gang(scenario, ti) {
                if let Res::Gang(g) = &sh.res[r] {
                    g.gang.add_member(tids[k], &sh.words[k])?;
                }
            }
            k += 1;
        }
    }
    Ok(())
}

/// The report's `gangs`, in resource order; each gang's waiters in thread
/// order (`waits`: each thread's name and its waits).
pub(super) fn reports(sh: &Shared, waits: &[(String, &[Waits])]) -> Vec<GangReport> {
    sh.res
        .iter()
        .enumerate()
        .filter_map(|(r, res)| match res {
            Res::Gang(g) => Some((r, g)),
            _ => None,
        })
        .map(|(r, g)| {
            let (runs, failed_runs) = g.counts();
            GangReport {
                name: sh.res_names[r].clone(),
                runs,
                failed_runs,
                waiters: waits
                    .iter()
                    .flat_map(|(name, ws)| {
                        ws.iter().filter(|w| w.res == r).map(|w| GangWaitReport {
                            thread: name.clone(),
                            completed: w.latency.count(),
                            timeouts: w.timeouts,
                            latency_us: w.latency.summary(),
                        })
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Marks gang instant `kind` of the calling thread on resource `r` at `at`.
fn mark(kind: &str, at: u64, r: usize) {
    if tracefs::tracing() {
        tracefs::mark(format_args!("i {kind} {at} r{r}"));
    }
}

/// The gang of resource `r`.
fn run_gang(sh: &Shared, r: usize) -> Option<&RunGang> {
    match sh.res.get(r) {
        Some(Res::Gang(g)) => Some(g),
        _ => None,
    }
}

impl Ctx<'_> {
    /// This thread's control word.
    fn word(&self) -> &ControlWord {
        &self.sh.words[self.idx]
    }

    /// One gang event (`op` on resource `r`).
    pub(super) fn gang_event(&mut self, ev: &Event, r: usize, op: GangOp) -> Result<(), Stop> {
        let Some(g) = run_gang(self.sh, r) else {
            return Ok(());
        };
        let mine = self.gang == Some(r);
        match op {
            GangOp::Run { mask } => {
                let mut b = g.book.lock()?;
                let now = sys::now_ns();
                match g.gang.run(mask & MASK_BITS) {
                    Ok(out) => {
                        b.runs += 1;
                        b.start = now;
                        mark("gang_run", now, r);
                        if out.active == 0 {
                            // Complete at once (latency 0).
                            g.done.store(pack(b.runs, 0), Ordering::Release);
                        }
                    }
                    Err(Error::GangRunning { .. }) => {
                        b.failed += 1;
                        mark("gang_run_failed", now, r);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            GangOp::Notify => {
                let now = sys::now_ns();
                mark("gang_notify", now, r);
                if mine {
                    let b = g.book.lock()?;
                    self.record_completion(g, &b, now);
                    g.gang.notify()?;
                    drop(b);
                }
            }
            GangOp::Wait { timeout_us } => self.gang_wait(r, timeout_us)?,
            GangOp::Insert => match self.gang {
                Some(x) if x == r => {}
                Some(x) => {
                    return Err(Stop::Failed(RunError::Invalid {
                        path: ev.path.clone(),
                        line: ev.line,
                        column: ev.column,
                        message: format!(
                            "thread {} joins gang {:?} but is a member of gang {:?}: a thread is a member of at most one gang (gang_remove it from {:?} first)",
                            self.name, self.sh.res_names[r], self.sh.res_names[x], self.sh.res_names[x]
                        ),
                    }))
                }
                None => {
                    let w = self.word();
                    w.deactivate(MASK_BITS);
                    w.activate(GANG_DEFAULT_BITS);
                    let b = g.book.lock()?;
                    g.gang.add_member(sys::gettid(), w)?;
                    drop(b);
                    self.gang = Some(r);
                    mark("gang_insert", sys::now_ns(), r);
                }
            },
            GangOp::Remove => {
                if mine {
                    self.gang_leave()?;
                }
            }
            GangOp::Active { bits } => {
                if mine {
                    self.word().activate(bits);
                }
            }
            GangOp::Passive { bits } => {
                if mine {
                    self.word().deactivate(bits);
                }
            }
        }
        Ok(())
    }

    /// Under gang `g`'s book, before this thread's notify (at `now`): if
    /// it completes the run in progress (it is counted and the last one
    /// pending), publishes the run's latency.
    fn record_completion(&self, g: &RunGang, b: &Book, now: u64) {
        if self.word().load().counted() && g.gang.pending() == 1 {
            g.done
                .store(pack(b.runs, now.saturating_sub(b.start)), Ordering::Release);
        }
    }

    /// This thread leaves its gang (`gang_remove`, or the end of its
    /// program): as `gang_notify` first if it was counted in the run in
    /// progress.
    pub(super) fn gang_leave(&mut self) -> Result<(), Stop> {
        let Some(r) = self.gang else {
            return Ok(());
        };
        let Some(g) = run_gang(self.sh, r) else {
            return Ok(());
        };
        let b = g.book.lock()?;
        let now = sys::now_ns();
        if self.word().load().counted() {
            mark("gang_notify", now, r);
        }
        self.record_completion(g, &b, now);
        let left = g.gang.remove_member(sys::gettid());
        drop(b);
        self.gang = None;
        mark("gang_remove", now, r);
        match left {
            Ok(_) | Err(Error::NotMember(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// `gang_wait` on resource `r`.
    fn gang_wait(&mut self, r: usize, timeout_us: Option<u64>) -> Result<(), Stop> {
        let Some(g) = run_gang(self.sh, r) else {
            return Ok(());
        };
        let i = match self.gang_waits.iter().position(|w| w.res == r) {
            Some(i) => i,
            None => {
                self.gang_waits.push(Waits {
                    res: r,
                    ..Waits::default()
                });
                self.gang_waits.len() - 1
            }
        };
        let end = self.end();
        let deadline = timeout_us
            .map(|us| sys::now_ns().saturating_add(us.saturating_mul(1000)))
            .map_or(end, |d| d.min(end));
        if !g.gang.is_complete() {
            if self.gang == Some(r) && self.word().load().counted() {
                // It waits for itself: the simulator's deadlock.
                let name = self.name.to_string();
                self.record_deadlock(
                    heir_report::DeadlockKind::Deadlock,
                    vec![name.clone(), self.sh.res_names[r].clone(), name],
                );
                return Err(Stop::Deadlock);
            }
            mark("gang_wait", sys::now_ns(), r);
        }
        match g.gang.wait_until(Some(deadline))? {
            GangWait::Completed => {
                let (run, latency) = unpack(g.done.load(Ordering::Acquire));
                let w = &mut self.gang_waits[i];
                if run > w.seen {
                    w.seen = run;
                    w.latency.record(latency);
                }
                mark("gang_done", sys::now_ns(), r);
                Ok(())
            }
            GangWait::TimedOut => {
                if self.over() {
                    return Err(Stop::End);
                }
                self.gang_waits[i].timeouts += 1;
                mark("gang_timeout", sys::now_ns(), r);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_packs_the_run_and_the_latency() {
        for (run, lat) in [(0, 0), (1, 3_000_000), ((1 << 24) - 1, (1 << 40) - 1)] {
            assert_eq!(unpack(pack(run, lat)), (run, lat));
        }
        assert_eq!(unpack(pack(2, u64::MAX)), (2, (1 << 40) - 1));
    }
}
