//! The exact EDF processor-demand criterion on one CPU, made fast by QPA
//! (Zhang and Burns, "Schedulability analysis for real-time systems with
//! EDF scheduling", IEEE Trans. Computers 58(9), 2009).
//!
//! The schedulable entities are the CBS reservations' *chunks*: a budget of at
//! most `Q` released at `a`, due at `a + D`. How far apart the chunks of a
//! reservation are released depends on what the reservation does ([`Demand`]):
//!
//! - [`Demand::Sporadic`]: at least `S` apart (`S = P` for a reservation whose
//!   jobs fit their budget and never make it suspend or renew its
//!   deadline). Demand bound `dbf(L) = (⌊(L − D)/S⌋ + 1)·Q` for `L ≥ D`.
//! - [`Demand::Ramp`]: a constrained reservation (`D < P`) that suspends inside
//!   a job or spills into postponed chunks. Its chunks start at least `P`
//!   apart (a postponed chunk `P` after the previous one; a wake-up after
//!   the deadline and before the next period waits for that period, as
//!   Linux's `dl_check_constrained_dl` and heir's simulator do), and a
//!   chunk taken up again at a wake-up `w` holds at most `Q·(d − w)/D` (the
//!   revised wake-up rule cuts it so; a chunk kept because the rule's test
//!   passed has no more). So `dbf(L) = ⌊L/P⌋·Q + min(Q, ⌊Q·(L mod P)/D⌋)`
//!   from the first instant: a reservation that wakes with a chunk due soon
//!   demands part of its budget in a window shorter than `D`.
//! - [`Demand::Fluid`]: an implicit-deadline reservation (`D = P`) whose deadline
//!   the CBS wake-up rule can renew (`now + P`, full budget) while a job is
//!   pending, or keep with at most `Q·(d − w)/P`. The CBS bandwidth
//!   property (Abeni and Buttazzo, "Integrating multimedia applications in
//!   hard real-time systems", RTSS 1998) bounds what it demands in any
//!   window of `L` by `Q·L/P` — in whole nanoseconds `⌊Q·L/P⌋`.
//!
//! All arithmetic is on integer nanoseconds in 128 bits.

use crate::edf::sum_le_one;
use crate::model::Nanos;

/// What one reservation can demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demand {
    /// Chunks of at most `q`, due `d` after their release, released at
    /// least `s` apart (`s ≥ d`).
    Sporadic { q: Nanos, d: Nanos, s: Nanos },
    /// An implicit-deadline CBS reservation `(q, p)` whose deadline can be
    /// renewed at a wake-up.
    Fluid { q: Nanos, p: Nanos },
    /// A constrained-deadline server `(q, d, p)`, `d < p`, that suspends
    /// inside a job or spills into postponed chunks: chunks start at least
    /// `p` apart (a wake-up after the deadline and before the next period
    /// waits for that period, Linux's `dl_check_constrained_dl`), and one
    /// taken up again at a wake-up `w` has at most `q·(deadline − w)/d`
    /// left (the revised wake-up rule, or the rule's test passing).
    Ramp { q: Nanos, d: Nanos, p: Nanos },
}

impl Demand {
    /// Work due in a window of length `l` (released in it, due by its end).
    fn dbf(&self, l: u128) -> u128 {
        match *self {
            Demand::Sporadic { q, d, s } => {
                let (q, d, s) = (q as u128, d as u128, s.max(1) as u128);
                if l < d {
                    0
                } else {
                    ((l - d) / s + 1) * q
                }
            }
            Demand::Fluid { q, p } => {
                let (q, p) = (q as u128, p.max(1) as u128);
                q * l / p
            }
            Demand::Ramp { q, d, p } => {
                let (q, d, p) = (q as u128, d.max(1) as u128, p.max(1) as u128);
                (l / p) * q + q.min(q * (l % p) / d)
            }
        }
    }

    /// `(Q, S)` as a utilisation term.
    fn rate(&self) -> (Nanos, Nanos) {
        match *self {
            Demand::Sporadic { q, s, .. } => (q, s),
            Demand::Fluid { q, p } | Demand::Ramp { q, p, .. } => (q, p),
        }
    }

    /// The first window length with a positive `dbf` (a lower bound).
    fn first(&self) -> Nanos {
        match *self {
            Demand::Sporadic { d, .. } => d,
            Demand::Fluid { .. } | Demand::Ramp { .. } => 1,
        }
    }

    /// Whether `dbf` grows between step points (no exact step search).
    fn continuous(&self) -> bool {
        !matches!(self, Demand::Sporadic { .. })
    }
}

