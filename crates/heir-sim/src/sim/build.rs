//! Building a simulation: checks, threads, the engine objects behind
//! resources, helpers.

use super::sched::{extend_reach, home_for};
use super::*;
use heir_scenario::engine;

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
        let end = end_of(scenario, config)?;
        check(scenario, end)?;
        let ncpus = cpu_count(scenario, config)? as usize;
        let mut engine = Engine::new();
        let mut threads = ThreadSet::build(scenario, &mut engine, ncpus);
        let pi_cv = config.pi_cv.unwrap_or(g.pi_cv);
        let mut reqs: Vec<(u32, usize, heir_core::ObjId)> = Vec::new();
        let roles = engine::Roles::of(scenario);
        let mut names = ObjNamer {
            names: scenario.resources.iter().map(|r| r.name.clone()).collect(),
            obj_res: Vec::new(),
            lends: Vec::new(),
        };
        let mut helpers: Vec<(CondId, u32)> = Vec::new();
        let mut gangs: Vec<super::gang::Gang> = Vec::new();
        let mut timers: Vec<TimerSlot> = Vec::new();
        let res_state: Vec<ResState> = scenario
            .resources
            .iter()
            .enumerate()
            .map(|(r, res)| {
                let mut b = ResBuilder {
                    engine: &mut engine,
                    names: &mut names,
                    helpers: &mut helpers,
                    threads: &threads,
                    r,
                    donation: (scenario.rpc.model == heir_scenario::IpcModel::Donation)
                        .then_some(pi_cv),
                    reqs: &mut reqs,
                    gangs: &mut gangs,
                    timers: &mut timers,
                };
                b.build(&res.kind, &roles, g)
            })
            .collect();
        for (th, r, o) in reqs {
            threads.threads[th as usize].reqs.push((r, o));
        }
        // Listed members start with the default bits (the GPM paper's §2: the
        // control word's membership status).
        for (g, gang) in gangs.iter().enumerate() {
            for &m in &gang.members {
                let th = &mut threads.threads[m as usize];
                th.gang = Some(g as u32);
                th.gang_bits = heir_scenario::GANG_DEFAULT_BITS;
            }
        }
        let count_aborts = scenario.rpc.calls.iter().any(|c| c.spec.has_timeout());
        let (handlers, handler_at) = rpc::handler_arena(scenario);
        if pi_cv {
            threads.register_helpers(scenario, &mut engine, &helpers)?;
        }
        let ThreadSet {
            threads,
            cold,
            task_thread,
            info: tinfo,
            ops,
            ..
        } = threads;
        let timer_of = res_state
            .iter()
            .map(|r| match r {
                ResState::Timer(i) => *i,
                _ => u32::MAX,
            })
            .collect();
        let has_dl = scenario.tasks.iter().any(|t| {
            t.sched.policy == Policy::Deadline
                || t.phases
                    .iter()
                    .any(|p| p.sched.is_some_and(|s| s.policy == Policy::Deadline))
        });
        let has_bwi = has_dl && names.lends.contains(&dl::Lends::Reservation);
        let dl_lends = has_dl && names.lends.iter().any(|&l| l != dl::Lends::No);
        let mixed_homes = threads.windows(2).any(|w| w[0].home != w[1].home);
        let mut reach = vec![false; ncpus];
        for th in &threads {
            extend_reach(&mut reach, &th.home);
        }
        let reach_len = reach.iter().filter(|&&b| b).count();
        Ok(Simulator {
            sc: scenario,
            obs,
            engine,
            alive: threads.len(),
            threads,
            cold,
            res_state,
            timers,
            timer_of,
            ops,
            info: TraceInfo {
                cpus: ncpus as u32,
                threads: tinfo,
                resources: names.names,
            },
            obj_res: names.obj_res,
            task_thread,
            cpus: (0..ncpus).map(|_| Cpu::default()).collect(),
            local: (0..ncpus).map(|_| RunQueue::default()).collect(),
            global: RunQueue::default(),
            evq: EventQueue::default(),
            dirty: VecDeque::new(),
            claimed: vec![false; ncpus],
            claimed_list: Vec::new(),
            reach,
            reach_len,
            covered: vec![false; ncpus],
            covered_list: Vec::new(),
            cpu_visits: 0,
            scratch: Vec::new(),
            stamp_tail: 0,
            stamp_head: 0,
            now: 0,
            end,
            rng: SplitMix64::new(config.seed.unwrap_or(g.seed)),
            events: 0,
            zero_steps: 0,
            started: false,
            trace: true,
            changes: Changes::new(),
            has_dl,
            has_bwi,
            dl_lends,
            obj_lends: names.lends,
            block_seq: 0,
            dl_dirty: false,
            bwi_affinity: g.bwi_affinity,
            mixed_homes,
            spread: Vec::new(),
            count_aborts,
            handlers,
            handler_at,
            gangs,
        })
    }
}

