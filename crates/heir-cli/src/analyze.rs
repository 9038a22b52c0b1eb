//! `heir analyze FILE`: schedulability analysis of a scenario file — per
//! task the bound, the deadline and whether it is met — from the very file
//! `heir sim` and `heir run` execute (see `heir_analysis::extract` for what is
//! taken from it and `docs/ANALYSIS.md` for the equations).
//!
//! `--compare` also simulates the file (as written, PI-CV as the analysis
//! assumes) and prints, per task, the bound next to the simulated maximum —
//! the PI-CV paper's Table II as one command; `--real` adds a run on real threads
//! (`heir run`'s runner: needs real-time privileges).
//!
//! `--json` prints one object:
//! `{"schedulable":bool,"tasks":{NAME:{"wcrt_us":number|null,
//! "deadline_us":number,"schedulable":bool,"blocking_us":number|null}}}`;
//! with `--compare` each task also has `"sim_max_us"` (and `"real_max_us"`
//! with `--real`), `null` when no job completed.
//!
//! Exit codes: 0 the analysis completed (whatever the verdict); 2 bad input
//! — unreadable file, reader error, a scenario outside the analysed model
//! (with its position), a missing period, a task over 100%, a cycle of
//! nested locks, a scenario the simulator or the runner refuses, no
//! real-time privilege for `--real` — with nothing on stdout; 3 the
//! simulation (or the real run) of `--compare` deadlocked.

use std::path::PathBuf;

use anyhow::anyhow;
use heir_analysis::{analyze_scenario_on, AnalysisReport, Family, Options};
use heir_runner::run::{run_scenario, RunConfig};
use heir_scenario::limits::MAX_CPUS;
use heir_sim::{simulate, NullObserver, Report, SimConfig};

use crate::exit::deadlock_exit;
use crate::output::{
    bad_input_in, deadlock_line, ms, overrides_shown, parse_override, parse_seconds, print_json,
    read_scenario_with, run_error, sim_error, Align, Table,
};
use crate::{CliError, CliResult};

/// `heir analyze` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: an rt-app JSON file, with heir's extensions.
    pub file: PathBuf,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Either one protocol family to analyse under instead of the file's
    /// own mutex protocols and `pi_cv` (none, inherit, ceiling — ceiling
    /// mutexes and servers at their highest caller's priority — or pi-cv),
    /// or, repeatable, a mutex protocol instead of the file's as in `heir
    /// sim`: NAME=P or all=P, P one of none, inherit, bwi, ceiling,
    /// ceiling:N (applied to the file, so --compare simulates the same).
    #[arg(long = "protocol", value_name = "P|NAME=P", value_parser = parse_protocol_arg)]
    pub protocols: Vec<ProtocolArg>,
    /// PI-CV on condition variables with helpers, queues and endpoints
    /// (replaces global.pi_cv, as `heir sim --pi-cv`): off analyses the
    /// calls to servers and helper threads at the servers' own priorities.
    #[arg(long, value_name = "on|off")]
    pub pi_cv: Option<crate::sim::OnOff>,
    /// Gang priority management (GPM; replaces global.gpm): off
    /// keeps the gangs' waiting and counting but boosts nobody.
    #[arg(long, value_name = "on|off")]
    pub gpm: Option<crate::sim::OnOff>,
    /// Also simulate the file and print the simulated maxima beside the
    /// bounds.
    #[arg(long)]
    pub compare: bool,
    /// With --compare: also run the file on real threads (needs real-time
    /// privileges; runs for the scenario's duration).
    #[arg(long, requires = "compare")]
    pub real: bool,
    /// With --compare: simulated (and real) duration in seconds, replacing
    /// global.duration.
    #[arg(long, value_name = "S", value_parser = parse_seconds, requires = "compare")]
    pub duration: Option<u64>,
    /// With --compare: number of simulated CPUs (as `heir sim --cpus`).
    #[arg(long, value_name = "N", requires = "compare",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_CPUS)))]
    pub cpus: Option<u32>,
}

/// One `--protocol` value of `heir analyze`.
#[derive(Clone, Debug)]
pub enum ProtocolArg {
    /// A protocol family for the whole analysis.
    Family(Family),
    /// A mutex protocol applied to the file.
    Mutex(heir_scenario::protocols::Override),
}

fn parse_protocol_arg(s: &str) -> Result<ProtocolArg, String> {
    if s.contains('=') {
        return parse_override(s).map(ProtocolArg::Mutex);
    }
    Family::parse(s).map(ProtocolArg::Family).ok_or_else(|| {
        format!(
            "expected {}, or NAME=P / all=P, found {s:?}",
            Family::SPELLINGS
        )
    })
}

