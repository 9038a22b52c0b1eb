//! What heir-rt cannot apply to the kernel is counted, with the last error,
//! and read back: `heir::thread::apply_stats` (`ApplyStats::since` for a
//! span), a run's `RealRun::apply`; from C, `heir_apply_stats` (in `capi`).
//!
//! The failure is real: the thread that applies a boost has dropped
//! `CAP_SYS_NICE`, so the kernel refuses to lower a nice-10 thread's nice
//! value (`RLIMIT_NICE` is 0) with `EPERM`.

use std::sync::mpsc;

use heir::{sys, PiCondvar, PiMutex, WaitResult};
use heir_runner::run::{run, RunConfig};

use crate::common::*;

/// Drops `CAP_SYS_NICE` from the calling thread's effective set.
/// Capabilities are per thread (threads it starts inherit them); the rest
/// of the process keeps it.
pub fn drop_sys_nice() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_NICE: u32 = 23;
    let mut h = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: `h` and `d` are the kernel's `__user_cap_header_struct` and
    // two `__user_cap_data_struct`s (version 3), live and writable.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    assert_eq!(r, 0, "capget");
    d[0].effective &= !(1 << CAP_SYS_NICE);
    // SAFETY: as above; capset only reads them.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, d.as_ptr()) };
    assert_eq!(r, 0, "capset");
}

#[test]
fn a_boost_the_kernel_refuses_is_counted_with_its_errno_and_thread() {
    let Some(_rt) = rt_or_skip("apply_errors::refused", 30) else {
        return;
    };
    let before = heir::thread::apply_stats();
    let (tid_tx, tid_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let helper = std::thread::spawn(move || {
        heir::thread::set_sched(&heir::sched::other(10)).expect("nice 10");
        tid_tx.send(heir::thread::current_tid()).expect("send");
        let _ = done_rx.recv();
    });
    let htid = tid_rx.recv().expect("helper tid");
    let waiter = std::thread::spawn(move || {
        heir::thread::set_sched(&heir::sched::other(0)).expect("nice 0");
        drop_sys_nice();
        let m = PiMutex::new(());
        let cv = PiCondvar::new();
        cv.add_helper(htid).expect("helper");
        let mut g = m.lock().expect("lock");
        // The helper is lent nice 0: refused, counted, and the wait goes on.
        cv.wait_until(&mut g, sys::now_ns() + 20_000_000)
            .expect("wait")
    });
    let waited = waiter.join().expect("waiter");
    let _ = done_tx.send(());
    helper.join().expect("helper");
    assert_eq!(waited, WaitResult::TimedOut);
    let d = heir::thread::apply_stats().since(&before);
    assert!(d.setattr_errors >= 1, "{d:?}");
    assert_eq!(
        (d.last_errno, d.last_error_tid),
        (libc::EPERM, htid),
        "{d:?}"
    );
    assert_eq!((d.unexpressible, d.engine_errors), (0, 0), "{d:?}");
    let lines = d.problems(|t| (t == htid).then(|| "helper".to_string()));
    assert!(
        lines[0].contains(" failed (last: EPERM on helper, tid "),
        "{lines:?}"
    );
    // Nothing new since then: `since` of itself is empty.
    let now = heir::thread::apply_stats();
    assert!(now.since(&now).problems(|_| None).is_empty());
}

/// Low (nice 10) holds a PI mutex 3 ms of every 10 ms; High (nice 0)
/// wants it 1 ms into each period: heir-rt lends Low nice 0.
const NICE_BOOST: &str = r#"{
  "global" : { "duration" : 0.3, "default_policy" : "SCHED_OTHER", "pi_enabled" : true },
  "tasks" : {
    "Low" : { "priority" : 10, "lock" : "m", "run" : 3000, "unlock" : "m",
              "timer" : { "ref" : "unique", "period" : 10000 } },
    "High" : { "priority" : 0, "delay" : 1000, "lock" : "m", "run" : 100, "unlock" : "m",
               "timer" : { "ref" : "unique", "period" : 10000 } }
  }
}"#;

#[test]
fn a_run_reports_the_boosts_the_kernel_refused() {
    let Some(rt) = rt_or_skip("apply_errors::run", 30) else {
        return;
    };
    let mut sc = heir_scenario::parse_str(NICE_BOOST, "nice.json").expect("valid file");
    for t in &mut sc.tasks {
        t.cpus = Some(vec![rt.cpu]);
    }
    // The run's threads inherit the capabilities of the thread that starts
    // them: no real-time policy is needed, so the run goes ahead.
    let real = std::thread::spawn(move || {
        drop_sys_nice();
        run(&sc, &RunConfig::default())
    })
    .join()
    .expect("runner")
    .expect("run");
    let a = &real.apply;
    assert!(a.setattr_errors >= 1, "{a:?}");
    assert_eq!(a.last_errno, libc::EPERM, "{a:?}");
    assert_eq!(real.thread_name(a.last_error_tid).as_deref(), Some("Low"));
    let names: Vec<&str> = real.tids.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Low", "High"]);
    // The boosts the kernel refused change nothing else: both ran.
    assert!(
        real.report.tasks.iter().all(|t| t.jobs > 0),
        "{:?}",
        real.report
    );
}
