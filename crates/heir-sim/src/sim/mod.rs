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
    beyond_time_limit_s, beyond_time_limit_us, seconds_to_us, MAX_TIME_NS, MAX_TIME_S, MAX_TIME_US,
};
use heir_scenario::{
    Event, EventKind, Global, Micros, Policy, ResourceKind, Scenario, Sched, Task, TimerMode,
};

use crate::queue::{EvKind, EventQueue, Rank, RunQueue};
use crate::rng::SplitMix64;
use crate::{SimConfig, SimError};
use heir_report::ResponseStats;
use heir_report::{DeadlockReport, Report, TaskReport};
use heir_report::{InstantKind, Observer, ThreadInfo, TraceEvent, TraceInfo};

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
    /// Busy-waiting for a `bwi` mutex whose owner runs on another CPU
    /// (M-BWI); ends when the mutex is handed over or the owner stops
    /// running.
    Spin,
}

/// Where a thread is queued when ready.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Home {
    /// Pinned to one CPU: that CPU's run queue.
    Cpu(u32),
    /// Several allowed CPUs: the global run queue.
    Global(CpuSet),
}

/// The CPUs a thread allowed on several may run on: in increasing order
/// (what the balancing passes walk, so that their cost follows the CPUs a
/// thread may use, never the idle ones it may not) and as a bitmap (what
/// a CPU choosing a thread tests).
#[derive(Clone, Debug)]
struct CpuSet {
    /// The allowed CPUs, increasing.
    list: Vec<u32>,
    /// Bit `c % 64` of word `c / 64`: CPU `c` is allowed.
    bits: Vec<u64>,
    /// Every CPU of the machine is allowed.
    all: bool,
}

impl CpuSet {
    fn contains(&self, c: u32) -> bool {
        self.bits
            .get((c / 64) as usize)
            .is_some_and(|w| (w >> (c % 64)) & 1 == 1)
    }
}

/// Two sets of one machine's CPUs are equal when they list the same CPUs.
impl PartialEq for CpuSet {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}

impl Eq for CpuSet {}

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
#[repr(C, align(64))]
struct Thread<'s> {
    // Hot: what stepping, a job and a scheduling decision read, first
    // (`repr(C)` keeps this order), so that they share few cache lines.
    status: Status,
    act: Act,
    step: Step,
    pass_start: bool,
    queued: bool,
    has_timer: bool,
    /// Timer-less threads: the current pass's job was already closed when
    /// its last event completed (the thread was not on a CPU then).
    pass_closed: bool,
    /// The current phase changes `sched` or `cpus` at each pass.
    phase_hook: bool,
    /// Donation model: runs only on donated time (`"passive": true`).
    passive: bool,
    /// The current phase's events (`sc.tasks[task].phases[phase].events`),
    /// cached so that stepping reads neither the task nor the phase.
    evs: &'s [Event],
    ev: usize,
    ploop: u64,
    /// The current phase's `loops`.
    ploops: u64,
    /// Where the current phase's events start in `Simulator::ops`, and
    /// where the task's first phase's do.
    op_base: u32,
    op_first: u32,
    /// The task's number of phases and `loops` (cached: a pass's end
    /// reads neither the task nor, with one phase, the phase).
    nphases: usize,
    tloops: Option<u64>,
    phase: usize,
    tloop: u64,
    cpu: u32,
    run_gen: u32,
    wall_gen: u32,
    stamp: i64,
    run_start: u64,
    job_release: Option<u64>,
    /// A timer sleep: emit the job's `Release` (with this deadline) on wake.
    release_on_wake: Option<Option<u64>>,
    start_ns: u64,
    base: Urgency,
    eff: Effective,
    /// Where it stands in the run queues (its level, and in the deadline
    /// class the deadline of the reservation it runs on).
    rank: Rank,
    policy: Policy,
    task: usize,
    eng: TaskId,
    home: Home,
    // Colder: deadline reservations, synchronisation, RPC, gangs.
    /// `SCHED_DEADLINE` state: its reservation, Linux boost, M-BWI spinning.
    dl: dl::Dl,
    // Time slices (`SCHED_RR`, `SCHED_OTHER` only).
    slice_armed: bool,
    slice_gen: u32,
    slice_left: u64,
    slice_start: u64,
    first_period_ns: Option<u64>,
    affinity: Option<Vec<u32>>,
    /// While waiting on a condition variable: it, and the mutex to
    /// re-acquire when woken.
    wait: Option<(SimCond, SimMutex)>,
    /// A condvar this thread helps but now waits on: it was taken out of
    /// the helpers for the wait and is put back when woken.
    rehelp: Option<CondId>,
    /// Serve: the request being served (caller thread, work ns).
    serving: Option<(u32, u64)>,
    /// Call: the work drawn for the request.
    call_run: u64,
    /// Donation model: the thread's call in progress.
    call: Option<rpc::Call>,
    /// Donation model: generation of the call (stale timeouts).
    call_gen: u32,
    /// Donation model: the request this thread serves.
    dserve: Option<rpc::Serving>,
    /// Donation model: the help object of its own endpoint it left while
    /// it calls that endpoint (a server does not help itself).
    unhelped: Option<heir_core::ObjId>,
    /// Donation model: its request object per endpoint it calls.
    reqs: Vec<(usize, heir_core::ObjId)>,
    /// The gang (index into `gangs`) the thread is a member of.
    gang: Option<u32>,
    /// Its membership bits (the control word's lower 28 bits).
    gang_bits: u32,
    /// The gang it waits for in `gang_wait`.
    gang_waiting: Option<u32>,
    /// Generation of its `gang_wait` (stale timeouts).
    gang_gen: u32,
}

