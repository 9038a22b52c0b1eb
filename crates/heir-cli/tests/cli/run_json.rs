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
        ["mode", "duration_us", "tasks", "deadlock", "apply"]
    );
    assert_eq!(r["mode"], "real");
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
            "apply",
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
