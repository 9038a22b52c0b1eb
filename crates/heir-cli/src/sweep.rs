//! `heir sweep CONFIG`: schedulability ratio against utilisation for random
//! task sets, per protocol (none, inherit, ceiling, pi-cv), on all cores.
//!
//! The configuration format is documented in `docs/ANALYSIS.md`; an example
//! is `examples/sweeps/small.json`. The results are the same bit for bit for
//! a given seed whatever the number of threads (`--threads`). A progress bar
//! is drawn on stderr when it is a terminal and the sweep is long.
//!
//! Writes the CSV and the SVG plot (under temporary names, renamed once both
//! are complete) and prints the table.
//!
//! `--scheduler ADDRESS` runs the sweep on a Dask cluster instead (`local`:
//! a `LocalCluster` of `--dask-workers` processes on this machine): this
//! binary does not link Python; it runs `python3 -m heir.dask_sweep` (the
//! interpreter: `$HEIR_PYTHON`, else `python3`, with the `heir` Python
//! package installed — docs/PYTHON.md) with the same arguments, and exits
//! with its exit code. The CSV is the same byte for byte. Exit codes: 0 ok; 2 bad input — an
//! unreadable or invalid configuration (line:column or JSON path), an output
//! path that cannot be created — with no file written.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context};
use heir_analysis::sweep::{run, SweepConfig};
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::{bad_input_in, read_input, Align, PendingFile, Table};
use crate::{CliError, CliResult};

/// Sweeps with at least this many task-set analyses get a progress bar.
const PROGRESS_THRESHOLD: u64 = 200_000;

/// `heir sweep` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sweep configuration (JSON, see docs/ANALYSIS.md).
    pub config: PathBuf,
    /// Write the CSV here instead of the configuration's output.csv.
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Write the SVG plot here instead of the configuration's output.svg.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<PathBuf>,
    /// Worker threads (default: one per CPU). Results do not depend on it.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Run on a Dask cluster: the scheduler's address (tcp://HOST:8786),
    /// or `local` for a LocalCluster on this machine. Needs the `heir`
    /// Python package ($HEIR_PYTHON, else python3; docs/PYTHON.md).
    #[arg(long, value_name = "ADDRESS", conflicts_with = "threads")]
    pub scheduler: Option<String>,
    /// With --scheduler local: the LocalCluster's worker processes.
    #[arg(long, value_name = "N", requires = "scheduler", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub dask_workers: Option<u32>,
}

/// `heir sweep --scheduler`: `python3 -m heir.dask_sweep` with the same
/// arguments; its exit code is ours.
fn on_dask(args: &Args, scheduler: &str) -> CliResult {
    let python = std::env::var_os("HEIR_PYTHON").unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "heir.dask_sweep"])
        .arg(&args.config)
        .args(["--scheduler", scheduler]);
    if let Some(p) = &args.csv {
        cmd.arg("--csv").arg(p);
    }
    if let Some(p) = &args.svg {
        cmd.arg("--svg").arg(p);
    }
    if let Some(n) = args.dask_workers {
        cmd.args(["--workers", &n.to_string()]);
    }
    if args.quiet {
        cmd.arg("--quiet");
    }
    let status = cmd
        .status()
        .with_context(|| {
            format!(
                "--scheduler: cannot run {} (set HEIR_PYTHON to a Python with the heir package: docs/PYTHON.md)",
                std::path::Path::new(&python).display()
            )
        })
        .map_err(CliError::failure)?;
    match status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(CliError::bad_input(anyhow!(
            "{}: refused by heir.dask_sweep (above)",
            args.config.display()
        ))),
        _ => Err(CliError::failure(anyhow!(
            "the Dask sweep failed (above); is the heir Python package installed for {}? (docs/PYTHON.md)",
            std::path::Path::new(&python).display()
        ))),
    }
}

/// Runs `heir sweep`.
pub fn main(args: Args) -> CliResult {
    if let Some(s) = &args.scheduler {
        return on_dask(&args, s);
    }
    let (name, text) = read_input(&args.config)?;
    let cfg = SweepConfig::from_json_str(&text).map_err(|e| bad_input_in(&name, e.line > 0, &e))?;
    let path = |flag: &Option<PathBuf>, written: &Option<String>, what: &str| {
        flag.clone()
            .or_else(|| written.as_ref().map(PathBuf::from))
            .ok_or_else(|| {
                CliError::bad_input(anyhow!(
                    "{name}: at output: the configuration has no output.{what}: expected one, or --{what} PATH"
                ))
            })
    };
    let csv_path = path(&args.csv, &cfg.csv, "csv")?;
    let svg_path = path(&args.svg, &cfg.svg, "svg")?;
    if args.threads == Some(0) {
        return Err(CliError::bad_input(anyhow!(
            "--threads: expected at least 1"
        )));
    }
    // Create both temporary files first: a bad path fails before any work.
    let (csv_pending, mut csv_file) =
        PendingFile::create(&csv_path).map_err(CliError::bad_input)?;
    let (svg_pending, mut svg_file) =
        PendingFile::create(&svg_path).map_err(CliError::bad_input)?;

    let total = cfg.total_sets();
    let analyses = total * cfg.protocols.len() as u64;
    let bar = if !args.quiet && std::io::stderr().is_terminal() && analyses >= PROGRESS_THRESHOLD {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} task sets ({per_sec}, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let pool = {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(n) = args.threads {
            b = b.num_threads(n);
        }
        b.build()
            .context("cannot start worker threads")
            .map_err(CliError::failure)?
    };
    let threads = pool.current_num_threads();
    let start = Instant::now();
    let result = pool.install(|| {
        run(&cfg, &|n| {
            if let Some(b) = &bar {
                b.inc(n);
            }
        })
    });
    let elapsed = start.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    // Both bodies first, then both renames: no half-done output.
    for (file, body, path) in [
        (&mut csv_file, result.to_csv(), &csv_path),
        (&mut svg_file, result.to_svg(), &svg_path),
    ] {
        file.write_all(body.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(CliError::failure)?;
    }
    csv_pending.commit(csv_file).map_err(CliError::failure)?;
    svg_pending.commit(svg_file).map_err(CliError::failure)?;

    let mut header = vec!["utilisation".to_string()];
    header.extend(result.protocols.iter().map(|p| p.name().to_string()));
    let mut t = Table::new(header).align(0, Align::Left);
    for pt in &result.points {
        let mut row = vec![format!("{:.3}", pt.utilisation)];
        row.extend(
            pt.schedulable
                .iter()
                .map(|&c| format!("{:.3}", c as f64 / pt.sets.max(1) as f64)),
        );
        t.row(row);
    }
    print!(
        "{name}: {} tasks, {} sets per point, seed {}; schedulable ratio\n\n{}\n{} task sets × {} protocols in {:.2} s on {} threads ({:.0} sets/s)\nwrote {} and {}\n",
        cfg.params.tasks,
        cfg.sets_per_point,
        cfg.seed,
        t.render(),
        total,
        cfg.protocols.len(),
        elapsed,
        threads,
        total as f64 / elapsed.max(1e-9),
        csv_path.display(),
        svg_path.display()
    );
    Ok(())
}
