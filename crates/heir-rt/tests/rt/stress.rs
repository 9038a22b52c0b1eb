//! Stress: many threads doing random lock / wait / timed wait / signal /
//! broadcast / helper add-del / ceiling lock for a bounded time on one CPU.
//! Afterwards every thread is back at its base priority (kernel and engine),
//! nothing deadlocked (every thread finished under the watchdog), and the
//! engine's invariants hold.

use std::sync::{Arc, Barrier};

use heir::sys::now_ns;
use heir::{CeilingMutex, Error, PiCondvar, PiMutex, Urgency};

use crate::common::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const THREADS: usize = 6;

#[test]
fn random_operations_leave_everyone_at_base() {
    let Some(rt) = rt_or_skip("stress", 60) else {
        return;
    };
    let cpu = rt.cpu;
    let mutexes: Arc<Vec<PiMutex<u64>>> = Arc::new((0..3).map(|_| PiMutex::new(0)).collect());
    let conds: Arc<Vec<PiCondvar>> = Arc::new((0..2).map(|_| PiCondvar::new()).collect());
    let ceiling = Arc::new(CeilingMutex::new(Urgency::fixed(45), 0u64));
    let tids = Arc::new(std::sync::Mutex::new(Vec::<i32>::new()));
    let start = Arc::new(Barrier::new(THREADS));
    let done = Arc::new(Barrier::new(THREADS));
    let t_end = now_ns() + 200 * MS + 1500 * MS;
    let mut handles = Vec::new();
    for i in 0..THREADS {
        let (ms, cs, ce, ts, st, dn) = (
            mutexes.clone(),
            conds.clone(),
            ceiling.clone(),
            tids.clone(),
            start.clone(),
            done.clone(),
        );
        let prio = 10 + 5 * i as u8;
        handles.push(spawn_fifo(cpu, prio, move || {
            ts.lock().unwrap().push(heir::thread::current_tid());
            st.wait();
            let mut rng = Rng(0x1234_5678_9abc_def1 ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9));
            let mut ops = [0u64; 8];
            let mut refused = 0u64;
            while now_ns() < t_end {
                let limit = now_ns() + 3 * MS;
                match rng.below(8) {
                    0 | 1 => {
                        // Lock one or two mutexes in index order; work inside.
                        let a = rng.below(3) as usize;
                        let b = a + 1 + rng.below(2) as usize;
                        if let Ok(mut g) = ms[a].lock_until(limit) {
                            *g += 1;
                            if b < 3 {
                                match ms[b].lock_until(limit) {
                                    Ok(mut g2) => *g2 += 1,
                                    Err(Error::TimedOut) => {}
                                    Err(Error::Deadlock { .. }) => refused += 1,
                                    Err(e) => panic!("lock: {e}"),
                                }
                            }
                            busy_cpu(rng.below(200) * 1000, limit);
                        }
                        ops[0] += 1;
                    }
                    2 | 3 => {
                        // Timed wait on a condition, mutex 0 held.
                        let c = rng.below(2) as usize;
                        if let Ok(mut g) = ms[0].lock_until(limit) {
                            match cs[c].wait_until(&mut g, now_ns() + (1 + rng.below(3)) * MS) {
                                Ok(_) => {}
                                Err(Error::Deadlock { cycle }) => {
                                    // The wait gives mutex 0 up as it starts
                                    // waiting: a helper blocked on it is no
                                    // cycle (it was, falsely, before).
                                    let m0 = heir::Node::Object(ms[0].raw().id().into());
                                    assert!(!cycle.contains(&m0), "false deadlock {cycle:?}");
                                    refused += 1
                                }
                                Err(e) => panic!("wait: {e}"),
                            }
                        }
                        ops[2] += 1;
                    }
                    4 => {
                        let c = rng.below(2) as usize;
                        if rng.below(2) == 0 {
                            cs[c].signal().expect("signal");
                        } else {
                            cs[c].broadcast().expect("broadcast");
                        }
                        ops[4] += 1;
                    }
                    5 => {
                        // Add or remove a random helper.
                        let c = rng.below(2) as usize;
                        let all = ts.lock().unwrap().clone();
                        let who = all[rng.below(all.len() as u64) as usize];
                        let r = if rng.below(2) == 0 {
                            cs[c].add_helper(who)
                        } else {
                            cs[c].remove_helper(who)
                        };
                        match r {
                            Ok(()) => {}
                            Err(Error::Engine(_)) | Err(Error::Deadlock { .. }) => refused += 1,
                            Err(e) => panic!("helpers: {e}"),
                        }
                        ops[5] += 1;
                    }
                    6 => {
                        if let Ok(mut g) = ce.lock() {
                            assert_eq!(my_prio(), 45, "at the ceiling inside");
                            *g += 1;
                            busy_cpu(50_000, limit);
                        }
                        ops[6] += 1;
                    }
                    _ => {
                        heir::sys::sleep_until(now_ns() + rng.below(500) * 1000);
                        ops[7] += 1;
                    }
                }
            }
            // Nobody waits any more once everyone is here; drop our helper
            // roles so no later wait lends to us, then check our own state.
            dn.wait();
            let me = heir::thread::current_tid();
            for c in cs.iter() {
                let _ = c.remove_helper(me);
            }
            dn.wait();
            let info = heir::thread::info(me).expect("registered");
            assert_eq!(info.effective, Urgency::fixed(prio), "engine: back at base");
            assert_eq!(info.applied, Urgency::fixed(prio), "applied: back at base");
            assert_eq!(my_prio(), u32::from(prio), "kernel: back at base");
            dn.wait();
            (ops, refused)
        }));
    }
    let mut total = 0;
    for h in handles {
        let (ops, _refused) = h.join().expect("stress thread");
        total += ops.iter().sum::<u64>();
    }
    assert!(total > 100, "the threads did work: {total} ops");
    heir::thread::check_invariants().expect("invariants after the storm");
}
