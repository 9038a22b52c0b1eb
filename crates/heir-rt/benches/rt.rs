//! heir-rt benchmarks (custom harness, `cargo bench -p heir-rt`):
//!
//! 1. Seed 000 Fig. 13: a high-priority client ping-pongs with 1..16
//!    low-priority helpers through two PrioQueues; round-trip µs with PI-CV
//!    (every helper declared a producer of the reply queue, so each client
//!    wait boosts all of them) and without, and the per-helper slope.
//! 2. Uncontended costs side by side: PiMutex vs glibc `pthread_mutex_t`
//!    with `PTHREAD_PRIO_INHERIT`; PiCondvar signal without waiters vs
//!    `pthread_cond_signal`; a two-thread wait/signal ping-pong on each.
//!
//! All threads are SCHED_FIFO and pinned to the last CPU; every loop is
//! bounded in count and time. Without SCHED_FIFO permission the real-time
//! parts print why and are skipped. `HEIR_BENCH_QUICK=1` shortens the runs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use heir::caps::Capabilities;
use heir::sys::{self, now_ns};
use heir::{PiCondvar, PiMutex, PrioQueue, Urgency};

fn spawn_fifo<T: Send + 'static>(
    cpu: u32,
    prio: u8,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        let _ = sys::set_affinity(0, &[cpu]);
        let _ = heir::thread::set_sched(&heir::sched::fifo(prio));
        f()
    })
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt())
}

