//! `SCHED_DEADLINE` on real threads: attributes, the free bandwidth of a
//! set of CPUs, and what `/proc` says of a thread's deadline state.
//!
//! # Rules heir-rt keeps (see `docs/DEADLINE.md`)
//!
//! - A thread becomes `SCHED_DEADLINE` only by its own `sched_setattr`, and
//!   leaves it the same way, while it runs. heir-rt never changes the
//!   policy of a deadline thread from another thread: on this kernel,
//!   demoting a *blocked* deadline thread from another thread leaked its
//!   admitted bandwidth until the root domain was rebuilt.
//! - The kernel admits a deadline thread only if its affinity covers its
//!   whole *root domain* (else `EPERM`), and only if the root domain's free
//!   bandwidth covers runtime/period (else `EBUSY`). On a machine with one
//!   root domain, a deadline thread cannot be pinned to one CPU: a one-CPU
//!   run needs a one-CPU root domain (an exclusive cpuset; heir makes one
//!   only when asked: `heir run --partition`, heir-runner's `partition` module).
//!
//! # The free bandwidth
//!
//! [`probe_free`] measures it by trying: short-lived probe threads, allowed
//! on the CPUs asked for, each admit themselves with the largest runtime
//! (period [`PROBE_PERIOD_NS`]) the kernel accepts — a binary search on
//! `sched_setattr` — and keep it while the next probe searches, until one
//! is admitted with less than a whole CPU; then each returns itself to
//! `SCHED_OTHER`, running, and the probe waits for their 0-lag times
//! ([`PROBE_RELEASE_NS`]). The sum is
//! what the root domain had free: its capacity (CPUs × `sched_rt_runtime_us`
//! / `sched_rt_period_us`) minus what every admitted deadline entity holds —
//! other programs' deadline threads and, since Linux 6.12, each CPU's fair
//! server (5 % by default). The kernel exposes that sum nowhere outside
//! debugfs; trying is exact to 10⁻⁶.

use std::sync::mpsc;

use crate::sys::{self, SchedAttr};

/// The period (and deadline) of the probe reservations (ns): the free
/// bandwidth is measured to 1 ns of runtime in this period (10⁻⁶ of a CPU,
/// the kernel's own precision: bandwidths are kept in 2⁻²⁰ units). Short,
/// because a deadline thread that leaves the class gives its bandwidth back
/// only at its *0-lag time* (the kernel's inactive timer: up to one period
/// after it left): the probe's is back [`PROBE_RELEASE_NS`] after it ends.
pub const PROBE_PERIOD_NS: u64 = 1_000_000;

/// How long [`probe_free`] waits after its threads left the deadline class,
/// for their 0-lag times to pass (ns).
pub const PROBE_RELEASE_NS: u64 = 3 * PROBE_PERIOD_NS;

/// The kernel's smallest runtime (ns).
const MIN_RUNTIME_NS: u64 = 1024;

fn probe_attr(runtime_ns: u64) -> SchedAttr {
    SchedAttr {
        sched_policy: sys::SCHED_DEADLINE,
        sched_runtime: runtime_ns,
        sched_deadline: PROBE_PERIOD_NS,
        sched_period: PROBE_PERIOD_NS,
        ..SchedAttr::default()
    }
}

/// A `SCHED_DEADLINE` attribute set (runtime ≤ deadline ≤ period, in µs).
pub fn attr(runtime_us: u64, deadline_us: u64, period_us: u64) -> SchedAttr {
    SchedAttr {
        sched_policy: sys::SCHED_DEADLINE,
        sched_runtime: runtime_us * 1000,
        sched_deadline: deadline_us * 1000,
        sched_period: period_us * 1000,
        ..SchedAttr::default()
    }
}

/// Why [`probe_free`] could not measure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The kernel refused a deadline thread allowed on exactly `cpus`
    /// (`EPERM`): they are not a whole root domain, or the process may not
    /// use `SCHED_DEADLINE`.
    #[error("the kernel refuses SCHED_DEADLINE on CPUs {cpus:?} (EPERM): a deadline thread must be allowed on every CPU of its root domain (and the process needs CAP_SYS_NICE)")]
    NotARootDomain {
        /// The CPUs asked for.
        cpus: Vec<u32>,
    },
    /// Another failure (`op` failed with `errno`).
    #[error("{op} failed: {}", sys::errno_name(*errno))]
    Os {
        /// The call.
        op: &'static str,
        /// Its errno.
        errno: i32,
    },
}

