//! Issue 7: inputs that aborted, hung or answered wrong now exit 2 with the
//! position, the JSON path and the limit or the mistake — and `heir sim`,
//! `heir run` and `heir analyze` say exactly the same thing, since they read
//! the file the same way. Nothing is printed on stdout, no file is written.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::*;

/// Runs `heir CMD FILE` for sim, run and analyze and checks that each exits
/// 2, prints nothing on stdout, and gives the same one-line error; returns
/// it (without `heir: error: `).
fn refused_everywhere(file: &Path) -> String {
    let mut errors = Vec::new();
    let dir = file.parent().expect("a directory");
    let (trace, svg) = (dir.join("out.json"), dir.join("out.svg"));
    for cmd in ["sim", "run", "analyze"] {
        let start = Instant::now();
        let o = if cmd == "sim" {
            heir([
                cmd.as_ref(),
                file.as_os_str(),
                "--trace".as_ref(),
                trace.as_os_str(),
                "--svg".as_ref(),
                svg.as_os_str(),
            ])
        } else {
            heir([cmd.as_ref(), file.as_os_str()])
        };
        assert!(
            !trace.exists() && !svg.exists(),
            "heir {cmd}: no output file"
        );
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "heir {cmd}: {err}");
        assert_eq!(stdout(&o), "", "heir {cmd}: nothing on stdout");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "heir {cmd} took {:?}",
            start.elapsed()
        );
        let line = err
            .strip_prefix("heir: error: ")
            .unwrap_or_else(|| panic!("heir {cmd}: {err}"))
            .trim_end()
            .to_string();
        assert!(!line.contains('\n'), "heir {cmd}: one line: {err}");
        errors.push(line);
    }
    assert_eq!(errors[0], errors[1], "sim and run differ");
    assert_eq!(errors[0], errors[2], "sim and analyze differ");
    errors.swap_remove(0)
}

fn refused(tag: &str, text: &str) -> String {
    let dir = TempDir::new(tag);
    let file = dir.write("s.json", text);
    let err = refused_everywhere(&file);
    assert_eq!(dir.files(), ["s.json"]);
    err.replace(&file.display().to_string(), "s.json")
}

/// Runs `heir CMD s.json` on `text`, expecting exit 2 and one line on
/// stderr; returns it (without `heir: error: `, the file named `s.json`).
fn refused_by(cmd: &str, tag: &str, text: &str) -> String {
    let dir = TempDir::new(tag);
    let file = dir.write("s.json", text);
    let o = heir([cmd.as_ref(), file.as_os_str()]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "heir {cmd}: {err}");
    assert_eq!(stdout(&o), "", "heir {cmd}: nothing on stdout");
    err.strip_prefix("heir: error: ")
        .unwrap_or_else(|| panic!("heir {cmd}: {err}"))
        .trim_end()
        .replace(&file.display().to_string(), "s.json")
}

#[test]
fn a_huge_instance_count_is_refused_not_allocated() {
    // Was: "memory allocation of 103079215080 bytes failed", SIGABRT. Each
    // face has its limit: heir run's real threads, what the machine's
    // memory holds for heir sim and heir analyze.
    let text =
        r#"{"global": {"duration": 1}, "tasks": {"A": {"instance": 4294967295, "run": 1000}}}"#;
    assert_eq!(
        refused_by("run", "instance-run", text),
        "s.json:1:57: at tasks.A.instance: instance 4294967295 is over heir run's limit of 1024 threads"
    );
    for face in ["sim", "analyze"] {
        let err = refused_by(face, "instance-model", text);
        let head = format!(
            "s.json:1:57: at tasks.A.instance: instance 4294967295 is over heir {face}'s limit of "
        );
        assert!(err.starts_with(&head), "{err}");
        // From memory, unless the machine holds heir's fixed maximum.
        assert!(
            err.contains("4294967295 threads would need about ")
                || err.ends_with("limit of 16777216 threads"),
            "{err}"
        );
    }
}

