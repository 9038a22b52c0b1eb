//! Scheduling contexts as objects: create, bind, unbind, remove, passive
//! tasks, lending along wait edges, and the CBS rules (start, wake-up,
//! consume, throttle, replenish, inherited parameters) as engine
//! operations.
//!
//! The proptest model keeps its own copy of every context (bound task,
//! reservation, inherited parameters, budget) and applies the CBS rules
//! written here step by step (the replenishment as a loop, period by
//! period); every refused operation must leave the engine equal to its
//! clone from before. After each step, [`Engine::consumer`] of every task
//! is checked against a brute-force oracle that shares nothing with the
//! engine's breadth-first walk: the lenders of `t` are the fixed point of
//! "waiters of a time-lending object one of the set is a target of",
//! computed from the public queries over every object, and the answer must
//! be a candidate of least deadline (the task's own context on a tie);
//! [`Engine::lenders`] must list exactly the reserved contexts of that set.

use std::collections::{HashMap, HashSet};

use heir_core::{
    Budget, Consumed, ContextId, Engine, EngineError, MutexId, ObjId, Protocol, Reservation, Spec,
    TaskId, Urgency, Wakeup,
};
use proptest::prelude::*;

fn res(q: u64, d: u64, p: u64) -> Reservation {
    Reservation {
        runtime_ns: q,
        deadline_ns: d,
        period_ns: p,
    }
}

/// M-BWI through a `bwi` mutex: the owner runs on the earliest-deadline
/// context lent to it that has budget; a throttled one is skipped; the
/// face may exclude one (another CPU consumes it).
#[test]
fn the_owner_consumes_the_earliest_lent_context_with_budget() {
    let mut e = Engine::new();
    let own = res(2, 10, 10);
    let l = e.add_task_with(Urgency::deadline(10), Some(own)).unwrap();
    let a = e.add_task_with(Urgency::deadline(5), Some(own)).unwrap();
    let b = e.add_task_with(Urgency::deadline(7), Some(own)).unwrap();
    let ctx = |e: &Engine, t| e.context(t).unwrap().unwrap();
    let (cl, ca, cb) = (ctx(&e, l), ctx(&e, a), ctx(&e, b));
    e.start(cl, 0).unwrap();
    e.start(ca, 0).unwrap();
    e.start(cb, 2).unwrap();
    let m = e.add_mutex(Protocol::Bwi);
    e.lock(l, m).unwrap();
    e.lock(a, m).unwrap();
    e.lock(b, m).unwrap();
    let got = |e: &Engine, skip: Option<ContextId>| {
        e.consumer(l, |c| Some(c) != skip)
            .unwrap()
            .map(|c| c.context)
    };
    // Deadlines: L 10, A 10, B 12: L's own wins the tie.
    assert_eq!(got(&e, None), Some(cl));
    e.consume(cl, 2).unwrap();
    let at = e.throttle(cl, 2).unwrap();
    assert_eq!(at, 10, "replenished at deadline − D + P");
    assert_eq!(got(&e, None), Some(ca), "A's before B's");
    assert_eq!(got(&e, Some(ca)), Some(cb), "A's consumed elsewhere");
    e.consume(ca, 3).unwrap();
    assert_eq!(e.budget(ca).unwrap().remaining_ns, -1);
    e.throttle(ca, 3).unwrap();
    e.throttle(cb, 3).unwrap();
    assert_eq!(got(&e, None), None, "every context throttled");
    let b2 = e.replenish(ca, 10).unwrap();
    assert_eq!(
        b2,
        Budget {
            remaining_ns: 1,
            deadline_ns: 20,
            throttled: false
        },
        "−1 + 2, one period on"
    );
    assert_eq!(got(&e, None), Some(ca));
    // Refusals leave everything unchanged.
    let before = e.clone();
    assert_eq!(e.replenish(ca, 11), Err(EngineError::NotThrottled(ca)));
    assert_eq!(e.throttle(cl, 11), Err(EngineError::Throttled(cl)));
    assert_eq!(e, before);
}

