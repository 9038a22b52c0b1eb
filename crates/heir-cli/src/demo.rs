//! `heir demo`: the main job on an embedded scenario.
//!
//! The PI-CV paper's Table I client/server scenario
//! (`examples/table1-client-server.json`, embedded in the binary) is
//! simulated twice, PI-CV off and on, and printed side by side like the
//! paper's Table II: average, 90th percentile and maximum response time of
//! Client1 and Client2 in ms, then the paper's measured values and the
//! analytical worst case from `heir-analysis` (the PI-CV paper's Eq. 1-5 with PI-CV:
//! 19 and 29 ms, the paper's figures). The SVG Gantt chart and the Chrome
//! trace of each run are written into `--out` (default `./heir-demo/`),
//! and so is the report page of all the runs (`report.html`, as `heir
//! report` writes it: simulation, analysis and — where privileged — the
//! real runs, traced in the kernel, side by side); its path is printed.
//!
//! The table is built from a list of named runs ([`Run`]): another way of
//! running the scenario (e.g. on real threads) is one more entry.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use heir_analysis::Family;
use heir_scenario::Scenario;
use heir_sim::{Report, SimConfig};
use serde_json::{json, Value};

use crate::exit::deadlock_exit;
use crate::output::{deadlock_line, ms, print_json, print_warnings, RunOutputs, Table};
use crate::report::{Collector, Setting, SettingRuns};
use crate::{CliError, CliResult};

/// The embedded scenario: the PI-CV paper's Table I.
const SCENARIO: &str = include_str!("../../../examples/table1-client-server.json");
/// Where the embedded scenario comes from (names it in messages).
const SCENARIO_FILE: &str = "examples/table1-client-server.json";
/// The threads Table II reports, in its column order.
const CLIENTS: [&str; 2] = ["Client1", "Client2"];
/// Table II's statistics, in its row order.
const STATS: [&str; 3] = ["Average", "90th perc.", "Maximum"];

/// The PI-CV paper's Table II: measured on Linux, 60 s (ms). Per PI-CV setting
/// (off, on), per client, [average, 90th percentile, maximum].
const PAPER_MEASURED: [(&str, bool, [[f64; 3]; 2]); 2] = [
    (
        "No PI-CV",
        false,
        [[25.776, 33.71, 33.76], [33.587, 38.489, 38.55]],
    ),
    (
        "PI-CV",
        true,
        [[15.379, 18.913, 18.995], [22.816, 28.938, 28.996]],
    ),
];

/// The PI-CV paper's Table II, "Analytical Worst-Case" (Eq. 1, PI-CV on), in ms.
const PAPER_WORST_CASE_MS: [f64; 2] = [19.0, 29.0];

/// `heir demo` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory for the SVG Gantt charts and Chrome traces of both runs.
    #[arg(long, value_name = "DIR", default_value = "heir-demo")]
    pub out: PathBuf,
    /// Print one JSON object (both reports, the paper's values, the files).
    #[arg(long)]
    pub json: bool,
    /// Also run the scenario on real SCHED_FIFO threads for this many
    /// seconds per PI-CV setting, when the process may use real-time
    /// priorities (0: simulate only).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub real_seconds: f64,
}

/// One column group of the table: a named way of running the scenario
/// (simulated, or on real threads: any run that yields a [`Report`]).
pub struct Run {
    /// Column label, e.g. `PI-CV`.
    pub label: String,
    /// Whether PI-CV was on.
    pub pi_cv: bool,
    /// The run's report (same schema for simulated and real runs).
    pub report: Report,
    /// Files written for this run.
    pub files: Vec<PathBuf>,
    /// The analytical worst case under the run's protocol.
    bound: Bound,
}

impl Run {
    /// A run of `scenario` with PI-CV `pi_cv`, labelled `label`; the
    /// analytical bound under the same protocol is computed here.
    pub fn new(
        scenario: &Scenario,
        label: &str,
        pi_cv: bool,
        report: Report,
        files: Vec<PathBuf>,
    ) -> Run {
        Run {
            label: label.to_string(),
            pi_cv,
            report,
            files,
            bound: analytic_bound(scenario, pi_cv),
        }
    }

