//! Shared helpers: a recording observer, a scenario builder, example loading.

use heir_core::Urgency;
use heir_scenario::{
    Event, EventKind, Global, MutexProtocol, Phase, Policy, ResIdx, Resource, ResourceKind,
    Scenario, Sched, Task, TaskIdx, TimerMode,
};
use heir_sim::{InstantKind, Observer, Report, SimConfig, TraceEvent, TraceInfo};

/// Records the whole trace stream.
#[derive(Default)]
pub struct Rec {
    pub info: Option<TraceInfo>,
    pub events: Vec<TraceEvent>,
    pub end: Option<u64>,
}

impl Observer for Rec {
    fn start(&mut self, info: &TraceInfo) {
        self.info = Some(info.clone());
    }
    fn event(&mut self, ev: &TraceEvent) {
        self.events.push(ev.clone());
    }
    fn finish(&mut self, end_ns: u64) {
        self.end = Some(end_ns);
    }
}

/// An `Exec` slice in ms for compact assertions: (thread name, start, end,
/// urgency, donor name).
pub type Slice = (String, f64, f64, Urgency, Option<String>);

impl Rec {
    pub fn name(&self, t: usize) -> String {
        self.info.as_ref().unwrap().threads[t].name.clone()
    }
    pub fn res(&self, r: usize) -> String {
        self.info.as_ref().unwrap().resources[r].clone()
    }
    /// Exec slices of every CPU in emission order.
    pub fn slices(&self) -> Vec<Slice> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Exec {
                    thread,
                    start_ns,
                    end_ns,
                    urgency,
                    donor,
                    ..
                } => Some((
                    self.name(*thread),
                    *start_ns as f64 / 1e6,
                    *end_ns as f64 / 1e6,
                    *urgency,
                    donor.map(|d| self.name(d)),
                )),
                _ => None,
            })
            .collect()
    }
    /// (start ms, end ms, urgency, donor) of the Exec slices of `thread`.
    pub fn slices_of(&self, thread: &str) -> Vec<(f64, f64, Urgency, Option<String>)> {
        self.slices()
            .into_iter()
            .filter(|x| x.0 == thread)
            .map(|x| (x.1, x.2, x.3, x.4))
            .collect()
    }
    /// Exec slices of one CPU: (thread, start ms, end ms).
    pub fn cpu_slices(&self, cpu: u32) -> Vec<(String, f64, f64)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Exec {
                    cpu: c,
                    thread,
                    start_ns,
                    end_ns,
                    ..
                } if *c == cpu => Some((
                    self.name(*thread),
                    *start_ns as f64 / 1e6,
                    *end_ns as f64 / 1e6,
                )),
                _ => None,
            })
            .collect()
    }
    /// Exec slices with adjacent slices of the same thread merged (urgency
    /// and donor changes ignored): (thread, start ms, end ms).
    pub fn merged(&self, cpu: u32) -> Vec<(String, f64, f64)> {
        let mut out: Vec<(String, f64, f64)> = Vec::new();
        for (n, s, e) in self.cpu_slices(cpu) {
            if let Some(last) = out.last_mut() {
                if last.0 == n && last.2 == s {
                    last.2 = e;
                    continue;
                }
            }
            out.push((n, s, e));
        }
        out
    }
    /// [`Rec::merged`] cut to the slices that start before `until_ms`.
    pub fn merged_before(&self, cpu: u32, until_ms: f64) -> Vec<(String, f64, f64)> {
        self.merged(cpu)
            .into_iter()
            .filter(|x| x.1 < until_ms)
            .collect()
    }
    /// (thread, release ms, deadline ms).
    pub fn releases(&self, thread: &str) -> Vec<(f64, Option<f64>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Release {
                    thread: t,
                    at_ns,
                    deadline_ns,
                } if self.name(*t) == thread => {
                    Some((*at_ns as f64 / 1e6, deadline_ns.map(|d| d as f64 / 1e6)))
                }
                _ => None,
            })
            .collect()
    }
    /// (completion ms, response ms, missed).
    pub fn completions(&self, thread: &str) -> Vec<(f64, f64, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Complete {
                    thread: t,
                    at_ns,
                    response_ns,
                    missed,
                } if self.name(*t) == thread => {
                    Some((*at_ns as f64 / 1e6, *response_ns as f64 / 1e6, *missed))
                }
                _ => None,
            })
            .collect()
    }
    /// Release times (ms) of `thread`'s jobs.
    pub fn release_times(&self, thread: &str) -> Vec<f64> {
        self.releases(thread).iter().map(|x| x.0).collect()
    }
    /// (completion ms, response ms) of `thread`'s jobs.
    pub fn responses(&self, thread: &str) -> Vec<(f64, f64)> {
        self.completions(thread)
            .iter()
            .map(|c| (c.0, c.1))
            .collect()
    }
    /// (at ms, thread, kind, resource name).
    pub fn instants(&self) -> Vec<(f64, String, InstantKind, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Instant {
                    thread,
                    at_ns,
                    kind,
                    resource,
                } => Some((
                    *at_ns as f64 / 1e6,
                    self.name(*thread),
                    *kind,
                    resource.map(|r| self.res(r)).unwrap_or_default(),
                )),
                _ => None,
            })
            .collect()
    }
    /// (at ms, to, donor, urgency).
    pub fn boosts(&self) -> Vec<(f64, String, Option<String>, Urgency)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Boost {
                    at_ns,
                    to,
                    donor,
                    urgency,
                } => Some((
                    *at_ns as f64 / 1e6,
                    self.name(*to),
                    donor.map(|d| self.name(d)),
                    *urgency,
                )),
                _ => None,
            })
            .collect()
    }
}

