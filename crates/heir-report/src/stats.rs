//! Streaming response-time statistics: exact count, min, max and mean;
//! percentiles from a log-linear histogram with bounded memory.
//!
//! # Precision
//!
//! Values are nanoseconds (`u64`). The histogram is HDR-style log-linear:
//!
//! - values below 2048 ns have a bucket each (exact);
//! - a value `v` in the octave `[2^e, 2^(e+1))`, `e >= 11`, falls in a bucket
//!   of width `2^(e-10)`: 1024 buckets per octave, so a bucket's lower bound
//!   is within a relative error of `2^-10` (< 0.1 %) of every value in it.
//!
//! There are at most [`ResponseStats::MAX_BUCKETS`] buckets whatever the run
//! length. Storage is sparse by quarter octave: 256 counters (1 KiB) are
//! allocated the first time a value falls in their range, so recording is
//! O(1) and the memory of a task's histogram is fixed by the range its
//! response times span (typically a few chunks), never by the number of
//! jobs.
//!
//! `count`, `min`, `max` and the sum (hence `mean`) are exact. The p-th
//! percentile is the lower bound of the smallest bucket whose cumulative count
//! reaches `ceil(p/100 · n)`, clamped to `[min, max]` (so `p50` of a single
//! value is that value, and a percentile is never outside the observed range).

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

/// Sub-bucket bits per octave: relative error `2^-SUB_BITS`.
const SUB_BITS: u32 = 10;
/// Values below this are stored exactly (one bucket each).
const LINEAR_LIMIT: u64 = 2 << SUB_BITS; // 2048
/// Buckets per chunk (a quarter octave above the linear range): small
/// chunks keep the zeroed memory a task touches, and the scan of a chunk
/// for a percentile, short.
const CHUNK: usize = 1 << (SUB_BITS - 2);

/// Accumulates response times (ns). See the module docs for the precision.
///
/// Storage is sparse: a chunk of 256 `u32` counters (1 KiB, a quarter
/// octave) is allocated the first time a value falls in its range (at most
/// 220 chunks), so recording is O(1) and memory stops growing once the
/// range a task's response times span is touched. A counter that would pass
/// `u32::MAX` spills into a small exact side table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseStats {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// Non-empty buckets.
    nonzero: usize,
    /// `chunks[i]` counts buckets `i·256 .. (i+1)·256`.
    chunks: Vec<Option<Box<[u32; CHUNK]>>>,
    /// `sums[i]`: total count of chunk `i` (percentiles skip whole chunks).
    sums: Vec<u64>,
    /// Counts beyond `u32::MAX`, by bucket index (sorted).
    spill: Vec<(u32, u64)>,
}

