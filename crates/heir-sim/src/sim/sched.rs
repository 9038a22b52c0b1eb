//! Scheduling: run queues, dispatch and preemption, time slices, and the
//! engine's changes applied to threads.

use super::*;

impl<'s, 'o> Simulator<'s, 'o> {
    #[inline]
    pub(super) fn mark_dirty(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if !cpu.dirty {
            cpu.dirty = true;
            self.dirty.push_back(c);
        }
    }

    pub(super) fn allowed(&self, t: u32, c: u32) -> bool {
        match &self.threads[t as usize].home {
            Home::Cpu(x) => *x == c,
            Home::Global(set) => set.contains(c),
        }
    }

    /// Puts a ready thread in its run queue, at the head (preempted, or
    /// lowered by the engine) or the tail (woken, raised, yielded).
    pub(super) fn enqueue(&mut self, t: u32, head: bool) {
        let stamp = if head {
            self.stamp_head -= 1;
            self.stamp_head
        } else {
            self.stamp_tail += 1;
            self.stamp_tail
        };
        // Spread threads exist only with affinity inheritance on.
        if self.aff_on() && self.spread(t) {
            self.spread_push(t, stamp);
            return;
        }
        let th = &mut self.threads[t as usize];
        th.stamp = stamp;
        th.queued = true;
        match th.home {
            Home::Cpu(c) => self.local[c as usize].push(th.rank, t, head),
            Home::Global(_) => self.global.push(th.rank, t, head),
        }
    }

    pub(super) fn dequeue(&mut self, t: u32) {
        if self.threads[t as usize].dl.in_spread && self.spread_remove(t) {
            return;
        }
        let th = &mut self.threads[t as usize];
        if !th.queued {
            return;
        }
        th.queued = false;
        match th.home {
            Home::Cpu(c) => self.local[c as usize].remove(th.rank, t),
            Home::Global(_) => self.global.remove(th.rank, t),
        };
    }

    /// After `t` became ready: its CPU must reschedule if idle or running a
    /// less urgent thread (global and spread threads are placed by the
    /// balancing passes).
    #[inline]
    pub(super) fn wake_check(&mut self, t: u32) {
        let th = &self.threads[t as usize];
        if th.dl.in_spread {
            return;
        }
        if let Home::Cpu(c) = th.home {
            let preempt = match self.cpus[c as usize].current {
                None => true,
                Some(cur) => self.threads[cur as usize].rank < th.rank,
            };
            if preempt {
                self.mark_dirty(c);
            }
        }
    }

    /// A blocked or sleeping thread becomes ready (tail of its level); a
    /// deadline thread's reservation follows the CBS wake-up rule first. A
    /// thread spinning for the mutex it is handed goes on spinning's CPU.
    pub(super) fn wake(&mut self, t: u32) -> R<()> {
        if self.stop_spin_acquired(t) {
            return Ok(());
        }
        self.make_ready(t)?;
        self.queue_or_park(t, false);
        Ok(())
    }

    /// `t` becomes ready to step on (its pass closed if it ended; a
    /// deadline thread's reservation through the CBS wake-up rule); its caller
    /// queues or parks it.
    pub(super) fn make_ready(&mut self, t: u32) -> R<()> {
        self.make_ready_as(t, true)
    }

    /// [`Simulator::make_ready`], through the CBS wake-up rule only when
    /// `cbs` (M-BWI's waiters never suspend: `Simulator::wake_handed`).
    fn make_ready_as(&mut self, t: u32, cbs: bool) -> R<()> {
        let th = &mut self.threads[t as usize];
        th.status = Status::Ready;
        th.act = Act::Step;
        self.maybe_close_pass(t);
        if self.has_dl && cbs {
            self.dl_wakeup(t)?;
        }
        Ok(())
    }

    /// A waiter handed a `bwi` mutex goes on, as [`Simulator::wake`] but
    /// without the CBS wake-up rule: under M-BWI a deadline waiter never
    /// leaves its server — the server stays in the EDF competition at its
    /// own deadline and runs the owner or spins (Parri, Lelli, Marinoni,
    /// Lipari; `sim::dl`) — so there is no wake-up whose rule could renew
    /// its deadline or cut its budget (`D < P`): it goes on with the budget
    /// and deadline it has.
    pub(super) fn wake_handed(&mut self, t: u32) -> R<()> {
        if self.stop_spin_acquired(t) {
            return Ok(());
        }
        self.make_ready_as(t, false)?;
        self.queue_or_park(t, false);
        Ok(())
    }

