//! From scenario files to the task model: what is taken, what is refused,
//! and where the refusal points.

use heir_analysis::extract::extract;
use heir_analysis::{analyze_scenario, ErrorKind, Options};

use crate::{example, MS, US};

fn parse(text: &str) -> heir_scenario::Scenario {
    heir_scenario::parse_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &str) -> heir_analysis::AnalysisError {
    analyze_scenario(&parse(text), &Options::default()).expect_err("must be refused")
}

#[test]
fn table1_model() {
    let sc = heir_scenario::load(&example("table1-client-server.json")).unwrap();
    let ex = extract(&sc).unwrap();
    let names: Vec<&str> = ex.set.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Client1", "Client2", "Annoyer"]);
    let c1 = &ex.set.tasks[0];
    assert_eq!(
        (c1.period, c1.wcet, c1.demand),
        (40 * MS, 10 * MS, 14_500 * US)
    );
    assert_eq!(c1.calls.len(), 1);
    assert_eq!(c1.calls[0].wcet, 4_500 * US);
    assert_eq!(ex.set.servers.len(), 1);
    assert_eq!(
        (ex.set.servers[0].name.as_str(), ex.set.servers[0].priority),
        ("Server", 50)
    );
    assert!(ex.set.pi_cv);
    assert_eq!(ex.paths[0], "tasks.Client1");
}

#[test]
fn a_cycle_of_critical_sections_is_refused_with_its_position() {
    let sc = heir_scenario::load(&example("deadlock-two-locks.json")).unwrap();
    let e = analyze_scenario(&sc, &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LockCycle);
    assert_eq!(
        e.message,
        "cycle of critical sections m1 -> m2 -> m1: nested locks are taken in opposite orders, which can deadlock; take them in one global order"
    );
    // The nested lock of m2 inside m1, in task A ("lock1": "m2").
    let at = e.at.clone().unwrap();
    assert_eq!(at.path, "tasks.A.lock1");
    assert!(at.line > 0 && at.column > 0);
    assert!(e.to_string().starts_with(&format!(
        "{}:{}: at tasks.A.lock1: cycle",
        at.line, at.column
    )));
}

#[test]
fn a_task_without_period_is_refused() {
    let e = refused(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "busy": { "priority": 10, "cpus": [0], "run": 1000 } } }"#,
    );
    assert_eq!(e.kind, ErrorKind::MissingPeriod);
    // At the task's key.
    let at = e.at.unwrap();
    assert_eq!(
        (at.path.as_str(), at.line, at.column),
        ("tasks.busy", 2, 25)
    );
    assert!(e.message.contains("has no \"timer\""));
}

#[test]
fn a_task_over_its_period_is_refused_at_its_timer() {
    let e = refused(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "hog": { "priority": 10, "cpus": [0], "run": 12000,
                                 "timer": { "ref": "unique", "period": 10000 } } } }"#,
    );
    assert_eq!(e.kind, ErrorKind::Overload);
    let at = e.at.unwrap();
    assert_eq!((at.path.as_str(), at.line), ("tasks.hog.timer", 3));
    assert_eq!(e.message, "task hog needs 12000 µs per job every 10000 µs: utilisation 1.200 > 1, no schedule can meet it");
}

