//! The level sweep: the same bounds as the per-task analysis of
//! [`Analyzer`](super::Analyzer), computed for a CPU's fixed-priority tasks
//! level by level (highest priority first) so that nothing is rescanned per
//! task.
//!
//! - **Blocking.** `Σ_L f_L` over the lower tasks `L` splits into what each
//!   `L` charges whoever τ_i is at priority `p` — its longest request to a
//!   server of priority `≥ p` and its longest section on an inheritance
//!   mutex of (transitive) ceiling `≥ p`, a step function `g_L(p)` of at most
//!   one step per mutex or server it uses — and corrections. `S(p) = Σ_{L
//!   below p} g_L(p)` is added into a difference array over the CPU's
//!   priority levels once per set (`O(sections + levels)`). Per task, only
//!   the lower tasks that the per-task formula treats differently are
//!   visited: those with nested sections (their `f_L` as before), the users
//!   of the mutexes τ_i itself uses without inheritance (`f_L =
//!   max(g_L(p), their section on those)`), and the columns of the matching
//!   (users of the ceiling row's mutexes, callers of the row servers): a
//!   column whose weights are all 0 does not change a maximum-weight
//!   matching.
//! - **Response time.** `Y(p)`, the least `w ≥ 1` with `w = G'(w)`, where
//!   `G'` is the interference of every task strictly above `p` and of the
//!   reservations, grows as `p` goes down: one min-heap of the next release
//!   boundary `k·T` of each period above (the tasks of one period share
//!   `k = ⌈Y/T⌉`, so one entry sums their `E`) follows it up the levels
//!   (each pop is one more job of that period in the window). For τ_i at `p`, `f_i(w) ≥ B_i + E_i +
//!   G'(w)`, so its least fixed point is `≥ Y(p)` and then `≥ B_i + E_i +
//!   G'(Y(p))`: the iteration starts there (and at least where the per-task
//!   analysis starts), for every job of the busy period. `G'(w) = G'(Y) +
//!   Σ_{k·T < w} (⌈w/T⌉ − k)·E` is summed over the heap entries below `w`
//!   only (a subtree whose root is not below `w` is skipped). Tasks of the
//!   same level are summed per distinct period, less τ_i's own term.
//!
//! Whatever is rare or near a limit goes back to the per-task code, which
//! gives the reference values: a level utilisation within 10⁻⁷ of 1 (the
//! overload test and the reported utilisation), a response longer than the
//! `B_i + E_i = 0`, sums near the analysis limit, a chain that would need
//! too many steps.

use std::collections::HashMap;

use super::*;

/// Heap pops allowed for one CPU's chain before it is abandoned (its tasks
/// then take the per-task path).
const CHAIN_POPS: u64 = 50_000_000;
/// Sums above this are "no bound" (as in [`busy_window`]).
const LIMIT: u128 = 1 << 62;

/// One task or reservation of the interference chain, in the heap.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    /// `k·T` (saturated): `⌈w/T⌉` stays `k` up to it.
    key: u64,
    period: u64,
    /// `E` of a task, `Q` of a reservation.
    coef: u64,
    /// `⌈Y/T⌉` at the chain's current `Y`.
    k: u64,
}

