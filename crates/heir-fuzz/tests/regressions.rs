//! Inputs that crashed, hung or answered wrong, each a named test through
//! the fuzzing harness's checks (`heir_fuzz::check`): the inputs of issue 7
//! and the failures the harness found.

use heir_fuzz::{check, Outcome};

/// `text` must be refused by the reader, cleanly, with `message` in its
/// error.
fn refused(text: &[u8], message: &str) {
    assert_eq!(check(text, None), Ok(Outcome::Refused));
    let e = heir_scenario::parse_bytes(text, "t.json").unwrap_err();
    assert!(e.to_string().contains(message), "{e}");
}

#[test]
fn instance_u32_max_aborted_on_allocation() {
    refused(
        br#"{"global": {"duration": 1}, "tasks": {"A": {"instance": 4294967295, "run": 1000}}}"#,
        "over heir's limit of 1024 threads",
    );
}

#[test]
fn cpu_u32_max_aborted_on_allocation() {
    refused(
        br#"{"global": {"duration": 1}, "tasks": {"A": {"cpus": [4294967295], "run": 1000}}}"#,
        "CPU 4294967295 is over heir's limit",
    );
}

#[test]
fn cpu_ten_million_took_minutes_and_gigabytes() {
    refused(
        br#"{"global": {"duration": 1}, "tasks": {"A": {"cpus": [10000000], "run": 1000}}}"#,
        "CPU 10000000 is over heir's limit",
    );
}

#[test]
fn delay_near_u64_ns_with_a_timer_never_ended() {
    refused(
        br#"{"tasks": {"A": {"loop": 1, "delay": 18446744073709551, "run": 1000,
            "timer": {"ref": "t", "period": 1000}}}}"#,
        "beyond heir's time limit",
    );
}

#[test]
fn phase_run_i64_max_never_ended() {
    refused(
        br#"{"tasks": {"A": {"loop": 1, "phases": {"p": {"run": 9223372036854775807}}}}}"#,
        "beyond heir's time limit",
    );
}

#[test]
fn delay_u64_max_reported_a_response_of_zero() {
    refused(
        br#"{"tasks": {"A": {"loop": 1, "delay": 18446744073709551615, "run": 1000}}}"#,
        "beyond heir's time limit",
    );
}

#[test]
fn duration_1e308_was_accepted() {
    refused(
        br#"{"global": {"duration": 1e308}, "tasks": {"A": {"run": 1000}}}"#,
        "duration 1e308 s is beyond heir's time limit",
    );
}

#[test]
fn unlock_by_a_non_owner_differed_between_faces() {
    refused(
        br#"{"global": {"duration": 1}, "tasks": {"A": {"run": 1000, "unlock": "m"}}}"#,
        "which it does not hold at this point",
    );
}

#[test]
fn zero_length_jobs_spun() {
    refused(
        br#"{"global": {"duration": 1}, "tasks": {"A": {"run": 0}}}"#,
        "never lets time pass",
    );
}

#[test]
fn a_one_megabyte_key_was_echoed_in_full() {
    let text = format!(
        r#"{{"tasks": {{"A": {{"run": 1, "{}": 1}}}}}}"#,
        "k".repeat(1_000_000)
    );
    refused(text.as_bytes(), "(1000000 bytes)");
    let e = heir_scenario::parse_bytes(text.as_bytes(), "t.json").unwrap_err();
    assert!(e.to_string().len() < 1000);
}

#[test]
fn invalid_utf8_had_no_position() {
    refused(
        b"{\"tasks\": {\"A\": {\"run\": 1, \"lock\": \"\xff\"}}}",
        "t.json:1:37:",
    );
}

#[test]
fn two_tasks_resuming_each_other_forever_stop_in_bounded_time() {
    // Found by the harness (its slowest input, rt-app's example1.json with
    // its "run" removed): two tasks that resume each other without time
    // passing. Each can block (a suspend), so the reader accepts it; the
    // simulator's safety net refuses the run, at the task, in bounded time.
    let text = br#"{"tasks": {
        "thread0": {"loop": -1, "resume": "thread1", "suspend": "thread0"},
        "thread1": {"loop": -1, "resume": "thread0", "suspend": "thread1"}}}"#;
    let sc = heir_scenario::parse_bytes(text, "t.json").unwrap();
    let cfg = heir_sim::SimConfig {
        duration_us: Some(heir_fuzz::SIM_US),
        ..heir_sim::SimConfig::default()
    };
    let start = std::time::Instant::now();
    let e = heir_sim::simulate(&sc, &cfg, &mut heir_sim::NullObserver).unwrap_err();
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!((e.path(), e.position()), ("tasks.thread0", Some((2, 9))));
    assert!(
        e.message().starts_with("no time passes: thread thread0"),
        "{e}"
    );
}

#[test]
fn a_passive_deadline_server_ran_on_its_own_budget() {
    // A mutation of examples/nova-abort-passive.json: the passive
    // server S made SCHED_DEADLINE broke the simulator's invariant "a
    // running passive thread has a donor". The reader refuses it now.
    refused(
        br#"{ "global": { "default_policy": "SCHED_FIFO", "ipc": "donation", "duration": 0.01 },
    "tasks": {
        "S": {"policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000, "passive": true, "cpus": [0], "loop": -1, "serve": "s" },
        "C": { "priority": 20, "cpus": [0], "loop": 1,
               "call": { "server": "s", "run": 3000, "timeout": 1000 } },
        "L": { "priority": 30, "cpus": [0], "loop": 1, "delay": 2000,
               "call": { "server": "s", "run": 1000 } } } }"#,
        "cannot have a SCHED_DEADLINE reservation of its own",
    );
}
