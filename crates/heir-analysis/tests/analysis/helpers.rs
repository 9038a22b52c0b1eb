//! Request/reply over condition variables and queues, analysed as the PI-CV
//! paper's RPCs (docs/ANALYSIS.md §4.1): a thread with no timer that blocks,
//! works and replies is a helper thread (a server); a periodic job's wait
//! on its reply is a call. Bounds derived by hand, then checked against
//! the simulator (its maxima never above them).

use heir_analysis::extract::extract;
use heir_analysis::{analyze_scenario, ErrorKind, Family, Options};
use heir_sim::{simulate, NullObserver, SimConfig};

use crate::US;

fn parse(text: &str) -> heir_scenario::Scenario {
    heir_scenario::parse_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

/// Bound and blocking (µs) per task, or why unbounded.
fn bounds(sc: &heir_scenario::Scenario, protocol: Option<Family>) -> Vec<(String, Option<u64>)> {
    let r = analyze_scenario(sc, &Options { protocol }).unwrap_or_else(|e| panic!("{e}"));
    r.tasks
        .iter()
        .map(|t| (t.name.clone(), t.wcrt_us.map(|w| w as u64)))
        .collect()
}

/// The simulated maximum response (µs) of each task, PI-CV as given.
fn sim_max(sc: &heir_scenario::Scenario, pi_cv: bool, name: &str) -> f64 {
    let config = SimConfig {
        pi_cv: Some(pi_cv),
        ..SimConfig::default()
    };
    let r = simulate(sc, &config, &mut NullObserver).unwrap();
    assert!(r.deadlock.is_none(), "{:?}", r.deadlock);
    let t = r.tasks.iter().find(|t| t.name == name).unwrap();
    t.response_us.max.unwrap()
}

/// The PI-CV paper's Fig. 6 over a condition variable: consumer C (30)
/// asks producer P (10, no timer) for an item and waits; medium M (20).
///
/// ```text
///   C (30): timer 50 ms | run 1000, lock m, signal req, unlock m,
///                         lock m, wait rep (m), unlock m, run 500
///   P (10): lock m, wait req (m), unlock m, run 5000, lock m, signal rep, unlock m   (loop forever)
///   M (20): timer 50 ms | run 20000
/// ```
const FIG6_COND: &str = r#"{
  "global": { "duration": 0.2, "default_policy": "SCHED_FIFO", "pi_enabled": true, "pi_cv": true },
  "resources": { "rep": { "type": "cond", "helpers": ["P"] } },
  "tasks": {
    "C": { "priority": 30, "cpus": [0], "delay": 100,
           "timer": { "ref": "unique", "period": 50000 },
           "run": 1000, "lock": "m", "signal": "req", "unlock": "m",
           "lock1": "m", "wait": { "ref": "rep", "mutex": "m" }, "unlock1": "m", "run1": 500 },
    "P": { "priority": 10, "cpus": [0],
           "lock": "m", "wait": { "ref": "req", "mutex": "m" }, "unlock": "m",
           "run": 5000, "lock1": "m", "signal": "rep", "unlock1": "m" },
    "M": { "priority": 20, "cpus": [0], "delay": 100,
           "timer": { "ref": "unique", "period": 50000 }, "run": 20000 }
  }
}"#;

