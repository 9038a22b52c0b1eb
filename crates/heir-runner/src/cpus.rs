//! Which CPUs are free of other programs' real-time work.
//!
//! A `SCHED_FIFO` thread of another program on a CPU heir runs on preempts
//! heir's threads (or is preempted by them): the run then measures both
//! programs, and timing-dependent outcomes — who takes a lock first — change.
//! [`Survey::take`] looks for such competition before a run:
//!
//! - **other heir processes**: `heir run` and heir's real-time tests claim
//!   each CPU they run on with an exclusive lock on
//!   `$TMPDIR/heir-cpu<N>.lock` ([`claim_path`]); a CPU another process
//!   claims is busy. Claims of this process are shared, not busy.
//! - **other real-time threads**: every thread of another process whose
//!   policy is `SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE`
//!   (`/proc/PID/task/TID/stat`) and whose CPU use (`schedstat`) — over the
//!   survey window, or averaged over its life — is at least [`MIN_SHARE`] of
//!   a CPU counts on every CPU its affinity allows. Idle real-time threads
//!   (IRQ threads, watchdogs, an audio server between periods) do not count.
//!
//! [`assign`] then places a scenario's CPUs on free ones.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use heir::caps::FileLock;
use heir::sys;

/// A foreign real-time thread whose CPU use reaches this share of a CPU
/// competes (2 %).
pub const MIN_SHARE: f64 = 0.02;

/// During a run ([`Watch`]), a foreign real-time *user* thread that ran this
/// long on the run's CPUs interfered, whatever its share (200 µs): enough to
/// reorder a scenario's first milliseconds.
pub const WATCH_MIN_NS: u64 = 200_000;

/// `PF_KTHREAD` in `/proc/PID/task/TID/stat`'s flags.
const PF_KTHREAD: u64 = 0x0020_0000;

/// The lock file that claims CPU `cpu` among heir processes.
pub fn claim_path(cpu: u32) -> PathBuf {
    std::env::temp_dir().join(format!("heir-cpu{cpu}.lock"))
}

/// Claims held by this process, shared by everything in it that claims the
/// same CPU (a test and the run it starts).
static CLAIMS: Mutex<Vec<(u32, Weak<FileLock>)>> = Mutex::new(Vec::new());

/// A claim on one CPU among heir processes; released when the last holder
/// in this process drops it.
#[derive(Clone, Debug)]
pub struct CpuClaim {
    cpu: u32,
    /// `None` when the lock file could not be opened.
    _lock: Option<Arc<FileLock>>,
}

impl CpuClaim {
    /// Claims `cpu`, or `None` if another process claims it. A lock file
    /// that cannot be created (read-only temporary directory) gives an
    /// unshared claim: the CPU counts as free.
    pub fn try_claim(cpu: u32) -> Option<CpuClaim> {
        let mut table = CLAIMS.lock().unwrap_or_else(|p| p.into_inner());
        table.retain(|(_, w)| w.strong_count() > 0);
        if let Some(lock) = table
            .iter()
            .find(|(c, _)| *c == cpu)
            .and_then(|(_, w)| w.upgrade())
        {
            return Some(CpuClaim {
                cpu,
                _lock: Some(lock),
            });
        }
        let lock = match FileLock::try_acquire(&claim_path(cpu)) {
            Ok(Some(l)) => Arc::new(l),
            Ok(None) => return None,
            Err(_) => return Some(CpuClaim { cpu, _lock: None }),
        };
        table.push((cpu, Arc::downgrade(&lock)));
        Some(CpuClaim {
            cpu,
            _lock: Some(lock),
        })
    }

    /// The CPU.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }
}

/// A real-time thread of another process that competes for CPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct RtThread {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The thread's name (`comm`).
    pub comm: String,
    /// `SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE` (`sys::SCHED_*`).
    pub policy: u32,
    /// Its real-time priority (0 for `SCHED_DEADLINE`).
    pub priority: u32,
    /// The CPUs its affinity allows.
    pub cpus: Vec<u32>,
    /// Its CPU use, as a share of one CPU.
    pub share: f64,
}

