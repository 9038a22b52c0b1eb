//! Streaming response-time statistics: exact count, min, max and mean;
//! percentiles from a log-linear histogram of fixed maximum size.
//!
//! # Precision
//!
//! Values are nanoseconds (`u64`). The histogram is log-linear (HDR-style)
//! at a *resolution* of `k` sub-bucket bits, `k` from 10 down to 0:
//!
//! - values below `2^(k+1)` ns have a bucket each (exact);
//! - a value `v` in the octave `[2^e, 2^(e+1))`, `e > k`, falls in a bucket
//!   of width `2^(e-k)`: `2^k` buckets per octave, so a bucket's lower bound
//!   is within a relative error of `2^-k` of every value in it.
//!
//! The buckets of resolution `k - 1` are unions of two buckets of
//! resolution `k`. A histogram holds at most [`ResponseStats::MAX_BUCKETS`]
//! (128) non-empty buckets, 8 bytes each (bucket index and count packed in
//! one `u64`): at most 1 KiB whatever the run length and the values. It
//! starts at `k = 10` (relative error `2^-10` < 0.1 %, the same buckets as
//! heir's earlier unbounded histogram); a value that would need a 129th
//! bucket halves the resolution (merges bucket pairs, `k - 1`) until the
//! buckets fit — the uniform collapse of UDDSketch (Epicoco et al., 2020).
//! So the resolution is always the finest `k ≤ 10` at which every value
//! recorded so far falls in at most 128 buckets: it depends on the values,
//! never on their order or number (merging two histograms gives the one of
//! both value sets). Values spanning less than a factor `2^w` touch at most
//! `w + 1` octaves, which guarantees `k ≥ floor(log2(128 / (w + 1)))`:
//! relative error ≤ 1/64 (1.6 %) within a factor 2 (a single octave),
//! ≤ 1/32 within a factor 4, ≤ 1/16 within a factor 16; a few distinct values
//! (periodic scenarios: exact µs or ms responses) keep `2^-10`. The current
//! resolution is [`ResponseStats::resolution_bits`].
//!
//! `count`, `min`, `max` and the sum (hence `mean`) are exact. The p-th
//! percentile is the lower bound of the smallest bucket whose cumulative count
//! reaches `ceil(p/100 · n)`, clamped to `[min, max]` (so `p50` of a single
//! value is that value, and a percentile is never outside the observed range).
//! A bucket counts up to `2^48 - 1` values (at heir's fastest, a year of
//! simulation of one task); past that it saturates (debug builds assert).

use serde::Serialize;

/// `{"min":…,"mean":…,"p50":…,"p90":…,"p99":…,"max":…}` in µs; all `null`
/// when there were no jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ResponseSummary {
    /// Smallest response time (µs), exact.
    pub min: Option<f64>,
    /// Mean response time (µs), exact up to `f64` rounding.
    pub mean: Option<f64>,
    /// Median (µs), within the histogram's precision.
    pub p50: Option<f64>,
    /// 90th percentile (µs), within the histogram's precision.
    pub p90: Option<f64>,
    /// 99th percentile (µs), within the histogram's precision.
    pub p99: Option<f64>,
    /// Largest response time (µs), exact.
    pub max: Option<f64>,
}

/// Sub-bucket bits of the finest resolution: relative error `2^-10`.
const MAX_BITS: u32 = 10;
/// Bits of a packed entry holding the count (the bucket index is above).
const COUNT_BITS: u32 = 48;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Accumulates response times (ns). See the module docs for the precision.
///
/// Storage: the non-empty buckets, sorted, each one `u64` (bucket index in
/// the top 16 bits, count in the low 48), at most
/// [`ResponseStats::MAX_BUCKETS`] of them (1 KiB). Recording is a binary
/// search among them; memory grows with the number of distinct buckets up
/// to that bound, never with the number of values. A value in the same
/// bucket as the one before it (a periodic task's usual response) is
/// counted without the search.
#[derive(Clone, Debug)]
pub struct ResponseStats {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// Sub-bucket bits of the buckets below (10 down to 0).
    bits: u32,
    /// Non-empty buckets, ascending: `index << 48 | count`.
    buckets: Vec<u64>,
    /// Where the last value was counted in `buckets` (a hint: checked
    /// before use, not part of the value).
    hint: usize,
}

/// Equal when they hold the same values (the search hint aside).
impl PartialEq for ResponseStats {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count
            && self.min == other.min
            && self.max == other.max
            && self.sum == other.sum
            && self.bits == other.bits
            && self.buckets == other.buckets
    }
}

