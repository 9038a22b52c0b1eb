//! The GPM paper's Properties 1 and 2 as a bound: the latency of a gang run,
//! from `gang_run` to the last active member's `gang_notify` (when
//! `gang_wait` returns), for every completed run.
//!
//! With gang priority management on (`global.gpm`, `--gpm`), Invariant 1
//! runs every pending active member at least at the gang priority `g`. On
//! each CPU `c` the run is then one piece of level-`g` work released at the
//! `gang_run`, and the response-time fixed point of that level bounds it:
//!
//! ```text
//! L_c = Σ_{m pending on c} C_m + B_c + Σ_{j on c, j ∉ members, prio_j ≥ g} W_j(L_c)
//!                                    + Σ_{d SCHED_DEADLINE on c} (⌈L_c/P_d⌉ + 1)·Q_d
//! latency ≤ max_c L_c   (and each SCHED_DEADLINE member's own bound)
//! ```
//!
//! - `C_m`: the most a member executes from any point of its program at
//!   which a run can make it pending to its next `gang_notify` (or
//!   `gang_remove`, or its exit): work, plus known suspensions counted as
//!   execution (`delay`, `sleep`, a `timer`'s period). A point from which
//!   the member would wait, before notifying, on a condition only the
//!   gang's initiator signals after its `gang_wait` (the GPM paper's §3
//!   resumption condition) cannot start a run that completes, and is
//!   skipped.
//! - `B_c`: per thread that is not an interferer, its longest outermost
//!   critical section on a mutex the run's work or the interferers may need
//!   (closed over nesting): under priority inheritance the owner runs at
//!   the waiter's effective priority — the gang's, by Invariant 1 — and a
//!   thread below the level cannot start a new section while level work is
//!   pending, so once per thread (hand-off included, docs/ANALYSIS.md §3).
//! - `W_j(L)`: the most thread `j` executes in any window of `L`:
//!   `(⌈L/T⌉ + 1)·E` for a periodic thread (a job in progress at the
//!   `gang_run`, then releases at least `T` apart; for an absolute timer
//!   only once its own response time is shown ≤ `T`), the same with the
//!   sum of its sleeps as `T` for a thread that only sleeps, its whole
//!   work for a thread that ends, and — the initiator — the work between
//!   its `gang_run` and its `gang_wait` when it alone starts the runs and
//!   waits for each.
//!
//! With gpm off nobody is boosted: each member `m` (fixed priority `p_m`)
//! is bounded by the same fixed point at level `p_m` with demand `C_m`
//! and every other thread at or above `p_m` (members too) as interference;
//! the latency is the largest. A medium thread without a bounded workload
//! makes it unbounded, named.
//!
//! `SCHED_DEADLINE` members are never boosted (docs/GANG.md §3): each runs
//! its part on its own reservation `(Q, D, P)`, within `⌈C_m/Q⌉·P + D` when
//! the reservations of its CPU are admitted (density ≤ 1) and it locks no
//! mutex.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use heir_scenario::{
    engine::gang_active, Event, EventKind, GangOp, MutexProtocol, Policy, ResourceKind, Scenario,
    Task as ScTask, TimerMode, GANG_DEFAULT_BITS,
};

use crate::error::{AnalysisError, ErrorKind, Location};
use crate::model::{fmt_us, Nanos};

/// Events of one pass over a program beyond which it is refused.
const MAX_BODY_EVENTS: usize = 200_000;
/// A fixed point above this (ns, 1000 s) is reported unbounded.
const HORIZON: Nanos = 1_000_000_000_000;
/// Iterations of a fixed point before it is reported unbounded.
const MAX_ITERATIONS: usize = 100_000;

/// The bound of one gang.
#[derive(Clone, Debug, PartialEq)]
pub struct GangBound {
    /// The gang's name.
    pub name: String,
    /// Whether gang priority management was analysed on (`global.gpm`).
    pub gpm: bool,
    /// The gang priority the bound uses (the least a run can have; `None`
    /// with gpm off or without fixed-priority members).
    pub priority: Option<i32>,
    /// Each member thread's part.
    pub members: Vec<MemberPart>,
    /// `B`, the blocking of the gang level (gpm on; µs); `None` when
    /// unbounded or not applicable.
    pub blocking_us: Option<f64>,
    /// The latency bound from `gang_run` to the last notify (µs); `None`
    /// when unbounded.
    pub bound_us: Option<f64>,
    /// Why there is no bound, for people.
    pub reason: Option<String>,
    /// The threads that call `gang_wait` on it, in thread order.
    pub waiters: Vec<String>,
}

/// One member thread's part of a gang bound.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberPart {
    /// Thread name.
    pub name: String,
    /// Its CPU (`None`: not pinned on a machine of several CPUs).
    pub cpu: Option<u32>,
    /// `"FIFO 90"`, `"OTHER 0"`, `"DL"`.
    pub class: String,
    /// `C_m` (µs): its longest execution to its notify; `None` when it is
    /// never an active member of a run, or unbounded.
    pub work_us: Option<f64>,
    /// Its own completion bound (µs), for a member bounded on its own: gpm
    /// off, or a `SCHED_DEADLINE` member.
    pub bound_us: Option<f64>,
}

impl GangBound {
    /// `{"gpm", "priority", "bound_us", "blocking_us", "reason",
    /// "members": {THREAD: {"cpu", "class", "work_us", "bound_us"}},
    /// "waiters": {THREAD: {"bound_us"}}}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Map};
        let mut members = Map::new();
        for m in &self.members {
            members.insert(
                m.name.clone(),
                json!({"cpu": m.cpu, "class": m.class, "work_us": m.work_us, "bound_us": m.bound_us}),
            );
        }
        let mut waiters = Map::new();
        for w in &self.waiters {
            waiters.insert(w.clone(), json!({ "bound_us": self.bound_us }));
        }
        json!({
            "gpm": self.gpm,
            "priority": self.priority,
            "bound_us": self.bound_us,
            "blocking_us": self.blocking_us,
            "reason": self.reason,
            "members": members,
            "waiters": waiters,
        })
    }
}

fn us(ns: Nanos) -> f64 {
    ns as f64 / 1000.0
}

fn ns(v: u64) -> Nanos {
    v.saturating_mul(1000)
}

/// Scheduling class of a thread for the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cls {
    Fixed(i32),
    Deadline { q: Nanos, d: Nanos, p: Nanos },
    Other,
}

impl Cls {
    fn word(self) -> String {
        match self {
            Cls::Fixed(p) => format!("FIFO {p}"),
            Cls::Deadline { .. } => "DL".into(),
            Cls::Other => "OTHER".into(),
        }
    }
}

