//! A generator of large, deadlock-free scenarios for benchmarks
//! (`cargo bench -p heir-sim`, `heir bench`).
//!
//! The scenario is made of *cells* of four threads pinned to one CPU
//! (cell `k` on CPU `k % cpus`: partitioned scheduling):
//!
//! ```text
//!   P (periodic producer)  timer Tp; run; lock m_k; run; unlock m_k; push q_k
//!   C (consumer)           pop q_k; lock m_k; run; unlock m_k
//!   K (periodic client)    timer Tk; run; call ep_k {run}
//!   S (server, lowest)     serve ep_k
//! ```
//!
//! so every cell exercises a PI mutex shared by two threads, a bounded queue
//! (PI mutex + `more`/`less` condvars with helpers) and an RPC endpoint
//! (PI mutex, `more` condvar, a reply condvar helped by the server). Each
//! thread holds at most one lock at a time: no deadlock. Periods are drawn in
//! 5..=50 ms, work sized for at most 4 % CPU per cell (about 50 % per CPU with
//! 200 tasks on 4 CPUs), and some work is `Uniform` to exercise the RNG.
//! Priorities are rate-monotonic (99 − period in ms); servers get 1..=4.

use heir_scenario::{
    Event, EventKind, Global, Micros, MutexProtocol, Phase, Policy, ResIdx, Resource, ResourceKind,
    Scenario, Sched, Task, TaskIdx, TimerMode,
};

use crate::rng::SplitMix64;

/// Threads per cell (see the module docs).
pub const CELL_TASKS: usize = 4;

fn ev(task: &str, key: &str, kind: EventKind) -> Event {
    Event {
        key: key.to_string(),
        path: format!("tasks.{task}.phases.p.{key}"),
        line: 0,
        column: 0,
        kind,
    }
}

fn task(name: String, prio: i32, cpu: u32, events: Vec<Event>) -> Task {
    Task {
        path: format!("tasks.{name}"),
        line: 0,
        column: 0,
        instance: 1,
        sched: Sched {
            policy: Policy::Fifo,
            priority: prio,
            dl: None,
        },
        cpus: Some(vec![cpu]),
        delay_us: 0,
        loops: None,
        phases: vec![Phase {
            name: "p".into(),
            path: format!("tasks.{name}.phases.p"),
            line: 0,
            column: 0,
            loops: 1,
            cpus: None,
            sched: None,
            events,
        }],
        name,
    }
}

fn resource(name: String, kind: ResourceKind) -> Resource {
    Resource {
        path: format!("resources.{name}"),
        name,
        kind,
    }
}

/// A scenario of `tasks / 4` cells (at least one) on `cpus` CPUs (at least
/// one), simulated for 10 s by default (`global.duration`), PI-CV on. The
/// same `seed` gives the same scenario.
pub fn large_scenario(seed: u64, tasks: usize, cpus: u32) -> Scenario {
    let cpus = cpus.max(1);
    let cells = (tasks / CELL_TASKS).max(1);
    let mut rng = SplitMix64::new(seed);
    let mut out = Scenario {
        global: Global {
            duration_s: Some(10.0),
            default_policy: Policy::Fifo,
            pi_enabled: true,
            pi_cv: true,
            bwi_affinity: true,
            seed,
            gpm: true,
            calibration_ns_per_loop: None,
        },
        resources: Vec::new(),
        tasks: Vec::new(),
        warnings: Vec::new(),
        rpc: Default::default(),
    };
    for k in 0..cells {
        add_cell(&mut out, &mut rng, k, (k as u32) % cpus);
    }
    out
}

