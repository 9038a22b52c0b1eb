//! Random small scenarios (2-6 threads, 1-2 mutexes, condvar waits with
//! helpers, timers, 1-2 CPUs): the simulator never panics, always ends, and
//! the engine's invariants (plus the simulator's cached urgencies and run
//! queues) hold at the end.

use heir_scenario::{EventKind, Micros, MutexProtocol, Policy, ResIdx, Scenario, TimerMode};
use heir_sim::{NullObserver, SimConfig, SimError, Simulator, SplitMix64};
use proptest::prelude::*;

use crate::common::*;

pub fn gen(seed: u64) -> Scenario {
    let mut r = SplitMix64::new(seed);
    let mut b = B::new();
    let nthreads = r.uniform(2, 6) as usize;
    let protocols = [
        MutexProtocol::Inherit,
        MutexProtocol::None,
        MutexProtocol::Ceiling { ceiling: 60 },
    ];
    let mutexes: Vec<ResIdx> = (0..r.uniform(1, 2))
        .map(|i| {
            let p = protocols[r.uniform(0, 2) as usize];
            b.mutex(&format!("m{i}"), p)
        })
        .collect();
    let conds: Vec<ResIdx> = (0..r.uniform(1, 2))
        .map(|i| {
            let helpers: Vec<usize> = (0..nthreads).filter(|_| r.uniform(0, 2) == 0).collect();
            b.cond(&format!("c{i}"), &helpers)
        })
        .collect();
    let q = b.queue("q", r.uniform(1, 3) as u32);
    let cpus = r.uniform(1, 2) as u32;
    for t in 0..nthreads {
        let tm = b.timer(
            &format!("t{t}"),
            if r.uniform(0, 1) == 0 {
                TimerMode::Relative
            } else {
                TimerMode::Absolute
            },
        );
        let mut evs = vec![EventKind::Run(Micros::Uniform {
            min: 1,
            max: r.uniform(1, 400),
        })];
        for _ in 0..r.uniform(1, 5) {
            let m = mutexes[r.uniform(0, mutexes.len() as u64 - 1) as usize];
            let c = conds[r.uniform(0, conds.len() as u64 - 1) as usize];
            match r.uniform(0, 9) {
                0 => evs.push(EventKind::Run(Micros::Fixed(r.uniform(1, 300)))),
                1 => evs.push(EventKind::Sleep(Micros::Fixed(r.uniform(1, 300)))),
                2 => {
                    evs.push(EventKind::Lock(m));
                    evs.push(EventKind::Run(Micros::Fixed(r.uniform(1, 200))));
                    evs.push(EventKind::Unlock(m));
                }
                3 => {
                    // Nested: may deadlock with another thread's order.
                    let m2 = mutexes[r.uniform(0, mutexes.len() as u64 - 1) as usize];
                    evs.push(EventKind::Lock(m));
                    if m2 != m {
                        evs.push(EventKind::Lock(m2));
                        evs.push(EventKind::Run(Micros::Fixed(r.uniform(1, 100))));
                        evs.push(EventKind::Unlock(m2));
                    }
                    evs.push(EventKind::Unlock(m));
                }
                4 => {
                    evs.push(EventKind::Lock(m));
                    evs.push(EventKind::Wait { cond: c, mutex: m });
                    evs.push(EventKind::Unlock(m));
                }
                5 => evs.push(EventKind::Signal(c)),
                6 => evs.push(EventKind::Broadcast(c)),
                7 => evs.push(EventKind::Timer {
                    timer: tm,
                    period: Micros::Fixed(r.uniform(100, 3000)),
                }),
                8 => evs.push(EventKind::Push(q)),
                _ => evs.push(EventKind::Pop(q)),
            }
        }
        let policy = if r.uniform(0, 5) == 0 {
            Policy::Other
        } else if r.uniform(0, 5) == 0 {
            Policy::Rr
        } else {
            Policy::Fifo
        };
        let prio = if policy == Policy::Other {
            r.uniform(0, 10) as i32 - 5
        } else {
            r.uniform(1, 70) as i32
        };
        let affinity = match r.uniform(0, 2) {
            0 => None,
            _ => Some(vec![r.uniform(0, u64::from(cpus) - 1) as u32]),
        };
        let loops = if r.uniform(0, 1) == 0 {
            None
        } else {
            Some(r.uniform(1, 20))
        };
        b.task(
            fifo(&format!("T{t}"), prio, evs)
                .policy(policy)
                .cpus(affinity)
                .delay(r.uniform(0, 500))
                .loops(loops),
        );
    }
    b.sc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_scenarios_end_and_keep_invariants(seed in any::<u64>(), pi_cv in any::<bool>()) {
        let sc = gen(seed);
        let cfg = SimConfig { pi_cv: Some(pi_cv), duration_us: Some(50_000), seed: Some(seed), cpus: None };
        let mut obs = NullObserver;
        let mut sim = Simulator::new(&sc, &cfg, &mut obs).expect("valid scenario");
        match sim.run() {
            Ok(report) => {
                prop_assert!(report.duration_us <= 50_000.0);
                if let Some(d) = &report.deadlock {
                    prop_assert!(d.cycle.len() >= 3);
                    prop_assert_eq!(d.cycle.first(), d.cycle.last());
                }
                for t in &report.tasks {
                    prop_assert!(t.deadline_misses <= t.jobs);
                }
            }
            // The generator balances lock/unlock, so this does not happen;
            // if it did, it must be a clear error at a task, not a panic.
            Err(SimError::Invalid { path, message, .. }) => {
                prop_assert!(path.starts_with("tasks."), "{}: {}", path, message);
            }
        }
        if let Err(e) = sim.check_invariants() {
            prop_assert!(false, "seed {}: {}", seed, e);
        }
    }
}
