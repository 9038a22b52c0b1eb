//! Runs a scenario file on real threads: `heir run`.
//!
//! The same semantics as the simulator, on the kernel's scheduler:
//!
//! - one thread per task instance, `SCHED_FIFO`/`SCHED_RR`/`SCHED_OTHER`/
//!   `SCHED_DEADLINE` as the file says, pinned to the task's `cpus`; each
//!   thread sets its own attributes and, at the end, a deadline thread
//!   returns itself to `SCHED_OTHER` ([`heir::deadline`]: never another
//!   thread's policy). A deadline thread is `SCHED_FIFO` 99 while it waits
//!   for the run to start and enters its reservation itself so that the
//!   kernel's first period starts at its first release, as the simulator's
//!   ([`heir::deadline::enter_at`]). With deadline tasks the free deadline bandwidth of
//!   their CPUs is measured first (by trying), and a task that does not fit
//!   is refused by name with its runtime, period and what is free
//!   ([`RunError::DeadlineAdmission`]); a deadline thread must be allowed on
//!   its whole root domain ([`RunError::DeadlineAffinity`]); a task without `cpus` runs
//!   on every CPU of the simulator's model (`0..=` the largest CPU the file
//!   names, or one CPU when it names none);
//! - CPUs ([`Placement`]): the scenario's CPUs are placed on this machine's
//!   after a short survey of other programs' real-time threads and of other
//!   heir runs ([`crate::cpus`]): a named CPU runs on itself when it is free
//!   and moves to a free one when it is not ([`Placement::Free`], the
//!   default; [`Placement::AsWritten`] keeps the file's numbers); a file that
//!   names no CPU runs on the quietest CPU. Each choice that concerns other
//!   work is a note ([`RunConfig::on_note`]), and so is another program's
//!   real-time thread that ran on the run's CPUs during the run
//!   ([`RealRun::interference`]);
//! - `run` is a busy loop until the thread has used that much CPU time
//!   (its `CLOCK_THREAD_CPUTIME_ID`): the simulator's meaning, whatever
//!   preempts the thread and whatever the CPU's speed; loops come in chunks
//!   sized by a per-thread estimate of ns per loop, seeded by a calibration
//!   at start on a pinned thread (like rt-app's, or `global.calibration` when
//!   it is an integer); `runtime` a wall-clock busy loop; `sleep` a relative
//!   sleep; every busy loop also stops at the end of the run;
//! - timers as rt-app: `t_next` starts at the thread's start and advances by
//!   the period at each use; the thread sleeps with `clock_nanosleep`
//!   (`TIMER_ABSTIME`, `CLOCK_MONOTONIC`); in relative mode an overrun resets
//!   `t_next` to now. A job completes when the thread reaches its next timer:
//!   response = completion − release, and an overrun (completion at or after
//!   the next release) is a deadline miss. A task without timers counts each
//!   pass of a phase as a job (no deadline);
//! - mutexes: `inherit` → [`RawPiMutex`] (kernel PI futex), `none` and
//!   `ceiling` → [`RawEngineMutex`]; conditions → [`PiCondvar`] with the
//!   file's helpers when PI-CV is on; queues → the PI-CV paper's Fig. 5 (pushers help
//!   "more", poppers help "less"); RPC endpoints → [`Endpoint`] (servers help
//!   every caller's reply condition), or with `global.ipc: "donation"`
//!   [`heir::donate::Endpoint`] (NOVA donation: the kernel lends a caller's
//!   priority to the thread serving its request; passive servers, call
//!   timeouts, nested calls, cycles named — see the `donation` module);
//!   barriers and suspend/resume on [`PiCondvar`]s; gangs (GPM) on
//!   [`heir::gang::Gang`]s, boosting with `global.gpm`, each waiter's
//!   latency from `gang_run` to the last notify in the report's `gangs`
//!   (the `gang` module, docs/GANG.md §5).
//!
//! Every blocking operation has the end of the run as its deadline, so a run
//! always ends. RT throttling is never touched.
//!
//! A program that goes wrong while it runs gets the simulator's verdict and
//! words ([`heir_scenario::messages`], [`RunError::Invalid`]): an unlock or a
//! wait on a mutex the thread does not hold, and a zero-time loop
//! ([`ZERO_TIME_EVENT_LIMIT`] events in a row without waiting), which is
//! refused rather than spun at real-time priority until the run ends. A
//! deadlock's time is counted from the run's start, as the simulator's clock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use heir_core::{Node, ObjId, Urgency};
use heir_report::DeadlockKind;
use heir_report::{DeadlockReport, Report, ResponseStats, TaskReport};
use heir_scenario::{
    engine, messages, Event, EventKind, IpcModel, Micros, MutexProtocol, Policy, ResourceKind,
    Scenario, Task, TimerMode,
};

pub mod disturb;
mod donation;
mod gang;
mod trace;

pub use trace::{convert as convert_trace, RealTrace, RunFacts, TraceStats};

pub use donation::TIMEOUT_YIELD_NS;
use donation::{DonEndpoint, Donation};

use crate::cpus::{self, Survey};
use crate::tracefs::{self, TraceError};
use heir::caps::Capabilities;
use heir::ceiling::RawEngineMutex;
use heir::condvar::{PiCondvar, WaitResult};
use heir::mutex::{PiMutex, RawPiMutex};
use heir::queue::PrioQueue;
use heir::rpc::{Caller, Endpoint};
use heir::sys::{self, SchedAttr};
use heir::{thread, Error};

/// Overrides of what the scenario file says.
#[derive(Clone, Debug, Default)]
pub struct RunConfig {
    /// Replaces `global.duration` (µs).
    pub duration_us: Option<u64>,
    /// Replaces `global.pi_cv`.
    pub pi_cv: Option<bool>,
    /// Replaces `global.calibration` (ns per loop).
    pub calibration_ns_per_loop: Option<u64>,
    /// Where the scenario's CPUs run.
    pub placement: Placement,
    /// Receives each note about where the run's CPUs are (a CPU moved off
    /// other real-time work, or shared with it), before the run starts.
    pub on_note: Option<fn(&str)>,
    /// Records the kernel's view of the run in an ftrace instance
    /// ([`RealRun::trace`], docs/TRACING.md).
    pub trace: Option<TraceConfig>,
    /// `heir run --partition`: for the run, make each set of CPUs the
    /// file pins deadline threads to a root domain of its own
    /// ([`crate::partition`]), noted through [`RunConfig::on_note`] and
    /// restored at the end. Off: nothing on the machine changes.
    pub partition: bool,
}

/// How [`run`] records the kernel's view of a run ([`crate::tracefs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceConfig {
    /// The instance's buffer per CPU (KiB); default
    /// [`TraceConfig::buffer_kb`].
    pub buffer_kb_per_cpu: Option<u32>,
    /// Also read the instance's ring-buffer pages for a trace.dat
    /// ([`RealRun::dat`], [`crate::tracedat`]).
    pub dat: bool,
}

impl TraceConfig {
    /// The buffer per CPU for a run of `duration_us`: the configured one,
    /// else 4 MiB per second of run, between 4 and 256 MiB (a busy CPU of
    /// the papers' scenarios records well under 1 MiB a second; a full
    /// buffer drops the newest events and the trace says so).
    pub fn buffer_kb(&self, duration_us: u64) -> u32 {
        self.buffer_kb_per_cpu.unwrap_or_else(|| {
            let secs = duration_us.div_ceil(1_000_000);
            (secs.saturating_mul(4096)).clamp(4096, 262_144) as u32
        })
    }
}

/// Where the scenario's CPUs run on this machine.
///
/// The simulator models CPUs `0..=N` (N the largest CPU the file names; one
/// CPU when it names none); which physical CPU plays which changes nothing
/// in the model, but another program's real-time threads on it change the
/// run (see [`crate::cpus`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Each CPU the file names runs on itself when that CPU is free; one
    /// that another program's real-time work (or another heir run) uses
    /// moves to a free CPU, with a note. A file that names no CPU runs on
    /// the quietest CPU.
    #[default]
    Free,
    /// The file's CPU numbers as written (a note for each one that is busy);
    /// a file that names no CPU still runs on the quietest CPU.
    AsWritten,
}

/// How long [`run_scenario`] watches the other programs' real-time threads
/// before choosing its CPUs.
pub const CPU_SURVEY_NS: u64 = 50_000_000;

/// Why a scenario could not be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No finite duration.
    #[error("the scenario has no finite duration: set global.duration in the file or pass --duration SECONDS")]
    NoDuration,
    /// The process may not use real-time priorities.
    #[error("cannot run real-time threads: {0}")]
    NoPrivilege(String),
    /// A feature `heir run` does not implement.
    #[error("{path}: {what} is not supported by heir run")]
    Unsupported {
        /// JSON path.
        path: String,
        /// What.
        what: String,
    },
    /// The scenario cannot be run as written here, or its program went
    /// wrong while it ran (an unlock of a mutex the thread does not hold, a
    /// zero-time loop): the simulator refuses the same file with the same
    /// path, position and message ([`heir_scenario::messages`]). Displays
    /// as the simulator's errors: `LINE:COLUMN: at PATH: MESSAGE`, or
    /// `PATH: MESSAGE` without a position.
    #[error("{}{path}: {message}", if *line > 0 { format!("{line}:{column}: at ") } else { String::new() })]
    Invalid {
        /// JSON path.
        path: String,
        /// 1-based line in the file; 0 when unknown.
        line: u32,
        /// 1-based column; 0 with `line`.
        column: u32,
        /// What is wrong.
        message: String,
    },
    /// The runtime failed (not the scenario's fault).
    #[error("runtime: {0}")]
    Runtime(Error),
    /// A `SCHED_DEADLINE` task the kernel does not admit (`EBUSY`): its
    /// reservation is more than the deadline bandwidth left free on its
    /// CPUs' root domain (measured at start by trying:
    /// [`heir::deadline::probe_free`]).
    #[error("task {task}: SCHED_DEADLINE runtime {runtime_us} µs every {period_us} µs ({:.3} CPU) is not admitted: {free:.3} CPU of deadline bandwidth is free on CPUs {cpus:?}{} (the kernel's admission control, EBUSY)", *runtime_us as f64 / *period_us as f64, if *before > 0.0 { format!(" after the run's earlier deadline tasks ({before:.3} CPU)") } else { String::new() })]
    DeadlineAdmission {
        /// The task (the thread's name).
        task: String,
        /// Its `dl-runtime` (µs).
        runtime_us: u64,
        /// Its `dl-period` (µs).
        period_us: u64,
        /// The free bandwidth left for it (CPUs).
        free: f64,
        /// What the run's earlier deadline threads took of what was free
        /// at start (CPUs).
        before: f64,
        /// The machine's CPUs its thread is allowed on.
        cpus: Vec<u32>,
    },
    /// A `SCHED_DEADLINE` task pinned to CPUs that are not a whole root
    /// domain (`EPERM`): the kernel admits a deadline thread only with an
    /// affinity covering its root domain.
    #[error("task {task}: {}", affinity_message(file_cpus.as_deref(), cpus))]
    DeadlineAffinity {
        /// The task (the thread's name).
        task: String,
        /// The machine's CPUs it was to run on.
        cpus: Vec<u32>,
        /// The task's `cpus` in the file (`None`: it names none, and heir
        /// chose the run's CPU).
        file_cpus: Option<Vec<u32>>,
    },
    /// `--partition` could not make the root domains (why; nothing was
    /// left changed).
    #[error("--partition: {0}")]
    Partition(String),
    /// The kernel's trace could not be recorded (`heir run --trace`).
    #[error("{0}")]
    Trace(#[from] TraceError),
    /// The free deadline bandwidth could not be measured.
    #[error("measuring the free SCHED_DEADLINE bandwidth: {0}")]
    DeadlineProbe(heir::deadline::ProbeError),
    /// A thread could not be started.
    #[error("cannot start thread {name}: {source}")]
    Spawn {
        /// Thread name.
        name: String,
        /// The error.
        source: std::io::Error,
    },
}