impl Eq for ResponseStats {}

impl Default for ResponseStats {
    fn default() -> Self {
        ResponseStats {
            count: 0,
            min: 0,
            max: 0,
            sum: 0,
            bits: MAX_BITS,
            buckets: Vec::new(),
            hint: 0,
        }
    }
}

impl ResponseStats {
    /// The most non-empty buckets a histogram holds (8 bytes each): past
    /// it, the resolution halves (module docs).
    pub const MAX_BUCKETS: usize = 128;

    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one response time, in ns. O(log [`Self::MAX_BUCKETS`])
    /// (plus a shift of at most 1 KiB when a new bucket is inserted).
    pub fn record(&mut self, ns: u64) {
        if self.count == 0 {
            self.min = ns;
            self.max = ns;
        } else {
            self.min = self.min.min(ns);
            self.max = self.max.max(ns);
        }
        self.count += 1;
        self.sum += u128::from(ns);
        self.add(bucket_index(ns, self.bits), 1);
    }

    /// Adds `n` values to bucket `idx` (at the current resolution), halving
    /// the resolution first if a new bucket would not fit.
    fn add(&mut self, mut idx: u32, n: u64) {
        loop {
            let key = u64::from(idx) << COUNT_BITS;
            if let Some(e) = self.buckets.get_mut(self.hint) {
                if *e >> COUNT_BITS == u64::from(idx) {
                    bump(e, key, n);
                    return;
                }
            }
            let pos = self.buckets.partition_point(|&e| e < key);
            self.hint = pos;
            if let Some(e) = self.buckets.get_mut(pos) {
                if *e >> COUNT_BITS == u64::from(idx) {
                    bump(e, key, n);
                    return;
                }
            }
            if self.buckets.len() < Self::MAX_BUCKETS {
                debug_assert!(n <= COUNT_MASK, "histogram bucket count past 2^48");
                self.buckets.insert(pos, key | n.min(COUNT_MASK));
                return;
            }
            // Full: one resolution coarser, then retry.
            let lower = bucket_lower(idx, self.bits);
            self.coarsen();
            idx = bucket_index(lower, self.bits);
        }
    }

    /// Halves the resolution: merges each pair of buckets (order kept,
    /// since coarser buckets are unions of consecutive finer ones).
    fn coarsen(&mut self) {
        debug_assert!(self.bits > 0, "128 buckets hold every u64 at resolution 0");
        let from = self.bits;
        self.bits -= 1;
        let mut out = 0usize;
        for i in 0..self.buckets.len() {
            let e = self.buckets[i];
            let idx = bucket_index(bucket_lower((e >> COUNT_BITS) as u32, from), self.bits);
            let key = u64::from(idx) << COUNT_BITS;
            if out > 0 && self.buckets[out - 1] >> COUNT_BITS == u64::from(idx) {
                let prev = self.buckets[out - 1];
                let c = ((prev & COUNT_MASK) + (e & COUNT_MASK)).min(COUNT_MASK);
                self.buckets[out - 1] = key | c;
            } else {
                self.buckets[out] = key | (e & COUNT_MASK);
                out += 1;
            }
        }
        self.buckets.truncate(out);
    }

    /// Non-empty buckets in increasing value order: (bucket index at the
    /// current resolution, count).
    fn entries(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.buckets
            .iter()
            .map(|&e| ((e >> COUNT_BITS) as u32, e & COUNT_MASK))
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Smallest value recorded (ns), if any.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// Largest value recorded (ns), if any.
    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Number of non-empty histogram buckets (at most
    /// [`Self::MAX_BUCKETS`], independent of the number of values).
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// The histogram's resolution: sub-bucket bits `k` (10 down to 0), a
    /// percentile's relative error is at most `2^-k` (module docs).
    pub fn resolution_bits(&self) -> u32 {
        self.bits
    }

    /// Bytes allocated for the buckets (at most 8 ×
    /// [`Self::MAX_BUCKETS`] = 1 KiB).
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<u64>()
    }

    /// Merges `other` into `self` (e.g. the threads of one task): the same
    /// histogram as recording both value sets.
    pub fn merge(&mut self, other: &ResponseStats) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            self.min = other.min;
            self.max = other.max;
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        self.count += other.count;
        self.sum += other.sum;
        for (idx, n) in other.entries() {
            let lower = bucket_lower(idx, other.bits);
            while self.bits > other.bits {
                self.coarsen();
            }
            self.add(bucket_index(lower, self.bits), n);
        }
    }

