//! Bad input: the exact message and position of each kind of mistake the
//! brief lists, end to end through `parse_str`.

use crate::common::*;

/// A small scenario, one mistake per variant, each checked in full.
fn scenario(task_a: &str) -> String {
    format!(
        "{{\n  \"global\": {{ \"default_policy\": \"SCHED_FIFO\" }},\n  \"tasks\": {{\n    \"A\": {{ {task_a} }},\n    \"B\": {{ \"priority\": 5, \"run\": 100 }}\n  }}\n}}\n"
    )
}

#[test]
fn missing_colon() {
    assert_eq!(
        err_str(&scenario(r#""priority": 10, "run" 5000"#)),
        "t.json:4:33: at tasks.A: expected ':' after key \"run\", found '5000'"
    );
}

#[test]
fn unterminated_string() {
    // The string ends at the next quote; the reader notices what follows.
    assert_eq!(
        err_str(&scenario(r#""lock": "m, "run": 1"#)),
        "t.json:4:25: at tasks.A: expected ',' or '}' after the member \"lock\", found 'run'"
    );
    // At the end of the line, the string is reported where it starts.
    assert_eq!(
        err_str(&scenario(r#""lock": "m"#)),
        "t.json:4:20: at tasks.A.lock: unterminated string: no closing '\"' before the end of the line"
    );
}

#[test]
fn unknown_events_fork_and_memrun() {
    assert_eq!(
        err_str(&scenario(r#""run": 1, "fork": "B""#)),
        "t.json:4:22: at tasks.A.fork: event \"fork\" is not modelled by heir (rt-app's fork creates threads at run time)"
    );
    assert_eq!(
        err_str(&scenario(r#""memrun": 1000"#)),
        "t.json:4:12: at tasks.A.memrun: event \"memrun\" is not modelled by heir (rt-app's memrun is a memory-bandwidth load)"
    );
}

#[test]
fn unknown_task_key() {
    assert_eq!(
        err_str(&scenario(r#""prio": 10, "run": 1"#)),
        "t.json:4:12: at tasks.A.prio: unknown key \"prio\" in task \"A\": expected a property \
         (instance, loop, delay, policy, priority, cpus, dl-runtime, dl-period, dl-deadline, \
         util_min, util_max, nodes_membind, phases, passive) or an event (lock, unlock, wait, signal, broad, \
         sync, sleep, runtime, run, timer, suspend, resume, yield, barrier, push, pop, call, serve, gang_run, gang_wait, gang_notify, gang_insert, gang_remove, gang_active, gang_passive; \
         a suffix is allowed, as in run1)"
    );
}

#[test]
fn one_name_as_two_kinds_of_resource() {
    assert_eq!(
        err_str(&scenario(r#""lock": "B", "unlock": "B", "barrier": "B""#)),
        "t.json:4:51: at tasks.A.barrier: \"B\" is used as a mutex at tasks.A.lock and as a barrier at tasks.A.barrier"
    );
}

#[test]
fn negative_period() {
    assert_eq!(
        err_str(&scenario(
            r#""run": 1, "timer": { "ref": "t", "period": -10000 }"#
        )),
        "t.json:4:55: at tasks.A.timer.period: period must be positive (µs > 0), found -10000"
    );
}

#[test]
fn ceiling_without_a_ceiling_value() {
    let text = "{\n\"resources\": {\n  \"R\": { \"type\": \"mutex\", \"protocol\": \"ceiling\" }\n},\n\"tasks\": { \"A\": { \"lock\": \"R\", \"unlock\": \"R\" } }\n}";
    assert_eq!(
        err_str(text),
        "t.json:3:39: at resources.R.protocol: a \"ceiling\" mutex needs \"ceiling\": its real-time priority (1..=99)"
    );
}

#[test]
fn helper_not_a_task() {
    let text = "{\n\"resources\": {\n  \"c\": { \"type\": \"cond\", \"helpers\": [ \"C\" ] }\n},\n\"tasks\": { \"A\": { \"signal\": \"c\" }, \"B\": { \"run\": 1 } }\n}";
    assert_eq!(
        err_str(text),
        "t.json:3:39: at resources.c.helpers[0]: helper \"C\" is not a task; the tasks are: \"A\", \"B\""
    );
}

#[test]
fn min_greater_than_max() {
    assert_eq!(
        err_str(&scenario(r#""run": { "min": 900, "max": 100 }"#)),
        "t.json:4:28: at tasks.A.run.min: min 900 is greater than max 100"
    );
}

#[test]
fn bad_policy_name() {
    assert_eq!(
        err_str(&scenario(r#""policy": "SCHED_FIFOO", "run": 1"#)),
        "t.json:4:22: at tasks.A.policy: unknown policy \"SCHED_FIFOO\": expected one of SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE"
    );
}

#[test]
fn priority_out_of_range() {
    assert_eq!(
        err_str(&scenario(r#""priority": 0, "run": 1"#)),
        "t.json:4:24: at tasks.A.priority: priority 0 is out of range for SCHED_FIFO: expected 1..=99"
    );
    assert_eq!(
        err_str(&scenario(r#""priority": 100, "run": 1"#)),
        "t.json:4:24: at tasks.A.priority: priority 100 is out of range for SCHED_FIFO: expected 1..=99"
    );
    assert_eq!(
        err_str(&scenario(r#""policy": "SCHED_OTHER", "priority": -21, "run": 1"#)),
        "t.json:4:49: at tasks.A.priority: priority -21 is out of range for SCHED_OTHER (a nice value): expected -20..=19"
    );
}

#[test]
fn repeated_property_key() {
    assert_eq!(
        err_str(&scenario(r#""priority": 10, "run": 1, "priority": 20"#)),
        "t.json:4:38: at tasks.A.priority: duplicate key \"priority\" (first at line 4, column 12): it may appear only once here"
    );
}

#[test]
fn repeated_top_level_key() {
    assert_eq!(
        err_str("{ \"tasks\": { \"A\": { \"run\": 1 } },\n  \"tasks\": { \"B\": { \"run\": 1 } } }"),
        "t.json:2:3: at tasks: duplicate key \"tasks\" (first at line 1, column 3): it may appear only once here"
    );
}

#[test]
fn top_level_errors() {
    assert_eq!(
        err_str(r#"{"tasks": {"A": {"run": 1}}, "task": {}}"#),
        "t.json:1:30: at task: unknown top-level key \"task\": expected \"tasks\", \"global\" or \"resources\""
    );
    assert_eq!(
        err_str(r#"{"global": {}}"#),
        "t.json:1:1: missing \"tasks\": expected an object of tasks at the top level"
    );
    assert_eq!(
        err_str("[1]"),
        "t.json:1:1: expected a JSON object at the top level ({\"tasks\": {...}}), found an array"
    );
}

#[test]
fn load_names_the_file_and_reports_io_errors() {
    let e = heir_scenario::load(std::path::Path::new("/nonexistent/heir/x.json")).unwrap_err();
    assert_eq!(e.file, "/nonexistent/heir/x.json");
    assert_eq!((e.line, e.column, e.path.clone()), (0, 0, None));
    assert!(e.message.starts_with("cannot read: "), "{}", e.message);
}
