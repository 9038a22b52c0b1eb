//! Fixed-priority response-time analysis with blocking, for every protocol
//! heir implements, plus the `SCHED_DEADLINE` reservations that share a CPU.
//!
//! For a fixed-priority task τ_i on CPU c (all sets below are restricted to
//! c; `hp(i)` = other tasks with `p_h ≥ p_i`, `lp(i)` = tasks with
//! `p_L < p_i`):
//!
//! 1. **Inversion check.** For every wait of τ_i on work done *below* its
//!    priority — a plain mutex (or a ceiling mutex whose ceiling is below
//!    `p_i`) held by a lower task at level ℓ, or, without PI-CV, a server of
//!    priority ℓ < `p_i` — if any other task or server on c has a priority in
//!    `[ℓ, p_i)`, it can run while τ_i waits, as long as it likes: the bound is
//!    *unbounded* (the medium task is named).
//! 2. **Suspension check.** If a task of `hp(i)` can wait on work done below
//!    `p_i` (same waits as above), its work can be deferred and arrive in
//!    bursts that `⌈R/T⌉E` does not cover: τ_i is reported unbounded too.
//!    Under PI-CV, priority inheritance and proper ceilings no such wait
//!    exists, because the work τ_h waits for always runs at `≥ p_h`.
//! 3. **Blocking** `B_i` (see [`Analyzer`] for the derivation): every lower
//!    task is in at most one "state" when τ_i is released — inside one
//!    critical section, waiting for one mutex, or waiting for one reply —
//!    and cannot start a new one until τ_i completes. Each lower task
//!    contributes at most once; each low server (Lemma 2 of the PI-CV paper) and
//!    the ceiling protocol as a whole contribute at most once. That is a
//!    maximum-weight bipartite matching ([`crate::matching`]). PI mutexes
//!    have no per-mutex limit: heir's mutexes hand the lock to the top
//!    waiter on unlock, so a lower task already waiting for R when τ_i is
//!    released can receive R before τ_i asks for it (R blocks twice).
//! 4. **Response time**: the level-i busy window (Lehoczky) with
//!    `w_q = B_i + (q+1)E_i + Σ_{h∈hp(i)} ⌈w_q/T_h⌉ E_h
//!           + Σ_{d∈DL(c)} (⌈w_q/P_d⌉ + 1) Q_d`,
//!    `R_i = max_q (w_q − q T_i)` over the jobs `q` of the busy period. With
//!    `R_i ≤ T_i` only `q = 0` is needed and this is Eq. 1 of the PI-CV paper with
//!    `I_i = B_i`.
//!
//! `SCHED_DEADLINE` tasks are analysed per CPU (or globally) by
//! [`crate::dl`]; fixed-priority tasks see every reservation of their CPU
//! as `(⌈w/P⌉ + 1)·Q` of interference.

mod sweep;

use crate::edf;
use crate::matching::Matcher;
use crate::model::{Class, MutexProtocol, Nanos, Task, TaskSet};

/// A wait of a task on work done on its behalf by someone else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// An RPC to `server` (index into [`TaskSet::servers`]).
    Call { server: usize },
    /// `mutex` held by task `holder`.
    Mutex { mutex: usize, holder: usize },
}

/// A task or a server of the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entity {
    Task(usize),
    Server(usize),
}

/// Why a task has no bound.
#[derive(Clone, Debug, PartialEq)]
pub enum Unbounded {
    /// While the task waits (`wait`), the work it waits for runs below its
    /// priority and `medium` can preempt it: unbounded priority inversion.
    Inversion { wait: Wait, medium: Entity },
    /// Higher-priority task `higher` can be suspended on `wait`, whose work
    /// runs below this task's priority: its work can arrive in bursts.
    HigherSuspends { higher: usize, wait: Wait },
    /// A lower task that holds `mutex` (no inheritance) nests critical
    /// sections: chained blocking without inheritance is not bounded here.
    NestedWithoutInheritance { mutex: usize, holder: usize },
    /// The work at this priority level and above exceeds the CPU.
    Overload { utilisation: f64 },
    /// The work at this priority level and above fills the CPU exactly
    /// (utilisation 1) and something more arrives in the busy period —
    /// `blocking` (ns), or a reservation's carried-in budget
    /// (`reservations`): the busy period never closes.
    FullLoad { blocking: Nanos, reservations: bool },
    /// The level busy period did not close within the iteration limit
    /// ([`MAX_ITERATIONS`] steps, every job of the busy period counted).
    BusyPeriod,
    /// `SCHED_DEADLINE`: the CPU's reservations load it to `load` = Σ Q/S > 1.
    NotAdmitted { load: f64 },
    /// `SCHED_DEADLINE`: jobs arrive faster than the reservation period.
    ReservationPeriod,
    /// `SCHED_DEADLINE`, global: the reservations fail the global EDF test
    /// (`load` against `limit` on `cpus` CPUs).
    NotAdmittedGlobal { load: f64, limit: f64, cpus: u32 },
    /// `SCHED_DEADLINE`: a blocking chain of the task reaches `mutex`, which
    /// has no bandwidth inheritance.
    NotBwi { mutex: usize },
    /// `SCHED_DEADLINE` under M-BWI: the task can wait for task `other`,
    /// which has no guarantee itself.
    Interferer { other: usize },
    /// `SCHED_DEADLINE` under M-BWI: a job needs `needed` of budget (C + B)
    /// but the budget is `runtime`, and several reservation periods are not
    /// bounded here (globally with interferers, or when the interference
    /// can take every later budget).
    OverBudget {
        needed: Nanos,
        runtime: Nanos,
        global: bool,
    },
    /// `SCHED_DEADLINE`: a job can take `bound`, longer than the job period,
    /// so jobs queue up.
    JobsOverlap { bound: Nanos },
    /// `SCHED_DEADLINE`, one CPU: the reservations' demand due within a window
    /// of `at` ns is `demand` ns (processor-demand criterion).
    DemandExceeded { at: Nanos, demand: Nanos },
    /// `SCHED_DEADLINE` under deadline inheritance: task `holder` can block
    /// this one on `mutex`, and its job (E > Q) can exhaust its budget inside
    /// the section.
    ThrottledHolder { holder: usize, mutex: usize },
}

