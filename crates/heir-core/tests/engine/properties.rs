//! Property tests: long random operation sequences over every API call,
//! including calls that must fail. After every step:
//!
//! - a failed call left the engine equal to a clone taken before it;
//! - `check_invariants()` holds;
//! - the returned `Changes` are exactly the diff of `effective()` over all
//!   tasks before and after (each changed task once, with both values);
//! - every effective value equals a reference evaluation written here, on
//!   the public queries only (blocked_on, owner, protocol, helpers, base)
//!   plus the enqueue order this test tracks itself, and every wait queue is
//!   in the reference order;
//! - a refused cycle is a real cycle of the current graph closed by the
//!   refused edge;
//! - each call's own postcondition holds (owner after lock/unlock, woken
//!   tasks runnable, ...).

use std::collections::HashMap;

use heir_core::{
    Blocker, CondId, Effective, Engine, EngineError, LockResult, MutexId, Node, Protocol, ServerId,
    TaskId, Urgency,
};
use proptest::prelude::*;

/// A small palette with many equal values (ties exercise FIFO order and
/// donor tie-breaks) across all three classes.
const PALETTE: [Urgency; 10] = [
    Urgency::Other { nice: 0 },
    Urgency::Other { nice: -5 },
    Urgency::Fixed { prio: 5 },
    Urgency::Fixed { prio: 5 },
    Urgency::Fixed { prio: 10 },
    Urgency::Fixed { prio: 20 },
    Urgency::Fixed { prio: 20 },
    Urgency::Fixed { prio: 50 },
    Urgency::Fixed { prio: 90 },
    Urgency::Deadline {
        abs_ns: 1_000,
        server: ServerId(1),
    },
];

const INITIAL_TASKS: usize = 12;
const MAX_TASKS: usize = 16;