impl ResponseStats {
    /// The largest number of buckets a histogram can ever hold (every
    /// possible `u64` value class).
    pub const MAX_BUCKETS: usize = (LINEAR_LIMIT as usize) + (64 - 11) * (1 << SUB_BITS);

    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one response time, in ns. O(1).
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
        self.add_to_bucket(bucket_index(ns) as usize, 1);
    }

    fn add_to_bucket(&mut self, idx: usize, n: u64) {
        let (c, off) = (idx / CHUNK, idx % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
            self.sums.resize(c + 1, 0);
        }
        self.sums[c] += n;
        let chunk = self.chunks[c].get_or_insert_with(|| Box::new([0u32; CHUNK]));
        let cur = chunk[off];
        if cur == 0 {
            self.nonzero += 1;
        }
        let room = u64::from(u32::MAX - cur);
        if n <= room {
            chunk[off] = cur + n as u32;
        } else {
            chunk[off] = u32::MAX;
            let extra = n - room;
            let key = idx as u32;
            match self.spill.binary_search_by_key(&key, |&(i, _)| i) {
                Ok(pos) => self.spill[pos].1 += extra,
                Err(pos) => self.spill.insert(pos, (key, extra)),
            }
        }
    }

    /// The count of bucket `idx` whose chunk counter is `n` (adds the
    /// spill past `u32::MAX`).
    fn bucket_total(&self, idx: u32, n: u32) -> u64 {
        let extra = if n == u32::MAX {
            self.spill
                .binary_search_by_key(&idx, |&(i, _)| i)
                .map_or(0, |pos| self.spill[pos].1)
        } else {
            0
        };
        u64::from(n) + extra
    }

    /// Non-empty buckets in increasing value order: (bucket index, count).
    fn buckets(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.chunks.iter().enumerate().flat_map(move |(c, chunk)| {
            chunk.iter().flat_map(move |arr| {
                arr.iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(move |(off, &n)| {
                        let idx = (c * CHUNK + off) as u32;
                        (idx, self.bucket_total(idx, n))
                    })
            })
        })
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

    /// Number of non-empty histogram buckets (bounded by
    /// [`Self::MAX_BUCKETS`], independent of the number of values).
    pub fn bucket_count(&self) -> usize {
        self.nonzero
    }

    /// Number of 256-bucket chunks allocated (1 KiB each; at most
    /// [`Self::MAX_BUCKETS`] / 256 = 220).
    pub fn chunk_count(&self) -> usize {
        self.chunks.iter().filter(|c| c.is_some()).count()
    }

    /// Merges `other` into `self` (e.g. the threads of one task).
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
        for (idx, n) in other.buckets() {
            self.add_to_bucket(idx as usize, n);
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

    /// Percentiles `ps` (ascending) in one pass: whole chunks are skipped
    /// by their totals, only the chunk where a rank is reached is scanned.
    fn percentiles_ns<const N: usize>(&self, ps: [f64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        if self.count == 0 {
            return out;
        }
        let ranks = ps.map(|p| self.rank(p));
        let mut next = 0;
        let mut cumulative = 0u64;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let Some(arr) = chunk else {
                continue;
            };
            if next == N {
                break;
            }
            if cumulative + self.sums[c] < ranks[next] {
                cumulative += self.sums[c];
                continue;
            }
            for (off, &n) in arr.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                let idx = (c * CHUNK + off) as u32;
                cumulative += self.bucket_total(idx, n);
                while next < N && cumulative >= ranks[next] {
                    out[next] = Some(bucket_lower(idx).clamp(self.min, self.max));
                    next += 1;
                }
                if next == N {
                    break;
                }
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

/// The bucket of `v`: exact below [`LINEAR_LIMIT`], then 1024 per octave.
fn bucket_index(v: u64) -> u32 {
    if v < LINEAR_LIMIT {
        return v as u32;
    }
    let e = 63 - v.leading_zeros(); // >= 11
    let shift = e - SUB_BITS;
    let sub = (v >> shift) as u32 - (1 << SUB_BITS); // 0..1024
    LINEAR_LIMIT as u32 + (e - 11) * (1 << SUB_BITS) + sub
}

/// The smallest value of bucket `idx`.
fn bucket_lower(idx: u32) -> u64 {
    if u64::from(idx) < LINEAR_LIMIT {
        return u64::from(idx);
    }
    let rel = idx - LINEAR_LIMIT as u32;
    let e = 11 + rel / (1 << SUB_BITS);
    let sub = u64::from(rel % (1 << SUB_BITS));
    let shift = e - SUB_BITS;
    ((1u64 << SUB_BITS) + sub) << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_summary_is_all_none() {
        let s = ResponseStats::new();
        assert_eq!(s.count(), 0);
        assert_eq!(s.summary(), ResponseSummary::default());
        assert_eq!(s.percentile_ns(50.0), None);
    }

    #[test]
    fn small_values_are_exact() {
        let mut s = ResponseStats::new();
        for v in 0..2048u64 {
            s.record(v);
        }
        assert_eq!(s.count(), 2048);
        assert_eq!(s.percentile_ns(50.0), Some(1023));
        assert_eq!(s.percentile_ns(100.0), Some(2047));
        assert_eq!(s.bucket_count(), 2048);
    }

    #[test]
    fn bucket_roundtrip_and_relative_error() {
        let mut v = 2048u64;
        while v < u64::MAX / 3 {
            for x in [v, v + 1, v * 3 / 2, v * 2 - 1] {
                let idx = bucket_index(x);
                let lo = bucket_lower(idx);
                assert!(lo <= x, "{x}: lower {lo}");
                assert!((x - lo) as f64 <= x as f64 / 1024.0, "{x}: lower {lo}");
                assert_eq!(bucket_index(lo), idx);
                assert!((idx as usize) < ResponseStats::MAX_BUCKETS);
            }
            v = v * 2 + 7;
        }
        assert_eq!(
            bucket_index(u64::MAX) as usize,
            ResponseStats::MAX_BUCKETS - 1
        );
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
    }

    #[test]
    fn counters_spill_past_u32() {
        let mut a = ResponseStats::new();
        a.record(5000);
        let mut big = ResponseStats::new();
        big.add_to_bucket(bucket_index(5000) as usize, u64::from(u32::MAX) + 10);
        big.count = u64::from(u32::MAX) + 10;
        big.min = 5000;
        big.max = 5000;
        big.sum = u128::from(big.count) * 5000;
        a.merge(&big);
        assert_eq!(a.count(), u64::from(u32::MAX) + 11);
        assert_eq!(
            a.buckets().collect::<Vec<_>>(),
            vec![(bucket_index(5000), u64::from(u32::MAX) + 11)]
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
}
