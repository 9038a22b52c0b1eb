//! Schedulability ratio against utilisation, per protocol, over random task
//! sets: the experiment of every locking-protocol paper.
//!
//! Ordering and reproducibility: task set `index` of utilisation point
//! `point` is generated from its own stream, seeded by
//! [`crate::rng::derive_seed`]`(seed, point, index)`, and analysed under every
//! protocol. Results are counts, summed in any order: the output is the same
//! bit for bit whatever the number of threads (rayon) and the schedule.

use rayon::prelude::*;
use serde::Deserialize;

use crate::fp::Analyzer;
use crate::gen::{generate, CsProfile, GenParams, UtilGenerator, TOP_PRIORITY};
use crate::model::Family;
use crate::rng::{derive_seed, Rng};
use crate::svg::{line_chart, Chart, Series};

/// A sweep configuration (`heir sweep CONFIG`; the format is documented in
/// `docs/ANALYSIS.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepConfig {
    pub seed: u64,
    pub sets_per_point: usize,
    /// Utilisation points, in order.
    pub points: Vec<f64>,
    pub params: GenParams,
    pub protocols: Vec<Family>,
    /// `output.csv` and `output.svg` as written (relative to the current
    /// directory); `None` when the configuration has no `output` (`heir
    /// sweep` then needs `--csv` and `--svg`; the Python package returns
    /// the result in memory).
    pub csv: Option<String>,
    pub svg: Option<String>,
}

/// A configuration that cannot be used: where (line:column for syntax and
/// types, JSON path for values) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{message}", if *line > 0 { format!("{line}:{column}: ") } else { String::new() }, path.as_ref().map(|p| format!("at {p}: ")).unwrap_or_default())]
pub struct ConfigError {
    pub line: u32,
    pub column: u32,
    pub path: Option<String>,
    pub message: String,
}