    /// Client `name`'s [average, p90, max] response in µs.
    fn stats(&self, name: &str) -> [Option<f64>; 3] {
        match self.report.tasks.iter().find(|t| t.name == name) {
            Some(t) => [t.response_us.mean, t.response_us.p90, t.response_us.max],
            None => [None; 3],
        }
    }
}

/// The analytical worst case of each client under one protocol.
#[derive(Clone, Debug, PartialEq)]
struct Bound {
    /// Per client (µs); `None` when unbounded or not analysable.
    wcrt_us: [Option<f64>; 2],
    /// Why a bound is missing (the analysis' reason or error), if one is.
    note: Option<String>,
}

/// The bound `heir-analysis` gives each client: with PI-CV (the PI-CV paper's
/// Eq. 1-5) or, without, priority inheritance on mutexes only.
fn analytic_bound(scenario: &Scenario, pi_cv: bool) -> Bound {
    let protocol = if pi_cv { Family::PiCv } else { Family::Inherit };
    let options = heir_analysis::Options {
        protocol: Some(protocol),
    };
    match heir_analysis::analyze_scenario(scenario, &options) {
        Ok(report) => {
            let task = |name: &str| report.task(name);
            let wcrt_us = CLIENTS.map(|c| task(c).and_then(|t| t.wcrt_us));
            let note = CLIENTS
                .iter()
                .filter_map(|c| task(c).and_then(|t| t.reason.clone()))
                .next();
            Bound { wcrt_us, note }
        }
        Err(e) => Bound {
            wcrt_us: [None; 2],
            note: Some(e.to_string()),
        },
    }
}

/// Simulates `scenario` with PI-CV `pi_cv`, writing `<stem>.svg` and
/// `<stem>.trace.json` into `dir`; what the report page needs of it too.
fn simulate(
    scenario: &Scenario,
    label: &str,
    pi_cv: bool,
    dir: &Path,
    stem: &str,
) -> Result<(Run, Collector), CliError> {
    let svg = dir.join(format!("{stem}.svg"));
    let trace = dir.join(format!("{stem}.trace.json"));
    let title = format!(
        "the PI-CV paper's Table I client/server, simulated, PI-CV {}",
        crate::output::on_off(pi_cv)
    );
    let mut outputs = RunOutputs::new(Some(&trace), Some(&svg), &title)?;
    let config = SimConfig {
        pi_cv: Some(pi_cv),
        ..SimConfig::default()
    };
    let mut collector = Collector::new(
        REPORT_WINDOW,
        &format!(
            "{SCENARIO_FILE}: simulated, PI-CV {}",
            crate::output::on_off(pi_cv)
        ),
    );
    let mut tee = outputs.observer();
    tee.push(&mut collector);
    let report = heir_sim::simulate(scenario, &config, &mut tee).map_err(|e| {
        CliError::failure(anyhow!(e).context(format!("{SCENARIO_FILE}: cannot simulate")))
    })?;
    drop(tee);
    let mut files = outputs.commit().map_err(CliError::failure)?;
    // SVG first: it is what people open.
    files.reverse();
    Ok((Run::new(scenario, label, pi_cv, report, files), collector))
}

/// The Gantt charts' window in the report page: the first 200 ms.
const REPORT_WINDOW: (u64, u64) = (0, 200_000_000);

/// A real run and what the report page needs of it (from its kernel
/// trace, when it could be traced).
type RealFace = (
    Run,
    (Report, Option<Collector>),
    Option<heir_viz::report::InversionTable>,
);

/// Runs the scenario on real threads for `seconds`, PI-CV off then on,
/// traced in the kernel where tracefs allows (notes say why not).
/// `Ok(Err(why))` when this process cannot run real-time threads (the demo
/// then shows the simulation only); `Err` when a run started and failed.
fn run_real(
    scenario: &Scenario,
    seconds: f64,
    quiet: bool,
    notes: &mut Vec<String>,
) -> Result<Result<Vec<RealFace>, String>, CliError> {
    let mut runs = Vec::new();
    for (label, pi_cv) in [("real, no PI-CV", false), ("real, PI-CV", true)] {
        if !quiet {
            eprintln!("heir demo: running on real SCHED_FIFO threads for {seconds} s ({label})...");
        }
        let setting = Setting::pi_cv(scenario, pi_cv);
        match crate::report::run_real(SCENARIO_FILE, &setting, seconds, notes)? {
            Ok(real) => {
                let face = crate::report::collect_real(
                    &real,
                    REPORT_WINDOW,
                    SCENARIO_FILE,
                    &setting.label,
                );
                let inversions = crate::report::real_inversions(&real);
                runs.push((
                    Run::new(scenario, label, pi_cv, real.report, Vec::new()),
                    face,
                    inversions,
                ));
            }
            Err(why) => return Ok(Err(why)),
        }
    }
    Ok(Ok(runs))
}