/// Buffers of the level sweep, reused across sets.
#[derive(Clone, Debug, Default)]
pub(super) struct Sweep {
    /// Per task: its distinct mutexes with its longest section on each.
    cs_off: Vec<usize>,
    cs: Vec<(usize, Nanos)>,
    /// Per mutex: its fixed-priority users.
    users_off: Vec<usize>,
    users: Vec<usize>,
    /// Per server: its callers.
    callers_off: Vec<usize>,
    callers: Vec<usize>,
    /// Per task: `g_L` as `(key, max value of keys ≥ key)`, keys descending.
    g_off: Vec<usize>,
    g: Vec<(i32, Nanos)>,
    /// The CPU being swept: its fixed tasks by priority (descending), its
    /// levels `(priority, start, end)` in `ord`, per level `S`, `Σ E` and
    /// `Σ E/T`, its tasks with nested sections in `ord` order.
    ord: Vec<usize>,
    levels: Vec<(i32, usize, usize)>,
    level_of: Vec<usize>,
    sums: Vec<u128>,
    level_e: Vec<u128>,
    level_u: Vec<f64>,
    /// Per level `Σ E/T` in [`share`]s (the reported utilisation).
    level_share: Vec<u128>,
    nested_ord: Vec<usize>,
    /// Per task, for the task being analysed: `f_L` when it differs from
    /// `g_L(p)` (valid when `stamp == gen`), and column marks.
    stamp: Vec<u32>,
    cstamp: Vec<u32>,
    gen: u32,
    over: Vec<Nanos>,
    own: Vec<usize>,
    cands: Vec<usize>,
    icpp_flag: Vec<bool>,
    /// The chain: a min-heap of entries by `key`.
    /// `Σ 2Q` of the reservations of the CPU (the per-task start's share).
    dl_q2: u128,
    heap: Vec<u32>,
    stack: Vec<usize>,
    /// The heap's entries, one per distinct period (tasks of one period
    /// have the same `k` once they are in the chain: `⌈Y/T⌉`), and the
    /// entry of each period.
    groups: Vec<Entry>,
    group_of: HashMap<u64, u32>,
    /// Per level of the CPU being swept, its tasks by period: `(T, Σ E)`.
    level_groups_off: Vec<usize>,
    level_groups: Vec<(u64, u64)>,
}

impl Sweep {
    fn cs_of(&self, t: usize) -> &[(usize, Nanos)] {
        &self.cs[self.cs_off[t]..self.cs_off[t + 1]]
    }

    /// `g_L(p)`: the largest value of a key `≥ p`.
    fn g_at(&self, l: usize, p: i32) -> Nanos {
        let items = &self.g[self.g_off[l]..self.g_off[l + 1]];
        match items.partition_point(|&(k, _)| k >= p) {
            0 => 0,
            c => items[c - 1].1,
        }
    }

    fn key(&self, j: usize) -> u64 {
        self.groups[self.heap[j] as usize].key
    }

    fn sift_up(&mut self, mut j: usize) {
        while j > 0 {
            let p = (j - 1) / 2;
            if self.key(p) <= self.key(j) {
                break;
            }
            self.heap.swap(p, j);
            j = p;
        }
    }

    fn sift_down(&mut self, mut j: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * j + 1, 2 * j + 2);
            let mut m = j;
            if l < n && self.key(l) < self.key(m) {
                m = l;
            }
            if r < n && self.key(r) < self.key(m) {
                m = r;
            }
            if m == j {
                return;
            }
            self.heap.swap(j, m);
            j = m;
        }
    }

    /// Adds an entry of period `period` and coefficient `coef` at count `k`
    /// (to the entry of its period when that one is at `k` too: `Σ
    /// (⌈w/T⌉ − k)·coef` is the same).
    fn push(&mut self, period: u64, coef: u64, k: u64) {
        if let Some(&g) = self.group_of.get(&period) {
            let e = &mut self.groups[g as usize];
            if e.k == k {
                e.coef += coef;
                return;
            }
        }
        let g = self.groups.len() as u32;
        self.groups.push(Entry {
            key: k.saturating_mul(period),
            period,
            coef,
            k,
        });
        self.group_of.insert(period, g);
        self.heap.push(g);
        self.sift_up(self.heap.len() - 1);
    }

    /// `G'(w) − G'(Y)`: `Σ (⌈w/T⌉ − k)·coef` over the entries whose
    /// boundary `k·T` is below `w` (a subtree whose root is not below `w`
    /// is skipped). The heap is only read.
    fn delta(&mut self, w: u64) -> u128 {
        let mut d: u128 = 0;
        self.stack.clear();
        if !self.heap.is_empty() {
            self.stack.push(0);
        }
        while let Some(j) = self.stack.pop() {
            let e = self.groups[self.heap[j] as usize];
            if e.key >= w {
                continue;
            }
            d += (w.div_ceil(e.period) - e.k) as u128 * e.coef as u128;
            for c in [2 * j + 1, 2 * j + 2] {
                if c < self.heap.len() {
                    self.stack.push(c);
                }
            }
        }
        d
    }
}