/// Why a set of reservations fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `Σ Q/S > 1`.
    Overload,
    /// The demand in a window of `at` is `demand > at`.
    Demand { at: Nanos, demand: Nanos },
    /// The test did not finish within [`MAX_STEPS`] steps.
    Limit,
}

/// Steps allowed to one test (fewer for large sets: at most about
/// [`MAX_WORK`] reservation evaluations in all).
pub const MAX_STEPS: u32 = 1_000_000;

/// Reservation evaluations allowed to one test.
pub const MAX_WORK: usize = 50_000_000;

fn max_steps(reservations: &[Demand]) -> u32 {
    let by_work = MAX_WORK / reservations.len().max(1);
    u32::try_from(by_work)
        .unwrap_or(MAX_STEPS)
        .clamp(1000, MAX_STEPS)
}

fn sat(x: u128) -> Nanos {
    Nanos::try_from(x).unwrap_or(Nanos::MAX)
}

/// The demand `h(t) = Σ dbf(t)`.
pub fn demand(reservations: &[Demand], t: Nanos) -> u128 {
    reservations.iter().map(|s| s.dbf(t as u128)).sum()
}

/// The largest step point of the sporadic reservations' `dbf` below `t`.
fn prev_point(reservations: &[Demand], t: Nanos) -> Option<Nanos> {
    reservations
        .iter()
        .filter_map(|s| match *s {
            Demand::Sporadic { d, s, .. } if d < t => {
                let s = s.max(1);
                Some(d + (t - 1 - d) / s * s)
            }
            _ => None,
        })
        .max()
}

/// An `L` past which `h(L) ≤ L` holds
/// whenever `Σ Q/S < 1`: `A / (1 − U)` with `A` the constant part of the
/// linear bound, rounded up generously (the f64 quotient, + 0.1 %, + 1 ms).
fn linear_horizon(reservations: &[Demand], constant: f64) -> Option<Nanos> {
    let u: f64 = reservations
        .iter()
        .map(|s| {
            let (q, p) = s.rate();
            q as f64 / p.max(1) as f64
        })
        .sum();
    if u >= 1.0 {
        return None;
    }
    let x = constant / (1.0 - u) * 1.001 + 1e6;
    (x.is_finite() && x < 1e18).then_some(x as Nanos)
}

/// The synchronous busy period `w = Σ ⌈w/S⌉·Q` of sporadic reservations (a
/// bound on the window lengths to check when `Σ Q/S = 1`).
fn busy_period(reservations: &[Demand]) -> Option<Nanos> {
    let mut w: u128 = reservations.iter().map(|s| s.rate().0 as u128).sum();
    for _ in 0..max_steps(reservations) {
        let next: u128 = reservations
            .iter()
            .map(|s| {
                let (q, p) = s.rate();
                w.div_ceil(p.max(1) as u128) * q as u128
            })
            .sum();
        if next == w {
            return Nanos::try_from(w).ok();
        }
        w = next;
    }
    None
}

/// The processor-demand criterion `∀t > 0: h(t) ≤ t` (Baruah, Rosier and
/// Howell 1990), checked by QPA: from the end `L` of the interval to check,
/// `t ← h(t)` while `h(t) < t`, and the step point below `t` when
/// `h(t) = t`; it passes when `t` falls below the first deadline.
pub fn qpa(reservations: &[Demand]) -> Result<(), Failure> {
    let terms: Vec<(u64, u64)> = reservations.iter().map(Demand::rate).collect();
    if !sum_le_one(&terms) {
        return Err(Failure::Overload);
    }
    let Some(d_min) = reservations.iter().map(Demand::first).min() else {
        return Ok(());
    };
    let fluid = reservations.iter().any(Demand::continuous);
    // h(L) ≤ U·L + Σ_sporadic Q·(S − D)/S.
    let constant: f64 = reservations
        .iter()
        .map(|s| match *s {
            Demand::Sporadic { q, d, s } => {
                q as f64 * (s.saturating_sub(d)) as f64 / s.max(1) as f64
            }
            Demand::Fluid { .. } => 0.0,
            // ramp(L) ≤ Q·L/P + Q·(P − D)/P.
            Demand::Ramp { q, d, p } => q as f64 * (p.saturating_sub(d)) as f64 / p.max(1) as f64,
        })
        .sum();
    let d_max = reservations.iter().map(Demand::first).max().unwrap_or(0);
    let horizon = linear_horizon(reservations, constant).map(|x| x.max(d_max));
    let busy = if fluid {
        // Σ Q/S = 1 with renewable reservations: h(L) ≤ U·L = L when every
        // other reservation is sporadic with D = S; otherwise not decided here.
        if horizon.is_none()
            && reservations.iter().all(|s| match *s {
                Demand::Sporadic { d, s, .. } => d >= s,
                Demand::Fluid { .. } => true,
                Demand::Ramp { .. } => false,
            })
        {
            return Ok(());
        }
        None
    } else {
        busy_period(reservations)
    };
    let mut t = match (horizon, busy) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return Err(Failure::Limit),
    };
    for _ in 0..max_steps(reservations) {
        if t < d_min {
            return Ok(());
        }
        let h = demand(reservations, t);
        if h > t as u128 {
            return Err(Failure::Demand {
                at: t,
                demand: sat(h),
            });
        }
        if h < t as u128 {
            t = sat(h);
            continue;
        }
        // h(t) = t: with fluid terms h grows between step points, so the
        // next candidate is just below t.
        t = if t == 0 {
            return Ok(());
        } else if fluid {
            t - 1
        } else {
            match prev_point(reservations, t) {
                Some(p) => p,
                None => return Ok(()),
            }
        };
    }
    Err(Failure::Limit)
}

