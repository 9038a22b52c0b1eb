//! A thread's life: start, passes and jobs, the micro-step loop, phase
//! changes, exit.

use super::sched::{extend_reach, home_for};
use super::*;
use heir_scenario::{engine, messages};

impl<'s, 'o> Simulator<'s, 'o> {
    pub(super) fn start_thread(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let task = &sc.tasks[th.task];
        th.start_ns = now;
        th.pass_start = true;
        if task.loops == Some(0) || task.phases.is_empty() {
            return self.exit_thread(t, false);
        }
        th.status = Status::Ready;
        th.act = Act::Step;
        // The first job is released when the thread starts (after its
        // delay), whether or not it gets a CPU at once — unless the program
        // opens with its timer: then that timer releases the first job.
        let timer_first = task
            .phases
            .iter()
            .find(|p| p.loops > 0)
            .and_then(|p| p.events.first())
            .is_some_and(|e| matches!(e.kind, EventKind::Timer { .. }));
        if !timer_first {
            th.job_release = Some(now);
            let deadline_ns = if th.has_timer {
                th.first_period_ns.map(|p| now.saturating_add(p))
            } else {
                None
            };
            self.cold[t as usize].job_deadline = deadline_ns;
            self.emit(TraceEvent::Release {
                thread: t as usize,
                at_ns: now,
                deadline_ns,
            });
        }
        if let Some(r) = dl::res_of(&task.sched) {
            self.dl_setup(t, Some(r))?;
        }
        self.queue_or_park(t, false);
        Ok(())
    }

    pub(super) fn exit_thread(&mut self, t: u32, on_cpu: bool) -> R<()> {
        if on_cpu {
            self.undispatch(t);
        }
        let th = &mut self.threads[t as usize];
        th.status = Status::Exited;
        th.job_release = None;
        self.alive -= 1;
        // GPM: a thread that terminates leaves its gang (as
        // `gang_notify` first if it is an active member of a run).
        self.gang_leave(t)?;
        let eng = self.threads[t as usize].eng;
        // Its scheduling context outlives it, unbound (the report reads its
        // reservation; a pending replenishment still fires).
        let ctx = self.threads[t as usize].dl.ctx;
        if ctx.is_some() {
            if let Err(e) = self.engine.unbind(eng) {
                return Err(self.internal(t, e));
            }
        }
        match self.engine.remove_task(eng) {
            Ok(ch) => self.apply_changes(&ch),
            // Exits owning a mutex: it stays in the engine as the owner,
            // with its context.
            Err(EngineError::Busy { .. }) => {
                if let Some(c) = ctx {
                    if let Err(e) = self.engine.bind(eng, c) {
                        return Err(self.internal(t, e));
                    }
                }
            }
            Err(e) => return Err(self.internal(t, e)),
        }
        Ok(())
    }

    pub(super) fn finish(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        th.ev += 1;
        th.step = Step::Start;
    }

    pub(super) fn complete_job(&mut self, t: u32, release: u64, missed: bool) {
        let now = self.now;
        let response = now.saturating_sub(release);
        let c = &mut self.cold[t as usize];
        c.stats.record(response);
        c.jobs += 1;
        c.misses += u64::from(missed);
        self.emit(TraceEvent::Complete {
            thread: t as usize,
            at_ns: now,
            response_ns: response,
            missed,
        });
    }

    /// A timer-less thread's pass ended now: its job completes, and the next
    /// pass's job (if there is a next pass) is released now.
    pub(super) fn close_pass_job(&mut self, t: u32) {
        if self.threads[t as usize].has_timer {
            return;
        }
        if let Some(rel) = self.threads[t as usize].job_release.take() {
            self.complete_job(t, rel, false);
        }
        if !self.is_last_pass(t) {
            let now = self.now;
            self.threads[t as usize].job_release = Some(now);
            self.emit(TraceEvent::Release {
                thread: t as usize,
                at_ns: now,
                deadline_ns: None,
            });
        }
    }

    /// Whether the pass in progress is the thread's last one.
    pub(super) fn is_last_pass(&self, t: u32) -> bool {
        let th = &self.threads[t as usize];
        let task = &self.sc.tasks[th.task];
        let Some(phase) = task.phases.get(th.phase) else {
            return true;
        };
        if th.ploop + 1 < phase.loops {
            return false;
        }
        if task.phases[th.phase + 1..].iter().any(|p| p.loops > 0) {
            return false;
        }
        task.loops.is_some_and(|l| th.tloop + 1 >= l)
    }

    /// A thread leaving or waiting for a CPU whose program counter is at the
    /// end of a pass: the pass ended now (its last event completed now), not
    /// when the thread next runs. Closes the job of a timer-less thread.
    pub(super) fn maybe_close_pass(&mut self, t: u32) {
        let sc = self.sc;
        let th = &self.threads[t as usize];
        if th.has_timer || th.pass_closed || th.pass_start || th.act != Act::Step {
            return;
        }
        let Some(phase) = sc.tasks[th.task].phases.get(th.phase) else {
            return;
        };
        if th.ev >= phase.events.len() {
            self.close_pass_job(t);
            self.threads[t as usize].pass_closed = true;
        }
    }

