//! heir-sim integration tests: one binary, one module per behaviour.

#[allow(dead_code)]
#[path = "sim/common.rs"]
mod common;

#[path = "sim/scheduling.rs"]
mod scheduling;

#[path = "sim/inheritance.rs"]
mod inheritance;

#[path = "sim/sync.rs"]
mod sync;

#[path = "sim/determinism.rs"]
mod determinism;

#[path = "sim/memory.rs"]
mod memory;

#[path = "sim/examples.rs"]
mod examples;

#[path = "sim/deadline.rs"]
mod deadline;

#[path = "sim/errors.rs"]
mod errors;

#[path = "sim/random.rs"]
mod random;

#[path = "sim/limits.rs"]
mod limits;

#[path = "sim/donation.rs"]
mod donation;

#[path = "sim/blocking.rs"]
mod blocking;

#[path = "sim/donation_deadline.rs"]
mod donation_deadline;

#[path = "sim/gang.rs"]
mod gang;

#[path = "sim/scale.rs"]
mod scale;
