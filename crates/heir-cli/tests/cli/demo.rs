//! `heir demo`: Table II side by side, and the SVGs of both runs.

use serde_json::Value;

use crate::support::*;

#[test]
fn prints_table_ii_and_writes_both_charts() {
    let dir = TempDir::new("demo");
    let out_dir = dir.join("out");
    let o = heir([
        "demo".as_ref(),
        "--real-seconds".as_ref(),
        "0".as_ref(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let line = |start: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in\n{out}"))
            .split_whitespace()
            .collect()
    };
    assert_eq!(
        line("sim, no PI-CV"),
        ["sim,", "no", "PI-CV", "sim,", "PI-CV"]
    );
    assert_eq!(
        line("Statistic"),
        ["Statistic", "Client1", "Client2", "Client1", "Client2"]
    );
    // heir Maximum: no PI-CV C1 C2, PI-CV C1 C2.
    let max = line("heir Maximum");
    assert_eq!(max.len(), 6);
    assert_eq!(max[5], "29.000");
    let on_c1: f64 = max[4].parse().unwrap();
    assert!(on_c1 <= 19.0);
    let off_c1: f64 = max[2].parse().unwrap();
    let off_c2: f64 = max[3].parse().unwrap();
    assert!(off_c1 > 19.0 && off_c2 > 29.0, "{max:?}");
    // The paper's rows, and the analytical worst case under PI-CV only.
    assert_eq!(
        line("paper Maximum"),
        ["paper", "Maximum", "33.760", "38.550", "18.995", "28.996"]
    );
    assert_eq!(
        line("Analytical Worst-Case"),
        ["Analytical", "Worst-Case", "-", "-", "19.000", "29.000"]
    );
    // Both charts and both traces, their paths printed.
    let mut files: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "demo-picv-off.svg",
            "demo-picv-off.trace.json",
            "demo-picv-on.svg",
            "demo-picv-on.trace.json",
            "report.html"
        ]
    );
    for f in &files {
        assert!(
            out.contains(&format!("wrote {}", out_dir.join(f).display())),
            "{f} not printed"
        );
    }
    let on = std::fs::read_to_string(out_dir.join("demo-picv-on.svg")).unwrap();
    let off = std::fs::read_to_string(out_dir.join("demo-picv-off.svg")).unwrap();
    assert!(on.contains(r#"class="boosted""#));
    assert!(!off.contains(r#"class="boosted""#));
    assert_eq!(on.matches(r#"<g class="lane""#).count(), 4);
    // The report page: both settings simulated and analysed, no real run.
    let page = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(page.contains("<th colspan=\"5\">PI-CV off</th><th colspan=\"5\">PI-CV on</th>"));
    assert!(page.contains("No real run"));
    // Client2's bound with PI-CV: 29 ms, as Table II's.
    assert!(page.contains("<td>29.000</td>"));
}

#[test]
fn json_holds_both_reports() {
    let dir = TempDir::new("demo-json");
    let o = heir([
        "demo".as_ref(),
        "--json".as_ref(),
        "--real-seconds".as_ref(),
        "0".as_ref(),
        "--out".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = one_json(&o);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        (&runs[0]["label"], &runs[0]["pi_cv"]),
        (&"sim, no PI-CV".into(), &false.into())
    );
    assert_eq!(
        (&runs[1]["label"], &runs[1]["pi_cv"]),
        (&"sim, PI-CV".into(), &true.into())
    );
    assert_eq!(
        runs[1]["report"]["tasks"]["Client2"]["response_us"]["max"].as_f64(),
        Some(29000.0)
    );
    // heir-analysis: the PI-CV paper's Eq. 1-5 with PI-CV; no bound without it
    // (the server runs at its own priority 50).
    let wc = &runs[1]["analytical_worst_case_us"];
    assert_eq!(wc["Client1"].as_f64(), Some(19000.0));
    assert_eq!(wc["Client2"].as_f64(), Some(29000.0));
    assert_eq!(runs[0]["analytical_worst_case_us"]["Client1"], Value::Null);
    assert_eq!(r["paper_worst_case_ms"]["Client2"].as_f64(), Some(29.0));
    assert_eq!(
        r["paper_measured_ms"]["PI-CV"]["Client2"]["max_ms"].as_f64(),
        Some(28.996)
    );
}

/// With real-time privileges, the demo adds the same scenario on real
/// SCHED_FIFO threads beside the simulation (here for 1 s per setting).
/// Without them it says why and shows the simulation only, except under
/// `CI=true`, where the machines can run real-time threads and must.
#[test]
fn adds_the_real_threads_run_when_it_can() {
    let _rt = rt_serial("demo::real");
    let dir = TempDir::new("demo-real");
    let o = heir([
        "demo".as_ref(),
        "--json".as_ref(),
        "--real-seconds".as_ref(),
        "1".as_ref(),
        "--out".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = one_json(&o);
    let runs = r["runs"].as_array().unwrap();
    if runs.len() == 2 {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but the demo could not run real-time threads: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("no real-threads run"), "{}", stderr(&o));
        eprintln!("skipped: {}", stderr(&o).trim());
        return;
    }
    assert_eq!(runs.len(), 4);
    // The report page has the real runs beside the simulation: a row per
    // client, and, where the kernel could be traced, their Gantt charts.
    let page = std::fs::read_to_string(r["report"].as_str().unwrap()).unwrap();
    assert!(page.contains("<td class=\"l\">real</td>"), "no real rows");
    let traced = !page.contains("Real runs are not traced");
    assert_eq!(
        page.matches("<figure class=\"chart gantt\">").count(),
        if traced { 4 } else { 2 }
    );
    for (run, (label, pi_cv)) in runs[2..]
        .iter()
        .zip([("real, no PI-CV", false), ("real, PI-CV", true)])
    {
        assert_eq!(run["label"], label);
        assert_eq!(run["pi_cv"], pi_cv);
        assert_eq!(run["report"]["mode"], "real");
        // Releases at 0, 40, ..., 960 ms and 0, 50, ..., 950 ms: a job
        // released near the end may still be running when the run stops.
        let jobs = |t: &str| run["report"]["tasks"][t]["jobs"].as_u64().unwrap();
        assert!((24..=25).contains(&jobs("Client1")), "{run}");
        assert!((19..=20).contains(&jobs("Client2")), "{run}");
        assert!((16..=17).contains(&jobs("Annoyer")), "{run}");
    }
}