#[derive(Clone, Debug)]
enum Op {
    AddTask(u8),
    Remove(u8),
    SetBase(u8, u8),
    Lock(u8, u8),
    /// Raw unlock: mostly refused.
    Unlock(u8, u8),
    /// The task unlocks one of the mutexes it owns (if any).
    UnlockOwned(u8, u8),
    /// The owner of the mutex unlocks it (if it has one).
    UnlockOwner(u8),
    Acquire(u8, u8),
    Release(u8, u8),
    ReleaseOwner(u8),
    Wait(u8, u8),
    /// A helper of the condvar (by index) locks a mutex somebody owns (by
    /// index): the state the textbook condvar pattern starts from.
    HelperLock(u8, u8, u8),
    /// The task waits on the condvar, unlocking (hand-off) one of the
    /// mutexes it owns in the same step (`cond_wait_unlock`).
    WaitUnlock(u8, u8, u8),
    /// The same, the mutex released without hand-off (`cond_wait_release`).
    WaitRelease(u8, u8, u8),
    Signal(u8),
    Broadcast(u8),
    Cancel(u8),
    HelperAdd(u8, u8),
    HelperDel(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let i = || any::<u8>();
    prop_oneof![
        1 => i().prop_map(Op::AddTask),
        1 => i().prop_map(Op::Remove),
        6 => (i(), i()).prop_map(|(a, b)| Op::SetBase(a, b)),
        20 => (i(), i()).prop_map(|(a, b)| Op::Lock(a, b)),
        2 => (i(), i()).prop_map(|(a, b)| Op::Unlock(a, b)),
        10 => (i(), i()).prop_map(|(a, b)| Op::UnlockOwned(a, b)),
        6 => i().prop_map(Op::UnlockOwner),
        3 => (i(), i()).prop_map(|(a, b)| Op::Acquire(a, b)),
        1 => (i(), i()).prop_map(|(a, b)| Op::Release(a, b)),
        2 => i().prop_map(Op::ReleaseOwner),
        10 => (i(), i()).prop_map(|(a, b)| Op::Wait(a, b)),
        8 => (i(), i(), i()).prop_map(|(a, b, c)| Op::HelperLock(a, b, c)),
        8 => (i(), i(), i()).prop_map(|(a, b, c)| Op::WaitUnlock(a, b, c)),
        4 => (i(), i(), i()).prop_map(|(a, b, c)| Op::WaitRelease(a, b, c)),
        5 => i().prop_map(Op::Signal),
        2 => i().prop_map(Op::Broadcast),
        4 => i().prop_map(Op::Cancel),
        8 => (i(), i()).prop_map(|(a, b)| Op::HelperAdd(a, b)),
        4 => (i(), i()).prop_map(|(a, b)| Op::HelperDel(a, b)),
    ]
}

/// The `k`-th mutex `t` owns (modulo), or `fallback` if it owns none (the
/// call is then mostly refused).
fn owned_or(e: &Engine, t: TaskId, k: u8, fallback: MutexId) -> MutexId {
    match e.owned(t) {
        Ok(owned) if !owned.is_empty() => owned[k as usize % owned.len()],
        _ => fallback,
    }
}

/// The task and mutex of [`Op::HelperLock`]: the `i`-th helper of `c` and
/// the `k`-th mutex that has an owner (the fallbacks when there is none).
fn helper_lock_args(
    e: &Engine,
    mutexes: &[MutexId],
    c: CondId,
    i: u8,
    k: u8,
    task: TaskId,
    mutex: MutexId,
) -> (TaskId, MutexId) {
    let helpers = e.helpers(c).unwrap_or(&[]);
    let t = match helpers.len() {
        0 => task,
        n => helpers[i as usize % n],
    };
    let held: Vec<MutexId> = mutexes
        .iter()
        .copied()
        .filter(|&m| e.owner(m).is_ok_and(|o| o.is_some()))
        .collect();
    let m = match held.len() {
        0 => mutex,
        n => held[k as usize % n],
    };
    (t, m)
}

/// The condvar a wait-release op waits on: with an odd `c`, one that has a
/// helper blocked on `m` if there is one (the textbook pattern, which random
/// choices alone rarely produce), else the `c`-th.
fn wait_cond(e: &Engine, conds: &[CondId], c: u8, m: MutexId, fallback: CondId) -> CondId {
    if c % 2 == 1 {
        let blocked_helper = |&cv: &CondId| {
            e.helpers(cv).is_ok_and(|hs| {
                hs.iter()
                    .any(|&x| e.blocked_on(x).ok().flatten() == Some(Blocker::Mutex(m)))
            })
        };
        if let Some(cv) = conds.iter().copied().find(blocked_helper) {
            return cv;
        }
    }
    fallback
}

struct Harness {
    e: Engine,
    ntasks: usize,
    mutexes: Vec<MutexId>,
    conds: Vec<CondId>,
    /// Enqueue order of each blocked task, tracked by the test.
    seq: HashMap<TaskId, u64>,
    next_seq: u64,
    /// `Some`: lock, unlock, cond_wait and cond_signal go through their
    /// `*_into` variants, all writing into this one buffer (never emptied
    /// by the test between calls).
    into: Option<heir_core::Changes>,
}

/// What a successful call returned besides its changes.
#[derive(Debug)]
enum Value {
    Unit,
    Lock(LockResult),
    Task(Option<TaskId>),
    Tasks(Vec<TaskId>),
}

impl Harness {
    fn new() -> Harness {
        let mut e = Engine::new();
        for i in 0..INITIAL_TASKS {
            e.add_task(PALETTE[i % PALETTE.len()]);
        }
        let protocols = [
            Protocol::None,
            Protocol::None,
            Protocol::Inherit,
            Protocol::Inherit,
            Protocol::Inherit,
            Protocol::Inherit,
            Protocol::Ceiling(Urgency::fixed(20)),
            Protocol::Ceiling(Urgency::fixed(60)),
            Protocol::Ceiling(Urgency::other(-10)),
        ];
        let mutexes = protocols.iter().map(|p| e.add_mutex(*p)).collect();
        let conds = (0..4).map(|_| e.add_cond()).collect();
        Harness {
            e,
            ntasks: INITIAL_TASKS,
            mutexes,
            conds,
            seq: HashMap::new(),
            next_seq: 0,
            into: None,
        }
    }

    /// A harness whose engine is driven through the `*_into` calls, with a
    /// buffer that starts out holding stale entries.
    fn new_into() -> Harness {
        let stale = heir_core::Change {
            task: TaskId(0),
            old: Effective {
                urgency: Urgency::fixed(1),
                donor: TaskId(0),
            },
            new: Effective {
                urgency: Urgency::fixed(2),
                donor: TaskId(1),
            },
        };
        Harness {
            into: Some((0..7).map(|_| stale).collect()),
            ..Harness::new()
        }
    }

