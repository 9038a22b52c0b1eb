//! The two queues of the simulator: the future-event list (a sorted
//! vector, or a radix heap when many events are pending, popping by `(time, sequence)`) and the SCHED_FIFO-style run queues (one FIFO per
//! urgency level, a bitmap of non-empty levels).

use std::cmp::Ordering;
use std::collections::VecDeque;

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
    /// The budget of the deadline reservation the thread runs on may be
    /// exhausted (stale unless `gen` matches).
    Budget,
    /// The replenishment timer of the thread's throttled deadline reservation.
    Replenish,
    /// A call's timeout (stale unless `gen` is the thread's call
    /// generation).
    Timeout,
    /// A `gang_wait`'s timeout (stale unless `gen` is the thread's gang
    /// wait generation).
    GangTimeout,
}

/// A future event. Ordered by `(time, class, seq)`: `seq` is the insertion
/// counter, so events of one class at the same instant fire in insertion
/// order; [`EventQueue::push_first`]'s class fires before
/// [`EventQueue::push`]'s. All are packed in one `u128` key (time in the
/// high half, the class in bit 63 of the low half) so that sorting compares
/// once.
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

/// The future-event list. Events pop in `(time, seq)` order (keys are
/// unique, so the order is total and deterministic), whichever of its two
/// forms holds them:
///
/// - few pending events (the common case: a handful of periodic tasks
///   have one timer and at most one `run` end each pending): a vector
///   sorted by key, latest first, so that a pop takes the last element
///   and a push shifts the few later ones — no bucket walk, no sort;
/// - more than [`SMALL_MAX`]: a radix heap (Ahuja, Mehlhorn, Orlin &
///   Tarjan 1990) on the event time, which never goes below the time of
///   the last event popped in a simulation; its cost does not grow with
///   the number of pending events the way a binary heap's `log n`
///   cache-missing levels do. It goes back to the vector once no more
///   than [`SMALL_LOW`] events are left (the gap between the two bounds
///   keeps a queue whose size hovers at one of them from switching at
///   every event).
///
/// The radix heap:
/// - `front`: events at `last`, the time of the last refill (or earlier:
///   an event scheduled in the past goes here too), sorted by key;
/// - `buckets[i]`: events whose time first differs from `last` in bit `i`
///   (counting from 0): each later than every event in `front` and every
///   event in a lower bucket.
///
/// When `front` is empty, the lowest non-empty bucket is redistributed
/// around its earliest time (which becomes `last`): its events at that
/// time go to `front` (sorted by sequence), the others to lower buckets.
/// An event moves down at most 64 times, and in practice a few times.
#[derive(Debug)]
pub(crate) struct EventQueue {
    /// The few-events form: every pending event, sorted by key, latest
    /// first (empty while `radix`).
    small: Vec<Ev>,
    /// The radix heap holds the events (`small` is empty).
    radix: bool,
    front: VecDeque<Ev>,
    buckets: [Vec<Ev>; 64],
    /// Bit `i` set: `buckets[i]` is not empty.
    nonempty: u64,
    last: u64,
    len: usize,
    seq: u64,
}

/// The class bit of events [`EventQueue::push`]ed (those of
/// [`EventQueue::push_first`] have it clear).
const LATER: u64 = 1 << 63;
/// Pending events beyond which the queue becomes a radix heap.
pub(crate) const SMALL_MAX: usize = 32;
/// Pending events at or below which a radix heap becomes a sorted vector
/// again.
pub(crate) const SMALL_LOW: usize = 8;

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            small: Vec::with_capacity(SMALL_MAX),
            radix: false,
            front: VecDeque::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
            nonempty: 0,
            last: 0,
            len: 0,
            seq: 0,
        }
    }
}

impl EventQueue {
    /// Schedules an event; same-time events keep insertion order.
    #[inline]
    pub fn push(&mut self, time: u64, kind: EvKind, thread: u32, gen: u32) {
        self.push_keyed(time, LATER, kind, thread, gen);
    }

    /// Schedules an event that fires before every event [`push`]ed for the
    /// same instant (in insertion order among such events): the end of a
    /// deadline thread's work, which completes before anything else
    /// scheduled for that instant is acted on (`sim::dl`).
    ///
    /// [`push`]: EventQueue::push
    pub fn push_first(&mut self, time: u64, kind: EvKind, thread: u32, gen: u32) {
        self.push_keyed(time, 0, kind, thread, gen);
    }

