//! Gang priority management (GPM): `gang_run`, `gang_wait`,
//! `gang_notify`, membership, and the latency each waiter sees.
//!
//! A gang is one engine object of [`heir_core::Spec::GANG`]. Its targets
//! are the active members of the run in progress that have not notified
//! yet; its floor, while the run is in progress, is the gang priority
//! ([`heir_scenario::engine::gang_floor`]: the most urgent base of all
//! members short of a deadline; none with `global.gpm: false`). So the
//! engine gives each of them `max(floor, lock-inherited)` — Invariant 1 —
//! and passes it on down their chains when they block. A `gang_wait`
//! blocks on the object (no donation): the wait-for edges waiter → gang →
//! pending members let the engine refuse a wait that would deadlock.
//!
//! `gang_run` is one micro-step (K-GPM's one system call: every active
//! member is boosted at once); the others are one engine operation each.

use super::*;
use heir_scenario::{engine, GangOp};

/// One gang's state.
pub(super) struct Gang {
    /// The engine object.
    pub obj: heir_core::ObjId,
    /// Its resource index (trace).
    pub res: usize,
    /// Member threads, in order of joining.
    pub members: Vec<u32>,
    /// The run in progress: when it started and the active members that
    /// have not notified yet.
    pub run: Option<GangRun>,
    /// Runs started so far (the last one's number).
    pub runs: u64,
    /// `gang_run`s that failed.
    pub failed: u64,
    /// The last completed run: its number and its latency (ns).
    pub done: Option<(u64, u64)>,
    /// Threads blocked in `gang_wait`, in order.
    pub waiters: Vec<u32>,
    /// The member whose base is the gang priority of the run in progress
    /// (shown as the donor of the boosts).
    pub donor: Option<u32>,
    /// Per thread that called `gang_wait`, in order of first call.
    pub waits: Vec<GangWaits>,
}

/// A run in progress.
pub(super) struct GangRun {
    /// When `gang_run` started it (ns).
    pub start: u64,
    /// Active members that have not notified, in member order.
    pub pending: Vec<u32>,
}

/// What one thread's `gang_wait`s on one gang saw.
pub(super) struct GangWaits {
    pub thread: u32,
    pub latency: ResponseStats,
    pub timeouts: u64,
    /// The number of the last run whose latency it recorded.
    pub seen: u64,
}

impl Gang {
    pub fn new(obj: heir_core::ObjId, res: usize, members: Vec<u32>) -> Gang {
        Gang {
            obj,
            res,
            members,
            run: None,
            runs: 0,
            failed: 0,
            done: None,
            waiters: Vec::new(),
            donor: None,
            waits: Vec::new(),
        }
    }
}

impl<'s, 'o> Simulator<'s, 'o> {
    /// The gang of resource `r`.
    fn gang_of(&self, r: usize, ev: &Event) -> R<u32> {
        match self.res_state.get(r) {
            Some(ResState::Gang(g)) => Ok(*g),
            _ => Err(Box::new(Stop::Error(at_event(
                ev,
                "the event's resource has the wrong kind",
            )))),
        }
    }

    /// The member shown as the donor of a boost by engine object `o`'s
    /// floor, if `o` is a running gang.
    pub(super) fn gang_donor(&self, o: heir_core::ObjId) -> Option<u32> {
        let r = *self.obj_res.get(o.0 as usize)?;
        match self.res_state.get(r) {
            Some(ResState::Gang(g)) => {
                let g = &self.gangs[*g as usize];
                (g.obj == o).then_some(g.donor).flatten()
            }
            _ => None,
        }
    }

    /// One gang event of the running thread `t` (one micro-step).
    pub(super) fn ev_gang(&mut self, t: u32, r: usize, op: GangOp, ev: &Event) -> R<Flow> {
        let g = self.gang_of(r, ev)?;
        let res = self.gangs[g as usize].res;
        match op {
            GangOp::Run { mask } => self.gang_run(t, g, mask)?,
            GangOp::Notify => {
                self.instant(t, InstantKind::GangNotify, res);
                self.gang_notify(t, g)?;
            }
            GangOp::Wait { timeout_us } => return self.gang_wait(t, g, timeout_us),
            GangOp::Insert => self.gang_insert(t, g, ev)?,
            GangOp::Remove => {
                if self.threads[t as usize].gang == Some(g) {
                    self.gang_leave(t)?;
                }
            }
            GangOp::Active { bits } => {
                let th = &mut self.threads[t as usize];
                if th.gang == Some(g) {
                    th.gang_bits |= bits;
                }
            }
            GangOp::Passive { bits } => {
                let th = &mut self.threads[t as usize];
                if th.gang == Some(g) {
                    th.gang_bits &= !bits;
                }
            }
        }
        Ok(Flow::Next)
    }

