//! Tasks: adding, removing, changing the base, and what a task is doing.

use crate::packed::Eff;
use crate::state::TaskState;
use crate::{
    Changes, CondId, ContextId, Effective, Engine, EngineError, MutexId, ObjId, ObjKind,
    Reservation, TaskId, Urgency,
};

impl Engine {
    /// Adds a task with a base urgency, bound to a new scheduling context
    /// of its own without a reservation (its timeslice); it is runnable
    /// and owns nothing.
    ///
    /// Post: `effective(t) == Effective { urgency: base, source: Task(t) }`;
    /// `context(t)` is a new context bound to `t`.
    pub fn add_task(&mut self, base: Urgency) -> TaskId {
        let c = self.new_context(None);
        self.add_task_in(base, Some(c))
    }

    /// Adds a task bound to a new context with `reservation`
    /// (`SCHED_DEADLINE`: runtime, relative deadline, period; its budget
    /// starts at zero: [`Engine::start`] starts it).
    ///
    /// Pre: the reservation, if any, is valid
    /// ([`EngineError::BadReservation`]).
    pub fn add_task_with(
        &mut self,
        base: Urgency,
        reservation: Option<Reservation>,
    ) -> Result<TaskId, EngineError> {
        let c = self.add_context(reservation)?;
        Ok(self.add_task_in(base, Some(c)))
    }

    /// Adds a **passive** task: bound to no context, it runs only on time
    /// lent to it ([`Engine::consumer`]; a NOVA or seL4 MCS passive server).
    /// Its base urgency is [`Urgency::LOWEST`]: it has no urgency of its
    /// own either, only what is lent to it (a face may still
    /// [`Engine::set_base`] it).
    ///
    /// Post: `context(t) == None`, `effective(t).urgency == LOWEST`.
    pub fn add_passive_task(&mut self) -> TaskId {
        self.add_task_in(Urgency::LOWEST, None)
    }

    /// Adds a task bound to `context` (new, unbound: checked by the
    /// callers). The task takes the slot of the last task removed, if any
    /// (in the slot's next generation), else a new slot.
    fn add_task_in(&mut self, base: Urgency, context: Option<ContextId>) -> TaskId {
        let id = if let Some(slot) = self.free_tasks.pop() {
            let gen = self.tasks[slot as usize].gen;
            let id = TaskId(slot, gen);
            self.tasks[slot as usize] = TaskState::new(id, base, context);
            id
        } else {
            let id = TaskId(self.tasks.len() as u32, 0);
            self.tasks.push(TaskState::new(id, base, context));
            self.scratch.add_task();
            id
        };
        if let Some(c) = context {
            self.ctx_mut(c).bound = Some(id);
        }
        id
    }

    /// Removes a task: it must be neither blocked nor owning a mutex
    /// ([`EngineError::Busy`]); it stops being a target of every other
    /// object (helper sets, endpoints, gangs), revoking what it inherited
    /// through them. Returns the changes of other tasks.
    ///
    /// The context bound to `t`, if any, is removed with it (unbind it
    /// first to keep it).
    ///
    /// Pre: `t` is live, not blocked, owns no mutex. Post: `t` is refused
    /// by every query ([`EngineError::StaleTask`]) and so is its context
    /// ([`EngineError::StaleContext`]); no object targets it; both slots
    /// are free for later ones. Since a task
    /// that is not blocked donates to nobody, no other task changes: the
    /// result is empty.
    pub fn remove_task(&mut self, t: TaskId) -> Result<Changes, EngineError> {
        let ts = self.live(t)?;
        let owns = ts
            .targeted
            .iter()
            .any(|o| self.objs[o.0 as usize].spec.kind == ObjKind::Mutex);
        if ts.blocked.is_some() || owns {
            return Err(EngineError::Busy { task: t });
        }
        let targeted = core::mem::take(&mut self.tasks[t.0 as usize].targeted);
        for o in targeted {
            self.objs[o.0 as usize].drop_target(t);
        }
        let ts = &mut self.tasks[t.0 as usize];
        ts.alive = false;
        ts.inputs.clear();
        ts.eff = Eff::own(t, ts.base);
        // A slot whose generations ran out is retired, never reused.
        if let Some(gen) = ts.gen.checked_add(1) {
            ts.gen = gen;
            self.free_tasks.push(t.0);
        }
        if let Some(c) = ts.context.take() {
            self.free_context(c);
        }
        self.debug_validate();
        Ok(Changes::new())
    }

    /// Changes `t`'s base urgency (a `sched_setattr` by the application, a
    /// reservation's deadline moved by the face that runs time).
    ///
    /// Pre: `t` is live. Post: `base(t) == base`; the new value propagates
    /// down every chain from `t` (a base-changed delta).
    pub fn set_base(&mut self, t: TaskId, base: Urgency) -> Result<Changes, EngineError> {
        self.live(t)?;
        self.tasks[t.0 as usize].base = base;
        self.enqueue(t);
        self.changes()
    }

    /// The task's base urgency.
    pub fn base(&self, t: TaskId) -> Result<Urgency, EngineError> {
        Ok(self.live(t)?.base)
    }

    /// The task's effective urgency and its source.
    pub fn effective(&self, t: TaskId) -> Result<Effective, EngineError> {
        Ok(self.public(self.live(t)?.eff))
    }

    /// What the task is blocked on, if anything.
    pub fn blocked_on(&self, t: TaskId) -> Result<Option<ObjId>, EngineError> {
        Ok(self.live(t)?.blocked)
    }

    /// The objects `t` is a target of, in the order it became their target.
    pub fn targets_of(&self, t: TaskId) -> Result<&[ObjId], EngineError> {
        Ok(&self.live(t)?.targeted)
    }

    /// The mutexes `t` owns, in acquisition order.
    pub fn owned(&self, t: TaskId) -> Result<impl Iterator<Item = MutexId> + '_, EngineError> {
        Ok(self.of_kind(t, ObjKind::Mutex)?.map(|o| MutexId(o.0, o.1)))
    }

    /// The condvars `t` helps, in the order it was added to them.
    pub fn helping(&self, t: TaskId) -> Result<impl Iterator<Item = CondId> + '_, EngineError> {
        Ok(self.of_kind(t, ObjKind::Cond)?.map(|o| CondId(o.0, o.1)))
    }

    /// The objects of `kind` that `t` is a target of.
    fn of_kind(
        &self,
        t: TaskId,
        kind: ObjKind,
    ) -> Result<impl Iterator<Item = ObjId> + '_, EngineError> {
        Ok(self
            .live(t)?
            .targeted
            .iter()
            .copied()
            .filter(move |o| self.objs[o.0 as usize].spec.kind == kind))
    }

    /// Every live task, in id order.
    pub fn tasks(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, ts)| ts.alive)
            .map(|(i, ts)| TaskId(i as u32, ts.gen))
    }
}