/// The maxima of a run report, by thread name.
fn max_of(report: &Report, name: &str) -> Option<f64> {
    report
        .tasks
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.response_us.max)
}

/// The simulated maximum latency of gang `gang` seen by waiter `thread`.
fn gang_max_of(report: &Report, gang: &str, thread: &str) -> Option<f64> {
    report
        .gangs
        .iter()
        .find(|g| g.name == gang)
        .and_then(|g| g.waiters.iter().find(|w| w.thread == thread))
        .and_then(|w| w.latency_us.max)
}

/// The threads `heir analyze` reads: `heir run`'s limit with `--real`
/// (real threads), the simulator's with `--compare`, the analysis' own
/// otherwise.
fn thread_limit(args: &Args) -> heir_scenario::limits::ThreadLimit {
    use crate::output::Face;
    if args.real {
        Face::Run.thread_limit("heir analyze --real")
    } else if args.compare {
        Face::Sim.thread_limit("heir analyze --compare")
    } else {
        Face::Analyze.thread_limit("heir analyze")
    }
}

/// Runs `heir analyze`.
pub fn main(args: Args) -> CliResult {
    let mut family: Option<Family> = None;
    let mut overrides = Vec::new();
    for p in &args.protocols {
        match p {
            ProtocolArg::Family(f) => {
                if family.replace(*f).is_some_and(|g| g != *f) {
                    return Err(CliError::bad_input(anyhow!(
                        "--protocol: give at most one protocol family ({})",
                        Family::CHOICES
                    )));
                }
            }
            ProtocolArg::Mutex(o) => overrides.push(o.clone()),
        }
    }
    let (file, mut scenario) = read_scenario_with(&args.file, &thread_limit(&args), &overrides)?;
    crate::output::apply_gpm(&mut scenario, args.gpm);
    if let Some(p) = args.pi_cv {
        if family.is_some_and(|f| (f == Family::PiCv) != p.enabled()) {
            return Err(CliError::bad_input(anyhow!(
                "--pi-cv {} contradicts --protocol {}",
                if p.enabled() { "on" } else { "off" },
                family.map(Family::name).unwrap_or("")
            )));
        }
        scenario.global.pi_cv = p.enabled();
    }
    let options = Options { protocol: family };
    // `file:line:col: at path: …`, or `file: at path: …` without a position.
    let report = analyze_scenario_on(&scenario, &options, args.cpus).map_err(|e| {
        let has_position = e.at.as_ref().is_some_and(|l| l.line > 0);
        bad_input_in(&file, has_position, e)
    })?;
    for (name, why) in &report.skipped {
        eprintln!("heir: note: {file}: thread {name} skipped ({why})");
    }
    if args.compare && family.is_some_and(|p| p != Family::PiCv) {
        return Err(CliError::bad_input(anyhow!(
            "--compare simulates the file as written (with PI-CV); --protocol {} would compare two different systems",
            family.map(Family::name).unwrap_or("")
        )));
    }

    let mut sim: Option<Report> = None;
    let mut real: Option<Report> = None;
    if args.compare {
        // What the analysis assumed: the file's PI-CV, or on for --protocol pi-cv.
        let pi_cv = family.map_or(scenario.global.pi_cv, |p| p == Family::PiCv);
        let config = SimConfig {
            seed: None,
            duration_us: args.duration,
            pi_cv: Some(pi_cv),
            cpus: args.cpus,
        };
        let r =
            simulate(&scenario, &config, &mut NullObserver).map_err(|e| sim_error(&file, &e))?;
        sim = Some(r);
        if args.real {
            let config = RunConfig {
                duration_us: args.duration,
                pi_cv: Some(pi_cv),
                on_note: Some(crate::output::print_run_note),
                ..RunConfig::default()
            };
            let r = run_scenario(&scenario, &config)
                .map_err(|e| run_error(e, format!("{file}: cannot run on real threads")))?;
            real = Some(r);
        }
    }

    if args.json {
        let mut v = report.to_json();
        if let Some(tasks) = v.get_mut("tasks").and_then(|t| t.as_object_mut()) {
            for (name, t) in tasks.iter_mut() {
                if let (Some(obj), Some(s)) = (t.as_object_mut(), &sim) {
                    obj.insert("sim_max_us".into(), serde_json::json!(max_of(s, name)));
                    if let Some(r) = &real {
                        obj.insert("real_max_us".into(), serde_json::json!(max_of(r, name)));
                    }
                }
            }
        }
        if let (Some(gangs), Some(s)) = (v.get_mut("gangs").and_then(|g| g.as_object_mut()), &sim) {
            for (gang, g) in gangs.iter_mut() {
                let Some(waiters) = g.get_mut("waiters").and_then(|w| w.as_object_mut()) else {
                    continue;
                };
                for (thread, w) in waiters.iter_mut() {
                    if let Some(obj) = w.as_object_mut() {
                        obj.insert(
                            "sim_max_us".into(),
                            serde_json::json!(gang_max_of(s, gang, thread)),
                        );
                        if let Some(r) = &real {
                            obj.insert(
                                "real_max_us".into(),
                                serde_json::json!(gang_max_of(r, gang, thread)),
                            );
                        }
                    }
                }
            }
        }
        print_json(&v).map_err(CliError::failure)?;
    } else {
        print!(
            "{}",
            render(
                &file,
                (&report, &overrides_shown(&overrides)),
                sim.as_ref(),
                real.as_ref(),
                args.real,
            )
        );
    }
    deadlock_exit(sim.iter().chain(real.iter()).any(|r| r.deadlock.is_some()))
}

