//! `heir run --json`: the simulator's report (`mode: "real"`) and
//! `"apply"`, what heir-rt applied to the kernel during the run and what it
//! could not; the table says the latter only when there is any.

use crate::support::*;

#[test]
fn the_report_keys_then_apply_all_clean() {
    let Some(_rt) = rt_or_skip("run_json") else {
        return;
    };
    let file = example("fig7-transitive.json");
    let o = heir([
        "run".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "0.2".as_ref(),
        "--json".as_ref(),
    ]);
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
    assert_eq!(r["mode"], "real");
    // The disturbance is measured (as root): its keys, whatever it found.
    let d = &r["disturbance"];
    assert_eq!(d["measured"], true, "{d}");
    assert_eq!(
        keys(d),
        [
            "measured",
            "cpus",
            "lost_ms",
            "jobs",
            "by",
            "fair_server",
            "dropped",
            "wakeup_latency",
            "deadline_behind_fair",
            "idle_behind_fair"
        ]
    );
    let a = &r["apply"];
    assert_eq!(
        keys(a),
        [
            "setattr_calls",
            "setattr_errors",
            "last_setattr_error",
            "unexpressible",
            "last_unexpressible",
            "vanished",
            "engine_errors",
            "last_engine_error"
        ]
    );
    // The helper's boosts were applied, and nothing went wrong.
    assert!(a["setattr_calls"].as_u64().unwrap() > 0, "{a}");
    for k in [
        "setattr_errors",
        "unexpressible",
        "vanished",
        "engine_errors",
    ] {
        assert_eq!(a[k], 0, "{k}: {a}");
    }
    for k in [
        "last_setattr_error",
        "last_unexpressible",
        "last_engine_error",
    ] {
        assert!(a[k].is_null(), "{k}: {a}");
    }

    let o = heir([
        "run".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "0.2".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains("heir run:"), "{}", stdout(&o));
}

#[test]
fn compare_simulates_the_same_file_beside_the_real_run() {
    let Some(_rt) = rt_or_skip("run_json") else {
        return;
    };
    let file = example("fig7-transitive.json");
    let args = |json: bool| {
        let mut a = vec![
            "run".to_string(),
            file.display().to_string(),
            "--duration".into(),
            "0.2".into(),
            "--compare".into(),
        ];
        if json {
            a.push("--json".into());
        }
        a
    };
    let o = heir(args(true));
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
            "calibration",
            "simulated"
        ]
    );
    let sim = &r["simulated"];
    assert_eq!(sim["mode"], "sim");
    assert_eq!(sim["duration_us"], 200_000.0);
    // The same tasks, and the simulated ones exactly what `heir sim` gives.
    assert_eq!(keys(&sim["tasks"]), keys(&r["tasks"]));
    let alone = heir([
        "sim".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "0.2".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(&one_json(&alone)["tasks"], &sim["tasks"]);

    let o = heir(args(false));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("real beside simulated (heir sim of the same file, 0.200 s)"),
        "{out}"
    );
    assert!(out.contains("jobs real  sim  misses real  sim"), "{out}");
}

/// Two periodic tasks on one CPU, each job one `run`.
const PERIODIC: &str = r#"{
  "global": { "duration": 1, "default_policy": "SCHED_FIFO" CAL },
  "tasks": {
    "A": { "priority": 30, "cpus": [0], "run": 1000, "timer": { "ref": "A", "period": 10000 } },
    "B": { "priority": 20, "cpus": [0], "run": 3000, "timer": { "ref": "B", "period": 20000 } }
  }
}"#;

#[test]
fn calibration_per_cpu_and_each_jobs_run_error_are_reported() {
    let Some(_rt) = rt_or_skip("run_json") else {
        return;
    };
    let dir = TempDir::new("run-calibration");
    let run = |cal: &str, json: bool| {
        let file = dir.write("periodic.json", &PERIODIC.replace("CAL", cal));
        let mut a = vec![
            "run".to_string(),
            file.display().to_string(),
            "--duration".into(),
            "0.2".into(),
        ];
        if json {
            a.push("--json".into());
        }
        let o = heir(a);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        o
    };

    // Measured: one figure per CPU of the run (the file's CPU 0, wherever
    // it was placed), after rt-app's at least 5 samples.
    let r = one_json(&run("", true));
    let c = &r["calibration"];
    assert_eq!(
        keys(c),
        [
            "source",
            "ns_per_loop",
            "samples",
            "run_jobs",
            "run_error_pct",
            "run_wall_error_pct"
        ]
    );
    assert_eq!(c["source"], "measured");
    let cpus = keys(&c["ns_per_loop"]);
    assert_eq!(cpus.len(), 1, "{c}");
    assert!(c["ns_per_loop"][cpus[0]].as_f64().unwrap() > 0.0, "{c}");
    assert!(c["samples"][cpus[0]].as_u64().unwrap() >= 5, "{c}");
    // Every completed job ran, and each is counted.
    let jobs: u64 = ["A", "B"]
        .iter()
        .map(|t| r["tasks"][t]["jobs"].as_u64().unwrap())
        .sum();
    assert!(jobs > 0, "{r}");
    assert_eq!(c["run_jobs"], jobs, "{c}");
    for k in ["run_error_pct", "run_wall_error_pct"] {
        assert_eq!(keys(&c[k]), ["p50", "p99"], "{c}");
        assert!(c[k]["p99"].as_f64().unwrap() >= c[k]["p50"].as_f64().unwrap());
    }
    // A `run` ends on the thread's CPU clock, at most 0.5 µs before its
    // target: never short by more than that (0.05 % of 1 ms).
    assert!(c["run_error_pct"]["p50"].as_f64().unwrap() >= -0.05, "{c}");

    // `global.calibration`: the file's figure on every CPU, no samples;
    // `run` still ends on the CPU clock.
    let r = one_json(&run(r#", "calibration": 3"#, true));
    let c = &r["calibration"];
    assert_eq!(c["source"], "file");
    let cpus = keys(&c["ns_per_loop"]);
    assert_eq!(c["ns_per_loop"][cpus[0]], 3.0, "{c}");
    assert_eq!(c["samples"][cpus[0]], 0, "{c}");
    assert!(c["run_error_pct"]["p50"].as_f64().unwrap() >= -0.05, "{c}");

    let out = stdout(&run("", false));
    assert!(
        out.contains("calibration (measured): ns per loop "),
        "{out}"
    );
    assert!(out.contains(" jobs: p50 "), "{out}");
}
