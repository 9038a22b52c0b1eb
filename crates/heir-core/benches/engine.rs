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
//! - `donation/{link,unlink,abort,reply_root}/N` (the NOVA paper's Fig. 9): an IPC
//!   call chain of `N` servers, one [`Spec::ENDPOINT`] request per call,
//!   `L ─▶ r0 ─▶ S0 ─▶ r1 ─▶ S1 … ─▶ S(N-1)` (each server blocked in its
//!   own call on the next; the root runnable). One call timed per element:
//!   `link` is the leaf L (the most urgent) blocking on r0, boosting all N
//!   servers; `unlink` is L's request answered (`wake_top(r0)`: all N fall
//!   back to their bases); `abort` is L's call timing out (`cancel_wait`)
//!   while a second, less urgent caller D also waits on r0: all N fall back
//!   to D; `reply_root` is the root answering its own caller (the order a
//!   chain unwinds in normally: `wake_top` + `remove_target` of the last
//!   request, 2 calls); `link_nested` is a server H, itself serving a caller
//!   more urgent than every server, calling on r0 (a nested call: H has a
//!   waiter upstream, so the block's cycle and depth check walks the chain
//!   down, which `link` — a caller that serves nobody — does not need).
//!   Each timed batch runs the operation on several copies of the chain in
//!   one engine (fewer than `MAX_CHAIN_DEPTH` blocked tasks in all) and
//!   restores them untimed.
//! - `unblock/{handoff,donors}/D`: a server S with `D` donors (D callers,
//!   each blocked on its own request to S) blocked on a PI mutex owned by X;
//!   `handoff` is X's unlock handing the mutex to S (S runnable again: the
//!   engine's part of a server's unblock, 1 call), `donors` the
//!   [`Engine::donors`] query a face makes to choose the context S runs on.

use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use heir_core::{CondId, Engine, MutexId, ObjId, Protocol, Spec, TaskId, Urgency};
use std::hint::black_box;
use std::time::{Duration, Instant};

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

/// The path lengths of the NOVA paper's Fig. 9.
const LENGTHS: [usize; 6] = [1, 4, 16, 64, 256, 512];

/// One IPC call chain `L ─▶ r[0] ─▶ S[0] ─▶ r[1] ─▶ … ─▶ S[n-1]`, L not
/// yet blocked; with `second`, a caller D (less urgent than L, more than
/// every server) already waits on r[0].
struct CallChain {
    leaf: TaskId,
    requests: Vec<ObjId>,
    servers: Vec<TaskId>,
}

fn call_chain(e: &mut Engine, n: usize, second: bool) -> CallChain {
    let leaf = e.add_task(Urgency::fixed(90));
    let servers: Vec<TaskId> = (0..n).map(|_| e.add_task(Urgency::fixed(10))).collect();
    let requests: Vec<ObjId> = (0..n).map(|_| e.add_object(Spec::ENDPOINT)).collect();
    for i in 0..n {
        e.add_target(requests[i], servers[i])
            .expect("server takes the call");
    }
    // Built from the root up, so that no block walks a long chain.
    for i in (0..n.saturating_sub(1)).rev() {
        e.block(servers[i], requests[i + 1]).expect("nested call");
    }
    if second {
        let d = e.add_task(Urgency::fixed(50));
        e.block(d, requests[0]).expect("second caller");
    }
    CallChain {
        leaf,
        requests,
        servers,
    }
}

/// How many chains of length `n` one timed batch works on: enough that the
/// two clock reads per batch are noise; 512 servers in all (the same
/// working set at every length from 8 on, and fewer blocked tasks than
/// `MAX_CHAIN_DEPTH`).
fn copies(n: usize) -> usize {
    (512 / n).clamp(1, 64)
}

/// Builds a chain of length `n` for each copy of a batch (one engine).
fn chains(n: usize, second: bool, linked: bool) -> (Engine, Vec<CallChain>) {
    let mut e = Engine::new();
    let chains: Vec<CallChain> = (0..copies(n))
        .map(|_| call_chain(&mut e, n, second))
        .collect();
    link_all(e, chains, linked)
}

/// [`chains`] whose linking task is a server H serving a caller C(90):
/// `C ─▶ rh ─▶ H`, H about to call on r0.
fn nested_chains(n: usize) -> (Engine, Vec<CallChain>) {
    let mut e = Engine::new();
    let chains: Vec<CallChain> = (0..copies(n))
        .map(|_| {
            let mut c = call_chain(&mut e, n, false);
            let h = e.add_task(Urgency::fixed(10));
            let rh = e.add_object(Spec::ENDPOINT);
            e.add_target(rh, h).expect("H takes the call");
            e.block(c.leaf, rh).expect("C calls H");
            c.leaf = h;
            c
        })
        .collect();
    link_all(e, chains, false)
}