impl Analyzer {
    /// CPUs whose fixed-priority tasks the level sweep analyses (at least
    /// the threshold of them), in order.
    pub(super) fn sweep_cpus(&self) -> Vec<u32> {
        let mut count: Vec<(u32, usize)> = Vec::new();
        for t in 0..self.n {
            if self.fixed[t] {
                match count.iter_mut().find(|(c, _)| *c == self.cpu[t]) {
                    Some(x) => x.1 += 1,
                    None => count.push((self.cpu[t], 1)),
                }
            }
        }
        count.sort_unstable();
        count
            .into_iter()
            .filter(|&(_, k)| k >= self.sweep_from.unwrap_or(super::SWEEP_FROM))
            .map(|(c, _)| c)
            .collect()
    }

    /// Fills `out` for the fixed-priority tasks of `cpus` (after
    /// [`Analyzer::prepare`]).
    pub(super) fn sweep(&mut self, set: &TaskSet, cpus: &[u32], out: &mut [Option<TaskResult>]) {
        self.sparse_tables(set);
        for &c in cpus {
            self.sweep_cpu(set, c, out);
        }
    }

    /// Per task its distinct sections and `g_L` items; per mutex its users;
    /// per server its callers.
    fn sparse_tables(&mut self, set: &TaskSet) {
        let (n, m, s) = (self.n, self.m, self.s);
        let sw = &mut self.sw;
        sw.cs.clear();
        sw.cs_off.clear();
        sw.g.clear();
        sw.g_off.clear();
        let mut ucount = vec![0usize; m + 1];
        let mut ccount = vec![0usize; s + 1];
        for (t, task) in set.tasks.iter().enumerate() {
            sw.cs_off.push(sw.cs.len());
            let start = sw.cs.len();
            for sec in &task.sections {
                match sw.cs[start..].iter_mut().find(|x| x.0 == sec.mutex) {
                    Some(x) => x.1 = x.1.max(sec.length),
                    None => sw.cs.push((sec.mutex, sec.length)),
                }
            }
            sw.g_off.push(sw.g.len());
            let gstart = sw.g.len();
            if self.fixed[t] {
                for k in start..sw.cs.len() {
                    let (r, len) = sw.cs[k];
                    ucount[r] += 1;
                    if set.mutexes[r].protocol.inherits() {
                        sw.g.push((self.ceiling[r], len));
                    }
                }
                for c in &task.calls {
                    sw.g.push((set.servers[c.server].priority, c.wcet));
                }
            }
            for (k, c) in ccount.iter_mut().enumerate().take(s) {
                if self.calls_to[t * s + k] {
                    *c += 1;
                }
            }
            let items = &mut sw.g[gstart..];
            items.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
            let mut mx = 0;
            for x in items.iter_mut() {
                mx = mx.max(x.1);
                x.1 = mx;
            }
        }
        sw.cs_off.push(sw.cs.len());
        sw.g_off.push(sw.g.len());
        prefix_offsets(&mut sw.users_off, &ucount[..m]);
        prefix_offsets(&mut sw.callers_off, &ccount[..s]);
        let mut fill_u = sw.users_off.clone();
        let mut fill_c = sw.callers_off.clone();
        reset(&mut sw.users, sw.users_off[m], 0);
        reset(&mut sw.callers, sw.callers_off[s], 0);
        for t in 0..n {
            if self.fixed[t] {
                for k in sw.cs_off[t]..sw.cs_off[t + 1] {
                    let r = sw.cs[k].0;
                    sw.users[fill_u[r]] = t;
                    fill_u[r] += 1;
                }
            }
            for (k, f) in fill_c.iter_mut().enumerate().take(s) {
                if self.calls_to[t * s + k] {
                    sw.callers[*f] = t;
                    *f += 1;
                }
            }
        }
        reset(&mut sw.stamp, n, 0);
        reset(&mut sw.cstamp, n, 0);
        reset(&mut sw.over, n, 0);
        reset(&mut sw.level_of, n, usize::MAX);
        sw.gen = 0;
    }