/// An outermost critical section of a thread.
#[derive(Clone, Debug)]
struct Sec {
    /// The mutexes (resource indices) locked in it, the outer one first.
    mutexes: Vec<usize>,
    /// Its length (work and known suspensions); `None`: it may wait
    /// without bound inside.
    length: Option<Nanos>,
    /// The gangs notified inside it.
    notified: Vec<usize>,
    /// Whether it contains a suspension (sleep, timer, a wait).
    suspends: bool,
}

/// One thread, as the bound sees it.
struct Th<'a> {
    name: String,
    t: &'a ScTask,
    cpu: Option<u32>,
    cls: Cls,
    /// One pass over its phases (each `loop` times).
    body: Vec<&'a Event>,
    body_work: Nanos,
    sections: Vec<Sec>,
    locks: HashSet<usize>,
}

/// What a thread may execute in a window.
#[derive(Clone, Debug)]
enum Load {
    /// At most `total` in all, and/or at most `(⌈L/t⌉ + 1)·e`.
    Bounded {
        total: Option<Nanos>,
        every: Option<(Nanos, Nanos)>,
    },
    /// A reservation: `(⌈L/p⌉ + 1)·q`.
    Reservation { q: Nanos, p: Nanos },
    /// No bound, and why.
    Unbounded(String),
}

impl Load {
    fn total(v: Nanos) -> Load {
        Load::Bounded {
            total: Some(v),
            every: None,
        }
    }

    /// The most it executes in a window of `l` ns (`None`: unbounded).
    fn within(&self, l: Nanos) -> Option<Nanos> {
        match self {
            Load::Bounded { total, every } => {
                let per = every.map(|(t, e)| l.div_ceil(t).saturating_add(1).saturating_mul(e));
                match (total, per) {
                    (Some(a), Some(b)) => Some((*a).min(b)),
                    (Some(a), None) => Some(*a),
                    (None, b) => b,
                }
            }
            Load::Reservation { q, p } => Some(l.div_ceil(*p).saturating_add(1).saturating_mul(*q)),
            Load::Unbounded(_) => None,
        }
    }

    /// Its long-run utilisation (0 for a finite total).
    fn utilisation(&self) -> f64 {
        match self {
            Load::Bounded { total: Some(_), .. } => 0.0,
            Load::Bounded {
                every: Some((t, e)),
                ..
            } => *e as f64 / *t as f64,
            Load::Reservation { q, p } => *q as f64 / *p as f64,
            _ => 0.0,
        }
    }
}

/// One item of a member's program, for its pending segments.
#[derive(Clone, Debug)]
enum It {
    Work(Nanos),
    /// A suspension of known length, counted as execution.
    Susp(Nanos),
    /// A wait on the gang's resumption condition: no completed run can
    /// find the member pending before it.
    Never,
    /// A suspension without bound, described.
    Block(String),
    Notify,
    Remove,
    Insert,
    Active(u32),
    Passive(u32),
    Exit,
    Nop,
}

/// The bounds of every gang of `sc` on `cpus` CPUs (`None`: 1 + the
/// largest CPU the scenario names). Errors only for a bad CPU count or a
/// program too long to walk; everything outside the model is an unbounded
/// gang with its reason.
pub fn analyze_gangs(sc: &Scenario, cpus: Option<u32>) -> Result<Vec<GangBound>, AnalysisError> {
    analyze_gangs_with(sc, cpus, None)
}

/// [`analyze_gangs`], stopping with [`ErrorKind::Cancelled`] once `cancel`
/// is set (checked per gang and in every fixed-point step).
pub(crate) fn analyze_gangs_with(
    sc: &Scenario,
    cpus: Option<u32>,
    cancel: Option<&crate::CancelFlag>,
) -> Result<Vec<GangBound>, AnalysisError> {
    let ncpus = heir_scenario::messages::cpu_count(sc, cpus).map_err(|r| {
        let at = Location {
            path: r.path,
            line: r.line,
            column: r.column,
        };
        AnalysisError::new(ErrorKind::Invalid, Some(at), r.message)
    })?;
    let mut a = Analysis::new(sc, ncpus)?;
    a.cancel = cancel.cloned();
    let mut out = Vec::new();
    for (r, res) in sc.resources.iter().enumerate() {
        if let ResourceKind::Gang { .. } = res.kind {
            out.push(a.gang(r));
            if crate::error::is_cancelled(cancel) {
                return Err(AnalysisError::cancelled());
            }
        }
    }
    Ok(out)
}

/// Whether `sc` has a gang.
pub fn has_gangs(sc: &Scenario) -> bool {
    sc.resources
        .iter()
        .any(|r| matches!(r.kind, ResourceKind::Gang { .. }))
}

struct Analysis<'a> {
    sc: &'a Scenario,
    ncpus: u32,
    th: Vec<Th<'a>>,
    /// Per thread, the most urgent gang priority it may be boosted to.
    boost: Vec<Option<i32>>,
    /// Response-time checks of absolute-timer threads: `None` in progress.
    checked: RefCell<HashMap<usize, Option<Result<(), String>>>>,
    /// Set by the caller to stop early (the result is then dropped).
    cancel: Option<crate::CancelFlag>,
}

fn class_of(t: &ScTask) -> Cls {
    match t.sched.policy {
        Policy::Fifo | Policy::Rr => Cls::Fixed(t.sched.priority),
        Policy::Deadline => match t.sched.dl {
            Some(dl) => Cls::Deadline {
                q: ns(dl.runtime_us),
                d: ns(dl.deadline_us),
                p: ns(dl.period_us),
            },
            None => Cls::Other,
        },
        _ => Cls::Other,
    }
}

/// The CPU `t` is pinned to, if it is (always on a machine of one CPU).
fn cpu_of(t: &ScTask, ncpus: u32) -> Option<u32> {
    if ncpus <= 1 {
        return Some(0);
    }
    let c = match t.cpus.as_deref() {
        Some([c]) => *c,
        _ => return None,
    };
    t.phases
        .iter()
        .all(|p| !matches!(p.cpus.as_deref(), Some(l) if l != [c]))
        .then_some(c)
}

fn body_of(t: &ScTask) -> Result<Vec<&Event>, AnalysisError> {
    let mut body = Vec::new();
    for p in &t.phases {
        let total = (p.loops as usize).saturating_mul(p.events.len());
        if body.len().saturating_add(total) > MAX_BODY_EVENTS {
            return Err(AnalysisError::new(
                ErrorKind::Unsupported,
                Some(Location {
                    path: p.path.clone(),
                    line: p.line,
                    column: p.column,
                }),
                format!(
                    "phase {} of task {} repeats {} events {} times: too long to walk for the gang analysis",
                    p.name,
                    t.name,
                    p.events.len(),
                    p.loops
                ),
            ));
        }
        for _ in 0..p.loops {
            body.extend(p.events.iter());
        }
    }
    Ok(body)
}

