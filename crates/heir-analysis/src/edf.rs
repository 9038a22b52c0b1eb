//! EDF / CBS admission tests of the M-BWI paper's §3.3, for `SCHED_DEADLINE`
//! reservations. `heir analyze` no longer uses them (the exact test of
//! [`crate::pdc`] replaced them: the blocking test bounds a waiter under
//! deadline inheritance by `D`, which a deadline owner running at its own,
//! later deadline refutes — docs/ANALYSIS.md §5.3); they are kept as the M-BWI
//! paper states them, with the exact comparisons the analysis shares.
//!
//! A reservation `(Q, P)` with relative deadline `D` is guaranteed `Q` units
//! of CPU every `P` once admitted. Two tests:
//!
//! - utilisation: `Σ_i Q_i / P_i ≤ 1` ([`utilisation_test`]);
//! - with blocking: `∀i: Σ_{D_j ≤ D_i} Q_j / P_j + B_i / P_i ≤ 1`
//!   ([`blocking_test`]), where `B_i` is the longest time a reservation can
//!   be blocked by reservations with a longer relative deadline.
//!
//! Sums of fractions are compared with 1 exactly (128-bit rationals); only
//! when a denominator would overflow does the comparison fall back to `f64`
//! with a relative tolerance of 1e-12.

use crate::model::Nanos;
pub use heir_core::Reservation;
use std::cmp::Ordering;

/// One reservation — the engine's type, `(Q, D, P)` in ns, the one the
/// simulator charges and the runtime maps onto `SCHED_DEADLINE` — and the
/// blocking it can suffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    /// `Q`, `D`, `P`.
    pub reservation: Reservation,
    /// `B`: worst-case blocking (0 for independent tasks).
    pub blocking: Nanos,
}

impl Reserved {
    /// `Q / P` as a fraction.
    fn utilisation(&self) -> (u64, u64) {
        (self.reservation.runtime_ns, self.reservation.period_ns)
    }
}

/// The outcome of an admission test.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// True if every inequality holds.
    pub admitted: bool,
    /// Left-hand side per reservation (for the utilisation test, the same
    /// total for every reservation).
    pub load: Vec<f64>,
}

/// `Σ Q_i / P_i ≤ 1`.
pub fn utilisation_test(res: &[Reserved]) -> Admission {
    let terms: Vec<(u64, u64)> = res.iter().map(Reserved::utilisation).collect();
    let ok = sum_le_one(&terms);
    let total: f64 = terms.iter().map(|&(n, d)| n as f64 / d as f64).sum();
    Admission {
        admitted: ok,
        load: vec![total; res.len()],
    }
}

/// `∀i: Σ_{D_j ≤ D_i} Q_j / P_j + B_i / P_i ≤ 1` (the M-BWI paper's §3.3).
pub fn blocking_test(res: &[Reserved]) -> Admission {
    let mut admitted = true;
    let mut load = Vec::with_capacity(res.len());
    let mut terms: Vec<(u64, u64)> = Vec::with_capacity(res.len() + 1);
    for r in res {
        terms.clear();
        terms.extend(
            res.iter()
                .filter(|o| o.reservation.deadline_ns <= r.reservation.deadline_ns)
                .map(Reserved::utilisation),
        );
        terms.push((r.blocking, r.reservation.period_ns));
        if !sum_le_one(&terms) {
            admitted = false;
        }
        load.push(terms.iter().map(|&(n, d)| n as f64 / d as f64).sum());
    }
    Admission { admitted, load }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// Exactly whether `Σ num/den ≤ 1` (zero denominators count as +∞ unless the
/// numerator is 0).
pub(crate) fn sum_le_one(terms: &[(u64, u64)]) -> bool {
    sum_vs_one(terms) != Ordering::Greater
}

/// Exactly whether `Σ num/den ≥ 1` (as [`sum_le_one`]).
pub(crate) fn sum_ge_one(terms: &[(u64, u64)]) -> bool {
    sum_vs_one(terms) != Ordering::Less
}

/// `Σ num/den` against 1, exactly as 128-bit rationals (when they would
/// overflow, in `f64` with 10⁻¹² counted as equal). Zero denominators count
/// as +∞ unless the numerator is 0.
fn sum_vs_one(terms: &[(u64, u64)]) -> Ordering {
    let (mut n, mut d): (u128, u128) = (0, 1);
    for &(a, b) in terms {
        if a == 0 {
            continue;
        }
        if b == 0 {
            return Ordering::Greater;
        }
        let (a, b) = (a as u128, b as u128);
        let g = gcd(d, b);
        let lcm = match (d / g).checked_mul(b) {
            Some(l) => l,
            None => return sum_vs_one_f64(terms),
        };
        let (Some(x), Some(y)) = (n.checked_mul(lcm / d), a.checked_mul(lcm / b)) else {
            return sum_vs_one_f64(terms);
        };
        let Some(s) = x.checked_add(y) else {
            return sum_vs_one_f64(terms);
        };
        let g2 = gcd(s, lcm);
        n = s / g2;
        d = lcm / g2;
        if n > d {
            return Ordering::Greater;
        }
    }
    n.cmp(&d)
}

fn sum_vs_one_f64(terms: &[(u64, u64)]) -> Ordering {
    let s: f64 = terms
        .iter()
        .map(|&(a, b)| if a == 0 { 0.0 } else { a as f64 / b as f64 })
        .sum();
    if s > 1.0 + 1e-12 {
        Ordering::Greater
    } else if s < 1.0 - 1e-12 {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_fractions_at_the_boundary() {
        // 1/2 + 1/3 + 1/6 = 1 exactly (f64 would give 0.9999999999999999).
        assert!(sum_le_one(&[(1, 2), (1, 3), (1, 6)]));
        assert!(!sum_le_one(&[(1, 2), (1, 3), (1, 6), (1, 1_000_000_007)]));
        assert!(sum_le_one(&[]));
        assert!(sum_ge_one(&[(1, 2), (1, 3), (1, 6)]));
        assert!(!sum_ge_one(&[(1, 2), (1, 3)]));
        assert!(sum_ge_one(&[(999, 1000), (1, 1000)]));
        assert!(!sum_ge_one(&[]));
    }
}