/// An `inherit` mutex lends urgency, not time: the owner does not consume
/// its waiter's context.
#[test]
fn an_inherit_mutex_lends_no_context() {
    let mut e = Engine::new();
    let o = e.add_task(Urgency::fixed(10));
    let w = e
        .add_task_with(Urgency::deadline(5), Some(res(1, 5, 5)))
        .unwrap();
    let cw = e.context(w).unwrap().unwrap();
    e.start(cw, 0).unwrap();
    let m = e.add_mutex(Protocol::Inherit);
    e.lock(o, m).unwrap();
    e.lock(w, m).unwrap();
    assert_eq!(e.effective(o).unwrap().urgency, Urgency::deadline(5));
    assert_eq!(e.consumer(o, |_| true).unwrap(), None);
    // Linux lends the parameters instead, on the owner's own context.
    let co = e.context(o).unwrap().unwrap();
    e.set_inherited(co, Some(res(1, 5, 5))).unwrap();
    assert!(!e.replenish_inherited(co, 3).unwrap());
    assert_eq!(
        e.consumer(o, |_| true).unwrap(),
        Some(Consumed {
            context: co,
            deadline_ns: 8
        })
    );
}

/// A passive server has no context: it runs on its callers' (NOVA
/// donation), and on nothing when nobody calls.
#[test]
fn a_passive_server_runs_only_on_lent_time() {
    let mut e = Engine::new();
    let s = e.add_passive_task();
    assert_eq!(e.context(s).unwrap(), None);
    assert_eq!(e.effective(s).unwrap().urgency, Urgency::LOWEST);
    let c = e
        .add_task_with(Urgency::deadline(9), Some(res(3, 9, 9)))
        .unwrap();
    let cc = e.context(c).unwrap().unwrap();
    e.start(cc, 0).unwrap();
    assert_eq!(e.consumer(s, |_| true).unwrap(), None);
    let ep = e.add_object(Spec::ENDPOINT);
    e.add_target(ep, s).unwrap();
    e.block(c, ep).unwrap();
    assert_eq!(
        e.consumer(s, |_| true).unwrap().map(|x| x.context),
        Some(cc)
    );
    assert_eq!(e.unbind(s), Err(EngineError::Passive(s)));
    // Binding it a context of its own makes it an active task.
    let own = e.add_context(Some(res(1, 4, 4))).unwrap();
    e.bind(s, own).unwrap();
    e.start(own, 0).unwrap();
    assert_eq!(
        e.consumer(s, |_| true).unwrap().map(|x| x.context),
        Some(own)
    );
    assert_eq!(
        e.remove_context(own),
        Err(EngineError::ContextBound {
            context: own,
            task: s
        })
    );
    assert_eq!(e.unbind(s), Ok(own));
    e.remove_context(own).unwrap();
    assert_eq!(e.budget(own), Err(EngineError::StaleContext(own)));
    let again = e.add_context(None).unwrap();
    assert_eq!((again.0, again.1), (own.0, own.1 + 1));
}

/// Rule 2, the wake-up: kept, a new period, revised CBS's cut, and a
/// constrained reservation woken between its deadline and its next
/// period throttled until that period.
#[test]
fn the_wakeup_rule() {
    let mut e = Engine::new();
    let c = e.add_context(Some(res(4, 10, 20))).unwrap();
    e.start(c, 0).unwrap();
    assert_eq!(e.wakeup(c, 0).unwrap(), Wakeup::Kept, "4·10 ≤ 10·4");
    e.consume(c, 1).unwrap();
    assert_eq!(e.wakeup(c, 8).unwrap(), Wakeup::Cut, "3·10 > 2·4");
    assert_eq!(e.budget(c).unwrap().remaining_ns, 0, "⌊4·2/10⌋");
    assert_eq!(
        e.wakeup(c, 12).unwrap(),
        Wakeup::Throttled { until_ns: 20 },
        "after the deadline 10, before the next period 20"
    );
    assert_eq!(e.wakeup(c, 13).unwrap(), Wakeup::Unchanged);
    e.replenish(c, 20).unwrap();
    assert_eq!(
        e.budget(c).unwrap(),
        Budget {
            remaining_ns: 4,
            deadline_ns: 30,
            throttled: false
        }
    );
    assert_eq!(
        e.wakeup(c, 40).unwrap(),
        Wakeup::NewPeriod,
        "at the next period: the deadline passed"
    );
    assert_eq!(e.budget(c).unwrap().deadline_ns, 50);
    assert_eq!(
        e.add_context(Some(res(0, 1, 1))),
        Err(EngineError::BadReservation(res(0, 1, 1)))
    );
}

