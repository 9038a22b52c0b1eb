//! The `global` object.

use heir_scenario::Policy;

use crate::common::*;

const TASKS: &str = r#""tasks": {"A": {"run": 1}}"#;

fn with_global(g: &str) -> String {
    format!("{{{TASKS}, \"global\": {{{g}}}}}")
}

#[test]
fn defaults_without_global() {
    let s = ok(&format!("{{{TASKS}}}"));
    let g = &s.global;
    assert_eq!(g.duration_s, None);
    assert_eq!(g.default_policy, Policy::Other);
    assert!(!g.pi_enabled);
    assert!(g.pi_cv);
    assert!(g.bwi_affinity);
    assert_eq!(g.seed, 0);
    assert_eq!(g.calibration_ns_per_loop, None);
    assert!(s.warnings.is_empty());
}

#[test]
fn every_key_is_read() {
    let s = ok(&with_global(
        r#""duration": 2.5, "default_policy": "SCHED_FIFO", "pi_enabled": true,
           "pi_cv": false, "bwi_affinity": false, "seed": 18446744073709551615, "calibration": 120"#,
    ));
    let g = &s.global;
    assert_eq!(g.duration_s, Some(2.5));
    assert_eq!(g.default_policy, Policy::Fifo);
    assert!(g.pi_enabled);
    assert!(!g.pi_cv);
    assert!(!g.bwi_affinity);
    assert_eq!(g.seed, u64::MAX);
    assert_eq!(g.calibration_ns_per_loop, Some(120));
    // The default policy applies to tasks that set none, with its default
    // priority.
    assert_eq!(s.tasks[0].sched.policy, Policy::Fifo);
    assert_eq!(s.tasks[0].sched.priority, 10);
}

#[test]
fn duration_minus_one_means_no_limit() {
    assert_eq!(
        ok(&with_global(r#""duration": -1"#)).global.duration_s,
        None
    );
    assert_eq!(
        ok(&with_global(r#""duration": -1.0"#)).global.duration_s,
        None
    );
    assert_eq!(
        ok(&with_global(r#""duration": 6"#)).global.duration_s,
        Some(6.0)
    );
    assert_eq!(
        ok(&with_global(r#""duration": 0"#)).global.duration_s,
        Some(0.0)
    );
}

#[test]
fn calibration_string_is_ignored_and_zero_means_calibrate() {
    assert_eq!(
        ok(&with_global(r#""calibration": "CPU0""#))
            .global
            .calibration_ns_per_loop,
        None
    );
    assert_eq!(
        ok(&with_global(r#""calibration": 0"#))
            .global
            .calibration_ns_per_loop,
        None
    );
}

#[test]
fn rt_app_options_are_accepted_without_warning() {
    let s = ok(&with_global(
        r#""logdir": "./", "log_basename": "x", "log_size": "file", "ftrace": "main,task",
           "gnuplot": true, "lock_pages": false, "cumulative_slack": false,
           "io_device": "/dev/null", "mem_buffer_size": 1024"#,
    ));
    assert!(s.warnings.is_empty(), "{:?}", warnings(&s));
}

#[test]
fn unknown_global_key_is_a_warning_with_its_position() {
    let s = ok(&with_global(r#""frag": 1, "duration": 1"#));
    assert_eq!(
        warnings(&s),
        ["1:41: global.frag: unknown global key \"frag\" (ignored)"]
    );
    assert_eq!(s.global.duration_s, Some(1.0));
}

#[test]
fn bad_global_values() {
    let cases = [
        (r#""duration": -2"#, "expected seconds (a number ≥ 0), or -1 for no limit, found -2"),
        (r#""duration": "6""#, "expected seconds (a number ≥ 0), or -1 for no limit, found \"6\""),
        (r#""pi_enabled": 1"#, "expected true or false, found 1"),
        (r#""pi_cv": null"#, "expected true or false, found null"),
        (r#""bwi_affinity": "yes""#, "expected true or false, found \"yes\""),
        (r#""seed": -1"#, "expected a seed (an integer 0..=18446744073709551615), found -1"),
        (r#""seed": 1.5"#, "expected a seed (an integer 0..=18446744073709551615), found 1.5"),
        (r#""calibration": -5"#, "expected a CPU to calibrate on (\"CPU0\") or ns per loop (an integer ≥ 0), found -5"),
        (r#""default_policy": "FIFO""#, "unknown policy \"FIFO\": expected one of SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE"),
        (r#""default_policy": 1"#, "expected a policy name (one of SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE), found 1"),
    ];
    for (g, message) in cases {
        let e = err(&with_global(g));
        assert_eq!(e.message, message, "{g}");
        let key = g.split('"').nth(1).unwrap();
        assert_eq!(e.path.as_deref(), Some(format!("global.{key}").as_str()));
        // The value's column: after `"global": {` and the key.
        let text = with_global(g);
        let at = text.find(g).unwrap() + g.find(':').unwrap() + 2;
        assert_eq!(e.column as usize, at + 1, "{g}");
    }
}

#[test]
fn global_must_be_an_object_with_unique_keys() {
    assert_eq!(
        err_str(&format!("{{{TASKS}, \"global\": []}}")),
        "t.json:1:40: at global: expected an object, found an array"
    );
    assert_eq!(
        err_str(&with_global(r#""duration": 1, "duration": 2"#)),
        "t.json:1:56: at global.duration: duplicate key \"duration\" (first at line 1, column 41): it may appear only once here"
    );
}
