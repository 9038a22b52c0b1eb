//! The engine's arenas: per-task, per-object and per-context state, and the
//! wait queue every object keeps of its waiters.
//!
//! Nothing here knows about propagation; these are plain data structures with
//! the small amount of ordering logic a wait queue needs.

use smallvec::SmallVec;

use crate::{ContextId, Effective, ObjId, Reservation, Source, Spec, TaskId, Urgency};

/// One task of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TaskState {
    /// False once removed; ids are never reused.
    pub alive: bool,
    /// The task's own urgency.
    pub base: Urgency,
    /// The incrementally maintained effective urgency.
    pub eff: Effective,
    /// The scheduling context the task owns (`None`: it runs only on lent
    /// time).
    pub context: Option<ContextId>,
    /// The object the task is blocked on, if any.
    pub blocked: Option<ObjId>,
    /// Enqueue sequence of the current block (meaningful while blocked).
    pub seq: u64,
    /// The objects the task is a target of (owned mutexes, helped condvars,
    /// …), in the order it became their target.
    pub targeted: SmallVec<[ObjId; 2]>,
    /// The objects among `targeted` that contribute now (a floor, or a
    /// donating object with waiters), in no particular order: `eff` is
    /// recomputed from these and the base in O(len). (rtmutex's
    /// `pi_waiters` holds the top waiters of such objects.)
    pub inputs: SmallVec<[ObjId; 2]>,
}

impl TaskState {
    pub fn new(id: TaskId, base: Urgency, context: Option<ContextId>) -> TaskState {
        TaskState {
            alive: true,
            base,
            eff: Effective {
                urgency: base,
                source: Source::Task(id),
            },
            context,
            blocked: None,
            seq: 0,
            targeted: SmallVec::new(),
            inputs: SmallVec::new(),
        }
    }
}

/// One object of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ObjState {
    /// What it does (read by the walk, the probes and the invariants).
    pub spec: Spec,
    /// When the floor was last set ([`crate::Engine::set_floor`]; 0 for a
    /// floor given at creation).
    pub floor_seq: u64,
    /// Its targets, in the order they were added.
    pub targets: SmallVec<[TaskId; 2]>,
    /// When each target was added (same order as `targets`). A floor has
    /// applied to a target since the later of this and `floor_seq`: among
    /// equal floors the one that applied first wins.
    pub joined: SmallVec<[u64; 2]>,
    /// Its waiters.
    pub queue: WaitQueue,
}

impl ObjState {
    /// Drops `t` from the targets (with its join stamp); false if it was
    /// not one.
    #[inline]
    pub fn drop_target(&mut self, t: TaskId) -> bool {
        let Some(i) = self.targets.iter().position(|x| *x == t) else {
            return false;
        };
        if i + 1 == self.targets.len() {
            // The common case: a mutex's one owner.
            self.targets.pop();
            self.joined.pop();
        } else {
            self.targets.remove(i);
            self.joined.remove(i);
        }
        true
    }

    /// Since when the floor has applied to target `t` (see `joined`).
    #[inline]
    pub fn floor_since(&self, t: TaskId) -> u64 {
        let joined = self
            .targets
            .iter()
            .position(|x| *x == t)
            .map_or(0, |i| self.joined[i]);
        joined.max(self.floor_seq)
    }

    /// Whether the object contributes to its targets now: it has a floor,
    /// or it donates and has waiters.
    #[inline]
    pub fn contributes(&self) -> bool {
        self.spec.floor.is_some() || (self.spec.donates && !self.queue.is_empty())
    }

    /// The most its contribution can be now: the maximum of its floor and
    /// (when it donates) its top waiter's urgency.
    #[inline]
    pub fn level(&self) -> Option<Urgency> {
        let top = if self.spec.donates {
            self.queue.top().map(|w| w.eff.urgency)
        } else {
            None
        };
        match (self.spec.floor, top) {
            (Some(f), Some(t)) => Some(f.max(t)),
            (f, t) => f.or(t),
        }
    }
}

/// One scheduling context of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContextState {
    /// The task that owns it.
    pub owner: TaskId,
    /// Its reservation, if it is one (`SCHED_DEADLINE`).
    pub reservation: Option<Reservation>,
}

/// A waiter entry: the waiting task, a copy of its effective urgency (kept in
/// sync by the chain walk, like rtmutex's `waiter->prio`) and its enqueue
/// sequence. The first entry of a queue is the object's top contribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub task: TaskId,
    pub eff: Effective,
    pub seq: u64,
}

