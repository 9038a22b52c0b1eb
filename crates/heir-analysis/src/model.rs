//! The analysis task model: what the equations need, and nothing else.
//!
//! A [`TaskSet`] is built from a scenario ([`crate::extract`]) or generated
//! ([`crate::gen`]). Times are integer nanoseconds ([`Nanos`]) so that every
//! fixed point is computed exactly (Table I's 4.5 ms is 4 500 000 ns, and
//! 19 ms comes out as 19 000 000, not 18 999 999.999).
//!
//! Vocabulary (the PI-CV paper's §5): a *client* task τ_i releases a job every `T_i`;
//! the job runs `C_i` of local work (its critical sections included) and
//! `K_i` remote procedure calls, the k-th to server `S_{r_{i,k}}` costing
//! `D_{i,k}`; `E_i = C_i + Σ_k D_{i,k}` is the job's whole demand on its CPU.
//! A *server* only serves requests; it is not a task of its own in the
//! equations.

use crate::error::{AnalysisError, ErrorKind};

/// Time in nanoseconds.
pub type Nanos = u64;

pub use heir_core::Family;
/// A mutex protocol: the one vocabulary ([`heir_core::Protocol`]), a
/// ceiling given as a real-time priority, as in the scenario.
pub use heir_scenario::MutexProtocol;

/// A task's scheduling class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `SCHED_FIFO` / `SCHED_RR` at a real-time priority (greater = more
    /// urgent). Equal priorities are analysed as mutually higher-priority.
    Fixed { priority: i32 },
    /// `SCHED_DEADLINE`: a CBS reservation of `runtime` every `period`, with
    /// relative `deadline`.
    Deadline {
        runtime: Nanos,
        deadline: Nanos,
        period: Nanos,
    },
}

/// A critical section: `length` ns of work between `lock(mutex)` and
/// `unlock(mutex)`, nested sections included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// Index into [`TaskSet::mutexes`].
    pub mutex: usize,
    pub length: Nanos,
    /// The enclosing section (an index into the same task's `sections`,
    /// smaller than this one's), or `None` for an outermost section.
    pub parent: Option<usize>,
}

/// One remote procedure call of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Index into [`TaskSet::servers`].
    pub server: usize,
    /// `D_{i,k}`: the work the server does for it.
    pub wcet: Nanos,
}

/// A periodic (or sporadic) task: one thread of the scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub name: String,
    /// The one CPU it may run on (partitioned scheduling); ignored when
    /// `global_cpus` is set.
    pub cpu: u32,
    /// `Some(m)`: free on every one of the machine's `m ≥ 2` CPUs (global
    /// EDF, `SCHED_DEADLINE` tasks only); `None`: pinned to `cpu`.
    pub global_cpus: Option<u32>,
    pub class: Class,
    /// `T_i`: the minimum time between releases.
    pub period: Nanos,
    /// Relative deadline (the period, for rt-app timers).
    pub deadline: Nanos,
    /// `C_i`: local work of one job (critical sections included, calls not).
    pub wcet: Nanos,
    /// `E_i`: the whole demand of one job, calls included. For a task whose
    /// jobs all look alike, `wcet + Σ calls.wcet`; for a task with several
    /// job shapes (phases), the largest job's total.
    pub demand: Nanos,
    pub sections: Vec<Section>,
    /// Every call site (`K_i` of them for a single-shape task).
    pub calls: Vec<Call>,
}

impl Task {
    /// A fixed-priority task whose jobs all look alike: `demand` is computed.
    pub fn fixed(
        name: impl Into<String>,
        cpu: u32,
        priority: i32,
        period: Nanos,
        wcet: Nanos,
        sections: Vec<Section>,
        calls: Vec<Call>,
    ) -> Task {
        let demand = wcet.saturating_add(calls.iter().map(|c| c.wcet).sum());
        Task {
            name: name.into(),
            cpu,
            class: Class::Fixed { priority },
            global_cpus: None,
            period,
            deadline: period,
            wcet,
            demand,
            sections,
            calls,
        }
    }

    /// The real-time priority, for a fixed-priority task.
    pub fn priority(&self) -> Option<i32> {
        match self.class {
            Class::Fixed { priority } => Some(priority),
            Class::Deadline { .. } => None,
        }
    }

    /// `E_i / T_i`.
    pub fn utilisation(&self) -> f64 {
        self.demand as f64 / self.period as f64
    }
}

/// An RPC server thread: it serves one endpoint, requests in priority order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub name: String,
    pub cpu: u32,
    /// Its own (base) real-time priority.
    pub priority: i32,
    /// With PI-CV, whether a caller waiting for its reply lends it its
    /// priority: always for an endpoint's server; for a helper thread
    /// (docs/ANALYSIS.md §4.1), when every cond it replies on names it as
    /// its one helper (a queue's popper lends to its pusher). Without
    /// PI-CV nobody lends.
    pub inherits: bool,
}