impl Unbounded {
    /// A sentence for people, naming tasks, servers and mutexes.
    pub fn describe(&self, set: &TaskSet) -> String {
        let ent = |e: &Entity| match *e {
            Entity::Task(t) => format!("task {}", set.tasks[t].name),
            Entity::Server(s) => format!("server {}", set.servers[s].name),
        };
        let wait = |w: &Wait| match *w {
            Wait::Call { server } => format!(
                "a reply from server {} (priority {}, {})",
                set.servers[server].name,
                set.servers[server].priority,
                if set.pi_cv {
                    "not lent to: the cond it replies on does not name it a helper"
                } else {
                    "no PI-CV"
                }
            ),
            Wait::Mutex { mutex, holder } => format!(
                "mutex {} held by {} without inheritance",
                set.mutexes[mutex].name, set.tasks[holder].name
            ),
        };
        match self {
            Unbounded::Inversion { wait: w, medium } => format!(
                "unbounded priority inversion: while it waits for {}, {} can run for as long as it likes",
                wait(w),
                ent(medium)
            ),
            Unbounded::HigherSuspends { higher, wait: w } => format!(
                "higher-priority task {} can be suspended waiting for {}, below this task's priority: its work can be deferred without bound",
                set.tasks[*higher].name,
                wait(w)
            ),
            Unbounded::NestedWithoutInheritance { mutex, holder } => format!(
                "task {} nests critical sections while holding {}, which has no inheritance: chained blocking is not bounded",
                set.tasks[*holder].name, set.mutexes[*mutex].name
            ),
            Unbounded::Overload { utilisation } => format!(
                "the load at this priority and above is {utilisation:.3} > 1: the busy period never ends"
            ),
            Unbounded::FullLoad { blocking, reservations } => format!(
                "the load at this priority and above is exactly 1 and {} comes on top: the busy period never closes",
                if *reservations {
                    "a SCHED_DEADLINE reservation's carried-in budget".to_string()
                } else {
                    format!("{} µs of blocking", crate::model::fmt_us(*blocking))
                }
            ),
            Unbounded::BusyPeriod => format!(
                "the busy period did not close within the analysis limit ({MAX_ITERATIONS} fixed-point steps)"
            ),
            Unbounded::NotAdmitted { load } => format!(
                "SCHED_DEADLINE admission fails on this CPU: the servers' budgets sum to {load:.3} > 1 per chunk separation (Σ Q/S; S = P, or D for a server whose budget can be renewed or cut)"
            ),
            Unbounded::ReservationPeriod => {
                "SCHED_DEADLINE: jobs arrive faster than the reservation period".to_string()
            }
            Unbounded::NotAdmittedGlobal { load, limit, cpus } => format!(
                "SCHED_DEADLINE admission fails on the {cpus} CPUs (global EDF, GFB: load {load:.3} > {limit:.3})"
            ),
            Unbounded::NotBwi { mutex } => format!(
                "a blocking chain of this task reaches mutex {} (protocol {}), which has no bandwidth inheritance: its owner runs on its own budget and can be throttled while holding it (the M-BWI paper's §3.4, Fig. 1); not bounded here (use protocol \"bwi\")",
                set.mutexes[*mutex].name,
                crate::model::protocol_name(set.mutexes[*mutex].protocol)
            ),
            Unbounded::Interferer { other } => format!(
                "it can wait for task {}, which has no guarantee itself: that task can then run on this one's budget beyond the bound (the M-BWI paper's §3.5)",
                set.tasks[*other].name
            ),
            Unbounded::OverBudget { needed, runtime, global } => format!(
                "a job needs C + B = {} µs of budget but Q = {} µs{}",
                crate::model::fmt_us(*needed),
                crate::model::fmt_us(*runtime),
                if *global {
                    "; a job spanning several server periods with interferers is analysed on one CPU only"
                } else {
                    ", and the interference can take every later budget"
                }
            ),
            Unbounded::JobsOverlap { bound } => format!(
                "a job can take {} µs, longer than its period: jobs queue up, not analysed",
                crate::model::fmt_us(*bound)
            ),
            Unbounded::DemandExceeded { at, demand } => format!(
                "SCHED_DEADLINE admission fails on this CPU: the reservations can demand {} µs due within a window of {} µs (EDF processor-demand criterion)",
                crate::model::fmt_us(*demand),
                crate::model::fmt_us(*at)
            ),
            Unbounded::ThrottledHolder { holder, mutex } => format!(
                "task {} holds {} (deadline inheritance), which other reservations of this CPU use, and its budget can run out inside the section (E > Q, D < P: the revised wake-up rule cuts a woken waiter's budget, or T < (waits + 1)·P: a job can start on what a renewed budget left): a boosted deadline owner is then replenished with its waiter's budget, charged to nobody (docs/DEADLINE.md §3.2), so no reservation of this CPU keeps its guarantee; use protocol \"bwi\"",
                set.tasks[*holder].name,
                set.mutexes[*mutex].name
            ),
        }
    }
}

