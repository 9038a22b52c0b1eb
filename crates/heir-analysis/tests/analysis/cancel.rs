//! A cancel flag stops an analysis early (Python's Ctrl-C, issue 21).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use heir_analysis::model::{Task, TaskSet};
use heir_analysis::{analyze_set_cancellable, CancelFlag, ErrorKind};

use crate::US;

/// `n` tasks at one priority, task k working `p_k` µs every `n·p_k` µs
/// (p_k = 1000 + k): the level utilisation is exactly 1, the busy period
/// the least common multiple of the periods, so every task's busy window
/// runs to the step limit (10⁶ steps of n terms each).
pub fn slow_set(n: u64) -> TaskSet {
    TaskSet {
        tasks: (0..n)
            .map(|k| {
                let p = 1000 + k;
                Task::fixed(format!("T{k}"), 0, 50, n * p * US, p * US, vec![], vec![])
            })
            .collect(),
        servers: vec![],
        mutexes: vec![],
        pi_cv: true,
    }
}

#[test]
fn a_set_flag_stops_the_analysis() {
    let flag = CancelFlag::default();
    flag.store(true, Ordering::Relaxed);
    let e = analyze_set_cancellable(&slow_set(200), &flag).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert_eq!(e.to_string(), "the analysis was cancelled");
}

#[test]
fn a_flag_set_while_it_runs_stops_it_promptly() {
    let flag = CancelFlag::default();
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::Relaxed);
            Instant::now()
        })
    };
    let e = analyze_set_cancellable(&slow_set(200), &flag).unwrap_err();
    let stopped = Instant::now();
    let set_at = setter.join().unwrap();
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert!(
        stopped.duration_since(set_at) < Duration::from_secs(1),
        "{:?} after the flag",
        stopped.duration_since(set_at)
    );
}

#[test]
fn the_slow_set_is_slow_and_its_windows_end_at_the_step_limit() {
    // What the tests above interrupt: without a flag each task's window
    // gives up at the limit (bounded work, unbounded verdict).
    let start = Instant::now();
    let r = heir_analysis::analyze_set(&slow_set(3)).unwrap();
    for t in &r.tasks {
        assert_eq!(t.wcrt_us, None, "{}", t.name);
        assert_eq!(
            t.reason.as_deref(),
            Some("the busy period did not close within the analysis limit (1000000 fixed-point steps)")
        );
    }
    assert!(start.elapsed() < Duration::from_secs(30));
}