/// A mutex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutex {
    pub name: String,
    pub protocol: MutexProtocol,
}

/// A whole task set.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSet {
    pub tasks: Vec<Task>,
    pub servers: Vec<Server>,
    pub mutexes: Vec<Mutex>,
    /// PI-CV on: a client waiting for a reply lends its priority to the
    /// server (the PI-CV paper). Off: the server runs at its own priority.
    pub pi_cv: bool,
}

impl TaskSet {
    /// The same set under one of the protocol families (see [`Family`]):
    /// mutex protocols, server priorities and PI-CV are replaced.
    pub fn with_protocol(&self, protocol: Family) -> TaskSet {
        let mut out = self.clone();
        match protocol {
            Family::None => {
                out.mutexes
                    .iter_mut()
                    .for_each(|m| m.protocol = MutexProtocol::None);
                out.pi_cv = false;
            }
            Family::Inherit => {
                out.mutexes
                    .iter_mut()
                    .for_each(|m| m.protocol = MutexProtocol::Inherit);
                out.pi_cv = false;
            }
            Family::PiCv => {
                out.mutexes
                    .iter_mut()
                    .for_each(|m| m.protocol = MutexProtocol::Inherit);
                out.pi_cv = true;
            }
            Family::Ceiling => {
                let mut mutex_ceiling: Vec<Option<i32>> = vec![None; self.mutexes.len()];
                let mut server_ceiling: Vec<Option<i32>> = vec![None; self.servers.len()];
                for t in &self.tasks {
                    if let Some(p) = t.priority() {
                        for s in &t.sections {
                            if let Some(c) = mutex_ceiling.get_mut(s.mutex) {
                                *c = Some(c.map_or(p, |c| c.max(p)));
                            }
                        }
                        for c in &t.calls {
                            if let Some(sc) = server_ceiling.get_mut(c.server) {
                                *sc = Some(sc.map_or(p, |sc| sc.max(p)));
                            }
                        }
                    }
                }
                for (m, c) in out.mutexes.iter_mut().zip(&mutex_ceiling) {
                    // A mutex no fixed-priority task uses keeps a ceiling of 1.
                    m.protocol = MutexProtocol::Ceiling(c.unwrap_or(1));
                }
                for (s, c) in out.servers.iter_mut().zip(&server_ceiling) {
                    if let Some(c) = c {
                        s.priority = s.priority.max(*c);
                    }
                }
                out.pi_cv = false;
            }
        }
        out
    }

    /// Checks the set is consistent and within the model. Errors name tasks
    /// by name (the scenario extraction gives file positions before this).
    ///
    /// Checked: indices in range; periods and deadlines positive; section
    /// nesting well-formed and lengths within `C_i`; `E_i ≥ C_i + D_{i,k}`;
    /// `E_i ≤ T_i` (a task alone over 100% is refused); mutexes and servers
    /// used only by tasks of one CPU; `SCHED_DEADLINE` tasks neither call
    /// servers nor share a mutex with fixed-priority tasks, and have
    /// `runtime ≤ deadline ≤ period`; mutexes used by `SCHED_DEADLINE` tasks
    /// use inheritance; no cycle in the nested-lock order.
    pub fn validate(&self) -> Result<(), AnalysisError> {
        let mut users = MutexUsers::new(self.mutexes.len());
        for t in &self.tasks {
            validate_times(t)?;
            for k in 0..t.sections.len() {
                let m = self.validate_section(t, k)?;
                users.add(t, t.sections[k].mutex, m)?;
            }
            for c in &t.calls {
                self.validate_call(t, c)?;
            }
        }
        for (k, m) in self.mutexes.iter().enumerate() {
            users.validate_deadline_use(k, m)?;
        }
        if let Some(cycle) = self.lock_order_cycle() {
            return Err(AnalysisError::new(
                ErrorKind::LockCycle,
                None,
                lock_cycle_message(&cycle),
            ));
        }
        Ok(())
    }

    /// Section `k` of `t`: on a known mutex, within `C_i`, nested in an
    /// earlier and longer section of the same protocol family. Returns its
    /// mutex.
    fn validate_section(&self, t: &Task, k: usize) -> Result<&Mutex, AnalysisError> {
        let s = &t.sections[k];
        let Some(m) = self.mutexes.get(s.mutex) else {
            return invalid(format!(
                "task {}: section on unknown mutex #{}",
                t.name, s.mutex
            ));
        };
        // A section of a helper thread, charged to its caller, is part of
        // a call's work: within E_i, not C_i.
        if s.length > t.demand {
            return invalid(format!(
                "task {}: critical section on {} longer than the job's work",
                t.name, m.name
            ));
        }
        let Some(p) = s.parent else {
            return Ok(m);
        };
        if p >= k || t.sections[p].length < s.length {
            return invalid(format!(
                "task {}: ill-nested critical section on {}",
                t.name, m.name
            ));
        }
        let outer = &self.mutexes[t.sections[p].mutex];
        if std::mem::discriminant(&outer.protocol) != std::mem::discriminant(&m.protocol) {
            return Err(unsupported(format!(
                "task {} locks {} ({}) inside {} ({}): nested critical sections that mix protocols are not analysed",
                t.name,
                m.name,
                protocol_name(m.protocol),
                outer.name,
                protocol_name(outer.protocol)
            )));
        }
        Ok(m)
    }

