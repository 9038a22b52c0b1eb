//! Task sets analysed per second: 10-task and 50-task sets, one core and all
//! cores (rayon).
//!
//! `cargo bench -p heir-analysis --bench analysis`
//!
//! Sets are generated as in `heir sweep` (UUniFast, log-uniform periods
//! 10 ms–1 s, long critical sections on 4 (10 tasks) or 8 (50 tasks) mutexes
//! with access probability 0.3, 2 RPC servers called with probability 0.3),
//! at utilisation 0.7, PI-CV. `analyze` computes every task's bound (the
//! `heir analyze` path); `schedulable` stops at the first miss (the `heir
//! sweep` path). Throughput is in task sets per second.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use heir_analysis::gen::{generate, CsProfile, GenParams};
use heir_analysis::rng::Rng;
use heir_analysis::{Analyzer, TaskSet};
use rayon::prelude::*;

const SETS: usize = 2000;

fn sets(tasks: usize) -> Vec<TaskSet> {
    let params = GenParams {
        tasks,
        resources: if tasks >= 50 { 8 } else { 4 },
        cs_us: CsProfile::Long.range_us(),
        access_probability: 0.3,
        servers: 2,
        call_probability: 0.3,
        call_us: (100, 2000),
        ..GenParams::default()
    };
    (0..SETS as u64)
        .map(|s| generate(&params, 0.7, &mut Rng::new(s)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("task sets");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    for tasks in [10usize, 50] {
        let input = sets(tasks);
        g.throughput(Throughput::Elements(SETS as u64));
        g.bench_with_input(
            BenchmarkId::new("analyze/one core", tasks),
            &input,
            |b, input| {
                let mut an = Analyzer::new();
                b.iter(|| {
                    let mut n = 0usize;
                    for s in input {
                        n += an.analyze(black_box(s)).len();
                    }
                    n
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("analyze/all cores", tasks),
            &input,
            |b, input| {
                b.iter(|| {
                    input
                        .par_iter()
                        .map_init(Analyzer::new, |an, s| an.analyze(black_box(s)).len())
                        .sum::<usize>()
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("schedulable/one core", tasks),
            &input,
            |b, input| {
                let mut an = Analyzer::new();
                b.iter(|| {
                    input
                        .iter()
                        .filter(|s| an.schedulable(black_box(s)))
                        .count()
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("schedulable/all cores", tasks),
            &input,
            |b, input| {
                b.iter(|| {
                    input
                        .par_iter()
                        .map_init(Analyzer::new, |an, s| an.schedulable(black_box(s)))
                        .filter(|&x| x)
                        .count()
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
