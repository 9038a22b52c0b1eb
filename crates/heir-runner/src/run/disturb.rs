//! What took a real run's CPUs from it: measured, not guessed.
//!
//! A run on real threads shares its CPUs with whatever else the machine
//! runs. A real-time program (a `chrt -f 99` busy loop), a kernel thread,
//! an IRQ thread, or — since Linux 6.12 — an ordinary `SCHED_OTHER` task
//! run by the *fair server* (a deadline server of the fair class, by
//! default 50 ms every second per CPU, that runs ordinary tasks ahead of
//! `SCHED_FIFO` ones when they have starved) each make the run's threads
//! late by as long as they hold the CPU. [`crate::run::run`] records the
//! kernel's own `sched_switch` records of the run's CPUs, every thread
//! included, in an ftrace instance of its own
//! ([`crate::tracefs::Instance::create_watch`]), and this module turns them
//! into what each thread lost:
//!
//! 1. **Holders.** Per CPU, who holds it: a run thread, the idle task, or
//!    a *foreign* thread (any other: another program, a kernel thread, an
//!    IRQ thread, another thread of this process), from each
//!    `sched_switch`'s `next_pid` on.
//! 2. **Runnable run threads.** A run thread is *runnable and not running*
//!    from its wake-up (`sched_wakeup`, on `target_cpu`) or its preemption
//!    (`sched_switch` with `prev_state=R`, on that CPU) to its next
//!    switch-in; a migration (`sched_migrate_task`) moves it.
//! 3. **Displacement.** A run thread is *displaced* while it is runnable
//!    and a foreign thread holds its CPU: each such span names the
//!    foreign thread that held the CPU when it began (a switch between two
//!    foreign threads is recorded too, and splits the span).
//! 4. **Jobs.** Each job's loss is the displacement of its own thread
//!    inside the job's window (release to completion, or to the end of the
//!    run for a job that did not complete). A job blocked behind a
//!    displaced thread (a lock owner, a helper) is late by as much, but its
//!    own thread was not runnable: its loss shows on the thread it waited
//!    for, and the run's total counts it once.
//! 5. **Who.** Each foreign thread is classified after the run
//!    ([`DisturberClass`]): its kernel priority in the records, and
//!    `/proc` while it still exists (kernel threads by `PF_KTHREAD`, IRQ
//!    threads by name, the policy by `sched_getattr`).
//!
//! The records have µs precision; a span shorter than a record's tick is
//! not seen. Events the kernel dropped (a full buffer) are reported: the
//! measure is then a lower bound.

use std::collections::HashMap;
use std::fmt;

use crate::tracefs::{Parsed, RecordKind};
use heir::sys;

/// `PF_KTHREAD` in `/proc/TID/stat`'s flags.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A span in which a run thread was runnable while a foreign thread held
/// its CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Displacement {
    /// The run thread's index (start order).
    pub thread: usize,
    /// The machine's CPU.
    pub cpu: u32,
    /// Start (ns of `CLOCK_MONOTONIC`).
    pub start_ns: u64,
    /// End (ns), exclusive.
    pub end_ns: u64,
    /// The foreign thread (index into [`Disturbance::by`]).
    pub by: usize,
}

/// What a foreign thread is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DisturberClass {
    /// `SCHED_FIFO` or `SCHED_RR` of another program, at this priority.
    RealTime {
        /// `"SCHED_FIFO"`, `"SCHED_RR"`, or `"real-time"` when it exited
        /// before heir could ask.
        policy: &'static str,
        /// Its real-time priority (1..=99).
        prio: u32,
    },
    /// `SCHED_DEADLINE` of another program.
    Deadline,
    /// An ordinary (`SCHED_OTHER`) task. Ahead of a real-time run thread
    /// only the fair server runs one (`via_fair_server`).
    Fair {
        /// It displaced a real-time or deadline thread of the run: the
        /// kernel's fair server ran it.
        via_fair_server: bool,
    },
    /// A kernel thread (`PF_KTHREAD`), at its kernel priority.
    Kernel {
        /// Its kernel priority as the records show it (0..=98 real-time,
        /// 100..=139 fair, -1 deadline).
        kprio: i32,
    },
    /// An IRQ thread (`irq/…`, a kernel thread).
    Irq,
    /// Another thread of this process (heir's own, not a run thread).
    ThisProcess,
}

impl fmt::Display for DisturberClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DisturberClass::RealTime { policy, prio } => write!(f, "{policy} {prio}"),
            DisturberClass::Deadline => f.write_str("SCHED_DEADLINE"),
            DisturberClass::Fair {
                via_fair_server: true,
            } => f.write_str("SCHED_OTHER, run by the fair server"),
            DisturberClass::Fair {
                via_fair_server: false,
            } => f.write_str("SCHED_OTHER"),
            DisturberClass::Kernel { kprio } => match *kprio {
                p if p < 0 => f.write_str("kernel thread, SCHED_DEADLINE"),
                p if p < 99 => write!(f, "kernel thread, real-time {}", 99 - p),
                _ => f.write_str("kernel thread, SCHED_OTHER"),
            },
            DisturberClass::Irq => f.write_str("IRQ thread"),
            DisturberClass::ThisProcess => f.write_str("heir's own thread"),
        }
    }
}