    /// A call of `t`: to a known server on `t`'s CPU, within `E_i`.
    fn validate_call(&self, t: &Task, c: &Call) -> Result<(), AnalysisError> {
        let Some(s) = self.servers.get(c.server) else {
            return invalid(format!(
                "task {}: call to unknown server #{}",
                t.name, c.server
            ));
        };
        if s.cpu != t.cpu {
            return Err(unsupported(format!(
                "task {} on CPU {} calls server {} on CPU {}: the RPC analysis (the PI-CV paper's §5) covers calls to servers on the caller's CPU only",
                t.name, t.cpu, s.name, s.cpu
            )));
        }
        if c.wcet > t.demand {
            return invalid(format!(
                "task {}: call longer than the job's demand E",
                t.name
            ));
        }
        Ok(())
    }

    /// A cycle in the "locked while holding" order between mutexes, named by
    /// mutex (first and last are the same), if there is one.
    pub fn lock_order_cycle(&self) -> Option<Vec<String>> {
        let n = self.mutexes.len();
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        for t in &self.tasks {
            for s in &t.sections {
                // Every enclosing section's mutex is held when s.mutex is locked.
                let mut p = s.parent;
                while let Some(pi) = p {
                    let outer = t.sections[pi].mutex;
                    if outer < n && s.mutex < n && !edges[outer].contains(&s.mutex) {
                        edges[outer].push(s.mutex);
                    }
                    p = t.sections[pi].parent;
                }
            }
        }
        // Iterative DFS with colours; the stack gives the cycle.
        let mut colour = vec![0u8; n];
        for start in 0..n {
            if colour[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            colour[start] = 1;
            while let Some(&mut (v, ref mut next)) = stack.last_mut() {
                if *next < edges[v].len() {
                    let w = edges[v][*next];
                    *next += 1;
                    if colour[w] == 1 {
                        let pos = stack.iter().position(|&(x, _)| x == w).unwrap_or(0);
                        let mut names: Vec<String> = stack[pos..]
                            .iter()
                            .map(|&(x, _)| self.mutexes[x].name.clone())
                            .collect();
                        names.push(self.mutexes[w].name.clone());
                        return Some(names);
                    }
                    if colour[w] == 0 {
                        colour[w] = 1;
                        stack.push((w, 0));
                    }
                } else {
                    colour[v] = 2;
                    stack.pop();
                }
            }
        }
        None
    }
}

/// An inconsistent task set.
fn invalid<T>(msg: String) -> Result<T, AnalysisError> {
    Err(AnalysisError::new(ErrorKind::Invalid, None, msg))
}

/// A task set outside the analysed model.
fn unsupported(msg: String) -> AnalysisError {
    AnalysisError::new(ErrorKind::Unsupported, None, msg)
}

/// `t`'s times: positive period and deadline, `C_i ≤ E_i ≤ T_i`, and for a
/// reservation `0 < runtime ≤ deadline ≤ period` and no calls.
fn validate_times(t: &Task) -> Result<(), AnalysisError> {
    if t.period == 0 || t.deadline == 0 {
        return invalid(format!(
            "task {}: period and deadline must be positive",
            t.name
        ));
    }
    if t.wcet > t.demand {
        return invalid(format!("task {}: demand E below local work C", t.name));
    }
    if t.demand > t.period {
        return Err(AnalysisError::new(
            ErrorKind::Overload,
            None,
            format!(
                "task {} needs {} µs every {} µs: utilisation {:.3} > 1 (no schedule can meet it)",
                t.name,
                fmt_us(t.demand),
                fmt_us(t.period),
                t.utilisation()
            ),
        ));
    }
    let Class::Deadline {
        runtime,
        deadline,
        period,
    } = t.class
    else {
        if t.global_cpus.is_some() {
            return Err(unsupported(format!(
                "task {}: only SCHED_DEADLINE tasks are analysed free on every CPU (global EDF); pin fixed-priority tasks to one CPU",
                t.name
            )));
        }
        return Ok(());
    };
    if t.global_cpus.is_some_and(|m| m < 2) {
        return invalid(format!(
            "task {}: a global task needs at least 2 CPUs (on one CPU, pin it to CPU 0)",
            t.name
        ));
    }
    if runtime == 0 || runtime > deadline || deadline > period {
        return invalid(format!(
            "task {}: SCHED_DEADLINE needs 0 < runtime ≤ deadline ≤ period",
            t.name
        ));
    }
    if !t.calls.is_empty() {
        return Err(unsupported(format!(
            "task {}: RPC calls from SCHED_DEADLINE tasks are not analysed",
            t.name
        )));
    }
    Ok(())
}

/// What [`TaskSet::validate`] learns of each mutex from its sections.
struct MutexUsers {
    /// Where its first user runs, and its name.
    place: Vec<Option<(Place, String)>>,
    /// Whether `SCHED_DEADLINE` tasks use it.
    deadline: Vec<bool>,
    /// Whether fixed-priority tasks use it.
    fixed: Vec<bool>,
}

impl MutexUsers {
    fn new(mutexes: usize) -> MutexUsers {
        MutexUsers {
            place: vec![None; mutexes],
            deadline: vec![false; mutexes],
            fixed: vec![false; mutexes],
        }
    }