/// One probe thread's search: the largest runtime (ns, in
/// [`PROBE_PERIOD_NS`]) admitted, the thread holding it (0: none).
fn probe_one(cpus: &[u32]) -> Result<u64, ProbeError> {
    sys::set_affinity(0, cpus).map_err(|errno| ProbeError::Os {
        op: "sched_setaffinity",
        errno,
    })?;
    let me = sys::gettid();
    let (mut lo, mut hi) = (0u64, PROBE_PERIOD_NS);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if mid < MIN_RUNTIME_NS {
            break;
        }
        match sys::sched_setattr(me, &probe_attr(mid)) {
            Ok(()) => lo = mid,
            Err(e) if e == libc::EBUSY => hi = mid - 1,
            Err(e) if e == libc::EPERM => {
                return Err(ProbeError::NotARootDomain {
                    cpus: cpus.to_vec(),
                })
            }
            Err(errno) => {
                return Err(ProbeError::Os {
                    op: "sched_setattr",
                    errno,
                })
            }
        }
    }
    if lo > 0 {
        // The thread holds the last admitted value only if it was the last
        // accepted; make it so.
        sys::sched_setattr(me, &probe_attr(lo)).map_err(|errno| ProbeError::Os {
            op: "sched_setattr",
            errno,
        })?;
    }
    Ok(lo)
}

/// The deadline bandwidth (in CPUs: 1.0 is one whole CPU) a thread allowed
/// on `cpus` can still be admitted with, measured by trying (module docs).
/// Takes a few milliseconds; for that time it holds all of it.
pub fn probe_free(cpus: &[u32]) -> Result<f64, ProbeError> {
    let mut holders = Vec::new();
    let mut total_ns = 0u64;
    let mut result = Ok(());
    for _ in 0..cpus.len().max(1) {
        let (found_tx, found_rx) = mpsc::channel::<Result<u64, ProbeError>>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let cpus = cpus.to_vec();
        let h = std::thread::spawn(move || {
            let r = probe_one(&cpus);
            let held = matches!(r, Ok(v) if v > 0);
            let _ = found_tx.send(r);
            let _ = done_rx.recv();
            if held {
                // Back to SCHED_OTHER by itself, running (never from
                // another thread: module docs).
                let _ = sys::sched_setattr(sys::gettid(), &crate::sched::other(0));
            }
        });
        holders.push((h, done_tx));
        match found_rx.recv() {
            Ok(Ok(ns)) => {
                total_ns += ns;
                if ns < PROBE_PERIOD_NS {
                    break;
                }
            }
            Ok(Err(e)) => {
                result = Err(e);
                break;
            }
            Err(_) => break,
        }
    }
    for (h, done) in holders {
        let _ = done.send(());
        let _ = h.join();
    }
    sys::sleep_until(sys::now_ns() + PROBE_RELEASE_NS);
    result.map(|()| total_ns as f64 / PROBE_PERIOD_NS as f64)
}

/// A thread's deadline state as `/proc/self/task/TID/sched` shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcSched {
    /// `policy`: the thread's own policy (not a boost).
    pub policy: u32,
    /// `prio`: the kernel's effective priority (-1: the deadline class, by
    /// its own policy or by a boost; 0..=98: real-time 99..=1; 100..=139:
    /// fair).
    pub prio: i32,
    /// `dl.runtime` (ns left in the current reservation period), shown only
    /// for a thread whose own policy is `SCHED_DEADLINE`.
    pub dl_runtime_ns: Option<i64>,
    /// `dl.deadline` (absolute, the kernel's run-queue clock in ns), shown
    /// only for a thread whose own policy is `SCHED_DEADLINE`.
    pub dl_deadline_ns: Option<u64>,
    /// `se.sum_exec_runtime` (ns).
    pub sum_exec_ns: u64,
    /// `se.exec_start` (the run-queue task clock when it last ran, ns).
    pub exec_start_ns: u64,
}

