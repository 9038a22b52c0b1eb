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
//! - `--scenario` records `producer_consumer.c` as a scenario that the
//!   simulator replays (PI-CV off: the inverted latency; on: the producer's
//!   work) and `heir analyze` bounds: on, the consumer's bound is at least
//!   its simulated maximum; `--pi-cv off`, an unbounded inversion naming
//!   the medium thread (docs/ANALYSIS.md §4.1).
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
    // The CPU no other heir test claims with the least real-time load of
    // other programs (surveyed for 50 ms): a real-time loop of another
    // program on the program's CPU would stretch the latencies it prints.
    let cpus = heir::sys::allowed_cpus();
    let survey = heir_runner::cpus::Survey::take(&cpus, 50_000_000);
    let cpu = heir_runner::cpus::quietest(&cpus, &survey);
    cpu.and_then(|c| survey.keep(&[c]).pop())
        .unwrap_or_else(|| panic!("no CPU free of other heir real-time tests among {cpus:?}"))
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

/// A trace's instants and boosts (`X` slices of category `boost`):
/// (name, thread name, ms, args).
fn trace_events(path: &Path) -> Vec<(String, String, f64, Value)> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("trace")).expect("trace JSON");
    let evs = v["traceEvents"].as_array().expect("traceEvents");
    let mut names = std::collections::HashMap::new();
    for e in evs {
        if e["ph"] == "M" && e["name"] == "thread_name" {
            names.insert(
                (e["pid"].to_string(), e["tid"].to_string()),
                e["args"]["name"].as_str().unwrap_or("").to_string(),
            );
        }
    }
    evs.iter()
        .filter(|e| e["ph"] == "i" || e["ph"] == "I" || (e["ph"] == "X" && e["cat"] == "boost"))
        .map(|e| {
            let who = names
                .get(&(e["pid"].to_string(), e["tid"].to_string()))
                .cloned()
                .unwrap_or_default();
            (
                e["name"].as_str().unwrap_or("").to_string(),
                who,
                e["ts"].as_f64().unwrap_or(0.0) / 1000.0,
                e["args"].clone(),
            )
        })
        .collect()
}

