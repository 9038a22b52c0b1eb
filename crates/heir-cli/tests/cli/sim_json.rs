//! `heir sim --json`: exactly one JSON object, the report schema, exact
//! values.

use serde_json::Value;

use crate::support::*;

fn sim_json(file: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "sim".to_string(),
        example(file).display().to_string(),
        "--json".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = heir(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    one_json(&o)
}

fn max_us(r: &Value, task: &str) -> f64 {
    r["tasks"][task]["response_us"]["max"].as_f64().unwrap()
}

#[test]
fn table1_schema_and_values_with_pi_cv_on() {
    let r = sim_json("table1-client-server.json", &[]);
    assert_eq!(
        keys(&r),
        ["mode", "cpus", "duration_us", "tasks", "deadlock"]
    );
    assert_eq!(r["mode"], "sim");
    assert_eq!(r["cpus"], 1);
    assert_eq!(r["duration_us"].as_f64(), Some(60e6));
    assert_eq!(r["deadlock"], Value::Null);
    assert_eq!(
        keys(&r["tasks"]),
        ["Client1", "Client2", "Annoyer", "Server"]
    );
    for (_, t) in r["tasks"].as_object().unwrap() {
        assert_eq!(
            keys(t),
            [
                "jobs",
                "deadline_misses",
                "unfinished_misses",
                "response_us",
                "migrations"
            ]
        );
        assert_eq!(
            keys(&t["response_us"]),
            ["min", "mean", "p50", "p90", "p99", "max"]
        );
        // One CPU: nobody migrates.
        assert_eq!(t["migrations"], 0);
    }
    // The PI-CV paper's Table II: the analytic bounds, met exactly by Client2.
    assert_eq!(max_us(&r, "Client2"), 29000.0);
    assert!(max_us(&r, "Client1") <= 19000.0);
    // Periodic clients, released every 40 / 50 / 60 ms over 60 s; every
    // job ends well before the next release (no miss).
    assert_eq!(r["tasks"]["Client1"]["jobs"], 1500);
    assert_eq!(r["tasks"]["Client2"]["jobs"], 1200);
    assert_eq!(r["tasks"]["Annoyer"]["jobs"], 1000);
    for t in ["Client1", "Client2", "Annoyer"] {
        assert_eq!(r["tasks"][t]["deadline_misses"], 0, "{t}");
        assert_eq!(r["tasks"][t]["unfinished_misses"], 0, "{t}");
    }
    // A client needs at least its 10 ms of work and its 4.5 ms call.
    assert_eq!(
        r["tasks"]["Client1"]["response_us"]["min"].as_f64(),
        Some(14500.0)
    );
    assert_eq!(
        r["tasks"]["Client2"]["response_us"]["min"].as_f64(),
        Some(14500.0)
    );
}

#[test]
fn table1_is_worse_without_pi_cv() {
    let on = sim_json("table1-client-server.json", &[]);
    let off = sim_json("table1-client-server.json", &["--pi-cv", "off"]);
    for t in ["Client1", "Client2"] {
        assert!(max_us(&off, t) > max_us(&on, t), "{t}");
    }
    assert!(max_us(&off, "Client1") > 19000.0);
    assert!(max_us(&off, "Client2") > 29000.0);
}

#[test]
fn flags_override_the_file() {
    let r = sim_json(
        "table1-client-server.json",
        &["--duration", "1", "--seed", "7"],
    );
    assert_eq!(r["duration_us"].as_f64(), Some(1e6));
    // Releases at 0, 40, …, 960 ms.
    assert_eq!(r["tasks"]["Client1"]["jobs"], 25);
    let r = sim_json("table1-client-server.json", &["--duration", "0.5"]);
    assert_eq!(r["duration_us"].as_f64(), Some(500_000.0));
}

#[test]
fn reproducible_bit_for_bit() {
    let args = [
        "sim".to_string(),
        example("table1-client-server.json").display().to_string(),
        "--json".to_string(),
    ];
    let a = heir(&args);
    let b = heir(&args);
    assert_eq!(code(&a), 0);
    assert_eq!(a.stdout, b.stdout);
}

/// Per task of a `--json` report: (name, jobs, misses, max ms, migrations).
fn figures(r: &Value) -> Vec<(String, u64, u64, f64, u64)> {
    r["tasks"]
        .as_object()
        .expect("tasks")
        .iter()
        .map(|(n, t)| {
            (
                n.clone(),
                t["jobs"].as_u64().expect("jobs"),
                t["deadline_misses"].as_u64().expect("misses"),
                t["response_us"]["max"].as_f64().expect("max") / 1000.0,
                t["migrations"].as_u64().expect("migrations"),
            )
        })
        .collect()
}

fn rows(r: &[(&str, u64, u64, f64, u64)]) -> Vec<(String, u64, u64, f64, u64)> {
    r.iter()
        .map(|&(n, j, m, x, g)| (n.to_string(), j, m, x, g))
        .collect()
}

#[test]
fn mbwi_fig3_with_and_without_affinity_inheritance() {
    // The file: "bwi_affinity": true — no miss, tau1 migrates twice.
    let r = sim_json("mbwi-fig3.json", &[]);
    assert_eq!(r["cpus"], 2);
    assert_eq!(
        figures(&r),
        rows(&[
            ("tau1", 1, 0, 9.0, 2),
            ("tau2", 1, 0, 6.0, 0),
            ("tau3", 1, 0, 5.0, 0)
        ])
    );
    // The same file with "bwi_affinity": false: tau3 misses at 11 ms.
    let text = std::fs::read_to_string(example("mbwi-fig3.json")).expect("the example");
    let off = text.replace("\"bwi_affinity\" : true", "\"bwi_affinity\" : false");
    assert_ne!(off, text);
    let dir = TempDir::new("fig3-off");
    let file = dir.write("fig3-off.json", &off);
    let o = heir(["sim".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        figures(&one_json(&o)),
        rows(&[
            ("tau1", 1, 0, 13.0, 0),
            ("tau2", 1, 0, 6.0, 0),
            ("tau3", 1, 1, 9.0, 0)
        ])
    );
}

#[test]
fn mbwi_fig6_under_each_protocol() {
    let bwi = rows(&[
        ("tau1", 1, 0, 4.0, 0),
        ("tau2", 1, 0, 8.0, 0),
        ("tau3", 1, 0, 9.0, 1),
        ("tau4", 1, 0, 7.0, 0),
    ]);
    let other = rows(&[
        ("tau1", 1, 0, 8.0, 0),
        ("tau2", 1, 0, 8.0, 0),
        ("tau3", 1, 0, 9.0, 0),
        ("tau4", 1, 0, 4.0, 0),
    ]);
    assert_eq!(figures(&sim_json("mbwi-fig6.json", &[])), bwi);
    for p in ["inherit", "none"] {
        let r = sim_json("mbwi-fig6.json", &["--protocol", &format!("all={p}")]);
        assert_eq!(figures(&r), other, "{p}");
    }
}
