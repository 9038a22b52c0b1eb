//! Two `heir run` at once (issue 7): the second sees the CPU the first
//! claimed and says so on stderr — moving to a free CPU when there is one —
//! instead of silently sharing it.

use std::process::{Command, Stdio};

use crate::support::*;

/// True once some thread of process `pid` runs SCHED_FIFO (its run has
/// claimed its CPUs: claims come before the threads start).
fn runs_fifo(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("stat"))
            .ok()
            .and_then(|s| {
                let rest = s.get(s.rfind(')')? + 1..)?;
                rest.split_whitespace().nth(38).map(|p| p == "1")
            })
            .unwrap_or(false)
    })
}

#[test]
fn a_second_run_on_a_claimed_cpu_says_so() {
    let Some(_rt) = rt_or_skip("two_runs") else {
        return;
    };
    if heir::caps::Capabilities::detect().cpus.len() < 2 {
        eprintln!("two_runs: SKIPPED: needs 2 CPUs");
        return;
    }
    let dir = TempDir::new("two-runs");
    let file = dir.write(
        "p.json",
        r#"{
  "global" : { "duration" : 3, "default_policy" : "SCHED_FIFO" },
  "tasks" : {
    "A" : { "priority" : 10, "cpus" : [0], "run" : 1000,
            "timer" : { "ref" : "t", "period" : 10000 } }
  }
}
"#,
    );
    // The first run keeps CPU 0 whatever else runs there.
    let mut first = Command::new(env!("CARGO_BIN_EXE_heir"))
        .args([
            "run".as_ref(),
            file.as_os_str(),
            "--placement".as_ref(),
            "as-written".as_ref(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("first heir run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !runs_fifo(first.id()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let o = heir([
        "run".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "0.1".as_ref(),
    ]);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "heir: warning: CPU 0 has other real-time work (another heir run or test claims it"
        ),
        "{err}"
    );
    // Moved to CPU 1 unless another program's real-time work is there too.
    assert!(
        err.contains(": the file's CPU 0 runs on CPU 1")
            || err.contains("no free CPU to move it to"),
        "{err}"
    );
}