    /// `best`, or `t` at rank `r` if it comes first: more urgent, or as
    /// urgent and queued earlier (its stamp).
    pub(super) fn better(
        &self,
        best: Option<(Rank, i64, u32)>,
        r: Rank,
        t: u32,
    ) -> Option<(Rank, i64, u32)> {
        let stamp = self.threads[t as usize].stamp;
        match best {
            Some((br, bs, _)) if !(r > br || (r == br && stamp < bs)) => best,
            _ => Some((r, stamp, t)),
        }
    }

    /// The most urgent ready thread CPU `c` may run: (rank, stamp, thread).
    pub(super) fn peek_best(&self, c: u32) -> Option<(Rank, i64, u32)> {
        let mut best = self.local[c as usize]
            .top()
            .map(|(r, t)| (r, self.threads[t as usize].stamp, t));
        if !self.global.is_empty() {
            for l in self.global.levels_desc() {
                if best.is_some_and(|(br, _, _)| l < br.level) {
                    break;
                }
                let found = self.global.level(l).find(|&(_, t)| self.allowed(t, c));
                if let Some((r, t)) = found {
                    best = self.better(best, r, t);
                    break;
                }
            }
        }
        if self.spread.is_empty() {
            best
        } else {
            self.spread_best(c, best)
        }
    }

    /// Runs scheduling decisions until no CPU is dirty and no global thread
    /// can be placed.
    pub(super) fn schedule(&mut self) -> R<()> {
        loop {
            while let Some(c) = self.dirty.pop_front() {
                if self.dl_dirty {
                    // A thread left a CPU: the reservations it consumed or lent
                    // are free for others.
                    self.dl_refresh();
                }
                self.cpus[c as usize].dirty = false;
                self.resched_cpu(c)?;
            }
            if self.dl_dirty {
                // The last decisions took or freed reservations lent to others.
                self.dl_refresh();
                if !self.dirty.is_empty() {
                    continue;
                }
            }
            let placed = !self.global.is_empty() && self.balance();
            if !((self.aff_on() && self.balance_spread()) || placed) {
                break;
            }
        }
        Ok(())
    }

    /// Places global ready threads, most urgent first, on an allowed CPU that
    /// is idle (lowest index) or else runs the least urgent thread (lowest
    /// index among equals), if they are more urgent; marks those CPUs dirty.
    ///
    /// Candidates are visited lazily, and the pass stops once those that
    /// found none cover every CPU a thread may use (at once for one
    /// allowed on every CPU): every later one is no more urgent, so it
    /// would find none either (the pass costs the threads it places, not
    /// every ready thread). Each walks only its allowed CPUs, up to the
    /// first idle one: CPUs no thread may use cost nothing.
    pub(super) fn balance(&mut self) -> bool {
        let mut levels = std::mem::take(&mut self.scratch);
        levels.clear();
        levels.extend(self.global.levels_desc().map(u32::from));
        self.clear_claims();
        let mut any = false;
        let mut cursor = (0, 0);
        while let Some(t) = self.global.next_of(&levels, &mut cursor) {
            let th = &self.threads[t as usize];
            let lt = th.rank;
            let (allowed, all) = match &th.home {
                Home::Global(set) => (set.list.as_slice(), set.all),
                Home::Cpu(c) => (std::slice::from_ref(c), false),
            };
            let mut target: Option<(u32, Option<Rank>)> = None;
            let mut visits = 0;
            // Its allowed CPUs in increasing order: the walk ends at the
            // first idle one, after only busy or claimed ones.
            for &c in allowed {
                visits += 1;
                if self.claimed[c as usize] {
                    continue;
                }
                match self.cpus[c as usize].current {
                    None => {
                        target = Some((c, None));
                        break;
                    }
                    Some(r) => {
                        let rl = self.threads[r as usize].rank;
                        let better = match target {
                            None => true,
                            Some((_, Some(tl))) => rl < tl,
                            Some((_, None)) => false,
                        };
                        if rl < lt && better {
                            target = Some((c, Some(rl)));
                        }
                    }
                }
            }
            self.cpu_visits += visits;
            if let Some((c, _)) = target {
                self.claim(c);
                self.mark_dirty(c);
                any = true;
            } else if all {
                break;
            } else {
                // Every CPU it may use is claimed or runs a thread at
                // least as urgent: so for every later candidate. Once
                // such CPUs cover every CPU a global thread may use, no
                // later one finds any (the cost follows the CPUs the
                // threads may use, not the machine's).
                for &c in allowed {
                    if let Some(b) = self.covered.get_mut(c as usize) {
                        if !*b {
                            *b = true;
                            self.covered_list.push(c);
                        }
                    }
                }
                if self.covered_list.len() >= self.reach_len {
                    break;
                }
            }
        }
        self.scratch = levels;
        any
    }

