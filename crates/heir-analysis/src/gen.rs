//! Random task sets, as in the locking-protocol literature.
//!
//! - Utilisations: [`uunifast`] (Bini & Buttazzo 2005) or [`randfixedsum`]
//!   (Stafford's algorithm, as used by Emberson, Stafford & Davis 2010):
//!   uniformly distributed vectors with a fixed sum.
//! - Periods: log-uniform in `[min, max]` ([`log_uniform`]), rounded to a
//!   granularity; priorities rate-monotonic (shorter period first, ties by
//!   index), all distinct.
//! - Critical sections: each task uses each of `resources` mutexes with
//!   `access_probability`, once per job, for a length uniform in the profile's
//!   range (short 1–15 µs, medium 1–100 µs, long 5–1280 µs: the ranges of
//!   Brandenburg's LITMUS^RT locking studies), capped by the task's local
//!   work. With `nest_probability` a section may be nested inside an earlier
//!   one on a lower-numbered mutex (one global lock order: never a cycle).
//! - RPC: each task calls each of `servers` servers with `call_probability`,
//!   work uniform in `call_us`, capped so that local work stays ≥ 1 µs.
//!   Servers have the lowest priorities, below every client (the PI-CV paper's §5).
//!
//! Everything is in whole µs (then ns in the model), so that [`to_scenario`]
//! writes exactly the same numbers into a scenario for the simulator.

use heir_scenario::{
    Event, EventKind, Global, Micros, MutexProtocol, Phase, Policy, ResIdx, Resource, ResourceKind,
    Scenario, Sched, Task as ScTask, TaskIdx, TimerMode,
};
use serde::{Deserialize, Serialize};

use crate::model::{Call, Class, Mutex, Section, Server, Task, TaskSet};
use crate::rng::Rng;

/// UUniFast: `n` utilisations, uniformly distributed on the simplex of sum
/// `total`.
pub fn uunifast(rng: &mut Rng, n: usize, total: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut sum = total;
    for i in 1..n {
        let next = sum * rng.f64().powf(1.0 / (n - i) as f64);
        out.push(sum - next);
        sum = next;
    }
    out.push(sum);
    out
}

/// RandFixedSum (Stafford): `n` values, each in `[lo, hi]`, summing to
/// `total`, uniformly distributed over that polytope. `None` when
/// `total ∉ [n·lo, n·hi]` or `n == 0`.
pub fn randfixedsum(rng: &mut Rng, n: usize, total: f64, lo: f64, hi: f64) -> Option<Vec<f64>> {
    if n == 0 || hi <= lo || total < n as f64 * lo - 1e-12 || total > n as f64 * hi + 1e-12 {
        return None;
    }
    if n == 1 {
        return Some(vec![total.clamp(lo, hi)]);
    }
    let nf = n as f64;
    // Rescale to the unit cube.
    let s = ((total - nf * lo) / (hi - lo)).clamp(0.0, nf);
    let k = (s.floor() as i64).clamp(0, n as i64 - 1) as usize;
    let s = s.clamp(k as f64, k as f64 + 1.0);
    let s1: Vec<f64> = (0..n).map(|j| s - (k as f64 - j as f64)).collect();
    let s2: Vec<f64> = (0..n).map(|j| (k + n - j) as f64 - s).collect();
    // w: n × (n+1); t: (n-1) × n.
    let mut w = vec![vec![0.0f64; n + 1]; n];
    w[0][1] = f64::MAX;
    let mut t = vec![vec![0.0f64; n]; n - 1];
    let tiny = f64::from_bits(1);
    for i in 2..=n {
        for c in 0..i {
            let tmp1 = w[i - 2][c + 1] * s1[c] / i as f64;
            let tmp2 = w[i - 2][c] * s2[n - i + c] / i as f64;
            w[i - 1][c + 1] = tmp1 + tmp2;
            let tmp3 = w[i - 1][c + 1] + tiny;
            t[i - 2][c] = if s2[n - i + c] > s1[c] {
                tmp2 / tmp3
            } else {
                1.0 - tmp1 / tmp3
            };
        }
    }
    let mut x = vec![0.0f64; n];
    let mut s = s;
    let mut j = k; // 0-based column into t
    let (mut sm, mut pr) = (0.0f64, 1.0f64);
    for i in (1..n).rev() {
        let rt = rng.f64();
        let rs = rng.f64();
        let e = if rt <= t[i - 1][j] { 1.0 } else { 0.0 };
        let sx = rs.powf(1.0 / i as f64);
        sm += (1.0 - sx) * pr * s / (i + 1) as f64;
        pr *= sx;
        x[n - i - 1] = sm + pr * e;
        s -= e;
        if e > 0.0 {
            j = j.saturating_sub(1);
        }
    }
    x[n - 1] = sm + pr * s;
    rng.shuffle(&mut x);
    Some(x.into_iter().map(|v| (hi - lo) * v + lo).collect())
}