/// The text output: the per-task table, then with `--compare` the Table II
/// comparison (tasks as columns, as in the paper).
fn render(
    file: &str,
    (report, protocols): (&AnalysisReport, &str),
    sim: Option<&Report>,
    real: Option<&Report>,
    real_asked: bool,
) -> String {
    if !report.gangs.is_empty() {
        return gang_render(file, report, sim, real, real_asked);
    }
    let has_dl = report.tasks.iter().any(|b| b.reservation.is_some());
    let has_fp = report.tasks.iter().any(|b| b.reservation.is_none());
    let kind = match (has_fp, has_dl) {
        (true, true) => "fixed-priority and EDF/CBS analysis",
        (false, true) => "EDF/CBS analysis",
        _ => "fixed-priority analysis",
    };
    let mut out = format!(
        "{file}: {kind}, {}{protocols}; times in ms\n\n",
        report.protocol
    );
    if has_dl {
        out.push_str(&deadline_table(report));
    } else {
        out.push_str(&bounds_table(report));
    }
    if let Some(sim) = sim {
        out.push_str(&comparison(report, sim, real, real_asked));
    }
    out
}

/// The per-task table of bounds, the reasons of unbounded tasks and the
/// verdict.
fn bounds_table(report: &AnalysisReport) -> String {
    let mut t = Table::new([
        "task", "cpu", "prio", "period", "C", "E", "B", "bound", "deadline", "ok",
    ]);
    for b in &report.tasks {
        t.row([
            b.name.clone(),
            b.cpu.to_string(),
            b.priority.map_or("DL".to_string(), |p| p.to_string()),
            ms(Some(b.period_us)),
            ms(Some(b.wcet_us)),
            ms(Some(b.demand_us)),
            ms(b.blocking_us),
            b.wcrt_us.map_or("unbounded".to_string(), |v| ms(Some(v))),
            ms(Some(b.deadline_us)),
            if b.schedulable { "yes" } else { "no" }.to_string(),
        ]);
    }
    let mut out = t.render();
    let reasons: Vec<String> = report
        .tasks
        .iter()
        .filter_map(|b| b.reason.as_ref().map(|r| format!("  {}: {r}", b.name)))
        .collect();
    if !reasons.is_empty() {
        out.push('\n');
        out.push_str(&reasons.join("\n"));
        out.push('\n');
    }
    out.push_str(&format!(
        "\n{}\n",
        if report.schedulable {
            "schedulable: every task meets its deadline"
        } else {
            "not schedulable"
        }
    ));
    out
}