    /// CPU `c` is given a thread by the balancing pass under way.
    pub(super) fn claim(&mut self, c: u32) {
        if let Some(b) = self.claimed.get_mut(c as usize) {
            if !*b {
                *b = true;
                self.claimed_list.push(c);
            }
        }
    }

    /// A balancing pass starts: no CPU is claimed (the cost is the CPUs
    /// the last pass claimed, not the machine's).
    pub(super) fn clear_claims(&mut self) {
        for c in self.claimed_list.drain(..) {
            if let Some(b) = self.claimed.get_mut(c as usize) {
                *b = false;
            }
        }
        for c in self.covered_list.drain(..) {
            if let Some(b) = self.covered.get_mut(c as usize) {
                *b = false;
            }
        }
    }

    pub(super) fn resched_cpu(&mut self, c: u32) -> R<()> {
        let best = self.peek_best(c);
        match self.cpus[c as usize].current {
            Some(cur) => {
                let lc = self.threads[cur as usize].rank;
                match best {
                    Some((lb, _, b)) if lb > lc => {
                        self.preempt(cur, true);
                        self.dequeue(b);
                        self.dispatch(c, b)
                    }
                    _ => {
                        if self.threads[cur as usize].act == Act::Step {
                            self.step(cur)
                        } else {
                            Ok(())
                        }
                    }
                }
            }
            None => match best {
                Some((_, _, b)) => {
                    self.dequeue(b);
                    self.dispatch(c, b)
                }
                None => Ok(()),
            },
        }
    }

    pub(super) fn dispatch(&mut self, c: u32, t: u32) -> R<()> {
        {
            let th = &mut self.threads[t as usize];
            th.status = Status::Running;
            th.cpu = c;
        }
        self.cpus[c as usize].current = Some(t);
        self.events += 1;
        if self.aff_on() {
            // Its rank on this CPU (a spread thread's differs by CPU).
            if let Some(r) = self.rank_for(t) {
                self.threads[t as usize].rank = r;
            }
        }
        if self.has_dl {
            self.take_reservation(t);
        }
        self.open_slice(c, t);
        self.arm_slice(t);
        let now = self.now;
        let th = &mut self.threads[t as usize];
        match th.act {
            Act::Run { left } if left > 0 => {
                th.run_start = now;
                th.run_gen = th.run_gen.wrapping_add(1);
                let gen = th.run_gen;
                self.push_run_done(now.saturating_add(left), t, gen);
                Ok(())
            }
            Act::Runtime { end } if end > now => Ok(()),
            Act::Spin => {
                self.spin_dispatched(t);
                Ok(())
            }
            _ => {
                th.act = Act::Step;
                self.step(t)
            }
        }
    }

    /// Takes the running thread `t` off its CPU (the CPU becomes dirty).
    pub(super) fn undispatch(&mut self, t: u32) {
        let c = self.threads[t as usize].cpu;
        if self.has_dl {
            self.release_reservation(t);
        }
        self.close_slice(c);
        self.disarm_slice(t);
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if let Act::Run { left } = th.act {
            let ran = now.saturating_sub(th.run_start);
            th.act = Act::Run {
                left: left.saturating_sub(ran),
            };
            th.run_gen = th.run_gen.wrapping_add(1);
        }
        self.cpus[c as usize].current = None;
        self.mark_dirty(c);
        self.dl_dirty = self.has_dl;
    }

    /// The running thread `t` goes back to its run queue.
    pub(super) fn preempt(&mut self, t: u32, head: bool) {
        self.undispatch(t);
        self.threads[t as usize].status = Status::Ready;
        self.maybe_close_pass(t);
        self.enqueue(t, head);
    }

    /// `t` stops competing for a CPU because it blocks or sleeps: taken off
    /// its CPU — or, when an engine change applied during its operation has
    /// already preempted it (out of its run queue) or parked it (a deadline
    /// reservation exhausted at that instant), from there.
    fn leave(&mut self, t: u32) {
        let th = &self.threads[t as usize];
        match th.status {
            Status::Running => self.undispatch(t),
            Status::Ready if th.queued => self.dequeue(t),
            _ => {}
        }
        self.threads[t as usize].dl.parked = false;
    }

    pub(super) fn block(&mut self, t: u32) {
        self.leave(t);
        let th = &mut self.threads[t as usize];
        th.status = Status::Blocked;
        th.act = Act::Step;
    }

