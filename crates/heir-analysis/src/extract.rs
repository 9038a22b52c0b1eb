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
//! - A real-time thread with no `timer` that blocks (`wait`, `pop`), works
//!   and replies (`signal`, `broad`, `push`) is a **helper thread**: a
//!   server; a job's `wait`/`pop` on its reply is a call to it, its
//!   `signal`/`broad`/`push` to a helper's request object a request the job
//!   must wait for (see `extract/helpers.rs` and docs/ANALYSIS.md §4.1).
//!
//! Refused with the event's position: other self-suspensions inside a job
//! (`sleep`, `barrier`, `suspend`, a `wait` or `pop` no helper thread
//! answers, a `push` to a queue that may fill), a helper thread outside the
//! rule (the message names it), a `call` inside a critical
//! section, a lock held across a `timer`, a server that serves several
//! endpoints or mixes `serve` with other events, an endpoint with several
//! servers, a call or a mutex shared across CPUs, nested locks taken in
//! opposite orders, a task over 100% of its CPU.

mod helpers;

use std::collections::HashMap;

use heir_scenario::{
    Event, EventKind, Phase, Policy, ResIdx, ResourceKind, Scenario, Task as ScTask,
};

use crate::error::{AnalysisError, ErrorKind, Location};
use crate::model::{
    fmt_us, lock_cycle_message, shared_across_message, Call, Class, Mutex, Nanos, Place, Section,
    Server, Task, TaskSet,
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
    /// Why the set cannot be analysed with PI-CV on, if so (a wait on a
    /// helper thread's reply or request would lend where the model does not
    /// follow): PI-CV may be switched on after extraction (`--protocol
    /// pi-cv`), so the caller checks it against the set it analyses.
    pub pi_cv_refusal: Option<AnalysisError>,
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

/// The name of resource `r` for messages (`?` if there is none).
fn resource_name(sc: &Scenario, r: usize) -> &str {
    sc.resources.get(r).map_or("?", |x| x.name.as_str())
}

/// One job's shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Job {
    local: Nanos,
    calls: Vec<Call>,
    sections: Vec<Section>,
}

/// Extracts the analysis model. See the module docs for what is accepted.
pub fn extract(sc: &Scenario) -> Result<Extracted, AnalysisError> {
    extract_on(sc, None)
}

/// [`extract`] on `cpus` CPUs (as `heir sim --cpus`; `None`: 1 + the
/// largest CPU the scenario names). It matters for `SCHED_DEADLINE` tasks
/// free on every CPU (global EDF).
pub fn extract_on(sc: &Scenario, cpus: Option<u32>) -> Result<Extracted, AnalysisError> {
    let ncpus = heir_scenario::messages::cpu_count(sc, cpus).map_err(|r| {
        let at = Location {
            path: r.path,
            line: r.line,
            column: r.column,
        };
        AnalysisError::new(ErrorKind::Invalid, Some(at), r.message)
    })?;
    let mut servers = Servers::of(sc)?;
    let mutexes = Mutexes::of(sc);
    let (helpers, helper_servers) =
        helpers::Helpers::of(sc, &servers.is_server, &mutexes.index, servers.list.len())?;
    servers.list.extend(helper_servers);
    let mut ex = Extractor {
        sc,
        ncpus,
        servers,
        helpers,
        mutexes,
        mutex_cpu: HashMap::new(),
        lock_edges: HashMap::new(),
        tasks: Vec::new(),
        paths: Vec::new(),
    };
    ex.check_helper_mutexes()?;
    let mut non_rt: Vec<&ScTask> = Vec::new();
    for (ti, t) in sc.tasks.iter().enumerate() {
        if ex.servers.is_server[ti] || ex.helpers.of_task.contains_key(&ti) || t.instance == 0 {
            continue;
        }
        match class_of(t)? {
            Some(class) => ex.periodic_task(t, class)?,
            None => non_rt.push(t),
        }
    }
    ex.refuse_idle_helpers()?;
    let skipped = ex.skip_non_rt(&non_rt)?;
    let set = TaskSet {
        tasks: ex.tasks,
        servers: ex.servers.list,
        mutexes: ex.mutexes.list,
        pi_cv: sc.global.pi_cv,
    };
    refuse_lock_cycle(&set, &ex.lock_edges)?;
    set.validate()?;
    Ok(Extracted {
        set,
        paths: ex.paths,
        skipped,
        pi_cv_refusal: ex.helpers.pi_cv_refusal,
    })
}