    /// `gang_run` by `t`: fails while a run is in progress; else every
    /// member whose bits share one with `mask` becomes a target and the
    /// floor is set to the gang priority. A run without active members is
    /// complete at once.
    fn gang_run(&mut self, t: u32, g: u32, mask: u32) -> R<()> {
        let gi = g as usize;
        let res = self.gangs[gi].res;
        if self.gangs[gi].run.is_some() {
            self.gangs[gi].failed += 1;
            self.instant(t, InstantKind::GangRunFailed, res);
            return Ok(());
        }
        self.instant(t, InstantKind::GangRun, res);
        let members = &self.gangs[gi].members;
        let pending: Vec<u32> = members
            .iter()
            .copied()
            .filter(|&m| engine::gang_active(self.threads[m as usize].gang_bits, mask))
            .collect();
        let floor = engine::gang_floor(
            &self.sc.global,
            members.iter().map(|&m| self.threads[m as usize].base),
        );
        // Shown as the donor: the first member whose base is the floor.
        let donor = floor.and_then(|f| {
            members
                .iter()
                .copied()
                .find(|&m| self.threads[m as usize].base == f)
        });
        let gang = &mut self.gangs[gi];
        gang.runs += 1;
        gang.donor = donor;
        let obj = gang.obj;
        gang.run = Some(GangRun {
            start: self.now,
            pending: pending.clone(),
        });
        match self.engine.set_floor(obj, floor) {
            Ok(ch) => self.apply_changes(&ch),
            Err(e) => return Err(self.internal(t, e)),
        }
        for m in pending {
            let eng = self.threads[m as usize].eng;
            match self.engine.add_target(obj, eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(EngineError::Cycle { cycle }) => return Err(self.deadlock(&cycle)),
                Err(e) => return Err(self.internal(t, e)),
            }
        }
        self.gang_maybe_done(t, g)
    }

    /// `gang_notify` by `t` (also `gang_remove` and the exit of an active
    /// member): if `t` is an active member of the run in progress that has
    /// not notified, its boost is revoked and it is counted; else nothing.
    fn gang_notify(&mut self, t: u32, g: u32) -> R<()> {
        let gi = g as usize;
        let Some(run) = self.gangs[gi].run.as_mut() else {
            return Ok(());
        };
        let Some(pos) = run.pending.iter().position(|&m| m == t) else {
            return Ok(());
        };
        run.pending.remove(pos);
        let obj = self.gangs[gi].obj;
        let eng = self.threads[t as usize].eng;
        match self.engine.remove_target(obj, eng) {
            Ok(ch) => self.apply_changes(&ch),
            Err(e) => return Err(self.internal(t, e)),
        }
        self.gang_maybe_done(t, g)
    }

    /// The run in progress completes when no active member is pending:
    /// the floor is cleared, the latency recorded for each waiter, and the
    /// waiters wake (`t`: the thread whose operation completed it).
    fn gang_maybe_done(&mut self, t: u32, g: u32) -> R<()> {
        let gi = g as usize;
        let gang = &mut self.gangs[gi];
        match &gang.run {
            Some(run) if run.pending.is_empty() => {}
            _ => return Ok(()),
        }
        let Some(run) = gang.run.take() else {
            return Ok(());
        };
        let latency = self.now.saturating_sub(run.start);
        gang.done = Some((gang.runs, latency));
        gang.donor = None;
        let obj = gang.obj;
        match self.engine.set_floor(obj, None) {
            Ok(ch) => self.apply_changes(&ch),
            Err(e) => return Err(self.internal(t, e)),
        }
        let woken = match self.engine.wake_all(obj) {
            Ok(out) => {
                self.apply_changes(&out.changes);
                out.value
            }
            Err(e) => return Err(self.internal(t, e)),
        };
        let waiters = std::mem::take(&mut self.gangs[gi].waiters);
        debug_assert_eq!(waiters.len(), woken.len());
        let res = self.gangs[gi].res;
        for w in waiters {
            self.gang_record(w, g);
            let th = &mut self.threads[w as usize];
            th.gang_waiting = None;
            th.gang_gen = th.gang_gen.wrapping_add(1);
            self.instant(w, InstantKind::GangDone, res);
            self.wake(w)?;
        }
        Ok(())
    }

