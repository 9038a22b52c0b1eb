//! heir-report: what a run produces, whichever face ran it — the simulator
//! (`heir sim`) or real threads (`heir run`) — and what the chart writers
//! (`heir-viz`) read.
//!
//! - [`Report`]: per thread, jobs, deadline misses and response-time
//!   statistics, and the deadlock that stopped the run; one JSON schema for
//!   both faces (`mode: "sim"` or `"real"`).
//! - [`ResponseStats`]: the streamed response-time histogram behind the
//!   statistics (nothing grows with the number of jobs).
//! - The trace stream: an [`Observer`] is told the run's [`TraceInfo`]
//!   (CPUs, threads, resources), then every [`TraceEvent`] in time order.
//!
//! This crate has no simulator and no runtime in it: the runtime library
//! (`libheir`) and the chart writers depend on it alone.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod report;
pub mod stats;
pub mod trace;

pub use report::{
    DeadlockKind, DeadlockReport, GangReport, GangWaitReport, Report, ServerStats, TaskReport,
};
pub use stats::{ResponseStats, ResponseSummary};
pub use trace::{InstantKind, NullObserver, Observer, ThreadInfo, TraceEvent, TraceInfo};