    /// The fixed-priority tasks of CPU `c`, level by level.
    fn sweep_cpu(&mut self, set: &TaskSet, c: u32, out: &mut [Option<TaskResult>]) {
        self.cpu_levels(set, c);
        self.level_sums();
        // The chain starts at Y = 1 with the reservations that can run on c.
        let sw = &mut self.sw;
        sw.heap.clear();
        sw.groups.clear();
        sw.group_of.clear();
        sw.dl_q2 = 0;
        let mut gsum: u128 = 0;
        let mut util_above = 0.0f64;
        let mut share_above: u128 = 0;
        for (h, th) in set.tasks.iter().enumerate() {
            if self.fixed[h] || (self.cpu[h] != c && th.global_cpus.is_none()) {
                continue;
            }
            if let Class::Deadline {
                runtime, period, ..
            } = th.class
            {
                sw.push(period, runtime, 1);
                gsum += 2 * runtime as u128;
                sw.dl_q2 += 2 * runtime as u128;
                util_above += runtime as f64 / period as f64;
                share_above = share_above.saturating_add(share(runtime, period));
            }
        }
        let mut y: u64 = 1;
        let mut pops: u64 = 0;
        let mut chain = util_above < 1.0 - 1e-7 && self.advance(&mut y, &mut gsum, &mut pops);
        let mut e_above: u128 = 0;
        for a in 0..self.sw.levels.len() {
            if self.cancelled() {
                return;
            }
            let (_, s0, s1) = self.sw.levels[a];
            for k in s0..s1 {
                let i = self.sw.ord[k];
                let above = (util_above, share_above, e_above);
                let r = self.sweep_task(set, i, a, chain.then_some(gsum), above);
                out[i] = Some(r);
            }
            // The level joins the chain at the current Y.
            for k in s0..s1 {
                let h = self.sw.ord[k];
                let th = &set.tasks[h];
                let kk = y.div_ceil(th.period);
                self.sw.push(th.period, th.demand, kk);
                gsum += kk as u128 * th.demand as u128;
            }
            util_above += self.sw.level_u[a];
            share_above = share_above.saturating_add(self.sw.level_share[a]);
            e_above += self.sw.level_e[a];
            chain = chain && util_above < 1.0 - 1e-7 && self.advance(&mut y, &mut gsum, &mut pops);
        }
    }

    /// Raises the chain's `Y` to the least fixed point of `G'` (false when
    /// it passes the limit or the step budget).
    fn advance(&mut self, y: &mut u64, gsum: &mut u128, pops: &mut u64) -> bool {
        let cancel = self.cancel.as_ref();
        let sw = &mut self.sw;
        loop {
            if *gsum <= *y as u128 {
                return true;
            }
            if *gsum > LIMIT {
                return false;
            }
            *y = *gsum as u64;
            while let Some(&g) = sw.heap.first() {
                let e = &mut sw.groups[g as usize];
                if e.key >= *y {
                    break;
                }
                let k = y.div_ceil(e.period);
                *gsum += (k - e.k) as u128 * e.coef as u128;
                e.k = k;
                e.key = k.saturating_mul(e.period);
                sw.sift_down(0);
                *pops += 1;
                if *pops > CHAIN_POPS
                    || ((*pops).is_multiple_of(u64::from(CANCEL_EVERY))
                        && crate::error::is_cancelled(cancel))
                {
                    return false;
                }
            }
        }
    }

