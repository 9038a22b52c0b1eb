//! Long IPC call chains (the path lengths of the NOVA paper's Fig. 9, past 512): one
//! [`Spec::ENDPOINT`] request per call, each server blocked in its own
//! call on the next,
//!
//! ```text
//! C* ─▶ r0 ─▶ S0 ─▶ r1 ─▶ S1 ─▶ … ─▶ r(n-1) ─▶ S(n-1)
//! ```
//!
//! under random calls (at any depth: helping), aborts, replies, servers
//! dropping and taking requests mid-chain, nested calls cancelled and made
//! again, and base changes across all three classes. After every step: the
//! invariants hold (a from-scratch evaluation sharing no code with the
//! chain walk), the returned changes are exactly the diff of `effective()`
//! over all tasks (each changed task once, in the order it was reached),
//! and a refused call left the engine unchanged.

use std::collections::HashMap;

use heir_core::{Changes, Engine, EngineError, ObjId, Spec, TaskId, Urgency};
use proptest::prelude::*;

const PALETTE: [Urgency; 8] = [
    Urgency::Other { nice: 0 },
    Urgency::Fixed { prio: 5 },
    Urgency::Fixed { prio: 10 },
    Urgency::Fixed { prio: 10 },
    Urgency::Fixed { prio: 50 },
    Urgency::Fixed { prio: 90 },
    Urgency::Deadline { abs_ns: 2_000 },
    Urgency::Deadline { abs_ns: 1_000 },
];

const CALLERS: usize = 6;

#[derive(Clone, Debug)]
enum Op {
    /// Caller `c` calls on request `i` (mod the length).
    Call(u8, u16),
    /// Caller `c`'s call is aborted (timeout).
    Abort(u8),
    /// Request `i` is answered: its top waiter woken.
    Reply(u16),
    /// Server `i` drops its request (or takes it again).
    Toggle(u16),
    /// Server `i`'s nested call is cancelled (or made again).
    Nested(u16),
    /// A base change: a caller (`who < CALLERS`) or a server.
    SetBase(u16, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), any::<u16>()).prop_map(|(c, i)| Op::Call(c, i)),
        4 => any::<u8>().prop_map(Op::Abort),
        2 => any::<u16>().prop_map(Op::Reply),
        2 => any::<u16>().prop_map(Op::Toggle),
        2 => any::<u16>().prop_map(Op::Nested),
        3 => (any::<u16>(), any::<u8>()).prop_map(|(w, p)| Op::SetBase(w, p)),
    ]
}

struct World {
    e: Engine,
    callers: Vec<TaskId>,
    servers: Vec<TaskId>,
    requests: Vec<ObjId>,
}

impl World {
    fn new(len: usize, bases: &[u8]) -> World {
        let mut e = Engine::new();
        let base = |i: usize| PALETTE[bases[i % bases.len()] as usize % PALETTE.len()];
        let callers: Vec<TaskId> = (0..CALLERS).map(|i| e.add_task(base(i))).collect();
        let servers: Vec<TaskId> = (0..len).map(|i| e.add_task(base(i + CALLERS))).collect();
        let requests: Vec<ObjId> = (0..len).map(|_| e.add_object(Spec::ENDPOINT)).collect();
        for i in 0..len {
            e.add_target(requests[i], servers[i]).unwrap();
        }
        for i in (0..len - 1).rev() {
            e.block(servers[i], requests[i + 1]).unwrap();
        }
        World {
            e,
            callers,
            servers,
            requests,
        }
    }