/// Log-uniform in `[lo, hi]` (`lo > 0`).
pub fn log_uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        return lo;
    }
    (lo.ln() + (hi.ln() - lo.ln()) * rng.f64()).exp()
}

/// How per-task utilisations are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UtilGenerator {
    Uunifast,
    Randfixedsum,
}

/// Critical-section lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CsProfile {
    /// 1–15 µs.
    Short,
    /// 1–100 µs.
    Medium,
    /// 5–1280 µs.
    Long,
}

impl CsProfile {
    /// `(min, max)` in µs.
    pub fn range_us(self) -> (u64, u64) {
        match self {
            CsProfile::Short => (1, 15),
            CsProfile::Medium => (1, 100),
            CsProfile::Long => (5, 1280),
        }
    }
}

/// Parameters of one random task set (besides its total utilisation).
#[derive(Clone, Debug, PartialEq)]
pub struct GenParams {
    pub tasks: usize,
    pub generator: UtilGenerator,
    /// Log-uniform period range (µs) and rounding granularity (µs, ≥ 1).
    pub period_min_us: u64,
    pub period_max_us: u64,
    pub period_granularity_us: u64,
    pub resources: usize,
    pub access_probability: f64,
    /// Critical-section length range (µs).
    pub cs_us: (u64, u64),
    /// Probability that a section nests inside an earlier one.
    pub nest_probability: f64,
    pub servers: usize,
    pub call_probability: f64,
    /// RPC work range (µs).
    pub call_us: (u64, u64),
}

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            tasks: 10,
            generator: UtilGenerator::Uunifast,
            period_min_us: 10_000,
            period_max_us: 1_000_000,
            period_granularity_us: 1_000,
            resources: 4,
            access_probability: 0.3,
            cs_us: CsProfile::Medium.range_us(),
            nest_probability: 0.0,
            servers: 2,
            call_probability: 0.2,
            call_us: (10, 500),
        }
    }
}

/// The highest priority a generated task gets (rate-monotonic downwards).
pub const TOP_PRIORITY: i32 = 98;

/// A random uniprocessor (CPU 0) task set of total utilisation
/// `utilisation`, with PI mutexes and PI-CV (use
/// [`TaskSet::with_protocol`] for the others).
pub fn generate(params: &GenParams, utilisation: f64, rng: &mut Rng) -> TaskSet {
    let utils = utilisations(params, utilisation, rng);
    let periods = periods_us(params, rng);
    // Rate-monotonic: the k-th shortest period gets priority TOP - k.
    let tasks = periods
        .iter()
        .enumerate()
        .map(|(k, &t_us)| {
            let u = utils.get(k).copied().unwrap_or(0.0).clamp(0.0, 1.0);
            random_task(params, k, t_us, u, rng)
        })
        .collect();
    let servers = (0..params.servers)
        .map(|s| Server {
            name: format!("S{s}"),
            cpu: 0,
            priority: (params.servers - s) as i32,
            inherits: true,
        })
        .collect();
    let mutexes = (0..params.resources)
        .map(|r| Mutex {
            name: format!("M{r}"),
            protocol: MutexProtocol::Inherit,
        })
        .collect();
    TaskSet {
        tasks,
        servers,
        mutexes,
        pi_cv: true,
    }
}

