//! `heir.sweep`: `heir sweep`'s computation in chunks of task sets
//! (`heir_analysis::sweep::count_items`), whose counts add up to the whole
//! sweep — on this process's threads, or on Dask workers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use heir_analysis::sweep::{count_items, result_from_counts, ConfigError, SweepConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;

use crate::errors::{raise, At};
use crate::interruptible;

/// Task sets analysed between two looks at the cancel flag.
const CANCEL_GRAIN: usize = 1024;

/// `ConfigError`, as the CLI words it (`NAME:LINE:COL: …` / `NAME: at PATH: …`).
fn config_error(py: Python<'_>, name: &str, e: &ConfigError) -> PyErr {
    let sep = if e.line > 0 { ":" } else { ": " };
    raise(
        py,
        "ConfigError",
        format!("{name}{sep}{e}"),
        At {
            file: name,
            line: e.line,
            column: e.column,
            path: e.path.as_deref(),
        },
        &e.message,
    )
}

fn config(py: Python<'_>, text: &str, name: &str) -> PyResult<SweepConfig> {
    SweepConfig::from_json_str(text).map_err(|e| config_error(py, name, &e))
}

/// Reads and checks a sweep configuration (the text of a `heir sweep`
/// file; `name` names it in errors) and returns what the Python side needs,
/// as JSON: the total number of task sets, the points, the protocols, the
/// tasks per set, the sets per point, the seed and the output paths.
#[pyfunction]
pub fn sweep_check(py: Python<'_>, text: &str, name: &str) -> PyResult<String> {
    let cfg = config(py, text, name)?;
    Ok(json!({
        "total_sets": cfg.total_sets(),
        "points": cfg.points,
        "protocols": cfg.protocols.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "tasks": cfg.params.tasks,
        "sets_per_point": cfg.sets_per_point,
        "seed": cfg.seed,
        "csv": cfg.csv,
        "svg": cfg.svg,
    })
    .to_string())
}

/// The schedulable counts of task sets `start..end` of the sweep
/// (`counts[point × protocols + k]`), computed on this process's threads
/// with the GIL released; Ctrl-C stops it within a few task sets.
#[pyfunction]
pub fn sweep_counts(py: Python<'_>, text: &str, start: usize, end: usize) -> PyResult<Vec<u64>> {
    let cfg = config(py, text, "<sweep>")?;
    if start > end {
        return Err(PyValueError::new_err(format!(
            "expected start ≤ end, got {start} > {end}"
        )));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let counts = interruptible(
        py,
        move || {
            let mut sum = vec![0u64; cfg.points.len() * cfg.protocols.len()];
            let mut at = start;
            while at < end && !flag.load(Ordering::Relaxed) {
                // Grains of a few sets per thread: a look at the flag between
                // them, each still spread over the pool.
                let grain = CANCEL_GRAIN * rayon::current_num_threads().max(1);
                let next = end.min(at.saturating_add(grain));
                let part = count_items(&cfg, at..next, &|_| {});
                sum.iter_mut().zip(part).for_each(|(s, p)| *s += p);
                at = next;
            }
            sum
        },
        Some(&|| stop.store(true, Ordering::Relaxed)),
    )?;
    Ok(counts)
}

/// The CSV and SVG of `heir sweep` from the summed counts of every chunk.
#[pyfunction]
pub fn sweep_outputs(py: Python<'_>, text: &str, counts: Vec<u64>) -> PyResult<(String, String)> {
    let cfg = config(py, text, "<sweep>")?;
    let expected = cfg.points.len() * cfg.protocols.len();
    if counts.len() != expected {
        return Err(PyValueError::new_err(format!(
            "expected {expected} counts (points × protocols), got {}",
            counts.len()
        )));
    }
    let r = result_from_counts(&cfg, &counts);
    Ok((r.to_csv(), r.to_svg()))
}