/// The simulated duration in ns: `--duration` (µs) or `global.duration`
/// (s), both within heir's time limit; `None` to run until every thread
/// exits.
fn end_of(scenario: &Scenario, config: &SimConfig) -> Result<Option<u64>, SimError> {
    Ok(match (config.duration_us, scenario.global.duration_s) {
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
    })
}

/// What the simulator cannot run, checked before anything is built:
/// events on resources of the wrong kind, and a scenario without an end.
fn check(scenario: &Scenario, end: Option<u64>) -> Result<(), SimError> {
    for task in &scenario.tasks {
        for ph in &task.phases {
            for ev in &ph.events {
                check_event(scenario, ev)?;
            }
        }
    }
    let forever = scenario
        .tasks
        .iter()
        .find(|t| t.instance > 0 && t.loops.is_none());
    match (end, forever) {
        (None, Some(task)) => Err(invalid(
            "global.duration",
            format!(
                "the scenario runs forever (task {} loops forever): set global.duration or pass --duration",
                task.name
            ),
        )),
        _ => Ok(()),
    }
}

/// The threads of every task, with their engine tasks.
struct ThreadSet<'s> {
    threads: Vec<Thread<'s>>,
    cold: Vec<Cold>,
    info: Vec<ThreadInfo>,
    /// `TaskId.0` → thread index.
    task_thread: Vec<u32>,
    /// Task index → its threads.
    of_task: Vec<std::ops::Range<u32>>,
    /// The tasks' programs, flat (`Simulator::ops`).
    ops: Vec<EventKind>,
}

