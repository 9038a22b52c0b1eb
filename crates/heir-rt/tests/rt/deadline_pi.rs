//! What Linux's deadline inheritance through a PI futex does on this kernel
//! (issue 9): the facts the simulator's `inherit` must match, recorded on
//! real threads (docs/DEADLINE.md).
//!
//! Every thread of a case is pinned to the test's CPU, made a root domain of
//! its own for the test ([`heir::deadline::OneCpuRootDomain`]: a deadline
//! thread must be allowed on its whole root domain). An owner `O` takes a
//! PI futex and runs a 20 ms critical section; a deadline waiter `W`
//! (runtime 2 ms, deadline = period = 20 ms) blocks on it; then a *middle*
//! deadline task `M` (3 ms of a 5 ms runtime every 100 ms: a deadline
//! between W's and O's own)
//! is released, and a `SCHED_FIFO` 50 hog `H` spins (bounded) while the
//! owner is boosted. What is asserted are orders — does M finish before O
//! unlocks? — and what `/proc/TID/sched` shows, never timings.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use heir::deadline::{self, OneCpuRootDomain};
use heir::sys::{self, FUTEX_TID_MASK, FUTEX_WAITERS};

use crate::common::*;

/// The owner's critical section (CPU time).
const CS_NS: u64 = 20 * MS;

/// Locks a PI futex word (user-space fast path, else the kernel), until the
/// absolute `limit`; true if held.
fn pi_lock(word: &AtomicU32, limit: u64) -> bool {
    let me = sys::gettid() as u32;
    if word
        .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return true;
    }
    loop {
        match sys::futex_lock_pi(word, Some(limit)) {
            0 => return true,
            e if e == libc::EINTR || e == libc::EAGAIN => continue,
            _ => return false,
        }
    }
}

fn pi_unlock(word: &AtomicU32) {
    let me = sys::gettid() as u32;
    if word
        .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
        .is_err()
    {
        let _ = sys::futex_unlock_pi(word);
    }
}

/// The calling thread becomes `SCHED_DEADLINE` (its own change), pinned.
fn become_deadline(cpu: u32, runtime_us: u64, period_us: u64) {
    sys::set_affinity(0, &[cpu]).expect("pin");
    sys::sched_setattr(
        sys::gettid(),
        &deadline::attr(runtime_us, period_us, period_us),
    )
    .unwrap_or_else(|e| {
        panic!(
            "SCHED_DEADLINE {runtime_us}/{period_us}: {}",
            sys::errno_name(e)
        )
    });
}

/// Sleeps (50 µs steps) until `word` has a bit of `mask` set, `done` is
/// set (O is about to unlock), or `limit`: the steps follow each other by
/// what happened, not by the clock, so a thread started late on a loaded
/// machine (the fair server runs ordinary tasks ahead of FIFO ones) cannot
/// swap them.
fn wait_word(word: &AtomicU32, mask: u32, done: &AtomicBool, limit: u64) {
    while word.load(Ordering::Acquire) & mask == 0
        && !done.load(Ordering::Acquire)
        && sys::now_ns() < limit
    {
        sys::sleep_until(sys::now_ns() + 50_000);
    }
}

/// The calling thread leaves the deadline class by its own change, running.
fn leave_deadline() {
    let _ = sys::sched_setattr(sys::gettid(), &heir::sched::other(0));
}

/// What one case recorded.
#[derive(Debug, Default)]
struct Seen {
    /// M finished its job before O unlocked.
    middle_before_unlock: bool,
    /// The hog's CPU time while O was boosted (ns), and that window (ns).
    hog_cpu_ns: u64,
    window_ns: u64,
    /// O's `/proc` samples while boosted: (prio, dl.runtime, dl.deadline).
    samples: Vec<(i32, Option<i64>, Option<u64>)>,
    /// O's policy as `sched_getattr` showed it while boosted.
    owner_policy_boosted: u32,
    /// W got the lock (after O's unlock).
    waiter_got_it: bool,
}