/// Reads `/proc/self/task/TID/sched` (`None` if `tid` is not a thread of
/// this process or the file cannot be read).
pub fn proc_sched(tid: i32) -> Option<ProcSched> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/sched")).ok()?;
    let mut s = ProcSched::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        // Values may be `12345.678901` (ms with a fraction): keep ns.
        let ns = || -> Option<i64> {
            match v.split_once('.') {
                Some((ms, frac)) => {
                    let ms: i64 = ms.parse().ok()?;
                    let mut f = frac.to_string();
                    f.truncate(6);
                    while f.len() < 6 {
                        f.push('0');
                    }
                    let sub: i64 = f.parse().ok()?;
                    Some(ms * 1_000_000 + if ms < 0 { -sub } else { sub })
                }
                None => v.parse().ok(),
            }
        };
        match k.trim() {
            "policy" => s.policy = v.parse().ok()?,
            "prio" => s.prio = v.parse().ok()?,
            "dl.runtime" => s.dl_runtime_ns = v.parse().ok(),
            "dl.deadline" => s.dl_deadline_ns = v.parse().ok(),
            "se.sum_exec_runtime" => s.sum_exec_ns = ns().unwrap_or(0).max(0) as u64,
            "se.exec_start" => s.exec_start_ns = ns().unwrap_or(0).max(0) as u64,
            _ => {}
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_attr_is_in_ns() {
        let a = attr(8_000, 24_000, 24_000);
        assert_eq!(a.sched_policy, sys::SCHED_DEADLINE);
        assert_eq!(
            (a.sched_runtime, a.sched_deadline, a.sched_period),
            (8_000_000, 24_000_000, 24_000_000)
        );
    }

    #[test]
    fn proc_sched_of_this_thread_reads() {
        let s = proc_sched(sys::gettid()).expect("own /proc sched");
        assert_eq!(s.policy, sys::SCHED_OTHER);
        assert!(
            s.prio >= 100,
            "a fair thread's prio is 100..=139: {}",
            s.prio
        );
        assert_eq!(s.dl_runtime_ns, None);
    }
}

/// The cgroup v1 cpuset hierarchy [`OneCpuRootDomain`] uses.
pub const CPUSET_V1: &str = "/sys/fs/cgroup/cpuset";

/// A root domain of one CPU, for tests and experiments that need
/// `SCHED_DEADLINE` threads pinned to one CPU (the kernel admits a deadline
/// thread only with an affinity covering its root domain).
///
/// **This changes the machine's configuration** while it lives: on a cgroup
/// v1 cpuset hierarchy it turns off load balancing in the top cpuset and
/// makes a child cpuset of `cpu` alone, so the kernel splits its root
/// domain — `cpu` is one root domain, the other CPUs another with no load
/// balancing between them — and rebuilds the deadline accounting of both.
/// Dropping it restores both settings. `heir run` does it only with
/// `--partition` (heir-runner's `partition` module). A process killed while holding one leaves it in place: undo by
/// hand with `echo 1 > /sys/fs/cgroup/cpuset/cpuset.sched_load_balance;
/// rmdir /sys/fs/cgroup/cpuset/<name>`.
#[derive(Debug)]
pub struct OneCpuRootDomain {
    child: std::path::PathBuf,
}

impl OneCpuRootDomain {
    /// Makes `cpu` a root domain of its own (cpuset `name` under
    /// [`CPUSET_V1`]); an error says why not (no cgroup v1 cpuset, no
    /// permission, top cpuset already not balancing: someone else's split).
    pub fn make(cpu: u32, name: &str) -> Result<OneCpuRootDomain, String> {
        let root = std::path::Path::new(CPUSET_V1);
        let balance = root.join("cpuset.sched_load_balance");
        let now = std::fs::read_to_string(&balance)
            .map_err(|e| format!("no cgroup v1 cpuset at {CPUSET_V1}: {e}"))?;
        if now.trim() != "1" {
            return Err(format!(
                "{} is {}: the root domains are already split by someone else",
                balance.display(),
                now.trim()
            ));
        }
        let child = root.join(name);
        let mems = std::fs::read_to_string(root.join("cpuset.mems"))
            .map_err(|e| format!("reading cpuset.mems: {e}"))?;
        let write = |p: std::path::PathBuf, v: &str| {
            std::fs::write(&p, v).map_err(|e| format!("writing {v:?} to {}: {e}", p.display()))
        };
        if !child.exists() {
            std::fs::create_dir(&child)
                .map_err(|e| format!("creating {}: {e}", child.display()))?;
        }
        let made = OneCpuRootDomain { child };
        write(made.child.join("cpuset.cpus"), &cpu.to_string())?;
        write(made.child.join("cpuset.mems"), mems.trim())?;
        write(balance, "0")?;
        Ok(made)
    }
}

impl Drop for OneCpuRootDomain {
    fn drop(&mut self) {
        let root = std::path::Path::new(CPUSET_V1);
        let _ = std::fs::write(root.join("cpuset.sched_load_balance"), "1");
        let _ = std::fs::remove_dir(&self.child);
    }
}