fn at(path: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        line: 0,
        column: 0,
        path: Some(path.to_string()),
        message: message.into(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    seed: u64,
    tasks: usize,
    sets_per_point: usize,
    utilisation: RawRange,
    #[serde(default = "default_generator")]
    generator: UtilGenerator,
    periods_us: RawPeriods,
    critical_sections: RawCs,
    #[serde(default)]
    rpc: Option<RawRpc>,
    #[serde(default = "default_protocols")]
    protocols: Vec<String>,
    #[serde(default)]
    output: Option<RawOutput>,
}

fn default_generator() -> UtilGenerator {
    UtilGenerator::Uunifast
}

fn default_protocols() -> Vec<String> {
    Family::ALL.iter().map(|p| p.name().to_string()).collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange {
    from: f64,
    to: f64,
    step: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPeriods {
    min: u64,
    max: u64,
    #[serde(default = "one_thousand")]
    granularity: u64,
}

fn one_thousand() -> u64 {
    1000
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCs {
    profile: CsProfile,
    /// Overrides the profile's range.
    #[serde(default)]
    length_us: Option<[u64; 2]>,
    resources: usize,
    access_probability: f64,
    #[serde(default)]
    nest_probability: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRpc {
    servers: usize,
    call_probability: f64,
    call_us: [u64; 2],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    csv: String,
    svg: String,
}

impl RawRange {
    /// The utilisation points: `from`, `from + step`, … up to `to`, within
    /// one CPU and at most 10000 of them.
    fn points(&self) -> Result<Vec<f64>, ConfigError> {
        if !(self.from > 0.0 && self.from <= self.to && self.to <= 1.0) {
            return Err(at(
                "utilisation",
                format!(
                    "expected 0 < from ≤ to ≤ 1 (one CPU), got from {} to {}",
                    self.from, self.to
                ),
            ));
        }
        if self.step.is_nan() || self.step <= 0.0 {
            return Err(at(
                "utilisation.step",
                format!("expected a step > 0, got {}", self.step),
            ));
        }
        let count = ((self.to - self.from) / self.step + 1e-9).floor() as usize + 1;
        if count > 10_000 {
            return Err(at(
                "utilisation.step",
                format!("{count} points: expected at most 10000"),
            ));
        }
        Ok((0..count)
            .map(|k| self.from + k as f64 * self.step)
            .collect())
    }
}

impl RawPeriods {
    /// `0 < min ≤ max` and `1 ≤ granularity ≤ min`.
    fn check(&self) -> Result<(), ConfigError> {
        if self.min == 0 || self.min > self.max {
            return Err(at(
                "periods_us",
                format!(
                    "expected 0 < min ≤ max, got min {} max {}",
                    self.min, self.max
                ),
            ));
        }
        if self.granularity == 0 || self.granularity > self.min {
            return Err(at(
                "periods_us.granularity",
                format!("expected 1 ≤ granularity ≤ min, got {}", self.granularity),
            ));
        }
        Ok(())
    }
}

impl RawCs {
    /// The section length range (µs): `length_us`, or the profile's; and at
    /// most 64 resources.
    fn length_us(&self) -> Result<(u64, u64), ConfigError> {
        let range = match self.length_us {
            Some([a, b]) if a == 0 || a > b => {
                return Err(at(
                    "critical_sections.length_us",
                    "expected [min, max] with 0 < min ≤ max",
                ))
            }
            Some([a, b]) => (a, b),
            None => self.profile.range_us(),
        };
        if self.resources > 64 {
            return Err(at(
                "critical_sections.resources",
                "expected at most 64 resources",
            ));
        }
        Ok(range)
    }
}

impl RawRpc {
    /// (servers, call probability, call work range in µs), checked.
    fn checked(&self) -> Result<(usize, f64, (u64, u64)), ConfigError> {
        if self.call_us[0] == 0 || self.call_us[0] > self.call_us[1] {
            return Err(at("rpc.call_us", "expected [min, max] with 0 < min ≤ max"));
        }
        Ok((
            self.servers,
            probability("rpc.call_probability", self.call_probability)?,
            (self.call_us[0], self.call_us[1]),
        ))
    }
}

/// The protocols by name: known, each once, at least one.
fn protocols(names: &[String]) -> Result<Vec<Family>, ConfigError> {
    let mut protocols = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let Some(p) = Family::parse(name) else {
            return Err(at(
                &format!("protocols[{k}]"),
                format!("unknown protocol \"{name}\" (expected {})", Family::CHOICES),
            ));
        };
        if protocols.contains(&p) {
            return Err(at(
                &format!("protocols[{k}]"),
                format!("protocol \"{name}\" listed twice"),
            ));
        }
        protocols.push(p);
    }
    if protocols.is_empty() {
        return Err(at("protocols", "expected at least one protocol"));
    }
    Ok(protocols)
}

fn probability(path: &str, p: f64) -> Result<f64, ConfigError> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(at(
            path,
            format!("expected a probability in [0, 1], got {p}"),
        ))
    }
}

impl SweepConfig {
    /// Reads and checks a configuration.
    pub fn from_json_str(text: &str) -> Result<SweepConfig, ConfigError> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| ConfigError {
            line: e.line() as u32,
            column: e.column() as u32,
            path: None,
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or("")
                .to_string(),
        })?;
        if raw.tasks == 0 {
            return Err(at("tasks", "expected at least 1 task"));
        }
        if raw.sets_per_point == 0 {
            return Err(at("sets_per_point", "expected at least 1 set per point"));
        }
        let points = raw.utilisation.points()?;
        let p = &raw.periods_us;
        p.check()?;
        let cs = &raw.critical_sections;
        let cs_us = cs.length_us()?;
        let (servers, call_probability, call_us) = match &raw.rpc {
            None => (0, 0.0, (1, 1)),
            Some(r) => r.checked()?,
        };
        if raw.tasks + servers > TOP_PRIORITY as usize {
            return Err(at(
                "tasks",
                format!(
                    "{} tasks and {} servers need distinct SCHED_FIFO priorities: at most {} in all",
                    raw.tasks, servers, TOP_PRIORITY
                ),
            ));
        }
        let protocols = protocols(&raw.protocols)?;
        if let Some(o) = &raw.output {
            if o.csv.is_empty() || o.svg.is_empty() {
                return Err(at("output", "expected non-empty \"csv\" and \"svg\" paths"));
            }
        }
        let (csv, svg) = match raw.output {
            Some(o) => (Some(o.csv), Some(o.svg)),
            None => (None, None),
        };
        Ok(SweepConfig {
            seed: raw.seed,
            sets_per_point: raw.sets_per_point,
            points,
            params: GenParams {
                tasks: raw.tasks,
                generator: raw.generator,
                period_min_us: p.min,
                period_max_us: p.max,
                period_granularity_us: p.granularity,
                resources: cs.resources,
                access_probability: probability(
                    "critical_sections.access_probability",
                    cs.access_probability,
                )?,
                cs_us,
                nest_probability: probability(
                    "critical_sections.nest_probability",
                    cs.nest_probability,
                )?,
                servers,
                call_probability,
                call_us,
            },
            protocols,
            csv,
            svg,
        })
    }

    /// Task sets in the whole sweep.
    pub fn total_sets(&self) -> u64 {
        self.points.len() as u64 * self.sets_per_point as u64
    }
}

/// One utilisation point.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub utilisation: f64,
    pub sets: u64,
    /// Schedulable sets, per protocol (in [`SweepResult::protocols`] order).
    pub schedulable: Vec<u64>,
}