#[test]
fn a_condition_variable_request_reply_is_a_call_to_the_helper_thread() {
    let sc = parse(FIG6_COND);
    let ex = extract(&sc).unwrap();
    // P is a server, not a task: its repeating events are one serve
    // (re-take m, unlock, run 5000, lock, signal rep, unlock, lock: 5000 µs)
    // and an empty start-up (lock m): D = 0 + 5000.
    let names: Vec<&str> = ex.set.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["C", "M"]);
    assert_eq!(ex.set.servers.len(), 1);
    assert_eq!(
        (ex.set.servers[0].name.as_str(), ex.set.servers[0].priority),
        ("P", 10)
    );
    let c = &ex.set.tasks[0];
    assert_eq!(c.calls.len(), 1);
    assert_eq!(c.calls[0].wcet, 5000 * US);
    // C: C = 1000 + 500, E = 1500 + 5000.
    assert_eq!((c.wcet, c.demand), (1500 * US, 6500 * US));
    assert!(ex.pi_cv_refusal.is_none());

    // PI-CV on: C lends to P, M cannot run in between. R_C = E_C = 6500
    // (no lower task: P is C's server, M has no section). M: C's E once,
    // B_M = 0 (nothing below M but P, which serves only C): 20000 + 6500.
    assert_eq!(
        bounds(&sc, None),
        [("C".into(), Some(6500)), ("M".into(), Some(26500))]
    );
    // The simulator reaches both exactly: C and M released together (a
    // period after they start: their events open with the timer), C's job
    // is its 1500 µs and P's 5000 µs at 30; M then runs.
    assert_eq!(sim_max(&sc, true, "C"), 6500.0);
    assert_eq!(sim_max(&sc, true, "M"), 26500.0);

    // PI-CV off: P runs at 10 and M (20) runs while C waits.
    let r = analyze_scenario(
        &sc,
        &Options {
            protocol: Some(Family::Inherit),
        },
    )
    .unwrap();
    assert_eq!(r.tasks[0].wcrt_us, None);
    let why = r.tasks[0].reason.as_ref().unwrap();
    assert!(
        why.contains("unbounded priority inversion")
            && why.contains("server P (priority 10, no PI-CV)")
            && why.contains("task M can run"),
        "{why}"
    );
    // And the simulator shows it: M's 20000 µs inside C's job.
    assert_eq!(sim_max(&sc, false, "C"), 26500.0);
    // The file's own pi_cv false says the same.
    let off = parse(&FIG6_COND.replace(r#""pi_cv": true"#, r#""pi_cv": false"#));
    assert_eq!(bounds(&off, None)[0], ("C".into(), None));
}

/// Request/reply over queues (semaphores, as `heir exec` records them),
/// with a mutex the helper locks inside its serve and a low task holds.
///
/// ```text
///   H (30): run 1000, push rq, pop rp, run 1000 | timer 20 ms      (loop 3)
///   M (20): run 2000 | timer 20 ms                                  (loop 3)
///   S (15): pop rq, run 2000, lock m, run 1000, unlock m, push rp   (loop 3)
///   L (5):  run 500, lock m, run 4000, unlock m | timer 100 ms      (once)
/// ```
///
/// A task that opens with its work is released when it starts (H and M
/// at 501, L at 0); one that opens with its timer a period later.
const QUEUES: &str = r#"{
  "global": { "duration": 0.2, "default_policy": "SCHED_FIFO", "pi_enabled": true, "pi_cv": true },
  "resources": { "rq": { "type": "queue" }, "rp": { "type": "queue" } },
  "tasks": {
    "H": { "loop": 3, "priority": 30, "cpus": [0], "delay": 501,
           "run": 1000, "push": "rq", "pop": "rp", "run1": 1000,
           "timer": { "ref": "unique", "period": 20000 } },
    "M": { "loop": 3, "priority": 20, "cpus": [0], "delay": 501,
           "run": 2000, "timer": { "ref": "unique", "period": 20000 } },
    "S": { "loop": 3, "priority": 15, "cpus": [0],
           "pop": "rq", "run": 2000, "lock": "m", "run1": 1000, "unlock": "m", "push": "rp" },
    "L": { "loop": 1, "priority": 5, "cpus": [0],
           "run": 500, "lock": "m", "run1": 4000, "unlock": "m",
           "timer": { "ref": "unique", "period": 100000 } }
  }
}"#;

