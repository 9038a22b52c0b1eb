//! The simulation proper: threads interpreting their task's events, CPUs,
//! run queues, and every dependency routed through [`heir_core::Engine`].
//!
//! See the crate docs for the model; this module's docs cover the machinery.
//!
//! # Threads as resumable state machines
//!
//! A thread's position is its program counter (task loop, phase, phase loop,
//! event, micro-step). Zero-time operations (lock, unlock, signal, queue and
//! RPC bookkeeping) only execute while the thread holds a CPU, one engine
//! operation per micro-step; between micro-steps the thread yields to a
//! pending scheduling decision of its CPU (a wake-up or a de-boost may have
//! made another thread more urgent), exactly as a real thread could be
//! preempted between two system calls. A thread that blocks leaves its CPU
//! with its program counter at the resume point.
//!
//! # Run queues
//!
//! A thread pinned to one CPU (partitioned scheduling, or a 1-CPU system)
//! lives in that CPU's run queue; a thread allowed on several CPUs lives in
//! the global run queue. A CPU that must choose takes the most urgent thread
//! of its own queue and of the global threads allowed on it, FIFO among equal
//! urgency (queue stamps order heads and tails across the two queues). After
//! each event a balancing pass places global threads on the allowed CPU that
//! is idle or runs the least urgent thread, if they are more urgent.

use std::collections::VecDeque;

use heir_core::{
    Change, Changes, CondId, Effective, Engine, EngineError, LockResult, MutexId, Node, Protocol,
    TaskId, Urgency,
};
use heir_scenario::limits::{
    beyond_time_limit_s, beyond_time_limit_us, seconds_to_us, MAX_CPUS, MAX_TIME_NS, MAX_TIME_S,
    MAX_TIME_US,
};
use heir_scenario::{
    messages, Event, EventKind, Micros, MutexProtocol, Policy, ResourceKind, Scenario, Sched, Task,
    TaskIdx, TimerMode,
};

use crate::queue::{level_of, EvKind, EventQueue, RunQueue};
use crate::rng::SplitMix64;
use crate::stats::ResponseStats;
use crate::trace::{InstantKind, Observer, SimInfo, ThreadInfo, TraceEvent};
use crate::{DeadlockReport, Report, SimConfig, SimError, TaskReport};

/// `SCHED_RR` time slice (Linux's default `sched_rr_timeslice_ms`).
pub const RR_SLICE_NS: u64 = 100_000_000;
/// `SCHED_OTHER` base slice at nice 0 (weight 1024).
pub const OTHER_BASE_SLICE_NS: u64 = 4_000_000;
/// Zero-time micro-steps allowed at one instant before the run is declared a
/// zero-time livelock (a loop of lock/unlock/signal that never lets time
/// advance).
pub const ZERO_TIME_STEP_LIMIT: u64 = 1 << 22;

/// CFS load weights for nice -20..=19 (1024 at nice 0, ×1.25 per step).
const NICE_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];
/// CFS weight of `SCHED_IDLE` threads.
const IDLE_WEIGHT: u64 = 3;

/// Why the main loop stopped early.
enum Stop {
    /// The engine refused a block that would close a cycle.
    Deadlock(DeadlockReport),
    /// The scenario cannot be simulated further.
    Error(SimError),
}

/// Results of the step machinery. The reason to stop is boxed: the `Ok` path
/// (taken on every micro-step) then returns in registers.
type R<T> = Result<T, Box<Stop>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Unstarted,
    Ready,
    Running,
    /// Blocked in the engine (mutex or condvar).
    Blocked,
    /// Sleeping until a wall-clock event (`sleep`, `timer`).
    Sleeping,
    Exited,
}

/// What a ready or running thread does with the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    /// Execute micro-steps from the program counter.
    Step,
    /// CPU work left (ns).
    Run { left: u64 },
    /// Busy until the wall-clock instant `end` (rt-app `runtime`).
    Runtime { end: u64 },
}

/// Where a thread is queued when ready.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Home {
    /// Pinned to one CPU: that CPU's run queue.
    Cpu(u32),
    /// Several allowed CPUs (`mask[c]`): the global run queue.
    Global(Vec<bool>),
}

/// What the step loop does after a micro-step.
enum Flow {
    /// The event is complete: move to the next one.
    Next,
    /// The event continues at the (updated) micro-step.
    Same,
    /// The thread left the CPU or started timed work; its program counter is
    /// already at the resume point.
    Leave,
}

#[derive(Clone, Copy, Debug, Default)]
struct TimerState {
    init: bool,
    next: u64,
}

/// The hot per-thread state (what scheduling and stepping touch); the cold
/// part (name, statistics) lives in [`Cold`], a separate array, so that a
/// scheduling decision touches fewer cache lines.
struct Thread {
    task: usize,
    eng: TaskId,
    status: Status,
    act: Act,
    // Program counter.
    tloop: u64,
    phase: usize,
    ploop: u64,
    ev: usize,
    sub: u8,
    pass_start: bool,
    // Scheduling.
    policy: Policy,
    base: Urgency,
    eff: Effective,
    level: u8,
    home: Home,
    affinity: Option<Vec<u32>>,
    queued: bool,
    stamp: i64,
    cpu: u32,
    run_start: u64,
    run_gen: u32,
    wall_gen: u32,
    slice_gen: u32,
    slice_left: u64,
    slice_start: u64,
    slice_armed: bool,
    // Synchronisation.
    /// The mutex to re-acquire when woken from a condvar, and its resource.
    wait_mutex: Option<(MutexId, usize)>,
    /// The condvar resource waited on (for the `Woken` instant).
    wait_cond_res: usize,
    /// A condvar this thread helps but now waits on: it was taken out of
    /// the helpers for the wait and is put back when woken.
    rehelp: Option<CondId>,
    /// Serve: the request being served (caller thread, work ns).
    serving: Option<(u32, u64)>,
    /// Call: the work drawn for the request.
    call_run: u64,
    // Jobs.
    start_ns: u64,
    has_timer: bool,
    first_period_ns: Option<u64>,
    job_release: Option<u64>,
    /// Timer-less threads: the current pass's job was already closed when
    /// its last event completed (the thread was not on a CPU then).
    pass_closed: bool,
    /// A timer sleep: emit the job's `Release` (with this deadline) on wake.
    release_on_wake: Option<Option<u64>>,
}

/// The cold per-thread state.
struct Cold {
    name: String,
    stats: ResponseStats,
    jobs: u64,
    misses: u64,
    /// `unique` timers of this thread.
    timers: Vec<(usize, TimerState)>,
}

struct Req {
    caller: u32,
    run_ns: u64,
    prio: Urgency,
}

struct Reply {
    caller: u32,
    cond: CondId,
    res: usize,
    done: bool,
}

/// Runtime state of a scenario resource.
enum Obj {
    Mutex {
        m: MutexId,
    },
    Cond {
        c: CondId,
    },
    Queue {
        m: MutexId,
        more: CondId,
        less: CondId,
        rm: usize,
        rmore: usize,
        rless: usize,
        len: u32,
        cap: u32,
    },
    Barrier {
        m: MutexId,
        c: CondId,
        rm: usize,
        rc: usize,
        waiting: i64,
    },
    Timer {
        mode: TimerMode,
        unique: bool,
        state: TimerState,
    },
    Suspend {
        m: MutexId,
        c: CondId,
        rm: usize,
        rc: usize,
    },
    Endpoint {
        m: MutexId,
        more: CondId,
        rm: usize,
        rmore: usize,
        reqs: VecDeque<Req>,
        replies: Vec<Reply>,
    },
}

struct OpenSlice {
    thread: u32,
    start: u64,
    urgency: Urgency,
    donor: Option<usize>,
}

#[derive(Default)]
struct Cpu {
    current: Option<u32>,
    dirty: bool,
    slice: Option<OpenSlice>,
}

/// What stays allocated at the end of a run: used to show that memory does
/// not grow with simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Events in the future-event list (stale ones included).
    pub pending_events: usize,
    /// Non-empty histogram buckets, summed over threads.
    pub histogram_buckets: usize,
    /// Histogram chunks allocated (1 KiB each), summed over threads.
    pub histogram_chunks: usize,
    /// RPC requests queued, summed over endpoints.
    pub queued_requests: usize,
    /// `unique` timers, summed over threads.
    pub unique_timers: usize,
}

/// A simulation of one scenario, ready to [`run`](Simulator::run) once.
///
/// [`crate::simulate`] is `Simulator::new(..)?.run()`; use the type directly
/// to inspect the engine after the run ([`Simulator::check_invariants`]).
pub struct Simulator<'s, 'o> {
    sc: &'s Scenario,
    obs: &'o mut dyn Observer,
    engine: Engine,
    threads: Vec<Thread>,
    cold: Vec<Cold>,
    objs: Vec<Obj>,
    info: SimInfo,
    /// `MutexId.0` → `info.resources` index.
    mutex_res: Vec<usize>,
    /// `CondId.0` → `info.resources` index.
    cond_res: Vec<usize>,
    /// `TaskId.0` → thread index.
    task_thread: Vec<u32>,
    cpus: Vec<Cpu>,
    local: Vec<RunQueue>,
    global: RunQueue,
    evq: EventQueue,
    dirty: VecDeque<u32>,
    claimed: Vec<bool>,
    scratch: Vec<u32>,
    stamp_tail: i64,
    stamp_head: i64,
    now: u64,
    end: Option<u64>,
    rng: SplitMix64,
    events: u64,
    alive: usize,
    zero_steps: u64,
    started: bool,
    /// `obs.wants_events()`, read once.
    trace: bool,
    /// The changes of the last engine operation (the `*_into` engine calls
    /// write here: one buffer for the whole run, nothing moved per call).
    changes: Changes,
}

/// Stops the run with an error.
fn stop(e: SimError) -> Box<Stop> {
    Box::new(Stop::Error(e))
}

/// Seconds for a message: `1.5`, `1e308` (no hundreds of digits).
fn shown_seconds(s: f64) -> String {
    if s.abs() < 1e15 {
        s.to_string()
    } else {
        format!("{s:e}")
    }
}

