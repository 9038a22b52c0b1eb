//! heir-rt integration tests: one binary, a module per behaviour.
//!
//! Real-time tests pin their threads to one CPU, run under a watchdog, and
//! are serialised (see `common`). Where SCHED_FIFO is not available they
//! print why and skip — except under `CI=true`, where that is a failure.

mod common;

mod bad_args;
mod capi;
mod capi_calls;
mod ceiling;
mod chain;
mod deadline_lend;
mod deadline_pi;
mod donation;
mod donation_abort;
mod exit;
mod fig6;
mod fig7;
mod gang;
mod kernel_boost;
mod lifetimes;
mod queue_rpc;
mod revoke;
mod robust;
mod stress;
mod textbook;