/// The text output with `SCHED_DEADLINE` tasks: the fixed-priority tasks'
/// table (if any), the reservations' table, each group's admission, the
/// reasons and the verdict.
fn deadline_table(report: &AnalysisReport) -> String {
    let mut out = String::new();
    let fixed: Vec<_> = report
        .tasks
        .iter()
        .filter(|b| b.reservation.is_none())
        .collect();
    if !fixed.is_empty() {
        let mut t = Table::new([
            "task", "cpu", "prio", "period", "C", "E", "B", "bound", "deadline", "ok",
        ]);
        for b in &fixed {
            t.row([
                b.name.clone(),
                b.cpu.to_string(),
                b.priority.map_or(String::new(), |p| p.to_string()),
                ms(Some(b.period_us)),
                ms(Some(b.wcet_us)),
                ms(Some(b.demand_us)),
                ms(b.blocking_us),
                b.wcrt_us.map_or("unbounded".to_string(), |v| ms(Some(v))),
                ms(Some(b.deadline_us)),
                if b.schedulable { "yes" } else { "no" }.to_string(),
            ]);
        }
        out.push_str("fixed priority (below every SCHED_DEADLINE task; each reservation of the CPU, or global, taken as (⌈w/P⌉ + 1)·Q of interference):\n\n");
        out.push_str(&t.render());
        out.push('\n');
    }
    let mut t = Table::new([
        "task", "cpu", "Q", "D", "P", "period", "C", "B", "bound", "deadline", "ok",
    ]);
    for b in &report.tasks {
        let Some(r) = &b.reservation else { continue };
        t.row([
            b.name.clone(),
            r.global_cpus
                .map_or(b.cpu.to_string(), |_| "any".to_string()),
            ms(Some(r.runtime_us)),
            ms(Some(r.deadline_us)),
            ms(Some(r.period_us)),
            ms(Some(b.period_us)),
            ms(Some(b.wcet_us)),
            ms(b.blocking_us),
            b.wcrt_us.map_or("unbounded".to_string(), |v| ms(Some(v))),
            ms(Some(b.deadline_us)),
            if b.schedulable { "yes" } else { "no" }.to_string(),
        ]);
    }
    out.push_str("SCHED_DEADLINE (B: interference taken from the task's own budget under bwi; none under inherit/none, whose waits the CPU's window test covers):\n\n");
    out.push_str(&t.render());
    out.push('\n');
    for a in &report.admissions {
        let group = match a.cpu {
            Some(c) => format!("CPU {c}"),
            None => format!("global ({} CPUs)", a.cpus),
        };
        let needed = a
            .needed_load
            .map(|n| format!("; with the budgets the tasks need, Σ (C+B)/D = {n:.3}"))
            .unwrap_or_default();
        let verdict = if a.admitted {
            "admitted"
        } else {
            "not admitted"
        };
        if a.cpu.is_some() {
            // One CPU: the exact demand test, not a load against a limit.
            out.push_str(&format!(
                "{group}: Σ Q/P = {:.3}: {verdict} ({}){needed}\n",
                a.load, a.test
            ));
        } else {
            out.push_str(&format!(
                "{group}: load {:.3} {} {:.3}: {verdict} ({}){needed}\n",
                a.load,
                if a.admitted { "≤" } else { ">" },
                a.limit,
                a.test
            ));
        }
    }
    let reasons: Vec<String> = report
        .tasks
        .iter()
        .filter_map(|b| b.reason.as_ref().map(|r| format!("  {}: {r}", b.name)))
        .collect();
    if !reasons.is_empty() {
        out.push('\n');
        out.push_str(&reasons.join("\n"));
        out.push('\n');
    }
    out.push_str(&format!(
        "\n{}\n",
        if report.schedulable {
            "schedulable: every task meets its deadline"
        } else {
            "not schedulable"
        }
    ));
    out
}

/// `--compare`: the bound beside the simulated (and real) maxima, tasks as
/// columns; a warning where a simulation exceeds a bound, a note where a
/// real run does; the deadlocks.
fn comparison(
    report: &AnalysisReport,
    sim: &Report,
    real: Option<&Report>,
    real_asked: bool,
) -> String {
    let mut header = vec!["".to_string()];
    header.extend(report.tasks.iter().map(|b| b.name.clone()));
    let mut t = Table::new(header).align(0, Align::Left);
    let mut row = vec!["analytical worst case".to_string()];
    row.extend(
        report
            .tasks
            .iter()
            .map(|b| b.wcrt_us.map_or("unbounded".to_string(), |v| ms(Some(v)))),
    );
    t.row(row);
    for (r, label) in std::iter::once((sim, "simulated")).chain(real.map(|r| (r, "real"))) {
        let mut row = vec![format!("{label} maximum ({:.1} s)", r.duration_us / 1e6)];
        row.extend(report.tasks.iter().map(|b| ms(max_of(r, &b.name))));
        t.row(row);
    }
    let mut out = String::from(
        "\nresponse times in ms: analytical bound vs observed maximum (as the PI-CV paper's Table II)\n\n",
    );
    out.push_str(&t.render());
    // The simulator is exact to the ns; a real run is compared as measured.
    let sim_over = over_bound(report, sim, |m, bound| {
        (m * 1000.0).round() > (bound * 1000.0).round()
    });
    if !sim_over.is_empty() {
        out.push_str(&format!(
            "\nwarning: the simulation exceeds the bound for {}: a bug in the analysis or in the simulator\n",
            sim_over.join(", ")
        ));
    }
    if let Some(real) = real {
        let real_over = over_bound(report, real, |m, bound| m > bound);
        if !real_over.is_empty() {
            out.push_str(&format!(
                "\nnote: the real run exceeds the bound for {}: the analysis counts no kernel or runtime overhead, no other load on the CPU and no calibration error (try an idle machine and a release build)\n",
                real_over.join(", ")
            ));
        }
    }
    for r in std::iter::once(sim).chain(real) {
        if let Some(line) = deadlock_line(r) {
            out.push_str(&format!("\n{} {line}\n", r.mode));
        }
    }
    if real_asked && real.is_none() {
        out.push_str("\nreal run: not performed\n");
    }
    out
}

