//! The report page (`heir report`, `heir demo`): one self-contained HTML
//! file — inline CSS and inline SVG drawn here, no script, nothing fetched
//! — that puts the three faces of a scenario side by side for each setting
//! compared: the simulation, the analysis' bound and the real run.
//!
//! Sections: the settings compared; per task a table of response times
//! (mean, p90, p99, max, misses of jobs) per face and setting; the
//! response-time CDFs per setting (a step line per task: simulated solid,
//! real dashed, the analysis' bound a dotted vertical line); the Gantt
//! charts ([`crate::SvgGantt`]) of the simulation and of the real run, one
//! above the other for the same window; who lent to whom, for how long
//! ([`crate::BoostSummary`]); notes. Printable: charts never break across
//! pages.
//!
//! Charts carry classes the browser test reads: each CDF is an
//! `svg.chart.cdf` whose lines are in `g.series`; each Gantt chart is in a
//! `div.chart.gantt` (its bars in `g.bars`).

use std::fmt::Write as _;

use crate::collect::BoostRow;
use crate::style::{colour, ms, xml};

/// The page's content.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportPage {
    /// The page title (`h1`).
    pub title: String,
    /// Lines under the title (file, seed, durations).
    pub intro: Vec<String>,
    /// The tasks (threads), in row order.
    pub tasks: Vec<String>,
    /// One per setting compared.
    pub settings: Vec<SettingReport>,
    /// Notes at the end (what was not run, and why; dropped events).
    pub notes: Vec<String>,
}

/// One setting's faces, charts and boosts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettingReport {
    /// Its name (`PI-CV off`).
    pub label: String,
    /// What it sets: (parameter, value), e.g. (`PI-CV`, `on`).
    pub params: Vec<(String, String)>,
    /// Its faces: simulated, analysed, real (those there are).
    pub faces: Vec<FaceReport>,
    /// Gantt charts, one above the other: (caption, inline `<svg>`).
    pub gantts: Vec<(String, String)>,
    /// Boosts per face: (face label, rows).
    pub boosts: Vec<(String, Vec<BoostRow>)>,
    /// The priority inversions each face's trace shows (`heir inversions`'
    /// findings), by face label: simulated, real.
    pub inversions: Vec<(String, InversionTable)>,
}

/// The priority inversions one face's trace shows: every wait during
/// which threads of lower base priority than the waiter (outside what it
/// waited for) ran while what it waited for had work (`heir inversions`,
/// docs/EXEC.md).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InversionTable {
    /// Waits seen (on mutexes and condition variables), inverted or not.
    pub waits: usize,
    /// How long lower-priority threads ran in them, in all (ns).
    pub lower_ran_ns: u64,
    /// The inversions, worst (longest delay) first.
    pub worst: Vec<InversionRow>,
}

/// One inversion of an [`InversionTable`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InversionRow {
    pub waiter: String,
    /// The mutex or condition variable, with its kind: `m (mutex)`.
    pub resource: String,
    /// What it waited for: the owner or signaller, then its own chain.
    pub waited_for: Vec<String>,
    /// When the wait began (ns) and how long it took.
    pub from_ns: u64,
    pub delay_ns: u64,
    /// The lower-priority threads that ran meanwhile, longest first (ns).
    pub lower: Vec<(String, u64)>,
}

/// Inversions shown per face on the page, worst first; the rest are
/// counted.
pub const INVERSIONS_SHOWN: usize = 5;

/// A face's maximum above the analysis bound ([`ReportPage::over_bound`]):
/// flagged in the table (`td.over-bound`, [`OVER_BOUND`]) and in the notes.
#[derive(Clone, Debug, PartialEq)]
pub struct OverBound {
    /// Index in [`ReportPage::tasks`].
    pub task: usize,
    /// Index in [`ReportPage::settings`].
    pub setting: usize,
    /// The face (simulated or real) and its label.
    pub face: Face,
    /// The face's label.
    pub label: String,
    /// Its maximum (µs).
    pub max_us: f64,
    /// The bound (µs).
    pub bound_us: f64,
}

/// The marker after a maximum above its bound.
pub const OVER_BOUND: &str = "▲";

/// Which face a column is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Face {
    /// The simulator.
    #[default]
    Simulated,
    /// heir-analysis' bound (the worst case).
    Analysed,
    /// Real threads.
    Real,
}

