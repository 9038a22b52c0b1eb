//! `heir`: run one scenario file three ways — simulated, on real threads, and
//! analysed — and see whether they agree.

mod analyze;
mod demo;
mod disturb;
mod exec;
mod exec_scenario;
mod exec_trace;
mod exit;
mod generate;
mod inversions;
mod output;
mod report;
mod run;
mod sim;
mod sweep;
mod trace_dat;

use clap::{CommandFactory, Parser, Subcommand};

pub use exit::{CliError, CliResult};

/// Priority inheritance beyond mutexes: simulate, run and analyse one
/// rt-app scenario file.
#[derive(Parser, Debug)]
#[command(name = "heir", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Simulate a scenario file (deterministic, from its seed).
    Sim(sim::Args),
    /// Run a scenario file on real threads (SCHED_FIFO, pinned).
    Run(run::Args),
    /// Schedulability analysis of a scenario file.
    Analyze(analyze::Args),
    /// Schedulability ratio against utilisation for random task sets.
    Sweep(sweep::Args),
    /// The main job: the PI-CV paper's client/server scenario, PI-CV off and on.
    Demo(demo::Args),
    /// One HTML page: simulated, analysed and real response times, CDFs,
    /// Gantt charts and boosts, PI-CV off and on.
    Report(report::Args),
    /// Run an unmodified pthread program on heir: PI mutexes, condition
    /// variables that learn their helpers, barriers with gang priority
    /// (LD_PRELOAD of libheir_preload.so).
    Exec(exec::Args),
    /// The priority inversions a trace of `heir sim --trace` or `heir run
    /// --trace` shows: who waited, for whom, and which lower-priority
    /// threads ran meanwhile.
    Inversions(inversions::Args),
    /// Shell completions for bash, zsh, fish, elvish or PowerShell, on
    /// stdout.
    Completions(generate::CompletionsArgs),
    /// Man pages (heir.1 and heir-SUBCOMMAND.1) written into a directory.
    Man(generate::ManArgs),
}

fn main() {
    // `heir run … | head`: end quietly when the reader goes away.
    heir::sys::default_sigpipe();
    let cli = Cli::parse();
    // An earlier heir killed while tracing (SIGKILL) left its ftrace
    // instances recording, with their buffers: any heir start removes the
    // instances of heir processes that no longer exist (where tracefs is
    // mounted and writable; nothing is mounted for it).
    heir_runner::tracefs::remove_stale_instances();
    let result = match cli.cmd {
        Cmd::Sim(a) => sim::main(a),
        Cmd::Run(a) => run::main(a),
        Cmd::Analyze(a) => analyze::main(a),
        Cmd::Sweep(a) => sweep::main(a),
        Cmd::Demo(a) => demo::main(a),
        Cmd::Report(a) => report::main(a),
        Cmd::Exec(a) => exec::main(a),
        Cmd::Inversions(a) => inversions::main(a),
        Cmd::Completions(a) => generate::completions(a, Cli::command()),
        Cmd::Man(a) => generate::man(a, Cli::command()),
    };
    std::process::exit(exit::report(result));
}
