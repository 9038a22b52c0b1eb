//! A small named-world harness: tasks, mutexes and condvars by name, ops as
//! data, and table rows that state the exact outcome of one op.

use heir_core::{
    Changes, CondId, Effective, Engine, EngineError, LockResult, MutexId, ObjId, Protocol, Source,
    TaskId, Urgency,
};

/// A fixed real-time priority.
pub fn fx(p: u8) -> Urgency {
    Urgency::fixed(p)
}

/// One engine call, by names.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Lock(&'static str, &'static str),
    Unlock(&'static str, &'static str),
    Acquire(&'static str, &'static str),
    Release(&'static str, &'static str),
    Wait(&'static str, &'static str),
    /// `(task, cond, mutex)`: `cond_wait_unlock`.
    WaitUnlock(&'static str, &'static str, &'static str),
    /// `(task, cond, mutex)`: `cond_wait_release`.
    WaitRelease(&'static str, &'static str, &'static str),
    Signal(&'static str),
    Broadcast(&'static str),
    Cancel(&'static str),
    HelperAdd(&'static str, &'static str),
    HelperDel(&'static str, &'static str),
    SetBase(&'static str, u8),
    Remove(&'static str),
}

/// `(task, old prio, old source, new prio, new source)`: a source is the
/// donor's name, or `object@task` for the floor of `object` under `task`.
pub type ChangeRow = (&'static str, u8, &'static str, u8, &'static str);
/// `(task, prio, donor)`.
pub type EffRow = (&'static str, u8, &'static str);

/// A table row: after `setup`, `op` returns `value` and exactly `changes`
/// (in order), and then the listed tasks are at `after`.
pub struct Case {
    pub name: &'static str,
    pub setup: &'static [Op],
    pub op: Op,
    pub value: &'static str,
    pub changes: &'static [ChangeRow],
    pub after: &'static [EffRow],
}

pub struct World {
    pub e: Engine,
    tasks: Vec<(&'static str, TaskId)>,
    mutexes: Vec<(&'static str, MutexId)>,
    conds: Vec<(&'static str, CondId)>,
}

impl World {
    /// Tasks with fixed priorities, mutexes with protocols, condvars.
    pub fn new(
        tasks: &[(&'static str, u8)],
        mutexes: &[(&'static str, Protocol)],
        conds: &[&'static str],
    ) -> World {
        let mut e = Engine::new();
        let tasks = tasks.iter().map(|&(n, p)| (n, e.add_task(fx(p)))).collect();
        let mutexes = mutexes.iter().map(|&(n, p)| (n, e.add_mutex(p))).collect();
        let conds = conds.iter().map(|&n| (n, e.add_cond())).collect();
        World {
            e,
            tasks,
            mutexes,
            conds,
        }
    }

    pub fn t(&self, name: &str) -> TaskId {
        self.tasks
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no task {name}"))
            .1
    }
    pub fn m(&self, name: &str) -> MutexId {
        self.mutexes
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no mutex {name}"))
            .1
    }
    pub fn c(&self, name: &str) -> CondId {
        self.conds
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no cond {name}"))
            .1
    }
    pub fn name(&self, t: TaskId) -> &'static str {
        self.tasks
            .iter()
            .find(|(_, id)| *id == t)
            .unwrap_or_else(|| panic!("no name for {t:?}"))
            .0
    }

    fn names(&self, ts: &[TaskId]) -> String {
        ts.iter()
            .map(|t| self.name(*t))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Applies `op`; on success returns a short rendering of its value
    /// ("acquired"/"blocked", a task name or "-", a comma list, "") and its
    /// changes. Checks the invariants after every successful op.
    pub fn apply(&mut self, op: Op) -> Result<(String, Changes), EngineError> {
        let opt = |w: &World, t: Option<TaskId>| t.map_or("-".to_string(), |t| w.name(t).into());
        let r = match op {
            Op::Lock(t, m) => {
                let o = self.e.lock(self.t(t), self.m(m))?;
                let v = match o.value {
                    LockResult::Acquired => "acquired",
                    LockResult::Blocked => "blocked",
                };
                (v.to_string(), o.changes)
            }
            Op::Unlock(t, m) => {
                let o = self.e.unlock(self.t(t), self.m(m))?;
                (opt(self, o.value), o.changes)
            }
            Op::Acquire(t, m) => (String::new(), self.e.acquire(self.t(t), self.m(m))?),
            Op::Release(t, m) => (String::new(), self.e.release(self.t(t), self.m(m))?),
            Op::Wait(t, c) => (String::new(), self.e.cond_wait(self.t(t), self.c(c))?),
            Op::WaitUnlock(t, c, m) => {
                let o = self.e.cond_wait_unlock(self.t(t), self.c(c), self.m(m))?;
                (opt(self, o.value), o.changes)
            }
            Op::WaitRelease(t, c, m) => (
                String::new(),
                self.e.cond_wait_release(self.t(t), self.c(c), self.m(m))?,
            ),
            Op::Signal(c) => {
                let o = self.e.cond_signal(self.c(c))?;
                (opt(self, o.value), o.changes)
            }
            Op::Broadcast(c) => {
                let o = self.e.cond_broadcast(self.c(c))?;
                (self.names(&o.value), o.changes)
            }
            Op::Cancel(t) => (String::new(), self.e.cancel_wait(self.t(t))?),
            Op::HelperAdd(c, t) => (String::new(), self.e.helper_add(self.c(c), self.t(t))?),
            Op::HelperDel(c, t) => (String::new(), self.e.helper_del(self.c(c), self.t(t))?),
            Op::SetBase(t, p) => (String::new(), self.e.set_base(self.t(t), fx(p))?),
            Op::Remove(t) => (String::new(), self.e.remove_task(self.t(t))?),
        };
        self.e.check_invariants().unwrap();
        Ok(r)
    }

    /// Applies every op, panicking on the first error.
    pub fn run(&mut self, ops: &[Op]) {
        for op in ops {
            if let Err(err) = self.apply(*op) {
                panic!("{op:?} failed: {err}");
            }
        }
    }

    /// Applies `op`, which must fail with `expected`, and checks that the
    /// engine is unchanged.
    pub fn refuse(&mut self, op: Op, expected: EngineError) {
        let before = self.e.clone();
        let got = self.apply(op);
        assert_eq!(got, Err(expected), "{op:?}");
        assert_eq!(self.e, before, "{op:?} changed the state");
    }

    /// `(prio, donor)` of a task (fixed priorities only).
    pub fn eff(&self, name: &str) -> (u8, &'static str) {
        self.row(self.e.effective(self.t(name)).unwrap())
    }

    /// The name of an object (mutex or condvar).
    pub fn obj_name(&self, o: ObjId) -> &'static str {
        self.mutexes
            .iter()
            .find(|(_, m)| ObjId::from(*m) == o)
            .map(|(n, _)| *n)
            .or_else(|| {
                self.conds
                    .iter()
                    .find(|(_, c)| ObjId::from(*c) == o)
                    .map(|(n, _)| *n)
            })
            .unwrap_or_else(|| panic!("no name for {o:?}"))
    }

    /// `(prio, source)`: the donor's name, or `object@task` for a floor.
    fn row(&self, e: Effective) -> (u8, &'static str) {
        let source = match e.source {
            Source::Task(t) => self.name(t),
            Source::Floor { object, task } => {
                let s = format!("{}@{}", self.obj_name(object), self.name(task));
                &*Box::leak(s.into_boxed_str())
            }
            s => panic!("unknown source {s:?}"),
        };
        match e.urgency {
            Urgency::Fixed { prio } => (prio, source),
            u => panic!("not a fixed priority: {u}"),
        }
    }

    pub fn assert_eff(&self, rows: &[EffRow], ctx: &str) {
        for &(t, p, d) in rows {
            assert_eq!(self.eff(t), (p, d), "{ctx}: effective of {t}");
        }
    }

    pub fn change_rows(&self, changes: &Changes) -> Vec<ChangeRow> {
        changes
            .iter()
            .map(|c| {
                let (op, od) = self.row(c.old);
                let (np, nd) = self.row(c.new);
                (self.name(c.task), op, od, np, nd)
            })
            .collect()
    }

    /// Waiters of a mutex or condvar, by name, in wake order.
    pub fn waiters(&self, obj: &str) -> String {
        let b: ObjId = if self.mutexes.iter().any(|(n, _)| *n == obj) {
            self.m(obj).into()
        } else {
            self.c(obj).into()
        };
        let ts: Vec<TaskId> = self.e.waiters(b).unwrap().collect();
        self.names(&ts)
    }
}

/// Runs a table: each case on a fresh world from `world`.
pub fn run_table(world: impl Fn() -> World, cases: &[Case]) {
    for case in cases {
        let mut w = world();
        for op in case.setup {
            if let Err(err) = w.apply(*op) {
                panic!("{}: setup {op:?} failed: {err}", case.name);
            }
        }
        let (value, changes) = match w.apply(case.op) {
            Ok(r) => r,
            Err(err) => panic!("{}: {:?} failed: {err}", case.name, case.op),
        };
        assert_eq!(value, case.value, "{}: value", case.name);
        assert_eq!(
            w.change_rows(&changes),
            case.changes,
            "{}: changes",
            case.name
        );
        w.assert_eff(case.after, case.name);
    }
}
