//! Error messages (issue 7, item 6): long keys, strings and numbers are cut;
//! bytes that are not UTF-8 are reported at their line and column.

use heir_scenario::{load, parse_bytes};

use crate::common::*;

/// `"xxx…" (N bytes)`: the first 60 characters and the length.
fn cut(c: char, n: usize) -> String {
    format!("\"{}…\" ({n} bytes)", c.to_string().repeat(60))
}

#[test]
fn a_one_megabyte_key_is_cut_in_the_message_and_the_path() {
    // Was: a 1,000,465-byte message.
    let key = "k".repeat(1_000_000);
    let e = err_str(&one_task(&format!(r#""run": 1, "{key}": 1"#)));
    let shown = cut('k', 1_000_000);
    assert_eq!(
        e,
        format!(
            "t.json:1:28: at tasks.A[{shown}]: unknown key {shown} in task \"A\": expected a property \
             (instance, loop, delay, policy, priority, cpus, dl-runtime, dl-period, dl-deadline, \
             util_min, util_max, nodes_membind, phases, passive) or an event (lock, unlock, wait, signal, broad, \
             sync, sleep, runtime, run, timer, suspend, resume, yield, barrier, push, pop, call, serve, gang_run, gang_wait, gang_notify, gang_insert, gang_remove, gang_active, gang_passive; \
             a suffix is allowed, as in run1)"
        )
    );
    assert!(e.len() < 1000, "{} bytes", e.len());
}

#[test]
fn long_keys_of_events_are_cut_in_paths() {
    // A key of 61 characters is an event with a long suffix: its path is cut.
    let key = format!("run{}", "x".repeat(58));
    let s = ok(&one_task(&format!(r#""{key}": 5"#)));
    let ev = &s.tasks[0].phases[0].events[0];
    assert_eq!(ev.key, key);
    assert_eq!(
        ev.path,
        format!("tasks.A[\"run{}…\" (61 bytes)]", "x".repeat(57))
    );
    // 60 characters are shown in full.
    let key = format!("run{}", "x".repeat(57));
    let s = ok(&one_task(&format!(r#""{key}": 5"#)));
    assert_eq!(
        s.tasks[0].phases[0].events[0].path,
        format!("tasks.A.{key}")
    );
}

#[test]
fn long_strings_and_numbers_are_cut_in_values() {
    let e = err_str(&one_task(&format!(
        r#""policy": "{}", "run": 1"#,
        "P".repeat(5000)
    )));
    assert!(
        e.starts_with("t.json:1:28: at tasks.A.policy: unknown policy "),
        "{e}"
    );
    assert!(e.contains(&cut('P', 5000)), "{e}");
    assert!(e.len() < 400, "{} bytes: {e}", e.len());

    let digits = "7".repeat(100_000);
    let e = err_str(&one_task(&format!(r#""priority": {digits}, "run": 1"#)));
    assert_eq!(
        e,
        format!(
            "t.json:1:30: at tasks.A.priority: expected a priority (an integer), found {}… (100000 bytes)",
            "7".repeat(60)
        )
    );
    let e = err_str(&one_task(&format!(r#""run": -{digits}"#)));
    assert!(
        e.ends_with(&format!("found -{}… (100001 bytes)", "7".repeat(59))),
        "{e}"
    );
}

#[test]
fn invalid_utf8_is_reported_at_its_line_and_column() {
    // Was: "stream did not contain valid UTF-8", with no position.
    let text = b"{\n  \"tasks\": {\n    \"A\": { \"lock\": \"m\xff\", \"run\": 1 }\n  }\n}\n";
    let e = parse_bytes(text, "t.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:3:22: at tasks.A.lock: invalid UTF-8 (byte 0xFF): a scenario file is UTF-8 text"
    );
    // In a key: the path is the object's.
    let e = parse_bytes(b"{\"tasks\": {\"A\xc3(\": {}}}", "t.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:1:14: at tasks: invalid UTF-8 (byte 0xC3): a scenario file is UTF-8 text"
    );
    // A character cut short at the end of the file.
    let e = parse_bytes(b"{\"tasks\": 1} \xe2\x82", "t.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:1:14: invalid UTF-8 (bytes 0xE2 0x82): a scenario file is UTF-8 text"
    );
    // In a comment.
    let e = parse_bytes(b"{ /* caf\xe9 */ \"tasks\": 1}", "t.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:1:9: invalid UTF-8 (byte 0xE9): a scenario file is UTF-8 text"
    );
    // A syntax error before the bad byte comes first.
    let e = parse_bytes(b"{\"tasks\" 1, \"x\": \"\xff\"}", "t.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:1:9: expected ':' after key \"tasks\", found '1'"
    );
    // Valid UTF-8 reads as parse_str does.
    let s = parse_bytes("{\"tasks\": {\"é\": {\"run\": 1}}}".as_bytes(), "t.json").unwrap();
    assert_eq!(s.tasks[0].name, "é");
}

#[test]
fn load_reports_invalid_utf8_and_unreadable_files() {
    let dir = std::env::temp_dir().join(format!("heir-scenario-msg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.json");
    std::fs::write(&file, b"{\"tasks\": {\"A\": {\"run\": 1, \"x\xff\": 2}}}").unwrap();
    let e = load(&file).unwrap_err();
    assert_eq!((e.line, e.column), (1, 30));
    assert_eq!(
        e.message,
        "invalid UTF-8 (byte 0xFF): a scenario file is UTF-8 text"
    );
    let missing = dir.join("missing.json");
    let e = load(&missing).unwrap_err();
    assert_eq!((e.line, e.column), (0, 0));
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}: cannot read: ", missing.display())),
        "{shown}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