impl From<Error> for RunError {
    fn from(e: Error) -> Self {
        RunError::Runtime(e)
    }
}

/// A scenario resource, instantiated.
enum Res {
    Pi(RawPiMutex),
    /// A `bwi` mutex: a PI futex with user-space M-BWI accounting
    /// ([`heir::bwi`]).
    Bwi(RawPiMutex),
    Engine(RawEngineMutex),
    Cond(PiCondvar),
    Queue(PrioQueue<()>),
    Barrier {
        state: PiMutex<(u32, u64)>,
        cond: PiCondvar,
        users: u32,
    },
    Timer {
        unique: bool,
        mode: TimerMode,
        shared: PiMutex<Option<u64>>,
    },
    Suspend {
        mutex: RawPiMutex,
        cond: PiCondvar,
    },
    Endpoint(Endpoint<u64, ()>),
    /// An endpoint under the donation model (`global.ipc: "donation"`).
    Donate(DonEndpoint),
    /// A gang (GPM): an L-GPM [`heir::gang::Gang`] (the `gang`
    /// module).
    Gang(gang::RunGang),
}

/// Zero-time events (lock, unlock, signal, … — anything but a `run`,
/// `runtime`, `sleep` or `timer` of a positive length) a thread may execute
/// in a row without ever waiting before the run refuses its program as a
/// zero-time loop, as the simulator does (at most a few tenths of a second
/// of spinning at the thread's priority).
pub const ZERO_TIME_EVENT_LIMIT: u64 = 1 << 20;

/// Events of each thread kept in [`RealRun::log`] (its first ones).
pub const LOG_EVENTS: usize = 64;

use crate::busy::waste;
pub use crate::busy::{calibrate, Calibration, CpuCalibration, RunAccuracy};

/// SplitMix64, for `Micros::Uniform` draws.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn draw(&mut self, m: Micros) -> u64 {
        match m {
            Micros::Fixed(v) => v,
            Micros::Uniform { min, max } if max > min => min + self.next() % (max - min + 1),
            Micros::Uniform { min, .. } => min,
        }
    }
}

fn attr_of(task: &Task) -> Result<SchedAttr, RunError> {
    let s = task.sched;
    let clamp_rt = |p: i32| p.clamp(1, 99) as u8;
    Ok(match s.policy {
        Policy::Fifo => heir::sched::fifo(clamp_rt(s.priority)),
        Policy::Rr => SchedAttr {
            sched_policy: sys::SCHED_RR,
            sched_priority: u32::from(clamp_rt(s.priority)),
            ..SchedAttr::default()
        },
        Policy::Other => heir::sched::other(s.priority.clamp(-20, 19) as i8),
        Policy::Batch => SchedAttr {
            sched_policy: sys::SCHED_BATCH,
            sched_nice: s.priority.clamp(-20, 19),
            ..SchedAttr::default()
        },
        Policy::Idle => SchedAttr {
            sched_policy: sys::SCHED_IDLE,
            ..SchedAttr::default()
        },
        Policy::Deadline => match s.dl {
            Some(dl) => heir::deadline::attr(dl.runtime_us, dl.deadline_us, dl.period_us),
            None => {
                return Err(RunError::Unsupported {
                    path: task.path.clone(),
                    what: "SCHED_DEADLINE without dl-runtime".into(),
                })
            }
        },
    })
}

/// What each thread hands back.
#[derive(Default)]
struct ThreadOut {
    stats: ResponseStats,
    jobs: u64,
    misses: u64,
    events: u64,
    /// How late the thread woke for its start (ns).
    late_ns: u64,
    /// What it lent and borrowed through `bwi` mutexes.
    bwi: heir::bwi::BwiThread,
    /// Its first [`LOG_EVENTS`] events: when each ended (ns) and what.
    log: Vec<(u64, String)>,
    /// Its calls that timed out (aborted).
    aborted: u64,
    /// Its jobs' `run` accuracy.
    accuracy: RunAccuracy,
    /// Its `gang_wait`s, per gang.
    gang_waits: Vec<gang::Waits>,
    /// Its jobs' windows (release, completion — or the end of the run for
    /// a job that did not complete; ns), at most [`MAX_JOB_WINDOWS`]: what
    /// [`disturb::measure`] charges each job with.
    windows: Vec<(u64, u64)>,
    /// Its jobs still pending at the end whose deadline had passed: misses
    /// of jobs that did not complete (also in `misses`).
    unfinished: u64,
}

/// The most job windows a thread keeps for the disturbance measure
/// (16 B each); later jobs are counted, not charged.
pub const MAX_JOB_WINDOWS: usize = 1 << 18;

/// Run-wide shared state.
struct Shared {
    res: Vec<Res>,
    /// Scenario resource names, parallel to `res` (for deadlock cycles).
    res_names: Vec<String>,
    /// The run's length, ns.
    duration_ns: u64,
    /// The run's start (the scenario's time 0), ns: 0 until the first
    /// thread released sets it ([`Shared::begin`]); [`ABORTED`] when the
    /// run is called off before it starts.
    t0_ns: AtomicU64,
    failure: Mutex<Option<RunError>>,
    /// ns per busy loop on each CPU of the run (each thread's first
    /// estimate, [`Ctx::run_us`]).
    calibration: Calibration,
    /// The scenario's CPU → this machine's.
    cpu_map: Vec<(u32, u32)>,
    deadlock: Mutex<Option<DeadlockReport>>,
    stopped: AtomicBool,
    names: Mutex<HashMap<i32, String>>,
    seed: u64,
    /// The donation model's state (`global.ipc: "donation"`), else `None`.
    don: Option<Donation>,
    /// Each thread's gang control word, in start order (GPM).
    words: Vec<heir::gang::ControlWord>,
    /// Per task, the gang that lists it (a resource index).
    task_gang: Vec<Option<usize>>,
}

/// [`Shared::t0_ns`] of a run called off before it started.
const ABORTED: u64 = u64::MAX;

/// How long after the threads are released the scenario's time 0 is: every
/// thread is asleep, waiting for its start, by then.
const START_MARGIN_NS: u64 = 20_000_000;

/// A thread that starts (or, at its first event, is) this late behind its
/// start in the file was kept off its CPU by something outside the run:
/// the run notes it ([`RealRun::late_starts`]).
pub const LATE_START_NS: u64 = 500_000;

impl Shared {
    /// The run's shared state before any thread starts: the resources
    /// instantiated, no start yet.
    fn new(
        scenario: &Scenario,
        pi_cv: bool,
        duration_us: u64,
        calibration: Calibration,
        cpu_map: Vec<(u32, u32)>,
    ) -> Result<Shared, Error> {
        Ok(Shared {
            res: make_resources(scenario, pi_cv)?,
            res_names: scenario.resources.iter().map(|r| r.name.clone()).collect(),
            duration_ns: duration_us * 1000,
            t0_ns: AtomicU64::new(0),
            failure: Mutex::new(None),
            calibration,
            cpu_map,
            deadlock: Mutex::new(None),
            stopped: AtomicBool::new(false),
            names: Mutex::new(HashMap::new()),
            seed: scenario.global.seed,
            don: Donation::of(scenario),
            words: gang::control_words(scenario),
            task_gang: (0..scenario.tasks.len())
                .map(|ti| gang::initial_gang(scenario, ti))
                .collect(),
        })
    }

    /// The run's start: set by the first thread to ask, once the threads are
    /// released ([`START_MARGIN_NS`] from then), so that the start is taken
    /// by a real-time thread that just woke — not by the launching thread,
    /// which a busy CPU may preempt for longer than the margin (every thread
    /// would then start late, together, in priority order instead of in the
    /// file's). `None` if the run was called off.
    fn begin(&self) -> Option<u64> {
        let mine = sys::now_ns() + START_MARGIN_NS;
        let t0 = match self
            .t0_ns
            .compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => mine,
            Err(v) => v,
        };
        (t0 != ABORTED).then_some(t0)
    }

    /// The end of the run (0 if it was called off, `u64::MAX` before it
    /// starts).
    fn end(&self) -> u64 {
        match self.t0_ns.load(Ordering::Acquire) {
            0 => u64::MAX,
            ABORTED => 0,
            t0 => t0.saturating_add(self.duration_ns),
        }
    }
}

/// Stop reasons inside a thread.
enum Stop {
    End,
    Deadlock,
    Failed(RunError),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        match e {
            Error::TimedOut => Stop::End,
            Error::Deadlock { .. } => Stop::Deadlock,
            e => Stop::Failed(RunError::Runtime(e)),
        }
    }
}

/// A run on real threads: its report, and where it ran.
#[derive(Clone, Debug)]
pub struct RealRun {
    /// The report, in the simulator's schema (`mode: "real"`).
    pub report: Report,
    /// The scenario's CPUs and the CPUs of this machine they ran on.
    pub cpus: Vec<(u32, u32)>,
    /// ns per busy loop that `run` used at first (calibrated, or the
    /// file's) on the run's first CPU; every CPU's in [`RealRun::calibration`].
    pub ns_per_loop: f64,
    /// ns per busy loop on each CPU of the run (calibrated, or the file's).
    pub calibration: Calibration,
    /// How close each job's `run` events came to their nominal CPU time
    /// (every thread's jobs; [`RunAccuracy`]).
    pub run_accuracy: RunAccuracy,
    /// Real-time threads of other programs that ran on those CPUs during
    /// the run (each also given to [`RunConfig::on_note`]): when not empty,
    /// the run's timing includes their work.
    pub interference: Vec<cpus::RtThread>,
    /// What took the run's CPUs from its threads, measured from the
    /// kernel's scheduler records of those CPUs ([`disturb`]): per job,
    /// per thread, and who (another program, the fair server, a kernel or
    /// IRQ thread).
    pub disturbance: disturb::Disturbance,
    /// Threads the file has run first on their CPU that woke more than
    /// [`LATE_START_NS`] after their start, and by how much (µs): something
    /// outside the run held the CPU then — another program, or a hypervisor
    /// that did not run this virtual CPU (steal time) — and the run's first
    /// events may be out of the file's order (a later period repeats them,
    /// timers permitting).
    pub late_starts: Vec<(String, f64)>,
    /// What heir-rt could not apply to the kernel during the run (failed
    /// `sched_setattr` calls, boosts it cannot express, …) and how many
    /// calls it made: the process's [`thread::apply_stats`] over the run
    /// (another user of heir-rt in the same process counts too).
    pub apply: thread::ApplyStats,
    /// Each thread's name and kernel tid, in start order.
    pub tids: Vec<(String, i32)>,
    /// The first [`LOG_EVENTS`] events of each thread, all threads merged
    /// in time order: (µs from the run's start, thread, the event's JSON
    /// path — or a `bwi` throttle). An event's time is when it *ended*
    /// (a `lock`: when the thread got the mutex).
    pub log: Vec<(f64, String, String)>,
    /// `bwi` mutexes: per thread with a non-zero figure, the budget it lent
    /// and consumed, its throttles ([`heir::bwi`]: a user-space
    /// approximation of M-BWI). Empty without `bwi` mutexes.
    pub bwi: Vec<heir::bwi::BwiReport>,
    /// The kernel's view of the run, with [`RunConfig::trace`].
    pub trace: Option<RealTrace>,
    /// The run's ring-buffer pages and what decodes them, for a
    /// trace.dat, with [`TraceConfig::dat`].
    pub dat: Option<crate::tracedat::DatCapture>,
}