impl<'s> ThreadSet<'s> {
    /// One thread per instance of every task, each an engine task at the
    /// task's base urgency.
    fn build(scenario: &'s Scenario, engine: &mut Engine, ncpus: usize) -> ThreadSet<'s> {
        // Sized once: at 100,000 threads a growing vector of threads would
        // hold up to twice their size, and copy them at each doubling.
        let nthreads: usize = scenario.tasks.iter().map(|t| t.instance as usize).sum();
        let nops: usize = scenario
            .tasks
            .iter()
            .flat_map(|t| &t.phases)
            .map(|p| p.events.len())
            .sum();
        let mut set = ThreadSet {
            threads: Vec::with_capacity(nthreads),
            cold: Vec::with_capacity(nthreads),
            info: Vec::with_capacity(nthreads),
            task_thread: Vec::new(),
            of_task: Vec::with_capacity(scenario.tasks.len()),
            ops: Vec::with_capacity(nops),
        };
        for (ti, task) in scenario.tasks.iter().enumerate() {
            let first = set.threads.len() as u32;
            // A passive task has no scheduling context of its own (the
            // engine's passive task, whose base is the least urgency there
            // is): it runs only when lent to.
            let passive = scenario.rpc.is_passive(heir_scenario::TaskIdx(ti));
            let (has_timer, first_period_ns) = timer_of(task);
            let op_first = set.ops.len() as u32;
            for p in &task.phases {
                set.ops.extend(p.events.iter().map(|e| e.kind.clone()));
            }
            for name in task.thread_names() {
                let eng = if passive {
                    engine.add_passive_task()
                } else {
                    engine.add_task(engine::urgency(&task.sched))
                };
                let base = engine.base(eng).unwrap_or(Urgency::LOWEST);
                let ctx = engine.context(eng).ok().flatten();
                let slot = eng.0 as usize;
                if set.task_thread.len() <= slot {
                    set.task_thread.resize(slot + 1, u32::MAX);
                }
                set.task_thread[slot] = set.threads.len() as u32;
                set.info.push(ThreadInfo { name, base });
                set.cold.push(Cold {
                    stats: ResponseStats::new(),
                    jobs: 0,
                    misses: 0,
                    job_deadline: None,
                    throttles: 0,
                    replenishments: 0,
                    last_cpu: None,
                    migrations: 0,
                    timers: Vec::new(),
                    aborted: 0,
                });
                let mut th =
                    Thread::new(ti, eng, task, base, home_for(ncpus, task.cpus.as_deref()));
                th.has_timer = has_timer;
                th.op_first = op_first;
                th.op_base = op_first;
                th.first_period_ns = first_period_ns;
                th.passive = passive;
                th.dl.ctx = ctx;
                set.threads.push(th);
            }
            set.of_task.push(first..set.threads.len() as u32);
        }
        set
    }

    /// The threads of `tasks` (task indices).
    fn of(&self, tasks: &[usize]) -> Vec<u32> {
        tasks
            .iter()
            .filter_map(|&ti| self.of_task.get(ti))
            .flat_map(|r| r.clone())
            .collect()
    }

    /// Declares the helpers (PI-CV).
    fn register_helpers(
        &self,
        scenario: &Scenario,
        engine: &mut Engine,
        helpers: &[(CondId, u32)],
    ) -> Result<(), SimError> {
        for &(c, th) in helpers {
            let eng = self.threads[th as usize].eng;
            match engine.helper_add(c, eng) {
                Ok(_) | Err(EngineError::HelperExists { .. }) => {}
                Err(e) => {
                    return Err(at_task(
                        &scenario.tasks[self.threads[th as usize].task],
                        format!(
                            "cannot register helper {}: {e}",
                            self.info[th as usize].name
                        ),
                    ))
                }
            }
        }
        Ok(())
    }
}

/// Whether `task` uses a timer, and the period of its first timer when that
/// is fixed (ns).
fn timer_of(task: &Task) -> (bool, Option<u64>) {
    let mut timers = task
        .phases
        .iter()
        .flat_map(|p| p.events.iter())
        .filter_map(|e| match e.kind {
            EventKind::Timer { period, .. } => Some(period),
            _ => None,
        });
    match timers.next() {
        None => (false, None),
        Some(Micros::Fixed(p)) => (true, Some(us_to_ns(p))),
        Some(_) => (true, None),
    }
}

impl<'s> Thread<'s> {
    /// A thread of task `ti` that has not started, at the task's base.
    fn new(ti: usize, eng: TaskId, task: &'s Task, base: Urgency, home: Home) -> Thread<'s> {
        let first = task.phases.first();
        Thread {
            task: ti,
            eng,
            status: Status::Unstarted,
            act: Act::Step,
            tloop: 0,
            phase: 0,
            ploop: 0,
            ev: 0,
            step: Step::Start,
            pass_start: true,
            evs: first.map_or(&[], |p| p.events.as_slice()),
            ploops: first.map_or(0, |p| p.loops),
            phase_hook: first.is_some_and(|p| p.sched.is_some() || p.cpus.is_some()),
            nphases: task.phases.len(),
            op_base: 0,
            op_first: 0,
            tloops: task.loops,
            policy: task.sched.policy,
            base,
            eff: Effective {
                urgency: base,
                source: heir_core::Source::Task(eng),
            },
            rank: Rank::of(base),
            dl: dl::Dl::default(),
            home,
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
            wait: None,
            rehelp: None,
            serving: None,
            call_run: 0,
            passive: false,
            call: None,
            call_gen: 0,
            dserve: None,
            unhelped: None,
            reqs: Vec::new(),
            start_ns: 0,
            has_timer: false,
            first_period_ns: None,
            job_release: None,
            pass_closed: false,
            release_on_wake: None,
            gang: None,
            gang_bits: 0,
            gang_waiting: None,
            gang_gen: 0,
        }
    }
}

/// Builds the runtime state and engine objects of one scenario resource.
struct ResBuilder<'a> {
    engine: &'a mut Engine,
    names: &'a mut ObjNamer,
    helpers: &'a mut Vec<(CondId, u32)>,
    threads: &'a ThreadSet<'a>,
    /// The resource's index.
    r: usize,
    /// The donation model (with whether its objects donate: `pi_cv`).
    donation: Option<bool>,
    /// Request objects made: (calling thread, endpoint, object).
    reqs: &'a mut Vec<(u32, usize, heir_core::ObjId)>,
    /// The gangs made (GPM).
    gangs: &'a mut Vec<super::gang::Gang>,
    /// The timers made (their index in `Simulator::timers`).
    timers: &'a mut Vec<TimerSlot>,
}

impl ResBuilder<'_> {
    fn build(&mut self, kind: &ResourceKind, roles: &engine::Roles, g: &Global) -> ResState {
        let r = self.r;
        match kind {
            ResourceKind::Mutex { protocol } => {
                ResState::Mutex(self.mutex(None, engine::protocol(protocol)))
            }
            ResourceKind::Cond { helpers } => {
                let c = self.cond(None);
                let tasks: Vec<usize> = helpers.iter().map(|t| t.0).collect();
                self.help(c, &tasks);
                ResState::Cond(c)
            }
            ResourceKind::Queue { capacity, .. } => {
                let mutex = self.mutex(Some("mutex"), Protocol::Inherit);
                let more = self.cond(Some("more"));
                let less = self.cond(Some("less"));
                self.help(more, &roles.pushers[r]);
                self.help(less, &roles.poppers[r]);
                ResState::Queue {
                    mutex,
                    more,
                    less,
                    len: 0,
                    cap: *capacity,
                }
            }
            ResourceKind::Barrier { users } => ResState::Barrier {
                mutex: self.mutex(Some("mutex"), engine::side_protocol(g)),
                cond: self.cond(Some("cond")),
                waiting: i64::from(*users) - 1,
            },
            ResourceKind::Timer { mode, unique } => {
                self.timers.push(TimerSlot {
                    mode: *mode,
                    unique: *unique,
                    state: TimerState::default(),
                });
                ResState::Timer(self.timers.len() as u32 - 1)
            }
            ResourceKind::Suspend { .. } => ResState::Suspend {
                mutex: self.mutex(Some("mutex"), engine::side_protocol(g)),
                cond: self.cond(Some("cond")),
            },
            ResourceKind::Endpoint { servers, callers } => match self.donation {
                Some(donates) => self.endpoint_don(servers, callers, donates),
                None => self.endpoint(roles),
            },
            ResourceKind::Gang { members } => {
                // GPM: targets and floor only while it runs; its
                // waiters do not donate, and lend no deadline time.
                let obj = self.engine.add_object(heir_core::Spec::GANG);
                self.names.object(obj.0, r, false);
                let tasks: Vec<usize> = members.iter().map(|t| t.0).collect();
                let members = self.threads.of(&tasks);
                self.gangs.push(super::gang::Gang::new(obj, r, members));
                ResState::Gang(self.gangs.len() as u32 - 1)
            }
        }
    }

