//! Lifetimes: tasks and objects are removed, their slots reused in the next
//! generation, and a stale id — a copy kept past the removal — is refused
//! with a typed error and the state unchanged, never taken for the new
//! occupant of its slot.
//!
//! A model keeps what is live (and what each mutex's owner is); random
//! sequences create and remove tasks, mutexes, condvars, gangs and
//! endpoints, lock and unlock, block and wake, and use stale ids. After
//! each step: every live id answers, every stale id is refused, the arenas
//! hold no more slots than the most things ever live at once (the
//! invariants, checked after each operation in debug builds, include the
//! free lists).

use std::collections::HashMap;

use heir_core::{CondId, Engine, EngineError, MutexId, ObjId, Protocol, Spec, TaskId, Urgency};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    AddTask(u8),
    RemoveTask(u8),
    /// 0 mutex (inherit), 1 mutex (ceiling), 2 condvar, 3 gang, 4 endpoint.
    AddObj(u8),
    RemoveObj(u8),
    Lock(u8, u8),
    Unlock(u8),
    HelperAdd(u8, u8),
    Block(u8, u8),
    WakeAll(u8),
    /// Uses a stale task id (by index among the stale ones).
    StaleTask(u8, u8),
    /// Uses a stale object id.
    StaleObj(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let i = || any::<u8>();
    prop_oneof![
        4 => i().prop_map(Op::AddTask),
        3 => i().prop_map(Op::RemoveTask),
        4 => i().prop_map(Op::AddObj),
        3 => i().prop_map(Op::RemoveObj),
        4 => (i(), i()).prop_map(|(a, b)| Op::Lock(a, b)),
        3 => i().prop_map(Op::Unlock),
        2 => (i(), i()).prop_map(|(a, b)| Op::HelperAdd(a, b)),
        2 => (i(), i()).prop_map(|(a, b)| Op::Block(a, b)),
        2 => i().prop_map(Op::WakeAll),
        2 => (i(), i()).prop_map(|(a, b)| Op::StaleTask(a, b)),
        2 => (i(), i()).prop_map(|(a, b)| Op::StaleObj(a, b)),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Mutex,
    Cond,
    Other,
}

struct World {
    e: Engine,
    tasks: Vec<TaskId>,
    objs: Vec<(ObjId, Kind)>,
    stale_tasks: Vec<TaskId>,
    stale_objs: Vec<ObjId>,
    /// The most tasks and objects live at once so far.
    peak: (usize, usize),
    /// How many removals were followed by a reuse of the slot.
    reused: usize,
}

fn pick<T: Copy>(v: &[T], i: u8) -> Option<T> {
    (!v.is_empty()).then(|| v[i as usize % v.len()])
}

impl World {
    fn new() -> World {
        World {
            e: Engine::new(),
            tasks: Vec::new(),
            objs: Vec::new(),
            stale_tasks: Vec::new(),
            stale_objs: Vec::new(),
            peak: (0, 0),
            reused: 0,
        }
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::AddTask(u) => {
                let t = self.e.add_task(Urgency::fixed(1 + u % 90));
                if self.stale_tasks.iter().any(|s| s.0 == t.0) {
                    self.reused += 1;
                    prop_assert!(self.stale_tasks.iter().all(|s| *s != t), "{t:?} reissued");
                }
                self.tasks.push(t);
            }
            Op::RemoveTask(i) => {
                let Some(t) = pick(&self.tasks, i) else {
                    return Ok(());
                };
                let before = self.e.clone();
                match self.e.remove_task(t) {
                    Ok(ch) => {
                        prop_assert!(ch.is_empty());
                        self.tasks.retain(|x| *x != t);
                        self.stale_tasks.push(t);
                    }
                    Err(EngineError::Busy { task }) => {
                        prop_assert_eq!(task, t);
                        prop_assert_eq!(&self.e, &before, "a refusal changed the state");
                    }
                    Err(err) => prop_assert!(false, "remove {t:?}: {err}"),
                }
            }
            Op::AddObj(k) => {
                let (o, kind) = match k % 5 {
                    0 => (self.e.add_mutex(Protocol::Inherit).into(), Kind::Mutex),
                    1 => (
                        self.e
                            .add_mutex(Protocol::Ceiling(Urgency::fixed(50)))
                            .into(),
                        Kind::Mutex,
                    ),
                    2 => (self.e.add_cond().into(), Kind::Cond),
                    3 => (self.e.add_object(Spec::GANG), Kind::Other),
                    _ => (self.e.add_object(Spec::ENDPOINT), Kind::Other),
                };
                if self.stale_objs.iter().any(|s| s.0 == o.0) {
                    self.reused += 1;
                    prop_assert!(self.stale_objs.iter().all(|s| *s != o), "{o:?} reissued");
                }
                self.objs.push((o, kind));
            }
            Op::RemoveObj(i) => {
                let Some((o, _)) = pick(&self.objs, i) else {
                    return Ok(());
                };
                let busy = self.e.waiters(o).map(|w| w.len() > 0).unwrap_or(false)
                    || (self
                        .e
                        .spec(o)
                        .map(|s| s.protocol().is_some())
                        .unwrap_or(false)
                        && !self.e.targets(o).map(|t| t.is_empty()).unwrap_or(true));
                let before = self.e.clone();
                match self.e.remove_object(o) {
                    Ok(_) => {
                        prop_assert!(!busy, "{o:?} removed while busy");
                        self.objs.retain(|x| x.0 != o);
                        self.stale_objs.push(o);
                    }
                    Err(EngineError::ObjectBusy { object }) => {
                        prop_assert!(busy, "{o:?} refused while free");
                        prop_assert_eq!(object, o);
                        prop_assert_eq!(&self.e, &before, "a refusal changed the state");
                    }
                    Err(err) => prop_assert!(false, "remove {o:?}: {err}"),
                }
            }
            Op::Lock(t, m) => {
                let mutexes: Vec<ObjId> = self
                    .objs
                    .iter()
                    .filter(|x| x.1 == Kind::Mutex)
                    .map(|x| x.0)
                    .collect();
                if let (Some(t), Some(m)) = (pick(&self.tasks, t), pick(&mutexes, m)) {
                    let _ = self.e.lock(t, MutexId(m.0, m.1));
                }
            }
            Op::Unlock(m) => {
                let mutexes: Vec<ObjId> = self
                    .objs
                    .iter()
                    .filter(|x| x.1 == Kind::Mutex)
                    .map(|x| x.0)
                    .collect();
                if let Some(m) = pick(&mutexes, m) {
                    let m = MutexId(m.0, m.1);
                    if let Ok(Some(owner)) = self.e.owner(m) {
                        self.e
                            .unlock(owner, m)
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    }
                }
            }
            Op::HelperAdd(c, t) => {
                let conds: Vec<ObjId> = self
                    .objs
                    .iter()
                    .filter(|x| x.1 == Kind::Cond)
                    .map(|x| x.0)
                    .collect();
                if let (Some(c), Some(t)) = (pick(&conds, c), pick(&self.tasks, t)) {
                    let _ = self.e.helper_add(CondId(c.0, c.1), t);
                }
            }
            Op::Block(t, o) => {
                if let (Some(t), Some((o, _))) = (pick(&self.tasks, t), pick(&self.objs, o)) {
                    let _ = self.e.block(t, o);
                }
            }
            Op::WakeAll(o) => {
                if let Some((o, _)) = pick(&self.objs, o) {
                    self.e
                        .wake_all(o)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
            }
            Op::StaleTask(s, o) => {
                let Some(t) = pick(&self.stale_tasks, s) else {
                    return Ok(());
                };
                let before = self.e.clone();
                let refused: Result<(), EngineError> = Err(EngineError::StaleTask(t));
                prop_assert_eq!(self.e.effective(t).map(|_| ()), refused.clone());
                prop_assert_eq!(self.e.remove_task(t).map(|_| ()), refused.clone());
                prop_assert_eq!(
                    self.e.set_base(t, Urgency::fixed(99)).map(|_| ()),
                    refused.clone()
                );
                if let Some((o, _)) = pick(&self.objs, o) {
                    prop_assert_eq!(self.e.block(t, o).map(|_| ()), refused.clone());
                    prop_assert_eq!(self.e.add_target(o, t).map(|_| ()), refused);
                }
                prop_assert_eq!(&self.e, &before, "a stale id changed the state");
            }
            Op::StaleObj(s, t) => {
                let Some(o) = pick(&self.stale_objs, s) else {
                    return Ok(());
                };
                let before = self.e.clone();
                let refused: Result<(), EngineError> = Err(EngineError::StaleObject(o));
                prop_assert_eq!(self.e.spec(o).map(|_| ()), refused.clone());
                prop_assert_eq!(self.e.remove_object(o).map(|_| ()), refused.clone());
                prop_assert_eq!(self.e.wake_all(o).map(|_| ()), refused.clone());
                if let Some(t) = pick(&self.tasks, t) {
                    let m = MutexId(o.0, o.1);
                    prop_assert_eq!(self.e.lock(t, m).map(|_| ()), refused.clone());
                    prop_assert_eq!(self.e.block(t, o).map(|_| ()), refused);
                }
                prop_assert_eq!(&self.e, &before, "a stale id changed the state");
            }
        }
        self.check()
    }

    fn check(&mut self) -> Result<(), TestCaseError> {
        self.e
            .check_invariants()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        self.peak.0 = self.peak.0.max(self.tasks.len());
        self.peak.1 = self.peak.1.max(self.objs.len());
        prop_assert_eq!(
            self.e.task_slots(),
            self.peak.0,
            "task slots beyond the peak"
        );
        prop_assert_eq!(
            self.e.object_slots(),
            self.peak.1,
            "object slots beyond the peak"
        );
        let live: Vec<TaskId> = self.e.tasks().collect();
        let mut want = self.tasks.clone();
        want.sort();
        prop_assert_eq!(live, want);
        for (o, _) in &self.objs {
            prop_assert!(self.e.spec(*o).is_ok(), "{o:?} lost");
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// 256 sequences of 300 steps: creations, removals, reuse, stale ids.
    #[test]
    fn create_destroy_reuse_refuses_stale_ids(ops in prop::collection::vec(op(), 300)) {
        let mut w = World::new();
        for op in &ops {
            w.step(op)?;
        }
    }
}

/// A slot reused many times: each generation's id is refused once removed,
/// the arena never grows, and the id's debug form names the generation.
#[test]
fn one_slot_many_generations() {
    let mut e = Engine::new();
    let keep = e.add_task(Urgency::fixed(10));
    let mut old: HashMap<u32, Vec<ObjId>> = HashMap::new();
    let mut last = None;
    for gen in 0..1000u32 {
        let m = e.add_mutex(Protocol::Inherit);
        assert_eq!(m, MutexId(0, gen));
        e.lock(keep, m).unwrap();
        assert_eq!(
            e.remove_object(m),
            Err(EngineError::ObjectBusy { object: m.into() })
        );
        e.unlock(keep, m).unwrap();
        e.remove_object(m).unwrap();
        old.entry(m.0).or_default().push(m.into());
        last = Some(m);
    }
    assert_eq!(e.object_slots(), 1);
    let fresh = e.add_mutex(Protocol::None);
    assert_eq!(fresh, MutexId(0, 1000));
    for o in &old[&0] {
        assert_eq!(e.spec(*o), Err(EngineError::StaleObject(*o)));
    }
    assert_eq!(e.protocol(fresh), Ok(Protocol::None));
    assert_eq!(format!("{:?}", last.unwrap()), "MutexId(0, gen 999)");
    assert_eq!(format!("{:?}", MutexId(0, 0)), "MutexId(0)");
    let t = e.add_task(Urgency::fixed(20));
    e.remove_task(t).unwrap();
    let t2 = e.add_task(Urgency::fixed(30));
    assert_eq!((t2.0, t2.1), (t.0, t.1 + 1));
    assert_eq!(e.effective(t), Err(EngineError::StaleTask(t)));
    let ctx = e.context(t2).unwrap().unwrap();
    assert_eq!(e.bound_to(ctx), Ok(Some(t2)));
    assert!(e.bound_to(heir_core::ContextId(t.0, t.1)).is_err());
}

/// Removing an object revokes what it gave its targets: a ceiling's floor,
/// a condvar's helpers' boosts (there are none without waiters), a gang's
/// floor.
#[test]
fn removing_an_object_revokes_its_floor() {
    let mut e = Engine::new();
    let a = e.add_task(Urgency::fixed(10));
    let g = e.add_object(Spec::GANG);
    e.add_target(g, a).unwrap();
    e.set_floor(g, Some(Urgency::fixed(70))).unwrap();
    assert_eq!(e.effective(a).unwrap().urgency, Urgency::fixed(70));
    let ch = e.remove_object(g).unwrap();
    assert_eq!(ch.len(), 1);
    assert_eq!((ch[0].task, ch[0].new.urgency), (a, Urgency::fixed(10)));
    assert_eq!(e.effective(a).unwrap().urgency, Urgency::fixed(10));
    assert_eq!(e.targets_of(a).unwrap(), &[]);
}
