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
    assert!(stderr(&o).contains("no real-threads run"), "{}", stderr(&o));
    let r = one_json(&o);
    assert_eq!(r["runs"].as_array().map(Vec::len), Some(2));
}