impl std::fmt::Display for RtThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let policy = match self.policy {
            sys::SCHED_FIFO => format!("SCHED_FIFO {}", self.priority),
            sys::SCHED_RR => format!("SCHED_RR {}", self.priority),
            _ => "SCHED_DEADLINE".to_string(),
        };
        write!(
            f,
            "{} (pid {}, tid {}, {policy}, {:.0} % of a CPU)",
            self.comm,
            self.pid,
            self.tid,
            self.share * 100.0
        )
    }
}

/// One reading of the real-time threads of other processes.
#[derive(Debug, Default)]
struct Sample {
    at_ns: u64,
    threads: HashMap<i32, Reading>,
}

#[derive(Debug, Clone)]
struct Reading {
    pid: i32,
    comm: String,
    policy: u32,
    priority: u32,
    kthread: bool,
    run_ns: u64,
    age_ns: u64,
}

/// What `/proc/PID/task/TID/stat` says about a thread.
#[derive(Debug, PartialEq)]
struct Stat {
    comm: String,
    policy: u32,
    priority: u32,
    kthread: bool,
    /// Start time, clock ticks since boot.
    start: u64,
}

fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // Field N of proc(5) is rest[N - 3].
    let flags: u64 = rest.get(6)?.parse().ok()?;
    Some(Stat {
        comm,
        policy: rest.get(38)?.parse().ok()?,
        priority: rest.get(37)?.parse().ok()?,
        kthread: flags & PF_KTHREAD != 0,
        start: rest.get(19)?.parse().ok()?,
    })
}

/// Parses a CPU list (`0-3,5,7-8`).
pub fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',') {
        let mut ends = part.splitn(2, '-');
        let lo = ends.next().and_then(|x| x.trim().parse::<u32>().ok());
        let hi = ends.next().and_then(|x| x.trim().parse::<u32>().ok());
        match (lo, hi) {
            (Some(a), Some(b)) if a <= b && b - a < 4096 => out.extend(a..=b),
            (Some(a), None) => out.push(a),
            _ => {}
        }
    }
    out
}

fn uptime_ns() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/uptime").ok()?;
    let s: f64 = t.split_whitespace().next()?.parse().ok()?;
    Some((s * 1e9) as u64)
}

fn is_realtime(policy: u32) -> bool {
    matches!(
        policy,
        sys::SCHED_FIFO | sys::SCHED_RR | sys::SCHED_DEADLINE
    )
}

impl Sample {
    fn take() -> Sample {
        let me = std::process::id() as i32;
        let tick_ns = 1_000_000_000 / sys::clock_ticks_per_second().max(1);
        let up = uptime_ns();
        let mut threads = HashMap::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Sample::default();
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
                continue;
            };
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                    continue;
                };
                let Some(st) = parse_stat(&stat) else {
                    continue;
                };
                if !is_realtime(st.policy) {
                    continue;
                }
                let run_ns = std::fs::read_to_string(t.path().join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse().ok())
                    .unwrap_or(0);
                let age_ns = up.map_or(0, |u| u.saturating_sub(st.start * tick_ns));
                threads.insert(
                    tid,
                    Reading {
                        pid,
                        comm: st.comm,
                        policy: st.policy,
                        priority: st.priority,
                        kthread: st.kthread,
                        run_ns,
                        age_ns,
                    },
                );
            }
        }
        Sample {
            at_ns: sys::now_ns(),
            threads,
        }
    }
}

fn affinity(pid: i32, tid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(parse_cpu_list)
        })
        .unwrap_or_default()
}

/// What competes for each CPU, and this process's claims on the free ones.
#[derive(Debug)]
pub struct Survey {
    /// Real-time threads of other processes that compete.
    pub threads: Vec<RtThread>,
    /// CPUs another heir process claims.
    pub claimed_elsewhere: Vec<u32>,
    claims: Vec<CpuClaim>,
}

