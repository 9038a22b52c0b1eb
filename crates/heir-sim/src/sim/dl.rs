//! `SCHED_DEADLINE`: EDF with CBS reservations (hard
//! reservations), Linux's deadline inheritance through `inherit` mutexes,
//! and M-BWI through `bwi` mutexes and PI-CV/RPC objects.
//!
//! # Reservations
//!
//! Every thread but a passive one is bound to a scheduling context of the
//! engine (`heir_core::ContextId`, [`Dl::ctx`]); a `SCHED_DEADLINE`
//! thread's has its reservation (Q, D, P), its budget and its absolute
//! deadline. The CBS rules are the engine's operations (`heir_core`'s
//! `budget.rs`: `start`, `wakeup`, `consume`, `throttle`, `replenish`,
//! `replenish_inherited`), and which context a running thread consumes is
//! the engine's answer (`Engine::consumer`); this module schedules their
//! events (the replenishment timer, the budget's exhaustion, the order of
//! simultaneous events), counts and traces them, and keeps what only a
//! simulator of CPUs knows ([`Dl`]: who consumes a context now, spinning
//! waiters, parked threads). The rules, as Linux's
//! `kernel/sched/deadline.c` applies them:
//!
//! 1. start (`sched_setattr`): deadline = now + D, runtime = Q;
//! 2. wake-up: if the deadline has passed, or runtime / (deadline − now)
//!    exceeds Q / D, a new period starts (deadline = now + D, runtime = Q);
//!    otherwise both are kept — for a constrained deadline (D < P) the
//!    runtime is then cut to Q / D × (deadline − now) (revised CBS). A
//!    constrained reservation (D < P) woken after its deadline and before its
//!    next period (deadline − D + P) is instead throttled until that period
//!    (its runtime set to at most 0; rule 4 replenishes it), as Linux's
//!    `dl_check_constrained_dl` does for an entity that is neither
//!    throttled nor boosted when it is enqueued (`deadline < now <
//!    next period`; at `deadline = now` the kernel's revised wake-up gives
//!    a runtime of 0, which throttles it the same way, and so does heir). A
//!    deadline waiter handed a `bwi` mutex does not go through this rule:
//!    under M-BWI it never left its reservation ([`Simulator::wake_handed`]);
//! 3. running consumes the runtime of the reservation the thread runs on;
//! 4. at zero the reservation is throttled until its replenishment instant
//!    (deadline − D + P), then deadline += P and runtime += Q (repeated
//!    while the runtime is not positive);
//! 5. simultaneous events: the end of a thread's CPU work fires before
//!    every other event of the same instant, and the thread goes on through
//!    its zero-time steps (unlock, timer, the job's completion) before
//!    anything else is acted on. So a job whose work ends exactly when its
//!    budget does completes, and its server is throttled as it leaves the
//!    CPU (runtime 0, replenished at its next period), whatever else
//!    happens at that instant — a replenishment or a release that would
//!    preempt it included. This is Linux's order once the job's last
//!    instruction has run: the task goes to sleep in a system call, whose
//!    dequeue charges the runtime (`dequeue_task_dl` → `update_curr_dl`),
//!    and a runtime at zero (`dl_runtime_exceeded` is `runtime <= 0`)
//!    throttles the entity that has just finished its job, with the
//!    replenishment timer at its next period. The kernel cannot observe an
//!    exact tie (the job overruns by the cost of its last instructions, or
//!    the tick and the exhaustion timer fire a little late); a simulator
//!    must pick an order, and picks the one where the work that fits the
//!    budget completes.
//!
//! # Inheritance
//!
//! - Through `inherit` mutexes (and the mutexes heir adds inside barriers
//!   and suspend points) a thread inherits as Linux's rt_mutex does: the
//!   top waiter's *parameters* only. A non-deadline owner boosted by a
//!   deadline waiter gets a fresh entity (now + D_donor, Q_donor); a
//!   deadline owner keeps its own deadline and runtime (its place in the
//!   EDF order is its own), but is never throttled while boosted: when its
//!   runtime runs out it is replenished with the donor's Q and its deadline
//!   moves by the donor's P. A deadline owner whose own deadline is earlier
//!   than its top waiter's is not boosted at all.
//! - Through `bwi` mutexes, condition variables with helpers and RPC
//!   endpoints a deadline waiter *lends its reservation* (M-BWI, the M-BWI paper's §3.6):
//!   the task at the end of the chain may run on any reservation lent to it, and
//!   runs on the earliest-deadline one that has budget and is not consumed
//!   elsewhere, consuming that reservation's budget; a throttled reservation is
//!   skipped until it is replenished. A reservation is consumed by one CPU at a
//!   time: with several helpers of one condvar, the first to run on it
//!   takes it. The reservation of a deadline waiter on a `bwi` mutex stays in
//!   the EDF competition at its own deadline (M-BWI's rule, Faggioli,
//!   Lipari, Cucinotta, "Analysis and implementation of the multiprocessor
//!   bandwidth inheritance protocol"): while the owner runs nowhere the
//!   waiter sleeps and the owner runs on its reservation (so the owner is
//!   picked where the reservation would be); while the owner runs, on another
//!   reservation, the waiter is ready and spins wherever it is picked,
//!   consuming its own budget — preempted, it spins again when picked
//!   again, and left spinning when the owner stops, its reservation runs the
//!   owner ([`Simulator::settle_spinners`]). `bwi` mutexes are handed over
//!   in FIFO order.

