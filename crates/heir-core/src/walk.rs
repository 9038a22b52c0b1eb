//! Propagation: the graph deltas every operation reduces to, and the chain
//! walk that brings effective urgencies up to date after them.
//!
//! Deltas (Zircon owned_wait_queue style) mutate the wait-for graph and queue
//! the tasks whose inputs changed; they never compute an effective urgency.
//! [`Engine::walk`] then recomputes queued tasks and follows the chains only as
//! far as values change.

use std::collections::VecDeque;

use crate::packed::{Eff, Key, Src};
use crate::state::Waiter;
use crate::{Change, Changes, Effective, Engine, ObjId, TaskId, Urgency};

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
    /// Per task / object: (epoch stamp, memoised probe value).
    pub memo_task: Vec<(u32, u32)>,
    pub memo_obj: Vec<(u32, u32)>,
    /// Current probe epoch; a memo entry is valid iff its stamp equals it.
    pub epoch: u32,
    /// The current walk recorded some task twice.
    pub revisited: bool,
    /// The current walk's changes once they outgrow the caller's buffer
    /// (`spilled`; until then they go to the caller's buffer directly). A
    /// long list is then handed to the caller's [`crate::Changes`] as it is
    /// (this buffer taken over, none copied) and replaced by one of the
    /// same capacity: a walk down a chain of hundreds of tasks neither
    /// grows its result step by step nor copies it.
    pub changes: Vec<Change>,
    /// The current walk's changes are in `changes`, not the caller's buffer.
    pub spilled: bool,
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
    pub fn add_obj(&mut self) {
        self.memo_obj.push((0, 0));
    }
    /// Starts a new probe: invalidates every memo entry.
    pub fn next_epoch(&mut self) -> u32 {
        if self.epoch == u32::MAX {
            for e in self.memo_task.iter_mut().chain(self.memo_obj.iter_mut()) {
                e.0 = 0;
            }
            self.epoch = 0;
        }
        self.epoch += 1;
        self.epoch
    }
}

/// Records that `task`, already recorded, is now at `new` (its first `old`
/// is kept; it may now be back at that value: the caller then filters).
fn record_again(changes: &mut [Change], task: TaskId, new: Effective) {
    if let Some(c) = changes.iter_mut().find(|c| c.task == task) {
        c.new = new;
    }
}

/// Where a contribution ranks among equal urgencies in `eff`: the task's own
/// base first, then floors (the one applying longest first), then top
/// waiters (earliest enqueued first).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Base,
    Floor(u64),
    Waiter(u64),
}