/// An error without a position in the file.
fn invalid(path: &str, message: impl Into<String>) -> SimError {
    invalid_at(path, 0, 0, message)
}

/// An error at `line`:`column` of the file.
fn invalid_at(path: &str, line: u32, column: u32, message: impl Into<String>) -> SimError {
    SimError::Invalid {
        path: path.to_string(),
        line,
        column,
        message: message.into(),
    }
}

/// An error at task `t`.
fn at_task(t: &Task, message: impl Into<String>) -> SimError {
    invalid_at(&t.path, t.line, t.column, message)
}

/// An error at event `ev`.
fn at_event(ev: &Event, message: impl Into<String>) -> SimError {
    invalid_at(&ev.path, ev.line, ev.column, message)
}

/// The number of CPUs a simulation of `scenario` with `config` has:
/// [`SimConfig::cpus`] when given, else 1 + the largest CPU number the
/// scenario names (at least 1).
///
/// Refused: a `config.cpus` of 0 or over
/// [`heir_scenario::limits::MAX_CPUS`], and a task or phase that names a CPU
/// beyond the count given.
pub fn cpu_count(scenario: &Scenario, config: &SimConfig) -> Result<u32, SimError> {
    // The largest CPU each task names (in its own `cpus` or a phase's).
    let named = scenario.tasks.iter().filter_map(|t| {
        t.cpus
            .iter()
            .chain(t.phases.iter().filter_map(|p| p.cpus.as_ref()))
            .flatten()
            .copied()
            .max()
            .map(|c| (t, c))
    });
    let (limit, given) = match config.cpus {
        None => (MAX_CPUS, None),
        Some(n) if n == 0 || n > MAX_CPUS => {
            return Err(invalid(
                "--cpus",
                format!("expected a number of CPUs from 1 to {MAX_CPUS}, found {n}"),
            ))
        }
        Some(n) => (n, Some(n)),
    };
    let mut max = 0;
    for (t, c) in named {
        if c >= limit {
            let why = match given {
                Some(n) => format!(
                    "the simulation has {n} CPU{} (--cpus {n}): CPU numbers go from 0 to {}",
                    if n == 1 { "" } else { "s" },
                    n - 1
                ),
                None => format!(
                    "heir's limit is {MAX_CPUS} CPUs: CPU numbers go from 0 to {}",
                    MAX_CPUS - 1
                ),
            };
            return Err(at_task(
                t,
                format!("task {} runs on CPU {c}, but {why}", t.name),
            ));
        }
        max = max.max(c);
    }
    Ok(given.unwrap_or(max + 1))
}

/// The base urgency of a scheduling class (DEADLINE is refused before).
fn urgency_of(s: &Sched) -> Urgency {
    match s.policy {
        Policy::Fifo | Policy::Rr | Policy::Deadline => {
            Urgency::fixed(s.priority.clamp(1, 99) as u8)
        }
        Policy::Other | Policy::Batch => Urgency::other(s.priority.clamp(-20, 19) as i8),
        Policy::Idle => Urgency::LOWEST,
    }
}

fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