fn is_blocking(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Wait { .. }
            | EventKind::Barrier(_)
            | EventKind::Suspend(_)
            | EventKind::Push(_)
            | EventKind::Pop(_)
            | EventKind::Call { .. }
            | EventKind::Serve(_)
            | EventKind::Gang {
                op: GangOp::Wait { .. },
                ..
            }
    )
}

/// The outermost critical sections of a body, walked cyclically twice (a
/// section still open at the end has no bound).
fn sections_of(body: &[&Event]) -> (Vec<Sec>, HashSet<usize>) {
    let mut out: Vec<Sec> = Vec::new();
    let mut locks = HashSet::new();
    // The open mutexes, innermost last, and the outermost's index in `out`.
    let mut open: Vec<usize> = Vec::new();
    let mut cur: Option<usize> = None;
    let n = body.len();
    for (i, e) in body.iter().chain(body.iter()).enumerate() {
        let first_pass = i < n;
        let add = |out: &mut Vec<Sec>, cur: Option<usize>, v: Option<Nanos>| {
            if let Some(k) = cur {
                let s: &mut Sec = &mut out[k];
                s.length = match (s.length, v) {
                    (Some(a), Some(b)) => Some(a.saturating_add(b)),
                    _ => None,
                };
            }
        };
        let mark = |out: &mut Vec<Sec>, cur: Option<usize>| {
            if let Some(k) = cur {
                out[k].suspends = true;
            }
        };
        match &e.kind {
            EventKind::Lock(r) => {
                locks.insert(r.0);
                if open.is_empty() {
                    cur = if first_pass {
                        out.push(Sec {
                            mutexes: vec![r.0],
                            length: Some(0),
                            notified: Vec::new(),
                            suspends: false,
                        });
                        Some(out.len() - 1)
                    } else {
                        None
                    };
                } else if let Some(k) = cur {
                    out[k].mutexes.push(r.0);
                }
                open.push(r.0);
            }
            EventKind::Unlock(r) => {
                if let Some(k) = open.iter().rposition(|&x| x == r.0) {
                    open.remove(k);
                }
                if open.is_empty() {
                    cur = None;
                }
            }
            EventKind::Gang {
                gang,
                op: GangOp::Notify,
            } => {
                if let Some(k) = cur {
                    out[k].notified.push(gang.0);
                }
            }
            EventKind::Run(m) | EventKind::Runtime(m) => add(&mut out, cur, Some(ns(m.max()))),
            EventKind::Sleep(m) => {
                add(&mut out, cur, Some(ns(m.max())));
                mark(&mut out, cur);
            }
            EventKind::Timer { period, .. } => {
                add(&mut out, cur, Some(ns(period.max())));
                mark(&mut out, cur);
            }
            EventKind::Wait { mutex, .. } if open.as_slice() == [mutex.0] => {
                // The wait releases the only mutex held, and takes it back
                // after: a new section.
                open.clear();
                cur = if first_pass {
                    out.push(Sec {
                        mutexes: vec![mutex.0],
                        length: Some(0),
                        notified: Vec::new(),
                        suspends: false,
                    });
                    open.push(mutex.0);
                    Some(out.len() - 1)
                } else {
                    None
                };
            }
            _ if is_blocking(e) => {
                add(&mut out, cur, None);
                mark(&mut out, cur);
            }
            _ => {}
        }
    }
    if let Some(k) = cur {
        out[k].length = None;
    }
    (out, locks)
}