/// Runs `heir demo`.
pub fn main(args: Args) -> CliResult {
    let scenario = heir_scenario::parse_str(SCENARIO, SCENARIO_FILE)
        .context("the embedded scenario")
        .map_err(CliError::failure)?;
    print_warnings(SCENARIO_FILE, &scenario.warnings);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))
        .map_err(CliError::bad_input)?;

    if !(args.real_seconds.is_finite() && args.real_seconds >= 0.0) {
        return Err(CliError::bad_input(anyhow!(
            "--real-seconds must be a non-negative number of seconds, got {}",
            args.real_seconds
        )));
    }
    let (off, off_c) = simulate(
        &scenario,
        "sim, no PI-CV",
        false,
        &args.out,
        "demo-picv-off",
    )?;
    let (on, on_c) = simulate(&scenario, "sim, PI-CV", true, &args.out, "demo-picv-on")?;
    // The inversions of each simulation, from the trace it wrote.
    let sim_inversions = |stem: &str| -> Vec<(String, heir_viz::report::InversionTable)> {
        std::fs::read(args.out.join(format!("{stem}.trace.json")))
            .ok()
            .and_then(|b| crate::inversions::table_of(&b))
            .map(|t| vec![("simulated".to_string(), t)])
            .unwrap_or_default()
    };
    let mut faces = vec![
        SettingRuns {
            setting: Setting::pi_cv(&scenario, false),
            sim: (off.report.clone(), off_c),
            real: None,
            inversions: sim_inversions("demo-picv-off"),
        },
        SettingRuns {
            setting: Setting::pi_cv(&scenario, true),
            sim: (on.report.clone(), on_c),
            real: None,
            inversions: sim_inversions("demo-picv-on"),
        },
    ];
    let mut runs = vec![off, on];
    let mut notes = Vec::new();
    let refused = if args.real_seconds > 0.0 {
        crate::report::real_run_refused(&scenario)
    } else {
        None
    };
    if let Some(why) = refused {
        crate::report::skip_real("demo", &why, &mut notes);
    } else if args.real_seconds > 0.0 {
        match run_real(&scenario, args.real_seconds, args.json, &mut notes)? {
            Ok(real) => {
                for (run, face, inversions) in real {
                    if let Some(s) = faces
                        .iter_mut()
                        .find(|s| s.setting.scenario.global.pi_cv == run.pi_cv)
                    {
                        s.real = Some(face);
                        if let Some(t) = inversions {
                            s.inversions
                                .push((crate::report::REAL_TRACE.to_string(), t));
                        }
                    }
                    runs.push(run);
                }
            }
            Err(why) => crate::report::skip_real("demo", &why, &mut notes),
        }
    }
    // The report page of every run (Table I: sim, analysis, real).
    let page = crate::report::page(SCENARIO_FILE, &scenario, &faces, REPORT_WINDOW, "", notes);
    let report_path = crate::report::write_page(&args.out.join("report.html"), &page)
        .map_err(CliError::failure)?;

    if args.json {
        let mut json = json_report(&scenario, &runs);
        json["report"] = json!(report_path.display().to_string());
        print_json(&json).map_err(CliError::failure)?;
    } else {
        print!("{}", text_report(&scenario, &runs));
        println!(
            "wrote {} (the report page: simulated, analysed{} side by side)",
            report_path.display(),
            if runs.iter().any(|r| r.report.mode == "real") {
                " and real"
            } else {
                ""
            }
        );
    }
    deadlock_exit(runs.iter().any(|r| r.report.deadlock.is_some()))
}

/// The paper's measured values with PI-CV `pi_cv`, per client.
fn paper_measured(pi_cv: bool) -> Option<[[f64; 3]; 2]> {
    PAPER_MEASURED
        .iter()
        .find(|(_, on, _)| *on == pi_cv)
        .map(|(_, _, v)| *v)
}

