//! Events: prefixes, values, the resources they name.

use heir_scenario::{EventKind, Micros, ResIdx, ResourceKind, TaskIdx, TimerMode};

use crate::common::*;

#[test]
fn durations_fixed_and_uniform() {
    let s = ok(&one_task(
        r#""run": 100, "runtime": {"min": 5, "max": 9}, "sleep": 0, "run7": {"max": 3, "min": 3}"#,
    ));
    assert_eq!(
        kinds(&s, 0, 0),
        [
            EventKind::Run(Micros::Fixed(100)),
            EventKind::Runtime(Micros::Uniform { min: 5, max: 9 }),
            EventKind::Sleep(Micros::Fixed(0)),
            EventKind::Run(Micros::Uniform { min: 3, max: 3 }),
        ]
    );
    assert_eq!(keys(&s, 0, 0), ["run", "runtime", "sleep", "run7"]);
}

#[test]
fn prefixes_match_in_rt_app_order() {
    // runtime3 is a runtime, not a run; "broadcast" is a broad; "yield_now"
    // a yield; "signal_a" a signal.
    let s = ok(&one_task(
        r#""runtime3": 1, "run_x": 2, "broadcast": "c", "yield_now": null, "signal_a": "c",
           "sleep_long": 3, "lock": "m", "unlock_it": "m""#,
    ));
    let c = ResIdx(res(&s, "c", "cond").0);
    let m = ResIdx(res(&s, "m", "mutex").0);
    assert_eq!(
        kinds(&s, 0, 0),
        [
            EventKind::Runtime(Micros::Fixed(1)),
            EventKind::Run(Micros::Fixed(2)),
            EventKind::Broadcast(c),
            EventKind::Yield,
            EventKind::Signal(c),
            EventKind::Sleep(Micros::Fixed(3)),
            EventKind::Lock(m),
            EventKind::Unlock(m),
        ]
    );
}

#[test]
fn wait_and_sync() {
    let s = ok(&one_task(
        r#""lock": "m", "wait": {"ref": "c", "mutex": "m"}, "sync": {"mutex": "m", "ref": "c"}, "unlock": "m""#,
    ));
    let c = ResIdx(res(&s, "c", "cond").0);
    let m = ResIdx(res(&s, "m", "mutex").0);
    assert_eq!(
        kinds(&s, 0, 0),
        [
            EventKind::Lock(m),
            EventKind::Wait { cond: c, mutex: m },
            // sync = signal then wait, both under the key `sync`.
            EventKind::Signal(c),
            EventKind::Wait { cond: c, mutex: m },
            EventKind::Unlock(m),
        ]
    );
    let ev = &s.tasks[0].phases[0].events;
    assert_eq!((ev[2].key.as_str(), ev[3].key.as_str()), ("sync", "sync"));
    assert_eq!(ev[2].path, ev[3].path);
    assert_eq!((ev[2].line, ev[2].column), (ev[3].line, ev[3].column));
}

#[test]
fn shared_timer_is_one_resource_across_tasks_and_phases() {
    let s = ok(r#"{"tasks": {
        "A": {"phases": {
            "p1": {"run": 1, "timer": {"ref": "tick", "period": 6000}},
            "p2": {"run": 1, "timer": {"ref": "tick", "period": 3000, "mode": "absolute"}}}},
        "B": {"run": 1, "timer": {"ref": "tick", "period": 6000}}}}"#);
    let (i, r) = res(&s, "tick", "timer");
    assert_eq!(
        r.kind,
        ResourceKind::Timer {
            mode: TimerMode::Absolute,
            unique: false
        }
    );
    assert_eq!(r.path, "tasks.A.phases.p1.timer.ref");
    let timers: Vec<EventKind> = s
        .tasks
        .iter()
        .flat_map(|t| t.phases.iter())
        .flat_map(|p| p.events.iter())
        .filter(|e| matches!(e.kind, EventKind::Timer { .. }))
        .map(|e| e.kind.clone())
        .collect();
    let t = ResIdx(i);
    assert_eq!(
        timers,
        [
            EventKind::Timer {
                timer: t,
                period: Micros::Fixed(6000)
            },
            EventKind::Timer {
                timer: t,
                period: Micros::Fixed(3000)
            },
            EventKind::Timer {
                timer: t,
                period: Micros::Fixed(6000)
            },
        ]
    );
    assert_eq!(
        s.resources
            .iter()
            .filter(|r| r.kind.word() == "timer")
            .count(),
        1
    );
}

