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
        MutexProtocol::Ceiling(60),
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
        let (policy, prio, affinity, loops) = thread_knobs(&mut r, cpus, true);
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
                    // At most one job open at the end: a miss if its
                    // deadline passed (counted in `deadline_misses` too).
                    prop_assert!(t.unfinished_misses <= 1);
                    prop_assert!(t.deadline_misses <= t.jobs + t.unfinished_misses);
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

/// A random small scenario with gangs (GPM): 2-6 threads on 1-2
/// CPUs, members of one of two gangs (or none, some as several
/// instances), each thread a mix of work, sleeps, an inherit mutex, and
/// every gang event — runs with random masks (so some fail), waits with
/// and without timeouts, notifies, joins and leaves (a join of a second
/// gang is an error at the task), membership bits set and cleared.
pub fn gen_gang(seed: u64) -> Scenario {
    use heir_scenario::GangOp;
    let mut r = SplitMix64::new(seed);
    let mut b = B::new();
    b.sc.global.gpm = r.uniform(0, 3) != 0;
    let nthreads = r.uniform(2, 6) as usize;
    let m = b.mutex("m", MutexProtocol::Inherit);
    let mut members: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    for t in 0..nthreads {
        match r.uniform(0, 2) {
            0 => members[0].push(t),
            1 => members[1].push(t),
            _ => {}
        }
    }
    let gangs = [b.gang("G0", &members[0]), b.gang("G1", &members[1])];
    let cpus = r.uniform(1, 2) as u32;
    for t in 0..nthreads {
        let mut evs = vec![EventKind::Run(Micros::Uniform {
            min: 1,
            max: r.uniform(1, 300),
        })];
        for _ in 0..r.uniform(1, 6) {
            let gang = gangs[r.uniform(0, 1) as usize];
            let bits = r.uniform(1, 7) as u32;
            let op = match r.uniform(0, 11) {
                0 | 1 => Some(GangOp::Run { mask: bits }),
                2 => Some(GangOp::Wait { timeout_us: None }),
                3 => Some(GangOp::Wait {
                    timeout_us: Some(r.uniform(1, 500)),
                }),
                4 | 5 => Some(GangOp::Notify),
                6 => Some(GangOp::Insert),
                7 => Some(GangOp::Remove),
                8 => Some(GangOp::Active { bits }),
                9 => Some(GangOp::Passive { bits }),
                10 => {
                    evs.push(EventKind::Lock(m));
                    evs.push(EventKind::Run(Micros::Fixed(r.uniform(1, 200))));
                    evs.push(EventKind::Unlock(m));
                    None
                }
                _ => {
                    evs.push(EventKind::Sleep(Micros::Fixed(r.uniform(1, 300))));
                    None
                }
            };
            if let Some(op) = op {
                evs.push(EventKind::Gang { gang, op });
            }
            evs.push(EventKind::Run(Micros::Fixed(r.uniform(1, 200))));
        }
        let (policy, prio, affinity, loops) = thread_knobs(&mut r, cpus, false);
        b.task(
            fifo(&format!("T{t}"), prio, evs)
                .policy(policy)
                .cpus(affinity)
                .delay(r.uniform(0, 500))
                .loops(loops)
                .instances(r.uniform(1, 2) as u32),
        );
    }
    b.sc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_gang_scenarios_end_and_keep_invariants(seed in any::<u64>()) {
        let sc = gen_gang(seed);
        let cfg = SimConfig { duration_us: Some(50_000), seed: Some(seed), ..SimConfig::default() };
        let mut obs = NullObserver;
        let mut sim = Simulator::new(&sc, &cfg, &mut obs).expect("valid scenario");
        match sim.run() {
            Ok(report) => {
                prop_assert!(report.duration_us <= 50_000.0);
                if let Some(d) = &report.deadlock {
                    prop_assert!(d.cycle.len() >= 3);
                    prop_assert_eq!(d.cycle.first(), d.cycle.last());
                }
                prop_assert_eq!(report.gangs.len(), 2);
                for g in &report.gangs {
                    for w in &g.waiters {
                        // A latency is at most the run's time so far.
                        if let Some(max) = w.latency_us.max {
                            prop_assert!(max <= report.duration_us);
                        }
                    }
                }
            }
            // Only a gang_insert into a second gang stops a run with an
            // error: at the task's event.
            Err(SimError::Invalid { path, message, .. }) => {
                prop_assert!(path.starts_with("tasks."), "{}: {}", path, message);
                prop_assert!(message.contains("a thread is a member of at most one gang"), "{}", message);
            }
        }
        if let Err(e) = sim.check_invariants() {
            prop_assert!(false, "seed {}: {}", seed, e);
        }
    }
}