    /// A task id: mostly existing ids, sometimes one that never existed.
    fn task(&self, i: u8) -> TaskId {
        TaskId((i as usize % (self.ntasks + 1)) as u32)
    }
    fn mutex(&self, i: u8) -> MutexId {
        let n = self.mutexes.len();
        MutexId((i as usize % (n + 1)) as u32)
    }
    fn cond(&self, i: u8) -> CondId {
        let n = self.conds.len();
        CondId((i as usize % (n + 1)) as u32)
    }

    fn apply(&mut self, op: &Op) -> Result<(Value, heir_core::Changes), EngineError> {
        use Value::*;
        let (nt, nm, nc) = (self.ntasks, self.mutexes.len(), self.conds.len());
        let task = |i: u8| TaskId((i as usize % (nt + 1)) as u32);
        let mutex = |i: u8| MutexId((i as usize % (nm + 1)) as u32);
        let cond = |i: u8| CondId((i as usize % (nc + 1)) as u32);
        let e = &mut self.e;
        if let Some(buf) = self.into.as_mut() {
            // The `*_into` variants: the value comes back, the changes are
            // in the buffer (cleared first, empty on error).
            let into = match *op {
                Op::Lock(t, m) => Some(e.lock_into(task(t), mutex(m), buf).map(Lock)),
                Op::Unlock(t, m) => Some(e.unlock_into(task(t), mutex(m), buf).map(Task)),
                Op::Wait(t, c) => Some(e.cond_wait_into(task(t), cond(c), buf).map(|()| Unit)),
                Op::WaitUnlock(t, c, k) => {
                    let t = task(t);
                    let m = owned_or(e, t, k, mutex(k));
                    let c = wait_cond(e, &self.conds, c, m, cond(c));
                    Some(e.cond_wait_unlock_into(t, c, m, buf).map(Task))
                }
                Op::Signal(c) => Some(e.cond_signal_into(cond(c), buf).map(Task)),
                _ => None,
            };
            match into {
                Some(Ok(v)) => return Ok((v, buf.clone())),
                Some(Err(err)) => {
                    assert!(buf.is_empty(), "changes left after an error: {buf:?}");
                    return Err(err);
                }
                None => {}
            }
        }
        Ok(match *op {
            Op::AddTask(u) => {
                if self.ntasks < MAX_TASKS {
                    e.add_task(PALETTE[u as usize % PALETTE.len()]);
                    self.ntasks += 1;
                }
                (Unit, Default::default())
            }
            Op::Remove(t) => (Unit, e.remove_task(task(t))?),
            Op::SetBase(t, u) => (
                Unit,
                e.set_base(task(t), PALETTE[u as usize % PALETTE.len()])?,
            ),
            Op::Lock(t, m) => {
                let o = e.lock(task(t), mutex(m))?;
                (Lock(o.value), o.changes)
            }
            Op::Unlock(t, m) => {
                let o = e.unlock(task(t), mutex(m))?;
                (Task(o.value), o.changes)
            }
            Op::UnlockOwned(t, k) => {
                let t = task(t);
                let m = owned_or(e, t, k, mutex(k));
                let o = e.unlock(t, m)?;
                (Task(o.value), o.changes)
            }
            Op::UnlockOwner(m) => {
                let m = mutex(m);
                let t = e.owner(m).ok().flatten().unwrap_or(TaskId(0));
                let o = e.unlock(t, m)?;
                (Task(o.value), o.changes)
            }
            Op::HelperLock(c, i, k) => {
                let (t, m) = helper_lock_args(e, &self.mutexes, cond(c), i, k, task(i), mutex(k));
                let o = e.lock(t, m)?;
                (Lock(o.value), o.changes)
            }
            Op::Acquire(t, m) => (Unit, e.acquire(task(t), mutex(m))?),
            Op::Release(t, m) => (Unit, e.release(task(t), mutex(m))?),
            Op::ReleaseOwner(m) => {
                let m = mutex(m);
                let t = e.owner(m).ok().flatten().unwrap_or(TaskId(0));
                (Unit, e.release(t, m)?)
            }
            Op::Wait(t, c) => (Unit, e.cond_wait(task(t), cond(c))?),
            Op::WaitUnlock(t, c, k) => {
                let t = task(t);
                let m = owned_or(e, t, k, mutex(k));
                let c = wait_cond(e, &self.conds, c, m, cond(c));
                let o = e.cond_wait_unlock(t, c, m)?;
                (Task(o.value), o.changes)
            }
            Op::WaitRelease(t, c, k) => {
                let t = task(t);
                let m = owned_or(e, t, k, mutex(k));
                let c = wait_cond(e, &self.conds, c, m, cond(c));
                (Unit, e.cond_wait_release(t, c, m)?)
            }
            Op::Signal(c) => {
                let o = e.cond_signal(cond(c))?;
                (Task(o.value), o.changes)
            }
            Op::Broadcast(c) => {
                let o = e.cond_broadcast(cond(c))?;
                (Tasks(o.value), o.changes)
            }
            Op::Cancel(t) => (Unit, e.cancel_wait(task(t))?),
            Op::HelperAdd(c, t) => (Unit, e.helper_add(cond(c), task(t))?),
            Op::HelperDel(c, t) => (Unit, e.helper_del(cond(c), task(t))?),
        })
    }