impl Demand {
    /// An upper bound on the budget its chunks released (or taken up again
    /// at a wake-up) in a window of length `t` from the start of a busy
    /// period can hold: `⌈t/S⌉·Q`; for a renewable or ramp server those
    /// chunks are due by `t + D`, so `dbf(t + D) ≤ (⌈t/P⌉ + 1)·Q`.
    fn released(&self, t: u128) -> u128 {
        match *self {
            Demand::Sporadic { q, s, .. } => t.div_ceil(s.max(1) as u128) * q as u128,
            Demand::Fluid { q, p } | Demand::Ramp { q, p, .. } => {
                (t.div_ceil(p.max(1) as u128) + 1) * q as u128
            }
        }
    }

    /// A step-function upper bound on [`Demand::dbf`]: exact for sporadic
    /// servers; for renewable and ramp ones `(⌊L/P⌋ + 1)·Q` (a staircase
    /// with steps at multiples of `P` above `Q·L/P` and the ramp).
    fn due(&self, l: u128) -> u128 {
        match *self {
            Demand::Sporadic { .. } => self.dbf(l),
            Demand::Fluid { q, p } | Demand::Ramp { q, p, .. } => {
                (l / p.max(1) as u128 + 1) * q as u128
            }
        }
    }

    /// The window lengths `L < end` where [`Demand::due`] steps up.
    fn steps(&self, end: u128, out: &mut Vec<u128>) -> bool {
        let (first, every) = match *self {
            Demand::Sporadic { d, s, .. } => (d as u128, s.max(1) as u128),
            Demand::Fluid { p, .. } | Demand::Ramp { p, .. } => (0, p.max(1) as u128),
        };
        let mut x = first;
        while x < end {
            if out.len() >= MAX_POINTS {
                return false;
            }
            out.push(x);
            x += every;
        }
        true
    }
}

/// Release instants examined by one response-time bound, at most.
pub const MAX_POINTS: usize = 200_000;