impl DisturberClass {
    /// A short machine-readable name (`--json`'s `"class"`).
    pub fn key(&self) -> &'static str {
        match self {
            DisturberClass::RealTime { .. } => "rt",
            DisturberClass::Deadline => "deadline",
            DisturberClass::Fair {
                via_fair_server: true,
            } => "fair_server",
            DisturberClass::Fair { .. } => "fair",
            DisturberClass::Kernel { .. } => "kernel_thread",
            DisturberClass::Irq => "irq_thread",
            DisturberClass::ThisProcess => "heir",
        }
    }
}

/// A foreign thread that held a CPU while a run thread was runnable.
#[derive(Clone, Debug, PartialEq)]
pub struct Disturber {
    /// Its thread id (as `sched_switch` names it).
    pub tid: i32,
    /// Its process (thread group) id, when `/proc` still knew it.
    pub pid: Option<i32>,
    /// Its name as the records give it (`comm`).
    pub comm: String,
    /// What it is.
    pub class: DisturberClass,
    /// The machine's CPUs where it displaced run threads.
    pub cpus: Vec<u32>,
    /// The run threads' time it took (ns, summed over threads).
    pub lost_ns: u64,
    /// The jobs it delayed.
    pub jobs: u64,
}

impl fmt::Display for Disturber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(p) if p != self.tid => {
                write!(
                    f,
                    "pid {p} tid {} `{}` ({})",
                    self.tid, self.comm, self.class
                )
            }
            _ => write!(f, "pid {} `{}` ({})", self.tid, self.comm, self.class),
        }
    }
}

/// One run thread's loss.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadLoss {
    /// The thread's name.
    pub thread: String,
    /// Its jobs that lost time.
    pub jobs: u64,
    /// Its jobs (completed, and unfinished at the end).
    pub of_jobs: u64,
    /// Time it was displaced (ns), inside its jobs or not.
    pub lost_ns: u64,
    /// The most one job lost (ns).
    pub max_job_lost_ns: u64,
    /// Per disturber (index into [`Disturbance::by`]), the time it took
    /// from this thread (ns), most first.
    pub by: Vec<(usize, u64)>,
}

/// The fair server's setting on one CPU, as debugfs gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FairServer {
    /// `runtime` and `period` (ns) read from
    /// `/sys/kernel/debug/sched/fair_server/cpuN/`.
    Set {
        /// ns of fair-class time per period.
        runtime_ns: u64,
        /// The period (ns).
        period_ns: u64,
    },
    /// The kernel has no fair server (before 6.12, or not built).
    Absent,
    /// It could not be read, and why (debugfs not mounted, the kernel's
    /// lockdown, …).
    Unreadable(String),
}

/// The run's measured disturbance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Disturbance {
    /// `None` when measured; else why it could not be (no tracefs, not
    /// root). The run then only knows the snapshots of
    /// [`crate::run::RealRun::interference`].
    pub not_measured: Option<String>,
    /// The machine's CPUs watched (the run's).
    pub cpus: Vec<u32>,
    /// Run threads' time lost, all threads (ns).
    pub lost_ns: u64,
    /// Jobs that lost time, all threads.
    pub jobs: u64,
    /// The foreign threads, most time taken first.
    pub by: Vec<Disturber>,
    /// Per run thread (start order).
    pub threads: Vec<ThreadLoss>,
    /// The spans, in time order (for the Gantt chart).
    pub spans: Vec<Displacement>,
    /// Per watched CPU, the fair server's setting.
    pub fair_server: Vec<(u32, FairServer)>,
    /// Scheduler records the kernel dropped while watching: when not 0 the
    /// loss is a lower bound.
    pub dropped: u64,
    /// Wake-ups of run threads behind a less urgent thread shorter than
    /// [`WAKEUP_LATENCY_NS`] (not counted as lost): how many, and the
    /// longest (ns).
    pub wakeup_latency: (u64, u64),
    /// `SCHED_DEADLINE` run threads kept off their CPU by an ordinary
    /// task (not counted as lost: throttled, or behind the fair server):
    /// how many spans, and their time (ns).
    pub deadline_behind_fair: (u64, u64),
    /// `SCHED_IDLE` run threads (passive servers between donations) kept
    /// off their CPU by ordinary tasks (not counted as lost: that is what
    /// the class means): how many spans, and their time (ns).
    pub idle_behind_fair: (u64, u64),
}

impl Disturbance {
    /// A run whose disturbance could not be measured, and why.
    pub fn unmeasured(why: String) -> Disturbance {
        Disturbance {
            not_measured: Some(why),
            ..Disturbance::default()
        }
    }

