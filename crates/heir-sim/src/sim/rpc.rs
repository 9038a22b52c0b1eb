//! RPC under the donation model (`global.ipc: "donation"`, NOVA donation:
//! NOVA's timeslice donation and helping).
//!
//! # Engine objects
//!
//! Per endpoint: a **help** object (kind endpoint, donating, no target
//! limit) whose targets are every serving thread of the endpoint, for the
//! whole run; a caller that finds no server waiting for a call blocks on
//! it — it *helps* the endpoint's servers (the NOVA paper's Fig. 3 right: the
//! dashed helping link) — and an **idle** condvar, without helpers, on
//! which servers wait for a call. Per (calling thread, endpoint): a
//! **request** object ([`heir_core::Spec::ENDPOINT`]: one target): while
//! its call is being served the caller is blocked on it and its one target
//! is the thread serving the call (Fig. 3 left: the solid donation link).
//! With `pi_cv` off these objects do not donate.
//!
//! # A call
//!
//! 1. The caller queues nothing: if a server waits for a call, the first
//!    one (most urgent, FIFO) takes it at once — the caller blocks on its
//!    request object, which targets that server, and the server goes to
//!    the **head** of its run-queue level (a direct switch: it runs in
//!    the caller's place on the caller's time).
//! 2. Otherwise the caller helps: it blocks on the endpoint's help object.
//!    A server that next waits for a call takes the most urgent helping caller's
//!    call instead of waiting (the helping caller's retry, which in NOVA succeeds
//!    for the helping caller that is selected first: the most urgent one).
//! 3. The server runs the call's handler event by event (`Step::Work`): a
//!    `run`, a `lock` or `unlock` (engine mutex operations), a `sleep`, a
//!    nested `call` (as a caller itself, `Step::Nested`: its time is the
//!    time lent to it, so the donation goes on down the chain); a plain
//!    call's handler is its one `run`. Then it replies: the caller wakes
//!    (tail of its level) and the server loses what the caller lent.
//! 4. A `timeout` that passes first aborts the call: the caller stops
//!    waiting (counted in its report), its request object loses its
//!    target, and the server goes on with the request without the
//!    caller's time; at the reply nobody wakes.
//!
//! The reply wakes only the caller: the server does not hand the time it
//! runs on to the caller (the NOVA paper's donation counter): a caller runs on
//! its own context or what is lent to it, never on a helping caller's.
//!
//! # Blocking handlers (the NOVA paper's Figs. 5–6)
//!
//! A handler's `lock` of a held mutex or its `sleep` blocks the server
//! while it runs on lent time. Nothing is taken back: its callers and
//! helping callers stay blocked on the request and help objects, so their
//! contexts — NOVA's timeslices — are **parked** on the server: none is in
//! a run queue (they belong to blocked threads; `check_donation`). Blocked
//! on an `inherit`/`bwi` mutex, the server passes them on to the owner
//! (the engine's chain walk); blocked in a sleep or on a `none` mutex,
//! they stop there (`time_goes_to` stalls). When the server unblocks it
//! goes back to the run queue **once**, at the rank of the most urgent
//! context it may use (its effective urgency; under `SCHED_DEADLINE` the
//! earliest lent reservation with budget): NOVA's staggered wake-up, whose
//! other timeslices stay linked behind the first. When that context
//! leaves (reply, abort) or lowers its urgency (a boost of its own ends,
//! its budget runs out), the engine's change re-queues the server at the
//! next one. The cost of the wake-up does not depend on the number of
//! donors, and the order of execution is NOVA's.
//!
//! # Livelock
//!
//! A call that would close a cycle of the wait-for graph through a help
//! object (the NOVA paper's Fig. 7: Y serves C and calls Z, Z's handler calls Y,
//! which is busy: Z would help Y, which waits for Z) is refused by the
//! engine before any time passes; the run stops and reports a
//! `"livelock"` with the cycle. NOVA detects the same cycle when a helping
//! chain grows longer than the number of threads; heir sees it at the
//! call that closes it. A server calling its own endpoint leaves the help
//! object's targets for the duration of its call (it helps the other
//! servers, as a condvar's helper that waits on it stops helping it,
//! `Simulator::op_wait`); as the endpoint's only server it stays, and the
//! cycle `Y -> y -> Y` is the livelock.

