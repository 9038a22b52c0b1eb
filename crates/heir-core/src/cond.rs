//! Condition variables with helpers (PI-CV; the PI-CV paper): objects whose waiters
//! donate to every target, the helpers ([`Spec::COND`]).

use crate::probe::Cut;
use crate::{Changes, CondId, Engine, EngineError, MutexId, ObjId, Outcome, Spec, TaskId};

impl Engine {
    /// Adds a condition variable without helpers.
    pub fn add_cond(&mut self) -> CondId {
        let o = self.add_object(Spec::COND);
        CondId(o.0, o.1)
    }

    /// The helpers of `c`, in the order they were added.
    pub fn helpers(&self, c: CondId) -> Result<&[TaskId], EngineError> {
        Ok(&self.cond(c)?.targets)
    }

    /// Blocks `t` on `c`: its urgency flows to every helper of `c` (PI-CV).
    /// Releasing the associated mutex is the caller's business (see
    /// [`Engine::cond_wait_unlock`] to do both in one step).
    ///
    /// Pre: `t` live, not blocked; `t` is not upstream of `c` (waiting on a
    /// condvar one helps, directly or through a chain, is a cycle); no chain
    /// longer than [`crate::MAX_CHAIN_DEPTH`]. Post: `t` is a waiter of `c`;
    /// every helper's `eff` is at least `eff(t)`, transitively.
    pub fn cond_wait(&mut self, t: TaskId, c: CondId) -> Result<Changes, EngineError> {
        self.changes_of(|e, out| e.cond_wait_into(t, c, out))
    }

    /// [`Engine::cond_wait`] writing its changes into `out` (cleared first).
    /// On error `out` is empty and the engine unchanged.
    pub fn cond_wait_into(
        &mut self,
        t: TaskId,
        c: CondId,
        out: &mut Changes,
    ) -> Result<(), EngineError> {
        out.clear();
        self.live(t)?;
        self.cond(c)?;
        self.block_into(t, c.into(), out)
    }

