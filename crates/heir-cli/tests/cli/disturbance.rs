//! `heir run` measures what took its CPUs (issue 21): a `SCHED_FIFO` 99
//! busy loop started in the middle of a run, and ordinary busy loops the
//! kernel's fair server runs ahead of a `SCHED_FIFO` thread, are named with
//! the time they took, per job and per task, in the text, `--json` and
//! the Gantt chart; a job still pending past its deadline at the end is a
//! miss. The disturbers are threads of this test process (so they can be
//! bounded and named): to `heir run` they are another program.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// The CPU the runs below use: the machine's last (the file's CPU number,
/// `--placement as-written`).
fn run_cpu() -> u32 {
    // The CPU with the least real-time load of other programs (surveyed
    // for 50 ms; the highest numbered among equals): another program's
    // real-time loop on a CPU would disturb every attempt of a run there.
    let cpus = heir::sys::allowed_cpus();
    let survey = heir_runner::cpus::Survey::take(&cpus, 50_000_000);
    heir_runner::cpus::quietest(&cpus, &survey).unwrap_or(cpus[cpus.len() - 1])
}

/// Spawns a thread named `name`, pinned to `cpu` with `attr`, that spins
/// until `stop` or `limit` (every busy loop is bounded), after waiting for
/// `go` to be set.
fn spinner(
    name: &str,
    cpu: u32,
    attr: heir::sys::SchedAttr,
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    limit: Duration,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            heir::sys::set_affinity(0, &[cpu]).expect("pin the spinner");
            while !go.load(Ordering::Acquire) && !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            heir::sys::sched_setattr(heir::sys::gettid(), &attr).expect("the spinner's policy");
            let end = Instant::now() + limit;
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                std::hint::spin_loop();
            }
            // Alive (asleep, its policy kept) until the run is over: heir
            // names what it finds in /proc after the run.
            let bound = Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::Acquire) && Instant::now() < bound {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = heir::sys::sched_setattr(heir::sys::gettid(), &heir::sched::other(0));
        })
        .expect("spawn the spinner")
}

/// `heir run FILE --placement as-written --json [--svg SVG]` in a child
/// process; `during` runs meanwhile, once the child's run has begun (its
/// task's thread exists: the threads start just before the run's time 0).
fn run_with(
    file: &Path,
    svg: Option<&Path>,
    task: &str,
    during: impl FnOnce(),
) -> (i32, Value, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_heir"));
    cmd.args(["run".as_ref(), file.as_os_str()])
        .args(["--placement", "as-written", "--json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(s) = svg {
        cmd.args(["--svg".as_ref(), s.as_os_str()])
            .args(["--svg-span", "1500"]);
    }
    let child = cmd.spawn().expect("spawn heir run");
    let pid = child.id();
    // The task's thread appears (named after the task) when the run is
    // about to start; the bound covers calibration on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(30);
    let started = loop {
        let named = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten().any(|e| {
                    std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == task)
                })
            })
            .unwrap_or(false);
        if named || Instant::now() > deadline {
            break named;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if started {
        during();
    }
    let o = child.wait_with_output().expect("heir run");
    assert!(
        started,
        "heir run's thread {task} never appeared: {}",
        stderr(&o)
    );
    let err = stderr(&o);
    (code(&o), one_json(&o), err)
}

/// A `SCHED_FIFO` 99 loop on the run's CPU from about 300 ms into a 1.5 s
/// run, for 300 ms: the periodic task loses about that much, in the jobs
/// released meanwhile, and the run names the loop (its tid, its name, its
/// class and priority), marks the task's displaced spans in the Gantt
/// chart and says so on stderr.
#[test]
fn a_fifo_99_loop_started_mid_run_is_measured_and_named() {
    let Some(_rt) = rt_or_skip("disturbance::fifo_99") else {
        return;
    };
    let cpu = run_cpu();
    let dir = TempDir::new("dist-fifo");
    let file = dir.write(
        "periodic.json",
        &format!(
            r#"{{ "global": {{ "default_policy": "SCHED_FIFO", "duration": 1.5 }},
  "tasks": {{ "P": {{ "priority": 50, "cpus": [{cpu}], "run": 1000, "timer": {{ "ref": "t", "period": 10000 }} }} }} }}"#
        ),
    );
    let svg = dir.join("run.svg");
    let go = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let hog = spinner(
        "heir-test-hog",
        cpu,
        heir::sched::fifo(99),
        go.clone(),
        stop.clone(),
        Duration::from_millis(300),
    );
    let (rc, v, err) = run_with(&file, Some(&svg), "P", || {
        std::thread::sleep(Duration::from_millis(300));
        go.store(true, Ordering::Release);
    });
    stop.store(true, Ordering::Release);
    hog.join().expect("the hog");
    assert_eq!(rc, 0, "{err}");
    let d = &v["disturbance"];
    assert_eq!(d["measured"], true, "{d}");
    let by = d["by"].as_array().expect("disturbers");
    let hog = by
        .iter()
        .find(|b| b["comm"] == "heir-test-hog")
        .unwrap_or_else(|| panic!("the hog is not named: {d}"));
    assert_eq!(hog["class"], "rt", "{hog}");
    assert!(
        hog["what"].as_str().is_some_and(|w| w.ends_with(" 99")),
        "{hog}"
    );
    assert_eq!(hog["pid"], std::process::id(), "{hog}");
    // It held the CPU for up to 300 ms (RT throttling may cut it short by
    // 5 %; the run may end first on a slow start): at least 100 ms of it
    // fell on P's jobs, and no more than the loop lasted.
    let lost = hog["lost_ms"].as_f64().expect("lost_ms");
    assert!((100.0..=310.0).contains(&lost), "{hog}");
    assert!(hog["jobs"].as_u64().expect("jobs") >= 1, "{hog}");
    let p = &v["tasks"]["P"]["disturbance"];
    assert!(
        p["lost_ms"].as_f64().expect("P lost") >= lost - 0.001,
        "{p}"
    );
    assert!(p["jobs"].as_u64().expect("P jobs") >= 1, "{p}");
    assert!(
        p["by"]
            .as_array()
            .is_some_and(|a| a.iter().any(|b| b["comm"] == "heir-test-hog")),
        "{p}"
    );
    assert!(err.contains("the run was disturbed"), "{err}");
    assert!(err.contains("heir-test-hog"), "{err}");
    let svg = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(
        svg.contains(r#"class="displaced""#),
        "no displaced span drawn"
    );
}

