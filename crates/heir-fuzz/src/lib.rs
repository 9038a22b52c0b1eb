//! heir-fuzz: mutated scenario files through the reader, the simulator and
//! the analysis, checking that nothing panics, hangs or answers twice
//! differently.
//!
//! * [`seeds`] gathers the starting files: `examples/*.json` and rt-app's
//!   own example files, from the distribution's `rt-app` package
//!   (`/usr/share/doc/rt-app/examples/*.json` and `tutorial/*.json`).
//! * [`mutate()`] derives a new input from a seed, deterministically from a
//!   [`SplitMix64`]: numbers made huge, negative or fractional, values and
//!   keys made long, objects nested deep, members duplicated, removed or
//!   added (events, properties, resources), braces removed, the text cut
//!   short, bytes that are not UTF-8.
//! * [`check()`] runs one input through `heir_scenario::parse_bytes`, and when
//!   it reads, through `heir_analysis::analyze_scenario` and twice through
//!   the simulator (a short simulated duration), and reports what is wrong:
//!   a panic, an error message without bounds, an engine invariant broken,
//!   two runs of the same input that differ.
//!
//! The harness that stays is the `fuzz` test of this crate, run by
//! `cargo test` (and so by `./test.sh` and CI) for a bounded time; the
//! `heir-fuzz` binary runs the same loop for longer. A failure found becomes
//! a named test in `tests/regressions.rs`.
#![forbid(unsafe_code)]

pub mod check;
pub mod mutate;
pub mod seeds;

pub use check::{check, Failure, Outcome, SIM_US};
pub use heir_sim::SplitMix64;
pub use mutate::mutate;

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// What a bounded fuzzing run did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Inputs checked.
    pub inputs: u64,
    /// Inputs the reader refused.
    pub refused: u64,
    /// Inputs simulated (without error or with a typed one).
    pub simulated: u64,
    /// Inputs the analysis accepted.
    pub analysed: u64,
    /// How long the slowest input took.
    pub slowest: Duration,
    /// The slowest input.
    pub slowest_input: Vec<u8>,
}

/// The input being checked, and since when (for the watchdog).
type Current = Mutex<Option<(Instant, Vec<u8>)>>;

/// Checks mutated inputs derived from `seeds` with the generator seeded by
/// `seed`, until `budget` has passed (every seed file itself is checked
/// first, unmutated). Returns at the first failure, with the input that
/// caused it — including an input still running after `per_input` (a
/// hang: the loop runs in a thread a watchdog looks at).
///
/// With `keep_current`, each input is written there before it is checked:
/// an input that aborts the process (an allocation failure cannot be
/// caught) is left behind. The inputs are the same for the same `seed`, so
/// a run that aborted can be repeated this way.
pub fn run(
    seeds: &[(String, Vec<u8>)],
    seed: u64,
    budget: Duration,
    per_input: Duration,
    keep_current: Option<std::path::PathBuf>,
) -> Result<Summary, (Vec<u8>, Failure)> {
    let current: Arc<Current> = Arc::new(Mutex::new(None));
    let (tx, rx) = mpsc::channel();
    let pool: Vec<Vec<u8>> = seeds.iter().map(|(_, b)| b.clone()).collect();
    let watched = Arc::clone(&current);
    std::thread::spawn(move || {
        let _ = tx.send(run_loop(&pool, seed, budget, &watched, keep_current));
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(result) => return result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let guard = current.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((since, input)) = guard.as_ref() {
                    if since.elapsed() > per_input {
                        return Err((
                            input.clone(),
                            Failure::Broken {
                                stage: "watchdog",
                                what: format!("one input ran for more than {per_input:?}"),
                            },
                        ));
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err((
                    Vec::new(),
                    Failure::Panic {
                        stage: "harness",
                        message: "the fuzzing thread died".to_string(),
                    },
                ))
            }
        }
    }
}

fn run_loop(
    pool: &[Vec<u8>],
    seed: u64,
    budget: Duration,
    current: &Current,
    keep_current: Option<std::path::PathBuf>,
) -> Result<Summary, (Vec<u8>, Failure)> {
    let start = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let mut summary = Summary::default();
    let mut n = 0u64;
    while n < pool.len() as u64 || start.elapsed() < budget {
        let input = match pool.get(n as usize) {
            Some(seed_file) => seed_file.clone(),
            None if pool.is_empty() => break,
            None => {
                let base = &pool[(rng.next_u64() % pool.len() as u64) as usize];
                mutate(base, &mut rng, pool)
            }
        };
        let cpus = match rng.next_u64() % 4 {
            0 => Some(1 + (rng.next_u64() % 8) as u32),
            _ => None,
        };
        if let Some(path) = &keep_current {
            let _ = std::fs::write(path, &input);
        }
        let t = Instant::now();
        *current.lock().unwrap_or_else(|p| p.into_inner()) = Some((t, input.clone()));
        let outcome = check(&input, cpus).map_err(|f| (input.clone(), f))?;
        *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if t.elapsed() > summary.slowest {
            summary.slowest = t.elapsed();
            summary.slowest_input = input;
        }
        summary.inputs += 1;
        match outcome {
            Outcome::Refused => summary.refused += 1,
            Outcome::Read {
                simulated,
                analysed,
            } => {
                summary.simulated += u64::from(simulated);
                summary.analysed += u64::from(analysed);
            }
        }
        n += 1;
    }
    Ok(summary)
}
