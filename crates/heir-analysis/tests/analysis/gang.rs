//! GPM's gang latency bound (`heir_analysis::gang`): exact values on
//! the examples, and soundness against the simulator on random gang
//! scenarios (no simulated `gang_run` → last notify latency above its
//! bound).

use heir_analysis::gang::{analyze_gangs, GangBound};
use heir_analysis::rng::Rng;
use heir_scenario::Scenario;
use heir_sim::{simulate, NullObserver, Report, SimConfig};

use super::example;

fn read(name: &str, gpm: bool) -> Scenario {
    let path = example(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sc = heir_scenario::parse_str(&text, name).unwrap();
    sc.global.gpm = gpm;
    sc
}

fn sim_max(r: &Report, gang: &str, waiter: &str) -> Option<f64> {
    r.gangs
        .iter()
        .find(|g| g.name == gang)?
        .waiters
        .iter()
        .find(|w| w.thread == waiter)?
        .latency_us
        .max
}

/// (file, gpm, bound µs, blocking µs, members' C µs, members' own bounds
/// µs, simulated maximum µs).
type Case = (
    &'static str,
    bool,
    f64,
    Option<f64>,
    &'static [(&'static str, f64, Option<f64>)],
    f64,
);

#[test]
fn the_examples_have_the_documented_bounds() {
    let cases: [Case; 4] = [
        // Fig. 1, GPM on: T_H and T_L 2 ms each to the barrier point, T_M
        // (50) below the gang priority (90), S waits: 4 ms (simulated 3:
        // T_H had done 1 ms when the run started).
        (
            "gpm-fig1.json",
            true,
            4000.0,
            Some(0.0),
            &[("T_H", 2000.0, None), ("T_L", 2000.0, None)],
            3000.0,
        ),
        // GPM off: T_L at 10 suffers T_H's whole program (3 ms) and T_M's
        // (5 ms): 2 + 3 + 5 = 10 ms (simulated 8).
        (
            "gpm-fig1.json",
            false,
            10_000.0,
            None,
            &[
                ("T_H", 2000.0, Some(2000.0)),
                ("T_L", 2000.0, Some(10_000.0)),
            ],
            8000.0,
        ),
        // The PI-mutex example, GPM on: H may be pending from its start,
        // through its 20 ms sleep (20.5 ms), L's delay and work (2 ms), N's
        // section on m (4 ms, at the gang priority through L), H's work
        // while passive (0.5 ms): 27 ms (simulated 4).
        (
            "gpm-gang-pi-mutex.json",
            true,
            27_000.0,
            Some(4000.0),
            &[("H", 20_500.0, None), ("L", 2000.0, None)],
            4000.0,
        ),
        // GPM off: L at 30: 2 + N's section 4 + H 0.5 + M 5 = 11.5 ms; H
        // 20.5 ms: 20.5 ms (simulated 9).
        (
            "gpm-gang-pi-mutex.json",
            false,
            20_500.0,
            None,
            &[
                ("H", 20_500.0, Some(20_500.0)),
                ("L", 2000.0, Some(11_500.0)),
            ],
            9000.0,
        ),
    ];
    for (file, gpm, bound, blocking, members, simulated) in cases {
        let sc = read(file, gpm);
        let gangs = analyze_gangs(&sc, None).unwrap();
        assert_eq!(gangs.len(), 1);
        let g = &gangs[0];
        assert_eq!(g.reason, None, "{file} gpm {gpm}");
        assert_eq!(g.bound_us, Some(bound), "{file} gpm {gpm}");
        assert_eq!(g.blocking_us, blocking, "{file} gpm {gpm}");
        assert_eq!(g.priority, gpm.then_some(90), "{file} gpm {gpm}");
        assert_eq!(g.waiters, vec!["S".to_string()]);
        let parts: Vec<(&str, f64, Option<f64>)> = g
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.work_us.unwrap(), m.bound_us))
            .collect();
        assert_eq!(parts, members.to_vec(), "{file} gpm {gpm}");
        let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver).unwrap();
        assert_eq!(sim_max(&sim, "G", "S"), Some(simulated), "{file} gpm {gpm}");
    }
}

