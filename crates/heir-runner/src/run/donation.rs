//! `heir run` under the donation model (`global.ipc: "donation"`, NOVA
//! donation): every endpoint is a [`donate::Endpoint`], so the kernel lends a
//! caller's priority (or deadline) to the one thread serving its request —
//! helping and transitivity through nested calls included — through a PI
//! futex per request.
//!
//! - A serving thread joins its endpoints before the run starts
//!   ([`add_servers`]; a `passive` task becomes `SCHED_IDLE` there, the
//!   documented approximation of "no scheduling context"). Each `serve`
//!   event is one [`donate::Endpoint::receive_until`], the handler's steps
//!   in order ([`Step`]: `run`, `lock`, `unlock`, `sleep`, nested `call`), and one
//!   [`donate::Endpoint::reply`].
//! - Each `call` (an event, or a handler's nested call) is one
//!   [`donate::Endpoint::call_until`] with the deadline min(end of the run,
//!   call start + `timeout`). [`Error::TimedOut`] before the end of the run
//!   is an abort (the thread's `aborted_calls`); [`Error::CallCycle`] ends
//!   the run like a deadlock, a `"livelock"` when an edge of the cycle is
//!   helping, with the cycle named by threads and endpoints as the
//!   simulator names it (`Z -> y -> Y -> z -> Z`).
//! - A timeout takes effect in the kernel only when the caller runs, and a
//!   server boosted to the caller's own priority keeps the CPU (FIFO among
//!   equals): a request carries the earliest timeout along its donation
//!   chain, and the thread serving it yields the CPU while that moment is
//!   [`TIMEOUT_YIELD_NS`] old, so that the caller can run, leave the PI
//!   chain and take the server's boost with it.
//!
//! The log ([`super::RealRun::log`]) shows the handler's steps:
//! `PATH: run` when the handler's `run` ended, `PATH: call E` when its
//! nested call to `E` returned, `PATH: reply (C's call)` just before the
//! reply to thread `C` (whose call may have been aborted: the reply is then
//! dropped), and a caller's aborted call as `PATH: aborted (timeout)`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use heir_report::DeadlockKind;
use heir_scenario::{CallSpec, Event, EventKind, HandlerEvent, IpcModel, Micros, Scenario};

use super::{Ctx, Res, Stop};
use heir::{donate, sys, Error};
use heir_scenario::messages;

/// How long after a request's timeout its serving thread keeps yielding
/// the CPU at each check (every few µs of its work), so that the timed-out
/// caller — woken by the kernel at that moment, at the priority the server
/// runs on — gets to run (100 µs).
pub const TIMEOUT_YIELD_NS: u64 = 100_000;

/// One call: to an endpoint, with its timeout, and what the serving thread
/// does for it.
#[derive(Debug)]
pub(super) struct CallPlan {
    /// The endpoint (a resource index).
    pub endpoint: usize,
    /// µs after which the caller gives up (the call is aborted).
    pub timeout_us: Option<u64>,
    /// The handler: what the serving thread does, in order, before it
    /// replies.
    pub handler: Vec<Step>,
}

/// A step of a handler, as the scenario's call object lists it.
#[derive(Debug)]
pub(super) enum Step {
    /// `run` µs of CPU time.
    Run(Micros),
    /// Lock a mutex of the run (a handler that blocks: the kernel passes
    /// the lent priority on to the owner of a PI mutex).
    Lock(usize),
    /// Unlock a mutex the handler locked.
    Unlock(usize),
    /// Sleep (the server blocks; its caller keeps waiting).
    Sleep(Micros),
    /// A nested call, on the time the serving thread runs on.
    Call(Arc<CallPlan>),
}

