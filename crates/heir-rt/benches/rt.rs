//! heir-rt benchmarks (custom harness, `cargo bench -p heir-rt`):
//!
//! 1. The PI-CV paper's Fig. 13: a high-priority client ping-pongs with 1..16
//!    low-priority helpers through two PrioQueues; round-trip µs with PI-CV
//!    (every helper declared a producer of the reply queue, so each client
//!    wait boosts all of them) and without, and the per-helper slope.
//! 2. Uncontended costs side by side: PiMutex (its guard) and RawPiMutex
//!    vs glibc `pthread_mutex_t` with `PTHREAD_PRIO_INHERIT`, without and
//!    with `PTHREAD_MUTEX_ROBUST` (alternated, medians of 5; each kind's
//!    loop a function of its own for callgrind); PiCondvar signal without waiters vs
//!    `pthread_cond_signal`; a two-thread wait/signal ping-pong on each.
//!
//! 3. `boost`: the cost of lending one helper a waiter's priority per
//!    wait/signal round trip — `sched_setattr` (`Lend::User`) against the
//!    kernel (`Lend::Kernel`, signalled by the helper itself or by another
//!    thread), against no helper at all.
//! 4. `chain`: the M-BWI paper's Figs. 7-8 analogue — CPU time of a blocking
//!    `FUTEX_LOCK_PI` at the head of a chain of 1..8 blocked PI futex
//!    owners (the kernel walks and boosts the chain) and of the
//!    `FUTEX_UNLOCK_PI` at its end, SCHED_FIFO and SCHED_DEADLINE; then
//!    the same chain on heir's `RawPiMutex` (deadline threads) and through
//!    `heir::bwi` (user-space M-BWI accounting, `"protocol": "bwi"`), and
//!    the bwi pieces measured alone.
//!
//! 5. `donate`: the donating endpoint (`heir::donate::Endpoint`, NOVA
//!    donation): call/reply round trip against the existing `rpc::Endpoint`
//!    (PI-CV on and off), and the CPU cost of a call that links onto a
//!    chain of 1..64 servers (each blocked calling the next) and aborts
//!    by timeout (issue 10, "Engine cost", heir-rt side).
//! 6. `gang`: GPM (L-GPM, `heir::gang`): (a) CPU time of `Gang::run`
//!    and of a member's `notify` for 1..16 active members; (b) the GPM
//!    paper's §6 Table 1's shape — barrier start → completion over 10,000
//!    barriers among 4 members of several priorities on 2 CPUs, with
//!    FIFO load below the gang priority, without and with GPM.
//!
//! 7. `handoff`: two SCHED_FIFO 20 threads on two CPUs hand one PI mutex
//!    back and forth, `RawPiMutex` against glibc's `PTHREAD_PRIO_INHERIT`
//!    mutex: back to back (a strict alternation through the mutex: ns per
//!    turn), and once the waiter sleeps in lock (ns from the unlock call
//!    to the waiter's lock returning, and of the unlock call).
//!    Back to back also against a robust glibc PI mutex (`RawPiMutex` is
//!    robust: both keep a held mutex on the thread's robust list).
//!    `HEIR_HANDOFF=heir|glibc|glibc-robust` runs only the back-to-back
//!    part of one side (for a profiler).
//!
//! All threads are SCHED_FIFO and pinned to the last CPU (deadline threads:
//! unpinned, as the kernel requires); every loop is bounded in count and
//! time. Without SCHED_FIFO permission the real-time parts print why and
//! are skipped. `HEIR_BENCH_QUICK=1` shortens the runs. Arguments that do
//! not start with `-` select sections by name (`uncontended`, `pingpong`,
//! `fig13`, `boost`, `chain`, `donate`, `gang`, `handoff`): `cargo bench -p heir-rt --bench rt -- boost`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use heir::caps::Capabilities;
use heir::sys::{self, now_ns};
use heir::{Lend, PiCondvar, PiMutex, PrioQueue, RawPiMutex, Urgency};
use heir_core::ObjId;

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
fn ping_pong(cpu: u32, helpers: usize, pi_cv: Option<Lend>, iters: usize) -> (f64, f64) {
    let boost = pi_cv.unwrap_or_default();
    let req = Arc::new(PrioQueue::<u32>::with_lend(64, boost).expect("queue"));
    let resp = Arc::new(PrioQueue::<u32>::with_lend(64, boost).expect("queue"));
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
    if pi_cv.is_some() {
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
        "{:>3}  {:>12}  {:>8}  {:>12}  {:>8}  {:>12}  {:>8}",
        "N", "no PI-CV µs", "sd", "user µs", "sd", "kernel µs", "sd"
    );
    let (mut xs, mut off_m, mut on_m, mut k_m) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for n in [1usize, 2, 4, 6, 8, 10, 12, 14, 16] {
        let (m0, s0) = ping_pong(cpu, n, None, iters);
        let (m1, s1) = ping_pong(cpu, n, Some(Lend::User), iters);
        let (m2, s2) = ping_pong(cpu, n, Some(Lend::Kernel), iters);
        println!("{n:>3}  {m0:>12.2}  {s0:>8.2}  {m1:>12.2}  {s1:>8.2}  {m2:>12.2}  {s2:>8.2}");
        xs.push(n as f64);
        off_m.push(m0);
        on_m.push(m1);
        k_m.push(m2);
    }
    let extra = |v: &[f64]| -> Vec<f64> { v.iter().zip(&off_m).map(|(a, b)| a - b).collect() };
    println!(
        "slope: no PI-CV {:.3} µs/helper; user {:.3} (overhead {:.3}); kernel {:.3} (overhead {:.3}) µs/helper (paper, in kernel: ~0.4)",
        slope(&xs, &off_m),
        slope(&xs, &on_m),
        slope(&xs, &extra(&on_m)),
        slope(&xs, &k_m),
        slope(&xs, &extra(&k_m))
    );
}

/// One waiter (FIFO 30) and one server (FIFO 10) alternate through a PI
/// mutex and two condition variables, `rounds` times; the reply condition
/// has a helper per `mode`: none, the server (`Some((boost, false))`), or
/// an idle third thread (`Some((boost, true))`: the server's signal is not
/// the named helper's). Returns µs per round trip: wall clock, and CPU time
/// of the waiter and the server together (what the protocol costs,
/// whichever order the scheduler runs them in).
fn boost_round(cpu: u32, mode: Option<(Lend, bool)>, rounds: u32) -> (f64, f64) {
    let m = Arc::new(PiMutex::new(0u32));
    let req = Arc::new(PiCondvar::new());
    let resp = Arc::new(PiCondvar::with_lend(mode.map_or(Lend::User, |(b, _)| b)).expect("cv"));
    let limit = now_ns() + 30_000_000_000;
    let (idle_tx, idle_rx) = std::sync::mpsc::channel::<()>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let idle = spawn_fifo(cpu, 10, move || {
        let _ = tid_tx.send(heir::thread::current_tid());
        let _ = idle_rx.recv();
    });
    let idle_tid = tid_rx.recv().expect("tid");
    let (m2, rq2, rs2) = (m.clone(), req.clone(), resp.clone());
    let (stid_tx, stid_rx) = std::sync::mpsc::channel();
    let server = spawn_fifo(cpu, 10, move || {
        let _ = stid_tx.send(heir::thread::current_tid());
        let c0 = cpu_ns();
        for i in 0..rounds {
            let mut g = m2.lock().expect("lock");
            while *g != 2 * i + 1 {
                rq2.wait_until(&mut g, limit).expect("wait");
                if now_ns() > limit {
                    return 0;
                }
            }
            *g += 1;
            rs2.signal().expect("signal");
        }
        cpu_ns() - c0
    });
    let server_tid = stid_rx.recv().expect("tid");
    match mode {
        Some((_, false)) => resp.add_helper(server_tid).expect("helper"),
        Some((_, true)) => resp.add_helper(idle_tid).expect("helper"),
        None => {}
    }
    let (wall, w_cpu) = spawn_fifo(cpu, 30, move || {
        let (start, c0) = (now_ns(), cpu_ns());
        for i in 0..rounds {
            let mut g = m.lock().expect("lock");
            *g = 2 * i + 1;
            req.signal().expect("signal");
            while *g != 2 * i + 2 {
                resp.wait_until(&mut g, limit).expect("wait");
                if now_ns() > limit {
                    return (0, 0);
                }
            }
        }
        (now_ns() - start, cpu_ns() - c0)
    })
    .join()
    .expect("waiter");
    let s_cpu = server.join().unwrap_or(0);
    drop(idle_tx);
    let _ = idle.join();
    let per = |ns: u64| ns as f64 / 1000.0 / rounds as f64;
    (per(wall), per(w_cpu + s_cpu))
}