/// Cell `k` on CPU `cpu`: its resources (PI mutex `m`, queue `q`, endpoint
/// `ep`, timers `tp`, `tk`) and its four tasks (producer `P`, consumer `C`,
/// client `K`, server `S`).
fn add_cell(sc: &mut Scenario, rng: &mut SplitMix64, k: usize, cpu: u32) {
    let base = sc.resources.len();
    let (m, q, ep, tp, tk) = (base, base + 1, base + 2, base + 3, base + 4);
    let ti = sc.tasks.len();
    let (p_idx, c_idx, k_idx, s_idx) = (ti, ti + 1, ti + 2, ti + 3);
    sc.resources.push(resource(
        format!("m{k}"),
        ResourceKind::Mutex {
            protocol: MutexProtocol::Inherit,
        },
    ));
    sc.resources.push(resource(
        format!("q{k}"),
        ResourceKind::Queue {
            capacity: 4,
            pushers: vec![TaskIdx(p_idx)],
            poppers: vec![TaskIdx(c_idx)],
        },
    ));
    sc.resources.push(resource(
        format!("ep{k}"),
        ResourceKind::Endpoint {
            servers: vec![TaskIdx(s_idx)],
            callers: vec![TaskIdx(k_idx)],
        },
    ));
    for name in [format!("tp{k}"), format!("tk{k}")] {
        sc.resources.push(resource(
            name,
            ResourceKind::Timer {
                mode: TimerMode::Absolute,
                unique: false,
            },
        ));
    }
    // Periods in whole ms, 5..=50.
    let per_p = rng.uniform(5, 50) * 1000;
    let per_k = rng.uniform(5, 50) * 1000;
    let pct = |period: u64, tenths: u64| (period * tenths / 1000).max(1);
    let (pn, cn, kn, sn) = (
        format!("P{k}"),
        format!("C{k}"),
        format!("K{k}"),
        format!("S{k}"),
    );
    let p_events = vec![
        ev(
            &pn,
            "timer",
            EventKind::Timer {
                timer: ResIdx(tp),
                period: Micros::Fixed(per_p),
            },
        ),
        ev(
            &pn,
            "run",
            EventKind::Run(Micros::Uniform {
                min: pct(per_p, 5),
                max: pct(per_p, 10),
            }),
        ),
        ev(&pn, "lock", EventKind::Lock(ResIdx(m))),
        ev(&pn, "run1", EventKind::Run(Micros::Fixed(pct(per_p, 5)))),
        ev(&pn, "unlock", EventKind::Unlock(ResIdx(m))),
        ev(&pn, "push", EventKind::Push(ResIdx(q))),
    ];
    let c_events = vec![
        ev(&cn, "pop", EventKind::Pop(ResIdx(q))),
        ev(&cn, "lock", EventKind::Lock(ResIdx(m))),
        ev(&cn, "run", EventKind::Run(Micros::Fixed(pct(per_p, 5)))),
        ev(&cn, "unlock", EventKind::Unlock(ResIdx(m))),
    ];
    let k_events = vec![
        ev(
            &kn,
            "timer",
            EventKind::Timer {
                timer: ResIdx(tk),
                period: Micros::Fixed(per_k),
            },
        ),
        ev(&kn, "run", EventKind::Run(Micros::Fixed(pct(per_k, 10)))),
        ev(
            &kn,
            "call",
            EventKind::Call {
                endpoint: ResIdx(ep),
                run: Micros::Uniform {
                    min: pct(per_k, 5),
                    max: pct(per_k, 10),
                },
            },
        ),
    ];
    let s_events = vec![ev(&sn, "serve", EventKind::Serve(ResIdx(ep)))];
    let prio_p = 99 - (per_p / 1000) as i32;
    let prio_k = 99 - (per_k / 1000) as i32;
    let prio_c = rng.uniform(20, 45) as i32;
    let prio_s = rng.uniform(1, 4) as i32;
    sc.tasks.push(task(pn, prio_p, cpu, p_events));
    sc.tasks.push(task(cn, prio_c, cpu, c_events));
    sc.tasks.push(task(kn, prio_k, cpu, k_events));
    sc.tasks.push(task(sn, prio_s, cpu, s_events));
}

/// One periodic task of [`periodic_set`]: period, work and (optionally)
/// the critical section it spends inside a shared mutex, all in µs, and its
/// `SCHED_FIFO` priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodicTask {
    /// Period (µs, whole ms), also the relative deadline.
    pub period_us: u64,
    /// Work per job (µs, at least 1), critical section included.
    pub wcet_us: u64,
    /// Part of the work done holding mutex `mutex` (0: no section).
    pub section_us: u64,
    /// The shared mutex it locks once per job, if any.
    pub mutex: Option<usize>,
    /// `SCHED_FIFO` priority, rate-monotonic (1..=98, shorter period
    /// higher; tasks with close periods share a level, FIFO among them).
    pub priority: i32,
}