/// The kernel's largest deadline period by default
/// (`/proc/sys/kernel/sched_deadline_period_max_us`, ns).
const PERIOD_MAX_NS: u64 = 4_194_304_000;

/// The attributes with which a thread entering the deadline class at `now`
/// (ns, `CLOCK_MONOTONIC`) gets the absolute deadline `release + D` of
/// `attr` (runtime Q, deadline D, period P): the same Q and P (the same
/// bandwidth, so the same admission), the relative deadline
/// `release + D − now` (and the period at least that). `None` when `now`
/// is at or past `release` (enter with `attr` itself), or when that
/// deadline exceeds the kernel's largest period (enter later).
pub fn anchored_attr(attr: &SchedAttr, release_ns: u64, now_ns: u64) -> Option<SchedAttr> {
    if now_ns >= release_ns {
        return None;
    }
    let d = release_ns - now_ns + attr.sched_deadline;
    (d <= PERIOD_MAX_NS).then(|| SchedAttr {
        sched_deadline: d,
        sched_period: attr.sched_period.max(d),
        ..*attr
    })
}

/// The calling thread enters its `SCHED_DEADLINE` reservation `attr`
/// (runtime Q, deadline D, period P) *now*, sleeping until `release_ns`
/// (`CLOCK_MONOTONIC`) afterwards, so that the kernel's first period starts
/// at `release_ns`, as a task released there (the simulator's CBS): its
/// first job has the deadline `release + D` and the runtime Q, its periods
/// start at `release + k·P`.
///
/// Entering at `sched_setattr` time starts the kernel's periods *there*
/// (deadline = now + D): a constrained thread (D < P) that then sleeps past
/// that deadline is throttled at its wake-up until its next period
/// (`dl_check_constrained_dl`). So the thread enters with the relative
/// deadline `release + D − now` ([`anchored_attr`]; same Q and P: the same
/// bandwidth), which sets its absolute deadline to `release + D`, and at
/// once sets D back (the kernel keeps the absolute deadline and runtime of
/// a running thread whose parameters change). Woken at `release`, its
/// deadline is not passed and its runtime fits — it runs with
/// (`release + D`, Q) — and each replenishment after that moves the
/// deadline by P. `set` applies the second, final change (the caller's
/// registry-aware setter); a release already past enters with `attr` at
/// once (deadline now + D). Only for the calling thread.
pub fn enter_at(
    attr: &SchedAttr,
    release_ns: u64,
    set: impl FnOnce(&SchedAttr) -> Result<(), sys::Errno>,
) -> Result<(), sys::Errno> {
    let me = sys::gettid();
    let mut now = sys::now_ns();
    if now < release_ns && release_ns - now + attr.sched_deadline > PERIOD_MAX_NS {
        // Too far ahead for one kernel period: wait (outside the class).
        sys::sleep_until(release_ns + attr.sched_deadline - PERIOD_MAX_NS / 2);
        now = sys::now_ns();
    }
    if let Some(a) = anchored_attr(attr, release_ns, now) {
        sys::sched_setattr(me, &a)?;
    }
    set(attr)
}

/// The calling thread leaves the deadline class *at once*: it first shrinks
/// its own reservation to the kernel's smallest runtime (same deadline and
/// period; a smaller bandwidth is always admitted), so that its 0-lag time
/// is already past when it switches to `to` — the kernel then releases its
/// bandwidth and clears its deadline parameters immediately, instead of at
/// its inactive timer (up to its deadline later). Cleared parameters matter
/// for inheritance: a boosted non-deadline thread whose old deadline
/// parameters are still set is queued at its old deadline, not at the
/// donor's (docs/DEADLINE.md §3). Only for the calling thread, while it
/// runs; does nothing to a thread that is not `SCHED_DEADLINE`.
pub fn leave_class(to: &SchedAttr) -> Result<(), sys::Errno> {
    let me = sys::gettid();
    let cur = sys::sched_getattr(me)?;
    if cur.sched_policy != sys::SCHED_DEADLINE {
        return Ok(());
    }
    let tiny = SchedAttr {
        sched_runtime: MIN_RUNTIME_NS,
        ..cur
    };
    // Best effort: without it the switch below is still right, only the
    // release is later.
    let _ = sys::sched_setattr(me, &tiny);
    sys::sched_setattr(me, to)
}
