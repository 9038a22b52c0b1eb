//! The engine's arenas: per-task, per-mutex and per-condvar state, and the
//! wait queue every object keeps of its waiters.
//!
//! Nothing here knows about propagation; these are plain data structures with
//! the small amount of ordering logic a wait queue needs.

use smallvec::SmallVec;

use crate::{Blocker, CondId, Effective, MutexId, Node, Protocol, TaskId, Urgency};

/// An object of the wait-for graph: something a task can be blocked on, whose
/// *targets* receive the urgency of its top waiter.
///
/// This enum is the extension point for the edge kinds that come next; each
/// new kind only has to say who its targets are and whether it donates (see
/// [`crate::Engine`]'s `target` and `donates`):
///
/// - `Endpoint` (seed 002, IPC donation and helping): a client blocked in
///   `call` is a waiter of the endpoint; its target is the server thread bound
///   to the endpoint (donation), and a client that finds the server busy
///   becomes a waiter as well (helping). Aborts are `cancel_wait`.
/// - `Gang` (seed 003, gang priority management): between `gang_run` and a
///   member's `gang_notify`, the gang's priority (the maximum over all
///   members) is a floor on each active member: a gang object whose
///   contribution is that maximum and whose targets are the active members
///   that have not notified yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Obj {
    /// A mutex: target = its owner (only [`Protocol::Inherit`] donates).
    Mutex(MutexId),
    /// A condition variable: targets = its helpers (PI-CV, seed 000).
    Cond(CondId),
}

impl From<Blocker> for Obj {
    fn from(b: Blocker) -> Obj {
        match b {
            Blocker::Mutex(m) => Obj::Mutex(m),
            Blocker::Cond(c) => Obj::Cond(c),
        }
    }
}

impl From<Obj> for Blocker {
    fn from(o: Obj) -> Blocker {
        match o {
            Obj::Mutex(m) => Blocker::Mutex(m),
            Obj::Cond(c) => Blocker::Cond(c),
        }
    }
}

impl From<Obj> for Node {
    fn from(o: Obj) -> Node {
        match o {
            Obj::Mutex(m) => Node::Mutex(m),
            Obj::Cond(c) => Node::Cond(c),
        }
    }
}

/// One task of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TaskState {
    /// False once removed; ids are never reused.
    pub alive: bool,
    /// The task's own urgency.
    pub base: Urgency,
    /// The incrementally maintained effective urgency.
    pub eff: Effective,
    /// The object the task is blocked on, if any.
    pub blocked: Option<Obj>,
    /// Enqueue sequence of the current block (meaningful while blocked).
    pub seq: u64,
    /// Mutexes the task owns (any protocol), in acquisition order.
    pub owned: SmallVec<[MutexId; 2]>,
    /// Condvars the task is a helper of.
    pub helps: SmallVec<[CondId; 2]>,
    /// The donating objects the task is a target of *that have waiters*, in
    /// no particular order: owned [`Protocol::Inherit`] mutexes and helped
    /// condvars. rtmutex calls this list `pi_waiters`; the top contribution
    /// of each is the first entry of its wait queue.
    pub pi_waiters: SmallVec<[Obj; 2]>,
    /// The highest ceiling among owned [`Protocol::Ceiling`] mutexes.
    pub floor: Option<Urgency>,
}

impl TaskState {
    pub fn new(id: TaskId, base: Urgency) -> TaskState {
        TaskState {
            alive: true,
            base,
            eff: Effective {
                urgency: base,
                donor: id,
            },
            blocked: None,
            seq: 0,
            owned: SmallVec::new(),
            helps: SmallVec::new(),
            pi_waiters: SmallVec::new(),
            floor: None,
        }
    }
}

/// One mutex of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MutexState {
    pub protocol: Protocol,
    pub owner: Option<TaskId>,
    pub queue: WaitQueue,
}

/// One condition variable of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CondState {
    /// Helpers in the order they were added.
    pub helpers: SmallVec<[TaskId; 2]>,
    pub queue: WaitQueue,
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
                donor: TaskId(t),
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
                donor: TaskId(2),
            },
        );
        assert_eq!(order(&q), vec![0, 1, 2]);
        // Task 1 rises to 6: it passes task 0.
        q.requeue(
            TaskId(1),
            Effective {
                urgency: Urgency::fixed(6),
                donor: TaskId(1),
            },
        );
        assert_eq!(order(&q), vec![1, 0, 2]);
        assert_eq!(q.remove(TaskId(1)).map(|e| e.seq), Some(2));
        assert_eq!(q.remove(TaskId(2)).map(|e| e.seq), Some(3));
        assert_eq!(order(&q), vec![0]);
        assert_eq!(q.remove(TaskId(7)), None);
    }
}