impl RealRun {
    /// The name of the run's thread `tid`, if it is one.
    pub fn thread_name(&self, tid: i32) -> Option<String> {
        self.tids
            .iter()
            .find(|(_, t)| *t == tid)
            .map(|(n, _)| n.clone())
    }
}

/// Runs `scenario` on real threads and reports like the simulator
/// (`mode: "real"`). See [`run`] for where it ran.
pub fn run_scenario(scenario: &Scenario, config: &RunConfig) -> Result<Report, RunError> {
    run(scenario, config).map(|r| r.report)
}

/// Runs `scenario` on real threads: the report, the CPUs it ran on, and
/// what else ran there.
pub fn run(scenario: &Scenario, config: &RunConfig) -> Result<RealRun, RunError> {
    let duration_us = run_duration_us(scenario, config)?;
    let pi_cv = config.pi_cv.unwrap_or(scenario.global.pi_cv);
    if !pi_cv && scenario.rpc.model == IpcModel::Donation {
        // The kernel lends through the request's PI futex: a call that
        // lends nothing would need another wait.
        return Err(RunError::Unsupported {
            path: "global.ipc".into(),
            what: "\"donation\" with PI-CV off (calls that lend nothing)".into(),
        });
    }
    let caps = Capabilities::detect();
    check_privilege(scenario, &caps)?;
    // Check what the runner cannot do before starting anything.
    let attrs = task_attrs(scenario, &caps)?;
    let named = named_cpus(scenario, &caps)?;
    let survey = Survey::take(&caps.cpus, CPU_SURVEY_NS);
    let cpu_map = place_cpus(scenario, config, &caps, &survey, &named)?;
    let physical: Vec<u32> = cpu_map
        .iter()
        .map(|&(_, p)| p)
        .filter(|p| caps.cpus.contains(p))
        .collect();
    let _claims = survey.keep(&physical);
    let _partition = if config.partition {
        Some(partition_for(scenario, config, &cpu_map, &physical, &caps)?)
    } else {
        None
    };
    let dl_free = deadline_admission(scenario, &cpu_map, &physical)?;
    let calibration = calibration(scenario, config, &cpu_map, &physical, &caps);
    let ns_per_loop = calibration.ns_per_loop(None);
    let mut instance = match &config.trace {
        Some(tc) => Some(tracefs::Instance::create(tc.buffer_kb(duration_us))?),
        None => None,
    };
    // The kernel's records of every thread on the run's CPUs: what took
    // them from the run (disturb.rs). Without tracefs the run goes on,
    // unmeasured, and says why.
    let mut watch_instance =
        tracefs::Instance::create_watch(watch_buffer_kb(duration_us), &physical)
            .map_err(|e| e.to_string());
    let shared = Arc::new(Shared::new(
        scenario,
        pi_cv,
        duration_us,
        calibration.clone(),
        cpu_map.clone(),
    )?);
    let applied_before = thread::apply_stats();
    let threads = Threads::start(scenario, &shared, &attrs, &physical)?;
    let failed = threads.first_failure();
    let setup = setup_helpers(scenario, &shared, &threads, pi_cv);
    let watch = cpus::Watch::start();
    let traced = match &mut instance {
        Some(i) => i.start(&threads.tids),
        None => Ok(()),
    };
    if let Ok(w) = &mut watch_instance {
        if let Err(e) = w.start_watch() {
            watch_instance = Err(e.to_string());
        }
    }
    if failed.is_some() || setup.is_err() || traced.is_err() {
        // Tell every thread to stop at once.
        shared.t0_ns.store(ABORTED, Ordering::Release);
    }
    let tids: Vec<(String, i32)> = threads
        .names
        .iter()
        .cloned()
        .zip(threads.tids.clone())
        .collect();
    let (names, outs) = threads.release_and_join();
    traced?;
    let dat_wanted = config.trace.is_some_and(|t| t.dat);
    let recorded = instance
        .as_mut()
        .map(|i| crate::tracedat::collect(i, dat_wanted));
    let instance_name = instance.as_ref().map(|i| i.dir().display().to_string());
    drop(instance);
    let (recorded, mut dat) = match recorded.transpose()? {
        Some((r, d)) => (Some(r), d),
        None => (None, None),
    };
    if let Some(d) = &mut dat {
        for (name, tid) in &tids {
            d.name(*tid, name);
        }
    }
    let watched = watch_instance.and_then(|mut w| w.collect().map_err(|e| e.to_string()));
    let bwi = bwi_reports(&tids, &outs);
    let mut run_accuracy = RunAccuracy::default();
    for o in outs.iter().flatten() {
        run_accuracy.merge(&o.accuracy);
    }
    let log = merged_log(&tids, &outs, shared.t0_ns.load(Ordering::Acquire));
    let apply = thread::apply_stats().since(&applied_before);
    let t0 = shared.begin().unwrap_or_else(sys::now_ns);
    let end = t0 + shared.duration_ns;
    if let Some(f) = failed {
        return Err(start_failure(
            scenario,
            &names,
            f,
            &dl_free,
            (&cpu_map, &physical),
        ));
    }
    setup?;
    let actual_end = sys::now_ns().min(end);
    let interference = watch.finish(&physical);
    let count_aborts = shared.don.as_ref().is_some_and(|d| d.count_aborts);
    let gangs = {
        let waits: Vec<(String, &[gang::Waits])> = names
            .iter()
            .zip(&outs)
            .filter_map(|(n, o)| o.as_ref().map(|o| (n.clone(), o.gang_waits.as_slice())))
            .collect();
        gang::reports(&shared, &waits)
    };
    let disturbance = match watched {
        Ok(rec) => {
            if let Ok(path) = std::env::var("HEIR_DEBUG_WATCH") {
                let _ = std::fs::write(path, &rec.text);
            }
            let parsed = tracefs::parse_text(&rec.text);
            let dropped = rec.dropped.iter().map(|&(_, n)| n).sum::<u64>() + parsed.lost;
            // Passive servers run at SCHED_IDLE between donations.
            let idle: Vec<bool> = scenario
                .tasks
                .iter()
                .enumerate()
                .flat_map(|(ti, t)| {
                    let passive = shared.don.as_ref().is_some_and(|d| d.is_passive(ti));
                    std::iter::repeat_n(passive, t.instance as usize)
                })
                .collect();
            let deadline: Vec<bool> = scenario
                .tasks
                .iter()
                .flat_map(|t| {
                    std::iter::repeat_n(t.sched.policy == Policy::Deadline, t.instance as usize)
                })
                .collect();
            let threads: Vec<disturb::RunThread<'_>> = names
                .iter()
                .zip(&tids)
                .zip(&outs)
                .map(|((n, (_, tid)), o)| {
                    (
                        n.as_str(),
                        *tid,
                        o.as_ref().map_or(&[][..], |o| o.windows.as_slice()),
                    )
                })
                .collect();
            disturb::measure(
                &parsed,
                dropped,
                &physical,
                &disturb::RunThreads {
                    threads,
                    window: (t0, actual_end.max(t0)),
                    idle,
                    deadline,
                },
            )
        }
        Err(why) => disturb::Disturbance::unmeasured(why),
    };
    let (tasks, events, late_starts) =
        task_reports(scenario, &cpu_map, (names, outs), count_aborts);
    note_disturbances(config, &physical, &interference, &late_starts, &disturbance);
    let deadlock = shared.deadlock.lock().ok().and_then(|d| d.clone());
    if let Some(e) = shared.failure.lock().ok().and_then(|mut f| f.take()) {
        return Err(e);
    }
    let mut trace = recorded.map(|rec| {
        let facts = trace::RunFacts {
            tids: &tids,
            bases: thread_bases(scenario),
            resources: &shared.res_names,
            conds: cond_names(&shared),
            cpu_map: &cpu_map,
            t0,
            duration: shared.duration_ns,
        };
        let parsed = tracefs::parse_text(&rec.text);
        trace::convert(
            &parsed,
            rec.dropped,
            instance_name.unwrap_or_default(),
            &facts,
        )
    });
    if let Some(t) = &mut trace {
        t.add_displacements(&disturbance.spans, t0);
    }
    Ok(RealRun {
        report: Report {
            mode: "real",
            duration_us: actual_end.saturating_sub(t0) as f64 / 1000.0,
            tasks,
            deadlock,
            gangs,
            events,
        },
        cpus: cpu_map,
        ns_per_loop,
        calibration,
        run_accuracy,
        interference,
        disturbance,
        late_starts,
        apply,
        tids,
        bwi,
        log,
        trace,
        dat,
    })
}

/// Each thread's base urgency, in start order (the simulator's: a passive
/// server's is the lowest).
fn thread_bases(scenario: &Scenario) -> Vec<Urgency> {
    let mut v = Vec::new();
    for (ti, t) in scenario.tasks.iter().enumerate() {
        let base = if scenario.rpc.is_passive(heir_scenario::TaskIdx(ti)) {
            Urgency::LOWEST
        } else {
            engine::urgency(&t.sched)
        };
        v.extend(std::iter::repeat_n(base, t.instance as usize));
    }
    v
}

/// The run's condition variables by engine id, named as the simulator
/// names them (`c`, `q.more`, `q.less`, `b.cond`, `s.cond`).
fn cond_names(sh: &Shared) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for (r, name) in sh.res.iter().zip(&sh.res_names) {
        match r {
            Res::Cond(c) => v.push((c.id().0, name.clone())),
            Res::Queue(q) => {
                v.push((q.more().id().0, format!("{name}.more")));
                v.push((q.less().id().0, format!("{name}.less")));
            }
            Res::Barrier { cond, .. } | Res::Suspend { cond, .. } => {
                v.push((cond.id().0, format!("{name}.cond")));
            }
            _ => {}
        }
    }
    v
}

/// The threads' logs merged in time order ([`RealRun::log`]).
fn merged_log(
    tids: &[(String, i32)],
    outs: &[Option<ThreadOut>],
    t0: u64,
) -> Vec<(f64, String, String)> {
    let mut log: Vec<(f64, String, String)> = tids
        .iter()
        .zip(outs)
        .filter_map(|((n, _), o)| o.as_ref().map(|o| (n, &o.log)))
        .flat_map(|(n, l)| {
            l.iter()
                .map(move |(t, w)| (t.saturating_sub(t0) as f64 / 1000.0, n.clone(), w.clone()))
        })
        .collect();
    log.sort_by(|a, b| a.0.total_cmp(&b.0));
    log
}

/// The `bwi` figures of the run's threads ([`heir::bwi::reports`]).
fn bwi_reports(tids: &[(String, i32)], outs: &[Option<ThreadOut>]) -> Vec<heir::bwi::BwiReport> {
    let threads: Vec<(String, i32, &heir::bwi::BwiThread)> = tids
        .iter()
        .zip(outs)
        .filter_map(|((n, t), o)| o.as_ref().map(|o| (n.clone(), *t, &o.bwi)))
        .collect();
    heir::bwi::reports(&threads)
}

