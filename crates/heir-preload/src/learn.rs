//! The learning rule of `heir exec --cond learn`: which threads are a
//! condition variable's helpers. Pure (no clock, no threads): the caller
//! passes the time and applies the [`Actions`] to the `PiCondvar`.
//!
//! - A thread that **signals or broadcasts** a condition variable becomes
//!   one of its helpers (if it is not one already), so the next waiter
//!   lends it its priority while it waits.
//! - Every signal refreshes the signaller's **last-signal time**.
//! - A helper whose last signal is older than the **time to live**
//!   (`ttl_ns`) is dropped, at the next signal or wait on the condition
//!   variable (a thread that stopped signalling stops being boosted by it).
//! - At most **`max` helpers**: a new signaller evicts the helper that
//!   signalled least recently.
//! - A thread that **waits** on the condition variable is no helper of it
//!   (it cannot lend to itself; it becomes one again at its next signal).

/// The most helpers a condition variable may learn (the bound of
/// `HEIR_EXEC_COND_HELPERS`).
pub const MAX_HELPERS: usize = 8;

/// One change to a condition variable's helper set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Make the thread a helper.
    Add(i32),
    /// Drop the helper.
    Del(i32),
}

/// What to apply after one event: at most `MAX_HELPERS + 1` actions
/// (every helper expired, and one added). No allocation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Actions {
    buf: [Option<Action>; MAX_HELPERS + 1],
    len: usize,
}

impl Actions {
    fn push(&mut self, a: Action) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = Some(a);
            self.len += 1;
        }
    }

    /// The actions, in the order to apply them.
    pub fn iter(&self) -> impl Iterator<Item = Action> + '_ {
        self.buf[..self.len].iter().flatten().copied()
    }

    /// True if there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    tid: i32,
    last_ns: u64,
}

/// The learned helpers of one condition variable.
#[derive(Debug)]
pub struct Learner {
    max: usize,
    ttl_ns: u64,
    helpers: [Option<Entry>; MAX_HELPERS],
}

impl Learner {
    /// At most `max` helpers (clamped to 1..=[`MAX_HELPERS`]), each
    /// dropped `ttl_ns` after its last signal.
    pub fn new(max: usize, ttl_ns: u64) -> Learner {
        Learner {
            max: max.clamp(1, MAX_HELPERS),
            ttl_ns,
            helpers: [None; MAX_HELPERS],
        }
    }

