//! Declared and implicit resources, and their one shared name space.

use heir_scenario::{EventKind, MutexProtocol, ResIdx, ResourceKind, TaskIdx};

use crate::common::*;

#[test]
fn declared_first_in_order_then_first_use() {
    let s = ok(r#"{
      "resources": {
        "R2": {"type": "mutex", "protocol": "ceiling", "ceiling": 65},
        "q":  {"type": "queue", "capacity": 4},
        "R1": {"type": "mutex", "protocol": "inherit"}
      },
      "tasks": {
        "A": {"lock": "x", "lock1": "R1", "push": "q", "unlock": "R1", "unlock1": "x"},
        "B": {"lock": "R2", "pop": "q", "unlock": "R2", "signal": "c"}
      }
    }"#);
    let names: Vec<(&str, &str, &str)> = s
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.kind.word(), r.path.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("R2", "mutex", "resources.R2"),
            ("q", "queue", "resources.q"),
            ("R1", "mutex", "resources.R1"),
            ("x", "mutex", "tasks.A.lock"),
            ("c", "cond", "tasks.B.signal"),
        ]
    );
    assert_eq!(
        s.resources[0].kind,
        ResourceKind::Mutex {
            protocol: MutexProtocol::Ceiling(65)
        }
    );
    assert_eq!(
        s.resources[1].kind,
        ResourceKind::Queue {
            capacity: 4,
            pushers: vec![TaskIdx(0)],
            poppers: vec![TaskIdx(1)]
        }
    );
    assert_eq!(
        s.resources[2].kind,
        ResourceKind::Mutex {
            protocol: MutexProtocol::Inherit
        }
    );
    // Not declared, pi_enabled false: no protocol.
    assert_eq!(
        s.resources[3].kind,
        ResourceKind::Mutex {
            protocol: MutexProtocol::None
        }
    );
    assert_eq!(s.resources[4].kind, ResourceKind::Cond { helpers: vec![] });
    assert_eq!(
        kinds(&s, 0, 0),
        [
            EventKind::Lock(ResIdx(3)),
            EventKind::Lock(ResIdx(2)),
            EventKind::Push(ResIdx(1)),
            EventKind::Unlock(ResIdx(2)),
            EventKind::Unlock(ResIdx(3)),
        ]
    );
}

#[test]
fn default_protocol_follows_pi_enabled() {
    let s = ok(r#"{"global": {"pi_enabled": true},
        "resources": {"d": {"type": "mutex"}},
        "tasks": {"A": {"loop": 1, "lock": "m", "lock1": "d", "unlock": "d", "unlock1": "m"}}}"#);
    assert_eq!(
        *res_kind(&s, "m", "mutex"),
        ResourceKind::Mutex {
            protocol: MutexProtocol::Inherit
        }
    );
    assert_eq!(
        *res_kind(&s, "d", "mutex"),
        ResourceKind::Mutex {
            protocol: MutexProtocol::Inherit
        }
    );
}

#[test]
fn cond_helpers_are_tasks() {
    let s = ok(r#"{"resources": {
            "more": {"type": "cond", "helpers": ["Producer"]},
            "old":  {"type": "wait", "helpers": []}},
        "tasks": {
            "Consumer": {"lock": "m", "wait": {"ref": "more", "mutex": "m"}, "unlock": "m", "broad": "old"},
            "Producer": {"run": 5, "lock": "m", "signal": "more", "unlock": "m"}}}"#);
    assert_eq!(
        *res_kind(&s, "more", "cond"),
        ResourceKind::Cond {
            helpers: vec![TaskIdx(1)]
        }
    );
    assert_eq!(
        *res_kind(&s, "old", "cond"),
        ResourceKind::Cond { helpers: vec![] }
    );
}

