//! The report page in a real browser: headless Chromium (Debian's
//! `chromium`) opens `heir report`'s page of a bundled example, takes a
//! screenshot, and a check script appended to a copy of the page measures
//! every chart's drawing area (`getBBox()` of each CDF's `g.series` and
//! each Gantt chart's `g.bars`) and writes the result into the DOM, read
//! back with `--dump-dom`. Console errors are caught from Chromium's log
//! (`--enable-logging=stderr`): the page itself has no script, so any
//! `CONSOLE` line at all — an uncaught error, a failed load — fails the
//! test; a deliberately broken page first proves the check catches one.
//!
//! The test installs nothing: where Chromium is absent it says so and
//! skips, except under `CI=true`, where that fails (`./test.sh` installs
//! it, as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// Chromium's path, or `None` after saying why (a failure under CI).
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|n| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(n))
                .find(|c| c.is_file())
        })
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "report_browser: chromium not found under CI=true (apt-get install chromium; ./test.sh does it as root)"
        );
        eprintln!(
            "report_browser: SKIPPED: chromium not found (apt-get install chromium; ./test.sh does it as root)"
        );
    }
    found
}

/// Runs Chromium headless on `page` with `args`, at most 120 s: (stdout,
/// stderr).
fn headless(chromium: &Path, profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
    let url = format!("file://{}", page.display());
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let out = std::thread::spawn({
        let mut so = child.stdout.take().unwrap();
        move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut so, &mut s).ok();
            s
        }
    });
    let err = std::thread::spawn({
        let mut se = child.stderr.take().unwrap();
        move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut se, &mut s).ok();
            s
        }
    });
    let t0 = Instant::now();
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (out.join().unwrap(), err.join().unwrap())
}

/// The console lines of Chromium's log.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("CONSOLE")).collect()
}

/// Measures every chart's drawing area into `<pre id="heir-check">`.
const CHECK: &str = r#"<script>
(function () {
  var charts = [];
  document.querySelectorAll("svg.cdf g.series, .gantt svg g.bars").forEach(function (g) {
    var b = g.getBBox();
    charts.push({ kind: g.getAttribute("class"), width: b.width, height: b.height, marks: g.childElementCount });
  });
  var pre = document.createElement("pre");
  pre.id = "heir-check";
  pre.textContent = JSON.stringify({ charts: charts, cdfs: document.querySelectorAll("svg.cdf").length, gantts: document.querySelectorAll(".gantt svg").length });
  document.body.appendChild(pre);
})();
</script>"#;