use super::*;
use crate::queue::{Rank, DL_LEVEL};
use heir_core::{Budget, ContextId, Reservation, Wakeup};

/// The reservation of a `SCHED_DEADLINE` policy, in ns (each field at
/// least 1 ns, as the engine requires).
pub(super) fn res_of(s: &Sched) -> Option<Reservation> {
    match (s.policy, s.dl) {
        (Policy::Deadline, Some(dl)) => Some(Reservation {
            runtime_ns: us_to_ns(dl.runtime_us).clamp(1, i64::MAX as u64),
            deadline_ns: us_to_ns(dl.deadline_us).max(1),
            period_ns: us_to_ns(dl.period_us).max(1),
        }),
        _ => None,
    }
}

/// A thread's deadline state beside its engine context (the context holds
/// the reservation, the budget, the deadline and the throttled flag, and
/// the parameters Linux's inheritance lends: [`heir_core::Engine`]'s CBS
/// operations): what the simulator schedules events and CPUs by.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(super) struct Dl {
    // The flags the scheduling path reads for every thread first
    // (`repr(C)`): they share the cache line that ends `Thread`'s hot part.
    /// Spinning on its CPU for a `bwi` mutex whose owner runs elsewhere.
    pub spinning: bool,
    /// Ready, but with no reservation to run on (throttled): not queued.
    pub parked: bool,
    /// Queued in the spread list (affinity inheritance, `sim::aff`).
    pub in_spread: bool,
    /// The thread's scheduling context in the engine (`None`: a passive
    /// thread).
    pub ctx: Option<ContextId>,
    /// Linux inheritance: the top deadline waiter (thread) whose parameters
    /// (its own, or those it inherited) the context runs with.
    pub pi: Option<u32>,
    /// Generation of the replenishment timer (stale timers are ignored).
    pub timer_gen: u32,
    /// While running: the thread whose reservation this thread consumes.
    pub on: Option<u32>,
    /// Since when it consumes it (ns).
    pub since: u64,
    /// Generation of the budget-exhaustion event.
    pub budget_gen: u32,
    /// The thread consuming this reservation right now, if any.
    pub used_by: Option<u32>,
    /// Order of blocking on a mutex (FIFO hand-off of `bwi` mutexes).
    pub block_seq: u64,
}

/// How an object passes a deadline waiter's time on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lends {
    /// Not at all (no inheritance, ceilings, barriers' internal mutexes
    /// without inheritance).
    No,
    /// Linux's rt_mutex deadline inheritance (`inherit`).
    Parameters,
    /// The reservation itself (M-BWI: `bwi` mutexes, PI-CV, RPC).
    Reservation,
}

impl<'s, 'o> Simulator<'s, 'o> {
    /// How object `o` (an engine object index) lends.
    pub(super) fn lends(&self, o: usize) -> Lends {
        self.obj_lends.get(o).copied().unwrap_or(Lends::No)
    }

    /// Whether `t` is scheduled in the deadline class: its own reservation, or a
    /// Linux boost by a deadline waiter.
    pub(super) fn in_dl_class(&self, t: u32) -> bool {
        self.own(t).is_some() || self.threads[t as usize].dl.pi.is_some()
    }

    /// `t`'s own reservation (its context's), if it is a deadline thread.
    pub(super) fn own(&self, t: u32) -> Option<Reservation> {
        let c = self.threads[t as usize].dl.ctx?;
        self.engine.reservation(c).ok().flatten()
    }

    /// The budget state of `t`'s context (zero for a passive thread).
    pub(super) fn bud(&self, t: u32) -> Budget {
        self.threads[t as usize]
            .dl
            .ctx
            .and_then(|c| self.engine.budget(c).ok())
            .unwrap_or_default()
    }

    /// The thread bound to context `c`.
    pub(super) fn ctx_thread(&self, c: ContextId) -> Option<u32> {
        let t = self.engine.bound_to(c).ok().flatten()?;
        self.thread_of(t)
    }