/// One case: the owner is `SCHED_DEADLINE` (10 ms every 200 ms) if
/// `owner_dl`, else `SCHED_FIFO` 10. Releases are absolute times from `t0`
/// (a polling thread could not see anything while the owner is boosted: it
/// would not run): O locks at t0, W blocks at t0 + 1 ms, the hog and the
/// sampler start at t0 + 2 ms, M is released at t0 + 3 ms.
fn case(cpu: u32, other_cpu: Option<u32>, owner_dl: bool) -> Seen {
    let t0 = sys::now_ns() + 20 * MS;
    let limit = t0 + 2_000_000_000;
    let word = Arc::new(AtomicU32::new(0));
    let unlocked_at = Arc::new(Mutex::new(None::<u64>));
    let done = Arc::new(AtomicBool::new(false));
    let (otid_tx, otid_rx) = std::sync::mpsc::channel();

    let owner = {
        let (word, unlocked_at, done) = (word.clone(), unlocked_at.clone(), done.clone());
        std::thread::spawn(move || {
            if owner_dl {
                become_deadline(cpu, 10_000, 200_000);
            } else {
                sys::set_affinity(0, &[cpu]).expect("pin");
                sys::sched_setattr(sys::gettid(), &heir::sched::fifo(10)).expect("FIFO 10");
            }
            otid_tx.send(sys::gettid()).expect("tid");
            sys::sleep_until(t0);
            assert!(pi_lock(&word, limit));
            busy_cpu(CS_NS, limit);
            *unlocked_at.lock().expect("lock") = Some(sys::now_ns());
            // Before the unlock: a FIFO owner de-boosted by it is below
            // the hog, which must see the end first.
            done.store(true, Ordering::Release);
            pi_unlock(&word);
            leave_deadline();
        })
    };
    let otid = otid_rx.recv().expect("owner tid");
    let waiter = {
        let word = word.clone();
        std::thread::spawn(move || {
            become_deadline(cpu, 2_000, 20_000);
            sys::sleep_until(t0 + MS);
            // After O holds the word.
            wait_word(&word, FUTEX_TID_MASK, &AtomicBool::new(false), limit);
            let got = pi_lock(&word, limit);
            if got {
                pi_unlock(&word);
            }
            leave_deadline();
            got
        })
    };
    let middle = {
        let unlocked_at = unlocked_at.clone();
        let word_m = word.clone();
        let done_m = done.clone();
        std::thread::spawn(move || {
            become_deadline(cpu, 5_000, 100_000);
            sys::sleep_until(t0 + 3 * MS);
            // Once W waits on O (O boosted).
            wait_word(&word_m, FUTEX_WAITERS, &done_m, limit);
            // 3 ms of its 5 ms: never throttled by its own overrun.
            busy_cpu(3 * MS, limit);
            let end = sys::now_ns();
            leave_deadline();
            // Before O unlocked (it had not, or did so later).
            unlocked_at.lock().expect("lock").is_none_or(|u| end < u)
        })
    };
    let hog = {
        let done = done.clone();
        let word_h = word.clone();
        std::thread::spawn(move || {
            sys::set_affinity(0, &[cpu]).expect("pin");
            sys::sched_setattr(sys::gettid(), &heir::sched::fifo(50)).expect("FIFO 50");
            sys::sleep_until(t0 + 2 * MS);
            wait_word(&word_h, FUTEX_WAITERS, &done, limit);
            let c0 = thread_cpu_ns();
            while !done.load(Ordering::Acquire) && sys::now_ns() < limit {
                std::hint::spin_loop();
            }
            let r = (thread_cpu_ns() - c0, sys::now_ns() - (t0 + 2 * MS));
            let _ = sys::sched_setattr(sys::gettid(), &heir::sched::other(0));
            r
        })
    };
    // The sampler reads O's /proc from another CPU while O is boosted.
    let sampler = other_cpu.map(|oc| {
        let done = done.clone();
        let word_s = word.clone();
        std::thread::spawn(move || {
            sys::set_affinity(0, &[oc]).expect("pin the sampler");
            let _ = sys::sched_setattr(sys::gettid(), &heir::sched::fifo(90));
            let mut v = Vec::new();
            let mut policy = u32::MAX;
            sys::sleep_until(t0 + 2 * MS);
            wait_word(&word_s, FUTEX_WAITERS, &done, limit);
            while !done.load(Ordering::Acquire) && sys::now_ns() < limit {
                let sample = deadline::proc_sched(otid);
                // O may have unlocked (and lost its boost) while /proc was
                // read: such a sample is not one of O boosted.
                if done.load(Ordering::Acquire) {
                    break;
                }
                if let Some(s) = sample {
                    v.push((s.prio, s.dl_runtime_ns, s.dl_deadline_ns));
                }
                if let Ok(a) = sys::sched_getattr(otid) {
                    policy = a.sched_policy;
                }
                sys::sleep_until(sys::now_ns() + 100_000);
            }
            let _ = sys::sched_setattr(sys::gettid(), &heir::sched::other(0));
            (v, policy)
        })
    });
    owner.join().expect("owner");
    let waiter_got_it = waiter.join().expect("waiter");
    let middle_before_unlock = middle.join().expect("middle");
    let (hog_cpu_ns, window_ns) = hog.join().expect("hog");
    let (samples, owner_policy_boosted) = sampler
        .map(|s| s.join().expect("sampler"))
        .unwrap_or_default();
    assert_eq!(word.load(Ordering::Acquire) & FUTEX_TID_MASK, 0);
    Seen {
        middle_before_unlock,
        hog_cpu_ns,
        window_ns,
        samples,
        owner_policy_boosted,
        waiter_got_it,
    }
}