#[test]
fn each_face_has_its_thread_limit() {
    // 1025 threads: over heir run's limit, at the task that passes it...
    let text = r#"{"global": {"duration": 0.01}, "tasks": {"A": {"instance": 1000, "priority": 10, "cpus": [0], "timer": {"ref": "t", "period": 10000}, "run": 1},
        "B": {"instance": 25, "run": 1, "priority": 5, "cpus": [0], "timer": {"ref": "u", "period": 10000}}}}"#;
    assert_eq!(
        refused_by("run", "threads-run", text),
        "s.json:2:27: at tasks.B.instance: task \"B\" brings the threads to 1025 in all, \
         over heir run's limit of 1024 threads"
    );
    // ... and analyze --compare --real, which runs real threads too.
    let dir = TempDir::new("threads-model");
    let file = dir.write("s.json", text);
    let o = heir([
        "analyze".as_ref(),
        file.as_os_str(),
        "--compare".as_ref(),
        "--real".as_ref(),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("over heir analyze --real's limit of 1024 threads"),
        "{}",
        stderr(&o)
    );
    // Simulated and analysed.
    for args in [
        &["sim", "--json"][..],
        &["analyze", "--json"],
        &["analyze", "--compare", "--json"],
    ] {
        let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        all.insert(1, file.as_os_str());
        let o = heir(all);
        assert_eq!(code(&o), 0, "heir {args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_huge_cpu_number_is_refused_not_allocated() {
    // Was: SIGABRT (4294967295); 13.7 GB and over 60 s (10000000).
    for cpu in ["4294967295", "10000000"] {
        assert_eq!(
            refused(
                "cpu",
                &format!(r#"{{"global": {{"duration": 1}}, "tasks": {{"A": {{"cpus": [{cpu}], "run": 1000}}}}}}"#)
            ),
            format!(
                "s.json:1:54: at tasks.A.cpus[0]: CPU {cpu} is over heir's limit: CPU numbers go from 0 to 1023 (1024 CPUs)"
            )
        );
    }
}

#[test]
fn times_near_the_u64_limit_are_refused() {
    // Were: a hang (delay with a timer), a hang past 1.5 GB (phase run), and
    // "a 1000 µs run with response 0" (delay u64::MAX).
    for (body, at) in [
        (
            r#""delay": 18446744073709551, "run": 1000, "timer": {"ref": "t", "period": 1000}"#,
            "1:54: at tasks.A.delay: delay 18446744073709551",
        ),
        (
            r#""phases": {"p": {"run": 9223372036854775807}}"#,
            "1:69: at tasks.A.phases.p.run: run 9223372036854775807",
        ),
        (
            r#""delay": 18446744073709551615, "run": 1000"#,
            "1:54: at tasks.A.delay: delay 18446744073709551615",
        ),
    ] {
        let text = format!(r#"{{"global": {{"duration": 1}}, "tasks": {{"A": {{{body}}}}}}}"#);
        assert_eq!(
            refused("time", &text),
            format!("s.json:{at} µs is beyond heir's time limit of 8640000000000 µs (100 days)")
        );
    }
}

#[test]
fn global_duration_and_the_duration_flag_obey_one_rule() {
    // Was: global.duration 1e308 accepted, --duration 1e11 refused with
    // "expected seconds as a positive number (at least 1 µs)".
    assert_eq!(
        refused(
            "duration",
            r#"{"global": {"duration": 1e11}, "tasks": {"A": {"run": 1000}}}"#
        ),
        "s.json:1:25: at global.duration: duration 1e11 s is beyond heir's time limit of 8640000 s (100 days)"
    );
    let file = example("table1-client-server.json");
    for cmd in ["sim", "run"] {
        let o = heir([
            cmd.as_ref(),
            file.as_os_str(),
            "--duration".as_ref(),
            "1e11".as_ref(),
        ]);
        assert_eq!(code(&o), 2);
        assert_eq!(stdout(&o), "");
        assert!(
            stderr(&o).contains(
                "invalid value '1e11' for '--duration <S>': duration 1e11 s is beyond heir's time limit of 8640000 s (100 days)"
            ),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn program_mistakes_get_the_same_verdict_on_every_face() {
    // Was, from heir run: exit 1, "runtime: the calling thread does not own
    // the mutex: the calling thread does not own the mutex", no path.
    assert_eq!(
        refused(
            "unlock",
            r#"{"global": {"duration": 1}, "tasks": {"A": {"run": 1000, "unlock": "m"}}}"#
        ),
        "s.json:1:58: at tasks.A.unlock: task \"A\" unlocks mutex \"m\", which it does not hold at this point: lock \"m\" before the unlock"
    );
    // Was: "thread A releases mutex m which it does not hold".
    assert_eq!(
        refused(
            "wait",
            r#"{"global": {"duration": 1}, "tasks": {"A": {"run": 1000, "wait": {"ref": "c", "mutex": "m"}}}}"#
        ),
        "s.json:1:58: at tasks.A.wait: task \"A\" waits on cond \"c\" with mutex \"m\", which it does not hold at this point: lock \"m\" before the wait"
    );
    // Was, from heir run: 10 million zero-length jobs a second at FIFO 10.
    assert_eq!(
        refused(
            "zero",
            r#"{"global": {"duration": 1, "default_policy": "SCHED_FIFO"}, "tasks": {"A": {"run": 0}}}"#
        ),
        "s.json:1:71: at tasks.A: task \"A\" never lets time pass: none of its events takes time or can block, and it loops forever (the simulator would spin at one instant, heir run would busy-loop): give it a \"run\", \"runtime\", \"sleep\" or \"timer\" of more than 0 µs"
    );
}

#[test]
fn invalid_utf8_has_a_position() {
    // Was: "cannot read s.json: stream did not contain valid UTF-8".
    let dir = TempDir::new("utf8");
    let file = dir.join("s.json");
    std::fs::write(
        &file,
        b"{\"tasks\": {\n  \"A\": {\"run\": 1000, \"lock\": \"\xe9t\xe9\"}}}",
    )
    .unwrap();
    assert_eq!(
        refused_everywhere(&file).replace(&file.display().to_string(), "s.json"),
        "s.json:2:31: at tasks.A.lock: invalid UTF-8 (byte 0xE9): a scenario file is UTF-8 text"
    );
}

#[test]
fn a_one_megabyte_key_is_cut() {
    // Was: a 1,000,465-byte message.
    let key = "k".repeat(1_000_000);
    let err = refused(
        "key",
        &format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"A": {{"run": 1000, "{key}": 1}}}}}}"#
        ),
    );
    let shown = format!("\"{}…\" (1000000 bytes)", "k".repeat(60));
    assert!(
        err.starts_with(&format!(
            "s.json:1:58: at tasks.A[{shown}]: unknown key {shown} in task \"A\""
        )),
        "{err}"
    );
    assert!(err.len() < 1000, "{} bytes", err.len());
}

#[test]
fn sim_states_its_cpu_count() {
    let dir = TempDir::new("cpus");
    let file = dir.write(
        "s.json",
        r#"{"global": {"duration": 1}, "tasks": {"A": {"cpus": [7], "run": 1000}}}"#,
    );
    // Without --cpus: 1 + the highest CPU named, shown in the report.
    let o = heir(["sim".as_ref(), file.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o).lines().next(),
        Some(
            format!(
                "{}: mode sim, simulated 1.000 s on 8 CPUs, seed 0, pi_cv on",
                file.display()
            )
            .as_str()
        )
    );
    let o = heir([
        "sim".as_ref(),
        file.as_os_str(),
        "--json".as_ref(),
        "--cpus".as_ref(),
        "12".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(one_json(&o)["cpus"], 12);
    // Too few: refused at the task, with its position; no file written.
    let o = heir([
        "sim".as_ref(),
        file.as_os_str(),
        "--cpus".as_ref(),
        "4".as_ref(),
        "--trace".as_ref(),
        dir.join("t.json").as_os_str(),
    ]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o), "");
    assert_eq!(dir.files(), ["s.json"]);
    assert_eq!(
        stderr(&o),
        format!(
            "heir: error: {}:1:39: at tasks.A: cannot simulate: task A runs on CPU 7, but the simulation has 4 CPUs (--cpus 4): CPU numbers go from 0 to 3\n",
            file.display()
        )
    );
    for bad in ["0", "1025", "-1", "two"] {
        let o = heir([
            "sim".as_ref(),
            file.as_os_str(),
            "--cpus".as_ref(),
            bad.as_ref(),
        ]);
        assert_eq!(code(&o), 2, "{bad}");
        assert_eq!(stdout(&o), "", "{bad}");
    }
    // analyze --compare simulates with it too.
    let o = heir([
        "analyze".as_ref(),
        example("table1-client-server.json").as_os_str(),
        "--compare".as_ref(),
        "--cpus".as_ref(),
        "2".as_ref(),
        "--duration".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn sched_deadline_is_simulated_and_its_server_reported() {
    // Was refused ("SCHED_DEADLINE is not simulated yet"). 50 µs of work
    // on a 100 µs budget every 1 ms, for 1 s: 1000 jobs, never throttled.
    let dir = TempDir::new("dl");
    let file = dir.write(
        "s.json",
        "{\"global\": {\"duration\": 1},\n \"tasks\": {\n  \"D\": {\"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 100, \"dl-period\": 1000, \"run\": 50, \"timer\": {\"ref\": \"t\", \"period\": 1000}}}}",
    );
    let o = heir(["sim".as_ref(), file.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with("\ndeadline servers: D throttled 0, replenished 0\n"),
        "{}",
        stdout(&o)
    );
    let o = heir(["sim".as_ref(), file.as_os_str(), "--json".as_ref()]);
    let r = one_json(&o);
    assert_eq!(r["tasks"]["D"]["jobs"], 1000);
    assert_eq!(r["tasks"]["D"]["server"]["throttled"], 0);
}

#[test]
fn a_run_past_the_time_limit_is_an_error_not_a_hang() {
    // Was: "no simulated time passes … at 18446744073709550 µs" after the
    // clock saturated.
    let dir = TempDir::new("horizon");
    let file = dir.write(
        "s.json",
        r#"{"global": {"default_policy": "SCHED_FIFO"}, "tasks": {"A": {"loop": 1000000000, "run": 1000000000}}}"#,
    );
    let o = heir(["sim".as_ref(), file.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        format!(
            "heir: error: {}: cannot simulate: global.duration: simulated time would pass heir's time limit of 8640000 s (100 days) before every task ends: set global.duration or pass --duration\n",
            file.display()
        )
    );
}