impl CallPlan {
    /// The plan of a call to `endpoint` whose handler is `run` alone, or
    /// what the scenario lists for it (`spec`: handler, timeout, nested
    /// calls).
    fn of(endpoint: usize, run: Micros, spec: Option<&CallSpec>) -> CallPlan {
        let handler = match spec {
            Some(spec) if !spec.handler.is_empty() => spec
                .handler
                .iter()
                .map(|h| match &h.event {
                    HandlerEvent::Run(m) => Step::Run(*m),
                    HandlerEvent::Lock(r) => Step::Lock(r.0),
                    HandlerEvent::Unlock(r) => Step::Unlock(r.0),
                    HandlerEvent::Sleep(m) => Step::Sleep(*m),
                    HandlerEvent::Call(c) => {
                        Step::Call(Arc::new(CallPlan::of(c.endpoint.0, c.run, Some(c))))
                    }
                })
                .collect(),
            _ => vec![Step::Run(run)],
        };
        CallPlan {
            endpoint,
            timeout_us: spec.and_then(|s| s.timeout_us),
            handler,
        }
    }
}

/// What a caller hands the serving thread.
#[derive(Debug)]
pub(super) struct Request {
    plan: Arc<CallPlan>,
    /// The calling thread (its index in start order).
    caller: usize,
    /// The earliest timeout (ns, `CLOCK_MONOTONIC`) along the donation
    /// chain that reaches the serving thread through this request: when it
    /// passes, the server yields ([`TIMEOUT_YIELD_NS`]).
    timeout_at: Option<u64>,
}

/// A donating endpoint of the run.
pub(super) type DonEndpoint = donate::Endpoint<Request, ()>;

/// The donation model's run-wide state.
#[derive(Debug)]
pub(super) struct Donation {
    /// The plan of each `call` event, by its JSON path.
    plans: HashMap<String, Arc<CallPlan>>,
    /// The endpoint each thread (tid) is calling now: to name a cycle.
    calling: Mutex<HashMap<i32, usize>>,
    /// Thread names, in start order.
    thread_names: Vec<String>,
    /// Per task: the endpoints it serves.
    serves: Vec<Vec<usize>>,
    /// Per task: `"passive": true`.
    passive: Vec<bool>,
    /// Some call has a timeout: every thread's report counts aborted calls
    /// (as the simulator's).
    pub count_aborts: bool,
}

impl Donation {
    /// The donation model's state for `scenario`; `None` under `"pi-cv"`.
    pub(super) fn of(scenario: &Scenario) -> Option<Donation> {
        if scenario.rpc.model != IpcModel::Donation {
            return None;
        }
        let mut plans = HashMap::new();
        let mut serves = Vec::new();
        for t in &scenario.tasks {
            let mut s = Vec::new();
            for e in t.phases.iter().flat_map(|p| &p.events) {
                match e.kind {
                    EventKind::Call { endpoint, run } => {
                        let spec = scenario.rpc.call_at(&e.path);
                        plans.insert(
                            e.path.clone(),
                            Arc::new(CallPlan::of(endpoint.0, run, spec)),
                        );
                    }
                    EventKind::Serve(r) if !s.contains(&r.0) => s.push(r.0),
                    _ => {}
                }
            }
            serves.push(s);
        }
        let count_aborts = scenario.rpc.calls.iter().any(|c| c.spec.has_timeout());
        Some(Donation {
            plans,
            calling: Mutex::new(HashMap::new()),
            thread_names: scenario
                .tasks
                .iter()
                .flat_map(|t| t.thread_names())
                .collect(),
            serves,
            passive: (0..scenario.tasks.len())
                .map(|ti| scenario.rpc.is_passive(heir_scenario::TaskIdx(ti)))
                .collect(),
            count_aborts,
        })
    }

    /// Whether task `ti` is passive.
    pub(super) fn is_passive(&self, ti: usize) -> bool {
        self.passive.get(ti).copied().unwrap_or(false)
    }

    fn set_calling(&self, tid: i32, endpoint: Option<usize>) {
        if let Ok(mut m) = self.calling.lock() {
            match endpoint {
                Some(e) => {
                    m.insert(tid, e);
                }
                None => {
                    m.remove(&tid);
                }
            }
        }
    }
}