    fn live(&self) -> Vec<TaskId> {
        self.e.tasks().collect()
    }

    fn snapshot(&self) -> HashMap<TaskId, Effective> {
        self.live()
            .into_iter()
            .map(|t| (t, self.e.effective(t).unwrap()))
            .collect()
    }

    /// The reference evaluation (public queries only).
    fn reference(&self) -> HashMap<TaskId, Effective> {
        let live = self.live();
        let mut memo: HashMap<TaskId, Effective> = HashMap::new();
        for &t in &live {
            self.ref_eff(t, &live, &mut memo);
        }
        memo
    }

    fn waiters_of(&self, live: &[TaskId], b: Blocker) -> Vec<TaskId> {
        live.iter()
            .copied()
            .filter(|&w| self.e.blocked_on(w).unwrap() == Some(b))
            .collect()
    }

    fn ref_eff(
        &self,
        t: TaskId,
        live: &[TaskId],
        memo: &mut HashMap<TaskId, Effective>,
    ) -> Effective {
        if let Some(v) = memo.get(&t) {
            return *v;
        }
        let e = &self.e;
        let mut own = e.base(t).unwrap();
        let mut donating = Vec::new();
        for &m in &self.mutexes {
            if e.owner(m).unwrap() == Some(t) {
                match e.protocol(m).unwrap() {
                    Protocol::Ceiling(c) => own = own.max(c),
                    Protocol::Inherit => donating.push(Blocker::Mutex(m)),
                    Protocol::None => {}
                }
            }
        }
        for &c in &self.conds {
            if e.helpers(c).unwrap().contains(&t) {
                donating.push(Blocker::Cond(c));
            }
        }
        let mut best = Effective {
            urgency: own,
            donor: t,
        };
        let mut best_seq: Option<u64> = None;
        for b in donating {
            let mut top: Option<(Effective, u64)> = None;
            for w in self.waiters_of(live, b) {
                let we = self.ref_eff(w, live, memo);
                let s = self.seq[&w];
                let wins = match top {
                    None => true,
                    Some((te, ts)) => {
                        we.urgency > te.urgency || (we.urgency == te.urgency && s < ts)
                    }
                };
                if wins {
                    top = Some((we, s));
                }
            }
            if let Some((te, s)) = top {
                if te.urgency > best.urgency
                    || (te.urgency == best.urgency && best_seq.is_some_and(|bs| s < bs))
                {
                    best = te;
                    best_seq = Some(s);
                }
            }
        }
        memo.insert(t, best);
        best
    }

    /// Is `a → b` an edge of the current wait-for graph?
    fn edge(&self, a: Node, b: Node) -> bool {
        let e = &self.e;
        match (a, b) {
            (Node::Task(t), Node::Mutex(m)) => {
                e.blocked_on(t).ok().flatten() == Some(Blocker::Mutex(m))
            }
            (Node::Task(t), Node::Cond(c)) => {
                e.blocked_on(t).ok().flatten() == Some(Blocker::Cond(c))
            }
            (Node::Mutex(m), Node::Task(t)) => e.owner(m).ok().flatten() == Some(t),
            (Node::Cond(c), Node::Task(t)) => e.helpers(c).is_ok_and(|h| h.contains(&t)),
            _ => false,
        }
    }

    /// The condvar and mutex a wait-release op uses (as the op picks them).
    fn wait_args(&self, op: &Op) -> Option<(CondId, MutexId)> {
        match *op {
            Op::WaitUnlock(t, c, k) | Op::WaitRelease(t, c, k) => {
                let m = owned_or(&self.e, self.task(t), k, self.mutex(k));
                Some((wait_cond(&self.e, &self.conds, c, m, self.cond(c)), m))
            }
            _ => None,
        }
    }