    /// An endpoint: its mutex and request condvar, and one reply condvar
    /// per calling thread, helped by every serving thread.
    fn endpoint(&mut self, roles: &engine::Roles) -> ResState {
        let r = self.r;
        let mutex = self.mutex(Some("mutex"), Protocol::Inherit);
        let more = self.cond(Some("more"));
        let mut replies = Vec::new();
        for caller in self.threads.of(&roles.callers[r]) {
            let name = format!("reply[{}]", self.threads.info[caller as usize].name);
            let cond = self.cond(Some(&name));
            self.help(cond, &roles.servers[r]);
            replies.push(Reply {
                caller,
                cond,
                done: false,
            });
        }
        ResState::Endpoint {
            mutex,
            more,
            reqs: VecDeque::new(),
            replies,
            don: None,
        }
    }

    /// A donation-model endpoint (`sim::rpc`): its help object, targeting
    /// every serving thread; its idle condvar; a request object per calling
    /// thread (nested callers included).
    fn endpoint_don(
        &mut self,
        servers: &[heir_scenario::TaskIdx],
        callers: &[heir_scenario::TaskIdx],
        donates: bool,
    ) -> ResState {
        let r = self.r;
        let mutex = self.mutex(Some("mutex"), Protocol::Inherit);
        let idle = self.cond(Some("idle"));
        let help = self.engine.add_object(super::rpc::help_spec(donates));
        self.names.object(help.0, r, donates);
        let serving: Vec<usize> = servers.iter().map(|t| t.0).collect();
        for th in self.threads.of(&serving) {
            // No waiters yet: no cycle, no change.
            let _ = self
                .engine
                .add_target(help, self.threads.threads[th as usize].eng);
        }
        let calling: Vec<usize> = callers.iter().map(|t| t.0).collect();
        for th in self.threads.of(&calling) {
            let o = self.engine.add_object(super::rpc::request_spec(donates));
            self.names.object(o.0, r, donates);
            self.reqs.push((th, r, o));
        }
        ResState::Endpoint {
            mutex,
            more: idle,
            reqs: VecDeque::new(),
            replies: Vec::new(),
            don: Some(super::rpc::Don { help, idle }),
        }
    }