// ----- the model -----

#[derive(Clone, Debug)]
enum Op {
    /// 0 plain, 1 with a reservation, 2 passive.
    AddTask(u8, u8),
    RemoveTask(u8),
    AddContext(u8),
    RemoveContext(u8),
    Bind(u8, u8),
    Unbind(u8),
    SetReservation(u8, u8),
    /// Objects: 0 `bwi` mutex, 1 `bwi` mutex, 2 `inherit` mutex, 3 condvar,
    /// 4 endpoint.
    Lock(u8, u8),
    Unlock(u8, u8),
    AddTarget(u8, u8),
    Block(u8, u8),
    WakeAll(u8),
    Start(u8),
    Wakeup(u8),
    Consume(u8, u16),
    Throttle(u8),
    Replenish(u8),
    SetInherited(u8, u8),
    ReplenishInherited(u8),
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    let i = || any::<u8>();
    prop_oneof![
        4 => (i(), i()).prop_map(|(a, b)| Op::AddTask(a, b)),
        1 => i().prop_map(Op::RemoveTask),
        2 => i().prop_map(Op::AddContext),
        1 => i().prop_map(Op::RemoveContext),
        2 => (i(), i()).prop_map(|(a, b)| Op::Bind(a, b)),
        1 => i().prop_map(Op::Unbind),
        1 => (i(), i()).prop_map(|(a, b)| Op::SetReservation(a, b)),
        4 => (i(), i()).prop_map(|(a, b)| Op::Lock(a, b)),
        2 => (i(), i()).prop_map(|(a, b)| Op::Unlock(a, b)),
        2 => (i(), i()).prop_map(|(a, b)| Op::AddTarget(a, b)),
        3 => (i(), i()).prop_map(|(a, b)| Op::Block(a, b)),
        1 => i().prop_map(Op::WakeAll),
        3 => i().prop_map(Op::Start),
        3 => i().prop_map(Op::Wakeup),
        4 => (i(), any::<u16>()).prop_map(|(a, b)| Op::Consume(a, b)),
        3 => i().prop_map(Op::Throttle),
        3 => i().prop_map(Op::Replenish),
        1 => (i(), i()).prop_map(|(a, b)| Op::SetInherited(a, b)),
        1 => i().prop_map(Op::ReplenishInherited),
        3 => any::<u16>().prop_map(Op::Advance),
    ]
}

/// A reservation from a byte (`None` for some): small numbers, D ≤ P
/// and D < P both.
fn res_of(x: u8) -> Option<Reservation> {
    if x.is_multiple_of(4) {
        return None;
    }
    let q = 1 + u64::from(x % 7) * 100;
    let d = q + u64::from(x % 5) * 300;
    let p = d + u64::from(x % 3) * 400;
    Some(res(q, d, p))
}

/// What the model knows of a context.
#[derive(Clone, Debug, PartialEq)]
struct Ctx {
    bound: Option<TaskId>,
    reservation: Option<Reservation>,
    inherited: Option<Reservation>,
    budget: Budget,
}

struct Model {
    e: Engine,
    now: u64,
    tasks: Vec<TaskId>,
    /// Live contexts, in creation order.
    ctxs: Vec<ContextId>,
    ctx: HashMap<ContextId, Ctx>,
    objs: Vec<ObjId>,
}