/// The tid a traced thread's name ends with (`comm-TID`).
fn tid_of(name: &str) -> u32 {
    name.rsplit('-')
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

#[test]
fn exec_trace_of_the_plain_producer_consumer_shows_wait_signal_and_the_learned_boost() {
    let Some(_rt) = rt_or_skip("exec_trace") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-trace");
    let prog = dir.join("producer_consumer");
    cc(&example("c/plain/producer_consumer.c"), &prog);
    let trace = dir.join("t.json");
    let svg = dir.join("t.svg");
    let cpu = claim.cpu().to_string();
    let o = heir_exec(&[
        "--trace",
        trace.to_str().expect("utf-8"),
        "--svg",
        svg.to_str().expect("utf-8"),
        "--json",
        "--",
        prog.to_str().expect("utf-8"),
        &cpu,
        "4",
        "20",
        "100",
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let v = summary(&o);
    assert_eq!(v["trace"]["dropped_events"], 0, "{v}");
    assert!(svg.is_file());
    let ev = trace_events(&trace);
    // The threads with instants, by tid: the main thread (the consumer),
    // then the producer.
    let mut threads: Vec<String> = ev.iter().map(|e| e.1.clone()).collect();
    threads.sort_by_key(|n| tid_of(n));
    threads.dedup();
    let consumer = threads[0].clone();
    let producer = threads[1].clone();
    // The consumer's waits on the item condition variable, each ended by
    // the producer's signal.
    let waits: Vec<(f64, String)> = ev
        .iter()
        .filter(|e| e.0 == "wait" && e.1 == consumer)
        .map(|e| (e.2, e.3["resource"].as_str().unwrap_or("").to_string()))
        .collect();
    assert_eq!(waits.len(), 4, "consumer waits: {waits:?}");
    let item = &waits[0].1;
    assert!(item.starts_with("cond@0x"), "{item}");
    let signals = ev
        .iter()
        .filter(|e| e.0 == "signal" && e.1 == producer && e.3["resource"] == item.as_str())
        .count();
    assert_eq!(signals, 4, "producer's signals of {item}");
    // Boosts of the producer with the consumer as donor: inside every
    // wait from the second request on, never in the first.
    let boosts: Vec<f64> = ev
        .iter()
        .filter(|e| e.0 == "boost" && e.1 == producer && e.3["donor"] == consumer.as_str())
        .map(|e| e.2)
        .collect();
    let first_signal = ev
        .iter()
        .find(|e| e.0 == "signal" && e.1 == producer)
        .map(|e| e.2)
        .expect("a signal");
    assert!(
        boosts.iter().all(|&b| b >= first_signal),
        "a boost before anything was learned: {boosts:?}"
    );
    for (k, (from, _)) in waits.iter().enumerate().skip(1) {
        assert!(
            boosts.iter().any(|&b| b >= *from && b < from + 30.0),
            "request {}: no boost of {producer} by {consumer} in its wait from {from} ms: {boosts:?}",
            k + 1
        );
    }
    // heir inversions reads it: request 1's wait is an inversion, the
    // producer waited for, the medium thread ran meanwhile.
    let o = Command::new(env!("CARGO_BIN_EXE_heir"))
        .args(["inversions", "--json"])
        .arg(&trace)
        .output()
        .expect("heir inversions");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let inv: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let list = inv["inversions"].as_array().expect("inversions");
    assert_eq!(list.len(), 1, "{inv}");
    assert_eq!(list[0]["waiter"], consumer.as_str(), "{inv}");
    assert_eq!(list[0]["resource"], item.as_str(), "{inv}");
    assert_eq!(list[0]["waited_for"][0], producer.as_str(), "{inv}");
    // The medium thread (no synchronisation operation of heir's: it
    // waits on semaphores), created after the producer.
    let medium = list[0]["lower"][0]["thread"].as_str().unwrap_or("");
    assert!(tid_of(medium) > tid_of(&producer), "{inv}");
    assert!(list[0]["lower_ran_ms"].as_f64() >= Some(95.0), "{inv}");
}

/// The condition-variable waits (wait to woken, ms) of `thread` in a trace.
fn cond_waits_ms(trace: &Path, thread: &str) -> Vec<f64> {
    let mut open = None;
    let mut out = Vec::new();
    for (name, who, at, args) in trace_events(trace) {
        if who != thread || !args["resource"].as_str().unwrap_or("").starts_with("cond@") {
            continue;
        }
        match name.as_str() {
            "wait" => open = Some(at),
            "woken" => {
                if let Some(a) = open.take() {
                    out.push(at - a);
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn exec_scenario_of_the_plain_producer_consumer_reproduces_its_latencies_in_the_simulator() {
    let Some(_rt) = rt_or_skip("exec_scenario") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-scenario");
    let prog = dir.join("producer_consumer");
    cc(&example("c/plain/producer_consumer.c"), &prog);
    let scenario = dir.join("s.json");
    let cpu = claim.cpu().to_string();
    let o = heir_exec(&[
        "--scenario",
        scenario.to_str().expect("utf-8"),
        "--",
        prog.to_str().expect("utf-8"),
        &cpu,
        "5",
        "20",
        "100",
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let real = latencies_ms(&o);
    assert_eq!(real.len(), 5, "{}", stdout(&o));
    let text = std::fs::read_to_string(&scenario).expect("scenario");
    let v: Value = serde_json::from_str(&text).expect("scenario JSON");
    // The consumer is the FIFO 30 thread; the producer, FIFO 10, is the
    // learned helper of the condition variable the consumer waits on.
    let tasks = v["tasks"].as_object().expect("tasks");
    let by_prio = |p: i64| {
        tasks
            .iter()
            .find(|(_, t)| t["priority"] == p && t["policy"] == "SCHED_FIFO")
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| panic!("no FIFO {p} task: {text}"))
    };
    let (consumer, producer) = (by_prio(30), by_prio(10));
    by_prio(20);
    let helped = v["resources"]
        .as_object()
        .expect("resources")
        .values()
        .any(|r| r["type"] == "cond" && r["helpers"] == serde_json::json!([producer]));
    assert!(helped, "{text}");
    let sim = |pi_cv: &str| {
        let trace = dir.join(&format!("sim-{pi_cv}.json"));
        let o = Command::new(env!("CARGO_BIN_EXE_heir"))
            .args(["sim", "--pi-cv", pi_cv, "--trace"])
            .arg(&trace)
            .arg(&scenario)
            .output()
            .expect("heir sim");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        cond_waits_ms(&trace, &consumer)
    };
    let (off, on) = (sim("off"), sim("on"));
    eprintln!("real latency ms {real:?}; simulated waits, PI-CV off {off:?}, on {on:?}");
    assert_eq!((off.len(), on.len()), (5, 5), "off {off:?}, on {on:?}");
    let close = |s: f64, r: f64| (s - r).abs() <= 0.1 * r;
    // PI-CV off: every request inverted, as the real first request (before
    // anything was learned).
    for &s in &off {
        assert!(close(s, real[0]), "PI-CV off {s} ms vs real {}", real[0]);
    }
    // PI-CV on: the real latencies from the second request on (the
    // scenario names the helper from the start).
    for (k, &r) in real.iter().enumerate().skip(1) {
        assert!(
            close(on[k], r),
            "request {}: PI-CV on {} ms vs real {r}",
            k + 1,
            on[k]
        );
    }
    // heir analyze reads the request/reply as RPCs to helper threads
    // (docs/ANALYSIS.md §4.1): the producer and the medium thread are
    // servers, the consumer's waits are calls.
    let medium = by_prio(20);
    let analyze = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_heir"))
            .arg("analyze")
            .args(extra)
            .arg(&scenario)
            .output()
            .expect("heir analyze");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        o
    };
    // PI-CV on: a bound, at least the simulated job (which the analysis
    // simulates itself with --compare), near its own work + the producer's
    // 20 ms + the medium thread's 100 ms.
    let on: Value =
        serde_json::from_str(&stdout(&analyze(&["--compare", "--json"]))).expect("JSON");
    let c = &on["tasks"][&consumer];
    let (bound, sim_max) = (
        c["wcrt_us"]
            .as_f64()
            .unwrap_or_else(|| panic!("no bound: {on}")),
        c["sim_max_us"]
            .as_f64()
            .unwrap_or_else(|| panic!("no job: {on}")),
    );
    eprintln!("consumer: bound {bound} µs, simulated maximum {sim_max} µs");
    assert!(sim_max <= bound && bound < 125_000.0, "{on}");
    assert!(bound > 120_000.0, "{on}");
    // PI-CV off: unbounded, the medium thread named.
    let off = stdout(&analyze(&["--pi-cv", "off"]));
    let why = format!(
        "{consumer}: unbounded priority inversion: while it waits for a reply from server {producer} (priority 10, no PI-CV), server {medium} can run"
    );
    assert!(off.contains(&why), "{off}");
    let off: Value =
        serde_json::from_str(&stdout(&analyze(&["--pi-cv", "off", "--json"]))).expect("JSON");
    assert_eq!(off["tasks"][&consumer]["wcrt_us"], Value::Null, "{off}");
}

/// The priorities a plain example printed (`item N producer_priority P`,
/// `call N server_priority P`), in order.
fn printed_priorities(o: &Output, what: &str) -> Vec<i64> {
    stdout(o)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [_, _, key, p] if *key == what => p.parse().ok(),
                _ => None,
            }
        })
        .collect()
}

/// The plain-pthreads versions of examples/c/producer_consumer.c (a
/// queue) and examples/c/rpc_donation.c (calls) under `heir exec`: the
/// thread the high-priority one waits for runs at its priority, 30, as in
/// the heir versions (whose tests, heir-rt's `capi`, see 30 from the first
/// item: the helper is declared there), from the second item or call on
/// (learned at the first signal); at its own 10 with `--cond off`, as on
/// glibc. The barrier and Fig. 6 versions have their own tests above.
#[test]
fn plain_queue_and_rpc_examples_lend_under_heir_exec_as_their_heir_versions() {
    let Some(_rt) = rt_or_skip("plain_queue_and_rpc") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-plain-examples");
    let cpu = claim.cpu().to_string();
    for (src, what) in [
        ("c/plain/queue.c", "producer_priority"),
        ("c/plain/rpc.c", "server_priority"),
    ] {
        let prog = dir.join(src.trim_start_matches("c/plain/").trim_end_matches(".c"));
        cc(&example(src), &prog);
        let run = |cond: &str| {
            let o = heir_exec(&[
                "--cond",
                cond,
                "--",
                prog.to_str().expect("utf-8"),
                &cpu,
                "5",
            ]);
            assert_eq!(
                code(&o),
                0,
                "{src} --cond {cond}: {}\n{}",
                stdout(&o),
                stderr(&o)
            );
            printed_priorities(&o, what)
        };
        let (learn, off) = (run("learn"), run("off"));
        eprintln!("{src}: {what} learn {learn:?}, off {off:?}");
        assert_eq!(learn, vec![10, 30, 30, 30, 30], "{src} --cond learn");
        assert_eq!(off, vec![10; 5], "{src} --cond off");
    }
}

/// rt-tests' `ptsematest` uses a mutex as a semaphore (one thread locks
/// it, another unlocks it): every such unlock is refused under heir's PI
/// mutexes, and `heir exec` counts them and says what to do.
#[test]
fn ptsematest_unlocks_by_a_non_owner_are_counted_and_explained() {
    let Some(_rt) = rt_or_skip("ptsematest") else {
        return;
    };
    let Some(pt) = ["/usr/bin/ptsematest", "/usr/local/bin/ptsematest"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        eprintln!("SKIP ptsematest: not installed (Debian package rt-tests)");
        return;
    };
    let claim = claim_cpu();
    let cpu = format!("-a{}", claim.cpu());
    let o = heir_exec(&[
        "--json",
        "--",
        pt.to_str().expect("utf-8"),
        &cpu,
        "-t1",
        "-p1",
        "-i1000",
        "-l3",
        "-q",
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let v = summary(&o);
    assert!(v["total"]["unlock_not_owner"].as_u64() >= Some(1), "{v}");
    assert!(
        stderr(&o).contains("uses a mutex as a semaphore") && stderr(&o).contains("--mutex keep"),
        "{}",
        stderr(&o)
    );
    let o = heir_exec(&[
        "--json",
        "--mutex",
        "keep",
        "--",
        pt.to_str().expect("utf-8"),
        &cpu,
        "-t1",
        "-p1",
        "-i1000",
        "-l3",
        "-q",
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(summary(&o)["total"]["unlock_not_owner"], 0);
}

/// `--trace` and `--scenario` follow the program across `fork` and `exec`:
/// `sh -c` runs producer_consumer as its child; the trace has the
/// child's threads with their waits and signals, the scenario its three
/// threads (sh made no operation, so object names carry no pid).
#[test]
fn exec_trace_and_scenario_follow_the_program_across_fork_and_exec() {
    let Some(_rt) = rt_or_skip("exec_trace_fork") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-trace-fork");
    let prog = dir.join("producer_consumer");
    cc(&example("c/plain/producer_consumer.c"), &prog);
    let (trace, scenario) = (dir.join("t.json"), dir.join("s.json"));
    let script = format!("{} {} 2 20 100; true", prog.display(), claim.cpu());
    let o = heir_exec(&[
        "--trace",
        trace.to_str().expect("utf-8"),
        "--scenario",
        scenario.to_str().expect("utf-8"),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(latencies_ms(&o).len(), 2, "{}", stdout(&o));
    let ev = trace_events(&trace);
    let count = |n: &str| {
        ev.iter()
            .filter(|e| e.0 == n && e.1.starts_with("producer_consu"))
            .count()
    };
    assert!(count("wait") >= 3 && count("signal") >= 3, "{ev:?}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&scenario).expect("scenario")).expect("JSON");
    let tasks = v["tasks"].as_object().expect("tasks");
    assert_eq!(tasks.len(), 3, "{v}");
    assert!(tasks.keys().all(|k| k.starts_with("producer_consu")), "{v}");
    assert!(
        v["resources"]
            .as_object()
            .expect("resources")
            .keys()
            .all(|k| k.contains("@0x")),
        "{v}"
    );
}

/// The events of task `task` in a `--scenario` file, in order (the file
/// repeats keys, which a JSON map would merge): (key, value as written).
fn scenario_events(text: &str, task: &str) -> Vec<(String, String)> {
    let head = format!("\"{task}\": {{");
    let start = text
        .find(&head)
        .unwrap_or_else(|| panic!("no task {task}: {text}"));
    text[start + head.len()..]
        .lines()
        .skip(2) // the rest of the task's line, and loop/delay/policy
        .take_while(|l| !l.trim_start().starts_with('}'))
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let (k, v) = l.split_once(": ")?;
            Some((k.trim_matches('"').to_string(), v.to_string()))
        })
        .collect()
}

/// What `--scenario` models beyond locks, waits and signals, on a plain
/// program (`heir-preload/tests/c/record_model.c`): a semaphore's initial
/// value (two pushes where it is initialised, popped by the other
/// thread), `usleep` (a sleep of the time asked), a condition-variable
/// wait that timed out (the mutex released, a sleep at least as long as
/// the timeout, the mutex taken again: no signal, so no wait), a
/// semaphore wait that timed out (a sleep), and the CPU time each thread
/// used after its last operation (a last run of at least its 5 and 7 ms of
/// work). `heir sim` runs the file.
#[test]
fn exec_scenario_models_semaphore_values_timeouts_sleeps_and_the_last_run() {
    let dir = TempDir::new("exec-record-model");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heir-preload/tests/c/record_model.c");
    let prog = dir.join("record_model");
    cc(&src, &prog);
    let scenario = dir.join("s.json");
    let o = heir_exec(&[
        "--scenario",
        scenario.to_str().expect("utf-8"),
        "--",
        prog.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(&scenario).expect("scenario");
    let v: Value = serde_json::from_str(&text).expect("scenario JSON");
    let names: Vec<&String> = v["tasks"].as_object().expect("tasks").keys().collect();
    assert_eq!(names.len(), 2, "{text}");
    // The main thread is the one that initialised the semaphore (pushes).
    let pushes = |n: &str| scenario_events(&text, n).iter().any(|(k, _)| k == "push");
    let (main, taker) = if pushes(names[0]) {
        (names[0].clone(), names[1].clone())
    } else {
        (names[1].clone(), names[0].clone())
    };
    let num = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{s}: {text}"));
    let keys = |ev: &[(String, String)]| {
        ev.iter()
            .filter(|(k, _)| !k.starts_with("run"))
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>()
    };
    let m = scenario_events(&text, &main);
    assert_eq!(
        keys(&m),
        ["push", "push", "sleep", "lock", "unlock", "sleep", "lock", "unlock", "sleep"],
        "{text}"
    );
    let sleeps: Vec<u64> = m
        .iter()
        .filter(|(k, _)| k == "sleep")
        .map(|(_, v)| num(v))
        .collect();
    assert_eq!(sleeps[0], 3000, "usleep(3000): {text}");
    assert!(sleeps[1] >= 4000, "the 4 ms timed wait: {text}");
    assert!(sleeps[2] >= 2000, "the 2 ms semaphore wait: {text}");
    let last = m.last().expect("events");
    assert!(
        last.0 == "run" && num(&last.1) >= 6999,
        "7 ms after the last operation: {text}"
    );
    let t = scenario_events(&text, &taker);
    assert_eq!(keys(&t), ["pop", "pop"], "{text}");
    let last = t.last().expect("events");
    assert!(
        last.0 == "run" && num(&last.1) >= 4999,
        "5 ms after the last operation: {text}"
    );
    // The semaphore is one queue, pushed by main and popped by the taker.
    let q = &m[m.iter().position(|(k, _)| k == "push").expect("push")].1;
    assert!(t.iter().all(|(k, v)| k != "pop" || v == q), "{text}");
    let o = Command::new(env!("CARGO_BIN_EXE_heir"))
        .args(["sim", "--json"])
        .arg(&scenario)
        .output()
        .expect("heir sim");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// A thread that changes its own priority mid-run
/// (`heir-preload/tests/c/sched_change.c`: FIFO 10, a critical section and
/// 2 ms of work, then FIFO 20, a critical section and 3 ms): the scenario
/// has a phase per scheduling, the second saying what changed, each with
/// its critical section and its work; `heir sim` runs it.
#[test]
fn exec_scenario_writes_a_phase_per_scheduling_change() {
    let Some(_rt) = rt_or_skip("exec_scenario_phases") else {
        return;
    };
    let claim = claim_cpu();
    let dir = TempDir::new("exec-sched-change");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heir-preload/tests/c/sched_change.c");
    let prog = dir.join("sched_change");
    cc(&src, &prog);
    let scenario = dir.join("s.json");
    let cpu = claim.cpu().to_string();
    let o = heir_exec(&[
        "--scenario",
        scenario.to_str().expect("utf-8"),
        "--",
        prog.to_str().expect("utf-8"),
        &cpu,
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(&scenario).expect("scenario");
    let v: Value = serde_json::from_str(&text).expect("scenario JSON");
    let tasks = v["tasks"].as_object().expect("tasks");
    assert_eq!(tasks.len(), 1, "{text}");
    let t = tasks.values().next().expect("task");
    assert_eq!(
        (&t["policy"], &t["priority"], &t["cpus"]),
        (
            &serde_json::json!("SCHED_FIFO"),
            &serde_json::json!(10),
            &serde_json::json!([claim.cpu()])
        ),
        "{text}"
    );
    let phases = t["phases"].as_object().expect("phases");
    assert_eq!(phases.len(), 2, "{text}");
    assert!(phases["p0"].get("priority").is_none(), "{text}");
    assert_eq!(phases["p1"]["priority"], 20, "{text}");
    assert_eq!(phases["p1"]["policy"], "SCHED_FIFO", "{text}");
    // Each phase: its lock and unlock; its work last (repeated "run" keys
    // merge in a JSON map: the last one is the phase's last run).
    let body = |p: &str| {
        let a = text.find(&format!("\"{p}\": {{")).expect("phase");
        let b = a + text[a..].find('}').expect("end of phase");
        text[a..b].to_string()
    };
    for (p, work_us) in [("p0", 2000), ("p1", 3000)] {
        let b = body(p);
        let keys: Vec<&str> = b
            .lines()
            .skip(1)
            .filter_map(|l| l.trim().split_once(':').map(|(k, _)| k.trim_matches('"')))
            .filter(|k| *k != "run")
            .collect();
        assert_eq!(keys, ["lock", "unlock"], "{p}: {text}");
        let last = phases[p]["run"].as_u64().expect("run");
        assert!(last >= work_us - 1, "{p}: {last} µs of work: {text}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_heir"))
        .args(["sim", "--json"])
        .arg(&scenario)
        .output()
        .expect("heir sim");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}