/// The RPC servers of a scenario: the tasks whose events are all `serve` of
/// one endpoint.
struct Servers {
    list: Vec<Server>,
    /// Endpoint (resource index) → index into `list`.
    of_endpoint: HashMap<usize, usize>,
    /// Per scenario task: whether it is a server (with threads or not).
    is_server: Vec<bool>,
}

impl Servers {
    /// Finds the servers, in file order, each checked against the PI-CV paper's
    /// model: one thread, fixed priority, one CPU, one server per endpoint.
    fn of(sc: &Scenario) -> Result<Servers, AnalysisError> {
        let mut servers = Servers {
            list: Vec::new(),
            of_endpoint: HashMap::new(),
            is_server: vec![false; sc.tasks.len()],
        };
        for (ti, t) in sc.tasks.iter().enumerate() {
            let Some(endpoint) = served_endpoint(t)? else {
                continue;
            };
            servers.is_server[ti] = true;
            if t.instance == 0 {
                continue;
            }
            let server = server_thread(t)?;
            if servers.of_endpoint.contains_key(&endpoint) {
                let name = resource_name(sc, endpoint);
                return Err(unsupported(
                    at_task(t),
                    format!("endpoint {name} has several servers: a pool of servers per endpoint is not analysed"),
                ));
            }
            servers.of_endpoint.insert(endpoint, servers.list.len());
            servers.list.push(server);
        }
        Ok(servers)
    }
}

