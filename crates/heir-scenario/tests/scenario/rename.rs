//! Repeated keys renamed as rt-app's doc/workgen does.

use heir_scenario::json::{self, WorkgenNames};

use crate::common::*;

fn names(keys: &[&str]) -> Vec<String> {
    let mut w = WorkgenNames::new();
    keys.iter().map(|k| w.name(k)).collect()
}

#[test]
fn repeats_get_the_object_counter() {
    assert_eq!(names(&["run", "run", "run"]), ["run", "run1", "run2"]);
}

#[test]
fn the_counter_is_shared_by_all_keys_of_an_object() {
    // workgen's counter only grows: after run2, a second lock is lock2.
    assert_eq!(
        names(&["run", "run", "run", "lock", "lock"]),
        ["run", "run1", "run2", "lock", "lock2"]
    );
}

#[test]
fn names_already_present_are_skipped() {
    // `run1` is written by the user; the second `run` cannot take it.
    assert_eq!(names(&["run", "run1", "run"]), ["run", "run1", "run2"]);
    // A repeated `run1` becomes `run1` + counter.
    assert_eq!(names(&["run", "run", "run1"]), ["run", "run1", "run11"]);
}

#[test]
fn each_object_has_its_own_counter() {
    let v = json::parse(
        r#"{ "a": { "run": 1, "run": 2, "run": 3 },
             "b": { "run": 1, "run": 2 },
             "run": 0, "run": 0 }"#,
    )
    .unwrap();
    let top = v.as_object().unwrap();
    let inner = |i: usize| -> Vec<String> {
        top[i]
            .value
            .as_ref()
            .unwrap()
            .as_object()
            .unwrap()
            .iter()
            .map(|m| m.name.clone())
            .collect()
    };
    assert_eq!(inner(0), ["run", "run1", "run2"]);
    assert_eq!(inner(1), ["run", "run1"]);
    let outer: Vec<&str> = top.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(outer, ["a", "b", "run", "run1"]);
    assert!(top[3].is_repeat());
    assert!(!top[2].is_repeat());
}

#[test]
fn mp3_omxcall_events_in_order_with_renamed_keys() {
    let Some(s) = load_rtapp("mp3-short.json") else {
        return;
    };
    let t = s.tasks.iter().position(|t| t.name == "OMXCall").unwrap();
    assert_eq!(
        keys(&s, t, 0),
        ["lock", "wait", "unlock", "run", "lock1", "signal", "unlock1"]
    );
    let paths: Vec<&str> = s.tasks[t].phases[0]
        .events
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "tasks.OMXCall.lock",
            "tasks.OMXCall.wait",
            "tasks.OMXCall.unlock",
            "tasks.OMXCall.run",
            "tasks.OMXCall.lock1",
            "tasks.OMXCall.signal",
            "tasks.OMXCall.unlock1"
        ]
    );
}

#[test]
fn renamed_keys_name_error_paths() {
    assert_eq!(
        err_str(&one_task(r#""run": 1, "run": 2, "run": -3"#)),
        "t.json:1:45: at tasks.A.run2: expected µs as a non-negative integer or {\"min\":…,\"max\":…}, found -3"
    );
}
