//! `heir run` with `SCHED_DEADLINE` tasks (issue 9): deadline threads run
//! with the file's reservations, the table shows them, and a task the
//! kernel's admission control refuses is named with its runtime, period and
//! the free bandwidth (exit 2, nothing on stdout).

use crate::support::*;

/// Deadline tasks allowed on every CPU this test may use: a deadline thread
/// must be allowed on its whole root domain.
fn all_cpus() -> String {
    let cpus: Vec<String> = heir::sys::allowed_cpus()
        .iter()
        .map(u32::to_string)
        .collect();
    cpus.join(", ")
}

#[test]
fn deadline_tasks_run_and_show_their_reservations() {
    let Some(_rt) = rt_or_skip("deadline::run") else {
        return;
    };
    let dir = TempDir::new("dl-run");
    let file = dir.write(
        "dl.json",
        &format!(
            r#"{{ "global": {{ "duration": 0.2 }},
  "tasks": {{
    "D": {{ "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-deadline": 8000,
            "dl-period": 10000, "cpus": [{}],
            "timer": {{ "ref": "t", "period": 10000 }}, "run": 500 }} }} }}"#,
            all_cpus()
        ),
    );
    let o = heir(["run".as_ref(), file.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.starts_with("D "))
        .unwrap_or_else(|| panic!("no row for D: {out}"));
    assert!(row.contains("SCHED_DEADLINE/2000:8000:10000"), "{row}");
    let jobs: u64 = row
        .split_whitespace()
        .nth(2)
        .expect("jobs")
        .parse()
        .expect("a count");
    assert!(jobs >= 10, "D released every 10 ms for 200 ms: {row}");
}

#[test]
fn a_task_admission_refuses_is_named_with_its_reservation_and_the_free_bandwidth() {
    let Some(_rt) = rt_or_skip("deadline::admission") else {
        return;
    };
    // Each instance asks 0.95 of a CPU: one more than the CPUs can take
    // (each CPU's capacity is sched_rt_runtime_us / sched_rt_period_us, at
    // most 1, less what the fair servers and other programs hold).
    let n = heir::sys::allowed_cpus().len() + 1;
    let dir = TempDir::new("dl-admission");
    let file = dir.write(
        "dl.json",
        &format!(
            r#"{{ "global": {{ "duration": 0.1 }},
  "tasks": {{
    "Big": {{ "policy": "SCHED_DEADLINE", "dl-runtime": 95000, "dl-period": 100000,
              "instance": {n}, "cpus": [{}], "run": 100 }} }} }}"#,
            all_cpus()
        ),
    );
    let o = heir(["run".as_ref(), file.as_os_str()]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert_eq!(stdout(&o), "");
    assert!(err.contains(": cannot run: task Big-"), "{err}");
    assert!(
        err.contains(
            "SCHED_DEADLINE runtime 95000 µs every 100000 µs (0.950 CPU) is not admitted: "
        ),
        "{err}"
    );
    assert!(
        err.contains(" CPU of deadline bandwidth is free on CPUs ["),
        "{err}"
    );
    assert!(err.contains("EBUSY"), "{err}");
}