    /// True when the run lost at least `min_ns` to foreign threads (or
    /// could not be measured, or dropped records: not known to be clean).
    pub fn disturbed(&self, min_ns: u64) -> bool {
        self.not_measured.is_some() || self.dropped > 0 || self.lost_ns >= min_ns.max(1)
    }
}

/// A run thread as [`measure`] sees it: its name, tid, and its jobs'
/// windows (release, end; ns).
pub type RunThread<'a> = (&'a str, i32, &'a [(u64, u64)]);

/// What [`measure`] needs of the run.
pub struct RunThreads<'a> {
    /// Per run thread (start order).
    pub threads: Vec<RunThread<'a>>,
    /// The run's window (ns): its start and end.
    pub window: (u64, u64),
    /// The run threads that run at `SCHED_IDLE` (start order: a passive
    /// server of the donation model between donations): one kept off its
    /// CPU by an ordinary task while at that class was only doing what
    /// `SCHED_IDLE` means, and that time is counted apart
    /// ([`Disturbance::idle_behind_fair`]).
    pub idle: Vec<bool>,
    /// The `SCHED_DEADLINE` run threads (start order): one kept off its
    /// CPU by an ordinary task was throttled (its budget ran out) or
    /// behind the fair server — the records do not say which, so that
    /// time is counted apart ([`Disturbance::deadline_behind_fair`]).
    pub deadline: Vec<bool>,
}

/// Who holds a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    Unknown,
    Idle,
    Run,
    Foreign(i32),
}

/// A foreign thread as the records show it.
#[derive(Default)]
struct Seen {
    comm: String,
    kprio: i32,
    cpus: Vec<u32>,
    lost_ns: u64,
    jobs: u64,
    /// It displaced a real-time run thread.
    over_rt: bool,
}

/// A span being measured: since when, who holds the CPU, which CPU, and
/// whether it began with a wake-up behind a less urgent thread.
#[derive(Clone, Copy, Debug)]
struct Open {
    start: u64,
    pid: i32,
    cpu: u32,
    woken_behind_lower: bool,
}

/// The walk's state (steps 1-3).
struct Walk {
    holder: HashMap<u32, Holder>,
    /// Per run thread: runnable (not running) on this CPU.
    waiting: Vec<Option<u32>>,
    /// Per run thread: since when it is runnable, and whether a wake-up
    /// made it so.
    since: Vec<(u64, bool)>,
    /// Per CPU: the time of its last record.
    last: HashMap<u32, u64>,
    running: Vec<bool>,
    /// Its kernel priority, as last recorded.
    kprio: Vec<i32>,
    open: Vec<Option<Open>>,
    /// Closed spans: (thread, cpu, start, end, pid).
    raw: Vec<(usize, u32, u64, u64, i32)>,
    seen: HashMap<i32, Seen>,
    /// Wake-ups behind a less urgent thread that took less than
    /// [`WAKEUP_LATENCY_NS`]: how many, the longest (ns).
    latency: (u64, u64),
    /// Per run thread: it is a deadline thread.
    deadline: Vec<bool>,
    /// Spans of deadline threads behind ordinary tasks: how many, ns.
    dl_fair: (u64, u64),
    /// Per run thread: it runs at `SCHED_IDLE` when not boosted.
    idle: Vec<bool>,
    /// Spans of such threads, at their own class, behind ordinary tasks.
    idle_fair: (u64, u64),
}

impl Walk {
    /// Closes `i`'s span at `now` unless the same foreign thread still
    /// displaces it, and opens one if one now does (step 3). `woken`: this
    /// follows `i`'s wake-up.
    fn settle(&mut self, i: usize, now: u64, woken: bool) {
        let now_by = self.waiting[i].and_then(|c| match self.holder.get(&c) {
            Some(Holder::Foreign(p)) => Some((*p, c)),
            _ => None,
        });
        if let (Some(o), Some((p, c))) = (self.open[i], now_by) {
            if o.pid == p && o.cpu == c {
                return;
            }
        }
        if let Some(o) = self.open[i].take() {
            let d = now.saturating_sub(o.start);
            let holder_kprio = self.seen.get(&o.pid).map_or(i32::MAX, |s| s.kprio);
            if o.woken_behind_lower && d < WAKEUP_LATENCY_NS {
                self.latency.0 += 1;
                self.latency.1 = self.latency.1.max(d);
            } else if self.deadline[i] && holder_kprio >= 100 {
                self.dl_fair.0 += 1;
                self.dl_fair.1 += d;
            } else if self.idle[i] && self.kprio[i] >= 100 && holder_kprio >= 100 {
                self.idle_fair.0 += 1;
                self.idle_fair.1 += d;
            } else {
                // An ordinary task ahead of a real-time or deadline thread
                // (kernel priority below 100) came through the fair
                // server.
                if self.kprio[i] < 100 {
                    if let Some(x) = self.seen.get_mut(&o.pid) {
                        x.over_rt = true;
                    }
                }
                self.raw.push((i, o.cpu, o.start, now, o.pid));
            }
        }
        self.open[i] = now_by.map(|(pid, cpu)| {
            let holder_kprio = self.seen.get(&pid).map_or(i32::MAX, |s| s.kprio);
            Open {
                start: now,
                pid,
                cpu,
                // Kernel priorities: lower is more urgent.
                woken_behind_lower: woken && holder_kprio > self.kprio[i],
            }
        });
    }

