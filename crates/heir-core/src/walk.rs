//! Propagation: the graph deltas every operation reduces to, and the chain
//! walk that brings effective urgencies up to date after them.
//!
//! Deltas (Zircon owned_wait_queue style) mutate the wait-for graph and queue
//! the tasks whose inputs changed; they never compute an effective urgency.
//! [`Engine::walk`] then recomputes queued tasks and follows the chains only as
//! far as values change.

use std::collections::VecDeque;

use crate::state::{Obj, WaitQueue, Waiter};
use crate::{Change, Changes, CondId, Effective, Engine, MutexId, Protocol, TaskId, Urgency};

/// Buffers reused across operations so that the common path does not
/// allocate. Not part of the engine's logical state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    /// The chain walk's worklist.
    pub worklist: VecDeque<TaskId>,
    /// Per task: currently in `worklist`.
    pub queued: Vec<bool>,
    /// Per task: already in the current walk's changes.
    pub recorded: Vec<bool>,
    /// Depth-first stack of the probes (see `probe.rs`).
    pub stack: Vec<crate::probe::Frame>,
    /// Per task / mutex / condvar: (epoch stamp, memoised probe value).
    pub memo_task: Vec<(u32, u32)>,
    pub memo_mutex: Vec<(u32, u32)>,
    pub memo_cond: Vec<(u32, u32)>,
    /// Current probe epoch; a memo entry is valid iff its stamp equals it.
    pub epoch: u32,
    /// The current walk recorded some task twice.
    pub revisited: bool,
    /// While a probe runs for [`Engine::cond_wait_unlock`] or
    /// [`Engine::cond_wait_release`]: the mutex the waiter gives up as it
    /// starts to wait (see [`crate::probe::Cut`]).
    pub cut: Option<crate::probe::Cut>,
}

impl Scratch {
    pub fn add_task(&mut self) {
        self.queued.push(false);
        self.recorded.push(false);
        self.memo_task.push((0, 0));
    }
    pub fn add_mutex(&mut self) {
        self.memo_mutex.push((0, 0));
    }
    pub fn add_cond(&mut self) {
        self.memo_cond.push((0, 0));
    }
    /// Starts a new probe: invalidates every memo entry.
    pub fn next_epoch(&mut self) -> u32 {
        if self.epoch == u32::MAX {
            for e in self
                .memo_task
                .iter_mut()
                .chain(self.memo_mutex.iter_mut())
                .chain(self.memo_cond.iter_mut())
            {
                e.0 = 0;
            }
            self.epoch = 0;
        }
        self.epoch += 1;
        self.epoch
    }
}

/// Records that `t` went from `old` to `new`: first `old` kept, `new` updated.
/// Returns true if `t` was already recorded (it may now be back at its old
/// value: the caller then filters).
fn record(changes: &mut Changes, task: TaskId, old: Effective, new: Effective) -> bool {
    match changes.iter_mut().find(|c| c.task == task) {
        Some(c) => {
            c.new = new;
            true
        }
        None => {
            changes.push(Change { task, old, new });
            false
        }
    }
}

impl Engine {
    // ----- object accessors -----

    #[inline]
    pub(crate) fn queue(&self, o: Obj) -> &WaitQueue {
        match o {
            Obj::Mutex(m) => &self.mutexes[m.0 as usize].queue,
            Obj::Cond(c) => &self.conds[c.0 as usize].queue,
        }
    }

    #[inline]
    pub(crate) fn queue_mut(&mut self, o: Obj) -> &mut WaitQueue {
        match o {
            Obj::Mutex(m) => &mut self.mutexes[m.0 as usize].queue,
            Obj::Cond(c) => &mut self.conds[c.0 as usize].queue,
        }
    }

    /// Whether `o`'s top contribution flows to its targets. The wait-for
    /// edges exist either way (cycles are refused through every object).
    #[inline]
    pub(crate) fn donates(&self, o: Obj) -> bool {
        match o {
            Obj::Mutex(m) => self.mutexes[m.0 as usize].protocol == Protocol::Inherit,
            Obj::Cond(_) => true,
        }
    }

