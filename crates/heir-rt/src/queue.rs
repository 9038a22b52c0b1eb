//! [`PrioQueue`]: the synchronized finite priority queue of the PI-CV paper's Fig. 5.
//!
//! One [`PiMutex`] and two [`PiCondvar`]s: `push` waits on `less` while the
//! queue is full, `pop` waits on `more` while it is empty. `add_producer`
//! declares a pusher a helper of `more` (consumers waiting for an item lend
//! it their urgency); `add_consumer` declares a popper a helper of `less`.
//! Items are popped most urgent first, FIFO among equals.
//!
//! [`PrioQueue::is_busy`] says whether a thread is inside one of its calls
//! (a `push` or `pop` blocked or not, a helper being added): the C API's
//! `heir_queue_destroy` refuses then (`EBUSY`) instead of freeing a queue a
//! waiter still sleeps on.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, Ordering};

use heir_core::Urgency;

use crate::condvar::{Lend, PiCondvar, WaitResult};
use crate::mutex::PiMutex;
use crate::Error;

struct Item<T> {
    prio: Urgency,
    seq: u64,
    value: T,
}

impl<T> PartialEq for Item<T> {
    fn eq(&self, o: &Self) -> bool {
        self.prio == o.prio && self.seq == o.seq
    }
}
impl<T> Eq for Item<T> {}
impl<T> PartialOrd for Item<T> {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Item<T> {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        self.prio.cmp(&o.prio).then(o.seq.cmp(&self.seq))
    }
}

struct Inner<T> {
    heap: BinaryHeap<Item<T>>,
    seq: u64,
}

/// A bounded priority queue with PI-CV helpers.
pub struct PrioQueue<T> {
    inner: PiMutex<Inner<T>>,
    more: PiCondvar,
    less: PiCondvar,
    capacity: usize,
    /// Threads inside a call on the queue now ([`PrioQueue::is_busy`]).
    inside: AtomicU32,
}

/// Counts a thread inside a call on a queue for the call's duration.
struct Inside<'a>(&'a AtomicU32);