/// The analysis of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskResult {
    /// Worst-case response time bound, `None` when unbounded.
    pub wcrt: Option<Nanos>,
    /// Blocking term `B_i` (`I_i` of the PI-CV paper for RPC clients), `None` when
    /// unbounded. For `SCHED_DEADLINE` tasks, the `B_i` of the admission test.
    pub blocking: Option<Nanos>,
    /// `wcrt ≤ deadline`.
    pub schedulable: bool,
    /// Why there is no bound (or, for reservations, no admission).
    pub unbounded: Option<Unbounded>,
}

impl TaskResult {
    pub(crate) fn bounded(wcrt: Nanos, blocking: Nanos, deadline: Nanos) -> TaskResult {
        TaskResult {
            wcrt: Some(wcrt),
            blocking: Some(blocking),
            schedulable: wcrt <= deadline,
            unbounded: None,
        }
    }
    pub(crate) fn unbounded(why: Unbounded, blocking: Option<Nanos>) -> TaskResult {
        TaskResult {
            wcrt: None,
            blocking,
            schedulable: false,
            unbounded: Some(why),
        }
    }
}

/// Fixed-point steps allowed per task before giving up: every step of the
/// inner iteration and every further job `q` of the busy period count.
pub const MAX_ITERATIONS: u32 = 1_000_000;

#[derive(Clone, Copy, Debug)]
enum Row {
    /// All ceiling mutexes with a ceiling at or above `p_i`, together.
    Icpp,
    /// A server below `p_i` that τ_i or a higher task calls.
    Server(usize),
}

/// The analyser, with buffers reused across task sets (a sweep analyses
/// millions of sets; once warm, analysing one allocates only its result).
///
/// # The blocking term
///
/// For a fixed-priority task τ_i, let `f_L` be what lower task `L` can
/// charge without a shared limit: its longest request to a server whose base
/// priority is `≥ p_i` (served there whoever waits), and its longest
/// critical section on a mutex charged per lower task — inheritance with a
/// transitive ceiling `≥ p_i` (direct and push-through blocking), or a mutex
/// τ_i uses whose owner runs below `p_i` (no protocol, or a ceiling below
/// `p_i`; only reached when the inversion check found no medium task).
/// Under hand-off (the lock goes to the top waiter on unlock, as with
/// `FUTEX_UNLOCK_PI`), a mutex can block τ_i once per lower task waiting
/// for it, so Sha, Rajkumar and Lehoczky's "once per semaphore" does not
/// apply. Rows are what blocks "at most once": one row for all ceiling
/// mutexes with ceiling `≥ p_i` (under the immediate ceiling protocol only
/// one lower critical section can be in progress at level `≥ p_i`), and
/// each server below `p_i` that τ_i or a higher task calls (the PI-CV paper's
/// `Q_i ∪ P_i`, Lemma 2: each server serves at most one lower request while
/// τ_i is pending). The weight of `(row, L)` is L's longest critical section
/// on the row's mutexes, or its longest call to the row's server. Then
///
/// `B_i = Σ_L f_L + maxmatch(row, L: max(0, w(row, L) − f_L))`,
///
/// i.e. each lower task picks at most one item and each row is used at most
/// once. A lower task with nested critical sections is charged, as its
/// `f_L`, the longest outermost section that contains a relevant mutex (and
/// its longest call to a row's server), without any shared limit.
#[derive(Clone, Debug, Default)]
pub struct Analyzer {
    matcher: Matcher,
    n: usize,
    m: usize,
    s: usize,
    maxcs: Vec<Nanos>,
    uses: Vec<bool>,
    nested: Vec<bool>,
    callmax: Vec<Nanos>,
    calls_to: Vec<bool>,
    ceiling: Vec<i32>,
    edges: Vec<(usize, usize)>,
    waits: Vec<(usize, i32, Wait)>,
    lambda: Vec<(i32, Option<Wait>)>,
    /// Per task: priority (`i32::MIN` for reservations) and CPU.
    prio: Vec<i32>,
    cpu: Vec<u32>,
    fixed: Vec<bool>,
    /// Per task: its waits are `waits[wait_range[t]]`.
    wait_range: Vec<(usize, usize)>,
    /// Per server: its two highest-priority fixed-priority callers
    /// `(priority, task)`, for `P_i`.
    top_callers: Vec<[(i32, usize); 2]>,
    /// Scratch per analysed task: mutexes charged per lower task, mutexes
    /// of the ceiling row, any relevant mutex, servers at or above `p_i`.
    rel_task: Vec<usize>,
    rel_icpp: Vec<usize>,
    rel_any: Vec<bool>,
    high: Vec<usize>,
    lowers: Vec<usize>,
    f: Vec<Nanos>,
    rows: Vec<Row>,
    weights: Vec<Nanos>,
    hp: Vec<(Nanos, Nanos)>,
    dl: Vec<(Nanos, Nanos)>,
    marks: Vec<bool>,
    /// The `SCHED_DEADLINE` groups' admissions of the last analysed set.
    admissions: Vec<crate::dl::GroupAdmission>,
    /// From how many fixed-priority tasks on a CPU the level sweep is used
    /// (`None`: [`SWEEP_FROM`]).
    sweep_from: Option<usize>,
    sw: sweep::Sweep,
    /// Set by the caller to stop early ([`Analyzer::cancel_with`]).
    cancel: Option<crate::CancelFlag>,
}

/// From this many fixed-priority tasks on one CPU, [`Analyzer::analyze`]
/// bounds them by the level sweep (same values, computed without rescanning
/// the tasks per task); below, task by task.
pub const SWEEP_FROM: usize = 64;

impl Analyzer {
    /// A fresh analyser.
    pub fn new() -> Analyzer {
        Analyzer::default()
    }

