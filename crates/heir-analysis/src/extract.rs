//! From a [`Scenario`] to the analysis [`TaskSet`]: the same file the
//! simulator and the real-time runner execute.
//!
//! - A task whose events are all `serve` of one endpoint is a **server**.
//! - Every other real-time thread is a **periodic task**: its period is its
//!   `timer`'s period (the smallest, if several); a job is what runs between
//!   two `timer` events, following phases and their `loop` counts (a phase
//!   with a timer is unrolled twice so that its tail and its head form the
//!   job that spans the loop back). `C` sums the `max` of every `run` /
//!   `runtime` of a job outside `call`s; each `call` is an RPC whose `D` is
//!   its `run` max; `lock`/`unlock` spans are critical sections (nesting is
//!   kept, unlocks must be innermost-first).
//! - `SCHED_FIFO`/`SCHED_RR` tasks are fixed-priority; `SCHED_DEADLINE` tasks
//!   are reservations; `SCHED_OTHER`/`BATCH`/`IDLE` tasks that share nothing
//!   with real-time tasks are skipped (they never delay them), else refused.
//! - Partitioned: every analysed thread must be pinned to exactly one CPU.
//!
//! Refused with the event's position: self-suspensions inside a job (`sleep`,
//! `wait`, `barrier`, `suspend`, `pop`, `push`), a `call` inside a critical
//! section, a lock held across a `timer`, a server that serves several
//! endpoints or mixes `serve` with other events, an endpoint with several
//! servers, a call or a mutex shared across CPUs, nested locks taken in
//! opposite orders, a task over 100% of its CPU.

use std::collections::HashMap;

use heir_scenario::{
    Event, EventKind, MutexProtocol, Phase, Policy, ResIdx, ResourceKind, Scenario, Task as ScTask,
};

use crate::error::{AnalysisError, ErrorKind, Location};
use crate::model::{
    fmt_us, Call, Class, LockProtocol, Mutex, Nanos, Section, Server, Task, TaskSet,
};

/// Events a job may have after unrolling `loop`s; beyond, the file is refused.
const MAX_UNROLLED_EVENTS: usize = 200_000;

/// A scenario's task set, and what was left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Extracted {
    pub set: TaskSet,
    /// JSON path of each task of `set` (threads of one task share it).
    pub paths: Vec<String>,
    /// Threads not analysed, with why (e.g. a `SCHED_OTHER` background task).
    pub skipped: Vec<(String, String)>,
}

fn at_event(e: &Event) -> Option<Location> {
    Some(Location {
        path: e.path.clone(),
        line: e.line,
        column: e.column,
    })
}

fn at_path(p: &str) -> Option<Location> {
    Some(Location::path(p))
}

/// At a task's key in the file (its path only when it has no position).
fn at_task(t: &ScTask) -> Option<Location> {
    Some(Location {
        path: t.path.clone(),
        line: t.line,
        column: t.column,
    })
}

/// At a phase's key in the file.
fn at_phase(p: &Phase) -> Option<Location> {
    Some(Location {
        path: p.path.clone(),
        line: p.line,
        column: p.column,
    })
}

fn unsupported(at: Option<Location>, msg: impl Into<String>) -> AnalysisError {
    AnalysisError::new(ErrorKind::Unsupported, at, msg)
}

fn us(v: u64) -> Nanos {
    v.saturating_mul(1000)
}

fn all_events(t: &ScTask) -> impl Iterator<Item = &Event> {
    t.phases.iter().flat_map(|p| p.events.iter())
}

/// One job's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Job {
    local: Nanos,
    calls: Vec<Call>,
    sections: Vec<Section>,
}