    pub(super) fn sleep_until(&mut self, t: u32, when: u64) {
        self.leave(t);
        let th = &mut self.threads[t as usize];
        th.status = Status::Sleeping;
        th.act = Act::Step;
        th.wall_gen = th.wall_gen.wrapping_add(1);
        let gen = th.wall_gen;
        self.evq.push(when, EvKind::Wall, t, gen);
    }

    #[inline]
    pub(super) fn open_slice(&mut self, c: u32, t: u32) {
        // What the slice shows is read only by the trace.
        let (urgency, donor) = if self.trace {
            self.shown(t)
        } else {
            (self.threads[t as usize].eff.urgency, None)
        };
        self.cpus[c as usize].slice = Some(OpenSlice {
            thread: t,
            start: self.now,
            urgency,
            donor,
        });
    }

    #[inline]
    pub(super) fn close_slice(&mut self, c: u32) {
        if let Some(s) = self.cpus[c as usize].slice.take() {
            if self.now > s.start {
                self.ran_on(s.thread, c);
                let end_ns = self.now;
                self.emit(TraceEvent::Exec {
                    cpu: c,
                    thread: s.thread as usize,
                    start_ns: s.start,
                    end_ns,
                    urgency: s.urgency,
                    donor: s.donor,
                });
            }
        }
    }

    /// The time slice of `t` in its current class, if it has one:
    /// `SCHED_RR` at a fixed priority → 100 ms; any `SCHED_OTHER`-class
    /// urgency → 4 ms × weight(nice) / 1024 (SCHED_IDLE: weight 3).
    #[inline]
    pub(super) fn slice_len(&self, t: u32) -> Option<u64> {
        let th = &self.threads[t as usize];
        match th.eff.urgency {
            Urgency::Fixed { .. } if th.policy == Policy::Rr => Some(RR_SLICE_NS),
            Urgency::Other { nice } => {
                let weight = if th.policy == Policy::Idle && th.eff.donor() == th.eng {
                    IDLE_WEIGHT
                } else {
                    NICE_TO_WEIGHT[(i32::from(nice).clamp(-20, 19) + 20) as usize]
                };
                Some((OTHER_BASE_SLICE_NS * weight / 1024).max(1))
            }
            _ => None,
        }
    }

    pub(super) fn arm_slice(&mut self, t: u32) {
        let Some(len) = self.slice_len(t) else {
            return;
        };
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if th.slice_left == 0 || th.slice_left > len {
            th.slice_left = len;
        }
        th.slice_start = now;
        th.slice_armed = true;
        th.slice_gen = th.slice_gen.wrapping_add(1);
        let (when, gen) = (now.saturating_add(th.slice_left), th.slice_gen);
        self.evq.push(when, EvKind::Slice, t, gen);
    }

    #[inline]
    pub(super) fn disarm_slice(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if th.slice_armed {
            let used = now.saturating_sub(th.slice_start);
            th.slice_left = th.slice_left.saturating_sub(used);
            th.slice_armed = false;
            th.slice_gen = th.slice_gen.wrapping_add(1);
        }
    }

    /// A slice expired: round-robin to the tail if another thread of the same
    /// level may run on this CPU, else a new slice.
    pub(super) fn slice_expired(&mut self, t: u32, gen: u32) {
        let th = &mut self.threads[t as usize];
        if th.status != Status::Running || gen != th.slice_gen || !th.slice_armed {
            return;
        }
        th.slice_armed = false;
        th.slice_left = 0;
        let (c, l) = (th.cpu, th.rank.level);
        let contender = self.local[c as usize].has_level(l)
            || (self.global.has_level(l) && self.global.level(l).any(|(_, x)| self.allowed(x, c)));
        if contender {
            self.preempt(t, false);
        } else {
            self.arm_slice(t);
        }
    }

    /// Applies the engine's changes: trace a `Boost` each, re-queue ready
    /// threads (raised → tail of the new level, lowered → head, as Linux's
    /// `rt_mutex_setprio`), split the running thread's `Exec` slice, and ask
    /// for a scheduling decision where the change may preempt.
    #[inline]
    pub(super) fn apply_changes(&mut self, changes: &Changes) {
        for ch in changes.iter() {
            self.apply_change(ch);
        }
        // With deadline reservations an operation may move a lender without
        // changing anyone's urgency (a waiter woken whose deadline was not
        // the most urgent one lent): ranks are re-evaluated after each —
        // only where some object lends at all (not in plain EDF).
        self.dl_dirty |= self.dl_lends;
        if self.dl_dirty {
            self.dl_refresh();
        }
    }

