//! Lifetimes: a long-running program that creates and destroys engine
//! objects does not grow. One thread makes 10^6 objects one after another —
//! PI mutexes, ceiling mutexes, condition variables (with a helper), gangs
//! and RPC endpoints (a PI mutex and a condvar each), each used once
//! (locked, signalled, run) and dropped — and the engine's arenas stay at
//! their size after a warm-up (every freed slot reused), the process's
//! resident memory within a margin.

use heir::gang::{ControlWord, Gang};
use heir::rpc::Endpoint;
use heir::{CeilingMutex, PiCondvar, PiMutex, Urgency};

/// Resident pages of this process (`/proc/self/statm`, second field).
fn resident_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * 4
}

/// One round: one object of each kind, used once and dropped.
fn round(tid: i32, word: &ControlWord) {
    let m = PiMutex::new(0u64);
    *m.lock().expect("lock") += 1;
    drop(m);
    let c = CeilingMutex::new(Urgency::fixed(10), 0u64);
    *c.lock().expect("ceiling lock") += 1;
    drop(c);
    let cv = PiCondvar::new();
    cv.add_helper(tid).expect("helper");
    assert!(!cv.signal().expect("signal"));
    drop(cv);
    let g = Gang::new().expect("gang");
    g.add_member(tid, word).expect("add_member");
    g.remove_member(tid).expect("remove_member");
    drop(g);
    let ep: Endpoint<u32, u32> = Endpoint::new(true);
    drop(ep);
}

#[test]
fn a_million_objects_created_and_destroyed_keep_memory_flat() {
    // 5 kinds per round, 7 engine objects (an endpoint is a mutex and a
    // condvar): 200,000 rounds are 10^6 objects of the API, 1.4·10^6 of
    // the engine.
    // Not beside this binary's real-time tests: see `serial`.
    let _serial = crate::common::serial();
    const ROUNDS: usize = 200_000;
    const WARM_UP: usize = 1_000;
    let tid = heir::thread::current_tid();
    let word = ControlWord::new(1);
    for _ in 0..WARM_UP {
        round(tid, &word);
    }
    // The engine is the process's: the other tests of this binary, running
    // beside this one, make and free objects and threads too. Their share
    // of the arenas is bounded (a few dozen at a time); 1.4·10^6 objects
    // never freed would be 1.4·10^6 slots.
    const OTHERS: usize = 256;
    let slots = heir::thread::engine_slots();
    let grew = |now: (usize, usize)| now.0 > slots.0 + OTHERS || now.1 > slots.1 + OTHERS;
    let rss = resident_kib();
    for i in 0..ROUNDS {
        round(tid, &word);
        if i % 50_000 == 0 {
            let now = heir::thread::engine_slots();
            assert!(!grew(now), "round {i}: engine slots {slots:?} -> {now:?}");
        }
    }
    let after = heir::thread::engine_slots();
    let rss_after = resident_kib();
    eprintln!(
        "lifetimes: {ROUNDS} rounds; engine slots (tasks, objects) {slots:?} -> {after:?}; RSS {rss} -> {rss_after} KiB"
    );
    assert!(
        !grew(after),
        "the engine's arenas grew: {slots:?} -> {after:?}"
    );
    // 1.4·10^6 engine objects never freed would be ~250 MB of arena.
    assert!(
        rss_after <= rss + 4096,
        "resident memory grew from {rss} to {rss_after} KiB"
    );
    heir::thread::check_invariants().expect("invariants");
}
