//! Mutexes: objects with one target, the owner ([`Spec::mutex`]).

use crate::{
    Changes, Engine, EngineError, LockResult, MutexId, ObjId, Outcome, Protocol, Spec, TaskId,
};

impl Engine {
    /// Adds a mutex with its protocol; it is free.
    pub fn add_mutex(&mut self, protocol: Protocol) -> MutexId {
        let o = self.add_object(Spec::mutex(protocol));
        MutexId(o.0, o.1)
    }

    /// The mutex's protocol.
    pub fn protocol(&self, m: MutexId) -> Result<Protocol, EngineError> {
        let spec = self.mutex(m)?.spec;
        Ok(spec.protocol().unwrap_or(Protocol::None))
    }

    /// The mutex's owner, if any.
    pub fn owner(&self, m: MutexId) -> Result<Option<TaskId>, EngineError> {
        Ok(self.mutex(m)?.targets.first().copied())
    }

    /// Locks `m` for `t`, or blocks `t` on it (waiters ordered by effective
    /// urgency, FIFO among equals). A cycle (including re-locking a mutex `t`
    /// owns) is refused with [`EngineError::Cycle`].
    ///
    /// Pre: `t` live and not blocked ([`EngineError::AlreadyBlocked`]); the
    /// block closes no cycle and creates no chain longer than
    /// [`crate::MAX_CHAIN_DEPTH`]. Post, `Acquired` (the mutex had no owner):
    /// `t` owns `m`; a ceiling raises `t` at once; waiters left by
    /// [`Engine::release`] donate to `t` (per protocol). Post, `Blocked`: `t`
    /// is a waiter of `m`; with [`Protocol::Inherit`] its urgency flows to
    /// the owner and on down the chain.
    pub fn lock(&mut self, t: TaskId, m: MutexId) -> Result<Outcome<LockResult>, EngineError> {
        self.outcome_of(LockResult::Acquired, |e, out| e.lock_into(t, m, out))
    }

    /// [`Engine::lock`] writing its changes into `out` (cleared first)
    /// instead of returning them: a caller that keeps one buffer for every
    /// operation moves no [`Changes`] around. Same pre/postconditions; on
    /// error `out` is empty and the engine unchanged.
    pub fn lock_into(
        &mut self,
        t: TaskId,
        m: MutexId,
        out: &mut Changes,
    ) -> Result<LockResult, EngineError> {
        out.clear();
        let blocked = self.live(t)?.blocked.is_some();
        let owned = !self.mutex(m)?.targets.is_empty();
        if blocked {
            return Err(EngineError::AlreadyBlocked(t));
        }
        let o = ObjId::from(m);
        let value = if owned {
            self.check_block(t, o)?;
            self.add_edge(t, o);
            LockResult::Blocked
        } else {
            self.attach_target(o, t);
            LockResult::Acquired
        };
        self.propagate(out);
        Ok(value)
    }

    /// Unlocks `m` (owned by `t`) and hands it to the top waiter, which is
    /// unblocked and owns it on return (`value`).
    ///
    /// Pre: `t` owns `m` ([`EngineError::NotOwner`]). Post: `t` no longer
    /// inherits through `m` nor keeps its ceiling; if `m` had waiters, the top
    /// one is runnable and owns `m`, and the remaining waiters donate to it
    /// (per protocol); else `m` is free.
    pub fn unlock(
        &mut self,
        t: TaskId,
        m: MutexId,
    ) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.unlock_into(t, m, out))
    }

    /// [`Engine::unlock`] writing its changes into `out` (cleared first);
    /// returns the task the mutex was handed to. On error `out` is empty and
    /// the engine unchanged.
    pub fn unlock_into(
        &mut self,
        t: TaskId,
        m: MutexId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        self.check_owner(t, m)?;
        let next = self.hand_over(m);
        self.propagate(out);
        Ok(next)
    }

    /// Deltas of an unlock with hand-off: remove-edge `m → owner`, then, if
    /// `m` has waiters, remove-edge `w → m` and add-edge `m → w` for the top
    /// waiter `w`, returned. Pre: `m` has an owner.
    pub(crate) fn hand_over(&mut self, m: MutexId) -> Option<TaskId> {
        let o = ObjId::from(m);
        let os = &self.objs[o.0 as usize];
        let owner = os.targets.first().copied();
        let next = os.queue.top().map(|w| w.task);
        if let Some(t) = owner {
            self.detach_target(o, t);
        }
        if let Some(w) = next {
            self.remove_edge(w);
            self.attach_target(o, w);
        }
        next
    }

    /// `t` is live and owns `m`.
    pub(crate) fn check_owner(&self, t: TaskId, m: MutexId) -> Result<(), EngineError> {
        self.live(t)?;
        if self.mutex(m)?.targets.first() != Some(&t) {
            return Err(EngineError::NotOwner { task: t, mutex: m });
        }
        Ok(())
    }

    /// Records that `t` acquired `m` where the engine could not see it (a
    /// user-space fast path, or a contended acquisition the kernel completed).
    /// Pre: `m` has no owner in the engine; `t` is runnable or blocked on `m`
    /// (then it is unblocked). Post: `t` owns `m`; remaining waiters donate
    /// to `t` (per protocol).
    ///
    /// Also accepted: `m` already owned by `t` (nothing changes, empty
    /// result), and `t` blocked on *another* object (ownership recorded late
    /// while `t` waits elsewhere: it stays blocked there; refused with
    /// [`EngineError::Cycle`] if a waiter of `m` is downstream of `t`).
    /// Errors: [`EngineError::AlreadyOwned`] if another task owns `m`.
    pub fn acquire(&mut self, t: TaskId, m: MutexId) -> Result<Changes, EngineError> {
        let blocked = self.live(t)?.blocked;
        let ms = self.mutex(m)?;
        match ms.targets.first() {
            Some(&o) if o == t => return Ok(Changes::new()),
            Some(&o) => return Err(EngineError::AlreadyOwned { mutex: m, owner: o }),
            None => {}
        }
        let has_waiters = !ms.queue.is_empty();
        let o = ObjId::from(m);
        match blocked {
            Some(x) if x == o => self.remove_edge(t),
            Some(_) if has_waiters => self.check_target_edge(o, t)?,
            _ => {}
        }
        self.attach_target(o, t);
        self.changes()
    }

    /// `t` gives `m` up without handing it to a waiter (the kernel chooses
    /// the next owner; it reports back with [`Engine::acquire`]). Pre: `t`
    /// owns `m`. Post: `m` has no owner; its waiters stay blocked on it.
    pub fn release(&mut self, t: TaskId, m: MutexId) -> Result<Changes, EngineError> {
        self.check_owner(t, m)?;
        self.detach_target(ObjId::from(m), t);
        self.changes()
    }
}
