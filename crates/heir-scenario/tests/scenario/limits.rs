//! heir's limits (issue 7, items 2 and 3): every count that sizes an
//! allocation and every time is bounded at read time, with a message that
//! names the limit, at the offending value.

use heir_scenario::limits::*;
use heir_scenario::{parse_str, EventKind, Micros};

use crate::common::*;

/// The displayed error of a one-task scenario with `body`, and of the same
/// body shifted: the column is checked by the exact message.
fn task_err(body: &str) -> String {
    err_str(&one_task(body))
}

#[test]
fn instance_over_the_limit_is_refused_not_allocated() {
    // Was: memory allocation of 103079215080 bytes failed (SIGABRT).
    assert_eq!(
        task_err(r#""instance": 4294967295, "run": 1"#),
        "t.json:1:30: at tasks.A.instance: instance 4294967295 is over heir's limit of 1024 threads"
    );
    // Beyond u64 too.
    assert_eq!(
        task_err(r#""instance": 100000000000000000000000000000000000000000, "run": 1"#),
        "t.json:1:30: at tasks.A.instance: instance 100000000000000000000000000000000000000000 \
         is over heir's limit of 1024 threads"
    );
    assert_eq!(
        ok(&one_task(r#""instance": 1024, "loop": 1, "run": 1"#)).tasks[0].instance,
        MAX_THREADS
    );
    assert_eq!(
        task_err(r#""instance": 1025, "run": 1"#),
        "t.json:1:30: at tasks.A.instance: instance 1025 is over heir's limit of 1024 threads"
    );
    // Negative is still a type error.
    assert_eq!(
        task_err(r#""instance": -1, "run": 1"#),
        "t.json:1:30: at tasks.A.instance: expected a number of threads (an integer ≥ 0), found -1"
    );
}

#[test]
fn threads_over_the_limit_in_all() {
    let text = r#"{"tasks": {"A": {"instance": 1000, "run": 1}, "B": {"instance": 24, "run": 1},
        "C": {"instance": 0, "run": 1}, "D": {"run": 1}}}"#;
    assert_eq!(
        err_str(text),
        "t.json:2:41: at tasks.D: task \"D\" brings the threads to 1025 in all, over heir's limit of 1024 threads"
    );
    let text = r#"{"tasks": {"A": {"instance": 1000, "run": 1}, "B": {"instance": 25, "run": 1}}}"#;
    assert_eq!(
        err_str(text),
        "t.json:1:65: at tasks.B.instance: task \"B\" brings the threads to 1025 in all, over heir's limit of 1024 threads"
    );
}

#[test]
fn the_thread_limit_is_the_faces() {
    // A face's fixed limit, by name.
    let run = ThreadLimit::fixed("heir run", 1024);
    let text = r#"{"tasks": {"A": {"instance": 1000, "run": 1}, "B": {"instance": 25, "run": 1}}}"#;
    let e = heir_scenario::parse_str_with(text, "t.json", &run).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:1:65: at tasks.B.instance: task \"B\" brings the threads to 1025 in all, over heir run's limit of 1024 threads"
    );
    // A limit from memory says what the threads would need.
    let sim = ThreadLimit::from_memory("heir sim", 4096, 4 << 30);
    assert_eq!(sim.max, 1 << 20);
    let text = r#"{"tasks": {"A": {"instance": 1000000, "run": 1}, "B": {"instance": 48575, "run": 1},
        "C": {"run": 1}}}"#;
    let ok = heir_scenario::parse_str_with(text, "t.json", &sim).expect("within the limit");
    assert_eq!(ok.tasks[0].instance, 1_000_000);
    let text = r#"{"tasks": {"A": {"instance": 1000000, "run": 1}, "B": {"instance": 48575, "run": 1},
        "C": {"run": 1}, "D": {"run": 1}}}"#;
    assert_eq!(
        heir_scenario::parse_str_with(text, "t.json", &sim).unwrap_err().to_string(),
        "t.json:2:26: at tasks.D: task \"D\" brings the threads to 1048577 in all, over heir sim's \
         limit of 1048576 threads: 1048577 threads would need about 4.0 GiB (4096 bytes each), this \
         machine has 4.0 GiB available"
    );
    assert_eq!(
        heir_scenario::parse_str_with(&one_task(r#""instance": 2000000, "run": 1"#), "t.json", &sim)
            .unwrap_err()
            .to_string(),
        "t.json:1:30: at tasks.A.instance: instance 2000000 is over heir sim's limit of 1048576 \
         threads: 2000000 threads would need about 7.6 GiB (4096 bytes each), this machine has 4.0 GiB \
         available"
    );
}

#[test]
fn cpu_numbers_over_the_limit() {
    // Was: SIGABRT (4294967295), or 13.7 GB and more than 60 s (10000000).
    for cpu in ["4294967295", "10000000", "1024", "99999999999999999999999"] {
        assert_eq!(
            task_err(&format!(r#""cpus": [0, {cpu}], "run": 1"#)),
            format!(
                "t.json:1:30: at tasks.A.cpus[1]: CPU {cpu} is over heir's limit: CPU numbers go from 0 to 1023 (1024 CPUs)"
            )
        );
    }
    assert_eq!(
        ok(&one_task(r#""cpus": [1023], "run": 1"#)).tasks[0].cpus,
        Some(vec![1023])
    );
    // In a phase too.
    assert_eq!(
        task_err(r#""phases": {"p": {"cpus": [5000], "run": 1}}"#),
        "t.json:1:44: at tasks.A.phases.p.cpus[0]: CPU 5000 is over heir's limit: CPU numbers go from 0 to 1023 (1024 CPUs)"
    );
}

#[test]
fn queue_capacity_over_the_limit() {
    let text = |cap: &str| {
        format!(
            r#"{{"resources": {{"q": {{"type": "queue", "capacity": {cap}}}}},
            "tasks": {{"A": {{"push": "q", "run": 1}}, "B": {{"pop": "q", "run": 1}}}}}}"#
        )
    };
    assert_eq!(
        err_str(&text("65537")),
        "t.json:1:51: at resources.q.capacity: capacity 65537 is over heir's limit of 65536 items"
    );
    assert_eq!(
        err_str(&text("18446744073709551616")),
        "t.json:1:51: at resources.q.capacity: capacity 18446744073709551616 is over heir's limit of 65536 items"
    );
    ok(&text("65536"));
}

#[test]
fn helper_links_over_the_limit() {
    // 300 callers × 300 servers = 90000 reply links.
    let text = r#"{"tasks": {
        "C": {"instance": 300, "loop": 1, "call": {"server": "rpc", "run": 10}},
        "S": {"instance": 300, "loop": 1, "serve": "rpc"}}}"#;
    assert_eq!(
        err_str(text),
        "t.json:2:62: at tasks.C.call.server: endpoint \"rpc\" brings the PI-CV helper links to 90000 \
         (300 calling threads × 300 serving threads), over heir's limit of 65536"
    );
    // 256 × 256 = 65536 is fine.
    ok(&text.replace("300", "256"));
    // A cond's helpers, summed over conds.
    let conds: String = (0..70)
        .map(|i| format!(r#""c{i}": {{"type": "cond", "helpers": ["H"]}},"#))
        .collect();
    let text = format!(
        r#"{{"resources": {{{conds}}},
        "tasks": {{"H": {{"instance": 1000, "loop": 1, "run": 1}}}}}}"#
    );
    let e = err(&text);
    assert_eq!(e.path.as_deref(), Some("resources.c65"));
    assert_eq!(
        e.message,
        "cond \"c65\" brings the PI-CV helper links to 66000 (1000 helper threads), over heir's limit of 65536"
    );
}

#[test]
fn names_over_the_limit() {
    let long = "n".repeat(300);
    let shown = format!("\"{}…\" (300 bytes)", "n".repeat(60));
    let msg = format!("the name {shown} is longer than heir's limit of 256 bytes");
    let e = err(&format!(r#"{{"tasks": {{"{long}": {{"run": 1}}}}}}"#));
    assert_eq!((e.line, e.column), (1, 12));
    assert_eq!(e.path, Some(format!("tasks[{shown}]")));
    assert_eq!(e.message, msg);
    let e = err(&one_task(&format!(r#""loop": 1, "lock": "{long}""#)));
    assert_eq!((e.column, e.path.as_deref()), (37, Some("tasks.A.lock")));
    assert_eq!(e.message, msg);
    let e = err(&one_task(&format!(
        r#""phases": {{"{long}": {{"run": 1}}}}"#
    )));
    assert_eq!(e.message, msg);
    let e = err(&format!(
        r#"{{"resources": {{"{long}": {{"type": "barrier"}}}}, "tasks": {{"A": {{"run": 1}}}}}}"#
    ));
    assert_eq!(e.message, msg);
    // 256 bytes is fine.
    let name = "n".repeat(256);
    ok(&format!(r#"{{"tasks": {{"{name}": {{"run": 1}}}}}}"#));
}

#[test]
fn a_file_over_the_limit() {
    let text = format!(
        "{{\"tasks\": {{\"A\": {{\"run\": 1}}}}}}{}",
        " ".repeat(MAX_FILE_BYTES)
    );
    let e = parse_str(&text, "big.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "big.json: the file is {} bytes, over heir's limit of 16777216 bytes (16 MiB)",
            text.len()
        )
    );
}

/// Each µs field with `value`, and where its value is.
fn time_fields(value: &str) -> Vec<(String, String)> {
    [
        (r#""delay": V, "run": 1"#, "tasks.A.delay", "delay"),
        (r#""run": V"#, "tasks.A.run", "run"),
        (r#""runtime": V"#, "tasks.A.runtime", "runtime"),
        (r#""sleep": V"#, "tasks.A.sleep", "sleep"),
        (
            r#""timer": {"ref": "t", "period": V}"#,
            "tasks.A.timer.period",
            "period",
        ),
        (r#""run": {"min": 1, "max": V}"#, "tasks.A.run.max", "max"),
        (r#""run": {"min": V, "max": V}"#, "tasks.A.run.min", "min"),
        (
            r#""phases": {"p": {"run": V}}"#,
            "tasks.A.phases.p.run",
            "run",
        ),
        (
            r#""policy": "SCHED_DEADLINE", "dl-runtime": V, "run": 1"#,
            "tasks.A.dl-runtime",
            "dl-runtime",
        ),
        (
            r#""policy": "SCHED_DEADLINE", "dl-runtime": 1, "dl-period": V, "run": 1"#,
            "tasks.A.dl-period",
            "dl-period",
        ),
    ]
    .iter()
    .map(|(body, path, what)| {
        let body = body.replace('V', value);
        let e = err(&one_task(&body));
        assert_eq!(e.path.as_deref(), Some(*path), "{body}");
        // The error is at the (first) value.
        assert_eq!(
            e.column as usize,
            one_task(&body).find(value).unwrap() + 1,
            "{body}"
        );
        (what.to_string(), e.message)
    })
    .collect()
}

#[test]
fn every_time_is_within_the_time_limit() {
    // Were: a 1000 µs run answered with response 0 (delay u64::MAX), a
    // simulation that never ends (a delay of 18446744073709551 µs and a
    // timer; a run of 9223372036854775807 µs).
    for value in [
        "18446744073709551615",
        "18446744073709551",
        "9223372036854775807",
        "8640000000001",
        "100000000000000000000000000000",
    ] {
        for (what, message) in time_fields(value) {
            assert_eq!(
                message,
                format!(
                    "{what} {value} µs is beyond heir's time limit of 8640000000000 µs (100 days)"
                )
            );
        }
    }
    // The limit itself is fine, everywhere.
    let s = ok(&one_task(
        r#""delay": 8640000000000, "run": 8640000000000, "sleep": {"min": 0, "max": 8640000000000},
           "timer": {"ref": "t", "period": 8640000000000}, "loop": 1"#,
    ));
    assert_eq!(s.tasks[0].delay_us, MAX_TIME_US);
    assert_eq!(
        kinds(&s, 0, 0)[0],
        EventKind::Run(Micros::Fixed(MAX_TIME_US))
    );
    // A call's run.
    let e = err(
        r#"{"tasks": {"C": {"call": {"server": "e", "run": 9000000000000}},
                 "S": {"serve": "e"}}}"#,
    );
    assert_eq!(e.path.as_deref(), Some("tasks.C.call.run"));
    assert_eq!(
        e.message,
        "run 9000000000000 µs is beyond heir's time limit of 8640000000000 µs (100 days)"
    );
}

#[test]
fn global_duration_obeys_the_time_limit() {
    let with =
        |d: &str| format!(r#"{{"global": {{"duration": {d}}}, "tasks": {{"A": {{"run": 1}}}}}}"#);
    for d in ["1e308", "8640000.5", "1e11", "99999999999999999999999"] {
        assert_eq!(
            err_str(&with(d)),
            format!(
                "t.json:1:25: at global.duration: duration {d} s is beyond heir's time limit of 8640000 s (100 days)"
            )
        );
        // The same words as `--duration` (heir-cli's parse_seconds).
        assert_eq!(err(&with(d)).message, beyond_time_limit_s("duration", d));
    }
    assert_eq!(ok(&with("8640000")).global.duration_s, Some(8_640_000.0));
    // -1 and negative values keep their meaning and message.
    assert_eq!(ok(&with("-1")).global.duration_s, None);
    assert_eq!(
        err(&with("-1e308")).message,
        "expected seconds (a number ≥ 0), or -1 for no limit, found -1e308"
    );
}
