//! One input through the reader, the analysis and the simulator, and what
//! must hold of what they do.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};

use heir_analysis::{analyze_scenario, Options};
use heir_scenario::{parse_bytes, Scenario};
use heir_sim::{Observer, Report, SimConfig, SimError, Simulator, TraceEvent, TraceInfo};
use heir_viz::{ChromeTrace, SvgGantt, SvgOptions, Tee};

/// The simulated time each input gets (µs), whatever its duration says.
pub const SIM_US: u64 = 20_000;

/// The longest error message heir may print (a path 64 levels deep of cut
/// keys, and a message quoting cut values, stay below it).
pub const MAX_MESSAGE_BYTES: usize = 8_192;

/// What became of an input that did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The reader refused it, with a proper error.
    Refused,
    /// It read; whether the simulator ran it to the end and whether the
    /// analysis accepted it.
    Read { simulated: bool, analysed: bool },
}

/// What went wrong with an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A panic, with its message, in the reader, the analysis or the
    /// simulator (`stage`).
    Panic {
        stage: &'static str,
        message: String,
    },
    /// Something that must hold did not.
    Broken { stage: &'static str, what: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Panic { stage, message } => write!(f, "{stage} panicked: {message}"),
            Failure::Broken { stage, what } => write!(f, "{stage}: {what}"),
        }
    }
}

fn guarded<T>(stage: &'static str, f: impl FnOnce() -> T) -> Result<T, Failure> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| Failure::Panic {
        stage,
        message: p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(not a string)".to_string()),
    })
}

fn broken(stage: &'static str, what: impl Into<String>) -> Failure {
    Failure::Broken {
        stage,
        what: what.into(),
    }
}

/// Hashes the trace stream as it goes, field by field.
struct HashObs(DefaultHasher);

impl Observer for HashObs {
    fn start(&mut self, info: &TraceInfo) {
        format!("{info:?}").hash(&mut self.0);
    }
    fn event(&mut self, ev: &TraceEvent) {
        let h = &mut self.0;
        match ev {
            TraceEvent::Exec {
                cpu,
                thread,
                start_ns,
                end_ns,
                urgency,
                donor,
            } => (0u8, cpu, thread, start_ns, end_ns, urgency, donor).hash(h),
            TraceEvent::Release {
                thread,
                at_ns,
                deadline_ns,
            } => (1u8, thread, at_ns, deadline_ns).hash(h),
            TraceEvent::Complete {
                thread,
                at_ns,
                response_ns,
                missed,
            } => (2u8, thread, at_ns, response_ns, missed).hash(h),
            TraceEvent::Instant {
                thread,
                at_ns,
                kind,
                resource,
            } => (3u8, thread, at_ns, *kind as u8, resource).hash(h),
            TraceEvent::Boost {
                at_ns,
                to,
                donor,
                urgency,
            } => (4u8, at_ns, to, donor, urgency).hash(h),
        }
    }
    fn finish(&mut self, end_ns: u64) {
        end_ns.hash(&mut self.0);
    }
}

/// One simulation: the report (or error), the trace's hash, and the
/// engine's invariants at the end.
type SimRun = (Result<Report, SimError>, u64, Result<(), String>);

fn simulate(sc: &Scenario, cfg: &SimConfig) -> SimRun {
    let mut obs = HashObs(DefaultHasher::new());
    let (result, invariants) = match Simulator::new(sc, cfg, &mut obs) {
        Err(e) => (Err(e), Ok(())),
        Ok(mut sim) => {
            let r = sim.run();
            let inv = sim.check_invariants();
            (r, inv)
        }
    };
    (result, obs.0.finish(), invariants)
}

/// The run again, into a Chrome trace and an SVG chart: the trace must be
/// one JSON object, the chart a whole SVG document.
fn write_traces(sc: &Scenario, cfg: &SimConfig) -> Result<(), Failure> {
    let mut chrome = ChromeTrace::new(Vec::new());
    let mut svg = SvgGantt::new(SvgOptions::default());
    let mut tee = Tee::new();
    tee.push(&mut chrome);
    tee.push(&mut svg);
    let ran = heir_sim::simulate(sc, cfg, &mut tee).is_ok();
    drop(tee);
    if !ran {
        // A refused run never finishes its trace (the CLI writes no file).
        return Ok(());
    }
    let trace = chrome
        .into_inner()
        .map_err(|e| broken("trace writers", format!("Chrome trace: {e}")))?;
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&trace) {
        return Err(broken(
            "trace writers",
            format!("Chrome trace is not JSON: {e}"),
        ));
    }
    let mut out = Vec::new();
    svg.write_svg(&mut out)
        .map_err(|e| broken("trace writers", format!("SVG: {e}")))?;
    if !out.starts_with(b"<?xml") || !out.ends_with(b"</svg>\n") {
        return Err(broken(
            "trace writers",
            "the SVG is not a whole <svg> document",
        ));
    }
    Ok(())
}