    /// The helpers now, in no particular order.
    pub fn helpers(&self) -> impl Iterator<Item = i32> + '_ {
        self.helpers.iter().flatten().map(|e| e.tid)
    }

    fn expire(&mut self, now_ns: u64, out: &mut Actions) {
        for slot in self.helpers.iter_mut() {
            if let Some(e) = *slot {
                if now_ns.saturating_sub(e.last_ns) > self.ttl_ns {
                    *slot = None;
                    out.push(Action::Del(e.tid));
                }
            }
        }
    }

    /// Thread `tid` signals or broadcasts at `now_ns`.
    pub fn on_signal(&mut self, tid: i32, now_ns: u64) -> Actions {
        let mut out = Actions::default();
        self.expire(now_ns, &mut out);
        if let Some(e) = self.helpers.iter_mut().flatten().find(|e| e.tid == tid) {
            e.last_ns = now_ns;
            return out;
        }
        let used = self.helpers.iter().flatten().count();
        if used >= self.max {
            // Evict the one that signalled least recently.
            let oldest = self
                .helpers
                .iter_mut()
                .filter(|s| s.is_some())
                .min_by_key(|s| s.map_or(u64::MAX, |e| e.last_ns));
            if let Some(slot) = oldest {
                if let Some(e) = slot.take() {
                    out.push(Action::Del(e.tid));
                }
            }
        }
        if let Some(slot) = self.helpers[..self.max].iter_mut().find(|s| s.is_none()) {
            *slot = Some(Entry {
                tid,
                last_ns: now_ns,
            });
            out.push(Action::Add(tid));
        }
        out
    }

    /// Thread `tid` is about to wait at `now_ns`.
    pub fn on_wait(&mut self, tid: i32, now_ns: u64) -> Actions {
        let mut out = Actions::default();
        self.expire(now_ns, &mut out);
        for slot in self.helpers.iter_mut() {
            if slot.is_some_and(|e| e.tid == tid) {
                *slot = None;
                out.push(Action::Del(tid));
            }
        }
        out
    }

    /// Drops every helper (a wait that lending would make a cycle).
    pub fn drain(&mut self) -> Actions {
        let mut out = Actions::default();
        for slot in self.helpers.iter_mut() {
            if let Some(e) = slot.take() {
                out.push(Action::Del(e.tid));
            }
        }
        out
    }

    /// Drops `tid` (it is gone, or the condition variable refused it).
    pub fn forget(&mut self, tid: i32) {
        for slot in self.helpers.iter_mut() {
            if slot.is_some_and(|e| e.tid == tid) {
                *slot = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn acts(a: Actions) -> Vec<Action> {
        a.iter().collect()
    }

    fn sorted(l: &Learner) -> Vec<i32> {
        let mut v: Vec<i32> = l.helpers().collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_signaller_becomes_a_helper_once() {
        let mut l = Learner::new(4, 1000 * MS);
        assert_eq!(acts(l.on_signal(7, 0)), vec![Action::Add(7)]);
        assert!(l.on_signal(7, MS).is_empty());
        assert_eq!(sorted(&l), vec![7]);
    }

    #[test]
    fn a_helper_that_stops_signalling_is_dropped_after_the_ttl() {
        let mut l = Learner::new(4, 100 * MS);
        l.on_signal(7, 0);
        l.on_signal(8, 50 * MS);
        // 7 signalled 100 ms ago: still a helper (the bound is strict).
        assert!(l.on_wait(1, 100 * MS).is_empty());
        assert_eq!(acts(l.on_wait(1, 101 * MS)), vec![Action::Del(7)]);
        assert_eq!(sorted(&l), vec![8]);
        // A signal refreshes: 8 signals again and stays.
        l.on_signal(8, 140 * MS);
        assert!(l.on_wait(1, 200 * MS).is_empty());
        assert_eq!(
            acts(l.on_signal(9, 241 * MS)),
            vec![Action::Del(8), Action::Add(9)]
        );
    }

    #[test]
    fn at_most_max_helpers_the_least_recent_is_evicted() {
        let mut l = Learner::new(2, 1000 * MS);
        l.on_signal(1, 0);
        l.on_signal(2, MS);
        l.on_signal(1, 2 * MS);
        assert_eq!(
            acts(l.on_signal(3, 3 * MS)),
            vec![Action::Del(2), Action::Add(3)]
        );
        assert_eq!(sorted(&l), vec![1, 3]);
    }

    #[test]
    fn a_waiter_is_not_its_own_helper() {
        let mut l = Learner::new(4, 1000 * MS);
        l.on_signal(5, 0);
        l.on_signal(6, 0);
        assert_eq!(acts(l.on_wait(5, MS)), vec![Action::Del(5)]);
        assert_eq!(sorted(&l), vec![6]);
        // It rejoins at its next signal.
        assert_eq!(acts(l.on_signal(5, 2 * MS)), vec![Action::Add(5)]);
    }

    #[test]
    fn max_is_clamped() {
        let mut l = Learner::new(0, MS);
        l.on_signal(1, 0);
        assert_eq!(
            acts(l.on_signal(2, 0)),
            vec![Action::Del(1), Action::Add(2)]
        );
        let mut l = Learner::new(100, MS);
        for t in 0..20 {
            l.on_signal(t, 0);
        }
        assert_eq!(l.helpers().count(), MAX_HELPERS);
    }

    #[test]
    fn expiry_and_eviction_together_stay_within_the_buffer() {
        let mut l = Learner::new(MAX_HELPERS, 10);
        for t in 0..MAX_HELPERS as i32 {
            l.on_signal(t, 0);
        }
        let a = acts(l.on_signal(100, 1000));
        assert_eq!(a.len(), MAX_HELPERS + 1);
        assert_eq!(a.last(), Some(&Action::Add(100)));
        assert_eq!(sorted(&l), vec![100]);
    }

    #[test]
    fn drain_drops_every_helper() {
        let mut l = Learner::new(4, MS);
        l.on_signal(3, 0);
        l.on_signal(4, 0);
        let mut d = acts(l.drain());
        d.sort_by_key(|a| match a {
            Action::Add(t) | Action::Del(t) => *t,
        });
        assert_eq!(d, vec![Action::Del(3), Action::Del(4)]);
        assert_eq!(l.helpers().count(), 0);
    }

    #[test]
    fn forget_drops_without_an_action() {
        let mut l = Learner::new(4, MS);
        l.on_signal(3, 0);
        l.forget(3);
        assert_eq!(l.helpers().count(), 0);
    }
}
