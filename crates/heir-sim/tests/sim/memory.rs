//! Memory does not grow with simulated time: the histograms, the event list
//! and the queues stay the same size over a 10× longer run.

use heir_sim::{NullObserver, SimConfig, Simulator};

use crate::common::example;

fn footprint(pi_cv: bool, secs: u64) -> (heir_sim::Footprint, Vec<usize>, u64) {
    let sc = example("table1-client-server.json");
    let cfg = SimConfig {
        pi_cv: Some(pi_cv),
        duration_us: Some(secs * 1_000_000),
        ..SimConfig::default()
    };
    let mut obs = NullObserver;
    let mut sim = Simulator::new(&sc, &cfg, &mut obs).expect("new");
    let r = sim.run().expect("run");
    let buckets = sim.thread_stats().map(|(_, s)| s.bucket_count()).collect();
    (
        sim.footprint(),
        buckets,
        r.tasks.iter().map(|t| t.jobs).sum(),
    )
}

#[test]
fn footprint_is_flat_over_a_ten_times_longer_run() {
    for pi_cv in [false, true] {
        // Table I repeats every 600 ms (lcm of 40, 50, 60 ms).
        let (f6, b6, jobs6) = footprint(pi_cv, 6);
        let (f60, b60, jobs60) = footprint(pi_cv, 60);
        assert_eq!(jobs60, 10 * jobs6, "10× the jobs");
        assert_eq!(b6, b60, "histogram buckets per thread");
        assert_eq!(f6.histogram_buckets, f60.histogram_buckets);
        assert_eq!(f6.histogram_bytes, f60.histogram_bytes);
        assert!(
            f60.pending_events <= f6.pending_events + 4,
            "{f6:?} vs {f60:?}"
        );
        assert_eq!(f60.queued_requests, f6.queued_requests);
        assert!(f60.queued_requests <= 2, "at most one request per caller");
    }
}

#[test]
fn response_stats_size_is_bounded() {
    let mut s = heir_sim::ResponseStats::new();
    for k in 0..2_000_000u64 {
        s.record(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20);
    }
    assert_eq!(s.count(), 2_000_000);
    assert!(s.bucket_count() <= heir_sim::ResponseStats::MAX_BUCKETS);
    assert!(s.heap_bytes() <= 1024, "{} bytes", s.heap_bytes());
}