    /// The `i`-th target of `o` in the wait-for graph (owner; helpers in
    /// order), donating or not.
    #[inline]
    pub(crate) fn target(&self, o: Obj, i: usize) -> Option<TaskId> {
        match o {
            Obj::Mutex(m) if i == 0 => self.mutexes[m.0 as usize].owner,
            Obj::Mutex(_) => None,
            Obj::Cond(c) => self.conds[c.0 as usize].helpers.get(i).copied(),
        }
    }

    // ----- the worklist -----

    /// Queues `t` for the chain walk (once).
    #[inline]
    pub(crate) fn enqueue(&mut self, t: TaskId) {
        let q = &mut self.scratch.queued[t.0 as usize];
        if !*q {
            *q = true;
            self.scratch.worklist.push_back(t);
        }
    }

    /// Queues `t` because one of its inputs changed, unless that provably
    /// leaves `eff(t)` as it is: the input was and is at most `level`, and
    /// `level` is below `eff(t)` (or equal, when `loses_ties`: the input
    /// loses every tie, like a waiter enqueued after every other one). Such
    /// an input neither sets the maximum nor names the donor.
    ///
    /// Sound because a task that is not queued has an up-to-date `eff`
    /// (deltas queue every task whose inputs they change, and the walk
    /// recomputes what it dequeues); a queued task is recomputed anyway.
    #[inline(always)]
    pub(crate) fn enqueue_unless_below(&mut self, t: TaskId, level: Urgency, loses_ties: bool) {
        let unaffected = match level.cmp(&self.tasks[t.0 as usize].eff.urgency) {
            core::cmp::Ordering::Less => true,
            core::cmp::Ordering::Equal => loses_ties,
            core::cmp::Ordering::Greater => false,
        };
        if !unaffected {
            self.enqueue(t);
        }
    }

    // ----- deltas -----