    fn push_keyed(&mut self, time: u64, class: u64, kind: EvKind, thread: u32, gen: u32) {
        let seq = self.seq;
        self.seq += 1;
        let ev = Ev {
            key: (u128::from(time) << 64) | u128::from(seq | class),
            kind,
            thread,
            gen,
        };
        self.len += 1;
        if !self.radix {
            if self.small.len() < SMALL_MAX {
                // After every later event (greater keys come first).
                let at = self.small.partition_point(|e| e.key > ev.key);
                self.small.insert(at, ev);
                return;
            }
            self.grow_to_radix();
        }
        self.radix_push(ev);
    }

    /// Moves the events of the sorted vector into the radix heap, around
    /// the earliest one's time.
    #[cold]
    fn grow_to_radix(&mut self) {
        self.radix = true;
        self.nonempty = 0;
        self.front.clear();
        if let Some(first) = self.small.last() {
            self.last = first.time();
        }
        // Earliest first: events at `last` reach `front` in key order.
        while let Some(ev) = self.small.pop() {
            self.radix_push(ev);
        }
    }

    /// Moves the radix heap's events back into the sorted vector.
    #[cold]
    fn shrink_to_small(&mut self) {
        self.radix = false;
        self.small.clear();
        self.small.extend(self.front.drain(..));
        while self.nonempty != 0 {
            let b = self.nonempty.trailing_zeros() as usize;
            self.nonempty &= !(1 << b);
            self.small.append(&mut self.buckets[b]);
        }
        self.small
            .sort_unstable_by_key(|e| std::cmp::Reverse(e.key));
    }

    fn radix_push(&mut self, ev: Ev) {
        let time = ev.time();
        if time > self.last {
            let b = 63 - (time ^ self.last).leading_zeros();
            self.buckets[b as usize].push(ev);
            self.nonempty |= 1 << b;
        } else if time == self.last && self.front.back().is_none_or(|e| e.key < ev.key) {
            // The largest key so far: last among equal times.
            self.front.push_back(ev);
        } else {
            // Ahead of events at the same instant (`push_first`), or in
            // the past (not done by the simulator, kept exact anyway).
            let at = self.front.partition_point(|e| e.key < ev.key);
            self.front.insert(at, ev);
        }
    }

    /// Refills `front` from the lowest non-empty bucket, if it is empty.
    fn refill(&mut self) {
        if !self.front.is_empty() || self.nonempty == 0 {
            return;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= !(1 << b);
        let mut moving = std::mem::take(&mut self.buckets[b]);
        if moving.len() == 1 {
            // The common case with few pending events: no sort, no min.
            if let Some(ev) = moving.pop() {
                self.last = ev.time();
                self.front.push_back(ev);
            }
        } else {
            let last = moving.iter().map(Ev::time).min().unwrap_or(self.last);
            self.last = last;
            for ev in moving.drain(..) {
                let time = ev.time();
                if time == last {
                    self.front.push_back(ev);
                } else {
                    let nb = 63 - (time ^ last).leading_zeros();
                    self.buckets[nb as usize].push(ev);
                    self.nonempty |= 1 << nb;
                }
            }
            if self.front.len() > 1 {
                self.front.make_contiguous().sort_unstable_by_key(|e| e.key);
            }
        }
        // Give the (empty) vector back: its capacity is reused.
        self.buckets[b] = moving;
    }

    /// The earliest event's time.
    #[inline]
    pub fn peek_time(&mut self) -> Option<u64> {
        if !self.radix {
            return self.small.last().map(Ev::time);
        }
        self.refill();
        self.front.front().map(Ev::time)
    }

    /// Removes the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Ev> {
        if !self.radix {
            let ev = self.small.pop()?;
            self.len -= 1;
            return Some(ev);
        }
        self.refill();
        let ev = self.front.pop_front()?;
        self.len -= 1;
        if self.len <= SMALL_LOW {
            self.shrink_to_small();
        }
        Some(ev)
    }

    /// Events pending (stale ones included).
    pub fn len(&self) -> usize {
        self.len
    }
}

/// Number of run-queue levels: 0 = every `SCHED_OTHER`-class urgency,
/// 1 + prio for `Fixed { prio }` (1..=100), 101 = deadline.
pub(crate) const NLEVELS: usize = 102;

/// The run-queue level of `SCHED_DEADLINE` (above every fixed priority).
pub(crate) const DL_LEVEL: u8 = (NLEVELS - 1) as u8;

/// The run-queue level of an urgency. Every `Other` urgency shares level 0
/// (round-robin among them); fixed priorities map one-to-one.
pub(crate) fn level_of(u: Urgency) -> u8 {
    match u {
        Urgency::Other { .. } => 0,
        Urgency::Fixed { prio } => 1 + prio.min(99),
        Urgency::Deadline { .. } => DL_LEVEL,
    }
}