    /// Uses the level sweep on every CPU with at least `tasks`
    /// fixed-priority tasks (default [`SWEEP_FROM`]; 0: always;
    /// `usize::MAX`: never, every task analysed on its own — the reference
    /// the sweep is tested against). The bounds are the same either way.
    pub fn sweep_from(&mut self, tasks: usize) -> &mut Analyzer {
        self.sweep_from = Some(tasks);
        self
    }

    /// Stops the analyses once `flag` is set: checked between tasks and
    /// every [`CANCEL_EVERY`] fixed-point steps; the tasks left are then
    /// reported [`Unbounded::BusyPeriod`] (the caller, who set the flag,
    /// drops the result: [`crate::analyze_set_cancellable`]).
    pub fn cancel_with(&mut self, flag: crate::CancelFlag) -> &mut Analyzer {
        self.cancel = Some(flag);
        self
    }

    fn cancelled(&self) -> bool {
        crate::error::is_cancelled(self.cancel.as_ref())
    }

    /// Analyses every task of a set (which must have passed
    /// [`TaskSet::validate`]). One result per task, in order.
    pub fn analyze(&mut self, set: &TaskSet) -> Vec<TaskResult> {
        self.prepare(set);
        let mut out: Vec<Option<TaskResult>> = vec![None; set.tasks.len()];
        self.analyze_deadline_tasks(set, &mut out);
        let cpus = self.sweep_cpus();
        if !cpus.is_empty() {
            self.sweep(set, &cpus, &mut out);
        }
        for (i, slot) in out.iter_mut().enumerate() {
            if slot.is_none() && !self.cancelled() {
                *slot = Some(self.analyze_fixed(set, i, false));
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| TaskResult::unbounded(Unbounded::BusyPeriod, None)))
            .collect()
    }

    /// Whether every task meets its deadline; stops at the first that does
    /// not (the fast path of sweeps).
    pub fn schedulable(&mut self, set: &TaskSet) -> bool {
        self.prepare(set);
        if !self.sweep_cpus().is_empty() {
            return self.analyze(set).iter().all(|r| r.schedulable);
        }
        if set
            .tasks
            .iter()
            .any(|t| matches!(t.class, Class::Deadline { .. }))
        {
            let mut out: Vec<Option<TaskResult>> = vec![None; set.tasks.len()];
            self.analyze_deadline_tasks(set, &mut out);
            if out.iter().flatten().any(|r| !r.schedulable) {
                return false;
            }
        }
        (0..set.tasks.len())
            .filter(|&i| set.tasks[i].priority().is_some())
            .all(|i| !self.cancelled() && self.analyze_fixed(set, i, true).schedulable)
    }

    /// The PI-CV paper's Eq. 5 for client `i` exactly as the paper states it (PI-CV,
    /// servers below every client): the maximum-weight matching between
    /// lower-priority clients and the servers of `Q_i ∪ P_i`. The set must be
    /// valid and `i` a fixed-priority task.
    pub fn rpc_interference(&mut self, set: &TaskSet, i: usize) -> Nanos {
        self.prepare(set);
        let ti = &set.tasks[i];
        let Some(pi) = ti.priority() else { return 0 };
        let lowers: Vec<usize> = (0..self.n)
            .filter(|&l| {
                let t = &set.tasks[l];
                t.cpu == ti.cpu && t.priority().is_some_and(|p| p < pi)
            })
            .collect();
        let servers: Vec<usize> = (0..self.s)
            .filter(|&k| self.server_in_q_or_p(i, k))
            .collect();
        let (s, callmax) = (self.s, &self.callmax);
        self.matcher
            .max_weight(servers.len(), lowers.len(), |r, c| {
                callmax[lowers[c] * s + servers[r]]
            })
    }

    /// Whether server `k` is in `K_i` or called by a task of `hp(i)` (after
    /// [`Analyzer::prepare`]).
    fn server_in_q_or_p(&self, i: usize, k: usize) -> bool {
        if !self.fixed[i] {
            return false;
        }
        if self.calls_to[i * self.s + k] {
            return true;
        }
        // The highest caller other than i (callers are on the server's CPU).
        let top = self.top_callers[k];
        let other = if top[0].1 == i { top[1] } else { top[0] };
        other.1 != usize::MAX && other.0 >= self.prio[i]
    }

    /// The tables every task's analysis reads, for `set`.
    fn prepare(&mut self, set: &TaskSet) {
        self.n = set.tasks.len();
        self.m = set.mutexes.len();
        self.s = set.servers.len();
        self.usage_tables(set);
        self.priorities(set);
        self.transitive_ceilings(set);
        self.waits_below(set);
        self.index_waits();
    }

    /// Per task and mutex: the longest section (`maxcs`), whether it is used
    /// (`uses`); per task and server: the longest call (`callmax`), whether
    /// it is called (`calls_to`); per task: whether it nests sections; per
    /// mutex: its ceiling, the highest priority of its users.
    fn usage_tables(&mut self, set: &TaskSet) {
        let (n, m, s) = (self.n, self.m, self.s);
        reset(&mut self.maxcs, n * m, 0);
        reset(&mut self.uses, n * m, false);
        reset(&mut self.nested, n, false);
        reset(&mut self.callmax, n * s, 0);
        reset(&mut self.calls_to, n * s, false);
        reset(&mut self.ceiling, m, i32::MIN);
        for (t, task) in set.tasks.iter().enumerate() {
            for sec in &task.sections {
                let k = t * m + sec.mutex;
                self.maxcs[k] = self.maxcs[k].max(sec.length);
                self.uses[k] = true;
                if sec.parent.is_some() {
                    self.nested[t] = true;
                }
                if let Some(p) = task.priority() {
                    self.ceiling[sec.mutex] = self.ceiling[sec.mutex].max(p);
                }
            }
            for c in &task.calls {
                let k = t * s + c.server;
                self.callmax[k] = self.callmax[k].max(c.wcet);
                self.calls_to[k] = true;
            }
        }
    }