fn link_all(mut e: Engine, chains: Vec<CallChain>, linked: bool) -> (Engine, Vec<CallChain>) {
    if linked {
        for c in &chains {
            e.block(c.leaf, c.requests[0]).expect("link");
        }
    }
    (e, chains)
}

/// Times `op` on every unit of a batch (per element: criterion's iteration
/// is one operation); `undo` restores each, untimed.
fn batched<T>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    n: usize,
    (mut e, units): (Engine, Vec<T>),
    op: impl Fn(&mut Engine, &T),
    undo: impl Fn(&mut Engine, &T),
) {
    g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0u64;
            while done < iters {
                let k = units.len().min((iters - done) as usize);
                let start = Instant::now();
                for u in &units[..k] {
                    op(&mut e, u);
                }
                total += start.elapsed();
                for u in &units[..k] {
                    undo(&mut e, u);
                }
                done += k as u64;
            }
            total
        })
    });
}

fn donation(c: &mut Criterion) {
    let mut g = c.benchmark_group("donation");
    g.throughput(Throughput::Elements(1));
    let link = |e: &mut Engine, c: &CallChain| {
        let ch = e.block(c.leaf, c.requests[0]).expect("link");
        debug_assert_eq!(ch.len(), c.servers.len());
        black_box(ch);
    };
    let cancel = |e: &mut Engine, c: &CallChain| {
        black_box(e.cancel_wait(c.leaf).expect("cancel"));
    };
    let answer = |e: &mut Engine, c: &CallChain| {
        let out = e.wake_top(c.requests[0]).expect("reply");
        debug_assert_eq!(out.changes.len(), c.servers.len());
        black_box(out);
    };
    for n in LENGTHS {
        batched(&mut g, "link", n, chains(n, false, false), link, cancel);
        batched(&mut g, "link_nested", n, nested_chains(n), link, cancel);
        batched(&mut g, "unlink", n, chains(n, false, true), answer, link);
        batched(
            &mut g,
            "abort",
            n,
            chains(n, true, true),
            |e, c| {
                let ch = e.cancel_wait(c.leaf).expect("abort");
                debug_assert_eq!(ch.len(), c.servers.len());
                black_box(ch);
            },
            link,
        );
        // The root answers its caller (2 calls per element here).
        if n >= 2 {
            batched(
                &mut g,
                "reply_root",
                n,
                chains(n, false, true),
                |e, c| {
                    let last = c.requests[n - 1];
                    black_box(e.wake_top(last).expect("reply"));
                    black_box(e.remove_target(last, c.servers[n - 1]).expect("drop"));
                },
                |e, c| {
                    let last = c.requests[n - 1];
                    e.add_target(last, c.servers[n - 1]).expect("take");
                    e.block(c.servers[n - 2], last).expect("call again");
                },
            );
        }
    }
    g.finish();
}

/// A server S with `d` donors (callers each blocked on a request of their
/// own to S), blocked on a PI mutex owned by X. Returns (S, X, the mutex).
fn server_with_donors(e: &mut Engine, d: usize) -> (TaskId, TaskId, MutexId) {
    let s = e.add_task(Urgency::fixed(10));
    for i in 0..d {
        let caller = e.add_task(Urgency::fixed(20 + (i % 70) as u8));
        let r = e.add_object(Spec::ENDPOINT);
        e.add_target(r, s).expect("take");
        e.block(caller, r).expect("call");
    }
    let x = e.add_task(Urgency::fixed(5));
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(x, m).expect("lock");
    e.lock(s, m).expect("block");
    (s, x, m)
}

fn unblock(c: &mut Criterion) {
    let mut g = c.benchmark_group("unblock");
    g.throughput(Throughput::Elements(1));
    for d in LENGTHS {
        let mut e = Engine::new();
        let servers: Vec<_> = (0..copies(d))
            .map(|_| server_with_donors(&mut e, d))
            .collect();
        batched(
            &mut g,
            "handoff",
            d,
            (e, servers),
            |e, &(_, x, m)| {
                black_box(e.unlock(x, m).expect("hand-off"));
            },
            |e, &(s, x, m)| {
                // Back to S blocked on m, owned by X.
                e.unlock(s, m).expect("unlock");
                e.lock(x, m).expect("relock");
                e.lock(s, m).expect("block");
            },
        );
        let mut e = Engine::new();
        let (s, _, _) = server_with_donors(&mut e, d);
        let mut out = Vec::new();
        g.bench_with_input(BenchmarkId::new("donors", d), &d, |b, _| {
            b.iter(|| {
                e.donors(s, &mut out).expect("donors");
                black_box(out.len());
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    uncontended,
    pi_chain,
    picv,
    helpers,
    donation,
    unblock
);
criterion_main!(benches);
