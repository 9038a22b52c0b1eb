//! The events of rt-app's grammar as micro-step machines over the engine
//! operations: one function per event kind; the events made of several
//! operations (queues, barriers, suspend points, RPC) move through the
//! named [`Step`]s.

use super::*;

impl<'s, 'o> Simulator<'s, 'o> {
    /// One micro-step of event `ev` for the running thread `t`.
    /// `kind` is `ev.kind`, from the flat program (`Simulator::ops`).
    pub(super) fn exec(&mut self, t: u32, kind: &EventKind, ev: &Event) -> R<Flow> {
        match kind {
            EventKind::Run(m) => {
                let ns = self.draw(*m);
                Ok(self.start_run(t, ns, None))
            }
            EventKind::Runtime(m) => {
                let ns = self.draw(*m);
                Ok(self.busy_for(t, ns))
            }
            EventKind::Sleep(m) => {
                let ns = self.draw(*m);
                if ns == 0 {
                    return Ok(Flow::Next);
                }
                self.finish(t);
                self.sleep_until(t, self.now.saturating_add(ns));
                Ok(Flow::Leave)
            }
            EventKind::Timer { timer, period } => self.op_timer(t, timer.0, *period, ev),
            EventKind::Lock(r) => {
                if self.op_lock(t, self.mutex_of(r.0, ev)?)? {
                    Ok(Flow::Next)
                } else {
                    self.finish(t);
                    Ok(Flow::Leave)
                }
            }
            EventKind::Unlock(r) => {
                self.op_unlock(t, self.mutex_of(r.0, ev)?, ev)?;
                Ok(Flow::Next)
            }
            EventKind::Wait { cond, mutex } => {
                let (c, m) = (self.cond_of(cond.0, ev)?, self.mutex_of(mutex.0, ev)?);
                self.finish(t);
                self.op_wait(t, c, m, ev)?;
                Ok(Flow::Leave)
            }
            EventKind::Signal(r) => {
                self.op_signal(t, self.cond_of(r.0, ev)?)?;
                Ok(Flow::Next)
            }
            EventKind::Broadcast(r) => {
                self.op_broadcast(t, self.cond_of(r.0, ev)?)?;
                Ok(Flow::Next)
            }
            EventKind::Yield => {
                self.finish(t);
                self.preempt(t, false);
                Ok(Flow::Leave)
            }
            EventKind::Barrier(r) => self.ev_barrier(t, r.0, ev),
            EventKind::Suspend(r) => self.ev_suspend(t, r.0, true, ev),
            EventKind::Resume(r) => self.ev_suspend(t, r.0, false, ev),
            EventKind::Push(r) => self.ev_queue(t, r.0, true, ev),
            EventKind::Pop(r) => self.ev_queue(t, r.0, false, ev),
            EventKind::Call { endpoint, run } if self.don_of(endpoint.0).is_some() => {
                self.ev_call_don(t, endpoint.0, *run, ev)
            }
            EventKind::Serve(r) if self.don_of(r.0).is_some() => self.ev_serve_don(t, r.0, ev),
            EventKind::Call { endpoint, run } => self.ev_call(t, endpoint.0, *run, ev),
            EventKind::Serve(r) => self.ev_serve(t, r.0, ev),
            EventKind::Gang { gang, op } => self.ev_gang(t, gang.0, *op, ev),
        }
    }

    /// rt-app's `runtime`: busy until the wall-clock instant `now + ns`.
    fn busy_for(&mut self, t: u32, ns: u64) -> Flow {
        if ns == 0 {
            return Flow::Next;
        }
        self.finish(t);
        let end = self.now.saturating_add(ns);
        let th = &mut self.threads[t as usize];
        th.act = Act::Runtime { end };
        th.wall_gen = th.wall_gen.wrapping_add(1);
        let gen = th.wall_gen;
        self.evq.push(end, EvKind::Wall, t, gen);
        Flow::Leave
    }

    /// The current step of `t`.
    fn step_of(&self, t: u32) -> Step {
        self.threads[t as usize].step
    }

    /// Moves `t` to `step` within its event.
    fn goto(&mut self, t: u32, step: Step) {
        self.threads[t as usize].step = step;
    }

    /// `barrier`: lock; the last arrival wakes everyone, the others wait and
    /// count themselves back in when woken; unlock.
    fn ev_barrier(&mut self, t: u32, r: usize, ev: &Event) -> R<Flow> {
        let Some(&ResState::Barrier {
            mutex,
            cond,
            waiting,
        }) = self.res_state.get(r)
        else {
            return Err(self.bad_kind(ev));
        };
        match self.step_of(t) {
            Step::Start => self.lock_then(t, mutex, Step::Inside),
            Step::Inside => {
                self.instant(t, InstantKind::Barrier, r);
                if waiting <= 0 {
                    // The last one in: wake everyone.
                    self.goto(t, Step::Leave);
                    self.op_broadcast(t, cond)?;
                    Ok(Flow::Same)
                } else {
                    self.counter_add(r, -1);
                    self.goto(t, Step::Rejoin);
                    self.op_wait(t, cond, mutex, ev)?;
                    Ok(Flow::Leave)
                }
            }
            Step::Rejoin => {
                self.counter_add(r, 1);
                self.goto(t, Step::Leave);
                Ok(Flow::Same)
            }
            _ => {
                self.op_unlock(t, mutex, ev)?;
                Ok(Flow::Next)
            }
        }
    }

