//! `heir` CLI integration tests: one binary, a module per behaviour. They run
//! the built binary (`CARGO_BIN_EXE_heir`) on the bundled examples and on
//! small scenarios written into unique temporary directories.

#[path = "cli/bad_input.rs"]
mod bad_input;
#[path = "cli/deadline.rs"]
mod deadline;
#[path = "cli/deadlock.rs"]
mod deadlock;
#[path = "cli/demo.rs"]
mod demo;
#[path = "cli/disturbance.rs"]
mod disturbance;
#[path = "cli/donation.rs"]
mod donation;
#[path = "cli/donation_sim.rs"]
mod donation_sim;
#[path = "cli/exec.rs"]
mod exec;
#[path = "cli/full_load.rs"]
mod full_load;
#[path = "cli/gang.rs"]
mod gang;
#[path = "cli/generate.rs"]
mod generate;
#[path = "cli/inversions.rs"]
mod inversions;

#[path = "cli/protocols.rs"]
mod protocols;
#[path = "cli/reliability.rs"]
mod reliability;
#[path = "cli/report.rs"]
mod report;
#[path = "cli/report_browser.rs"]
mod report_browser;
#[path = "cli/rtapp_files.rs"]
mod rtapp_files;
#[path = "cli/run_errors.rs"]
mod run_errors;
#[path = "cli/run_gang.rs"]
mod run_gang;
#[path = "cli/run_json.rs"]
mod run_json;
#[path = "cli/run_privilege.rs"]
mod run_privilege;
#[path = "cli/run_trace.rs"]
mod run_trace;
#[path = "cli/sim_json.rs"]
mod sim_json;
#[path = "cli/sim_table.rs"]
mod sim_table;
#[path = "cli/support.rs"]
mod support;
#[path = "cli/trace_dat.rs"]
mod trace_dat;
#[path = "cli/trace_files.rs"]
mod trace_files;
#[path = "cli/two_runs.rs"]
mod two_runs;
#[path = "cli/warnings.rs"]
mod warnings;