/// The machine's CPUs a thread of `task` runs on at its start.
fn thread_cpus(task: &Task, cpu_map: &[(u32, u32)], physical: &[u32]) -> Vec<u32> {
    match &task.cpus {
        Some(c) => place(cpu_map, c),
        None => physical.to_vec(),
    }
}

/// For a scenario with `SCHED_DEADLINE` tasks: the free deadline bandwidth
/// of each CPU set its deadline threads run on, measured by trying
/// ([`heir::deadline::probe_free`]), and the check that their reservations
/// fit — the first thread (in start order) that does not is named with its
/// runtime, period and what is left ([`RunError::DeadlineAdmission`]).
/// Threads also admit themselves at their start; an `EBUSY` there (another
/// program took bandwidth meanwhile) is the same error.
fn deadline_admission(
    scenario: &Scenario,
    cpu_map: &[(u32, u32)],
    physical: &[u32],
) -> Result<Vec<(Vec<u32>, f64)>, RunError> {
    let mut free: Vec<(Vec<u32>, f64)> = Vec::new();
    let mut taken: Vec<f64> = Vec::new();
    for t in &scenario.tasks {
        let Some(dl) = t.sched.dl.filter(|_| t.sched.policy == Policy::Deadline) else {
            continue;
        };
        let cpus = thread_cpus(t, cpu_map, physical);
        let i = match free.iter().position(|(c, _)| *c == cpus) {
            Some(i) => i,
            None => {
                let f = heir::deadline::probe_free(&cpus).map_err(|e| match e {
                    heir::deadline::ProbeError::NotARootDomain { cpus } => {
                        RunError::DeadlineAffinity {
                            task: t.name.clone(),
                            cpus,
                            file_cpus: t.cpus.clone(),
                        }
                    }
                    e => RunError::DeadlineProbe(e),
                })?;
                free.push((cpus.clone(), f));
                taken.push(0.0);
                free.len() - 1
            }
        };
        let bw = dl.runtime_us as f64 / dl.period_us as f64;
        for name in t.thread_names() {
            // The kernel's test, to its precision (the probe's 10⁻⁶).
            if taken[i] + bw > free[i].1 + 1e-6 {
                return Err(RunError::DeadlineAdmission {
                    task: name,
                    runtime_us: dl.runtime_us,
                    period_us: dl.period_us,
                    free: (free[i].1 - taken[i]).max(0.0),
                    before: taken[i],
                    cpus,
                });
            }
            taken[i] += bw;
        }
    }
    Ok(free)
}

/// [`RunError::DeadlineAffinity`]'s words: what the file says, where heir
/// ran it, and the ways out.
fn affinity_message(file_cpus: Option<&[u32]>, cpus: &[u32]) -> String {
    let how = "a deadline thread must be allowed on every CPU of its root domain";
    let ways = format!(
        "make CPUs {cpus:?} a root domain of their own for the run with `heir run --partition`, or by hand (an exclusive cpuset: docs/DEADLINE.md)"
    );
    match file_cpus {
        None => format!(
            "the file names no CPUs for it, so heir runs it on one CPU of this machine (CPU {}), and the kernel refuses SCHED_DEADLINE there (EPERM): {how}; name every CPU in the task's \"cpus\", or {ways}",
            cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
        Some(f) if f == cpus => format!(
            "the kernel refuses SCHED_DEADLINE for a thread allowed only on CPUs {cpus:?} (the file's \"cpus\") (EPERM): {how}; run it on all CPUs, or {ways}"
        ),
        Some(f) => format!(
            "the kernel refuses SCHED_DEADLINE for a thread allowed only on CPUs {cpus:?} (the file's \"cpus\" {f:?}, placed on this machine's) (EPERM): {how}; run it on all CPUs, or {ways}"
        ),
    }
}

/// The root domains a run made (`--partition`): restored when dropped,
/// with a note of what could not be undone.
struct RunPartition {
    part: crate::partition::Partition,
    on_note: Option<fn(&str)>,
}

impl Drop for RunPartition {
    fn drop(&mut self) {
        if self.part.changes.is_empty() {
            return;
        }
        let failed = crate::partition::restore();
        self.part.changes.clear();
        if let Some(f) = self.on_note {
            if failed.is_empty() {
                f("--partition: restored the cpusets as they were");
            } else {
                f(&format!(
                    "--partition: could not restore: {}",
                    failed.join("; ")
                ));
            }
        }
    }
}

/// `--partition`: each set of CPUs the run's deadline threads are pinned
/// to, made a root domain of its own for the run ([`crate::partition`]).
fn partition_for(
    scenario: &Scenario,
    config: &RunConfig,
    cpu_map: &[(u32, u32)],
    physical: &[u32],
    caps: &Capabilities,
) -> Result<RunPartition, RunError> {
    let sets: Vec<Vec<u32>> = scenario
        .tasks
        .iter()
        .filter(|t| t.sched.policy == Policy::Deadline)
        .map(|t| thread_cpus(t, cpu_map, physical))
        .collect();
    let all = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| crate::partition::parse_cpu_list(&s))
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| caps.cpus.clone());
    let tag = format!("heir-run-{}", std::process::id());
    let part = crate::partition::Partition::make(&sets, &all, physical, &tag)
        .map_err(RunError::Partition)?;
    if part.changes.is_empty() {
        config.note(
            "--partition: nothing to change: the run's deadline threads are allowed on every CPU"
                .to_string(),
        );
    } else {
        config.note(format!(
            "--partition changed (restored at the end of the run): {}",
            part.changes.join("; ")
        ));
    }
    Ok(RunPartition {
        part,
        on_note: config.on_note,
    })
}

/// The error for thread `i` (of `names`) that could not start: the call
/// that failed — a deadline thread's admission (`EBUSY`) or affinity
/// (`EPERM`) named as such — else no privilege.
fn start_failure(
    scenario: &Scenario,
    names: &[String],
    (i, error): (usize, Option<(&'static str, i32)>),
    deadline_free: &[(Vec<u32>, f64)],
    (cpu_map, physical): (&[(u32, u32)], &[u32]),
) -> RunError {
    let name = names.get(i).cloned().unwrap_or_default();
    let task = scenario
        .tasks
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, t.instance as usize))
        .nth(i);
    if let (Some(t), Some(("sched_setattr", errno))) = (task, error) {
        if let Some(dl) = t.sched.dl.filter(|_| t.sched.policy == Policy::Deadline) {
            let cpus = thread_cpus(t, cpu_map, physical);
            if errno == libc::EPERM {
                return RunError::DeadlineAffinity {
                    task: name,
                    cpus,
                    file_cpus: t.cpus.clone(),
                };
            }
            if errno == libc::EBUSY {
                let free = deadline_free
                    .iter()
                    .find(|(c, _)| *c == cpus)
                    .map_or(0.0, |(_, f)| *f);
                return RunError::DeadlineAdmission {
                    task: name,
                    runtime_us: dl.runtime_us,
                    period_us: dl.period_us,
                    free,
                    before: 0.0,
                    cpus,
                };
            }
        }
    }
    let why = match error {
        Some((op, errno)) => format!("{op}: {}", sys::errno_name(errno)),
        None => "unknown".to_string(),
    };
    RunError::NoPrivilege(format!(
        "thread {name} could not set its scheduling attributes or CPU affinity ({why})"
    ))
}

/// The error for `task`'s thread `name` refused `SCHED_DEADLINE` by the
/// kernel when it entered its reservation (`errno`): its admission
/// (`EBUSY`: another program took bandwidth since the probe), its affinity
/// (`EPERM`), else what failed.
fn deadline_error(task: &Task, name: &str, errno: sys::Errno) -> RunError {
    let cpus = sys::thread_cpus();
    match task.sched.dl {
        Some(dl) if errno == libc::EBUSY => RunError::DeadlineAdmission {
            task: name.to_string(),
            runtime_us: dl.runtime_us,
            period_us: dl.period_us,
            free: 0.0,
            before: 0.0,
            cpus,
        },
        _ if errno == libc::EPERM => RunError::DeadlineAffinity {
            task: name.to_string(),
            cpus,
            file_cpus: task.cpus.clone(),
        },
        _ => RunError::Runtime(Error::Os {
            op: "sched_setattr",
            errno,
        }),
    }
}

/// Notes what disturbed the run: other programs' real-time threads on its
/// CPUs, threads that started late.
fn note_disturbances(
    config: &RunConfig,
    physical: &[u32],
    interference: &[cpus::RtThread],
    late_starts: &[(String, f64)],
    disturbance: &disturb::Disturbance,
) {
    // Measured, the run's report says who took what; the snapshots of
    // other programs' real-time threads only stand in when it is not.
    let interference = if disturbance.not_measured.is_some() {
        interference
    } else {
        &[]
    };
    if let Some(why) = &disturbance.not_measured {
        config.note(format!(
            "the run's disturbance was not measured ({why}): only other programs' real-time threads seen at its start and end are reported"
        ));
    }
    for t in interference {
        config.note(format!(
            "during the run, another program's real-time thread ran on its CPUs {physical:?}: {t}; the run's timing includes that work"
        ));
    }
    for (name, us) in late_starts {
        config.note(format!(
            "thread {name} started {us:.0} µs late: something outside the run (another program, the hypervisor) held its CPU; the run's first events are out of the file's order"
        ));
    }
}

impl RunConfig {
    /// Hands a note about the run's CPUs to [`RunConfig::on_note`].
    fn note(&self, msg: String) {
        if let Some(f) = self.on_note {
            f(&msg);
        }
    }
}

/// The watch instance's buffer per CPU (KiB): 1 MiB per second of run,
/// between 2 and 64 MiB (a CPU switching 5,000 times a second fills about
/// 0.4 MiB a second; a full buffer drops the newest records, and the
/// measure says so).
fn watch_buffer_kb(duration_us: u64) -> u32 {
    let secs = duration_us.div_ceil(1_000_000);
    (secs.saturating_mul(1024)).clamp(2048, 65_536) as u32
}

/// The run's length (µs): the configuration's, else the file's finite
/// `global.duration`.
fn run_duration_us(scenario: &Scenario, config: &RunConfig) -> Result<u64, RunError> {
    config
        .duration_us
        .or_else(|| {
            scenario
                .global
                .duration_s
                .filter(|d| d.is_finite() && *d > 0.0)
                .map(|d| (d * 1e6) as u64)
        })
        .ok_or(RunError::NoDuration)
}

/// Refuses a scenario with real-time policies (a task's or a phase's)
/// where this process may not use them.
fn check_privilege(scenario: &Scenario, caps: &Capabilities) -> Result<(), RunError> {
    let needs_rt = scenario.tasks.iter().any(|t| {
        t.sched.policy.is_realtime()
            || t.phases
                .iter()
                .any(|p| p.sched.is_some_and(|s| s.policy.is_realtime()))
    });
    match caps.realtime_missing() {
        Some(why) if needs_rt => Err(RunError::NoPrivilege(why)),
        _ => Ok(()),
    }
}

/// Each task's attributes, in task order; refuses a task CPU this process
/// may not use.
fn task_attrs(scenario: &Scenario, caps: &Capabilities) -> Result<Vec<SchedAttr>, RunError> {
    let mut attrs = Vec::new();
    for t in &scenario.tasks {
        attrs.push(attr_of(t)?);
        for c in t.cpus.iter().flatten() {
            if !caps.cpus.contains(c) {
                return Err(RunError::Invalid {
                    path: format!("{}.cpus", t.path),
                    line: t.line,
                    column: t.column,
                    message: format!("CPU {c} is not available (allowed: {:?})", caps.cpus),
                });
            }
        }
    }
    Ok(attrs)
}