/// The GPM paper's Property 1: a member the run's mask leaves out is not waited
/// for but still runs at its own priority, at the gang level or above. B
/// (60, the gang priority) works 2 ms, notifies and waits on the
/// resumption condition, then 0.3 ms; the runs (mask 2) wait only for A
/// (bits 1 | 2, 5 ms). S broadcasts just before each run, so B's 2.3 ms
/// of a whole turn can fall in the run: 5 + 2.3 = 7.3 ms (simulated 7.2:
/// the first run starts 0.1 ms into A's job). Counting only B's tail after
/// a notify, as for a member every run waits for, gave 5.0 ms.
#[test]
fn a_member_left_out_by_the_mask_still_interferes() {
    let text = r#"{"global": {"default_policy": "SCHED_FIFO", "pi_enabled": true, "gpm": true, "duration": 0.2},
 "resources": {"G": {"type": "gang", "members": ["A", "B"]}, "r": {"type": "mutex", "protocol": "inherit"}, "resume": {"type": "cond"}},
 "tasks": {
  "A": {"priority": 50, "cpus": [0], "timer": {"ref": "a", "period": 10000}, "gang_active": {"gang": "G", "bits": 2}, "run": 5000, "gang_passive": "G", "gang_notify": "G", "run1": 100},
  "B": {"priority": 60, "cpus": [0], "run": 2000, "lock": "r", "gang_notify": "G", "wait": {"ref": "resume", "mutex": "r"}, "unlock": "r", "run1": 300},
  "S": {"priority": 99, "cpus": [0], "delay": 100, "timer": {"ref": "s", "period": 20000}, "lock": "r", "broad": "resume", "unlock": "r", "gang_run": {"gang": "G", "mask": 2}, "gang_wait": "G", "run1": 50}}}"#;
    let sc = heir_scenario::parse_str(text, "masked.json").unwrap();
    let g = &analyze_gangs(&sc, None).unwrap()[0];
    assert_eq!((g.priority, g.bound_us), (Some(60), Some(7300.0)));
    let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver).unwrap();
    assert_eq!(sim_max(&sim, "G", "S"), Some(7200.0));
}

/// Unbounded cases name their cause.
#[test]
fn unbounded_gangs_say_why() {
    let cases: [(&str, &str); 4] = [
        // A medium task that never sleeps, gpm off.
        (
            r#"{"global": {"default_policy": "SCHED_FIFO", "gpm": false},
                "resources": {"G": {"type": "gang", "members": ["A", "B"]}},
                "tasks": {
                  "A": {"priority": 80, "timer": {"ref": "t", "period": 10000}, "run": 100, "gang_notify": "G"},
                  "B": {"priority": 10, "timer": {"ref": "u", "period": 10000}, "run": 100, "gang_notify": "G"},
                  "M": {"priority": 50, "run": 1000},
                  "S": {"priority": 99, "timer": {"ref": "s", "period": 10000}, "gang_run": "G", "gang_wait": "G"}}}"#,
            "M runs forever with no timer or sleep",
        ),
        // A member that waits on a condition nobody bounds.
        (
            r#"{"global": {"default_policy": "SCHED_FIFO"},
                "resources": {"G": {"type": "gang", "members": ["A"]}, "m": {"type": "mutex"}, "c": {"type": "cond"}},
                "tasks": {
                  "A": {"priority": 80, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "gang_notify": "G"},
                  "X": {"priority": 20, "timer": {"ref": "x", "period": 10000}, "lock": "m", "signal": "c", "unlock": "m"},
                  "S": {"priority": 99, "timer": {"ref": "s", "period": 10000}, "gang_run": "G", "gang_wait": "G"}}}"#,
            "member A may wait at \"wait\"",
        ),
        // A blocker holding a mutex without protocol.
        (
            r#"{"global": {"default_policy": "SCHED_FIFO"},
                "resources": {"G": {"type": "gang", "members": ["A"]}, "m": {"type": "mutex", "protocol": "none"}},
                "tasks": {
                  "A": {"priority": 80, "timer": {"ref": "a", "period": 10000}, "lock": "m", "run": 100, "unlock": "m", "gang_notify": "G"},
                  "L": {"priority": 5, "timer": {"ref": "l", "period": 10000}, "lock": "m", "run": 100, "unlock": "m"},
                  "S": {"priority": 99, "timer": {"ref": "s", "period": 10000}, "gang_run": "G", "gang_wait": "G"}}}"#,
            "L holds mutex m, which has no protocol",
        ),
        // A member that never notifies in its endless loop.
        (
            r#"{"global": {"default_policy": "SCHED_FIFO"},
                "resources": {"G": {"type": "gang", "members": ["A"]}},
                "tasks": {
                  "A": {"priority": 80, "timer": {"ref": "a", "period": 10000}, "run": 100},
                  "S": {"priority": 99, "timer": {"ref": "s", "period": 10000}, "gang_run": "G", "gang_wait": {"gang": "G", "timeout": 5000}}}}"#,
            "member A never notifies gang G",
        ),
    ];
    for (text, why) in cases {
        let sc = heir_scenario::parse_str(text, "g.json").unwrap();
        let g = &analyze_gangs(&sc, None).unwrap()[0];
        assert_eq!(g.bound_us, None, "{text}");
        let reason = g.reason.clone().unwrap_or_default();
        assert!(reason.contains(why), "expected {why:?} in {reason:?}");
    }
}