impl Survey {
    /// Surveys `cpus`: claims those no other heir process claims, and reads
    /// the real-time threads of other processes twice, `window_ns` apart.
    pub fn take(cpus: &[u32], window_ns: u64) -> Survey {
        let mut claims = Vec::new();
        let mut claimed_elsewhere = Vec::new();
        for &c in cpus {
            match CpuClaim::try_claim(c) {
                Some(cl) => claims.push(cl),
                None => claimed_elsewhere.push(c),
            }
        }
        let before = Sample::take();
        sys::sleep_until(sys::now_ns() + window_ns);
        let after = Sample::take();
        let span = after.at_ns.saturating_sub(before.at_ns).max(1) as f64;
        let mut threads = Vec::new();
        for (&tid, r) in &after.threads {
            let window = before
                .threads
                .get(&tid)
                .map_or(0.0, |b| r.run_ns.saturating_sub(b.run_ns) as f64 / span);
            let life = if r.age_ns > 0 {
                r.run_ns as f64 / r.age_ns as f64
            } else {
                0.0
            };
            let share = window.max(life).min(1.0);
            if share < MIN_SHARE {
                continue;
            }
            threads.push(RtThread {
                pid: r.pid,
                tid,
                comm: r.comm.clone(),
                policy: r.policy,
                priority: r.priority,
                cpus: affinity(r.pid, tid),
                share,
            });
        }
        threads.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.tid.cmp(&b.tid)));
        Survey {
            threads,
            claimed_elsewhere,
            claims,
        }
    }

    /// The foreign real-time threads allowed on `cpu`.
    pub fn competitors(&self, cpu: u32) -> Vec<&RtThread> {
        self.threads
            .iter()
            .filter(|t| t.cpus.contains(&cpu))
            .collect()
    }

    /// The share of a CPU foreign real-time threads allowed on `cpu` used.
    pub fn load(&self, cpu: u32) -> f64 {
        self.competitors(cpu).iter().map(|t| t.share).sum()
    }

    /// True if another heir process claims `cpu` or other real-time work
    /// competes on it.
    pub fn busy(&self, cpu: u32) -> bool {
        self.claimed_elsewhere.contains(&cpu) || self.load(cpu) >= MIN_SHARE
    }

    /// Why `cpu` is busy, in words (empty if it is free).
    pub fn why_busy(&self, cpu: u32) -> String {
        let mut why: Vec<String> = Vec::new();
        if self.claimed_elsewhere.contains(&cpu) {
            why.push("another heir run or test claims it".to_string());
        }
        why.extend(self.competitors(cpu).iter().map(|t| t.to_string()));
        why.join("; ")
    }

    /// Keeps this process's claims on `cpus` (releasing the others) for as
    /// long as the returned claims live.
    pub fn keep(self, cpus: &[u32]) -> Vec<CpuClaim> {
        self.claims
            .into_iter()
            .filter(|c| cpus.contains(&c.cpu))
            .collect()
    }
}

/// Watches the real-time threads of other processes over an interval (a
/// run): [`Watch::finish`] names those that ran on given CPUs meanwhile.
#[derive(Debug)]
pub struct Watch {
    start: Sample,
}

impl Watch {
    /// Starts watching.
    pub fn start() -> Watch {
        Watch {
            start: Sample::take(),
        }
    }

    /// The real-time threads of other processes, allowed on any of `cpus`,
    /// that used at least [`MIN_SHARE`] of a CPU since [`Watch::start`] — or,
    /// for a user thread, at least [`WATCH_MIN_NS`].
    pub fn finish(self, cpus: &[u32]) -> Vec<RtThread> {
        let end = Sample::take();
        let span = end.at_ns.saturating_sub(self.start.at_ns).max(1) as f64;
        let mut out = Vec::new();
        for (&tid, r) in &end.threads {
            let ran = self
                .start
                .threads
                .get(&tid)
                .map_or(r.run_ns, |b| r.run_ns.saturating_sub(b.run_ns));
            let share = (ran as f64 / span).min(1.0);
            if share < MIN_SHARE && (r.kthread || ran < WATCH_MIN_NS) {
                continue;
            }
            let allowed = affinity(r.pid, tid);
            if !allowed.iter().any(|c| cpus.contains(c)) {
                continue;
            }
            out.push(RtThread {
                pid: r.pid,
                tid,
                comm: r.comm.clone(),
                policy: r.policy,
                priority: r.priority,
                cpus: allowed,
                share,
            });
        }
        out.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.tid.cmp(&b.tid)));
        out
    }
}