impl Model {
    fn new() -> Model {
        let mut e = Engine::new();
        let objs = vec![
            e.add_mutex(Protocol::Bwi).into(),
            e.add_mutex(Protocol::Bwi).into(),
            e.add_mutex(Protocol::Inherit).into(),
            e.add_cond().into(),
            e.add_object(Spec::ENDPOINT),
        ];
        Model {
            e,
            now: 0,
            tasks: Vec::new(),
            ctxs: Vec::new(),
            ctx: HashMap::new(),
            objs,
        }
    }

    fn task(&self, i: u8) -> Option<TaskId> {
        (!self.tasks.is_empty()).then(|| self.tasks[i as usize % self.tasks.len()])
    }

    fn context(&self, i: u8) -> Option<ContextId> {
        (!self.ctxs.is_empty()).then(|| self.ctxs[i as usize % self.ctxs.len()])
    }

    fn obj(&self, i: u8) -> ObjId {
        self.objs[i as usize % self.objs.len()]
    }

    fn mutex(o: ObjId) -> MutexId {
        MutexId(o.0, o.1)
    }

    fn new_ctx(&mut self, c: ContextId, reservation: Option<Reservation>, bound: Option<TaskId>) {
        self.ctxs.push(c);
        self.ctx.insert(
            c,
            Ctx {
                bound,
                reservation,
                inherited: None,
                budget: Budget::default(),
            },
        );
    }