fn boost(cpu: u32, rounds: u32) {
    println!("## boost: waiter FIFO 30 <-> server FIFO 10 on CPU {cpu}, µs per round trip (best of 3 runs of {rounds})");
    let best = |mode| {
        (0..3)
            .map(|_| boost_round(cpu, mode, rounds))
            .fold((f64::MAX, f64::MAX), |a, b| (a.0.min(b.0), a.1.min(b.1)))
    };
    let none = best(None);
    println!("{:<38} {:>8} {:>8} {:>10}", "", "wall", "CPU", "CPU - none");
    for (name, mode) in [
        ("no helper", None),
        ("helper = server, sched_setattr", Some((Lend::User, false))),
        ("helper = server, kernel", Some((Lend::Kernel, false))),
        (
            "helper = idle thread, sched_setattr",
            Some((Lend::User, true)),
        ),
        (
            "helper = idle thread, kernel (kick)",
            Some((Lend::Kernel, true)),
        ),
    ] {
        let (w, c) = if mode.is_none() { none } else { best(mode) };
        println!("{name:<38} {w:>8.2} {c:>8.2} {:>10.2}", c - none.1);
    }
}

/// The thread's CPU time (ns): what a system call cost it, sleeping aside.
fn cpu_ns() -> u64 {
    sys::thread_cpu_ns()
}

/// The reservation of a deadline chain thread: runtime 1 ms every 20 ms,
/// relative deadline `dl_ms` ms. The runtime only matters to the `bwi`
/// rows: a `bwi` waiter's wait times out after its remaining runtime
/// (`heir::bwi`), and a chain of 8 hand-overs must fit in it.
fn chain_dl_attr(dl_ms: u64) -> sys::SchedAttr {
    sys::SchedAttr {
        sched_policy: sys::SCHED_DEADLINE,
        sched_runtime: 1_000_000,
        sched_deadline: dl_ms * 1_000_000,
        sched_period: 20_000_000,
        ..Default::default()
    }
}

/// Scheduling of one chain thread: SCHED_FIFO at `prio` pinned to `cpu`,
/// or SCHED_DEADLINE ([`chain_dl_attr`]) with relative deadline `dl_ms` ms.
#[derive(Clone, Copy)]
enum Class {
    Fifo { cpu: u32, prio: u8 },
    Deadline { dl_ms: u64 },
}

impl Class {
    fn enter(self) -> Result<(), sys::Errno> {
        match self {
            Class::Fifo { cpu, prio } => {
                sys::set_affinity(0, &[cpu])?;
                sys::sched_setattr(0, &heir::sched::fifo(prio))
            }
            Class::Deadline { dl_ms } => sys::sched_setattr(0, &chain_dl_attr(dl_ms)),
        }
    }
    /// Back to SCHED_OTHER — from the thread itself, while it runs.
    fn leave(self) {
        let _ = sys::sched_setattr(0, &heir::sched::other(0));
    }
}

fn release(word: &AtomicU32, me: u32) {
    if word
        .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
        .is_err()
    {
        let _ = sys::futex_unlock_pi(word);
    }
}

fn waiters(word: &AtomicU32) -> bool {
    word.load(Ordering::Relaxed) & sys::FUTEX_WAITERS != 0
}

/// Polls until `f` holds (sleeping 20 µs), or the bound passes.
fn until(limit: u64, f: impl Fn() -> bool) -> bool {
    while !f() {
        if now_ns() > limit {
            return false;
        }
        sys::sleep_until(now_ns() + 20_000);
    }
    true
}

/// Chain of `depth` PI futexes: thread i (1..=depth) holds word i and
/// blocks on word i+1 (the last one holds its word and waits for a
/// message); thread 0 then locks word 1. Returns the median CPU ns of
/// thread 0's `FUTEX_LOCK_PI` (walks and boosts the chain, sleeps, is woken
/// owning the word) and of the last thread's `FUTEX_UNLOCK_PI` (hands its
/// word over, loses its boost), or `None` if a thread could not get its
/// class or the run overran its bound.
fn chain_run(depth: usize, class: impl Fn(usize) -> Class, iters: usize) -> Option<(f64, f64)> {
    use std::sync::mpsc::channel;
    let words: Arc<Vec<AtomicU32>> = Arc::new((0..=depth + 1).map(|_| AtomicU32::new(0)).collect());
    let limit = now_ns() + 60_000_000_000;
    let (res_tx, res_rx) = channel::<(usize, Option<u64>)>();
    let mut gos = Vec::new();
    let mut handles = Vec::new();
    let (ready_tx, ready_rx) = channel::<bool>();
    for i in 0..=depth {
        let (go_tx, go_rx) = channel::<bool>();
        gos.push(go_tx);
        let (w, res, ready, c) = (words.clone(), res_tx.clone(), ready_tx.clone(), class(i));
        handles.push(std::thread::spawn(move || {
            let ok = c.enter().is_ok();
            let _ = ready.send(ok);
            if !ok {
                return;
            }
            let me = sys::gettid() as u32;
            while let Ok(true) = go_rx.recv() {
                if i == 0 {
                    let t = cpu_ns();
                    let r = sys::futex_lock_pi(&w[1], Some(limit));
                    let cost = cpu_ns() - t;
                    if r == 0 {
                        release(&w[1], me);
                    }
                    let _ = res.send((0, (r == 0).then_some(cost)));
                    continue;
                }
                let _ = w[i].compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed);
                let _ = res.send((i, None));
                if i < depth {
                    if sys::futex_lock_pi(&w[i + 1], Some(limit)) == 0 {
                        release(&w[i + 1], me);
                    }
                    release(&w[i], me);
                } else {
                    // Told to release the chain's end.
                    let _ = go_rx.recv();
                    let t = cpu_ns();
                    release(&w[i], me);
                    let _ = res.send((i, Some(cpu_ns() - t)));
                }
            }
            c.leave();
        }));
    }
    let all_ready = (0..=depth).all(|_| ready_rx.recv().unwrap_or(false));
    let mut locks = Vec::new();
    let mut unlocks = Vec::new();
    if all_ready {
        'it: for _ in 0..iters {
            for i in (1..=depth).rev() {
                let _ = gos[i].send(true);
                let _ = res_rx.recv();
                if i < depth && !until(limit, || waiters(&words[i + 1])) {
                    break 'it;
                }
            }
            let _ = gos[0].send(true);
            if !until(limit, || waiters(&words[1])) {
                break;
            }
            let _ = gos[depth].send(true);
            for _ in 0..2 {
                match res_rx.recv() {
                    Ok((0, Some(c))) => locks.push(c as f64),
                    Ok((_, Some(c))) => unlocks.push(c as f64),
                    _ => break 'it,
                }
            }
        }
    }
    for g in &gos {
        let _ = g.send(false);
    }
    drop(gos);
    for h in handles {
        let _ = h.join();
    }
    if !all_ready || locks.len() < iters {
        return None;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Some((median(&mut locks), median(&mut unlocks)))
}