    /// The statistics of `t`'s waits on gang `g` (created at its first
    /// `gang_wait`).
    fn gang_waits(&mut self, t: u32, g: u32) -> &mut GangWaits {
        let waits = &mut self.gangs[g as usize].waits;
        let pos = match waits.iter().position(|w| w.thread == t) {
            Some(p) => p,
            None => {
                waits.push(GangWaits {
                    thread: t,
                    latency: ResponseStats::new(),
                    timeouts: 0,
                    seen: 0,
                });
                waits.len() - 1
            }
        };
        &mut waits[pos]
    }

    /// `t`'s wait on gang `g` returns with the last completed run: its
    /// latency is recorded once per waiting thread.
    fn gang_record(&mut self, t: u32, g: u32) {
        let Some((run, latency)) = self.gangs[g as usize].done else {
            return;
        };
        let w = self.gang_waits(t, g);
        if w.seen < run {
            w.seen = run;
            w.latency.record(latency);
        }
    }

    /// `gang_wait` by `t`: returns at once when no run is in progress
    /// (recording the last completed run's latency if this thread has not
    /// yet); else blocks on the gang until the run completes or the
    /// timeout.
    fn gang_wait(&mut self, t: u32, g: u32, timeout_us: Option<u64>) -> R<Flow> {
        let gi = g as usize;
        let res = self.gangs[gi].res;
        self.gang_waits(t, g);
        if self.gangs[gi].run.is_none() {
            self.gang_record(t, g);
            self.instant(t, InstantKind::GangDone, res);
            return Ok(Flow::Next);
        }
        let obj = self.gangs[gi].obj;
        let eng = self.threads[t as usize].eng;
        match self.engine.block(eng, obj) {
            Ok(ch) => self.apply_changes(&ch),
            Err(EngineError::Cycle { cycle }) => return Err(self.deadlock(&cycle)),
            Err(e) => return Err(self.internal(t, e)),
        }
        self.instant(t, InstantKind::GangWait, res);
        self.gangs[gi].waiters.push(t);
        let th = &mut self.threads[t as usize];
        th.gang_waiting = Some(g);
        th.gang_gen = th.gang_gen.wrapping_add(1);
        let gen = th.gang_gen;
        if let Some(us) = timeout_us {
            self.evq.push(
                self.now.saturating_add(us_to_ns(us)),
                EvKind::GangTimeout,
                t,
                gen,
            );
        }
        self.finish(t);
        self.block(t);
        Ok(Flow::Leave)
    }

    /// A `gang_wait`'s timeout fired (stale unless `gen` matches and `t`
    /// still waits): it stops waiting, counted as a timeout.
    pub(super) fn gang_timeout(&mut self, t: u32, gen: u32) -> R<()> {
        let th = &self.threads[t as usize];
        let Some(g) = th.gang_waiting else {
            return Ok(());
        };
        if th.gang_gen != gen || th.status != Status::Blocked {
            return Ok(());
        }
        let eng = th.eng;
        match self.engine.cancel_wait(eng) {
            Ok(ch) => self.apply_changes(&ch),
            Err(e) => return Err(self.internal(t, e)),
        }
        let gi = g as usize;
        self.gangs[gi].waiters.retain(|&w| w != t);
        self.gang_waits(t, g).timeouts += 1;
        let th = &mut self.threads[t as usize];
        th.gang_waiting = None;
        th.gang_gen = th.gang_gen.wrapping_add(1);
        let res = self.gangs[gi].res;
        self.instant(t, InstantKind::GangTimeout, res);
        self.wake(t)
    }