    /// A switch on `cpu` whose leaving thread is the foreign `pid` while
    /// the walk believed the CPU idle (or did not know): the switch that
    /// gave `pid` the CPU was not recorded (some kernels record no switch
    /// away from the idle task). Every run thread runnable on `cpu` since
    /// before it was then kept off it by `pid` from the CPU's last record
    /// (or from when it became runnable, if later): a runnable real-time
    /// thread does not wait behind an idle CPU.
    fn foreign_found(&mut self, cpu: u32, pid: i32, prio: i32) {
        let from = self.last.get(&cpu).copied().unwrap_or(0);
        for i in 0..self.waiting.len() {
            if self.waiting[i] != Some(cpu) || self.open[i].is_some() {
                continue;
            }
            let (since, woken) = self.since[i];
            self.open[i] = Some(Open {
                start: since.max(from),
                pid,
                cpu,
                woken_behind_lower: woken && prio > self.kprio[i],
            });
        }
    }

    fn settle_all(&mut self, now: u64) {
        for i in 0..self.waiting.len() {
            self.settle(i, now, false);
        }
    }
}

/// A run thread woken while a *less urgent* thread holds its CPU waits for
/// the kernel to preempt that thread (an IPI, the end of a non-preemptible
/// section): the machine's wake-up latency, not something taking the CPU.
/// Such a wait shorter than this (100 µs) is counted apart
/// ([`Disturbance::wakeup_latency`]); a longer one is a disturbance.
pub const WAKEUP_LATENCY_NS: u64 = 100_000;

/// Computes the disturbance from the watch instance's records (steps 1-3
/// of the module docs; then 4-5).
pub fn measure(parsed: &Parsed, dropped: u64, cpus: &[u32], run: &RunThreads<'_>) -> Disturbance {
    let tid_index: HashMap<i32, usize> = run
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| t.1 > 0)
        .map(|(i, t)| (t.1, i))
        .collect();
    let (t0, end) = run.window;
    let n = run.threads.len();
    let mut w = Walk {
        holder: cpus.iter().map(|&c| (c, Holder::Unknown)).collect(),
        waiting: vec![None; n],
        since: vec![(0, false); n],
        last: HashMap::new(),
        running: vec![false; n],
        kprio: vec![i32::MAX; n],
        open: vec![None; n],
        raw: Vec::new(),
        seen: HashMap::new(),
        latency: (0, 0),
        deadline: (0..n)
            .map(|i| run.deadline.get(i).copied().unwrap_or(false))
            .collect(),
        dl_fair: (0, 0),
        idle: (0..n)
            .map(|i| run.idle.get(i).copied().unwrap_or(false))
            .collect(),
        idle_fair: (0, 0),
    };
    for r in &parsed.records {
        let now = r.ts_ns;
        match &r.kind {
            RecordKind::Switch {
                prev_pid,
                prev_comm,
                prev_prio,
                prev_runnable,
                next_pid,
                next_prio,
                next_comm,
            } => {
                if !w.holder.contains_key(&r.cpu) {
                    continue;
                }
                if *prev_pid != 0
                    && !tid_index.contains_key(prev_pid)
                    && matches!(w.holder.get(&r.cpu), Some(Holder::Idle | Holder::Unknown))
                {
                    let s = w.seen.entry(*prev_pid).or_default();
                    s.kprio = *prev_prio;
                    s.comm.clone_from(prev_comm);
                    w.foreign_found(r.cpu, *prev_pid, *prev_prio);
                }
                if let Some(&i) = tid_index.get(prev_pid) {
                    if *prev_runnable {
                        w.since[i] = (now, false);
                    }
                    w.waiting[i] = prev_runnable.then_some(r.cpu);
                    w.running[i] = false;
                    w.kprio[i] = *prev_prio;
                }
                let h = if let Some(&i) = tid_index.get(next_pid) {
                    w.waiting[i] = None;
                    w.running[i] = true;
                    w.kprio[i] = *next_prio;
                    Holder::Run
                } else if *next_pid == 0 {
                    Holder::Idle
                } else {
                    // The latest name: a thread that exec'd shows its
                    // program's.
                    let s = w.seen.entry(*next_pid).or_default();
                    s.comm.clone_from(next_comm);
                    s.kprio = *next_prio;
                    Holder::Foreign(*next_pid)
                };
                w.holder.insert(r.cpu, h);
                w.last.insert(r.cpu, now);
                w.settle_all(now);
            }
            RecordKind::Wakeup {
                pid,
                prio,
                target_cpu,
            } => {
                if let (Some(&i), Some(c)) = (tid_index.get(pid), target_cpu) {
                    // A wake-up of a thread still on its CPU (it was
                    // about to sleep) changes nothing.
                    if w.waiting[i].is_none() && !w.running[i] {
                        w.waiting[i] = Some(*c);
                        w.since[i] = (now, true);
                        w.kprio[i] = *prio;
                        w.settle(i, now, true);
                    }
                }
            }
            RecordKind::Migrate { pid, dest_cpu, .. } => {
                if let Some(&i) = tid_index.get(pid) {
                    if w.waiting[i].is_some() {
                        w.waiting[i] = Some(*dest_cpu);
                        w.settle(i, now, false);
                    }
                }
            }
            _ => {}
        }
    }
    let last = parsed.records.last().map_or(end, |r| r.ts_ns.max(end));
    for i in 0..n {
        w.waiting[i] = None;
        w.settle(i, last, false);
    }
    // Clip to the run's window; drop empty spans.
    let mut spans: Vec<(usize, u32, u64, u64, i32)> = w
        .raw
        .into_iter()
        .filter_map(|(i, c, s, e, p)| {
            let (s, e) = (s.max(t0), e.min(end));
            (s < e).then_some((i, c, s, e, p))
        })
        .collect();
    spans.sort_by_key(|&(i, c, s, _, _)| (s, i, c));
    let mut d = summarise(spans, w.seen, cpus, run, dropped);
    d.wakeup_latency = w.latency;
    d.deadline_behind_fair = w.dl_fair;
    d.idle_behind_fair = w.idle_fair;
    d
}