    /// The rank (1-based) of the p-th percentile among `count` values.
    fn rank(&self, p: f64) -> u64 {
        let rank = ((p / 100.0) * self.count as f64).ceil();
        if rank.is_nan() || rank < 1.0 {
            1
        } else if rank >= self.count as f64 {
            self.count
        } else {
            rank as u64
        }
    }

    /// Percentiles `ps` (ascending) in one pass over the buckets.
    fn percentiles_ns<const N: usize>(&self, ps: [f64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        if self.count == 0 {
            return out;
        }
        let ranks = ps.map(|p| self.rank(p));
        let mut next = 0;
        let mut cumulative = 0u64;
        for (idx, n) in self.entries() {
            cumulative += n;
            while next < N && cumulative >= ranks[next] {
                out[next] = Some(bucket_lower(idx, self.bits).clamp(self.min, self.max));
                next += 1;
            }
            if next == N {
                break;
            }
        }
        for o in out.iter_mut().skip(next) {
            *o = Some(self.max);
        }
        out
    }

    /// The p-th percentile in ns (`0 < p <= 100`), see the module docs.
    pub fn percentile_ns(&self, p: f64) -> Option<u64> {
        self.percentiles_ns([p])[0]
    }

    /// The summary in µs (all `None` without values).
    pub fn summary(&self) -> ResponseSummary {
        if self.count == 0 {
            return ResponseSummary::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let mean_ns = self.sum as f64 / self.count as f64;
        let [p50, p90, p99] = self.percentiles_ns([50.0, 90.0, 99.0]);
        ResponseSummary {
            min: Some(us(self.min)),
            mean: Some(mean_ns / 1000.0),
            p50: p50.map(us),
            p90: p90.map(us),
            p99: p99.map(us),
            max: Some(us(self.max)),
        }
    }
}

// At resolution 0 every u64 falls in one of 65 buckets (0, 1, then one per
// octave): coarsening always ends.
const _: () = assert!(65 <= ResponseStats::MAX_BUCKETS);

/// The bucket of `v` at resolution `bits`: exact below `2^(bits+1)`, then
/// `2^bits` per octave.
fn bucket_index(v: u64, bits: u32) -> u32 {
    let linear = 2u64 << bits;
    if v < linear {
        return v as u32;
    }
    let e = 63 - v.leading_zeros(); // > bits
    let sub = (v >> (e - bits)) as u32 - (1 << bits); // 0..2^bits
    linear as u32 + (e - bits - 1) * (1 << bits) + sub
}

/// Adds `n` to the count of bucket entry `e` (whose index is `key`'s).
fn bump(e: &mut u64, key: u64, n: u64) {
    let c = (*e & COUNT_MASK).saturating_add(n);
    debug_assert!(c <= COUNT_MASK, "histogram bucket count past 2^48");
    *e = key | c.min(COUNT_MASK);
}

/// The smallest value of bucket `idx` at resolution `bits`.
fn bucket_lower(idx: u32, bits: u32) -> u64 {
    let linear = 2u32 << bits;
    if idx < linear {
        return u64::from(idx);
    }
    let rel = idx - linear;
    let e = bits + 1 + rel / (1 << bits);
    let sub = u64::from(rel % (1 << bits));
    ((1u64 << bits) + sub) << (e - bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_values_count_like_any_order() {
        // Runs of equal responses (the hint's fast path) interleaved with
        // others, past the bucket bound (coarsening moves entries): the
        // same histogram as the values recorded sorted, and the same as
        // in reverse.
        let mut vals = Vec::new();
        for i in 0..400u64 {
            let v = 1_000 + (i * 7919) % 300 * 1_013;
            vals.extend(std::iter::repeat_n(v, 1 + (i % 4) as usize));
            vals.push(6_000_000);
        }
        let mut a = ResponseStats::new();
        vals.iter().for_each(|&v| a.record(v));
        let mut sorted = vals.clone();
        sorted.sort_unstable();
        let mut b = ResponseStats::new();
        sorted.iter().for_each(|&v| b.record(v));
        let mut c = ResponseStats::new();
        sorted.iter().rev().for_each(|&v| c.record(v));
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.summary(), b.summary());
        assert_eq!(a.count, vals.len() as u64);
    }

    #[test]
    fn empty_summary_is_all_none() {
        let s = ResponseStats::new();
        assert_eq!(s.count(), 0);
        assert_eq!(s.summary(), ResponseSummary::default());
        assert_eq!(s.percentile_ns(50.0), None);
        assert_eq!(s.heap_bytes(), 0);
    }

    #[test]
    fn small_values_are_exact() {
        let mut s = ResponseStats::new();
        for v in 0..128u64 {
            s.record(v);
        }
        assert_eq!(s.count(), 128);
        assert_eq!(s.resolution_bits(), 10);
        assert_eq!(s.percentile_ns(50.0), Some(63));
        assert_eq!(s.percentile_ns(100.0), Some(127));
        assert_eq!(s.bucket_count(), 128);
    }

    #[test]
    fn bucket_roundtrip_and_relative_error_at_every_resolution() {
        for bits in 0..=MAX_BITS {
            let mut v = 1u64;
            while v < u64::MAX / 3 {
                for x in [v, v + 1, v * 3 / 2, v * 2 - 1] {
                    let idx = bucket_index(x, bits);
                    let lo = bucket_lower(idx, bits);
                    assert!(lo <= x, "{bits}: {x}: lower {lo}");
                    assert!((x - lo) as f64 <= x as f64 / f64::from(1u32 << bits));
                    assert_eq!(bucket_index(lo, bits), idx);
                    assert!(idx < 1 << (64 - COUNT_BITS), "{bits}: {x}: index {idx}");
                    if bits > 0 {
                        // Coarser buckets are unions of finer ones.
                        assert_eq!(
                            bucket_index(bucket_lower(idx, bits), bits - 1),
                            bucket_index(x, bits - 1)
                        );
                    }
                }
                v = v * 2 + 7;
            }
            // Every u64 fits the 16 index bits; at resolution 0 the 65
            // buckets (0, 1, then one per octave) fit MAX_BUCKETS.
            assert!(bucket_index(u64::MAX, bits) < 1 << (64 - COUNT_BITS));
        }
        assert_eq!(bucket_index(u64::MAX, 0), 64);
    }

    #[test]
    fn summary_exact_min_max_mean_and_percentiles() {
        let mut s = ResponseStats::new();
        // 10 values: 1 ms .. 10 ms.
        for k in 1..=10u64 {
            s.record(k * 1_000_000);
        }
        let sum = s.summary();
        assert_eq!(sum.min, Some(1000.0));
        assert_eq!(sum.max, Some(10000.0));
        assert_eq!(sum.mean, Some(5500.0));
        // p50: rank 5 → 5 ms's bucket. 5_000_000 is in octave 2^22 with
        // width 2^12 = 4096 ns: floor(5e6 / 4096) = 1220, lower bound
        // 1220 · 4096 = 4_997_120 ns.
        assert_eq!(s.percentile_ns(50.0), Some(4_997_120));
        // p90: rank 9 → 9 ms in octave 2^23, width 8192:
        // floor(9e6 / 8192) = 1098 → 8_994_816 ns.
        assert_eq!(s.percentile_ns(90.0), Some(8_994_816));
        // p99 and p100: rank 10 → 10 ms: floor(1e7 / 8192) = 1220 →
        // 9_994_240 ns (inside [min, max], so not clamped).
        assert_eq!(s.percentile_ns(99.0), Some(9_994_240));
        assert_eq!(s.percentile_ns(100.0), Some(9_994_240));
    }

    #[test]
    fn percentile_clamped_to_min() {
        let mut s = ResponseStats::new();
        s.record(29_000_000);
        let sum = s.summary();
        assert_eq!(sum.p50, Some(29000.0));
        assert_eq!(sum.p99, Some(29000.0));
    }

    #[test]
    fn memory_is_bounded_by_distinct_buckets() {
        let mut s = ResponseStats::new();
        for k in 0..1_000_000u64 {
            s.record(10_000_000 + (k % 7) * 1_000_000);
        }
        assert_eq!(s.count(), 1_000_000);
        assert_eq!(s.bucket_count(), 7);
        assert_eq!(s.resolution_bits(), 10);
    }

    #[test]
    fn counts_pass_u32() {
        let mut a = ResponseStats::new();
        a.record(5000);
        let mut big = ResponseStats::new();
        big.add(bucket_index(5000, MAX_BITS), u64::from(u32::MAX) + 10);
        big.count = u64::from(u32::MAX) + 10;
        big.min = 5000;
        big.max = 5000;
        big.sum = u128::from(big.count) * 5000;
        a.merge(&big);
        assert_eq!(a.count(), u64::from(u32::MAX) + 11);
        assert_eq!(
            a.entries().collect::<Vec<_>>(),
            vec![(bucket_index(5000, MAX_BITS), u64::from(u32::MAX) + 11)]
        );
        assert_eq!(a.bucket_count(), 1);
        assert_eq!(a.percentile_ns(99.0), Some(5000));
    }

    #[test]
    fn merge_equals_recording_both() {
        let mut a = ResponseStats::new();
        let mut b = ResponseStats::new();
        let mut both = ResponseStats::new();
        for k in 0..100u64 {
            let v = k * 12_345 + 17;
            if k % 3 == 0 {
                a.record(v);
            } else {
                b.record(v);
            }
            both.record(v);
        }
        a.merge(&b);
        assert_eq!(a, both);
    }

    /// Values for the table-driven tests: (name, value of the k-th draw,
    /// octaves spanned `w`: every value is in `[2^a, 2^(a+w))`).
    type Distribution = (&'static str, fn(u64) -> u64, u32);

    fn distributions() -> Vec<Distribution> {
        fn mix(k: u64) -> u64 {
            let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        vec![
            // Uniform in one octave [1 ms, 2 ms).
            ("one octave", |k| 1 << 20 | (mix(k) % (1 << 20)), 1),
            // Uniform in [1 ms, 4 ms): two octaves.
            ("two octaves", |k| (1 << 20) + mix(k) % (3 << 20), 2),
            // Log-uniform over 16 octaves from 1 µs.
            (
                "16 octaves",
                |k| (1 << 10) << (mix(k) % 16) | (mix(k + 7) % 1024),
                16,
            ),
            // Every distinct value exactly a whole ms, 1..=100 ms.
            ("whole ms", |k| (1 + mix(k) % 100) * 1_000_000, 7),
        ]
    }

    #[test]
    fn percentiles_within_the_stated_relative_error() {
        for (name, draw, w) in distributions() {
            let mut s = ResponseStats::new();
            let mut all: Vec<u64> = (0..20_000u64).map(draw).collect();
            for &v in &all {
                s.record(v);
            }
            all.sort_unstable();
            let k = s.resolution_bits();
            // The guaranteed resolution: w octaves touch w + 1 at most.
            let floor = (ResponseStats::MAX_BUCKETS as u32 / (w + 1))
                .ilog2()
                .min(MAX_BITS);
            assert!(k >= floor, "{name}: resolution {k} < {floor}");
            assert!(s.bucket_count() <= ResponseStats::MAX_BUCKETS);
            assert!(s.heap_bytes() <= 1024, "{name}");
            assert_eq!(s.min_ns(), all.first().copied());
            assert_eq!(s.max_ns(), all.last().copied());
            for p in [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
                let rank = ((p / 100.0) * all.len() as f64).ceil() as usize;
                let exact = all[rank.clamp(1, all.len()) - 1];
                let got = s.percentile_ns(p).expect("values");
                assert!(got <= exact, "{name} p{p}: {got} > {exact}");
                assert!(
                    (exact - got) as f64 <= exact as f64 / f64::from(1u32 << k),
                    "{name} p{p}: {got} vs {exact} at resolution {k}"
                );
            }
        }
    }

    #[test]
    fn resolution_depends_on_the_values_not_their_order_or_split() {
        for (name, draw, _) in distributions() {
            let vals: Vec<u64> = (0..5_000u64).map(draw).collect();
            let mut fwd = ResponseStats::new();
            vals.iter().for_each(|&v| fwd.record(v));
            let mut rev = ResponseStats::new();
            vals.iter().rev().for_each(|&v| rev.record(v));
            assert_eq!(fwd, rev, "{name}: order");
            let (mut a, mut b) = (ResponseStats::new(), ResponseStats::new());
            for (i, &v) in vals.iter().enumerate() {
                if i % 5 == 0 {
                    a.record(v)
                } else {
                    b.record(v)
                }
            }
            b.merge(&a);
            // Same values, same histogram (the bucket vector may have a
            // different capacity, which equality ignores).
            assert_eq!(b, fwd, "{name}: merge");
        }
    }

    #[test]
    fn few_distinct_values_keep_the_finest_resolution() {
        let mut s = ResponseStats::new();
        for k in 0..100_000u64 {
            s.record((1 + k % 100) * 1_000_000);
        }
        assert_eq!(s.resolution_bits(), 10);
        assert_eq!(s.bucket_count(), 100);
    }
}