    /// `gang_insert` by `t`: it joins gang `g` with the default bits
    /// (nothing when it already is a member); a member of another gang is
    /// an error (a thread is a member of at most one gang).
    fn gang_insert(&mut self, t: u32, g: u32, ev: &Event) -> R<()> {
        match self.threads[t as usize].gang {
            Some(x) if x == g => Ok(()),
            Some(x) => {
                let names = &self.info.resources;
                let (other, this) = (
                    &names[self.gangs[x as usize].res],
                    &names[self.gangs[g as usize].res],
                );
                Err(stop(at_event(
                    ev,
                    format!(
                        "thread {} joins gang {this:?} but is a member of gang {other:?}: a thread is a member of at most one gang (gang_remove it from {other:?} first)",
                        self.info.threads[t as usize].name
                    ),
                )))
            }
            None => {
                let th = &mut self.threads[t as usize];
                th.gang = Some(g);
                th.gang_bits = heir_scenario::GANG_DEFAULT_BITS;
                self.gangs[g as usize].members.push(t);
                let res = self.gangs[g as usize].res;
                self.instant(t, InstantKind::GangInsert, res);
                Ok(())
            }
        }
    }

    /// `t` leaves its gang (`gang_remove`, or its exit): as `gang_notify`
    /// first if it is an active member that has not notified.
    pub(super) fn gang_leave(&mut self, t: u32) -> R<()> {
        let Some(g) = self.threads[t as usize].gang else {
            return Ok(());
        };
        let res = self.gangs[g as usize].res;
        if self.gangs[g as usize]
            .run
            .as_ref()
            .is_some_and(|r| r.pending.contains(&t))
        {
            self.instant(t, InstantKind::GangNotify, res);
        }
        self.gang_notify(t, g)?;
        self.instant(t, InstantKind::GangRemove, res);
        self.gangs[g as usize].members.retain(|&m| m != t);
        let th = &mut self.threads[t as usize];
        th.gang = None;
        th.gang_bits = 0;
        Ok(())
    }

    /// The report's gangs: runs, failed runs, and per waiting thread (in
    /// thread order) its completed waits, timeouts and latencies.
    pub(super) fn gang_reports(&self) -> Vec<heir_report::GangReport> {
        self.gangs
            .iter()
            .map(|g| {
                let mut waits: Vec<&GangWaits> = g.waits.iter().collect();
                waits.sort_by_key(|w| w.thread);
                heir_report::GangReport {
                    name: self.info.resources[g.res].clone(),
                    runs: g.runs,
                    failed_runs: g.failed,
                    waiters: waits
                        .into_iter()
                        .map(|w| heir_report::GangWaitReport {
                            thread: self.info.threads[w.thread as usize].name.clone(),
                            completed: w.latency.count(),
                            timeouts: w.timeouts,
                            latency_us: w.latency.summary(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Debug hook: every gang's run agrees with the engine — its targets
    /// are exactly the pending members, its floor is set only while it
    /// runs, and its waiters are exactly the engine's.
    pub(super) fn check_gangs(&self) -> Result<(), String> {
        for g in &self.gangs {
            let name = &self.info.resources[g.res];
            let targets = self.engine.targets(g.obj).map_err(|e| e.to_string())?;
            let pending: Vec<TaskId> = g
                .run
                .as_ref()
                .map(|r| {
                    r.pending
                        .iter()
                        .map(|&m| self.threads[m as usize].eng)
                        .collect()
                })
                .unwrap_or_default();
            if targets != pending.as_slice() {
                return Err(format!(
                    "gang {name}: engine targets {targets:?}, pending members {pending:?}"
                ));
            }
            let spec = self.engine.spec(g.obj).map_err(|e| e.to_string())?;
            if g.run.is_none() && spec.floor.is_some() {
                return Err(format!("gang {name}: a floor without a run in progress"));
            }
            let waiters: Vec<TaskId> = self
                .engine
                .waiters(g.obj)
                .map_err(|e| e.to_string())?
                .collect();
            let mut mine: Vec<TaskId> = g
                .waiters
                .iter()
                .map(|&w| self.threads[w as usize].eng)
                .collect();
            let mut theirs = waiters;
            mine.sort_unstable();
            theirs.sort_unstable();
            if mine != theirs {
                return Err(format!(
                    "gang {name}: waiters {mine:?}, engine waiters {theirs:?}"
                ));
            }
            for &m in &g.members {
                if self.threads[m as usize]
                    .gang
                    .map(|x| &self.gangs[x as usize].res)
                    != Some(&g.res)
                {
                    return Err(format!(
                        "gang {name}: member {} does not name it",
                        self.info.threads[m as usize].name
                    ));
                }
            }
        }
        Ok(())
    }
}