#[test]
fn a_queue_request_reply_is_a_call_and_the_helpers_sections_are_its_callers() {
    let sc = parse(QUEUES);
    let ex = extract(&sc).unwrap();
    let h = &ex.set.tasks[0];
    // D = start-up 0 + the serve 2000 + 1000; S's section on m (1000 µs)
    // is H's.
    assert_eq!(h.calls[0].wcet, 3000 * US);
    assert_eq!((h.wcet, h.demand), (2000 * US, 5000 * US));
    assert_eq!(h.sections.len(), 1);
    assert_eq!(h.sections[0].length, 1000 * US);

    // PI-CV on (H lends to S, the queue's pusher):
    //   H: E = 5000, B = L's section on m, 4000 (m's ceiling is 30 through
    //      S's section): 9000.
    //   M: B = 4000 (push-through: L boosted to 30 runs above M), C = 2000,
    //      H's E once: 11000.
    //   L: 4500 + H's 5000 + M's 2000 = 11500.
    assert_eq!(
        bounds(&sc, None),
        [
            ("H".into(), Some(9000)),
            ("M".into(), Some(11000)),
            ("L".into(), Some(11500)),
        ]
    );
    // The simulator: L holds m from 500; H (501) runs 1000, S 2000 at 30,
    // meets m, L finishes its section (3999) at 30, S 1000, H 1000:
    // 8999. M waits for all of it: 10999. L's job ends with its section.
    assert_eq!(sim_max(&sc, true, "H"), 8999.0);
    assert_eq!(sim_max(&sc, true, "M"), 10999.0);
    assert!(sim_max(&sc, true, "L") <= 11500.0);

    // PI-CV off: S runs at 15 and M (20) runs while H waits.
    let r = analyze_scenario(
        &sc,
        &Options {
            protocol: Some(Family::Inherit),
        },
    )
    .unwrap();
    let why = r.tasks[0].reason.as_ref().unwrap();
    assert!(
        why.contains("server S (priority 15") && why.contains("task M"),
        "{why}"
    );
}

fn refused(text: &str) -> heir_analysis::AnalysisError {
    analyze_scenario(&parse(text), &Options::default()).expect_err("must be refused")
}

#[test]
fn what_is_not_a_request_reply_is_refused_with_the_rule_that_failed() {
    let cases: &[(&str, &str, &str)] = &[
        // The waker of C's wait is a periodic task, not a helper thread.
        (
            r#""C": { "priority": 30, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "lock": "m", "wait": { "ref": "c", "mutex": "m" }, "unlock": "m" },
               "T": { "priority": 10, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "signal": "c" }"#,
            "tasks.C.wait",
            "no helper thread signals, broadcasts or pushes c",
        ),
        // The helper's serve replies nothing.
        (
            r#""C": { "priority": 30, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "signal": "req" },
               "P": { "priority": 10, "cpus": [0], "lock": "m", "wait": { "ref": "req", "mutex": "m" }, "unlock": "m", "run": 10 }"#,
            "tasks.P",
            "its serve after tasks.P.wait signals, broadcasts or pushes nothing",
        ),
        // A request whose reply the job does not wait for.
        (
            r#""C": { "priority": 30, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "signal": "req" },
               "D": { "priority": 20, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "lock": "m", "wait": { "ref": "rep", "mutex": "m" }, "unlock": "m" },
               "P": { "priority": 10, "cpus": [0], "lock": "m", "wait": { "ref": "req", "mutex": "m" }, "unlock": "m", "run": 10, "signal": "rep" }"#,
            "tasks.C.signal",
            "does not wait for its reply",
        ),
        // A wait for a reply while holding another mutex.
        (
            r#""C": { "priority": 30, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "lock": "n", "signal": "req", "lock1": "m", "wait": { "ref": "rep", "mutex": "m" }, "unlock1": "m", "unlock": "n" },
               "P": { "priority": 10, "cpus": [0], "lock": "m", "wait": { "ref": "req", "mutex": "m" }, "unlock": "m", "run": 10, "signal": "rep" }"#,
            "tasks.C.wait",
            "while holding n: a call inside a critical section",
        ),
        // A helper that sleeps.
        (
            r#""C": { "priority": 30, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "signal": "req", "lock": "m", "wait": { "ref": "rep", "mutex": "m" }, "unlock": "m" },
               "P": { "priority": 10, "cpus": [0], "lock": "m", "wait": { "ref": "req", "mutex": "m" }, "unlock": "m", "sleep": 10, "signal": "rep" }"#,
            "tasks.P.sleep",
            "analysed as a helper thread",
        ),
        // A helper that runs once serves twice, but is called once.
        (
            r#""C": { "loop": 1, "priority": 30, "cpus": [0], "signal": "req", "lock": "m", "wait": { "ref": "rep", "mutex": "m" }, "unlock": "m", "timer": { "ref": "unique", "period": 1000 } },
               "P": { "loop": 1, "priority": 10, "cpus": [0], "lock": "m", "wait": { "ref": "req", "mutex": "m" }, "run": 10, "signal": "rep",
                      "wait1": { "ref": "req", "mutex": "m" }, "run1": 10, "signal1": "rep", "wait2": { "ref": "req", "mutex": "m" }, "unlock": "m" }"#,
            "tasks.P",
            "serves 2 requests in its run but the periodic jobs wait for its replies 1 times",
        ),
        // A queue that may fill: a push can block.
        (
            r#""C": { "priority": 30, "cpus": [0], "timer": { "ref": "unique", "period": 1000 }, "push": "q" },
               "P": { "priority": 10, "cpus": [0], "pop": "q", "run": 10, "signal": "c" }"#,
            "tasks.C.push",
            "may push more items than its capacity",
        ),
    ];
    for &(tasks, path, needle) in cases {
        let text = format!(
            r#"{{ "global": {{"duration": 1, "default_policy": "SCHED_FIFO", "pi_enabled": true}}, "tasks": {{ {tasks} }} }}"#
        );
        let e = refused(&text);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        let at = e.at.clone().unwrap();
        assert_eq!(at.path, path, "{e}");
        assert!(e.message.contains(needle), "{e}");
    }
}