/// The tasks whose observed maximum in `r` is over their bound (`over`
/// decides, given the maximum and the bound, both µs).
fn over_bound<'a>(
    report: &'a AnalysisReport,
    r: &Report,
    over: impl Fn(f64, f64) -> bool,
) -> Vec<&'a str> {
    report
        .tasks
        .iter()
        .filter(|b| match (b.wcrt_us, max_of(r, &b.name)) {
            (Some(bound), Some(m)) => over(m, bound),
            _ => false,
        })
        .map(|b| b.name.as_str())
        .collect()
}

/// The text output of a scenario with gangs (GPM): per gang the
/// members' parts, then per gang and waiter the latency bound, with
/// `--compare` beside the simulated (and real) maximum latency.
fn gang_render(
    file: &str,
    report: &AnalysisReport,
    sim: Option<&Report>,
    real: Option<&Report>,
    real_asked: bool,
) -> String {
    let gpm = report.gangs.first().is_some_and(|g| g.gpm);
    let mut out = format!(
        "{file}: gang latency bounds (the GPM paper's Property 1), gpm {}; times in ms\n\n",
        if gpm { "on" } else { "off" }
    );
    let mut t =
        Table::new(["gang", "member", "cpu", "class", "C", "own bound"]).align(0, Align::Left);
    for g in &report.gangs {
        for m in &g.members {
            t.row([
                g.name.clone(),
                m.name.clone(),
                m.cpu.map_or("any".to_string(), |c| c.to_string()),
                m.class.clone(),
                m.work_us.map_or("-".to_string(), |v| ms(Some(v))),
                m.bound_us.map_or("-".to_string(), |v| ms(Some(v))),
            ]);
        }
    }
    out.push_str(&t.render());
    out.push('\n');
    let mut header = vec!["gang", "waiter", "prio", "B", "bound"];
    if sim.is_some() {
        header.push("simulated max");
    }
    if real.is_some() {
        header.push("real max");
    }
    let mut t = Table::new(header).align(0, Align::Left);
    for g in &report.gangs {
        let waiters: Vec<String> = if g.waiters.is_empty() {
            vec!["-".to_string()]
        } else {
            g.waiters.clone()
        };
        for w in waiters {
            let mut row = vec![
                g.name.clone(),
                w.clone(),
                g.priority.map_or("-".to_string(), |p| p.to_string()),
                g.blocking_us.map_or("-".to_string(), |v| ms(Some(v))),
                g.bound_us.map_or("unbounded".to_string(), |v| ms(Some(v))),
            ];
            for r in sim.iter().chain(real.iter()) {
                row.push(ms(gang_max_of(r, &g.name, &w)));
            }
            t.row(row);
        }
    }
    out.push_str(&t.render());
    let reasons: Vec<String> = report
        .gangs
        .iter()
        .filter_map(|g| g.reason.as_ref().map(|r| format!("  {}: {r}", g.name)))
        .collect();
    if !reasons.is_empty() {
        out.push('\n');
        out.push_str(&reasons.join("\n"));
        out.push('\n');
    }
    if let Some(sim) = sim {
        let over: Vec<String> = report
            .gangs
            .iter()
            .flat_map(|g| g.waiters.iter().map(move |w| (g, w)))
            .filter(|(g, w)| match (g.bound_us, gang_max_of(sim, &g.name, w)) {
                (Some(b), Some(m)) => (m * 1000.0).round() > (b * 1000.0).round(),
                _ => false,
            })
            .map(|(g, w)| format!("{} ({w})", g.name))
            .collect();
        if !over.is_empty() {
            out.push_str(&format!(
                "\nwarning: the simulation exceeds the bound for {}: a bug in the analysis or in the simulator\n",
                over.join(", ")
            ));
        }
        for r in std::iter::once(sim).chain(real) {
            if let Some(line) = deadlock_line(r) {
                out.push_str(&format!("\n{} {line}\n", r.mode));
            }
        }
    }
    if real_asked && real.is_none() {
        out.push_str("\nreal run: not performed\n");
    }
    if let Some(note) = &report.tasks_note {
        out.push_str(&format!("\nnote: {note}\n"));
    }
    out
}