#[test]
fn helper_that_is_not_a_task() {
    assert_eq!(
        err_str(r#"{"resources": {"c": {"type": "cond", "helpers": ["A", "Ghost"]}}, "tasks": {"A": {"signal": "c"}}}"#),
        "t.json:1:55: at resources.c.helpers[1]: helper \"Ghost\" is not a task; the tasks are: \"A\""
    );
}

#[test]
fn ceiling_needs_its_value() {
    assert_eq!(
        err_str(r#"{"resources": {"R": {"type": "mutex", "protocol": "ceiling"}}, "tasks": {"A": {"lock": "R"}}}"#),
        "t.json:1:51: at resources.R.protocol: a \"ceiling\" mutex needs \"ceiling\": its real-time priority (1..=99)"
    );
}

#[test]
fn declaration_errors() {
    let cases = [
        (r#""R": {"type": "mutex", "protocol": "ceiling", "ceiling": 100}"#, "resources.R.ceiling", "expected a ceiling priority (an integer 1..=99), found 100"),
        (r#""R": {"type": "mutex", "protocol": "ceiling", "ceiling": 0}"#, "resources.R.ceiling", "expected a ceiling priority (an integer 1..=99), found 0"),
        (r#""R": {"type": "mutex", "ceiling": 50}"#, "resources.R.ceiling", "\"ceiling\" needs \"protocol\": \"ceiling\""),
        (r#""R": {"type": "mutex", "protocol": "inherit", "ceiling": 50}"#, "resources.R.ceiling", "\"ceiling\" needs \"protocol\": \"ceiling\""),
        (r#""R": {"type": "mutex", "protocol": "pip"}"#, "resources.R.protocol", "expected \"inherit\", \"bwi\", \"ceiling\" or \"none\", found \"pip\""),
        (r#""R": {"type": "mutex", "helpers": []}"#, "resources.R.helpers", "unknown key \"helpers\" in a mutex: expected \"type\", \"protocol\", \"ceiling\""),
        (r#""R": {"type": "semaphore"}"#, "resources.R.type", "unknown resource type \"semaphore\": expected \"mutex\", \"cond\" (or rt-app's \"wait\"), \"queue\", \"barrier\" or \"gang\""),
        (r#""R": {"type": "endpoint"}"#, "resources.R.type", "endpoints are not declared: \"call\" and \"serve\" events create them"),
        (r#""R": {"type": "timer"}"#, "resources.R.type", "timers are not declared: \"timer\" events create them"),
        (r#""R": {"protocol": "none"}"#, "resources.R", "missing \"type\": expected \"mutex\", \"cond\", \"queue\", \"barrier\" or \"gang\""),
        (r#""R": "mutex""#, "resources.R", "expected a resource object ({\"type\": \"mutex\"}, ...), found \"mutex\""),
        (r#""R": {"type": "queue", "capacity": 0}"#, "resources.R.capacity", "expected a capacity (an integer ≥ 1), found 0"),
        (r#""R": {"type": "cond", "helpers": "A"}"#, "resources.R.helpers", "expected an array of task names, found \"A\""),
        (r#""R": {"type": "cond", "helpers": [1]}"#, "resources.R.helpers[0]", "expected a task name (a string), found 1"),
        (r#""R": {"type": "cond", "helpers": ["A", "A"]}"#, "resources.R.helpers[1]", "helper \"A\" is listed twice"),
        (r#""R": {"type": "barrier", "users": 2}"#, "resources.R.users", "unknown key \"users\" in a barrier: expected \"type\""),
        (r#""R": {"type": "mutex"}, "R": {"type": "mutex"}"#, "resources.R", "duplicate key \"R\" (first at line 1, column 16): it may appear only once here"),
    ];
    for (decl, path, message) in cases {
        let text = format!(r#"{{"resources": {{{decl}}}, "tasks": {{"A": {{"run": 1}}}}}}"#);
        let e = err(&text);
        assert_eq!(e.message, message, "{decl}");
        assert_eq!(e.path.as_deref(), Some(path), "{decl}");
    }
    assert_eq!(
        err_str(r#"{"resources": [], "tasks": {"A": {"run": 1}}}"#),
        "t.json:1:15: at resources: expected an object of resources ({\"name\": {\"type\": ...}}), found an array"
    );
}

#[test]
fn unused_declaration_is_a_warning() {
    let s = ok(r#"{"resources": {"lonely": {"type": "barrier"}}, "tasks": {"A": {"run": 1}}}"#);
    assert_eq!(
        warnings(&s),
        ["1:16: resources.lonely: resource \"lonely\" is declared but never used"]
    );
    assert_eq!(
        *res_kind(&s, "lonely", "barrier"),
        ResourceKind::Barrier { users: 0 }
    );
}

#[test]
fn one_name_used_as_two_kinds() {
    assert_eq!(
        err_str(r#"{"tasks": {"A": {"lock": "m", "unlock": "m"}, "B": {"signal": "m"}}}"#),
        "t.json:1:63: at tasks.B.signal: \"m\" is used as a mutex at tasks.A.lock and as a cond at tasks.B.signal"
    );
    assert_eq!(
        err_str(r#"{"resources": {"q": {"type": "queue"}}, "tasks": {"A": {"barrier": "q"}}}"#),
        "t.json:1:68: at tasks.A.barrier: \"q\" is declared as a queue at resources.q and used as a barrier at tasks.A.barrier"
    );
    assert_eq!(
        err_str(r#"{"tasks": {"A": {"timer": {"ref": "t", "period": 5}, "lock": "t"}}}"#),
        "t.json:1:62: at tasks.A.lock: \"t\" is used as a timer at tasks.A.timer.ref and as a mutex at tasks.A.lock"
    );
    assert_eq!(
        err_str(r#"{"tasks": {"A": {"call": {"server": "s", "run": 1}, "push": "s"}, "S": {"serve": "s"}}}"#),
        "t.json:1:61: at tasks.A.push: \"s\" is used as an endpoint at tasks.A.call.server and as a queue at tasks.A.push"
    );
}

#[test]
fn a_cond_and_its_mutex_may_share_a_name_when_a_wait_pairs_them() {
    // rt-app keys resources by name and type; video-short.json locks
    // "NuPlayerDriver" and syncs on the cond "NuPlayerDriver" with it.
    let s = ok(r#"{"tasks": {
        "A": {"lock": "N", "sync": {"ref": "N", "mutex": "N"}, "unlock": "N"},
        "B": {"lock": "N", "signal": "N", "unlock": "N"}}}"#);
    let m = res(&s, "N", "mutex").0;
    let c = res(&s, "N", "cond").0;
    assert_ne!(m, c);
    assert_eq!(
        kinds(&s, 1, 0),
        [
            EventKind::Lock(ResIdx(m)),
            EventKind::Signal(ResIdx(c)),
            EventKind::Unlock(ResIdx(m))
        ]
    );
    // Without the pairing, the same name as a mutex and a cond is refused,
    // and so is a third kind even with it.
    assert!(err_str(r#"{"tasks": {"A": {"lock": "N", "signal": "N"}}}"#)
        .ends_with("\"N\" is used as a mutex at tasks.A.lock and as a cond at tasks.A.signal"));
    assert!(err_str(
        r#"{"tasks": {"A": {"lock": "N", "wait": {"ref": "N", "mutex": "N"}, "barrier": "N"}}}"#
    )
    .ends_with("\"N\" is used as a mutex at tasks.A.lock and as a barrier at tasks.A.barrier"));
}

#[test]
fn wait_mutex_must_be_a_mutex() {
    assert_eq!(
        err_str(r#"{"resources": {"q": {"type": "queue"}}, "tasks": {"A": {"wait": {"ref": "c", "mutex": "q"}}}}"#),
        "t.json:1:87: at tasks.A.wait.mutex: \"q\" is declared as a queue at resources.q and used as a mutex at tasks.A.wait.mutex"
    );
}