/// Every CPU the file names (tasks' and phases'); refuses a phase CPU this
/// process may not use.
fn named_cpus(scenario: &Scenario, caps: &Capabilities) -> Result<Vec<u32>, RunError> {
    let mut named: Vec<u32> = Vec::new();
    for t in &scenario.tasks {
        for p in &t.phases {
            for c in p.cpus.iter().flatten() {
                if !caps.cpus.contains(c) {
                    return Err(RunError::Invalid {
                        path: format!("{}.cpus", p.path),
                        line: p.line,
                        column: p.column,
                        message: format!("CPU {c} is not available (allowed: {:?})", caps.cpus),
                    });
                }
            }
        }
        named.extend(t.cpus.iter().flatten());
        named.extend(t.phases.iter().filter_map(|p| p.cpus.as_ref()).flatten());
    }
    Ok(named)
}

/// The scenario's CPUs → this machine's: the simulator's CPUs (`0..=` the
/// largest named; one when none is named), placed on free CPUs of this
/// machine as `config.placement` says, with a note for each choice that
/// concerns other work.
fn place_cpus(
    scenario: &Scenario,
    config: &RunConfig,
    caps: &Capabilities,
    survey: &Survey,
    named: &[u32],
) -> Result<Vec<(u32, u32)>, RunError> {
    if named.is_empty() {
        let p = cpus::quietest(&caps.cpus, survey).unwrap_or_else(|| caps.test_cpu());
        if survey.busy(p) {
            config.note(format!(
                "every CPU has other real-time work; the run shares CPU {p} with: {}",
                survey.why_busy(p)
            ));
        }
        return Ok(vec![(0, p)]);
    }
    // The simulator's CPUs, counted as it counts them.
    let n = heir_scenario::messages::cpu_count(scenario, None).map_err(|e| RunError::Invalid {
        path: e.path,
        line: e.line,
        column: e.column,
        message: e.message,
    })?;
    let logical: Vec<u32> = (0..n).collect();
    let map = match config.placement {
        Placement::Free => cpus::assign(&logical, &caps.cpus, survey),
        Placement::AsWritten => logical.iter().map(|&c| (c, c)).collect(),
    };
    let unnamed = scenario.tasks.iter().any(|t| t.cpus.is_none());
    for &(l, p) in &map {
        // A CPU nothing runs on needs no note.
        let used = named.contains(&l) || (unnamed && caps.cpus.contains(&p));
        if used {
            note_placement(config, survey, l, p);
        }
    }
    Ok(map)
}

/// The note for the file's CPU `l` running on this machine's CPU `p`, if
/// other real-time work concerns it.
fn note_placement(config: &RunConfig, survey: &Survey, l: u32, p: u32) {
    if l != p {
        config.note(format!(
            "CPU {l} has other real-time work ({}): the file's CPU {l} runs on CPU {p}",
            survey.why_busy(l)
        ));
    } else if survey.busy(p) {
        let why = match config.placement {
            Placement::Free => "no free CPU to move it to",
            Placement::AsWritten => "kept as written",
        };
        config.note(format!(
            "CPU {p} has other real-time work ({}); {why}: the run's timing includes that work",
            survey.why_busy(p)
        ));
    }
}

/// ns per busy loop on each CPU of the run: the configuration's, the
/// file's, or a calibration on each ([`calibrate`]; on the first task's
/// first CPU, else this machine's test CPU, when the run has none).
fn calibration(
    scenario: &Scenario,
    config: &RunConfig,
    cpu_map: &[(u32, u32)],
    physical: &[u32],
    caps: &Capabilities,
) -> Calibration {
    let mut cpus = physical.to_vec();
    cpus.dedup();
    if cpus.is_empty() {
        let first = scenario
            .tasks
            .iter()
            .find_map(|t| t.cpus.as_ref().and_then(|c| c.first().copied()))
            .and_then(|c| place(cpu_map, &[c]).first().copied());
        cpus.push(first.unwrap_or_else(|| caps.test_cpu()));
    }
    let given = config
        .calibration_ns_per_loop
        .or(scenario.global.calibration_ns_per_loop);
    Calibration::of(&cpus, given)
}

/// The scenario's resources, instantiated, in resource order (gangs boost
/// with `global.gpm`).
fn make_resources(scenario: &Scenario, pi_cv: bool) -> Result<Vec<Res>, Error> {
    scenario
        .resources
        .iter()
        .map(|r| {
            Ok(match &r.kind {
                // Inheritance is the kernel's own (a PI futex); the other
                // protocols are the engine's, mapped as every face maps them.
                ResourceKind::Mutex { protocol } => match protocol {
                    MutexProtocol::Inherit => Res::Pi(RawPiMutex::new()),
                    MutexProtocol::Bwi => Res::Bwi(RawPiMutex::new_bwi()),
                    p => Res::Engine(RawEngineMutex::new(engine::protocol(p))),
                },
                ResourceKind::Cond { .. } => Res::Cond(PiCondvar::new()),
                ResourceKind::Queue { capacity, .. } => {
                    Res::Queue(PrioQueue::new(*capacity as usize))
                }
                ResourceKind::Barrier { users } => Res::Barrier {
                    state: PiMutex::new((0, 0)),
                    cond: PiCondvar::new(),
                    users: *users,
                },
                ResourceKind::Timer { mode, unique } => Res::Timer {
                    unique: *unique,
                    mode: *mode,
                    shared: PiMutex::new(None),
                },
                ResourceKind::Suspend { .. } => Res::Suspend {
                    mutex: RawPiMutex::new(),
                    cond: PiCondvar::new(),
                },
                ResourceKind::Endpoint { .. } if scenario.rpc.model == IpcModel::Donation => {
                    Res::Donate(DonEndpoint::new())
                }
                ResourceKind::Endpoint { .. } => Res::Endpoint(Endpoint::new(pi_cv)),
                ResourceKind::Gang { .. } => Res::Gang(gang::RunGang::new(scenario.global.gpm)?),
            })
        })
        .collect()
}

/// The run's threads, started: each has set its attributes and CPUs,
/// joined the registry, reported its tid and waits to be released.
struct Threads {
    handles: Vec<std::thread::JoinHandle<ThreadOut>>,
    /// Thread names, in start order.
    names: Vec<String>,
    /// Their tids (-1: the thread could not set its attributes or CPUs).
    tids: Vec<i32>,
    /// Why a thread could not start (the call and its errno), by index.
    start_errors: Vec<Option<(&'static str, i32)>>,
    go: Arc<Barrier>,
}

impl Threads {
    /// Starts one thread per task instance and waits until every one is
    /// ready.
    fn start(
        scenario: &Scenario,
        shared: &Arc<Shared>,
        attrs: &[SchedAttr],
        physical: &[u32],
    ) -> Result<Threads, RunError> {
        let nthreads: usize = scenario.tasks.iter().map(|t| t.instance as usize).sum();
        let ready = Arc::new(Barrier::new(nthreads + 1));
        let go = Arc::new(Barrier::new(nthreads + 1));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel::<(usize, StartResult)>();
        let mut handles = Vec::new();
        let mut names = Vec::new();
        for (ti, task) in scenario.tasks.iter().enumerate() {
            for name in task.thread_names() {
                let start = ThreadStart {
                    sh: shared.clone(),
                    task: task.clone(),
                    ti,
                    name: name.clone(),
                    idx: names.len(),
                    attr: attrs[ti],
                    cpus: match &task.cpus {
                        Some(c) => place(&shared.cpu_map, c),
                        None => physical.to_vec(),
                    },
                    tid_tx: tid_tx.clone(),
                    ready: ready.clone(),
                    go: go.clone(),
                };
                let h = std::thread::Builder::new()
                    .name(name.chars().take(15).collect())
                    .spawn(move || start.main())
                    .map_err(|source| RunError::Spawn {
                        name: name.clone(),
                        source,
                    })?;
                handles.push(h);
                names.push(name);
            }
        }
        drop(tid_tx);
        let mut tids = vec![-1; nthreads];
        let mut start_errors = vec![None; nthreads];
        for (i, started) in tid_rx.iter().take(nthreads) {
            match started {
                Ok(tid) => tids[i] = tid,
                Err(e) => start_errors[i] = Some(e),
            }
        }
        ready.wait();
        Ok(Threads {
            handles,
            names,
            tids,
            start_errors,
            go,
        })
    }