#[test]
fn unique_timers_are_per_task() {
    let s = ok(r#"{"tasks": {
        "A": {"run": 1, "timer": {"ref": "unique", "period": 100}, "timer": {"ref": "unique", "period": 200}},
        "B": {"run": 1, "timer": {"ref": "unique", "period": 100, "mode": "absolute"}},
        "C": {"run": 1, "timer": {"ref": "unique_b", "period": 100}}}}"#);
    let names: Vec<&str> = s.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["unique@A", "unique@B", "unique_b@C"]);
    assert_eq!(
        s.resources[0].kind,
        ResourceKind::Timer {
            mode: TimerMode::Relative,
            unique: true
        }
    );
    assert_eq!(
        s.resources[1].kind,
        ResourceKind::Timer {
            mode: TimerMode::Absolute,
            unique: true
        }
    );
    // Both timer events of A use A's one timer.
    assert_eq!(
        kinds(&s, 0, 0)[1..],
        [
            EventKind::Timer {
                timer: ResIdx(0),
                period: Micros::Fixed(100)
            },
            EventKind::Timer {
                timer: ResIdx(0),
                period: Micros::Fixed(200)
            },
        ]
    );
}

#[test]
fn timer_mode_conflict_is_an_error() {
    let e = err(r#"{"tasks": {
        "A": {"run": 1, "timer": {"ref": "t", "period": 100, "mode": "absolute"}},
        "B": {"run": 1, "timer": {"ref": "t", "period": 100}},
        "C": {"run": 1, "timer": {"ref": "t", "period": 100, "mode": "relative"}}}}"#);
    assert_eq!(
        e.message,
        "timer \"t\" is \"relative\" here but \"absolute\" at tasks.A.timer.mode: one timer has one mode"
    );
    assert_eq!(e.path.as_deref(), Some("tasks.C.timer.mode"));
    assert_eq!((e.line, e.column), (4, 70));
}