    /// Add-edge `t → o` (a block). Pre: `t` is not blocked and the edge was
    /// checked (no cycle, chain bound). Post: `t` is a waiter of `o` with a
    /// fresh enqueue sequence; if the top contribution changed, `o`'s targets
    /// are queued.
    pub(crate) fn add_edge(&mut self, t: TaskId, o: Obj) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.blocked_count += 1;
        let ts = &mut self.tasks[t.0 as usize];
        ts.blocked = Some(o);
        ts.seq = seq;
        let w = Waiter {
            task: t,
            eff: ts.eff,
            seq,
        };
        let q = self.queue_mut(o);
        let had = !q.is_empty();
        // The top contribution changes iff `w` goes first (it is a new
        // entry, so it differs from any previous top): it rises from the
        // old top (less urgent than `w`) to `w`, which has the newest
        // sequence and so loses every tie in its targets' `eff`.
        if q.insert(w) == 0 {
            self.top_changed(o, had, true, Some(w.eff.urgency), true);
        }
    }

    /// Remove-edge `t → o` (wake, timeout, handoff). Pre: `t` is blocked.
    /// Post: `t` is runnable; if `o`'s top contribution changed, its targets
    /// are queued.
    pub(crate) fn remove_edge(&mut self, t: TaskId) {
        let Some(o) = self.tasks[t.0 as usize].blocked.take() else {
            return;
        };
        self.blocked_count -= 1;
        let q = self.queue_mut(o);
        // The top contribution changes iff the top waiter leaves (the next
        // entry, if any, is another task).
        // It falls from the removed entry to the next one (no more urgent).
        if let Some((0, w)) = q.remove_pos(t) {
            let has = !q.is_empty();
            self.top_changed(o, true, has, Some(w.eff.urgency), false);
        }
    }

    /// Remove-edge for every waiter of `o` (broadcast); returns them in wake
    /// order.
    pub(crate) fn remove_all_edges(&mut self, o: Obj) -> Vec<TaskId> {
        let drained = core::mem::take(&mut self.queue_mut(o).waiters);
        let woken: Vec<TaskId> = drained.iter().map(|w| w.task).collect();
        for &t in &woken {
            self.tasks[t.0 as usize].blocked = None;
        }
        self.blocked_count -= woken.len();
        if let Some(top) = drained.first() {
            self.top_changed(o, true, false, Some(top.eff.urgency), false);
        }
        woken
    }

    /// Add-edge `m → t` (ownership). Pre: `m` has no owner; `t` live and not
    /// blocked on `m`. Post: `t` owns `m` (a ceiling floor or, for an inherit
    /// mutex with waiters, a pi_waiters entry) and is queued if that can
    /// change it.
    pub(crate) fn attach_owner(&mut self, m: MutexId, t: TaskId) {
        let ms = &mut self.mutexes[m.0 as usize];
        ms.owner = Some(t);
        let protocol = ms.protocol;
        let top = ms.queue.top();
        let ts = &mut self.tasks[t.0 as usize];
        ts.owned.push(m);
        match (protocol, top) {
            (Protocol::Ceiling(c), _) => {
                ts.floor = Some(ts.floor.map_or(c, |f| f.max(c)));
                self.enqueue(t);
            }
            (Protocol::Inherit, Some(w)) => {
                ts.pi_waiters.push(Obj::Mutex(m));
                self.enqueue_unless_below(t, w.eff.urgency, false);
            }
            (Protocol::Inherit | Protocol::None, _) => {}
        }
    }

    /// Remove-edge `m → owner` (unlock, release). Pre: `m` has an owner.
    /// Post: `m` is free; the former owner lost `m`'s ceiling or contribution
    /// and is queued if that can change it.
    pub(crate) fn detach_owner(&mut self, m: MutexId) {
        let ms = &mut self.mutexes[m.0 as usize];
        let Some(t) = ms.owner.take() else {
            return;
        };
        let protocol = ms.protocol;
        let ts = &mut self.tasks[t.0 as usize];
        if let Some(i) = ts.owned.iter().rposition(|x| *x == m) {
            // Usually the last one taken (nested locks unwind in order).
            if i + 1 == ts.owned.len() {
                ts.owned.pop();
            } else {
                ts.owned.remove(i);
            }
        }
        match protocol {
            Protocol::Ceiling(_) => {
                self.recompute_floor(t);
                self.enqueue(t);
            }
            Protocol::Inherit => {
                let obj = Obj::Mutex(m);
                let ts = &mut self.tasks[t.0 as usize];
                if let Some(i) = ts.pi_waiters.iter().position(|x| *x == obj) {
                    ts.pi_waiters.swap_remove(i);
                    // In pi_waiters: `m` has waiters, its top is the input lost.
                    match self.mutexes[m.0 as usize].queue.top() {
                        Some(w) => self.enqueue_unless_below(t, w.eff.urgency, false),
                        None => self.enqueue(t),
                    }
                }
            }
            Protocol::None => {}
        }
    }

    /// Add-edge `c → t` (helper). Pre: `t` live, not a helper of `c`, edge
    /// checked. Post: `t` is the last helper; queued if `c` has waiters.
    pub(crate) fn attach_helper(&mut self, c: CondId, t: TaskId) {
        let cs = &mut self.conds[c.0 as usize];
        cs.helpers.push(t);
        let top = cs.queue.top();
        let ts = &mut self.tasks[t.0 as usize];
        ts.helps.push(c);
        if let Some(w) = top {
            ts.pi_waiters.push(Obj::Cond(c));
            self.enqueue_unless_below(t, w.eff.urgency, false);
        }
    }

    /// Remove-edge `c → t` (helper). Pre: `t` is a helper of `c`. Post: it is
    /// not; queued if it was inheriting through `c`.
    pub(crate) fn detach_helper(&mut self, c: CondId, t: TaskId) {
        let cs = &mut self.conds[c.0 as usize];
        if let Some(i) = cs.helpers.iter().position(|h| *h == t) {
            cs.helpers.remove(i);
        }
        let ts = &mut self.tasks[t.0 as usize];
        if let Some(i) = ts.helps.iter().position(|x| *x == c) {
            ts.helps.remove(i);
        }
        let obj = Obj::Cond(c);
        if let Some(i) = ts.pi_waiters.iter().position(|x| *x == obj) {
            ts.pi_waiters.swap_remove(i);
            match self.conds[c.0 as usize].queue.top() {
                Some(w) => self.enqueue_unless_below(t, w.eff.urgency, false),
                None => self.enqueue(t),
            }
        }
    }

    /// Recomputes `t`'s ceiling floor from the mutexes it owns.
    fn recompute_floor(&mut self, t: TaskId) {
        let mut floor: Option<Urgency> = None;
        for &m in &self.tasks[t.0 as usize].owned {
            if let Protocol::Ceiling(c) = self.mutexes[m.0 as usize].protocol {
                floor = Some(floor.map_or(c, |f| f.max(c)));
            }
        }
        self.tasks[t.0 as usize].floor = floor;
    }

    /// `o`'s top contribution changed (`had`/`has`: whether it had / has
    /// one; with `level`, before and after it was at most `level`, and it
    /// loses every tie if `loses_ties`). Keeps the targets' pi_waiters in
    /// step and queues the targets it can affect (all of them without
    /// `level`, else see [`Engine::enqueue_unless_below`]). Nothing to do
    /// for objects that do not donate.
    #[inline]
    pub(crate) fn top_changed(
        &mut self,
        o: Obj,
        had: bool,
        has: bool,
        level: Option<Urgency>,
        loses_ties: bool,
    ) {
        if !self.donates(o) {
            return;
        }
        // The targets, as `target(o, i)` lists them.
        match o {
            Obj::Mutex(m) => {
                if let Some(u) = self.mutexes[m.0 as usize].owner {
                    self.target_input_changed(u, o, had, has, level, loses_ties);
                }
            }
            Obj::Cond(c) => {
                let n = self.conds[c.0 as usize].helpers.len();
                for i in 0..n {
                    let u = self.conds[c.0 as usize].helpers[i];
                    self.target_input_changed(u, o, had, has, level, loses_ties);
                }
            }
        }
    }

    /// [`Engine::top_changed`] for one target `u` of `o`.
    #[inline(always)]
    fn target_input_changed(
        &mut self,
        u: TaskId,
        o: Obj,
        had: bool,
        has: bool,
        level: Option<Urgency>,
        loses_ties: bool,
    ) {
        let pw = &mut self.tasks[u.0 as usize].pi_waiters;
        match (had, has) {
            (false, true) => pw.push(o),
            (true, false) => {
                if let Some(j) = pw.iter().position(|x| *x == o) {
                    pw.swap_remove(j);
                }
            }
            _ => {}
        }
        match level {
            Some(level) => self.enqueue_unless_below(u, level, loses_ties),
            None => self.enqueue(u),
        }
    }

    // ----- the chain walk -----

    /// `eff(t)` from its inputs: base, ceiling floor, and the top
    /// contribution of each object in its pi_waiters. Ties: own value first,
    /// then the earliest-enqueued top waiter.
    #[inline]
    pub(crate) fn compute_eff(&self, t: TaskId) -> Effective {
        let ts = &self.tasks[t.0 as usize];
        let mut best = Effective {
            urgency: ts.base,
            donor: t,
        };
        if let Some(f) = ts.floor {
            if f > best.urgency {
                best.urgency = f;
            }
        }
        // `None`: the best so far is the task's own value.
        let mut best_seq: Option<u64> = None;
        for &o in &ts.pi_waiters {
            let Some(w) = self.queue(o).top() else {
                continue;
            };
            let better = w.eff.urgency > best.urgency
                || (w.eff.urgency == best.urgency && best_seq.is_some_and(|s| w.seq < s));
            if better {
                best = w.eff;
                best_seq = Some(w.seq);
            }
        }
        best
    }

    /// The chain walk (rtmutex's `rt_mutex_adjust_prio_chain`, breadth-first
    /// over a DAG). For each task taken off the worklist:
    ///
    /// 1. recompute its effective value from its inputs;
    /// 2. stop here if unchanged;
    /// 3. store it and record the change (first old value, latest new one);
    /// 4. if the task is blocked, re-sort it among its object's waiters (its
    ///    waiter entry carries the new value) and take the object's new top
    ///    contribution;
    /// 5. stop here if the top contribution is unchanged;
    /// 6. queue every target of the object (the object had and still has
    ///    waiters, so their pi_waiters stay as they are).
    ///
    /// A task reached twice through a diamond (a condvar with several
    /// helpers) is recomputed each time from its current inputs, so it ends
    /// with the right value, and is recorded once. Terminates because the
    /// wait-for graph is acyclic; bounded by the chain bound.
    pub(crate) fn walk(&mut self, changes: &mut Changes) {
        while let Some(t) = self.scratch.worklist.pop_front() {
            self.scratch.queued[t.0 as usize] = false;
            // Step 1.
            let new = self.compute_eff(t);
            let ts = &mut self.tasks[t.0 as usize];
            let old = ts.eff;
            // Step 2.
            if new == old {
                continue;
            }
            // Step 3.
            ts.eff = new;
            let seen = &mut self.scratch.recorded[t.0 as usize];
            if *seen {
                // Reached again through a diamond: keep the first old value.
                record(changes, t, old, new);
                self.scratch.revisited = true;
            } else {
                *seen = true;
                changes.push(Change { task: t, old, new });
            }
            // Step 4.
            let Some(o) = ts.blocked else {
                continue;
            };
            let q = self.queue_mut(o);
            let was_top = q.waiters.first().is_some_and(|w| w.task == t);
            q.requeue(t, new);
            let is_top = q.waiters.first().is_some_and(|w| w.task == t);
            // Step 5. The top entry changed iff `t`'s entry (whose value
            // just changed) was or is the first: otherwise the same other
            // waiter stays first, unchanged.
            if !(was_top || is_top) {
                continue;
            }
            // Step 6. (No test against the targets' values here: along a
            // chain that is being boosted it never spares a target, and it
            // would cost a comparison per link.)
            self.top_changed(o, true, true, None, false);
        }
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
        self.walk(out);
        for c in out.iter() {
            self.scratch.recorded[c.task.0 as usize] = false;
        }
        if self.scratch.revisited {
            out.retain(|c| c.old != c.new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eff(p: u8, d: u32) -> Effective {
        Effective {
            urgency: Urgency::fixed(p),
            donor: TaskId(d),
        }
    }

    #[test]
    fn record_keeps_the_first_old_and_the_last_new() {
        let mut ch = Changes::new();
        assert!(!record(&mut ch, TaskId(1), eff(10, 1), eff(50, 2)));
        assert!(!record(&mut ch, TaskId(3), eff(5, 3), eff(50, 2)));
        assert!(record(&mut ch, TaskId(1), eff(50, 2), eff(40, 4)));
        assert_eq!(
            ch.as_slice(),
            &[
                Change {
                    task: TaskId(1),
                    old: eff(10, 1),
                    new: eff(40, 4)
                },
                Change {
                    task: TaskId(3),
                    old: eff(5, 3),
                    new: eff(50, 2)
                },
            ]
        );
    }

    #[test]
    fn epoch_wrap_invalidates_every_memo_entry() {
        let mut s = Scratch::default();
        s.add_task();
        s.add_mutex();
        s.add_cond();
        s.epoch = u32::MAX - 1;
        let e = s.next_epoch();
        s.memo_task[0] = (e, 7);
        s.memo_cond[0] = (e, 3);
        assert_eq!(e, u32::MAX);
        let e2 = s.next_epoch();
        assert_eq!(e2, 1);
        assert_eq!(s.memo_task[0].0, 0);
        assert_eq!(s.memo_cond[0].0, 0);
    }
}