/// How a heir chain locks: heir's `RawPiMutex` (the engine told of each
/// contention, the kernel's PI futex beneath; the threads stay
/// SCHED_DEADLINE), or the same mutexes through `heir::bwi` (what `heir
/// run` does for `"protocol": "bwi"`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum HeirLock {
    Pi,
    Bwi,
}

/// True once `tid` sleeps (`S` in `/proc/self/task/TID/stat`) and the
/// engine records it blocked on `m`: it waits in `FUTEX_LOCK_PI` on `m`.
fn sleeps_on(tid: i32, m: &RawPiMutex) -> bool {
    let blocked = heir::thread::info(tid)
        .and_then(|i| i.blocked_on)
        .is_some_and(|o| o == ObjId::from(m.id()));
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or("");
    blocked && state == "S"
}

/// The chain of [`chain_run`] on heir's mutexes, every thread
/// SCHED_DEADLINE with relative deadline 2 + i ms ([`chain_dl_attr`]; set
/// with `heir::thread::set_sched`, as `heir run` does): thread i (1..=depth)
/// locks mutex i and blocks on mutex i+1; thread 0 then locks mutex 1.
/// Returns the median CPU ns of thread 0's whole lock call and of the
/// chain end's whole unlock call. Under [`HeirLock::Bwi`] the lock is
/// `BwiThread::lock` (a deadline waiter's accounting reads, the lend with
/// its budget as the timeout, then leaving the deadline class for FIFO 98
/// while it holds the mutex) and the unlock `BwiThread::unlock` (the
/// hand-over, then re-entering its reservation: admission control). The
/// driver runs at SCHED_FIFO 1 (below every chain thread) so that thread
/// 0's budget does not run out while it waits for the driver. Also returns
/// the number of `bwi` throttles (thread 0's lent budget ran out: 0 when
/// the figures measure one lend).
/// Becomes SCHED_DEADLINE with `attr` (its own change, through the
/// registry), retrying for up to 100 ms while admission refuses it: the
/// previous run's threads give their bandwidth back at their 0-lag times.
fn enter_deadline(attr: &sys::SchedAttr) -> Result<(), heir::Error> {
    let end = now_ns() + 100_000_000;
    loop {
        match heir::thread::set_sched(attr) {
            Err(e) if e.errno() == libc::EBUSY && now_ns() < end => {
                sys::sleep_until(now_ns() + 1_000_000);
            }
            r => return r,
        }
    }
}

/// Sleeps one period if the calling deadline thread has less than 90 % of
/// its runtime left: its deadline has then passed, and the kernel gives it
/// a fresh runtime at the wake-up. A `bwi` waiter lends what is left of its
/// runtime (its wait's timeout), so each measured lend starts with the
/// whole runtime rather than what earlier iterations left of it.
fn fresh_budget(me: i32, attr: &sys::SchedAttr) {
    let left = heir::deadline::proc_sched(me)
        .and_then(|s| s.dl_runtime_ns)
        .unwrap_or(0);
    if left < (attr.sched_runtime as i64) * 9 / 10 {
        sys::sleep_until(now_ns() + attr.sched_period);
    }
}

fn heir_chain_run(depth: usize, how: HeirLock, iters: usize) -> Option<(f64, f64, u64)> {
    use heir::bwi::BwiThread;
    use std::sync::mpsc::channel;
    let ms: Arc<Vec<RawPiMutex>> = Arc::new((0..=depth + 1).map(|_| RawPiMutex::new()).collect());
    let limit = now_ns() + 60_000_000_000;
    let (res_tx, res_rx) = channel::<(usize, Option<u64>)>();
    let (ready_tx, ready_rx) = channel::<(usize, Option<i32>)>();
    let mut gos = Vec::new();
    let mut handles = Vec::new();
    for i in 0..=depth {
        let (go_tx, go_rx) = channel::<bool>();
        gos.push(go_tx);
        let (m, res, ready) = (ms.clone(), res_tx.clone(), ready_tx.clone());
        handles.push(std::thread::spawn(move || {
            let attr = chain_dl_attr(2 + i as u64);
            if let Err(e) = enter_deadline(&attr) {
                eprintln!("chain thread {i}: SCHED_DEADLINE refused: {e}");
                let _ = ready.send((i, None));
                return 0;
            }
            let me = sys::gettid();
            let _ = ready.send((i, Some(me)));
            let mut b = BwiThread::default();
            let lock = |b: &mut BwiThread, m: &RawPiMutex| match how {
                HeirLock::Pi => m.lock_until(Some(limit)),
                HeirLock::Bwi => b.lock(m, limit),
            };
            let unlock = |b: &mut BwiThread, m: &RawPiMutex| match how {
                HeirLock::Pi => m.unlock(),
                HeirLock::Bwi => b.unlock(m, limit),
            };
            while let Ok(true) = go_rx.recv() {
                if i == 0 {
                    fresh_budget(me, &attr);
                    let t = cpu_ns();
                    let r = lock(&mut b, &m[1]);
                    if let Err(e) = &r {
                        eprintln!("chain thread 0: lock: {e}");
                    }
                    let cost = cpu_ns() - t;
                    if r.is_ok() {
                        let _ = unlock(&mut b, &m[1]);
                    }
                    let _ = res.send((0, r.is_ok().then_some(cost)));
                    continue;
                }
                let own = lock(&mut b, &m[i]).is_ok();
                let _ = res.send((i, None));
                if !own {
                    continue;
                }
                if i < depth {
                    if lock(&mut b, &m[i + 1]).is_ok() {
                        let _ = unlock(&mut b, &m[i + 1]);
                    }
                    let _ = unlock(&mut b, &m[i]);
                } else {
                    // Told to release the chain's end.
                    let _ = go_rx.recv();
                    let t = cpu_ns();
                    let r = unlock(&mut b, &m[i]);
                    let _ = res.send((i, r.is_ok().then(|| cpu_ns() - t)));
                }
            }
            let throttles = b.lent.values().map(|l| l.throttles).sum::<u64>();
            heir::thread::unregister();
            // Back to SCHED_OTHER by itself, running (never from another
            // thread: docs/DEADLINE.md §1).
            let _ = heir::deadline::leave_class(&heir::sched::other(0));
            throttles
        }));
    }
    let mut tids: Vec<Option<i32>> = vec![None; depth + 1];
    for _ in 0..=depth {
        if let Ok((i, t)) = ready_rx.recv() {
            tids[i] = t;
        }
    }
    let all_ready = tids.iter().all(Option::is_some);
    let tid = |i: usize| tids[i].unwrap_or(0);
    // The driver at FIFO 1 while it drives (restored after).
    let me = sys::gettid();
    let saved = sys::sched_getattr(me).ok();
    let _ = sys::sched_setattr(me, &heir::sched::fifo(1));
    let mut locks = Vec::new();
    let mut unlocks = Vec::new();
    // Each step is seen within 2 s, or the run is abandoned.
    let step = || (now_ns() + 2_000_000_000).min(limit);
    if all_ready {
        'it: for _ in 0..iters {
            for i in (1..=depth).rev() {
                let _ = gos[i].send(true);
                let _ = res_rx.recv();
                if i < depth && !until(step(), || sleeps_on(tid(i), &ms[i + 1])) {
                    eprintln!("chain thread {i} not seen blocked on mutex {}", i + 1);
                    break 'it;
                }
            }
            let _ = gos[0].send(true);
            // Thread 0 may first sleep a period for a fresh budget.
            if !until(step(), || sleeps_on(tid(0), &ms[1])) {
                // What it was doing instead (for whoever chases this).
                let stat = std::fs::read_to_string(format!("/proc/self/task/{}/stat", tid(0)))
                    .unwrap_or_default();
                let state = stat.rsplit_once(')').map_or("", |(_, r)| r.trim_start());
                eprintln!(
                    "chain thread 0 not seen blocked on mutex 1: state {}, engine {:?}, /proc sched {:?}",
                    state.split_whitespace().next().unwrap_or("?"),
                    heir::thread::info(tid(0)).map(|i| (i.blocked_on, i.effective)),
                    heir::deadline::proc_sched(tid(0))
                );
                break;
            }
            let _ = gos[depth].send(true);
            for _ in 0..2 {
                match res_rx.recv() {
                    Ok((0, Some(c))) => locks.push(c as f64),
                    Ok((_, Some(c))) => unlocks.push(c as f64),
                    _ => break 'it,
                }
            }
        }
    }
    if let Some(a) = saved {
        let _ = sys::sched_setattr(me, &a);
    }
    for g in &gos {
        let _ = g.send(false);
    }
    drop(gos);
    let throttles: u64 = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    if !all_ready || locks.len() < iters || unlocks.len() < iters {
        return None;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Some((median(&mut locks), median(&mut unlocks), throttles))
}

