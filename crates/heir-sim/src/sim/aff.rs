//! Affinity inheritance under M-BWI (the M-BWI paper's §4), and migrations.
//!
//! # Where a lent reservation runs
//!
//! A reservation (a (budget, deadline) pair) is admitted on its own task's CPUs.
//! With `global.bwi_affinity` (the default) each reservation an owner holds is
//! scheduled on *its task's* CPUs: the owner may run on CPU `c` on the
//! earliest-deadline reservation it holds whose task may run on `c` (its own
//! reservation on its own CPUs), consuming that reservation's budget, and it runs on
//! one CPU at a time. So an owner never brings a donor's bandwidth onto a
//! CPU where it was not admitted (the M-BWI paper's Fig. 3), and never loses its own
//! CPUs by taking the donor's instead (the paragraph after Fig. 3): it is a
//! candidate on every CPU one of its reservations allows, at that reservation's
//! deadline.
//!
//! The machinery: an owner holding a lent reservation whose task's affinity
//! differs from its own is *spread*. A ready spread thread waits in its own
//! list (`spread`), not in the run queues; a CPU choosing a thread looks at
//! each of them at its rank on that CPU ([`Simulator::rank_on`]), and the
//! balancing pass places them, and moves a running one to another CPU
//! where a more urgent reservation of its may run now. Its rank in the list is
//! its best over the CPUs; running, its rank is that on its CPU; a running
//! owner left with no reservation allowed on its CPU leaves it (parked, then
//! queued where it may run).
//!
//! With `bwi_affinity: false` an owner runs every reservation it holds within
//! its own affinity (the first failure the M-BWI paper's §4 describes).
//!
//! # Migrations
//!
//! A thread *migrates* when it runs (for a positive time) on a CPU other
//! than the one it last ran on; counted when the slice closes, the same
//! rule by which the trace reports `Exec` slices.

use super::*;

impl<'s, 'o> Simulator<'s, 'o> {
    /// Affinity inheritance is in force: the scenario lends reservations,
    /// `global.bwi_affinity` is on, and threads do not all have the same
    /// affinity (else every reservation may run wherever its owner may, and
    /// the usual rule is the same, at less cost).
    #[inline]
    pub(super) fn aff_on(&self) -> bool {
        self.bwi_affinity && self.has_bwi && self.mixed_homes
    }

    /// After `t`'s affinity changed: whether threads now differ in
    /// affinity (once they did, affinity inheritance stays in force).
    pub(super) fn note_home(&mut self, t: u32) {
        if !self.mixed_homes {
            let home = &self.threads[t as usize].home;
            self.mixed_homes = self.threads.iter().any(|x| x.home != *home);
        }
    }

    /// With affinity inheritance, the reservation a running thread consumes
    /// depends on its CPU: `Some(pair)` for such a thread, `None` when the
    /// usual rule applies.
    pub(super) fn aff_pair(&self, t: u32) -> Option<Option<(u64, u32)>> {
        let th = &self.threads[t as usize];
        (self.aff_on() && th.status == Status::Running).then(|| self.dl_pair_on(t, th.cpu))
    }

    /// With affinity inheritance: the rank of a running thread (on its
    /// CPU) or of a ready spread thread (its best over the CPUs); `None`
    /// when the usual rule applies.
    pub(super) fn aff_rank(&self, t: u32) -> Option<Option<Rank>> {
        if !self.aff_on() {
            return None;
        }
        let th = &self.threads[t as usize];
        if th.status == Status::Running {
            return Some(self.rank_on(t, th.cpu));
        }
        if !self.spread(t) {
            return None;
        }
        Some(
            self.candidate_cpus(t)
                .into_iter()
                .filter_map(|c| self.rank_on(t, c))
                .max(),
        )
    }