    /// `ord`, `levels`, `level_of`, per level `Σ E` and `Σ E/T`, and the
    /// nested tasks, for CPU `c`.
    fn cpu_levels(&mut self, set: &TaskSet, c: u32) {
        let sw = &mut self.sw;
        sw.ord.clear();
        sw.ord
            .extend((0..self.n).filter(|&t| self.fixed[t] && self.cpu[t] == c));
        let prio = &self.prio;
        sw.ord
            .sort_by(|&a, &b| prio[b].cmp(&prio[a]).then(a.cmp(&b)));
        sw.levels.clear();
        sw.level_e.clear();
        sw.level_u.clear();
        sw.level_share.clear();
        sw.nested_ord.clear();
        for (k, &t) in sw.ord.iter().enumerate() {
            match sw.levels.last_mut() {
                Some(l) if l.0 == prio[t] => l.2 = k + 1,
                _ => {
                    sw.levels.push((prio[t], k, k + 1));
                    sw.level_e.push(0);
                    sw.level_u.push(0.0);
                    sw.level_share.push(0);
                }
            }
            let a = sw.levels.len() - 1;
            sw.level_of[t] = a;
            sw.level_e[a] += set.tasks[t].demand as u128;
            sw.level_u[a] += set.tasks[t].utilisation();
            let (e, p) = (set.tasks[t].demand, set.tasks[t].period);
            sw.level_share[a] = sw.level_share[a].saturating_add(share(e, p));
            if self.nested[t] {
                sw.nested_ord.push(t);
            }
        }
        // Each level's tasks by period.
        sw.level_groups.clear();
        sw.level_groups_off.clear();
        for &(_, s0, s1) in &sw.levels {
            let start = sw.level_groups.len();
            sw.level_groups_off.push(start);
            sw.level_groups.extend(
                sw.ord[s0..s1]
                    .iter()
                    .map(|&t| (set.tasks[t].period, set.tasks[t].demand)),
            );
            let items = &mut sw.level_groups[start..];
            items.sort_unstable();
            let mut len = 0;
            for x in 0..items.len() {
                if len > 0 && items[len - 1].0 == items[x].0 {
                    items[len - 1].1 += items[x].1;
                } else {
                    items[len] = items[x];
                    len += 1;
                }
            }
            sw.level_groups.truncate(start + len);
        }
        sw.level_groups_off.push(sw.level_groups.len());
    }

    /// `S` of every level of the CPU: `Σ g_L(p)` over the tasks `L` without
    /// nested sections strictly below it.
    fn level_sums(&mut self) {
        let sw = &mut self.sw;
        let nl = sw.levels.len();
        reset(&mut sw.sums, nl + 1, 0);
        for &l in &sw.ord {
            if self.nested[l] {
                continue;
            }
            let a = sw.level_of[l];
            let items = &sw.g[sw.g_off[l]..sw.g_off[l + 1]];
            // Levels j < a with priority ≤ key get the item; keys descend,
            // so the first level reached only grows.
            for (x, &(key, v)) in items.iter().enumerate() {
                let lo = sw.levels.partition_point(|lv| lv.0 > key);
                let hi = match items.get(x + 1) {
                    Some(&(k2, _)) => sw.levels.partition_point(|lv| lv.0 > k2).min(a),
                    None => a,
                };
                if lo < hi {
                    sw.sums[lo] = sw.sums[lo].wrapping_add(v as u128);
                    sw.sums[hi] = sw.sums[hi].wrapping_sub(v as u128);
                }
            }
        }
        let mut acc: u128 = 0;
        for x in sw.sums.iter_mut() {
            acc = acc.wrapping_add(*x);
            *x = acc;
        }
    }

