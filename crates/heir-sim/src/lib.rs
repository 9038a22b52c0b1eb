//! heir-sim: a deterministic discrete-event simulator driven by heir-core.
//! (Skeleton: the contract other crates code against.)
#![forbid(unsafe_code)]

pub mod report;
pub mod stats;
pub mod trace;

pub use report::{DeadlockReport, Report, TaskReport};
pub use stats::{ResponseStats, ResponseSummary};
pub use trace::{InstantKind, NullObserver, Observer, SimInfo, ThreadInfo, TraceEvent};

use heir_scenario::Scenario;

/// Overrides of what the scenario file says.
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    /// Replaces `global.seed`.
    pub seed: Option<u64>,
    /// Replaces `global.duration` (µs).
    pub duration_us: Option<u64>,
    /// Replaces `global.pi_cv`.
    pub pi_cv: Option<bool>,
}

/// Why a simulation could not run (the scenario is fine for reading but not
/// for simulating, e.g. no finite duration).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Simulates `scenario`, streaming trace events to `obs`.
pub fn simulate(
    scenario: &Scenario,
    config: &SimConfig,
    obs: &mut dyn Observer,
) -> Result<Report, SimError> {
    let _ = (scenario, config, obs);
    todo!()
}
