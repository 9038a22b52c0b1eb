//! Scheduling contexts: whose *time* a task runs on, as opposed to whose
//! urgency (seL4 MCS's scheduling contexts, M-BWI's reservations, the NOVA paper's
//! timeslices).
//!
//! Each task owns a context; a blocked task lends its context down its
//! chain, so a target may run on any context lent to it. The engine keeps
//! no clock: the face that runs time (simulator, runtime) consumes and
//! replenishes budgets, throttles a context whose budget ran out (by
//! moving its owner's base deadline with [`Engine::set_base`]) and makes
//! sure no context is consumed by two CPUs at once. The engine answers two
//! questions:
//!
//! - [`Engine::donors`]: which contexts may this task run on, most urgent
//!   first — its own, and that of every task upstream of it through
//!   donating objects (and the floors it has, which lend urgency but no
//!   time);
//! - [`Engine::time_goes_to`]: where does a blocked task's time go — the
//!   runnable tasks at the ends of its chains, or why none can be reached.

use crate::{Engine, EngineError, ObjId, Source, TaskId, Urgency, MAX_CHAIN_DEPTH};

/// A scheduling context in the engine's arena: `.0` its slot (its owner's
/// task slot), `.1` the generation (its owner's). Removed with its owner:
/// a stale id is refused ([`EngineError::UnknownContext`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContextId(pub u32, pub u32);

/// `ContextId(3)` for generation 0, `ContextId(3, gen 2)` after.
impl core::fmt::Debug for ContextId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::object::fmt_id(f, "ContextId", self.0, self.1)
    }
}

/// A reservation: the CBS budget of a `SCHED_DEADLINE` task, runtime Q every
/// period P, relative deadline D (what the CBS literature calls a
/// constant-bandwidth server). The engine stores it for
/// the faces; the budget left and the current absolute deadline live in the
/// face that runs time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reservation {
    /// Q: the budget per period, ns.
    pub runtime_ns: u64,
    /// D: the relative deadline, ns.
    pub deadline_ns: u64,
    /// P: the period, ns.
    pub period_ns: u64,
}

/// One entry of [`Engine::donors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Donor {
    /// The urgency it lends: its owner's base, or the floor.
    pub urgency: Urgency,
    /// The task whose base it is, or the object whose floor it is.
    pub source: Source,
    /// The context whose time comes with it: the task's own, or for a floor
    /// (which lends urgency but no time) the context of the task it lifts;
    /// `None` for a task without a context.
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
    /// The context `t` owns (`None`: it runs only on lent time).
    pub fn context(&self, t: TaskId) -> Result<Option<ContextId>, EngineError> {
        Ok(self.live(t)?.context)
    }

    /// The context `c` names, if its owner is live and of its generation.
    fn ctx(&self, c: ContextId) -> Result<&crate::state::ContextState, EngineError> {
        match self.contexts.get(c.0 as usize) {
            Some(cs) if cs.owner.1 == c.1 && self.live(cs.owner).is_ok() => Ok(cs),
            _ => Err(EngineError::UnknownContext(c)),
        }
    }

    /// The task that owns context `c`.
    pub fn context_owner(&self, c: ContextId) -> Result<TaskId, EngineError> {
        Ok(self.ctx(c)?.owner)
    }

    /// The reservation of context `c`, if it is one.
    pub fn reservation(&self, c: ContextId) -> Result<Option<Reservation>, EngineError> {
        Ok(self.ctx(c)?.reservation)
    }

    /// Sets or clears the reservation of context `c` (its owner's class
    /// changed). Urgencies are unaffected: the base deadline is set with
    /// [`Engine::set_base`].
    pub fn set_reservation(
        &mut self,
        c: ContextId,
        reservation: Option<Reservation>,
    ) -> Result<(), EngineError> {
        self.ctx(c)?;
        self.contexts[c.0 as usize].reservation = reservation;
        Ok(())
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