impl<'a> Analysis<'a> {
    fn new(sc: &'a Scenario, ncpus: u32) -> Result<Analysis<'a>, AnalysisError> {
        let mut th = Vec::new();
        for t in &sc.tasks {
            if t.instance == 0 {
                continue;
            }
            let body = body_of(t)?;
            let body_work = body
                .iter()
                .map(|e| match e.kind {
                    EventKind::Run(m) | EventKind::Runtime(m) => ns(m.max()),
                    _ => 0,
                })
                .fold(0u64, |a, b| a.saturating_add(b));
            let (sections, locks) = sections_of(&body);
            for name in t.thread_names() {
                th.push(Th {
                    name,
                    t,
                    cpu: cpu_of(t, ncpus),
                    cls: class_of(t),
                    body: body.clone(),
                    body_work,
                    sections: sections.clone(),
                    locks: locks.clone(),
                });
            }
        }
        let mut a = Analysis {
            sc,
            ncpus,
            boost: vec![None; th.len()],
            th,
            checked: RefCell::new(HashMap::new()),
            cancel: None,
        };
        if sc.global.gpm {
            for (r, res) in sc.resources.iter().enumerate() {
                if let ResourceKind::Gang { .. } = res.kind {
                    let members = a.potential_members(r);
                    let g = members
                        .iter()
                        .filter_map(|&k| match a.th[k].cls {
                            Cls::Fixed(p) => Some(p),
                            _ => None,
                        })
                        .max();
                    for k in members {
                        a.boost[k] = a.boost[k].max(g);
                    }
                }
            }
        }
        Ok(a)
    }

    /// Whether thread `k`'s task is listed in gang `r`'s `members`.
    fn listed(&self, r: usize, k: usize) -> bool {
        let ResourceKind::Gang { members } = &self.sc.resources[r].kind else {
            return false;
        };
        members
            .iter()
            .any(|ti| std::ptr::eq(&self.sc.tasks[ti.0], self.th[k].t))
    }

    fn uses_gang(&self, k: usize, r: usize, pred: impl Fn(GangOp) -> bool) -> bool {
        self.th[k]
            .body
            .iter()
            .any(|e| matches!(e.kind, EventKind::Gang { gang, op } if gang.0 == r && pred(op)))
    }

    /// Listed members and threads that `gang_insert` into gang `r`.
    fn potential_members(&self, r: usize) -> Vec<usize> {
        (0..self.th.len())
            .filter(|&k| self.listed(r, k) || self.uses_gang(k, r, |op| op == GangOp::Insert))
            .collect()
    }

    /// Whether thread `k` may run on CPU `c` (`None`: any).
    fn on(&self, k: usize, c: Option<u32>) -> bool {
        match (self.th[k].cpu, c) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    fn gang(&self, r: usize) -> GangBound {
        let name = self.sc.resources[r].name.clone();
        let gpm = self.sc.global.gpm;
        let members = self.potential_members(r);
        let waiters: Vec<String> = (0..self.th.len())
            .filter(|&k| self.uses_gang(k, r, |op| matches!(op, GangOp::Wait { .. })))
            .map(|k| self.th[k].name.clone())
            .collect();
        let mask = self
            .th
            .iter()
            .flat_map(|t| t.body.iter())
            .filter_map(|e| match e.kind {
                EventKind::Gang {
                    gang,
                    op: GangOp::Run { mask },
                } if gang.0 == r => Some(mask),
                _ => None,
            })
            .fold(0u32, |a, b| a | b);
        let issuer = self.single_issuer(r);
        let resumption = self.resumption_conds(r, issuer);
        // Each member's C_m.
        let work: Vec<Result<Option<(Nanos, usize)>, String>> = members
            .iter()
            .map(|&k| self.member_work(k, r, mask, &resumption))
            .collect();
        let mut parts: Vec<MemberPart> = members
            .iter()
            .zip(&work)
            .map(|(&k, w)| MemberPart {
                name: self.th[k].name.clone(),
                cpu: self.th[k].cpu,
                class: self.th[k].cls.word(),
                work_us: w.as_ref().ok().and_then(|w| w.map(|(c, _)| us(c))),
                bound_us: None,
            })
            .collect();
        let mut out = GangBound {
            name,
            gpm,
            priority: None,
            members: Vec::new(),
            blocking_us: None,
            bound_us: None,
            reason: None,
            waiters,
        };
        let result = self.bound(r, &members, &work, issuer, &mut parts, &mut out);
        out.members = parts;
        match result {
            Ok(b) => out.bound_us = Some(us(b)),
            Err(why) => out.reason = Some(why),
        }
        out
    }

    /// The bound of gang `r` (ns), filling the members' own bounds.
    fn bound(
        &self,
        r: usize,
        members: &[usize],
        work: &[Result<Option<(Nanos, usize)>, String>],
        issuer: Option<usize>,
        parts: &mut [MemberPart],
        out: &mut GangBound,
    ) -> Result<Nanos, String> {
        // The active members' work, first error first.
        let mut active: Vec<(usize, usize, Nanos, usize)> = Vec::new();
        for (i, (&k, w)) in members.iter().zip(work).enumerate() {
            match w {
                Err(why) => return Err(why.clone()),
                Ok(Some((c, susp))) => active.push((i, k, *c, *susp)),
                Ok(None) => {}
            }
        }
        let mut latency: Nanos = 0;
        // Deadline members, on their own reservations.
        for &(i, k, c, susp) in &active {
            if let Cls::Deadline { q, d, p } = self.th[k].cls {
                let b = self.deadline_member(k, c, susp > 0, (q, d, p))?;
                parts[i].bound_us = Some(us(b));
                latency = latency.max(b);
            }
        }
        let fixed: Vec<&(usize, usize, Nanos, usize)> = active
            .iter()
            .filter(|a| !matches!(self.th[a.1].cls, Cls::Deadline { .. }))
            .collect();
        for a in &fixed {
            if self.ncpus > 1 && self.th[a.1].cpu.is_none() {
                return Err(format!(
                    "member {} is not pinned to one CPU: the gang bound is per CPU (pin every member, \"cpus\": [N])",
                    self.th[a.1].name
                ));
            }
        }
        if fixed.is_empty() {
            return Ok(latency);
        }
        if self.sc.global.gpm {
            let lambda = self.gang_level(r, members)?;
            out.priority = Some(lambda);
            let mut cpus: Vec<Option<u32>> = fixed.iter().map(|a| self.th[a.1].cpu).collect();
            cpus.sort();
            cpus.dedup();
            let mut blocking: Nanos = 0;
            for c in cpus {
                let demand_threads: Vec<usize> = fixed
                    .iter()
                    .filter(|a| self.th[a.1].cpu == c)
                    .map(|a| a.1)
                    .collect();
                let demand = fixed
                    .iter()
                    .filter(|a| self.th[a.1].cpu == c)
                    .fold(0u64, |s, a| s.saturating_add(a.2));
                let windows = fixed
                    .iter()
                    .filter(|a| self.th[a.1].cpu == c)
                    .fold(0usize, |s, a| s.saturating_add(a.3));
                let mut inter: Vec<(usize, Load)> = Vec::new();
                for k in 0..self.th.len() {
                    if !self.on(k, c) || demand_threads.contains(&k) {
                        if demand_threads.contains(&k) {
                            if let Cls::Fixed(p) = self.th[k].cls {
                                if p >= lambda {
                                    inter.push((k, self.top_member_load(k, r, true)));
                                }
                            }
                        }
                        continue;
                    }
                    let member = members.contains(&k);
                    match self.th[k].cls {
                        Cls::Deadline { q, p, .. } => inter.push((k, Load::Reservation { q, p })),
                        Cls::Fixed(p) if p >= lambda => {
                            // A member with no demand here (left out by
                            // the runs' mask, passive, or active on no
                            // point) is not waited for, but runs at its own
                            // priority ≥ g all the same, its work before a
                            // notify included (it is in no C_m).
                            let load = if Some(k) == issuer && !member {
                                self.issuer_load(k, r)
                            } else if member {
                                self.top_member_load(k, r, false)
                            } else {
                                self.load(k)
                            };
                            inter.push((k, load));
                        }
                        _ => {}
                    }
                }
                let inter_ids: Vec<usize> = inter.iter().map(|x| x.0).collect();
                let blockers: Vec<usize> = (0..self.th.len())
                    .filter(|&k| self.on(k, c) && !inter_ids.contains(&k))
                    .collect();
                let (l, b) = self.level(
                    (c, lambda),
                    (demand, &demand_threads, windows),
                    &inter,
                    &blockers,
                    Some(r),
                )?;
                blocking = blocking.max(b);
                latency = latency.max(l);
            }
            out.blocking_us = Some(us(blocking));
            Ok(latency)
        } else {
            // Nobody boosted: each member at its own priority.
            let mut first_err: Option<String> = None;
            for &&(i, k, c, windows) in &fixed {
                let res = match self.th[k].cls {
                    Cls::Fixed(p) => self.own_level(k, p, (c, windows), issuer, r),
                    _ => Err(format!(
                        "member {} is {} and gpm is off: nothing lifts it above real-time load (CFS shares are not analysed)",
                        self.th[k].name,
                        self.th[k].t.sched.policy.name()
                    )),
                };
                match res {
                    Ok(b) => {
                        parts[i].bound_us = Some(us(b));
                        latency = latency.max(b);
                    }
                    Err(why) => {
                        first_err.get_or_insert(why);
                    }
                }
            }
            match first_err {
                Some(why) => Err(why),
                None => Ok(latency),
            }
        }
    }

    /// Gpm off: member `k` at its own priority `p`, demand `c`.
    fn own_level(
        &self,
        k: usize,
        p: i32,
        (c, windows): (Nanos, usize),
        issuer: Option<usize>,
        r: usize,
    ) -> Result<Nanos, String> {
        let cpu = self.th[k].cpu;
        let mut inter = Vec::new();
        for j in 0..self.th.len() {
            if j == k || !self.on(j, cpu) {
                continue;
            }
            match self.th[j].cls {
                Cls::Deadline { q, p, .. } => inter.push((j, Load::Reservation { q, p })),
                Cls::Fixed(pj) if pj >= p => {
                    let member = self.listed(r, j) || self.uses_gang(j, r, |o| o == GangOp::Insert);
                    let load = if Some(j) == issuer && !member {
                        self.issuer_load(j, r)
                    } else {
                        self.load(j)
                    };
                    inter.push((j, load));
                }
                _ => {}
            }
        }
        let ids: Vec<usize> = inter.iter().map(|x| x.0).collect();
        let blockers: Vec<usize> = (0..self.th.len())
            .filter(|&j| j != k && self.on(j, cpu) && !ids.contains(&j))
            .collect();
        self.level((cpu, p), (c, &[k], windows), &inter, &blockers, None)
            .map(|(l, _)| l)
            .map_err(|why| format!("member {} at its own priority {p}: {why}", self.th[k].name))
    }

    /// A `SCHED_DEADLINE` member's part: `⌈C/Q⌉·P + D`.
    fn deadline_member(
        &self,
        k: usize,
        c: Nanos,
        susp: bool,
        (q, d, p): (Nanos, Nanos, Nanos),
    ) -> Result<Nanos, String> {
        let name = &self.th[k].name;
        if susp {
            return Err(format!(
                "SCHED_DEADLINE member {name} may suspend before it notifies: its reservation's progress across a suspension is not bounded here"
            ));
        }
        if !self.th[k].locks.is_empty() {
            return Err(format!(
                "SCHED_DEADLINE member {name} locks a mutex: its part is bounded only on its own reservation, without blocking"
            ));
        }
        let cpu = self.th[k].cpu;
        if cpu.is_none() {
            return Err(format!(
                "SCHED_DEADLINE member {name} is global: its part is bounded only for a reservation pinned to one CPU"
            ));
        }
        let density: f64 = (0..self.th.len())
            .filter(|&j| self.on(j, cpu))
            .filter_map(|j| match self.th[j].cls {
                Cls::Deadline { q, d, .. } => Some(q as f64 / d as f64),
                _ => None,
            })
            .sum();
        if density > 1.0 + 1e-12 {
            return Err(format!(
                "the SCHED_DEADLINE reservations of CPU {} have density {density:.3} > 1: {name}'s reservation is not guaranteed",
                cpu.unwrap_or(0)
            ));
        }
        Ok(c.div_ceil(q).saturating_mul(p).saturating_add(d))
    }

    /// The least gang priority a run of gang `r` can have.
    fn gang_level(&self, r: usize, members: &[usize]) -> Result<i32, String> {
        let gname = &self.sc.resources[r].name;
        let fixed = |k: &usize| match self.th[*k].cls {
            Cls::Fixed(p) => Some(p),
            _ => None,
        };
        let always: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&k| self.listed(r, k) && !self.uses_gang(k, r, |op| op == GangOp::Remove))
            .collect();
        let from_always = always.iter().filter_map(fixed).max();
        let least = members.iter().filter_map(fixed).min();
        match from_always.or(least) {
            Some(p) => Ok(p),
            None => Err(format!(
                "gang {gname} has no SCHED_FIFO/SCHED_RR member: its priority is not a real-time one, and CFS shares are not analysed"
            )),
        }
    }

    /// The one thread that issues every `gang_run` on `r`, if one does.
    fn single_issuer(&self, r: usize) -> Option<usize> {
        let issuers: Vec<usize> = (0..self.th.len())
            .filter(|&k| self.uses_gang(k, r, |op| matches!(op, GangOp::Run { .. })))
            .collect();
        match issuers.as_slice() {
            [k] => Some(*k),
            _ => None,
        }
    }

    /// Conditions only the single issuer signals, each signal after a
    /// `gang_wait` (no timeout) that follows its last `gang_run`: a member
    /// waiting on one before it notifies holds its run up until the run
    /// completes — never.
    fn resumption_conds(&self, r: usize, issuer: Option<usize>) -> HashSet<usize> {
        let mut out = HashSet::new();
        let Some(s) = issuer else {
            return out;
        };
        let mut bad: HashSet<usize> = HashSet::new();
        let mut conds: HashSet<usize> = HashSet::new();
        for (k, t) in self.th.iter().enumerate() {
            for e in &t.body {
                if let EventKind::Signal(c) | EventKind::Broadcast(c) = e.kind {
                    conds.insert(c.0);
                    if k != s {
                        bad.insert(c.0);
                    }
                }
            }
        }
        let body = &self.th[s].body;
        let mut waited = true;
        for e in body.iter().chain(body.iter()) {
            match e.kind {
                EventKind::Gang { gang, op } if gang.0 == r => match op {
                    GangOp::Run { .. } => waited = false,
                    GangOp::Wait { timeout_us: None } => waited = true,
                    _ => {}
                },
                EventKind::Signal(c) | EventKind::Broadcast(c) if !waited => {
                    bad.insert(c.0);
                }
                _ => {}
            }
        }
        for c in conds {
            if !bad.contains(&c) {
                out.insert(c);
            }
        }
        out
    }

    /// The items of thread `k`'s program for gang `r`.
    fn item(&self, e: &Event, r: usize, resumption: &HashSet<usize>) -> It {
        let what = |e: &Event| format!("\"{}\" at {}", e.key, e.path);
        match &e.kind {
            EventKind::Run(m) | EventKind::Runtime(m) => It::Work(ns(m.max())),
            EventKind::Sleep(m) => It::Susp(ns(m.max())),
            EventKind::Timer { period, .. } => It::Susp(ns(period.max())),
            EventKind::Wait { cond, .. } if resumption.contains(&cond.0) => It::Never,
            EventKind::Gang { gang, op } if gang.0 == r => match op {
                GangOp::Notify => It::Notify,
                GangOp::Remove => It::Remove,
                GangOp::Insert => It::Insert,
                GangOp::Active { bits } => It::Active(*bits),
                GangOp::Passive { bits } => It::Passive(*bits),
                GangOp::Run { .. } => It::Nop,
                GangOp::Wait { .. } => It::Block(what(e)),
            },
            _ if is_blocking(e) => It::Block(what(e)),
            _ => It::Nop,
        }
    }

    /// `C_m` of thread `k` in gang `r`: `Ok(None)` when no run can find it
    /// active; with it, the most suspensions counted in it (each lets
    /// threads below the level run, and start a critical section).
    fn member_work(
        &self,
        k: usize,
        r: usize,
        mask: u32,
        resumption: &HashSet<usize>,
    ) -> Result<Option<(Nanos, usize)>, String> {
        let th = &self.th[k];
        let body: Vec<It> = th
            .body
            .iter()
            .map(|e| self.item(e, r, resumption))
            .collect();
        let notifies = body.iter().any(|i| matches!(i, It::Notify | It::Remove));
        let loops = th.t.loops;
        let delay = ns(th.t.delay_us);
        let passes = match loops {
            None => 3,
            Some(n) => n.min(3) as usize,
        };
        let mut items: Vec<It> = Vec::new();
        if delay > 0 {
            items.push(It::Susp(delay));
        }
        let head = items.len();
        for _ in 0..passes {
            items.extend(body.iter().cloned());
        }
        if loops.is_some() {
            items.push(It::Exit);
        }
        // Which points are active.
        let mut member = self.listed(r, k);
        let mut bits = if member { GANG_DEFAULT_BITS } else { 0 };
        let mut active = Vec::with_capacity(items.len());
        for it in &items {
            active.push(member && gang_active(bits, mask));
            match it {
                It::Insert if !member => {
                    member = true;
                    bits = GANG_DEFAULT_BITS;
                }
                It::Remove | It::Exit => member = false,
                It::Active(b) if member => bits |= b,
                It::Passive(b) if member => bits &= !b,
                _ => {}
            }
        }
        let starts = match loops {
            None => head + 2 * body.len(),
            Some(_) => items.len(),
        };
        // A finite program without notify: the rest of it, every pass.
        if !notifies {
            if !active[..starts].iter().any(|&a| a) {
                return Ok(None);
            }
            let Some(n) = loops else {
                return Err(format!(
                    "member {} never notifies gang {} (no gang_notify or gang_remove in its loop): a run that finds it active never completes",
                    th.name, self.sc.resources[r].name
                ));
            };
            let mut per: Nanos = 0;
            let mut susp: usize = 0;
            for it in &body {
                match it {
                    It::Work(w) => per = per.saturating_add(*w),
                    It::Susp(w) => {
                        per = per.saturating_add(*w);
                        susp += 1;
                    }
                    It::Block(what) => {
                        return Err(format!(
                            "member {} may wait at {what} while a run waits for it (no bound on the wait)",
                            th.name
                        ))
                    }
                    It::Never => return Ok(None),
                    _ => {}
                }
            }
            let n_susp = usize::try_from(n).unwrap_or(usize::MAX);
            return Ok(Some((
                delay.saturating_add(per.saturating_mul(n)),
                susp.saturating_mul(n_susp)
                    .saturating_add(usize::from(delay > 0)),
            )));
        }
        // Backward, once: what each point leads to before its next notify.
        #[derive(Clone, Copy)]
        enum Fate {
            Notify(Nanos, usize),
            Never,
            Block(usize),
            End,
        }
        let mut fate = vec![Fate::End; items.len() + 1];
        for (i, it) in items.iter().enumerate().rev() {
            fate[i] = match it {
                It::Notify | It::Remove | It::Exit => Fate::Notify(0, 0),
                It::Never => Fate::Never,
                It::Block(_) => Fate::Block(i),
                It::Work(w) => match fate[i + 1] {
                    Fate::Notify(a, n) => Fate::Notify(a.saturating_add(*w), n),
                    f => f,
                },
                It::Susp(w) => match fate[i + 1] {
                    Fate::Notify(a, n) => Fate::Notify(a.saturating_add(*w), n + 1),
                    f => f,
                },
                _ => fate[i + 1],
            };
        }
        let mut best: Option<(Nanos, usize)> = None;
        for i in (0..starts).filter(|&i| active[i]) {
            match fate[i] {
                Fate::Notify(acc, n) => {
                    let b = best.get_or_insert((0, 0));
                    b.0 = b.0.max(acc);
                    b.1 = b.1.max(n);
                }
                Fate::Never => {}
                Fate::Block(at) => {
                    let what = match &items[at] {
                        It::Block(what) => what.as_str(),
                        _ => "?",
                    };
                    return Err(format!(
                        "member {} may wait at {what} before it notifies gang {}: the run waits as long (the GPM paper's §3: a member leaves the gang, gang_passive, before it waits)",
                        th.name, self.sc.resources[r].name
                    ));
                }
                Fate::End => {
                    return Err(format!(
                        "member {} may not notify gang {} within a loop of its program",
                        th.name, self.sc.resources[r].name
                    ))
                }
            }
        }
        Ok(best)
    }

    /// A member at or above the gang level, as interference. `counted`: its
    /// work up to its notify is in its `C_m`; then, if every run waits for
    /// it (below) and every notify is followed by a wait on the resumption
    /// condition, only the tail between them. Otherwise (not counted, or
    /// not waited for by every run — the GPM paper's Property 1: a member the
    /// run's mask leaves out still runs at its own priority): its work from
    /// any point to its next wait on the resumption condition, which is
    /// signalled only after the run completes, if every point reaches one
    /// through work only; else its whole workload.
    fn top_member_load(&self, k: usize, r: usize, counted: bool) -> Load {
        // Every run must wait for it: listed, its bits never changed, and
        // one mask for every run, which includes its bit.
        let always = self.listed(r, k)
            && !self.uses_gang(k, r, |op| {
                matches!(
                    op,
                    GangOp::Remove | GangOp::Passive { .. } | GangOp::Active { .. }
                )
            });
        let mut masks = self
            .th
            .iter()
            .flat_map(|t| t.body.iter())
            .filter_map(|e| match e.kind {
                EventKind::Gang {
                    gang,
                    op: GangOp::Run { mask },
                } if gang.0 == r => Some(mask),
                _ => None,
            });
        let first = masks.next();
        let one_mask = first.is_some_and(|m| gang_active(GANG_DEFAULT_BITS, m))
            && masks.all(|m| Some(m) == first);
        let issuer = self.single_issuer(r);
        let resumption = self.resumption_conds(r, issuer);
        let body: Vec<It> = self.th[k]
            .body
            .iter()
            .map(|e| self.item(e, r, &resumption))
            .collect();
        if !counted || !always || !one_mask {
            return self
                .until_resumption(k, &body)
                .map_or_else(|| self.load(k), Load::total);
        }
        let mut tail: Nanos = 0;
        let n = body.len();
        for (i, it) in body.iter().enumerate() {
            if !matches!(it, It::Notify) {
                continue;
            }
            let mut acc: Nanos = 0;
            let mut ok = false;
            for j in 1..=n {
                let idx = i + j;
                if idx >= n && self.th[k].t.loops.is_some() {
                    ok = true; // it exits
                    break;
                }
                match &body[idx % n] {
                    It::Work(w) => acc = acc.saturating_add(*w),
                    It::Never => {
                        ok = true;
                        break;
                    }
                    It::Nop => {}
                    _ => break,
                }
            }
            if !ok {
                return self.load(k);
            }
            tail = tail.max(acc);
        }
        Load::total(tail)
    }

    /// The most work thread `k` (items `body`, an endless loop) executes
    /// from any point of its program to its next wait on the resumption
    /// condition; `None` if some point can reach a suspension, a blocking
    /// wait or the end first, or it never waits on it.
    fn until_resumption(&self, k: usize, body: &[It]) -> Option<Nanos> {
        let n = body.len();
        if self.th[k].t.loops.is_some() || !body.iter().any(|i| matches!(i, It::Never)) {
            return None;
        }
        // Backwards over two turns of the loop: work to the next Never.
        let mut acc: Option<Nanos> = None;
        let mut most: Nanos = 0;
        for idx in (0..2 * n).rev() {
            acc = match &body[idx % n] {
                It::Never => Some(0),
                It::Work(w) => acc.map(|a| a.saturating_add(*w)),
                It::Susp(_) | It::Block(_) | It::Exit => None,
                _ => acc,
            };
            if idx < n {
                most = most.max(acc?);
            }
        }
        Some(most)
    }

    /// The single issuer `k` of gang `r` that waits for each of its runs:
    /// during a run it executes at most its work between a `gang_run` and
    /// the `gang_wait` after it.
    fn issuer_load(&self, k: usize, r: usize) -> Load {
        let body = &self.th[k].body;
        let n = body.len();
        let mut most: Nanos = 0;
        for (i, e) in body.iter().enumerate() {
            if !matches!(e.kind, EventKind::Gang { gang, op: GangOp::Run { .. } } if gang.0 == r) {
                continue;
            }
            let mut acc: Nanos = 0;
            let mut ok = false;
            for j in 1..=n {
                let idx = i + j;
                if idx >= n && self.th[k].t.loops.is_some() && idx % n == 0 {
                    // The program may end: nothing more.
                    ok = true;
                    break;
                }
                let f = body[idx % n];
                match &f.kind {
                    EventKind::Gang {
                        gang,
                        op: GangOp::Wait { timeout_us: None },
                    } if gang.0 == r => {
                        ok = true;
                        break;
                    }
                    EventKind::Run(m) | EventKind::Runtime(m) => {
                        acc = acc.saturating_add(ns(m.max()))
                    }
                    _ if is_blocking(f) => break,
                    EventKind::Sleep(_) | EventKind::Timer { .. } => break,
                    EventKind::Gang {
                        gang,
                        op: GangOp::Run { .. },
                    } if gang.0 == r => break,
                    _ => {}
                }
            }
            if !ok {
                return self.load(k);
            }
            most = most.max(acc);
        }
        Load::total(most)
    }

    /// What thread `k` may execute in any window (its whole program).
    fn load(&self, k: usize) -> Load {
        let th = &self.th[k];
        if let Cls::Deadline { q, p, .. } = th.cls {
            return Load::Reservation { q, p };
        }
        let total = th.t.loops.map(|n| th.body_work.saturating_mul(n));
        let mut timers: Vec<(Nanos, bool)> = Vec::new();
        let mut sleeps: Nanos = 0;
        let mut blocks = false;
        for e in &th.body {
            match &e.kind {
                EventKind::Timer { timer, period } => {
                    let absolute = matches!(
                        self.sc.resources.get(timer.0).map(|x| &x.kind),
                        Some(ResourceKind::Timer {
                            mode: TimerMode::Absolute,
                            ..
                        })
                    );
                    timers.push((ns(period.min()), absolute));
                }
                EventKind::Sleep(m) => sleeps = sleeps.saturating_add(ns(m.min())),
                _ if is_blocking(e) => blocks = true,
                _ => {}
            }
        }
        let every = if let Some(t) = timers.iter().map(|x| x.0).min() {
            let job = job_work(&th.body);
            let absolute = timers.iter().any(|x| x.1);
            let checked = !absolute || self.response_ok(k, t, job).is_ok();
            (t > 0 && checked).then_some((t, job))
        } else if sleeps > 0 {
            Some((sleeps, th.body_work))
        } else {
            None
        };
        if total.is_none() && every.is_none() {
            let why = if !timers.is_empty() {
                match self.response_ok(k, 0, 0) {
                    Err(why) => why,
                    Ok(()) => format!("{} may fall behind its absolute timer", th.name),
                }
            } else if blocks {
                format!(
                    "{} runs forever with no timer or sleep (it only blocks): no bound on how often it runs",
                    th.name
                )
            } else {
                format!("{} runs forever with no timer or sleep", th.name)
            };
            return Load::Unbounded(why);
        }
        Load::Bounded { total, every }
    }

    /// Whether thread `k` (absolute timer, period `t`, job `e`) finishes
    /// every job within its period (first-miss argument: assumed while
    /// being checked).
    fn response_ok(&self, k: usize, t: Nanos, e: Nanos) -> Result<(), String> {
        if let Some(state) = self.checked.borrow().get(&k) {
            return match state {
                None => Ok(()),
                Some(r) => r.clone(),
            };
        }
        self.checked.borrow_mut().insert(k, None);
        let Cls::Fixed(p) = self.th[k].cls else {
            return Ok(());
        };
        let cpu = self.th[k].cpu;
        let mut inter = Vec::new();
        for j in 0..self.th.len() {
            if j == k || !self.on(j, cpu) {
                continue;
            }
            let eff = match self.th[j].cls {
                Cls::Deadline { q, p, .. } => {
                    inter.push((j, Load::Reservation { q, p }));
                    continue;
                }
                Cls::Fixed(pj) => Some(pj).max(self.boost[j]),
                Cls::Other => self.boost[j],
            };
            if eff.is_some_and(|x| x >= p) {
                inter.push((j, self.load(j)));
            }
        }
        let ids: Vec<usize> = inter.iter().map(|x| x.0).collect();
        let blockers: Vec<usize> = (0..self.th.len())
            .filter(|&j| j != k && self.on(j, cpu) && !ids.contains(&j))
            .collect();
        let result = match self.level((cpu, p), (e, &[k], 0), &inter, &blockers, None) {
            Ok((l, _)) if l <= t => Ok(()),
            Ok((l, _)) => Err(format!(
                "{} (absolute timer) may take {} µs > its period {} µs and fall behind",
                self.th[k].name,
                fmt_us(l),
                fmt_us(t)
            )),
            // The first thread that falls behind names the cause.
            Err(why) if why.contains("absolute timer") => Err(why),
            Err(why) => Err(format!(
                "{} (absolute timer) has no response bound: {why}",
                self.th[k].name
            )),
        };
        self.checked.borrow_mut().insert(k, Some(result.clone()));
        result
    }

    /// The level-`lambda` fixed point on CPU `cpu`: `demand` of
    /// `demand_threads`, interference `inter`, blocking by `blockers`.
    /// Returns `(L, B)`.
    fn level(
        &self,
        (cpu, lambda): (Option<u32>, i32),
        (demand, demand_threads, windows): (Nanos, &[usize], usize),
        inter: &[(usize, Load)],
        blockers: &[usize],
        tails: Option<usize>,
    ) -> Result<(Nanos, Nanos), String> {
        for (_, l) in inter {
            if let Load::Unbounded(why) = l {
                return Err(if why.starts_with("interference without bound") {
                    why.clone()
                } else {
                    format!("interference without bound: {why}")
                });
            }
        }
        // Mutexes the level's work may need, closed over nesting.
        let mut rel: HashSet<usize> = HashSet::new();
        for &k in demand_threads.iter().chain(inter.iter().map(|x| &x.0)) {
            rel.extend(self.th[k].locks.iter().copied());
        }
        loop {
            let before = rel.len();
            for t in &self.th {
                for s in &t.sections {
                    if s.mutexes.iter().any(|m| rel.contains(m)) {
                        rel.extend(s.mutexes.iter().copied());
                    }
                }
            }
            if rel.len() == before {
                break;
            }
        }
        let mname = |m: usize| self.sc.resources[m].name.clone();
        if self.ncpus > 1 {
            for &m in &rel {
                for t in &self.th {
                    if t.locks.contains(&m) && (t.cpu.is_none() || t.cpu != cpu) {
                        return Err(format!(
                            "mutex {} is also used by {} on another CPU: global mutexes are not analysed",
                            mname(m),
                            t.name
                        ));
                    }
                }
            }
        }
        for (k, _) in inter {
            let th = &self.th[*k];
            if th
                .sections
                .iter()
                .any(|s| s.suspends && s.mutexes.iter().any(|m| rel.contains(m)))
            {
                return Err(format!(
                    "{} may suspend while it holds a mutex the level needs: its load does not count the suspension",
                    th.name
                ));
            }
        }
        let mut b: Nanos = 0;
        for &k in blockers {
            let mut longest: Option<Nanos> = Some(0);
            // A pending, always-active member of gang `g` blocks the level
            // only with the rest of a section it notifies in (what it
            // holds before is in its C_m).
            let tail_only = tails.filter(|&g| {
                demand_threads.contains(&k)
                    && self.listed(g, k)
                    && !self.uses_gang(k, g, |op| {
                        matches!(op, GangOp::Remove | GangOp::Passive { .. })
                    })
            });
            for s in &self.th[k].sections {
                if !s.mutexes.iter().any(|m| rel.contains(m)) {
                    continue;
                }
                if tail_only.is_some_and(|g| !s.notified.contains(&g)) {
                    continue;
                }
                for &m in &s.mutexes {
                    match self.sc.resources[m].kind {
                        ResourceKind::Mutex {
                            protocol: MutexProtocol::None,
                        } => {
                            return Err(format!(
                                "{} holds mutex {}, which has no protocol: while it is needed the owner runs at its own priority and a medium task can delay it without bound",
                                self.th[k].name,
                                mname(m)
                            ))
                        }
                        ResourceKind::Mutex {
                            protocol: MutexProtocol::Ceiling(ceiling),
                        } if ceiling < lambda => {
                            return Err(format!(
                                "{} holds ceiling mutex {} (ceiling {ceiling}) below the level {lambda}: a medium task can delay it without bound",
                                self.th[k].name,
                                mname(m)
                            ))
                        }
                        _ => {}
                    }
                }
                longest = match (longest, s.length) {
                    (Some(a), Some(l)) => Some(a.max(l)),
                    _ => None,
                };
            }
            // One section in progress at the start, and one more per
            // window in which every pending member is suspended (a thread
            // below the level may then start a new one); at most every
            // section a finite program has.
            let relevant = self.th[k]
                .sections
                .iter()
                .filter(|s| s.mutexes.iter().any(|m| rel.contains(m)))
                .count() as u64;
            let mut times = (windows as u64).saturating_add(1);
            if let Some(n) = self.th[k].t.loops {
                times = times.min(relevant.saturating_mul(n));
            }
            match longest {
                Some(l) => b = b.saturating_add(l.saturating_mul(times)),
                None => {
                    return Err(format!(
                        "{} may wait without bound while it holds a mutex the level needs",
                        self.th[k].name
                    ))
                }
            }
        }
        let u: f64 = inter.iter().map(|(_, l)| l.utilisation()).sum();
        if u >= 1.0 {
            let names: Vec<&str> = inter
                .iter()
                .filter(|(_, l)| l.utilisation() > 0.0)
                .map(|(k, _)| self.th[*k].name.as_str())
                .collect();
            return Err(format!(
                "the interference of {} fills the CPU (utilisation {u:.3} ≥ 1)",
                names.join(", ")
            ));
        }
        let base = demand.saturating_add(b);
        let mut l = base;
        for _ in 0..MAX_ITERATIONS {
            if crate::error::is_cancelled(self.cancel.as_ref()) {
                return Err("the analysis was cancelled".to_string());
            }
            let mut next = base;
            for (_, load) in inter {
                next = next.saturating_add(load.within(l).unwrap_or(Nanos::MAX));
            }
            if next == l {
                return Ok((l, b));
            }
            if next > HORIZON {
                return Err(format!(
                    "the fixed point exceeds {} s: the interference leaves the level no time",
                    HORIZON / 1_000_000_000
                ));
            }
            l = next;
        }
        Err(format!(
            "the fixed point did not converge within {MAX_ITERATIONS} steps: the interference leaves the level almost no time"
        ))
    }
}

/// The largest work between two timers of a body, cyclically.
fn job_work(body: &[&Event]) -> Nanos {
    let Some(first) = body
        .iter()
        .position(|e| matches!(e.kind, EventKind::Timer { .. }))
    else {
        return 0;
    };
    let n = body.len();
    let (mut best, mut acc) = (0u64, 0u64);
    for step in 1..=n {
        match body[(first + step) % n].kind {
            EventKind::Timer { .. } => {
                best = best.max(acc);
                acc = 0;
            }
            EventKind::Run(m) | EventKind::Runtime(m) => acc = acc.saturating_add(ns(m.max())),
            _ => {}
        }
    }
    best.max(acc)
}
