//! `heir run` under the donation model (`global.ipc: "donation"`, NOVA donation,
//! issue 10): the NOVA examples on real threads show the order of
//! events the simulation shows — each server's replies, each aborted call,
//! each caller's completion — and the response-time relations that follow
//! from it on any machine. No absolute timing is asserted (only lower
//! bounds the file's own work imposes).

use std::path::Path;

use serde_json::Value;

use crate::support::*;

/// The servers of every example below (their completions are not compared:
/// a passive server finishes a pass only on donated time in the
/// simulation, on idle time too on real threads).
const SERVERS: [&str; 4] = ["S", "Y", "Z", "s"];

/// `heir run EXAMPLE --log --json` on a free CPU: its exit code, its JSON
/// and its stderr, from a run nothing outside it disturbed (its measured
/// disturbance, [`run_undisturbed`]: disturbed runs are retried).
fn run_logged(file: &Path) -> (i32, Value, String) {
    run_undisturbed(
        &format!("heir run {}", file.display()),
        &[
            "run".as_ref(),
            file.as_os_str(),
            "--placement".as_ref(),
            "free".as_ref(),
            "--log".as_ref(),
            "--json".as_ref(),
        ],
    )
}

/// The real run's order of events: `X reply` (a server's reply, logged
/// just before it), `X abort` (an aborted call), `X done` (a non-server
/// thread's last event: its job's completion, every task here runs once).
fn real_order(v: &Value) -> Vec<String> {
    let log = v["log"].as_array().expect("a log");
    let entry = |e: &Value| {
        (
            e["thread"].as_str().unwrap_or("").to_string(),
            e["event"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut out = Vec::new();
    for (i, e) in log.iter().enumerate() {
        let (t, ev) = entry(e);
        if ev.contains(": reply (") {
            out.push(format!("{t} reply"));
        }
        if ev.contains("aborted") {
            out.push(format!("{t} abort"));
        }
        let last = !log[i + 1..].iter().any(|f| entry(f).0 == t);
        if last && !SERVERS.contains(&t.as_str()) {
            out.push(format!("{t} done"));
        }
    }
    out
}

/// The simulation's order of the same events (`heir sim --trace`): its
/// `reply` and `abort` instants, and the `complete` instants of
/// non-server threads, in time order (the trace's order among equal
/// times: the order they happened in).
fn sim_order(file: &Path) -> Vec<String> {
    let dir = TempDir::new("don-sim");
    let trace = dir.join("trace.json");
    let o = heir([
        "sim".as_ref(),
        file.as_os_str(),
        "--trace".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(code(&o) == 0 || code(&o) == 3, "heir sim: {}", stderr(&o));
    let text = std::fs::read_to_string(&trace).expect("the trace");
    let v: Value = serde_json::from_str(&text).expect("trace JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let name_of = |tid: &Value| {
        events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == *tid)
            .and_then(|e| e["args"]["name"].as_str())
            .unwrap_or("?")
            .to_string()
    };
    let mut instants: Vec<(f64, String)> = Vec::new();
    for e in events.iter().filter(|e| e["ph"] == "i") {
        let t = name_of(&e["tid"]);
        let what = match e["name"].as_str() {
            Some("reply") => "reply",
            Some("abort") => "abort",
            Some("complete") if !SERVERS.contains(&t.as_str()) => "done",
            _ => continue,
        };
        instants.push((e["ts"].as_f64().unwrap_or(0.0), format!("{t} {what}")));
    }
    // Stable: equal times keep the trace's order.
    instants.sort_by(|a, b| a.0.total_cmp(&b.0));
    instants.into_iter().map(|(_, w)| w).collect()
}

/// A task's (one) response time in the real run, ms.
fn response_ms(v: &Value, task: &str) -> f64 {
    v["tasks"][task]["response_us"]["max"]
        .as_f64()
        .unwrap_or_else(|| panic!("no response for {task}: {v}"))
        / 1000.0
}

/// When `thread`'s first log entry containing `what` ended (µs).
fn logged_at(v: &Value, thread: &str, what: &str) -> f64 {
    v["log"]
        .as_array()
        .expect("a log")
        .iter()
        .find(|e| e["thread"] == thread && e["event"].as_str().unwrap_or("").contains(what))
        .and_then(|e| e["at_us"].as_f64())
        .unwrap_or_else(|| panic!("{thread} never logged {what}: {}", v["log"]))
}

/// Runs `name` on real threads and compares its order of events with the
/// simulation's; returns the real run's JSON.
fn same_order_as_simulated(test: &str, name: &str) -> Option<Value> {
    same_order_as_simulated_file(test, &example(name))
}

/// [`same_order_as_simulated`] for any scenario file.
fn same_order_as_simulated_file(test: &str, file: &Path) -> Option<Value> {
    let _rt = rt_or_skip(test)?;
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let (rc, v, err) = run_logged(file);
    assert_eq!(rc, 0, "{name}: {err}");
    let real = real_order(&v);
    let sim = sim_order(file);
    eprintln!("{name}: real {real:?}\n{name}: sim  {sim:?}");
    assert_eq!(real, sim, "{name}: log {}", v["log"]);
    Some(v)
}

#[test]
fn fig3_donation_the_server_runs_on_the_callers_time() {
    let Some(v) = same_order_as_simulated("donation::fig3", "nova-fig3-donation.json") else {
        return;
    };
    // T (prio 20, released at 2 ms) waits for S serving C at C's priority
    // 30: C completes first although its job is longer.
    assert!(
        logged_at(&v, "S", ": reply (C's call)") < logged_at(&v, "T", "tasks.T.run"),
        "{}",
        v["log"]
    );
}

#[test]
fn fig3_helping_a_passive_server_runs_on_its_helpers_time() {
    let Some(v) = same_order_as_simulated("donation::helping", "nova-fig3-helping.json") else {
        return;
    };
    // H helps S finish C's request, S takes H's call at once (on H's
    // time, no switch to C at the reply), M waits for both, C last.
    let (c, h, m) = (
        response_ms(&v, "C"),
        response_ms(&v, "H"),
        response_ms(&v, "M"),
    );
    assert!(h < m && m < c, "H {h} < M {m} < C {c} ms");
}

#[test]
fn abort_passive_a_later_caller_helps_the_orphaned_request_finish() {
    let Some(v) = same_order_as_simulated("donation::abort", "nova-abort-passive.json") else {
        return;
    };
    let aborted = |t: &str| v["tasks"][t]["aborted_calls"].as_u64();
    assert_eq!(
        (aborted("S"), aborted("C"), aborted("L")),
        (Some(0), Some(1), Some(0)),
        "{v}"
    );
    // The caller stopped waiting at its timeout (1 ms), not before, and
    // not at the reply: S replies to C's call only after L's release
    // (2 ms; S's 3 ms of work cannot end sooner) — L helped S finish.
    let c = response_ms(&v, "C");
    assert!(
        c >= 1.0,
        "C's call aborted at {c} ms, before its 1 ms timeout"
    );
    assert!(logged_at(&v, "C", "aborted") < logged_at(&v, "S", ": reply (C's call)"));
    assert!(
        logged_at(&v, "S", ": reply (C's call)") >= 2000.0,
        "{}",
        v["log"]
    );
    assert!(c < response_ms(&v, "L"), "{v}");
}

#[test]
fn fig5_the_reply_goes_back_along_the_donation_path() {
    let Some(v) = same_order_as_simulated("donation::fig5", "nova-fig5.json") else {
        return;
    };
    // Z replies to Y on H's time: the CPU stays with Z for H's call, then
    // M, and only then Y (on A's time) replies to A.
    let (a, h, m) = (
        response_ms(&v, "A"),
        response_ms(&v, "H"),
        response_ms(&v, "M"),
    );
    assert!(h < m && m < a, "H {h} < M {m} < A {a} ms");
    assert!(logged_at(&v, "Y", ": call z") > logged_at(&v, "M", "tasks.M.run"));
}

#[test]
fn fig7_servers_that_would_help_each_other_are_a_livelock() {
    let Some(_rt) = rt_or_skip("donation::fig7") else {
        return;
    };
    let name = "nova-fig7.json";
    let (rc, v, err) = run_logged(&example(name));
    assert_eq!(rc, 3, "{err}");
    let sim = heir(["sim".as_ref(), example(name).as_os_str(), "--json".as_ref()]);
    assert_eq!(code(&sim), 3, "{}", stderr(&sim));
    let sim = one_json(&sim);
    assert_eq!(v["deadlock"]["kind"], "livelock", "{v}");
    assert_eq!(v["deadlock"]["cycle"], sim["deadlock"]["cycle"], "{v}");
    assert_eq!(
        v["deadlock"]["cycle"],
        serde_json::json!(["Z", "y", "Y", "z", "Z"])
    );
    // Y's 1 ms, then Z's 1 ms, then Z's call closes the cycle: not sooner
    // than in the simulation; nobody completed a job.
    assert!(logged_at(&v, "Y", "tasks.Y.serve: run") < logged_at(&v, "Z", "tasks.Z.serve: run"));
    let at = v["deadlock"]["at_us"].as_f64().expect("at_us");
    assert!(
        at >= sim["deadlock"]["at_us"].as_f64().expect("sim at_us"),
        "{v}"
    );
    for t in ["Y", "Z", "C"] {
        assert_eq!(v["tasks"][t]["jobs"], 0, "{v}");
    }
}

#[test]
fn a_timeout_reaches_the_end_of_the_donation_chain() {
    // C's call to Y times out at 1 ms while Z, serving Y's nested call,
    // runs on C's time at C's priority: C stops waiting at once (Z yields
    // for the timeout of the chain it serves), T runs its 5 ms, and only
    // then do Z and Y, on their own priority 5, finish the orphaned work.
    let dir = TempDir::new("don-chain");
    let file = dir.write(
        "chain.json",
        r#"{ "global": { "default_policy": "SCHED_FIFO", "ipc": "donation", "duration": 0.012 },
  "tasks": {
    "Y": { "priority": 5, "cpus": [0], "loop": 1, "serve": "y" },
    "Z": { "priority": 5, "cpus": [0], "loop": 1, "serve": "z" },
    "C": { "priority": 20, "cpus": [0], "loop": 1,
           "call": { "server": "y", "run": 500, "timeout": 1000,
                     "call": { "server": "z", "run": 3000 } } },
    "T": { "priority": 10, "cpus": [0], "loop": 1, "run": 5000 } } }"#,
    );
    let Some(v) = same_order_as_simulated_file("donation::chain", &file) else {
        return;
    };
    assert_eq!(v["tasks"]["C"]["aborted_calls"], 1, "{v}");
    assert!(response_ms(&v, "C") < response_ms(&v, "T"), "{v}");
}

#[test]
fn donation_with_pi_cv_off_is_refused_by_heir_run() {
    // Checked before anything runs: no real-time priority needed.
    let o = heir([
        "run".as_ref(),
        example("nova-fig3-donation.json").as_os_str(),
        "--pi-cv".as_ref(),
        "off".as_ref(),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("global.ipc: \"donation\" with PI-CV off (calls that lend nothing) is not supported by heir run"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_handler_that_blocks_on_a_pi_mutex_passes_the_callers_priority_on() {
    let Some(_rt) = rt_or_skip("donation::blocking") else {
        return;
    };
    let file = example("nova-fig5-6-blocking.json");
    let (rc, v, err) = run_logged(&file);
    assert_eq!(rc, 0, "{err}");
    // Z, blocked on m inside B's call, passes B's priority (40) on to O
    // (prio 5, holding m) through the kernel's PI chain: O's section ends
    // before L (prio 10) has finished — without it L would run first, as
    // `--protocol m=none` simulates. Then Z serves B before D (the most
    // urgent lent priority first after its sleep), and L ends last.
    // (O's own completion is not compared with the simulation: at its
    // unlock Z, then L, preempt it before it records its job's end.)
    let o_section = logged_at(&v, "O", "tasks.O.run");
    let b_reply = logged_at(&v, "Z", ": reply (B's call)");
    let d_reply = logged_at(&v, "Z", ": reply (D's call)");
    let l_done = logged_at(&v, "L", "tasks.L.run");
    assert!(
        o_section < b_reply && b_reply < d_reply && d_reply < l_done,
        "{}",
        v["log"]
    );
}

/// A passive server runs as `SCHED_IDLE` on real threads (the kernel lends
/// it each caller's priority while it serves): the table says so, not the
/// file's priority it never runs at.
#[test]
fn a_passive_server_is_shown_as_what_it_runs_as() {
    let Some(_rt) = rt_or_skip("donation::passive_label") else {
        return;
    };
    let file = example("nova-fig3-helping.json");
    let o = heir([
        "run".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "0.05".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("S"))
        .unwrap_or_else(|| panic!("no row for S: {out}"));
    assert!(row.contains("SCHED_IDLE (passive)"), "{row}");
    assert!(!row.contains("SCHED_FIFO"), "{row}");
    // The simulator's table keeps calling it passive.
    let sim = heir(["sim".as_ref(), file.as_os_str()]);
    let sim_out = stdout(&sim);
    let sim_row = sim_out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("S"))
        .unwrap_or_else(|| panic!("no row for S: {sim_out}"));
    assert!(sim_row.contains("passive"), "{sim_row}");
}
