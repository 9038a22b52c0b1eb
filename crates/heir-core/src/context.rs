//! Scheduling contexts: whose *time* a task runs on, as opposed to whose
//! urgency (seL4 MCS's scheduling contexts, M-BWI's reservations, the NOVA
//! paper's timeslices).
//!
//! A context is an object of its own arena ([`ContextId`], generation
//! checked like tasks and objects): an optional [`Reservation`] (Q, D, P)
//! and the state the faces need to run time on it ([`Budget`]: remaining
//! budget, absolute deadline, throttled). A task is **bound** to at most
//! one context and a context to at most one task; a task bound to none is
//! **passive** (a NOVA or seL4 MCS passive server): it runs only on time
//! lent to it. [`Engine::add_task`] creates and binds a context without a
//! reservation (a task's own timeslice), [`Engine::add_passive_task`] none;
//! [`Engine::add_context`], [`Engine::bind`], [`Engine::unbind`] and
//! [`Engine::remove_context`] manage them explicitly.
//!
//! **Lending** follows the wait-for graph: a blocked task lends its context
//! along the edges of objects that lend time ([`Spec::lends_budget`]: `bwi`
//! mutexes, condition variables with helpers, endpoints), and its urgency
//! along every donating edge (an `inherit` mutex lends urgency, not time;
//! Linux's deadline inheritance lends *parameters*, kept on the owner's own
//! context: [`Engine::set_inherited`]). The engine keeps no clock: the
//! face that runs time calls the CBS operations (`budget.rs`:
//! [`Engine::start`], [`Engine::wakeup`], [`Engine::consume`],
//! [`Engine::throttle`], [`Engine::replenish`]) with its own instants, and
//! the engine answers:
//!
//! - [`Engine::consumer`]: which context a running task consumes — M-BWI's
//!   earliest-deadline context that is not throttled, among the task's own
//!   and those lent to it along the chains of its waiters (NOVA's donation
//!   chain for a passive server); [`Engine::lenders`] lists the lent ones;
//! - [`Engine::donors`]: which contexts come with the urgencies that reach
//!   a task, most urgent first;
//! - [`Engine::time_goes_to`]: where does a blocked task's time go — the
//!   runnable tasks at the ends of its chains, or why none can be reached.

use crate::state::ContextState;
use crate::{Engine, EngineError, ObjId, Source, Spec, TaskId, Urgency, MAX_CHAIN_DEPTH};

/// A scheduling context in the engine's arena: `.0` is its slot, `.1` the
/// slot's generation. A removed context's slot is reused by a later
/// context with the next generation, so a stale id is refused
/// ([`EngineError::StaleContext`]), never taken for the new context.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContextId(pub u32, pub u32);

/// `ContextId(3)` for generation 0, `ContextId(3, gen 2)` after.
impl core::fmt::Debug for ContextId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::object::fmt_id(f, "ContextId", self.0, self.1)
    }
}

/// A reservation: the CBS budget of a `SCHED_DEADLINE` context, runtime Q
/// every period P, relative deadline D (what the CBS literature calls a
/// constant-bandwidth server). Every field is at least 1 ns, and Q at
/// most `i64::MAX` ([`EngineError::BadReservation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reservation {
    /// Q: the budget per period, ns.
    pub runtime_ns: u64,
    /// D: the relative deadline, ns.
    pub deadline_ns: u64,
    /// P: the period, ns.
    pub period_ns: u64,
}

impl Reservation {
    /// Whether every field is at least 1 ns and Q at most `i64::MAX`.
    pub fn is_valid(&self) -> bool {
        self.runtime_ns > 0
            && self.deadline_ns > 0
            && self.period_ns > 0
            && self.runtime_ns <= i64::MAX as u64
    }
}

/// The state of a context that the face running time needs: what is left
/// of the budget, the absolute deadline it runs at, and whether it is
/// throttled (out of budget until its replenishment instant). All zero for
/// a context that never ran on a reservation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Budget left, ns; negative after an overrun.
    pub remaining_ns: i64,
    /// The absolute deadline, ns.
    pub deadline_ns: u64,
    /// Out of budget until replenished ([`Engine::replenish`]).
    pub throttled: bool,
}

/// What [`Engine::consumer`] answers: the context a running task consumes
/// and the absolute deadline it runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Consumed {
    /// The context.
    pub context: ContextId,
    /// Its absolute deadline, ns.
    pub deadline_ns: u64,
}