/// The tasks' utilisations, summing to `utilisation`.
fn utilisations(params: &GenParams, utilisation: f64, rng: &mut Rng) -> Vec<f64> {
    let n = params.tasks;
    match params.generator {
        UtilGenerator::Uunifast if utilisation > 1.0 => uunifast_discard(rng, n, utilisation),
        UtilGenerator::Uunifast => uunifast(rng, n, utilisation),
        UtilGenerator::Randfixedsum => randfixedsum(rng, n, utilisation, 0.0, 1.0)
            .unwrap_or_else(|| uunifast(rng, n, utilisation)),
    }
}

/// Draws UUniFast-Discard makes before it gives the draw to RandFixedSum.
pub const DISCARD_TRIES: usize = 1000;

/// UUniFast-Discard (Davis & Burns, "Improved priority assignment for
/// global fixed priority pre-emptive scheduling in multiprocessor real-time
/// systems"): UUniFast draws of sum `total`, discarded until every task is
/// at most 1 — uniform over the vectors of that sum in `[0, 1]ⁿ`. After
/// [`DISCARD_TRIES`] discarded draws (a total near `n` is rarely drawn),
/// RandFixedSum's draw, which has that same distribution. A total above
/// `n` cannot be drawn: each task gets `total / n`, clamped to 1 later.
pub fn uunifast_discard(rng: &mut Rng, n: usize, total: f64) -> Vec<f64> {
    for _ in 0..DISCARD_TRIES {
        let u = uunifast(rng, n, total);
        if u.iter().all(|&x| x <= 1.0) {
            return u;
        }
    }
    randfixedsum(rng, n, total, 0.0, 1.0).unwrap_or_else(|| vec![total / n as f64; n])
}

/// The tasks' periods (µs), log-uniform and rounded to the granularity,
/// shortest first.
fn periods_us(params: &GenParams, rng: &mut Rng) -> Vec<u64> {
    let gran = params.period_granularity_us.max(1);
    let mut periods: Vec<u64> = (0..params.tasks)
        .map(|_| {
            let p = log_uniform(
                rng,
                params.period_min_us as f64,
                params.period_max_us as f64,
            );
            (((p / gran as f64).round() as u64).max(1)) * gran
        })
        .collect();
    periods.sort_unstable();
    periods
}

/// Task `T{k}` of period `t_us` and utilisation `u`: its calls, then its
/// critical sections within the local work left.
fn random_task(params: &GenParams, k: usize, t_us: u64, u: f64, rng: &mut Rng) -> Task {
    let e_us = ((u * t_us as f64).round() as u64).clamp(1, t_us);
    let mut c_us = e_us;
    let mut calls = Vec::new();
    for s in 0..params.servers {
        if rng.chance(params.call_probability) {
            let d = rng.range_u64(params.call_us.0, params.call_us.1).max(1);
            if d < c_us {
                c_us -= d;
                calls.push(Call {
                    server: s,
                    wcet: d * 1000,
                });
            }
        }
    }
    let sections = random_sections(params, c_us, rng);
    Task::fixed(
        format!("T{k}"),
        0,
        TOP_PRIORITY - k as i32,
        t_us * 1000,
        c_us * 1000,
        sections,
        calls,
    )
}

/// The critical sections of a task with `c_us` of local work: each mutex
/// with the access probability, outermost (within the work left) or, with
/// the nesting probability, inside an earlier outermost section on a lower
/// mutex.
fn random_sections(params: &GenParams, c_us: u64, rng: &mut Rng) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut top_total = 0u64;
    for r in 0..params.resources {
        if !rng.chance(params.access_probability) {
            continue;
        }
        let len = rng.range_u64(params.cs_us.0, params.cs_us.1).max(1);
        if rng.chance(params.nest_probability) && nest(&mut sections, r, len, rng) {
            continue;
        }
        let l = len.min(c_us.saturating_sub(top_total));
        if l > 0 {
            top_total += l;
            sections.push(Section {
                mutex: r,
                length: l * 1000,
                parent: None,
            });
        }
    }
    sections
}