/// Median CPU ns, in a SCHED_DEADLINE thread ([`chain_dl_attr`]), of the
/// pieces `heir::bwi` adds around the kernel's lock and unlock: the
/// accounting reads of a lend (`sched_getattr` of itself, its remaining
/// runtime from `/proc/self/task/TID/sched`, the owner's CPU clock twice),
/// leaving the deadline class for FIFO 98 after the lock
/// (`deadline::leave_class` + `thread::set_sched`), and re-entering the
/// reservation after the unlock (`thread::set_sched`: admission control).
fn bwi_pieces(iters: usize) -> Option<(f64, f64, f64)> {
    // An idle thread plays the owner whose CPU clock is read.
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let sleeper = std::thread::spawn(move || {
        let _ = tid_tx.send(sys::gettid());
        let _ = stop_rx.recv();
    });
    let owner = tid_rx.recv().ok()?;
    let r = std::thread::spawn(move || {
        let own = chain_dl_attr(2);
        heir::thread::set_sched(&own).ok()?;
        let me = sys::gettid();
        let fifo = heir::sched::fifo(heir::bwi::OWNER_FIFO_PRIORITY);
        let (mut reads, mut leave, mut back) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..iters {
            let t = cpu_ns();
            let _ = std::hint::black_box(sys::sched_getattr(me));
            let _ = std::hint::black_box(heir::deadline::proc_sched(me));
            let _ = std::hint::black_box(sys::thread_cpu_ns_of(owner));
            let _ = std::hint::black_box(sys::thread_cpu_ns_of(owner));
            reads.push((cpu_ns() - t) as f64);
            let t = cpu_ns();
            let _ = heir::deadline::leave_class(&fifo);
            let _ = heir::thread::set_sched(&fifo);
            leave.push((cpu_ns() - t) as f64);
            let t = cpu_ns();
            let mut ok = heir::thread::set_sched(&own).is_ok();
            back.push((cpu_ns() - t) as f64);
            // Admission may refuse until the 0-lag time (not expected:
            // leave_class released the bandwidth at once); bounded retries.
            for _ in 0..100 {
                if ok {
                    break;
                }
                sys::sleep_until(now_ns() + 1_000_000);
                ok = heir::thread::set_sched(&own).is_ok();
            }
            sys::sleep_until(now_ns() + 200_000);
        }
        heir::thread::unregister();
        let _ = heir::deadline::leave_class(&heir::sched::other(0));
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Some((median(&mut reads), median(&mut leave), median(&mut back)))
    })
    .join()
    .ok()
    .flatten();
    drop(stop_tx);
    let _ = sleeper.join();
    r
}