    /// Per task: its priority, CPU and whether it is fixed-priority; per
    /// server: its two highest-priority callers.
    fn priorities(&mut self, set: &TaskSet) {
        let (n, s) = (self.n, self.s);
        reset(&mut self.prio, n, i32::MIN);
        reset(&mut self.cpu, n, 0);
        reset(&mut self.fixed, n, false);
        reset(&mut self.top_callers, s, [(i32::MIN, usize::MAX); 2]);
        for (t, task) in set.tasks.iter().enumerate() {
            self.cpu[t] = task.cpu;
            if let Some(p) = task.priority() {
                self.prio[t] = p;
                self.fixed[t] = true;
                for k in 0..s {
                    if self.calls_to[t * s + k] {
                        let top = &mut self.top_callers[k];
                        if p > top[0].0 {
                            top[1] = top[0];
                            top[0] = (p, t);
                        } else if p > top[1].0 {
                            top[1] = (p, t);
                        }
                    }
                }
            }
        }
    }

    /// Nested locking: `outer -> inner` when inner is locked while outer is
    /// held. Under inheritance the owner of `inner` can be boosted through
    /// the chain to anything that can wait on `outer`: the *transitive*
    /// ceiling ceil*(inner) = max(ceil(inner), ceil*(outer)). The order is
    /// acyclic (validated), so m passes reach the fixed point.
    fn transitive_ceilings(&mut self, set: &TaskSet) {
        self.edges.clear();
        for task in &set.tasks {
            for sec in &task.sections {
                let mut p = sec.parent;
                while let Some(pi) = p {
                    let e = (task.sections[pi].mutex, sec.mutex);
                    if !self.edges.contains(&e) {
                        self.edges.push(e);
                    }
                    p = task.sections[pi].parent;
                }
            }
        }
        if self.edges.is_empty() {
            return;
        }
        for _ in 0..self.m {
            let mut changed = false;
            for &(o, i) in &self.edges {
                if self.ceiling[o] > self.ceiling[i] {
                    self.ceiling[i] = self.ceiling[o];
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The waits of each fixed-priority task on work done below its own
    /// priority, as `(task, level, wait)` in task order: without PI-CV (or
    /// to a server its callers do not lend to), a call to a lower server; a
    /// mutex without inheritance (or with a
    /// ceiling below the task) that a lower task of its CPU also uses.
    fn waits_below(&mut self, set: &TaskSet) {
        let (m, s) = (self.m, self.s);
        self.waits.clear();
        for (t, task) in set.tasks.iter().enumerate() {
            let Some(pt) = task.priority() else { continue };
            for k in 0..s {
                let sv = &set.servers[k];
                if !(set.pi_cv && sv.inherits) && self.calls_to[t * s + k] && sv.priority < pt {
                    self.waits.push((t, sv.priority, Wait::Call { server: k }));
                }
            }
            for r in 0..m {
                if !self.uses[t * m + r] {
                    continue;
                }
                let floor = match set.mutexes[r].protocol {
                    MutexProtocol::Inherit | MutexProtocol::Bwi => continue,
                    MutexProtocol::Ceiling(c) if c >= pt => continue,
                    MutexProtocol::Ceiling(c) => c,
                    MutexProtocol::None => i32::MIN,
                };
                for (l, other) in set.tasks.iter().enumerate() {
                    if l == t || other.cpu != task.cpu || !self.uses[l * m + r] {
                        continue;
                    }
                    if let Some(pl) = other.priority() {
                        let level = pl.max(floor);
                        if level < pt {
                            self.waits.push((
                                t,
                                level,
                                Wait::Mutex {
                                    mutex: r,
                                    holder: l,
                                },
                            ));
                        }
                    }
                }
            }
        }
    }

    /// Each task's slice of `waits`, and λ_t: the lowest level the work it
    /// waits for runs at (τ_t suspends w.r.t. level p iff λ_t < p).
    fn index_waits(&mut self) {
        reset(&mut self.lambda, self.n, (i32::MAX, None));
        reset(&mut self.wait_range, self.n, (0, 0));
        let mut k = 0;
        while k < self.waits.len() {
            let t = self.waits[k].0;
            let start = k;
            while k < self.waits.len() && self.waits[k].0 == t {
                let (_, level, w) = self.waits[k];
                if level < self.lambda[t].0 {
                    self.lambda[t] = (level, Some(w));
                }
                k += 1;
            }
            self.wait_range[t] = (start, k);
        }
    }

    /// Fills `out` for every `SCHED_DEADLINE` task, group by group: the
    /// reservations pinned to each CPU (the exact processor-demand
    /// criterion, every protocol), then those free on every CPU (sufficient
    /// global EDF tests): [`crate::dl`]. The groups' admissions are kept
    /// ([`Analyzer::admissions`]).
    fn analyze_deadline_tasks(&mut self, set: &TaskSet, out: &mut [Option<TaskResult>]) {
        self.admissions.clear();
        let is_dl = |t: &Task| matches!(t.class, Class::Deadline { .. });
        let mut cpus: Vec<u32> = set
            .tasks
            .iter()
            .filter(|t| is_dl(t) && t.global_cpus.is_none())
            .map(|t| t.cpu)
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        for cpu in cpus {
            let members: Vec<usize> = (0..self.n)
                .filter(|&t| {
                    let task = &set.tasks[t];
                    is_dl(task) && task.global_cpus.is_none() && task.cpu == cpu
                })
                .collect();
            let adm = crate::dl::analyze_group(set, &members, Some(cpu), 1, out);
            self.admissions.push(adm);
        }
        let global: Vec<usize> = (0..self.n)
            .filter(|&t| is_dl(&set.tasks[t]) && set.tasks[t].global_cpus.is_some())
            .collect();
        if let Some(m) = global
            .iter()
            .filter_map(|&t| set.tasks[t].global_cpus)
            .max()
        {
            let adm = crate::dl::analyze_group(set, &global, None, m, out);
            self.admissions.push(adm);
        }
    }

    /// The admissions of the `SCHED_DEADLINE` groups of the last analysed
    /// set, pinned CPUs in order, then the global group.
    pub fn admissions(&self) -> &[crate::dl::GroupAdmission] {
        &self.admissions
    }

    /// The longest outermost section of `l` containing a mutex `relevant`.
    fn nested_blocking(
        &mut self,
        set: &TaskSet,
        l: usize,
        relevant: impl Fn(usize) -> bool,
    ) -> Nanos {
        let secs = &set.tasks[l].sections;
        reset(&mut self.marks, secs.len(), false);
        for (k, sec) in secs.iter().enumerate() {
            if relevant(sec.mutex) {
                let mut root = k;
                while let Some(p) = secs[root].parent {
                    root = p;
                }
                self.marks[root] = true;
            }
        }
        secs.iter()
            .zip(&self.marks)
            .filter(|(_, &mk)| mk)
            .map(|(s, _)| s.length)
            .max()
            .unwrap_or(0)
    }

    /// Steps 1 to 4 (see the module docs) for fixed-priority task `i`; with
    /// `early`, the busy window stops at the first known miss.
    fn analyze_fixed(&mut self, set: &TaskSet, i: usize, early: bool) -> TaskResult {
        if !self.fixed[i] {
            return TaskResult::unbounded(Unbounded::BusyPeriod, None);
        }
        if let Some(why) = self.inversion(set, i).or_else(|| self.higher_suspends(i)) {
            return TaskResult::unbounded(why, None);
        }
        let blocking = self.blocking(set, i);
        self.interference(set, i);
        let ti = &set.tasks[i];
        let cancel = self.cancel.as_ref();
        match busy_window_until(
            ti.demand,
            ti.period,
            ti.deadline,
            blocking,
            (&self.hp, &self.dl),
            early,
            &|| crate::error::is_cancelled(cancel),
        ) {
            Ok(r) => TaskResult::bounded(r, blocking, ti.deadline),
            Err(why) => TaskResult::unbounded(why, Some(blocking)),
        }
    }

    /// Step 1: a wait of τ_i on work below its priority that a medium task
    /// or server can delay, or whose holder nests sections.
    fn inversion(&self, set: &TaskSet, i: usize) -> Option<Unbounded> {
        let (w0, w1) = self.wait_range[i];
        for &(_, level, wait) in &self.waits[w0..w1] {
            if let Some(medium) = self.medium(set, i, level, wait) {
                return Some(Unbounded::Inversion { wait, medium });
            }
            if let Wait::Mutex { mutex, holder } = wait {
                if self.nested[holder] {
                    return Some(Unbounded::NestedWithoutInheritance { mutex, holder });
                }
            }
        }
        None
    }

    /// A task, then a server, of τ_i's CPU with a priority in `[level, p_i)`
    /// that is not the one doing the work of `wait`: it can run while τ_i
    /// waits.
    fn medium(&self, set: &TaskSet, i: usize, level: i32, wait: Wait) -> Option<Entity> {
        let (pi, cpu) = (self.prio[i], self.cpu[i]);
        let helper = match wait {
            Wait::Call { server } => Entity::Server(server),
            Wait::Mutex { holder, .. } => Entity::Task(holder),
        };
        let task = (0..self.n).find(|&x| {
            x != i
                && self.fixed[x]
                && self.cpu[x] == cpu
                && Entity::Task(x) != helper
                && level <= self.prio[x]
                && self.prio[x] < pi
        });
        if let Some(x) = task {
            return Some(Entity::Task(x));
        }
        (0..self.s)
            .find(|&k| {
                let sv = &set.servers[k];
                Entity::Server(k) != helper
                    && sv.cpu == cpu
                    && level <= sv.priority
                    && sv.priority < pi
            })
            .map(Entity::Server)
    }

    /// Step 2: a task of `hp(i)` that can suspend on work below `p_i`.
    fn higher_suspends(&self, i: usize) -> Option<Unbounded> {
        if self.waits.is_empty() {
            return None;
        }
        let (pi, cpu) = (self.prio[i], self.cpu[i]);
        (0..self.n).find_map(|h| {
            if h == i || !self.fixed[h] || self.cpu[h] != cpu || self.prio[h] < pi {
                return None;
            }
            match self.lambda[h] {
                (lambda, Some(wait)) if lambda < pi => {
                    Some(Unbounded::HigherSuspends { higher: h, wait })
                }
                _ => None,
            }
        })
    }

    /// Step 3: `B_i` (see [`Analyzer`]), the unconstrained items of the lower
    /// tasks plus the best matching of rows to lower tasks.
    fn blocking(&mut self, set: &TaskSet, i: usize) -> Nanos {
        self.relevant_mutexes(set, i);
        self.rows_and_high_servers(set, i);
        let (pi, cpu) = (self.prio[i], self.cpu[i]);
        self.lowers.clear();
        self.lowers.extend(
            (0..self.n).filter(|&l| self.fixed[l] && self.cpu[l] == cpu && self.prio[l] < pi),
        );
        self.unconstrained_items(set);
        self.row_weights();
        let (rows, cols) = (self.rows.len(), self.lowers.len());
        let weights = &self.weights;
        let matched = self
            .matcher
            .max_weight(rows, cols, |r, c| weights[r * cols + c]);
        self.f.iter().fold(matched, |a, &b| a.saturating_add(b))
    }

    /// Which mutexes can block τ_i, and how: charged once per lower task
    /// (`rel_task`: inheritance, none, or a ceiling below `p_i` that τ_i
    /// uses), or in the single ceiling row (`rel_icpp`: ceiling ≥ `p_i`).
    fn relevant_mutexes(&mut self, set: &TaskSet, i: usize) {
        let (m, pi) = (self.m, self.prio[i]);
        self.rel_task.clear();
        self.rel_icpp.clear();
        reset(&mut self.rel_any, m, false);
        for r in 0..m {
            let kind = match set.mutexes[r].protocol {
                MutexProtocol::Inherit | MutexProtocol::Bwi => {
                    (self.ceiling[r] >= pi).then_some(false)
                }
                MutexProtocol::None => self.uses[i * m + r].then_some(false),
                MutexProtocol::Ceiling(c) if c >= pi => Some(true),
                MutexProtocol::Ceiling(_) => self.uses[i * m + r].then_some(false),
            };
            match kind {
                Some(true) => self.rel_icpp.push(r),
                Some(false) => self.rel_task.push(r),
                None => continue,
            }
            self.rel_any[r] = true;
        }
    }

    /// The rows of τ_i's matching (the ceiling row if any mutex is in it,
    /// then each low server of `Q_i ∪ P_i`), and the servers of its CPU at
    /// or above `p_i` (`high`).
    fn rows_and_high_servers(&mut self, set: &TaskSet, i: usize) {
        let (pi, cpu) = (self.prio[i], self.cpu[i]);
        self.rows.clear();
        if !self.rel_icpp.is_empty() {
            self.rows.push(Row::Icpp);
        }
        self.high.clear();
        for k in 0..self.s {
            let sv = &set.servers[k];
            if sv.cpu != cpu {
                continue;
            }
            if sv.priority >= pi {
                self.high.push(k);
            } else if self.server_in_q_or_p(i, k) {
                self.rows.push(Row::Server(k));
            }
        }
    }

    /// `f_L` of each lower task, in `lowers` order.
    fn unconstrained_items(&mut self, set: &TaskSet) {
        self.f.clear();
        for c in 0..self.lowers.len() {
            let f = self.unconstrained_item(set, self.lowers[c]);
            self.f.push(f);
        }
    }

    /// `f_L` of lower task `l`: what it charges without a shared limit.
    fn unconstrained_item(&mut self, set: &TaskSet, l: usize) -> Nanos {
        let (m, s) = (self.m, self.s);
        // A request to a server at or above p_i is served there whoever
        // waits: once per lower task, no per-server limit.
        let mut f = self
            .high
            .iter()
            .map(|&k| self.callmax[l * s + k])
            .max()
            .unwrap_or(0);
        if self.nested[l] {
            let rel_any = std::mem::take(&mut self.rel_any);
            let nb = self.nested_blocking(set, l, |r| rel_any[r]);
            self.rel_any = rel_any;
            f = f.max(nb);
            // Its calls to low servers still count, privately.
            for row in &self.rows {
                if let Row::Server(k) = *row {
                    f = f.max(self.callmax[l * s + k]);
                }
            }
        } else {
            // Hand-off: the longest relevant section, no per-mutex limit.
            for &r in &self.rel_task {
                f = f.max(self.maxcs[l * m + r]);
            }
        }
        f
    }

    /// The weight of each (row, lower task) pair beyond the task's `f_L`,
    /// row by row (0 for a task with nested sections: all in its `f_L`).
    fn row_weights(&mut self) {
        let (m, s) = (self.m, self.s);
        self.weights.clear();
        for r in 0..self.rows.len() {
            for c in 0..self.lowers.len() {
                let l = self.lowers[c];
                let w = if self.nested[l] {
                    0
                } else {
                    match self.rows[r] {
                        Row::Icpp => self
                            .rel_icpp
                            .iter()
                            .map(|&x| self.maxcs[l * m + x])
                            .max()
                            .unwrap_or(0),
                        Row::Server(k) => self.callmax[l * s + k],
                    }
                };
                self.weights.push(w.saturating_sub(self.f[c]));
            }
        }
    }

    /// Step 4's interference on τ_i's CPU: `(E_h, T_h)` of `hp(i)` into
    /// `hp`, `(Q_d, P_d)` of the reservations into `dl`.
    fn interference(&mut self, set: &TaskSet, i: usize) {
        let (pi, cpu) = (self.prio[i], self.cpu[i]);
        self.hp.clear();
        self.dl.clear();
        for (h, th) in set.tasks.iter().enumerate() {
            // A global reservation can run on any CPU (one at a time).
            if h == i || (self.cpu[h] != cpu && th.global_cpus.is_none()) {
                continue;
            }
            if self.fixed[h] {
                if self.prio[h] >= pi {
                    self.hp.push((th.demand, th.period));
                }
            } else if let Class::Deadline {
                runtime, period, ..
            } = th.class
            {
                self.dl.push((runtime, period));
            }
        }
    }
}

/// `num/den` in units of 2⁻⁶⁴ (truncated): the terms of the utilisation
/// reported in [`Unbounded::Overload`]. Their sum is exact, so the reported
/// value does not depend on the order it is summed in — the level sweep
/// sums it level by level, the per-task analysis task by task — and is
/// within `n·2⁻⁶⁴` of `Σ num/den` (a sum of `f64` quotients in task order
/// would cost the sweep `O(n)` per task, and is further from it).
pub(crate) fn share(num: u64, den: u64) -> u128 {
    match den {
        0 if num == 0 => 0,
        0 => u128::MAX,
        _ => ((num as u128) << 64) / den as u128,
    }
}

/// A sum of [`share`]s as a number.
pub(crate) fn share_to_f64(x: u128) -> f64 {
    x as f64 / 18_446_744_073_709_551_616.0
}

fn reset<T: Clone>(v: &mut Vec<T>, len: usize, value: T) {
    v.clear();
    v.resize(len, value);
}

/// The level-i busy window (see the module docs). `hp` holds `(E_h, T_h)`,
/// `dl` holds `(Q_d, P_d)`. With `early`, stops as soon as a job is known to
/// miss `d` (the returned value is then only known to exceed `d`).
pub fn busy_window(
    e: Nanos,
    t: Nanos,
    d: Nanos,
    b: Nanos,
    hp: &[(Nanos, Nanos)],
    dl: &[(Nanos, Nanos)],
    early: bool,
) -> Result<Nanos, Unbounded> {
    busy_window_until(e, t, d, b, (hp, dl), early, &|| false)
}

/// `(E_h, T_h)` of the higher tasks and `(Q_d, P_d)` of the reservations.
pub(crate) type Interferers<'a> = (&'a [(Nanos, Nanos)], &'a [(Nanos, Nanos)]);

/// Fixed-point steps between two looks at a cancel flag.
pub const CANCEL_EVERY: u32 = 4096;

/// [`busy_window`] that gives up ([`Unbounded::BusyPeriod`]) once
/// `cancelled()` says so, asked every [`CANCEL_EVERY`] steps.
pub(crate) fn busy_window_until(
    e: Nanos,
    t: Nanos,
    d: Nanos,
    b: Nanos,
    (hp, dl): Interferers<'_>,
    early: bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<Nanos, Unbounded> {
    // Level utilisation: > 1 means the busy period never closes.
    let util: f64 = e as f64 / t as f64
        + hp.iter().map(|&(e, t)| e as f64 / t as f64).sum::<f64>()
        + dl.iter().map(|&(q, p)| q as f64 / p as f64).sum::<f64>();
    if util > 1.0 - 1e-9 {
        let mut terms: Vec<(u64, u64)> = Vec::with_capacity(hp.len() + dl.len() + 1);
        terms.push((e, t));
        terms.extend_from_slice(hp);
        terms.extend_from_slice(dl);
        if !edf::sum_le_one(&terms) {
            let exact: u128 = terms
                .iter()
                .fold(0, |acc, &(e, t)| acc.saturating_add(share(e, t)));
            return Err(Unbounded::Overload {
                utilisation: share_to_f64(exact),
            });
        }
        // Exactly 1 (the level fills the CPU): a busy period that closes at
        // w ≤ (q+1)·T would have w ≥ b + extra + U·w = b + extra + w, so it
        // closes only when nothing comes on top of the periodic work — no
        // blocking, no reservation (whose window term carries one budget
        // in). Otherwise the jobs q = 0, 1, … never end it.
        if edf::sum_ge_one(&terms) {
            let reservations = dl.iter().any(|&(q, _)| q > 0);
            if b > 0 || reservations {
                return Err(Unbounded::FullLoad {
                    blocking: b,
                    reservations,
                });
            }
        }
    }
    // All values stay below LIMIT; ⌈w/T⌉·E ≤ w + T (E ≤ T is validated,
    // and Q ≤ P), so checked u64 arithmetic never saturates in practice.
    const LIMIT: u64 = 1 << 62;
    let add = |a: u64, b: u64| a.checked_add(b).filter(|&x| x <= LIMIT);
    let mul = |a: u64, b: u64| a.checked_mul(b).filter(|&x| x <= LIMIT);
    let mut budget = MAX_ITERATIONS;
    let mut r_max: u64 = 0;
    let mut q: u64 = 0;
    let mut w: u64 = 0;
    loop {
        let Some(base) = mul(q + 1, e).and_then(|x| add(x, b)) else {
            return Err(Unbounded::BusyPeriod);
        };
        if q == 0 {
            // A lower bound of the least fixed point: one job of everyone.
            w = base;
            if base > 0 {
                for &(eh, _) in hp {
                    w = add(w, eh).ok_or(Unbounded::BusyPeriod)?;
                }
                for &(qd, _) in dl {
                    w = add(w, 2 * qd).ok_or(Unbounded::BusyPeriod)?;
                }
            }
        } else {
            w = w.max(base);
        }
        loop {
            let mut next = Some(base);
            if w > 0 {
                for &(eh, th) in hp {
                    next = next.and_then(|x| add(x, mul(w.div_ceil(th), eh)?));
                }
                for &(qd, pd) in dl {
                    next = next.and_then(|x| add(x, mul(w.div_ceil(pd) + 1, qd)?));
                }
            }
            let Some(next) = next else {
                return Err(Unbounded::BusyPeriod);
            };
            if next == w {
                break;
            }
            w = next;
            budget = budget.saturating_sub(1);
            if budget == 0 || (budget.is_multiple_of(CANCEL_EVERY) && cancelled()) {
                return Err(Unbounded::BusyPeriod);
            }
            if early && w.saturating_sub(q * t) > d {
                return Ok(w.saturating_sub(q * t));
            }
        }
        r_max = r_max.max(w.saturating_sub(q * t));
        if w <= (q + 1).saturating_mul(t) {
            return Ok(r_max);
        }
        if early && r_max > d {
            return Ok(r_max);
        }
        // The next job of the busy period is a step too: a busy period of
        // many short jobs ends at the limit, never in a hang.
        budget = budget.saturating_sub(1);
        if budget == 0 || (budget.is_multiple_of(CANCEL_EVERY) && cancelled()) {
            return Err(Unbounded::BusyPeriod);
        }
        q += 1;
    }
}