/// Nests a section on mutex `r` of `len_us` (at most) inside a random
/// earlier outermost section on a lower mutex, within the room its other
/// inner sections leave. False when there is no such outer section.
fn nest(sections: &mut Vec<Section>, r: usize, len_us: u64, rng: &mut Rng) -> bool {
    let candidates: Vec<usize> = (0..sections.len())
        .filter(|&x| sections[x].parent.is_none() && sections[x].mutex < r)
        .collect();
    if candidates.is_empty() {
        return false;
    }
    let p = candidates[rng.range_u64(0, candidates.len() as u64 - 1) as usize];
    let inner_used: u64 = sections
        .iter()
        .filter(|s| s.parent == Some(p))
        .map(|s| s.length)
        .sum();
    let room = sections[p].length / 1000 - inner_used / 1000;
    let l = len_us.min(room);
    if l > 0 {
        sections.push(Section {
            mutex: r,
            length: l * 1000,
            parent: Some(p),
        });
    }
    true
}

/// A random set of `tasks` `SCHED_DEADLINE` reservations of total
/// utilisation `utilisation` (UUniFast), sharing `resources` mutexes with
/// bandwidth inheritance (`bwi`): pinned to CPU 0 (`global_cpus == None`)
/// or free on `m` CPUs (`Some(m)`, `m ≥ 2`).
///
/// Periods are log-uniform in 5–100 ms (whole ms); each task uses each
/// mutex with probability 0.5 for 100 µs–3 ms (capped by its work), nested
/// inside an earlier section with probability 0.3. Budgets: half of the
/// tasks get `Q = C`, the others `Q = C +` the sum of every other task's
/// longest section (so that many jobs fit their budget with their
/// interference), capped by `D`; `D = P`, or with probability 0.25 a
/// deadline in `[Q, P]`; jobs come every `P`, or with probability 0.25
/// every `2P`. Whole µs throughout, as [`to_scenario`] writes them.
pub fn generate_deadline(
    rng: &mut Rng,
    tasks: usize,
    utilisation: f64,
    resources: usize,
    global_cpus: Option<u32>,
) -> TaskSet {
    generate_deadline_d(rng, tasks, utilisation, resources, global_cpus, 0.25)
}

fn generate_deadline_d(
    rng: &mut Rng,
    tasks: usize,
    utilisation: f64,
    resources: usize,
    global_cpus: Option<u32>,
    constrained: f64,
) -> TaskSet {
    let params = GenParams {
        tasks,
        period_min_us: 5_000,
        period_max_us: 100_000,
        period_granularity_us: 1_000,
        resources,
        access_probability: 0.5,
        cs_us: (100, 3_000),
        nest_probability: 0.3,
        servers: 0,
        ..GenParams::default()
    };
    let utils = uunifast(rng, tasks, utilisation);
    let periods = periods_us(&params, rng);
    let mut out: Vec<Task> = Vec::with_capacity(tasks);
    for (k, &p_us) in periods.iter().enumerate() {
        let u = utils.get(k).copied().unwrap_or(0.0).clamp(0.0, 1.0);
        let c_us = ((u * p_us as f64).round() as u64).clamp(1, p_us);
        let sections = random_sections(&params, c_us, rng);
        let mut t = Task::fixed(
            format!("D{k}"),
            0,
            0,
            p_us * 1000,
            c_us * 1000,
            sections,
            vec![],
        );
        t.global_cpus = global_cpus;
        out.push(t);
    }
    let longest: Vec<u64> = out
        .iter()
        .map(|t| {
            t.sections
                .iter()
                .map(|s| s.length / 1000)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let all: u64 = longest.iter().sum();
    for (k, t) in out.iter_mut().enumerate() {
        let (c_us, p_us) = (t.wcet / 1000, t.period / 1000);
        let q_us = if rng.chance(0.5) {
            c_us
        } else {
            (c_us + all - longest[k]).min(p_us)
        };
        let d_us = if rng.chance(constrained) {
            rng.range_u64(q_us, p_us)
        } else {
            p_us
        };
        if rng.chance(0.25) {
            t.period = 2 * p_us * 1000;
            t.deadline = t.period;
        }
        t.class = Class::Deadline {
            runtime: q_us * 1000,
            deadline: d_us * 1000,
            period: p_us * 1000,
        };
    }
    let mutexes = (0..resources)
        .map(|r| Mutex {
            name: format!("M{r}"),
            protocol: MutexProtocol::Bwi,
        })
        .collect();
    TaskSet {
        tasks: out,
        servers: vec![],
        mutexes,
        pi_cv: true,
    }
}

/// Where [`generate_deadline_with`] puts the reservations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DlPlacement {
    /// All pinned to CPU 0.
    OneCpu,
    /// Two independent sets, pinned to CPU 0 and CPU 1 (each with its own
    /// mutexes: a mutex is never used on two CPUs).
    Partitioned2,
    /// Free on both CPUs of a 2-CPU machine (global EDF).
    Global2,
}

/// What [`generate_deadline_with`] draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DlGen {
    /// Tasks per CPU group (per CPU when partitioned).
    pub tasks: usize,
    /// Utilisation `Σ C/P` per group.
    pub utilisation: f64,
    /// Mutexes per group.
    pub resources: usize,
    /// The protocol of every mutex.
    pub protocol: MutexProtocol,
    pub placement: DlPlacement,
    /// Probability that a task's relative deadline is drawn in `[Q, P)`
    /// (a constrained deadline) instead of `P`.
    pub constrained: f64,
}

