//! The engine's arenas: per-task, per-object and per-context state, and the
//! wait queue every object keeps of its waiters.
//!
//! Nothing here knows about propagation; these are plain data structures with
//! the small amount of ordering logic a wait queue needs.

use smallvec::SmallVec;

use crate::packed::{Eff, Key};
use crate::{Budget, ContextId, ObjId, Reservation, Spec, TaskId, Urgency};

/// One task of the arena. Laid out for the chain walk: what it reads of
/// every task it passes (`eff`, `blocked`, `inputs`) in the first cache
/// line, `base` at the start of the second.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct TaskState {
    /// The incrementally maintained effective urgency.
    pub eff: Eff,
    /// The object the task is blocked on, if any.
    pub blocked: Option<ObjId>,
    /// The objects among `targeted` that contribute now (a floor, or a
    /// donating object with waiters), in no particular order: `eff` is
    /// recomputed from these and the base in O(len). (rtmutex's
    /// `pi_waiters` holds the top waiters of such objects.)
    pub inputs: SmallVec<[ObjId; 2]>,
    /// The task's own urgency.
    pub base: Urgency,
    /// Enqueue sequence of the current block (meaningful while blocked).
    pub seq: u64,
    /// The objects the task is a target of (owned mutexes, helped condvars,
    /// …), in the order it became their target.
    pub targeted: SmallVec<[ObjId; 2]>,
    /// The scheduling context the task is bound to (`None`: passive, it
    /// runs only on lent time).
    pub context: Option<ContextId>,
    /// False once removed (the slot is free until a new task takes it).
    pub alive: bool,
    /// The slot's generation: the `.1` of the id of the task in it.
    pub gen: u32,
}

impl TaskState {
    pub fn new(id: TaskId, base: Urgency, context: Option<ContextId>) -> TaskState {
        TaskState {
            alive: true,
            gen: id.1,
            base,
            eff: Eff::own(id, base),
            context,
            blocked: None,
            seq: 0,
            targeted: SmallVec::new(),
            inputs: SmallVec::new(),
        }
    }
}

/// One object of the arena. Laid out for the chain walk: `spec`, `targets`
/// and the top waiter's entry within the first two cache lines.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct ObjState {
    /// What it does (read by the walk, the probes and the invariants).
    pub spec: Spec,
    /// Its targets, in the order they were added.
    pub targets: SmallVec<[TaskId; 2]>,
    /// Its waiters.
    pub queue: WaitQueue,
    /// When the floor was last set ([`crate::Engine::set_floor`]; 0 for a
    /// floor given at creation).
    pub floor_seq: u64,
    /// When each target was added (same order as `targets`). A floor has
    /// applied to a target since the later of this and `floor_seq`: among
    /// equal floors the one that applied first wins.
    pub joined: SmallVec<[u64; 2]>,
    /// False once removed (the slot is free until a new object takes it).
    pub alive: bool,
    /// The slot's generation: the `.1` of the id of the object in it.
    pub gen: u32,
}

impl ObjState {
    /// A new object in generation `gen` of its slot.
    pub fn new(spec: Spec, gen: u32) -> ObjState {
        ObjState {
            spec,
            floor_seq: 0,
            targets: SmallVec::new(),
            joined: SmallVec::new(),
            queue: WaitQueue::default(),
            alive: true,
            gen,
        }
    }
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
    pub fn level(&self) -> Option<Key> {
        let top = if self.spec.donates {
            self.queue.top().map(|w| w.key)
        } else {
            None
        };
        match (self.spec.floor.map(Key::of), top) {
            (Some(f), Some(t)) => Some(f.max(t)),
            (f, t) => f.or(t),
        }
    }
}

/// One scheduling context of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContextState {
    /// The task bound to it, if any.
    pub bound: Option<TaskId>,
    /// Its reservation, if it is one (`SCHED_DEADLINE`).
    pub reservation: Option<Reservation>,
    /// Parameters inherited from a deadline waiter (Linux's rt_mutex).
    pub inherited: Option<Reservation>,
    /// The CBS state.
    pub budget: Budget,
    /// False once removed (the slot is free until a new context takes it).
    pub alive: bool,
    /// The slot's generation: the `.1` of the id of the context in it.
    pub gen: u32,
}

impl ContextState {
    /// A new, unbound context in generation `gen` of its slot.
    pub fn new(reservation: Option<Reservation>, gen: u32) -> ContextState {
        ContextState {
            bound: None,
            reservation,
            inherited: None,
            budget: Budget::default(),
            alive: true,
            gen,
        }
    }

    /// Whether it has a deadline to run at: a reservation, or inherited
    /// parameters.
    #[inline]
    pub fn has_deadline(&self) -> bool {
        self.reservation.is_some() || self.inherited.is_some()
    }
}

/// A waiter entry: the waiting task, a copy of its effective urgency (kept in
/// sync by the chain walk, like rtmutex's `waiter->prio`; the source is read
/// from the task) and its enqueue sequence. The first entry of a queue is
/// the object's top contribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub key: Key,
    pub seq: u64,
    pub task: TaskId,
}

impl Waiter {
    /// Queue order: more urgent first, then earlier enqueue first.
    #[inline]
    pub fn before(&self, other: &Waiter) -> bool {
        self.key > other.key || (self.key == other.key && self.seq < other.seq)
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
    /// Returns whether `t`'s entry was first before and whether it is first
    /// after (both false if `t` is not a waiter).
    #[inline]
    pub fn requeue(&mut self, t: TaskId, key: Key) -> (bool, bool) {
        let q = &mut self.waiters;
        // A chain's waiter is usually its object's only one.
        if let [only] = &mut q[..] {
            if only.task != t {
                return (false, false);
            }
            only.key = key;
            return (true, true);
        }
        // Else usually the first entry.
        let at = match q.first() {
            Some(e) if e.task == t => 0,
            _ => match q.iter().position(|e| e.task == t) {
                Some(at) => at,
                None => return (false, false),
            },
        };
        q[at].key = key;
        let w = q[at];
        let ordered_before = at == 0 || q[at - 1].before(&w);
        let ordered_after = match q.get(at + 1) {
            Some(n) => w.before(n),
            None => true,
        };
        if ordered_before && ordered_after {
            return (at == 0, at == 0);
        }
        q.remove(at);
        (at == 0, self.insert(w) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: u32, prio: u8, seq: u64) -> Waiter {
        Waiter {
            key: Key::of(Urgency::fixed(prio)),
            seq,
            task: TaskId(t, 0),
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
        assert_eq!(q.top().map(|e| e.task), Some(TaskId(1, 0)));
    }

    #[test]
    fn requeue_keeps_enqueue_sequence() {
        let mut q = WaitQueue::default();
        q.insert(w(0, 5, 1));
        q.insert(w(1, 5, 2));
        q.insert(w(2, 9, 3));
        // Task 2 drops to 5: it goes behind the older waiters of urgency 5.
        q.requeue(TaskId(2, 0), Key::of(Urgency::fixed(5)));
        assert_eq!(order(&q), vec![0, 1, 2]);
        // Task 1 rises to 6: it passes task 0.
        q.requeue(TaskId(1, 0), Key::of(Urgency::fixed(6)));
        assert_eq!(order(&q), vec![1, 0, 2]);
        assert_eq!(q.remove(TaskId(1, 0)).map(|e| e.seq), Some(2));
        assert_eq!(q.remove(TaskId(2, 0)).map(|e| e.seq), Some(3));
        assert_eq!(order(&q), vec![0]);
        assert_eq!(q.remove(TaskId(7, 0)), None);
    }
}