use super::*;
use heir_core::{ObjId, ObjKind, Spec};
use heir_scenario::{CallSpec, HandlerEvent};
use std::collections::HashMap;

/// A donation endpoint's engine objects.
#[derive(Clone, Copy, Debug)]
pub(super) struct Don {
    /// Callers that found no server waiting help here; its targets are the
    /// endpoint's serving threads.
    pub help: ObjId,
    /// Servers wait here for a call.
    pub idle: SimCond,
}

/// Where a call stands (caller side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallState {
    /// Helping: no server has taken it yet.
    Pending,
    /// Served by this thread.
    Taken(u32),
    /// Replied to.
    Replied,
    /// Timed out.
    Aborted,
}

/// What the server does for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Work {
    /// A plain call: this many ns of work (drawn when the call was made).
    Plain(u64),
    /// The handler at this index of the simulator's arena, event by event
    /// (each duration drawn when the server reaches it).
    Handler(u32),
}

/// A call in progress, of the thread that makes it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Call {
    pub r: usize,
    pub req: ObjId,
    pub work: Work,
    pub state: CallState,
}

/// A request being served, of the serving thread.
#[derive(Clone, Copy, Debug)]
pub(super) struct Serving {
    /// The calling thread; `None` once its call was aborted.
    pub caller: Option<u32>,
    pub req: ObjId,
    pub work: Work,
    /// The handler's next event (a plain call: 0 before its work, 1 after).
    pub pc: u32,
}

/// A call spec with a handler, in the simulator's arena.
#[derive(Debug)]
pub(super) struct Handler<'s> {
    pub spec: &'s CallSpec,
    /// Per handler event: the arena index of its nested call
    /// (`u32::MAX` for the other events).
    pub nested: Vec<u32>,
}

/// The arena of every call spec of the scenario (top-level calls recorded
/// in `rpc.calls`, and their nested calls), and the top-level ones by path.
pub(super) fn handler_arena(sc: &Scenario) -> (Vec<Handler<'_>>, HashMap<&str, u32>) {
    fn add<'s>(spec: &'s CallSpec, out: &mut Vec<Handler<'s>>) -> u32 {
        let me = out.len();
        out.push(Handler {
            spec,
            nested: Vec::new(),
        });
        let nested = spec
            .handler
            .iter()
            .map(|h| match &h.event {
                HandlerEvent::Call(c) => add(c, out),
                _ => u32::MAX,
            })
            .collect();
        out[me].nested = nested;
        me as u32
    }
    let mut out = Vec::new();
    let mut at = HashMap::new();
    for c in &sc.rpc.calls {
        let i = add(&c.spec, &mut out);
        at.insert(c.path.as_str(), i);
    }
    (out, at)
}

/// The spec of a help object (`donates`: `pi_cv`).
pub(super) fn help_spec(donates: bool) -> Spec {
    Spec {
        kind: ObjKind::Endpoint,
        donates,
        max_targets: None,
        floor: None,
        // A donating request or help object lends the caller's time.
        lends_budget: donates,
    }
}

/// The spec of a request object (`donates`: `pi_cv`).
pub(super) fn request_spec(donates: bool) -> Spec {
    Spec {
        donates,
        ..Spec::ENDPOINT
    }
}

impl<'s, 'o> Simulator<'s, 'o> {
    /// The donation objects of endpoint `r`, if it uses the donation model.
    pub(super) fn don_of(&self, r: usize) -> Option<Don> {
        match self.res_state.get(r) {
            Some(ResState::Endpoint { don, .. }) => *don,
            _ => None,
        }
    }

    /// Whether engine object `o` is a help object (a cycle through it is a
    /// livelock).
    pub(super) fn is_help(&self, o: ObjId) -> bool {
        self.res_state
            .iter()
            .any(|s| matches!(s, ResState::Endpoint { don: Some(d), .. } if d.help == o))
    }

    /// A passive thread that nobody lends to: it may not run.
    pub(super) fn stalled(&self, t: u32) -> bool {
        let th = &self.threads[t as usize];
        th.passive && th.eff.donor() == th.eng
    }

    fn eng_err(&self, t: u32, e: EngineError) -> Box<Stop> {
        match e {
            EngineError::Cycle { cycle } => self.deadlock(&cycle),
            e => self.internal(t, e),
        }
    }