/// Where a ready thread stands: its level, and at the deadline level its
/// scheduling deadline (earlier is more urgent). Ordered by urgency: a
/// greater rank preempts a smaller one; equal ranks never preempt each
/// other (FIFO).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Rank {
    /// Run-queue level ([`level_of`]).
    pub level: u8,
    /// At [`DL_LEVEL`]: the absolute deadline (ns) it is scheduled by;
    /// 0 elsewhere.
    pub deadline: u64,
}

impl Rank {
    /// The rank of a fixed-priority or `SCHED_OTHER`-class urgency.
    pub fn of(u: Urgency) -> Rank {
        match u {
            Urgency::Deadline { abs_ns } => Rank::deadline(abs_ns),
            _ => Rank {
                level: level_of(u),
                deadline: 0,
            },
        }
    }

    /// A `SCHED_DEADLINE` rank with absolute deadline `abs_ns`.
    pub fn deadline(abs_ns: u64) -> Rank {
        Rank {
            level: DL_LEVEL,
            deadline: abs_ns,
        }
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        self.level
            .cmp(&other.level)
            .then(other.deadline.cmp(&self.deadline))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One FIFO per level and a bitmap of non-empty levels, like Linux's
/// `rt_prio_array`; the deadline level is kept ordered by deadline, FIFO
/// among equal deadlines (Linux's deadline rb-tree inserts an equal key
/// after the ones already there). Entries are (deadline, thread index).
#[derive(Clone, Debug)]
pub(crate) struct RunQueue {
    levels: Vec<VecDeque<(u64, u32)>>,
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
    /// Inserts `t` at the head (`head`) or the tail of its rank's level; at
    /// the deadline level, in deadline order after equal deadlines (`head`
    /// does not apply: Linux re-inserts a preempted deadline task by its
    /// deadline).
    #[inline]
    pub fn push(&mut self, rank: Rank, t: u32, head: bool) {
        let q = &mut self.levels[usize::from(rank.level)];
        if rank.level == DL_LEVEL {
            let at = q.partition_point(|&(d, _)| d <= rank.deadline);
            q.insert(at, (rank.deadline, t));
        } else if head {
            q.push_front((0, t));
        } else {
            q.push_back((0, t));
        }
        self.bitmap |= 1u128 << rank.level;
        self.len += 1;
    }

    /// Removes `t` from `rank`'s level; false if it was not there.
    #[inline]
    pub fn remove(&mut self, rank: Rank, t: u32) -> bool {
        let level = rank.level;
        let q = &mut self.levels[usize::from(level)];
        if q.front().map(|e| e.1) == Some(t) {
            // The common case: the thread being dispatched is the head.
            q.pop_front();
        } else {
            let Some(pos) = q.iter().position(|&(_, x)| x == t) else {
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
    #[inline]
    pub fn top_level(&self) -> Option<u8> {
        (self.bitmap != 0).then(|| (127 - self.bitmap.leading_zeros()) as u8)
    }

    /// The head of the most urgent non-empty level, with its rank.
    #[inline]
    pub fn top(&self) -> Option<(Rank, u32)> {
        let l = self.top_level()?;
        self.levels[usize::from(l)].front().map(|&(d, t)| {
            (
                Rank {
                    level: l,
                    deadline: d,
                },
                t,
            )
        })
    }

    /// The `i`-th thread at `level` (head first).
    pub fn at(&self, level: u8, i: usize) -> Option<u32> {
        self.levels[usize::from(level)].get(i).map(|e| e.1)
    }

    /// The next thread of `levels` (most urgent first, as
    /// [`Self::levels_desc`] gave them) after `cursor` (level position,
    /// thread position), which it advances.
    pub fn next_of(&self, levels: &[u32], cursor: &mut (usize, usize)) -> Option<u32> {
        while let Some(&l) = levels.get(cursor.0) {
            if let Some(t) = self.at(l as u8, cursor.1) {
                cursor.1 += 1;
                return Some(t);
            }
            *cursor = (cursor.0 + 1, 0);
        }
        None
    }

    /// Whether `level` has a thread.
    pub fn has_level(&self, level: u8) -> bool {
        self.bitmap & (1u128 << level) != 0
    }

    /// Threads at `level`, head first, with their ranks.
    pub fn level(&self, level: u8) -> impl Iterator<Item = (Rank, u32)> + '_ {
        self.levels[usize::from(level)]
            .iter()
            .map(move |&(d, t)| (Rank { level, deadline: d }, t))
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
    fn radix_heap_pops_like_a_sorted_key_list_over_wide_times() {
        // Simulation-like use: pushes at or after the last popped time
        // (many at the same instant), interleaved with pops, times spread
        // over 40 bits; plus a few in the past. The reference is a sorted
        // list of (time, insertion index).
        let mut q = EventQueue::default();
        let mut rng = crate::rng::SplitMix64::new(11);
        let mut expect: Vec<(u64, u32)> = Vec::new();
        let mut now = 0u64;
        let mut popped = 0;
        for i in 0..20_000u32 {
            let t = match rng.uniform(0, 9) {
                0 | 1 => now,
                2 => now.saturating_sub(rng.uniform(0, 1000)),
                3 => now + rng.uniform(0, 1 << 40),
                _ => {
                    let bits = rng.uniform(0, 30);
                    now + rng.uniform(0, 1 << bits)
                }
            };
            q.push(t, EvKind::Wall, i, 0);
            expect.push((t, i));
            if rng.uniform(0, 2) > 0 {
                expect.sort();
                let e = q.pop().unwrap();
                assert_eq!((e.time(), e.thread), expect.remove(0), "pop {popped}");
                now = e.time();
                popped += 1;
                assert_eq!(q.len(), expect.len());
            }
        }
        expect.sort();
        let mut rest = Vec::new();
        while let Some(t) = q.peek_time() {
            let e = q.pop().unwrap();
            assert_eq!(e.time(), t);
            rest.push((e.time(), e.thread));
        }
        assert_eq!(rest, expect);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn queue_pops_in_order_across_its_two_forms() {
        // The number of pending events swings across SMALL_MAX and
        // SMALL_LOW again and again (each swing switches the form), with
        // same-time events and a few in the past; the reference is a
        // sorted list of (time, insertion index).
        let mut q = EventQueue::default();
        let mut rng = crate::rng::SplitMix64::new(5);
        let mut expect: Vec<(u64, u32)> = Vec::new();
        let mut now = 0u64;
        let mut i = 0u32;
        for round in 0..200 {
            let target = if round % 2 == 0 {
                SMALL_MAX + 1 + rng.uniform(0, 20) as usize
            } else {
                rng.uniform(0, SMALL_LOW as u64) as usize
            };
            while expect.len() != target {
                if expect.len() < target {
                    let t = match rng.uniform(0, 5) {
                        0 => now,
                        1 => now.saturating_sub(rng.uniform(0, 3)),
                        _ => {
                            let bits = rng.uniform(0, 20);
                            now + rng.uniform(0, 1 << bits)
                        }
                    };
                    q.push(t, EvKind::Wall, i, 0);
                    expect.push((t, i));
                    i += 1;
                } else {
                    expect.sort();
                    assert_eq!(q.peek_time(), Some(expect[0].0));
                    let e = q.pop().unwrap();
                    assert_eq!((e.time(), e.thread), expect.remove(0), "round {round}");
                    now = e.time();
                }
                assert_eq!(q.len(), expect.len());
            }
        }
        expect.sort();
        let rest: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time(), e.thread))
            .collect();
        assert_eq!(rest, expect);
    }

    #[test]
    fn run_queue_fifo_head_and_levels() {
        let mut rq = RunQueue::default();
        let r = |level| Rank { level, deadline: 0 };
        rq.push(r(5), 1, false);
        rq.push(r(5), 2, false);
        rq.push(r(5), 3, true);
        rq.push(r(9), 4, false);
        rq.push(r(0), 5, false);
        assert_eq!(rq.top(), Some((r(9), 4)));
        assert_eq!(rq.levels_desc().collect::<Vec<_>>(), vec![9, 5, 0]);
        assert!(rq.remove(r(9), 4));
        assert!(!rq.remove(r(9), 4));
        assert_eq!(rq.top(), Some((r(5), 3)));
        assert_eq!(rq.level(5).map(|e| e.1).collect::<Vec<_>>(), vec![3, 1, 2]);
        assert_eq!(rq.len(), 4);
        assert!(!rq.has_level(9));
    }

    #[test]
    fn deadline_level_is_earliest_first_fifo_among_equals() {
        let mut rq = RunQueue::default();
        rq.push(Rank::deadline(30), 1, false);
        rq.push(Rank::deadline(10), 2, false);
        rq.push(Rank::deadline(30), 3, true);
        rq.push(Rank::deadline(20), 4, false);
        rq.push(Rank::of(Urgency::fixed(99)), 5, false);
        assert_eq!(rq.top(), Some((Rank::deadline(10), 2)));
        assert_eq!(
            rq.level(DL_LEVEL).map(|e| e.1).collect::<Vec<_>>(),
            vec![2, 4, 1, 3]
        );
        assert!(Rank::deadline(10) > Rank::deadline(20));
        assert!(Rank::deadline(u64::MAX) > Rank::of(Urgency::fixed(99)));
        assert_eq!(
            Rank::deadline(5).cmp(&Rank::deadline(5)),
            std::cmp::Ordering::Equal
        );
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