    fn mutex(&mut self, suffix: Option<&str>, p: Protocol) -> SimMutex {
        let (id, res) = self.names.mutex(self.engine, self.r, suffix, p);
        SimMutex { id, res }
    }

    fn cond(&mut self, suffix: Option<&str>) -> SimCond {
        let (id, res) = self.names.cond(self.engine, self.r, suffix);
        SimCond { id, res }
    }

    /// Makes the threads of `tasks` helpers of `c` (registered with PI-CV).
    fn help(&mut self, c: SimCond, tasks: &[usize]) {
        for th in self.threads.of(tasks) {
            self.helpers.push((c.id, th));
        }
    }
}

/// The number of CPUs a simulation of `scenario` with `config` has:
/// [`SimConfig::cpus`] when given, else 1 + the largest CPU number the
/// scenario names (at least 1); see [`heir_scenario::messages::cpu_count`].
pub fn cpu_count(scenario: &Scenario, config: &SimConfig) -> Result<u32, SimError> {
    heir_scenario::messages::cpu_count(scenario, config.cpus).map_err(SimError::from)
}

/// Creates the engine objects behind scenario resources and names them for
/// the trace: a resource's own object keeps its index and name; an internal
/// one (a queue's mutex, an endpoint's reply condvar) is a new resource
/// called `<resource>.<suffix>`.
struct ObjNamer {
    /// Resource names, indexed like `TraceInfo::resources`.
    names: Vec<String>,
    /// Resource index of each engine object.
    obj_res: Vec<usize>,
    /// How each engine object lends a deadline waiter's time.
    lends: Vec<dl::Lends>,
}

impl ObjNamer {
    pub(super) fn mutex(
        &mut self,
        engine: &mut Engine,
        r: usize,
        suffix: Option<&str>,
        p: Protocol,
    ) -> (MutexId, usize) {
        let m = engine.add_mutex(p);
        let idx = self.name(r, suffix);
        // How a deadline waiter's time goes to the owner: M-BWI's servers
        // for `bwi`, Linux's inheritance of parameters for `inherit` (heir's
        // own mutexes, inside barriers and queues, are pthread mutexes).
        let lends = match p {
            Protocol::Bwi => dl::Lends::Reservation,
            Protocol::Inherit => dl::Lends::Parameters,
            Protocol::None | Protocol::Ceiling(_) => dl::Lends::No,
        };
        self.lends_as(m.0, lends);
        (m, record(&mut self.obj_res, m.0, idx))
    }

    pub(super) fn cond(
        &mut self,
        engine: &mut Engine,
        r: usize,
        suffix: Option<&str>,
    ) -> (CondId, usize) {
        let c = engine.add_cond();
        let idx = self.name(r, suffix);
        // PI-CV and RPC lend the waiter's reservation (M-BWI beyond mutexes).
        self.lends_as(c.0, dl::Lends::Reservation);
        (c, record(&mut self.obj_res, c.0, idx))
    }

    /// An engine object shown as resource `r` (donation objects are shown
    /// as their endpoint), lending a deadline waiter's reservation if it
    /// donates (`pi_cv` off: it lends nothing, as in the engine).
    pub(super) fn object(&mut self, slot: u32, r: usize, donates: bool) {
        record(&mut self.obj_res, slot, r);
        let lends = if donates {
            dl::Lends::Reservation
        } else {
            dl::Lends::No
        };
        self.lends_as(slot, lends);
    }

    /// Records how engine object `slot` lends a deadline waiter's time.
    pub(super) fn lends_as(&mut self, slot: u32, lends: dl::Lends) {
        let slot = slot as usize;
        if self.lends.len() <= slot {
            self.lends.resize(slot + 1, dl::Lends::No);
        }
        self.lends[slot] = lends;
    }

    /// The resource index for `r`'s object with `suffix`.
    pub(super) fn name(&mut self, r: usize, suffix: Option<&str>) -> usize {
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
pub(super) fn record(res_of: &mut Vec<usize>, slot: u32, idx: usize) -> usize {
    let slot = slot as usize;
    if res_of.len() <= slot {
        res_of.resize(slot + 1, 0);
    }
    res_of[slot] = idx;
    idx
}

/// The event's resources exist and are of the kind it needs.
pub(super) fn check_event(sc: &Scenario, ev: &Event) -> Result<(), SimError> {
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
        EventKind::Gang { gang: r, .. } => {
            want(r.0, |k| matches!(k, ResourceKind::Gang { .. }), "gang")
        }
    }
}