    /// [`Simulator::apply_changes`] of the last `*_into` engine operation
    /// (`self.changes`).
    #[inline]
    pub(super) fn apply_buffered(&mut self) {
        for i in 0..self.changes.len() {
            let ch = self.changes[i];
            self.apply_change(&ch);
        }
        self.dl_dirty |= self.dl_lends;
        if self.dl_dirty {
            self.dl_refresh();
        }
    }

    pub(super) fn apply_change(&mut self, ch: &Change) {
        let Some(t) = self.thread_of(ch.task) else {
            return;
        };
        let donor = self.donor_thread(ch.task, &ch.new);
        let at_ns = self.now;
        self.emit(TraceEvent::Boost {
            at_ns,
            to: t as usize,
            donor,
            urgency: ch.new.urgency,
        });
        let old_slice = self.slice_len(t);
        let th = &mut self.threads[t as usize];
        let old_rank = th.rank;
        th.eff = ch.new;
        if self.has_dl {
            // Ranks follow reservations: re-evaluated once the operation's
            // changes are all applied ([`Simulator::dl_refresh`]).
            self.dl_dirty = true;
            return;
        }
        let new_rank = Rank::of(ch.new.urgency);
        let raised = ch.new.urgency > ch.old.urgency;
        if self.threads[t as usize].passive && self.passive_change(t, new_rank) {
            return;
        }
        let th = &mut self.threads[t as usize];
        match th.status {
            Status::Ready => {
                if new_rank != old_rank {
                    self.dequeue(t);
                    self.threads[t as usize].rank = new_rank;
                    self.enqueue(t, !raised);
                    if raised {
                        self.wake_check(t);
                    }
                }
            }
            Status::Running => {
                th.rank = new_rank;
                let (c, global) = (th.cpu, matches!(th.home, Home::Global(_)));
                self.close_slice(c);
                self.open_slice(c, t);
                if self.slice_len(t) != old_slice {
                    self.disarm_slice(t);
                    self.arm_slice(t);
                }
                if !raised || global {
                    self.mark_dirty(c);
                }
            }
            _ => th.rank = new_rank,
        }
    }
}

impl<'s, 'o> Simulator<'s, 'o> {
    /// A passive thread's urgency changed (fixed priorities): it stops
    /// running or leaves its run queue when nobody lends to it any more,
    /// and is queued again when someone does. True if handled.
    fn passive_change(&mut self, t: u32, new_rank: Rank) -> bool {
        let stalled = self.stalled(t);
        let th = &self.threads[t as usize];
        match th.status {
            Status::Ready if th.dl.parked => {
                let th = &mut self.threads[t as usize];
                th.rank = new_rank;
                if !stalled {
                    th.dl.parked = false;
                    self.enqueue(t, false);
                    self.wake_check(t);
                }
                true
            }
            Status::Ready if stalled => {
                self.dequeue(t);
                let th = &mut self.threads[t as usize];
                th.rank = new_rank;
                th.dl.parked = true;
                true
            }
            Status::Running if stalled => {
                self.undispatch(t);
                let th = &mut self.threads[t as usize];
                th.rank = new_rank;
                th.status = Status::Ready;
                th.dl.parked = true;
                true
            }
            _ => false,
        }
    }
}

/// Adds the CPUs a thread at `home` may use, if several, to `reach`;
/// returns how many were new.
pub(super) fn extend_reach(reach: &mut [bool], home: &Home) -> usize {
    let mut new = 0;
    if let Home::Global(set) = home {
        for &c in &set.list {
            if let Some(b) = reach.get_mut(c as usize) {
                new += usize::from(!*b);
                *b = true;
            }
        }
    }
    new
}

/// Where a thread with affinity `cpus` is queued on `n` CPUs (CPUs at or
/// above `n` ignored; none or an empty list: every CPU).
pub(super) fn home_for(n: usize, cpus: Option<&[u32]>) -> Home {
    if n <= 1 {
        return Home::Cpu(0);
    }
    let mut list: Vec<u32> = match cpus {
        Some(l) if !l.is_empty() => l.iter().copied().filter(|&c| (c as usize) < n).collect(),
        _ => (0..n as u32).collect(),
    };
    list.sort_unstable();
    list.dedup();
    let mut bits = vec![0u64; n.div_ceil(64)];
    for &c in &list {
        bits[(c / 64) as usize] |= 1 << (c % 64);
    }
    match list.as_slice() {
        [c] => Home::Cpu(*c),
        _ => Home::Global(CpuSet {
            all: list.len() == n,
            list,
            bits,
        }),
    }
}