impl Engine {
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
    /// an input neither sets the maximum nor names the source.
    ///
    /// Sound because a task that is not queued has an up-to-date `eff`
    /// (deltas queue every task whose inputs they change, and the walk
    /// recomputes what it dequeues); a queued task is recomputed anyway.
    #[inline(always)]
    pub(crate) fn enqueue_unless_below(&mut self, t: TaskId, level: Key, loses_ties: bool) {
        let unaffected = match level.cmp(&self.tasks[t.0 as usize].eff.key) {
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
    pub(crate) fn add_edge(&mut self, t: TaskId, o: ObjId) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.blocked_count += 1;
        let ts = &mut self.tasks[t.0 as usize];
        ts.blocked = Some(o);
        ts.seq = seq;
        let w = Waiter {
            key: ts.eff.key,
            seq,
            task: t,
        };
        let q = &mut self.objs[o.0 as usize].queue;
        let had = !q.is_empty();
        // The top contribution changes iff `w` goes first (it is a new
        // entry, so it differs from any previous top): it rises from the
        // old top (less urgent than `w`) to `w`, which has the newest
        // sequence and so loses every tie in its targets' `eff`.
        if q.insert(w) == 0 {
            self.top_changed(o, had, true, Some(w.key), true);
        }
    }

    /// Remove-edge `t → o` (wake, timeout, hand-off). Pre: `t` is blocked.
    /// Post: `t` is runnable; if `o`'s top contribution changed, its targets
    /// are queued.
    pub(crate) fn remove_edge(&mut self, t: TaskId) {
        let Some(o) = self.tasks[t.0 as usize].blocked.take() else {
            return;
        };
        self.blocked_count -= 1;
        let q = &mut self.objs[o.0 as usize].queue;
        // The top contribution changes iff the top waiter leaves (the next
        // entry, if any, is another task); it falls from the removed entry
        // to the next one (no more urgent).
        if let Some((0, w)) = q.remove_pos(t) {
            let has = !q.is_empty();
            self.top_changed(o, true, has, Some(w.key), false);
        }
    }

    /// Remove-edge for every waiter of `o` (broadcast); returns them in wake
    /// order.
    pub(crate) fn remove_all_edges(&mut self, o: ObjId) -> Vec<TaskId> {
        let drained = core::mem::take(&mut self.objs[o.0 as usize].queue.waiters);
        let woken: Vec<TaskId> = drained.iter().map(|w| w.task).collect();
        for &t in &woken {
            self.tasks[t.0 as usize].blocked = None;
        }
        self.blocked_count -= woken.len();
        if let Some(top) = drained.first() {
            self.top_changed(o, true, false, Some(top.key), false);
        }
        woken
    }

    /// Add-edge `o → t` (an owner, a helper, a server, a gang member). Pre:
    /// `t` live, not a target of `o`, below `o`'s target limit, edge
    /// checked. Post: `t` is `o`'s last target and, if `o` contributes,
    /// takes it as an input (queued if that can change it).
    pub(crate) fn attach_target(&mut self, o: ObjId, t: TaskId) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let os = &mut self.objs[o.0 as usize];
        os.targets.push(t);
        os.joined.push(seq);
        let level = if os.contributes() { os.level() } else { None };
        let ts = &mut self.tasks[t.0 as usize];
        ts.targeted.push(o);
        if let Some(level) = level {
            ts.inputs.push(o);
            self.enqueue_unless_below(t, level, false);
        }
    }

    /// Remove-edge `o → t`. Pre: `t` is a target of `o`. Post: it is not;
    /// it lost `o`'s contribution and is queued if that can change it.
    pub(crate) fn detach_target(&mut self, o: ObjId, t: TaskId) {
        self.objs[o.0 as usize].drop_target(t);
        let ts = &mut self.tasks[t.0 as usize];
        if let Some(i) = ts.targeted.iter().rposition(|x| *x == o) {
            // Usually the last one taken (nested locks unwind in order).
            if i + 1 == ts.targeted.len() {
                ts.targeted.pop();
            } else {
                ts.targeted.remove(i);
            }
        }
        if let Some(i) = ts.inputs.iter().position(|x| *x == o) {
            ts.inputs.swap_remove(i);
            match self.objs[o.0 as usize].level() {
                Some(level) => self.enqueue_unless_below(t, level, false),
                None => self.enqueue(t),
            }
        }
    }

