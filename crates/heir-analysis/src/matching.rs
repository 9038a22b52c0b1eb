//! Maximum-weight bipartite matching, for blocking terms of the form "each
//! lower-priority task at most once, each resource (or server) at most once".
//!
//! The PI-CV paper's Eq. 4-5 states the PI-CV RPC interference `I_i` as a maximum over
//! subsets of calls, exponential in the number of calls. The subsets allowed by
//! Lemmas 1 and 2 are exactly the matchings of the bipartite graph *lower task
//! — server* whose edge `(j, k)` weighs `max { D_{j,h} | r_{j,h} = k }`, so
//! `I_i` is the weight of a maximum-weight matching. The same holds for the
//! priority-inheritance blocking bound of Sha, Rajkumar and Lehoczky (at most
//! one critical section per lower-priority task and per semaphore).
//!
//! [`Matcher`] solves it with the Hungarian algorithm (Kuhn–Munkres with
//! potentials) in `O(r² c)` for `r ≤ c` (the smaller side is the rows). All
//! weights are non-negative, so a missing edge is an edge of weight 0 and a
//! complete assignment of the smaller side is a maximum-weight matching.

/// Reusable buffers for [`Matcher::max_weight`] (no allocation once warm).
#[derive(Clone, Debug, Default)]
pub struct Matcher {
    u: Vec<i64>,
    v: Vec<i64>,
    p: Vec<usize>,
    way: Vec<usize>,
    minv: Vec<i64>,
    used: Vec<bool>,
}

impl Matcher {
    /// An empty matcher.
    pub fn new() -> Matcher {
        Matcher::default()
    }

    /// The weight of a maximum-weight matching of the complete bipartite graph
    /// `rows × cols` whose edge `(r, c)` weighs `w(r, c)` (0 = no edge).
    ///
    /// Weights are nanoseconds; their sum over any matching must fit in `i64`
    /// (sums above `2^62` are a caller bug and saturate).
    pub fn max_weight(&mut self, rows: usize, cols: usize, w: impl Fn(usize, usize) -> u64) -> u64 {
        if rows == 0 || cols == 0 {
            return 0;
        }
        if rows == 1 {
            return (0..cols).map(|c| w(0, c)).max().unwrap_or(0);
        }
        if cols == 1 {
            return (0..rows).map(|r| w(r, 0)).max().unwrap_or(0);
        }
        if rows <= cols {
            self.hungarian(rows, cols, &|r, c| w(r, c))
        } else {
            self.hungarian(cols, rows, &|r, c| w(c, r))
        }
    }

    /// Hungarian algorithm on `n ≤ m`, maximising. 1-based internally.
    fn hungarian(&mut self, n: usize, m: usize, w: &dyn Fn(usize, usize) -> u64) -> u64 {
        const INF: i64 = i64::MAX / 4;
        let cost = |r: usize, c: usize| -> i64 { -(w(r - 1, c - 1).min(1 << 62) as i64) };
        self.u.clear();
        self.u.resize(n + 1, 0);
        self.v.clear();
        self.v.resize(m + 1, 0);
        self.p.clear();
        self.p.resize(m + 1, 0);
        self.way.clear();
        self.way.resize(m + 1, 0);
        for i in 1..=n {
            self.p[0] = i;
            let mut j0 = 0usize;
            self.minv.clear();
            self.minv.resize(m + 1, INF);
            self.used.clear();
            self.used.resize(m + 1, false);
            loop {
                self.used[j0] = true;
                let i0 = self.p[j0];
                let mut delta = INF;
                let mut j1 = 0usize;
                for j in 1..=m {
                    if !self.used[j] {
                        let cur = cost(i0, j) - self.u[i0] - self.v[j];
                        if cur < self.minv[j] {
                            self.minv[j] = cur;
                            self.way[j] = j0;
                        }
                        if self.minv[j] < delta {
                            delta = self.minv[j];
                            j1 = j;
                        }
                    }
                }
                for j in 0..=m {
                    if self.used[j] {
                        let pj = self.p[j];
                        self.u[pj] += delta;
                        self.v[j] -= delta;
                    } else {
                        self.minv[j] -= delta;
                    }
                }
                j0 = j1;
                if self.p[j0] == 0 {
                    break;
                }
            }
            loop {
                let j1 = self.way[j0];
                self.p[j0] = self.p[j1];
                j0 = j1;
                if j0 == 0 {
                    break;
                }
            }
        }
        let mut total = 0u64;
        for j in 1..=m {
            let r = self.p[j];
            if r != 0 {
                total = total.saturating_add(w(r - 1, j - 1));
            }
        }
        total
    }
}

/// The same maximum by exhaustive search over every matching (exponential:
/// for tests and for checking [`Matcher`] on small instances only).
pub fn max_weight_brute_force(rows: usize, cols: usize, w: impl Fn(usize, usize) -> u64) -> u64 {
    fn go(
        r: usize,
        rows: usize,
        cols: usize,
        used: &mut Vec<bool>,
        w: &dyn Fn(usize, usize) -> u64,
    ) -> u64 {
        if r == rows {
            return 0;
        }
        // Row r unmatched.
        let mut best = go(r + 1, rows, cols, used, w);
        for c in 0..cols {
            if !used[c] {
                used[c] = true;
                best = best.max(w(r, c).saturating_add(go(r + 1, rows, cols, used, w)));
                used[c] = false;
            }
        }
        best
    }
    let mut used = vec![false; cols];
    go(0, rows, cols, &mut used, &w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn hungarian_equals_brute_force_on_random_instances() {
        let mut rng = Rng::new(42);
        let mut m = Matcher::new();
        for _ in 0..2000 {
            let rows = rng.range_u64(0, 5) as usize;
            let cols = rng.range_u64(0, 5) as usize;
            let w: Vec<u64> = (0..rows * cols)
                .map(|_| {
                    if rng.chance(0.3) {
                        0
                    } else {
                        rng.range_u64(1, 100)
                    }
                })
                .collect();
            let f = |r: usize, c: usize| w[r * cols + c];
            assert_eq!(
                m.max_weight(rows, cols, f),
                max_weight_brute_force(rows, cols, f),
                "{rows}x{cols} {w:?}"
            );
        }
    }

    #[test]
    fn classic_instance() {
        // Greedy takes 9 (r0,c0) then 1; the optimum is 8 + 7 = 15.
        let w = [[9u64, 8], [7, 1]];
        let mut m = Matcher::new();
        assert_eq!(m.max_weight(2, 2, |r, c| w[r][c]), 15);
    }
}
