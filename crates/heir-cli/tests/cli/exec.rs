//! `heir exec` on unmodified programs (docs/EXEC.md). The interposition
//! library is the one cargo built for this test binary
//! (`target/<profile>/deps/libheir_preload.so`: heir-preload is a
//! dev-dependency so that it is always built, and always fresh, before
//! these tests), handed to `heir exec` with `HEIR_PRELOAD`.
//!
//! - The PI-CV paper's Fig. 6 in plain pthreads (`examples/c/plain/producer_consumer.c`):
//!   with `--cond learn` the consumer's latency falls to the producer's
//!   work from the second request on; with `--cond off` it stays inverted
//!   (the medium thread's work in every request). Only relations the
//!   program's own CPU-time work imposes are asserted, with margins.
//! - A barrier gang in plain pthreads (`examples/c/plain/barrier_gang.c`):
//!   with `--gpm on` the waiting high-priority thread lends to the late
//!   low-priority one from the second round on; with `--gpm off` the
//!   medium thread's work is in every wait.
//! - rt-tests' `pi_stress` (inversion groups and a watchdog that fails the
//!   run on an inversion) exits 0 under `heir exec`, on one CPU and on two,
//!   with a sane count of inversions. Its rate against glibc's is printed,
//!   never asserted (docs/PERFORMANCE.md has the figures).
//! - The summary (stderr, `--json`), the exit code, a missing library.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::*;

/// The library cargo built beside this test binary.
fn preload() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let lib = exe.parent().expect("deps").join("libheir_preload.so");
    assert!(lib.is_file(), "{} not built", lib.display());
    lib
}

fn heir_exec<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heir"))
        .arg("exec")
        .args(args)
        .env("HEIR_PRELOAD", preload())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run heir exec")
}

