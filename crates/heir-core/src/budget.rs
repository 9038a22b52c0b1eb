//! The CBS rules on a context's [`Budget`] (hard reservations, as Linux's
//! `kernel/sched/deadline.c` applies them), as engine operations. The
//! engine has no clock: the face that runs time passes its instants (`now`,
//! ns) and schedules the events itself (the replenishment timer at the
//! instant [`Engine::throttle`] returns, the exhaustion at `now +
//! remaining`).
//!
//! 1. start ([`Engine::start`], `sched_setattr`): deadline = now + D,
//!    budget = Q;
//! 2. wake-up ([`Engine::wakeup`]): if the deadline has passed, or budget /
//!    (deadline − now) exceeds Q / D, a new period starts (deadline = now +
//!    D, budget = Q) — for a constrained deadline (D < P) whose deadline has
//!    not passed the budget is instead cut to Q / D × (deadline − now)
//!    (revised CBS); otherwise both are kept. A constrained reservation
//!    woken at or after its deadline and before its next period (deadline −
//!    D + P) is throttled until that period, its budget at most 0 (Linux's
//!    `dl_check_constrained_dl`);
//! 3. running consumes the budget of the context the task runs on
//!    ([`Engine::consume`]; which one: [`Engine::consumer`]);
//! 4. out of budget, a context is throttled until its replenishment instant
//!    deadline − D + P ([`Engine::throttle`]); then ([`Engine::replenish`])
//!    deadline += P and budget += Q while the budget is not positive, and a
//!    deadline left in the past restarts the period at `now`.
//!
//! Linux's deadline inheritance (rt_mutex) lends a deadline waiter's
//! *parameters* to the owner's own context ([`Engine::set_inherited`]); a
//! context running on inherited parameters is never throttled: out of
//! budget it is replenished at once with them
//! ([`Engine::replenish_inherited`]).
//!
//! Every operation refuses (with the state unchanged) a context that is not
//! live, or that lacks what the rule needs (a reservation, inherited
//! parameters, the throttled state).

use crate::{Budget, ContextId, Engine, EngineError, Reservation};

/// What [`Engine::wakeup`] did (rule 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wakeup {
    /// Deadline and budget kept.
    Kept,
    /// A new period: deadline = now + D, budget = Q.
    NewPeriod,
    /// Revised CBS (D < P): the deadline kept, the budget cut to the
    /// density's share of what is left until it.
    Cut,
    /// A constrained reservation woken after its deadline and before its
    /// next period: throttled until `until_ns` (the face arms the
    /// replenishment timer).
    Throttled {
        /// Its replenishment instant.
        until_ns: u64,
    },
    /// Nothing done: the context is throttled already, or runs on
    /// inherited parameters.
    Unchanged,
}

impl Engine {
    /// The budget state of context `c`.
    #[inline]
    pub fn budget(&self, c: ContextId) -> Result<Budget, EngineError> {
        Ok(self.ctx(c)?.budget)
    }

    /// The parameters `c` runs on inherited from a deadline waiter (Linux's
    /// rt_mutex deadline inheritance), if any.
    #[inline]
    pub fn inherited(&self, c: ContextId) -> Result<Option<Reservation>, EngineError> {
        Ok(self.ctx(c)?.inherited)
    }

    /// `c`'s reservation, or [`EngineError::NoReservation`].
    fn reserved(&self, c: ContextId) -> Result<Reservation, EngineError> {
        self.ctx(c)?
            .reservation
            .ok_or(EngineError::NoReservation(c))
    }

    /// Rule 1: `c`'s task enters the deadline class at `now`.
    ///
    /// Pre: `c` is live with a reservation. Post: `deadline == now + D`,
    /// `remaining == Q`, not throttled.
    pub fn start(&mut self, c: ContextId, now: u64) -> Result<Budget, EngineError> {
        let r = self.reserved(c)?;
        let b = &mut self.ctx_mut(c).budget;
        b.deadline_ns = now.saturating_add(r.deadline_ns);
        b.remaining_ns = r.runtime_ns as i64;
        b.throttled = false;
        let b = *b;
        self.debug_validate();
        Ok(b)
    }

