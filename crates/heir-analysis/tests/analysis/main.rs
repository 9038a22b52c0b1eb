//! heir-analysis integration tests: one binary, a module per behaviour.

mod blocking;
mod edf;
mod eq5;
mod extract;
mod rta;
mod soundness;
mod sweep;
mod table1;

use std::path::PathBuf;

/// `examples/NAME` at the workspace root.
pub fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Milliseconds in ns.
pub const MS: u64 = 1_000_000;
/// Microseconds in ns.
pub const US: u64 = 1_000;