    /// Applies `op` to the engine and to the model; on a refusal, checks
    /// that the engine is unchanged and that the model expected it.
    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let before = self.e.clone();
        let now = self.now;
        // `expect`: whether the model says the operation must succeed;
        // `r`: the engine's answer (Ok(())) or error.
        let (expect, r): (Option<bool>, Result<(), EngineError>) = match *op {
            Op::AddTask(k, x) => {
                let u = Urgency::fixed(x % 90);
                match k % 3 {
                    0 => {
                        let t = self.e.add_task(u);
                        let c = self.e.context(t).unwrap().unwrap();
                        self.tasks.push(t);
                        self.new_ctx(c, None, Some(t));
                    }
                    1 => {
                        let r = res_of(x | 1);
                        let t = self.e.add_task_with(u, r).unwrap();
                        let c = self.e.context(t).unwrap().unwrap();
                        self.tasks.push(t);
                        self.new_ctx(c, r, Some(t));
                    }
                    _ => {
                        let t = self.e.add_passive_task();
                        prop_assert_eq!(self.e.context(t).unwrap(), None);
                        self.tasks.push(t);
                    }
                }
                (None, Ok(()))
            }
            Op::RemoveTask(i) => {
                let Some(t) = self.task(i) else {
                    return Ok(());
                };
                let r = self.e.remove_task(t).map(|_| ());
                if r.is_ok() {
                    self.tasks.retain(|&x| x != t);
                    if let Some((&c, _)) = self.ctx.iter().find(|(_, v)| v.bound == Some(t)) {
                        self.ctx.remove(&c);
                        self.ctxs.retain(|&x| x != c);
                        prop_assert_eq!(self.e.budget(c), Err(EngineError::StaleContext(c)));
                    }
                }
                (None, r)
            }
            Op::AddContext(x) => {
                let r = res_of(x);
                let c = self.e.add_context(r).unwrap();
                self.new_ctx(c, r, None);
                (None, Ok(()))
            }
            Op::RemoveContext(i) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let ok = self.ctx[&c].bound.is_none();
                let r = self.e.remove_context(c);
                if r.is_ok() {
                    self.ctx.remove(&c);
                    self.ctxs.retain(|&x| x != c);
                    prop_assert_eq!(self.e.bound_to(c), Err(EngineError::StaleContext(c)));
                }
                (Some(ok), r)
            }
            Op::Bind(i, j) => {
                let (Some(t), Some(c)) = (self.task(i), self.context(j)) else {
                    return Ok(());
                };
                let ok =
                    self.ctx[&c].bound.is_none() && !self.ctx.values().any(|v| v.bound == Some(t));
                let r = self.e.bind(t, c);
                if r.is_ok() {
                    self.ctx.get_mut(&c).unwrap().bound = Some(t);
                }
                (Some(ok), r)
            }
            Op::Unbind(i) => {
                let Some(t) = self.task(i) else {
                    return Ok(());
                };
                let had = self
                    .ctx
                    .iter()
                    .find(|(_, v)| v.bound == Some(t))
                    .map(|(&c, _)| c);
                let r = self.e.unbind(t);
                if let Ok(c) = r {
                    prop_assert_eq!(Some(c), had);
                    self.ctx.get_mut(&c).unwrap().bound = None;
                }
                (Some(had.is_some()), r.map(|_| ()))
            }
            Op::SetReservation(i, x) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let r = res_of(x);
                let res = self.e.set_reservation(c, r);
                let m = self.ctx.get_mut(&c).unwrap();
                m.reservation = r;
                if r.is_none() {
                    m.budget.throttled = false;
                }
                (Some(true), res)
            }
            Op::Lock(i, o) => {
                let Some(t) = self.task(i) else {
                    return Ok(());
                };
                let o = self.obj(o % 3);
                (None, self.e.lock(t, Model::mutex(o)).map(|_| ()))
            }
            Op::Unlock(i, o) => {
                let Some(t) = self.task(i) else {
                    return Ok(());
                };
                let o = self.obj(o % 3);
                (None, self.e.unlock(t, Model::mutex(o)).map(|_| ()))
            }
            Op::AddTarget(o, i) => {
                let Some(t) = self.task(i) else {
                    return Ok(());
                };
                let o = self.objs[3 + o as usize % 2];
                (None, self.e.add_target(o, t).map(|_| ()))
            }
            Op::Block(i, o) => {
                let Some(t) = self.task(i) else {
                    return Ok(());
                };
                let o = self.objs[3 + o as usize % 2];
                (None, self.e.block(t, o).map(|_| ()))
            }
            Op::WakeAll(o) => {
                let o = self.obj(o);
                if self.e.spec(o).unwrap().kind == heir_core::ObjKind::Mutex {
                    return Ok(());
                }
                (None, self.e.wake_all(o).map(|_| ()))
            }
            Op::Start(i) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let m = self.ctx.get_mut(&c).unwrap();
                let r = self.e.start(c, now);
                let ok = match m.reservation {
                    Some(rr) => {
                        m.budget = Budget {
                            remaining_ns: rr.runtime_ns as i64,
                            deadline_ns: now + rr.deadline_ns,
                            throttled: false,
                        };
                        true
                    }
                    None => false,
                };
                (Some(ok), r.map(|_| ()))
            }
            Op::Wakeup(i) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let m = self.ctx.get_mut(&c).unwrap();
                let r = self.e.wakeup(c, now);
                let ok = m.reservation.is_some();
                if let (Some(rr), Ok(w)) = (m.reservation, &r) {
                    let want = model_wakeup(m, rr, now);
                    prop_assert_eq!(*w, want);
                }
                (Some(ok), r.map(|_| ()))
            }
            Op::Consume(i, ns) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let r = self.e.consume(c, u64::from(ns));
                let m = self.ctx.get_mut(&c).unwrap();
                m.budget.remaining_ns -= i64::from(ns);
                prop_assert_eq!(r.clone(), Ok(m.budget.remaining_ns));
                (Some(true), r.map(|_| ()))
            }
            Op::Throttle(i) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let m = self.ctx.get_mut(&c).unwrap();
                let r = self.e.throttle(c, now);
                let ok = m.reservation.is_some() && !m.budget.throttled;
                if let (true, Some(rr)) = (ok, m.reservation) {
                    m.budget.throttled = true;
                    let at = (m.budget.deadline_ns.saturating_sub(rr.deadline_ns) + rr.period_ns)
                        .max(now);
                    prop_assert_eq!(r.clone(), Ok(at));
                }
                (Some(ok), r.map(|_| ()))
            }
            Op::Replenish(i) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let m = self.ctx.get_mut(&c).unwrap();
                let r = self.e.replenish(c, now);
                let ok = m.reservation.is_some() && m.budget.throttled;
                if let (true, Some(rr)) = (ok, m.reservation) {
                    m.budget.throttled = false;
                    model_refill(&mut m.budget, rr, now);
                }
                (Some(ok), r.map(|_| ()))
            }
            Op::SetInherited(i, x) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let p = res_of(x);
                let r = self.e.set_inherited(c, p);
                self.ctx.get_mut(&c).unwrap().inherited = p;
                (Some(true), r)
            }
            Op::ReplenishInherited(i) => {
                let Some(c) = self.context(i) else {
                    return Ok(());
                };
                let m = self.ctx.get_mut(&c).unwrap();
                let r = self.e.replenish_inherited(c, now);
                let ok = m.inherited.is_some();
                if let Some(p) = m.inherited {
                    if m.reservation.is_none() {
                        m.budget.deadline_ns = now + p.deadline_ns;
                        m.budget.remaining_ns = p.runtime_ns as i64;
                    }
                    model_refill(&mut m.budget, p, now);
                    let was = std::mem::replace(&mut m.budget.throttled, false);
                    prop_assert_eq!(r.clone(), Ok(was));
                }
                (Some(ok), r.map(|_| ()))
            }
            Op::Advance(ns) => {
                self.now += u64::from(ns);
                return Ok(());
            }
        };
        match (&r, expect) {
            (Err(err), Some(true)) => {
                prop_assert!(false, "{:?}: refused with {:?}", op, err)
            }
            (Ok(()), Some(false)) => prop_assert!(false, "{:?}: accepted", op),
            _ => {}
        }
        if r.is_err() {
            prop_assert!(self.e == before, "{:?} refused but changed the engine", op);
        }
        Ok(())
    }

    /// Every context agrees with the model; every task's consumer with the
    /// brute-force oracle.
    fn check(&self, usable: &dyn Fn(ContextId) -> bool) -> Result<(), TestCaseError> {
        let e = &self.e;
        e.check_invariants().unwrap();
        prop_assert_eq!(e.contexts().count(), self.ctx.len());
        for (&c, m) in &self.ctx {
            prop_assert_eq!(e.bound_to(c).unwrap(), m.bound);
            prop_assert_eq!(e.reservation(c).unwrap(), m.reservation);
            prop_assert_eq!(e.inherited(c).unwrap(), m.inherited);
            prop_assert_eq!(e.budget(c).unwrap(), m.budget, "{:?}", c);
        }
        for &t in &self.tasks {
            let own = self
                .ctx
                .iter()
                .find(|(_, v)| v.bound == Some(t))
                .map(|(&c, _)| c);
            prop_assert_eq!(e.context(t).unwrap(), own);
            // The lenders: a fixed point over every object.
            let mut up: HashSet<TaskId> = HashSet::from([t]);
            loop {
                let mut grew = false;
                for &o in &self.objs {
                    let spec = e.spec(o).unwrap();
                    if !(spec.donates && spec.lends_budget) {
                        continue;
                    }
                    if !e.targets(o).unwrap().iter().any(|x| up.contains(x)) {
                        continue;
                    }
                    for w in e.waiters(o).unwrap() {
                        grew |= up.insert(w);
                    }
                }
                if !grew {
                    break;
                }
            }
            let mut cands: Vec<(u64, ContextId, bool)> = Vec::new();
            if let Some(c) = own {
                let m = &self.ctx[&c];
                if (m.reservation.is_some() || m.inherited.is_some())
                    && !m.budget.throttled
                    && usable(c)
                {
                    cands.push((m.budget.deadline_ns, c, true));
                }
            }
            for &w in up.iter().filter(|&&w| w != t) {
                let Some((&c, m)) = self.ctx.iter().find(|(_, v)| v.bound == Some(w)) else {
                    continue;
                };
                if m.reservation.is_some() && !m.budget.throttled && usable(c) {
                    cands.push((m.budget.deadline_ns, c, false));
                }
            }
            let mut lent = Vec::new();
            e.lenders(t, &mut lent).unwrap();
            let mut want: Vec<ContextId> = up
                .iter()
                .filter(|&&w| w != t)
                .filter_map(|&w| {
                    self.ctx
                        .iter()
                        .find(|(_, v)| v.bound == Some(w) && v.reservation.is_some())
                        .map(|(&c, _)| c)
                })
                .collect();
            want.sort();
            let mut sorted = lent.clone();
            sorted.sort();
            prop_assert_eq!(sorted, want, "lenders of {:?}", t);
            let got = e.consumer(t, usable).unwrap();
            let least = cands.iter().map(|x| x.0).min();
            prop_assert_eq!(got.map(|g| g.deadline_ns), least, "consumer of {:?}", t);
            if let Some(g) = got {
                prop_assert!(
                    cands
                        .iter()
                        .any(|x| x.1 == g.context && x.0 == g.deadline_ns),
                    "{:?} is no candidate of {:?}",
                    g,
                    t
                );
                if cands.iter().any(|x| x.2 && Some(x.0) == least) {
                    prop_assert_eq!(Some(g.context), own, "own context wins a tie");
                }
            }
        }
        Ok(())
    }
}