/// Steps 4-5: per job, per thread, per disturber.
fn summarise(
    spans: Vec<(usize, u32, u64, u64, i32)>,
    mut seen: HashMap<i32, Seen>,
    cpus: &[u32],
    run: &RunThreads<'_>,
    dropped: u64,
) -> Disturbance {
    let mut threads: Vec<ThreadLoss> = run
        .threads
        .iter()
        .map(|(n, _, w)| ThreadLoss {
            thread: (*n).to_string(),
            of_jobs: w.len() as u64,
            ..ThreadLoss::default()
        })
        .collect();
    let mut per_thread_by: Vec<HashMap<i32, u64>> = vec![HashMap::new(); threads.len()];
    for &(i, c, s, e, p) in &spans {
        let d = e - s;
        threads[i].lost_ns += d;
        *per_thread_by[i].entry(p).or_default() += d;
        if let Some(x) = seen.get_mut(&p) {
            x.lost_ns += d;
            if !x.cpus.contains(&c) {
                x.cpus.push(c);
            }
        }
    }
    // Jobs: each window against its thread's spans (both in time order).
    for (i, (_, _, windows)) in run.threads.iter().enumerate() {
        let mine: Vec<&(usize, u32, u64, u64, i32)> = spans.iter().filter(|x| x.0 == i).collect();
        let mut k = 0;
        for &(js, je) in windows.iter() {
            while k < mine.len() && mine[k].3 <= js {
                k += 1;
            }
            let mut lost = 0;
            let mut whose: Vec<i32> = Vec::new();
            for x in mine[k..].iter().take_while(|x| x.2 < je) {
                let o = x.3.min(je).saturating_sub(x.2.max(js));
                if o > 0 {
                    lost += o;
                    if !whose.contains(&x.4) {
                        whose.push(x.4);
                    }
                }
            }
            if lost > 0 {
                threads[i].jobs += 1;
                threads[i].max_job_lost_ns = threads[i].max_job_lost_ns.max(lost);
                for p in whose {
                    if let Some(x) = seen.get_mut(&p) {
                        x.jobs += 1;
                    }
                }
            }
        }
    }
    let me = std::process::id() as i32;
    let mut by: Vec<(i32, Seen)> = seen.into_iter().filter(|(_, s)| s.lost_ns > 0).collect();
    by.sort_by(|a, b| b.1.lost_ns.cmp(&a.1.lost_ns).then(a.0.cmp(&b.0)));
    let index: HashMap<i32, usize> = by.iter().enumerate().map(|(k, (t, _))| (*t, k)).collect();
    let by: Vec<Disturber> = by
        .into_iter()
        .map(|(tid, mut s)| {
            s.cpus.sort_unstable();
            let pid = tgid_of(tid);
            Disturber {
                tid,
                pid,
                class: classify(tid, pid == Some(me), &s),
                comm: s.comm,
                cpus: s.cpus,
                lost_ns: s.lost_ns,
                jobs: s.jobs,
            }
        })
        .collect();
    for (t, m) in threads.iter_mut().zip(per_thread_by) {
        let mut v: Vec<(usize, u64)> = m
            .into_iter()
            .filter_map(|(p, d)| index.get(&p).map(|&k| (k, d)))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        t.by = v;
    }
    let spans: Vec<Displacement> = spans
        .into_iter()
        .filter_map(|(i, c, s, e, p)| {
            index.get(&p).map(|&k| Displacement {
                thread: i,
                cpu: c,
                start_ns: s,
                end_ns: e,
                by: k,
            })
        })
        .collect();
    Disturbance {
        not_measured: None,
        cpus: cpus.to_vec(),
        lost_ns: threads.iter().map(|t| t.lost_ns).sum(),
        jobs: threads.iter().map(|t| t.jobs).sum(),
        by,
        threads,
        spans,
        fair_server: cpus.iter().map(|&c| (c, fair_server(c))).collect(),
        dropped,
        wakeup_latency: (0, 0),
        deadline_behind_fair: (0, 0),
        idle_behind_fair: (0, 0),
    }
}