#[test]
fn the_report_page_renders_in_chromium_with_every_chart_drawn() {
    let Some(chromium) = chromium() else {
        return;
    };
    // A real run too where this process may run real-time threads.
    let real = heir::caps::Capabilities::detect()
        .realtime_missing()
        .is_none();
    let _rt = real.then(|| rt_serial("report_browser"));
    let dir = TempDir::new("report-browser");
    let page = dir.join("report.html");
    let o = heir([
        "report".as_ref(),
        example("table1-client-server.json").as_os_str(),
        "--duration".as_ref(),
        "2".as_ref(),
        "--real".as_ref(),
        if real { "1" } else { "0" }.as_ref(),
        "-o".as_ref(),
        page.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).expect("the page");
    // Self-contained: nothing to fetch, no script of its own.
    assert!(!html.contains("<script"), "the page has a script");
    for bad in ["src=", "href=", "@import", "url(http"] {
        assert!(!html.contains(bad), "the page refers outside: {bad}");
    }

    let profile = dir.join("profile");
    // The console check catches errors: a broken page first.
    let broken = dir.write(
        "broken.html",
        "<!DOCTYPE html><html><body><script>undefinedFn();</script></body></html>",
    );
    let (_, err) = headless(&chromium, &profile, &broken, &["--dump-dom"]);
    assert!(
        console_lines(&err)
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "the console check misses an uncaught error: {err}"
    );

    // The page with the check script appended.
    let checked = dir.write(
        "checked.html",
        &html.replace("</body>", &format!("{CHECK}</body>")),
    );
    let (dom, err) = headless(
        &chromium,
        &profile,
        &checked,
        &["--dump-dom", "--window-size=1300,2000"],
    );
    let console = console_lines(&err);
    assert!(console.is_empty(), "console messages: {console:?}");
    let start = dom.find("<pre id=\"heir-check\">").expect("the check ran") + 21;
    let end = start + dom[start..].find("</pre>").unwrap();
    let check: Value = serde_json::from_str(&dom[start..end].replace("&quot;", "\"")).unwrap();
    let settings = 2;
    let gantts_per_setting = if real { 2 } else { 1 };
    assert_eq!(check["cdfs"], settings, "{check}");
    assert_eq!(check["gantts"], settings * gantts_per_setting, "{check}");
    let charts = check["charts"].as_array().unwrap();
    assert_eq!(charts.len(), settings * (1 + gantts_per_setting), "{check}");
    for c in charts {
        assert!(
            c["width"].as_f64().unwrap() > 100.0 && c["height"].as_f64().unwrap() > 20.0,
            "an empty drawing area: {c}"
        );
        assert!(c["marks"].as_u64().unwrap() >= 4, "too few marks: {c}");
    }
    eprintln!(
        "report_browser: {} charts drawn (real run: {real}): {}",
        charts.len(),
        check["charts"]
    );

    // The screenshot.
    let shot = dir.join("report.png");
    let (_, err) = headless(
        &chromium,
        &profile,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1300,4200",
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {err}"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert!(
        png.len() > 50_000,
        "a blank screenshot? {} bytes",
        png.len()
    );
    assert!(console_lines(&err).is_empty(), "{err}");
}

/// A measured maximum above its task's analysis bound (the demo's Annoyer,
/// real 50.0 ms against a 39.0 ms bound) is flagged where a reader sees
/// it: in Chromium's DOM, the real maximum's cell is `td.over-bound`,
/// drawn in red on a tinted background with the ▲ mark, and the notes say
/// by how much.
#[test]
fn a_maximum_above_its_bound_is_flagged_visibly_in_chromium() {
    use heir_viz::report::{Face, FaceReport, ReportPage, SettingReport, TaskFigures};
    let Some(chromium) = chromium() else {
        return;
    };
    let row = |max_ms: f64| TaskFigures {
        jobs: Some(10),
        misses: Some(0),
        mean_us: Some(max_ms * 500.0),
        p90_us: Some(max_ms * 900.0),
        p99_us: Some(max_ms * 990.0),
        max_us: Some(max_ms * 1000.0),
    };
    let page = ReportPage {
        title: "over-bound check".into(),
        intro: vec!["A real run above the bound.".into()],
        tasks: vec!["Annoyer".into(), "Client".into()],
        settings: vec![SettingReport {
            label: "PI-CV on".into(),
            params: vec![("PI-CV".into(), "on".into())],
            faces: vec![
                FaceReport {
                    face: Face::Simulated,
                    label: "simulated".into(),
                    rows: vec![row(38.0), row(10.0)],
                    samples: Vec::new(),
                },
                FaceReport {
                    face: Face::Analysed,
                    label: "analysis bound".into(),
                    rows: vec![
                        TaskFigures {
                            max_us: Some(39_000.0),
                            ..TaskFigures::default()
                        },
                        TaskFigures {
                            max_us: Some(20_000.0),
                            ..TaskFigures::default()
                        },
                    ],
                    samples: Vec::new(),
                },
                FaceReport {
                    face: Face::Real,
                    label: "real".into(),
                    rows: vec![row(50.0), row(12.0)],
                    samples: Vec::new(),
                },
            ],
            gantts: Vec::new(),
            boosts: Vec::new(),
            inversions: Vec::new(),
        }],
        notes: Vec::new(),
    };
    let dir = TempDir::new("report-over-bound");
    let file = dir.write("page.html", &page.render());
    // What the browser computed for each flagged cell.
    let probe = r#"<script>
var out = [];
document.querySelectorAll("td.over-bound").forEach(function (td) {
  var s = getComputedStyle(td);
  var r = td.getBoundingClientRect();
  out.push({ text: td.textContent, color: s.color, background: s.backgroundColor,
             weight: s.fontWeight, visible: r.width > 0 && r.height > 0 && s.visibility === "visible" });
});
var notes = [];
document.querySelectorAll("li.over-bound").forEach(function (li) { notes.push(li.textContent); });
var pre = document.createElement("pre");
pre.id = "heir-check";
pre.textContent = JSON.stringify({ cells: out, notes: notes });
document.body.appendChild(pre);
</script>"#;
    let html = std::fs::read_to_string(&file).unwrap();
    let checked = dir.write(
        "checked.html",
        &html.replace("</body>", &format!("{probe}</body>")),
    );
    let profile = dir.join("profile");
    let (dom, err) = headless(&chromium, &profile, &checked, &["--dump-dom"]);
    assert!(console_lines(&err).is_empty(), "{err}");
    let start = dom.find("<pre id=\"heir-check\">").expect("the check ran") + 21;
    let end = start + dom[start..].find("</pre>").unwrap();
    let check: Value = serde_json::from_str(&dom[start..end].replace("&quot;", "\"")).unwrap();
    let cells = check["cells"].as_array().unwrap();
    // Exactly one cell: the real maximum of Annoyer (Client's 12 ms is
    // under its 20 ms bound, the simulated 38 under 39).
    assert_eq!(cells.len(), 1, "{check}");
    let c = &cells[0];
    assert!(c["text"].as_str().unwrap().contains("50.000"), "{c}");
    assert!(c["text"].as_str().unwrap().contains('▲'), "{c}");
    assert_eq!(c["color"], "rgb(176, 0, 0)", "{c}");
    assert_eq!(c["background"], "rgb(253, 236, 234)", "{c}");
    assert_eq!(c["weight"], "700", "{c}");
    assert_eq!(c["visible"], true, "{c}");
    let notes = check["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{check}");
    let n = notes[0].as_str().unwrap();
    assert!(
        n.contains("Annoyer") && n.contains("50.000") && n.contains("39.000"),
        "{n}"
    );
}