    fn apply(&mut self, op: &Op) -> Result<Changes, EngineError> {
        let n = self.servers.len();
        let e = &mut self.e;
        match *op {
            Op::Call(c, i) => {
                let c = self.callers[c as usize % CALLERS];
                e.block(c, self.requests[i as usize % n])
            }
            Op::Abort(c) => e.cancel_wait(self.callers[c as usize % CALLERS]),
            Op::Reply(i) => e.wake_top(self.requests[i as usize % n]).map(|o| o.changes),
            Op::Toggle(i) => {
                let (r, s) = (self.requests[i as usize % n], self.servers[i as usize % n]);
                if e.targets(r)?.contains(&s) {
                    e.remove_target(r, s)
                } else {
                    e.add_target(r, s)
                }
            }
            Op::Nested(i) => {
                let i = i as usize % n;
                let s = self.servers[i];
                if e.blocked_on(s)?.is_some() {
                    e.cancel_wait(s)
                } else {
                    // Its next call; the root calls on the first request
                    // (refused when that closes a cycle).
                    e.block(s, self.requests[(i + 1) % n])
                }
            }
            Op::SetBase(w, p) => {
                let w = w as usize % (CALLERS + n);
                let t = match w.checked_sub(CALLERS) {
                    None => self.callers[w],
                    Some(i) => self.servers[i],
                };
                e.set_base(t, PALETTE[p as usize % PALETTE.len()])
            }
        }
    }

    fn snapshot(&self) -> HashMap<TaskId, heir_core::Effective> {
        self.e
            .tasks()
            .map(|t| (t, self.e.effective(t).unwrap()))
            .collect()
    }
}

fn run(len: usize, bases: &[u8], ops: &[Op]) -> Result<(), TestCaseError> {
    let mut w = World::new(len, bases);
    for op in ops {
        let before = w.snapshot();
        let clone = w.e.clone();
        match w.apply(op) {
            Ok(changes) => {
                let after = w.snapshot();
                let mut seen = std::collections::HashSet::new();
                for c in &changes {
                    prop_assert!(seen.insert(c.task), "{op:?}: {:?} twice", c.task);
                    prop_assert_eq!(c.old, before[&c.task], "{:?}", op);
                    prop_assert_eq!(c.new, after[&c.task], "{:?}", op);
                    prop_assert_ne!(c.old, c.new, "{:?}", op);
                }
                let changed = before.iter().filter(|(t, v)| after[t] != **v).count();
                prop_assert_eq!(changed, changes.len(), "{:?}", op);
            }
            Err(err) => prop_assert_eq!(&w.e, &clone, "{:?} refused ({}) but changed", op, err),
        }
        w.e.check_invariants()
            .map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        ..ProptestConfig::default()
    })]

    /// Chains of 1 to 600 servers, 80 random steps each.
    #[test]
    fn long_call_chains(
        len in 1usize..600,
        bases in prop::collection::vec(any::<u8>(), 1..16),
        ops in prop::collection::vec(op(), 80),
    ) {
        run(len, &bases, &ops)?;
    }
}

/// The benchmark's shape, exactly: a chain of 512 servers, the most
/// urgent caller linked at the head, then aborted while a second caller
/// waits: every server changes each time, to the leaf's urgency and back
/// to the second caller's.
#[test]
fn fig9_shape_at_512() {
    let mut w = World::new(512, &[1]);
    let (leaf, second) = (w.callers[0], w.callers[1]);
    w.e.set_base(leaf, Urgency::fixed(90)).unwrap();
    w.e.set_base(second, Urgency::fixed(50)).unwrap();
    w.e.block(second, w.requests[0]).unwrap();
    let ch = w.e.block(leaf, w.requests[0]).unwrap();
    assert_eq!(ch.len(), 512);
    assert!(ch.iter().map(|c| c.task).eq(w.servers.iter().copied()));
    assert!(ch
        .iter()
        .all(|c| c.new.urgency == Urgency::fixed(90) && c.new.donor() == leaf));
    let ch = w.e.cancel_wait(leaf).unwrap();
    assert_eq!(ch.len(), 512);
    assert!(ch
        .iter()
        .all(|c| c.new.urgency == Urgency::fixed(50) && c.new.donor() == second));
    w.e.check_invariants().unwrap();
}
