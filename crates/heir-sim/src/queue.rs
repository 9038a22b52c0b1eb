//! The two queues of the simulator: the future-event list (a binary heap keyed
//! by `(time, sequence)`) and the SCHED_FIFO-style run queues (one FIFO per
//! urgency level, a bitmap of non-empty levels).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use heir_core::Urgency;

/// What a future event does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EvKind {
    /// The thread starts (after its `delay`).
    Start,
    /// A `run` (or a served request's work) completes, if `gen` is still the
    /// thread's run generation (else the thread was preempted: stale).
    RunDone,
    /// A wall-clock instant: end of a `sleep`, a `timer` wake-up or the end
    /// of a `runtime` event; stale unless `gen` matches.
    Wall,
    /// The time slice of an `SCHED_RR` / `SCHED_OTHER` thread expires.
    Slice,
}

/// A future event. Ordered by `(time, seq)`: `seq` is the insertion counter,
/// so events at the same instant fire in insertion order. Both are packed in
/// one `u128` key (time in the high half) so that the heap compares once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ev {
    key: u128,
    pub kind: EvKind,
    pub thread: u32,
    pub gen: u32,
}

impl Ev {
    /// When the event fires (ns).
    pub fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

impl Ord for Ev {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` is a max-heap, we want the earliest first.
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Ev {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The future-event list: a binary heap on the `(time, seq)` key (keys are
/// unique, so the order is total and deterministic). A 4-ary heap was
/// measured: it executes more instructions on this workload (~100 pending
/// events) than `BinaryHeap`'s sift-to-bottom pop.
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Ev>,
    seq: u64,
}

impl EventQueue {
    /// Schedules an event; same-time events keep insertion order.
    pub fn push(&mut self, time: u64, kind: EvKind, thread: u32, gen: u32) {
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Ev {
            key: (u128::from(time) << 64) | u128::from(seq),
            kind,
            thread,
            gen,
        });
    }

    /// The earliest event's time.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(Ev::time)
    }

    /// Removes the earliest event.
    pub fn pop(&mut self) -> Option<Ev> {
        self.heap.pop()
    }

    /// Events pending (stale ones included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

/// Number of run-queue levels: 0 = every `SCHED_OTHER`-class urgency,
/// 1 + prio for `Fixed { prio }` (1..=100), 101 = deadline.
pub(crate) const NLEVELS: usize = 102;

/// The run-queue level of an urgency. Every `Other` urgency shares level 0
/// (round-robin among them); fixed priorities map one-to-one.
pub(crate) fn level_of(u: Urgency) -> u8 {
    match u {
        Urgency::Other { .. } => 0,
        Urgency::Fixed { prio } => 1 + prio.min(99),
        Urgency::Deadline { .. } => (NLEVELS - 1) as u8,
    }
}

/// One FIFO per level and a bitmap of non-empty levels, like Linux's
/// `rt_prio_array`. Entries are thread indices.
#[derive(Clone, Debug)]
pub(crate) struct RunQueue {
    levels: Vec<VecDeque<u32>>,
    bitmap: u128,
    len: usize,
}

impl Default for RunQueue {
    fn default() -> Self {
        RunQueue {
            levels: (0..NLEVELS).map(|_| VecDeque::new()).collect(),
            bitmap: 0,
            len: 0,
        }
    }
}

impl RunQueue {
    /// Inserts `t` at the head (`head`) or the tail of `level`.
    pub fn push(&mut self, level: u8, t: u32, head: bool) {
        let q = &mut self.levels[usize::from(level)];
        if head {
            q.push_front(t);
        } else {
            q.push_back(t);
        }
        self.bitmap |= 1u128 << level;
        self.len += 1;
    }

    /// Removes `t` from `level`; false if it was not there.
    pub fn remove(&mut self, level: u8, t: u32) -> bool {
        let q = &mut self.levels[usize::from(level)];
        if q.front() == Some(&t) {
            // The common case: the thread being dispatched is the head.
            q.pop_front();
        } else {
            let Some(pos) = q.iter().position(|&x| x == t) else {
                return false;
            };
            q.remove(pos);
        }
        if q.is_empty() {
            self.bitmap &= !(1u128 << level);
        }
        self.len -= 1;
        true
    }

    /// The most urgent level that has threads.
    pub fn top_level(&self) -> Option<u8> {
        (self.bitmap != 0).then(|| (127 - self.bitmap.leading_zeros()) as u8)
    }

    /// The head of the most urgent non-empty level.
    pub fn top(&self) -> Option<(u8, u32)> {
        let l = self.top_level()?;
        self.levels[usize::from(l)].front().map(|&t| (l, t))
    }

    /// Whether `level` has a thread.
    pub fn has_level(&self, level: u8) -> bool {
        self.bitmap & (1u128 << level) != 0
    }

    /// Threads at `level`, head first.
    pub fn level(&self, level: u8) -> &VecDeque<u32> {
        &self.levels[usize::from(level)]
    }

    /// Non-empty levels, most urgent first.
    pub fn levels_desc(&self) -> impl Iterator<Item = u8> + '_ {
        let mut bits = self.bitmap;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let l = (127 - bits.leading_zeros()) as u8;
            bits &= !(1u128 << l);
            Some(l)
        })
    }

    /// Number of queued threads.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no thread is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(20, EvKind::Wall, 0, 0);
        q.push(10, EvKind::Wall, 1, 0);
        q.push(10, EvKind::Wall, 2, 0);
        q.push(5, EvKind::Wall, 3, 0);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.thread).collect();
        assert_eq!(order, vec![3, 1, 2, 0]);
    }

    #[test]
    fn heap_orders_many_events_like_a_sort() {
        let mut q = EventQueue::default();
        let mut rng = crate::rng::SplitMix64::new(3);
        let mut expect = Vec::new();
        for i in 0..2000u32 {
            let t = rng.uniform(0, 50);
            q.push(t, EvKind::Wall, i, 0);
            expect.push((t, i));
            if i % 7 == 0 {
                // Interleave pops with pushes.
                expect.sort();
                let e = q.pop().unwrap();
                assert_eq!((e.time(), e.thread), expect.remove(0));
            }
        }
        expect.sort();
        let rest: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time(), e.thread))
            .collect();
        assert_eq!(rest, expect);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn run_queue_fifo_head_and_levels() {
        let mut rq = RunQueue::default();
        rq.push(5, 1, false);
        rq.push(5, 2, false);
        rq.push(5, 3, true);
        rq.push(9, 4, false);
        rq.push(0, 5, false);
        assert_eq!(rq.top(), Some((9, 4)));
        assert_eq!(rq.levels_desc().collect::<Vec<_>>(), vec![9, 5, 0]);
        assert!(rq.remove(9, 4));
        assert!(!rq.remove(9, 4));
        assert_eq!(rq.top(), Some((5, 3)));
        assert_eq!(
            rq.level(5).iter().copied().collect::<Vec<_>>(),
            vec![3, 1, 2]
        );
        assert_eq!(rq.len(), 4);
        assert!(!rq.has_level(9));
    }

    #[test]
    fn levels_order_like_urgency() {
        assert_eq!(level_of(Urgency::other(-20)), 0);
        assert_eq!(level_of(Urgency::other(19)), 0);
        assert_eq!(level_of(Urgency::fixed(1)), 2);
        assert_eq!(level_of(Urgency::fixed(99)), 100);
        assert!(level_of(Urgency::fixed(50)) > level_of(Urgency::fixed(49)));
    }
}
