//! Engine cost per operation (criterion).
//!
//! Every benchmark runs a short cycle of operations that returns the engine
//! to its starting state, so each iteration does the same work; the
//! throughput is set to the number of engine calls per iteration, so
//! criterion's "elem/s" is engine calls per second (ns per call = 1e9 / it).
//!
//! - `uncontended/lock_unlock`: lock + unlock of a free PI mutex (2 calls).
//! - `pi_chain/block_timeout/L`: a high-priority task blocks on a PI mutex
//!   at the head of a chain of `L` owners (`H ─▶ m1 ─▶ O1 ─▶ m2 ─▶ … ─▶ OL`),
//!   boosting all `L`, then times out (cancel_wait), unboosting them (2 calls).
//! - `pi_chain/handoff`: contended lock, unlock handing over to the waiter,
//!   unlock, relock by the first owner (4 calls; the classic PI pair).
//! - `picv_chain/wait_signal/L`: a task waits on a condvar whose helper heads
//!   a chain of `L` tasks (`X ─▶ cv ─▶ G1 ─▶ m2 ─▶ G2 … ─▶ GL`), then the
//!   condvar is signalled (2 calls).
//! - `picv_fanout/wait_signal/N`: a condvar with `N` helpers, all boosted
//!   and revoked (2 calls).
//! - `helpers/add_del_waiting` and `helpers/add_del_idle`: helper_add +
//!   helper_del with and without a waiter (boost/revoke vs bookkeeping only;
//!   2 calls).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use heir_core::{CondId, Engine, MutexId, Protocol, TaskId, Urgency};
use std::hint::black_box;

/// `H ─▶ m[0] ─▶ o[0] ─▶ m[1] ─▶ o[1] … ─▶ o[len-1]`, H not yet blocked.
fn mutex_chain(len: usize) -> (Engine, TaskId, MutexId) {
    let mut e = Engine::new();
    let h = e.add_task(Urgency::fixed(90));
    let owners: Vec<TaskId> = (0..len)
        .map(|i| e.add_task(Urgency::fixed(10 + i as u8)))
        .collect();
    let ms: Vec<MutexId> = (0..len).map(|_| e.add_mutex(Protocol::Inherit)).collect();
    for i in 0..len {
        e.lock(owners[i], ms[i]).expect("free mutex");
    }
    for i in (0..len.saturating_sub(1)).rev() {
        e.lock(owners[i], ms[i + 1]).expect("chain link");
    }
    (e, h, ms[0])
}

/// `X ─▶ cv ─▶ g[0] ─▶ m[1] ─▶ g[1] … ─▶ g[len-1]`, X not yet waiting.
fn cond_chain(len: usize) -> (Engine, TaskId, CondId) {
    let mut e = Engine::new();
    let x = e.add_task(Urgency::fixed(90));
    let cv = e.add_cond();
    let gs: Vec<TaskId> = (0..len)
        .map(|i| e.add_task(Urgency::fixed(10 + i as u8)))
        .collect();
    let ms: Vec<MutexId> = (0..len).map(|_| e.add_mutex(Protocol::Inherit)).collect();
    for i in 1..len {
        e.lock(gs[i], ms[i]).expect("free mutex");
    }
    for i in (0..len.saturating_sub(1)).rev() {
        e.lock(gs[i], ms[i + 1]).expect("chain link");
    }
    e.helper_add(cv, gs[0]).expect("helper");
    (e, x, cv)
}

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended");
    g.throughput(Throughput::Elements(2));
    let mut e = Engine::new();
    let t = e.add_task(Urgency::fixed(10));
    let m = e.add_mutex(Protocol::Inherit);
    g.bench_function("lock_unlock", |b| {
        b.iter(|| {
            black_box(e.lock(t, m).expect("lock"));
            black_box(e.unlock(t, m).expect("unlock"));
        })
    });
    g.finish();
}

fn pi_chain(c: &mut Criterion) {
    let mut g = c.benchmark_group("pi_chain");
    g.throughput(Throughput::Elements(2));
    for len in 1..=4usize {
        let (mut e, h, m) = mutex_chain(len);
        g.bench_with_input(BenchmarkId::new("block_timeout", len), &len, |b, _| {
            b.iter(|| {
                let out = e.lock(h, m).expect("block");
                debug_assert_eq!(out.changes.len(), len);
                black_box(out);
                black_box(e.cancel_wait(h).expect("timeout"));
            })
        });
    }
    g.throughput(Throughput::Elements(4));
    let mut e = Engine::new();
    let lo = e.add_task(Urgency::fixed(10));
    let hi = e.add_task(Urgency::fixed(90));
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(lo, m).expect("lock");
    g.bench_function("handoff", |b| {
        b.iter(|| {
            black_box(e.lock(hi, m).expect("contended lock"));
            black_box(e.unlock(lo, m).expect("handoff"));
            black_box(e.unlock(hi, m).expect("unlock"));
            black_box(e.lock(lo, m).expect("relock"));
        })
    });
    g.finish();
}

fn picv(c: &mut Criterion) {
    let mut g = c.benchmark_group("picv_chain");
    g.throughput(Throughput::Elements(2));
    for len in 1..=4usize {
        let (mut e, x, cv) = cond_chain(len);
        g.bench_with_input(BenchmarkId::new("wait_signal", len), &len, |b, _| {
            b.iter(|| {
                let ch = e.cond_wait(x, cv).expect("wait");
                debug_assert_eq!(ch.len(), len);
                black_box(ch);
                black_box(e.cond_signal(cv).expect("signal"));
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("picv_fanout");
    g.throughput(Throughput::Elements(2));
    for n in [1usize, 4, 16] {
        let mut e = Engine::new();
        let x = e.add_task(Urgency::fixed(90));
        let cv = e.add_cond();
        for i in 0..n {
            let h = e.add_task(Urgency::fixed(1 + i as u8));
            e.helper_add(cv, h).expect("helper");
        }
        g.bench_with_input(BenchmarkId::new("wait_signal", n), &n, |b, _| {
            b.iter(|| {
                black_box(e.cond_wait(x, cv).expect("wait"));
                black_box(e.cond_signal(cv).expect("signal"));
            })
        });
    }
    g.finish();
}

fn helpers(c: &mut Criterion) {
    let mut g = c.benchmark_group("helpers");
    g.throughput(Throughput::Elements(2));
    for waiting in [true, false] {
        let mut e = Engine::new();
        let x = e.add_task(Urgency::fixed(90));
        let h = e.add_task(Urgency::fixed(10));
        let cv = e.add_cond();
        if waiting {
            e.cond_wait(x, cv).expect("wait");
        }
        let name = if waiting {
            "add_del_waiting"
        } else {
            "add_del_idle"
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                black_box(e.helper_add(cv, h).expect("add"));
                black_box(e.helper_del(cv, h).expect("del"));
            })
        });
    }
    g.finish();
}

criterion_group!(benches, uncontended, pi_chain, picv, helpers);
criterion_main!(benches);
