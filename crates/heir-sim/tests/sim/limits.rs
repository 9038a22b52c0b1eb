//! Time near the u64-nanosecond limit and the CPU count (issue 7, items 2
//! and 3), for scenarios built in code: the reader refuses these values in
//! files, the simulator must still end, with a clear error or a right
//! result, never a hang, a wrap or a huge allocation.

use std::time::{Duration, Instant};

use heir_scenario::limits::{MAX_CPUS, MAX_TIME_US};
use heir_scenario::{EventKind, MutexProtocol};
use heir_sim::{cpu_count, NullObserver, SimConfig, SimError, Simulator};

use crate::common::*;

fn err(sc: &heir_scenario::Scenario, cfg: &SimConfig) -> SimError {
    match heir_sim::simulate(sc, cfg, &mut NullObserver) {
        Err(e) => e,
        Ok(r) => panic!("expected an error, got {r:?}"),
    }
}

const HORIZON: &str = "global.duration: simulated time would pass heir's time limit of \
                       8640000 s (100 days) before every task ends: set global.duration or pass --duration";

#[test]
fn a_delay_past_the_time_limit_stops_with_an_error() {
    // Was: "1000 µs of run, response 0" (u64::MAX delay, time saturated).
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(1000)]).delay(u64::MAX));
    assert_eq!(err(&b.sc, &SimConfig::default()).to_string(), HORIZON);
    // Was: never ends (a delay of 18446744073709551 µs and a timer).
    let mut b = B::new();
    let t = b.timer("unique", heir_scenario::TimerMode::Relative);
    b.task(fifo("A", 10, vec![run_us(1000), timer(t, 1000)]).delay(18_446_744_073_709_551));
    let start = Instant::now();
    assert_eq!(err(&b.sc, &SimConfig::default()).to_string(), HORIZON);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_run_past_the_time_limit_ends_with_the_duration() {
    // Was: never ends, growing past 1.5 GB.
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(9_223_372_036_854_775_807)]).loops(None));
    let start = Instant::now();
    let (r, _) = run(&b.sc, &config(1000));
    assert_eq!(r.duration_us, 1e6);
    assert_eq!(r.tasks[0].jobs, 0);
    assert!(start.elapsed() < Duration::from_secs(5));
    // Without a duration: was a run reported done at u64::MAX ns.
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(9_223_372_036_854_775_807)]));
    assert_eq!(err(&b.sc, &SimConfig::default()).to_string(), HORIZON);
    // Without a duration, a long finite loop stops at the time limit.
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(1_000_000_000)]).loops(Some(1_000_000_000)));
    assert_eq!(err(&b.sc, &SimConfig::default()).to_string(), HORIZON);
}

#[test]
fn durations_obey_the_time_limit() {
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(1000)]).loops(None));
    let cfg = |us| SimConfig {
        duration_us: Some(us),
        ..SimConfig::default()
    };
    assert_eq!(
        err(&b.sc, &cfg(MAX_TIME_US + 1)).to_string(),
        "global.duration: duration 8640000000001 µs is beyond heir's time limit of 8640000000000 µs (100 days)"
    );
    b.sc.global.duration_s = Some(1e308);
    assert_eq!(
        err(&b.sc, &SimConfig::default()).to_string(),
        "global.duration: duration 1e308 s is beyond heir's time limit of 8640000 s (100 days)"
    );
    // The limit itself is a duration like any other.
    assert!(Simulator::new(&b.sc, &cfg(MAX_TIME_US), &mut NullObserver).is_ok());
}

#[test]
fn the_cpu_count_is_stated_or_derived() {
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(1000)]).cpus(Some(vec![7])));
    b.task(fifo("B", 10, vec![run_us(1000)]).cpus(None));
    // 1 + the largest CPU named: "cpus": [7] simulates 8 CPUs.
    assert_eq!(cpu_count(&b.sc, &SimConfig::default()), Ok(8));
    let (_, rec) = b.run();
    assert_eq!(rec.info.as_ref().map(|i| i.cpus), Some(8));
    // Stated: more CPUs than named.
    let cfg = SimConfig {
        cpus: Some(16),
        ..SimConfig::default()
    };
    assert_eq!(cpu_count(&b.sc, &cfg), Ok(16));
    let (_, rec) = run(&b.sc, &cfg);
    assert_eq!(rec.info.as_ref().map(|i| i.cpus), Some(16));
    // Fewer than named: refused at the task, with its position.
    let cfg = SimConfig {
        cpus: Some(4),
        ..SimConfig::default()
    };
    let e = err(&b.sc, &cfg);
    assert_eq!(
        e.to_string(),
        "1:1: at tasks.A: task A runs on CPU 7, but the simulation has 4 CPUs (--cpus 4): CPU numbers go from 0 to 3"
    );
    assert_eq!(cpu_count(&b.sc, &cfg), Err(e));
    for n in [0, MAX_CPUS + 1] {
        let cfg = SimConfig {
            cpus: Some(n),
            ..SimConfig::default()
        };
        assert_eq!(
            err(&b.sc, &cfg).to_string(),
            format!("--cpus: expected a number of CPUs from 1 to 1024, found {n}")
        );
    }
}

#[test]
fn a_cpu_past_the_limit_is_refused_not_allocated() {
    // Was: 13.7 GB and more than a minute ("cpus": [10000000]).
    let mut b = B::new();
    b.task(fifo("A", 10, vec![run_us(1000)]).cpus(Some(vec![10_000_000])));
    assert_eq!(
        err(&b.sc, &SimConfig::default()).to_string(),
        "1:1: at tasks.A: task A runs on CPU 10000000, but heir's limit is 1024 CPUs: CPU numbers go from 0 to 1023"
    );
}

#[test]
fn dynamic_errors_carry_the_position() {
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    b.task(fifo("T", 10, vec![run_us(10), EventKind::Unlock(m)]));
    let e = err(&b.sc, &SimConfig::default());
    assert_eq!(e.position(), Some((1, 1)));
    assert_eq!(e.path(), "tasks.T.phases.p0.e1");
    assert_eq!(
        e.to_string(),
        "1:1: at tasks.T.phases.p0.e1: thread T releases mutex m which it does not hold"
    );
    // A task's error: the zero-time livelock.
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    b.task(fifo("Spin", 10, vec![EventKind::Lock(m), EventKind::Unlock(m)]).loops(None));
    let e = err(&b.sc, &config(1));
    assert_eq!((e.position(), e.path()), (Some((1, 1)), "tasks.Spin"));
    assert!(e.message().starts_with("no time passes"), "{e}");
}
