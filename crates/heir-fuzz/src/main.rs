//! `heir-fuzz [SECONDS] [SEED] [--keep-current]`: the fuzzing loop of the
//! `fuzz` test, for longer (default 60 s, seed 0). On a failure it writes
//! the input to `heir-fuzz-failure.json` and exits 1; it writes the slowest
//! input to `heir-fuzz-slowest.json`. With `--keep-current`, each input is
//! written to `heir-fuzz-current.json` before it is checked, so an input
//! that aborts the process is left there.
//!
//! `heir-fuzz --check FILE`: checks one file (without `--cpus`, then with
//! 1 to 8 CPUs) and prints the outcome and time of each.

use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--check") {
        let file = args.nth(1).unwrap_or_default();
        let bytes = std::fs::read(&file).unwrap_or_else(|e| {
            eprintln!("heir-fuzz: {file}: {e}");
            std::process::exit(2)
        });
        let mut failed = false;
        for cpus in std::iter::once(None).chain((1..=8).map(Some)) {
            let t = std::time::Instant::now();
            let r = heir_fuzz::check(&bytes, cpus);
            failed |= r.is_err();
            println!("cpus {cpus:?}: {r:?} in {:?}", t.elapsed());
        }
        std::process::exit(i32::from(failed));
    }
    let rest: Vec<String> = args.collect();
    let keep = rest.iter().any(|a| a == "--keep-current");
    let mut numbers = rest.iter().filter_map(|a| a.parse::<u64>().ok());
    let seconds = numbers.next().unwrap_or(60);
    let seed = numbers.next().unwrap_or(0);
    let (seeds, with_reference) = match heir_fuzz::seeds::seeds() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("heir-fuzz: cannot read the seeds: {e}");
            std::process::exit(2);
        }
    };
    eprintln!(
        "heir-fuzz: {} seed files{}, seed {seed}, {seconds} s",
        seeds.len(),
        if with_reference {
            ""
        } else {
            " (no rt-app example files: install the rt-app package)"
        }
    );
    let keep = keep.then(|| "heir-fuzz-current.json".into());
    match heir_fuzz::run(
        &seeds,
        seed,
        Duration::from_secs(seconds),
        Duration::from_secs(60),
        keep,
    ) {
        Ok(s) => {
            let _ = std::fs::write("heir-fuzz-slowest.json", &s.slowest_input);
            println!(
            "heir-fuzz: {} inputs: {} refused by the reader, {} analysed, {} simulated to the end; slowest {:?}",
            s.inputs, s.refused, s.analysed, s.simulated, s.slowest
        )
        }
        Err((input, failure)) => {
            let _ = std::fs::write("heir-fuzz-failure.json", &input);
            eprintln!("heir-fuzz: FAILURE: {failure} (input written to heir-fuzz-failure.json)");
            std::process::exit(1);
        }
    }
}