pub fn s(x: &str) -> String {
    x.to_string()
}

/// `(thread, start ms, end ms)` rows with owned names, to compare with
/// [`Rec::merged`] and [`Rec::cpu_slices`].
pub fn rows(r: &[(&str, f64, f64)]) -> Vec<(String, f64, f64)> {
    r.iter().map(|&(n, a, b)| (s(n), a, b)).collect()
}

/// Simulates with a recorder.
pub fn run(sc: &Scenario, cfg: &SimConfig) -> (Report, Rec) {
    let mut rec = Rec::default();
    let report = heir_sim::simulate(sc, cfg, &mut rec).expect("simulate");
    (report, rec)
}

pub fn config(duration_ms: u64) -> SimConfig {
    SimConfig {
        duration_us: Some(duration_ms * 1000),
        ..SimConfig::default()
    }
}

/// The default configuration with PI-CV forced on or off.
pub fn pi_cv(on: bool) -> SimConfig {
    SimConfig {
        pi_cv: Some(on),
        ..SimConfig::default()
    }
}

pub fn example(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    heir_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The maximum response (ms) of task `name` (NaN when no job completed).
pub fn max_ms(r: &Report, name: &str) -> f64 {
    task_report(r, name).response_us.max.unwrap_or(f64::NAN) / 1000.0
}

pub fn task_report<'a>(r: &'a Report, name: &str) -> &'a heir_sim::TaskReport {
    r.tasks.iter().find(|t| t.name == name).unwrap()
}

/// Builds scenarios by hand (one phase per task unless `phases` is used).
pub struct B {
    pub sc: Scenario,
}

impl Default for B {
    fn default() -> Self {
        Self::new()
    }
}