/// The calling thread (of task `ti`) becomes a server of each endpoint its
/// task serves, before the run starts (a call never finds an endpoint
/// without its servers); a passive task's thread switches to `SCHED_IDLE`.
pub(super) fn add_servers(res: &[Res], don: &Donation, ti: usize) -> Result<(), Error> {
    let passive = don.is_passive(ti);
    for &e in don.serves.get(ti).into_iter().flatten() {
        if let Some(Res::Donate(ep)) = res.get(e) {
            ep.add_server(passive)?;
        }
    }
    Ok(())
}

/// The earlier of two optional instants.
fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How a call ended.
enum CallEnd {
    Replied,
    Aborted,
}

impl Ctx<'_> {
    fn don(&self) -> Option<&Donation> {
        self.sh.don.as_ref()
    }

    /// A `call` event under the donation model.
    pub(super) fn call_don(&mut self, ev: &Event) -> Result<(), Stop> {
        let Some(plan) = self.don().and_then(|d| d.plans.get(&ev.path)).cloned() else {
            return Ok(());
        };
        if let CallEnd::Aborted = self.call_plan(&plan)? {
            self.log_suffix = Some(": aborted (timeout)");
        }
        Ok(())
    }

    /// Calls `plan`'s endpoint and waits for the reply, the call's timeout
    /// (an abort, counted) or the end of the run.
    fn call_plan(&mut self, plan: &Arc<CallPlan>) -> Result<CallEnd, Stop> {
        let Some(Res::Donate(ep)) = self.sh.res.get(plan.endpoint) else {
            return Ok(CallEnd::Replied);
        };
        let end = self.end();
        let timeout_at = plan
            .timeout_us
            .map(|us| sys::now_ns().saturating_add(us.saturating_mul(1000)));
        let deadline = timeout_at.map_or(end, |t| t.min(end));
        // The server inherits this thread's pending timeouts too: it may
        // be running on the time of this thread's own caller.
        let inherited = Some(self.yield_at.get()).filter(|&t| t != u64::MAX);
        let req = Request {
            plan: plan.clone(),
            caller: self.idx,
            timeout_at: earliest(timeout_at, inherited),
        };
        let me = sys::gettid();
        if let Some(d) = self.don() {
            d.set_calling(me, Some(plan.endpoint));
        }
        let r = ep.call_until(req, Some(deadline));
        if let Some(d) = self.don() {
            d.set_calling(me, None);
        }
        match r {
            Ok(()) => Ok(CallEnd::Replied),
            Err(Error::TimedOut) if timeout_at.is_some_and(|t| t < end) => {
                self.aborted += 1;
                Ok(CallEnd::Aborted)
            }
            Err(Error::CallCycle { tids, livelock }) => {
                self.report_cycle(me, &tids, livelock, plan.endpoint);
                Err(Stop::Deadlock)
            }
            // No server left (they ended their loops, or exited at a stop):
            // the simulator's caller would wait until the end.
            Err(Error::TimedOut | Error::NoServer | Error::NoSuchThread(_)) => Err(Stop::End),
            Err(e) => Err(Stop::Failed(super::RunError::Runtime(e))),
        }
    }

    /// A `serve` event under the donation model: receive one request, run
    /// its handler's steps, reply.
    pub(super) fn serve_don(&mut self, ev: &Event, e: usize) -> Result<(), Stop> {
        let Some(Res::Donate(ep)) = self.sh.res.get(e) else {
            return Ok(());
        };
        let Some(req) = ep.receive_until(Some(self.end()))? else {
            return Err(Stop::End);
        };
        let saved = self.yield_at.replace(req.timeout_at.unwrap_or(u64::MAX));
        let r = self.handle(ev, &req);
        self.yield_at.set(saved);
        // A handler stopped by the end of the run, a cycle or a failure
        // replies to nobody: the run is over.
        r?;
        let who = self
            .don()
            .and_then(|d| d.thread_names.get(req.caller))
            .cloned()
            .unwrap_or_default();
        self.note(sys::now_ns(), format!("{}: reply ({who}'s call)", ev.path));
        ep.reply(())?;
        Ok(())
    }

    /// The handler of `req`, step by step, on the time lent to this thread.
    fn handle(&mut self, ev: &Event, req: &Request) -> Result<(), Stop> {
        for step in &req.plan.handler {
            match step {
                Step::Run(m) => {
                    let us = self.rng.draw(*m);
                    self.run_us(us)?;
                    self.note(sys::now_ns(), format!("{}: run", ev.path));
                }
                Step::Lock(r) => {
                    self.lock(*r)?;
                    self.note(sys::now_ns(), format!("{}: lock", ev.path));
                }
                Step::Unlock(r) => {
                    let r = *r;
                    self.unlock(r).map_err(|st| {
                        self.not_held(st, ev, || {
                            messages::mutex_not_held(self.name, &self.sh.res_names[r])
                        })
                    })?;
                    self.note(sys::now_ns(), format!("{}: unlock", ev.path));
                }
                Step::Sleep(m) => self.timed_event(&EventKind::Sleep(*m))?,
                Step::Call(plan) => {
                    let ended = self.call_plan(plan)?;
                    let name = self
                        .sh
                        .res_names
                        .get(plan.endpoint)
                        .cloned()
                        .unwrap_or_default();
                    let what = match ended {
                        CallEnd::Replied => format!("{}: call {name}", ev.path),
                        CallEnd::Aborted => format!("{}: call {name} aborted (timeout)", ev.path),
                    };
                    self.note(sys::now_ns(), what);
                }
            }
        }
        Ok(())
    }

    /// While a request this thread serves has a timeout that passed less
    /// than [`TIMEOUT_YIELD_NS`] ago: yields the CPU (the caller, woken by
    /// the kernel at the priority this thread runs on, then runs and leaves
    /// the PI chain). Never for a thread whose own policy is
    /// `SCHED_DEADLINE`: its yield would give up its runtime until its next
    /// period (a boost into the deadline class is replenished at once: that
    /// yield is only a yield).
    pub(super) fn yield_for_timeouts(&self, now: u64) {
        let at = self.yield_at.get();
        if now < at {
            return;
        }
        let own_deadline = || {
            sys::sched_getattr(sys::gettid()).is_ok_and(|a| a.sched_policy == sys::SCHED_DEADLINE)
        };
        if now >= at.saturating_add(TIMEOUT_YIELD_NS) || own_deadline() {
            self.yield_at.set(u64::MAX);
            return;
        }
        sys::sched_yield();
    }

    /// The kernel refused a call of this thread (`me`, calling `endpoint`)
    /// that would close a cycle: the run's deadlock report, a livelock when
    /// an edge is helping, the cycle named as the simulator names it
    /// (thread, the endpoint it calls, …, the first thread again).
    fn report_cycle(&self, me: i32, tids: &[i32], livelock: bool, endpoint: usize) {
        let names = self.sh.names.lock().map(|n| n.clone()).unwrap_or_default();
        let calling = self
            .don()
            .and_then(|d| d.calling.lock().ok().map(|c| c.clone()))
            .unwrap_or_default();
        let thread = |t: i32| names.get(&t).cloned().unwrap_or_else(|| format!("tid {t}"));
        let res = |e: usize| self.sh.res_names.get(e).cloned().unwrap_or_default();
        let mut cycle = Vec::new();
        match tids.split_last() {
            Some((last, rest)) if !rest.is_empty() => {
                for &t in rest {
                    cycle.push(thread(t));
                    let e = if t == me {
                        Some(endpoint)
                    } else {
                        calling.get(&t).copied()
                    };
                    if let Some(e) = e {
                        cycle.push(res(e));
                    }
                }
                cycle.push(thread(*last));
            }
            // The cycle runs through something heir does not record (a PI
            // mutex): name what is known.
            _ => {
                cycle.push(self.name.to_string());
                cycle.push(res(endpoint));
            }
        }
        let kind = if livelock {
            DeadlockKind::Livelock
        } else {
            DeadlockKind::Deadlock
        };
        self.record_deadlock(kind, cycle);
    }
}