    /// The earliest-deadline context `t` may run on, by the engine's
    /// [`heir_core::Engine::consumer`], with the thread it belongs to;
    /// `allowed(s)`: whether the context of thread `s` may be used (besides
    /// the rule that a lent one is not spinning nor consumed by another
    /// thread).
    pub(super) fn consumer_where(
        &self,
        t: u32,
        allowed: impl Fn(u32) -> bool,
    ) -> Option<(u64, u32)> {
        let eng = self.threads[t as usize].eng;
        let own = self.threads[t as usize].dl.ctx;
        let c = self
            .engine
            .consumer(eng, |c| {
                if Some(c) == own {
                    return allowed(t);
                }
                let Some(s) = self.ctx_thread(c) else {
                    return false;
                };
                let d = &self.threads[s as usize].dl;
                !d.spinning && d.used_by.is_none_or(|u| u == t) && allowed(s)
            })
            .ok()
            .flatten()?;
        if Some(c.context) == own {
            return Some((c.deadline_ns, t));
        }
        Some((c.deadline_ns, self.ctx_thread(c.context)?))
    }

    /// Step 1 of the CBS rules: a thread becomes `SCHED_DEADLINE` (at its
    /// start, or a phase's `sched`).
    pub(super) fn dl_setup(&mut self, t: u32, res: Option<Reservation>) -> R<()> {
        let now = self.now;
        let Some(c) = self.threads[t as usize].dl.ctx else {
            if res.is_some() {
                // A passive thread has no context to run a reservation on
                // (the scenario's checks refuse one).
                let eng = self.threads[t as usize].eng;
                return Err(self.internal(t, EngineError::Passive(eng)));
            }
            return Ok(());
        };
        if let Err(e) = self.engine.set_reservation(c, res) {
            return Err(self.internal(t, e));
        }
        if res.is_some() {
            if let Err(e) = self.engine.start(c, now) {
                return Err(self.internal(t, e));
            }
            let d = &mut self.threads[t as usize].dl;
            d.timer_gen = d.timer_gen.wrapping_add(1);
            self.dl_base(t)?;
        }
        Ok(())
    }