#[test]
fn a_reply_cond_that_does_not_name_its_helper_is_not_lent_to() {
    // rep without "helpers": with PI-CV on, C's wait lends to nobody, P
    // runs at 10 and M runs in between, as without PI-CV.
    let text = FIG6_COND.replace(r#""helpers": ["P"]"#, r#""helpers": []"#);
    let sc = parse(&text);
    let ex = extract(&sc).unwrap();
    assert!(!ex.set.servers[0].inherits);
    let r = analyze_scenario(&sc, &Options::default()).unwrap();
    assert_eq!(r.tasks[0].wcrt_us, None);
    let why = r.tasks[0].reason.as_ref().unwrap();
    assert!(
        why.contains("server P (priority 10, not lent to") && why.contains("task M can run"),
        "{why}"
    );
    assert_eq!(sim_max(&sc, true, "C"), 26500.0);

    // rep naming M too: with PI-CV, C's wait would boost M as well, which
    // the model does not follow: refused at the cond; analysed without.
    let text = FIG6_COND.replace(r#""helpers": ["P"]"#, r#""helpers": ["P", "M"]"#);
    let e = analyze_scenario(&parse(&text), &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(e.at.as_ref().unwrap().path, "resources.rep");
    assert!(e.message.contains(r#"its "helpers" are ["P", "M"]"#), "{e}");
    let off = parse(&text.replace(r#""pi_cv": true"#, r#""pi_cv": false"#));
    assert_eq!(bounds(&off, None)[0], ("C".into(), None));
}

/// Random sets around request/reply: caller C calls helper P over a cond
/// (P's serve takes `m` around its reply), then helper S over queues; and
/// three periodic tasks at random
/// priorities, some locking `m`; PI-CV on and off. Every bound the analysis gives
/// is at least the simulated maximum (1 s, random offsets).
#[test]
fn random_request_reply_sets_never_exceed_their_bounds() {
    let mut rng = heir_analysis::rng::Rng::new(22);
    // Callers bounded without / with PI-CV.
    let (mut checked, mut bounded_callers) = (0, [0, 0]);
    for case in 0..300 {
        let mut r = |lo: u64, hi: u64| rng.range_u64(lo, hi);
        let (p_p, p_c, w4) = (r(5, 16), r(20, 41), r(100, 2001));
        let mut p_s = r(5, 16);
        while p_s == p_p {
            p_s = p_s % 15 + 1;
        }
        let (w1, w2, w3) = (r(100, 3001), r(0, 501), r(0, 501));
        let (a, b, tc, dc) = (r(100, 2001), r(100, 2001), r(20_000, 60_001), r(0, 20_001));
        let mut others = String::new();
        let mut prios = vec![p_p, p_c, p_s];
        for k in 0..3 {
            let mut p = r(1, 45);
            while prios.contains(&p) {
                p = p % 44 + 1;
            }
            prios.push(p);
            let (c1, c2, t, d) = (r(100, 3001), r(100, 2001), r(10_000, 80_001), r(0, 20_001));
            let section = if r(0, 2) == 1 {
                format!(r#""lock": "m", "run2": {}, "unlock": "m","#, r(50, 1001))
            } else {
                String::new()
            };
            others.push_str(&format!(
                r#", "X{k}": {{ "priority": {p}, "cpus": [0], "delay": {d}, "run": {c1}, {section} "run1": {c2}, "timer": {{ "ref": "unique", "period": {t} }} }}"#
            ));
        }
        let text = format!(
            r#"{{ "global": {{ "duration": 1, "default_policy": "SCHED_FIFO", "pi_enabled": true, "pi_cv": true }},
  "resources": {{ "rep": {{ "type": "cond", "helpers": ["P"] }},
                 "rq": {{ "type": "queue", "capacity": 64 }}, "rp": {{ "type": "queue", "capacity": 64 }} }},
  "tasks": {{
    "C": {{ "loop": 40, "priority": {p_c}, "cpus": [0], "delay": {dc}, "run": {a}, "lock": "m", "signal": "req", "unlock": "m",
           "lock1": "m", "wait": {{ "ref": "rep", "mutex": "m" }}, "unlock1": "m", "run1": {b},
           "push": "rq", "pop": "rp", "timer": {{ "ref": "unique", "period": {tc} }} }},
    "P": {{ "priority": {p_p}, "cpus": [0], "lock": "m", "wait": {{ "ref": "req", "mutex": "m" }}, "unlock": "m",
           "run": {w1}, "lock1": "m", "run1": {w2}, "signal": "rep", "run2": {w3}, "unlock1": "m" }},
    "S": {{ "loop": 40, "priority": {p_s}, "cpus": [0], "pop": "rq", "run": {w4}, "push": "rp" }}
    {others} }} }}"#
        );
        for pi_cv in [true, false] {
            let text = text.replace(r#""pi_cv": true"#, &format!(r#""pi_cv": {pi_cv}"#));
            let sc = parse(&text);
            let report = match analyze_scenario(&sc, &Options::default()) {
                Ok(r) => r,
                Err(e) if e.kind == ErrorKind::Overload => continue,
                Err(e) => panic!("case {case}: {e}\n{text}"),
            };
            let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver).unwrap();
            assert!(sim.deadlock.is_none(), "case {case}: {text}");
            for t in &report.tasks {
                let (Some(bound), Some(max)) = (
                    t.wcrt_us,
                    sim.tasks
                        .iter()
                        .find(|s| s.name == t.name)
                        .and_then(|s| s.response_us.max),
                ) else {
                    continue;
                };
                assert!(
                    max <= bound,
                    "case {case}: {} simulated {max} µs > bound {bound} µs\n{text}",
                    t.name
                );
                checked += 1;
                bounded_callers[usize::from(pi_cv)] += usize::from(t.name == "C");
            }
        }
    }
    eprintln!("{checked} bounds checked; the caller's, PI-CV off and on: {bounded_callers:?}");
    // With PI-CV every caller is bounded; without, none: the other helper
    // (both are below C) is a medium for each call (the analysis counts a
    // server whatever asks it, as for endpoints).
    assert_eq!(bounded_callers, [0, 300]);
    assert!(checked > 1000, "{checked}");
}