impl B {
    pub fn new() -> B {
        B {
            sc: Scenario {
                global: Global {
                    duration_s: None,
                    default_policy: Policy::Fifo,
                    pi_enabled: true,
                    pi_cv: true,
                    bwi_affinity: true,
                    seed: 0,
                    gpm: true,
                    calibration_ns_per_loop: None,
                },
                resources: Vec::new(),
                tasks: Vec::new(),
                warnings: Vec::new(),
                rpc: Default::default(),
            },
        }
    }
    /// Simulates the scenario built so far with the default configuration.
    pub fn run(&self) -> (Report, Rec) {
        run(&self.sc, &SimConfig::default())
    }
    fn res(&mut self, name: &str, kind: ResourceKind) -> ResIdx {
        self.sc.resources.push(Resource {
            name: name.into(),
            path: format!("resources.{name}"),
            kind,
        });
        ResIdx(self.sc.resources.len() - 1)
    }
    pub fn mutex(&mut self, name: &str, protocol: MutexProtocol) -> ResIdx {
        self.res(name, ResourceKind::Mutex { protocol })
    }
    pub fn cond(&mut self, name: &str, helpers: &[usize]) -> ResIdx {
        self.res(
            name,
            ResourceKind::Cond {
                helpers: helpers.iter().map(|&t| TaskIdx(t)).collect(),
            },
        )
    }
    pub fn queue(&mut self, name: &str, capacity: u32) -> ResIdx {
        self.res(
            name,
            ResourceKind::Queue {
                capacity,
                pushers: vec![],
                poppers: vec![],
            },
        )
    }
    pub fn endpoint(&mut self, name: &str) -> ResIdx {
        self.res(
            name,
            ResourceKind::Endpoint {
                servers: vec![],
                callers: vec![],
            },
        )
    }
    pub fn barrier(&mut self, name: &str, users: u32) -> ResIdx {
        self.res(name, ResourceKind::Barrier { users })
    }
    pub fn suspend(&mut self, name: &str, task: usize) -> ResIdx {
        self.res(
            name,
            ResourceKind::Suspend {
                task: TaskIdx(task),
            },
        )
    }
    /// A gang (GPM) with the threads of `members` (task indices).
    pub fn gang(&mut self, name: &str, members: &[usize]) -> ResIdx {
        self.res(
            name,
            ResourceKind::Gang {
                members: members.iter().map(|&t| TaskIdx(t)).collect(),
            },
        )
    }
    pub fn timer(&mut self, name: &str, mode: TimerMode) -> ResIdx {
        self.res(name, ResourceKind::Timer { mode, unique: true })
    }
    /// A task with one phase; returns its index.
    pub fn task(&mut self, t: T) -> usize {
        let name = t.name.clone();
        let phases = if t.phases.is_empty() {
            vec![(1, None, None, t.events.clone())]
        } else {
            t.phases.clone()
        };
        let phases = phases
            .into_iter()
            .enumerate()
            .map(|(i, (loops, cpus, sched, evs))| Phase {
                name: format!("p{i}"),
                path: format!("tasks.{name}.phases.p{i}"),
                line: 1,
                column: 1,
                loops,
                cpus,
                sched,
                events: evs
                    .into_iter()
                    .enumerate()
                    .map(|(k, kind)| Event {
                        key: format!("e{k}"),
                        path: format!("tasks.{name}.phases.p{i}.e{k}"),
                        line: 1,
                        column: 1,
                        kind,
                    })
                    .collect(),
            })
            .collect();
        self.sc.tasks.push(Task {
            name: name.clone(),
            path: format!("tasks.{name}"),
            line: 1,
            column: 1,
            instance: t.instance,
            sched: Sched {
                policy: t.policy,
                priority: t.prio,
                dl: None,
            },
            cpus: t.cpus,
            delay_us: t.delay_us,
            loops: t.loops,
            phases,
        });
        self.sc.tasks.len() - 1
    }
}

/// A phase for [`T::phases`]: (loops, cpus, sched, events).
pub type PhaseSpec = (u64, Option<Vec<u32>>, Option<Sched>, Vec<EventKind>);

/// A task description for [`B::task`].
#[derive(Clone)]
pub struct T {
    pub name: String,
    pub policy: Policy,
    pub prio: i32,
    pub cpus: Option<Vec<u32>>,
    pub delay_us: u64,
    pub loops: Option<u64>,
    pub instance: u32,
    pub events: Vec<EventKind>,
    pub phases: Vec<PhaseSpec>,
}

/// A SCHED_FIFO task on CPU 0 running its events once.
pub fn fifo(name: &str, prio: i32, events: Vec<EventKind>) -> T {
    T {
        name: name.into(),
        policy: Policy::Fifo,
        prio,
        cpus: Some(vec![0]),
        delay_us: 0,
        loops: Some(1),
        instance: 1,
        events,
        phases: vec![],
    }
}

impl T {
    pub fn delay(mut self, us: u64) -> T {
        self.delay_us = us;
        self
    }
    pub fn loops(mut self, l: Option<u64>) -> T {
        self.loops = l;
        self
    }
    pub fn cpus(mut self, c: Option<Vec<u32>>) -> T {
        self.cpus = c;
        self
    }
    pub fn policy(mut self, p: Policy) -> T {
        self.policy = p;
        self
    }
    pub fn instances(mut self, n: u32) -> T {
        self.instance = n;
        self
    }
}

pub fn run_us(us: u64) -> EventKind {
    EventKind::Run(heir_scenario::Micros::Fixed(us))
}
pub fn runtime_us(us: u64) -> EventKind {
    EventKind::Runtime(heir_scenario::Micros::Fixed(us))
}
pub fn sleep_us(us: u64) -> EventKind {
    EventKind::Sleep(heir_scenario::Micros::Fixed(us))
}
pub fn timer(r: ResIdx, period_us: u64) -> EventKind {
    EventKind::Timer {
        timer: r,
        period: heir_scenario::Micros::Fixed(period_us),
    }
}
