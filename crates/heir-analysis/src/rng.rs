//! A small deterministic random number generator (xoshiro256** seeded by
//! SplitMix64), so that every generated task set is reproducible bit for bit
//! from its seed, whatever the platform and the number of threads.

/// SplitMix64 step: a bijective 64-bit mixer, used to derive seeds.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derives the seed of one item of a sweep from `(seed, point, index)`: the
/// same triple always gives the same stream, independently of the order in
/// which items are generated.
pub fn derive_seed(seed: u64, point: u64, index: u64) -> u64 {
    splitmix64(splitmix64(splitmix64(seed) ^ point.wrapping_mul(0xA24B_AED4_963E_E407)) ^ index)
}

/// xoshiro256** (Blackman & Vigna).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut s = [0u64; 4];
        for word in &mut s {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            *word = splitmix64(x);
        }
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)` (returns `lo` when `hi <= lo`).
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        if hi <= lo {
            lo
        } else {
            lo + (hi - lo) * self.f64()
        }
    }

    /// Uniform integer in `[lo, hi]` (inclusive; returns `lo` when `hi <= lo`).
    pub fn range_u64(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        // Lemire's nearly-divisionless method, with rejection for exactness.
        let n = span + 1;
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return lo + (m >> 64) as u64;
            }
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range_u64(0, i as u64) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_ranges_hold() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = Rng::new(1);
        for _ in 0..10_000 {
            let x = r.range_u64(3, 9);
            assert!((3..=9).contains(&x));
            let f = r.f64();
            assert!((0.0..1.0).contains(&f));
        }
        assert_ne!(derive_seed(1, 0, 0), derive_seed(1, 0, 1));
        assert_ne!(derive_seed(1, 0, 1), derive_seed(1, 1, 0));
    }
}