fn cc(src: &Path, out: &Path) {
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-pthread"])
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .expect("cc");
    assert!(
        o.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The `--json` summary: the last line of stdout.
fn summary(o: &Output) -> Value {
    let out = stdout(o);
    let last = out.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("summary JSON: {e}: {out}"))
}

/// The CPU the test's threads share: the last allowed CPU not claimed by
/// another heir run or test.
fn claim_cpu() -> heir_runner::cpus::CpuClaim {
    let cpus = heir::sys::allowed_cpus();
    for &c in cpus.iter().rev() {
        if let Some(claim) = heir_runner::cpus::CpuClaim::try_claim(c) {
            return claim;
        }
    }
    panic!("no CPU free of other heir real-time tests among {cpus:?}");
}

#[test]
fn exec_exit_code_summary_and_missing_library() {
    let o = heir_exec(&["--json", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code(&o), 7, "{}", stderr(&o));
    let v = summary(&o);
    assert_eq!(v["exit_code"], 7);
    assert!(stderr(&o).contains("heir exec: exit 7"), "{}", stderr(&o));

    let dir = TempDir::new("exec-summary");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heir-preload/tests/c/semantics.c");
    let prog = dir.join("semantics");
    let o = Command::new("cc")
        .args(["-O1", "-pthread"])
        .arg(&src)
        .arg("-o")
        .arg(&prog)
        .arg("-ldl")
        .output()
        .expect("cc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = heir_exec(&["--json".as_ref(), "--".as_ref(), prog.as_os_str()]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let v = summary(&o);
    // The program, its fork child and its exec'd child.
    assert_eq!(v["processes"].as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(v["total"]["mutexes_glibc"], 2, "{v}");
    assert!(v["total"]["mutexes"].as_u64() >= Some(5), "{v}");
    assert!(
        stderr(&o).contains("mutexes on heir's PI mutexes"),
        "{}",
        stderr(&o)
    );

    let o = Command::new(env!("CARGO_BIN_EXE_heir"))
        .args([
            "exec",
            "--preload",
            "/nonexistent/libheir_preload.so",
            "--",
            "true",
        ])
        .output()
        .expect("heir");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// The latencies a producer_consumer run printed, request by request.
fn latencies_ms(o: &Output) -> Vec<f64> {
    stdout(o)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            match (w.next(), w.next(), w.next(), w.next()) {
                (Some("request"), Some(_), Some("latency_us"), Some(us)) => {
                    us.parse::<f64>().ok().map(|u| u / 1000.0)
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
fn plain_producer_consumer_learns_its_helper_from_the_second_request() {
    let Some(_rt) = rt_or_skip("plain_producer_consumer") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-fig6");
    let prog = dir.join("producer_consumer");
    cc(&example("c/plain/producer_consumer.c"), &prog);
    const WORK_MS: f64 = 20.0;
    const MEDIUM_MS: f64 = 100.0;
    let run = |cond: &str| {
        let cpu = claim.cpu().to_string();
        let o = heir_exec(&[
            "--cond",
            cond,
            "--json",
            "--",
            prog.to_str().expect("utf-8"),
            &cpu,
            "5",
            "20",
            "100",
        ]);
        assert_eq!(code(&o), 0, "--cond {cond}: {}\n{}", stdout(&o), stderr(&o));
        let l = latencies_ms(&o);
        assert_eq!(l.len(), 5, "--cond {cond}: {}", stdout(&o));
        (l, summary(&o))
    };
    let (learn, v) = run("learn");
    let (off, _) = run("off");
    eprintln!("latency ms, learn: {learn:?}; off: {off:?}");
    // Request 1: nothing learned yet — the medium thread's work is in it.
    assert!(learn[0] >= MEDIUM_MS, "learn, request 1: {learn:?}");
    // From request 2: the producer, a helper, runs at the consumer's
    // priority: its own work, with a margin for load, well under the
    // medium thread's.
    for (i, &l) in learn.iter().enumerate().skip(1) {
        assert!(l >= WORK_MS * 0.95, "learn, request {}: {l} ms", i + 1);
        assert!(
            l < 0.6 * MEDIUM_MS,
            "learn, request {}: {l} ms ({learn:?})",
            i + 1
        );
    }
    // --cond off: inverted every time.
    for (i, &l) in off.iter().enumerate() {
        assert!(l >= MEDIUM_MS, "off, request {}: {l} ms ({off:?})", i + 1);
    }
    let mean = |v: &[f64]| v.iter().skip(1).sum::<f64>() / (v.len() - 1) as f64;
    assert!(
        mean(&learn) * 2.0 < mean(&off),
        "learn {learn:?} vs off {off:?}"
    );
    assert!(v["total"]["helpers_learned"].as_u64() >= Some(1), "{v}");
}

/// The waits a barrier_gang run printed, round by round.
fn waits_ms(o: &Output) -> Vec<f64> {
    stdout(o)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["round", _, "wait_us", us] => us.parse::<f64>().ok().map(|u| u / 1000.0),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn plain_barrier_lends_to_the_late_member_from_the_second_round() {
    let Some(_rt) = rt_or_skip("plain_barrier_gang") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-gang");
    let prog = dir.join("barrier_gang");
    cc(&example("c/plain/barrier_gang.c"), &prog);
    const WORK_MS: f64 = 20.0;
    const MEDIUM_MS: f64 = 100.0;
    let run = |gpm: &str| {
        let cpu = claim.cpu().to_string();
        let o = heir_exec(&[
            "--gpm",
            gpm,
            "--gpm-grace-us",
            "1000",
            "--json",
            "--",
            prog.to_str().expect("utf-8"),
            &cpu,
            "4",
            "20",
            "100",
        ]);
        assert_eq!(code(&o), 0, "--gpm {gpm}: {}\n{}", stdout(&o), stderr(&o));
        let w = waits_ms(&o);
        assert_eq!(w.len(), 4, "--gpm {gpm}: {}", stdout(&o));
        (w, summary(&o))
    };
    let (on, v) = run("on");
    let (off, _) = run("off");
    eprintln!("barrier wait ms, gpm on: {on:?}; off: {off:?}");
    assert!(
        on[0] >= MEDIUM_MS,
        "gpm on, round 1 (nothing learned): {on:?}"
    );
    for (i, &w) in on.iter().enumerate().skip(1) {
        assert!(w >= WORK_MS * 0.95, "gpm on, round {}: {w} ms", i + 1);
        assert!(
            w < 0.6 * MEDIUM_MS,
            "gpm on, round {}: {w} ms ({on:?})",
            i + 1
        );
    }
    for (i, &w) in off.iter().enumerate() {
        assert!(w >= MEDIUM_MS, "gpm off, round {}: {w} ms ({off:?})", i + 1);
    }
    assert!(v["total"]["barrier_boosts"].as_u64() >= Some(1), "{v}");
}

fn pi_stress() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("pi_stress"))
        .find(|p| p.is_file())
}

/// `Total inversion performed: N` of a pi_stress run.
fn inversions(o: &Output) -> Option<u64> {
    let text = format!("{}\n{}", stdout(o), stderr(o));
    text.lines()
        .find_map(|l| l.strip_prefix("Total inversion performed: "))
        .and_then(|n| n.trim().parse().ok())
}

#[test]
fn pi_stress_passes_under_heir_exec_on_one_cpu_and_two() {
    let Some(_rt) = rt_or_skip("pi_stress") else {
        return;
    };
    let Some(pi) = pi_stress() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "pi_stress (Debian package rt-tests) missing under CI=true"
        );
        eprintln!("pi_stress: SKIPPED: not installed (apt-get install rt-tests)");
        return;
    };
    let two = heir::sys::allowed_cpus().len() >= 2;
    let mut cases: Vec<Vec<&str>> = vec![vec!["--groups", "1", "--uniprocessor"]];
    if two {
        cases.push(vec!["--groups", "2"]);
    }
    for extra in cases {
        // `timeout` inside: a stuck pi_stress is killed, not orphaned.
        let mut args: Vec<String> = vec!["timeout", "-k", "5", "40"]
            .into_iter()
            .map(String::from)
            .collect();
        args.push(pi.display().to_string());
        args.extend(["--duration", "3", "--quiet"].map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        let glibc = Command::new(&args[0])
            .args(&args[1..])
            .output()
            .expect("pi_stress");
        let mut exec_args = vec!["--json".to_string(), "--".to_string()];
        exec_args.extend(args.iter().cloned());
        let o = heir_exec(&exec_args);
        assert_eq!(
            code(&o),
            0,
            "pi_stress {extra:?} under heir exec: {}\n{}",
            stdout(&o),
            stderr(&o)
        );
        let n = inversions(&o).unwrap_or_else(|| panic!("no count: {}", stdout(&o)));
        assert!(n >= 1000, "pi_stress {extra:?}: {n} inversions in 3 s");
        let v = summary(&o);
        let t = &v["total"];
        assert!(t["mutexes"].as_u64() >= Some(1), "{v}");
        assert!(t["barriers"].as_u64() >= Some(1), "{v}");
        let g = inversions(&glibc).unwrap_or(0);
        eprintln!(
            "pi_stress {extra:?}: glibc {g} inversions, heir exec {n} ({:.0} %; not asserted)",
            100.0 * n as f64 / g.max(1) as f64
        );
    }
}