/// One Fig. 13 point: mean and sd of the round trip (µs) with `helpers`
/// consumers.
fn ping_pong(cpu: u32, helpers: usize, pi_cv: bool, iters: usize) -> (f64, f64) {
    let req = Arc::new(PrioQueue::<u32>::new(64));
    let resp = Arc::new(PrioQueue::<u32>::new(64));
    let limit = now_ns() + 60_000_000_000;
    let mut hs = Vec::new();
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..helpers {
        let (rq, rs, tx) = (req.clone(), resp.clone(), tx.clone());
        hs.push(spawn_fifo(cpu, 10, move || {
            let _ = tx.send(heir::thread::current_tid());
            while let Ok(Some(x)) = rq.pop_until(Some(limit)) {
                if x == u32::MAX {
                    break;
                }
                if rs.push_until(x, Urgency::fixed(10), Some(limit)).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let tids: Vec<i32> = rx.iter().take(helpers).collect();
    if pi_cv {
        for &t in &tids {
            resp.add_producer(t).expect("helper");
        }
    }
    let (rq, rs) = (req.clone(), resp.clone());
    let client = spawn_fifo(cpu, 30, move || {
        let mut rtts = Vec::with_capacity(iters);
        for i in 0..iters as u32 + 50 {
            let t = now_ns();
            rq.push_until(i, Urgency::fixed(30), Some(limit))
                .expect("push");
            rs.pop_until(Some(limit)).expect("pop").expect("reply");
            if i >= 50 {
                rtts.push((now_ns() - t) as f64 / 1000.0);
            }
            if now_ns() > limit {
                break;
            }
        }
        for _ in 0..helpers {
            let _ = rq.push_until(u32::MAX, Urgency::fixed(30), Some(limit));
        }
        rtts
    });
    let rtts = client.join().expect("client");
    for h in hs {
        let _ = h.join();
    }
    mean_sd(&rtts)
}

fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let num: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    num / den
}

fn fig13(cpu: u32, iters: usize) {
    println!("## Fig. 13: client (FIFO 30) <-> N helpers (FIFO 10), one CPU, {iters} round trips per point");
    println!(
        "{:>3}  {:>12}  {:>8}  {:>12}  {:>8}  {:>8}",
        "N", "no PI-CV µs", "sd", "PI-CV µs", "sd", "+%"
    );
    let (mut xs, mut off_m, mut on_m) = (Vec::new(), Vec::new(), Vec::new());
    for n in [1usize, 2, 4, 6, 8, 10, 12, 14, 16] {
        let (m0, s0) = ping_pong(cpu, n, false, iters);
        let (m1, s1) = ping_pong(cpu, n, true, iters);
        println!(
            "{n:>3}  {m0:>12.2}  {s0:>8.2}  {m1:>12.2}  {s1:>8.2}  {:>8.1}",
            (m1 / m0 - 1.0) * 100.0
        );
        xs.push(n as f64);
        off_m.push(m0);
        on_m.push(m1);
    }
    let extra: Vec<f64> = on_m.iter().zip(&off_m).map(|(a, b)| a - b).collect();
    println!(
        "slope: no PI-CV {:.3} µs/helper, PI-CV {:.3} µs/helper, PI-CV overhead {:.3} µs/helper (paper, in kernel: ~0.4)",
        slope(&xs, &off_m),
        slope(&xs, &on_m),
        slope(&xs, &extra)
    );
}

fn per_op(n: u64, f: impl FnMut()) -> f64 {
    let mut f = f;
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn uncontended(n: u64) {
    println!("## Uncontended, ns per operation ({n} iterations)");
    let m = PiMutex::new(0u64);
    let heir_lock = per_op(n, || {
        let mut g = m.lock().expect("lock");
        *g += 1;
    });
    // SAFETY: attr and mutex are initialised before use and destroyed after.
    let glibc_lock = unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        libc::pthread_mutexattr_init(&mut attr);
        libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
        let mut pm: libc::pthread_mutex_t = std::mem::zeroed();
        libc::pthread_mutex_init(&mut pm, &attr);
        let mut x = 0u64;
        let r = per_op(n, || {
            libc::pthread_mutex_lock(&mut pm);
            x = std::hint::black_box(x + 1);
            libc::pthread_mutex_unlock(&mut pm);
        });
        libc::pthread_mutex_destroy(&mut pm);
        libc::pthread_mutexattr_destroy(&mut attr);
        r
    };
    // SAFETY: as above.
    let glibc_robust = unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        libc::pthread_mutexattr_init(&mut attr);
        libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
        libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST);
        let mut pm: libc::pthread_mutex_t = std::mem::zeroed();
        libc::pthread_mutex_init(&mut pm, &attr);
        let mut x = 0u64;
        let r = per_op(n, || {
            libc::pthread_mutex_lock(&mut pm);
            x = std::hint::black_box(x + 1);
            libc::pthread_mutex_unlock(&mut pm);
        });
        libc::pthread_mutex_destroy(&mut pm);
        libc::pthread_mutexattr_destroy(&mut attr);
        r
    };
    println!(
        "lock+unlock   PiMutex (robust) {heir_lock:>8.1}   pthread_mutex PRIO_INHERIT {glibc_lock:>8.1}   PRIO_INHERIT+ROBUST {glibc_robust:>8.1}"
    );
    let c = PiCondvar::new();
    let heir_sig = per_op(n / 10, || {
        c.signal().expect("signal");
    });
    // SAFETY: the condvar is initialised before use and destroyed after.
    let glibc_sig = unsafe {
        let mut pc: libc::pthread_cond_t = std::mem::zeroed();
        libc::pthread_cond_init(&mut pc, std::ptr::null());
        let r = per_op(n / 10, || {
            libc::pthread_cond_signal(&mut pc);
        });
        libc::pthread_cond_destroy(&mut pc);
        r
    };
    println!("signal, no waiter   PiCondvar {heir_sig:>8.1}   pthread_cond {glibc_sig:>8.1}");
}

/// Two threads alternate through a flag, a mutex and a condvar: each round
/// is two waits and two signals. Returns µs per round.
fn heir_pingpong(cpu: u32, rounds: u32) -> f64 {
    let m = Arc::new(PiMutex::new(0u32));
    let c = Arc::new(PiCondvar::new());
    let limit = now_ns() + 30_000_000_000;
    let (m2, c2) = (m.clone(), c.clone());
    let other = spawn_fifo(cpu, 20, move || {
        for i in 0..rounds {
            let mut g = m2.lock().expect("lock");
            while *g != 2 * i + 1 {
                c2.wait_until(&mut g, limit).expect("wait");
                if now_ns() > limit {
                    return;
                }
            }
            *g += 1;
            c2.signal().expect("signal");
        }
    });
    let t = spawn_fifo(cpu, 20, move || {
        let start = now_ns();
        for i in 0..rounds {
            let mut g = m.lock().expect("lock");
            *g += 1;
            c.signal().expect("signal");
            while *g != 2 * i + 2 {
                c.wait_until(&mut g, limit).expect("wait");
                if now_ns() > limit {
                    return 0.0;
                }
            }
        }
        (now_ns() - start) as f64 / 1000.0 / rounds as f64
    })
    .join()
    .expect("thread");
    let _ = other.join();
    t
}

struct PCond {
    m: std::cell::UnsafeCell<libc::pthread_mutex_t>,
    c: std::cell::UnsafeCell<libc::pthread_cond_t>,
    v: AtomicU32,
}
// SAFETY: pthread objects are made for sharing between threads.
unsafe impl Sync for PCond {}
// SAFETY: as above.
unsafe impl Send for PCond {}

fn glibc_pingpong(cpu: u32, rounds: u32) -> f64 {
    // SAFETY: zeroed pthread objects are initialised right after.
    let p = Arc::new(unsafe {
        PCond {
            m: std::cell::UnsafeCell::new(std::mem::zeroed()),
            c: std::cell::UnsafeCell::new(std::mem::zeroed()),
            v: AtomicU32::new(0),
        }
    });
    // SAFETY: initialising the objects before any thread uses them.
    unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        libc::pthread_mutexattr_init(&mut attr);
        libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
        libc::pthread_mutex_init(p.m.get(), &attr);
        libc::pthread_cond_init(p.c.get(), std::ptr::null());
    }
    let p2 = p.clone();
    let other = spawn_fifo(cpu, 20, move || {
        for i in 0..rounds {
            // SAFETY: initialised pthread objects shared through an Arc.
            unsafe {
                libc::pthread_mutex_lock(p2.m.get());
                while p2.v.load(Ordering::Relaxed) != 2 * i + 1 {
                    libc::pthread_cond_wait(p2.c.get(), p2.m.get());
                }
                p2.v.fetch_add(1, Ordering::Relaxed);
                libc::pthread_cond_signal(p2.c.get());
                libc::pthread_mutex_unlock(p2.m.get());
            }
        }
    });
    let p3 = p.clone();
    let r = spawn_fifo(cpu, 20, move || {
        let start = now_ns();
        for i in 0..rounds {
            // SAFETY: as above.
            unsafe {
                libc::pthread_mutex_lock(p3.m.get());
                p3.v.fetch_add(1, Ordering::Relaxed);
                libc::pthread_cond_signal(p3.c.get());
                while p3.v.load(Ordering::Relaxed) != 2 * i + 2 {
                    libc::pthread_cond_wait(p3.c.get(), p3.m.get());
                }
                libc::pthread_mutex_unlock(p3.m.get());
            }
        }
        (now_ns() - start) as f64 / 1000.0 / rounds as f64
    })
    .join()
    .expect("thread");
    let _ = other.join();
    r
}

fn main() {
    // `cargo bench` passes `--bench`; any other flag is ignored.
    let quick = std::env::var_os("HEIR_BENCH_QUICK").is_some();
    uncontended(if quick { 100_000 } else { 2_000_000 });
    let caps = Capabilities::detect();
    if let Some(why) = caps.realtime_missing() {
        println!("real-time benchmarks skipped: {why}");
        return;
    }
    let cpu = caps.test_cpu();
    let rounds = if quick { 2_000 } else { 20_000 };
    println!("## wait/signal ping-pong, two SCHED_FIFO 20 threads on CPU {cpu}, µs per round (2 waits + 2 signals), {rounds} rounds");
    println!(
        "PiCondvar+PiMutex {:>8.2}   pthread_cond+pthread_mutex(PRIO_INHERIT) {:>8.2}",
        heir_pingpong(cpu, rounds),
        glibc_pingpong(cpu, rounds)
    );
    fig13(cpu, if quick { 500 } else { 5_000 });
}