/// Two ordinary busy loops on the CPU of a `SCHED_FIFO` task that runs
/// 1.5 s without sleeping: once they have starved long enough, the
/// kernel's fair server (Linux 6.12 and later) runs them ahead of it for
/// its runtime (by default 50 ms a second): the run names them as run by
/// the fair server, and says which fair-server setting it met.
#[test]
fn ordinary_loops_ahead_of_fifo_are_the_fair_server() {
    let Some(_rt) = rt_or_skip("disturbance::fair_server") else {
        return;
    };
    if !fair_server_kernel() {
        eprintln!("disturbance::fair_server: SKIPPED: a kernel before 6.12 has no fair server");
        return;
    }
    let cpu = run_cpu();
    let dir = TempDir::new("dist-fair");
    let file = dir.write(
        "long.json",
        &format!(
            r#"{{ "global": {{ "default_policy": "SCHED_FIFO", "duration": 2.5 }},
  "tasks": {{ "hot": {{ "priority": 50, "cpus": [{cpu}], "loop": 1, "run": 1500000 }} }} }}"#
        ),
    );
    let go = Arc::new(AtomicBool::new(true));
    let stop = Arc::new(AtomicBool::new(false));
    let loops: Vec<_> = (0..2)
        .map(|i| {
            spinner(
                &format!("heir-test-loop{i}"),
                cpu,
                heir::sched::other(0),
                go.clone(),
                stop.clone(),
                Duration::from_secs(60),
            )
        })
        .collect();
    let (rc, v, err) = run_with(&file, None, "hot", || {});
    stop.store(true, Ordering::Release);
    for l in loops {
        l.join().expect("a loop");
    }
    assert_eq!(rc, 0, "{err}");
    let d = &v["disturbance"];
    assert_eq!(d["measured"], true, "{d}");
    let ours: Vec<&Value> = d["by"]
        .as_array()
        .expect("disturbers")
        .iter()
        .filter(|b| {
            b["comm"]
                .as_str()
                .is_some_and(|c| c.starts_with("heir-test-loop"))
        })
        .collect();
    assert!(!ours.is_empty(), "the loops are not named: {d}");
    for b in &ours {
        assert_eq!(b["class"], "fair_server", "{b}");
    }
    // The fair server's runtime went to them (50 ms by default; at least
    // a few ms whatever its setting, as it did run them).
    let lost: f64 = ours.iter().filter_map(|b| b["lost_ms"].as_f64()).sum();
    assert!(lost >= 2.0, "{d}");
    let cpu_key = cpu.to_string();
    let fair = &d["fair_server"][cpu_key.as_str()];
    assert!(
        fair.get("runtime_ms").is_some() || fair.get("unknown").is_some(),
        "the fair server's setting is not stated: {d}"
    );
}

/// Linux 6.12 or later (the fair server).
fn fair_server_kernel() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(['.', '-']);
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 12)
}

/// A task starved by a more urgent one from 100 ms to the end of the run:
/// its job released at 100 ms never completes, and its deadline (110 ms)
/// passed long before the end: one miss of a job that did not complete,
/// beside the 10 jobs it completed before.
#[test]
fn a_job_pending_past_its_deadline_at_the_end_is_a_miss() {
    let Some(_rt) = rt_or_skip("disturbance::unfinished") else {
        return;
    };
    let cpu = run_cpu();
    let dir = TempDir::new("dist-unfinished");
    let file = dir.write(
        "starved.json",
        &format!(
            r#"{{ "global": {{ "default_policy": "SCHED_FIFO", "duration": 0.5 }},
  "tasks": {{
    "low": {{ "priority": 10, "cpus": [{cpu}], "run": 1000, "timer": {{ "ref": "t", "period": 10000 }} }},
    "hog": {{ "priority": 90, "cpus": [{cpu}], "loop": 1, "delay": 100000, "run": 450000 }} }} }}"#
        ),
    );
    let (rc, v, err) = run_undisturbed(
        "disturbance::unfinished",
        &[
            "run".as_ref(),
            file.as_os_str(),
            "--placement".as_ref(),
            "as-written".as_ref(),
            "--json".as_ref(),
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let low = &v["tasks"]["low"];
    assert_eq!(low["jobs"], 10, "{low}");
    assert_eq!(low["deadline_misses"], 1, "{low}");
    assert_eq!(low["unfinished_misses"], 1, "{low}");
    let sim = heir(["sim".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(code(&sim), 0, "{}", stderr(&sim));
    let sim = one_json(&sim);
    assert_eq!(sim["tasks"]["low"]["jobs"], 10, "{sim}");
    assert_eq!(sim["tasks"]["low"]["deadline_misses"], 1, "{sim}");
    assert_eq!(sim["tasks"]["low"]["unfinished_misses"], 1, "{sim}");
}