/// A bound on the response time of the jobs of one server among
/// `others`, on one CPU under EDF: Spuri's analysis ("Analysis of deadline
/// scheduled real-time systems", INRIA RR-2772, 1996) over the servers'
/// chunks. The server's jobs are released at least `s` apart, each on one
/// fresh chunk due `d` after its release, and each needs `e` of that
/// chunk's budget (its own work and what others run on it). In a busy
/// period starting at 0 (the processor idle, or no work due by the job's
/// deadline pending, just before), a job released at `a` and due at
/// `a + d` completes by the least `t` with
///
/// ```text
/// t = (1 + ⌊a/s⌋)·e + Σ_j min(released_j(t), due_j(a + d))
/// ```
///
/// (EDF runs only work due by `a + d` from 0 until the job completes; ties
/// count against the job). Its response is at most `max(e, t − a)`; the
/// bound is the largest over the `a` below the synchronous busy period
/// where a term steps (`due_j` steps at `D_j + k·S_j − d`, the job's own
/// releases at `k·s`): between two such points `t` is constant and
/// `t − a` falls. `None` when the busy period does not end (long-run load
/// 1 or more) or the examination would be too long ([`MAX_POINTS`]).
pub fn response_bound(others: &[Demand], e: Nanos, d: Nanos, s: Nanos) -> Option<Nanos> {
    let (e, d, s) = (e as u128, d as u128, s.max(1) as u128);
    let limit: u128 = 1 << 62;
    // The synchronous busy period.
    let mut busy: u128 = e + others.iter().map(|j| j.released(1)).sum::<u128>();
    let mut steps = 0;
    loop {
        let next = busy.div_ceil(s) * e + others.iter().map(|j| j.released(busy)).sum::<u128>();
        if next == busy {
            break;
        }
        steps += 1;
        if next > limit || steps > MAX_STEPS {
            return None;
        }
        busy = next;
    }
    // The release offsets `a` in [0, busy) where a term steps.
    let mut points: Vec<u128> = vec![0];
    let mut x = s;
    while x < busy {
        if points.len() >= MAX_POINTS {
            return None;
        }
        points.push(x);
        x += s;
    }
    let mut lens = Vec::new();
    for j in others {
        if !j.steps(busy + d, &mut lens) {
            return None;
        }
    }
    points.extend(lens.into_iter().filter(|&l| l >= d).map(|l| l - d));
    if points.len() > MAX_POINTS {
        return None;
    }
    points.sort_unstable();
    points.dedup();
    let mut worst = e;
    for a in points {
        let own = (1 + a / s) * e;
        let dues: Vec<u128> = others.iter().map(|j| j.due(a + d)).collect();
        let mut t = own;
        let mut steps = 0;
        loop {
            let next = own
                + others
                    .iter()
                    .zip(&dues)
                    .map(|(j, &du)| j.released(t).min(du))
                    .sum::<u128>();
            if next == t {
                break;
            }
            steps += 1;
            if steps > MAX_STEPS {
                return None;
            }
            t = next;
        }
        worst = worst.max(t.saturating_sub(a));
    }
    Nanos::try_from(worst).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn sp(q: Nanos, d: Nanos, p: Nanos) -> Demand {
        Demand::Sporadic {
            q: q * MS,
            d: d * MS,
            s: p * MS,
        }
    }

    #[test]
    fn qpa_decides_exactly_at_the_boundary() {
        // The issue's set: 14/20/100, 15/30/100, 30/100/100. h(20) = 14,
        // h(30) = 29, h(100) = 59: schedulable though Σ Q/D = 1.5.
        assert_eq!(
            qpa(&[sp(14, 20, 100), sp(15, 30, 100), sp(30, 100, 100)]),
            Ok(())
        );
        // 16 instead of 15: h(30) = 30 = t (still fine); 17: h(30) = 31.
        assert_eq!(
            qpa(&[sp(14, 20, 100), sp(16, 30, 100), sp(30, 100, 100)]),
            Ok(())
        );
        assert_eq!(
            qpa(&[sp(14, 20, 100), sp(17, 30, 100), sp(30, 100, 100)]),
            Err(Failure::Demand {
                at: 30 * MS,
                demand: 31 * MS
            })
        );
        // Σ Q/P = 1 exactly with D = P: schedulable; one ns more is not.
        assert_eq!(qpa(&[sp(1, 2, 2), sp(1, 3, 3), sp(1, 6, 6)]), Ok(()));
        assert_eq!(
            qpa(&[
                sp(1, 2, 2),
                sp(1, 3, 3),
                Demand::Sporadic {
                    q: MS + 1,
                    d: 6 * MS,
                    s: 6 * MS
                }
            ]),
            Err(Failure::Overload)
        );
        // 2/3/4 and 3/5/10: h(3) = 2, h(5) = 5, h(7) = 7, h(11) = 9, …
        // fine; 2/3/4 and 4/6/10: h(7) = 4 + 4 = 8 > 7.
        assert_eq!(qpa(&[sp(2, 3, 4), sp(3, 5, 10)]), Ok(()));
        assert_eq!(
            qpa(&[sp(2, 3, 4), sp(4, 6, 10)]),
            Err(Failure::Demand {
                at: 7 * MS,
                demand: 8 * MS
            })
        );
    }

    #[test]
    fn spuri_response_bounds_by_hand() {
        // The issue's set, each job needing 14, 15 and 22 ms of its chunk:
        // busy period 14 + 15 + 30 = 59 ms. τ1 (due 20 after release): at
        // a = 0 alone, 14; at a = 10 its deadline (30) ties τ2's, whose
        // 15 ms count: 14 + 15 − 10 = 19. τ2: τ1's chunk (due at 20) first,
        // 15 + 14 = 29. τ3: both, 22 + 14 + 15 = 51.
        let t1 = sp(14, 20, 100);
        let t2 = sp(15, 30, 100);
        let t3 = sp(30, 100, 100);
        let r = |others: &[Demand], e: Nanos, d: Nanos| {
            response_bound(others, e * MS, d * MS, 100 * MS).map(|x| x as f64 / MS as f64)
        };
        assert_eq!(r(&[t2, t3], 14, 20), Some(19.0));
        assert_eq!(r(&[t1, t3], 15, 30), Some(29.0));
        assert_eq!(r(&[t1, t2], 22, 100), Some(51.0));
        // Two reservations, (2/3/4) and (3/5/10): the second's job at 0 waits
        // for the first's chunk (due at 3), runs 2–5: 5; released at a = 2
        // (due 7) it meets the chunks due at 3 and 7: 2 + 2 + 3 − 2 = 5
        // too. A renewable reservation of load 1 leaves no busy period's end.
        assert_eq!(
            response_bound(&[sp(2, 3, 4)], 3 * MS, 5 * MS, 10 * MS),
            Some(5 * MS)
        );
        assert_eq!(
            response_bound(
                &[Demand::Fluid {
                    q: 10 * MS,
                    p: 10 * MS
                }],
                MS,
                5 * MS,
                10 * MS
            ),
            None
        );
    }

    #[test]
    fn renewable_and_ramp_servers_demand_from_the_first_instant() {
        // A chunk taken up again at a wake-up keeps at most its share of
        // the time to its deadline: Q·L/P for a renewable reservation in any
        // window, the ramp ⌊L/P⌋·Q + min(Q, Q·(L mod P)/D) for a
        // constrained one.
        let f = Demand::Fluid {
            q: 30 * MS,
            p: 100 * MS,
        };
        assert_eq!(f.dbf(10 * MS as u128), 3 * MS as u128);
        assert_eq!(f.dbf(99 * MS as u128), 29_700_000);
        assert_eq!(f.dbf(150 * MS as u128), 45 * MS as u128);
        let r = Demand::Ramp {
            q: 10 * MS,
            d: 20 * MS,
            p: 100 * MS,
        };
        assert_eq!(r.dbf(10 * MS as u128), 5 * MS as u128);
        assert_eq!(r.dbf(20 * MS as u128), 10 * MS as u128);
        assert_eq!(r.dbf(99 * MS as u128), 10 * MS as u128);
        assert_eq!(r.dbf(110 * MS as u128), 15 * MS as u128);
        // τ1 14/20 with a renewable 30/100 beside it: h(20) = 14 + 6 = 20
        // fits; with τ2 15/30 too, h(30) = 14 + 15 + 9 = 38 > 30.
        assert_eq!(qpa(&[sp(14, 20, 100), f]), Ok(()));
        assert!(qpa(&[sp(14, 20, 100), sp(15, 30, 100), f]).is_err());
    }

    /// QPA decides exactly as checking `h(t) ≤ t` at every integer `t` up
    /// to a bound past which it holds, on 3000 random small sets (sporadic
    /// and renewable reservations, utilisation up to and a little over 1).
    #[test]
    fn qpa_agrees_with_checking_every_instant() {
        let mut rng = crate::rng::Rng::new(27);
        let mut decided = [0u32; 2];
        for _ in 0..3000 {
            let n = 1 + rng.range_u64(0, 3) as usize;
            let reservations: Vec<Demand> = (0..n)
                .map(|_| {
                    let p = rng.range_u64(2, 30);
                    let d = rng.range_u64(1, p);
                    let q = rng.range_u64(1, d);
                    if d == p && rng.chance(0.2) {
                        Demand::Fluid { q, p }
                    } else if d < p && rng.chance(0.2) {
                        Demand::Ramp { q, d, p }
                    } else {
                        Demand::Sporadic { q, d, s: p }
                    }
                })
                .collect();
            // Past Σ Q + U·L ≤ L (U < 1) nothing fails; with U ≥ 1 a miss
            // shows within the hyperperiod-sized horizon checked here.
            let brute = (1..=20_000u64).all(|t| demand(&reservations, t) <= t as u128)
                && crate::edf::sum_le_one(
                    &reservations.iter().map(Demand::rate).collect::<Vec<_>>(),
                );
            let fast = qpa(&reservations);
            // `Limit` only where U = 1 with renewable or ramp reservations.
            if fast == Err(Failure::Limit) {
                continue;
            }
            assert_eq!(fast.is_ok(), brute, "{reservations:?}: {fast:?}");
            decided[usize::from(brute)] += 1;
        }
        // Both verdicts, about as often; 3 sets left undecided (`Limit`:
        // load exactly 1 with ramp servers). Deterministic: heir's seeded
        // generator.
        assert_eq!(decided, [1572, 1425]);
    }
}