/// The test's CPU made a root domain of its own, or `None` (printed why;
/// a failure under `CI=true`).
fn one_cpu_root_domain(test: &str, cpu: u32) -> Option<OneCpuRootDomain> {
    match OneCpuRootDomain::make(cpu, "heir-rt-tests-dl") {
        Ok(d) => Some(d),
        Err(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: no one-CPU root domain under CI=true: {why}"
            );
            eprintln!("{test}: SKIPPED: no one-CPU root domain: {why}");
            None
        }
    }
}

#[test]
fn deadline_inheritance_through_a_pi_futex_on_this_kernel() {
    let Some(rt) = rt_or_skip("deadline_pi", 30) else {
        return;
    };
    let Some(_rd) = one_cpu_root_domain("deadline_pi", rt.cpu) else {
        return;
    };
    let other_cpu = sys::allowed_cpus().into_iter().find(|&c| c != rt.cpu);

    // 1. A SCHED_FIFO owner boosted by a deadline waiter.
    let fifo = case(rt.cpu, other_cpu, false);
    assert!(fifo.waiter_got_it);
    // It runs in the deadline class (prio -1) while its policy stays FIFO,
    // and /proc shows no dl.* for it (they are shown by policy).
    if other_cpu.is_some() {
        assert!(!fifo.samples.is_empty());
        assert!(
            fifo.samples.iter().all(|s| s.0 == -1),
            "{} of {} samples not in the deadline class; the first: {:?}",
            fifo.samples.iter().filter(|s| s.0 != -1).count(),
            fifo.samples.len(),
            &fifo.samples[..fifo.samples.len().min(8)]
        );
        assert!(fifo.samples.iter().all(|s| s.1.is_none()));
        assert_eq!(fifo.owner_policy_boosted, sys::SCHED_FIFO);
    }
    // It is never throttled although its 20 ms section is ten times the
    // waiter's 2 ms runtime: the FIFO 50 hog gets (almost) nothing while it
    // is boosted …
    assert!(
        fifo.hog_cpu_ns * 4 < fifo.window_ns,
        "hog ran {} of {} ns",
        fifo.hog_cpu_ns,
        fifo.window_ns
    );
    // … and each replenishment gives it a fresh deadline now + 20 ms (the
    // waiter's relative deadline), always before the middle task's (100 ms
    // from its release): the middle task waits for the whole section.
    assert!(
        !fifo.middle_before_unlock,
        "the middle deadline task preempted a FIFO owner boosted by an earlier deadline"
    );

    // 2. A SCHED_DEADLINE owner (10 ms / 200 ms) boosted by an earlier
    // deadline waiter.
    let dl = case(rt.cpu, other_cpu, true);
    assert!(dl.waiter_got_it);
    // It keeps its own absolute deadline: the middle task (deadline 100 ms
    // after its release, before the owner's own ~200 ms) preempts it.
    assert!(
        dl.middle_before_unlock,
        "the middle deadline task did not preempt the boosted deadline owner"
    );
    // Never throttled either: the hog gets (almost) nothing.
    assert!(
        dl.hog_cpu_ns * 4 < dl.window_ns,
        "hog ran {} of {} ns",
        dl.hog_cpu_ns,
        dl.window_ns
    );
    if other_cpu.is_some() {
        // When its own runtime runs out its deadline moves by the waiter's
        // period (20 ms) at each replenishment, exactly.
        let deadlines: Vec<u64> = dl.samples.iter().filter_map(|s| s.2).collect();
        let mut steps: Vec<u64> = deadlines
            .windows(2)
            .filter(|w| w[1] != w[0])
            .map(|w| w[1].wrapping_sub(w[0]))
            .collect();
        steps.dedup();
        assert!(!steps.is_empty(), "no replenishment seen: {:?}", dl.samples);
        assert!(
            steps.iter().all(|s| s % (20 * MS) == 0),
            "deadline steps {steps:?} are not multiples of the waiter's period"
        );
        // Its runtime never goes far below zero (no throttling wait).
        assert!(
            dl.samples
                .iter()
                .filter_map(|s| s.1)
                .all(|r| r > -(2 * MS as i64)),
            "{:?}",
            dl.samples
        );
        eprintln!("deadline owner: deadline steps {steps:?} ns");
    }
    eprintln!(
        "FIFO owner: hog {} of {} ns, middle first: {}; DL owner: hog {} of {} ns, middle first: {}",
        fifo.hog_cpu_ns,
        fifo.window_ns,
        fifo.middle_before_unlock,
        dl.hog_cpu_ns,
        dl.window_ns,
        dl.middle_before_unlock
    );
}