/// One entry of [`Engine::donors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Donor {
    /// The urgency it lends: its owner's base, or the floor.
    pub urgency: Urgency,
    /// The task whose base it is, or the object whose floor it is.
    pub source: Source,
    /// The context whose time comes with it: the task's, or for a floor
    /// (which lends urgency but no time) the context of the task it lifts;
    /// `None` for a passive task.
    pub context: Option<ContextId>,
}

/// Why a blocked task's time reaches no runnable task
/// ([`Engine::time_goes_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// `task` is blocked on `object`, which does not donate (a mutex
    /// without inheritance, a ceiling mutex, a gang): its time stops there.
    /// A helping cycle (the NOVA paper's livelock) shows as this.
    NotDonating {
        /// The blocked task where the walk stopped.
        task: TaskId,
        /// Its object.
        object: ObjId,
    },
    /// `task` is blocked on `object`, which has no target (a mutex the
    /// kernel is handing over, a condvar without helpers, a request no
    /// server took yet).
    NoTarget {
        /// The blocked task where the walk stopped.
        task: TaskId,
        /// Its object.
        object: ObjId,
    },
}

impl Engine {
    // ----- the arena -----

    /// The context `c` names: `UnknownContext` if its slot was never used,
    /// [`EngineError::StaleContext`] if it was removed.
    #[inline]
    pub(crate) fn ctx(&self, c: ContextId) -> Result<&ContextState, EngineError> {
        match self.contexts.get(c.0 as usize) {
            Some(cs) if cs.alive && cs.gen == c.1 => Ok(cs),
            Some(_) => Err(EngineError::StaleContext(c)),
            None => Err(EngineError::UnknownContext(c)),
        }
    }

    /// `c`'s state, mutable (the caller has checked `c`).
    #[inline]
    pub(crate) fn ctx_mut(&mut self, c: ContextId) -> &mut ContextState {
        &mut self.contexts[c.0 as usize]
    }

    /// Creates a context, bound to no task, with `reservation` (or none:
    /// a task's own timeslice) and a zero [`Budget`].
    ///
    /// Pre: `reservation`, if any, is valid ([`Reservation::is_valid`],
    /// else [`EngineError::BadReservation`]). Post: `bound_to(c) ==
    /// None`, `budget(c) == Budget::default()`. It takes the slot of the
    /// last context removed, if any (in the slot's next generation).
    pub fn add_context(
        &mut self,
        reservation: Option<Reservation>,
    ) -> Result<ContextId, EngineError> {
        if let Some(r) = reservation.filter(|r| !r.is_valid()) {
            return Err(EngineError::BadReservation(r));
        }
        Ok(self.new_context(reservation))
    }

    /// [`Engine::add_context`] without the check.
    pub(crate) fn new_context(&mut self, reservation: Option<Reservation>) -> ContextId {
        if let Some(slot) = self.free_contexts.pop() {
            let cs = &mut self.contexts[slot as usize];
            *cs = ContextState::new(reservation, cs.gen);
            return ContextId(slot, cs.gen);
        }
        self.contexts.push(ContextState::new(reservation, 0));
        ContextId(self.contexts.len() as u32 - 1, 0)
    }

    /// Removes a context.
    ///
    /// Pre: `c` is live and bound to no task ([`EngineError::ContextBound`]:
    /// unbind it first). Post: `c` is refused by every query
    /// ([`EngineError::StaleContext`]); its slot is free for a later context.
    pub fn remove_context(&mut self, c: ContextId) -> Result<(), EngineError> {
        if let Some(task) = self.ctx(c)?.bound {
            return Err(EngineError::ContextBound { context: c, task });
        }
        self.free_context(c);
        self.debug_validate();
        Ok(())
    }

    /// Frees `c`'s slot (checked and unbound by the caller).
    pub(crate) fn free_context(&mut self, c: ContextId) {
        let cs = self.ctx_mut(c);
        *cs = ContextState::new(None, cs.gen);
        cs.alive = false;
        // A slot whose generations ran out is retired, never reused.
        if let Some(gen) = cs.gen.checked_add(1) {
            cs.gen = gen;
            self.free_contexts.push(c.0);
        }
    }

    /// Binds context `c` to task `t`: `t` runs on it from now on.
    ///
    /// Pre: `t` is live and passive ([`EngineError::HasContext`]); `c` is
    /// live and bound to no task ([`EngineError::ContextBound`]). Post:
    /// `context(t) == Some(c)`, `bound_to(c) == Some(t)`. Urgencies are
    /// unchanged (a context carries time; a deadline base follows from it
    /// only through [`Engine::set_base`]), and so is the budget.
    pub fn bind(&mut self, t: TaskId, c: ContextId) -> Result<(), EngineError> {
        if let Some(has) = self.live(t)?.context {
            return Err(EngineError::HasContext {
                task: t,
                context: has,
            });
        }
        if let Some(task) = self.ctx(c)?.bound {
            return Err(EngineError::ContextBound { context: c, task });
        }
        self.ctx_mut(c).bound = Some(t);
        self.tasks[t.0 as usize].context = Some(c);
        self.debug_validate();
        Ok(())
    }

