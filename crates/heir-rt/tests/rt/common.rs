//! Shared test scaffolding: capability gate, serialisation (in this process
//! and across test binaries), a CPU free of other real-time work, watchdog,
//! pinned SCHED_FIFO threads, bounded busy loops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use heir::caps::{Capabilities, FileLock};
use heir::sys;
use heir_runner::cpus::{CpuClaim, Survey};

static SERIAL: Mutex<()> = Mutex::new(());

/// A real-time test's environment; holds the serialisation locks, the
/// claim on its CPU and the watchdog for the test's duration.
pub struct Rt {
    /// The CPU the test pins its threads to: the allowed CPU with the least
    /// real-time work of other programs (the last one among equals).
    pub cpu: u32,
    _serial: MutexGuard<'static, ()>,
    _across: FileLock,
    _claim: Vec<CpuClaim>,
    _dog: Watchdog,
    _main: MainThread,
}

/// The test's own thread, made `SCHED_FIFO` 1 on the test's CPU while the
/// test runs, and restored after: it computes each scenario's start and
/// must finish its setup (spawning, naming helpers) before that start. As a
/// `SCHED_OTHER` thread it could be kept off the CPU for tens of ms by
/// `SCHED_OTHER` load (`stress-ng --cpu N`); at FIFO 1 it runs at once, yet
/// below every test thread (its threads also start at FIFO 1: they inherit
/// it). It only blocks (joins, channels, sleeps) once the scenario runs.
struct MainThread {
    tid: i32,
    attr: Option<sys::SchedAttr>,
    cpus: Vec<u32>,
}

impl MainThread {
    fn enter(cpu: u32) -> MainThread {
        let tid = sys::gettid();
        let m = MainThread {
            tid,
            attr: sys::sched_getattr(tid).ok(),
            cpus: sys::thread_cpus(),
        };
        sys::set_affinity(0, &[cpu]).expect("pin the test thread");
        sys::sched_setattr(tid, &heir::sched::fifo(1)).expect("test thread at FIFO 1");
        m
    }
}

impl Drop for MainThread {
    fn drop(&mut self) {
        if let Some(a) = &self.attr {
            let _ = sys::sched_setattr(self.tid, a);
        }
        let _ = sys::set_affinity(0, &self.cpus);
    }
}

/// This binary's real-time tests' lock, for a test that is not one but
/// would disturb them: one that holds the process-wide engine lock
/// hundreds of thousands of times (a real-time test's waiter would block
/// on it for a moment between stamping the start of its wait and
/// registering it, and its helper would run unboosted in that gap).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Returns the environment, or `None` (after printing why) when real-time
/// scheduling is unavailable; under `CI=true` that panics instead.
///
/// Real-time tests run one at a time: in this binary (a mutex) and across
/// every test binary and checkout on the machine (`heir::caps::FileLock` on
/// `heir::caps::rt_tests_lock_path()`, held until the test ends — the
/// watchdog's bound starts once it is taken).
pub fn rt_or_skip(test: &str, limit_s: u64) -> Option<Rt> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let caps = Capabilities::detect();
    if let Some(why) = caps.realtime_missing() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{test}: real-time capability missing under CI=true: {why}");
        }
        eprintln!("{test}: SKIPPED: {why}");
        return None;
    }
    let across = FileLock::acquire(&heir::caps::rt_tests_lock_path())
        .unwrap_or_else(|e| panic!("{test}: cannot take the real-time tests' lock: {e}"));
    let survey = Survey::take(&caps.cpus, 50_000_000);
    let cpu = heir_runner::cpus::quietest(&caps.cpus, &survey).unwrap_or_else(|| caps.test_cpu());
    if survey.busy(cpu) {
        eprintln!(
            "{test}: note: every CPU has other real-time work; CPU {cpu} has: {}",
            survey.why_busy(cpu)
        );
    }
    Some(Rt {
        cpu,
        _serial: serial,
        _across: across,
        _claim: survey.keep(&[cpu]),
        _dog: Watchdog::start(test, limit_s),
        _main: MainThread::enter(cpu),
    })
}