    /// The first thread that could not start, and why (the call and its
    /// errno), if any did not.
    fn first_failure(&self) -> Option<(usize, Option<(&'static str, i32)>)> {
        let i = self.tids.iter().position(|&t| t < 0)?;
        Some((i, self.start_errors[i]))
    }

    /// The tids of the instances of the tasks `tis`.
    fn of_tasks(&self, scenario: &Scenario, tis: impl Iterator<Item = usize>) -> Vec<i32> {
        let tis: Vec<usize> = tis.collect();
        let mut v = Vec::new();
        let mut k = 0;
        for (ti, t) in scenario.tasks.iter().enumerate() {
            for _ in 0..t.instance {
                if tis.contains(&ti) {
                    v.push(self.tids[k]);
                }
                k += 1;
            }
        }
        v
    }

    /// Releases the threads (they set the start themselves: this thread
    /// may be preempted between the release and anything it would do
    /// after) and waits for them: their names and what each handed back.
    fn release_and_join(self) -> (Vec<String>, Vec<Option<ThreadOut>>) {
        self.go.wait();
        let outs = self.handles.into_iter().map(|h| h.join().ok()).collect();
        (self.names, outs)
    }
}

/// A started thread's tid, or the call that failed and its errno.
type StartResult = Result<i32, (&'static str, i32)>;

/// What one thread of the run needs to start.
struct ThreadStart {
    sh: Arc<Shared>,
    task: Task,
    /// Its task's index.
    ti: usize,
    name: String,
    /// Its index in start order.
    idx: usize,
    attr: SchedAttr,
    /// This machine's CPUs it runs on.
    cpus: Vec<u32>,
    tid_tx: std::sync::mpsc::Sender<(usize, StartResult)>,
    ready: Arc<Barrier>,
    go: Arc<Barrier>,
}

impl ThreadStart {
    /// The thread: sets its CPUs and attributes, joins, reports its tid
    /// (-1 on failure), waits for the release, runs its program unless the
    /// run was called off, and leaves the registry.
    fn main(self) -> ThreadOut {
        // A deadline thread enters its reservation at its first release
        // ([`run_thread`]); until then it is SCHED_FIFO 99 (it only sleeps
        // and, just after the threads are released, enters its
        // reservation: nothing in the run runs yet).
        let deadline = self.attr.sched_policy == sys::SCHED_DEADLINE;
        let setup_attr = if deadline {
            heir::sched::fifo(PRE_RELEASE_FIFO)
        } else {
            self.attr
        };
        let started = sys::set_affinity(0, &self.cpus)
            .map_err(|e| ("sched_setaffinity", e))
            .and_then(|()| {
                sys::sched_setattr(sys::gettid(), &setup_attr).map_err(|e| ("sched_setattr", e))
            })
            .and_then(|()| {
                thread::register()
                    .map(|_| ())
                    .map_err(|e| ("register", e.errno()))
            })
            .and_then(|()| match &self.sh.don {
                Some(d) => donation::add_servers(&self.sh.res, d, self.ti)
                    .map_err(|e| ("add_server", e.errno())),
                None => Ok(()),
            });
        let ok = started.is_ok();
        let callers = make_callers(&self.sh, &self.task);
        let _ = self
            .tid_tx
            .send((self.idx, started.map(|()| sys::gettid())));
        self.ready.wait();
        self.go.wait();
        let out = match (callers, self.sh.begin()) {
            (Ok(c), Some(t0)) if ok => run_thread(
                &self.sh,
                &self.task,
                (self.ti, &self.name, self.idx),
                (t0, deadline.then_some(self.attr)),
                c,
            ),
            _ => ThreadOut::default(),
        };
        thread::unregister();
        leave_deadline();
        out
    }
}

/// A `SCHED_DEADLINE` thread returns itself to `SCHED_OTHER`, running (its
/// bandwidth is released by its own change: never by another thread's —
/// see [`heir::deadline`]), at once: [`heir::deadline::leave_class`]
/// shrinks its reservation first so that the kernel gives the bandwidth
/// back at the switch, and a run ends with it free for the next.
fn leave_deadline() {
    let _ = heir::deadline::leave_class(&heir::sched::other(0));
}

/// Helpers (PI-CV) of conditions and queues, servers of endpoints; the
/// threads' names for deadlock reports.
fn setup_helpers(
    scenario: &Scenario,
    shared: &Shared,
    threads: &Threads,
    pi_cv: bool,
) -> Result<(), Error> {
    if let Ok(mut n) = shared.names.lock() {
        for (i, &tid) in threads.tids.iter().enumerate() {
            n.insert(tid, threads.names[i].clone());
        }
    }
    // Gangs' listed members, with their control words (GPM).
    gang::insert_members(scenario, shared, &threads.tids)?;
    // Who pushes, pops and serves: declared or used, as in the simulator.
    let roles = engine::Roles::of(scenario);
    for (ri, r) in scenario.resources.iter().enumerate() {
        match (&r.kind, &shared.res[ri]) {
            (ResourceKind::Cond { helpers }, Res::Cond(c)) if pi_cv => {
                for tid in threads.of_tasks(scenario, helpers.iter().map(|t| t.0)) {
                    c.add_helper(tid)?;
                }
            }
            (ResourceKind::Queue { .. }, Res::Queue(q)) if pi_cv => {
                for tid in threads.of_tasks(scenario, roles.pushers[ri].iter().copied()) {
                    q.add_producer(tid)?;
                }
                for tid in threads.of_tasks(scenario, roles.poppers[ri].iter().copied()) {
                    q.add_consumer(tid)?;
                }
            }
            (ResourceKind::Endpoint { .. }, Res::Endpoint(e)) => {
                for tid in threads.of_tasks(scenario, roles.servers[ri].iter().copied()) {
                    e.add_server(tid)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Per thread, its report; the events all threads executed; the threads
/// first on their CPU that started late (µs).
fn task_reports(
    scenario: &Scenario,
    cpu_map: &[(u32, u32)],
    (names, outs): (Vec<String>, Vec<Option<ThreadOut>>),
    count_aborts: bool,
) -> (Vec<TaskReport>, u64, Vec<(String, f64)>) {
    let mut tasks = Vec::new();
    let mut events = 0;
    let mut late_starts = Vec::new();
    let leaders = first_on_their_cpu(scenario, cpu_map);
    for (i, (name, out)) in names.into_iter().zip(outs).enumerate() {
        let out = out.unwrap_or_default();
        if leaders.contains(&i) && out.late_ns > LATE_START_NS {
            late_starts.push((name.clone(), out.late_ns as f64 / 1000.0));
        }
        events += out.events;
        tasks.push(TaskReport {
            name,
            jobs: out.jobs,
            deadline_misses: out.misses,
            unfinished_misses: out.unfinished,
            response_us: out.stats.summary(),
            server: None,
            // Not observed on real threads (docs/RUNTIME.md).
            migrations: None,
            // As the simulator: for every thread when some call has a
            // timeout.
            aborted_calls: count_aborts.then_some(out.aborted),
        });
    }
    (tasks, events, late_starts)
}

fn make_callers(sh: &Shared, task: &Task) -> Result<HashMap<usize, Caller>, Error> {
    let mut m = HashMap::new();
    for p in &task.phases {
        for e in &p.events {
            if let EventKind::Call { endpoint, .. } = e.kind {
                if let Res::Endpoint(ep) = &sh.res[endpoint.0] {
                    if let std::collections::hash_map::Entry::Vacant(v) = m.entry(endpoint.0) {
                        v.insert(ep.caller()?);
                    }
                }
            }
        }
    }
    Ok(m)
}

/// Per-thread execution state.
struct Ctx<'a> {
    sh: &'a Shared,
    task: &'a Task,
    /// This thread's name (the task's, `-i` appended for instances).
    name: &'a str,
    /// Its index in start order.
    idx: usize,
    /// Its task is passive (`SCHED_IDLE`: phases do not change it).
    passive: bool,
    rng: Rng,
    callers: HashMap<usize, Caller>,
    /// Unique timers' `t_next`.
    timers: HashMap<usize, u64>,
    t_first: u64,
    release: u64,
    stats: ResponseStats,
    jobs: u64,
    misses: u64,
    events: u64,
    held: Vec<usize>,
    has_timer: bool,
    /// This thread's estimate of ns per busy loop ([`Ctx::run_us`]).
    ns_per_loop: std::cell::Cell<f64>,
    /// Its jobs' `run` accuracy.
    accuracy: RunAccuracy,
    /// Zero-time events executed in a row (see [`ZERO_TIME_EVENT_LIMIT`]).
    zero_streak: u64,
    /// When the streak started (ns).
    zero_since: u64,
    /// The thread's voluntary context switches when last checked.
    zero_nvcsw: u64,
    /// Its `bwi` state and counts.
    bwi: heir::bwi::BwiThread,
    /// Its first [`LOG_EVENTS`] events (see [`RealRun::log`]).
    log: Vec<(u64, String)>,
    /// Appended to the current event's path in the log (an aborted call).
    log_suffix: Option<&'static str>,
    /// Its calls that timed out (donation model).
    aborted: u64,
    /// Its first release is marked (traced runs).
    first_marked: bool,
    /// Its jobs' windows ([`ThreadOut::windows`]).
    windows: Vec<(u64, u64)>,
    /// A job is released and not completed.
    in_job: bool,
    /// The current job's deadline (the next timer; the first job's from the
    /// first timer's fixed period), `None` without one.
    job_deadline: Option<u64>,
    /// When the earliest timeout of the request this thread serves passes
    /// (`u64::MAX`: none): it then yields for a while
    /// ([`TIMEOUT_YIELD_NS`]; donation model).
    yield_at: std::cell::Cell<u64>,
    /// The gang it is a member of (a resource index; GPM).
    gang: Option<usize>,
    /// Its `gang_wait`s, per gang.
    gang_waits: Vec<gang::Waits>,
}

impl Ctx<'_> {
    fn end(&self) -> u64 {
        self.sh.end()
    }

    fn over(&self) -> bool {
        sys::now_ns() >= self.end() || self.sh.stopped.load(Ordering::Relaxed)
    }

    fn busy_loops(&self, loops: u64) -> Result<(), Stop> {
        let mut left = loops;
        while left > 0 {
            let n = left.min(2000);
            waste(n);
            left -= n;
            let now = sys::now_ns();
            if now >= self.end() || self.sh.stopped.load(Ordering::Relaxed) {
                return Err(Stop::End);
            }
            self.yield_for_timeouts(now);
        }
        Ok(())
    }

    fn busy_until(&self, t: u64) -> Result<(), Stop> {
        let end = self.end();
        loop {
            let now = sys::now_ns();
            if now >= end {
                return Err(Stop::End);
            }
            if now >= t {
                return Ok(());
            }
            self.yield_for_timeouts(now);
            waste(200);
        }
    }

    /// `run`: busy until this thread has used `us` of CPU time
    /// (`CLOCK_THREAD_CPUTIME_ID`) — the simulator's meaning of `run`. Time
    /// other threads hold the CPU does not count, and neither does the CPU's
    /// speed: [`crate::busy::run_cpu_ns`] loops in chunks sized with this
    /// thread's estimate of ns per loop (its CPU's calibration at first,
    /// then what each chunk measured) and approaches the target from below
    /// on the thread's CPU clock. (Loops sized once by a calibration made
    /// `run` 2× too short or too long when a loaded host changed the virtual
    /// CPU's speed between the calibration and the run; chunks sized to all
    /// that was left made it 1.4–2.2 % too long.) Returns the CPU time used.
    fn run_us(&self, us: u64) -> Result<u64, Stop> {
        let start = sys::thread_cpu_ns();
        crate::busy::run_cpu_ns(start, us * 1000, &self.ns_per_loop, |n| self.busy_loops(n))
    }

    fn lock(&mut self, r: usize) -> Result<(), Stop> {
        let end = Some(self.end());
        match &self.sh.res[r] {
            Res::Pi(m) => m.lock_until(end).map_err(|e| self.on_error(e))?,
            Res::Bwi(m) => {
                let until = self.end();
                let r = self.bwi.lock(m, until);
                self.log_throttles();
                r.map_err(|e| self.on_error(e))?
            }
            Res::Engine(m) => m.lock_until(end).map_err(|e| self.on_error(e))?,
            _ => {}
        }
        self.held.push(r);
        Ok(())
    }

    fn unlock(&mut self, r: usize) -> Result<(), Stop> {
        match &self.sh.res[r] {
            Res::Pi(m) => m.unlock()?,
            Res::Bwi(m) => self.bwi.unlock(m, self.sh.end())?,
            Res::Engine(m) => m.unlock()?,
            _ => {}
        }
        if let Some(i) = self.held.iter().rposition(|&x| x == r) {
            self.held.remove(i);
        }
        Ok(())
    }

    fn on_error(&self, e: Error) -> Stop {
        if let Error::Deadlock { cycle } = &e {
            self.report_deadlock(cycle);
        }
        e.into()
    }

    fn report_deadlock(&self, cycle: &[Node]) {
        let names = self.sh.names.lock().map(|n| n.clone()).unwrap_or_default();
        let res_name = |n: &Node| -> String {
            for (i, r) in self.sh.res.iter().enumerate() {
                let hit = match (n, r) {
                    (Node::Object(o), Res::Pi(x) | Res::Bwi(x)) => ObjId::from(x.id()) == *o,
                    (Node::Object(o), Res::Engine(x)) => ObjId::from(x.id()) == *o,
                    (Node::Object(o), Res::Cond(x)) => ObjId::from(x.id()) == *o,
                    _ => false,
                };
                if hit {
                    return self
                        .sh
                        .res_names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("r{i}"));
                }
            }
            format!("{n:?}")
        };
        let mut out = Vec::new();
        for n in cycle {
            match n {
                Node::Task(t) => {
                    let name = names
                        .iter()
                        .find(|(tid, _)| thread::task_of(**tid) == Some(*t))
                        .map(|(_, n)| n.clone())
                        .unwrap_or_else(|| format!("{t:?}"));
                    out.push(name);
                }
                other => out.push(res_name(other)),
            }
        }
        self.record_deadlock(DeadlockKind::Deadlock, out);
    }

    /// The run's deadlock report (the first one found), and the run stops.
    fn record_deadlock(&self, kind: DeadlockKind, cycle: Vec<String>) {
        if let Ok(mut d) = self.sh.deadlock.lock() {
            if d.is_none() {
                // From the run's start, as the simulator's clock: not from
                // this thread's start (a thread with a delay would report
                // the cycle that much early).
                let t0 = self.sh.t0_ns.load(Ordering::Acquire);
                *d = Some(DeadlockReport {
                    kind,
                    at_us: sys::now_ns().saturating_sub(t0) as f64 / 1000.0,
                    cycle,
                });
            }
        }
        self.sh.stopped.store(true, Ordering::Relaxed);
    }

    fn complete_job(&mut self, now: u64, deadline: Option<u64>) {
        let response = now.saturating_sub(self.release);
        self.in_job = false;
        if self.windows.len() < MAX_JOB_WINDOWS {
            self.windows.push((self.release, now));
        }
        self.stats.record(response);
        self.accuracy.end_job();
        self.jobs += 1;
        let missed = deadline.is_some_and(|d| now >= d);
        if missed {
            self.misses += 1;
        }
        if tracefs::tracing() {
            tracefs::mark(format_args!("done {now} {response} {}", u8::from(missed)));
        }
    }

    /// Marks a job's release at `at` with its deadline (traced runs).
    fn mark_release(&self, at: u64, deadline: Option<u64>) {
        if tracefs::tracing() {
            match deadline {
                Some(d) => tracefs::mark(format_args!("rel {at} {d}")),
                None => tracefs::mark(format_args!("rel {at} -")),
            }
        }
    }

    /// Marks the end of scenario event `ev` (traced runs): the instants
    /// the simulator reports for it (a condition variable's wait, signal
    /// and broadcast are marked by the condition variable itself).
    fn mark_event(&self, ev: &Event) {
        if !tracefs::tracing() {
            return;
        }
        let (kind, r) = match &ev.kind {
            EventKind::Lock(r) => ("lock", r.0),
            EventKind::Unlock(r) => ("unlock", r.0),
            EventKind::Push(r) => ("push", r.0),
            EventKind::Pop(r) => ("pop", r.0),
            EventKind::Call { endpoint, .. } => ("call", endpoint.0),
            EventKind::Serve(r) => ("reply", r.0),
            EventKind::Barrier(r) => ("barrier", r.0),
            EventKind::Resume(r) => ("resume", r.0),
            _ => return,
        };
        tracefs::mark(format_args!("i {kind} {} r{r}", sys::now_ns()));
    }

    fn timer(&mut self, r: usize, period_us: u64) -> Result<(), Stop> {
        let period = period_us * 1000;
        let (unique, mode) = match &self.sh.res[r] {
            Res::Timer { unique, mode, .. } => (*unique, *mode),
            _ => (true, TimerMode::Relative),
        };
        let t_first = self.t_first;
        let next = if unique {
            let t = self.timers.entry(r).or_insert(t_first);
            *t += period;
            *t
        } else if let Res::Timer { shared, .. } = &self.sh.res[r] {
            let mut g = shared.lock()?;
            let t = g.get_or_insert(t_first);
            *t += period;
            *t
        } else {
            t_first + period
        };
        let now = sys::now_ns();
        if !self.first_marked {
            self.first_marked = true;
            self.mark_release(self.release, Some(next));
        }
        self.complete_job(now, Some(next));
        let release = if now < next {
            let end = self.end();
            sys::sleep_until(next.min(end));
            if next >= end {
                return Err(Stop::End);
            }
            next
        } else if mode == TimerMode::Relative {
            if unique {
                self.timers.insert(r, now);
            } else if let Res::Timer { shared, .. } = &self.sh.res[r] {
                *shared.lock()? = Some(now);
            }
            now
        } else {
            next
        };
        self.release = release;
        self.in_job = true;
        self.job_deadline = Some(release + period);
        self.mark_release(release, Some(release + period));
        Ok(())
    }

    /// Counts a zero-time event; refuses a zero-time loop (the simulator's
    /// verdict and message for the same program): [`ZERO_TIME_EVENT_LIMIT`]
    /// zero-time events in a row during which the thread never slept (its
    /// voluntary context switches, checked every 4096 events, did not move).
    fn zero_time_event(&mut self) -> Result<(), Stop> {
        if self.zero_streak == 0 {
            self.zero_since = sys::now_ns();
            self.zero_nvcsw = sys::voluntary_switches();
        }
        self.zero_streak += 1;
        if self.zero_streak & 4095 != 0 {
            return Ok(());
        }
        let v = sys::voluntary_switches();
        if v != self.zero_nvcsw {
            // It waited (for a mutex, a condition, …): time passed for it.
            self.zero_streak = 1;
            self.zero_since = sys::now_ns();
            self.zero_nvcsw = v;
            return Ok(());
        }
        if self.zero_streak < ZERO_TIME_EVENT_LIMIT {
            return Ok(());
        }
        let t0 = self.sh.t0_ns.load(Ordering::Acquire);
        let at_us = (self.zero_since.saturating_sub(t0) / 1000) as f64;
        Err(Stop::Failed(RunError::Invalid {
            path: self.task.path.clone(),
            line: self.task.line,
            column: self.task.column,
            message: messages::zero_time_loop(self.name, at_us),
        }))
    }

    /// Turns "the caller does not own the mutex" from an unlock or a wait
    /// into the simulator's error for the same event: `message`.
    fn not_held(&self, stop: Stop, ev: &Event, message: impl FnOnce() -> String) -> Stop {
        match stop {
            Stop::Failed(RunError::Runtime(Error::NotOwner)) => Stop::Failed(RunError::Invalid {
                path: ev.path.clone(),
                line: ev.line,
                column: ev.column,
                message: message(),
            }),
            s => s,
        }
    }

    fn event(&mut self, ev: &Event) -> Result<(), Stop> {
        self.events += 1;
        self.count_time(&ev.kind)?;
        if let (EventKind::Suspend(r), true) = (&ev.kind, tracefs::tracing()) {
            // Marked when it starts: the suspension itself.
            tracefs::mark(format_args!("i suspend {} r{}", sys::now_ns(), r.0));
        }
        self.event_kind(ev)?;
        self.mark_event(ev);
        let what = match self.log_suffix.take() {
            Some(s) => format!("{}{s}", ev.path),
            None => ev.path.clone(),
        };
        self.note(sys::now_ns(), what);
        Ok(())
    }

    /// Logs `what` at `at` (ns), among the thread's first [`LOG_EVENTS`].
    fn note(&mut self, at: u64, what: String) {
        if self.log.len() < LOG_EVENTS {
            self.log.push((at, what));
        }
    }

    /// Logs the `bwi` throttles of the last lock (the lent budget spent).
    fn log_throttles(&mut self) {
        for t in self.bwi.take_throttle_times() {
            if self.log.len() < LOG_EVENTS {
                self.log
                    .push((t, format!("bwi: {}'s lent budget spent", self.name)));
            }
        }
    }

    fn event_kind(&mut self, ev: &Event) -> Result<(), Stop> {
        let end = Some(self.end());
        match &ev.kind {
            EventKind::Run(_)
            | EventKind::Runtime(_)
            | EventKind::Sleep(_)
            | EventKind::Timer { .. } => self.timed_event(&ev.kind)?,
            EventKind::Lock(r) => self.lock(r.0)?,
            EventKind::Unlock(r) => self.unlock(r.0).map_err(|s| {
                self.not_held(s, ev, || {
                    messages::mutex_not_held(self.name, &self.sh.res_names[r.0])
                })
            })?,
            EventKind::Wait { cond, mutex } => self.wait(ev, cond.0, mutex.0, end)?,
            EventKind::Signal(r) => {
                if let Res::Cond(c) = &self.sh.res[r.0] {
                    c.signal()?;
                }
            }
            EventKind::Broadcast(r) => {
                if let Res::Cond(c) = &self.sh.res[r.0] {
                    c.broadcast()?;
                }
            }
            EventKind::Barrier(r) => self.barrier(r.0, end)?,
            EventKind::Suspend(r) => self.suspend(r.0, end)?,
            EventKind::Resume(r) => self.resume(r.0, end)?,
            EventKind::Yield => sys::sched_yield(),
            EventKind::Push(q) => {
                if let Res::Queue(q) = &self.sh.res[q.0] {
                    let prio = thread::current_urgency()?;
                    q.push_until((), prio, end)?;
                }
            }
            EventKind::Pop(q) => {
                if let Res::Queue(q) = &self.sh.res[q.0] {
                    if q.pop_until(end)?.is_none() {
                        return Err(Stop::End);
                    }
                }
            }
            EventKind::Call { endpoint, .. } if self.donates(endpoint.0) => self.call_don(ev)?,
            EventKind::Call { endpoint, run } => self.call(endpoint.0, *run, end)?,
            EventKind::Serve(e) if self.donates(e.0) => self.serve_don(ev, e.0)?,
            EventKind::Serve(e) => self.serve(e.0, end)?,
            EventKind::Gang { gang, op } => self.gang_event(ev, gang.0, *op)?,
        }
        Ok(())
    }

    /// An event that lets time pass (a `run`, `runtime`, `sleep` or
    /// `timer` of a positive length) ends a zero-time streak; any other
    /// counts in it ([`Ctx::zero_time_event`]).
    fn count_time(&mut self, kind: &EventKind) -> Result<(), Stop> {
        let timed = match kind {
            EventKind::Run(m) | EventKind::Runtime(m) | EventKind::Sleep(m) => m.max() > 0,
            EventKind::Timer { period, .. } => period.max() > 0,
            _ => false,
        };
        if timed {
            self.zero_streak = 0;
            Ok(())
        } else {
            self.zero_time_event()
        }
    }

    /// `run`, `runtime`, `sleep` and `timer`.
    fn timed_event(&mut self, kind: &EventKind) -> Result<(), Stop> {
        match kind {
            EventKind::Run(m) => {
                let us = self.rng.draw(*m);
                let wall = sys::now_ns();
                let cpu = self.run_us(us)?;
                let wall = sys::now_ns().saturating_sub(wall);
                self.accuracy.add(us * 1000, cpu, wall);
                Ok(())
            }
            EventKind::Runtime(m) => {
                let us = self.rng.draw(*m);
                self.busy_until(sys::now_ns() + us * 1000)
            }
            EventKind::Sleep(m) => {
                let us = self.rng.draw(*m);
                let t = sys::now_ns() + us * 1000;
                sys::sleep_until(t.min(self.end()));
                if self.over() {
                    return Err(Stop::End);
                }
                Ok(())
            }
            EventKind::Timer { timer, period } => {
                let p = self.rng.draw(*period);
                self.timer(timer.0, p)
            }
            _ => Ok(()),
        }
    }

    /// `wait` on condition `cond` with mutex `mutex` (held: the
    /// simulator's error if not).
    fn wait(
        &mut self,
        ev: &Event,
        cond: usize,
        mutex: usize,
        end: Option<u64>,
    ) -> Result<(), Stop> {
        let Res::Cond(c) = &self.sh.res[cond] else {
            return Ok(());
        };
        let r = match &self.sh.res[mutex] {
            Res::Pi(m) | Res::Bwi(m) => c.wait_raw(m, end),
            Res::Engine(m) => c.wait_engine(m, end),
            _ => Ok(WaitResult::Woken),
        };
        let r = r.map_err(|e| self.on_error(e)).map_err(|s| {
            self.not_held(s, ev, || {
                messages::wait_without_mutex(
                    self.name,
                    &self.sh.res_names[cond],
                    &self.sh.res_names[mutex],
                )
            })
        })?;
        if r == WaitResult::TimedOut && self.over() {
            return Err(Stop::End);
        }
        Ok(())
    }

    /// `barrier` `r`: the last of its users to arrive wakes the others.
    fn barrier(&self, r: usize, end: Option<u64>) -> Result<(), Stop> {
        let Res::Barrier { state, cond, users } = &self.sh.res[r] else {
            return Ok(());
        };
        let mut g = state.lock()?;
        g.0 += 1;
        if g.0 >= *users {
            g.0 = 0;
            g.1 += 1;
            cond.broadcast()?;
            return Ok(());
        }
        // The generation moves when the last user arrives: the wait
        // releases and re-takes `state`'s raw lock under the guard.
        let gen = g.1;
        loop {
            if g.1 != gen {
                return Ok(());
            }
            if cond.wait_raw(g.raw(), end)? == WaitResult::TimedOut && g.1 == gen {
                return Err(Stop::End);
            }
        }
    }

    /// `suspend` on `r` until a `resume`.
    fn suspend(&self, r: usize, end: Option<u64>) -> Result<(), Stop> {
        if let Res::Suspend { mutex, cond } = &self.sh.res[r] {
            mutex.lock_until(end)?;
            let w = cond.wait_raw(mutex, end);
            mutex.unlock()?;
            if w? == WaitResult::TimedOut {
                return Err(Stop::End);
            }
        }
        Ok(())
    }

    /// `resume` of `r`'s suspended threads.
    fn resume(&self, r: usize, end: Option<u64>) -> Result<(), Stop> {
        if let Res::Suspend { mutex, cond } = &self.sh.res[r] {
            mutex.lock_until(end)?;
            let b = cond.broadcast();
            mutex.unlock()?;
            b?;
        }
        Ok(())
    }

    /// Whether resource `r` is an endpoint of the donation model.
    fn donates(&self, r: usize) -> bool {
        matches!(self.sh.res.get(r), Some(Res::Donate(_)))
    }

    /// `call` of endpoint `e` with a request that runs `run`.
    fn call(&mut self, e: usize, run: Micros, end: Option<u64>) -> Result<(), Stop> {
        let us = self.rng.draw(run);
        if let (Res::Endpoint(ep), Some(c)) = (&self.sh.res[e], self.callers.get(&e)) {
            let prio = thread::current_urgency()?;
            if ep.call_until(c, us, prio, end)?.is_none() {
                return Err(Stop::End);
            }
        }
        Ok(())
    }

    /// `serve` one request of endpoint `e` (running what it asks).
    fn serve(&self, e: usize, end: Option<u64>) -> Result<(), Stop> {
        let Res::Endpoint(ep) = &self.sh.res[e] else {
            return Ok(());
        };
        let mut stop = None;
        let served = ep.serve_until(end, |us| {
            if let Err(s) = self.run_us(us) {
                stop = Some(s);
            }
        })?;
        if let Some(s) = stop {
            return Err(s);
        }
        if !served {
            return Err(Stop::End);
        }
        Ok(())
    }
}

/// The threads (indices in start order) that the file has run first on
/// their CPU: pinned to one CPU, the earliest start there, and alone with
/// the highest priority among those. Nothing of the run can hold the CPU at
/// such a thread's start, so how late it wakes is what something outside
/// the run took (the others may legitimately wait for a more urgent thread
/// of the run).
fn first_on_their_cpu(scenario: &Scenario, cpu_map: &[(u32, u32)]) -> Vec<usize> {
    let rank = |ti: usize, t: &Task| {
        if scenario.rpc.is_passive(heir_scenario::TaskIdx(ti)) {
            // SCHED_IDLE: never first while anything else runs.
            -1
        } else if t.sched.policy.is_realtime() {
            100 + i64::from(t.sched.priority)
        } else {
            0
        }
    };
    // CPU → (delay, rank, thread index), and whether that key is shared.
    let mut first: HashMap<u32, ((u64, i64), usize, bool)> = HashMap::new();
    let mut idx = 0;
    for (ti, t) in scenario.tasks.iter().enumerate() {
        for _ in 0..t.instance {
            if let Some([c]) = t.cpus.as_deref() {
                let cpu = place(cpu_map, &[*c])[0];
                let key = (t.delay_us, -rank(ti, t));
                match first.get_mut(&cpu) {
                    None => {
                        first.insert(cpu, (key, idx, false));
                    }
                    Some(f) if key < f.0 => *f = (key, idx, false),
                    Some(f) if key == f.0 => f.2 = true,
                    Some(_) => {}
                }
            }
            idx += 1;
        }
    }
    first
        .values()
        .filter(|(_, _, shared)| !shared)
        .map(|&(_, i, _)| i)
        .collect()
}

/// The machine's CPUs for the scenario's `cpus`.
fn place(map: &[(u32, u32)], cpus: &[u32]) -> Vec<u32> {
    cpus.iter()
        .map(|c| map.iter().find(|(l, _)| l == c).map_or(*c, |&(_, p)| p))
        .collect()
}

fn uses_timer(task: &Task) -> bool {
    task.phases.iter().any(|p| {
        p.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Timer { .. }))
    })
}

/// What a deadline thread runs as before its first release: a real-time
/// thread, so that nothing outside the run delays its entry into its
/// reservation (made just after the release of the threads, 20 ms before
/// the run's time 0 at least).
const PRE_RELEASE_FIFO: u8 = 99;

/// One thread of the run: its program from its start (`t0` + its `delay`)
/// to the end of the run. A deadline thread (`dl`: its reservation) enters
/// it now so that the kernel's first period starts at its start
/// ([`heir::deadline::enter_at`]), as the simulator's CBS.
fn run_thread(
    sh: &Shared,
    task: &Task,
    (ti, name, idx): (usize, &str, usize),
    (t0, dl): (u64, Option<SchedAttr>),
    callers: HashMap<usize, Caller>,
) -> ThreadOut {
    let start = t0 + task.delay_us * 1000;
    if let Some(attr) = dl.filter(|_| start < t0.saturating_add(sh.duration_ns)) {
        let entered = heir::deadline::enter_at(&attr, start, |a| {
            thread::set_sched(a).map_err(|e| e.errno())
        });
        if let Err(errno) = entered {
            let e = deadline_error(task, name, errno);
            if let Ok(mut f) = sh.failure.lock() {
                f.get_or_insert(e);
            }
            sh.stopped.store(true, Ordering::Relaxed);
            return ThreadOut::default();
        }
    }
    let mut cx = Ctx {
        sh,
        task,
        name,
        idx,
        passive: sh.don.as_ref().is_some_and(|d| d.is_passive(ti)),
        rng: Rng(sh.seed ^ (idx as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        callers,
        timers: HashMap::new(),
        t_first: start,
        release: start,
        stats: ResponseStats::new(),
        jobs: 0,
        misses: 0,
        events: 0,
        held: Vec::new(),
        has_timer: uses_timer(task),
        ns_per_loop: std::cell::Cell::new(
            sh.calibration.ns_per_loop(
                task.cpus
                    .as_ref()
                    .and_then(|c| place(&sh.cpu_map, c).first().copied()),
            ),
        ),
        accuracy: RunAccuracy::default(),
        zero_streak: 0,
        zero_since: 0,
        zero_nvcsw: 0,
        bwi: heir::bwi::BwiThread::default(),
        log: Vec::new(),
        log_suffix: None,
        aborted: 0,
        first_marked: false,
        windows: Vec::new(),
        in_job: true,
        job_deadline: first_timer_period(task).map(|p| start + p * 1000),
        yield_at: std::cell::Cell::new(u64::MAX),
        gang: sh.task_gang.get(ti).copied().flatten(),
        gang_waits: Vec::new(),
    };
    let end = cx.end();
    let mut late_ns = 0;
    if start < end {
        sys::sleep_until(start);
        late_ns = sys::now_ns().saturating_sub(start);
        // A thread whose program ends leaves its gang (the GPM paper's §2), as
        // the simulator's exit; one stopped by the end of the run does not.
        let ran = run_phases(&mut cx, task).and_then(|()| cx.gang_leave());
        if let Err(Stop::Failed(e)) = ran {
            if let Ok(mut f) = sh.failure.lock() {
                f.get_or_insert(e);
            }
            sh.stopped.store(true, Ordering::Relaxed);
        }
    }
    // A job still pending whose deadline passed is a miss of a job that
    // did not complete (the simulator's rule).
    let mut unfinished = 0;
    if start < end && cx.in_job {
        let stop = sys::now_ns().min(end);
        if cx.job_deadline.is_some_and(|d| d <= end) {
            unfinished = 1;
            cx.misses += 1;
        }
        if cx.windows.len() < MAX_JOB_WINDOWS {
            cx.windows.push((cx.release, stop));
        }
    }
    // Leave nothing locked behind.
    while let Some(r) = cx.held.pop() {
        match &sh.res[r] {
            Res::Pi(m) | Res::Bwi(m) => {
                let _ = m.unlock();
            }
            Res::Engine(m) => {
                let _ = m.unlock();
            }
            _ => {}
        }
    }
    ThreadOut {
        stats: cx.stats,
        jobs: cx.jobs,
        misses: cx.misses,
        events: cx.events,
        late_ns,
        bwi: cx.bwi,
        log: cx.log,
        aborted: cx.aborted,
        accuracy: cx.accuracy,
        gang_waits: cx.gang_waits,
        windows: cx.windows,
        unfinished,
    }
}

/// The period (µs) of the first `timer` event of `task`'s program when it
/// is fixed: the first job's deadline is its start plus that.
fn first_timer_period(task: &Task) -> Option<u64> {
    task.phases
        .iter()
        .flat_map(|p| &p.events)
        .find_map(|e| match e.kind {
            EventKind::Timer { period, .. } => Some(period),
            _ => None,
        })
        .and_then(|p| match p {
            Micros::Fixed(us) => Some(us),
            Micros::Uniform { .. } => None,
        })
}

fn run_phases(cx: &mut Ctx<'_>, task: &Task) -> Result<(), Stop> {
    let mut pass = 0u64;
    let mut first_job = true;
    loop {
        if task.loops.is_some_and(|n| pass >= n) {
            return Ok(());
        }
        pass += 1;
        for p in &task.phases {
            if let Some(cpus) = &p.cpus {
                let _ = sys::set_affinity(0, &place(&cx.sh.cpu_map, cpus));
            }
            if let Some(s) = p.sched.filter(|_| !cx.passive) {
                let t = Task {
                    sched: s,
                    ..task.clone()
                };
                if let Ok(a) = attr_of(&t) {
                    thread::set_sched(&a)?;
                }
            }
            for _ in 0..p.loops {
                // The first job is released at the thread's start, whether
                // or not it gets its CPU then (the simulator's release);
                // each later one when the previous one completes.
                if !cx.has_timer && !first_job {
                    cx.release = sys::now_ns();
                    cx.in_job = true;
                }
                if !cx.has_timer {
                    cx.mark_release(cx.release, None);
                }
                first_job = false;
                for e in &p.events {
                    if cx.over() {
                        return Err(Stop::End);
                    }
                    cx.event(e)?;
                }
                if !cx.has_timer {
                    let now = sys::now_ns();
                    cx.complete_job(now, None);
                }
            }
        }
    }
}