    /// The engine's base urgency of a deadline thread follows its reservation's
    /// absolute deadline.
    pub(super) fn dl_base(&mut self, t: u32) -> R<()> {
        if self.own(t).is_none() || self.threads[t as usize].status == Status::Exited {
            return Ok(());
        }
        let base = Urgency::Deadline {
            abs_ns: self.bud(t).deadline_ns,
        };
        let th = &mut self.threads[t as usize];
        if th.base == base {
            return Ok(());
        }
        th.base = base;
        let eng = th.eng;
        match self.engine.set_base(eng, base) {
            Ok(ch) => {
                self.apply_changes(&ch);
                Ok(())
            }
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Step 2: the wake-up rule, when a deadline thread becomes ready (the
    /// engine's [`heir_core::Engine::wakeup`]: nothing for a throttled or
    /// boosted context).
    pub(super) fn dl_wakeup(&mut self, t: u32) -> R<()> {
        let Some(c) = self.threads[t as usize].dl.ctx else {
            return Ok(());
        };
        if self.own(t).is_none() {
            return Ok(());
        }
        match self.engine.wakeup(c, self.now) {
            Ok(Wakeup::Unchanged) => Ok(()),
            Ok(Wakeup::Throttled { until_ns }) => {
                // Linux's dl_check_constrained_dl: a constrained server woken
                // after its deadline and before its next period is throttled
                // until that period, then replenished.
                self.throttled_until(t, until_ns);
                self.dl_base(t)
            }
            Ok(_) => self.dl_base(t),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// The threads whose reservations are lent to `t` through M-BWI
    /// objects, transitively, breadth-first (the engine's
    /// [`heir_core::Engine::lenders`]).
    pub(super) fn lenders(&self, t: u32, out: &mut Vec<u32>) {
        out.clear();
        let mut lent = Vec::new();
        if self
            .engine
            .lenders(self.threads[t as usize].eng, &mut lent)
            .is_ok()
        {
            out.extend(lent.into_iter().filter_map(|c| self.ctx_thread(c)));
        }
    }

    /// Whether the reservation of thread `w` is lent to `t`.
    fn lends_to(&self, w: u32, t: u32) -> bool {
        let mut lenders = Vec::new();
        self.lenders(t, &mut lenders);
        lenders.contains(&w)
    }

    /// The threads waiting on the objects `t` is a target of that lend as
    /// `how`, object by object, each in wake order.
    fn waiting_on(&self, t: u32, how: Lends) -> impl Iterator<Item = u32> + use<'_, 's, 'o> {
        let objs = self
            .engine
            .targets_of(self.threads[t as usize].eng)
            .unwrap_or(&[]);
        objs.iter()
            .filter(move |o| self.lends(o.0 as usize) == how)
            .filter_map(move |&o| self.engine.waiters(o).ok())
            .flatten()
            .filter_map(move |w| self.thread_of(w))
    }

    /// The reservation `t` runs on now, with its deadline: the earliest-deadline
    /// one among its own entity (if in the deadline class and not
    /// throttled) and the reservations lent to it that have budget, are not
    /// spinning and are not consumed by another thread.
    pub(super) fn dl_pair(&self, t: u32) -> Option<(u64, u32)> {
        if let Some(p) = self.aff_pair(t) {
            return p;
        }
        if !self.has_bwi {
            // Nothing lends time: the thread's own context, if any.
            let c = self
                .engine
                .own_consumer(self.threads[t as usize].eng)
                .ok()??;
            return Some((c.deadline_ns, t));
        }
        self.consumer_where(t, |_| true)
    }

    /// Where `t` stands in the run queues; `None` when it may not run
    /// (a deadline thread whose reservation is throttled, with nothing lent).
    pub(super) fn rank_for(&self, t: u32) -> Option<Rank> {
        let th = &self.threads[t as usize];
        if !self.has_dl {
            if self.stalled(t) {
                return None;
            }
            return Some(Rank::of(th.eff.urgency));
        }
        if let Some(r) = self.aff_rank(t) {
            return r;
        }
        if let Some((d, _)) = self.dl_pair(t) {
            return Some(Rank::deadline(d));
        }
        self.rank_without_reservation(t)
    }

    /// The rank of `t` when it has no deadline reservation to run on: none for
    /// a deadline thread (it is throttled), else its best urgency that is
    /// not a lent deadline.
    pub(super) fn rank_without_reservation(&self, t: u32) -> Option<Rank> {
        let th = &self.threads[t as usize];
        if self.own(t).is_some() {
            return None;
        }
        if th.passive {
            // No context of its own: only a fixed priority lent with time.
            let (u, from) = self.without_reservations(t);
            return from.map(|_| Rank::of(u));
        }
        match th.eff.urgency {
            // Lent deadlines it cannot run on now: its best other urgency.
            Urgency::Deadline { .. } => Some(Rank::of(self.without_reservations(t).0)),
            u => Some(Rank::of(u)),
        }
    }

    /// What `t` runs at when a deadline is lent to it but no reservation it
    /// may run on has budget: the most urgent fixed-priority urgency that
    /// reaches it (its own base if none), with the thread it comes from.
    fn without_reservations(&self, t: u32) -> (Urgency, Option<usize>) {
        let th = &self.threads[t as usize];
        let mut donors = Vec::new();
        if self.engine.donors(th.eng, &mut donors).is_err() {
            return (th.base, None);
        }
        donors
            .iter()
            .find(|d| !matches!(d.urgency, Urgency::Deadline { .. }))
            .map(|d| {
                let from = match d.source {
                    heir_core::Source::Task(id) => self.thread_of(id).filter(|&x| x != t),
                    _ => None,
                };
                (d.urgency, from.map(|x| x as usize))
            })
            .unwrap_or((th.base, None))
    }

    /// Linux's inheritance for `t`: the deadline waiter it inherits from
    /// through `inherit` mutexes (with the parameters that waiter lends),
    /// if it is boosted.
    fn linux_top(&self, t: u32) -> Option<(u32, Reservation)> {
        // A passive thread has no context to run inherited parameters on.
        let c = self.threads[t as usize].dl.ctx?;
        let mut top: Option<(u32, u64)> = None;
        for wt in self.waiting_on(t, Lends::Parameters) {
            if !self.in_dl_class(wt) {
                continue;
            }
            let wd = self.bud(wt).deadline_ns;
            if top.is_none_or(|(_, xd)| wd < xd) {
                top = Some((wt, wd));
            }
        }
        let (top, top_deadline) = top?;
        let tc = self.threads[top as usize].dl.ctx?;
        let params = self.engine.inherited(tc).ok().flatten().or(self.own(top))?;
        // A deadline owner is boosted only by an earlier deadline
        // (`dl_entity_preempt`).
        if self.own(t).is_some() && top_deadline >= self.engine.budget(c).ok()?.deadline_ns {
            return None;
        }
        Some((top, params))
    }

    /// Linux's `replenish_dl_entity` for a boosted thread (the engine's
    /// [`heir_core::Engine::replenish_inherited`]): a thread without its own
    /// reservation starts a fresh period with the donor's parameters; then
    /// the deadline moves by the donor's period until the runtime is
    /// positive; a deadline left in the past restarts; a throttled context
    /// is unthrottled (its timer forgotten).
    fn replenish_boosted(&mut self, t: u32) {
        let Some(c) = self.threads[t as usize].dl.ctx else {
            return;
        };
        if let Ok(true) = self.engine.replenish_inherited(c, self.now) {
            let d = &mut self.threads[t as usize].dl;
            d.timer_gen = d.timer_gen.wrapping_add(1);
        }
    }

    /// Re-evaluates every thread's deadline state after a change: Linux
    /// boosts, then ranks (re-queueing, parking or un-parking threads, and
    /// moving running threads to the reservation they should consume).
    pub(super) fn dl_refresh(&mut self) {
        if !self.has_dl {
            return;
        }
        self.dl_dirty = false;
        // Boosts follow chains: repeat until stable (bounded by the chain
        // depth the engine allows).
        for _ in 0..=heir_core::MAX_CHAIN_DEPTH {
            let mut changed = false;
            for t in 0..self.threads.len() as u32 {
                if self.threads[t as usize].status == Status::Exited {
                    continue;
                }
                let new = self.linux_top(t);
                let old = self.threads[t as usize].dl.pi;
                let ctx = self.threads[t as usize].dl.ctx;
                // The parameters are read only when the donor stays.
                let differs = match (new, old) {
                    (None, None) => false,
                    (Some((n, p)), Some(o)) if n == o => {
                        ctx.and_then(|c| self.engine.inherited(c).ok().flatten()) != Some(p)
                    }
                    _ => true,
                };
                if differs {
                    changed = true;
                    self.charge(t);
                    self.threads[t as usize].dl.pi = new.map(|p| p.0);
                    if let Some(c) = ctx {
                        // Valid parameters: the engine's own reservations.
                        let _ = self.engine.set_inherited(c, new.map(|p| p.1));
                    }
                    if new.is_some() {
                        self.replenish_boosted(t);
                    } else {
                        let b = self.bud(t);
                        if self.own(t).is_some() && b.remaining_ns <= 0 && !b.throttled {
                            self.throttle(t);
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        // Re-ranking may take, free or throttle a reservation others rank by:
        // again until nothing changes (bounded: each pass settles one more
        // reservation).
        for _ in 0..=self.threads.len() {
            for t in 0..self.threads.len() as u32 {
                self.rerank(t);
            }
            if !std::mem::take(&mut self.dl_dirty) {
                break;
            }
        }
        self.aff_requeue();
    }

    /// Puts `t` where [`Simulator::rank_for`] says: re-queued at its new
    /// rank, parked (no reservation), un-parked, or — running — on its new
    /// reservation, preempted if it can no longer run.
    pub(super) fn rerank(&mut self, t: u32) {
        let new = self.rank_for(t);
        let th = &self.threads[t as usize];
        let old = th.rank;
        match th.status {
            // Not queued yet (being woken or started): its caller queues it.
            Status::Ready if !th.queued && !th.dl.parked => {
                if let Some(r) = new {
                    self.threads[t as usize].rank = r;
                }
            }
            Status::Ready => match new {
                None => {
                    if th.queued {
                        self.dequeue(t);
                    }
                    self.threads[t as usize].dl.parked = true;
                }
                Some(r) => {
                    let parked = std::mem::take(&mut self.threads[t as usize].dl.parked);
                    if parked {
                        self.threads[t as usize].rank = r;
                        self.enqueue(t, false);
                        self.wake_check(t);
                    } else if r != old {
                        self.dequeue(t);
                        self.threads[t as usize].rank = r;
                        self.enqueue(t, r < old);
                        if r > old {
                            self.wake_check(t);
                        }
                    }
                }
            },
            Status::Running => {
                let c = th.cpu;
                match new {
                    None => {
                        self.undispatch(t);
                        let th = &mut self.threads[t as usize];
                        th.status = Status::Ready;
                        th.dl.parked = true;
                    }
                    Some(r) => {
                        let pair = self.dl_pair(t).map(|p| p.1);
                        if pair != self.threads[t as usize].dl.on || r != old {
                            self.charge(t);
                            self.release_reservation(t);
                            self.threads[t as usize].rank = r;
                            self.take_reservation(t);
                            self.close_slice(c);
                            self.open_slice(c, t);
                            self.mark_dirty(c);
                        }
                    }
                }
            }
            _ => {
                if let Some(r) = new {
                    self.threads[t as usize].rank = r;
                }
            }
        }
    }

    /// Step 3: charges the running thread `t` for the time since it last
    /// was, on the reservation it consumes.
    pub(super) fn charge(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let Some(s) = th.dl.on else {
            return;
        };
        let used = now.saturating_sub(th.dl.since);
        th.dl.since = now;
        if let Some(c) = self.threads[s as usize].dl.ctx {
            let _ = self.engine.consume(c, used);
        }
    }

    /// `t` (just dispatched, or moved) starts consuming the reservation it
    /// should; arms the exhaustion event.
    pub(super) fn take_reservation(&mut self, t: u32) {
        if !self.has_dl {
            return;
        }
        let pair = self.dl_pair(t).map(|p| p.1);
        let now = self.now;
        let th = &mut self.threads[t as usize];
        th.dl.on = pair;
        th.dl.since = now;
        th.dl.budget_gen = th.dl.budget_gen.wrapping_add(1);
        let gen = th.dl.budget_gen;
        if let Some(s) = pair {
            // A lent reservation may be lent to others too (the helpers of one
            // condvar): taken here, it ranks them no longer.
            self.dl_dirty |= s != t;
            let left = self.bud(s).remaining_ns.max(0) as u64;
            self.threads[s as usize].dl.used_by = Some(t);
            self.evq
                .push(now.saturating_add(left), EvKind::Budget, t, gen);
        }
    }

    /// `t` stops consuming its reservation (charged first).
    pub(super) fn release_reservation(&mut self, t: u32) {
        if !self.has_dl {
            return;
        }
        self.charge(t);
        let th = &mut self.threads[t as usize];
        th.dl.budget_gen = th.dl.budget_gen.wrapping_add(1);
        if let Some(s) = th.dl.on.take() {
            self.dl_dirty |= s != t;
            let sd = &mut self.threads[s as usize].dl;
            if sd.used_by == Some(t) {
                sd.used_by = None;
            }
            self.exhausted(s, t);
        }
    }

    /// Step 4: reservation `s` ran out of budget: throttled until its
    /// replenishment instant (the engine's [`heir_core::Engine::throttle`]).
    fn throttle(&mut self, s: u32) {
        let Some(c) = self.threads[s as usize].dl.ctx else {
            return;
        };
        if let Ok(at) = self.engine.throttle(c, self.now) {
            self.throttled_until(s, at);
        }
    }

    /// Reservation `s` was throttled until `at`: its replenishment timer,
    /// counted and traced.
    fn throttled_until(&mut self, s: u32, at: u64) {
        let now = self.now;
        let d = &mut self.threads[s as usize].dl;
        d.timer_gen = d.timer_gen.wrapping_add(1);
        let gen = d.timer_gen;
        self.dl_dirty = true;
        self.cold[s as usize].throttles += 1;
        self.evq.push(at, EvKind::Replenish, s, gen);
        if self.trace {
            self.obs.event(&TraceEvent::Instant {
                thread: s as usize,
                at_ns: now,
                kind: InstantKind::Throttle,
                resource: None,
            });
        }
    }

    /// Schedules the end of `t`'s CPU work at `at` (a `RunDone` event of
    /// run generation `gen`). With deadline threads it fires before every
    /// other event of that instant (rule 5 of the module docs): a job whose
    /// work ends when its budget does, or when another reservation is
    /// replenished or released, completes its work and its zero-time steps
    /// first.
    pub(super) fn push_run_done(&mut self, at: u64, t: u32, gen: u32) {
        if self.has_dl {
            self.evq.push_first(at, EvKind::RunDone, t, gen);
        } else {
            self.evq.push(at, EvKind::RunDone, t, gen);
        }
    }

    /// The budget of the reservation `t` consumes may be exhausted now.
    pub(super) fn budget_event(&mut self, t: u32, gen: u32) -> R<()> {
        let th = &self.threads[t as usize];
        if th.status != Status::Running || th.dl.budget_gen != gen {
            return Ok(());
        }
        if let Act::Run { left } = th.act {
            if th.run_start.saturating_add(left) <= self.now {
                // Its work ends at this very instant: the work completes
                // first (the budget is accounted when it leaves the CPU).
                self.evq.push(self.now, EvKind::Budget, t, gen);
                return Ok(());
            }
        }
        self.charge(t);
        if self.threads[t as usize].dl.on.is_none() {
            return Ok(());
        }
        // Charged and released; an exhausted reservation is throttled (or a
        // boosted entity replenished) on the way.
        self.release_reservation(t);
        self.take_reservation(t);
        self.dl_refresh();
        Ok(())
    }

    /// Reservation `s`, consumed by `t` until now, has no budget left: a boosted
    /// entity is replenished at once (Linux never throttles a boosted
    /// task), any other reservation is throttled.
    fn exhausted(&mut self, s: u32, t: u32) {
        let b = self.bud(s);
        if b.remaining_ns > 0 || b.throttled {
            return;
        }
        if s == t && self.threads[s as usize].dl.pi.is_some() {
            self.replenish_boosted(t);
            self.cold[t as usize].replenishments += 1;
        } else {
            self.throttle(s);
        }
    }

    /// The replenishment timer of reservation `s` fired.
    pub(super) fn replenish_event(&mut self, s: u32, gen: u32) -> R<()> {
        let now = self.now;
        let d = &self.threads[s as usize].dl;
        let Some(c) = d.ctx else {
            return Ok(());
        };
        if d.timer_gen != gen || !self.bud(s).throttled || self.own(s).is_none() {
            return Ok(());
        }
        if let Err(e) = self.engine.replenish(c, now) {
            return Err(self.internal(s, e));
        }
        self.cold[s as usize].replenishments += 1;
        if self.trace {
            self.obs.event(&TraceEvent::Instant {
                thread: s as usize,
                at_ns: now,
                kind: InstantKind::Replenish,
                resource: None,
            });
        }
        self.dl_base(s)?;
        self.dl_refresh();
        Ok(())
    }

    /// A thread just made ready joins its run queue at the rank it should
    /// have — at the head of its level when `head` (it takes its waker's
    /// place), else the tail — or is parked when it has no reservation to run
    /// on (or, passive, nobody lends to it).
    pub(super) fn queue_or_park(&mut self, t: u32, head: bool) {
        if !self.has_dl && self.stalled(t) {
            // A passive server nobody lends to (donation model).
            self.threads[t as usize].dl.parked = true;
            return;
        }
        if self.has_dl {
            match self.rank_for(t) {
                Some(r) => {
                    let th = &mut self.threads[t as usize];
                    th.rank = r;
                    th.dl.parked = false;
                }
                None => {
                    self.threads[t as usize].dl.parked = true;
                    return;
                }
            }
        }
        self.threads[t as usize].dl.parked = false;
        self.enqueue(t, head);
        self.wake_check(t);
    }

    /// The task at the end of `t`'s chain (what `t`'s time reaches first).
    pub(super) fn chain_end(&self, t: u32) -> Option<u32> {
        let mut ends = Vec::new();
        self.engine
            .time_goes_to(self.threads[t as usize].eng, &mut ends)
            .ok()?;
        ends.first().and_then(|&e| self.thread_of(e))
    }

    /// After a `bwi` lock blocked `t`: spin if the owner runs on another
    /// CPU (true), else sleep (false: the caller blocks it).
    pub(super) fn bwi_spin(&mut self, t: u32, m: SimMutex) -> bool {
        if self.lends(m.id.0 as usize) != Lends::Reservation || self.own(t).is_none() {
            return false;
        }
        let Some(end) = self.chain_end(t) else {
            return false;
        };
        let (e, me) = (&self.threads[end as usize], &self.threads[t as usize]);
        if e.status == Status::Running && e.cpu != me.cpu && end != t && self.may_spin(t, end) {
            let th = &mut self.threads[t as usize];
            th.dl.spinning = true;
            th.act = Act::Spin;
            self.instant(t, InstantKind::Spin, m.res);
            return true;
        }
        false
    }

    /// The resource of the `bwi` mutex deadline thread `t` waits on, if
    /// it waits on one (the waiters that spin; those of condition
    /// variables and endpoints only lend).
    pub(super) fn bwi_wait(&self, t: u32) -> Option<usize> {
        self.own(t)?;
        let th = &self.threads[t as usize];
        let o = self.engine.blocked_on(th.eng).ok().flatten()?;
        if self.lends(o.0 as usize) != Lends::Reservation
            || self.engine.spec(o).ok()?.kind != heir_core::ObjKind::Mutex
        {
            return None;
        }
        self.obj_res.get(o.0 as usize).copied()
    }

    /// M-BWI's rule for the reservation of a deadline waiter on a `bwi` mutex
    /// (Faggioli, Lipari, Cucinotta, "Analysis and implementation of the
    /// multiprocessor bandwidth inheritance protocol"; the M-BWI paper's §3.6): the
    /// owner at the end of its chain is added to the reservation, which stays
    /// in the EDF competition at its own deadline; scheduled, it runs the
    /// owner if the owner runs nowhere, else it spins. Here:
    ///
    /// - while the owner runs (on another reservation), the waiter is ready and
    ///   *spinning*: queued at its own deadline, consuming its own budget
    ///   on the CPU it gets; preempted, it waits in its run queue and
    ///   spins again when it is picked while the owner still runs;
    /// - while the owner does not run, the waiter sleeps and its reservation is
    ///   lent: the owner ranks at the earliest of its reservations and runs on
    ///   it (a running spinner left without a running owner leaves its CPU,
    ///   where the owner may then run on its reservation).
    ///
    /// Spinners whose owner stopped running sleep; sleeping waiters whose
    /// owner runs on another reservation spin. True if any changed (schedule
    /// again).
    pub(super) fn settle_spinners(&mut self) -> R<bool> {
        if !self.has_bwi {
            return Ok(false);
        }
        let mut any = false;
        for t in 0..self.threads.len() as u32 {
            let th = &self.threads[t as usize];
            // Only spinners and blocked deadline threads can change.
            if !(th.dl.spinning || th.status == Status::Blocked) || self.own(t).is_none() {
                continue;
            }
            if !th.dl.spinning && self.bwi_wait(t).is_none() {
                continue;
            }
            let end = self
                .chain_end(t)
                .filter(|&e| e != t && self.threads[e as usize].status == Status::Running);
            if th.dl.spinning {
                if end.is_some() {
                    continue;
                }
                any = true;
                let th = &mut self.threads[t as usize];
                th.dl.spinning = false;
                match th.status {
                    Status::Running => self.block(t),
                    Status::Ready => {
                        if th.queued {
                            self.dequeue(t);
                        }
                        let th = &mut self.threads[t as usize];
                        th.dl.parked = false;
                        th.status = Status::Blocked;
                        th.act = Act::Step;
                    }
                    _ => {}
                }
            } else if th.status == Status::Blocked {
                // The owner runs, on a reservation other than this one.
                let Some(e) = end else {
                    continue;
                };
                if !self.may_spin(t, e) {
                    continue;
                }
                any = true;
                let th = &mut self.threads[t as usize];
                th.dl.spinning = true;
                th.status = Status::Ready;
                th.act = Act::Spin;
                self.queue_or_park(t, false);
            }
        }
        if any {
            self.dl_refresh();
        }
        Ok(any)
    }

    /// Whether deadline waiter `t`, blocked on a `bwi` mutex, spins while
    /// `end`, the running task at the end of its chain, runs: its reservation is
    /// lent to `end` (every object on the way lends reservations), and neither
    /// `end` nor anyone else consumes it now.
    fn may_spin(&self, t: u32, end: u32) -> bool {
        let used = self.threads[t as usize].dl.used_by;
        if used.is_some_and(|u| u != t) || self.bwi_wait(t).is_none() {
            return false;
        }
        self.lends_to(t, end)
    }

    /// A spinner dispatched on a CPU starts spinning there (shown as a
    /// `Spin` instant).
    pub(super) fn spin_dispatched(&mut self, t: u32) {
        if let Some(res) = self.bwi_wait(t) {
            self.instant(t, InstantKind::Spin, res);
        }
    }

    /// A spinning thread was handed the mutex it spun for: it goes on.
    /// False if `t` was not spinning.
    pub(super) fn stop_spin_acquired(&mut self, t: u32) -> bool {
        let th = &mut self.threads[t as usize];
        if !th.dl.spinning {
            return false;
        }
        th.dl.spinning = false;
        th.act = Act::Step;
        if th.status == Status::Running {
            let c = th.cpu;
            self.mark_dirty(c);
        }
        true
    }

    /// FIFO hand-off of a `bwi` mutex: the waiter that blocked first.
    pub(super) fn fifo_waiter(&self, m: SimMutex) -> Option<TaskId> {
        let ws = self.engine.waiters(m.id).ok()?;
        ws.min_by_key(|&w| {
            self.thread_of(w)
                .map_or(u64::MAX, |x| self.threads[x as usize].dl.block_seq)
        })
    }

    /// The urgency and donor an `Exec` slice of `t` shows: with deadline
    /// threads, the deadline of the reservation it runs on and that reservation's
    /// owner.
    pub(super) fn shown(&self, t: u32) -> (Urgency, Option<usize>) {
        let th = &self.threads[t as usize];
        if self.has_dl && th.rank.level == DL_LEVEL {
            let urgency = Urgency::Deadline {
                abs_ns: th.rank.deadline,
            };
            let donor = match th.dl.on.or_else(|| self.dl_pair(t).map(|p| p.1)) {
                Some(s) if s != t => Some(s as usize),
                _ => th.dl.pi.map(|p| p as usize),
            };
            return (urgency, donor);
        }
        if self.has_dl && matches!(th.eff.urgency, Urgency::Deadline { .. }) {
            return self.without_reservations(t);
        }
        (th.eff.urgency, self.donor_of(t))
    }
}