    fn helper_lock_args(&self, c: u8, i: u8, k: u8) -> (TaskId, MutexId) {
        helper_lock_args(
            &self.e,
            &self.mutexes,
            self.cond(c),
            i,
            k,
            self.task(i),
            self.mutex(k),
        )
    }

    /// The edge the refused op tried to add.
    fn proposed(&self, op: &Op) -> Option<(Node, Node)> {
        match *op {
            Op::Lock(t, m) => Some((Node::Task(self.task(t)), Node::Mutex(self.mutex(m)))),
            Op::HelperLock(c, i, k) => {
                let (t, m) = self.helper_lock_args(c, i, k);
                Some((Node::Task(t), Node::Mutex(m)))
            }
            Op::Wait(t, c) => Some((Node::Task(self.task(t)), Node::Cond(self.cond(c)))),
            Op::WaitUnlock(t, ..) | Op::WaitRelease(t, ..) => {
                let (c, _) = self.wait_args(op)?;
                Some((Node::Task(self.task(t)), Node::Cond(c)))
            }
            Op::HelperAdd(c, t) => Some((Node::Cond(self.cond(c)), Node::Task(self.task(t)))),
            Op::Acquire(t, m) => Some((Node::Mutex(self.mutex(m)), Node::Task(self.task(t)))),
            _ => None,
        }
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new();
    for (step, op) in ops.iter().enumerate() {
        let before_engine = h.e.clone();
        let before = h.snapshot();
        let wait_args = h.wait_args(op);
        let released = wait_args.map(|(_, m)| m);
        let proposed = h.proposed(op);
        let helper_lock = match *op {
            Op::HelperLock(c, i, k) => Some(h.helper_lock_args(c, i, k)),
            _ => None,
        };
        let res = h.apply(op);
        let (value, changes) = match res {
            Err(err) => {
                prop_assert_eq!(
                    &h.e,
                    &before_engine,
                    "step {} {:?}: {} changed state",
                    step,
                    op,
                    err
                );
                if let EngineError::Cycle { cycle } = &err {
                    prop_assert!(cycle.len() >= 3 && cycle.first() == cycle.last());
                    prop_assert!(proposed.is_some(), "cycle from {:?}", op);
                    let mut new_edges = 0;
                    for pair in cycle.windows(2) {
                        if Some((pair[0], pair[1])) == proposed {
                            new_edges += 1;
                        } else {
                            prop_assert!(
                                h.edge(pair[0], pair[1]),
                                "step {}: {:?} not an edge of {:?}",
                                step,
                                pair,
                                cycle
                            );
                        }
                    }
                    prop_assert_eq!(new_edges, 1, "cycle {:?} for {:?}", cycle, op);
                    // A wait that gives its mutex up is checked on the graph
                    // after the release: no cycle goes through that mutex.
                    if let Some(m) = released {
                        prop_assert!(
                            !cycle.contains(&Node::Mutex(m)),
                            "step {}: {:?} refused with {:?} through the released {:?}",
                            step,
                            op,
                            cycle,
                            m
                        );
                    }
                }
                let too_long = matches!(err, EngineError::ChainTooLong { .. });
                prop_assert!(!too_long, "chain bound hit with 16 tasks");
                continue;
            }
            Ok(r) => r,
        };
        if let Err(inv) = h.e.check_invariants() {
            return Err(TestCaseError::fail(format!("step {step} {op:?}: {inv}")));
        }

        // Track enqueue order: only the caller of lock/cond_wait can block.
        if let (Some((t, _)), Value::Lock(LockResult::Blocked)) = (helper_lock, &value) {
            h.seq.insert(t, h.next_seq);
            h.next_seq += 1;
        }
        match (op, &value) {
            (Op::Lock(t, _), Value::Lock(LockResult::Blocked))
            | (Op::Wait(t, _) | Op::WaitUnlock(t, ..) | Op::WaitRelease(t, ..), _) => {
                let t = h.task(*t);
                h.seq.insert(t, h.next_seq);
                h.next_seq += 1;
            }
            _ => {}
        }

        // Changes == diff of effective() before/after.
        let after = h.snapshot();
        let mut seen = Vec::new();
        for c in &changes {
            prop_assert!(
                !seen.contains(&c.task),
                "step {step} {op:?}: {:?} twice",
                c.task
            );
            seen.push(c.task);
            prop_assert_ne!(c.old, c.new);
            prop_assert_eq!(
                Some(&c.old),
                before.get(&c.task),
                "step {} {:?}: old of {:?}",
                step,
                op,
                c.task
            );
            prop_assert_eq!(
                Some(&c.new),
                after.get(&c.task),
                "step {} {:?}: new of {:?}",
                step,
                op,
                c.task
            );
        }
        for (t, a) in &after {
            if let Some(b) = before.get(t) {
                if a != b {
                    prop_assert!(
                        seen.contains(t),
                        "step {} {:?}: {:?} changed {:?} -> {:?} unreported",
                        step,
                        op,
                        t,
                        b,
                        a
                    );
                }
            }
        }

        // Reference values and wait-queue order.
        let reference = h.reference();
        for (t, a) in &after {
            prop_assert_eq!(
                Some(a),
                reference.get(t),
                "step {} {:?}: reference for {:?}",
                step,
                op,
                t
            );
        }
        let live = h.live();
        let objs: Vec<Blocker> = h
            .mutexes
            .iter()
            .map(|m| Blocker::Mutex(*m))
            .chain(h.conds.iter().map(|c| Blocker::Cond(*c)))
            .collect();
        for b in objs {
            let mut expect = h.waiters_of(&live, b);
            expect.sort_by(|x, y| {
                reference[y]
                    .urgency
                    .cmp(&reference[x].urgency)
                    .then(h.seq[x].cmp(&h.seq[y]))
            });
            let got: Vec<TaskId> = h.e.waiters(b).unwrap().collect();
            prop_assert_eq!(got, expect, "step {} {:?}: order of {:?}", step, op, b);
        }

        // The call's own postcondition.
        let e = &h.e;
        match (op, &value) {
            (Op::Lock(t, m), Value::Lock(r)) => {
                let (t, m) = (h.task(*t), h.mutex(*m));
                match r {
                    LockResult::Acquired => prop_assert_eq!(e.owner(m).unwrap(), Some(t)),
                    LockResult::Blocked => {
                        prop_assert_eq!(e.blocked_on(t).unwrap(), Some(Blocker::Mutex(m)))
                    }
                }
            }
            (Op::Unlock(_, m) | Op::UnlockOwner(m), Value::Task(next)) => {
                let m = h.mutex(*m);
                prop_assert_eq!(e.owner(m).unwrap(), *next);
                if let Some(n) = next {
                    prop_assert_eq!(e.blocked_on(*n).unwrap(), None);
                }
            }
            (Op::UnlockOwned(..), Value::Task(Some(n))) => {
                prop_assert_eq!(e.blocked_on(*n).unwrap(), None);
                prop_assert!(!e.owned(*n).unwrap().is_empty());
            }
            (Op::Acquire(t, m), _) => {
                let (t, m) = (h.task(*t), h.mutex(*m));
                prop_assert_eq!(e.owner(m).unwrap(), Some(t));
                prop_assert_ne!(e.blocked_on(t).unwrap(), Some(Blocker::Mutex(m)));
            }
            (Op::Release(_, m) | Op::ReleaseOwner(m), _) => {
                prop_assert_eq!(e.owner(h.mutex(*m)).unwrap(), None);
            }
            (Op::Wait(t, c), _) => {
                prop_assert_eq!(
                    e.blocked_on(h.task(*t)).unwrap(),
                    Some(Blocker::Cond(h.cond(*c)))
                );
            }
            (Op::WaitUnlock(t, ..) | Op::WaitRelease(t, ..), _) => {
                let t = h.task(*t);
                let (c, m) = wait_args.unwrap_or((CondId(u32::MAX), MutexId(u32::MAX)));
                prop_assert_eq!(e.blocked_on(t).unwrap(), Some(Blocker::Cond(c)));
                prop_assert!(!e.owned(t).unwrap().contains(&m));
                match value {
                    Value::Task(next) => {
                        prop_assert_eq!(e.owner(m).unwrap(), next);
                        if let Some(n) = next {
                            prop_assert_eq!(e.blocked_on(n).unwrap(), None);
                        }
                    }
                    _ => prop_assert_eq!(e.owner(m).unwrap(), None),
                }
            }
            (Op::Signal(_), Value::Task(Some(w))) => {
                prop_assert_eq!(e.blocked_on(*w).unwrap(), None);
            }
            (Op::Broadcast(c), Value::Tasks(ws)) => {
                prop_assert_eq!(e.waiters(Blocker::Cond(h.cond(*c))).unwrap().len(), 0);
                for w in ws {
                    prop_assert_eq!(e.blocked_on(*w).unwrap(), None);
                }
            }
            (Op::Cancel(t), _) => prop_assert_eq!(e.blocked_on(h.task(*t)).unwrap(), None),
            (Op::HelperAdd(c, t), _) => {
                prop_assert!(e.helpers(h.cond(*c)).unwrap().contains(&h.task(*t)))
            }
            (Op::HelperDel(c, t), _) => {
                prop_assert!(!e.helpers(h.cond(*c)).unwrap().contains(&h.task(*t)))
            }
            (Op::Remove(t), _) => {
                let t = h.task(*t);
                prop_assert_eq!(e.effective(t), Err(EngineError::UnknownTask(t)));
                prop_assert!(changes.is_empty());
            }
            _ => {}
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    /// 256 sequences of 500 random calls each.
    #[test]
    fn random_operation_sequences(ops in prop::collection::vec(op(), 500)) {
        run(&ops)?;
    }

    /// The `*_into` calls (one reused buffer) return what the by-value
    /// calls return, leave the same changes and the same engine state.
    #[test]
    fn into_variants_match_by_value_calls(ops in prop::collection::vec(op(), 300)) {
        let mut by_value = Harness::new();
        let mut into = Harness::new_into();
        for op in &ops {
            let a = by_value.apply(op);
            let b = into.apply(op);
            match (&a, &b) {
                (Ok((va, ca)), Ok((vb, cb))) => {
                    prop_assert_eq!(format!("{va:?}"), format!("{vb:?}"), "{:?}", op);
                    prop_assert_eq!(ca, cb, "{:?}", op);
                }
                (Err(ea), Err(eb)) => prop_assert_eq!(ea, eb, "{:?}", op),
                _ => prop_assert!(false, "{:?}: {:?} vs {:?}", op, a, b),
            }
            prop_assert_eq!(&by_value.e, &into.e, "{:?}", op);
            into.e.check_invariants().map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }
}

/// A deterministic long run (the same every time), with statistics that
/// show the sequences do reach the interesting states: deep chains, boosts
/// through condvars, cycles refused.
#[test]
fn long_deterministic_sequence_reaches_deep_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let ops = prop::collection::vec(op(), 20_000)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    run(&ops).unwrap();

    // Replay to gather statistics about what the run exercised.
    let mut h = Harness::new();
    let (mut cycles, mut boosted_changes, mut max_depth) = (0, 0, 0);
    // Waits that released a mutex a helper of their condvar was blocked on
    // (the textbook pattern the two-step wait refused as a cycle).
    let mut textbook = 0;
    for op in &ops {
        let pattern = match h.wait_args(op) {
            Some((c, m)) => h.e.helpers(c).is_ok_and(|hs| {
                hs.iter()
                    .any(|&x| h.e.blocked_on(x).ok().flatten() == Some(Blocker::Mutex(m)))
            }),
            _ => false,
        };
        let r = h.apply(op);
        if pattern && r.is_ok() {
            textbook += 1;
        }
        match r {
            Err(EngineError::Cycle { .. }) => cycles += 1,
            Ok((_, ch)) => {
                boosted_changes += ch.iter().filter(|c| c.new.donor != c.task).count();
                for t in h.live() {
                    let mut depth = 0;
                    let mut cur = t;
                    while let Some(b) = h.e.blocked_on(cur).unwrap() {
                        depth += 1;
                        let next = match b {
                            Blocker::Mutex(m) => h.e.owner(m).unwrap(),
                            Blocker::Cond(c) => h.e.helpers(c).unwrap().first().copied(),
                        };
                        match next {
                            Some(n) => cur = n,
                            None => break,
                        }
                    }
                    max_depth = max_depth.max(depth);
                }
            }
            Err(_) => {}
        }
    }
    assert!(cycles >= 50, "only {cycles} cycles refused");
    assert!(boosted_changes > 100, "only {boosted_changes} boosts");
    assert!(max_depth >= 4, "deepest chain {max_depth}");
    assert!(textbook >= 20, "only {textbook} textbook-pattern waits");
    eprintln!(
        "cycles {cycles}, boosts {boosted_changes}, depth {max_depth}, textbook waits {textbook}"
    );
}