fn text_report(scenario: &Scenario, runs: &[Run]) -> String {
    let seed = scenario.global.seed;
    let dur = runs.first().map(|r| r.report.duration_us).unwrap_or(0.0);
    let mut out = format!(
        "heir demo: the PI-CV paper's Table I client/server ({SCENARIO_FILE}), simulated {:.3} s, seed {seed}{}\n\
         Response times in ms, as the PI-CV paper's Table II\n\n",
        dur / 1e6,
        match runs.iter().find(|r| r.report.mode == "real") {
            Some(r) => format!("; real threads {:.3} s per setting", r.report.duration_us / 1e6),
            None => String::new(),
        }
    );

    // Two header rows: the run labels over their client columns.
    let mut labels = vec![String::new()];
    let mut header = vec!["Statistic".to_string()];
    for r in runs {
        for (i, c) in CLIENTS.iter().enumerate() {
            labels.push(if i == 0 {
                r.label.clone()
            } else {
                String::new()
            });
            header.push((*c).to_string());
        }
    }
    let mut t = Table::new(labels);
    t.row(header);
    for (k, stat) in STATS.iter().enumerate() {
        let mut row = vec![format!("heir {stat}")];
        for r in runs {
            for c in CLIENTS {
                row.push(ms(r.stats(c)[k]));
            }
        }
        t.row(row);
    }
    for (k, stat) in STATS.iter().enumerate() {
        let mut row = vec![format!("paper {stat}")];
        for r in runs {
            let paper = paper_measured(r.pi_cv);
            for i in 0..CLIENTS.len() {
                row.push(match paper {
                    Some(p) => format!("{:.3}", p[i][k]),
                    None => "-".to_string(),
                });
            }
        }
        t.row(row);
    }
    let mut row = vec!["Analytical Worst-Case".to_string()];
    for r in runs {
        for v in r.bound.wcrt_us {
            row.push(ms(v));
        }
    }
    t.row(row);
    out.push_str(&t.render());
    out.push_str(&format!(
        "\npaper: measured on Linux over 60 s; its Analytical Worst-Case (Eq. 1, PI-CV): {} and {} ms\n\
         Analytical Worst-Case: heir-analysis, the PI-CV paper's Eq. 1-5 with PI-CV, mutex PI only without\n",
        PAPER_WORST_CASE_MS[0], PAPER_WORST_CASE_MS[1]
    ));
    for r in runs {
        if let Some(note) = &r.bound.note {
            out.push_str(&format!("  {}: no bound: {note}\n", r.label));
        }
    }
    for r in runs {
        if let Some(line) = deadlock_line(&r.report) {
            out.push_str(&format!("{}: {line}\n", r.label));
        }
    }
    out.push('\n');
    for r in runs {
        for f in &r.files {
            out.push_str(&format!("wrote {}\n", f.display()));
        }
    }
    out
}

fn json_report(scenario: &Scenario, runs: &[Run]) -> Value {
    let runs_json: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "label": r.label,
                "pi_cv": r.pi_cv,
                "report": r.report,
                "analytical_worst_case_us": CLIENTS
                    .iter()
                    .zip(r.bound.wcrt_us)
                    .map(|(c, v)| ((*c).to_string(), json!(v)))
                    .collect::<serde_json::Map<String, Value>>(),
                "files": r.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let paper: serde_json::Map<String, Value> = PAPER_MEASURED
        .iter()
        .map(|(label, _, v)| {
            let per_client: serde_json::Map<String, Value> = CLIENTS
                .iter()
                .zip(v)
                .map(|(c, s)| {
                    (
                        (*c).to_string(),
                        json!({"mean_ms": s[0], "p90_ms": s[1], "max_ms": s[2]}),
                    )
                })
                .collect();
            ((*label).to_string(), Value::Object(per_client))
        })
        .collect();
    let paper_worst: serde_json::Map<String, Value> = CLIENTS
        .iter()
        .zip(PAPER_WORST_CASE_MS)
        .map(|(c, v)| ((*c).to_string(), json!(v)))
        .collect();
    json!({
        "scenario": SCENARIO_FILE,
        "seed": scenario.global.seed,
        "runs": runs_json,
        "paper_measured_ms": paper,
        "paper_worst_case_ms": paper_worst,
    })
}
