//! heir-runner: runs a scenario file on real Linux threads (`heir run`),
//! on top of libheir ([`heir`], the `heir-rt` crate).
//!
//! libheir is what a C or Rust program links: the mutexes, condition
//! variables, queues, endpoints, gangs and the engine lock. Everything a
//! *run* needs beside them is here, so that libheir depends on neither the
//! scenario reader nor the report:
//!
//! - [`run`]: a scenario on real threads — one per task instance, rt-app's
//!   events on libheir's objects, the report in the simulator's schema
//!   (`heir run`; `heir demo` and `heir report` run the same way).
//! - [`tracefs`]: the kernel's view of a run (`heir run --trace`): a
//!   dedicated ftrace instance, whose `trace_marker` it hands libheir's
//!   trace hook ([`heir::trace`]), and the text trace's parser.
//! - [`tracedat`]: the same run's ring-buffer pages as a trace.dat
//!   (`heir run --trace-dat`), for trace-cmd and KernelShark.
//! - [`busy`]: `run`'s busy loop, ended on the thread's CPU clock, and its
//!   calibration per CPU.
//! - [`cpus`]: which CPUs are free of other programs' real-time work, and
//!   claims on CPUs among heir processes.
//! - [`partition`]: `heir run --partition`, a root domain per set of CPUs
//!   for the length of a run.

#![deny(
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    unsafe_op_in_unsafe_fn
)]

pub mod busy;
pub mod cpus;
pub mod partition;
pub mod run;
pub mod tracedat;
pub mod tracefs;