    /// Rule 2: `c`'s task wakes up at `now` (see the module docs).
    ///
    /// Pre: `c` is live with a reservation. Post: unchanged if throttled or
    /// running on inherited parameters; else as the returned [`Wakeup`]
    /// says — after `NewPeriod` or `Cut`, `remaining / (deadline − now) ≤
    /// Q / D`; after `Throttled { until_ns }`, throttled with `remaining ≤
    /// 0`.
    pub fn wakeup(&mut self, c: ContextId, now: u64) -> Result<Wakeup, EngineError> {
        let r = self.reserved(c)?;
        let cs = self.ctx(c)?;
        if cs.budget.throttled || cs.inherited.is_some() {
            return Ok(Wakeup::Unchanged);
        }
        let (q, d, p) = (r.runtime_ns, r.deadline_ns, r.period_ns);
        let b = cs.budget;
        let next_period = b.deadline_ns.saturating_sub(d).saturating_add(p);
        if d < p && b.deadline_ns <= now && now < next_period {
            let cs = self.ctx_mut(c);
            cs.budget.remaining_ns = cs.budget.remaining_ns.min(0);
            let until_ns = self.throttle(c, now)?;
            return Ok(Wakeup::Throttled { until_ns });
        }
        let passed = b.deadline_ns <= now;
        // remaining / (deadline − now) > Q / D  ⇔  remaining·D > (deadline − now)·Q
        let overflow = !passed
            && (b.remaining_ns.max(0) as u128) * u128::from(d)
                > u128::from(b.deadline_ns - now) * u128::from(q);
        let what = if !(passed || overflow) {
            Wakeup::Kept
        } else if !passed && d < p {
            let cut = u128::from(q) * u128::from(b.deadline_ns - now) / u128::from(d);
            self.ctx_mut(c).budget.remaining_ns = cut as i64;
            Wakeup::Cut
        } else {
            let b = &mut self.ctx_mut(c).budget;
            b.deadline_ns = now.saturating_add(d);
            b.remaining_ns = q as i64;
            Wakeup::NewPeriod
        };
        self.debug_validate();
        Ok(what)
    }

    /// Rule 3: `ns` of time consumed on `c`; returns the budget left
    /// (negative after an overrun).
    ///
    /// Pre: `c` is live (any context: a timeslice without a reservation
    /// keeps a count too). Post: `remaining` decreased by `ns`
    /// (saturating).
    pub fn consume(&mut self, c: ContextId, ns: u64) -> Result<i64, EngineError> {
        self.ctx(c)?;
        let b = &mut self.ctx_mut(c).budget;
        b.remaining_ns = b
            .remaining_ns
            .saturating_sub(i64::try_from(ns).unwrap_or(i64::MAX));
        Ok(b.remaining_ns)
    }

    /// Rule 4: `c` ran out of budget at `now`: throttled until its
    /// replenishment instant, which is returned (the face arms its timer
    /// there and calls [`Engine::replenish`]).
    ///
    /// Pre: `c` is live with a reservation and not throttled
    /// ([`EngineError::Throttled`]). Post: throttled; the instant returned
    /// is `max(deadline − D + P, now)`.
    pub fn throttle(&mut self, c: ContextId, now: u64) -> Result<u64, EngineError> {
        let r = self.reserved(c)?;
        if self.ctx(c)?.budget.throttled {
            return Err(EngineError::Throttled(c));
        }
        let b = &mut self.ctx_mut(c).budget;
        b.throttled = true;
        let at = b
            .deadline_ns
            .saturating_sub(r.deadline_ns)
            .saturating_add(r.period_ns)
            .max(now);
        self.debug_validate();
        Ok(at)
    }

