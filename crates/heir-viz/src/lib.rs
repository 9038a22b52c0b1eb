//! heir-viz: observers that write down what a run did.
//!
//! Every writer here is an [`heir_report::Observer`]: the simulator (`heir sim`)
//! and the real-time runner (`heir run`) stream [`TraceEvent`]s into it while
//! they run, so nothing has to keep the whole run in memory.
//!
//! - [`ChromeTrace`] streams Chrome trace-event JSON (the JSON object form,
//!   `{"traceEvents":[…],"displayTimeUnit":"ns"}`) that ui.perfetto.dev and
//!   chrome://tracing open: a track per CPU, a track per thread, execution
//!   slices carrying the effective urgency, instants for the synchronisation
//!   operations, and flow arrows from a donor to the thread it boosts. Its
//!   memory is flat however long the run: each event is written as it
//!   arrives.
//! - [`SvgGantt`] keeps a bounded time window (the first 200 ms by default)
//!   and renders a self-contained SVG Gantt chart in the style of the
//!   papers' KernelShark figures: a lane per thread, boosted execution
//!   hatched in the donor's colour, releases (↑), deadlines (↓) and misses
//!   (red).
//! - [`Tee`] fans one event stream out to several observers.
//! - [`ResponseSamples`] and [`BoostSummary`] keep each thread's response
//!   times and who lent to whom for how long; [`report::ReportPage`]
//!   renders the report page (`heir report`): one self-contained HTML file
//!   with the faces of a scenario side by side.
//!
//! # Ordering guarantees
//! The writers keep the order in which events arrive; they neither sort nor
//! reorder. Trace viewers sort Chrome trace events by timestamp themselves, so
//! an execution slice (reported by the simulator when it *ends*) may appear in
//! the file after instants that happen during it.
//!
//! # Errors
//! The [`Observer`] methods cannot return errors, so [`ChromeTrace`] keeps the
//! first I/O error, stops writing, and returns it from
//! [`ChromeTrace::into_inner`]. Writers never panic on bad indices in the
//! event stream: an unknown thread or resource is named `#N`.
//!
//! Neither writer creates files: give them a writer. To leave nothing
//! half-written, write into a temporary file beside the target and rename it
//! once [`ChromeTrace::into_inner`] / [`SvgGantt::write_svg`] succeeded (the
//! `heir` CLI does this).
#![forbid(unsafe_code)]

mod chrome;
mod collect;
pub mod report;
mod style;
mod svg;
mod tee;

pub use chrome::{ChromeTrace, TraceWriteError};
pub use collect::{BoostRow, BoostSummary, ResponseSamples};
pub use svg::{SvgGantt, SvgOptions};
pub use tee::Tee;

#[doc(no_inline)]
pub use heir_report::{Observer, TraceEvent, TraceInfo};
