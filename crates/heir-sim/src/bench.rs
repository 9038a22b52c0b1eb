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