/// The cold per-thread state. What a job and a dispatch touch comes first
/// (`repr(C)`: statistics, counts and last CPU within two cache lines).
/// The thread's name is `info.threads[t].name` (kept once).
#[repr(C)]
struct Cold {
    stats: ResponseStats,
    jobs: u64,
    misses: u64,
    /// The CPU it last ran on (for a positive time), and how many times
    /// it ran on another one than the last.
    last_cpu: Option<u32>,
    migrations: u64,
    /// Deadline reservations: times throttled, times replenished.
    throttles: u64,
    replenishments: u64,
    /// A timer thread's open job: its deadline (the next release), for
    /// the miss of a job not completed when the run ends.
    job_deadline: Option<u64>,
    /// Calls that timed out (donation model).
    aborted: u64,
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
    cond: SimCond,
    done: bool,
}

/// An engine mutex and the resource it is shown as in the trace (a
/// scenario mutex, or one heir adds inside a queue, barrier, suspend point
/// or endpoint: `q.mutex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SimMutex {
    id: MutexId,
    res: usize,
}

/// An engine condition variable and the resource it is shown as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SimCond {
    id: CondId,
    res: usize,
}

/// Where a thread is inside an event made of several engine operations
/// (queues, barriers, suspend points, RPC): its micro-step. Every event
/// starts at [`Step::Start`]; single-operation events never leave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The event starts: lock the resource's internal mutex (RPC call:
    /// draw the request's work first).
    Start,
    /// The internal mutex is held: act — push or pop (waiting while full or
    /// empty), arrive at the barrier, suspend or resume, queue the call,
    /// take a request (waiting while there is none).
    Inside,
    /// Barrier: woken by the last arrival; count oneself back in.
    Rejoin,
    /// Call: the request is queued; wait for its reply unless it is done.
    AwaitReply,
    /// Serve: a request is taken; release the endpoint's mutex.
    Release,
    /// Serve: run the request's work (donation model: the handler's next
    /// event).
    Work,
    /// Serve: the work is done; lock the endpoint's mutex again.
    Relock,
    /// Serve: mark the reply done and signal the caller.
    Reply,
    /// Serve (donation model): a nested call of the handler is under way.
    Nested,
    /// Done: release the internal mutex and end the event.
    Leave,
}