/// Extracts the analysis model. See the module docs for what is accepted.
pub fn extract(sc: &Scenario) -> Result<Extracted, AnalysisError> {
    // Servers first: endpoint -> server index.
    let mut servers: Vec<Server> = Vec::new();
    let mut endpoint_server: HashMap<usize, usize> = HashMap::new();
    let mut is_server = vec![false; sc.tasks.len()];
    for (ti, t) in sc.tasks.iter().enumerate() {
        let mut serves: Vec<ResIdx> = Vec::new();
        let mut others = 0usize;
        for e in all_events(t) {
            match e.kind {
                EventKind::Serve(r) => {
                    if !serves.contains(&r) {
                        serves.push(r)
                    }
                }
                _ => others += 1,
            }
        }
        if serves.is_empty() {
            continue;
        }
        if others > 0 {
            let e = all_events(t).find(|e| !matches!(e.kind, EventKind::Serve(_)));
            return Err(unsupported(
                e.and_then(at_event).or_else(|| at_task(t)),
                format!(
                    "task {} mixes \"serve\" with other events; the RPC analysis (seed 000 §5) models servers that only serve",
                    t.name
                ),
            ));
        }
        if serves.len() > 1 {
            return Err(unsupported(
                at_task(t),
                format!(
                    "server {} serves several endpoints in turn: a request can wait for another endpoint's caller, which is not analysed; use one server thread per endpoint",
                    t.name
                ),
            ));
        }
        is_server[ti] = true;
        if t.instance == 0 {
            continue;
        }
        if t.instance > 1 {
            return Err(unsupported(
                at_task(t),
                format!(
                    "server {} has {} instances: a pool of servers per endpoint is not analysed (seed 000 §5 has one server per endpoint)",
                    t.name, t.instance
                ),
            ));
        }
        let priority = match t.sched.policy {
            Policy::Fifo | Policy::Rr => t.sched.priority,
            p => {
                return Err(unsupported(
                    at_task(t),
                    format!(
                        "server {} is {}: the analysis needs SCHED_FIFO or SCHED_RR servers",
                        t.name,
                        p.name()
                    ),
                ))
            }
        };
        let cpu = one_cpu(t)?;
        let r = serves[0].0;
        if endpoint_server.contains_key(&r) {
            let name = sc.resources.get(r).map(|x| x.name.as_str()).unwrap_or("?");
            return Err(unsupported(
                at_task(t),
                format!("endpoint {name} has several servers: a pool of servers per endpoint is not analysed"),
            ));
        }
        endpoint_server.insert(r, servers.len());
        servers.push(Server {
            name: t.name.clone(),
            cpu,
            priority,
        });
    }

    // Mutexes.
    let mut mutex_index: HashMap<usize, usize> = HashMap::new();
    let mut mutexes: Vec<Mutex> = Vec::new();
    for (ri, r) in sc.resources.iter().enumerate() {
        if let ResourceKind::Mutex { protocol } = r.kind {
            mutex_index.insert(ri, mutexes.len());
            mutexes.push(Mutex {
                name: r.name.clone(),
                protocol: match protocol {
                    MutexProtocol::None => LockProtocol::None,
                    MutexProtocol::Inherit => LockProtocol::Inherit,
                    MutexProtocol::Ceiling { ceiling } => LockProtocol::Ceiling(ceiling),
                },
            });
        }
    }

    let mut tasks: Vec<Task> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut non_rt: Vec<usize> = Vec::new();
    // First use of each mutex: (cpu, task name).
    let mut mutex_cpu: HashMap<usize, (u32, String)> = HashMap::new();
    // (outer, inner) -> the inner lock event, for naming lock cycles.
    let mut lock_edges: HashMap<(usize, usize), Location> = HashMap::new();

    for (ti, t) in sc.tasks.iter().enumerate() {
        if is_server[ti] || t.instance == 0 {
            continue;
        }
        let class = match t.sched.policy {
            Policy::Fifo | Policy::Rr => Class::Fixed {
                priority: t.sched.priority,
            },
            Policy::Deadline => match t.sched.dl {
                Some(dl) => Class::Deadline {
                    runtime: us(dl.runtime_us),
                    deadline: us(dl.deadline_us),
                    period: us(dl.period_us),
                },
                None => {
                    return Err(AnalysisError::new(
                        ErrorKind::Invalid,
                        at_task(t),
                        format!(
                            "task {} is SCHED_DEADLINE without runtime/deadline/period",
                            t.name
                        ),
                    ))
                }
            },
            Policy::Other | Policy::Batch | Policy::Idle => {
                non_rt.push(ti);
                continue;
            }
        };
        for p in &t.phases {
            if let Some(s) = p.sched {
                if s != t.sched {
                    return Err(unsupported(
                        at_phase(p),
                        format!(
                            "phase {} of task {} changes the scheduling parameters: a task with several modes is not analysed",
                            p.name, t.name
                        ),
                    ));
                }
            }
        }
        let cpu = one_cpu(t)?;
        let (jobs, period, period_at) =
            jobs_of(sc, t, &endpoint_server, &mutex_index, &mut lock_edges)?;
        // Cross-CPU checks, with positions.
        for e in all_events(t) {
            match e.kind {
                EventKind::Call { endpoint, .. } => {
                    if let Some(&k) = endpoint_server.get(&endpoint.0) {
                        if servers[k].cpu != cpu {
                            return Err(unsupported(
                                at_event(e),
                                format!(
                                    "task {} on CPU {} calls server {} on CPU {}: the RPC analysis (seed 000 §5) covers calls to a server on the caller's CPU only",
                                    t.name, cpu, servers[k].name, servers[k].cpu
                                ),
                            ));
                        }
                    }
                }
                EventKind::Lock(r) => {
                    if let Some(&m) = mutex_index.get(&r.0) {
                        match mutex_cpu.get(&m) {
                            Some((c, other)) if *c != cpu => {
                                return Err(unsupported(
                                    at_event(e),
                                    format!(
                                        "mutex {} is used by {} on CPU {} and by {} on CPU {}: global resources need a multiprocessor locking protocol, which heir does not analyse; keep every user of a mutex on one CPU",
                                        mutexes[m].name, other, c, t.name, cpu
                                    ),
                                ))
                            }
                            Some(_) => {}
                            None => {
                                mutex_cpu.insert(m, (cpu, t.name.clone()));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let wcet = jobs.iter().map(|j| j.local).max().unwrap_or(0);
        let demand = jobs
            .iter()
            .map(|j| j.local.saturating_add(j.calls.iter().map(|c| c.wcet).sum()))
            .max()
            .unwrap_or(0);
        if demand > period {
            return Err(AnalysisError::new(
                ErrorKind::Overload,
                period_at.clone().or_else(|| at_task(t)),
                format!(
                    "task {} needs {} µs per job every {} µs: utilisation {:.3} > 1, no schedule can meet it",
                    t.name,
                    fmt_us(demand),
                    fmt_us(period),
                    demand as f64 / period as f64
                ),
            ));
        }
        let mut sections: Vec<Section> = Vec::new();
        let mut calls: Vec<Call> = Vec::new();
        for j in &jobs {
            let off = sections.len();
            sections.extend(j.sections.iter().map(|s| Section {
                mutex: s.mutex,
                length: s.length,
                parent: s.parent.map(|p| p + off),
            }));
            for c in &j.calls {
                if !calls.contains(c) {
                    calls.push(*c);
                }
            }
        }
        for name in t.thread_names() {
            tasks.push(Task {
                name,
                cpu,
                class,
                period,
                deadline: period,
                wcet,
                demand,
                sections: sections.clone(),
                calls: calls.clone(),
            });
            paths.push(t.path.clone());
        }
    }

    // Non-real-time tasks: skipped unless they share a mutex with analysed
    // tasks or call a server.
    for ti in non_rt {
        let t = &sc.tasks[ti];
        for e in all_events(t) {
            let shares = match e.kind {
                EventKind::Lock(r) => mutex_index
                    .get(&r.0)
                    .is_some_and(|m| mutex_cpu.contains_key(m)),
                EventKind::Call { .. } => true,
                _ => false,
            };
            if shares {
                return Err(unsupported(
                    at_event(e),
                    format!(
                        "task {} is {} and shares a mutex or a server with real-time tasks: a non-real-time owner can be starved, the blocking is not bounded",
                        t.name,
                        t.sched.policy.name()
                    ),
                ));
            }
        }
        for name in t.thread_names() {
            skipped.push((
                name,
                format!(
                    "{}: never delays real-time tasks, not analysed",
                    t.sched.policy.name()
                ),
            ));
        }
    }

    let set = TaskSet {
        tasks,
        servers,
        mutexes,
        pi_cv: sc.global.pi_cv,
    };
    if let Some(cycle) = set.lock_order_cycle() {
        let idx: HashMap<&str, usize> = set
            .mutexes
            .iter()
            .enumerate()
            .map(|(k, m)| (m.name.as_str(), k))
            .collect();
        let at = cycle.windows(2).find_map(|w| {
            let (a, b) = (idx.get(w[0].as_str())?, idx.get(w[1].as_str())?);
            lock_edges.get(&(*a, *b)).cloned()
        });
        return Err(AnalysisError::new(
            ErrorKind::LockCycle,
            at,
            format!(
                "cycle of critical sections {}: nested locks are taken in opposite orders, which can deadlock; take them in one global order",
                cycle.join(" -> ")
            ),
        ));
    }
    set.validate()?;
    Ok(Extracted {
        set,
        paths,
        skipped,
    })
}

fn one_cpu(t: &ScTask) -> Result<u32, AnalysisError> {
    let cpu = match t.cpus.as_deref() {
        Some([c]) => *c,
        Some([]) => {
            return Err(unsupported(at_task(t), format!("task {} has an empty \"cpus\" list", t.name)))
        }
        Some(list) => {
            return Err(unsupported(
                at_path(&format!("{}.cpus", t.path)),
                format!(
                    "task {} may run on CPUs {:?}: the analysis is partitioned, pin every task to one CPU (\"cpus\": [N])",
                    t.name, list
                ),
            ))
        }
        None => {
            return Err(unsupported(
                at_task(t),
                format!(
                    "task {} may run on any CPU: the analysis is uniprocessor / partitioned, pin every task to one CPU (\"cpus\": [N])",
                    t.name
                ),
            ))
        }
    };
    for p in &t.phases {
        if let Some(c) = &p.cpus {
            if c.as_slice() != [cpu] {
                return Err(unsupported(
                    at_path(&format!("{}.cpus", p.path)),
                    format!(
                        "phase {} of task {} moves it to CPUs {:?}: migrating tasks are not analysed",
                        p.name, t.name, c
                    ),
                ));
            }
        }
    }
    Ok(cpu)
}

fn has_timer(p: &Phase) -> bool {
    p.events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Timer { .. }))
}

/// The distinct job shapes of a task, its period, and where the period is.
fn jobs_of(
    sc: &Scenario,
    t: &ScTask,
    endpoint_server: &HashMap<usize, usize>,
    mutex_index: &HashMap<usize, usize>,
    lock_edges: &mut HashMap<(usize, usize), Location>,
) -> Result<(Vec<Job>, Nanos, Option<Location>), AnalysisError> {
    // Unroll.
    let mut seq: Vec<&Event> = Vec::new();
    for p in &t.phases {
        let reps = if has_timer(p) {
            p.loops.min(2)
        } else {
            p.loops
        };
        let total = (reps as usize).saturating_mul(p.events.len());
        if seq.len().saturating_add(total) > MAX_UNROLLED_EVENTS {
            return Err(unsupported(
                at_phase(p),
                format!(
                    "phase {} of task {} repeats {} events {} times without a timer: too long to analyse as one job",
                    p.name,
                    t.name,
                    p.events.len(),
                    p.loops
                ),
            ));
        }
        for _ in 0..reps {
            seq.extend(p.events.iter());
        }
    }
    let Some(first) = seq
        .iter()
        .position(|e| matches!(e.kind, EventKind::Timer { .. }))
    else {
        return Err(AnalysisError::new(
            ErrorKind::MissingPeriod,
            at_task(t),
            format!(
                "task {} has no \"timer\": the analysis needs a period (add \"timer\": {{ \"ref\": \"unique\", \"period\": N }}); a task whose events are only \"serve\" is a server",
                t.name
            ),
        ));
    };
    // A lock held across a timer, in file order (the cyclic walk below would
    // only see the unmatched unlock).
    let mut held: Vec<&Event> = Vec::new();
    for &e in &seq {
        match &e.kind {
            EventKind::Lock(_) => held.push(e),
            EventKind::Unlock(r) => {
                if let Some(k) = held
                    .iter()
                    .rposition(|l| matches!(l.kind, EventKind::Lock(x) if x == *r))
                {
                    held.remove(k);
                }
            }
            EventKind::Timer { .. } => {
                if let Some(le) = held.last() {
                    let name = match le.kind {
                        EventKind::Lock(r) => sc
                            .resources
                            .get(r.0)
                            .map(|x| x.name.as_str())
                            .unwrap_or("?"),
                        _ => "?",
                    };
                    return Err(unsupported(
                        at_event(le),
                        format!(
                            "task {} holds {} across its timer at {}: a critical section that spans a period (a self-suspension while holding a lock) is not analysed",
                            t.name, name, e.path
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    let mut period = Nanos::MAX;
    let mut period_at = None;
    let mut jobs: Vec<Job> = Vec::new();
    let mut job = Job {
        local: 0,
        calls: Vec::new(),
        sections: Vec::new(),
    };
    // (section index, mutex index, resource index, lock event)
    let mut open: Vec<(usize, usize, usize, &Event)> = Vec::new();
    let n = seq.len();
    for step in 1..=n {
        let e = seq[(first + step) % n];
        match &e.kind {
            EventKind::Run(m) | EventKind::Runtime(m) => {
                let w = us(m.max());
                job.local = job.local.saturating_add(w);
                for &(s, _, _, _) in &open {
                    job.sections[s].length = job.sections[s].length.saturating_add(w);
                }
            }
            EventKind::Timer { period: p, .. } => {
                if let Some(&(_, _, m, le)) = open.last() {
                    let name = sc.resources.get(m).map(|r| r.name.as_str()).unwrap_or("?");
                    return Err(unsupported(
                        at_event(le),
                        format!(
                            "task {} holds {} across its timer at {}: a critical section that spans a period (a self-suspension while holding a lock) is not analysed",
                            t.name, name, e.path
                        ),
                    ));
                }
                let p = us(p.min());
                if p == 0 {
                    return Err(AnalysisError::new(
                        ErrorKind::MissingPeriod,
                        at_event(e),
                        format!("task {} has a timer of period 0", t.name),
                    ));
                }
                if p < period {
                    period = p;
                    period_at = at_event(e);
                }
                let done = std::mem::replace(
                    &mut job,
                    Job {
                        local: 0,
                        calls: Vec::new(),
                        sections: Vec::new(),
                    },
                );
                if !jobs.contains(&done) {
                    jobs.push(done);
                }
            }
            EventKind::Lock(r) => {
                let Some(&m) = mutex_index.get(&r.0) else {
                    return Err(unsupported(
                        at_event(e),
                        "lock of a resource that is not a mutex",
                    ));
                };
                // Every enclosing mutex is held while m is locked.
                for &(_, outer, _, _) in &open {
                    lock_edges
                        .entry((outer, m))
                        .or_insert_with(|| at_event(e).unwrap_or_else(|| Location::path(&e.path)));
                }
                job.sections.push(Section {
                    mutex: m,
                    length: 0,
                    parent: open.last().map(|&(s, _, _, _)| s),
                });
                open.push((job.sections.len() - 1, m, r.0, e));
            }
            EventKind::Unlock(r) => match open.last() {
                Some(&(_, _, top, _)) if top == r.0 => {
                    open.pop();
                }
                Some(&(_, _, top, _)) => {
                    let name =
                        |x: usize| sc.resources.get(x).map(|r| r.name.as_str()).unwrap_or("?");
                    return Err(unsupported(
                        at_event(e),
                        format!(
                            "unlock of {} while {} (locked later) is still held: critical sections must be properly nested",
                            name(r.0),
                            name(top)
                        ),
                    ));
                }
                None => {
                    let name = sc
                        .resources
                        .get(r.0)
                        .map(|x| x.name.as_str())
                        .unwrap_or("?");
                    return Err(unsupported(
                        at_event(e),
                        format!("unlock of {name}, which the job does not hold"),
                    ));
                }
            },
            EventKind::Call { endpoint, run } => {
                if let Some(&(_, _, m, _)) = open.last() {
                    let name = sc.resources.get(m).map(|r| r.name.as_str()).unwrap_or("?");
                    return Err(unsupported(
                        at_event(e),
                        format!("call inside a critical section on {name}: not analysed"),
                    ));
                }
                let Some(&server) = endpoint_server.get(&endpoint.0) else {
                    let name = sc
                        .resources
                        .get(endpoint.0)
                        .map(|r| r.name.as_str())
                        .unwrap_or("?");
                    return Err(unsupported(
                        at_event(e),
                        format!("call to endpoint {name}, which no server task serves"),
                    ));
                };
                job.calls.push(Call {
                    server,
                    wcet: us(run.max()),
                });
            }
            EventKind::Yield
            | EventKind::Signal(_)
            | EventKind::Broadcast(_)
            | EventKind::Resume(_) => {}
            EventKind::Sleep(_)
            | EventKind::Wait { .. }
            | EventKind::Barrier(_)
            | EventKind::Suspend(_)
            | EventKind::Push(_)
            | EventKind::Pop(_)
            | EventKind::Serve(_) => {
                return Err(unsupported(
                    at_event(e),
                    format!(
                        "\"{}\" in task {}: a self-suspension inside a job is outside the analysed model (periodic jobs of run/runtime, lock/unlock and call)",
                        e.key, t.name
                    ),
                ));
            }
        }
    }
    Ok((jobs, period, period_at))
}
