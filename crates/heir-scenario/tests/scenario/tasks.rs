//! Tasks and phases: properties, defaults, scheduling attributes.

use heir_scenario::{DlParams, EventKind, Micros, Policy, Sched};

use crate::common::*;

#[test]
fn task_defaults() {
    let s = ok(&one_task(r#""run": 100"#));
    let t = &s.tasks[0];
    assert_eq!(t.name, "A");
    assert_eq!(t.path, "tasks.A");
    assert_eq!(t.instance, 1);
    assert_eq!(t.loops, None);
    assert_eq!(t.delay_us, 0);
    assert_eq!(t.cpus, None);
    assert_eq!(
        t.sched,
        Sched {
            policy: Policy::Other,
            priority: 0,
            dl: None
        }
    );
    // Without "phases": one phase named "", at the task's path, run once.
    assert_eq!(t.phases.len(), 1);
    let p = &t.phases[0];
    assert_eq!(
        (p.name.as_str(), p.path.as_str(), p.loops),
        ("", "tasks.A", 1)
    );
    assert_eq!((p.cpus.clone(), p.sched), (None, None));
    assert_eq!(kinds(&s, 0, 0), [EventKind::Run(Micros::Fixed(100))]);
}

#[test]
fn task_properties() {
    let s = ok(&one_task(
        r#""instance": 3, "loop": 5, "delay": 2500, "cpus": [3, 1, 3],
           "policy": "SCHED_RR", "priority": 42, "run": 1"#,
    ));
    let t = &s.tasks[0];
    assert_eq!(t.instance, 3);
    assert_eq!(t.loops, Some(5));
    assert_eq!(t.delay_us, 2500);
    // A set of CPUs: sorted, without repeats.
    assert_eq!(t.cpus, Some(vec![1, 3]));
    assert_eq!(
        t.sched,
        Sched {
            policy: Policy::Rr,
            priority: 42,
            dl: None
        }
    );
    // The loop of a task without phases is the task's; its phase runs once.
    assert_eq!(t.phases[0].loops, 1);
}

#[test]
fn instance_zero_and_loop_forever_are_allowed() {
    let s = ok(&one_task(r#""instance": 0, "loop": -1, "run": 1"#));
    assert_eq!((s.tasks[0].instance, s.tasks[0].loops), (0, None));
}

#[test]
fn tasks_keep_file_order() {
    let s = ok(r#"{"tasks": {"z": {"run": 1}, "a": {"run": 2}, "m": {"run": 3}}}"#);
    let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["z", "a", "m"]);
}

#[test]
fn default_priorities_per_policy() {
    for (policy, prio) in [
        ("SCHED_OTHER", 0),
        ("SCHED_BATCH", 0),
        ("SCHED_IDLE", 0),
        ("SCHED_FIFO", 10),
        ("SCHED_RR", 10),
    ] {
        let s = ok(&one_task(&format!(r#""policy": "{policy}", "run": 1"#)));
        assert_eq!(s.tasks[0].sched.priority, prio, "{policy}");
        assert_eq!(s.tasks[0].sched.policy.name(), policy);
    }
}

#[test]
fn nice_values_for_other_and_batch() {
    let s = ok(&one_task(r#""priority": -20, "run": 1"#));
    assert_eq!(s.tasks[0].sched.priority, -20);
    let s = ok(&one_task(
        r#""policy": "SCHED_BATCH", "priority": 19, "run": 1"#,
    ));
    assert_eq!(s.tasks[0].sched.priority, 19);
}

#[test]
fn priority_is_ignored_with_a_warning_for_idle() {
    let s = ok(&one_task(
        r#""policy": "SCHED_IDLE", "priority": 5, "run": 1"#,
    ));
    assert_eq!(s.tasks[0].sched.priority, 0);
    assert_eq!(
        warnings(&s),
        ["1:42: tasks.A.priority: \"priority\" is ignored under SCHED_IDLE"]
    );
}

#[test]
fn deadline_parameters_and_defaults() {
    let s = ok(&one_task(
        r#""policy": "SCHED_DEADLINE", "dl-runtime": 2000, "run": 1"#,
    ));
    assert_eq!(
        s.tasks[0].sched,
        Sched {
            policy: Policy::Deadline,
            priority: 0,
            dl: Some(DlParams {
                runtime_us: 2000,
                deadline_us: 2000,
                period_us: 2000
            })
        }
    );
    let s = ok(&one_task(
        r#""policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "run": 1"#,
    ));
    assert_eq!(
        s.tasks[0].sched.dl,
        Some(DlParams {
            runtime_us: 2000,
            deadline_us: 10000,
            period_us: 10000
        })
    );
    let s = ok(&one_task(
        r#""policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-deadline": 5000, "dl-period": 10000, "run": 1"#,
    ));
    assert_eq!(
        s.tasks[0].sched.dl,
        Some(DlParams {
            runtime_us: 2000,
            deadline_us: 5000,
            period_us: 10000
        })
    );
}

#[test]
fn deadline_errors() {
    assert_eq!(
        err_str(&one_task(r#""policy": "SCHED_DEADLINE", "run": 1"#)),
        "t.json:1:28: at tasks.A: SCHED_DEADLINE needs \"dl-runtime\" (µs, > 0); \"dl-period\" defaults to it and \"dl-deadline\" to the period"
    );
    assert_eq!(
        err_str(&one_task(
            r#""policy": "SCHED_DEADLINE", "dl-runtime": 0, "run": 1"#
        )),
        "t.json:1:60: at tasks.A.dl-runtime: expected \"dl-runtime\" > 0 µs, found 0"
    );
    assert_eq!(
        err_str(&one_task(
            r#""policy": "SCHED_DEADLINE", "dl-runtime": 5000, "dl-deadline": 3000, "dl-period": 10000, "run": 1"#
        )),
        "t.json:1:81: at tasks.A.dl-deadline: SCHED_DEADLINE needs dl-runtime ≤ dl-deadline ≤ dl-period, found 5000 ≤ 3000 ≤ 10000"
    );
    // The default policy counts: a task under a SCHED_DEADLINE default needs
    // its parameters too.
    assert_eq!(
        err_str(r#"{"global": {"default_policy": "SCHED_DEADLINE"}, "tasks": {"A": {"run": 1}}}"#),
        "t.json:1:60: at tasks.A: SCHED_DEADLINE needs \"dl-runtime\" (µs, > 0); \"dl-period\" defaults to it and \"dl-deadline\" to the period"
    );
}

#[test]
fn dl_keys_are_ignored_with_a_warning_under_other_policies() {
    let s = ok(&one_task(
        r#""policy": "SCHED_FIFO", "dl-runtime": 100, "run": 1"#,
    ));
    assert_eq!(s.tasks[0].sched.dl, None);
    assert_eq!(
        warnings(&s),
        ["1:42: tasks.A.dl-runtime: dl-runtime is ignored: the policy is SCHED_FIFO, not SCHED_DEADLINE"]
    );
}

#[test]
fn uclamp_and_numa_are_warned_about() {
    let s = ok(&one_task(
        r#""util_min": 128, "util_max": 512, "nodes_membind": [0], "run": 1"#,
    ));
    assert_eq!(
        warnings(&s),
        [
            "1:18: tasks.A.util_min: heir ignores util_min (utilization clamping)",
            "1:35: tasks.A.util_max: heir ignores util_max (utilization clamping)",
            "1:52: tasks.A.nodes_membind: heir ignores nodes_membind (NUMA memory binding)",
        ]
    );
}

const PHASED: &str = r#"{
  "global": { "default_policy": "SCHED_FIFO" },
  "tasks": {
    "T": {
      "priority": 20,
      "cpus": [2],
      "loop": 3,
      "phases": {
        "light": { "loop": 10, "run": 3000, "sleep": 100 },
        "boost": { "priority": 50, "cpus": [0, 1], "run": 500 },
        "same":  { "run": 1 },
        "rr":    { "policy": "SCHED_RR", "run": 2 },
        "other": { "policy": "SCHED_OTHER", "priority": -5, "run": 3 }
      }
    }
  }
}"#;

#[test]
fn phases_in_order_with_their_properties() {
    let s = ok(PHASED);
    let t = &s.tasks[0];
    assert_eq!(t.loops, Some(3));
    assert_eq!(t.cpus, Some(vec![2]));
    let names: Vec<&str> = t.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["light", "boost", "same", "rr", "other"]);
    assert_eq!(t.phases[0].path, "tasks.T.phases.light");
    assert_eq!(t.phases[0].loops, 10);
    assert_eq!(t.phases[1].loops, 1);
    assert_eq!(t.phases[0].cpus, None);
    assert_eq!(t.phases[1].cpus, Some(vec![0, 1]));
    assert_eq!(keys(&s, 0, 0), ["run", "sleep"]);
    assert_eq!(
        s.tasks[0].phases[0].events[1].path,
        "tasks.T.phases.light.sleep"
    );
}

#[test]
fn phase_sched_is_set_only_where_written_and_fills_in_from_before() {
    let s = ok(PHASED);
    let p = &s.tasks[0].phases;
    assert_eq!(p[0].sched, None);
    // Only "priority": the policy in effect (the task's SCHED_FIFO).
    assert_eq!(
        p[1].sched,
        Some(Sched {
            policy: Policy::Fifo,
            priority: 50,
            dl: None
        })
    );
    assert_eq!(p[2].sched, None);
    // Only "policy": that policy's default priority.
    assert_eq!(
        p[3].sched,
        Some(Sched {
            policy: Policy::Rr,
            priority: 10,
            dl: None
        })
    );
    assert_eq!(
        p[4].sched,
        Some(Sched {
            policy: Policy::Other,
            priority: -5,
            dl: None
        })
    );
}

#[test]
fn phase_priority_is_checked_against_the_policy_in_effect() {
    let text = r#"{"tasks": {"T": {"policy": "SCHED_FIFO", "phases": {
        "a": {"policy": "SCHED_OTHER", "run": 1},
        "b": {"priority": 50, "run": 1}}}}}"#;
    let e = err(text);
    assert_eq!(
        e.message,
        "priority 50 is out of range for SCHED_OTHER (a nice value): expected -20..=19"
    );
    assert_eq!(e.path.as_deref(), Some("tasks.T.phases.b.priority"));
    assert_eq!((e.line, e.column), (3, 27));
}

#[test]
fn phase_errors() {
    let cases = [
        (
            r#""phases": {"p": {"loop": 0, "run": 1}}"#,
            "tasks.A.phases.p.loop",
            "expected a phase loop count (an integer ≥ 1), found 0",
        ),
        (
            r#""phases": {"p": {"loop": -1, "run": 1}}"#,
            "tasks.A.phases.p.loop",
            "expected a phase loop count (an integer ≥ 1), found -1",
        ),
        (
            r#""phases": {"p": {"loop": 2}}"#,
            "tasks.A.phases.p",
            "phase \"p\" has no events: expected at least one event such as \"run\"",
        ),
        (r#""phases": {}"#, "tasks.A.phases", "expected at least one phase"),
        (
            r#""phases": [1]"#,
            "tasks.A.phases",
            "expected an object of phases ({\"name\": {...}}), found an array",
        ),
        (
            r#""phases": {"p": 5}"#,
            "tasks.A.phases.p",
            "expected a phase object, found 5",
        ),
        (
            r#""phases": {"p": {"instance": 2, "run": 1}}"#,
            "tasks.A.phases.p.instance",
            "unknown key \"instance\" in phase \"p\": expected a property (loop, cpus, policy, priority, dl-runtime, dl-period, dl-deadline, util_min, util_max, nodes_membind) or an event (lock, unlock, wait, signal, broad, sync, sleep, runtime, run, timer, suspend, resume, yield, barrier, push, pop, call, serve, gang_run, gang_wait, gang_notify, gang_insert, gang_remove, gang_active, gang_passive; a suffix is allowed, as in run1)",
        ),
    ];
    for (body, path, message) in cases {
        let e = err(&one_task(body));
        assert_eq!(e.message, message, "{body}");
        assert_eq!(e.path.as_deref(), Some(path), "{body}");
    }
}

/// rt-app (json-c) keeps a repeated phase name's last value, in the
/// place of the first: so does heir, with a warning at the kept one.
#[test]
fn a_repeated_phase_keeps_its_last_value_in_the_first_place() {
    let s = ok(&one_task(
        r#""phases": {"p": {"run": 1}, "q": {"sleep": 5}, "p": {"loop": 3, "run": 2}, "p": {"run": 4}}"#,
    ));
    let phases = &s.tasks[0].phases;
    let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["p", "q"]);
    assert_eq!(kinds(&s, 0, 0), [EventKind::Run(Micros::Fixed(4))]);
    assert_eq!(phases[0].loops, 1);
    assert_eq!((phases[0].line, phases[0].column), (1, 93));
    assert_eq!(phases[0].path, "tasks.A.phases.p");
    assert_eq!(
        warnings(&s),
        ["1:93: tasks.A.phases.p: phase \"p\" is given 3 times (first at line 1, column 29): heir keeps only this last one, in the first one's place, as rt-app does (its JSON reader keeps a repeated key's last value)"]
    );
}

#[test]
fn phases_and_events_in_one_task_are_refused() {
    assert_eq!(
        err_str(&one_task(r#""phases": {"p": {"run": 1}}, "run": 2"#)),
        "t.json:1:47: at tasks.A.run: task \"A\" has both \"phases\" and events: move \"run\" into a phase"
    );
}

#[test]
fn task_errors() {
    let cases = [
        (
            r#""instance": -1, "run": 1"#,
            "tasks.A.instance",
            "expected a number of threads (an integer ≥ 0), found -1",
        ),
        (
            r#""instance": "2", "run": 1"#,
            "tasks.A.instance",
            "expected a number of threads (an integer ≥ 0), found \"2\"",
        ),
        (
            r#""loop": 0, "run": 1"#,
            "tasks.A.loop",
            "expected a loop count: -1 (forever) or an integer ≥ 1, found 0",
        ),
        (
            r#""loop": -2, "run": 1"#,
            "tasks.A.loop",
            "expected a loop count: -1 (forever) or an integer ≥ 1, found -2",
        ),
        (
            r#""loop": 1.5, "run": 1"#,
            "tasks.A.loop",
            "expected a loop count: -1 (forever) or an integer ≥ 1, found 1.5",
        ),
        (
            r#""delay": -5, "run": 1"#,
            "tasks.A.delay",
            "expected µs as a non-negative integer, found -5",
        ),
        (
            r#""cpus": 0, "run": 1"#,
            "tasks.A.cpus",
            "expected an array of CPU numbers (such as [0, 1]), found 0",
        ),
        (
            r#""cpus": [0, -1], "run": 1"#,
            "tasks.A.cpus[1]",
            "expected a CPU number (an integer ≥ 0), found -1",
        ),
        (
            r#""cpus": ["0"], "run": 1"#,
            "tasks.A.cpus[0]",
            "expected a CPU number (an integer ≥ 0), found \"0\"",
        ),
        (
            r#""cpus": [], "run": 1"#,
            "tasks.A.cpus",
            "expected at least one CPU in \"cpus\" (leave \"cpus\" out for every CPU)",
        ),
        (
            r#""priority": "high", "run": 1"#,
            "tasks.A.priority",
            "expected a priority (an integer), found \"high\"",
        ),
        (
            r#""loop": 2"#,
            "tasks.A",
            "task \"A\" has no events: expected \"phases\" or events such as \"run\"",
        ),
    ];
    for (body, path, message) in cases {
        let e = err(&one_task(body));
        assert_eq!(e.message, message, "{body}");
        assert_eq!(e.path.as_deref(), Some(path), "{body}");
    }
}

#[test]
fn tasks_object_errors() {
    assert_eq!(
        err_str(r#"{"tasks": {}}"#),
        "t.json:1:11: at tasks: expected at least one task in \"tasks\""
    );
    assert_eq!(
        err_str(r#"{"tasks": [1]}"#),
        "t.json:1:11: at tasks: expected an object of tasks ({\"name\": {...}}), found an array"
    );
    assert_eq!(
        err_str(r#"{"tasks": {"A": 1}}"#),
        "t.json:1:17: at tasks.A: expected a task object, found 1"
    );
    assert_eq!(
        err_str(r#"{"tasks": {"": {"run": 1}}}"#),
        "t.json:1:12: at tasks: a task name cannot be empty"
    );
    assert_eq!(
        err_str(r#"{"tasks": {"A": {"run": 1}, "A": {"run": 2}}}"#),
        "t.json:1:29: at tasks.A: duplicate key \"A\" (first at line 1, column 12): it may appear only once here"
    );
}

#[test]
fn names_with_dots_are_quoted_in_paths() {
    let s = ok(r#"{"tasks": {"mp3.decoder": {"run": 1}}}"#);
    assert_eq!(s.tasks[0].path, "tasks[\"mp3.decoder\"]");
    assert_eq!(
        s.tasks[0].phases[0].events[0].path,
        "tasks[\"mp3.decoder\"].run"
    );
}

#[test]
fn tasks_and_phases_know_where_they_are() {
    let s = ok("{\"tasks\": {\n  \"A\": {\"run\": 1},\n  \"B\": {\"phases\": {\n    \"p\": {\"run\": 1}}}}}");
    let (a, b) = (&s.tasks[0], &s.tasks[1]);
    assert_eq!((a.line, a.column), (2, 3));
    // A task without phases: its one phase is at the task.
    assert_eq!((a.phases[0].line, a.phases[0].column), (2, 3));
    assert_eq!((b.line, b.column), (3, 3));
    assert_eq!((b.phases[0].line, b.phases[0].column), (4, 5));
}