/// Where each of `wanted` (a scenario's CPU numbers) runs: on itself when
/// it is in `allowed` and free; a busy one on a free allowed CPU nobody else
/// got (the least loaded, then the highest numbered); when no free CPU is
/// left, on itself (busy). Returns `(wanted, placed)` pairs in `wanted`'s
/// order.
pub fn assign(wanted: &[u32], allowed: &[u32], survey: &Survey) -> Vec<(u32, u32)> {
    let mut taken: Vec<u32> = wanted
        .iter()
        .copied()
        .filter(|c| allowed.contains(c) && !survey.busy(*c))
        .collect();
    let mut spare: Vec<u32> = allowed
        .iter()
        .copied()
        .filter(|c| !survey.busy(*c) && !wanted.contains(c))
        .collect();
    // Best last: least loaded, then highest numbered.
    spare.sort_by(|a, b| survey.load(*b).total_cmp(&survey.load(*a)).then(a.cmp(b)));
    wanted
        .iter()
        .map(|&w| {
            if taken.contains(&w) {
                return (w, w);
            }
            match spare.pop() {
                Some(p) => {
                    taken.push(p);
                    (w, p)
                }
                None => (w, w),
            }
        })
        .collect()
}

/// The allowed CPU with the least foreign real-time load and no other heir
/// process (the highest numbered among equals).
pub fn quietest(allowed: &[u32], survey: &Survey) -> Option<u32> {
    allowed.iter().copied().min_by(|a, b| {
        survey
            .busy(*a)
            .cmp(&survey.busy(*b))
            .then(survey.load(*a).total_cmp(&survey.load(*b)))
            .then(b.cmp(a))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5,7-8\n"), [0, 1, 2, 3, 5, 7, 8]);
        assert_eq!(parse_cpu_list("1"), [1]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
    }

    #[test]
    fn stat_fields() {
        // comm with a space and a parenthesis.
        let s = "123 (a b) c) R 1 1 1 0 -1 4194304 1 0 0 0 5 6 0 0 -51 0 2 0 4242 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 50 1 0 0 0";
        assert_eq!(
            parse_stat(s),
            Some(Stat {
                comm: "a b) c".to_string(),
                policy: sys::SCHED_FIFO,
                priority: 50,
                kthread: false,
                start: 4242
            })
        );
        let k = s.replace(" 4194304 ", " 2129984 ");
        assert!(parse_stat(&k).is_some_and(|st| st.kthread));
    }

    fn survey(threads: Vec<(Vec<u32>, f64)>, elsewhere: Vec<u32>) -> Survey {
        Survey {
            threads: threads
                .into_iter()
                .enumerate()
                .map(|(i, (cpus, share))| RtThread {
                    pid: 1,
                    tid: i as i32,
                    comm: "x".into(),
                    policy: sys::SCHED_FIFO,
                    priority: 50,
                    cpus,
                    share,
                })
                .collect(),
            claimed_elsewhere: elsewhere,
            claims: Vec::new(),
        }
    }

    #[test]
    fn free_cpus_stay_busy_ones_move() {
        let s = survey(vec![(vec![0], 0.3)], vec![]);
        assert_eq!(assign(&[0], &[0, 1], &s), [(0, 1)]);
        assert_eq!(assign(&[1], &[0, 1], &s), [(1, 1)]);
        assert_eq!(assign(&[0, 1], &[0, 1], &s), [(0, 0), (1, 1)]);
        assert_eq!(quietest(&[0, 1], &s), Some(1));
        let idle = survey(vec![(vec![0], 0.001)], vec![]);
        assert!(!idle.busy(0));
        assert_eq!(assign(&[0], &[0, 1], &idle), [(0, 0)]);
        assert_eq!(quietest(&[0, 1], &idle), Some(1));
        let heir = survey(vec![], vec![1]);
        assert_eq!(assign(&[1], &[0, 1], &heir), [(1, 0)]);
        assert_eq!(quietest(&[0, 1], &heir), Some(0));
        let both = survey(vec![(vec![0, 1], 0.5)], vec![]);
        assert_eq!(assign(&[0], &[0, 1], &both), [(0, 0)]);
    }
}