/// The whole sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepResult {
    pub protocols: Vec<Family>,
    pub tasks: usize,
    pub points: Vec<SweepPoint>,
}

/// The task set `index` of point `point` (exactly what [`run`] analyses).
pub fn task_set(cfg: &SweepConfig, point: usize, index: usize) -> crate::model::TaskSet {
    let mut rng = Rng::new(derive_seed(cfg.seed, point as u64, index as u64));
    generate(&cfg.params, cfg.points[point], &mut rng)
}

/// Runs the sweep on rayon's pool; `progress(n)` is called as sets finish
/// (from any thread).
pub fn run(cfg: &SweepConfig, progress: &(dyn Fn(u64) + Sync)) -> SweepResult {
    let counts = count_items(cfg, 0..cfg.points.len() * cfg.sets_per_point, progress);
    result_from_counts(cfg, &counts)
}

/// The schedulable counts of the task sets numbered `items` (set `index` of
/// point `point` is item `point × sets_per_point + index`; items past the
/// end are ignored), on rayon's pool: `counts[point × protocols + k]` sets
/// of `point` schedulable under protocol `k`. Counts add up: the counts of
/// disjoint ranges covering every item, summed, are those of [`run`] — how
/// a sweep is split into chunks over processes or machines (the Python
/// package's Dask sweep) and stays the same bit for bit.
pub fn count_items(
    cfg: &SweepConfig,
    items: std::ops::Range<usize>,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<u64> {
    let per = cfg.sets_per_point;
    let np = cfg.protocols.len();
    let end = items.end.min(cfg.points.len() * per);
    (items.start.min(end)..end)
        .into_par_iter()
        .map_init(Analyzer::new, |an, item| {
            let (point, index) = (item / per, item % per);
            let set = task_set(cfg, point, index);
            let mut row = vec![0u64; cfg.points.len() * np];
            for (k, &p) in cfg.protocols.iter().enumerate() {
                if an.schedulable(&set.with_protocol(p)) {
                    row[point * np + k] = 1;
                }
            }
            progress(1);
            (point, row)
        })
        .fold(
            || vec![0u64; cfg.points.len() * np],
            |mut acc, (point, row)| {
                for k in 0..np {
                    acc[point * np + k] += row[point * np + k];
                }
                acc
            },
        )
        .reduce(
            || vec![0u64; cfg.points.len() * np],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// The sweep's result from the counts of every item (as [`count_items`]
/// returns them, summed over chunks). A shorter `counts` counts the
/// missing entries as 0.
pub fn result_from_counts(cfg: &SweepConfig, counts: &[u64]) -> SweepResult {
    let np = cfg.protocols.len();
    let count = |i: usize| counts.get(i).copied().unwrap_or(0);
    SweepResult {
        protocols: cfg.protocols.clone(),
        tasks: cfg.params.tasks,
        points: cfg
            .points
            .iter()
            .enumerate()
            .map(|(k, &u)| SweepPoint {
                utilisation: u,
                sets: cfg.sets_per_point as u64,
                schedulable: (k * np..(k + 1) * np).map(count).collect(),
            })
            .collect(),
    }
}

impl SweepResult {
    /// `utilisation,sets,<protocol>…` with the schedulable ratio per protocol.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("utilisation,sets");
        for p in &self.protocols {
            s.push(',');
            s.push_str(p.name());
        }
        s.push('\n');
        for pt in &self.points {
            s.push_str(&format!("{:.4},{}", pt.utilisation, pt.sets));
            for &c in &pt.schedulable {
                s.push_str(&format!(",{:.4}", c as f64 / pt.sets.max(1) as f64));
            }
            s.push('\n');
        }
        s
    }

    /// The schedulability-ratio plot.
    pub fn to_svg(&self) -> String {
        let x0 = self.points.first().map_or(0.0, |p| p.utilisation);
        let x1 = self.points.last().map_or(1.0, |p| p.utilisation);
        line_chart(&Chart {
            title: format!(
                "Schedulable task sets ({} tasks, {} sets per point)",
                self.tasks,
                self.points.first().map_or(0, |p| p.sets)
            ),
            x_label: "total utilisation".to_string(),
            y_label: "schedulable ratio".to_string(),
            x_range: (0.0, x1.max(x0 + 1e-9)),
            y_range: (0.0, 1.0),
            series: self
                .protocols
                .iter()
                .enumerate()
                .map(|(k, p)| Series {
                    name: p.name().to_string(),
                    points: self
                        .points
                        .iter()
                        .map(|pt| {
                            (
                                pt.utilisation,
                                pt.schedulable[k] as f64 / pt.sets.max(1) as f64,
                            )
                        })
                        .collect(),
                })
                .collect(),
        })
    }
}