    /// Rule 4's end: `c`'s replenishment instant came (`now`).
    ///
    /// Pre: `c` is live with a reservation and throttled
    /// ([`EngineError::NotThrottled`]). Post: not throttled; while the
    /// budget was not positive the deadline moved by P and the budget grew
    /// by Q; if the deadline is then before `now`, a new period: deadline =
    /// now + D, budget = Q. So `remaining > 0` and `deadline ≥ now`.
    pub fn replenish(&mut self, c: ContextId, now: u64) -> Result<Budget, EngineError> {
        let r = self.reserved(c)?;
        if !self.ctx(c)?.budget.throttled {
            return Err(EngineError::NotThrottled(c));
        }
        let b = &mut self.ctx_mut(c).budget;
        b.throttled = false;
        refill(b, r, now);
        let b = *b;
        self.debug_validate();
        Ok(b)
    }

    /// Sets or clears the deadline parameters `c` inherits from its task's
    /// top deadline waiter through an `inherit` mutex (Linux's rt_mutex
    /// deadline inheritance lends parameters, not a context). The budget
    /// is left alone: [`Engine::replenish_inherited`] starts the boosted
    /// entity.
    ///
    /// Pre: `c` is live; the parameters, if any, are valid. Post:
    /// `inherited(c) == params`.
    pub fn set_inherited(
        &mut self,
        c: ContextId,
        params: Option<Reservation>,
    ) -> Result<(), EngineError> {
        self.ctx(c)?;
        if let Some(r) = params.filter(|r| !r.is_valid()) {
            return Err(EngineError::BadReservation(r));
        }
        self.ctx_mut(c).inherited = params;
        self.debug_validate();
        Ok(())
    }

    /// Linux's `replenish_dl_entity` for a boosted context, at `now`: one
    /// without a reservation of its own starts a fresh period with the
    /// inherited parameters (deadline = now + D, budget = Q); then, as in
    /// [`Engine::replenish`], the deadline moves by P while the budget is not
    /// positive, and a deadline left in the past restarts. A boosted
    /// context is never throttled: it is unthrottled here. Returns whether
    /// it was throttled.
    ///
    /// Pre: `c` is live with inherited parameters
    /// ([`EngineError::NoReservation`] without). Post: not throttled,
    /// `remaining > 0`, `deadline ≥ now`.
    pub fn replenish_inherited(&mut self, c: ContextId, now: u64) -> Result<bool, EngineError> {
        let cs = self.ctx(c)?;
        let Some(r) = cs.inherited else {
            return Err(EngineError::NoReservation(c));
        };
        let fresh = cs.reservation.is_none();
        let b = &mut self.ctx_mut(c).budget;
        if fresh {
            b.deadline_ns = now.saturating_add(r.deadline_ns);
            b.remaining_ns = r.runtime_ns as i64;
        }
        refill(b, r, now);
        let was = core::mem::replace(&mut b.throttled, false);
        self.debug_validate();
        Ok(was)
    }
}

/// Rule 4's refill with `r`: deadline += P and budget += Q while the
/// budget is not positive; a deadline before `now` restarts the period.
fn refill(b: &mut Budget, r: Reservation, now: u64) {
    if b.remaining_ns <= 0 {
        // The periods it takes, at once: k = ⌊−remaining / Q⌋ + 1.
        let q = u128::from(r.runtime_ns);
        let k = u128::from(b.remaining_ns.unsigned_abs()) / q + 1;
        let moved = k.saturating_mul(u128::from(r.period_ns));
        b.deadline_ns = u64::try_from(u128::from(b.deadline_ns) + moved).unwrap_or(u64::MAX);
        b.remaining_ns = (i128::from(b.remaining_ns) + (k * q) as i128) as i64;
    }
    if b.deadline_ns < now {
        b.deadline_ns = now.saturating_add(r.deadline_ns);
        b.remaining_ns = r.runtime_ns as i64;
    }
}
