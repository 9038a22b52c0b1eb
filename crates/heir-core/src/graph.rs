//! Operations on objects of any kind: the wait-for graph's edges by name.
//! The mutex and condvar operations (`mutex.rs`, `cond.rs`) are these with
//! each kind's rules on top; a new kind can use these directly.

use smallvec::SmallVec;

use crate::state::{ObjState, WaitQueue};
use crate::{Changes, Engine, EngineError, ObjId, ObjKind, Outcome, Spec, TaskId, Urgency};

impl Engine {
    /// Adds an object described by `spec`, without targets or waiters. It
    /// takes the slot of the last object removed, if any (in the slot's
    /// next generation), else a new slot.
    pub fn add_object(&mut self, spec: Spec) -> ObjId {
        if let Some(slot) = self.free_objs.pop() {
            let os = &mut self.objs[slot as usize];
            let gen = os.gen;
            *os = ObjState::new(spec, gen);
            return ObjId(slot, gen);
        }
        let id = ObjId(self.objs.len() as u32, 0);
        self.objs.push(ObjState::new(spec, 0));
        self.scratch.add_obj();
        id
    }

    /// Removes object `o` (any kind): its targets lose what it gave them
    /// (a floor, a ceiling), and its slot is freed for a later object;
    /// `o` and every copy of it are refused from now on
    /// ([`EngineError::StaleObject`]). Returns the changes of its targets.
    ///
    /// Pre: `o` live; no task waits on it and, for a mutex, nobody owns it
    /// ([`EngineError::ObjectBusy`]: nothing changes). Post: no task is
    /// blocked on or a target of `o`; the number of slots is unchanged.
    pub fn remove_object(&mut self, o: impl Into<ObjId>) -> Result<Changes, EngineError> {
        let o = o.into();
        let os = self.obj(o)?;
        if !os.queue.is_empty() || (os.spec.kind == ObjKind::Mutex && !os.targets.is_empty()) {
            return Err(EngineError::ObjectBusy { object: o });
        }
        let targets: SmallVec<[TaskId; 2]> = os.targets.clone();
        for t in targets {
            self.detach_target(o, t);
        }
        let mut out = Changes::new();
        self.propagate(&mut out);
        let os = &mut self.objs[o.0 as usize];
        os.alive = false;
        os.targets.clear();
        os.joined.clear();
        os.queue = WaitQueue::default();
        os.spec.floor = None;
        // A slot whose generations ran out is retired, never reused.
        if let Some(gen) = os.gen.checked_add(1) {
            os.gen = gen;
            self.free_objs.push(o.0);
        }
        self.debug_validate();
        Ok(out)
    }

    /// The object's spec (its kind, whether it donates, its floor now).
    pub fn spec(&self, o: impl Into<ObjId>) -> Result<Spec, EngineError> {
        Ok(self.obj(o.into())?.spec)
    }

    /// The object's targets, in the order they were added.
    pub fn targets(&self, o: impl Into<ObjId>) -> Result<&[TaskId], EngineError> {
        Ok(&self.obj(o.into())?.targets)
    }

