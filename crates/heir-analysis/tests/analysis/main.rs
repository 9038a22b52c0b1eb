//! heir-analysis integration tests: one binary, a module per behaviour.

mod blocking;
mod bwi;
mod cancel;
mod edf;
mod eq5;
mod extract;
mod full_load;
mod gang;
mod helpers;
mod level_sweep;
mod rta;
mod soundness;
mod soundness_dl;
mod soundness_edf;
mod sweep;
mod table1;

use std::path::PathBuf;

use heir_analysis::model::{Call, Mutex, Section, Server, Task, TaskSet};

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

/// H (90), M (70) and L (50) on CPU 0, each working 10 µs every 1 ms, with
/// M's and L's critical sections as given; H calls server S (priority 10)
/// for 3 µs and L calls it for 7 µs; PI-CV on:
///
/// ```text
///   H (90) ──call──▶ S (3)
///   M (70)                    m_sections
///   L (50) ──call──▶ S (7)    l_sections
/// ```
pub fn h_m_l_calling_s(
    m_sections: Vec<Section>,
    l_sections: Vec<Section>,
    mutexes: Vec<Mutex>,
) -> TaskSet {
    let call = |wcet_us: u64| {
        vec![Call {
            server: 0,
            wcet: wcet_us * US,
        }]
    };
    let task = |name: &str, prio: i32, sections: Vec<Section>, calls: Vec<Call>| {
        Task::fixed(name, 0, prio, 1000 * US, 10 * US, sections, calls)
    };
    TaskSet {
        tasks: vec![
            task("H", 90, vec![], call(3)),
            task("M", 70, m_sections, vec![]),
            task("L", 50, l_sections, call(7)),
        ],
        servers: vec![Server {
            name: "S".into(),
            cpu: 0,
            priority: 10,
            inherits: true,
        }],
        mutexes,
        pi_cv: true,
    }
}