/// One face's figures of one setting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaceReport {
    /// Which face.
    pub face: Face,
    /// Its label in tables (`simulated`, `analysis bound`, `real`).
    pub label: String,
    /// Per task, in [`ReportPage::tasks`] order.
    pub rows: Vec<TaskFigures>,
    /// Per task, its response times sorted (ns), for the CDF (empty for
    /// the analysis).
    pub samples: Vec<Vec<u64>>,
}

/// One task's figures in one face (µs; `None`: none).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFigures {
    /// Jobs completed.
    pub jobs: Option<u64>,
    /// Deadline misses.
    pub misses: Option<u64>,
    /// Mean response.
    pub mean_us: Option<f64>,
    /// 90th percentile.
    pub p90_us: Option<f64>,
    /// 99th percentile.
    pub p99_us: Option<f64>,
    /// Maximum (for the analysis: the bound).
    pub max_us: Option<f64>,
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1280px;color:#222;padding:0 16px}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ccc;padding-bottom:.2em}
h3{margin:1em 0 .4em}p.intro{margin:.1em 0;color:#555}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td.l,th.l{text-align:left}tr.face-analysed td{color:#555;font-style:italic}
tr.first td{border-top:2px solid #999}
.charts{display:flex;flex-wrap:wrap;gap:16px}
.chart{break-inside:avoid;page-break-inside:avoid;margin:.5em 0}
figure.chart{margin-left:0;margin-right:0}
figure.cdfbox{width:600px;flex:0 0 600px}
.gantt svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#444;margin:.2em 0}
.notes li{margin:.2em 0}
td.over-bound,li.over-bound b{color:#b00000;font-weight:bold}td.over-bound{background:#fdecea}
p.momentary{font-size:.9em;color:#555}
@media print{body{margin:0;max-width:none}h2{break-after:avoid}}
"#;

impl ReportPage {
    /// The page as one HTML document.
    pub fn render(&self) -> String {
        let mut o = String::with_capacity(256 * 1024);
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n",
            xml(&self.title)
        );
        let _ = writeln!(o, "<h1>{}</h1>", xml(&self.title));
        for l in &self.intro {
            let _ = writeln!(o, "<p class=\"intro\">{}</p>", xml(l));
        }
        self.settings_table(&mut o);
        self.response_table(&mut o);
        self.cdfs(&mut o);
        self.gantts(&mut o);
        self.boosts(&mut o);
        self.inversions(&mut o);
        let over = self.over_bound();
        if !self.notes.is_empty() || !over.is_empty() {
            o.push_str("<h2>Notes</h2>\n<ul class=\"notes\">\n");
            for x in &over {
                let why = match x.face {
                    Face::Real => "a real run may exceed it: the analysis counts no kernel or runtime overhead, no other load on the CPU and no calibration error",
                    _ => "a simulation above its bound is a bug in the analysis or in the simulator",
                };
                let _ = writeln!(
                    o,
                    "<li class=\"over-bound\"><b>{OVER_BOUND} {}, {}: the {} maximum, {:.3} ms, is above the analysis bound, {:.3} ms</b> ({why}).</li>",
                    xml(&self.tasks[x.task]),
                    xml(&self.settings[x.setting].label),
                    xml(&x.label),
                    x.max_us / 1000.0,
                    x.bound_us / 1000.0
                );
            }
            for n in &self.notes {
                let _ = writeln!(o, "<li>{}</li>", xml(n));
            }
            o.push_str("</ul>\n");
        }
        o.push_str("</body></html>\n");
        o
    }

    /// Every maximum of a simulated or real face above the analysis bound
    /// of its task and setting: the simulator's compared to the ns (it is
    /// exact), a real run's as measured — as `heir analyze --compare`.
    pub fn over_bound(&self) -> Vec<OverBound> {
        let mut out = Vec::new();
        for (si, s) in self.settings.iter().enumerate() {
            let Some(bounds) = s.faces.iter().find(|f| f.face == Face::Analysed) else {
                continue;
            };
            for f in s.faces.iter().filter(|f| f.face != Face::Analysed) {
                for (ti, row) in f.rows.iter().enumerate() {
                    let bound = bounds.rows.get(ti).and_then(|b| b.max_us);
                    let (Some(max_us), Some(bound_us)) = (row.max_us, bound) else {
                        continue;
                    };
                    let above = match f.face {
                        Face::Real => max_us > bound_us,
                        _ => (max_us * 1000.0).round() > (bound_us * 1000.0).round(),
                    };
                    if above && ti < self.tasks.len() {
                        out.push(OverBound {
                            task: ti,
                            setting: si,
                            face: f.face,
                            label: f.label.clone(),
                            max_us,
                            bound_us,
                        });
                    }
                }
            }
        }
        out
    }

    fn settings_table(&self, o: &mut String) {
        o.push_str("<h2>Settings compared</h2>\n<table class=\"settings\"><tr><th class=\"l\">parameter</th>");
        for s in &self.settings {
            let _ = write!(o, "<th>{}</th>", xml(&s.label));
        }
        o.push_str("</tr>\n");
        let mut keys: Vec<&str> = Vec::new();
        for s in &self.settings {
            for (k, _) in &s.params {
                if !keys.contains(&k.as_str()) {
                    keys.push(k);
                }
            }
        }
        for k in keys {
            let _ = write!(o, "<tr><td class=\"l\">{}</td>", xml(k));
            for s in &self.settings {
                let v = s
                    .params
                    .iter()
                    .find(|(pk, _)| pk == k)
                    .map_or("–", |(_, v)| v.as_str());
                let _ = write!(o, "<td>{}</td>", xml(v));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</table>\n");
    }

    fn response_table(&self, o: &mut String) {
        o.push_str("<h2>Response times (ms)</h2>\n<table class=\"responses\"><tr><th class=\"l\" rowspan=\"2\">task</th><th class=\"l\" rowspan=\"2\">face</th>");
        for s in &self.settings {
            let _ = write!(o, "<th colspan=\"5\">{}</th>", xml(&s.label));
        }
        o.push_str("</tr><tr>");
        for _ in &self.settings {
            o.push_str("<th>mean</th><th>p90</th><th>p99</th><th>max</th><th>misses / jobs</th>");
        }
        o.push_str("</tr>\n");
        // The faces any setting has, in order.
        let mut faces: Vec<(Face, String)> = Vec::new();
        for s in &self.settings {
            for f in &s.faces {
                if !faces.iter().any(|(k, _)| *k == f.face) {
                    faces.push((f.face, f.label.clone()));
                }
            }
        }
        let fmt = |v: Option<f64>| v.map_or("–".to_string(), |us| format!("{:.3}", us / 1000.0));
        let over = self.over_bound();
        for (ti, task) in self.tasks.iter().enumerate() {
            for (fi, (face, label)) in faces.iter().enumerate() {
                let class = match face {
                    Face::Simulated => "face-sim",
                    Face::Analysed => "face-analysed",
                    Face::Real => "face-real",
                };
                let first = if fi == 0 { " first" } else { "" };
                let _ = write!(o, "<tr class=\"{class}{first}\">");
                if fi == 0 {
                    let _ = write!(
                        o,
                        "<td class=\"l\" rowspan=\"{}\"><b>{}</b></td>",
                        faces.len(),
                        xml(task)
                    );
                }
                let _ = write!(o, "<td class=\"l\">{}</td>", xml(label));
                for (si, s) in self.settings.iter().enumerate() {
                    let row = s
                        .faces
                        .iter()
                        .find(|f| f.face == *face)
                        .and_then(|f| f.rows.get(ti));
                    match row {
                        Some(r) => {
                            let jobs = match (r.misses, r.jobs) {
                                (Some(m), Some(j)) => format!("{m} / {j}"),
                                _ => "–".to_string(),
                            };
                            let max = match over
                                .iter()
                                .find(|x| (x.task, x.setting, x.face) == (ti, si, *face))
                            {
                                Some(x) => format!(
                                    "<td class=\"over-bound\" title=\"above the analysis bound, {:.3} ms\">{} {OVER_BOUND}</td>",
                                    x.bound_us / 1000.0,
                                    fmt(r.max_us)
                                ),
                                None => format!("<td>{}</td>", fmt(r.max_us)),
                            };
                            let _ = write!(
                                o,
                                "<td>{}</td><td>{}</td><td>{}</td>{max}<td>{jobs}</td>",
                                fmt(r.mean_us),
                                fmt(r.p90_us),
                                fmt(r.p99_us),
                            );
                        }
                        None => o.push_str("<td colspan=\"5\">not run</td>"),
                    }
                }
                o.push_str("</tr>\n");
            }
        }
        let _ = writeln!(
            o,
            "</table>\n<p>For the analysis, <i>max</i> is heir-analysis' worst-case response time (the bound); {OVER_BOUND} marks a maximum above it (see the notes).</p>"
        );
    }

    fn cdfs(&self, o: &mut String) {
        o.push_str("<h2>Response-time CDFs</h2>\n<div class=\"charts\">\n");
        for s in &self.settings {
            o.push_str("<figure class=\"chart cdfbox\">");
            let _ = write!(
                o,
                "<figcaption>{}: fraction of jobs that completed within a response time; simulated solid, real dashed, analysis bound dotted</figcaption>",
                xml(&s.label)
            );
            o.push_str(&cdf_svg(&self.tasks, s));
            o.push_str("</figure>\n");
        }
        o.push_str("</div>\n");
    }

    fn gantts(&self, o: &mut String) {
        o.push_str("<h2>Schedules</h2>\n");
        for s in &self.settings {
            let _ = writeln!(o, "<h3>{}</h3>", xml(&s.label));
            for (caption, svg) in &s.gantts {
                let _ = writeln!(
                    o,
                    "<figure class=\"chart gantt\"><figcaption>{}</figcaption>{svg}</figure>",
                    xml(caption)
                );
            }
        }
    }

    fn boosts(&self, o: &mut String) {
        o.push_str("<h2>Boosts: who lent to whom</h2>\n");
        for s in &self.settings {
            for (face, rows) in &s.boosts {
                let _ = writeln!(o, "<h3>{}, {}</h3>", xml(&s.label), xml(face));
                if rows.is_empty() {
                    o.push_str("<p>No thread lent its urgency to another.</p>\n");
                    continue;
                }
                let momentary: Vec<String> = rows
                    .iter()
                    .filter(|r| r.momentary > 0)
                    .map(|r| {
                        let times = match r.momentary {
                            1 => "once".to_string(),
                            n => format!("{n} times"),
                        };
                        format!("{} → {} {times}", xml(&r.donor), xml(&r.to))
                    })
                    .collect();
                let timed: Vec<&BoostRow> = rows.iter().filter(|r| r.count > 0).collect();
                if timed.is_empty() {
                    o.push_str("<p>No thread lent its urgency to another for any time.</p>\n");
                } else {
                    self.boost_table(o, &timed);
                }
                if !momentary.is_empty() {
                    let _ = writeln!(
                        o,
                        "<p class=\"momentary\">Not boosts: lent and taken back at the same instant (0 ms, no effect on the schedule): {}.</p>",
                        momentary.join(", ")
                    );
                }
            }
        }
    }

    /// The priority inversions each face's trace shows, per setting.
    fn inversions(&self, o: &mut String) {
        if self.settings.iter().all(|s| s.inversions.is_empty()) {
            return;
        }
        o.push_str("<h2>Priority inversions</h2>\n<p>A wait is a priority inversion when threads of lower base priority than the waiter, other than what it waited for, ran during it while what it waited for had work to do (<code>heir inversions</code> on the face's trace).</p>\n");
        for s in &self.settings {
            for (face, t) in &s.inversions {
                let _ = writeln!(o, "<h3>{}, {}</h3>", xml(&s.label), xml(face));
                let _ = writeln!(
                    o,
                    "<p>{} waits, {} priority inversions; lower-priority threads ran {} ms in them.</p>",
                    t.waits,
                    t.worst.len(),
                    ms(t.lower_ran_ns)
                );
                if t.worst.is_empty() {
                    continue;
                }
                o.push_str("<table class=\"inversions\"><tr><th class=\"l\">waiter</th><th class=\"l\">waited on</th><th class=\"l\">waited for</th><th>from (ms)</th><th>delay (ms)</th><th class=\"l\">lower-priority threads that ran (ms)</th></tr>\n");
                for r in t.worst.iter().take(INVERSIONS_SHOWN) {
                    let lower: Vec<String> = r
                        .lower
                        .iter()
                        .map(|(th, ns)| format!("{} {}", xml(th), ms(*ns)))
                        .collect();
                    let waited = if r.waited_for.is_empty() {
                        "?".to_string()
                    } else {
                        xml(&r.waited_for.join(", "))
                    };
                    let _ = writeln!(
                        o,
                        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                        xml(&r.waiter),
                        xml(&r.resource),
                        waited,
                        ms(r.from_ns),
                        ms(r.delay_ns),
                        lower.join(", ")
                    );
                }
                o.push_str("</table>\n");
                if t.worst.len() > INVERSIONS_SHOWN {
                    let _ = writeln!(
                        o,
                        "<p>…and {} more, none longer.</p>",
                        t.worst.len() - INVERSIONS_SHOWN
                    );
                }
            }
        }
    }

    fn boost_table(&self, o: &mut String, rows: &[&BoostRow]) {
        o.push_str("<table class=\"boosts\"><tr><th class=\"l\">donor</th><th class=\"l\">boosted</th><th>boosts</th><th>total (ms)</th><th>longest (ms)</th><th>mean (ms)</th></tr>\n");
        for r in rows {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                xml(&r.donor),
                xml(&r.to),
                r.count,
                ms(r.total_ns),
                ms(r.max_ns),
                ms(r.total_ns / r.count.max(1))
            );
        }
        o.push_str("</table>\n");
    }
}

const CDF_W: f64 = 600.0;
const CDF_H: f64 = 330.0;
const CDF_L: f64 = 52.0;
const CDF_R: f64 = 16.0;
const CDF_T: f64 = 14.0;
const CDF_B: f64 = 44.0;
/// Points per CDF line at most.
const CDF_POINTS: usize = 400;

/// A "nice" tick step for `span`: 1, 2 or 5 × 10^k, about 6 ticks.
fn nice_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// One setting's CDF chart.
fn cdf_svg(tasks: &[String], s: &SettingReport) -> String {
    let sim = s.faces.iter().find(|f| f.face == Face::Simulated);
    let real = s.faces.iter().find(|f| f.face == Face::Real);
    let bound = s.faces.iter().find(|f| f.face == Face::Analysed);
    let mut xmax_ns: u64 = 1;
    for f in [sim, real].into_iter().flatten() {
        for v in &f.samples {
            if let Some(&m) = v.last() {
                xmax_ns = xmax_ns.max(m);
            }
        }
    }
    if let Some(b) = bound {
        for r in &b.rows {
            if let Some(m) = r.max_us {
                xmax_ns = xmax_ns.max((m * 1000.0) as u64);
            }
        }
    }
    let xmax_ms = xmax_ns as f64 / 1e6 * 1.05;
    let step = nice_step(xmax_ms);
    let xmax_ms = (xmax_ms / step).ceil() * step;
    let pw = CDF_W - CDF_L - CDF_R;
    let ph = CDF_H - CDF_T - CDF_B;
    let x = |ms: f64| CDF_L + ms / xmax_ms * pw;
    let y = |f: f64| CDF_T + (1.0 - f) * ph;
    let legend_h = 18.0 * tasks.len().div_ceil(3) as f64 + 22.0;
    let h = CDF_H + legend_h;
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="chart cdf" xmlns="http://www.w3.org/2000/svg" width="{CDF_W}" height="{h}" viewBox="0 0 {CDF_W} {h}" font-family="sans-serif" font-size="11"><title>{}: response-time CDF</title>"#,
        xml(&s.label)
    );
    let _ = write!(
        o,
        r##"<rect x="{CDF_L}" y="{CDF_T}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#999"/>"##
    );
    // Axes and grid.
    o.push_str(r#"<g class="axes">"#);
    let mut t = 0.0;
    while t <= xmax_ms + step * 1e-9 {
        let xx = x(t);
        let _ = write!(
            o,
            r##"<line x1="{xx:.1}" y1="{CDF_T}" x2="{xx:.1}" y2="{:.1}" stroke="#e3e3e3"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            CDF_T + ph,
            CDF_T + ph + 14.0,
            trim(t)
        );
        t += step;
    }
    for k in 0..=4 {
        let f = f64::from(k) / 4.0;
        let yy = y(f);
        let _ = write!(
            o,
            r##"<line x1="{CDF_L}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e3e3e3"/><text x="{:.1}" y="{:.1}" text-anchor="end">{f:.2}</text>"##,
            CDF_L + pw,
            CDF_L - 4.0,
            yy + 4.0
        );
    }
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">response time (ms)</text><text transform="translate(12,{:.1}) rotate(-90)" text-anchor="middle">fraction of jobs</text></g>"#,
        CDF_L + pw / 2.0,
        CDF_T + ph + 32.0,
        CDF_T + ph / 2.0
    );
    o.push_str(r#"<g class="series">"#);
    for (ti, task) in tasks.iter().enumerate() {
        let c = colour(ti);
        for (f, dash) in [(sim, ""), (real, r#" stroke-dasharray="6,3""#)] {
            let Some(v) = f.and_then(|f| f.samples.get(ti)).filter(|v| !v.is_empty()) else {
                continue;
            };
            let n = v.len();
            let m = n.min(CDF_POINTS);
            let mut d = format!("M{:.2},{:.2}", x(v[0] as f64 / 1e6), y(0.0));
            for k in 0..m {
                let idx = ((k + 1) * n).div_ceil(m) - 1;
                let _ = write!(
                    d,
                    "H{:.2}V{:.2}",
                    x(v[idx] as f64 / 1e6),
                    y((idx + 1) as f64 / n as f64)
                );
            }
            let face = f.map_or("", |f| f.label.as_str());
            let _ = write!(
                o,
                r#"<path d="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}><title>{} ({}): {n} jobs</title></path>"#,
                xml(task),
                xml(face)
            );
        }
        if let Some(b) = bound.and_then(|b| b.rows.get(ti)).and_then(|r| r.max_us) {
            let xx = x(b / 1000.0);
            let _ = write!(
                o,
                r#"<line x1="{xx:.2}" y1="{CDF_T}" x2="{xx:.2}" y2="{:.1}" stroke="{c}" stroke-width="1.5" stroke-dasharray="2,3"><title>{}: analysis bound {:.3} ms</title></line>"#,
                CDF_T + ph,
                xml(task),
                b / 1000.0
            );
        }
    }
    o.push_str("</g>");
    // Legend.
    o.push_str(r#"<g class="legend">"#);
    let ly = CDF_H + 4.0;
    for (ti, task) in tasks.iter().enumerate() {
        let lx = CDF_L + (ti % 3) as f64 * 180.0;
        let yy = ly + (ti / 3) as f64 * 18.0;
        let _ = write!(
            o,
            r#"<rect x="{lx:.1}" y="{:.1}" width="14" height="4" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            yy - 4.0,
            colour(ti),
            lx + 20.0,
            yy + 1.0,
            xml(task)
        );
    }
    let yy = ly + 18.0 * tasks.len().div_ceil(3) as f64;
    let _ = write!(
        o,
        r##"<path d="M{CDF_L},{yy:.1}h24" stroke="#333" stroke-width="2"/><text x="{:.1}" y="{:.1}">simulated</text><path d="M{:.1},{yy:.1}h24" stroke="#333" stroke-width="2" stroke-dasharray="6,3"/><text x="{:.1}" y="{:.1}">real</text><path d="M{:.1},{yy:.1}h24" stroke="#333" stroke-width="1.5" stroke-dasharray="2,3"/><text x="{:.1}" y="{:.1}">analysis bound</text>"##,
        CDF_L + 30.0,
        yy + 4.0,
        CDF_L + 120.0,
        CDF_L + 150.0,
        yy + 4.0,
        CDF_L + 210.0,
        CDF_L + 240.0,
        yy + 4.0
    );
    o.push_str("</g></svg>");
    o
}

/// `t` without trailing zeros.
fn trim(t: f64) -> String {
    let s = format!("{t:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> ReportPage {
        let rows = |mean| TaskFigures {
            jobs: Some(10),
            misses: Some(1),
            mean_us: Some(mean),
            p90_us: Some(mean),
            p99_us: Some(mean),
            max_us: Some(mean),
        };
        ReportPage {
            title: "t <&>".into(),
            intro: vec!["file".into()],
            tasks: vec!["A".into(), "B".into()],
            settings: vec![SettingReport {
                label: "PI-CV on".into(),
                params: vec![("PI-CV".into(), "on".into())],
                faces: vec![
                    FaceReport {
                        face: Face::Simulated,
                        label: "simulated".into(),
                        rows: vec![rows(1500.0), rows(2500.0)],
                        samples: vec![vec![1_000_000, 2_000_000], vec![2_500_000]],
                    },
                    FaceReport {
                        face: Face::Analysed,
                        label: "analysis bound".into(),
                        rows: vec![
                            TaskFigures {
                                max_us: Some(3000.0),
                                ..TaskFigures::default()
                            },
                            TaskFigures::default(),
                        ],
                        samples: vec![],
                    },
                ],
                gantts: vec![("sim".into(), "<svg class=\"g\"></svg>".into())],
                boosts: vec![(
                    "simulated".into(),
                    vec![BoostRow {
                        donor: "A".into(),
                        to: "B".into(),
                        count: 2,
                        total_ns: 4_000_000,
                        max_ns: 3_000_000,
                        momentary: 0,
                    }],
                )],
                inversions: vec![(
                    "simulated".into(),
                    InversionTable {
                        waits: 3,
                        lower_ran_ns: 2_000_000,
                        worst: vec![InversionRow {
                            waiter: "B".into(),
                            resource: "c<1> (condvar)".into(),
                            waited_for: vec!["A".into()],
                            from_ns: 5_000_000,
                            delay_ns: 4_000_000,
                            lower: vec![("C".into(), 2_000_000)],
                        }],
                    },
                )],
            }],
            notes: vec!["no real run".into()],
        }
    }

    #[test]
    fn the_inversions_section_lists_each_faces_inversions_escaped() {
        let html = page().render();
        let at = html.find("<h2>Priority inversions</h2>").expect("section");
        let section = &html[at..];
        assert!(section.contains("<h3>PI-CV on, simulated</h3>\n<p>3 waits, 1 priority inversions; lower-priority threads ran 2.000 ms in them.</p>"), "{section}");
        assert!(section.contains("<tr><td class=\"l\">B</td><td class=\"l\">c&lt;1&gt; (condvar)</td><td class=\"l\">A</td><td>5.000</td><td>4.000</td><td class=\"l\">C 2.000</td></tr>"), "{section}");
        // The section comes before the notes; a page without inversions
        // has none.
        assert!(at < html.find("<h2>Notes</h2>").expect("notes"));
        let mut p = page();
        p.settings[0].inversions.clear();
        assert!(!p.render().contains("Priority inversions"));
    }

    #[test]
    fn the_page_is_self_contained_and_has_every_section() {
        let html = page().render();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>t &lt;&amp;&gt;</title>"));
        for h in [
            "Settings compared",
            "Response times (ms)",
            "Response-time CDFs",
            "Schedules",
            "Boosts: who lent to whom",
            "Notes",
        ] {
            assert!(html.contains(&format!("<h2>{h}</h2>")), "{h}");
        }
        // Nothing fetched, nothing run.
        assert!(!html.contains("<script"));
        assert!(!html.contains("src="));
        assert!(!html.contains("href="));
        // Mean 1.5 ms, one miss of ten jobs; the bound in the max column.
        assert!(html.contains("<td>1.500</td>"));
        assert!(html.contains("<td>1 / 10</td>"));
        assert!(html.contains("<td>3.000</td><td>–</td></tr>") || html.contains("<td>3.000</td>"));
        // Boost: 2 boosts, 4 ms in total, 3 ms the longest, 2 ms mean.
        assert!(html.contains("<td>2</td><td>4.000</td><td>3.000</td><td>2.000</td>"));
        assert!(html.contains("<svg class=\"chart cdf\""));
        assert!(html.contains("<figure class=\"chart gantt\">"));
    }

    #[test]
    fn cdf_lines_end_at_one_and_the_bound_is_drawn() {
        let html = page().render();
        // A's two jobs: the line climbs to 0.5 then to 1.0 (y of 1.0 is
        // the plot's top).
        let top = format!("V{CDF_T:.2}");
        assert!(html.contains(&top), "{html}");
        assert!(html.contains("A: analysis bound 3.000 ms"));
    }

    /// The PI-CV paper's Table I on a real machine: Annoyer's real maximum
    /// (50 ms) above its bound (39 ms) with PI-CV off; Client1's real
    /// maximum equal to its bound, and the simulation within the bounds.
    fn table1_over_bound() -> ReportPage {
        let max = |ms: f64| TaskFigures {
            jobs: Some(100),
            misses: Some(0),
            mean_us: Some(ms * 500.0),
            p90_us: Some(ms * 800.0),
            p99_us: Some(ms * 900.0),
            max_us: Some(ms * 1000.0),
        };
        let face = |face, label: &str, rows| FaceReport {
            face,
            label: label.into(),
            rows,
            samples: vec![vec![], vec![]],
        };
        ReportPage {
            title: "Table I".into(),
            tasks: vec!["Client1".into(), "Annoyer".into()],
            settings: vec![SettingReport {
                label: "PI-CV off".into(),
                faces: vec![
                    face(Face::Simulated, "simulated", vec![max(19.0), max(39.0)]),
                    face(
                        Face::Analysed,
                        "analysis bound",
                        vec![
                            TaskFigures {
                                max_us: Some(19_000.0),
                                ..TaskFigures::default()
                            },
                            TaskFigures {
                                max_us: Some(39_000.0),
                                ..TaskFigures::default()
                            },
                        ],
                    ),
                    face(Face::Real, "real", vec![max(19.0), max(50.0)]),
                ],
                ..SettingReport::default()
            }],
            ..ReportPage::default()
        }
    }

    #[test]
    fn a_real_maximum_above_its_bound_is_flagged_in_the_table_and_the_notes() {
        let page = table1_over_bound();
        assert_eq!(
            page.over_bound(),
            [OverBound {
                task: 1,
                setting: 0,
                face: Face::Real,
                label: "real".into(),
                max_us: 50_000.0,
                bound_us: 39_000.0,
            }]
        );
        let html = page.render();
        // The one flagged cell: Annoyer's real maximum.
        assert_eq!(html.matches("class=\"over-bound\"").count(), 2, "{html}");
        assert!(
            html.contains("<td class=\"over-bound\" title=\"above the analysis bound, 39.000 ms\">50.000 ▲</td>"),
            "{html}"
        );
        assert!(html.contains("<h2>Notes</h2>"));
        assert!(html.contains(
            "<li class=\"over-bound\"><b>▲ Annoyer, PI-CV off: the real maximum, 50.000 ms, is above the analysis bound, 39.000 ms</b> (a real run may exceed it: the analysis counts no kernel or runtime overhead, no other load on the CPU and no calibration error).</li>"
        ), "{html}");
        // Equal to the bound, or simulated within it: not flagged.
        assert_eq!(html.matches("<td>19.000</td>").count(), 3, "{html}");
    }

    #[test]
    fn a_simulated_maximum_above_its_bound_is_flagged_as_a_bug() {
        let mut page = table1_over_bound();
        page.settings[0].faces[0].rows[0].max_us = Some(19_001.0);
        page.settings[0].faces.pop();
        let html = page.render();
        assert!(html.contains(
            "<li class=\"over-bound\"><b>▲ Client1, PI-CV off: the simulated maximum, 19.001 ms, is above the analysis bound, 19.000 ms</b> (a simulation above its bound is a bug in the analysis or in the simulator).</li>"
        ), "{html}");
        assert!(!html.contains("Annoyer, PI-CV off: the"), "{html}");
    }

    #[test]
    fn boosts_that_last_no_time_are_not_listed_as_boosts() {
        let mut page = page();
        let row = |donor: &str, count, total_ns, momentary| BoostRow {
            donor: donor.into(),
            to: "B".into(),
            count,
            total_ns,
            max_ns: total_ns,
            momentary,
        };
        page.settings[0].boosts = vec![
            (
                "simulated".into(),
                vec![row("A", 0, 0, 1600), row("C", 0, 0, 1)],
            ),
            ("real".into(), vec![row("A", 1, 2_000_000, 3)]),
        ];
        let html = page.render();
        let sim = &html[html.find("<h3>PI-CV on, simulated</h3>").unwrap()..];
        assert!(sim.starts_with(
            "<h3>PI-CV on, simulated</h3>\n<p>No thread lent its urgency to another for any time.</p>\n<p class=\"momentary\">Not boosts: lent and taken back at the same instant (0 ms, no effect on the schedule): A → B 1600 times, C → B once.</p>\n<h3>PI-CV on, real</h3>\n"
        ), "{sim}");
        assert!(html.contains("<td class=\"l\">A</td><td class=\"l\">B</td><td>1</td><td>2.000</td><td>2.000</td><td>2.000</td></tr>\n</table>\n<p class=\"momentary\">Not boosts: lent and taken back at the same instant (0 ms, no effect on the schedule): A → B 3 times.</p>"), "{html}");
        assert!(!html.contains("<td>0</td>"), "{html}");
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(60.0), 10.0);
        assert_eq!(nice_step(6.0), 1.0);
        assert_eq!(nice_step(25.0), 5.0);
        assert_eq!(trim(2.5), "2.5");
        assert_eq!(trim(40.0), "40");
    }
}