/// Runtime state of a timer resource (`ResState::Timer`).
struct TimerSlot {
    mode: TimerMode,
    unique: bool,
    /// Its state when not `unique` (else each thread's, in [`Cold`]).
    state: TimerState,
}

/// Runtime state of a scenario resource.
enum ResState {
    Mutex(SimMutex),
    Cond(SimCond),
    Queue {
        mutex: SimMutex,
        /// Signalled when an item is pushed (pushers help it).
        more: SimCond,
        /// Signalled when an item is popped (poppers help it).
        less: SimCond,
        len: u32,
        cap: u32,
    },
    Barrier {
        mutex: SimMutex,
        cond: SimCond,
        /// Arrivals still missing before the barrier opens, minus one.
        waiting: i64,
    },
    /// A timer: its index in `Simulator::timers` (a dense array, read
    /// once per job).
    Timer(u32),
    Suspend {
        mutex: SimMutex,
        cond: SimCond,
    },
    /// A gang (GPM): its index in `Simulator::gangs`.
    Gang(u32),
    Endpoint {
        mutex: SimMutex,
        /// Signalled when a request is queued (servers wait on it).
        more: SimCond,
        reqs: VecDeque<Req>,
        replies: Vec<Reply>,
        /// The donation model's objects (`global.ipc: "donation"`).
        don: Option<rpc::Don>,
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
    /// Bytes allocated for histogram buckets (at most 1 KiB per thread),
    /// summed over threads.
    pub histogram_bytes: usize,
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
    threads: Vec<Thread<'s>>,
    cold: Vec<Cold>,
    res_state: Vec<ResState>,
    /// Every task's program compiled into one flat array: the events'
    /// kinds (operands only, 40 bytes each), phase after phase, task
    /// after task; a task's threads share its range. Stepping reads an
    /// event's kind here, contiguously, and the scenario's [`Event`] only
    /// for an error's position.
    ops: Vec<EventKind>,
    /// The timers' state, densely (`ResState::Timer` indexes it).
    timers: Vec<TimerSlot>,
    /// Resource index → its index in `timers` (`u32::MAX`: not a timer),
    /// so that a job reads 4 bytes here rather than the resource's
    /// `ResState`.
    timer_of: Vec<u32>,
    info: TraceInfo,
    /// `ObjId.0` → `info.resources` index.
    obj_res: Vec<usize>,
    /// `TaskId.0` → thread index.
    task_thread: Vec<u32>,
    cpus: Vec<Cpu>,
    local: Vec<RunQueue>,
    global: RunQueue,
    evq: EventQueue,
    dirty: VecDeque<u32>,
    /// CPUs a balancing pass has already given a thread (`claimed[c]`),
    /// and the list of them, so that a pass clears only those.
    claimed: Vec<bool>,
    claimed_list: Vec<u32>,
    /// CPUs some thread allowed on several may use (`reach[c]`; it only
    /// grows), and how many: a balancing pass stops once its candidates
    /// that found no CPU cover them all (`covered`, `covered_list`).
    reach: Vec<bool>,
    reach_len: usize,
    covered: Vec<bool>,
    covered_list: Vec<u32>,
    /// CPUs the global balancing pass looked at ([`Simulator::cpus_visited`]).
    cpu_visits: u64,
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
    /// The scenario has `SCHED_DEADLINE` threads: ranks follow reservations.
    has_dl: bool,
    /// Some object lends reservations (M-BWI).
    has_bwi: bool,
    /// Deadline threads and some object that passes a deadline waiter's
    /// time on (reservations or Linux's parameters): who lends to whom can
    /// change ranks without changing any urgency.
    dl_lends: bool,
    /// How each engine object (by `ObjId.0`) lends a deadline waiter's time.
    obj_lends: Vec<dl::Lends>,
    /// Counter ordering mutex waits (FIFO hand-off of `bwi` mutexes).
    block_seq: u64,
    /// Engine changes were applied: deadline ranks are to be re-evaluated.
    dl_dirty: bool,
    /// `global.bwi_affinity`: lent reservations run on their own task's CPUs.
    bwi_affinity: bool,
    /// Some threads have had different affinities (`sim::aff`).
    mixed_homes: bool,
    /// Ready spread threads (affinity inheritance, `sim::aff`), outside
    /// the run queues.
    spread: Vec<u32>,
    /// Some call has a timeout: the report counts aborted calls.
    count_aborts: bool,
    /// Donation model: every call spec with a handler (top-level calls
    /// recorded in `scenario.rpc.calls` and their nested calls), an arena.
    handlers: Vec<rpc::Handler<'s>>,
    /// The top-level calls' handlers, by their event's JSON path.
    handler_at: std::collections::HashMap<&'s str, u32>,
    /// The gangs (GPM), in resource order.
    gangs: Vec<gang::Gang>,
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

fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

mod aff;
mod build;
mod dl;
mod events;
mod gang;
mod life;
mod ops;
mod rpc;
mod sched;

pub use build::cpu_count;

impl<'s, 'o> Simulator<'s, 'o> {
    /// What the observer is told at the start (CPUs, threads, resources).
    pub fn info(&self) -> &TraceInfo {
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
                Stop::Deadlock(d) => {
                    // The step stopped before its deadline ranks were
                    // brought up to date: do it, for a consistent state
                    // to inspect (no time passes).
                    if self.dl_dirty {
                        self.dl_refresh();
                    }
                    Some(d)
                }
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
                .zip(0..self.threads.len() as u32)
                .zip(&self.info.threads)
                .map(|((c, t), i)| {
                    let th = &self.threads[t as usize];
                    let unfinished = u64::from(Self::unfinished_miss(c, th, end_ns));
                    TaskReport {
                        name: i.name.clone(),
                        jobs: c.jobs,
                        deadline_misses: c.misses + unfinished,
                        unfinished_misses: unfinished,
                        response_us: c.stats.summary(),
                        server: self.own(t).map(|_| heir_report::ServerStats {
                            throttled: c.throttles,
                            replenished: c.replenishments,
                        }),
                        migrations: Some(c.migrations),
                        aborted_calls: self.count_aborts.then_some(c.aborted),
                    }
                })
                .collect(),
            deadlock,
            gangs: self.gang_reports(),
            events: self.events,
        })
    }

