//! The fuzzing harness that stays: mutated scenario files through the
//! reader, the analysis and the simulator for a bounded time.
//!
//! `HEIR_FUZZ_SECONDS` sets the time (default 60 s under `CI=true`, 5 s
//! otherwise); `HEIR_FUZZ_SEED` the generator's seed (default 0, so a CI
//! run is reproducible). Seeds: `examples/*.json` and rt-app's own example
//! files from the distribution's `rt-app` package
//! (`/usr/share/doc/rt-app/examples`: required under `CI=true`, skipped
//! with a note otherwise). A failing input is written to
//! `target/heir-fuzz-failure.json`; make it a test in `regressions.rs`. An
//! input that aborts the process (an allocation failure) cannot be caught:
//! repeat the run with `cargo run --release -p heir-fuzz -- SECONDS SEED
//! --keep-current`, which leaves it in `heir-fuzz-current.json`.

use std::time::{Duration, Instant};

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: expected a whole number")),
    )
}

#[test]
fn mutated_files_never_crash_hang_or_differ() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let seconds = env_u64("HEIR_FUZZ_SECONDS").unwrap_or(if ci { 60 } else { 5 });
    let seed = env_u64("HEIR_FUZZ_SEED").unwrap_or(0);
    let (seeds, with_reference) = heir_fuzz::seeds::seeds().expect("read the seed files");
    if !with_reference {
        let dir = heir_fuzz::seeds::RTAPP_EXAMPLES;
        assert!(
            !ci,
            "CI=true: rt-app's example files not found at {dir}: install the `rt-app` package (apt-get install rt-app)"
        );
        eprintln!("note: rt-app's example files not found at {dir} (install the `rt-app` package): fuzzing from examples/ only");
    }
    assert!(seeds.len() >= 7, "the examples: {}", seeds.len());

    let start = Instant::now();
    // An input that runs this long hangs: the slowest legitimate ones (the
    // simulator's zero-time safety net, 4 million steps twice) take seconds.
    let per_input = Duration::from_secs(120);
    let result = heir_fuzz::run(&seeds, seed, Duration::from_secs(seconds), per_input, None);
    let elapsed = start.elapsed();
    match result {
        Ok(s) => {
            eprintln!(
                "heir-fuzz: seed {seed}, {} s: {} inputs ({} seed files): {} refused by the reader, \
                 {} analysed, {} simulated to the end; slowest {:?}; took {elapsed:?}",
                seconds,
                s.inputs,
                seeds.len(),
                s.refused,
                s.analysed,
                s.simulated,
                s.slowest
            );
            assert!(s.inputs >= seeds.len() as u64);
            // Most seed files read (not rt-app's tutorial/example6.json,
            // its `mem` event).
            assert!(s.inputs > s.refused);
        }
        Err((input, failure)) => {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/heir-fuzz-failure.json");
            let _ = std::fs::write(&path, &input);
            panic!(
                "seed {seed}: {failure}\ninput ({} bytes) written to {}",
                input.len(),
                path.display()
            );
        }
    }
}
