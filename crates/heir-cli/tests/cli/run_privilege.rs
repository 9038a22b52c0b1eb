//! `heir run` without the privilege to set real-time priorities: a clear
//! message and exit code 2, nothing on stdout. The privilege is dropped with
//! util-linux's `setpriv` (root without CAP_SYS_NICE may not use SCHED_FIFO
//! beyond RLIMIT_RTPRIO, which is 0 by default).

use std::process::Command;

use crate::support::*;

/// Runs `heir ARGS` with CAP_SYS_NICE dropped, or `None` (with the reason
/// printed) where that cannot be arranged here. Under `CI=true` the CI
/// machines are root with setpriv, so not being able to is a failure.
fn heir_without_sys_nice(args: &[&str]) -> Option<std::process::Output> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    let root = String::from_utf8_lossy(&uid.stdout).trim() == "0";
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !(root && setpriv) {
        let why = format!("needs root and setpriv (root: {root}, setpriv: {setpriv})");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    }
    Command::new("setpriv")
        .args(["--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--"])
        .arg(env!("CARGO_BIN_EXE_heir"))
        .args(args)
        .output()
        .ok()
}

#[test]
fn run_without_rt_privilege_exits_2_with_the_reason() {
    let file = example("fig6-producer-consumer.json");
    let Some(o) = heir_without_sys_nice(&["run", file.to_str().unwrap(), "--duration", "1"]) else {
        return;
    };
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.contains("no permission to set SCHED_FIFO"), "{err}");
    assert!(err.contains("CAP_SYS_NICE"), "{err}");
}

#[test]
fn demo_without_rt_privilege_shows_the_simulation_only() {
    let dir = TempDir::new("demo-nopriv");
    let out = dir.join("out");
    let Some(o) = heir_without_sys_nice(&[
        "demo",
        "--json",
        "--real-seconds",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]) else {
        return;
    };
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Said once, what and why, and no "running on real threads" before it.
    assert_eq!(
        stderr(&o),
        format!("heir demo: no real-threads run: {NO_PERMISSION}; the report page has the simulation and the analysis only\n")
    );
    let r = one_json(&o);
    assert_eq!(r["runs"].as_array().map(Vec::len), Some(2));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(page.matches("No real run").count(), 1, "{page}");
    assert!(
        page.contains(&format!("No real run: {NO_PERMISSION}.")),
        "{page}"
    );
}

/// heir-rt's reason when real-time priorities are refused.
const NO_PERMISSION: &str =
    "no permission to set SCHED_FIFO (run as root, or grant CAP_SYS_NICE / RLIMIT_RTPRIO)";

#[test]
fn report_without_rt_privilege_says_once_that_the_real_runs_are_skipped() {
    let dir = TempDir::new("report-nopriv");
    let page = dir.join("r.html");
    let file = example("table1-client-server.json");
    let Some(o) = heir_without_sys_nice(&[
        "report",
        file.to_str().unwrap(),
        "--real",
        "1",
        "-o",
        page.to_str().unwrap(),
    ]) else {
        return;
    };
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("heir report: no real-threads run: {NO_PERMISSION}; the report page has the simulation and the analysis only\n")
    );
    assert_eq!(stdout(&o), format!("wrote {}\n", page.display()));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("No real run").count(), 1, "{html}");
    assert!(
        html.contains(&format!("No real run: {NO_PERMISSION}.")),
        "{html}"
    );
}

/// Two SCHED_OTHER threads share a PI mutex: Low (nice 10) holds it for
/// 3 ms of every 10 ms, High (nice 0) wants it 1 ms into each period, and
/// heir-rt boosts Low to nice 0 — which takes CAP_SYS_NICE. No real-time
/// priority is involved, so the run goes ahead without the privilege.
const NICE_BOOST: &str = r#"{
  "global" : { "duration" : 0.5, "default_policy" : "SCHED_OTHER", "pi_enabled" : true },
  "tasks" : {
    "Low" : { "priority" : 10, "cpus" : [0], "lock" : "m", "run" : 3000, "unlock" : "m",
              "timer" : { "ref" : "unique", "period" : 10000 } },
    "High" : { "priority" : 0, "cpus" : [0], "delay" : 1000, "lock" : "m", "run" : 100,
               "unlock" : "m", "timer" : { "ref" : "unique", "period" : 10000 } }
  }
}
"#;

#[test]
fn boosts_the_kernel_refuses_are_reported_in_the_table_and_the_json() {
    let _rt = rt_serial("run_privilege::refused_boosts");
    let dir = TempDir::new("refused-boosts");
    let file = dir.write("nice.json", NICE_BOOST);
    let file = file.to_str().unwrap();
    let Some(o) = heir_without_sys_nice(&["run", file]) else {
        return;
    };
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("heir run: "))
        .unwrap_or_else(|| panic!("no line about the refused boosts: {out}"));
    assert!(line.contains(" failed (last: EPERM on Low, tid "), "{line}");
    assert!(line.contains(" sched_setattr call"), "{line}");

    let Some(o) = heir_without_sys_nice(&["run", file, "--json"]) else {
        return;
    };
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = one_json(&o);
    assert_eq!(
        keys(&r),
        [
            "mode",
            "duration_us",
            "tasks",
            "deadlock",
            "disturbance",
            "apply",
            "calibration"
        ]
    );
    let a = &r["apply"];
    assert!(a["setattr_errors"].as_u64().unwrap() >= 1, "{a}");
    assert_eq!(a["last_setattr_error"]["name"], "EPERM", "{a}");
    assert_eq!(a["last_setattr_error"]["errno"], 1, "EPERM: {a}");
    assert_eq!(a["last_setattr_error"]["thread"], "Low", "{a}");
    assert!(a["last_setattr_error"]["tid"].as_i64().unwrap() > 0, "{a}");
    assert_eq!(a["unexpressible"], 0, "{a}");
}