    /// A job of a timer thread still open when the run ends at `end_ns`
    /// whose deadline has passed: a miss of a job that did not complete.
    fn unfinished_miss(c: &Cold, th: &Thread, end_ns: u64) -> bool {
        th.has_timer
            && th.status != Status::Exited
            && th.job_release.is_some()
            && c.job_deadline.is_some_and(|d| d <= end_ns)
    }

    /// Per-thread response statistics (thread name, stats), scenario order.
    pub fn thread_stats(&self) -> impl Iterator<Item = (&str, &ResponseStats)> + '_ {
        self.cold
            .iter()
            .zip(&self.info.threads)
            .map(|(c, i)| (i.name.as_str(), &c.stats))
    }

    /// CPUs the balancing pass of threads allowed on several CPUs looked
    /// at, summed over the run: its work per CPU, deterministic (a measure
    /// for tests, not a time). CPUs no thread may use add nothing.
    pub fn cpus_visited(&self) -> u64 {
        self.cpu_visits
    }

    /// What is allocated that could grow with simulated time.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            pending_events: self.evq.len(),
            histogram_buckets: self.cold.iter().map(|c| c.stats.bucket_count()).sum(),
            histogram_bytes: self.cold.iter().map(|c| c.stats.heap_bytes()).sum(),
            queued_requests: self
                .res_state
                .iter()
                .map(|o| match o {
                    ResState::Endpoint { reqs, .. } => reqs.len(),
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
        for (th, info) in self.threads.iter().zip(&self.info.threads) {
            let name = &info.name;
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
            let t = self.index_of(th);
            if th.queued && Some(th.rank) != self.rank_for(t) {
                return Err(format!(
                    "{name}: stale run-queue rank {:?}, should be {:?}",
                    th.rank,
                    self.rank_for(t)
                ));
            }
            if (th.status == Status::Ready) != (th.queued || th.dl.parked) {
                return Err(format!(
                    "{name}: status {:?} but queued = {}",
                    th.status, th.queued
                ));
            }
            if th.dl.parked && (th.status != Status::Ready || th.queued) {
                return Err(format!(
                    "{name}: parked (no server to run on) but {:?}, queued = {}",
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
        self.check_donation()?;
        self.check_gangs()?;
        let in_queues = self.global.len()
            + self.spread.len()
            + self.local.iter().map(RunQueue::len).sum::<usize>();
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
            if self.events & 0xFFFF == 0 && self.obs.cancelled() {
                break;
            }
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
                                self.wake(t)?;
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
                EvKind::Budget => self.budget_event(t, ev.gen)?,
                EvKind::Replenish => self.replenish_event(t, ev.gen)?,
                EvKind::Timeout => self.timeout_event(t, ev.gen)?,
                EvKind::GangTimeout => self.gang_timeout(t, ev.gen)?,
            }
            if self.has_dl {
                self.dl_refresh();
            }
            self.schedule()?;
            while self.has_bwi && self.settle_spinners()? {
                self.schedule()?;
            }
            // Debug builds validate the simulator's and the engine's
            // invariants after every event (as Zircon's wait queues do).
            #[cfg(debug_assertions)]
            if let Err(e) = self.check_invariants() {
                panic!("simulator invariant broken at {} ns: {e}", self.now);
            }
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
        self.donor_thread(th.eng, &th.eff)
    }

    /// The thread shown as the donor of engine task `task` at `eff`: the
    /// root of its boosting chain, or — lifted by a running gang's floor —
    /// the member whose base is the gang priority; `None` when it runs at
    /// its own base or ceiling.
    fn donor_thread(&self, task: TaskId, eff: &Effective) -> Option<usize> {
        if let heir_core::Source::Floor { object, .. } = eff.source {
            if let Some(d) = self.gang_donor(object) {
                return (self.thread_of(task) != Some(d)).then_some(d as usize);
            }
        }
        if eff.donor() == task {
            None
        } else {
            self.thread_of(eff.donor()).map(|d| d as usize)
        }
    }

    fn draw(&mut self, m: Micros) -> u64 {
        match m {
            Micros::Fixed(v) => us_to_ns(v),
            Micros::Uniform { min, max } => us_to_ns(self.rng.uniform(min, max)),
        }
    }

    fn internal(&self, t: u32, e: EngineError) -> Box<Stop> {
        let th = &self.threads[t as usize];
        Box::new(Stop::Error(at_task(
            &self.sc.tasks[th.task],
            format!(
                "thread {}: the engine refused an operation: {e}",
                self.info.threads[t as usize].name
            ),
        )))
    }

    /// A program counter outside the compiled program (cannot happen: the
    /// flat program holds every phase's events).
    fn internal_pc(&self, t: u32) -> Box<Stop> {
        let th = &self.threads[t as usize];
        Box::new(Stop::Error(at_task(
            &self.sc.tasks[th.task],
            format!(
                "thread {}: internal error: event {} of phase {} is not in the compiled program",
                self.info.threads[t as usize].name, th.ev, th.phase
            ),
        )))
    }

    fn deadlock(&self, cycle: &[Node]) -> Box<Stop> {
        let name = |n: &Node| -> String {
            match n {
                Node::Task(id) => self
                    .thread_of(*id)
                    .map(|t| self.info.threads[t as usize].name.clone())
                    .unwrap_or_else(|| format!("task#{}", id.0)),
                Node::Object(o) => self
                    .obj_res
                    .get(o.0 as usize)
                    .and_then(|&r| self.info.resources.get(r))
                    .cloned()
                    .unwrap_or_else(|| format!("object#{}", o.0)),
            }
        };
        Box::new(Stop::Deadlock(DeadlockReport {
            kind: heir_report::DeadlockKind::Deadlock,
            at_us: self.now as f64 / 1000.0,
            cycle: cycle.iter().map(name).collect(),
        }))
    }
}
