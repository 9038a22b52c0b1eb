//! heir for Python: the native part (`heir._heir`) of the `heir` package.
//!
//! The Python package (`python/heir/`) is the public face — typed, with
//! docstrings — and calls the functions here, which are thin: a scenario is
//! read by `heir_scenario` (the CLI's reader and errors), simulated by
//! `heir_sim`, drawn by `heir_viz`, analysed, generated and swept by
//! `heir_analysis`. Results cross as JSON text (one schema with
//! `heir sim --json` / `heir analyze --json`) that the Python side loads.
//!
//! Every long call releases the GIL and stays interruptible: the work runs
//! on its own thread while the calling thread waits with the GIL released
//! and checks for signals (Ctrl-C) every few tens of milliseconds
//! (`interruptible`).
#![forbid(unsafe_code)]

mod analysis;
mod errors;
mod scenario;
mod sim;
mod sweep;

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How often a waiting call checks for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` on its own thread and waits for it with the GIL released,
/// checking for signals between waits: Ctrl-C raises `KeyboardInterrupt` at
/// once, and `cancel` (if given) is called so that the work stops early (the
/// simulator within 65536 events, a sweep within a few task sets); its
/// result is dropped.
pub(crate) fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send + 'static,
    cancel: Option<&(dyn Fn() + Sync)>,
) -> PyResult<T> {
    let (tx, mut rx) = channel();
    std::thread::Builder::new()
        .name("heir-py".into())
        .spawn(move || {
            // The receiver may be gone (interrupted): nothing to do then.
            let _ = tx.send(work());
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    loop {
        // The receiver is Send but not Sync: it goes in and comes back.
        let (back, got) = py.detach(move || {
            let got = rx.recv_timeout(SIGNAL_POLL);
            (rx, got)
        });
        rx = back;
        match got {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    if let Some(c) = cancel {
                        c();
                    }
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "heir: the computation failed (a bug: please report it)",
                ))
            }
        }
    }
}

/// The native module `heir._heir`.
#[pymodule]
fn _heir(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The vocabularies the Python types (`heir.MutexProtocol`,
    // `heir.AnalysisProtocol`, `heir.Generator`) are tested against: the
    // CLI's own lists.
    m.add("MUTEX_PROTOCOLS", heir_scenario::protocols::NAMES.to_vec())?;
    m.add(
        "ANALYSIS_PROTOCOLS",
        heir_analysis::Family::ALL
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>(),
    )?;
    m.add("GENERATORS", analysis::GENERATORS.to_vec())?;
    m.add_class::<scenario::NativeScenario>()?;
    m.add_class::<sim::NativeRun>()?;
    m.add_class::<analysis::NativeTaskSet>()?;
    m.add_function(wrap_pyfunction!(sim::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::analyze, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::generate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_check, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_counts, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_outputs, m)?)?;
    Ok(())
}