/// Field `n` (0-based, after the name's closing parenthesis) of
/// `/proc/TID/stat`.
fn stat_field(tid: i32, n: usize) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(n)?.parse().ok()
}

/// The thread group of `tid`, from `/proc/TID/status` (`None` once it
/// exited).
fn tgid_of(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Step 5: what a foreign thread is.
fn classify(tid: i32, ours: bool, s: &Seen) -> DisturberClass {
    if ours {
        return DisturberClass::ThisProcess;
    }
    // flags: field 6 after the name (state ppid pgrp session tty tpgid flags).
    let kthread = stat_field(tid, 6).is_some_and(|f| f & PF_KTHREAD != 0);
    if kthread || (s.comm.starts_with("irq/") && tgid_of(tid).is_none()) {
        if s.comm.starts_with("irq/") {
            return DisturberClass::Irq;
        }
        return DisturberClass::Kernel { kprio: s.kprio };
    }
    match s.kprio {
        p if p < 0 => DisturberClass::Deadline,
        p if p < 99 => {
            let policy = match sys::sched_getattr(tid).map(|a| a.sched_policy) {
                Ok(sys::SCHED_FIFO) => "SCHED_FIFO",
                Ok(sys::SCHED_RR) => "SCHED_RR",
                _ => "real-time",
            };
            DisturberClass::RealTime {
                policy,
                prio: (99 - p) as u32,
            }
        }
        _ => DisturberClass::Fair {
            via_fair_server: s.over_rt,
        },
    }
}

/// Where debugfs keeps the fair server's settings.
pub const FAIR_SERVER_DIR: &str = "/sys/kernel/debug/sched/fair_server";

/// The fair server's setting on `cpu` (never changed by heir).
pub fn fair_server(cpu: u32) -> FairServer {
    let dir = std::path::Path::new(FAIR_SERVER_DIR).join(format!("cpu{cpu}"));
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("debugfs"));
    if !mounted {
        return FairServer::Unreadable("debugfs is not mounted".into());
    }
    if !std::path::Path::new("/sys/kernel/debug/sched").is_dir() {
        return FairServer::Unreadable("debugfs has no sched/ directory".into());
    }
    if !dir.is_dir() {
        return FairServer::Absent;
    }
    let read = |f: &str| -> Result<u64, String> {
        let p = dir.join(f);
        std::fs::read_to_string(&p)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EPERM) => format!(
                    "{}: not permitted (the kernel's lockdown restricts debugfs)",
                    p.display()
                ),
                _ => format!("{}: {e}", p.display()),
            })
            .and_then(|s| {
                s.trim()
                    .parse()
                    .map_err(|_| format!("{}: not a number", p.display()))
            })
    };
    match (read("runtime"), read("period")) {
        (Ok(runtime_ns), Ok(period_ns)) => FairServer::Set {
            runtime_ns,
            period_ns,
        },
        (Err(e), _) | (_, Err(e)) => FairServer::Unreadable(e),
    }
}

impl fmt::Display for FairServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FairServer::Set {
                runtime_ns,
                period_ns,
            } => write!(
                f,
                "{:.1} ms every {:.1} ms",
                *runtime_ns as f64 / 1e6,
                *period_ns as f64 / 1e6
            ),
            FairServer::Absent => f.write_str("none (a kernel before 6.12)"),
            FairServer::Unreadable(why) => write!(
                f,
                "unknown ({why}; the kernel's default is 50 ms every 1000 ms)"
            ),
        }
    }
}

