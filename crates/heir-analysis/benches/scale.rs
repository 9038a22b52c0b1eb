//! Cost of analysing one task set (`Analyzer::analyze`: every task's bound),
//! from 10 to 100,000 tasks, without and with shared mutexes, on 1 and 4
//! CPUs (partitioned).
//!
//! `cargo bench -p heir-analysis --bench scale` (all sizes), or
//! `cargo bench -p heir-analysis --bench scale -- 10000` (sizes listed);
//! `-- per-task 10000`: every task analysed on its own
//! (`Analyzer::sweep_from(usize::MAX)`, the analysis before the level sweep,
//! kept as its reference) instead of the level sweep.
//!
//! Sets as [`generate`] makes them, per CPU: UUniFast at utilisation 0.7,
//! periods log-uniform in 10 ms – 1 s (whole ms), rate-monotonic distinct
//! priorities, no servers; with mutexes, `max(1, n / 20)` priority-inheritance
//! mutexes, each CPU its own `n / 20 / cpus` of them, each task locking each
//! of its CPU's mutexes with probability `min(0.3, 4 / mutexes)` for 1–15 µs
//! (capped by its work). "tied" is the same set with the priorities an rt-app
//! file can give (1..99: about n / 98 tasks share each level). Prints the
//! median wall time of one `analyze` over several runs (one run from
//! 100,000 tasks), and how many tasks are schedulable (the same before and
//! after any speed-up).
//!
//! This is a plain `main` (harness = false): criterion's sampling would take
//! hours at 100,000 tasks.

use std::hint::black_box;
use std::time::Instant;

use heir_analysis::gen::{generate, CsProfile, GenParams};
use heir_analysis::model::Class;
use heir_analysis::rng::Rng;
use heir_analysis::{Analyzer, TaskSet};

/// `n` tasks on `cpus` CPUs with `mutexes` mutexes in all.
fn set(n: usize, mutexes: usize, cpus: usize, tied: bool) -> TaskSet {
    let mut out = TaskSet {
        tasks: Vec::new(),
        servers: Vec::new(),
        mutexes: Vec::new(),
        pi_cv: true,
    };
    for c in 0..cpus {
        let m = mutexes / cpus;
        let params = GenParams {
            tasks: n / cpus,
            resources: m,
            access_probability: if m == 0 {
                0.0
            } else {
                (4.0 / m as f64).min(0.3)
            },
            cs_us: CsProfile::Short.range_us(),
            servers: 0,
            call_probability: 0.0,
            ..GenParams::default()
        };
        let part = generate(&params, 0.7, &mut Rng::new(1000 + c as u64));
        let (t0, m0) = (out.tasks.len(), out.mutexes.len());
        for (k, mut t) in part.tasks.into_iter().enumerate() {
            t.name = format!("T{}", t0 + k);
            t.cpu = c as u32;
            if tied {
                t.class = Class::Fixed {
                    priority: 99 - (k * 98 / (n / cpus).max(1)) as i32,
                };
            }
            for s in &mut t.sections {
                s.mutex += m0;
            }
            out.tasks.push(t);
        }
        for mut x in part.mutexes {
            x.name = format!("M{}", out.mutexes.len());
            out.mutexes.push(x);
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let per_task = args.iter().any(|a| a == "per-task");
    let sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() {
        vec![10, 100, 1_000, 10_000, 100_000]
    } else {
        sizes
    };
    println!("| tasks | mutexes | CPUs | priorities | median ms per set | runs | schedulable |");
    println!("|---:|---:|---:|---|---:|---:|---:|");
    for &n in &sizes {
        for cpus in [1usize, 4] {
            for mutexes in [0, (n / 20).max(1)] {
                for tied in [false, true] {
                    if (tied && (cpus != 1 || n < 1000)) || (mutexes > 0 && mutexes < cpus) {
                        continue;
                    }
                    let s = set(n, mutexes, cpus, tied);
                    s.validate().expect("a valid set");
                    let runs = match n {
                        0..=1_000 => 21,
                        1_001..=10_000 => 3,
                        _ => 1,
                    };
                    // Sets of a few tasks take microseconds: time batches.
                    let batch = (20_000 / n).max(1);
                    let mut an = Analyzer::new();
                    if per_task {
                        an.sweep_from(usize::MAX);
                    }
                    let mut ms = Vec::new();
                    let mut ok = 0;
                    for _ in 0..runs {
                        let t = Instant::now();
                        for _ in 0..batch {
                            let r = an.analyze(black_box(&s));
                            ok = r.iter().filter(|r| r.schedulable).count();
                        }
                        ms.push(t.elapsed().as_secs_f64() * 1e3 / batch as f64);
                    }
                    ms.sort_by(f64::total_cmp);
                    println!(
                        "| {n} | {} | {cpus} | {} | {:.4} | {runs} | {ok} |",
                        s.mutexes.len(),
                        if tied { "1..99" } else { "distinct" },
                        ms[runs / 2]
                    );
                }
            }
        }
    }
}