    /// `suspend` (wait until resumed) and `resume` (wake the suspended):
    /// lock; act; unlock.
    fn ev_suspend(&mut self, t: u32, r: usize, suspend: bool, ev: &Event) -> R<Flow> {
        let Some(&ResState::Suspend { mutex, cond }) = self.res_state.get(r) else {
            return Err(self.bad_kind(ev));
        };
        match self.step_of(t) {
            Step::Start => self.lock_then(t, mutex, Step::Inside),
            Step::Inside if suspend => {
                self.instant(t, InstantKind::Suspend, r);
                self.goto(t, Step::Leave);
                self.op_wait(t, cond, mutex, ev)?;
                Ok(Flow::Leave)
            }
            Step::Inside => {
                self.instant(t, InstantKind::Resume, r);
                self.goto(t, Step::Leave);
                self.op_broadcast(t, cond)?;
                Ok(Flow::Same)
            }
            _ => {
                self.op_unlock(t, mutex, ev)?;
                Ok(Flow::Next)
            }
        }
    }

    /// `push` / `pop` (the PI-CV paper's Fig. 5): lock; while full (empty) wait on
    /// `less` (`more`); add (take) an item and signal `more` (`less`);
    /// unlock.
    fn ev_queue(&mut self, t: u32, r: usize, push: bool, ev: &Event) -> R<Flow> {
        let Some(&ResState::Queue {
            mutex,
            more,
            less,
            len,
            cap,
        }) = self.res_state.get(r)
        else {
            return Err(self.bad_kind(ev));
        };
        // What this side waits for while it cannot act, and signals after.
        let (blocked, waits_on, signals, delta, kind) = if push {
            (len >= cap, less, more, 1, InstantKind::Push)
        } else {
            (len == 0, more, less, -1, InstantKind::Pop)
        };
        match self.step_of(t) {
            Step::Start => self.lock_then(t, mutex, Step::Inside),
            // while (full/empty) wait(cond, mutex): woken at this same step.
            Step::Inside if blocked => {
                self.op_wait(t, waits_on, mutex, ev)?;
                Ok(Flow::Leave)
            }
            Step::Inside => {
                self.counter_add(r, delta);
                self.instant(t, kind, r);
                self.goto(t, Step::Leave);
                self.op_signal(t, signals)?;
                Ok(Flow::Same)
            }
            _ => {
                self.op_unlock(t, mutex, ev)?;
                Ok(Flow::Next)
            }
        }
    }

    fn bad_kind(&self, ev: &Event) -> Box<Stop> {
        Box::new(Stop::Error(at_event(
            ev,
            "the event's resource has the wrong kind",
        )))
    }

    fn mutex_of(&self, r: usize, ev: &Event) -> R<SimMutex> {
        match self.res_state.get(r) {
            Some(ResState::Mutex(m)) => Ok(*m),
            _ => Err(self.bad_kind(ev)),
        }
    }

    fn cond_of(&self, r: usize, ev: &Event) -> R<SimCond> {
        match self.res_state.get(r) {
            Some(ResState::Cond(c)) => Ok(*c),
            _ => Err(self.bad_kind(ev)),
        }
    }

    /// Adds `d` to a queue's length or a barrier's waiting count.
    fn counter_add(&mut self, r: usize, d: i64) {
        match self.res_state.get_mut(r) {
            Some(ResState::Queue { len, .. }) => *len = (i64::from(*len) + d).max(0) as u32,
            Some(ResState::Barrier { waiting, .. }) => *waiting += d,
            _ => {}
        }
    }

    /// rt-app's `timer`: see the crate docs (jobs and deadline misses).
    fn op_timer(&mut self, t: u32, res: usize, period: Micros, ev: &Event) -> R<Flow> {
        let p = self.draw(period);
        let now = self.now;
        let start = self.threads[t as usize].start_ns;
        let slot = self.timer_of.get(res).copied().unwrap_or(u32::MAX);
        let Some(TimerSlot {
            mode,
            unique,
            state,
        }) = self.timers.get_mut(slot as usize)
        else {
            return Err(self.bad_kind(ev));
        };
        let mode = *mode;
        let st: &mut TimerState = if *unique {
            let timers = &mut self.cold[t as usize].timers;
            let pos = match timers.iter().position(|(r, _)| *r == res) {
                Some(pos) => pos,
                None => {
                    timers.push((res, TimerState::default()));
                    timers.len() - 1
                }
            };
            &mut timers[pos].1
        } else {
            state
        };
        if !st.init {
            st.init = true;
            st.next = start;
        }
        st.next = st.next.saturating_add(p);
        let next = st.next;
        let overrun = now >= next;
        if overrun && mode == TimerMode::Relative {
            st.next = now;
        }
        let release = if overrun { st.next } else { next };
        if let Some(rel) = self.threads[t as usize].job_release.take() {
            self.complete_job(t, rel, now > next);
        }
        let deadline = Some(release.saturating_add(p));
        self.threads[t as usize].job_release = Some(release);
        self.cold[t as usize].job_deadline = deadline;
        if overrun {
            self.emit(TraceEvent::Release {
                thread: t as usize,
                at_ns: release,
                deadline_ns: deadline,
            });
            Ok(Flow::Next)
        } else {
            self.threads[t as usize].release_on_wake = Some(deadline);
            self.finish(t);
            self.sleep_until(t, next);
            Ok(Flow::Leave)
        }
    }