    /// One task of the sweep at level `a`; `gsum` is `G'(Y)` when the
    /// chain holds; `above` is the utilisation (as `f64` and in
    /// [`share`]s) and `Σ E` of the levels above and the reservations.
    fn sweep_task(
        &mut self,
        set: &TaskSet,
        i: usize,
        a: usize,
        gsum: Option<u128>,
        (util_above, share_above, e_above): (f64, u128, u128),
    ) -> TaskResult {
        if let Some(why) = self.inversion(set, i).or_else(|| self.higher_suspends(i)) {
            return TaskResult::unbounded(why, None);
        }
        let blocking = self.sweep_blocking(set, i, a);
        let ti = &set.tasks[i];
        let (e, t, d) = (ti.demand, ti.period, ti.deadline);
        let util = util_above + self.sw.level_u[a];
        if util > 1.0 + 1e-6 {
            // Overloaded whatever the rounding (the exact test agrees): the
            // utilisation is reported as the per-task analysis sums it, in
            // shares (exact, in any order).
            let utilisation = share_to_f64(share_above.saturating_add(self.sw.level_share[a]));
            return TaskResult::unbounded(Unbounded::Overload { utilisation }, Some(blocking));
        }
        let base = e as u128 + blocking as u128;
        let direct = match gsum {
            Some(g) if util <= 1.0 - 1e-9 - 1e-7 && base > 0 && base <= LIMIT => {
                self.sweep_window(set, i, a, blocking, g, e_above)
            }
            _ => None,
        };
        let r = match direct {
            Some(r) => r,
            None => {
                self.interference(set, i);
                let cancel = self.cancel.as_ref();
                busy_window_until(e, t, d, blocking, (&self.hp, &self.dl), false, &|| {
                    crate::error::is_cancelled(cancel)
                })
            }
        };
        match r {
            Ok(r) => TaskResult::bounded(r, blocking, d),
            Err(why) => TaskResult::unbounded(why, Some(blocking)),
        }
    }

    /// The level-i busy window of task `i` at level `a` (as
    /// [`busy_window`], every job of the busy period) from the chain, or
    /// `None` to leave it to [`busy_window`].
    fn sweep_window(
        &mut self,
        set: &TaskSet,
        i: usize,
        a: usize,
        b: Nanos,
        gsum: u128,
        e_above: u128,
    ) -> Option<Result<Nanos, Unbounded>> {
        let (e, t) = (set.tasks[i].demand as u128, set.tasks[i].period as u128);
        let b = b as u128;
        // Where the per-task analysis starts: one job of everyone.
        let first = b + e + e_above + self.sw.level_e[a] - e + self.sw.dl_q2;
        if first > LIMIT {
            return Some(Err(Unbounded::BusyPeriod));
        }
        let mut budget = MAX_ITERATIONS;
        let mut r_max: u128 = 0;
        let mut q: u128 = 0;
        let mut w: u128 = first.max(b + e + gsum);
        loop {
            let base = (q + 1) * e + b;
            if base > LIMIT {
                return Some(Err(Unbounded::BusyPeriod));
            }
            w = w.max(base);
            loop {
                if w > LIMIT {
                    return Some(Err(Unbounded::BusyPeriod));
                }
                let w64 = w as u64;
                let mut next = base + gsum + self.sw.delta(w64);
                // The level's other tasks: all of them by period, less τ_i.
                let (g0, g1) = (self.sw.level_groups_off[a], self.sw.level_groups_off[a + 1]);
                for &(period, demand) in &self.sw.level_groups[g0..g1] {
                    next += w64.div_ceil(period) as u128 * demand as u128;
                }
                next -= w64.div_ceil(t as u64) as u128 * e;
                if next > LIMIT {
                    return Some(Err(Unbounded::BusyPeriod));
                }
                if next == w {
                    break;
                }
                w = next;
                budget = budget.saturating_sub(1);
                if budget == 0 || (budget.is_multiple_of(CANCEL_EVERY) && self.cancelled()) {
                    return None;
                }
            }
            r_max = r_max.max(w.saturating_sub(q * t));
            if w <= (q + 1) * t {
                return Some(Ok(r_max as Nanos));
            }
            // Each further job counts as a step, as in `busy_window`.
            budget = budget.saturating_sub(1);
            if budget == 0 || (budget.is_multiple_of(CANCEL_EVERY) && self.cancelled()) {
                return None;
            }
            q += 1;
        }
    }