/// A random constrained-deadline reservation set (as [`generate_deadline`],
/// with the mutex protocol, the placement and the share of constrained
/// deadlines chosen): the sets of the EDF soundness test.
pub fn generate_deadline_with(rng: &mut Rng, g: &DlGen) -> TaskSet {
    let group = |rng: &mut Rng, cpu: u32, global: Option<u32>| {
        let mut s = generate_deadline_d(
            rng,
            g.tasks,
            g.utilisation,
            g.resources,
            global,
            g.constrained,
        );
        for t in &mut s.tasks {
            t.cpu = cpu;
        }
        for m in &mut s.mutexes {
            m.protocol = g.protocol;
        }
        s
    };
    match g.placement {
        DlPlacement::OneCpu => group(rng, 0, None),
        DlPlacement::Global2 => group(rng, 0, Some(2)),
        DlPlacement::Partitioned2 => {
            let mut a = group(rng, 0, None);
            let b = group(rng, 1, None);
            let off = a.mutexes.len();
            let n = a.tasks.len();
            for (k, mut t) in b.tasks.into_iter().enumerate() {
                t.name = format!("D{}", n + k);
                for s in &mut t.sections {
                    s.mutex += off;
                }
                a.tasks.push(t);
            }
            for (k, mut m) in b.mutexes.into_iter().enumerate() {
                m.name = format!("M{}", off + k);
                a.mutexes.push(m);
            }
            a
        }
    }
}

/// How [`to_scenario`] lays a task set out.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioOptions {
    /// `global.duration` (s).
    pub duration_s: f64,
    /// `global.seed`.
    pub seed: u64,
    /// Random start offsets (`delay`, uniform in `[0, T)`), to explore other
    /// phasings than the synchronous release.
    pub random_offsets: bool,
    /// Shuffle each job's pieces (local work, sections, calls) instead of
    /// "work, sections, calls".
    pub shuffle: bool,
    /// Draw some work as a `[max/2, max]` range instead of a fixed value
    /// (the simulator draws it; the analysis uses the max).
    pub ranges: bool,
    /// Timer mode for every task.
    pub timer_mode: TimerMode,
}

impl Default for ScenarioOptions {
    fn default() -> Self {
        ScenarioOptions {
            duration_s: 1.0,
            seed: 0,
            random_offsets: false,
            shuffle: false,
            ranges: false,
            timer_mode: TimerMode::Absolute,
        }
    }
}