    /// An endpoint's mutex and request condvar.
    fn endpoint_parts(&self, r: usize, ev: &Event) -> R<(SimMutex, SimCond)> {
        match self.res_state.get(r) {
            Some(ResState::Endpoint { mutex, more, .. }) => Ok((*mutex, *more)),
            _ => Err(self.bad_kind(ev)),
        }
    }

    /// The reply slot of `caller` at endpoint `r`.
    fn reply_slot(&mut self, r: usize, caller: u32, ev: &Event) -> R<&mut Reply> {
        match self.res_state.get_mut(r) {
            Some(ResState::Endpoint { replies, .. }) => replies
                .iter_mut()
                .find(|x| x.caller == caller)
                .ok_or_else(|| stop(at_event(ev, "caller without a reply condvar"))),
            _ => Err(stop(at_event(
                ev,
                "the event's resource has the wrong kind",
            ))),
        }
    }

    /// RPC `call`: lock; queue the request and signal `more`; wait on the
    /// caller's reply condvar until it is done; unlock.
    fn ev_call(&mut self, t: u32, r: usize, run: Micros, ev: &Event) -> R<Flow> {
        let (mutex, more) = self.endpoint_parts(r, ev)?;
        match self.step_of(t) {
            Step::Start => {
                let ns = self.draw(run);
                self.threads[t as usize].call_run = ns;
                self.lock_then(t, mutex, Step::Inside)
            }
            Step::Inside => {
                let th = &self.threads[t as usize];
                let req = Req {
                    caller: t,
                    run_ns: th.call_run,
                    prio: th.base,
                };
                if let Some(ResState::Endpoint { reqs, .. }) = self.res_state.get_mut(r) {
                    let pos = reqs
                        .iter()
                        .position(|q| q.prio < req.prio)
                        .unwrap_or(reqs.len());
                    reqs.insert(pos, req);
                }
                self.instant(t, InstantKind::Call, r);
                self.goto(t, Step::AwaitReply);
                self.op_signal(t, more)?;
                Ok(Flow::Same)
            }
            Step::AwaitReply => {
                let slot = self.reply_slot(r, t, ev)?;
                if slot.done {
                    slot.done = false;
                    self.goto(t, Step::Leave);
                    Ok(Flow::Same)
                } else {
                    let c = slot.cond;
                    self.op_wait(t, c, mutex, ev)?;
                    Ok(Flow::Leave)
                }
            }
            _ => {
                self.op_unlock(t, mutex, ev)?;
                Ok(Flow::Next)
            }
        }
    }

    /// RPC `serve`: lock; wait on `more` while no request; take the most
    /// urgent request; unlock; run it; lock; mark its reply done and signal
    /// the caller; unlock.
    fn ev_serve(&mut self, t: u32, r: usize, ev: &Event) -> R<Flow> {
        let (mutex, more) = self.endpoint_parts(r, ev)?;
        match self.step_of(t) {
            Step::Start => self.lock_then(t, mutex, Step::Inside),
            Step::Inside => {
                let req = match self.res_state.get_mut(r) {
                    Some(ResState::Endpoint { reqs, .. }) => reqs.pop_front(),
                    _ => None,
                };
                match req {
                    None => {
                        self.op_wait(t, more, mutex, ev)?;
                        Ok(Flow::Leave)
                    }
                    Some(q) => {
                        self.threads[t as usize].serving = Some((q.caller, q.run_ns));
                        self.goto(t, Step::Release);
                        Ok(Flow::Same)
                    }
                }
            }
            Step::Release => {
                self.op_unlock(t, mutex, ev)?;
                self.goto(t, Step::Work);
                Ok(Flow::Same)
            }
            Step::Work => {
                let ns = self.threads[t as usize].serving.map_or(0, |s| s.1);
                Ok(self.start_run(t, ns, Some(Step::Relock)))
            }
            Step::Relock => self.lock_then(t, mutex, Step::Reply),
            Step::Reply => {
                self.goto(t, Step::Leave);
                let Some((caller, _)) = self.threads[t as usize].serving else {
                    return Ok(Flow::Same);
                };
                let slot = self.reply_slot(r, caller, ev)?;
                slot.done = true;
                let c = slot.cond;
                self.instant(t, InstantKind::Reply, r);
                self.op_signal(t, c)?;
                Ok(Flow::Same)
            }
            _ => {
                self.op_unlock(t, mutex, ev)?;
                self.threads[t as usize].serving = None;
                Ok(Flow::Next)
            }
        }
    }
}