/// Checks one input (`cpus`: the simulator's `--cpus`, if any).
///
/// Must hold: nothing panics; a reader error has a position within the text
/// and a bounded message; a scenario that reads is analysed (or refused
/// with a bounded message) and simulated for [`SIM_US`] twice, with the
/// same report, the same trace and the same error if any, the engine's
/// invariants intact, no more jobs missed than completed, and a run no
/// The longest an analysis of one input may take.
const ANALYSIS_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// longer than asked.
pub fn check(bytes: &[u8], cpus: Option<u32>) -> Result<Outcome, Failure> {
    let read = guarded("reader", || parse_bytes(bytes, "fuzz.json"))?;
    let sc = match read {
        Err(e) => {
            let shown = e.to_string();
            if shown.len() > MAX_MESSAGE_BYTES {
                return Err(broken(
                    "reader",
                    format!("a {}-byte message: {}…", shown.len(), &shown[..200]),
                ));
            }
            let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
            if e.line > lines || (e.line > 0 && e.column == 0) {
                return Err(broken(
                    "reader",
                    format!("position {}:{} outside the text: {shown}", e.line, e.column),
                ));
            }
            return Ok(Outcome::Refused);
        }
        Ok(sc) => sc,
    };

    // Every fixed point of the analysis is bounded (issue 21: a task at
    // utilisation exactly 1 with blocking spun forever): a slow one is a
    // failure too.
    let started = std::time::Instant::now();
    let analysis = guarded("analysis", || analyze_scenario(&sc, &Options::default()))?;
    if started.elapsed() > ANALYSIS_LIMIT {
        return Err(broken(
            "analysis",
            format!(
                "took {:?} (more than {ANALYSIS_LIMIT:?})",
                started.elapsed()
            ),
        ));
    }
    if let Err(e) = &analysis {
        let shown = e.to_string();
        if shown.len() > MAX_MESSAGE_BYTES {
            return Err(broken(
                "analysis",
                format!("a {}-byte message", shown.len()),
            ));
        }
    }

    let cfg = SimConfig {
        duration_us: Some(SIM_US),
        cpus,
        ..SimConfig::default()
    };
    let first = guarded("simulator", || simulate(&sc, &cfg))?;
    let second = guarded("simulator (second run)", || simulate(&sc, &cfg))?;
    if let Err(e) = &first.2 {
        return Err(broken("simulator", format!("engine invariants: {e}")));
    }
    if first != second {
        return Err(broken(
            "simulator",
            format!(
                "two runs of the same input differ: {:?} / {:?}",
                first.0, second.0
            ),
        ));
    }
    if first.0.is_ok() {
        guarded("trace writers", || write_traces(&sc, &cfg))??;
    }
    let simulated = match &first.0 {
        Ok(r) => {
            if r.duration_us > SIM_US as f64 {
                return Err(broken(
                    "simulator",
                    format!("ran {} µs of {SIM_US}", r.duration_us),
                ));
            }
            if let Some(t) = r
                .tasks
                .iter()
                .find(|t| t.deadline_misses > t.jobs + t.unfinished_misses)
            {
                return Err(broken(
                    "simulator",
                    format!(
                        "{}: more misses than jobs (completed or unfinished)",
                        t.name
                    ),
                ));
            }
            true
        }
        Err(e) => {
            let shown = e.to_string();
            if shown.len() > MAX_MESSAGE_BYTES {
                return Err(broken(
                    "simulator",
                    format!("a {}-byte message", shown.len()),
                ));
            }
            false
        }
    };
    Ok(Outcome::Read {
        simulated,
        analysed: analysis.is_ok(),
    })
}

#[cfg(test)]
mod full_load_tests {
    use super::*;

    #[test]
    fn a_task_at_utilisation_one_with_blocking_is_analysed_promptly() {
        // The members mutate.rs adds (F, G, H): exactly 1 per task with a
        // mutex, above 1 per CPU, above 1 per task.
        let input = br#"{"global": {"default_policy": "SCHED_FIFO"}, "resources": {"m": {"type": "mutex", "protocol": "inherit"}}, "tasks": {
            "F": {"priority": 60, "cpus": [0], "run": 1, "lock": "m", "run1": 999, "unlock": "m", "timer": {"ref": "f", "period": 1000}},
            "L": {"priority": 10, "cpus": [0], "lock": "m", "run": 50, "unlock": "m", "timer": {"ref": "l", "period": 10000}}}}"#;
        let start = std::time::Instant::now();
        let out = check(input, None);
        assert!(start.elapsed() < ANALYSIS_LIMIT);
        assert!(
            matches!(out, Ok(Outcome::Read { analysed: true, .. })),
            "{out:?}"
        );
    }
}