    /// `B_i` of task `i` at level `a` (the same value as
    /// [`Analyzer::blocking`]).
    fn sweep_blocking(&mut self, set: &TaskSet, i: usize, a: usize) -> Nanos {
        self.relevant_mutexes(set, i);
        self.rows_and_high_servers(set, i);
        let (pi, m, s) = (self.prio[i], self.m, self.s);
        let mut total: u128 = self.sw.sums[a];
        // Lower tasks with nested sections: as before.
        let first = self.sw.nested_ord.partition_point(|&l| self.prio[l] >= pi);
        for k in first..self.sw.nested_ord.len() {
            let l = self.sw.nested_ord[k];
            total += self.unconstrained_item(set, l) as u128;
        }
        self.sw.gen = self.sw.gen.wrapping_add(1);
        if self.sw.gen == 0 {
            self.sw.stamp.iter_mut().for_each(|x| *x = 0);
            self.sw.cstamp.iter_mut().for_each(|x| *x = 0);
            self.sw.gen = 1;
        }
        let gen = self.sw.gen;
        // Mutexes τ_i uses without inheritance: their lower users charge
        // max(g_L, their section on them).
        self.sw.own.clear();
        for &r in &self.rel_task {
            if !set.mutexes[r].protocol.inherits() {
                self.sw.own.push(r);
            }
        }
        for x in 0..self.sw.own.len() {
            let r = self.sw.own[x];
            for u in self.sw.users_off[r]..self.sw.users_off[r + 1] {
                let l = self.sw.users[u];
                if self.prio[l] >= pi || self.nested[l] || self.sw.stamp[l] == gen {
                    continue;
                }
                self.sw.stamp[l] = gen;
                let g = self.sw.g_at(l, pi);
                let own = self
                    .sw
                    .own
                    .iter()
                    .map(|&r2| self.maxcs[l * m + r2])
                    .max()
                    .unwrap_or(0);
                let f = g.max(own);
                self.sw.over[l] = f;
                total += (f - g) as u128;
            }
        }
        let matched = if self.rows.is_empty() {
            0
        } else {
            self.sweep_matching(self.cpu[i], pi, m, s, gen)
        };
        (total + matched as u128).min(Nanos::MAX as u128) as Nanos
    }

    /// The matching of rows to the lower tasks with a positive weight.
    fn sweep_matching(&mut self, cpu: u32, pi: i32, m: usize, s: usize, gen: u32) -> Nanos {
        reset(&mut self.sw.icpp_flag, m, false);
        for &r in &self.rel_icpp {
            self.sw.icpp_flag[r] = true;
        }
        self.sw.cands.clear();
        let sw = &mut self.sw;
        for row in &self.rows {
            match *row {
                Row::Icpp => {
                    for &r in &self.rel_icpp {
                        for u in sw.users_off[r]..sw.users_off[r + 1] {
                            let l = sw.users[u];
                            if self.prio[l] < pi
                                && !self.nested[l]
                                && self.cpu[l] == cpu
                                && sw.cstamp[l] != gen
                            {
                                sw.cstamp[l] = gen;
                                sw.cands.push(l);
                            }
                        }
                    }
                }
                Row::Server(k) => {
                    for u in sw.callers_off[k]..sw.callers_off[k + 1] {
                        let l = sw.callers[u];
                        if self.fixed[l]
                            && self.prio[l] < pi
                            && !self.nested[l]
                            && self.cpu[l] == cpu
                            && sw.cstamp[l] != gen
                        {
                            sw.cstamp[l] = gen;
                            sw.cands.push(l);
                        }
                    }
                }
            }
        }
        let cols = sw.cands.len();
        self.weights.clear();
        for row in &self.rows {
            for &l in &sw.cands {
                let f = if sw.stamp[l] == gen {
                    sw.over[l]
                } else {
                    sw.g_at(l, pi)
                };
                let w = match *row {
                    Row::Icpp => sw
                        .cs_of(l)
                        .iter()
                        .filter(|x| sw.icpp_flag[x.0])
                        .map(|x| x.1)
                        .max()
                        .unwrap_or(0),
                    Row::Server(k) => self.callmax[l * s + k],
                };
                self.weights.push(w.saturating_sub(f));
            }
        }
        let weights = &self.weights;
        self.matcher
            .max_weight(self.rows.len(), cols, |r, c| weights[r * cols + c])
    }
}

/// `off[k]` = `Σ count[..k]`, with the total last.
fn prefix_offsets(off: &mut Vec<usize>, count: &[usize]) {
    off.clear();
    let mut acc = 0;
    for &c in count {
        off.push(acc);
        acc += c;
    }
    off.push(acc);
}
