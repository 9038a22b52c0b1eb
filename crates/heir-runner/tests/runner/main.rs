//! heir-runner integration tests: one binary, a module per behaviour —
//! scenario files run on real threads, the busy loop's calibration, and
//! what a run reports when the kernel refuses something.
//!
//! Real-time tests pin their threads to one CPU, run under a watchdog, and
//! are serialised, in this binary and across test binaries (heir-rt's
//! scaffolding, `crates/heir-rt/tests/rt/common.rs`, shared as is). Where
//! SCHED_FIFO is not available they print why and skip — except under
//! `CI=true`, where that is a failure.

// The real-thread scaffolding of libheir's tests: one copy for both test
// binaries (the lock file, the CPU choice, the watchdog).
#[path = "../../../heir-rt/tests/rt/common.rs"]
#[allow(dead_code)]
mod common;

mod apply_errors;
mod calibration;
mod run_errors;
mod run_scenario;