    /// Executes micro-steps of the running thread `t` until it leaves the
    /// CPU, starts timed work, or its CPU has a scheduling decision pending.
    pub(super) fn step(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        loop {
            let th = &self.threads[t as usize];
            if th.status != Status::Running
                || th.act != Act::Step
                || self.cpus[th.cpu as usize].dirty
            {
                return Ok(());
            }
            self.zero_steps += 1;
            if self.zero_steps > ZERO_TIME_STEP_LIMIT {
                return Err(stop(at_task(
                    &sc.tasks[th.task],
                    messages::zero_time_loop(
                        &self.info.threads[t as usize].name,
                        self.now as f64 / 1000.0,
                    ),
                )));
            }
            if th.pass_start {
                self.begin_pass(t)?;
                continue;
            }
            let Some(ev) = th.evs.get(th.ev) else {
                self.end_pass(t)?;
                continue;
            };
            // The kind from the flat program (`ev` is only its position).
            let Some(kind) = self.ops.get(th.op_base as usize + th.ev).cloned() else {
                return Err(self.internal_pc(t));
            };
            match self.exec(t, &kind, ev)? {
                Flow::Next => self.finish(t),
                Flow::Same | Flow::Leave => {}
            }
        }
    }

    /// Start of a pass of the current phase: the job of a timer-less thread
    /// is released, then the phase's `sched` and `cpus` are applied.
    pub(super) fn begin_pass(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        let th = &mut self.threads[t as usize];
        if th.ploops == 0 {
            th.ploop = 0;
            return self.next_phase(t);
        }
        th.pass_start = false;
        if !th.phase_hook {
            return Ok(());
        }
        let phase = &sc.tasks[th.task].phases[th.phase];
        if let Some(s) = &phase.sched {
            self.set_sched(t, s)?;
        }
        if let Some(cpus) = &phase.cpus {
            self.set_affinity(t, cpus);
        }
        Ok(())
    }

    /// End of a pass: the job of a timer-less thread completes; the program
    /// counter moves to the next pass, phase, or task loop (or exits).
    pub(super) fn end_pass(&mut self, t: u32) -> R<()> {
        if std::mem::take(&mut self.threads[t as usize].pass_closed) {
            // Already closed when the last event completed.
        } else {
            self.close_pass_job(t);
        }
        let th = &mut self.threads[t as usize];
        th.ev = 0;
        th.step = Step::Start;
        th.pass_start = true;
        th.ploop += 1;
        if th.ploop >= th.ploops {
            th.ploop = 0;
            return self.next_phase(t);
        }
        Ok(())
    }

    pub(super) fn next_phase(&mut self, t: u32) -> R<()> {
        let sc = self.sc;
        let th = &mut self.threads[t as usize];
        th.phase += 1;
        th.op_base += th.evs.len() as u32;
        th.ev = 0;
        th.step = Step::Start;
        th.pass_start = true;
        if th.phase >= th.nphases {
            th.phase = 0;
            th.op_base = th.op_first;
            th.tloop += 1;
            if th.tloops.is_some_and(|l| th.tloop >= l) {
                return self.exit_thread(t, true);
            }
            if th.nphases == 1 {
                // Back to the same phase: the cached events still hold.
                return Ok(());
            }
        }
        if let Some(p) = sc.tasks[th.task].phases.get(th.phase) {
            th.evs = &p.events;
            th.ploops = p.loops;
            th.phase_hook = p.sched.is_some() || p.cpus.is_some();
        }
        Ok(())
    }

    pub(super) fn set_sched(&mut self, t: u32, s: &Sched) -> R<()> {
        let res = dl::res_of(s);
        let own = self.own(t);
        if res.is_some() || own.is_some() {
            self.threads[t as usize].policy = s.policy;
            if res != own {
                self.release_reservation(t);
                self.dl_setup(t, res)?;
                if res.is_some() {
                    self.dl_refresh();
                    self.take_reservation(t);
                    return Ok(());
                }
            } else {
                return Ok(());
            }
        }
        let base = engine::urgency(s);
        let old_slice = self.slice_len(t);
        let th = &mut self.threads[t as usize];
        th.policy = s.policy;
        if base != th.base {
            th.base = base;
            let eng = th.eng;
            match self.engine.set_base(eng, base) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(t, e)),
            }
        }
        if self.threads[t as usize].status == Status::Running && self.slice_len(t) != old_slice {
            self.disarm_slice(t);
            self.arm_slice(t);
        }
        Ok(())
    }

    pub(super) fn set_affinity(&mut self, t: u32, cpus: &[u32]) {
        let n = self.cpus.len();
        let th = &mut self.threads[t as usize];
        if th.affinity.as_deref() == Some(cpus) {
            return;
        }
        th.affinity = Some(cpus.to_vec());
        let home = home_for(n, Some(cpus));
        if home == th.home {
            return;
        }
        th.home = home;
        self.reach_len += extend_reach(&mut self.reach, &self.threads[t as usize].home);
        self.note_home(t);
        let th = &self.threads[t as usize];
        if th.status == Status::Running && !self.allowed(t, self.threads[t as usize].cpu) {
            // Migrate: off this CPU, to the tail of the new home.
            self.preempt(t, false);
            self.wake_check(t);
        }
    }
}
