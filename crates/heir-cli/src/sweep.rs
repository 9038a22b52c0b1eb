//! `heir sweep CONFIG`: schedulability ratio against utilisation for random
//! task sets, per protocol (none, inherit, ceiling, pi-cv), on all cores.
//!
//! The configuration format is documented in `docs/ANALYSIS.md`; an example
//! is `examples/sweeps/small.json`. The results are the same bit for bit for
//! a given seed whatever the number of threads (`--threads`). A progress bar
//! is drawn on stderr when it is a terminal and the sweep is long.
//!
//! Writes the CSV and the SVG plot (under temporary names, renamed once both
//! are complete) and prints the table. Exit codes: 0 ok; 2 bad input — an
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
}

/// Runs `heir sweep`.
pub fn main(args: Args) -> CliResult {
    let (name, text) = read_input(&args.config)?;
    let cfg = SweepConfig::from_json_str(&text).map_err(|e| bad_input_in(&name, e.line > 0, &e))?;
    let csv_path = args.csv.clone().unwrap_or_else(|| PathBuf::from(&cfg.csv));
    let svg_path = args.svg.clone().unwrap_or_else(|| PathBuf::from(&cfg.svg));
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
