//! The calibration of a run on a CPU that another program's real-time
//! thread holds: it gives up after its wait instead of hanging the run (a
//! `SCHED_FIFO` 50 busy loop on one of the run's CPUs kept `heir run` from
//! ever starting, then from exiting).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use heir::sys;
use heir_runner::busy::calibrate_within;

use crate::common::*;

#[test]
fn a_cpu_held_by_a_fifo_loop_is_given_up_on_not_waited_for() {
    let Some(rt) = rt_or_skip("calibration::held", 20) else {
        return;
    };
    // The loop and the calibration on another CPU than the test's own
    // (where this thread runs at FIFO 1: the loop would stop it too).
    let Some(cpu) = sys::allowed_cpus().into_iter().find(|&c| c != rt.cpu) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "calibration::held: needs two CPUs under CI=true"
        );
        eprintln!("calibration::held: SKIPPED: one CPU only");
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    // A FIFO 50 loop on the CPU for at most 1.5 s (bounded).
    let hog = {
        let (stop, started) = (stop.clone(), started.clone());
        std::thread::spawn(move || {
            sys::set_affinity(0, &[cpu]).expect("pin");
            sys::sched_setattr(sys::gettid(), &heir::sched::fifo(50)).expect("FIFO 50");
            started.store(true, Ordering::Release);
            let end = sys::now_ns() + 1_500_000_000;
            while !stop.load(Ordering::Relaxed) && sys::now_ns() < end {
                std::hint::spin_loop();
            }
            let _ = sys::sched_setattr(sys::gettid(), &heir::sched::other(0));
        })
    };
    while !started.load(Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let t0 = sys::now_ns();
    let got = calibrate_within(cpu, 300_000_000);
    let waited = sys::now_ns() - t0;
    stop.store(true, Ordering::Release);
    hog.join().expect("hog");
    assert_eq!(got, None, "the CPU held by the loop calibrated");
    // Given up at its wait (300 ms), not when the loop ended (1.5 s).
    assert!(waited < 1_200_000_000, "waited {waited} ns");
    // Free again, the CPU calibrates.
    let again = calibrate_within(cpu, 3_000_000_000).expect("a free CPU calibrates");
    assert!(again.samples >= 5 && again.ns_per_loop > 0.0, "{again:?}");
}