#[test]
fn timer_errors() {
    let cases = [
        (r#""timer": {"ref": "t", "period": -6000}"#, "tasks.A.timer.period", "period must be positive (µs > 0), found -6000"),
        (r#""timer": {"ref": "t", "period": 0}"#, "tasks.A.timer.period", "period must be positive (µs > 0), found 0"),
        (r#""timer": {"ref": "t", "period": {"min": 0, "max": 5}}"#, "tasks.A.timer.period", "period must be positive (µs > 0), found a \"min\" of 0"),
        (r#""timer": {"ref": "t"}"#, "tasks.A.timer", "missing \"period\": a timer needs \"ref\" (its name) and \"period\" (µs > 0)"),
        (r#""timer": {"period": 5}"#, "tasks.A.timer", "missing \"ref\": a timer needs \"ref\" (timer name)"),
        (r#""timer": {"ref": 5, "period": 5}"#, "tasks.A.timer.ref", "expected a string (timer name), found 5"),
        (r#""timer": {"ref": "t", "period": 5, "mode": "abs"}"#, "tasks.A.timer.mode", "expected \"relative\" or \"absolute\", found \"abs\""),
        (r#""timer": {"ref": "t", "period": 5, "phase": 1}"#, "tasks.A.timer.phase", "unknown key \"phase\" in a timer: expected \"ref\", \"period\", \"mode\""),
        (r#""timer": 100"#, "tasks.A.timer", "expected {\"ref\": name, \"period\": µs, \"mode\": \"relative\"|\"absolute\"}, found 100"),
    ];
    for (body, path, message) in cases {
        let e = err(&one_task(body));
        assert_eq!(e.message, message, "{body}");
        assert_eq!(e.path.as_deref(), Some(path), "{body}");
    }
}

#[test]
fn suspend_and_resume() {
    let s = ok(r#"{"tasks": {
        "A": {"run": 10, "resume": "B", "suspend": "A"},
        "B": {"run": 10, "resume": "A", "suspend": "anything"}}}"#);
    let (sb, rb) = res(&s, "B", "suspend point");
    let (sa, ra) = res(&s, "A", "suspend point");
    assert_eq!(rb.kind, ResourceKind::Suspend { task: TaskIdx(1) });
    assert_eq!(ra.kind, ResourceKind::Suspend { task: TaskIdx(0) });
    // Created at first use: B's point at A's resume.
    assert_eq!((sb, rb.path.as_str()), (0, "tasks.A.resume"));
    assert_eq!((sa, ra.path.as_str()), (1, "tasks.A.suspend"));
    // suspend's value is ignored: B suspends on its own point.
    assert_eq!(
        kinds(&s, 1, 0),
        [
            EventKind::Run(Micros::Fixed(10)),
            EventKind::Resume(ResIdx(sa)),
            EventKind::Suspend(ResIdx(sb)),
        ]
    );
    assert!(s.warnings.is_empty(), "{:?}", warnings(&s));
}

#[test]
fn suspend_point_lives_apart_from_other_names() {
    // A mutex named like a task does not clash with the task's suspend point.
    let s = ok(r#"{"tasks": {"A": {"lock": "A", "unlock": "A", "suspend", "resume": "A"}}}"#);
    assert_eq!(res(&s, "A", "mutex").0, 0);
    assert_eq!(res(&s, "A", "suspend point").0, 1);
}

#[test]
fn resume_of_a_name_that_is_no_task_is_left_out_with_a_warning() {
    let s = ok(r#"{"tasks": {"A": {"run": 1, "resume": "Nobody", "run": 2}}}"#);
    assert_eq!(keys(&s, 0, 0), ["run", "run1"]);
    assert_eq!(
        warnings(&s),
        ["1:38: tasks.A.resume: resume target \"Nobody\" is not a task: rt-app's suspend always waits under the suspending task's own name, so this resume wakes nobody; heir leaves it out"]
    );
    // A task whose only event is such a resume has nothing to run.
    assert_eq!(
        err_str(r#"{"tasks": {"A": {"resume": "Nobody"}}}"#),
        "t.json:1:12: at tasks.A: task \"A\" has no event heir can run (its only events were resumes that wake nobody)"
    );
}

#[test]
fn unpaired_suspend_and_resume_are_warned_about() {
    let s = ok(
        r#"{"tasks": {"A": {"suspend", "run": 1}, "B": {"resume": "C", "run": 1}, "C": {"run": 1}}}"#,
    );
    assert_eq!(
        warnings(&s),
        [
            "1:18: tasks.A.suspend: no task resumes \"A\": this suspend blocks it for good",
            "1:56: tasks.B.resume: task \"C\" never suspends: this resume is always lost",
        ]
    );
}

#[test]
fn queues_record_pushers_and_poppers() {
    let s = ok(r#"{"tasks": {
        "P1": {"run": 1, "push": "q", "push1": "q"},
        "C":  {"pop": "q", "run": 1},
        "P2": {"push": "q", "pop": "q"}}}"#);
    assert_eq!(
        *res_kind(&s, "q", "queue"),
        ResourceKind::Queue {
            capacity: 16,
            pushers: vec![TaskIdx(0), TaskIdx(2)],
            poppers: vec![TaskIdx(1), TaskIdx(2)],
        }
    );
    assert_eq!(
        kinds(&s, 0, 0)[1..],
        [EventKind::Push(ResIdx(0)), EventKind::Push(ResIdx(0))]
    );
}

#[test]
fn endpoints_record_servers_and_callers() {
    let s = ok(r#"{"tasks": {
        "C1": {"run": 1, "call": {"server": "rpc", "run": 4500}},
        "C2": {"call": {"server": "rpc", "run": {"min": 1, "max": 2}}},
        "S":  {"serve": "rpc"}}}"#);
    let (i, r) = res(&s, "rpc", "endpoint");
    assert_eq!(
        r.kind,
        ResourceKind::Endpoint {
            servers: vec![TaskIdx(2)],
            callers: vec![TaskIdx(0), TaskIdx(1)],
        }
    );
    assert_eq!(r.path, "tasks.C1.call.server");
    assert_eq!(
        kinds(&s, 1, 0),
        [EventKind::Call {
            endpoint: ResIdx(i),
            run: Micros::Uniform { min: 1, max: 2 }
        }]
    );
    assert_eq!(kinds(&s, 2, 0), [EventKind::Serve(ResIdx(i))]);
}

#[test]
fn endpoint_without_server_is_an_error_and_without_caller_a_warning() {
    assert_eq!(
        err_str(r#"{"tasks": {"C": {"call": {"server": "rpc", "run": 5}}}}"#),
        "t.json:1:37: at tasks.C.call.server: endpoint \"rpc\" is called but no task serves it: add \"serve\": \"rpc\" to a server task"
    );
    let s = ok(r#"{"tasks": {"S": {"serve": "rpc"}}}"#);
    assert_eq!(
        warnings(&s),
        ["1:27: tasks.S.serve: endpoint \"rpc\" is served but no task calls it"]
    );
}

#[test]
fn barrier_users_count_threads() {
    let s = ok(r#"{"tasks": {
        "A": {"instance": 3, "barrier": "b", "run": 1, "barrier1": "b"},
        "B": {"barrier": "b", "run": 1},
        "C": {"instance": 0, "barrier": "b", "run": 1},
        "D": {"run": 1}}}"#);
    assert_eq!(
        *res_kind(&s, "b", "barrier"),
        ResourceKind::Barrier { users: 4 }
    );
}

#[test]
fn event_value_errors_say_what_was_expected() {
    let mu = "expected µs as a non-negative integer or {\"min\":…,\"max\":…}";
    let cases = [
        (r#""run": -5"#, "tasks.A.run", format!("{mu}, found -5")),
        (r#""run": 1.5"#, "tasks.A.run", format!("{mu}, found 1.5")),
        (r#""sleep": "10""#, "tasks.A.sleep", format!("{mu}, found \"10\"")),
        (r#""runtime""#, "tasks.A.runtime", format!("{mu}, found no value")),
        (r#""run": {"min": 5, "max": 1}"#, "tasks.A.run.min", "min 5 is greater than max 1".into()),
        (r#""run": {"min": 5}"#, "tasks.A.run", "missing \"max\": a µs range is {\"min\": µs, \"max\": µs}".into()),
        (r#""run": {"min": 1, "max": 2, "mean": 1}"#, "tasks.A.run.mean", "unknown key \"mean\" in a µs range: expected \"min\" and \"max\"".into()),
        (r#""run": {"min": -1, "max": 2}"#, "tasks.A.run.min", "expected µs as a non-negative integer, found -1".into()),
        (r#""lock": 5"#, "tasks.A.lock", "expected a string (mutex name), found 5".into()),
        (r#""unlock""#, "tasks.A.unlock", "expected a string (mutex name), found no value".into()),
        (r#""signal": ["c"]"#, "tasks.A.signal", "expected a string (cond name), found an array".into()),
        (r#""barrier": null"#, "tasks.A.barrier", "expected a string (barrier name), found null".into()),
        (r#""push": {}"#, "tasks.A.push", "expected a string (queue name), found an object".into()),
        (r#""serve": 1"#, "tasks.A.serve", "expected a string (endpoint name), found 1".into()),
        (r#""resume": true"#, "tasks.A.resume", "expected a string (task name), found true".into()),
        (r#""wait": "c""#, "tasks.A.wait", "expected {\"ref\": cond, \"mutex\": mutex}, found \"c\"".into()),
        (r#""wait": {"ref": "c"}"#, "tasks.A.wait", "missing \"mutex\": a wait needs \"mutex\" (mutex name)".into()),
        (r#""sync": {"mutex": "m"}"#, "tasks.A.sync", "missing \"ref\": a sync needs \"ref\" (cond name)".into()),
        (r#""wait": {"ref": "c", "mutex": 1}"#, "tasks.A.wait.mutex", "expected a string (mutex name), found 1".into()),
        (r#""call": {"server": "s"}"#, "tasks.A.call", "missing \"run\": a call needs \"server\" (an endpoint) and \"run\" (µs of work done by the server)".into()),
        (r#""call": {"run": 5}"#, "tasks.A.call", "missing \"server\": a call needs \"server\" (endpoint name)".into()),
        (r#""call": {"server": "s", "run": -1}"#, "tasks.A.call.run", format!("{mu}, found -1")),
    ];
    for (body, path, message) in cases {
        let e = err(&one_task(body));
        assert_eq!(e.message, message, "{body}");
        assert_eq!(e.path.as_deref(), Some(path), "{body}");
    }
}

#[test]
fn unsupported_rt_app_events_are_named() {
    for (key, name, why) in [
        ("fork", "fork", "rt-app's fork creates threads at run time"),
        (
            "memrun",
            "memrun",
            "rt-app's memrun is a memory-bandwidth load",
        ),
        ("mem2", "mem", "rt-app's mem is a memory-bandwidth load"),
        ("iorun", "iorun", "rt-app's iorun writes to an I/O device"),
        (
            "sem_post",
            "sem_post",
            "rt-app's sem_post uses a POSIX semaphore",
        ),
        (
            "sem_wait1",
            "sem_wait",
            "rt-app's sem_wait uses a POSIX semaphore",
        ),
    ] {
        let e = err(&one_task(&format!(r#""run": 1, "{key}": "x""#)));
        assert_eq!(
            e.message,
            format!("event \"{name}\" is not modelled by heir ({why})")
        );
        assert_eq!(e.path, Some(format!("tasks.A.{key}")));
        assert_eq!((e.line, e.column), (1, 28));
    }
    assert_eq!(
        err(&one_task(r#""taskgroup": "/tg", "run": 1"#)).message,
        "key \"taskgroup\" is not modelled by heir (rt-app's taskgroup places threads in cgroups)"
    );
}