    /// Unbinds `t`'s context, which `t` leaves passive; returns it (live,
    /// bound to nothing, its budget kept).
    ///
    /// Pre: `t` is live and bound ([`EngineError::Passive`]). Post:
    /// `context(t) == None`, `bound_to(c) == None`.
    pub fn unbind(&mut self, t: TaskId) -> Result<ContextId, EngineError> {
        let Some(c) = self.live(t)?.context else {
            return Err(EngineError::Passive(t));
        };
        self.ctx_mut(c).bound = None;
        self.tasks[t.0 as usize].context = None;
        self.debug_validate();
        Ok(c)
    }

    /// The context `t` is bound to (`None`: a passive task, which runs
    /// only on lent time).
    #[inline]
    pub fn context(&self, t: TaskId) -> Result<Option<ContextId>, EngineError> {
        Ok(self.live(t)?.context)
    }

    /// The task context `c` is bound to, if any.
    #[inline]
    pub fn bound_to(&self, c: ContextId) -> Result<Option<TaskId>, EngineError> {
        Ok(self.ctx(c)?.bound)
    }

    /// Every live context, in id order.
    pub fn contexts(&self) -> impl Iterator<Item = ContextId> + '_ {
        self.contexts
            .iter()
            .enumerate()
            .filter(|(_, cs)| cs.alive)
            .map(|(i, cs)| ContextId(i as u32, cs.gen))
    }

    /// The slots of the context arena: the most contexts ever live at once.
    pub fn context_slots(&self) -> usize {
        self.contexts.len()
    }

    /// The reservation of context `c`, if it has one.
    #[inline]
    pub fn reservation(&self, c: ContextId) -> Result<Option<Reservation>, EngineError> {
        Ok(self.ctx(c)?.reservation)
    }

    /// Sets or clears the reservation of context `c` (its task's class
    /// changed). The budget is kept until the next [`Engine::start`];
    /// urgencies are unaffected (the base deadline is set with
    /// [`Engine::set_base`]).
    ///
    /// Pre: `c` is live; the reservation, if any, is valid. Post:
    /// `reservation(c) == reservation`; without one, `c` is not throttled.
    pub fn set_reservation(
        &mut self,
        c: ContextId,
        reservation: Option<Reservation>,
    ) -> Result<(), EngineError> {
        self.ctx(c)?;
        if let Some(r) = reservation.filter(|r| !r.is_valid()) {
            return Err(EngineError::BadReservation(r));
        }
        let cs = self.ctx_mut(c);
        cs.reservation = reservation;
        if reservation.is_none() {
            cs.budget.throttled = false;
        }
        self.debug_validate();
        Ok(())
    }

    // ----- lending -----

    /// The context running task `t` consumes, with its deadline (M-BWI's
    /// rule, the NOVA paper's donation chain): the earliest-deadline one
    /// that `usable` accepts (the face's exclusions: a context another CPU
    /// consumes, a CPU the task may not run on) among
    ///
    /// 1. `t`'s own context, if it has a deadline to run at (a reservation,
    ///    or parameters inherited from a deadline waiter:
    ///    [`Engine::set_inherited`]) and is not throttled;
    /// 2. the contexts lent to `t` ([`Engine::lenders`]) that are not
    ///    throttled.
    ///
    /// Ties: `t`'s own context first, then the lent one found first.
    /// `None`: nothing to run on (a throttled deadline task, a passive
    /// task nobody lends to, a task without a deadline anywhere).
    ///
    /// Pre: `t` is live. No state changes.
    pub fn consumer(
        &self,
        t: TaskId,
        mut usable: impl FnMut(ContextId) -> bool,
    ) -> Result<Option<Consumed>, EngineError> {
        let ts = self.live(t)?;
        let mut best = self.own_consumed(ts).filter(|b| usable(b.context));
        self.for_each_lender_task(t, |w| {
            let Some(c) = self.tasks[w.0 as usize].context else {
                return;
            };
            let cs = &self.contexts[c.0 as usize];
            let d = cs.budget.deadline_ns;
            if cs.reservation.is_none()
                || cs.budget.throttled
                || best.is_some_and(|b| d >= b.deadline_ns)
            {
                return;
            }
            if usable(c) {
                best = Some(Consumed {
                    context: c,
                    deadline_ns: d,
                });
            }
        });
        Ok(best)
    }

    /// [`Engine::consumer`] when nothing lends `t` time (a face that knows
    /// no object lends time skips the walk): `t`'s own context if it has a
    /// deadline to run at and is not throttled.
    ///
    /// Pre: `t` is live. No state changes.
    #[inline]
    pub fn own_consumer(&self, t: TaskId) -> Result<Option<Consumed>, EngineError> {
        Ok(self.own_consumed(self.live(t)?))
    }

    /// Rule 1 of [`Engine::consumer`] for the task `ts`.
    #[inline]
    fn own_consumed(&self, ts: &crate::state::TaskState) -> Option<Consumed> {
        let c = ts.context?;
        let cs = &self.contexts[c.0 as usize];
        (cs.has_deadline() && !cs.budget.throttled).then_some(Consumed {
            context: c,
            deadline_ns: cs.budget.deadline_ns,
        })
    }

    /// The contexts lent to `t`, written into `out` (cleared first): the
    /// contexts with a reservation of the tasks blocked upstream of `t`
    /// through objects that lend time (`donates && lends_budget`),
    /// transitively (through passive and non-deadline waiters too),
    /// throttled or not, breadth-first up the chains (objects in the order
    /// `t` became their target, waiters in wake order), each once. At most
    /// [`Engine::MAX_LENDERS`] tasks are followed upstream.
    ///
    /// Pre: `t` is live. No state changes.
    pub fn lenders(&self, t: TaskId, out: &mut Vec<ContextId>) -> Result<(), EngineError> {
        out.clear();
        self.live(t)?;
        self.for_each_lender_task(t, |w| {
            if let Some(c) = self.tasks[w.0 as usize].context {
                if self.contexts[c.0 as usize].reservation.is_some() {
                    out.push(c);
                }
            }
        });
        Ok(())
    }

    /// The walk of [`Engine::lenders`] and [`Engine::consumer`]: `f` of
    /// each task blocked upstream of `t` through objects that lend time,
    /// transitively, breadth-first (objects in the order `t` became their
    /// target, waiters in wake order), each once, at most
    /// [`Engine::MAX_LENDERS`] of them. Allocates only when some object
    /// lends `t` time (the scheduling path calls it for every pick).
    ///
    /// Pre: `t` is live.
    fn for_each_lender_task(&self, t: TaskId, mut f: impl FnMut(TaskId)) {
        let mut frontier: Vec<TaskId> = Vec::new();
        let mut next = 0;
        let mut u = t;
        loop {
            for &o in &self.tasks[u.0 as usize].targeted {
                let os = &self.objs[o.0 as usize];
                if !Engine::lends_time(&os.spec) {
                    continue;
                }
                for w in &os.queue.waiters {
                    let w = w.task;
                    if frontier.is_empty() {
                        frontier.push(t);
                    }
                    if frontier.len() > Engine::MAX_LENDERS || frontier.contains(&w) {
                        continue;
                    }
                    frontier.push(w);
                    f(w);
                }
            }
            next += 1;
            match frontier.get(next) {
                Some(&v) => u = v,
                None => return,
            }
        }
    }

    /// The most tasks [`Engine::lenders`] follows upstream of one task.
    pub const MAX_LENDERS: usize = 4096;

    /// Whether an object of `spec` lends its waiters' time (their
    /// contexts) to its targets, not only their urgency.
    #[inline]
    pub fn lends_time(spec: &Spec) -> bool {
        spec.donates && spec.lends_budget
    }

    /// Every context `t` may run on, most urgent first, written into `out`
    /// (cleared first): `t`'s own, and those of the tasks upstream of it
    /// through donating objects (the tasks whose urgency can reach `t`),
    /// each with its owner's base urgency; and the floors on the way (each
    /// with the context of the task it lifts). The first entry's urgency is
    /// `t`'s effective urgency. Ties keep discovery order: `t` first,
    /// then breadth-first up the chains, waiters in wake order.
    ///
    /// The face that runs time picks the first entry whose context has
    /// budget left and is not being consumed on another CPU (see the crate
    /// docs: budgets are exclusive).
    pub fn donors(&self, t: TaskId, out: &mut Vec<Donor>) -> Result<(), EngineError> {
        out.clear();
        let ts = self.live(t)?;
        out.push(Donor {
            urgency: ts.base,
            source: Source::Task(t),
            context: ts.context,
        });
        // Breadth-first up the chains: `out[k]` for k ≥ `next` are tasks
        // whose own inputs are still to be read. The graph is a DAG, so a
        // task can be reached twice (a diamond): it is listed once.
        let mut seen = Seen::Scan;
        let mut next = 0;
        while next < out.len() {
            let Source::Task(u) = out[next].source else {
                next += 1;
                continue;
            };
            next += 1;
            let us = &self.tasks[u.0 as usize];
            for &o in &us.inputs {
                let os = &self.objs[o.0 as usize];
                if let Some(f) = os.spec.floor {
                    // A floor lends urgency, not time: the time is that of
                    // the task it lifts.
                    out.push(Donor {
                        urgency: f,
                        source: Source::Floor { object: o, task: u },
                        context: us.context,
                    });
                }
                if !os.spec.donates {
                    continue;
                }
                for w in &os.queue.waiters {
                    if seen.insert(w.task, out) {
                        let ws = &self.tasks[w.task.0 as usize];
                        out.push(Donor {
                            urgency: ws.base,
                            source: Source::Task(w.task),
                            context: ws.context,
                        });
                    }
                }
            }
        }
        // Stable: equal urgencies keep discovery order.
        out.sort_by_key(|d| core::cmp::Reverse(d.urgency));
        Ok(())
    }

    /// Where `t`'s time goes: the runnable tasks at the ends of its chains,
    /// in chain order (depth first, targets in order, each once), written
    /// into `out` (cleared first) — `t` itself if it is not blocked.
    ///
    /// `Err` when no runnable end can be reached, with the first place the
    /// walk stopped. With a fan-out (a condvar with several helpers) the
    /// time may go to any of the ends, one CPU at a time.
    pub fn time_goes_to(&self, t: TaskId, out: &mut Vec<TaskId>) -> Result<(), TimeError> {
        out.clear();
        self.live(t).map_err(TimeError::Engine)?;
        let mut stall: Option<Stall> = None;
        let mut stack: Vec<(TaskId, usize)> = vec![(t, 0)];
        while let Some((u, depth)) = stack.pop() {
            let Some(o) = self.tasks[u.0 as usize].blocked else {
                if !out.contains(&u) {
                    out.push(u);
                }
                continue;
            };
            let os = &self.objs[o.0 as usize];
            let stop = if !os.spec.donates {
                Some(Stall::NotDonating { task: u, object: o })
            } else if os.targets.is_empty() {
                Some(Stall::NoTarget { task: u, object: o })
            } else {
                None
            };
            if let Some(s) = stop {
                stall.get_or_insert(s);
                continue;
            }
            if depth >= MAX_CHAIN_DEPTH {
                continue;
            }
            // Reversed so that the first target is walked first.
            for &v in os.targets.iter().rev() {
                stack.push((v, depth + 1));
            }
        }
        match (out.is_empty(), stall) {
            (true, Some(s)) => Err(TimeError::Stalled(s)),
            _ => Ok(()),
        }
    }
}