/// A random small `SCHED_DEADLINE` scenario as rt-app JSON: 2-5 threads
/// (mostly deadline reservations, some `SCHED_FIFO`), 1-2 mutexes under
/// `bwi` or `inherit`, nested sections, a condvar with helpers, timers and
/// sleeps, pinned or free on 1-2 CPUs, overrunning budgets often.
pub fn gen_deadline(seed: u64) -> String {
    let mut r = SplitMix64::new(seed);
    let cpus = r.uniform(1, 2);
    let mutexes = r.uniform(1, 2) as usize;
    let threads = r.uniform(2, 5) as usize;
    let mut res = Vec::new();
    for m in 0..mutexes {
        let p = if r.uniform(0, 2) == 0 {
            "inherit"
        } else {
            "bwi"
        };
        res.push(format!(
            r#""m{m}": {{ "type": "mutex", "protocol": "{p}" }}"#
        ));
    }
    let helpers: Vec<String> = (0..threads)
        .filter(|_| r.uniform(0, 1) == 0)
        .map(|t| format!(r#""T{t}""#))
        .collect();
    res.push(format!(
        r#""c": {{ "type": "cond", "helpers": [{}] }}"#,
        helpers.join(", ")
    ));
    let mut tasks = Vec::new();
    for t in 0..threads {
        let mut f: Vec<String> = Vec::new();
        if r.uniform(0, 4) == 0 {
            f.push(format!(
                r#""policy": "SCHED_FIFO", "priority": {}"#,
                r.uniform(1, 50)
            ));
        } else {
            let q = r.uniform(200, 3000);
            let p = q + r.uniform(0, 8000);
            let d = r.uniform(q, p);
            f.push(format!(
                r#""policy": "SCHED_DEADLINE", "dl-runtime": {q}, "dl-deadline": {d}, "dl-period": {p}"#
            ));
        }
        match r.uniform(0, 2) {
            0 => {}
            1 => f.push(format!(r#""cpus": [{}]"#, r.uniform(0, cpus - 1))),
            _ => f.push(r#""cpus": [0, 1]"#.replace(", 1", if cpus == 2 { ", 1" } else { "" })),
        }
        f.push(format!(r#""delay": {}"#, r.uniform(0, 2000)));
        f.push(r#""loop": -1"#.into());
        let mut k = 0;
        let mut ev = |f: &mut Vec<String>, key: &str, v: String| {
            k += 1;
            f.push(format!(r#""{key}{k}": {v}"#));
        };
        ev(&mut f, "run", r.uniform(1, 1500).to_string());
        for _ in 0..r.uniform(1, 4) {
            let m = r.uniform(0, mutexes as u64 - 1);
            match r.uniform(0, 6) {
                0 => ev(&mut f, "sleep", r.uniform(1, 2000).to_string()),
                1 | 2 => {
                    ev(&mut f, "lock", format!(r#""m{m}""#));
                    ev(&mut f, "run", r.uniform(1, 2500).to_string());
                    let m2 = r.uniform(0, mutexes as u64 - 1);
                    if m2 != m && r.uniform(0, 1) == 0 {
                        ev(&mut f, "lock", format!(r#""m{m2}""#));
                        ev(&mut f, "run", r.uniform(1, 800).to_string());
                        ev(&mut f, "unlock", format!(r#""m{m2}""#));
                    }
                    ev(&mut f, "unlock", format!(r#""m{m}""#));
                }
                3 => {
                    ev(&mut f, "lock", format!(r#""m{m}""#));
                    ev(
                        &mut f,
                        "wait",
                        format!(r#"{{ "ref": "c", "mutex": "m{m}" }}"#),
                    );
                    ev(&mut f, "unlock", format!(r#""m{m}""#));
                }
                4 => ev(&mut f, "signal", r#""c""#.into()),
                _ => ev(
                    &mut f,
                    "timer",
                    format!(
                        r#"{{ "ref": "tm{t}", "period": {} }}"#,
                        r.uniform(2000, 12000)
                    ),
                ),
            }
        }
        tasks.push(format!(r#""T{t}": {{ {} }}"#, f.join(", ")));
    }
    format!(
        r#"{{ "global": {{ "duration": 0.05, "seed": {seed} }},
             "resources": {{ {} }},
             "tasks": {{ {} }} }}"#,
        res.join(", "),
        tasks.join(",\n")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Deadline reservations, Linux's inheritance, M-BWI lending, spinning and
    /// throttling together: the run ends, and (debug builds check it after
    /// every event) the simulator's and the engine's invariants hold.
    #[test]
    fn random_deadline_scenarios_end_and_keep_invariants(seed in any::<u64>()) {
        let text = gen_deadline(seed);
        let sc = heir_scenario::parse_str(&text, "random.json")
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let cfg = SimConfig::default();
        let mut obs = NullObserver;
        let mut sim = Simulator::new(&sc, &cfg, &mut obs).expect("valid scenario");
        match sim.run() {
            Ok(report) => {
                prop_assert!(report.duration_us <= 50_000.0);
                for t in &report.tasks {
                    // At most one job open at the end: a miss if its
                    // deadline passed (counted in `deadline_misses` too).
                    prop_assert!(t.unfinished_misses <= 1);
                    prop_assert!(t.deadline_misses <= t.jobs + t.unfinished_misses);
                }
            }
            Err(SimError::Invalid { path, message, .. }) => {
                prop_assert!(path.starts_with("tasks."), "{}: {}\n{}", path, message, text);
            }
        }
        if let Err(e) = sim.check_invariants() {
            prop_assert!(false, "seed {}: {}\n{}", seed, e, text);
        }
    }
}

/// A random handler (donation model) for a call to endpoint `e` of
/// `eps`: runs, sleeps, balanced lock/unlock of `m0`/`m1`, nested calls to
/// other endpoints down to `depth` 0, sometimes a timeout.
fn gen_handler(r: &mut SplitMix64, e: u64, eps: u64, depth: u32) -> String {
    let mut f = vec![format!(r#""server": "e{e}""#)];
    if r.uniform(0, 3) == 0 {
        f.push(format!(r#""timeout": {}"#, r.uniform(1, 3000)));
    }
    f.push(format!(r#""run": {}"#, r.uniform(0, 800)));
    for _ in 0..r.uniform(0, 3) {
        match r.uniform(0, 4) {
            0 => f.push(format!(r#""run": {}"#, r.uniform(1, 500))),
            1 => f.push(format!(r#""sleep": {}"#, r.uniform(0, 1500))),
            2 | 3 => {
                let m = r.uniform(0, 1);
                f.push(format!(r#""lock": "m{m}""#));
                f.push(format!(r#""run": {}"#, r.uniform(1, 400)));
                if r.uniform(0, 2) == 0 {
                    f.push(format!(r#""sleep": {}"#, r.uniform(1, 800)));
                }
                f.push(format!(r#""unlock": "m{m}""#));
            }
            // Mostly down the endpoints' order (no cycle); sometimes
            // anywhere (livelocks, a server calling its own endpoint).
            _ if depth > 0 && (e + 1 < eps || r.uniform(0, 7) == 0) => {
                let to = if e + 1 < eps && r.uniform(0, 7) != 0 {
                    r.uniform(e + 1, eps - 1)
                } else {
                    r.uniform(0, eps - 1)
                };
                f.push(format!(r#""call": {}"#, gen_handler(r, to, eps, depth - 1)));
            }
            _ => {}
        }
    }
    format!("{{ {} }}", f.join(", "))
}

/// A random small scenario under `"ipc": "donation"` as rt-app JSON: 1-3
/// endpoints, each with 1-2 serving threads (passive or not; a non-passive
/// server may also call), 2-4 callers (fixed priority or deadline) whose
/// calls have handlers that run, sleep, lock PI or plain mutexes, nest
/// calls and time out; callers also lock the mutexes themselves. Livelocks
/// and deadlocks are possible outcomes.
pub fn gen_donation(seed: u64) -> String {
    let mut r = SplitMix64::new(seed);
    let cpus = r.uniform(1, 2);
    let eps = r.uniform(1, 3);
    let mut tasks = Vec::new();
    let cpus_field = |r: &mut SplitMix64| match r.uniform(0, 2) {
        0 => String::new(),
        _ => format!(r#""cpus": [{}], "#, r.uniform(0, cpus - 1)),
    };
    let dl = r.uniform(0, 2) == 0;
    let sched = |r: &mut SplitMix64| {
        if dl && r.uniform(0, 1) == 0 {
            let q = r.uniform(300, 3000);
            let p = q + r.uniform(0, 8000);
            format!(r#""policy": "SCHED_DEADLINE", "dl-runtime": {q}, "dl-period": {p}, "#)
        } else {
            format!(
                r#""policy": "SCHED_FIFO", "priority": {}, "#,
                r.uniform(1, 60)
            )
        }
    };
    for e in 0..eps {
        for i in 0..r.uniform(1, 2) {
            let c = cpus_field(&mut r);
            if r.uniform(0, 1) == 0 {
                tasks.push(format!(
                    r#""S{e}_{i}": {{ "passive": true, {c}"loop": -1, "serve": "e{e}" }}"#
                ));
            } else {
                let s = sched(&mut r);
                let mut evs = vec![format!(r#""serve": "e{e}""#)];
                if r.uniform(0, 2) == 0 {
                    let to = r.uniform(0, eps - 1);
                    evs.push(format!(r#""call": {}"#, gen_handler(&mut r, to, eps, 1)));
                }
                tasks.push(format!(
                    r#""S{e}_{i}": {{ {s}{c}"loop": -1, {} }}"#,
                    evs.join(", ")
                ));
            }
        }
    }
    for t in 0..r.uniform(2, 4) {
        let s = sched(&mut r);
        let c = cpus_field(&mut r);
        let mut evs = vec![format!(r#""run": {}"#, r.uniform(1, 500))];
        for _ in 0..r.uniform(1, 3) {
            match r.uniform(0, 5) {
                0..=2 => {
                    let to = r.uniform(0, eps - 1);
                    evs.push(format!(r#""call": {}"#, gen_handler(&mut r, to, eps, 2)));
                }
                3 => {
                    let m = r.uniform(0, 1);
                    evs.push(format!(r#""lock": "m{m}""#));
                    evs.push(format!(r#""run": {}"#, r.uniform(1, 600)));
                    evs.push(format!(r#""unlock": "m{m}""#));
                }
                4 => evs.push(format!(r#""sleep": {}"#, r.uniform(1, 1500))),
                _ => evs.push(format!(
                    r#""timer": {{ "ref": "unique", "period": {} }}"#,
                    r.uniform(2000, 10000)
                )),
            }
        }
        tasks.push(format!(
            r#""C{t}": {{ {s}{c}"delay": {}, "loop": -1, {} }}"#,
            r.uniform(0, 1500),
            evs.join(", ")
        ));
    }
    let p0 = ["inherit", "none"][r.uniform(0, 1) as usize];
    let p1 = ["inherit", "none"][r.uniform(0, 1) as usize];
    format!(
        r#"{{ "global": {{ "ipc": "donation", "duration": 0.05, "seed": {seed} }},
             "resources": {{ "m0": {{ "type": "mutex", "protocol": "{p0}" }},
                            "m1": {{ "type": "mutex", "protocol": "{p1}" }} }},
             "tasks": {{ {} }} }}"#,
        tasks.join(",\n")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Donation, helping, passive servers, nested calls, timeouts and
    /// handlers that block, with fixed-priority and deadline callers: the
    /// run ends (a livelock or deadlock is reported with its cycle), and
    /// (debug builds check it after every event) the invariants hold.
    #[test]
    fn random_donation_scenarios_end_and_keep_invariants(seed in any::<u64>(), pi_cv in any::<bool>()) {
        let text = gen_donation(seed);
        let sc = heir_scenario::parse_str(&text, "random.json")
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let cfg = SimConfig { pi_cv: Some(pi_cv), ..SimConfig::default() };
        let mut obs = NullObserver;
        let mut sim = Simulator::new(&sc, &cfg, &mut obs).expect("valid scenario");
        match sim.run() {
            Ok(report) => {
                prop_assert!(report.duration_us <= 50_000.0);
                if let Some(d) = &report.deadlock {
                    prop_assert!(d.cycle.len() >= 3, "{:?}", d.cycle);
                    prop_assert_eq!(d.cycle.first(), d.cycle.last());
                }
            }
            Err(SimError::Invalid { path, message, .. }) => {
                prop_assert!(false, "seed {}: {}: {}\n{}", seed, path, message, text);
            }
        }
        if let Err(e) = sim.check_invariants() {
            prop_assert!(false, "seed {}: {}\n{}", seed, e, text);
        }
    }
}

/// A random thread's policy (SCHED_OTHER 1 in 5, then SCHED_RR 1 in 5 when
/// `rr`, else SCHED_FIFO), priority (nice −5..5 or 1..70), affinity (none
/// or one of `cpus` CPUs) and loop count (none or 1..20), drawn in that
/// order.
fn thread_knobs(
    r: &mut SplitMix64,
    cpus: u32,
    rr: bool,
) -> (Policy, i32, Option<Vec<u32>>, Option<u64>) {
    let policy = if r.uniform(0, 5) == 0 {
        Policy::Other
    } else if rr && r.uniform(0, 5) == 0 {
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
    (policy, prio, affinity, loops)
}