/// Rule 2 on the model.
fn model_wakeup(m: &mut Ctx, r: Reservation, now: u64) -> Wakeup {
    if m.budget.throttled || m.inherited.is_some() {
        return Wakeup::Unchanged;
    }
    let b = &mut m.budget;
    let constrained = r.deadline_ns < r.period_ns;
    // deadline − D (at least 0) + P
    let next = b.deadline_ns.saturating_sub(r.deadline_ns) + r.period_ns;
    if constrained && b.deadline_ns <= now && now < next {
        b.remaining_ns = b.remaining_ns.min(0);
        b.throttled = true;
        return Wakeup::Throttled { until_ns: next };
    }
    if b.deadline_ns <= now {
        b.deadline_ns = now + r.deadline_ns;
        b.remaining_ns = r.runtime_ns as i64;
        return Wakeup::NewPeriod;
    }
    let left = b.deadline_ns - now;
    // Density: remaining / left against Q / D, in floating point is not
    // exact enough; in integers.
    if (b.remaining_ns.max(0) as u128) * u128::from(r.deadline_ns)
        <= u128::from(left) * u128::from(r.runtime_ns)
    {
        return Wakeup::Kept;
    }
    if constrained {
        b.remaining_ns =
            (u128::from(r.runtime_ns) * u128::from(left) / u128::from(r.deadline_ns)) as i64;
        Wakeup::Cut
    } else {
        b.deadline_ns = now + r.deadline_ns;
        b.remaining_ns = r.runtime_ns as i64;
        Wakeup::NewPeriod
    }
}

/// Rule 4's end on the model, period by period.
fn model_refill(b: &mut Budget, r: Reservation, now: u64) {
    while b.remaining_ns <= 0 {
        b.deadline_ns += r.period_ns;
        b.remaining_ns += r.runtime_ns as i64;
    }
    if b.deadline_ns < now {
        b.deadline_ns = now + r.deadline_ns;
        b.remaining_ns = r.runtime_ns as i64;
    }
}

fn run(ops: &[Op], usable: &dyn Fn(ContextId) -> bool) -> Result<(), TestCaseError> {
    let mut m = Model::new();
    for op in ops {
        m.apply(op)?;
        m.check(usable)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn contexts_lend_consume_throttle_replenish(ops in prop::collection::vec(op(), 300)) {
        run(&ops, &|_| true)?;
    }

    #[test]
    fn consumer_with_contexts_taken_elsewhere(ops in prop::collection::vec(op(), 300)) {
        run(&ops, &|c: ContextId| c.0 % 3 != 1)?;
    }
}