/// The tasks [`Engine::donors`] has listed: found by scanning the list
/// while it is short, by a bit per task once it is long (a server with
/// hundreds of donors would otherwise cost a scan per donor).
enum Seen {
    Scan,
    Bits(Vec<u64>),
}

impl Seen {
    /// The list length from which a bit set is kept.
    const SCAN_UP_TO: usize = 32;

    /// Marks `t` as listed; false if it already was (`out`: the list so
    /// far).
    fn insert(&mut self, t: TaskId, out: &[Donor]) -> bool {
        if let Seen::Scan = self {
            if out.len() < Seen::SCAN_UP_TO {
                return !out.iter().any(|d| d.source == Source::Task(t));
            }
            let mut bits = Vec::new();
            for d in out {
                if let Source::Task(u) = d.source {
                    Seen::set(&mut bits, u);
                }
            }
            *self = Seen::Bits(bits);
        }
        match self {
            Seen::Bits(bits) => Seen::set(bits, t),
            Seen::Scan => true,
        }
    }

    /// Sets `t`'s bit; false if it was set.
    fn set(bits: &mut Vec<u64>, t: TaskId) -> bool {
        let (word, bit) = (t.0 as usize / 64, t.0 % 64);
        if bits.len() <= word {
            bits.resize(word + 1, 0);
        }
        let was = bits[word] & (1 << bit) != 0;
        bits[word] |= 1 << bit;
        !was
    }
}

/// Why [`Engine::time_goes_to`] found no runnable task.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// The task's chains stop before a runnable task.
    #[error("the task's time reaches no runnable task: {0:?}")]
    Stalled(Stall),
    /// The query itself was refused (unknown task).
    #[error(transparent)]
    Engine(EngineError),
}