/// A scenario that runs `set` (single-shape, whole-µs tasks on their CPUs,
/// or on every CPU for global ones, as [`generate`] and
/// [`generate_deadline`] make them): one phase per task with its pieces then a
/// `timer`; one `serve` loop per server. Random choices come from `rng`.
pub fn to_scenario(set: &TaskSet, opts: &ScenarioOptions, rng: &mut Rng) -> Scenario {
    let layout = Layout {
        endpoint0: set.mutexes.len(),
        timer0: set.mutexes.len() + set.servers.len(),
    };
    let mut tasks: Vec<ScTask> = Vec::new();
    for (ti, t) in set.tasks.iter().enumerate() {
        tasks.push(client_task(t, ti, &layout, opts, rng));
    }
    for (k, s) in set.servers.iter().enumerate() {
        let path = format!("tasks.{}", s.name);
        let mut ev = EventWriter::new(&path);
        ev.push("serve", EventKind::Serve(ResIdx(layout.endpoint0 + k)));
        let sched = Sched {
            policy: Policy::Fifo,
            priority: s.priority,
            dl: None,
        };
        tasks.push(one_phase_task(&s.name, path, sched, s.cpu, 0, ev.events));
    }
    Scenario {
        global: Global {
            duration_s: Some(opts.duration_s),
            default_policy: Policy::Fifo,
            pi_enabled: true,
            pi_cv: set.pi_cv,
            bwi_affinity: true,
            seed: opts.seed,
            gpm: true,
            calibration_ns_per_loop: None,
        },
        resources: resources(set, opts),
        tasks,
        warnings: Vec::new(),
        rpc: Default::default(),
    }
}

/// Where [`to_scenario`] puts the resources: the mutexes (index `k` of the
/// set is resource `k`), then one endpoint per server, then one timer per
/// task.
struct Layout {
    /// Resource index of server 0's endpoint.
    endpoint0: usize,
    /// Resource index of task 0's timer.
    timer0: usize,
}

/// The resources of the scenario of `set`, as [`Layout`] places them.
fn resources(set: &TaskSet, opts: &ScenarioOptions) -> Vec<Resource> {
    let mut resources: Vec<Resource> = Vec::new();
    for m in &set.mutexes {
        resources.push(Resource {
            name: m.name.clone(),
            path: format!("resources.{}", m.name),
            kind: ResourceKind::Mutex {
                protocol: m.protocol,
            },
        });
    }
    let n = set.tasks.len();
    for (k, s) in set.servers.iter().enumerate() {
        let callers: Vec<TaskIdx> = (0..n)
            .filter(|&t| set.tasks[t].calls.iter().any(|c| c.server == k))
            .map(TaskIdx)
            .collect();
        resources.push(Resource {
            name: format!("ep{k}"),
            path: format!("tasks.{}.serve", s.name),
            kind: ResourceKind::Endpoint {
                servers: vec![TaskIdx(n + k)],
                callers,
            },
        });
    }
    for t in &set.tasks {
        resources.push(Resource {
            name: format!("timer_{}", t.name),
            path: format!("tasks.{}.timer", t.name),
            kind: ResourceKind::Timer {
                mode: opts.timer_mode,
                unique: false,
            },
        });
    }
    resources
}

/// Task `ti` of the set (`t`): its job's pieces, then its timer.
fn client_task(
    t: &Task,
    ti: usize,
    layout: &Layout,
    opts: &ScenarioOptions,
    rng: &mut Rng,
) -> ScTask {
    let path = format!("tasks.{}", t.name);
    let mut ev = EventWriter::new(&path);
    write_job(t, layout, opts, rng, &mut ev);
    ev.push(
        "timer",
        EventKind::Timer {
            timer: ResIdx(layout.timer0 + ti),
            period: Micros::Fixed(t.period / 1000),
        },
    );
    let delay_us = if opts.random_offsets {
        rng.range_u64(0, (t.period / 1000).saturating_sub(1))
    } else {
        0
    };
    let (policy, priority, dl) = match t.class {
        crate::model::Class::Fixed { priority } => (Policy::Fifo, priority, None),
        crate::model::Class::Deadline {
            runtime,
            deadline,
            period,
        } => (
            Policy::Deadline,
            0,
            Some(heir_scenario::DlParams {
                runtime_us: runtime / 1000,
                deadline_us: deadline / 1000,
                period_us: period / 1000,
            }),
        ),
    };
    let sched = Sched {
        policy,
        priority,
        dl,
    };
    let mut task = one_phase_task(&t.name, path, sched, t.cpu, delay_us, ev.events);
    if let Some(m) = t.global_cpus {
        // Every CPU, named: the scenario then has m CPUs.
        task.cpus = Some((0..m).collect());
    }
    task
}