#[test]
fn outside_the_model_is_refused_where_it_is_written() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#""t": { "priority": 10, "cpus": [0], "run": 100, "sleep": 100, "timer": { "ref": "unique", "period": 1000 } }"#,
            "tasks.t.sleep",
            "\"sleep\" in task t: a self-suspension inside a job",
        ),
        (
            r#""t": { "priority": 10, "cpus": [0, 1], "run": 100, "timer": { "ref": "unique", "period": 1000 } }"#,
            "tasks.t.cpus",
            "may run on CPUs [0, 1]",
        ),
        (
            r#""t": { "priority": 10, "run": 100, "timer": { "ref": "unique", "period": 1000 } }"#,
            "tasks.t",
            "may run on any CPU",
        ),
        (
            r#""t": { "priority": 10, "cpus": [0], "lock": "m", "call": { "server": "ep", "run": 10 }, "unlock": "m", "timer": { "ref": "unique", "period": 1000 } },
               "s": { "priority": 5, "cpus": [0], "serve": "ep" }"#,
            "tasks.t.call",
            "call inside a critical section on m",
        ),
        (
            r#""t": { "priority": 10, "cpus": [0], "lock": "m", "run": 10, "timer": { "ref": "unique", "period": 1000 }, "unlock": "m" }"#,
            "tasks.t.lock",
            "holds m across its timer",
        ),
        (
            r#""t": { "priority": 10, "cpus": [0], "call": { "server": "ep", "run": 10 }, "timer": { "ref": "unique", "period": 1000 } },
               "s": { "priority": 5, "cpus": [1], "serve": "ep" }"#,
            "tasks.t.call",
            "calls server s on CPU 1",
        ),
        (
            r#""a": { "priority": 10, "cpus": [0], "lock": "m", "run": 10, "unlock": "m", "timer": { "ref": "unique", "period": 1000 } },
               "b": { "priority": 9, "cpus": [1], "lock": "m", "run": 10, "unlock": "m", "timer": { "ref": "unique", "period": 1000 } }"#,
            "tasks.b.lock",
            "mutex m is used by a on CPU 0 and by b on CPU 1",
        ),
    ];
    for &(tasks, path, needle) in cases {
        let text = format!(
            r#"{{ "global": {{"duration": 1, "default_policy": "SCHED_FIFO"}}, "tasks": {{ {tasks} }} }}"#
        );
        let e = refused(&text);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        let at = e.at.clone().unwrap();
        assert_eq!(at.path, path, "{e}");
        assert!(e.message.contains(needle), "{e}");
    }
}

#[test]
fn jobs_follow_phases_and_loops() {
    // p1: timer, run 1000 (once). p2: run 2000, three times, no timer.
    // The cyclic sequence is timer | 1000 2000 2000 2000 | timer ...: one
    // job of 7000 µs every 10 ms.
    let sc = parse(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "t": { "priority": 10, "cpus": [0], "phases": {
                 "p1": { "timer": { "ref": "unique", "period": 10000 }, "run": 1000 },
                 "p2": { "loop": 3, "run": 2000 } } } } }"#,
    );
    let ex = extract(&sc).unwrap();
    assert_eq!(ex.set.tasks[0].wcet, 7_000 * US);
    assert_eq!(ex.set.tasks[0].period, 10 * MS);
    // Two shapes: p1 with its own timer loop (3 × (run 1000, timer)), then
    // p2 = one job of 4000 µs with a section: C = max = 4000, section 500.
    let sc = parse(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "t": { "priority": 10, "cpus": [0], "phases": {
                 "p1": { "loop": 3, "run": 1000, "timer": { "ref": "unique", "period": 10000 } },
                 "p2": { "run": 3500, "lock": "m", "run1": 500, "unlock": "m", "timer": { "ref": "unique", "period": 10000 } } } } } }"#,
    );
    let t = &extract(&sc).unwrap().set.tasks[0];
    assert_eq!(t.wcet, 4_000 * US);
    assert_eq!(t.sections.len(), 1);
    assert_eq!(t.sections[0].length, 500 * US);
}

#[test]
fn non_real_time_tasks_are_skipped_unless_they_share() {
    let sc = parse(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "rt": { "priority": 10, "cpus": [0], "run": 100, "timer": { "ref": "unique", "period": 1000 } },
                        "bg": { "policy": "SCHED_OTHER", "run": 100000 } } }"#,
    );
    let r = analyze_scenario(&sc, &Options::default()).unwrap();
    assert_eq!(r.tasks.len(), 1);
    assert_eq!(
        r.skipped,
        vec![(
            "bg".to_string(),
            "SCHED_OTHER: never delays real-time tasks, not analysed".to_string()
        )]
    );
    let e = refused(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "rt": { "priority": 10, "cpus": [0], "lock": "m", "run": 100, "unlock": "m", "timer": { "ref": "unique", "period": 1000 } },
                        "bg": { "policy": "SCHED_OTHER", "lock": "m", "run": 100, "unlock": "m" } } }"#,
    );
    assert_eq!(e.at.unwrap().path, "tasks.bg.lock");
    assert!(e.message.contains("SCHED_OTHER and shares a mutex"));
}

#[test]
fn instances_become_threads() {
    let sc = parse(
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
             "tasks": { "w": { "instance": 2, "priority": 10, "cpus": [0], "run": 100, "timer": { "ref": "unique", "period": 1000 } } } }"#,
    );
    let r = analyze_scenario(&sc, &Options::default()).unwrap();
    let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["w-0", "w-1"]);
    // Same priority: each counts the other as higher: 100 + 100.
    assert_eq!(r.tasks[0].wcrt_us, Some(200.0));
}
