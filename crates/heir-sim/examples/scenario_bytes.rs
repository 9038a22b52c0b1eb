//! The heap a scenario file's model takes once read: what `heir sim` and
//! `heir analyze` hold for the scenario itself, so that
//! `scripts/bench-cli-scale.sh` can say what they use beyond it.
//!
//! ```sh
//! cargo run --release -p heir-sim --example scenario_bytes -- FILE
//! ```
//!
//! Prints `live_bytes peak_bytes`: the bytes allocated and not freed once
//! the file is read into a `heir_scenario::Scenario` (the model alone),
//! and the most that were live while it was read (the reader's peak).
//! Counted by a global allocator that wraps the system's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` with the caller's arguments;
// the counters do not change what is allocated.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc` and `dealloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: scenario_bytes FILE");
        return ExitCode::from(2);
    };
    // The file's bytes are read first and not counted: the model is.
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let limit = heir_scenario::limits::ThreadLimit::fixed("heir sim", u32::MAX);
    let live0 = LIVE.load(Ordering::Relaxed);
    PEAK.store(live0, Ordering::Relaxed);
    let scenario = match heir_scenario::parse_bytes_with(&bytes, &path, &limit) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let live = LIVE.load(Ordering::Relaxed) - live0;
    let peak = PEAK.load(Ordering::Relaxed) - live0;
    println!("{live} {peak}");
    drop(scenario);
    ExitCode::SUCCESS
}