impl<'a> Inside<'a> {
    fn enter(n: &'a AtomicU32) -> Self {
        n.fetch_add(1, Ordering::AcqRel);
        Inside(n)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T: Send> PrioQueue<T> {
    /// A queue holding at most `capacity` items (at least 1).
    pub fn new(capacity: usize) -> Self {
        PrioQueue {
            inner: PiMutex::new(Inner {
                heap: BinaryHeap::new(),
                seq: 0,
            }),
            more: PiCondvar::new(),
            less: PiCondvar::new(),
            capacity: capacity.max(1),
            inside: AtomicU32::new(0),
        }
    }

    /// A queue like [`PrioQueue::new`] whose two condition variables' waiters
    /// lend to their helpers as `lend` says ([`PiCondvar::with_lend`]).
    pub fn with_lend(capacity: usize, lend: Lend) -> Result<Self, Error> {
        Ok(PrioQueue {
            inner: PiMutex::new(Inner {
                heap: BinaryHeap::new(),
                seq: 0,
            }),
            more: PiCondvar::with_lend(lend)?,
            less: PiCondvar::with_lend(lend)?,
            capacity: capacity.max(1),
            inside: AtomicU32::new(0),
        })
    }

    /// The previous release's name of [`PrioQueue::with_lend`].
    #[deprecated(note = "renamed `with_lend`")]
    pub fn with_boost(capacity: usize, lend: Lend) -> Result<Self, Error> {
        Self::with_lend(capacity, lend)
    }

    /// Declares `tid` a producer: helper of the "more" condition.
    pub fn add_producer(&self, tid: i32) -> Result<(), Error> {
        let _in = Inside::enter(&self.inside);
        self.more.add_helper(tid)
    }

    /// Declares `tid` a consumer: helper of the "less" condition.
    pub fn add_consumer(&self, tid: i32) -> Result<(), Error> {
        let _in = Inside::enter(&self.inside);
        self.less.add_helper(tid)
    }

    /// Removes producer `tid`.
    pub fn remove_producer(&self, tid: i32) -> Result<(), Error> {
        let _in = Inside::enter(&self.inside);
        self.more.remove_helper(tid)
    }

    /// Removes consumer `tid`.
    pub fn remove_consumer(&self, tid: i32) -> Result<(), Error> {
        let _in = Inside::enter(&self.inside);
        self.less.remove_helper(tid)
    }

    /// The previous release's name of [`PrioQueue::remove_producer`].
    #[deprecated(note = "renamed `remove_producer`")]
    pub fn del_producer(&self, tid: i32) -> Result<(), Error> {
        self.remove_producer(tid)
    }

    /// The previous release's name of [`PrioQueue::remove_consumer`].
    #[deprecated(note = "renamed `remove_consumer`")]
    pub fn del_consumer(&self, tid: i32) -> Result<(), Error> {
        self.remove_consumer(tid)
    }

    /// Pushes at the caller's current effective urgency, blocking while full.
    pub fn push(&self, value: T) -> Result<(), Error> {
        let prio = crate::thread::current_urgency()?;
        self.push_until(value, prio, None)
    }

    /// Pushes at `prio`, waiting while full until the absolute deadline
    /// ([`Error::TimedOut`]; the value is dropped on failure).
    pub fn push_until(
        &self,
        value: T,
        prio: Urgency,
        deadline_ns: Option<u64>,
    ) -> Result<(), Error> {
        let _in = Inside::enter(&self.inside);
        let mut g = self.inner.lock()?;
        while g.heap.len() >= self.capacity {
            if self.less.wait_raw(g.raw(), deadline_ns)? == WaitResult::TimedOut
                && g.heap.len() >= self.capacity
            {
                return Err(Error::TimedOut);
            }
        }
        let seq = g.seq;
        g.seq += 1;
        g.heap.push(Item { prio, seq, value });
        self.more.signal()?;
        Ok(())
    }

    /// Pops the most urgent item, blocking while empty.
    pub fn pop(&self) -> Result<T, Error> {
        loop {
            if let Some(v) = self.pop_until(None)? {
                return Ok(v);
            }
        }
    }

    /// Pops the most urgent item, waiting while empty until the absolute
    /// deadline (`Ok(None)` on timeout).
    pub fn pop_until(&self, deadline_ns: Option<u64>) -> Result<Option<T>, Error> {
        let _in = Inside::enter(&self.inside);
        let mut g = self.inner.lock()?;
        while g.heap.is_empty() {
            if self.more.wait_raw(g.raw(), deadline_ns)? == WaitResult::TimedOut
                && g.heap.is_empty()
            {
                return Ok(None);
            }
        }
        let item = g.heap.pop().map(|i| i.value);
        self.less.signal()?;
        Ok(item)
    }

    /// Items queued now.
    pub fn len(&self) -> Result<usize, Error> {
        let _in = Inside::enter(&self.inside);
        Ok(self.inner.lock()?.heap.len())
    }

    /// True while a thread is inside a call on the queue — a `push` or
    /// `pop` waiting for room or an item, or on its way in or out — or
    /// holds or waits for its mutex, or waits on one of its conditions:
    /// freeing it then would pull the memory from under that thread.
    pub fn is_busy(&self) -> bool {
        self.inside.load(Ordering::Acquire) > 0
            || self.inner.raw().owner_tid().is_some()
            || self.more.has_waiters()
            || self.less.has_waiters()
    }

    /// True if empty now.
    pub fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len()? == 0)
    }

    /// The "more" condition variable (waited on by poppers).
    pub fn more(&self) -> &PiCondvar {
        &self.more
    }

    /// The "less" condition variable (waited on by pushers).
    pub fn less(&self) -> &PiCondvar {
        &self.less
    }
}
