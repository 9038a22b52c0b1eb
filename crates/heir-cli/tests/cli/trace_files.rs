//! `--trace` (Chrome trace-event JSON) and `--svg` (Gantt chart) files.

use serde_json::Value;

use crate::support::*;

/// Simulates table1 for `secs` with both files; returns (trace, svg).
fn table1_files(dir: &TempDir, pi_cv: &str, secs: &str) -> (Value, String) {
    let o = heir([
        "sim",
        &example("table1-client-server.json").display().to_string(),
        "--duration",
        secs,
        "--pi-cv",
        pi_cv,
        "--trace",
        &dir.join("t.json").display().to_string(),
        "--svg",
        &dir.join("t.svg").display().to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("wrote {}", dir.join("t.json").display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("wrote {}", dir.join("t.svg").display())),
        "{out}"
    );
    // Only the targets: no temporary file is left behind.
    assert_eq!(dir.files(), ["t.json", "t.svg"]);
    let trace = serde_json::from_str(&std::fs::read_to_string(dir.join("t.json")).unwrap())
        .expect("the trace is JSON");
    (trace, std::fs::read_to_string(dir.join("t.svg")).unwrap())
}

fn events<'a>(trace: &'a Value, ph: &str) -> Vec<&'a Value> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == ph)
        .collect()
}

fn track_names(trace: &Value, pid: u64) -> Vec<String> {
    events(trace, "M")
        .into_iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == pid)
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_trace_has_cpu_and_task_tracks_and_boost_flows() {
    let dir = TempDir::new("trace-on");
    let (trace, svg) = table1_files(&dir, "on", "1");
    assert_eq!(trace["displayTimeUnit"], "ns");
    assert_eq!(track_names(&trace, 1), ["CPU 0"]);
    assert_eq!(
        track_names(&trace, 2),
        ["Client1", "Client2", "Annoyer", "Server"]
    );
    let exec: Vec<&Value> = events(&trace, "X")
        .into_iter()
        .filter(|e| e["cat"] == "exec")
        .collect();
    // Every execution is on the CPU track and on the task track.
    assert_eq!(
        exec.iter().filter(|e| e["pid"] == 1).count() * 2,
        exec.len()
    );
    // With PI-CV the server runs boosted by a waiting client: flows join
    // the donor's track to the server's.
    let s = events(&trace, "s");
    let f = events(&trace, "f");
    assert!(!s.is_empty());
    assert_eq!(s.len(), f.len());
    for (a, b) in s.iter().zip(&f) {
        assert_eq!(a["id"], b["id"]);
        assert_eq!(b["bp"], "e");
    }
    let boosted: Vec<&&Value> = exec
        .iter()
        .filter(|e| e["args"].get("donor").is_some())
        .collect();
    assert!(!boosted.is_empty());
    for e in &boosted {
        assert_eq!(e["name"], "Server");
        let donor = e["args"]["donor"].as_str().unwrap();
        assert!(donor == "Client1" || donor == "Client2", "{donor}");
    }
    // Calls and replies are instants on the tasks' tracks.
    let names: Vec<&str> = events(&trace, "i")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"call") && names.contains(&"release"));

    // The SVG: one lane per thread, most urgent on top, boosted bars.
    assert!(svg.starts_with("<?xml"));
    let lanes: Vec<&str> = svg
        .split(r#"<g class="lane" data-thread=""#)
        .skip(1)
        .map(|r| &r[..r.find('"').unwrap()])
        .collect();
    assert_eq!(lanes, ["Client1", "Client2", "Annoyer", "Server"]);
    assert!(svg.contains(r#"class="boosted""#));
}

#[test]
fn without_pi_cv_the_server_is_never_boosted_by_a_client() {
    let dir = TempDir::new("trace-off");
    let (trace, svg) = table1_files(&dir, "off", "1");
    let boosted_exec = events(&trace, "X")
        .into_iter()
        .filter(|e| e["cat"] == "exec" && e["args"].get("donor").is_some())
        .count();
    assert_eq!(boosted_exec, 0);
    assert_eq!(svg.matches(r#"class="boosted""#).count(), 0);
}