/// The number of random gang scenarios simulated (`HEIR_GANG_SETS`
/// replaces it, for a longer search).
const SETS: u64 = 600;

fn sets() -> u64 {
    std::env::var("HEIR_GANG_SETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SETS)
}

/// One random gang scenario, as a file: a gang of 2-5 members at distinct
/// priorities (periodic; some following the protocol of the GPM paper's §3 with
/// gang_active/gang_passive — sometimes on membership bits 1-3 —, some
/// always active with the barrier point inside the job, some always
/// passive, some joining and leaving each job with gang_insert and
/// gang_remove, some `SCHED_DEADLINE`, some — when S broadcasts the GPM
/// paper's §3 resumption condition before each run — working to their notify
/// and waiting on it, without a timer), an initiator S (gang_run, with a
/// mask one time in three, optional work, gang_wait with or without
/// timeout), 0-3 medium non-members, optionally a PI mutex shared by a
/// member and a non-member; one CPU, or two (one set in three: every
/// thread pinned to one of them); gpm on or off.
fn case(k: u64) -> (String, bool) {
    let mut rng = Rng::new(0x9a46 ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let n = 2 + rng.range_u64(0, 4) as usize;
    let nmed = rng.range_u64(0, 4) as usize;
    let mut prios: Vec<i32> = (1..=97).collect();
    rng.shuffle(&mut prios);
    let gpm = rng.chance(0.6);
    let mutex = rng.chance(0.5);
    let two_cpus = rng.chance(1.0 / 3.0);
    let cpu = |rng: &mut Rng| if two_cpus { rng.range_u64(0, 1) } else { 0 };
    // The mutex is used on one CPU (M0's).
    let lock_cpu = cpu(&mut rng);
    // The resumption condition of the GPM paper's §3: S broadcasts it before each run
    // (after the previous run's gang_wait); some members wait on it after
    // notifying, with no timer (so the run's mask may leave them out while
    // they work at their own priority: Property 1).
    let resumption = rng.chance(0.3);
    let s_cpu = cpu(&mut rng);
    let run_mask: Option<u32> = if rng.chance(1.0 / 3.0) {
        Some(1 + rng.range_u64(0, 2) as u32)
    } else {
        None
    };
    let period = |rng: &mut Rng| 1000 * rng.range_u64(4, 30);
    let mut tasks: Vec<String> = Vec::new();
    let mode = |rng: &mut Rng| {
        if rng.chance(0.2) {
            r#", "mode": "absolute""#
        } else {
            ""
        }
    };
    // Utilisation budget per task, kept moderate.
    let share = 0.8 / (n + nmed + 1) as f64;
    let mut listed: Vec<String> = Vec::new();
    for (i, &prio) in prios.iter().enumerate().take(n) {
        let t = period(&mut rng);
        let w = ((t as f64 * share * rng.range_f64(0.2, 1.0)) as u64).max(20);
        let (w1, w2) = (w / 2 + 1, w - w / 2);
        let locks = mutex && i == 0;
        let c = if locks { lock_cpu } else { cpu(&mut rng) };
        let lock = if locks {
            let s = rng.range_u64(10, 1 + w1);
            format!(r#""lock": "m", "run2": {s}, "unlock": "m","#)
        } else {
            String::new()
        };
        let m = mode(&mut rng);
        let timer = format!(r#""timer": {{"ref": "t{i}", "period": {t}{m}}}"#);
        let bits = if rng.chance(0.3) {
            format!(r#"{{"gang": "G", "bits": {}}}"#, 1 + rng.range_u64(0, 2))
        } else {
            r#""G""#.to_string()
        };
        // A deadline member joins and leaves each job (a listed one would
        // be active across its timer's suspension, which the bound of a
        // deadline member does not cover).
        let deadline = !locks && rng.chance(0.15);
        let kind = if deadline {
            1.0
        } else {
            rng.range_f64(0.0, 1.0)
        };
        let resumes = resumption && !deadline && !locks && rng.chance(0.4);
        let mut is_listed = true;
        let body = if resumes {
            format!(
                r#""run": {w1}, "lock": "rr", "gang_notify": "G", "wait": {{"ref": "resume", "mutex": "rr"}}, "unlock": "rr", "run1": {w2}"#
            )
        } else if kind < 0.45 {
            // The GPM paper's §3: active while working to the barrier point,
            // passive (then notify) before sleeping.
            format!(
                r#"{timer}, "gang_active": {bits}, "run": {w1}, {lock} "run1": {w2}, "gang_passive": "G", "gang_notify": "G""#
            )
        } else if kind < 0.7 {
            format!(r#"{timer}, "run": {w1}, {lock} "gang_notify": "G", "run1": {w2}"#)
        } else if kind < 0.82 {
            // Passive from its start (notifying the run that may find it
            // active before): then interference only.
            format!(
                r#""gang_passive": "G", "gang_notify": "G", {timer}, "run": {w1}, {lock} "run1": {w2}"#
            )
        } else {
            // Joins for the first half of each job, then leaves.
            is_listed = false;
            format!(
                r#"{timer}, "gang_insert": "G", "run": {w1}, {lock} "gang_notify": "G", "gang_remove": "G", "run1": {w2}"#
            )
        };
        if is_listed {
            listed.push(format!(r#""M{i}""#));
        }
        let sched = if deadline {
            // A deadline member: its own reservation, a margin over its job.
            let q = (w + w / 4 + 50).min(t);
            format!(
                r#""policy": "SCHED_DEADLINE", "dl-runtime": {q}, "dl-deadline": {t}, "dl-period": {t}"#
            )
        } else {
            format!(r#""priority": {prio}"#)
        };
        let c = if resumes { s_cpu } else { c };
        tasks.push(format!(
            r#""M{i}": {{{sched}, "cpus": [{c}], "delay": {d}, {body}}}"#,
            d = rng.range_u64(0, 3000)
        ));
    }
    for j in 0..nmed {
        let t = period(&mut rng);
        let w = ((t as f64 * share * rng.range_f64(0.2, 1.0)) as u64).max(10);
        let locks = mutex && j == 0;
        let c = if locks { lock_cpu } else { cpu(&mut rng) };
        let lock = if locks {
            let s = rng.range_u64(10, 1 + w);
            format!(r#", "lock": "m", "run1": {s}, "unlock": "m""#)
        } else {
            String::new()
        };
        tasks.push(format!(
            r#""N{j}": {{"priority": {p}, "cpus": [{c}], "delay": {d}, "timer": {{"ref": "n{j}", "period": {t}{m}}}, "run": {w}{lock}}}"#,
            p = prios[n + j],
            d = rng.range_u64(0, 3000),
            m = mode(&mut rng)
        ));
    }
    let t = period(&mut rng) * 2;
    let between = if rng.chance(0.4) {
        format!(r#""run": {}, "#, rng.range_u64(10, 300))
    } else {
        String::new()
    };
    let wait = if !resumption && rng.chance(0.2) {
        format!(
            r#"{{"gang": "G", "timeout": {}}}"#,
            rng.range_u64(1000, 20_000)
        )
    } else {
        r#""G""#.to_string()
    };
    let sprio = if rng.chance(0.5) { 99 } else { prios[n + nmed] };
    let run = match run_mask {
        Some(mask) => format!(r#"{{"gang": "G", "mask": {mask}}}"#),
        None => r#""G""#.to_string(),
    };
    let resume = if resumption {
        r#""lock": "rr", "broad": "resume", "unlock": "rr", "#
    } else {
        ""
    };
    tasks.push(format!(
        r#""S": {{"priority": {sprio}, "cpus": [{c}], "delay": {d}, "timer": {{"ref": "s", "period": {t}}}, {resume}"gang_run": {run}, {between}"gang_wait": {wait}, "run1": {w}}}"#,
        c = s_cpu,
        d = rng.range_u64(0, 5000),
        w = rng.range_u64(10, 200)
    ));
    let mut extra = String::new();
    if mutex {
        extra.push_str(r#", "m": {"type": "mutex", "protocol": "inherit"}"#);
    }
    if resumption {
        extra.push_str(
            r#", "rr": {"type": "mutex", "protocol": "inherit"}, "resume": {"type": "cond"}"#,
        );
    }
    let text = format!(
        r#"{{"global": {{"default_policy": "SCHED_FIFO", "pi_enabled": true, "gpm": {gpm}, "duration": 0.3}},
 "resources": {{"G": {{"type": "gang", "members": [{}]}}{extra}}},
 "tasks": {{{}}}}}"#,
        listed.join(", "),
        tasks.join(",\n ")
    );
    (text, gpm)
}

#[derive(Debug, Default)]
struct Tally {
    sets: u64,
    bounded: u64,
    gpm_on_bounded: u64,
    samples: u64,
    max_ratio: f64,
}

#[test]
fn simulated_gang_latencies_never_exceed_the_bounds() {
    let mut tally = Tally::default();
    let mut failures: Vec<String> = Vec::new();
    for k in 0..sets() {
        let (text, gpm) = case(k);
        let sc = heir_scenario::parse_str(&text, "gang.json")
            .unwrap_or_else(|e| panic!("set {k} unreadable: {e}\n{text}"));
        let gangs: Vec<GangBound> = analyze_gangs(&sc, None).unwrap();
        let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver)
            .unwrap_or_else(|e| panic!("set {k}: the simulator refused: {e}\n{text}"));
        assert!(sim.deadlock.is_none(), "set {k}: deadlock\n{text}");
        tally.sets += 1;
        let g = &gangs[0];
        let Some(bound) = g.bound_us else { continue };
        tally.bounded += 1;
        if gpm {
            tally.gpm_on_bounded += 1;
        }
        let wait = &sim.gangs[0].waiters;
        for w in wait {
            tally.samples += w.completed;
            if let Some(max) = w.latency_us.max {
                if bound > 0.0 {
                    tally.max_ratio = tally.max_ratio.max(max / bound);
                }
                if (max * 1000.0).round() > (bound * 1000.0).round() {
                    failures.push(format!(
                        "set {k}: simulated {max} µs > bound {bound} µs\n{g:#?}\n{text}"
                    ));
                }
            }
        }
    }
    println!(
        "gang soundness: {} sets, {} bounded ({} with gpm on), {} completed waits checked, max simulated/bound {:.3}",
        tally.sets, tally.bounded, tally.gpm_on_bounded, tally.samples, tally.max_ratio
    );
    assert!(
        failures.is_empty(),
        "{}",
        failures[..failures.len().min(3)].join("\n\n")
    );
    // The generator must exercise the bound, not only unbounded cases.
    assert!(tally.bounded * 2 > tally.sets, "{tally:?}");
    assert!(tally.samples > 5 * tally.bounded, "{tally:?}");
}