/// A periodic task set for the scaling benchmark (`examples/sim_scale.rs`,
/// `scripts/bench-sim-scale.sh`): `tasks` tasks (at least one), utilisation
/// `0.5 × cpus` split by UUniFast, periods log-uniform in 10..=1000 ms
/// (whole ms), work `u·T` rounded to whole µs (at least 1 µs). With
/// `shared_mutexes`, one PI mutex per 8 tasks (task `i` locks mutex
/// `i % (tasks/8)` once per job, for a quarter of its work, at most 50 µs):
/// each mutex is shared by 8 tasks of different periods.
pub fn periodic_set(seed: u64, tasks: usize, cpus: u32, shared_mutexes: bool) -> Vec<PeriodicTask> {
    let n = tasks.max(1);
    let mut rng = SplitMix64::new(seed);
    let unit = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    // UUniFast (Bini & Buttazzo).
    let mut sum = 0.5 * f64::from(cpus.max(1));
    let mut utils = Vec::with_capacity(n);
    for i in 1..n {
        let next = sum * unit(&mut rng).powf(1.0 / (n - i) as f64);
        utils.push(sum - next);
        sum = next;
    }
    utils.push(sum);
    let mutexes = (n / 8).max(1);
    let (lo, hi) = (10f64.ln(), 1000f64.ln());
    utils
        .into_iter()
        .enumerate()
        .map(|(i, u)| {
            let period_ms = (lo + (hi - lo) * unit(&mut rng))
                .exp()
                .round()
                .clamp(10.0, 1000.0);
            let period_us = period_ms as u64 * 1000;
            let wcet_us = ((u * period_us as f64).round() as u64).clamp(1, period_us);
            // Rate-monotonic on a log scale: 10 ms → 98, 1000 ms → 1.
            let priority = 98 - ((period_ms.ln() - lo) / (hi - lo) * 97.0).round() as i32;
            let (section_us, mutex) = if shared_mutexes && wcet_us >= 2 {
                ((wcet_us / 4).clamp(1, 50), Some(i % mutexes))
            } else {
                (0, None)
            };
            PeriodicTask {
                period_us,
                wcet_us,
                section_us,
                mutex,
                priority,
            }
        })
        .collect()
}

/// The scenario of a [`periodic_set`]: each task an absolute timer of its
/// period, then its work (`run`, with `lock; run; unlock` of its mutex
/// after the part outside the section), allowed on every CPU (global
/// scheduling: the CPU count is [`crate::SimConfig::cpus`]). Simulated for
/// 1 s by default, priority inheritance on.
pub fn periodic_scenario(set: &[PeriodicTask], seed: u64) -> Scenario {
    let mut out = Scenario {
        global: Global {
            duration_s: Some(1.0),
            default_policy: Policy::Fifo,
            pi_enabled: true,
            pi_cv: true,
            bwi_affinity: true,
            gpm: true,
            seed,
            calibration_ns_per_loop: None,
        },
        resources: Vec::new(),
        tasks: Vec::new(),
        warnings: Vec::new(),
        rpc: Default::default(),
    };
    let mutexes = set
        .iter()
        .filter_map(|t| t.mutex)
        .max()
        .map_or(0, |m| m + 1);
    for m in 0..mutexes {
        out.resources.push(resource(
            format!("m{m}"),
            ResourceKind::Mutex {
                protocol: MutexProtocol::Inherit,
            },
        ));
    }
    for (i, t) in set.iter().enumerate() {
        let name = format!("t{i}");
        let timer = out.resources.len();
        out.resources.push(resource(
            format!("tm{i}"),
            ResourceKind::Timer {
                mode: TimerMode::Absolute,
                unique: false,
            },
        ));
        let mut events = vec![ev(
            &name,
            "timer",
            EventKind::Timer {
                timer: ResIdx(timer),
                period: Micros::Fixed(t.period_us),
            },
        )];
        let outside = t.wcet_us - t.section_us;
        if outside > 0 {
            events.push(ev(&name, "run", EventKind::Run(Micros::Fixed(outside))));
        }
        if let Some(m) = t.mutex {
            events.push(ev(&name, "lock", EventKind::Lock(ResIdx(m))));
            events.push(ev(
                &name,
                "run1",
                EventKind::Run(Micros::Fixed(t.section_us)),
            ));
            events.push(ev(&name, "unlock", EventKind::Unlock(ResIdx(m))));
        }
        let mut tk = task(name, t.priority, 0, events);
        tk.cpus = None;
        out.tasks.push(tk);
    }
    out
}