    /// `t` uses mutex `k` (`m`): refused if an earlier user is on another
    /// CPU, or one of them is global and the other pinned.
    fn add(&mut self, t: &Task, k: usize, m: &Mutex) -> Result<(), AnalysisError> {
        let place = Place::of(t);
        match self.place[k] {
            None => self.place[k] = Some((place, t.name.clone())),
            Some((p, ref other)) if p != place => {
                return Err(unsupported(shared_across_message(
                    m,
                    (p, other),
                    (place, &t.name),
                )));
            }
            _ => {}
        }
        match t.class {
            Class::Deadline { .. } => self.deadline[k] = true,
            Class::Fixed { .. } => self.fixed[k] = true,
        }
        Ok(())
    }

    /// Mutex `k` (`m`), if `SCHED_DEADLINE` tasks use it, is theirs alone.
    /// (Its protocol is judged by the analysis: without bandwidth
    /// inheritance its users are reported unbounded, with the reason.)
    fn validate_deadline_use(&self, k: usize, m: &Mutex) -> Result<(), AnalysisError> {
        if self.deadline[k] && self.fixed[k] {
            return Err(unsupported(format!(
                "mutex {} is shared by SCHED_DEADLINE and fixed-priority tasks: not analysed",
                m.name
            )));
        }
        Ok(())
    }
}

/// Where a task runs: pinned to one CPU, or free on all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Cpu(u32),
    Global,
}

impl Place {
    pub(crate) fn of(t: &Task) -> Place {
        match t.global_cpus {
            Some(_) => Place::Global,
            None => Place::Cpu(t.cpu),
        }
    }
}

/// The refusal of a mutex used from two places (`(place, task name)`
/// each): two CPUs, or a global task and a pinned one.
pub(crate) fn shared_across_message(m: &Mutex, a: (Place, &str), b: (Place, &str)) -> String {
    match (a.0, b.0) {
        (Place::Cpu(x), Place::Cpu(y)) => format!(
            "mutex {} is used by {} on CPU {} and by {} on CPU {}: global resources need a multiprocessor locking protocol, which heir does not analyse for pinned tasks; keep every user of a mutex on one CPU",
            m.name, a.1, x, b.1, y
        ),
        (Place::Global, Place::Cpu(c)) | (Place::Cpu(c), Place::Global) => {
            let (g, p) = if a.0 == Place::Global { (a.1, b.1) } else { (b.1, a.1) };
            format!(
                "mutex {} is used by {} (free on every CPU) and by {} (pinned to CPU {}): bandwidth inheritance across affinities is not analysed (the M-BWI paper's §4.3: the owner would run another CPU's bandwidth); make all its users global or all pinned to one CPU",
                m.name, g, p, c
            )
        }
        _ => format!("mutex {} is used from two places", m.name),
    }
}

/// The refusal of a cycle in the nested-lock order, named by mutex.
pub(crate) fn lock_cycle_message(cycle: &[String]) -> String {
    format!(
        "cycle of critical sections {}: nested locks are taken in opposite orders, which can deadlock; take them in one global order",
        cycle.join(" -> ")
    )
}

pub(crate) fn protocol_name(p: MutexProtocol) -> &'static str {
    match p {
        MutexProtocol::None => "no protocol",
        p => p.name(),
    }
}

/// Nanoseconds as a µs string without trailing zeros (`4500`, `12.5`).
pub(crate) fn fmt_us(ns: Nanos) -> String {
    let us = ns as f64 / 1000.0;
    if ns.is_multiple_of(1000) {
        format!("{}", ns / 1000)
    } else {
        format!("{us}")
    }
}