/// How to change the fair server, for the notes.
pub const FAIR_SERVER_HOWTO: &str = "to change it: echo RUNTIME_NS > /sys/kernel/debug/sched/fair_server/cpuN/runtime (0 lets real-time threads starve ordinary ones), or run on a CPU isolated from ordinary tasks (isolcpus=, or a cpuset partition)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::parse_text;

    fn sw(cpu: u32, us: u64, prev: (&str, i32, i32, char), next: (&str, i32, i32)) -> String {
        format!(
            "  {p}-{pp} [{cpu:03}] d..2. 100.{us:06}: sched_switch: prev_comm={p} prev_pid={pp} prev_prio={ppr} prev_state={st} ==> next_comm={n} next_pid={np} next_prio={npr}\n",
            p = prev.0, pp = prev.1, ppr = prev.2, st = prev.3, n = next.0, np = next.1, npr = next.2
        )
    }

    fn wake(cpu: u32, us: u64, pid: i32, target: u32) -> String {
        format!(
            "  x-1 [{cpu:03}] d..3. 100.{us:06}: sched_wakeup: comm=t pid={pid} prio=49 target_cpu={target:03}\n"
        )
    }

    const S: u64 = 100_000_000_000;

    /// ```text
    /// CPU 1:  A runs | hog (FIFO 99, pid 4711) | A runs | idle
    ///         0      1 ms                 3 ms     5 ms
    /// A: job [0, 5 ms)
    /// ```
    #[test]
    fn a_preempted_thread_loses_what_the_hog_held() {
        let text = [
            sw(1, 0, ("swapper/1", 0, 120, 'R'), ("A", 10, 49)),
            sw(1, 1000, ("A", 10, 49, 'R'), ("hog", 4711, 0)),
            sw(1, 3000, ("hog", 4711, 0, 'S'), ("A", 10, 49)),
            sw(1, 5000, ("A", 10, 49, 'S'), ("swapper/1", 0, 120)),
        ]
        .concat();
        let p = parse_text(&text);
        let w = [(S, S + 5_000_000)];
        let run = RunThreads {
            threads: vec![("A", 10, &w)],
            window: (S, S + 10_000_000),
            deadline: vec![false],
            idle: vec![false],
        };
        let d = measure(&p, 0, &[1], &run);
        assert_eq!(d.lost_ns, 2_000_000);
        assert_eq!(d.jobs, 1);
        assert_eq!(d.by.len(), 1);
        assert_eq!(d.by[0].tid, 4711);
        assert_eq!(d.by[0].comm, "hog");
        assert_eq!(d.by[0].jobs, 1);
        assert_eq!(d.threads[0].max_job_lost_ns, 2_000_000);
        assert_eq!(
            d.spans,
            vec![Displacement {
                thread: 0,
                cpu: 1,
                start_ns: S + 1_000_000,
                end_ns: S + 3_000_000,
                by: 0
            }]
        );
        assert!(d.disturbed(1));
    }

    /// A thread woken while a fair task holds its CPU (the fair server ran
    /// it ahead of FIFO) waits until the switch; a switch between two
    /// foreign threads splits the span between them; a thread that sleeps
    /// is not displaced.
    ///
    /// ```text
    /// CPU 0:  loop1 (120) ......... | loop2 (120) | B
    /// B:      asleep | woken at 2 ms ............... runs at 6 ms
    /// ```
    #[test]
    fn a_woken_thread_waits_behind_the_fair_server() {
        let text = [
            sw(0, 0, ("swapper/0", 0, 120, 'R'), ("loop1", 500, 120)),
            wake(1, 2000, 11, 0),
            sw(0, 4000, ("loop1", 500, 120, 'R'), ("loop2", 501, 120)),
            sw(0, 6000, ("loop2", 501, 120, 'R'), ("B", 11, 59)),
        ]
        .concat();
        let p = parse_text(&text);
        let w = [(S + 2_000_000, S + 8_000_000)];
        let run = RunThreads {
            threads: vec![("B", 11, &w)],
            window: (S, S + 10_000_000),
            deadline: vec![false],
            idle: vec![false],
        };
        let d = measure(&p, 0, &[0], &run);
        assert_eq!(d.lost_ns, 4_000_000);
        let mut by: Vec<(i32, u64)> = d.by.iter().map(|b| (b.tid, b.lost_ns)).collect();
        by.sort_unstable();
        assert_eq!(by, vec![(500, 2_000_000), (501, 2_000_000)]);
        assert_eq!(d.threads[0].jobs, 1);
        assert_eq!(d.threads[0].by.len(), 2);
    }

    /// Run threads preempting each other, and the idle task, are no
    /// disturbance; nothing is lost outside the run's window.
    #[test]
    fn the_run_alone_is_undisturbed() {
        let text = [
            sw(0, 0, ("swapper/0", 0, 120, 'R'), ("L", 20, 89)),
            sw(0, 1000, ("L", 20, 89, 'R'), ("H", 21, 49)),
            sw(0, 2000, ("H", 21, 49, 'S'), ("L", 20, 89)),
            sw(0, 3000, ("L", 20, 89, 'S'), ("swapper/0", 0, 120)),
        ]
        .concat();
        let p = parse_text(&text);
        let (wl, wh) = ([(S, S + 3_000_000)], [(S + 1_000_000, S + 2_000_000)]);
        let run = RunThreads {
            threads: vec![("L", 20, &wl), ("H", 21, &wh)],
            window: (S, S + 10_000_000),
            deadline: vec![false, false],
            idle: vec![false, false],
        };
        let d = measure(&p, 0, &[0], &run);
        assert_eq!(d.lost_ns, 0);
        assert!(d.by.is_empty());
        assert!(!d.disturbed(1));
    }

    /// A thread woken while a less urgent thread holds its CPU and switched
    /// in 30 µs later met the machine's wake-up latency: not a loss.
    #[test]
    fn a_short_wake_up_behind_a_fair_task_is_latency() {
        let text = [
            sw(0, 0, ("swapper/0", 0, 120, 'R'), ("cc", 700, 120)),
            wake(1, 1000, 12, 0),
            sw(0, 1030, ("cc", 700, 120, 'R'), ("C", 12, 49)),
        ]
        .concat();
        let p = parse_text(&text);
        let w = [(S + 1_000_000, S + 2_000_000)];
        let run = RunThreads {
            threads: vec![("C", 12, &w)],
            window: (S, S + 10_000_000),
            deadline: vec![false],
            idle: vec![false],
        };
        let d = measure(&p, 0, &[0], &run);
        assert_eq!(d.lost_ns, 0);
        assert_eq!(d.wakeup_latency, (1, 30_000));
        assert!(!d.disturbed(1));
    }

    /// Some kernels record no switch away from the idle task: a thread
    /// woken on an idle CPU that a real-time loop then took (unrecorded)
    /// is found displaced when the loop leaves the CPU, from its wake-up.
    ///
    /// ```text
    /// CPU 1:  x -> idle | (idle -> hog: not recorded) | hog -> Q
    /// Q:             woken at 2 ms ..................... runs at 9 ms
    /// ```
    #[test]
    fn an_unrecorded_switch_from_idle_is_found_at_the_next_one() {
        let text = [
            sw(1, 1000, ("x", 300, 120, 'S'), ("swapper/1", 0, 120)),
            wake(0, 2000, 13, 1),
            sw(1, 9000, ("hog", 4712, 0, 'Z'), ("Q", 13, 49)),
        ]
        .concat();
        let p = parse_text(&text);
        let w = [(S + 2_000_000, S + 10_000_000)];
        let run = RunThreads {
            threads: vec![("Q", 13, &w)],
            window: (S, S + 20_000_000),
            deadline: vec![false],
            idle: vec![false],
        };
        let d = measure(&p, 0, &[1], &run);
        assert_eq!(d.lost_ns, 7_000_000);
        assert_eq!(d.by.len(), 1);
        assert_eq!((d.by[0].tid, d.by[0].comm.as_str()), (4712, "hog"));
        assert_eq!(d.threads[0].jobs, 1);
    }

    /// A `SCHED_DEADLINE` thread preempted by an ordinary task ran out of
    /// budget (or met the fair server): counted apart, not as lost.
    #[test]
    fn a_deadline_thread_behind_an_ordinary_task_is_counted_apart() {
        let text = [
            sw(0, 0, ("swapper/0", 0, 120, 'R'), ("D", 14, -1)),
            sw(0, 2000, ("D", 14, -1, 'R'), ("cc", 701, 120)),
            sw(0, 7000, ("cc", 701, 120, 'R'), ("D", 14, -1)),
        ]
        .concat();
        let p = parse_text(&text);
        let w = [(S, S + 8_000_000)];
        let run = RunThreads {
            threads: vec![("D", 14, &w)],
            window: (S, S + 10_000_000),
            deadline: vec![true],
            idle: vec![false],
        };
        let d = measure(&p, 0, &[0], &run);
        assert_eq!(d.lost_ns, 0);
        assert_eq!(d.deadline_behind_fair, (1, 5_000_000));
    }

    /// A `SCHED_IDLE` thread (a passive server between donations) behind an
    /// ordinary task is what its class means: apart. Boosted by a caller
    /// (kernel priority 79), the same wait is a loss to the fair server.
    #[test]
    fn an_idle_class_thread_behind_an_ordinary_task_is_counted_apart() {
        let text = [
            sw(0, 0, ("S", 15, 120, 'R'), ("cc", 702, 120)),
            sw(0, 3000, ("cc", 702, 120, 'R'), ("S", 15, 120)),
            sw(0, 4000, ("S", 15, 79, 'R'), ("cc", 702, 120)),
            sw(0, 6000, ("cc", 702, 120, 'R'), ("S", 15, 79)),
        ]
        .concat();
        let p = parse_text(&text);
        let w = [(S, S + 8_000_000)];
        let run = RunThreads {
            threads: vec![("S", 15, &w)],
            window: (S, S + 10_000_000),
            deadline: vec![false],
            idle: vec![true],
        };
        let d = measure(&p, 0, &[0], &run);
        assert_eq!(d.idle_behind_fair, (1, 3_000_000));
        assert_eq!(d.lost_ns, 2_000_000);
        assert_eq!(
            d.by[0].class,
            DisturberClass::Fair {
                via_fair_server: true
            }
        );
    }
}