impl Waiter {
    /// Queue order: more urgent first, then earlier enqueue first.
    #[inline]
    pub fn before(&self, other: &Waiter) -> bool {
        self.eff.urgency > other.eff.urgency
            || (self.eff.urgency == other.eff.urgency && self.seq < other.seq)
    }
}

/// The waiters of one object, ordered by (effective urgency desc, enqueue
/// sequence asc). A sorted small vector: wait queues are short.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WaitQueue {
    pub waiters: SmallVec<[Waiter; 4]>,
}

impl WaitQueue {
    /// The top waiter's entry (the object's contribution to its targets).
    #[inline]
    pub fn top(&self) -> Option<Waiter> {
        self.waiters.first().copied()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Inserts `w` at its place; returns that place (0: `w` is the new top
    /// waiter).
    pub fn insert(&mut self, w: Waiter) -> usize {
        let at = self.waiters.partition_point(|e| e.before(&w));
        if at == self.waiters.len() {
            self.waiters.push(w);
        } else {
            self.waiters.insert(at, w);
        }
        at
    }

    /// Removes `t`'s entry, if present.
    #[cfg(test)]
    pub fn remove(&mut self, t: TaskId) -> Option<Waiter> {
        let at = self.remove_pos(t)?;
        Some(at.1)
    }

    /// Removes `t`'s entry, if present; returns where it was (0: it was the
    /// top waiter) and the entry.
    pub fn remove_pos(&mut self, t: TaskId) -> Option<(usize, Waiter)> {
        let at = self.waiters.iter().position(|e| e.task == t)?;
        let w = if at + 1 == self.waiters.len() {
            self.waiters.pop()?
        } else {
            self.waiters.remove(at)
        };
        Some((at, w))
    }

    /// Updates `t`'s effective urgency and moves it to its new place (its
    /// enqueue sequence is kept: FIFO among equals is by enqueue order).
    pub fn requeue(&mut self, t: TaskId, eff: Effective) {
        let Some(at) = self.waiters.iter().position(|e| e.task == t) else {
            return;
        };
        self.waiters[at].eff = eff;
        let w = self.waiters[at];
        let ordered_before = at == 0 || self.waiters[at - 1].before(&w);
        let ordered_after = match self.waiters.get(at + 1) {
            Some(n) => w.before(n),
            None => true,
        };
        if !(ordered_before && ordered_after) {
            self.waiters.remove(at);
            self.insert(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: u32, prio: u8, seq: u64) -> Waiter {
        Waiter {
            task: TaskId(t),
            eff: Effective {
                urgency: Urgency::fixed(prio),
                source: Source::Task(TaskId(t)),
            },
            seq,
        }
    }

    fn order(q: &WaitQueue) -> Vec<u32> {
        q.waiters.iter().map(|e| e.task.0).collect()
    }

    #[test]
    fn queue_orders_by_urgency_then_fifo() {
        let mut q = WaitQueue::default();
        q.insert(w(0, 5, 1));
        q.insert(w(1, 7, 2));
        q.insert(w(2, 5, 3));
        q.insert(w(3, 7, 4));
        assert_eq!(order(&q), vec![1, 3, 0, 2]);
        assert_eq!(q.top().map(|e| e.task), Some(TaskId(1)));
    }

    #[test]
    fn requeue_keeps_enqueue_sequence() {
        let mut q = WaitQueue::default();
        q.insert(w(0, 5, 1));
        q.insert(w(1, 5, 2));
        q.insert(w(2, 9, 3));
        // Task 2 drops to 5: it goes behind the older waiters of urgency 5.
        q.requeue(
            TaskId(2),
            Effective {
                urgency: Urgency::fixed(5),
                source: Source::Task(TaskId(2)),
            },
        );
        assert_eq!(order(&q), vec![0, 1, 2]);
        // Task 1 rises to 6: it passes task 0.
        q.requeue(
            TaskId(1),
            Effective {
                urgency: Urgency::fixed(6),
                source: Source::Task(TaskId(1)),
            },
        );
        assert_eq!(order(&q), vec![1, 0, 2]);
        assert_eq!(q.remove(TaskId(1)).map(|e| e.seq), Some(2));
        assert_eq!(q.remove(TaskId(2)).map(|e| e.seq), Some(3));
        assert_eq!(order(&q), vec![0]);
        assert_eq!(q.remove(TaskId(7)), None);
    }
}