    /// `call` under the donation model: start the call, then wait until
    /// it is replied to or aborted.
    pub(super) fn ev_call_don(&mut self, t: u32, r: usize, run: Micros, ev: &Event) -> R<Flow> {
        match self.step_of_don(t) {
            Step::Start => {
                let (work, timeout) = match self.handler_at.get(ev.path.as_str()) {
                    Some(&h) => (
                        Work::Handler(h),
                        self.handlers
                            .get(h as usize)
                            .and_then(|x| x.spec.timeout_us),
                    ),
                    None => (Work::Plain(self.draw(run)), None),
                };
                self.threads[t as usize].step = Step::AwaitReply;
                self.begin_call(t, r, work, timeout, ev)?;
                Ok(Flow::Leave)
            }
            _ => {
                if self.call_over(t)? {
                    Ok(Flow::Next)
                } else {
                    Ok(Flow::Leave)
                }
            }
        }
    }

    fn step_of_don(&self, t: u32) -> Step {
        self.threads[t as usize].step
    }

    /// True (and the call forgotten) when `t`'s call was replied to or
    /// aborted.
    /// A server that called its own endpoint helps it again.
    fn call_over(&mut self, t: u32) -> R<bool> {
        let th = &mut self.threads[t as usize];
        match th.call.as_ref().map(|c| c.state) {
            Some(CallState::Replied | CallState::Aborted) | None => {
                th.call = None;
                if let Some(help) = th.unhelped.take() {
                    // `t` runs (it is blocked on nothing): no cycle.
                    let eng = th.eng;
                    match self.engine.add_target(help, eng) {
                        Ok(ch) => self.apply_changes(&ch),
                        Err(e) => return Err(self.internal(t, e)),
                    }
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// `t` calls endpoint `r`: handed to a waiting server, or helping.
    /// `t` leaves its CPU either way. A call refused (the livelock or
    /// deadlock it would close ends the run) leaves no call behind.
    fn begin_call(
        &mut self,
        t: u32,
        r: usize,
        work: Work,
        timeout_us: Option<u64>,
        ev: &Event,
    ) -> R<()> {
        let res = self.begin_call_inner(t, r, work, timeout_us, ev);
        if res.is_err() {
            self.threads[t as usize].call = None;
        }
        res
    }

    fn begin_call_inner(
        &mut self,
        t: u32,
        r: usize,
        work: Work,
        timeout_us: Option<u64>,
        ev: &Event,
    ) -> R<()> {
        let Some(don) = self.don_of(r) else {
            return Err(self.bad_kind_don(ev));
        };
        let Some(req) = self.threads[t as usize]
            .reqs
            .iter()
            .find(|x| x.0 == r)
            .map(|x| x.1)
        else {
            return Err(stop(at_event(ev, "caller without a request object")));
        };
        let th = &mut self.threads[t as usize];
        th.call = Some(Call {
            r,
            req,
            work,
            state: CallState::Pending,
        });
        th.call_gen = th.call_gen.wrapping_add(1);
        let gen = th.call_gen;
        let eng = th.eng;
        self.instant(t, InstantKind::Call, r);
        if let Some(us) = timeout_us {
            let at = self.now.saturating_add(us_to_ns(us));
            self.evq.push(at, EvKind::Timeout, t, gen);
        }
        let idle = self
            .engine
            .waiters(don.idle.id)
            .ok()
            .and_then(|mut w| w.next());
        match idle.and_then(|s| self.thread_of(s)) {
            Some(s) => {
                // Take the waiting server off the idle condvar, then hand
                // it the call.
                match self.engine.cond_signal_into(don.idle.id, &mut self.changes) {
                    Ok(_) => self.apply_buffered(),
                    Err(e) => return Err(self.internal(t, e)),
                }
                match self.engine.block(eng, req) {
                    Ok(ch) => self.apply_changes(&ch),
                    Err(e) => return Err(self.eng_err(t, e)),
                }
                self.take_call(s, t)?;
                self.block(t);
                // A direct switch: the server takes the caller's place.
                self.wake_at_head(s)?;
            }
            None => {
                // A server of the endpoint calling it does not help
                // itself (it cannot take its own call): it leaves the
                // help object's targets until its call is over, and helps
                // the other servers (none: the call can never be served,
                // the cycle t -> help -> t is reported).
                let own = self
                    .engine
                    .targets(don.help)
                    .is_ok_and(|ts| ts.contains(&eng) && ts.len() > 1);
                if own {
                    match self.engine.remove_target(don.help, eng) {
                        Ok(ch) => self.apply_changes(&ch),
                        Err(e) => return Err(self.internal(t, e)),
                    }
                    self.threads[t as usize].unhelped = Some(don.help);
                }
                match self.engine.block(eng, don.help) {
                    Ok(ch) => self.apply_changes(&ch),
                    Err(EngineError::Cycle { cycle }) => return Err(self.livelock(&cycle)),
                    Err(e) => return Err(self.internal(t, e)),
                }
                self.block(t);
            }
        }
        Ok(())
    }

    /// Server `s` takes the call of `c`, whose thread is already blocked
    /// on its request object (handed) or on the help object (helping).
    fn take_call(&mut self, s: u32, c: u32) -> R<()> {
        let c_eng = self.threads[c as usize].eng;
        let s_eng = self.threads[s as usize].eng;
        let Some(call) = self.threads[c as usize].call else {
            return Err(self.internal(s, EngineError::NotBlocked(c_eng)));
        };
        if self.engine.blocked_on(c_eng).ok().flatten() != Some(call.req) {
            // Helping until now: it retries, and the call is taken.
            match self.engine.cancel_wait(c_eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(c, e)),
            }
            match self.engine.block(c_eng, call.req) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.eng_err(c, e)),
            }
        }
        match self.engine.add_target(call.req, s_eng) {
            Ok(ch) => self.apply_changes(&ch),
            Err(EngineError::Cycle { cycle }) => return Err(self.livelock(&cycle)),
            Err(e) => return Err(self.internal(s, e)),
        }
        if let Some(cl) = self.threads[c as usize].call.as_mut() {
            cl.state = CallState::Taken(s);
        }
        self.threads[s as usize].dserve = Some(Serving {
            caller: Some(c),
            req: call.req,
            work: call.work,
            pc: 0,
        });
        Ok(())
    }

    /// A woken thread that takes its waker's place on the CPU: the head of
    /// its level.
    fn wake_at_head(&mut self, t: u32) -> R<()> {
        self.make_ready(t)?;
        self.queue_or_park(t, true);
        Ok(())
    }

    /// `serve` under the donation model: take a call (the most urgent
    /// helping caller's, or wait for one), run it and its nested call, reply.
    pub(super) fn ev_serve_don(&mut self, t: u32, r: usize, ev: &Event) -> R<Flow> {
        let Some(don) = self.don_of(r) else {
            return Err(self.bad_kind_don(ev));
        };
        match self.step_of_don(t) {
            Step::Start => {
                if self.threads[t as usize].dserve.is_some() {
                    self.goto_don(t, Step::Work);
                    return Ok(Flow::Same);
                }
                let top = self
                    .engine
                    .waiters(don.help)
                    .ok()
                    .and_then(|mut w| w.next())
                    .and_then(|c| self.thread_of(c));
                if let Some(c) = top {
                    self.take_call(t, c)?;
                    self.goto_don(t, Step::Work);
                    return Ok(Flow::Same);
                }
                let eng = self.threads[t as usize].eng;
                match self
                    .engine
                    .cond_wait_into(eng, don.idle.id, &mut self.changes)
                {
                    Ok(()) => {
                        self.instant(t, InstantKind::Wait, don.idle.res);
                        self.apply_buffered();
                    }
                    Err(e) => return Err(self.eng_err(t, e)),
                }
                self.block(t);
                Ok(Flow::Leave)
            }
            Step::Work => self.handler_step(t, ev),
            Step::Nested => {
                if self.call_over(t)? {
                    self.goto_don(t, Step::Work);
                    return Ok(Flow::Same);
                }
                Ok(Flow::Leave)
            }
            _ => {
                self.reply_don(t, r)?;
                Ok(Flow::Next)
            }
        }
    }

    /// The serving thread `t` does the next event of its handler (at
    /// `Step::Work`, back there when it is done), or replies after the
    /// last. A `lock` or a `sleep` may block it: it leaves its CPU holding
    /// the time lent to it (see the module docs, *Blocking handlers*).
    fn handler_step(&mut self, t: u32, ev: &Event) -> R<Flow> {
        let Some(sv) = self.threads[t as usize].dserve else {
            self.goto_don(t, Step::Reply);
            return Ok(Flow::Same);
        };
        let pc = sv.pc;
        if let Some(x) = self.threads[t as usize].dserve.as_mut() {
            x.pc = pc.saturating_add(1);
        }
        let h = match sv.work {
            Work::Plain(ns) if pc == 0 => return Ok(self.start_run(t, ns, Some(Step::Work))),
            Work::Plain(_) => None,
            Work::Handler(h) => self.handlers.get(h as usize).and_then(|x| {
                x.spec
                    .handler
                    .get(pc as usize)
                    .map(|s| (s, x.nested.get(pc as usize).copied()))
            }),
        };
        let Some((step, nested)) = h else {
            self.goto_don(t, Step::Reply);
            return Ok(Flow::Same);
        };
        match &step.event {
            HandlerEvent::Run(m) => {
                let ns = self.draw(*m);
                Ok(self.start_run(t, ns, Some(Step::Work)))
            }
            HandlerEvent::Sleep(m) => {
                let ns = self.draw(*m);
                if ns == 0 {
                    return Ok(Flow::Same);
                }
                self.sleep_until(t, self.now.saturating_add(ns));
                Ok(Flow::Leave)
            }
            HandlerEvent::Lock(x) => {
                let m = self.mutex_of_don(x.0, ev)?;
                Ok(if self.op_lock(t, m)? {
                    Flow::Same
                } else {
                    Flow::Leave
                })
            }
            HandlerEvent::Unlock(x) => {
                let m = self.mutex_of_don(x.0, ev)?;
                self.op_unlock(t, m, ev)?;
                Ok(Flow::Same)
            }
            HandlerEvent::Call(c) => {
                let Some(child) = nested.filter(|&n| n != u32::MAX) else {
                    return Err(stop(at_event(ev, "nested call without its handler")));
                };
                self.goto_don(t, Step::Nested);
                self.begin_call(t, c.endpoint.0, Work::Handler(child), c.timeout_us, ev)?;
                Ok(Flow::Leave)
            }
        }
    }

    fn mutex_of_don(&self, r: usize, ev: &Event) -> R<SimMutex> {
        match self.res_state.get(r) {
            Some(ResState::Mutex(m)) => Ok(*m),
            _ => Err(self.bad_kind_don(ev)),
        }
    }

    fn goto_don(&mut self, t: u32, s: Step) {
        self.threads[t as usize].step = s;
    }

    /// Server `t` replies: its caller (if its call was not aborted) wakes,
    /// and `t` no longer runs on the caller's time.
    fn reply_don(&mut self, t: u32, r: usize) -> R<()> {
        let Some(sv) = self.threads[t as usize].dserve.take() else {
            return Ok(());
        };
        self.instant(t, InstantKind::Reply, r);
        let s_eng = self.threads[t as usize].eng;
        if let Some(c) = sv.caller {
            let c_eng = self.threads[c as usize].eng;
            match self.engine.cancel_wait(c_eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(c, e)),
            }
            if let Some(cl) = self.threads[c as usize].call.as_mut() {
                cl.state = CallState::Replied;
            }
            self.wake(c)?;
        }
        if self
            .engine
            .targets(sv.req)
            .is_ok_and(|ts| ts.contains(&s_eng))
        {
            match self.engine.remove_target(sv.req, s_eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(t, e)),
            }
        }
        Ok(())
    }

    /// A call's timeout passed: if the call still waits, it is aborted.
    pub(super) fn timeout_event(&mut self, c: u32, gen: u32) -> R<()> {
        let th = &self.threads[c as usize];
        if th.call_gen != gen {
            return Ok(());
        }
        let Some(call) = th.call else {
            return Ok(());
        };
        let c_eng = th.eng;
        match call.state {
            CallState::Pending => match self.engine.cancel_wait(c_eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(c, e)),
            },
            CallState::Taken(s) => {
                match self.engine.cancel_wait(c_eng) {
                    Ok(ch) => self.apply_changes(&ch),
                    Err(e) => return Err(self.internal(c, e)),
                }
                let s_eng = self.threads[s as usize].eng;
                match self.engine.remove_target(call.req, s_eng) {
                    Ok(ch) => self.apply_changes(&ch),
                    Err(e) => return Err(self.internal(s, e)),
                }
                if let Some(sv) = self.threads[s as usize].dserve.as_mut() {
                    sv.caller = None;
                }
            }
            CallState::Replied | CallState::Aborted => return Ok(()),
        }
        if let Some(cl) = self.threads[c as usize].call.as_mut() {
            cl.state = CallState::Aborted;
        }
        self.cold[c as usize].aborted += 1;
        self.instant(c, InstantKind::Abort, call.r);
        self.wake(c)
    }

    /// The donation model's invariants (debug hook, after every event):
    ///
    /// * a running passive thread runs on lent time (it has a donor);
    /// * a call handed to a server: the caller is blocked on its request
    ///   object, whose one target is that server, which serves it (and its
    ///   `caller` is the calling thread); a call still pending: the caller
    ///   helps (it is blocked on the endpoint's help object);
    /// * a served request names a caller whose call is taken by this
    ///   server, or none (aborted) and then its request object does not
    ///   target this server;
    /// * blocked timeslices: a thread whose context is lent (a caller
    ///   whose call is pending or taken) is blocked — never queued nor
    ///   running — so the contexts lent to a blocked server wait with it,
    ///   and a server that may run is queued once, at the rank of the
    ///   most urgent context it may use (checked with the run queues).
    pub(super) fn check_donation(&self) -> Result<(), String> {
        for (i, th) in self.threads.iter().enumerate() {
            let name = &self.info.threads[i].name;
            if th.status == Status::Exited {
                continue;
            }
            if th.passive && th.status == Status::Running && self.stalled(i as u32) {
                return Err(format!("{name}: passive, running, but nobody lends to it"));
            }
            if let Some(call) = th.call {
                let blocked_on = self.engine.blocked_on(th.eng).ok().flatten();
                match call.state {
                    CallState::Pending | CallState::Taken(_) if th.status != Status::Blocked => {
                        return Err(format!(
                            "{name}: its call is under way (its context lent) but it is {:?}",
                            th.status
                        ));
                    }
                    CallState::Pending => {
                        let help = self.don_of(call.r).map(|d| d.help);
                        if blocked_on.is_none() || blocked_on != help {
                            return Err(format!(
                                "{name}: its call is pending but it does not help the endpoint"
                            ));
                        }
                    }
                    CallState::Taken(s) => {
                        let srv = &self.threads[s as usize];
                        if blocked_on != Some(call.req) {
                            return Err(format!(
                                "{name}: its call is taken but it is not blocked on its request"
                            ));
                        }
                        if self.engine.targets(call.req).ok() != Some(&[srv.eng][..]) {
                            return Err(format!(
                                "{name}: its request does not target its server {}",
                                self.info.threads[s as usize].name
                            ));
                        }
                        match srv.dserve {
                            Some(sv) if sv.req == call.req && sv.caller == Some(i as u32) => {}
                            _ => {
                                return Err(format!(
                                    "{name}: its call is taken by {}, which does not serve it",
                                    self.info.threads[s as usize].name
                                ))
                            }
                        }
                    }
                    CallState::Replied | CallState::Aborted => {}
                }
            }
            if let Some(sv) = th.dserve {
                match sv.caller {
                    Some(c) => {
                        let ok = self.threads.get(c as usize).is_some_and(|ct| {
                            ct.call
                                .is_some_and(|cl| cl.state == CallState::Taken(i as u32))
                        });
                        if !ok {
                            return Err(format!(
                                "{name}: serves a call of {} that is not taken by it",
                                self.info
                                    .threads
                                    .get(c as usize)
                                    .map_or("?", |x| x.name.as_str())
                            ));
                        }
                    }
                    // The caller may have called again since (the same
                    // request object, taken by another server).
                    None => {
                        if self
                            .engine
                            .targets(sv.req)
                            .is_ok_and(|t| t.contains(&th.eng))
                        {
                            return Err(format!(
                                "{name}: serves an aborted request that still lends to it"
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn bad_kind_don(&self, ev: &Event) -> Box<Stop> {
        stop(at_event(ev, "the event's resource has the wrong kind"))
    }

    /// A cycle refused at a call: a livelock if it goes through a help
    /// object, else a deadlock.
    fn livelock(&self, cycle: &[Node]) -> Box<Stop> {
        let mut d = self.deadlock(cycle);
        let helping = cycle
            .iter()
            .any(|n| matches!(n, Node::Object(o) if self.is_help(*o)));
        if let Stop::Deadlock(rep) = d.as_mut() {
            if helping {
                rep.kind = heir_report::DeadlockKind::Livelock;
            }
        }
        d
    }
}