fn chain(cpu: u32, iters: usize) {
    let overhead = {
        let mut v: Vec<u64> = (0..1000)
            .map(|_| {
                let t = cpu_ns();
                cpu_ns() - t
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    println!("## chain: CPU ns of the lock at the head / the unlock at the end of a chain of N blocked owners (median of {iters}; clock read {overhead} ns included)");
    println!("   fifo+pi, dl+pi: raw FUTEX_LOCK_PI / FUTEX_UNLOCK_PI; heir dl: RawPiMutex lock/unlock; bwi: heir::bwi::BwiThread lock/unlock (throttles: lent budgets that ran out)");
    println!(
        "{:>3}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}",
        "N",
        "fifo+pi lock",
        "unlock",
        "dl+pi lock",
        "unlock",
        "heir dl lock",
        "unlock",
        "bwi lock",
        "unlock",
        "throttles"
    );
    for depth in 1..=8usize {
        let fifo = chain_run(
            depth,
            |i| Class::Fifo {
                cpu,
                prio: if i == 0 { 50 } else { 40 - i as u8 },
            },
            iters,
        );
        let dl = chain_run(
            depth,
            |i| Class::Deadline {
                dl_ms: 2 + i as u64,
            },
            iters,
        );
        let heir_dl = heir_chain_run(depth, HeirLock::Pi, iters).map(|(a, b, _)| (a, b));
        let bwi = heir_chain_run(depth, HeirLock::Bwi, iters);
        let f = |x: Option<(f64, f64)>, k: usize| {
            x.map_or("n/a".to_string(), |v| {
                format!("{:.0}", if k == 0 { v.0 } else { v.1 })
            })
        };
        let b2 = bwi.map(|(a, b, _)| (a, b));
        println!(
            "{depth:>3}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}",
            f(fifo, 0),
            f(fifo, 1),
            f(dl, 0),
            f(dl, 1),
            f(heir_dl, 0),
            f(heir_dl, 1),
            f(b2, 0),
            f(b2, 1),
            bwi.map_or("n/a".to_string(), |b| b.2.to_string())
        );
    }
    match bwi_pieces(iters) {
        Some((reads, leave, back)) => println!(
            "bwi pieces (CPU ns, median of {iters}, one SCHED_DEADLINE thread): accounting reads {reads:.0}; leave the class for FIFO 98 {leave:.0}; re-enter the reservation {back:.0}"
        ),
        None => println!("bwi pieces: n/a (SCHED_DEADLINE refused)"),
    }
}

fn per_op(n: u64, f: impl FnMut()) -> f64 {
    let mut f = f;
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// `n` lock + unlock pairs of a `PiMutex` (its guard); one function per
/// kind, never inlined, so that `valgrind --tool=callgrind` counts each
/// loop's instructions apart (`callgrind_annotate --inclusive=yes`).
#[inline(never)]
fn pairs_pimutex(m: &PiMutex<u64>, n: u64) -> f64 {
    per_op(n, || {
        let mut g = m.lock().expect("lock");
        *g += 1;
    })
}

/// As [`pairs_pimutex`], `RawPiMutex` (`heir_mutex_t`'s calls).
#[inline(never)]
fn pairs_raw(m: &RawPiMutex, n: u64) -> f64 {
    let mut x = 0u64;
    per_op(n, || {
        m.lock().expect("lock");
        x = std::hint::black_box(x + 1);
        m.unlock().expect("unlock");
    })
}

/// As [`pairs_pimutex`], a glibc mutex.
#[inline(never)]
fn pairs_glibc(m: &GlibcPi, n: u64) -> f64 {
    let mut x = 0u64;
    per_op(n, || {
        // SAFETY: an initialised mutex, locked then unlocked by this thread.
        unsafe { libc::pthread_mutex_lock(m.0.get()) };
        x = std::hint::black_box(x + 1);
        // SAFETY: as above.
        unsafe { libc::pthread_mutex_unlock(m.0.get()) };
    })
}

fn uncontended(n: u64) {
    println!("## Uncontended, ns per operation ({n} iterations)");
    let m = PiMutex::new(0u64);
    let raw = RawPiMutex::new();
    let (pi, robust) = (GlibcPi::new(), GlibcPi::robust());
    // Warm up, then alternate the four.
    pairs_pimutex(&m, n / 10);
    pairs_raw(&raw, n / 10);
    pairs_glibc(&pi, n / 10);
    pairs_glibc(&robust, n / 10);
    let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        a.push(pairs_pimutex(&m, n / 5));
        b.push(pairs_raw(&raw, n / 5));
        c.push(pairs_glibc(&pi, n / 5));
        d.push(pairs_glibc(&robust, n / 5));
    }
    let (heir_lock, heir_raw, glibc_lock, glibc_robust) = (
        median(&mut a),
        median(&mut b),
        median(&mut c),
        median(&mut d),
    );
    println!(
        "lock+unlock   PiMutex (robust) {heir_lock:>8.1}   RawPiMutex {heir_raw:>8.1}   pthread_mutex PRIO_INHERIT {glibc_lock:>8.1}   PRIO_INHERIT+ROBUST {glibc_robust:>8.1}   (medians of 5 alternated runs; RawPiMutex / robust glibc {:.2})",
        heir_raw / glibc_robust
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
    // `cargo bench` passes `--bench`; other flags are ignored, other words
    // select sections.
    let names: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |s: &str| names.is_empty() || names.iter().any(|n| s.contains(n.as_str()));
    let quick = std::env::var_os("HEIR_BENCH_QUICK").is_some();
    if want("uncontended") {
        uncontended(if quick { 100_000 } else { 2_000_000 });
    }
    let caps = Capabilities::detect();
    if let Some(why) = caps.realtime_missing() {
        println!("real-time benchmarks skipped: {why}");
        return;
    }
    let cpu = caps.test_cpu();
    let rounds = if quick { 2_000 } else { 20_000 };
    if want("pingpong") {
        println!("## wait/signal ping-pong, two SCHED_FIFO 20 threads on CPU {cpu}, µs per round (2 waits + 2 signals), {rounds} rounds");
        println!(
            "PiCondvar+PiMutex {:>8.2}   pthread_cond+pthread_mutex(PRIO_INHERIT) {:>8.2}",
            heir_pingpong(cpu, rounds),
            glibc_pingpong(cpu, rounds)
        );
    }
    if want("handoff") {
        handoff(
            if quick { 2_000 } else { 10_000 },
            if quick { 3 } else { 7 },
        );
    }
    if want("boost") {
        boost(cpu, rounds);
    }
    if want("fig13") {
        fig13(cpu, if quick { 500 } else { 5_000 });
    }
    if want("chain") {
        chain(cpu, if quick { 50 } else { 500 });
    }
    if want("donate") {
        donate(cpu, rounds, if quick { 200 } else { 2_000 });
    }
    if want("gang") {
        gang_bench(
            cpu,
            if quick { 500 } else { 5_000 },
            if quick { 1_000 } else { 10_000 },
        );
    }
}

/// µs per call/reply round trip on a donating endpoint: client FIFO 30,
/// server FIFO 10, one CPU.
fn donate_round_trip(cpu: u32, rounds: u32) -> f64 {
    let ep = Arc::new(heir::donate::Endpoint::<u32, u32>::new());
    let limit = now_ns() + 60_000_000_000;
    let (tx, rx) = std::sync::mpsc::channel();
    let e = ep.clone();
    let server = spawn_fifo(cpu, 10, move || {
        e.add_server(false).expect("join");
        let _ = tx.send(());
        while let Ok(Some(x)) = e.receive_until(Some(limit)) {
            let _ = e.reply(x + 1);
            if x == u32::MAX - 1 {
                break;
            }
        }
    });
    let _ = rx.recv();
    let e = ep.clone();
    let us = spawn_fifo(cpu, 30, move || {
        let start = now_ns();
        for i in 0..rounds {
            let _ = e.call(i);
        }
        let us = (now_ns() - start) as f64 / 1000.0 / rounds as f64;
        let _ = e.call(u32::MAX - 1);
        us
    })
    .join()
    .expect("client");
    let _ = server.join();
    us
}

/// µs per round trip on the existing `rpc::Endpoint` (PI-CV on or off).
fn rpc_round_trip(cpu: u32, rounds: u32, pi_cv: bool) -> f64 {
    let ep = Arc::new(heir::rpc::Endpoint::<u32, u32>::new(pi_cv));
    let limit = now_ns() + 60_000_000_000;
    let (tx, rx) = std::sync::mpsc::channel();
    let e = ep.clone();
    let server = spawn_fifo(cpu, 10, move || {
        let _ = tx.send(heir::thread::current_tid());
        let mut last = 0;
        while last != u32::MAX - 1 {
            match e.serve_until(Some(limit), |x| {
                last = x;
                x + 1
            }) {
                Ok(true) => {}
                _ => break,
            }
        }
    });
    let stid = rx.recv().expect("server tid");
    let _ = ep.add_server(stid);
    let e = ep.clone();
    let us = spawn_fifo(cpu, 30, move || {
        let c = e.caller().expect("caller");
        let start = now_ns();
        for i in 0..rounds {
            let _ = e.call(&c, i);
        }
        let us = (now_ns() - start) as f64 / 1000.0 / rounds as f64;
        let _ = e.call(&c, u32::MAX - 1);
        us
    })
    .join()
    .expect("client");
    let _ = server.join();
    us
}

/// Median CPU ns of a head caller's call that links onto a chain of `n`
/// servers (server i serves endpoint i by calling endpoint i+1; the last
/// one waits) and aborts by a 300 µs timeout: the kernel boosts the `n`
/// servers when the call blocks and de-boosts them when it times out.
fn donate_chain(cpu: u32, n: usize, calls: u32) -> u64 {
    type Ep = heir::donate::Endpoint<u32, u32>;
    let eps: Vec<Arc<Ep>> = (0..n).map(|_| Arc::new(Ep::new())).collect();
    let limit = now_ns() + 120_000_000_000;
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let mut release_rx = Some(release_rx);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let mut servers = Vec::new();
    for i in 0..n {
        let e = eps[i].clone();
        let next = eps.get(i + 1).cloned();
        let wait = if next.is_none() {
            release_rx.take()
        } else {
            None
        };
        let ready = ready_tx.clone();
        servers.push(spawn_fifo(cpu, 10, move || {
            e.add_server(false).expect("join");
            let _ = ready.send(());
            while let Ok(Some(x)) = e.receive_until(Some(limit)) {
                let r = match (&next, &wait) {
                    _ if x == u32::MAX => x,
                    (Some(nx), _) => nx.call_until(x, Some(limit)).unwrap_or(0),
                    (None, Some(w)) => {
                        let _ = w.recv_timeout(std::time::Duration::from_secs(100));
                        x
                    }
                    _ => x,
                };
                let _ = e.reply(r);
                if x == u32::MAX {
                    break;
                }
            }
        }));
    }
    for _ in 0..n {
        let _ = ready_rx.recv();
    }
    let head = eps[0].clone();
    let med = spawn_fifo(cpu, 30, move || {
        // The first call builds the chain (each server calls on).
        let _ = head.call_until(1, Some(now_ns() + 50_000_000));
        let mut v = Vec::with_capacity(calls as usize);
        for _ in 0..calls {
            let t0 = sys::thread_cpu_ns();
            let r = head.call_until(1, Some(now_ns() + 300_000));
            let t1 = sys::thread_cpu_ns();
            if r == Err(heir::Error::TimedOut) {
                v.push(t1 - t0);
            }
        }
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    })
    .join()
    .expect("head");
    // Unwind: release the last server, then stop every server.
    let _ = release_tx.send(());
    for e in &eps {
        let _ = e.call_until(u32::MAX, Some(now_ns() + 5_000_000_000));
    }
    for s in servers {
        let _ = s.join();
    }
    med
}

fn donate(cpu: u32, rounds: u32, chain_calls: u32) {
    println!("## donating endpoint (NOVA donation) vs rpc::Endpoint: client FIFO 30, server FIFO 10, CPU {cpu}, µs per call/reply round trip, {rounds} rounds, best of 3");
    let best = |f: &dyn Fn() -> f64| (0..3).map(|_| f()).fold(f64::INFINITY, f64::min);
    println!(
        "donate::Endpoint {:>8.2}   rpc::Endpoint PI-CV on {:>8.2}   PI-CV off {:>8.2}",
        best(&|| donate_round_trip(cpu, rounds)),
        best(&|| rpc_round_trip(cpu, rounds, true)),
        best(&|| rpc_round_trip(cpu, rounds, false)),
    );
    println!("## donating endpoint: link + abort by chain length (median CPU ns of the head caller's call, 300 µs timeout, {chain_calls} calls)");
    println!("| N | link + abort ns |");
    println!("|---|---|");
    for n in [1usize, 4, 16, 64, 256, 512] {
        println!("| {n} | {} |", donate_chain(cpu, n, chain_calls));
    }
}

/// The median of `v` (sorted in place); 0 for none.
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `gang` (a): CPU time of `Gang::run` over `n` active members (FIFO 10,
/// asleep) boosted to a passive FIFO 30 member's priority, and of each
/// member's `notify`; medians over `rounds` runs, ns.
fn gang_costs(cpu: u32, n: usize, rounds: u32) -> (f64, f64) {
    use heir::gang::{ControlWord, Gang};
    let g = Arc::new(Gang::new().expect("gang"));
    let go = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let limit = now_ns() + 60_000_000_000;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut hs = Vec::new();
    for _ in 0..n {
        let (g, go, stop, tx) = (g.clone(), go.clone(), stop.clone(), tx.clone());
        hs.push(spawn_fifo(cpu, 10, move || {
            let mut costs = Vec::with_capacity(rounds as usize);
            let w = ControlWord::new(1);
            let _ = tx.send((heir::thread::current_tid(), w.clone()));
            let mut seen = 0;
            while !stop.load(Ordering::Acquire) && now_ns() < limit {
                let v = go.load(Ordering::Acquire);
                if v == seen {
                    sys::futex_wait(&go, v, Some(now_ns() + 100_000_000));
                    continue;
                }
                seen = v;
                let t = cpu_ns();
                let _ = g.notify();
                costs.push((cpu_ns() - t) as f64);
            }
            costs
        }));
    }
    drop(tx);
    for _ in 0..n {
        let (tid, w) = rx.recv().expect("member");
        g.add_member(tid, &w).expect("add_member");
    }
    // The measuring thread: FIFO 30, a passive member (the gang priority).
    let me = sys::gettid();
    let was = sys::thread_cpus();
    let _ = sys::set_affinity(0, &[cpu]);
    let _ = heir::thread::set_sched(&heir::sched::fifo(30));
    let passive = ControlWord::new(0);
    g.add_member(me, &passive).expect("add passive");
    let mut runs = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds {
        let t = cpu_ns();
        let o = g.run(1).expect("run");
        runs.push((cpu_ns() - t) as f64);
        assert_eq!(o.boosted as usize, n);
        go.fetch_add(1, Ordering::Release);
        sys::futex_wake(&go, i32::MAX);
        let r = g.wait_until(Some(now_ns() + 1_000_000_000)).expect("wait");
        assert_eq!(r, heir::gang::GangWait::Completed);
    }
    stop.store(true, Ordering::Release);
    go.fetch_add(1, Ordering::Release);
    sys::futex_wake(&go, i32::MAX);
    let mut notifies: Vec<f64> = hs
        .into_iter()
        .flat_map(|h| h.join().expect("member"))
        .collect();
    let _ = g.remove_member(me);
    heir::thread::unregister();
    let _ = sys::set_affinity(0, &was);
    (median(&mut runs), median(&mut notifies))
}

/// The system's 1-minute load average (`/proc/loadavg`).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// `gang` (b), the shape of the GPM paper's §6 Table 1: barrier latency (start to
/// completion, µs) over `barriers` barriers that counted an active member
/// (those that found every member asleep complete at once and are only
/// counted: returned second), one every `period_us`, at most `max_s` s.
/// Members (FIFO 10 and 14 on CPU 0, 12 and 16 on CPU 1; gang priority 16)
/// loop: rejoin (activate), barrier point, 4 × 50 µs of work each
/// followed by a barrier point, withdraw (deactivate, notify if counted),
/// sleep 1 ms. Load: 2 threads per CPU at FIFO 13 (above the members at 10
/// and 12, below the gang priority), 5 ms busy then 20 ms asleep each
/// (40 % of each CPU, the GPM paper's 5 ms / 25 ms). The master (FIFO 50, CPU
/// 0, no member) starts, waits for completion, releases.
fn barrier_latencies(
    cpus: [u32; 2],
    gpm: bool,
    barriers: usize,
    period_us: u64,
    max_s: u64,
) -> (Vec<f64>, usize) {
    use heir::gang::{Barrier, GangAttr, GangWait, PointResult, BARRIER_BIT};
    use std::sync::atomic::AtomicBool;
    let b = Arc::new(Barrier::new(GangAttr { gpm }).expect("barrier"));
    let stop = Arc::new(AtomicBool::new(false));
    let limit = now_ns() + (max_s + 10) * 1_000_000_000;
    let joined = Arc::new(std::sync::Barrier::new(5));
    let mut hs = Vec::new();
    for (cpu, prio) in [(cpus[0], 10), (cpus[0], 14), (cpus[1], 12), (cpus[1], 16)] {
        let (b, stop, joined) = (b.clone(), stop.clone(), joined.clone());
        hs.push(spawn_fifo(cpu, prio, move || {
            let w = b.add_member(sys::gettid(), true).expect("add_member");
            joined.wait();
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) && now_ns() < limit {
                w.activate(BARRIER_BIT);
                if b.point_until(Some(limit)) == PointResult::TimedOut {
                    break;
                }
                for _ in 0..4 {
                    let end = now_ns() + 50_000;
                    while now_ns() < end {
                        std::hint::spin_loop();
                    }
                    n += 1;
                    if b.point_until(Some(limit)) == PointResult::TimedOut {
                        break;
                    }
                }
                if w.deactivate(BARRIER_BIT).counted() {
                    let _ = b.gang().notify();
                }
                sys::sleep_until(now_ns() + 1_000_000);
            }
            let _ = b.remove_member(sys::gettid());
            n
        }));
    }
    let mut loads = Vec::new();
    for (i, cpu) in [cpus[0], cpus[0], cpus[1], cpus[1]].into_iter().enumerate() {
        let stop = stop.clone();
        loads.push(spawn_fifo(cpu, 13, move || {
            sys::sleep_until(now_ns() + i as u64 * 6_000_000);
            while !stop.load(Ordering::Acquire) && now_ns() < limit {
                let end = now_ns() + 5_000_000;
                while now_ns() < end {
                    std::hint::spin_loop();
                }
                sys::sleep_until(now_ns() + 20_000_000);
            }
        }));
    }
    joined.wait();
    let master = {
        let (b, stop) = (b.clone(), stop.clone());
        spawn_fifo(cpus[0], 50, move || {
            let mut lat = Vec::with_capacity(barriers);
            let mut idle = 0usize;
            let mut next = now_ns() + 50_000_000;
            let give_up = now_ns() + max_s * 1_000_000_000;
            while lat.len() < barriers && now_ns() < give_up {
                sys::sleep_until(next);
                next = next.max(now_ns()) + period_us * 1000;
                let t = now_ns();
                let active = b.start().expect("start").active;
                let r = b.wait_until(Some(t + 1_000_000_000)).expect("wait");
                let d = now_ns() - t;
                b.release();
                if r == GangWait::TimedOut {
                    eprintln!("barrier timed out after 1 s");
                    break;
                }
                // Every member withdrawn (asleep): complete at start, no
                // latency to measure.
                if active == 0 {
                    idle += 1;
                } else {
                    lat.push(d as f64 / 1000.0);
                }
            }
            stop.store(true, Ordering::Release);
            (lat, idle)
        })
    };
    let (lat, idle) = master.join().expect("master");
    for h in loads {
        h.join().expect("load");
    }
    for h in hs {
        h.join().expect("member");
    }
    (lat, idle)
}

fn gang_bench(cpu: u32, rounds: u32, barriers: usize) {
    println!("## gang (a): CPU time of Gang::run over n active FIFO 10 members boosted to 30, and of each member's notify; medians over {rounds} runs, CPU {cpu}, load {}", loadavg());
    println!(
        "{:>3} {:>12} {:>16} {:>14}",
        "n", "run ns", "run ns/member", "notify ns"
    );
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for n in [1usize, 2, 4, 8, 16] {
        let (r, nt) = gang_costs(cpu, n, rounds);
        println!("{n:>3} {r:>12.0} {:>16.0} {nt:>14.0}", r / n as f64);
        xs.push(n as f64);
        ys.push(r);
    }
    println!("run: slope {:.0} ns per member", slope(&xs, &ys));
    let cpus = sys::allowed_cpus();
    if cpus.len() < 2 {
        println!("gang (b) skipped: needs 2 CPUs");
        return;
    }
    let two = [cpus[0], cpus[1]];
    println!("## gang (b): the GPM paper's Table 1 analogue, barrier start → completion (µs), {barriers} barriers with an active member, one every 1.5 ms (at most 40 s per mode), CPUs {two:?}, load before {}", loadavg());
    // Both CPUs carry real-time load for a minute: not while another heir
    // real-time test runs (theirs would be disturbed, and ours).
    let _lock = heir::caps::FileLock::acquire(&heir::caps::rt_tests_lock_path());
    let t = std::time::Instant::now();
    let mut rows = Vec::new();
    for gpm in [false, true] {
        let (lat, idle) = barrier_latencies(two, gpm, barriers, 1_500, 40);
        let (m, sd) = mean_sd(&lat);
        let max = lat.iter().copied().fold(0.0, f64::max);
        let min = lat.iter().copied().fold(f64::MAX, f64::min);
        let mut s = lat.clone();
        let p99 = if s.is_empty() {
            0.0
        } else {
            s.sort_by(f64::total_cmp);
            s[(s.len() * 99 / 100).min(s.len() - 1)]
        };
        rows.push((gpm, lat.len(), m, sd, max, min, p99));
        if idle > 0 {
            println!(
                "({}: {idle} more barriers found every member withdrawn, asleep: complete at start, not counted)",
                if gpm { "L-GPM" } else { "no-GPM" }
            );
        }
    }
    println!(
        "{:<8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "count", "mean", "stddev", "max", "min", "p99"
    );
    for (gpm, n, m, sd, max, min, p99) in &rows {
        let name = if *gpm { "L-GPM" } else { "no-GPM" };
        println!("{name:<8} {n:>8} {m:>9.1} {sd:>9.1} {max:>9.1} {min:>9.1} {p99:>9.1}");
    }
    if let [(_, _, m0, _, x0, ..), (_, _, m1, _, x1, ..)] = rows[..] {
        println!(
            "no-GPM / L-GPM: mean {:.1}x, max {:.1}x; {:.1} s, load after {}",
            m0 / m1,
            x0 / x1,
            t.elapsed().as_secs_f64(),
            loadavg()
        );
    }
}

/// What [`handoff_run`] needs of a mutex: lock and unlock.
trait HandOff: Sync {
    fn lock(&self);
    fn unlock(&self);
}

impl HandOff for RawPiMutex {
    fn lock(&self) {
        RawPiMutex::lock(self).expect("lock");
    }
    fn unlock(&self) {
        RawPiMutex::unlock(self).expect("unlock");
    }
}

/// A glibc `PTHREAD_PRIO_INHERIT` mutex (`PTHREAD_MUTEX_ROBUST` too with
/// [`GlibcPi::robust`]: then glibc keeps it on the thread's robust list,
/// as `RawPiMutex` always does).
struct GlibcPi(std::cell::UnsafeCell<libc::pthread_mutex_t>);
// SAFETY: pthread mutexes are made for sharing between threads.
unsafe impl Sync for GlibcPi {}
// SAFETY: as above.
unsafe impl Send for GlibcPi {}

impl GlibcPi {
    fn new() -> Self {
        Self::with(false)
    }

    fn robust() -> Self {
        Self::with(true)
    }

    fn with(robust: bool) -> Self {
        // SAFETY: a zeroed mutex initialised at once with a PI attribute.
        unsafe {
            let m = GlibcPi(std::cell::UnsafeCell::new(std::mem::zeroed()));
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            libc::pthread_mutexattr_init(&mut attr);
            libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
            if robust {
                libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST);
            }
            libc::pthread_mutex_init(m.0.get(), &attr);
            libc::pthread_mutexattr_destroy(&mut attr);
            m
        }
    }
}

impl HandOff for GlibcPi {
    fn lock(&self) {
        // SAFETY: an initialised mutex.
        assert_eq!(unsafe { libc::pthread_mutex_lock(self.0.get()) }, 0);
    }
    fn unlock(&self) {
        // SAFETY: an initialised mutex held by the caller.
        assert_eq!(unsafe { libc::pthread_mutex_unlock(self.0.get()) }, 0);
    }
}

/// True if thread `tid` of this process sleeps (`S` in its `stat`).
fn asleep(tid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        == Some("S")
}

/// One hand-off measured: when the holder called unlock, when its unlock
/// returned, when the waiter's lock returned (ns, `CLOCK_MONOTONIC`).
#[derive(Clone, Copy, Default)]
struct Hand {
    unlock: u64,
    unlocked: u64,
    got: u64,
}

/// Two SCHED_FIFO 20 threads pinned to two CPUs hand one mutex back and
/// forth `rounds` times. Each round the holder waits until the other
/// thread has called lock and sleeps in the kernel on it (its flag, then
/// `S` in its `/proc` stat), then unlocks — the kernel hands the mutex
/// over — and the other thread's lock returns. Returns the hand-offs
/// (`None` if the 20 s bound was hit).
fn handoff_run<M: HandOff + Send + 'static>(
    m: Arc<M>,
    cpus: [u32; 2],
    rounds: u32,
) -> Option<Vec<Hand>> {
    let limit = now_ns() + 20_000_000_000;
    // `turn`: whose lock is to be answered next (0 or 1), 2 before start;
    // `tids`: the two threads; `unlock_at`: the holder's timestamps.
    let turn = Arc::new(AtomicU32::new(2));
    let tids = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let waiting = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let side = |me: usize,
                m: Arc<M>,
                turn: Arc<AtomicU32>,
                tids: Arc<[AtomicU32; 2]>,
                waiting: Arc<[AtomicU32; 2]>| {
        spawn_fifo(cpus[me], 20, move || {
            let other = 1 - me;
            tids[me].store(sys::gettid() as u32, Ordering::Release);
            let mut hands = Vec::with_capacity(rounds as usize);
            // Side 0 starts as the holder; side 1 starts by locking.
            if me == 0 {
                m.lock();
                turn.store(0, Ordering::Release);
            } else {
                while turn.load(Ordering::Acquire) == 2 {
                    if now_ns() > limit {
                        return None;
                    }
                    std::hint::spin_loop();
                }
            }
            let mut holding = me == 0;
            // `2 * rounds` hand-offs in all, alternating: side 0 hands on
            // even ones, side 1 on odd ones.
            for k in 0..2 * rounds as usize {
                if (k % 2 == 0) == (me == 0) {
                    // The holder: wait until the other sleeps in lock.
                    debug_assert!(holding);
                    let otid = loop {
                        let t = tids[other].load(Ordering::Acquire);
                        if t != 0 && waiting[other].load(Ordering::Acquire) == 1 {
                            break t as i32;
                        }
                        if now_ns() > limit {
                            m.unlock();
                            return None;
                        }
                        std::hint::spin_loop();
                    };
                    while !asleep(otid) {
                        if now_ns() > limit {
                            m.unlock();
                            return None;
                        }
                    }
                    waiting[other].store(0, Ordering::Release);
                    let unlock = now_ns();
                    m.unlock();
                    let unlocked = now_ns();
                    holding = false;
                    hands.push(Hand {
                        unlock,
                        unlocked,
                        got: 0,
                    });
                } else {
                    // The waiter: announce, lock, note when it returned.
                    waiting[me].store(1, Ordering::Release);
                    m.lock();
                    let got = now_ns();
                    holding = true;
                    hands.push(Hand {
                        got,
                        ..Hand::default()
                    });
                }
            }
            if holding {
                m.unlock();
            }
            Some(hands)
        })
    };
    let a = side(0, m.clone(), turn.clone(), tids.clone(), waiting.clone());
    let b = side(1, m, turn, tids, waiting);
    let (ha, hb) = (a.join().ok()??, b.join().ok()??);
    Some(
        ha.iter()
            .zip(&hb)
            .map(|(x, y)| Hand {
                unlock: x.unlock.max(y.unlock),
                unlocked: x.unlocked.max(y.unlocked),
                got: x.got.max(y.got),
            })
            .collect(),
    )
}

/// The back-to-back shape: both threads (SCHED_FIFO 20, one per CPU) loop
/// lock → if it is their turn, bump the shared count (a strict
/// alternation) → unlock, until `2 * rounds` turns are done; the count
/// moves only by a hand-off, so each turn is one contended hand-over
/// (plus the lock/unlock attempts that found it was not their turn).
/// Returns ns per turn, or `None` past the 20 s bound.
fn alternate_run<M: HandOff + Send + 'static>(
    m: Arc<M>,
    cpus: [u32; 2],
    rounds: u32,
) -> Option<f64> {
    let limit = now_ns() + 20_000_000_000;
    let count = Arc::new(AtomicU32::new(0));
    let ready = Arc::new(AtomicU32::new(0));
    let total = 2 * rounds;
    let side = |me: u32, m: Arc<M>, count: Arc<AtomicU32>, ready: Arc<AtomicU32>| {
        spawn_fifo(cpus[me as usize], 20, move || {
            ready.fetch_add(1, Ordering::AcqRel);
            while ready.load(Ordering::Acquire) < 2 {
                std::hint::spin_loop();
            }
            let t0 = now_ns();
            loop {
                m.lock();
                // Relaxed is enough: the mutex orders the accesses.
                let c = count.load(Ordering::Relaxed);
                if c < total && c % 2 == me {
                    count.store(c + 1, Ordering::Relaxed);
                }
                m.unlock();
                if c + 1 >= total {
                    break;
                }
                if now_ns() > limit {
                    return None;
                }
            }
            Some(now_ns() - t0)
        })
    };
    let a = side(0, m.clone(), count.clone(), ready.clone());
    let b = side(1, m, count, ready);
    let (ta, tb) = (a.join().ok()??, b.join().ok()??);
    Some(ta.max(tb) as f64 / total as f64)
}

/// Medians over one run's hand-offs: unlock call → waiter's lock
/// returned, and the unlock call itself (ns).
fn handoff_medians(h: &[Hand]) -> (f64, f64) {
    let mut lat: Vec<f64> = h
        .iter()
        .map(|x| x.got.saturating_sub(x.unlock) as f64)
        .collect();
    let mut un: Vec<f64> = h.iter().map(|x| (x.unlocked - x.unlock) as f64).collect();
    (median(&mut lat), median(&mut un))
}

fn handoff(rounds: u32, runs: usize) {
    let cpus = sys::allowed_cpus();
    if cpus.len() < 2 {
        println!("handoff skipped: needs 2 CPUs");
        return;
    }
    let two = [cpus[0], cpus[1]];
    // Both CPUs spin at FIFO 20 while waiting for the other side: not
    // while another heir real-time test runs.
    let _lock = heir::caps::FileLock::acquire(&heir::caps::rt_tests_lock_path());
    println!("## contended hand-off across CPUs {two:?}: two SCHED_FIFO 20 threads hand one PI mutex back and forth ({rounds} rounds = {} hand-offs per run, each once the waiter sleeps in lock), ns from the unlock call to the waiter's lock returning, and of the unlock call; medians per run, median of {runs} runs (heir and glibc alternating); load before {}", 2 * rounds, loadavg());
    let (mut hl, mut hu, mut gl, mut gu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let which = std::env::var("HEIR_HANDOFF").unwrap_or_default();
    for _ in 0..if which.is_empty() { runs } else { 0 } {
        if let Some(h) = handoff_run(Arc::new(RawPiMutex::new()), two, rounds) {
            let (l, u) = handoff_medians(&h);
            hl.push(l);
            hu.push(u);
        }
        if let Some(h) = handoff_run(Arc::new(GlibcPi::new()), two, rounds) {
            let (l, u) = handoff_medians(&h);
            gl.push(l);
            gu.push(u);
        }
    }
    let (mut ha, mut ga, mut gr) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        if which.is_empty() || which == "heir" {
            if let Some(x) = alternate_run(Arc::new(RawPiMutex::new()), two, rounds * 10) {
                ha.push(x);
            }
        }
        if which.is_empty() || which == "glibc" {
            if let Some(x) = alternate_run(Arc::new(GlibcPi::new()), two, rounds * 10) {
                ga.push(x);
            }
        }
        if which.is_empty() || which == "glibc-robust" {
            if let Some(x) = alternate_run(Arc::new(GlibcPi::robust()), two, rounds * 10) {
                gr.push(x);
            }
        }
    }
    let runs_of = |v: &[f64]| v.iter().map(|x| x.round() as i64).collect::<Vec<_>>();
    println!(
        "back-to-back ({} turns per run), ns per turn: RawPiMutex {:>7.0}   pthread_mutex PRIO_INHERIT {:>7.0}   ratio {:.2}   (runs: heir {:?}, glibc {:?})",
        20 * rounds,
        median(&mut ha.clone()),
        median(&mut ga.clone()),
        median(&mut ha.clone()) / median(&mut ga.clone()),
        runs_of(&ha),
        runs_of(&ga)
    );
    println!(
        "back-to-back, glibc PRIO_INHERIT + ROBUST (what RawPiMutex is) {:>7.0}   RawPiMutex / it {:.2}   (runs: {:?})",
        median(&mut gr.clone()),
        median(&mut ha.clone()) / median(&mut gr.clone()),
        runs_of(&gr)
    );
    println!(
        "hand-off  RawPiMutex {:>7.0}   pthread_mutex PRIO_INHERIT {:>7.0}   ratio {:.2}   (runs: heir {:?}, glibc {:?})",
        median(&mut hl.clone()),
        median(&mut gl.clone()),
        median(&mut hl.clone()) / median(&mut gl.clone()),
        runs_of(&hl),
        runs_of(&gl)
    );
    println!(
        "unlock    RawPiMutex {:>7.0}   pthread_mutex PRIO_INHERIT {:>7.0}   ratio {:.2}   (runs: heir {:?}, glibc {:?}); load after {}",
        median(&mut hu.clone()),
        median(&mut gu.clone()),
        median(&mut hu.clone()) / median(&mut gu.clone()),
        runs_of(&hu),
        runs_of(&gu),
        loadavg()
    );
}
