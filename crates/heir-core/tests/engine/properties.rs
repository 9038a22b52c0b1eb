//! Property tests: long random operation sequences over every API call,
//! including calls that must fail. After every step:
//!
//! - a failed call left the engine equal to a clone taken before it;
//! - `check_invariants()` holds;
//! - the returned `Changes` are exactly the diff of `effective()` over all
//!   tasks before and after (each changed task once, with both values);
//! - every effective value equals a reference evaluation written here, on
//!   the public queries only (blocked_on, targets, spec, base) plus the
//!   enqueue and join order this test tracks itself, and every wait queue is
//!   in the reference order;
//! - a refused cycle is a real cycle of the current graph closed by the
//!   refused edge (for a wait that gives its mutex up: of the graph after
//!   the release);
//! - each call's own postcondition holds (owner after lock/unlock, woken
//!   tasks runnable, ...).
//!
//! The reference evaluation reads each object's [`Spec`] and nothing else
//! about its kind: the world has mutexes, condvars, an endpoint, a gang and
//! — in one test — a kind made up here (a latch), all driven by the same
//! oracle.

use std::collections::HashMap;

use heir_core::{
    CondId, Effective, Engine, EngineError, LockResult, MutexId, Node, ObjId, ObjKind, Protocol,
    Source, Spec, TaskId, Urgency,
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
    Urgency::Deadline { abs_ns: 1_000 },
];

const INITIAL_TASKS: usize = 12;
const MAX_TASKS: usize = 16;

/// A kind made up by this test: a latch lends its waiters' urgency to the
/// one task that will open it. One description, no engine code.
const LATCH: Spec = Spec {
    kind: ObjKind::Other("latch"),
    donates: true,
    max_targets: Some(1),
    floor: None,
    lends_budget: false,
};

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
    // Generic operations, on objects of every kind.
    Block(u8, u8),
    WakeTop(u8),
    WakeAll(u8),
    AddTarget(u8, u8),
    RemoveTarget(u8, u8),
    /// Sets (palette index) or clears (index ≥ palette) an object's floor.
    SetFloor(u8, u8),
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
        8 => (i(), i()).prop_map(|(a, b)| Op::Block(a, b)),
        4 => i().prop_map(Op::WakeTop),
        1 => i().prop_map(Op::WakeAll),
        8 => (i(), i()).prop_map(|(a, b)| Op::AddTarget(a, b)),
        4 => (i(), i()).prop_map(|(a, b)| Op::RemoveTarget(a, b)),
        3 => (i(), i()).prop_map(|(a, b)| Op::SetFloor(a, b)),
    ]
}