impl<'s, 'o> Simulator<'s, 'o> {
    /// Checks that `scenario` can be simulated and builds the engine objects:
    /// one engine task per thread, one mutex per scenario mutex, the internal
    /// mutexes and condvars of queues, barriers, suspend points and RPC
    /// endpoints, and (with PI-CV) the helpers.
    pub fn new(
        scenario: &'s Scenario,
        config: &SimConfig,
        obs: &'o mut dyn Observer,
    ) -> Result<Self, SimError> {
        let g = &scenario.global;
        let pi_cv = config.pi_cv.unwrap_or(g.pi_cv);
        let seed = config.seed.unwrap_or(g.seed);
        let end = match (config.duration_us, g.duration_s) {
            (Some(us), _) if us <= MAX_TIME_US => Some(us_to_ns(us)),
            (Some(us), _) => {
                return Err(invalid(
                    "global.duration",
                    beyond_time_limit_us("duration", &us.to_string()),
                ))
            }
            (None, Some(s)) => match seconds_to_us(s) {
                Some(us) => Some(us_to_ns(us)),
                None => {
                    return Err(invalid(
                        "global.duration",
                        beyond_time_limit_s("duration", &shown_seconds(s)),
                    ))
                }
            },
            (None, None) => None,
        };

        // Checks before building anything.
        for task in &scenario.tasks {
            let deadline = |s: &Sched| s.policy == Policy::Deadline;
            if deadline(&task.sched) {
                return Err(at_task(
                    task,
                    format!("task {}: SCHED_DEADLINE is not simulated yet", task.name),
                ));
            }
            for ph in &task.phases {
                if ph.sched.as_ref().is_some_and(deadline) {
                    return Err(invalid_at(
                        &ph.path,
                        ph.line,
                        ph.column,
                        format!("task {}: SCHED_DEADLINE is not simulated yet", task.name),
                    ));
                }
                for ev in &ph.events {
                    check_event(scenario, ev)?;
                }
            }
        }
        if end.is_none() {
            if let Some(task) = scenario
                .tasks
                .iter()
                .find(|t| t.instance > 0 && t.loops.is_none())
            {
                return Err(invalid(
                    "global.duration",
                    format!(
                        "the scenario runs forever (task {} loops forever): set global.duration or pass --duration",
                        task.name
                    ),
                ));
            }
        }

        let ncpus = cpu_count(scenario, config)? as usize;

        let mut engine = Engine::new();
        let mut threads = Vec::new();
        let mut cold = Vec::new();
        let mut task_threads: Vec<std::ops::Range<u32>> = Vec::new();
        let mut task_thread: Vec<u32> = Vec::new();
        let mut tinfo = Vec::new();
        for (ti, task) in scenario.tasks.iter().enumerate() {
            let first = threads.len() as u32;
            let has_timer = task.phases.iter().any(|p| {
                p.events
                    .iter()
                    .any(|e| matches!(e.kind, EventKind::Timer { .. }))
            });
            let first_period_ns = task
                .phases
                .iter()
                .flat_map(|p| p.events.iter())
                .find_map(|e| match e.kind {
                    EventKind::Timer {
                        period: Micros::Fixed(p),
                        ..
                    } => Some(Some(us_to_ns(p))),
                    EventKind::Timer { .. } => Some(None),
                    _ => None,
                })
                .flatten();
            let base = urgency_of(&task.sched);
            for name in task.thread_names() {
                let eng = engine.add_task(base);
                let idx = threads.len() as u32;
                let slot = eng.0 as usize;
                if task_thread.len() <= slot {
                    task_thread.resize(slot + 1, u32::MAX);
                }
                task_thread[slot] = idx;
                tinfo.push(ThreadInfo {
                    name: name.clone(),
                    base,
                });
                cold.push(Cold {
                    name,
                    stats: ResponseStats::new(),
                    jobs: 0,
                    misses: 0,
                    timers: Vec::new(),
                });
                threads.push(Thread {
                    task: ti,
                    eng,
                    status: Status::Unstarted,
                    act: Act::Step,
                    tloop: 0,
                    phase: 0,
                    ploop: 0,
                    ev: 0,
                    sub: 0,
                    pass_start: true,
                    policy: task.sched.policy,
                    base,
                    eff: Effective {
                        urgency: base,
                        donor: eng,
                    },
                    level: level_of(base),
                    home: home_for(ncpus, task.cpus.as_deref()),
                    affinity: task.cpus.clone(),
                    queued: false,
                    stamp: 0,
                    cpu: 0,
                    run_start: 0,
                    run_gen: 0,
                    wall_gen: 0,
                    slice_gen: 0,
                    slice_left: 0,
                    slice_start: 0,
                    slice_armed: false,
                    wait_mutex: None,
                    wait_cond_res: 0,
                    rehelp: None,
                    serving: None,
                    call_run: 0,
                    start_ns: 0,
                    has_timer,
                    first_period_ns,
                    job_release: None,
                    pass_closed: false,
                    release_on_wake: None,
                });
            }
            task_threads.push(first..threads.len() as u32);
        }

        // Who pushes, pops, serves and calls what (declared ∪ used).
        let nres = scenario.resources.len();
        let mut pushers: Vec<Vec<usize>> = vec![Vec::new(); nres];
        let mut poppers: Vec<Vec<usize>> = vec![Vec::new(); nres];
        let mut servers: Vec<Vec<usize>> = vec![Vec::new(); nres];
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); nres];
        for (r, res) in scenario.resources.iter().enumerate() {
            match &res.kind {
                ResourceKind::Queue {
                    pushers: pu,
                    poppers: po,
                    ..
                } => {
                    pushers[r].extend(pu.iter().map(|t| t.0));
                    poppers[r].extend(po.iter().map(|t| t.0));
                }
                ResourceKind::Endpoint {
                    servers: s,
                    callers: c,
                } => {
                    servers[r].extend(s.iter().map(|t| t.0));
                    callers[r].extend(c.iter().map(|t| t.0));
                }
                _ => {}
            }
        }
        for (ti, task) in scenario.tasks.iter().enumerate() {
            for ev in task.phases.iter().flat_map(|p| p.events.iter()) {
                match ev.kind {
                    EventKind::Push(q) => pushers[q.0].push(ti),
                    EventKind::Pop(q) => poppers[q.0].push(ti),
                    EventKind::Serve(e) => servers[e.0].push(ti),
                    EventKind::Call { endpoint, .. } => callers[endpoint.0].push(ti),
                    _ => {}
                }
            }
        }
        for l in pushers
            .iter_mut()
            .chain(poppers.iter_mut())
            .chain(servers.iter_mut())
            .chain(callers.iter_mut())
        {
            l.sort_unstable();
            l.dedup();
        }
        let threads_of = |tasks: &[usize]| -> Vec<u32> {
            tasks
                .iter()
                .filter_map(|&ti| task_threads.get(ti))
                .flat_map(|r| r.clone())
                .collect()
        };

        // Resources: scenario names first (ResIdx = SimInfo index), then the
        // internal objects with readable names.
        let mut b = ObjNamer {
            names: scenario.resources.iter().map(|r| r.name.clone()).collect(),
            mutex_res: Vec::new(),
            cond_res: Vec::new(),
        };
        let mut helpers: Vec<(CondId, u32)> = Vec::new();
        let side_protocol = if g.pi_enabled {
            Protocol::Inherit
        } else {
            Protocol::None
        };
        let mut objs = Vec::with_capacity(nres);
        {
            for (r, res) in scenario.resources.iter().enumerate() {
                let obj = match &res.kind {
                    ResourceKind::Mutex { protocol } => {
                        let p = match protocol {
                            MutexProtocol::None => Protocol::None,
                            MutexProtocol::Inherit => Protocol::Inherit,
                            MutexProtocol::Ceiling { ceiling } => {
                                Protocol::Ceiling(Urgency::fixed((*ceiling).clamp(1, 99) as u8))
                            }
                        };
                        let (m, _) = b.mutex(&mut engine, r, None, p);
                        Obj::Mutex { m }
                    }
                    ResourceKind::Cond { helpers: hs } => {
                        let (c, _) = b.cond(&mut engine, r, None);
                        let hs: Vec<usize> = hs.iter().map(|t: &TaskIdx| t.0).collect();
                        for th in threads_of(&hs) {
                            helpers.push((c, th));
                        }
                        Obj::Cond { c }
                    }
                    ResourceKind::Queue { capacity, .. } => {
                        let (m, rm) = b.mutex(&mut engine, r, Some("mutex"), Protocol::Inherit);
                        let (more, rmore) = b.cond(&mut engine, r, Some("more"));
                        let (less, rless) = b.cond(&mut engine, r, Some("less"));
                        for th in threads_of(&pushers[r]) {
                            helpers.push((more, th));
                        }
                        for th in threads_of(&poppers[r]) {
                            helpers.push((less, th));
                        }
                        Obj::Queue {
                            m,
                            more,
                            less,
                            rm,
                            rmore,
                            rless,
                            len: 0,
                            cap: *capacity,
                        }
                    }
                    ResourceKind::Barrier { users } => {
                        let (m, rm) = b.mutex(&mut engine, r, Some("mutex"), side_protocol);
                        let (c, rc) = b.cond(&mut engine, r, Some("cond"));
                        Obj::Barrier {
                            m,
                            c,
                            rm,
                            rc,
                            waiting: i64::from(*users) - 1,
                        }
                    }
                    ResourceKind::Timer { mode, unique } => Obj::Timer {
                        mode: *mode,
                        unique: *unique,
                        state: TimerState::default(),
                    },
                    ResourceKind::Suspend { .. } => {
                        let (m, rm) = b.mutex(&mut engine, r, Some("mutex"), side_protocol);
                        let (c, rc) = b.cond(&mut engine, r, Some("cond"));
                        Obj::Suspend { m, c, rm, rc }
                    }
                    ResourceKind::Endpoint { .. } => {
                        let (m, rm) = b.mutex(&mut engine, r, Some("mutex"), Protocol::Inherit);
                        let (more, rmore) = b.cond(&mut engine, r, Some("more"));
                        let server_threads = threads_of(&servers[r]);
                        let mut replies = Vec::new();
                        for caller in threads_of(&callers[r]) {
                            let cname = &cold[caller as usize].name;
                            let (c, rc) = b.cond(&mut engine, r, Some(&format!("reply[{cname}]")));
                            for &s in &server_threads {
                                helpers.push((c, s));
                            }
                            replies.push(Reply {
                                caller,
                                cond: c,
                                res: rc,
                                done: false,
                            });
                        }
                        Obj::Endpoint {
                            m,
                            more,
                            rm,
                            rmore,
                            reqs: VecDeque::new(),
                            replies,
                        }
                    }
                };
                objs.push(obj);
            }
        }

        if pi_cv {
            for (c, th) in helpers {
                let eng = threads[th as usize].eng;
                match engine.helper_add(c, eng) {
                    Ok(_) | Err(EngineError::HelperExists { .. }) => {}
                    Err(e) => {
                        return Err(at_task(
                            &scenario.tasks[threads[th as usize].task],
                            format!("cannot register helper {}: {e}", cold[th as usize].name),
                        ))
                    }
                }
            }
        }

        let alive = threads.len();
        Ok(Simulator {
            sc: scenario,
            obs,
            engine,
            threads,
            cold,
            objs,
            info: SimInfo {
                cpus: ncpus as u32,
                threads: tinfo,
                resources: b.names,
            },
            mutex_res: b.mutex_res,
            cond_res: b.cond_res,
            task_thread,
            cpus: (0..ncpus).map(|_| Cpu::default()).collect(),
            local: (0..ncpus).map(|_| RunQueue::default()).collect(),
            global: RunQueue::default(),
            evq: EventQueue::default(),
            dirty: VecDeque::new(),
            claimed: vec![false; ncpus],
            scratch: Vec::new(),
            stamp_tail: 0,
            stamp_head: 0,
            now: 0,
            end,
            rng: SplitMix64::new(seed),
            events: 0,
            alive,
            zero_steps: 0,
            started: false,
            trace: true,
            changes: Changes::new(),
        })
    }

    /// What the observer is told at the start (CPUs, threads, resources).
    pub fn info(&self) -> &SimInfo {
        &self.info
    }

    /// The engine (after [`Simulator::run`]: in its final state).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Runs the simulation to its end (duration, every thread exited, or a
    /// deadlock). Can be called once.
    pub fn run(&mut self) -> Result<Report, SimError> {
        if self.started {
            return Err(invalid("simulator", "a simulation runs once"));
        }
        self.started = true;
        self.trace = self.obs.wants_events();
        self.obs.start(&self.info);
        let sc = self.sc;
        for t in 0..self.threads.len() {
            let delay = us_to_ns(sc.tasks[self.threads[t].task].delay_us);
            self.evq.push(delay, EvKind::Start, t as u32, 0);
        }
        let deadlock = match self.main_loop() {
            Ok(()) => None,
            Err(stop) => match *stop {
                Stop::Deadlock(d) => Some(d),
                Stop::Error(e) => return Err(e),
            },
        };
        let end_ns = if deadlock.is_some() || self.alive == 0 {
            self.now
        } else {
            self.end.map_or(self.now, |e| e.max(self.now))
        };
        self.now = end_ns;
        for c in 0..self.cpus.len() {
            self.close_slice(c as u32);
        }
        self.obs.finish(end_ns);
        Ok(Report {
            mode: "sim",
            duration_us: end_ns as f64 / 1000.0,
            tasks: self
                .cold
                .iter()
                .map(|c| TaskReport {
                    name: c.name.clone(),
                    jobs: c.jobs,
                    deadline_misses: c.misses,
                    response_us: c.stats.summary(),
                })
                .collect(),
            deadlock,
            events: self.events,
        })
    }

    /// Per-thread response statistics (thread name, stats), scenario order.
    pub fn thread_stats(&self) -> impl Iterator<Item = (&str, &ResponseStats)> + '_ {
        self.cold.iter().map(|c| (c.name.as_str(), &c.stats))
    }

    /// What is allocated that could grow with simulated time.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            pending_events: self.evq.len(),
            histogram_buckets: self.cold.iter().map(|c| c.stats.bucket_count()).sum(),
            histogram_chunks: self.cold.iter().map(|c| c.stats.chunk_count()).sum(),
            queued_requests: self
                .objs
                .iter()
                .map(|o| match o {
                    Obj::Endpoint { reqs, .. } => reqs.len(),
                    _ => 0,
                })
                .sum(),
            unique_timers: self.cold.iter().map(|c| c.timers.len()).sum(),
        }
    }

    /// Debug hook: the engine's own invariants, plus the simulator's cached
    /// effective urgencies (every live thread's must equal the engine's) and
    /// run-queue membership (exactly the ready threads are queued).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.engine
            .check_invariants()
            .map_err(|e| format!("engine: {e}"))?;
        let mut queued = 0usize;
        for (th, cold) in self.threads.iter().zip(&self.cold) {
            let name = &cold.name;
            if th.status == Status::Exited {
                continue;
            }
            let eff = self
                .engine
                .effective(th.eng)
                .map_err(|e| format!("{name}: {e}"))?;
            if eff != th.eff {
                return Err(format!(
                    "{name}: cached effective {:?} but the engine says {:?}",
                    th.eff, eff
                ));
            }
            if th.level != level_of(eff.urgency) {
                return Err(format!("{name}: stale run-queue level"));
            }
            if (th.status == Status::Ready) != th.queued {
                return Err(format!(
                    "{name}: status {:?} but queued = {}",
                    th.status, th.queued
                ));
            }
            queued += usize::from(th.queued);
            if th.status == Status::Running
                && self.cpus[th.cpu as usize].current != Some(self.index_of(th))
            {
                return Err(format!("{name}: running but not its CPU's current"));
            }
        }
        let in_queues = self.global.len() + self.local.iter().map(RunQueue::len).sum::<usize>();
        if in_queues != queued {
            return Err(format!(
                "{in_queues} threads in run queues, {queued} marked queued"
            ));
        }
        Ok(())
    }

    fn index_of(&self, th: &Thread) -> u32 {
        self.task_thread
            .get(th.eng.0 as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }

    // ----------------------------------------------------------------------
    // Main loop.

    fn main_loop(&mut self) -> R<()> {
        while self.alive > 0 {
            let Some(time) = self.evq.peek_time() else {
                break;
            };
            match self.end {
                Some(end) if time > end => break,
                None if time > MAX_TIME_NS => {
                    return Err(stop(invalid(
                        "global.duration",
                        format!(
                            "simulated time would pass heir's time limit of {MAX_TIME_S} s (100 days) before every task ends: set global.duration or pass --duration"
                        ),
                    )))
                }
                _ => {}
            }
            let Some(ev) = self.evq.pop() else {
                break;
            };
            if time != self.now {
                self.now = time;
                self.zero_steps = 0;
            }
            self.events += 1;
            let t = ev.thread;
            let ti = t as usize;
            match ev.kind {
                EvKind::Start => self.start_thread(t)?,
                EvKind::RunDone => {
                    let th = &mut self.threads[ti];
                    if th.status == Status::Running
                        && ev.gen == th.run_gen
                        && matches!(th.act, Act::Run { .. })
                    {
                        th.act = Act::Step;
                        self.step(t)?;
                    }
                }
                EvKind::Wall => {
                    let th = &mut self.threads[ti];
                    if ev.gen == th.wall_gen {
                        match (th.status, th.act) {
                            (Status::Sleeping, _) => {
                                if let Some(deadline) = th.release_on_wake.take() {
                                    let at_ns = self.now;
                                    self.emit(TraceEvent::Release {
                                        thread: ti,
                                        at_ns,
                                        deadline_ns: deadline,
                                    });
                                }
                                self.wake(t);
                            }
                            (Status::Running, Act::Runtime { .. }) => {
                                th.act = Act::Step;
                                self.step(t)?;
                            }
                            (Status::Ready, Act::Runtime { .. }) => {
                                th.act = Act::Step;
                                self.maybe_close_pass(t);
                            }
                            _ => {}
                        }
                    }
                }
                EvKind::Slice => self.slice_expired(t, ev.gen),
            }
            self.schedule()?;
        }
        Ok(())
    }

    fn emit(&mut self, ev: TraceEvent) {
        if self.trace {
            self.obs.event(&ev);
        }
    }

    fn instant(&mut self, t: u32, kind: InstantKind, res: usize) {
        if !self.trace {
            return;
        }
        let at_ns = self.now;
        self.obs.event(&TraceEvent::Instant {
            thread: t as usize,
            at_ns,
            kind,
            resource: Some(res),
        });
    }

    fn thread_of(&self, id: TaskId) -> Option<u32> {
        self.task_thread
            .get(id.0 as usize)
            .copied()
            .filter(|&t| t != u32::MAX)
    }

    fn donor_of(&self, t: u32) -> Option<usize> {
        let th = &self.threads[t as usize];
        if th.eff.donor == th.eng {
            None
        } else {
            self.thread_of(th.eff.donor).map(|d| d as usize)
        }
    }

    fn draw(&mut self, m: Micros) -> u64 {
        match m {
            Micros::Fixed(v) => us_to_ns(v),
            Micros::Uniform { min, max } => us_to_ns(self.rng.uniform(min, max)),
        }
    }

    // ----------------------------------------------------------------------
    // Scheduling.

    fn mark_dirty(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if !cpu.dirty {
            cpu.dirty = true;
            self.dirty.push_back(c);
        }
    }

    fn allowed(&self, t: u32, c: u32) -> bool {
        match &self.threads[t as usize].home {
            Home::Cpu(x) => *x == c,
            Home::Global(mask) => mask.get(c as usize).copied().unwrap_or(false),
        }
    }

    /// Puts a ready thread in its run queue, at the head (preempted, or
    /// lowered by the engine) or the tail (woken, raised, yielded).
    fn enqueue(&mut self, t: u32, head: bool) {
        let stamp = if head {
            self.stamp_head -= 1;
            self.stamp_head
        } else {
            self.stamp_tail += 1;
            self.stamp_tail
        };
        let th = &mut self.threads[t as usize];
        th.stamp = stamp;
        th.queued = true;
        match th.home {
            Home::Cpu(c) => self.local[c as usize].push(th.level, t, head),
            Home::Global(_) => self.global.push(th.level, t, head),
        }
    }

    fn dequeue(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        if !th.queued {
            return;
        }
        th.queued = false;
        match th.home {
            Home::Cpu(c) => self.local[c as usize].remove(th.level, t),
            Home::Global(_) => self.global.remove(th.level, t),
        };
    }

    /// After `t` became ready: its CPU must reschedule if idle or running a
    /// less urgent thread (global threads are placed by the balancing pass).
    fn wake_check(&mut self, t: u32) {
        let th = &self.threads[t as usize];
        if let Home::Cpu(c) = th.home {
            let preempt = match self.cpus[c as usize].current {
                None => true,
                Some(cur) => self.threads[cur as usize].level < th.level,
            };
            if preempt {
                self.mark_dirty(c);
            }
        }
    }

    /// A blocked or sleeping thread becomes ready (tail of its level).
    fn wake(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        th.status = Status::Ready;
        th.act = Act::Step;
        self.maybe_close_pass(t);
        self.enqueue(t, false);
        self.wake_check(t);
    }

    /// The most urgent ready thread CPU `c` may run: (level, stamp, thread).
    fn peek_best(&self, c: u32) -> Option<(u8, i64, u32)> {
        let mut best = self.local[c as usize]
            .top()
            .map(|(l, t)| (l, self.threads[t as usize].stamp, t));
        if !self.global.is_empty() {
            for l in self.global.levels_desc() {
                if best.is_some_and(|(bl, _, _)| l < bl) {
                    break;
                }
                let found = self
                    .global
                    .level(l)
                    .iter()
                    .copied()
                    .find(|&t| self.allowed(t, c));
                if let Some(t) = found {
                    let stamp = self.threads[t as usize].stamp;
                    let better = match best {
                        None => true,
                        Some((bl, bs, _)) => l > bl || (l == bl && stamp < bs),
                    };
                    if better {
                        best = Some((l, stamp, t));
                    }
                    break;
                }
            }
        }
        best
    }

    /// Runs scheduling decisions until no CPU is dirty and no global thread
    /// can be placed.
    fn schedule(&mut self) -> R<()> {
        loop {
            while let Some(c) = self.dirty.pop_front() {
                self.cpus[c as usize].dirty = false;
                self.resched_cpu(c)?;
            }
            if self.global.is_empty() || !self.balance() {
                break;
            }
        }
        Ok(())
    }

    /// Places global ready threads, most urgent first, on an allowed CPU that
    /// is idle (lowest index) or else runs the least urgent thread (lowest
    /// index among equals), if they are more urgent; marks those CPUs dirty.
    fn balance(&mut self) -> bool {
        let mut cands = std::mem::take(&mut self.scratch);
        cands.clear();
        for l in self.global.levels_desc() {
            cands.extend(self.global.level(l).iter().copied());
        }
        self.claimed.iter_mut().for_each(|c| *c = false);
        let mut any = false;
        for &t in &cands {
            let lt = self.threads[t as usize].level;
            let mut target: Option<(u32, Option<u8>)> = None;
            for c in 0..self.cpus.len() as u32 {
                if self.claimed[c as usize] || !self.allowed(t, c) {
                    continue;
                }
                match self.cpus[c as usize].current {
                    None => {
                        target = Some((c, None));
                        break;
                    }
                    Some(r) => {
                        let rl = self.threads[r as usize].level;
                        let better = match target {
                            None => true,
                            Some((_, Some(tl))) => rl < tl,
                            Some((_, None)) => false,
                        };
                        if rl < lt && better {
                            target = Some((c, Some(rl)));
                        }
                    }
                }
            }
            if let Some((c, _)) = target {
                self.claimed[c as usize] = true;
                self.mark_dirty(c);
                any = true;
            }
        }
        self.scratch = cands;
        any
    }

    fn resched_cpu(&mut self, c: u32) -> R<()> {
        let best = self.peek_best(c);
        match self.cpus[c as usize].current {
            Some(cur) => {
                let lc = self.threads[cur as usize].level;
                match best {
                    Some((lb, _, b)) if lb > lc => {
                        self.preempt(cur, true);
                        self.dequeue(b);
                        self.dispatch(c, b)
                    }
                    _ => {
                        if self.threads[cur as usize].act == Act::Step {
                            self.step(cur)
                        } else {
                            Ok(())
                        }
                    }
                }
            }
            None => match best {
                Some((_, _, b)) => {
                    self.dequeue(b);
                    self.dispatch(c, b)
                }
                None => Ok(()),
            },
        }
    }

    fn dispatch(&mut self, c: u32, t: u32) -> R<()> {
        {
            let th = &mut self.threads[t as usize];
            th.status = Status::Running;
            th.cpu = c;
        }
        self.cpus[c as usize].current = Some(t);
        self.events += 1;
        self.open_slice(c, t);
        self.arm_slice(t);
        let now = self.now;
        let th = &mut self.threads[t as usize];
        match th.act {
            Act::Run { left } if left > 0 => {
                th.run_start = now;
                th.run_gen = th.run_gen.wrapping_add(1);
                let gen = th.run_gen;
                self.evq
                    .push(now.saturating_add(left), EvKind::RunDone, t, gen);
                Ok(())
            }
            Act::Runtime { end } if end > now => Ok(()),
            _ => {
                th.act = Act::Step;
                self.step(t)
            }
        }
    }

    /// Takes the running thread `t` off its CPU (the CPU becomes dirty).
    fn undispatch(&mut self, t: u32) {
        let c = self.threads[t as usize].cpu;
        self.close_slice(c);
        self.disarm_slice(t);
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if let Act::Run { left } = th.act {
            let ran = now.saturating_sub(th.run_start);
            th.act = Act::Run {
                left: left.saturating_sub(ran),
            };
            th.run_gen = th.run_gen.wrapping_add(1);
        }
        self.cpus[c as usize].current = None;
        self.mark_dirty(c);
    }

    /// The running thread `t` goes back to its run queue.
    fn preempt(&mut self, t: u32, head: bool) {
        self.undispatch(t);
        self.threads[t as usize].status = Status::Ready;
        self.maybe_close_pass(t);
        self.enqueue(t, head);
    }

    fn block(&mut self, t: u32) {
        self.undispatch(t);
        let th = &mut self.threads[t as usize];
        th.status = Status::Blocked;
        th.act = Act::Step;
    }

    fn sleep_until(&mut self, t: u32, when: u64) {
        self.undispatch(t);
        let th = &mut self.threads[t as usize];
        th.status = Status::Sleeping;
        th.act = Act::Step;
        th.wall_gen = th.wall_gen.wrapping_add(1);
        let gen = th.wall_gen;
        self.evq.push(when, EvKind::Wall, t, gen);
    }

    fn open_slice(&mut self, c: u32, t: u32) {
        let donor = self.donor_of(t);
        let urgency = self.threads[t as usize].eff.urgency;
        self.cpus[c as usize].slice = Some(OpenSlice {
            thread: t,
            start: self.now,
            urgency,
            donor,
        });
    }

    fn close_slice(&mut self, c: u32) {
        if let Some(s) = self.cpus[c as usize].slice.take() {
            if self.now > s.start {
                let end_ns = self.now;
                self.emit(TraceEvent::Exec {
                    cpu: c,
                    thread: s.thread as usize,
                    start_ns: s.start,
                    end_ns,
                    urgency: s.urgency,
                    donor: s.donor,
                });
            }
        }
    }

    /// The time slice of `t` in its current class, if it has one:
    /// `SCHED_RR` at a fixed priority → 100 ms; any `SCHED_OTHER`-class
    /// urgency → 4 ms × weight(nice) / 1024 (SCHED_IDLE: weight 3).
    fn slice_len(&self, t: u32) -> Option<u64> {
        let th = &self.threads[t as usize];
        match th.eff.urgency {
            Urgency::Fixed { .. } if th.policy == Policy::Rr => Some(RR_SLICE_NS),
            Urgency::Other { nice } => {
                let weight = if th.policy == Policy::Idle && th.eff.donor == th.eng {
                    IDLE_WEIGHT
                } else {
                    NICE_TO_WEIGHT[(i32::from(nice).clamp(-20, 19) + 20) as usize]
                };
                Some((OTHER_BASE_SLICE_NS * weight / 1024).max(1))
            }
            _ => None,
        }
    }

    fn arm_slice(&mut self, t: u32) {
        let Some(len) = self.slice_len(t) else {
            return;
        };
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if th.slice_left == 0 || th.slice_left > len {
            th.slice_left = len;
        }
        th.slice_start = now;
        th.slice_armed = true;
        th.slice_gen = th.slice_gen.wrapping_add(1);
        let (when, gen) = (now.saturating_add(th.slice_left), th.slice_gen);
        self.evq.push(when, EvKind::Slice, t, gen);
    }

    fn disarm_slice(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if th.slice_armed {
            let used = now.saturating_sub(th.slice_start);
            th.slice_left = th.slice_left.saturating_sub(used);
            th.slice_armed = false;
            th.slice_gen = th.slice_gen.wrapping_add(1);
        }
    }

    /// A slice expired: round-robin to the tail if another thread of the same
    /// level may run on this CPU, else a new slice.
    fn slice_expired(&mut self, t: u32, gen: u32) {
        let th = &mut self.threads[t as usize];
        if th.status != Status::Running || gen != th.slice_gen || !th.slice_armed {
            return;
        }
        th.slice_armed = false;
        th.slice_left = 0;
        let (c, l) = (th.cpu, th.level);
        let contender = self.local[c as usize].has_level(l)
            || (self.global.has_level(l)
                && self.global.level(l).iter().any(|&x| self.allowed(x, c)));
        if contender {
            self.preempt(t, false);
        } else {
            self.arm_slice(t);
        }
    }

    /// Applies the engine's changes: trace a `Boost` each, re-queue ready
    /// threads (raised → tail of the new level, lowered → head, as Linux's
    /// `rt_mutex_setprio`), split the running thread's `Exec` slice, and ask
    /// for a scheduling decision where the change may preempt.
    #[inline]
    fn apply_changes(&mut self, changes: &Changes) {
        for ch in changes.iter() {
            self.apply_change(ch);
        }
    }

    /// [`Simulator::apply_changes`] of the last `*_into` engine operation
    /// (`self.changes`).
    #[inline]
    fn apply_buffered(&mut self) {
        for i in 0..self.changes.len() {
            let ch = self.changes[i];
            self.apply_change(&ch);
        }
    }

    fn apply_change(&mut self, ch: &Change) {
        let Some(t) = self.thread_of(ch.task) else {
            return;
        };
        let donor = if ch.new.donor == ch.task {
            None
        } else {
            self.thread_of(ch.new.donor).map(|d| d as usize)
        };
        let at_ns = self.now;
        self.emit(TraceEvent::Boost {
            at_ns,
            to: t as usize,
            donor,
            urgency: ch.new.urgency,
        });
        let raised = ch.new.urgency > ch.old.urgency;
        let new_level = level_of(ch.new.urgency);
        let old_slice = self.slice_len(t);
        let th = &mut self.threads[t as usize];
        let old_level = th.level;
        th.eff = ch.new;
        match th.status {
            Status::Ready => {
                if new_level != old_level {
                    th.level = old_level;
                    self.dequeue(t);
                    self.threads[t as usize].level = new_level;
                    self.enqueue(t, !raised);
                    if raised {
                        self.wake_check(t);
                    }
                }
            }
            Status::Running => {
                th.level = new_level;
                let (c, global) = (th.cpu, matches!(th.home, Home::Global(_)));
                self.close_slice(c);
                self.open_slice(c, t);
                if self.slice_len(t) != old_slice {
                    self.disarm_slice(t);
                    self.arm_slice(t);
                }
                if !raised || global {
                    self.mark_dirty(c);
                }
            }
            _ => th.level = new_level,
        }
    }

    // ----------------------------------------------------------------------
    // Thread life.

    fn start_thread(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let task = &sc.tasks[th.task];
        th.start_ns = now;
        th.pass_start = true;
        if task.loops == Some(0) || task.phases.is_empty() {
            return self.exit_thread(t, false);
        }
        th.status = Status::Ready;
        th.act = Act::Step;
        // The first job is released when the thread starts (after its
        // delay), whether or not it gets a CPU at once — unless the program
        // opens with its timer: then that timer releases the first job.
        let timer_first = task
            .phases
            .iter()
            .find(|p| p.loops > 0)
            .and_then(|p| p.events.first())
            .is_some_and(|e| matches!(e.kind, EventKind::Timer { .. }));
        if !timer_first {
            th.job_release = Some(now);
            let deadline_ns = if th.has_timer {
                th.first_period_ns.map(|p| now.saturating_add(p))
            } else {
                None
            };
            self.emit(TraceEvent::Release {
                thread: t as usize,
                at_ns: now,
                deadline_ns,
            });
        }
        self.enqueue(t, false);
        self.wake_check(t);
        Ok(())
    }

    fn exit_thread(&mut self, t: u32, on_cpu: bool) -> R<()> {
        if on_cpu {
            self.undispatch(t);
        }
        let th = &mut self.threads[t as usize];
        th.status = Status::Exited;
        th.job_release = None;
        self.alive -= 1;
        let eng = th.eng;
        match self.engine.remove_task(eng) {
            Ok(ch) => self.apply_changes(&ch),
            // Exits owning a mutex: it stays in the engine as the owner.
            Err(EngineError::Busy { .. }) => {}
            Err(e) => return Err(self.internal(t, e)),
        }
        Ok(())
    }

    fn internal(&self, t: u32, e: EngineError) -> Box<Stop> {
        let th = &self.threads[t as usize];
        Box::new(Stop::Error(at_task(
            &self.sc.tasks[th.task],
            format!(
                "thread {}: the engine refused an operation: {e}",
                self.cold[t as usize].name
            ),
        )))
    }

    fn finish(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        th.ev += 1;
        th.sub = 0;
    }

    fn complete_job(&mut self, t: u32, release: u64, missed: bool) {
        let now = self.now;
        let response = now.saturating_sub(release);
        let c = &mut self.cold[t as usize];
        c.stats.record(response);
        c.jobs += 1;
        c.misses += u64::from(missed);
        self.emit(TraceEvent::Complete {
            thread: t as usize,
            at_ns: now,
            response_ns: response,
            missed,
        });
    }

    /// A timer-less thread's pass ended now: its job completes, and the next
    /// pass's job (if there is a next pass) is released now.
    fn close_pass_job(&mut self, t: u32) {
        if self.threads[t as usize].has_timer {
            return;
        }
        if let Some(rel) = self.threads[t as usize].job_release.take() {
            self.complete_job(t, rel, false);
        }
        if !self.is_last_pass(t) {
            let now = self.now;
            self.threads[t as usize].job_release = Some(now);
            self.emit(TraceEvent::Release {
                thread: t as usize,
                at_ns: now,
                deadline_ns: None,
            });
        }
    }

    /// Whether the pass in progress is the thread's last one.
    fn is_last_pass(&self, t: u32) -> bool {
        let th = &self.threads[t as usize];
        let task = &self.sc.tasks[th.task];
        let Some(phase) = task.phases.get(th.phase) else {
            return true;
        };
        if th.ploop + 1 < phase.loops {
            return false;
        }
        if task.phases[th.phase + 1..].iter().any(|p| p.loops > 0) {
            return false;
        }
        task.loops.is_some_and(|l| th.tloop + 1 >= l)
    }

    /// A thread leaving or waiting for a CPU whose program counter is at the
    /// end of a pass: the pass ended now (its last event completed now), not
    /// when the thread next runs. Closes the job of a timer-less thread.
    fn maybe_close_pass(&mut self, t: u32) {
        let sc = self.sc;
        let th = &self.threads[t as usize];
        if th.has_timer || th.pass_closed || th.pass_start || th.act != Act::Step {
            return;
        }
        let Some(phase) = sc.tasks[th.task].phases.get(th.phase) else {
            return;
        };
        if th.ev >= phase.events.len() {
            self.close_pass_job(t);
            self.threads[t as usize].pass_closed = true;
        }
    }

    /// Executes micro-steps of the running thread `t` until it leaves the
    /// CPU, starts timed work, or its CPU has a scheduling decision pending.
    fn step(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        loop {
            let th = &self.threads[t as usize];
            if th.status != Status::Running
                || th.act != Act::Step
                || self.cpus[th.cpu as usize].dirty
            {
                return Ok(());
            }
            self.zero_steps += 1;
            if self.zero_steps > ZERO_TIME_STEP_LIMIT {
                return Err(stop(at_task(
                    &sc.tasks[th.task],
                    messages::zero_time_loop(&self.cold[t as usize].name, self.now as f64 / 1000.0),
                )));
            }
            let task = &sc.tasks[th.task];
            if th.pass_start {
                self.begin_pass(t)?;
                continue;
            }
            let phase = &task.phases[th.phase];
            let Some(ev) = phase.events.get(th.ev) else {
                self.end_pass(t)?;
                continue;
            };
            match self.exec(t, ev)? {
                Flow::Next => self.finish(t),
                Flow::Same | Flow::Leave => {}
            }
        }
    }

    /// Start of a pass of the current phase: the job of a timer-less thread
    /// is released, then the phase's `sched` and `cpus` are applied.
    fn begin_pass(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        let th = &mut self.threads[t as usize];
        let phase = &sc.tasks[th.task].phases[th.phase];
        if phase.loops == 0 {
            th.ploop = 0;
            return self.next_phase(t);
        }
        th.pass_start = false;
        if let Some(s) = &phase.sched {
            self.set_sched(t, s)?;
        }
        if let Some(cpus) = &phase.cpus {
            self.set_affinity(t, cpus);
        }
        Ok(())
    }

    /// End of a pass: the job of a timer-less thread completes; the program
    /// counter moves to the next pass, phase, or task loop (or exits).
    fn end_pass(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        if std::mem::take(&mut self.threads[t as usize].pass_closed) {
            // Already closed when the last event completed.
        } else {
            self.close_pass_job(t);
        }
        let th = &mut self.threads[t as usize];
        let phase = &sc.tasks[th.task].phases[th.phase];
        th.ev = 0;
        th.sub = 0;
        th.pass_start = true;
        th.ploop += 1;
        if th.ploop >= phase.loops {
            th.ploop = 0;
            return self.next_phase(t);
        }
        Ok(())
    }

    fn next_phase(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        let th = &mut self.threads[t as usize];
        let task = &sc.tasks[th.task];
        th.phase += 1;
        th.ev = 0;
        th.sub = 0;
        th.pass_start = true;
        if th.phase >= task.phases.len() {
            th.phase = 0;
            th.tloop += 1;
            if task.loops.is_some_and(|l| th.tloop >= l) {
                return self.exit_thread(t, true);
            }
        }
        Ok(())
    }

    fn set_sched(&mut self, t: u32, s: &Sched) -> R<()> {
        let base = urgency_of(s);
        let old_slice = self.slice_len(t);
        let th = &mut self.threads[t as usize];
        th.policy = s.policy;
        if base != th.base {
            th.base = base;
            let eng = th.eng;
            match self.engine.set_base(eng, base) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(t, e)),
            }
        }
        if self.threads[t as usize].status == Status::Running && self.slice_len(t) != old_slice {
            self.disarm_slice(t);
            self.arm_slice(t);
        }
        Ok(())
    }

    fn set_affinity(&mut self, t: u32, cpus: &[u32]) {
        let n = self.cpus.len();
        let th = &mut self.threads[t as usize];
        if th.affinity.as_deref() == Some(cpus) {
            return;
        }
        th.affinity = Some(cpus.to_vec());
        let home = home_for(n, Some(cpus));
        if home == th.home {
            return;
        }
        th.home = home;
        if th.status == Status::Running && !self.allowed(t, self.threads[t as usize].cpu) {
            // Migrate: off this CPU, to the tail of the new home.
            self.preempt(t, false);
            self.wake_check(t);
        }
    }

    // ----------------------------------------------------------------------
    // Engine operations (one per micro-step), with their trace instants.

    /// Locks `m` for `t`: true if acquired, false if `t` blocked (and left
    /// its CPU).
    fn op_lock(&mut self, t: u32, m: MutexId, res: usize) -> R<bool> {
        let eng = self.threads[t as usize].eng;
        match self.engine.lock_into(eng, m, &mut self.changes) {
            Ok(LockResult::Acquired) => {
                self.instant(t, InstantKind::Lock, res);
                self.apply_buffered();
                Ok(true)
            }
            Ok(LockResult::Blocked) => {
                self.instant(t, InstantKind::LockBlocked, res);
                self.apply_buffered();
                self.block(t);
                Ok(false)
            }
            Err(EngineError::Cycle { cycle }) => Err(self.deadlock(&cycle)),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Unlocks `m` (held by `t`), handing it to the top waiter, which wakes.
    fn op_unlock(&mut self, t: u32, m: MutexId, res: usize, ev: &Event) -> R<()> {
        let eng = self.threads[t as usize].eng;
        match self.engine.unlock_into(eng, m, &mut self.changes) {
            Ok(next) => {
                self.instant(t, InstantKind::Unlock, res);
                self.apply_buffered();
                if let Some(w) = next.and_then(|w| self.thread_of(w)) {
                    // Hand-off: the top waiter owns the mutex now.
                    self.instant(w, InstantKind::Lock, res);
                    self.wake(w);
                }
                Ok(())
            }
            // The engine checks ownership and leaves its state unchanged.
            Err(EngineError::NotOwner { .. }) => Err(stop(at_event(
                ev,
                messages::mutex_not_held(&self.cold[t as usize].name, &self.info.resources[res]),
            ))),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// `pthread_cond_wait(c, m)`: unlock `m` (handing it to its top waiter)
    /// and block on `c` in one engine operation, as the wait gives its mutex
    /// up atomically with starting to wait; when woken, `m` is re-acquired
    /// on the thread's behalf.
    fn op_wait(
        &mut self,
        t: u32,
        c: CondId,
        cres: usize,
        m: MutexId,
        mres: usize,
        ev: &Event,
    ) -> R<()> {
        let eng = self.threads[t as usize].eng;
        // A thread cannot help a condvar while it waits on it (it could not
        // signal; the engine would refuse the wait as the cycle t → c → t):
        // it stops helping for the duration of the wait.
        if self.engine.helpers(c).is_ok_and(|h| h.contains(&eng)) {
            match self.engine.helper_del(c, eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(t, e)),
            }
            self.threads[t as usize].rehelp = Some(c);
        }
        match self
            .engine
            .cond_wait_unlock_into(eng, c, m, &mut self.changes)
        {
            Ok(next) => {
                self.instant(t, InstantKind::Unlock, mres);
                let next = next.and_then(|w| self.thread_of(w));
                if let Some(w) = next {
                    // Hand-off: the top waiter owns the mutex now.
                    self.instant(w, InstantKind::Lock, mres);
                }
                self.instant(t, InstantKind::Wait, cres);
                self.apply_buffered();
                if let Some(w) = next {
                    self.wake(w);
                }
                let th = &mut self.threads[t as usize];
                th.wait_mutex = Some((m, mres));
                th.wait_cond_res = cres;
                self.block(t);
                Ok(())
            }
            Err(EngineError::NotOwner { .. }) => Err(stop(at_event(
                ev,
                messages::wait_without_mutex(
                    &self.cold[t as usize].name,
                    &self.info.resources[cres],
                    &self.info.resources[mres],
                ),
            ))),
            Err(EngineError::Cycle { cycle }) => Err(self.deadlock(&cycle)),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Signals `c` (a signal without waiters is lost; the engine then
    /// changes nothing).
    fn op_signal(&mut self, t: u32, c: CondId, cres: usize) -> R<()> {
        match self.engine.cond_signal_into(c, &mut self.changes) {
            Ok(woken) => {
                self.instant(t, InstantKind::Signal, cres);
                self.apply_buffered();
                if let Some(w) = woken.and_then(|w| self.thread_of(w)) {
                    self.rewake(w)?;
                }
                Ok(())
            }
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Broadcasts `c`, every woken waiter re-acquiring its mutex in wake
    /// order.
    fn op_broadcast(&mut self, t: u32, c: CondId, cres: usize) -> R<()> {
        let result = self.engine.cond_broadcast(c);
        match &result {
            Ok(out) => {
                self.instant(t, InstantKind::Broadcast, cres);
                self.apply_changes(&out.changes);
                for &w in &out.value {
                    if let Some(w) = self.thread_of(w) {
                        self.rewake(w)?;
                    }
                }
                Ok(())
            }
            Err(e) => Err(self.internal(t, e.clone())),
        }
    }

    /// A thread woken from a condvar re-acquires its mutex at once, on its
    /// behalf (as `FUTEX_CMP_REQUEUE_PI`): it becomes ready if the mutex is
    /// free, else it stays blocked, now on the mutex (and donates to its
    /// owner per the mutex protocol).
    fn rewake(&mut self, w: u32) -> R<()> {
        let cres = self.threads[w as usize].wait_cond_res;
        self.instant(w, InstantKind::Woken, cres);
        if let Some(c) = self.threads[w as usize].rehelp.take() {
            // Helping again, now that it no longer waits.
            let eng = self.threads[w as usize].eng;
            let result = self.engine.helper_add(c, eng);
            match &result {
                Ok(ch) => self.apply_changes(ch),
                Err(EngineError::Cycle { cycle }) => return Err(self.deadlock(cycle)),
                Err(e) => return Err(self.internal(w, e.clone())),
            }
        }
        let Some((m, mres)) = self.threads[w as usize].wait_mutex.take() else {
            self.wake(w);
            return Ok(());
        };
        let eng = self.threads[w as usize].eng;
        match self.engine.lock_into(eng, m, &mut self.changes) {
            Ok(LockResult::Acquired) => {
                self.instant(w, InstantKind::Lock, mres);
                self.apply_buffered();
                self.wake(w);
                Ok(())
            }
            Ok(LockResult::Blocked) => {
                self.instant(w, InstantKind::LockBlocked, mres);
                self.apply_buffered();
                Ok(())
            }
            Err(EngineError::Cycle { cycle }) => Err(self.deadlock(&cycle)),
            Err(e) => Err(self.internal(w, e)),
        }
    }

    fn deadlock(&self, cycle: &[Node]) -> Box<Stop> {
        let name = |n: &Node| -> String {
            match n {
                Node::Task(id) => self
                    .thread_of(*id)
                    .map(|t| self.cold[t as usize].name.clone())
                    .unwrap_or_else(|| format!("task#{}", id.0)),
                Node::Mutex(m) => self
                    .mutex_res
                    .get(m.0 as usize)
                    .and_then(|&r| self.info.resources.get(r))
                    .cloned()
                    .unwrap_or_else(|| format!("mutex#{}", m.0)),
                Node::Cond(c) => self
                    .cond_res
                    .get(c.0 as usize)
                    .and_then(|&r| self.info.resources.get(r))
                    .cloned()
                    .unwrap_or_else(|| format!("cond#{}", c.0)),
            }
        };
        Box::new(Stop::Deadlock(DeadlockReport {
            at_us: self.now as f64 / 1000.0,
            cycle: cycle.iter().map(name).collect(),
        }))
    }

    /// `lock` as a micro-step: on success continue at `next`, else resume
    /// there once the mutex is handed over.
    fn lock_then(&mut self, t: u32, m: MutexId, res: usize, next: u8) -> R<Flow> {
        let got = self.op_lock(t, m, res)?;
        self.threads[t as usize].sub = next;
        Ok(if got { Flow::Same } else { Flow::Leave })
    }

    /// Starts `ns` of CPU work; then the event ends (`next = None`) or
    /// continues at micro-step `next`.
    fn start_run(&mut self, t: u32, ns: u64, next: Option<u8>) -> Flow {
        if ns == 0 {
            return match next {
                Some(s) => {
                    self.threads[t as usize].sub = s;
                    Flow::Same
                }
                None => Flow::Next,
            };
        }
        match next {
            Some(s) => self.threads[t as usize].sub = s,
            None => self.finish(t),
        }
        let now = self.now;
        let th = &mut self.threads[t as usize];
        th.act = Act::Run { left: ns };
        th.run_start = now;
        th.run_gen = th.run_gen.wrapping_add(1);
        let gen = th.run_gen;
        self.evq
            .push(now.saturating_add(ns), EvKind::RunDone, t, gen);
        Flow::Leave
    }

    fn bad_kind(&self, ev: &Event) -> Box<Stop> {
        Box::new(Stop::Error(at_event(
            ev,
            "the event's resource has the wrong kind",
        )))
    }

    fn mutex_of(&self, r: usize, ev: &Event) -> R<MutexId> {
        match self.objs.get(r) {
            Some(Obj::Mutex { m }) => Ok(*m),
            _ => Err(self.bad_kind(ev)),
        }
    }

    fn cond_of(&self, r: usize, ev: &Event) -> R<CondId> {
        match self.objs.get(r) {
            Some(Obj::Cond { c }) => Ok(*c),
            _ => Err(self.bad_kind(ev)),
        }
    }

    /// One micro-step of event `ev` for the running thread `t`.
    fn exec(&mut self, t: u32, ev: &Event) -> R<Flow> {
        let sub = self.threads[t as usize].sub;
        match &ev.kind {
            EventKind::Run(m) => {
                let ns = self.draw(*m);
                Ok(self.start_run(t, ns, None))
            }
            EventKind::Runtime(m) => {
                let ns = self.draw(*m);
                if ns == 0 {
                    return Ok(Flow::Next);
                }
                self.finish(t);
                let end = self.now.saturating_add(ns);
                let th = &mut self.threads[t as usize];
                th.act = Act::Runtime { end };
                th.wall_gen = th.wall_gen.wrapping_add(1);
                let gen = th.wall_gen;
                self.evq.push(end, EvKind::Wall, t, gen);
                Ok(Flow::Leave)
            }
            EventKind::Sleep(m) => {
                let ns = self.draw(*m);
                if ns == 0 {
                    return Ok(Flow::Next);
                }
                self.finish(t);
                self.sleep_until(t, self.now.saturating_add(ns));
                Ok(Flow::Leave)
            }
            EventKind::Timer { timer, period } => self.op_timer(t, timer.0, *period, ev),
            EventKind::Lock(r) => {
                let m = self.mutex_of(r.0, ev)?;
                if self.op_lock(t, m, r.0)? {
                    Ok(Flow::Next)
                } else {
                    self.finish(t);
                    Ok(Flow::Leave)
                }
            }
            EventKind::Unlock(r) => {
                let m = self.mutex_of(r.0, ev)?;
                self.op_unlock(t, m, r.0, ev)?;
                Ok(Flow::Next)
            }
            EventKind::Wait { cond, mutex } => {
                let c = self.cond_of(cond.0, ev)?;
                let m = self.mutex_of(mutex.0, ev)?;
                self.finish(t);
                self.op_wait(t, c, cond.0, m, mutex.0, ev)?;
                Ok(Flow::Leave)
            }
            EventKind::Signal(r) => {
                let c = self.cond_of(r.0, ev)?;
                self.op_signal(t, c, r.0)?;
                Ok(Flow::Next)
            }
            EventKind::Broadcast(r) => {
                let c = self.cond_of(r.0, ev)?;
                self.op_broadcast(t, c, r.0)?;
                Ok(Flow::Next)
            }
            EventKind::Yield => {
                self.finish(t);
                self.preempt(t, false);
                Ok(Flow::Leave)
            }
            EventKind::Barrier(r) => {
                let Some(&Obj::Barrier {
                    m,
                    c,
                    rm,
                    rc,
                    waiting,
                }) = self.objs.get(r.0)
                else {
                    return Err(self.bad_kind(ev));
                };
                match sub {
                    0 => self.lock_then(t, m, rm, 1),
                    1 => {
                        self.instant(t, InstantKind::Barrier, r.0);
                        if waiting <= 0 {
                            // The last one in: wake everyone.
                            self.threads[t as usize].sub = 3;
                            self.op_broadcast(t, c, rc)?;
                            Ok(Flow::Same)
                        } else {
                            self.counter_add(r.0, -1);
                            self.threads[t as usize].sub = 2;
                            self.op_wait(t, c, rc, m, rm, ev)?;
                            Ok(Flow::Leave)
                        }
                    }
                    2 => {
                        self.counter_add(r.0, 1);
                        self.threads[t as usize].sub = 3;
                        Ok(Flow::Same)
                    }
                    _ => {
                        self.op_unlock(t, m, rm, ev)?;
                        Ok(Flow::Next)
                    }
                }
            }
            EventKind::Suspend(r) | EventKind::Resume(r) => {
                let Some(&Obj::Suspend { m, c, rm, rc }) = self.objs.get(r.0) else {
                    return Err(self.bad_kind(ev));
                };
                let suspend = matches!(ev.kind, EventKind::Suspend(_));
                match sub {
                    0 => self.lock_then(t, m, rm, 1),
                    1 if suspend => {
                        self.instant(t, InstantKind::Suspend, r.0);
                        self.threads[t as usize].sub = 2;
                        self.op_wait(t, c, rc, m, rm, ev)?;
                        Ok(Flow::Leave)
                    }
                    1 => {
                        self.instant(t, InstantKind::Resume, r.0);
                        self.threads[t as usize].sub = 2;
                        self.op_broadcast(t, c, rc)?;
                        Ok(Flow::Same)
                    }
                    _ => {
                        self.op_unlock(t, m, rm, ev)?;
                        Ok(Flow::Next)
                    }
                }
            }
            EventKind::Push(r) | EventKind::Pop(r) => {
                let push = matches!(ev.kind, EventKind::Push(_));
                let Some(&Obj::Queue {
                    m,
                    more,
                    less,
                    rm,
                    rmore,
                    rless,
                    len,
                    cap,
                }) = self.objs.get(r.0)
                else {
                    return Err(self.bad_kind(ev));
                };
                match sub {
                    0 => self.lock_then(t, m, rm, 1),
                    1 if push => {
                        if len >= cap {
                            // while (full) wait(less, mutex)
                            self.op_wait(t, less, rless, m, rm, ev)?;
                            Ok(Flow::Leave)
                        } else {
                            self.counter_add(r.0, 1);
                            self.instant(t, InstantKind::Push, r.0);
                            self.threads[t as usize].sub = 2;
                            self.op_signal(t, more, rmore)?;
                            Ok(Flow::Same)
                        }
                    }
                    1 => {
                        if len == 0 {
                            // while (empty) wait(more, mutex)
                            self.op_wait(t, more, rmore, m, rm, ev)?;
                            Ok(Flow::Leave)
                        } else {
                            self.counter_add(r.0, -1);
                            self.instant(t, InstantKind::Pop, r.0);
                            self.threads[t as usize].sub = 2;
                            self.op_signal(t, less, rless)?;
                            Ok(Flow::Same)
                        }
                    }
                    _ => {
                        self.op_unlock(t, m, rm, ev)?;
                        Ok(Flow::Next)
                    }
                }
            }
            EventKind::Call { endpoint, run } => self.op_call(t, endpoint.0, *run, sub, ev),
            EventKind::Serve(r) => self.op_serve(t, r.0, sub, ev),
        }
    }

    /// Adds `d` to a queue's length or a barrier's waiting count.
    fn counter_add(&mut self, r: usize, d: i64) {
        match self.objs.get_mut(r) {
            Some(Obj::Queue { len, .. }) => *len = (i64::from(*len) + d).max(0) as u32,
            Some(Obj::Barrier { waiting, .. }) => *waiting += d,
            _ => {}
        }
    }

    /// rt-app's `timer`: see the crate docs (jobs and deadline misses).
    fn op_timer(&mut self, t: u32, res: usize, period: Micros, ev: &Event) -> R<Flow> {
        let p = self.draw(period);
        let now = self.now;
        let start = self.threads[t as usize].start_ns;
        let Some(Obj::Timer {
            mode,
            unique,
            state,
        }) = self.objs.get_mut(res)
        else {
            return Err(self.bad_kind(ev));
        };
        let mode = *mode;
        let st: &mut TimerState = if *unique {
            let timers = &mut self.cold[t as usize].timers;
            let pos = match timers.iter().position(|(r, _)| *r == res) {
                Some(pos) => pos,
                None => {
                    timers.push((res, TimerState::default()));
                    timers.len() - 1
                }
            };
            &mut timers[pos].1
        } else {
            state
        };
        if !st.init {
            st.init = true;
            st.next = start;
        }
        st.next = st.next.saturating_add(p);
        let next = st.next;
        let overrun = now >= next;
        if overrun && mode == TimerMode::Relative {
            st.next = now;
        }
        let release = if overrun { st.next } else { next };
        if let Some(rel) = self.threads[t as usize].job_release.take() {
            self.complete_job(t, rel, now > next);
        }
        let deadline = Some(release.saturating_add(p));
        self.threads[t as usize].job_release = Some(release);
        if overrun {
            self.emit(TraceEvent::Release {
                thread: t as usize,
                at_ns: release,
                deadline_ns: deadline,
            });
            Ok(Flow::Next)
        } else {
            self.threads[t as usize].release_on_wake = Some(deadline);
            self.finish(t);
            self.sleep_until(t, next);
            Ok(Flow::Leave)
        }
    }

    fn endpoint_parts(&self, r: usize, ev: &Event) -> R<(MutexId, CondId, usize, usize)> {
        match self.objs.get(r) {
            Some(Obj::Endpoint {
                m, more, rm, rmore, ..
            }) => Ok((*m, *more, *rm, *rmore)),
            _ => Err(self.bad_kind(ev)),
        }
    }

    fn reply_slot(&mut self, r: usize, caller: u32, ev: &Event) -> R<&mut Reply> {
        match self.objs.get_mut(r) {
            Some(Obj::Endpoint { replies, .. }) => replies
                .iter_mut()
                .find(|x| x.caller == caller)
                .ok_or_else(|| stop(at_event(ev, "caller without a reply condvar"))),
            _ => Err(stop(at_event(
                ev,
                "the event's resource has the wrong kind",
            ))),
        }
    }

    /// RPC call: lock; enqueue the request; signal `more`; wait on the
    /// caller's reply condvar until done; unlock.
    fn op_call(&mut self, t: u32, r: usize, run: Micros, sub: u8, ev: &Event) -> R<Flow> {
        let (m, more, rm, rmore) = self.endpoint_parts(r, ev)?;
        match sub {
            0 => {
                let ns = self.draw(run);
                self.threads[t as usize].call_run = ns;
                self.lock_then(t, m, rm, 1)
            }
            1 => {
                let th = &self.threads[t as usize];
                let req = Req {
                    caller: t,
                    run_ns: th.call_run,
                    prio: th.base,
                };
                if let Some(Obj::Endpoint { reqs, .. }) = self.objs.get_mut(r) {
                    let pos = reqs
                        .iter()
                        .position(|q| q.prio < req.prio)
                        .unwrap_or(reqs.len());
                    reqs.insert(pos, req);
                }
                self.instant(t, InstantKind::Call, r);
                self.threads[t as usize].sub = 2;
                self.op_signal(t, more, rmore)?;
                Ok(Flow::Same)
            }
            2 => {
                let slot = self.reply_slot(r, t, ev)?;
                if slot.done {
                    slot.done = false;
                    self.threads[t as usize].sub = 3;
                    Ok(Flow::Same)
                } else {
                    let (c, rc) = (slot.cond, slot.res);
                    self.op_wait(t, c, rc, m, rm, ev)?;
                    Ok(Flow::Leave)
                }
            }
            _ => {
                self.op_unlock(t, m, rm, ev)?;
                Ok(Flow::Next)
            }
        }
    }

    /// RPC serve: lock; wait on `more` while no request; take the most urgent
    /// request; unlock; run it; lock; mark done and signal the caller; unlock.
    fn op_serve(&mut self, t: u32, r: usize, sub: u8, ev: &Event) -> R<Flow> {
        let (m, more, rm, rmore) = self.endpoint_parts(r, ev)?;
        match sub {
            0 => self.lock_then(t, m, rm, 1),
            1 => {
                let req = match self.objs.get_mut(r) {
                    Some(Obj::Endpoint { reqs, .. }) => reqs.pop_front(),
                    _ => None,
                };
                match req {
                    None => {
                        self.op_wait(t, more, rmore, m, rm, ev)?;
                        Ok(Flow::Leave)
                    }
                    Some(q) => {
                        let th = &mut self.threads[t as usize];
                        th.serving = Some((q.caller, q.run_ns));
                        th.sub = 2;
                        Ok(Flow::Same)
                    }
                }
            }
            2 => {
                self.op_unlock(t, m, rm, ev)?;
                self.threads[t as usize].sub = 3;
                Ok(Flow::Same)
            }
            3 => {
                let ns = self.threads[t as usize].serving.map_or(0, |s| s.1);
                Ok(self.start_run(t, ns, Some(4)))
            }
            4 => self.lock_then(t, m, rm, 5),
            5 => {
                let Some((caller, _)) = self.threads[t as usize].serving else {
                    self.threads[t as usize].sub = 6;
                    return Ok(Flow::Same);
                };
                let slot = self.reply_slot(r, caller, ev)?;
                slot.done = true;
                let (c, rc) = (slot.cond, slot.res);
                self.instant(t, InstantKind::Reply, r);
                self.threads[t as usize].sub = 6;
                self.op_signal(t, c, rc)?;
                Ok(Flow::Same)
            }
            _ => {
                self.op_unlock(t, m, rm, ev)?;
                self.threads[t as usize].serving = None;
                Ok(Flow::Next)
            }
        }
    }
}

/// Creates the engine objects behind scenario resources and names them for
/// the trace: a resource's own object keeps its index and name; an internal
/// one (a queue's mutex, an endpoint's reply condvar) is a new resource
/// called `<resource>.<suffix>`.
struct ObjNamer {
    /// Resource names, indexed like `SimInfo::resources`.
    names: Vec<String>,
    /// Resource index of each engine mutex.
    mutex_res: Vec<usize>,
    /// Resource index of each engine condvar.
    cond_res: Vec<usize>,
}

impl ObjNamer {
    fn mutex(
        &mut self,
        engine: &mut Engine,
        r: usize,
        suffix: Option<&str>,
        p: Protocol,
    ) -> (MutexId, usize) {
        let m = engine.add_mutex(p);
        let idx = self.name(r, suffix);
        (m, record(&mut self.mutex_res, m.0, idx))
    }

    fn cond(&mut self, engine: &mut Engine, r: usize, suffix: Option<&str>) -> (CondId, usize) {
        let c = engine.add_cond();
        let idx = self.name(r, suffix);
        (c, record(&mut self.cond_res, c.0, idx))
    }

    /// The resource index for `r`'s object with `suffix`.
    fn name(&mut self, r: usize, suffix: Option<&str>) -> usize {
        match suffix {
            Some(sfx) => {
                let n = format!("{}.{sfx}", self.names[r]);
                self.names.push(n);
                self.names.len() - 1
            }
            None => r,
        }
    }
}

/// Records `idx` as the resource of engine object `slot` in `res_of`.
fn record(res_of: &mut Vec<usize>, slot: u32, idx: usize) -> usize {
    let slot = slot as usize;
    if res_of.len() <= slot {
        res_of.resize(slot + 1, 0);
    }
    res_of[slot] = idx;
    idx
}

/// Where a thread with affinity `cpus` is queued on `n` CPUs.
fn home_for(n: usize, cpus: Option<&[u32]>) -> Home {
    if n <= 1 {
        return Home::Cpu(0);
    }
    let mut mask = vec![false; n];
    match cpus {
        Some(list) if !list.is_empty() => {
            for &c in list {
                if let Some(b) = mask.get_mut(c as usize) {
                    *b = true;
                }
            }
        }
        _ => mask.iter_mut().for_each(|b| *b = true),
    }
    let mut set = mask.iter().enumerate().filter(|(_, &b)| b).map(|(c, _)| c);
    match (set.next(), set.next()) {
        (Some(c), None) => Home::Cpu(c as u32),
        _ => Home::Global(mask),
    }
}

/// The event's resources exist and are of the kind it needs.
fn check_event(sc: &Scenario, ev: &Event) -> Result<(), SimError> {
    let kind = |r: usize| sc.resources.get(r).map(|x| &x.kind);
    let want = |r: usize, ok: fn(&ResourceKind) -> bool, word: &str| -> Result<(), SimError> {
        match kind(r) {
            Some(k) if ok(k) => Ok(()),
            Some(k) => Err(at_event(
                ev,
                format!(
                    "expected a {word}, found {} {}",
                    k.word(),
                    sc.resources[r].name
                ),
            )),
            None => Err(at_event(ev, format!("unknown resource #{r}"))),
        }
    };
    let mutex = |k: &ResourceKind| matches!(k, ResourceKind::Mutex { .. });
    let cond = |k: &ResourceKind| matches!(k, ResourceKind::Cond { .. });
    match &ev.kind {
        EventKind::Run(_) | EventKind::Runtime(_) | EventKind::Sleep(_) | EventKind::Yield => {
            Ok(())
        }
        EventKind::Timer { timer, .. } => want(
            timer.0,
            |k| matches!(k, ResourceKind::Timer { .. }),
            "timer",
        ),
        EventKind::Lock(r) | EventKind::Unlock(r) => want(r.0, mutex, "mutex"),
        EventKind::Wait { cond: c, mutex: m } => {
            want(c.0, cond, "cond")?;
            want(m.0, mutex, "mutex")
        }
        EventKind::Signal(r) | EventKind::Broadcast(r) => want(r.0, cond, "cond"),
        EventKind::Barrier(r) => want(
            r.0,
            |k| matches!(k, ResourceKind::Barrier { .. }),
            "barrier",
        ),
        EventKind::Suspend(r) | EventKind::Resume(r) => want(
            r.0,
            |k| matches!(k, ResourceKind::Suspend { .. }),
            "suspend point",
        ),
        EventKind::Push(r) | EventKind::Pop(r) => {
            want(r.0, |k| matches!(k, ResourceKind::Queue { .. }), "queue")
        }
        EventKind::Call { endpoint: r, .. } | EventKind::Serve(r) => want(
            r.0,
            |k| matches!(k, ResourceKind::Endpoint { .. }),
            "endpoint",
        ),
    }
}
