//! `heir analyze` and `heir sweep` end to end: the built binary on the
//! bundled examples and on files written into unique temporary directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

fn heir<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heir"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run heir")
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

fn out(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

/// Exactly one JSON object on stdout.
fn one_json(o: &Output) -> Value {
    let text = out(o);
    let mut it = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let v = it.next().expect("JSON on stdout").expect("valid JSON");
    assert!(it.next().is_none(), "one JSON value only");
    v
}

/// A fresh empty directory.
fn temp_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "heir-analyze-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn files_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn analyze_json_is_the_documented_object() {
    let o = heir(&["analyze", &example("table1-client-server.json"), "--json"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let v = one_json(&o);
    assert_eq!(v["schedulable"], true);
    let tasks = v["tasks"].as_object().unwrap();
    assert_eq!(
        tasks.keys().collect::<Vec<_>>(),
        ["Client1", "Client2", "Annoyer"]
    );
    assert_eq!(v["tasks"]["Client1"]["wcrt_us"], 19000.0);
    assert_eq!(v["tasks"]["Client2"]["wcrt_us"], 29000.0);
    assert_eq!(v["tasks"]["Annoyer"]["wcrt_us"], 39000.0);
    assert_eq!(v["tasks"]["Client1"]["blocking_us"], 4500.0);
    assert_eq!(v["tasks"]["Client2"]["deadline_us"], 50000.0);
}

#[test]
fn analyze_text_table() {
    let o = heir(&["analyze", &example("table1-client-server.json")]);
    assert_eq!(code(&o), 0);
    let text = out(&o);
    assert!(
        text.contains("as written (PI-CV on); times in ms"),
        "{text}"
    );
    let row = text.lines().find(|l| l.starts_with("Client1")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["Client1", "0", "90", "40.000", "10.000", "14.500", "4.500", "19.000", "40.000", "yes"]
    );
    assert!(text.contains("schedulable: every task meets its deadline"));
}

#[test]
fn analyze_unbounded_is_null_with_a_reason() {
    let o = heir(&[
        "analyze",
        &example("table1-client-server.json"),
        "--protocol",
        "inherit",
        "--json",
    ]);
    assert_eq!(code(&o), 0);
    let v = one_json(&o);
    assert_eq!(v["schedulable"], false);
    assert!(v["tasks"]["Client1"]["wcrt_us"].is_null());
    assert!(v["tasks"]["Client1"]["blocking_us"].is_null());
    let o = heir(&[
        "analyze",
        &example("table1-client-server.json"),
        "--protocol",
        "inherit",
    ]);
    let text = out(&o);
    assert!(text.contains("unbounded"), "{text}");
    assert!(
        text.contains("Client1: unbounded priority inversion"),
        "{text}"
    );
}

/// `--pi-cv on|off` replaces the file's `global.pi_cv`, as `heir sim`'s:
/// Table I without PI-CV is unbounded (the header says so), and it may not
/// contradict a `--protocol` family.
#[test]
fn analyze_pi_cv_replaces_the_files() {
    let table1 = example("table1-client-server.json");
    let o = heir(&["analyze", &table1, "--pi-cv", "off"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("as written (PI-CV off)"), "{text}");
    assert!(
        text.contains("Client1: unbounded priority inversion: while it waits for a reply from server Server (priority 50, no PI-CV)"),
        "{text}"
    );
    let o = heir(&["analyze", &table1, "--pi-cv", "on", "--json"]);
    assert_eq!(one_json(&o)["tasks"]["Client1"]["wcrt_us"], 19000.0);
    let o = heir(&["analyze", &table1, "--pi-cv", "on", "--protocol", "inherit"]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("--pi-cv on contradicts --protocol inherit"),
        "{}",
        err(&o)
    );
}

#[test]
fn compare_puts_table_ii_side_by_side() {
    let o = heir(&[
        "analyze",
        &example("table1-client-server.json"),
        "--compare",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let v = one_json(&o);
    for name in ["Client1", "Client2", "Annoyer"] {
        let t = &v["tasks"][name];
        let (bound, sim) = (
            t["wcrt_us"].as_f64().unwrap(),
            t["sim_max_us"].as_f64().unwrap(),
        );
        assert!(sim <= bound, "{name}: simulated {sim} > bound {bound}");
        assert!(t.get("real_max_us").is_none());
    }
    // The synchronous release at 0 reproduces Client2's worst case exactly.
    assert_eq!(v["tasks"]["Client2"]["sim_max_us"], 29000.0);
    let o = heir(&[
        "analyze",
        &example("table1-client-server.json"),
        "--compare",
        "--duration",
        "1",
    ]);
    assert_eq!(code(&o), 0);
    let text = out(&o);
    assert!(
        text.contains("response times in ms: analytical bound vs observed maximum"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("analytical worst case"))
        .unwrap();
    assert_eq!(
        row.split_whitespace().skip(3).collect::<Vec<_>>(),
        ["19.000", "29.000", "39.000"]
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("simulated maximum (1.0 s)"))
        .unwrap();
    assert_eq!(row.split_whitespace().nth(5), Some("29.000"));
    assert!(!text.contains("exceeds the bound"));
}

#[test]
fn real_needs_compare_and_compare_needs_the_files_protocol() {
    let o = heir(&["analyze", &example("table1-client-server.json"), "--real"]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("--compare"), "{}", err(&o));
    let o = heir(&[
        "analyze",
        &example("table1-client-server.json"),
        "--compare",
        "--protocol",
        "ceiling",
    ]);
    assert_eq!(code(&o), 2);
    assert!(out(&o).is_empty());
    assert!(
        err(&o).contains("--protocol ceiling would compare two different systems"),
        "{}",
        err(&o)
    );
}

#[test]
fn bad_input_exits_2_with_the_position_and_prints_nothing() {
    let o = heir(&["analyze", &example("deadlock-two-locks.json")]);
    assert_eq!(code(&o), 2);
    assert!(out(&o).is_empty());
    let e = err(&o);
    assert!(
        e.contains("deadlock-two-locks.json:22:4: at tasks.A.lock1: cycle of critical sections m1 -> m2 -> m1"),
        "{e}"
    );
    // No period.
    let o = heir(&["analyze", &example("fig6-producer-consumer.json"), "--json"]);
    assert_eq!(code(&o), 2);
    assert!(out(&o).is_empty());
    assert!(
        err(&o).contains("fig6-producer-consumer.json:25:3: at tasks.Consumer: task Consumer"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("has no \"timer\""), "{}", err(&o));
    // Utilisation above 1.
    let d = temp_dir();
    let f = d.join("hog.json");
    std::fs::write(
        &f,
        r#"{ "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
  "tasks": { "hog": { "priority": 10, "cpus": [0], "run": 12000,
    "timer": { "ref": "unique", "period": 10000 } } } }"#,
    )
    .unwrap();
    let o = heir(&["analyze", f.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("hog.json:3:5: at tasks.hog.timer: task hog needs 12000 µs per job every 10000 µs: utilisation 1.200 > 1"), "{}", err(&o));
    // Missing file.
    let o = heir(&["analyze", d.join("nope.json").to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("cannot read"));
    std::fs::remove_dir_all(&d).unwrap();
}

const SWEEP: &str = r#"{
  "seed": 3,
  "tasks": 6,
  "sets_per_point": 40,
  "utilisation": { "from": 0.2, "to": 1.0, "step": 0.2 },
  "periods_us": { "min": 10000, "max": 100000 },
  "critical_sections": { "profile": "medium", "resources": 2, "access_probability": 0.5 },
  "rpc": { "servers": 1, "call_probability": 0.5, "call_us": [100, 1000] },
  "output": { "csv": "OUT.csv", "svg": "OUT.svg" }
}"#;

#[test]
fn sweep_writes_csv_and_svg_and_ignores_the_thread_count() {
    let d = temp_dir();
    let cfg = d.join("s.json");
    let text = SWEEP
        .replace("OUT.csv", d.join("a.csv").to_str().unwrap())
        .replace("OUT.svg", d.join("a.svg").to_str().unwrap());
    std::fs::write(&cfg, text).unwrap();
    let o = heir(&["sweep", cfg.to_str().unwrap(), "--threads", "1"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        out(&o).contains("6 tasks, 40 sets per point, seed 3"),
        "{}",
        out(&o)
    );
    let b_csv = d.join("b.csv");
    let b_svg = d.join("b.svg");
    let o = heir(&[
        "sweep",
        cfg.to_str().unwrap(),
        "--threads",
        "2",
        "--csv",
        b_csv.to_str().unwrap(),
        "--svg",
        b_svg.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(files_in(&d), ["a.csv", "a.svg", "b.csv", "b.svg", "s.json"]);
    let a = std::fs::read_to_string(d.join("a.csv")).unwrap();
    assert_eq!(a, std::fs::read_to_string(&b_csv).unwrap());
    assert_eq!(
        a.lines().next(),
        Some("utilisation,sets,none,inherit,ceiling,pi-cv")
    );
    assert_eq!(a.lines().count(), 6);
    let svg = std::fs::read_to_string(d.join("a.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 4);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sweep_bad_config_exits_2_and_writes_nothing() {
    let d = temp_dir();
    let cfg = d.join("s.json");
    let text = SWEEP
        .replace("OUT.csv", d.join("a.csv").to_str().unwrap())
        .replace("OUT.svg", d.join("a.svg").to_str().unwrap());
    std::fs::write(&cfg, text.replace("\"medium\"", "\"huge\"")).unwrap();
    let o = heir(&["sweep", cfg.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("s.json:7:"), "{}", err(&o));
    assert!(err(&o).contains("unknown variant `huge`"), "{}", err(&o));
    std::fs::write(&cfg, text.replace("\"step\": 0.2", "\"step\": 0")).unwrap();
    let o = heir(&["sweep", cfg.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("s.json: at utilisation.step: expected a step > 0, got 0"),
        "{}",
        err(&o)
    );
    // An output directory that does not exist: refused before any work.
    std::fs::write(&cfg, &text).unwrap();
    let o = heir(&[
        "sweep",
        cfg.to_str().unwrap(),
        "--svg",
        d.join("no/such/dir.svg").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(out(&o).is_empty());
    assert_eq!(files_in(&d), ["s.json"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sweep_without_output_needs_csv_and_svg_flags() {
    // `output` is optional in the configuration (the Python package keeps
    // the result in memory); heir sweep then takes the paths from its flags.
    let d = temp_dir();
    let cfg = d.join("s.json");
    let text = SWEEP.replace(
        ",\n  \"output\": { \"csv\": \"OUT.csv\", \"svg\": \"OUT.svg\" }",
        "",
    );
    assert!(!text.contains("output"), "{text}");
    std::fs::write(&cfg, &text).unwrap();
    let o = heir(&[
        "sweep",
        cfg.to_str().unwrap(),
        "--svg",
        d.join("a.svg").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains(
            "s.json: at output: the configuration has no output.csv: expected one, or --csv PATH"
        ),
        "{}",
        err(&o)
    );
    assert_eq!(files_in(&d), ["s.json"]);
    let o = heir(&[
        "sweep",
        cfg.to_str().unwrap(),
        "--csv",
        d.join("a.csv").to_str().unwrap(),
        "--svg",
        d.join("a.svg").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(files_in(&d), ["a.csv", "a.svg", "s.json"]);
    std::fs::remove_dir_all(&d).unwrap();
}
