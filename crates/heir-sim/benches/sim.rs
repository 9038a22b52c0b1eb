//! Simulator throughput on a generated large scenario
//! ([`heir_sim::bench::large_scenario`]: 200 tasks in 50 cells, 50 PI
//! mutexes, 50 queues, 50 RPC endpoints, 4 CPUs, partitioned).
//!
//! `cargo bench -p heir-sim --bench sim` prints, before criterion's own
//! measurements, one line per simulated duration (10 s and 100 s) with the
//! scheduling events/s, simulated jobs/s and the process's peak RSS
//! (`VmHWM` from /proc/self/status) after that run: the peak must not grow
//! with the simulated duration. Criterion then measures a 1 s simulation,
//! with throughput in events and in jobs.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use heir_sim::{bench::large_scenario, simulate, NullObserver, SimConfig, Simulator};

const TASKS: usize = 200;
const CPUS: u32 = 4;
const SEED: u64 = 1;

/// CPU time this thread has spent running (ns), from
/// `/proc/thread-self/schedstat`: unlike wall time, it does not count the
/// time other processes of a busy machine hold the core.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Peak resident set size of this process, kB.
fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn config(secs: u64) -> SimConfig {
    SimConfig {
        duration_us: Some(secs * 1_000_000),
        ..SimConfig::default()
    }
}

/// One run per duration, reporting throughput and peak memory.
fn flat_memory_report() {
    let sc = large_scenario(SEED, TASKS, CPUS);
    println!(
        "large scenario: {} tasks, {} resources, {} CPUs (partitioned), seed {SEED}",
        sc.tasks.len(),
        sc.resources.len(),
        CPUS
    );
    for secs in [10u64, 100] {
        let cfg = config(secs);
        let mut obs = NullObserver;
        let t0 = Instant::now();
        let c0 = cpu_ns();
        let (report, footprint) = match Simulator::new(&sc, &cfg, &mut obs) {
            Ok(mut sim) => match sim.run() {
                Ok(r) => (r, sim.footprint()),
                Err(e) => {
                    eprintln!("simulation failed: {e}");
                    return;
                }
            },
            Err(e) => {
                eprintln!("simulation failed: {e}");
                return;
            }
        };
        let wall = t0.elapsed().as_secs_f64();
        let cpu = match (c0, cpu_ns()) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => wall,
        };
        let jobs: u64 = report.tasks.iter().map(|t| t.jobs).sum();
        println!(
            "simulated {secs:>3} s: {:>9} events, {:>8} jobs; wall {wall:.3} s, cpu {cpu:.3} s; \
             {:.2} M events/s and {:.2} M jobs/s per CPU-second ({:.2} M events/s wall); \
             VmHWM {} kB; {footprint:?}",
            report.events,
            jobs,
            report.events as f64 / cpu / 1e6,
            jobs as f64 / cpu / 1e6,
            report.events as f64 / wall / 1e6,
            vm_hwm_kb().map_or_else(|| "?".to_string(), |k| k.to_string()),
        );
    }
}

fn bench_simulate(c: &mut Criterion) {
    flat_memory_report();
    let sc = large_scenario(SEED, TASKS, CPUS);
    let cfg = config(1);
    let Ok(report) = simulate(&sc, &cfg, &mut NullObserver) else {
        eprintln!("simulation failed");
        return;
    };
    let jobs: u64 = report.tasks.iter().map(|t| t.jobs).sum();
    let mut g = c.benchmark_group("simulate_200_tasks_4_cpus_1s");
    g.sample_size(20);
    g.throughput(Throughput::Elements(report.events));
    g.bench_function("events", |b| {
        b.iter(|| simulate(black_box(&sc), &cfg, &mut NullObserver))
    });
    g.throughput(Throughput::Elements(jobs));
    g.bench_function("jobs", |b| {
        b.iter(|| simulate(black_box(&sc), &cfg, &mut NullObserver))
    });
    g.finish();
}

criterion_group!(benches, bench_simulate);
criterion_main!(benches);