    /// The CPUs where `t` may run on some reservation, increasing: those `t` or
    /// a task lending to it may use (elsewhere [`Simulator::rank_on`] is
    /// `None`), so that the cost follows the lenders' affinities, not the
    /// number of CPUs.
    fn candidate_cpus(&self, t: u32) -> Vec<u32> {
        let mut lenders = Vec::new();
        self.lenders(t, &mut lenders);
        let mut out = Vec::new();
        for w in std::iter::once(t).chain(lenders) {
            match &self.threads[w as usize].home {
                Home::Cpu(c) => out.push(*c),
                Home::Global(set) => out.extend_from_slice(&set.list),
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The earliest-deadline reservation `t` may run on on CPU `c`: its own
    /// entity if `t` may run on `c`, a lent one if its task may; each
    /// with budget, not spinning, not consumed by another thread.
    pub(super) fn dl_pair_on(&self, t: u32, c: u32) -> Option<(u64, u32)> {
        self.consumer_where(t, |s| self.allowed(s, c))
    }

    /// Where `t` would stand on CPU `c`: at the deadline of the reservation it
    /// may run on there, else (on its own CPUs) at its rank without a
    /// reservation; `None` if it may not run on `c`.
    pub(super) fn rank_on(&self, t: u32, c: u32) -> Option<Rank> {
        if let Some((d, _)) = self.dl_pair_on(t, c) {
            return Some(Rank::deadline(d));
        }
        if !self.allowed(t, c) {
            return None;
        }
        self.rank_without_reservation(t)
    }

    /// `t` holds a lent reservation whose task's affinity differs from its own.
    pub(super) fn spread(&self, t: u32) -> bool {
        if !self.aff_on() {
            return false;
        }
        let mut lenders = Vec::new();
        self.lenders(t, &mut lenders);
        let home = &self.threads[t as usize].home;
        lenders
            .iter()
            .any(|&w| self.threads[w as usize].home != *home)
    }

    /// Queues a ready spread thread in the spread list.
    pub(super) fn spread_push(&mut self, t: u32, stamp: i64) {
        if let Some(r) = self.rank_for(t) {
            self.threads[t as usize].rank = r;
        }
        let th = &mut self.threads[t as usize];
        th.stamp = stamp;
        th.queued = true;
        th.dl.in_spread = true;
        self.spread.push(t);
    }

    /// Takes `t` out of the spread list; false if it was not there.
    pub(super) fn spread_remove(&mut self, t: u32) -> bool {
        let th = &mut self.threads[t as usize];
        if !th.dl.in_spread {
            return false;
        }
        th.dl.in_spread = false;
        th.queued = false;
        self.spread.retain(|&x| x != t);
        true
    }

    /// The best spread thread CPU `c` may run, if better than `best`
    /// (rank, then FIFO stamp).
    pub(super) fn spread_best(
        &self,
        c: u32,
        mut best: Option<(Rank, i64, u32)>,
    ) -> Option<(Rank, i64, u32)> {
        for &t in &self.spread {
            if let Some(r) = self.rank_on(t, c) {
                best = self.better(best, r, t);
            }
        }
        best
    }

    /// After the ranks were refreshed: ready threads that became spread,
    /// or stopped being, move between the spread list and the run queues;
    /// a parked thread that may run somewhere now is queued.
    pub(super) fn aff_requeue(&mut self) {
        if !self.aff_on() {
            return;
        }
        for t in 0..self.threads.len() as u32 {
            let th = &self.threads[t as usize];
            if th.status != Status::Ready {
                continue;
            }
            if th.dl.parked {
                self.rerank(t);
                continue;
            }
            if th.queued && th.dl.in_spread != self.spread(t) {
                self.dequeue(t);
                if let Some(r) = self.rank_for(t) {
                    self.threads[t as usize].rank = r;
                }
                self.enqueue(t, false);
                self.wake_check(t);
            }
        }
    }

    /// The balancing pass for spread threads: each ready one, most urgent
    /// first, is placed on the CPU where its rank is best among those idle
    /// or running a less urgent thread (then idle first, then the least
    /// urgent, then the lowest index); a running one moves to such a CPU if
    /// its rank there is better than on its own. True if a CPU was marked.
    pub(super) fn balance_spread(&mut self) -> bool {
        if !self.aff_on() {
            return false;
        }
        self.clear_claims();
        let mut any = false;
        let mut cands: Vec<u32> = self.spread.clone();
        cands.sort_by(|&a, &b| {
            let (ta, tb) = (&self.threads[a as usize], &self.threads[b as usize]);
            tb.rank.cmp(&ta.rank).then(ta.stamp.cmp(&tb.stamp))
        });
        for t in cands {
            if let Some(c) = self.spread_target(t, None) {
                self.claim(c);
                self.mark_dirty(c);
                any = true;
            }
        }
        // The busy CPUs, increasing: those of the running threads (idle
        // CPUs have nothing to move).
        let mut busy: Vec<(u32, u32)> = (0..self.threads.len() as u32)
            .map(|t| (self.threads[t as usize].cpu, t))
            .filter(|&(c, t)| {
                self.cpus
                    .get(c as usize)
                    .is_some_and(|x| x.current == Some(t))
            })
            .collect();
        busy.sort_unstable();
        for (c0, t) in busy {
            if self.cpus[c0 as usize].current != Some(t) {
                continue;
            }
            if self.threads[t as usize].act == Act::Spin || !self.spread(t) {
                continue;
            }
            let here = self.threads[t as usize].rank;
            if let Some(c) = self.spread_target(t, Some((c0, here))) {
                // The target first: it takes `t` before `c0` could again.
                self.claim(c);
                self.mark_dirty(c);
                self.preempt(t, true);
                any = true;
            }
        }
        any
    }

    /// The CPU to place `t` on (see [`Simulator::balance_spread`]); for a
    /// running thread, `from` = (its CPU, its rank there): only a CPU
    /// where it ranks strictly better.
    fn spread_target(&self, t: u32, from: Option<(u32, Rank)>) -> Option<u32> {
        // (rank there, idle, the current's rank reversed, CPU)
        let mut best: Option<(Rank, bool, Option<Rank>, u32)> = None;
        for c in self.candidate_cpus(t) {
            if self.claimed[c as usize] || from.is_some_and(|(c0, _)| c0 == c) {
                continue;
            }
            let Some(r) = self.rank_on(t, c) else {
                continue;
            };
            if from.is_some_and(|(_, here)| r <= here) {
                continue;
            }
            let cur = self.cpus[c as usize]
                .current
                .map(|x| self.threads[x as usize].rank);
            if cur.is_some_and(|cr| cr >= r) {
                continue;
            }
            let better = match best {
                None => true,
                Some((br, _, _, _)) if r != br => r > br,
                Some((_, bidle, _, _)) if cur.is_none() != bidle => cur.is_none(),
                Some((_, _, bcur, _)) => matches!((cur, bcur), (Some(a), Some(b)) if a < b),
            };
            if better {
                best = Some((r, cur.is_none(), cur, c));
            }
        }
        best.map(|b| b.3)
    }

    /// A slice of `t` on CPU `c` that lasted a positive time closed: a
    /// migration if `t` last ran on another CPU.
    pub(super) fn ran_on(&mut self, t: u32, c: u32) {
        let cold = &mut self.cold[t as usize];
        if cold.last_cpu.is_some_and(|l| l != c) {
            cold.migrations += 1;
        }
        cold.last_cpu = Some(c);
    }
}