/// One piece of a job, as [`to_scenario`] writes it.
#[derive(Clone, Copy)]
enum Piece {
    /// The local work outside critical sections.
    Free,
    /// An outermost section (index into the task's sections), its nested
    /// ones inside.
    Section(usize),
    /// A call (index into the task's calls).
    Call(usize),
}

/// The events of one job of `t`: its pieces, in order or shuffled.
fn write_job(
    t: &Task,
    layout: &Layout,
    opts: &ScenarioOptions,
    rng: &mut Rng,
    ev: &mut EventWriter,
) {
    let outer: Vec<usize> = (0..t.sections.len())
        .filter(|&k| t.sections[k].parent.is_none())
        .collect();
    let in_sections: u64 = outer.iter().map(|&k| t.sections[k].length).sum();
    let free = t.wcet.saturating_sub(in_sections);
    let mut pieces: Vec<Piece> = Vec::new();
    pieces.push(Piece::Free);
    pieces.extend(outer.iter().map(|&k| Piece::Section(k)));
    pieces.extend((0..t.calls.len()).map(Piece::Call));
    if opts.shuffle {
        rng.shuffle(&mut pieces);
    }
    for piece in pieces {
        match piece {
            Piece::Free => {
                if free > 0 {
                    let m = micros(free, opts, rng);
                    ev.push("run", EventKind::Run(m));
                }
            }
            Piece::Section(k) => write_section(t, k, ev, rng, opts),
            Piece::Call(c) => {
                let c = t.calls[c];
                ev.push(
                    "call",
                    EventKind::Call {
                        endpoint: ResIdx(layout.endpoint0 + c.server),
                        run: micros(c.wcet, opts, rng),
                    },
                );
            }
        }
    }
}

/// `ns` of work as µs: fixed, or with [`ScenarioOptions::ranges`] a
/// `[max/2, max]` range half of the time.
fn micros(ns: u64, opts: &ScenarioOptions, rng: &mut Rng) -> Micros {
    let us = ns / 1000;
    if opts.ranges && us >= 2 && rng.chance(0.5) {
        Micros::Uniform {
            min: us / 2,
            max: us,
        }
    } else {
        Micros::Fixed(us)
    }
}

/// One thread pinned to `cpu`, looping forever over one unnamed phase of
/// `events`.
fn one_phase_task(
    name: &str,
    path: String,
    sched: Sched,
    cpu: u32,
    delay_us: u64,
    events: Vec<Event>,
) -> ScTask {
    ScTask {
        name: name.to_string(),
        path: path.clone(),
        line: 0,
        column: 0,
        instance: 1,
        sched,
        cpus: Some(vec![cpu]),
        delay_us,
        loops: None,
        phases: vec![Phase {
            name: String::new(),
            path,
            line: 0,
            column: 0,
            loops: 1,
            cpus: None,
            sched: None,
            events,
        }],
    }
}

fn write_section(t: &Task, k: usize, ev: &mut EventWriter, rng: &mut Rng, opts: &ScenarioOptions) {
    let s = t.sections[k];
    ev.push("lock", EventKind::Lock(ResIdx(s.mutex)));
    let children: Vec<usize> = (0..t.sections.len())
        .filter(|&c| t.sections[c].parent == Some(k))
        .collect();
    let inner: u64 = children.iter().map(|&c| t.sections[c].length).sum();
    let own = s.length.saturating_sub(inner);
    if own > 0 {
        ev.push("run", EventKind::Run(micros(own, opts, rng)));
    }
    for c in children {
        write_section(t, c, ev, rng, opts);
    }
    ev.push("unlock", EventKind::Unlock(ResIdx(s.mutex)));
}

/// Names events the way rt-app's workgen renames repeated keys.
struct EventWriter {
    path: String,
    events: Vec<Event>,
    counts: std::collections::HashMap<&'static str, u32>,
}