    /// `pthread_cond_wait(c, m)`: unlocks `m` (owned by `t`), handing it to
    /// its top waiter as [`Engine::unlock`] does, and blocks `t` on `c`, in
    /// one step. Returns the task `m` was handed to.
    ///
    /// A wait gives its mutex up atomically with starting to wait, and the
    /// engine sees the same order: the cycle check is made on the graph
    /// *after* the release. In the textbook pattern — a helper of `c` blocked
    /// on `m` to signal `c` — the helper becomes `m`'s owner and no cycle
    /// closes, where [`Engine::cond_wait`] followed by [`Engine::unlock`]
    /// would see `t → c → helper → m → t` and refuse.
    ///
    /// Pre: `t` live, not blocked, owner of `m` ([`EngineError::NotOwner`]);
    /// after the release, the block closes no cycle and creates no chain
    /// longer than [`crate::MAX_CHAIN_DEPTH`]. Post: as [`Engine::unlock`] of
    /// `m` (the top waiter, if any, owns `m` and is runnable) then
    /// [`Engine::cond_wait`] of `c`: `t` is a waiter of `c` and owns `m` no
    /// more. Changes: each task once, net of both steps. On error nothing
    /// changes (`m` stays `t`'s).
    pub fn cond_wait_unlock(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
    ) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.cond_wait_unlock_into(t, c, m, out))
    }

    /// [`Engine::cond_wait_unlock`] writing its changes into `out` (cleared
    /// first); returns the task `m` was handed to. On error `out` is empty
    /// and the engine unchanged.
    pub fn cond_wait_unlock_into(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        self.cond_wait_giving_up(t, c, m, true, out)
    }

    /// `pthread_cond_wait(c, m)` for a mutex the kernel hands over (a PI
    /// futex): releases `m` as [`Engine::release`] does — its waiters stay
    /// blocked on it, ownerless until [`Engine::acquire`] — and blocks `t`
    /// on `c`, in one step, checked on the graph after the release (see
    /// [`Engine::cond_wait_unlock`]).
    ///
    /// Pre: `t` live, not blocked, owner of `m`; the block closes no cycle
    /// once `m` is released. Post: `m` has no owner; `t` is a waiter of `c`.
    /// On error nothing changes.
    pub fn cond_wait_release(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
    ) -> Result<Changes, EngineError> {
        self.changes_of(|e, out| e.cond_wait_giving_up(t, c, m, false, out).map(|_| ()))
    }

    /// [`Engine::cond_wait_unlock`] (`handoff`) and
    /// [`Engine::cond_wait_release`]: checks, then the deltas remove-edge
    /// `m → t`, (hand-off) remove-edge `w → m` and add-edge `m → w`, and
    /// add-edge `t → c`, then one chain walk.
    fn cond_wait_giving_up(
        &mut self,
        t: TaskId,
        c: CondId,
        m: MutexId,
        handoff: bool,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        let blocked = self.live(t)?.blocked.is_some();
        self.cond(c)?;
        let next = self.mutex(m)?.queue.top().map(|w| w.task);
        if blocked {
            return Err(EngineError::AlreadyBlocked(t));
        }
        self.check_owner(t, m)?;
        let next = if handoff { next } else { None };
        let cut = Cut {
            mutex: m.into(),
            unblocked: next,
        };
        self.check_block_releasing(t, c.into(), cut)?;
        if handoff {
            self.hand_over(m);
        } else {
            self.detach_target(m.into(), t);
        }
        self.add_edge(t, c.into());
        self.propagate(out);
        Ok(next)
    }

    /// Wakes the top waiter of `c` (most urgent, FIFO among equals), if any.
    ///
    /// Post: the woken task is runnable; its donation to the helpers is
    /// revoked (they fall back to the next waiter's contribution, or their
    /// own). A signal without waiters is lost (`value == None`).
    pub fn cond_signal(&mut self, c: CondId) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.cond_signal_into(c, out))
    }

    /// [`Engine::cond_signal`] writing its changes into `out` (cleared
    /// first); returns the woken task. On error `out` is empty.
    pub fn cond_signal_into(
        &mut self,
        c: CondId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        self.cond(c)?;
        self.wake_top_into(c.into(), out)
    }

    /// Wakes every waiter of `c`, in wake order.
    ///
    /// Post: `c` has no waiters; its helpers inherit nothing through it.
    pub fn cond_broadcast(&mut self, c: CondId) -> Result<Outcome<Vec<TaskId>>, EngineError> {
        self.cond(c)?;
        self.wake_all(c.into())
    }

    /// Declares `t` a helper of `c` (`pthread_cond_helpers_add`).
    ///
    /// Pre: `t` live and not already a helper ([`EngineError::HelperExists`]);
    /// no waiter of `c` is downstream of `t` ([`EngineError::Cycle`], from `t`
    /// back to `t`); no chain longer than [`crate::MAX_CHAIN_DEPTH`]. Post:
    /// `t` is the last helper of `c`; if `c` has waiters, `t` inherits the
    /// top contribution at once (and passes it on if blocked).
    pub fn helper_add(&mut self, c: CondId, t: TaskId) -> Result<Changes, EngineError> {
        self.cond(c)?;
        self.add_target(ObjId::from(c), t).map_err(|e| match e {
            EngineError::AlreadyTarget { .. } => EngineError::HelperExists { cond: c, task: t },
            e => e,
        })
    }

    /// Removes `t` from the helpers of `c` (`pthread_cond_helpers_del`).
    ///
    /// Pre: `t` live and a helper of `c` ([`EngineError::NotHelper`]). Post:
    /// what `t` inherited through `c` is revoked at once, transitively.
    pub fn helper_del(&mut self, c: CondId, t: TaskId) -> Result<Changes, EngineError> {
        self.cond(c)?;
        self.remove_target(ObjId::from(c), t).map_err(|e| match e {
            EngineError::NotTarget { .. } => EngineError::NotHelper { cond: c, task: t },
            e => e,
        })
    }
}