/// The `k`-th mutex `t` owns (modulo), or `fallback` if it owns none (the
/// call is then mostly refused).
fn owned_or(e: &Engine, t: TaskId, k: u8, fallback: MutexId) -> MutexId {
    let owned: Vec<MutexId> = e.owned(t).map(Iterator::collect).unwrap_or_default();
    match owned.len() {
        0 => fallback,
        n => owned[k as usize % n],
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
                    .any(|&x| e.blocked_on(x).ok().flatten() == Some(m.into()))
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
    /// Every task id handed out, removed ones (stale ids) included.
    tasks: Vec<TaskId>,
    mutexes: Vec<MutexId>,
    conds: Vec<CondId>,
    /// Every object, of every kind (mutexes and condvars included).
    objs: Vec<ObjId>,
    /// Enqueue order of each blocked task, tracked by the test.
    seq: HashMap<TaskId, u64>,
    /// When each (object, target) pair was made, and when each object's
    /// floor was last set, tracked by the test.
    joined: HashMap<(ObjId, TaskId), u64>,
    floor_set: HashMap<ObjId, u64>,
    clock: u64,
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
    /// The standard world: mutexes of every protocol, condvars, an
    /// endpoint and a gang, plus objects of `extra` specs.
    fn with_kinds(extra: &[Spec]) -> Harness {
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
        let mutexes: Vec<MutexId> = protocols.iter().map(|p| e.add_mutex(*p)).collect();
        let conds: Vec<CondId> = (0..4).map(|_| e.add_cond()).collect();
        let mut objs: Vec<ObjId> = mutexes.iter().map(|&m| m.into()).collect();
        objs.extend(conds.iter().map(|&c| ObjId::from(c)));
        for spec in [Spec::ENDPOINT, Spec::GANG].iter().chain(extra) {
            objs.push(e.add_object(*spec));
        }
        let tasks = e.tasks().collect();
        Harness {
            e,
            ntasks: INITIAL_TASKS,
            tasks,
            mutexes,
            conds,
            objs,
            seq: HashMap::new(),
            joined: HashMap::new(),
            floor_set: HashMap::new(),
            clock: 1,
            into: None,
        }
    }

    fn new() -> Harness {
        Harness::with_kinds(&[])
    }

    /// A harness whose engine is driven through the `*_into` calls, with a
    /// buffer that starts out holding stale entries.
    fn new_into() -> Harness {
        let stale = heir_core::Change {
            task: TaskId(0, 0),
            old: Effective {
                urgency: Urgency::fixed(1),
                source: Source::Task(TaskId(0, 0)),
            },
            new: Effective {
                urgency: Urgency::fixed(2),
                source: Source::Task(TaskId(1, 0)),
            },
        };
        Harness {
            into: Some((0..7).map(|_| stale).collect()),
            ..Harness::new()
        }
    }

    /// A task id: mostly ids handed out (live, or stale once removed),
    /// sometimes one that never existed.
    fn task(&self, i: u8) -> TaskId {
        Self::pick(&self.tasks, i, TaskId(u32::MAX, 0))
    }
    /// An id from `ids`, or (one time in n+1) an id that names none.
    fn pick<T: Copy>(ids: &[T], i: u8, none: T) -> T {
        ids.get(i as usize % (ids.len() + 1))
            .copied()
            .unwrap_or(none)
    }
    fn mutex(&self, i: u8) -> MutexId {
        Self::pick(&self.mutexes, i, MutexId(u32::MAX, 0))
    }
    fn cond(&self, i: u8) -> CondId {
        Self::pick(&self.conds, i, CondId(u32::MAX, 0))
    }
    fn obj(&self, i: u8) -> ObjId {
        Self::pick(&self.objs, i, ObjId(u32::MAX, 0))
    }

    fn apply(&mut self, op: &Op) -> Result<(Value, heir_core::Changes), EngineError> {
        use Value::*;
        let (tasks, mutexes, conds, objs) = (
            self.tasks.clone(),
            self.mutexes.clone(),
            self.conds.clone(),
            self.objs.clone(),
        );
        let task = |i: u8| Self::pick(&tasks, i, TaskId(u32::MAX, 0));
        let mutex = |i: u8| Self::pick(&mutexes, i, MutexId(u32::MAX, 0));
        let cond = |i: u8| Self::pick(&conds, i, CondId(u32::MAX, 0));
        let obj = |i: u8| Self::pick(&objs, i, ObjId(u32::MAX, 0));
        // Arguments that depend on the state, picked before the call.
        let wait_args = self.wait_args(op);
        let helper_lock = match *op {
            Op::HelperLock(c, i, k) => Some(self.helper_lock_args(c, i, k)),
            _ => None,
        };
        let owned_pick = |e: &Engine, t: u8, k: u8| owned_or(e, task(t), k, mutex(k));
        let owner_of = |e: &Engine, m: MutexId| e.owner(m).ok().flatten().unwrap_or(TaskId(0, 0));
        let e = &mut self.e;
        if let Some(buf) = self.into.as_mut() {
            // The `*_into` variants: the value comes back, the changes are
            // in the buffer (cleared first, empty on error).
            let into = match *op {
                Op::Lock(t, m) => Some(e.lock_into(task(t), mutex(m), buf).map(Lock)),
                Op::Unlock(t, m) => Some(e.unlock_into(task(t), mutex(m), buf).map(Task)),
                Op::Wait(t, c) => Some(e.cond_wait_into(task(t), cond(c), buf).map(|()| Unit)),
                Op::WaitUnlock(t, ..) => {
                    let (c, m) = wait_args.unwrap_or((cond(0), mutex(0)));
                    Some(e.cond_wait_unlock_into(task(t), c, m, buf).map(Task))
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
                    let t = e.add_task(PALETTE[u as usize % PALETTE.len()]);
                    self.tasks.push(t);
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
                let m = owned_pick(e, t, k);
                let o = e.unlock(task(t), m)?;
                (Task(o.value), o.changes)
            }
            Op::UnlockOwner(m) => {
                let m = mutex(m);
                let o = e.unlock(owner_of(e, m), m)?;
                (Task(o.value), o.changes)
            }
            Op::HelperLock(..) => {
                let (t, m) = helper_lock.unwrap_or((task(0), mutex(0)));
                let o = e.lock(t, m)?;
                (Lock(o.value), o.changes)
            }
            Op::Acquire(t, m) => (Unit, e.acquire(task(t), mutex(m))?),
            Op::Release(t, m) => (Unit, e.release(task(t), mutex(m))?),
            Op::ReleaseOwner(m) => {
                let m = mutex(m);
                (Unit, e.release(owner_of(e, m), m)?)
            }
            Op::Wait(t, c) => (Unit, e.cond_wait(task(t), cond(c))?),
            Op::WaitUnlock(t, ..) => {
                let (c, m) = wait_args.unwrap_or((cond(0), mutex(0)));
                let o = e.cond_wait_unlock(task(t), c, m)?;
                (Task(o.value), o.changes)
            }
            Op::WaitRelease(t, ..) => {
                let (c, m) = wait_args.unwrap_or((cond(0), mutex(0)));
                (Unit, e.cond_wait_release(task(t), c, m)?)
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
            Op::Block(t, o) => (Unit, e.block(task(t), obj(o))?),
            Op::WakeTop(o) => {
                let out = e.wake_top(obj(o))?;
                (Task(out.value), out.changes)
            }
            Op::WakeAll(o) => {
                let out = e.wake_all(obj(o))?;
                (Tasks(out.value), out.changes)
            }
            Op::AddTarget(o, t) => (Unit, e.add_target(obj(o), task(t))?),
            Op::RemoveTarget(o, t) => (Unit, e.remove_target(obj(o), task(t))?),
            Op::SetFloor(o, u) => {
                let floor = PALETTE.get(u as usize).copied();
                (Unit, e.set_floor(obj(o), floor)?)
            }
        })
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

    fn live(&self) -> Vec<TaskId> {
        self.e.tasks().collect()
    }

    fn snapshot(&self) -> HashMap<TaskId, Effective> {
        self.live()
            .into_iter()
            .map(|t| (t, self.e.effective(t).unwrap()))
            .collect()
    }

    /// Every (object, target) pair, and which tasks are blocked.
    fn relations(&self) -> (Vec<(ObjId, TaskId)>, HashMap<TaskId, ObjId>) {
        let pairs = self
            .objs
            .iter()
            .flat_map(|&o| {
                self.e
                    .targets(o)
                    .unwrap()
                    .iter()
                    .map(move |&t| (o, t))
                    .collect::<Vec<_>>()
            })
            .collect();
        let blocked = self
            .live()
            .into_iter()
            .filter_map(|t| self.e.blocked_on(t).unwrap().map(|o| (t, o)))
            .collect();
        (pairs, blocked)
    }

    /// Records, after a successful call, the order facts the reference
    /// needs: a task that newly blocked was enqueued now; a pair that newly
    /// appeared joined now; a floor that was set was set now.
    fn track(&mut self, op: &Op, before: &(Vec<(ObjId, TaskId)>, HashMap<TaskId, ObjId>)) {
        let (pairs, blocked) = self.relations();
        for (t, o) in &blocked {
            if before.1.get(t) != Some(o) {
                self.seq.insert(*t, self.clock);
                self.clock += 1;
            }
        }
        for p in &pairs {
            if !before.0.contains(p) {
                self.joined.insert(*p, self.clock);
                self.clock += 1;
            }
        }
        if let Op::SetFloor(o, _) = *op {
            self.floor_set.insert(self.obj(o), self.clock);
            self.clock += 1;
        }
    }

    /// The reference evaluation (public queries and tracked order only).
    fn reference(&self) -> HashMap<TaskId, Effective> {
        let live = self.live();
        let mut memo: HashMap<TaskId, Effective> = HashMap::new();
        for &t in &live {
            self.ref_eff(t, &live, &mut memo);
        }
        memo
    }

    fn waiters_of(&self, live: &[TaskId], o: ObjId) -> Vec<TaskId> {
        live.iter()
            .copied()
            .filter(|&w| self.e.blocked_on(w).unwrap() == Some(o))
            .collect()
    }

    /// `eff(t)` = the best of `t`'s base (rank 0), each object's floor
    /// (rank 1, by how long it has applied to `t`) and, for objects that
    /// donate, the top waiter (rank 2, by enqueue order), over every object
    /// `t` is a target of.
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
        let mut best = Effective {
            urgency: e.base(t).unwrap(),
            source: Source::Task(t),
        };
        let mut key = (0u8, 0u64);
        for &o in &self.objs {
            if !e.targets(o).unwrap().contains(&t) {
                continue;
            }
            let spec = e.spec(o).unwrap();
            let mut candidates = Vec::new();
            if let Some(f) = spec.floor {
                let since = self.joined[&(o, t)].max(self.floor_set.get(&o).copied().unwrap_or(0));
                let floor = Effective {
                    urgency: f,
                    source: Source::Floor { object: o, task: t },
                };
                candidates.push((floor, (1, since)));
            }
            if spec.donates {
                let mut top: Option<(Effective, u64)> = None;
                for w in self.waiters_of(live, o) {
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
                    candidates.push((te, (2, s)));
                }
            }
            for (c, k) in candidates {
                if c.urgency > best.urgency || (c.urgency == best.urgency && k < key) {
                    best = c;
                    key = k;
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
            (Node::Task(t), Node::Object(o)) => e.blocked_on(t).ok().flatten() == Some(o),
            (Node::Object(o), Node::Task(t)) => e.targets(o).is_ok_and(|ts| ts.contains(&t)),
            _ => false,
        }
    }

    /// The edge the refused op tried to add.
    fn proposed(&self, op: &Op) -> Option<(Node, Node)> {
        let t = |i: u8| Node::Task(self.task(i));
        let obj = |o: ObjId| Node::Object(o);
        match *op {
            Op::Lock(a, m) => Some((t(a), obj(self.mutex(m).into()))),
            Op::HelperLock(c, i, k) => {
                let (a, m) = self.helper_lock_args(c, i, k);
                Some((Node::Task(a), obj(m.into())))
            }
            Op::Wait(a, c) => Some((t(a), obj(self.cond(c).into()))),
            Op::WaitUnlock(a, ..) | Op::WaitRelease(a, ..) => {
                let (c, _) = self.wait_args(op)?;
                Some((t(a), obj(c.into())))
            }
            Op::HelperAdd(c, a) => Some((obj(self.cond(c).into()), t(a))),
            Op::Acquire(a, m) => Some((obj(self.mutex(m).into()), t(a))),
            Op::Block(a, o) => Some((t(a), obj(self.obj(o)))),
            Op::AddTarget(o, a) => Some((obj(self.obj(o)), t(a))),
            _ => None,
        }
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    run_in(Harness::new(), ops)
}

fn run_in(mut h: Harness, ops: &[Op]) -> Result<(), TestCaseError> {
    for (step, op) in ops.iter().enumerate() {
        let before_engine = h.e.clone();
        let before = h.snapshot();
        let relations = h.relations();
        let wait_args = h.wait_args(op);
        let released = wait_args.map(|(_, m)| m);
        let proposed = h.proposed(op);
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
                            !cycle.contains(&Node::Object(m.into())),
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
        h.track(op, &relations);

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
        for &o in &h.objs {
            let mut expect = h.waiters_of(&live, o);
            expect.sort_by(|x, y| {
                reference[y]
                    .urgency
                    .cmp(&reference[x].urgency)
                    .then(h.seq[x].cmp(&h.seq[y]))
            });
            let got: Vec<TaskId> = h.e.waiters(o).unwrap().collect();
            prop_assert_eq!(got, expect, "step {} {:?}: order of {:?}", step, op, o);
        }

        // Contexts: who may lend time to whom, and where time goes.
        check_contexts(&h, &reference, step, op)?;

        // The call's own postcondition.
        postcondition(&h, op, &value, &changes, wait_args, step)?;
    }
    Ok(())
}

/// [`Engine::donors`] and [`Engine::time_goes_to`] against a reference on
/// the public queries: the donors of `t` are `t` and every task upstream
/// of it through donating objects, with their bases, plus the floors on
/// the way, most urgent first and led by `eff(t)`; the time of a blocked
/// task goes to the runnable ends of its donating chains.
fn check_contexts(
    h: &Harness,
    reference: &HashMap<TaskId, Effective>,
    step: usize,
    op: &Op,
) -> Result<(), TestCaseError> {
    let e = &h.e;
    let live = h.live();
    let mut donors = Vec::new();
    let mut ends = Vec::new();
    for &t in &live {
        e.donors(t, &mut donors).unwrap();
        prop_assert_eq!(
            donors.first().map(|d| d.urgency),
            Some(reference[&t].urgency),
            "step {} {:?}: donors of {:?} {:?}",
            step,
            op,
            t,
            &donors
        );
        prop_assert!(donors.windows(2).all(|w| w[0].urgency >= w[1].urgency));
        // Upstream through donating objects, from the public queries.
        let mut up = vec![t];
        let mut k = 0;
        while k < up.len() {
            let u = up[k];
            k += 1;
            for &o in &h.objs {
                let spec = e.spec(o).unwrap();
                if spec.donates && e.targets(o).unwrap().contains(&u) {
                    for w in h.waiters_of(&live, o) {
                        if !up.contains(&w) {
                            up.push(w);
                        }
                    }
                }
            }
        }
        let mut lenders: Vec<TaskId> = Vec::new();
        for d in &donors {
            if let Source::Task(x) = d.source {
                prop_assert_eq!(d.urgency, e.base(x).unwrap());
                prop_assert_eq!(d.context, e.context(x).unwrap());
                lenders.push(x);
            }
        }
        lenders.sort();
        up.sort();
        prop_assert_eq!(lenders, up, "step {} {:?}: lenders of {:?}", step, op, t);

        // Time: runnable ends of the donating chains, or a stall.
        let r = e.time_goes_to(t, &mut ends);
        match e.blocked_on(t).unwrap() {
            None => prop_assert_eq!(&ends, &vec![t]),
            Some(_) => {
                let mut expect = Vec::new();
                let mut stack = vec![t];
                while let Some(u) = stack.pop() {
                    match e.blocked_on(u).unwrap() {
                        None => {
                            if !expect.contains(&u) {
                                expect.push(u)
                            }
                        }
                        Some(o) if e.spec(o).unwrap().donates => {
                            stack.extend(e.targets(o).unwrap().iter().rev());
                        }
                        Some(_) => {}
                    }
                }
                prop_assert_eq!(&ends, &expect, "step {} {:?}: time of {:?}", step, op, t);
                prop_assert_eq!(r.is_err(), expect.is_empty());
            }
        }
    }
    Ok(())
}

fn postcondition(
    h: &Harness,
    op: &Op,
    value: &Value,
    changes: &heir_core::Changes,
    wait_args: Option<(CondId, MutexId)>,
    step: usize,
) -> Result<(), TestCaseError> {
    let e = &h.e;
    match (op, value) {
        (Op::Lock(t, m), Value::Lock(r)) => {
            let (t, m) = (h.task(*t), h.mutex(*m));
            match r {
                LockResult::Acquired => prop_assert_eq!(e.owner(m).unwrap(), Some(t)),
                LockResult::Blocked => prop_assert_eq!(e.blocked_on(t).unwrap(), Some(m.into())),
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
            prop_assert!(e.owned(*n).unwrap().next().is_some());
        }
        (Op::Acquire(t, m), _) => {
            let (t, m) = (h.task(*t), h.mutex(*m));
            prop_assert_eq!(e.owner(m).unwrap(), Some(t));
            prop_assert_ne!(e.blocked_on(t).unwrap(), Some(m.into()));
        }
        (Op::Release(_, m) | Op::ReleaseOwner(m), _) => {
            prop_assert_eq!(e.owner(h.mutex(*m)).unwrap(), None);
        }
        (Op::Wait(t, c), _) => {
            prop_assert_eq!(e.blocked_on(h.task(*t)).unwrap(), Some(h.cond(*c).into()));
        }
        (Op::WaitUnlock(t, ..) | Op::WaitRelease(t, ..), _) => {
            let t = h.task(*t);
            let (c, m) = wait_args.unwrap_or((CondId(u32::MAX, 0), MutexId(u32::MAX, 0)));
            prop_assert_eq!(e.blocked_on(t).unwrap(), Some(c.into()));
            prop_assert!(!e.owned(t).unwrap().any(|x| x == m));
            match value {
                Value::Task(next) => {
                    prop_assert_eq!(e.owner(m).unwrap(), *next);
                    if let Some(n) = next {
                        prop_assert_eq!(e.blocked_on(*n).unwrap(), None);
                    }
                }
                _ => prop_assert_eq!(e.owner(m).unwrap(), None),
            }
        }
        (Op::Signal(_) | Op::WakeTop(_), Value::Task(Some(w))) => {
            prop_assert_eq!(e.blocked_on(*w).unwrap(), None);
        }
        (Op::Broadcast(c), Value::Tasks(ws)) => {
            prop_assert_eq!(e.waiters(h.cond(*c)).unwrap().len(), 0);
            for w in ws {
                prop_assert_eq!(e.blocked_on(*w).unwrap(), None);
            }
        }
        (Op::WakeAll(o), Value::Tasks(ws)) => {
            prop_assert_eq!(e.waiters(h.obj(*o)).unwrap().len(), 0);
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
        (Op::Block(t, o), _) => {
            prop_assert_eq!(e.blocked_on(h.task(*t)).unwrap(), Some(h.obj(*o)))
        }
        (Op::AddTarget(o, t), _) => {
            prop_assert!(e.targets(h.obj(*o)).unwrap().contains(&h.task(*t)))
        }
        (Op::RemoveTarget(o, t), _) => {
            prop_assert!(!e.targets(h.obj(*o)).unwrap().contains(&h.task(*t)))
        }
        (Op::SetFloor(o, u), _) => {
            prop_assert_eq!(
                e.spec(h.obj(*o)).unwrap().floor,
                PALETTE.get(*u as usize).copied()
            )
        }
        (Op::Remove(t), _) => {
            let t = h.task(*t);
            prop_assert_eq!(e.effective(t), Err(EngineError::StaleTask(t)));
            prop_assert!(changes.is_empty(), "step {step}: {changes:?}");
        }
        _ => {}
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

    /// A new object kind is one description: a latch (donates to the one
    /// task that will open it) joins the world and the same oracle checks
    /// it, with no change to the engine or to the reference evaluation.
    #[test]
    fn a_latch_kind_passes_the_unchanged_oracle(ops in prop::collection::vec(op(), 500)) {
        run_in(Harness::with_kinds(&[LATCH, LATCH]), &ops)?;
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
/// through condvars, cycles refused, floors and generic kinds in use.
#[test]
fn long_deterministic_sequence_reaches_deep_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let ops = prop::collection::vec(op(), 30_000)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    run_in(Harness::with_kinds(&[LATCH]), &ops).unwrap();

    // Replay to gather statistics about what the run exercised.
    let mut h = Harness::with_kinds(&[LATCH]);
    let (mut cycles, mut boosted, mut floors, mut max_depth) = (0, 0, 0, 0);
    // Waits that released a mutex a helper of their condvar was blocked on
    // (the textbook pattern the two-step wait refused as a cycle).
    let mut textbook = 0;
    for op in &ops {
        let relations = h.relations();
        let pattern = match h.wait_args(op) {
            Some((c, m)) => h.e.helpers(c).is_ok_and(|hs| {
                hs.iter()
                    .any(|&x| h.e.blocked_on(x).ok().flatten() == Some(m.into()))
            }),
            None => false,
        };
        let r = h.apply(op);
        if pattern && r.is_ok() {
            textbook += 1;
        }
        match r {
            Err(EngineError::Cycle { .. }) => cycles += 1,
            Ok((_, ch)) => {
                h.track(op, &relations);
                for c in &ch {
                    match c.new.source {
                        Source::Task(d) if d != c.task => boosted += 1,
                        Source::Floor { .. } => floors += 1,
                        _ => {}
                    }
                }
                for t in h.live() {
                    let mut depth = 0;
                    let mut cur = t;
                    while let Some(o) = h.e.blocked_on(cur).unwrap() {
                        depth += 1;
                        match h.e.targets(o).unwrap().first() {
                            Some(&n) => cur = n,
                            None => break,
                        }
                    }
                    max_depth = max_depth.max(depth);
                }
            }
            Err(_) => {}
        }
    }
    eprintln!(
        "cycles {cycles}, boosts {boosted}, floors {floors}, depth {max_depth}, textbook waits {textbook}"
    );
    assert!(cycles >= 50, "only {cycles} cycles refused");
    assert!(boosted > 100, "only {boosted} boosts");
    assert!(floors > 20, "only {floors} floor changes");
    assert!(max_depth >= 4, "deepest chain {max_depth}");
    assert!(textbook >= 20, "only {textbook} textbook-pattern waits");
}