    /// Base-changed for every target of `o`: its floor becomes `floor`.
    /// Post: targets take or drop `o` as an input as it now contributes or
    /// not, and are queued if the change can reach them.
    pub(crate) fn change_floor(&mut self, o: ObjId, floor: Option<Urgency>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let os = &mut self.objs[o.0 as usize];
        let before = os.level();
        let had = os.contributes();
        os.spec.floor = floor;
        os.floor_seq = seq;
        let has = os.contributes();
        let level = match (before, os.level()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for i in 0..self.objs[o.0 as usize].targets.len() {
            let u = self.objs[o.0 as usize].targets[i];
            // The floor's rank changed with its stamp: queue even on a tie.
            self.target_input_changed(u, o, had, has, level, false);
        }
    }

    /// `o`'s top waiter changed (`had`/`has`: whether it had / has
    /// waiters; with `level`, its contribution was and is at most `level`,
    /// losing every tie if `loses_ties`). Keeps the targets' inputs in step
    /// and queues the targets it can affect (all of them without `level`,
    /// else see [`Engine::enqueue_unless_below`]). Nothing to do for objects
    /// that do not donate.
    #[inline]
    pub(crate) fn top_changed(
        &mut self,
        o: ObjId,
        had: bool,
        has: bool,
        level: Option<Key>,
        loses_ties: bool,
    ) {
        let os = &self.objs[o.0 as usize];
        if !os.spec.donates {
            return;
        }
        let floor = os.spec.floor.is_some();
        for i in 0..os.targets.len() {
            let u = self.objs[o.0 as usize].targets[i];
            self.target_input_changed(u, o, floor || had, floor || has, level, loses_ties);
        }
    }

    /// [`Engine::top_changed`] / [`Engine::change_floor`] for one target `u`
    /// of `o` (`had`/`has`: whether `o` contributed / contributes).
    #[inline(always)]
    fn target_input_changed(
        &mut self,
        u: TaskId,
        o: ObjId,
        had: bool,
        has: bool,
        level: Option<Key>,
        loses_ties: bool,
    ) {
        let inputs = &mut self.tasks[u.0 as usize].inputs;
        match (had, has) {
            (false, true) => inputs.push(o),
            (true, false) => {
                if let Some(j) = inputs.iter().position(|x| *x == o) {
                    inputs.swap_remove(j);
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

    /// `eff(t)` from its inputs: the base, and each input object's floor and
    /// (when it donates) top waiter. Ties: the base first, then floors (the
    /// one applying to `t` longest), then top waiters (earliest enqueued).
    #[inline]
    pub(crate) fn compute_eff(&self, t: TaskId) -> Eff {
        let ts = &self.tasks[t.0 as usize];
        let mut best = Eff::own(t, ts.base);
        let mut rank = Rank::Base;
        for &o in &ts.inputs {
            let os = &self.objs[o.0 as usize];
            if let Some(f) = os.spec.floor {
                let r = Rank::Floor(os.floor_since(t));
                let f = Key::of(f);
                if f > best.key || (f == best.key && r < rank) {
                    best = Eff {
                        key: f,
                        src: Src::floor(o, t),
                    };
                    rank = r;
                }
            }
            if !os.spec.donates {
                continue;
            }
            let Some(w) = os.queue.top() else {
                continue;
            };
            let r = Rank::Waiter(w.seq);
            if w.key > best.key || (w.key == best.key && r < rank) {
                // The entry's key is the waiter's; its source is read from
                // the task (in a chain walk, the task just updated).
                best = self.tasks[w.task.0 as usize].eff;
                rank = r;
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
    ///    waiters, so their inputs stay as they are).
    ///
    /// A task reached twice through a diamond (a condvar with several
    /// helpers) is recomputed each time from its current inputs, so it ends
    /// with the right value, and is recorded once. Terminates because the
    /// wait-for graph is acyclic; bounded by the chain bound.
    ///
    /// The changes go to `out` while it has room (no allocation), then to
    /// `scratch.changes` (see [`Scratch::changes`]).
    pub(crate) fn walk(&mut self, out: &mut Changes) {
        while let Some(first) = self.scratch.worklist.pop_front() {
            self.scratch.queued[first.0 as usize] = false;
            let mut next = Some((first, None));
            while let Some((t, arriving)) = next {
                next = self.walk_step(t, arriving, out);
            }
        }
    }

    /// Step 3's record of a first change.
    #[inline(always)]
    fn record_first(&mut self, c: Change, out: &mut Changes) {
        if self.scratch.spilled {
            self.scratch.changes.push(c);
        } else if out.len() < out.capacity() {
            out.push(c);
        } else {
            self.scratch.changes.extend_from_slice(out);
            out.clear();
            self.scratch.spilled = true;
            self.scratch.changes.push(c);
        }
    }

    /// Steps 1–6 of [`Engine::walk`] for `t`. Returns the one task to
    /// take next instead of queueing it, when that keeps the breadth-first
    /// order: the object has one target and the worklist is empty (a plain
    /// chain, the common shape), so the target would be the next task
    /// dequeued anyway.
    ///
    /// With it comes, when known, the contribution `arriving` that the
    /// object now makes to that target (`t`'s new value: `t` is its top
    /// waiter and it has no floor). Step 1 then applies it as a delta
    /// (Zircon's owned wait queues do the same): a contribution strictly
    /// more urgent than the task's current value *is* its new value,
    /// whatever its other inputs and ranks (a boost); and when the object
    /// is the task's only input, the new value is that contribution or the
    /// base, the base winning a tie (a boost or a fall). Otherwise step 1
    /// recomputes from the inputs.
    #[inline(always)]
    fn walk_step(
        &mut self,
        t: TaskId,
        arriving: Option<Eff>,
        out: &mut Changes,
    ) -> Option<(TaskId, Option<Eff>)> {
        // Step 1.
        let ts = &self.tasks[t.0 as usize];
        let old = ts.eff;
        let new = match arriving {
            Some(a) if a.key > old.key => a,
            // The object is `t`'s only input: its contribution against the
            // base (which wins a tie).
            Some(a) if ts.inputs.len() == 1 => {
                let own = Eff::own(t, ts.base);
                if a.key > own.key {
                    a
                } else {
                    own
                }
            }
            _ => self.compute_eff(t),
        };
        let ts = &mut self.tasks[t.0 as usize];
        // Step 2.
        if new == old {
            return None;
        }
        // Step 3.
        ts.eff = new;
        let blocked = ts.blocked;
        if self.scratch.recorded[t.0 as usize] {
            // Reached again through a diamond: keep the first old value.
            let new = self.public(new);
            if self.scratch.spilled {
                record_again(&mut self.scratch.changes, t, new);
            } else {
                record_again(out, t, new);
            }
            self.scratch.revisited = true;
        } else {
            self.scratch.recorded[t.0 as usize] = true;
            let c = Change {
                task: t,
                old: self.public(old),
                new: self.public(new),
            };
            self.record_first(c, out);
        }
        // Step 4.
        let o = blocked?;
        let os = &mut self.objs[o.0 as usize];
        let (was_top, is_top) = os.queue.requeue(t, new.key);
        // Step 5. The top entry changed iff `t`'s entry (whose value just
        // changed) was or is the first: otherwise the same other waiter
        // stays first, unchanged.
        if !(was_top || is_top) || !os.spec.donates {
            return None;
        }
        // Step 6. (No test against the targets' values here: along a
        // chain that is being boosted it never spares a target, and it
        // would cost a comparison per link.) The object had and still has
        // waiters, so its targets' inputs stay as they are.
        if let [u] = os.targets[..] {
            if self.scratch.worklist.is_empty() {
                let exact = is_top && os.spec.floor.is_none();
                let arriving = exact.then_some(new);
                return Some((u, arriving));
            }
        }
        self.top_changed(o, true, true, None, false);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{Effective, Source};

    fn eff(p: u8, d: u32) -> Effective {
        Effective {
            urgency: Urgency::fixed(p),
            source: Source::Task(TaskId(d, 0)),
        }
    }

    #[test]
    fn record_again_keeps_the_first_old_and_the_last_new() {
        let first = |t, old: Effective, new: Effective| Change {
            task: TaskId(t, 0),
            old,
            new,
        };
        let mut ch = vec![
            first(1, eff(10, 1), eff(50, 2)),
            first(3, eff(5, 3), eff(50, 2)),
        ];
        record_again(&mut ch, TaskId(1, 0), eff(40, 4));
        assert_eq!(
            ch,
            vec![
                first(1, eff(10, 1), eff(40, 4)),
                first(3, eff(5, 3), eff(50, 2))
            ]
        );
    }

    #[test]
    fn epoch_wrap_invalidates_every_memo_entry() {
        let mut s = Scratch::default();
        s.add_task();
        s.add_obj();
        s.epoch = u32::MAX - 1;
        let e = s.next_epoch();
        s.memo_task[0] = (e, 7);
        s.memo_obj[0] = (e, 3);
        assert_eq!(e, u32::MAX);
        let e2 = s.next_epoch();
        assert_eq!(e2, 1);
        assert_eq!(s.memo_task[0].0, 0);
        assert_eq!(s.memo_obj[0].0, 0);
    }
}