/// Ends the process (exit code 134) if a test overruns its bound (a hang is a failure,
/// never a stuck CI run).
pub struct Watchdog {
    done: Arc<AtomicBool>,
}

impl Watchdog {
    pub fn start(test: &str, limit_s: u64) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let name = test.to_string();
        std::thread::spawn(move || {
            let deadline = sys::now_ns() + limit_s * 1_000_000_000;
            while sys::now_ns() < deadline {
                if d.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if !d.load(Ordering::Relaxed) {
                eprintln!("{name}: watchdog: exceeded {limit_s} s; exiting");
                // `_exit`, not `abort`: a core dump of a process with
                // real-time threads left one of them spinning in the
                // kernel's dump code at its priority for minutes, starving
                // its CPU; `_exit` ends every thread at once.
                // SAFETY: `_exit` never returns and touches no Rust state.
                unsafe { libc::_exit(134) };
            }
        });
        Watchdog { done }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Spawns a thread pinned to `cpu` at `SCHED_FIFO` `prio`, registered with
/// heir (base = that priority).
pub fn spawn_fifo<T: Send + 'static>(
    cpu: u32,
    prio: u8,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    std::thread::spawn(move || {
        sys::set_affinity(0, &[cpu]).expect("pin");
        heir::thread::set_sched(&heir::sched::fifo(prio)).expect("SCHED_FIFO");
        f()
    })
}

/// Spawns like [`spawn_fifo`] and returns the thread's tid once it runs.
pub fn spawn_fifo_tid<T: Send + 'static>(
    cpu: u32,
    prio: u8,
    f: impl FnOnce() -> T + Send + 'static,
) -> (JoinHandle<T>, i32) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = spawn_fifo(cpu, prio, move || {
        tx.send(heir::thread::current_tid()).expect("send tid");
        f()
    });
    let tid = rx.recv().expect("tid");
    (h, tid)
}

/// CPU time of the calling thread (ns).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Burns `ns` of the calling thread's CPU time, giving up at the absolute
/// wall-clock `limit` (every busy loop has a deadline). Returns true if the
/// work completed.
pub fn busy_cpu(ns: u64, limit: u64) -> bool {
    let start = thread_cpu_ns();
    while thread_cpu_ns() - start < ns {
        if sys::now_ns() >= limit {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

/// The calling thread's kernel `sched_priority` (its `sched_getattr` view).
pub fn my_prio() -> u32 {
    sys::sched_getattr(sys::gettid())
        .expect("sched_getattr")
        .sched_priority
}

pub const MS: u64 = 1_000_000;

/// Field `n` (0-based, counted after the command name's closing
/// parenthesis) of `/proc/self/task/TID/stat`.
fn proc_stat_field(tid: i32, n: usize) -> i64 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    let rest = &s[s.rfind(')').expect("comm") + 1..];
    rest.split_whitespace()
        .nth(n)
        .expect("stat field")
        .parse()
        .expect("number")
}

/// The kernel's effective priority of `tid` (`/proc` stat field 18): -1 -
/// rt_priority for a real-time task, -101 for a deadline task, 20 + nice
/// for a fair one. PI boosting included.
pub fn kernel_prio(tid: i32) -> i32 {
    proc_stat_field(tid, 15) as i32
}

/// The policy of `tid` as set (`/proc` stat field 41; not a PI boost).
pub fn kernel_policy(tid: i32) -> u32 {
    proc_stat_field(tid, 38) as u32
}

/// Polls (sleeping 100 µs) until `f` holds; false at the absolute `limit`.
pub fn eventually(limit: u64, mut f: impl FnMut() -> bool) -> bool {
    while !f() {
        if sys::now_ns() >= limit {
            return false;
        }
        sys::sleep_until(sys::now_ns() + 100_000);
    }
    true
}

/// Sleeps (100 µs steps) until `flag` is set or the absolute `limit`.
pub fn wait_flag(flag: &AtomicBool, limit: u64) {
    while !flag.load(Ordering::Acquire) && sys::now_ns() < limit {
        sys::sleep_until(sys::now_ns() + 100_000);
    }
}