impl EventWriter {
    fn new(path: &str) -> EventWriter {
        EventWriter {
            path: path.to_string(),
            events: Vec::new(),
            counts: std::collections::HashMap::new(),
        }
    }
    fn push(&mut self, base: &'static str, kind: EventKind) {
        let c = self.counts.entry(base).or_insert(0);
        let key = if *c == 0 {
            base.to_string()
        } else {
            format!("{base}{c}")
        };
        *c += 1;
        self.events.push(Event {
            path: format!("{}.{}", self.path, key),
            key,
            line: 0,
            column: 0,
            kind,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uunifast_sums_and_is_nonnegative() {
        let mut rng = Rng::new(3);
        for n in 1..20 {
            let u = uunifast(&mut rng, n, 0.8);
            assert_eq!(u.len(), n);
            assert!((u.iter().sum::<f64>() - 0.8).abs() < 1e-9);
            assert!(u.iter().all(|&x| x >= 0.0));
        }
    }

    #[test]
    fn generators_are_uniform_on_average() {
        // Uniform on the simplex / polytope: every coordinate has mean
        // total / n (symmetry); 20 000 draws, deterministic seed.
        let mut rng = Rng::new(11);
        let (n, draws) = (4usize, 20_000);
        let mut mean_u = vec![0.0; n];
        let mut mean_r = vec![0.0; n];
        let mut over_half = 0usize;
        for _ in 0..draws {
            for (m, v) in mean_u.iter_mut().zip(uunifast(&mut rng, n, 1.2)) {
                *m += v / draws as f64;
            }
            let x = randfixedsum(&mut rng, n, 1.2, 0.0, 0.5).unwrap();
            over_half += x.iter().filter(|&&v| v > 0.5).count();
            for (m, v) in mean_r.iter_mut().zip(x) {
                *m += v / draws as f64;
            }
        }
        for k in 0..n {
            assert!((mean_u[k] - 0.3).abs() < 0.01, "{mean_u:?}");
            assert!((mean_r[k] - 0.3).abs() < 0.01, "{mean_r:?}");
        }
        assert_eq!(over_half, 0);
    }

    #[test]
    fn uunifast_discard_keeps_the_total_above_one() {
        // UUniFast alone draws tasks above 1 (clamped, the total shrank:
        // issue 21); the discard variant keeps every task ≤ 1 and the sum.
        let params = GenParams {
            tasks: 3,
            ..GenParams::default()
        };
        for seed in 0..200 {
            for total in [1.5, 2.0, 2.9, 3.0] {
                let mut rng = Rng::new(seed);
                let u = uunifast_discard(&mut rng, 3, total);
                assert!(u.iter().all(|&x| (0.0..=1.0 + 1e-12).contains(&x)), "{u:?}");
                assert!((u.iter().sum::<f64>() - total).abs() < 1e-9, "{u:?}");
                let set = generate(&params, total, &mut Rng::new(seed));
                let sum: f64 = set.tasks.iter().map(|t| t.utilisation()).sum();
                // Whole µs: each task within 1 µs of its share.
                assert!((sum - total).abs() < 0.01, "seed {seed}: {sum} for {total}");
            }
        }
    }

    #[test]
    fn randfixedsum_respects_sum_and_bounds() {
        let mut rng = Rng::new(5);
        for n in 1..15 {
            for &(total, lo, hi) in &[(0.5, 0.0, 1.0), (2.5, 0.1, 0.5), (n as f64 * 0.3, 0.0, 0.4)]
            {
                if total < n as f64 * lo || total > n as f64 * hi {
                    assert!(randfixedsum(&mut rng, n, total, lo, hi).is_none());
                    continue;
                }
                let x = randfixedsum(&mut rng, n, total, lo, hi).unwrap();
                assert_eq!(x.len(), n);
                assert!((x.iter().sum::<f64>() - total).abs() < 1e-9, "{x:?}");
                assert!(x.iter().all(|&v| v >= lo - 1e-9 && v <= hi + 1e-9), "{x:?}");
            }
        }
    }
}