/// The endpoint `t` serves, when `t` is a server: some events `serve`, all
/// of them one endpoint, and no other event.
fn served_endpoint(t: &ScTask) -> Result<Option<usize>, AnalysisError> {
    let mut serves: Vec<ResIdx> = Vec::new();
    for e in all_events(t) {
        if let EventKind::Serve(r) = e.kind {
            if !serves.contains(&r) {
                serves.push(r)
            }
        }
    }
    if serves.is_empty() {
        return Ok(None);
    }
    if let Some(e) = all_events(t).find(|e| !matches!(e.kind, EventKind::Serve(_))) {
        return Err(unsupported(
            at_event(e),
            format!(
                "task {} mixes \"serve\" with other events; the RPC analysis (the PI-CV paper's §5) models servers that only serve",
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
    Ok(Some(serves[0].0))
}

/// The server a server task with threads is: one `SCHED_FIFO`/`SCHED_RR`
/// thread pinned to one CPU.
fn server_thread(t: &ScTask) -> Result<Server, AnalysisError> {
    if t.instance > 1 {
        return Err(unsupported(
            at_task(t),
            format!(
                "server {} has {} instances: a pool of servers per endpoint is not analysed (the PI-CV paper's §5 has one server per endpoint)",
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
    Ok(Server {
        name: t.name.clone(),
        cpu: one_cpu(t)?,
        priority,
        inherits: true,
    })
}

/// The mutexes of a scenario, in resource order.
struct Mutexes {
    list: Vec<Mutex>,
    /// Resource index → index into `list`.
    index: HashMap<usize, usize>,
}

impl Mutexes {
    fn of(sc: &Scenario) -> Mutexes {
        let mut mutexes = Mutexes {
            list: Vec::new(),
            index: HashMap::new(),
        };
        for (ri, r) in sc.resources.iter().enumerate() {
            if let ResourceKind::Mutex { protocol } = r.kind {
                mutexes.index.insert(ri, mutexes.list.len());
                mutexes.list.push(Mutex {
                    name: r.name.clone(),
                    protocol,
                });
            }
        }
        mutexes
    }
}

/// The class a task is analysed in; `None` for a non-real-time task
/// (`SCHED_OTHER`/`BATCH`/`IDLE`).
fn class_of(t: &ScTask) -> Result<Option<Class>, AnalysisError> {
    Ok(Some(match t.sched.policy {
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
        Policy::Other | Policy::Batch | Policy::Idle => return Ok(None),
    }))
}

/// Refuses a task whose phases change its scheduling parameters.
fn single_mode(t: &ScTask) -> Result<(), AnalysisError> {
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
    Ok(())
}

/// The task set being extracted, and what the cross-task checks need.
struct Extractor<'a> {
    sc: &'a Scenario,
    /// CPUs of the machine.
    ncpus: u32,
    servers: Servers,
    helpers: helpers::Helpers,
    mutexes: Mutexes,
    /// First use of each mutex: (where its user runs, task name).
    mutex_cpu: HashMap<usize, (Place, String)>,
    /// (outer, inner) -> the inner lock event, for naming lock cycles.
    lock_edges: HashMap<(usize, usize), Location>,
    tasks: Vec<Task>,
    /// JSON path of each task of `tasks`.
    paths: Vec<String>,
}

impl Extractor<'_> {
    /// Adds the threads of real-time task `t`, analysed in `class`.
    fn periodic_task(&mut self, t: &ScTask, class: Class) -> Result<(), AnalysisError> {
        single_mode(t)?;
        let (cpu, global_cpus) = self.placement(t, class)?;
        let place = if global_cpus.is_some() {
            Place::Global
        } else {
            Place::Cpu(cpu)
        };
        let shapes = self.job_shapes(t)?;
        self.check_cpu_of_shared(t, place)?;
        let (wcet, demand) = (shapes.wcet(), shapes.demand());
        if demand > shapes.period {
            return Err(AnalysisError::new(
                ErrorKind::Overload,
                shapes.period_at.clone().or_else(|| at_task(t)),
                format!(
                    "task {} needs {} µs per job every {} µs: utilisation {:.3} > 1, no schedule can meet it",
                    t.name,
                    fmt_us(demand),
                    fmt_us(shapes.period),
                    demand as f64 / shapes.period as f64
                ),
            ));
        }
        let (sections, calls) = shapes.sections_and_calls();
        for name in t.thread_names() {
            self.tasks.push(Task {
                name,
                cpu,
                global_cpus,
                class,
                period: shapes.period,
                deadline: shapes.period,
                wcet,
                demand,
                sections: sections.clone(),
                calls: calls.clone(),
            });
            self.paths.push(t.path.clone());
        }
        Ok(())
    }

    /// Where `t` runs: `(cpu, None)` pinned, `(0, Some(m))` free on all
    /// `m ≥ 2` CPUs (a `SCHED_DEADLINE` task without `cpus`, or listing
    /// every CPU; on one CPU it is pinned to CPU 0).
    fn placement(&self, t: &ScTask, class: Class) -> Result<(u32, Option<u32>), AnalysisError> {
        if matches!(class, Class::Deadline { .. }) {
            let all: Vec<u32> = (0..self.ncpus).collect();
            let free = match t.cpus.as_deref() {
                None => true,
                Some(list) => list == all.as_slice() && self.ncpus > 1,
            };
            let moves = t.phases.iter().any(|p| p.cpus.is_some());
            if free && !moves {
                return Ok(if self.ncpus > 1 {
                    (0, Some(self.ncpus))
                } else {
                    (0, None)
                });
            }
        }
        Ok((one_cpu(t)?, None))
    }

    /// Partitioned checks, with positions: every server `t` calls is on
    /// its CPU, and every mutex it locks is used on one CPU only (or only
    /// by global tasks).
    fn check_cpu_of_shared(&mut self, t: &ScTask, place: Place) -> Result<(), AnalysisError> {
        for e in all_events(t) {
            match e.kind {
                EventKind::Call { endpoint, .. } => {
                    let cpu = match place {
                        Place::Cpu(c) => c,
                        Place::Global => u32::MAX,
                    };
                    self.check_call_cpu(t, cpu, e, endpoint.0)?
                }
                EventKind::Wait { cond: r, .. } | EventKind::Pop(r) => {
                    if let Some(&h) = self.helpers.reply_of.get(&r.0) {
                        let k = self.helpers.list[h].server;
                        self.check_server_cpu(t, place, e, k)?
                    }
                }
                EventKind::Lock(r) => self.check_mutex_cpu(t, place, e, r.0)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The server of `endpoint`, called by `t` at `e`, is on the caller's CPU.
    fn check_call_cpu(
        &self,
        t: &ScTask,
        cpu: u32,
        e: &Event,
        endpoint: usize,
    ) -> Result<(), AnalysisError> {
        let Some(&k) = self.servers.of_endpoint.get(&endpoint) else {
            return Ok(());
        };
        self.check_server_cpu(t, Place::Cpu(cpu), e, k)
    }

    /// Server `k` (an endpoint's or a helper thread), called by `t` at `e`,
    /// is on the caller's CPU.
    fn check_server_cpu(
        &self,
        t: &ScTask,
        place: Place,
        e: &Event,
        k: usize,
    ) -> Result<(), AnalysisError> {
        let server = &self.servers.list[k];
        let cpu = match place {
            Place::Cpu(c) => c,
            Place::Global => u32::MAX,
        };
        if server.cpu == cpu {
            return Ok(());
        }
        Err(unsupported(
            at_event(e),
            format!(
                "task {} on CPU {} calls server {} on CPU {}: the RPC analysis (the PI-CV paper's §5) covers calls to a server on the caller's CPU only",
                t.name, cpu, server.name, server.cpu
            ),
        ))
    }

    /// A helper thread no job calls must not work, and one that does not
    /// repeat must not serve more requests than the run's calls to it: the
    /// work would be charged to nobody. (The second checks the shutdown's
    /// requests, which need no call: they may only wake its exit.)
    fn refuse_idle_helpers(&self) -> Result<(), AnalysisError> {
        for (k, h) in self.helpers.list.iter().enumerate() {
            if !h.repeats {
                let calls = helpers::calls_in_run(self.sc, &self.helpers, k);
                let serves = h.serves.len() as u64;
                if calls.is_some_and(|c| c < serves) {
                    let t = &self.sc.tasks[h.task];
                    return Err(unsupported(
                        at_task(t),
                        format!(
                            "helper thread {} (docs/ANALYSIS.md §4.1) serves {serves} requests in its run but the periodic jobs wait for its replies {} times: the other serves would be charged to no call",
                            t.name,
                            calls.unwrap_or(0)
                        ),
                    ));
                }
            }
            let called = self
                .tasks
                .iter()
                .any(|t| t.calls.iter().any(|c| c.server == h.server));
            let work = h.startup.work.saturating_add(h.exit.work)
                + h.serves.iter().map(|s| s.work).sum::<Nanos>();
            if !called && work > 0 {
                let t = &self.sc.tasks[h.task];
                return Err(unsupported(
                    at_task(t),
                    format!(
                        "task {} has no \"timer\" and blocks, so it is analysed as a helper thread (docs/ANALYSIS.md §4.1), but no periodic job waits for its replies: its {} µs of work would be charged to nobody",
                        t.name,
                        fmt_us(work)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every mutex a helper thread locks is used on its CPU only.
    fn check_helper_mutexes(&mut self) -> Result<(), AnalysisError> {
        let sc = self.sc;
        for k in 0..self.helpers.list.len() {
            let h = &self.helpers.list[k];
            let (t, cpu) = (&sc.tasks[h.task], self.servers.list[h.server].cpu);
            for e in all_events(t) {
                match e.kind {
                    EventKind::Lock(r) | EventKind::Wait { mutex: r, .. } => {
                        self.check_mutex_cpu(t, Place::Cpu(cpu), e, r.0)?
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The mutex of resource `r`, locked by `t` at `e`, has no user
    /// elsewhere (its first user is recorded).
    fn check_mutex_cpu(
        &mut self,
        t: &ScTask,
        place: Place,
        e: &Event,
        r: usize,
    ) -> Result<(), AnalysisError> {
        let Some(&m) = self.mutexes.index.get(&r) else {
            return Ok(());
        };
        match self.mutex_cpu.get(&m) {
            Some((p, other)) if *p != place => Err(unsupported(
                at_event(e),
                shared_across_message(
                    &self.mutexes.list[m],
                    (*p, other.as_str()),
                    (place, t.name.as_str()),
                ),
            )),
            Some(_) => Ok(()),
            None => {
                self.mutex_cpu.insert(m, (place, t.name.clone()));
                Ok(())
            }
        }
    }

    /// Non-real-time tasks: skipped, with why, unless they share a mutex with
    /// analysed tasks or call a server.
    fn skip_non_rt(&self, non_rt: &[&ScTask]) -> Result<Vec<(String, String)>, AnalysisError> {
        let mut skipped = Vec::new();
        for t in non_rt {
            for e in all_events(t) {
                let shares = match e.kind {
                    EventKind::Lock(r) => self
                        .mutexes
                        .index
                        .get(&r.0)
                        .is_some_and(|m| self.mutex_cpu.contains_key(m)),
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
        Ok(skipped)
    }

    /// The distinct job shapes of `t`, its period, and where the period is.
    fn job_shapes(&mut self, t: &ScTask) -> Result<JobShapes, AnalysisError> {
        let seq = unroll(t)?;
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
        refuse_lock_across_timer(self.sc, t, &seq)?;
        // Requests after the last timer of a task that does not repeat are
        // its shutdown (see `helpers`).
        let last_timer = seq
            .iter()
            .rposition(|e| matches!(e.kind, EventKind::Timer { .. }))
            .unwrap_or(first);
        let shutdown_from = if t.loops == Some(1) {
            last_timer + 1
        } else {
            usize::MAX
        };
        let mut walk = JobWalk {
            sc: self.sc,
            t,
            helpers: &self.helpers,
            pending: Vec::new(),
            shutdown: false,
            servers: &self.servers.of_endpoint,
            mutexes: &self.mutexes.index,
            lock_edges: &mut self.lock_edges,
            job: Job::default(),
            open: Vec::new(),
            shapes: JobShapes {
                jobs: Vec::new(),
                period: Nanos::MAX,
                period_at: None,
            },
        };
        // Cyclically, from just after the first timer to it: every job ends
        // at a timer.
        let n = seq.len();
        for step in 1..=n {
            let k = (first + step) % n;
            walk.shutdown = k >= shutdown_from;
            walk.step(seq[k])?;
        }
        Ok(walk.shapes)
    }
}

/// Refuses a nested-lock order with a cycle, naming the nested `lock` of
/// the cycle's first edge when it is known.
fn refuse_lock_cycle(
    set: &TaskSet,
    lock_edges: &HashMap<(usize, usize), Location>,
) -> Result<(), AnalysisError> {
    let Some(cycle) = set.lock_order_cycle() else {
        return Ok(());
    };
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
    Err(AnalysisError::new(
        ErrorKind::LockCycle,
        at,
        lock_cycle_message(&cycle),
    ))
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

/// A task's events as its threads run them: each phase `loop` times (twice
/// for a phase with a timer, so that its tail and its head form a job).
fn unroll(t: &ScTask) -> Result<Vec<&Event>, AnalysisError> {
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
    Ok(seq)
}

/// Refuses a lock held across a timer, in file order (the cyclic walk of
/// the jobs would only see the unmatched unlock).
fn refuse_lock_across_timer(
    sc: &Scenario,
    t: &ScTask,
    seq: &[&Event],
) -> Result<(), AnalysisError> {
    // (resource, lock event) of each lock held.
    let mut held: Vec<(usize, &Event)> = Vec::new();
    for &e in seq {
        match &e.kind {
            EventKind::Lock(r) => held.push((r.0, e)),
            EventKind::Unlock(r) => {
                if let Some(k) = held.iter().rposition(|&(x, _)| x == r.0) {
                    held.remove(k);
                }
            }
            EventKind::Timer { .. } => {
                if let Some(&(r, lock)) = held.last() {
                    return Err(lock_across_timer(t, resource_name(sc, r), lock, e));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `t` holds `mutex` (locked at `lock`) across its timer at `timer`.
fn lock_across_timer(t: &ScTask, mutex: &str, lock: &Event, timer: &Event) -> AnalysisError {
    unsupported(
        at_event(lock),
        format!(
            "task {} holds {} across its timer at {}: a critical section that spans a period (a self-suspension while holding a lock) is not analysed",
            t.name, mutex, timer.path
        ),
    )
}

/// A task's distinct job shapes, its period `T` (the smallest timer
/// period), and where that period is.
struct JobShapes {
    jobs: Vec<Job>,
    period: Nanos,
    period_at: Option<Location>,
}

impl JobShapes {
    /// `C`: the largest local work of a job.
    fn wcet(&self) -> Nanos {
        self.jobs.iter().map(|j| j.local).max().unwrap_or(0)
    }

    /// `E`: the largest whole demand of a job, calls included.
    fn demand(&self) -> Nanos {
        self.jobs
            .iter()
            .map(|j| j.local.saturating_add(j.calls.iter().map(|c| c.wcet).sum()))
            .max()
            .unwrap_or(0)
    }

    /// The critical sections of every job, one job after another (parents
    /// re-indexed), and every distinct call.
    fn sections_and_calls(&self) -> (Vec<Section>, Vec<Call>) {
        let mut sections: Vec<Section> = Vec::new();
        let mut calls: Vec<Call> = Vec::new();
        for j in &self.jobs {
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
        (sections, calls)
    }
}

/// A critical section open during the walk of a job.
struct Open<'e> {
    /// Index into the job's sections.
    section: usize,
    /// Index into the task set's mutexes.
    mutex: usize,
    /// Index into the scenario's resources.
    resource: usize,
    /// The `lock` event.
    lock: &'e Event,
}

/// The walk over a task's unrolled events that cuts them into jobs at each
/// timer.
struct JobWalk<'a, 'e> {
    sc: &'a Scenario,
    t: &'a ScTask,
    helpers: &'a helpers::Helpers,
    /// Requests to helper threads not yet answered by a call in this job:
    /// (helper, the request event).
    pending: Vec<(usize, &'e Event)>,
    /// The event walked is in the task's shutdown (after its last timer,
    /// `loop` 1): its requests need no call.
    shutdown: bool,
    /// Endpoint → server index.
    servers: &'a HashMap<usize, usize>,
    /// Resource → mutex index.
    mutexes: &'a HashMap<usize, usize>,
    /// (outer, inner) → the inner lock event, for naming lock cycles.
    lock_edges: &'a mut HashMap<(usize, usize), Location>,
    /// The job being walked.
    job: Job,
    /// Its open critical sections, innermost last.
    open: Vec<Open<'e>>,
    shapes: JobShapes,
}

impl<'e> JobWalk<'_, 'e> {
    /// One event of the job being walked.
    fn step(&mut self, e: &'e Event) -> Result<(), AnalysisError> {
        match &e.kind {
            EventKind::Run(m) | EventKind::Runtime(m) => self.work(us(m.max())),
            EventKind::Timer { period, .. } => self.timer(e, us(period.min()))?,
            EventKind::Lock(r) => self.lock(e, r.0)?,
            EventKind::Unlock(r) => self.unlock(e, r.0)?,
            EventKind::Call { endpoint, run } => self.call(e, endpoint.0, us(run.max()))?,
            EventKind::Wait { cond, mutex } => self.helper_call(e, cond.0, Some(mutex.0))?,
            EventKind::Pop(q) => self.helper_call(e, q.0, None)?,
            EventKind::Push(q) => {
                if !helpers::queue_never_full(self.sc, q.0) {
                    return Err(helpers::queue_may_fill(self.sc, self.t, e, q.0));
                }
                self.request(e, q.0);
            }
            EventKind::Signal(c) | EventKind::Broadcast(c) => self.request(e, c.0),
            EventKind::Yield | EventKind::Resume(_) => {}
            EventKind::Gang { .. } => {
                return Err(unsupported(
                    at_event(e),
                    format!(
                        "\"{}\" in task {}: gang events are analysed only as gang bounds (heir_analysis::gang), never inside a periodic task's job",
                        e.key, self.t.name
                    ),
                ));
            }
            EventKind::Sleep(_)
            | EventKind::Barrier(_)
            | EventKind::Suspend(_)
            | EventKind::Serve(_) => {
                return Err(unsupported(
                    at_event(e),
                    format!(
                        "\"{}\" in task {}: a self-suspension inside a job is outside the analysed model (periodic jobs of run/runtime, lock/unlock, call, and waits for a helper thread's reply)",
                        e.key, self.t.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `w` ns of local work, inside every open section.
    fn work(&mut self, w: Nanos) {
        self.job.local = self.job.local.saturating_add(w);
        for o in &self.open {
            let s = &mut self.job.sections[o.section];
            s.length = s.length.saturating_add(w);
        }
    }

    /// A timer of period `p` at `e`: the job ends, a new one begins.
    fn timer(&mut self, e: &Event, p: Nanos) -> Result<(), AnalysisError> {
        if let Some(o) = self.open.last() {
            let name = resource_name(self.sc, o.resource);
            return Err(lock_across_timer(self.t, name, o.lock, e));
        }
        if p == 0 {
            return Err(AnalysisError::new(
                ErrorKind::MissingPeriod,
                at_event(e),
                format!("task {} has a timer of period 0", self.t.name),
            ));
        }
        if p < self.shapes.period {
            self.shapes.period = p;
            self.shapes.period_at = at_event(e);
        }
        if let Some(&(h, req)) = self.pending.first() {
            let name = &self.sc.tasks[self.helpers.list[h].task].name;
            return Err(unsupported(
                at_event(req),
                format!(
                    "task {} asks helper thread {name} for work here but does not wait for its reply before its timer at {}: the helper's work would be charged to no call (docs/ANALYSIS.md §4.1: each request is answered by a wait in the same job)",
                    self.t.name, e.path
                ),
            ));
        }
        let done = std::mem::take(&mut self.job);
        if !self.shapes.jobs.contains(&done) {
            self.shapes.jobs.push(done);
        }
        Ok(())
    }

    /// A lock of resource `r` at `e`: a section opens, nested in the open
    /// ones.
    fn lock(&mut self, e: &'e Event, r: usize) -> Result<(), AnalysisError> {
        let Some(&m) = self.mutexes.get(&r) else {
            return Err(unsupported(
                at_event(e),
                "lock of a resource that is not a mutex",
            ));
        };
        // Every enclosing mutex is held while m is locked.
        for o in &self.open {
            self.lock_edges
                .entry((o.mutex, m))
                .or_insert_with(|| at_event(e).unwrap_or_else(|| Location::path(&e.path)));
        }
        self.job.sections.push(Section {
            mutex: m,
            length: 0,
            parent: self.open.last().map(|o| o.section),
        });
        self.open.push(Open {
            section: self.job.sections.len() - 1,
            mutex: m,
            resource: r,
            lock: e,
        });
        Ok(())
    }

    /// An unlock of resource `r` at `e`: the innermost open section closes.
    fn unlock(&mut self, e: &Event, r: usize) -> Result<(), AnalysisError> {
        match self.open.last() {
            Some(o) if o.resource == r => {
                self.open.pop();
                Ok(())
            }
            Some(o) => Err(unsupported(
                at_event(e),
                format!(
                    "unlock of {} while {} (locked later) is still held: critical sections must be properly nested",
                    resource_name(self.sc, r),
                    resource_name(self.sc, o.resource)
                ),
            )),
            None => Err(unsupported(
                at_event(e),
                format!(
                    "unlock of {}, which the job does not hold",
                    resource_name(self.sc, r)
                ),
            )),
        }
    }

    /// A call at `e` to `endpoint`, `wcet` ns of the server's work.
    fn call(&mut self, e: &Event, endpoint: usize, wcet: Nanos) -> Result<(), AnalysisError> {
        if let Some(o) = self.open.last() {
            let name = resource_name(self.sc, o.resource);
            return Err(unsupported(
                at_event(e),
                format!("call inside a critical section on {name}: not analysed"),
            ));
        }
        let Some(&server) = self.servers.get(&endpoint) else {
            let name = resource_name(self.sc, endpoint);
            return Err(unsupported(
                at_event(e),
                format!("call to endpoint {name}, which no server task serves"),
            ));
        };
        self.job.calls.push(Call { server, wcet });
        Ok(())
    }
}

impl<'e> JobWalk<'_, 'e> {
    /// A signal, broadcast or push at `e` on resource `r`: a request when
    /// `r` is a helper thread's request object (outside the shutdown).
    fn request(&mut self, e: &'e Event, r: usize) {
        if let Some(&h) = self.helpers.request_of.get(&r) {
            if !self.shutdown {
                self.pending.push((h, e));
            }
        }
    }

    /// A `wait` on cond `r` (with `mutex`) or a `pop` of queue `r` at `e`:
    /// a call to the helper thread that replies on `r`.
    fn helper_call(
        &mut self,
        e: &'e Event,
        r: usize,
        mutex: Option<usize>,
    ) -> Result<(), AnalysisError> {
        let name = resource_name(self.sc, r);
        let Some(&h) = self.helpers.reply_of.get(&r) else {
            return Err(unsupported(
                at_event(e),
                format!(
                    "\"{}\" on {name} in task {}: a self-suspension inside a job is analysed only as a call to a helper thread (a thread with no timer that blocks, works, then signals or pushes), and no helper thread signals, broadcasts or pushes {name} (docs/ANALYSIS.md §4.1)",
                    e.key, self.t.name
                ),
            ));
        };
        let helper = &self.helpers.list[h];
        let Some((d, sections)) = helper.call_of(r) else {
            return Err(unsupported(
                at_event(e),
                format!("\"{}\" on {name} in task {}: helper thread {} signals it only outside its serves (start-up or exit): it is no reply", e.key, self.t.name, self.sc.tasks[helper.task].name),
            ));
        };
        // A wait releases its mutex (the innermost section) and takes it
        // again on return: the section is cut around the call.
        let reopen = match (mutex, self.open.as_slice()) {
            (None, []) => None,
            (Some(m), [o]) if o.resource == m => self.open.pop(),
            (_, [_, ..]) => {
                let other = self.open.iter().find(|o| Some(o.resource) != mutex);
                let held = resource_name(self.sc, other.map_or(usize::MAX, |o| o.resource));
                return Err(unsupported(
                    at_event(e),
                    format!("\"{}\" on {name} while holding {held}: a call inside a critical section is not analysed (a wait may hold only the mutex it releases)", e.key),
                ));
            }
            (Some(_), []) => {
                return Err(unsupported(
                    at_event(e),
                    format!("\"{}\" on {name} without holding its mutex", e.key),
                ))
            }
        };
        if let Some(k) = self.pending.iter().position(|&(x, _)| x == h) {
            self.pending.remove(k);
        }
        self.job.calls.push(Call {
            server: helper.server,
            wcet: d,
        });
        let off = self.job.sections.len();
        self.job.sections.extend(sections.iter().map(|s| Section {
            mutex: s.mutex,
            length: s.length,
            parent: s.parent.map(|p| p + off),
        }));
        if let Some(o) = reopen {
            self.job.sections.push(Section {
                mutex: o.mutex,
                length: 0,
                parent: None,
            });
            self.open.push(Open {
                section: self.job.sections.len() - 1,
                ..o
            });
        }
        Ok(())
    }
}