    /// The waiters of an object in wake order (top waiter first).
    pub fn waiters(
        &self,
        o: impl Into<ObjId>,
    ) -> Result<impl ExactSizeIterator<Item = TaskId> + '_, EngineError> {
        Ok(self.obj(o.into())?.queue.waiters.iter().map(|w| w.task))
    }

    /// Makes `t` a target of `o` (add-edge `o → t`): `t` inherits `o`'s
    /// contribution from now on (and passes it on if blocked).
    ///
    /// Pre: `t` live and not already a target
    /// ([`EngineError::AlreadyTarget`]); below the spec's target limit
    /// ([`EngineError::TargetLimit`]); if `o` has waiters, none of them is
    /// downstream of `t` ([`EngineError::Cycle`], from `t` back to `t`) and
    /// no chain grows longer than [`crate::MAX_CHAIN_DEPTH`].
    pub fn add_target(&mut self, o: ObjId, t: TaskId) -> Result<Changes, EngineError> {
        let os = self.obj(o)?;
        let (exists, full, has_waiters) = (
            os.targets.contains(&t),
            os.spec
                .max_targets
                .filter(|&n| os.targets.len() >= usize::from(n)),
            !os.queue.is_empty(),
        );
        self.live(t)?;
        if exists {
            return Err(EngineError::AlreadyTarget { object: o, task: t });
        }
        if let Some(limit) = full {
            return Err(EngineError::TargetLimit { object: o, limit });
        }
        if has_waiters {
            self.check_target_edge(o, t)?;
        }
        self.attach_target(o, t);
        self.changes()
    }

    /// Drops `t` from `o`'s targets (remove-edge `o → t`): what it inherited
    /// through `o` is revoked at once, transitively.
    pub fn remove_target(&mut self, o: ObjId, t: TaskId) -> Result<Changes, EngineError> {
        let is_target = self.obj(o)?.targets.contains(&t);
        self.live(t)?;
        if !is_target {
            return Err(EngineError::NotTarget { object: o, task: t });
        }
        self.detach_target(o, t);
        self.changes()
    }

    /// Sets (or clears) `o`'s floor: every target is at least `floor` while
    /// it is set (a gang's priority from `gang_run`; a base-changed delta
    /// for each target).
    pub fn set_floor(&mut self, o: ObjId, floor: Option<Urgency>) -> Result<Changes, EngineError> {
        self.obj(o)?;
        self.change_floor(o, floor);
        self.changes()
    }

    /// Blocks `t` on `o` (add-edge `t → o`): if `o` donates, `t`'s urgency
    /// flows to its targets and on down the chains.
    ///
    /// Pre: `t` live and not blocked ([`EngineError::AlreadyBlocked`]); the
    /// block closes no cycle and creates no chain longer than
    /// [`crate::MAX_CHAIN_DEPTH`]. Post: `t` is a waiter of `o`.
    pub fn block(&mut self, t: TaskId, o: ObjId) -> Result<Changes, EngineError> {
        self.changes_of(|e, out| e.block_into(t, o, out))
    }

    /// [`Engine::block`] writing its changes into `out` (cleared first).
    pub(crate) fn block_into(
        &mut self,
        t: TaskId,
        o: ObjId,
        out: &mut Changes,
    ) -> Result<(), EngineError> {
        out.clear();
        let blocked = self.live(t)?.blocked.is_some();
        self.obj(o)?;
        if blocked {
            return Err(EngineError::AlreadyBlocked(t));
        }
        self.check_block(t, o)?;
        self.add_edge(t, o);
        self.propagate(out);
        Ok(())
    }

    /// Wakes the top waiter of `o` (most urgent, FIFO among equals), if any:
    /// it is runnable, its donation revoked. Nothing happens without waiters.
    pub fn wake_top(&mut self, o: ObjId) -> Result<Outcome<Option<TaskId>>, EngineError> {
        self.outcome_of(None, |e, out| e.wake_top_into(o, out))
    }

    /// [`Engine::wake_top`] writing its changes into `out` (cleared first).
    pub(crate) fn wake_top_into(
        &mut self,
        o: ObjId,
        out: &mut Changes,
    ) -> Result<Option<TaskId>, EngineError> {
        out.clear();
        // Without waiters nothing changes: no walk.
        let Some(w) = self.obj(o)?.queue.top().map(|w| w.task) else {
            return Ok(None);
        };
        self.remove_edge(w);
        self.propagate(out);
        Ok(Some(w))
    }

    /// Wakes every waiter of `o`, in wake order.
    pub fn wake_all(&mut self, o: ObjId) -> Result<Outcome<Vec<TaskId>>, EngineError> {
        if self.obj(o)?.queue.is_empty() {
            return Ok(Outcome {
                value: Vec::new(),
                changes: Changes::new(),
            });
        }
        let woken = self.remove_all_edges(o);
        self.outcome(woken)
    }

    /// Takes `t` off whatever it is blocked on (timeout, abort), revoking its
    /// donation.
    ///
    /// Pre: `t` is blocked ([`EngineError::NotBlocked`]). Post: `t` is
    /// runnable; the targets of its former object lose its contribution.
    pub fn cancel_wait(&mut self, t: TaskId) -> Result<Changes, EngineError> {
        if self.live(t)?.blocked.is_none() {
            return Err(EngineError::NotBlocked(t));
        }
        self.remove_edge(t);
        self.changes()
    }

    /// Runs the chain walk over what the deltas queued and writes the net
    /// changes into `out` (empty on entry; tasks that came back to their old
    /// value are dropped). Ends with the debug-build invariant check.
    #[inline]
    pub(crate) fn propagate(&mut self, out: &mut Changes) {
        if !self.scratch.worklist.is_empty() {
            self.propagate_queued(out);
        }
        self.debug_validate();
    }

    /// [`Engine::propagate`] with a non-empty worklist.
    fn propagate_queued(&mut self, out: &mut Changes) {
        self.scratch.revisited = false;
        self.scratch.spilled = false;
        self.walk(out);
        let s = &mut self.scratch;
        if !s.spilled {
            for c in out.iter() {
                s.recorded[c.task.0 as usize] = false;
            }
            if s.revisited {
                out.retain(|c| c.old != c.new);
            }
            return;
        }
        s.spilled = false;
        for c in &s.changes {
            s.recorded[c.task.0 as usize] = false;
        }
        if s.revisited {
            s.changes.retain(|c| c.old != c.new);
        }
        // Handed over without a copy; the next long walk gets a buffer of
        // the same size.
        let n = s.changes.len();
        let full = core::mem::replace(&mut s.changes, Vec::with_capacity(n));
        *out = Changes::from_vec(full);
    }
}
