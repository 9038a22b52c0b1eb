//! Engine operations, one per micro-step, with their trace instants.

use super::*;
use heir_scenario::messages;

impl<'s, 'o> Simulator<'s, 'o> {
    /// Locks `m` for `t`: true if acquired, false if `t` blocked (and left
    /// its CPU).
    pub(super) fn op_lock(&mut self, t: u32, m: SimMutex) -> R<bool> {
        let eng = self.threads[t as usize].eng;
        match self.engine.lock_into(eng, m.id, &mut self.changes) {
            Ok(LockResult::Acquired) => {
                self.instant(t, InstantKind::Lock, m.res);
                self.apply_buffered();
                Ok(true)
            }
            Ok(LockResult::Blocked) => {
                self.instant(t, InstantKind::LockBlocked, m.res);
                self.block_seq += 1;
                self.threads[t as usize].dl.block_seq = self.block_seq;
                self.apply_buffered();
                if !self.bwi_spin(t, m) {
                    self.block(t);
                }
                Ok(false)
            }
            Err(EngineError::Cycle { cycle }) => Err(self.deadlock(&cycle)),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Unlocks `m` (held by `t`), handing it to the top waiter, which wakes
    /// (a `bwi` mutex with deadline threads: to the waiter that blocked
    /// first).
    pub(super) fn op_unlock(&mut self, t: u32, m: SimMutex, ev: &Event) -> R<()> {
        let eng = self.threads[t as usize].eng;
        if self.has_bwi && self.lends(m.id.0 as usize) == dl::Lends::Reservation {
            return self.op_unlock_fifo(t, m, ev);
        }
        match self.engine.unlock_into(eng, m.id, &mut self.changes) {
            Ok(next) => {
                self.instant(t, InstantKind::Unlock, m.res);
                self.apply_buffered();
                if let Some(w) = next.and_then(|w| self.thread_of(w)) {
                    // Hand-off: the top waiter owns the mutex now.
                    self.instant(w, InstantKind::Lock, m.res);
                    self.wake(w)?;
                }
                Ok(())
            }
            // The engine checks ownership and leaves its state unchanged.
            Err(EngineError::NotOwner { .. }) => Err(stop(at_event(
                ev,
                messages::mutex_not_held(
                    &self.info.threads[t as usize].name,
                    &self.info.resources[m.res],
                ),
            ))),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// [`Simulator::op_unlock`] of a `bwi` mutex: released, then acquired
    /// on behalf of the waiter that blocked first, which wakes.
    fn op_unlock_fifo(&mut self, t: u32, m: SimMutex, ev: &Event) -> R<()> {
        let eng = self.threads[t as usize].eng;
        let next = self.fifo_waiter(m);
        match self.engine.release(eng, m.id) {
            Ok(ch) => {
                self.instant(t, InstantKind::Unlock, m.res);
                self.apply_changes(&ch);
            }
            Err(EngineError::NotOwner { .. }) => {
                return Err(stop(at_event(
                    ev,
                    messages::mutex_not_held(
                        &self.info.threads[t as usize].name,
                        &self.info.resources[m.res],
                    ),
                )))
            }
            Err(e) => return Err(self.internal(t, e)),
        }
        let Some(w) = next else {
            return Ok(());
        };
        match self.engine.acquire(w, m.id) {
            Ok(ch) => self.apply_changes(&ch),
            Err(e) => return Err(self.internal(t, e)),
        }
        if let Some(w) = self.thread_of(w) {
            self.instant(w, InstantKind::Lock, m.res);
            self.wake_handed(w)?;
        }
        Ok(())
    }

    /// `pthread_cond_wait(c, m)`: unlock `m` (handing it to its top waiter)
    /// and block on `c` in one engine operation, as the wait gives its mutex
    /// up atomically with starting to wait; when woken, `m` is re-acquired
    /// on the thread's behalf ([`Simulator::rewake`]).
    pub(super) fn op_wait(&mut self, t: u32, c: SimCond, m: SimMutex, ev: &Event) -> R<()> {
        let eng = self.threads[t as usize].eng;
        // A thread cannot help a condvar while it waits on it (it could not
        // signal; the engine would refuse the wait as the cycle t → c → t):
        // it stops helping for the duration of the wait.
        if self.engine.helpers(c.id).is_ok_and(|h| h.contains(&eng)) {
            match self.engine.helper_del(c.id, eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(e) => return Err(self.internal(t, e)),
            }
            self.threads[t as usize].rehelp = Some(c.id);
        }
        match self
            .engine
            .cond_wait_unlock_into(eng, c.id, m.id, &mut self.changes)
        {
            Ok(next) => {
                self.instant(t, InstantKind::Unlock, m.res);
                let next = next.and_then(|w| self.thread_of(w));
                if let Some(w) = next {
                    // Hand-off: the top waiter owns the mutex now.
                    self.instant(w, InstantKind::Lock, m.res);
                }
                self.instant(t, InstantKind::Wait, c.res);
                self.apply_buffered();
                if let Some(w) = next {
                    self.wake(w)?;
                }
                let th = &mut self.threads[t as usize];
                th.wait = Some((c, m));
                self.block(t);
                Ok(())
            }
            Err(EngineError::NotOwner { .. }) => Err(stop(at_event(
                ev,
                messages::wait_without_mutex(
                    &self.info.threads[t as usize].name,
                    &self.info.resources[c.res],
                    &self.info.resources[m.res],
                ),
            ))),
            Err(EngineError::Cycle { cycle }) => Err(self.deadlock(&cycle)),
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Signals `c` (a signal without waiters is lost; the engine then
    /// changes nothing).
    pub(super) fn op_signal(&mut self, t: u32, c: SimCond) -> R<()> {
        match self.engine.cond_signal_into(c.id, &mut self.changes) {
            Ok(woken) => {
                self.instant(t, InstantKind::Signal, c.res);
                self.apply_buffered();
                if let Some(w) = woken.and_then(|w| self.thread_of(w)) {
                    self.rewake(w)?;
                }
                Ok(())
            }
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// Broadcasts `c`, every woken waiter re-acquiring its mutex in wake
    /// order.
    pub(super) fn op_broadcast(&mut self, t: u32, c: SimCond) -> R<()> {
        match self.engine.cond_broadcast(c.id) {
            Ok(out) => {
                self.instant(t, InstantKind::Broadcast, c.res);
                self.apply_changes(&out.changes);
                for &w in &out.value {
                    if let Some(w) = self.thread_of(w) {
                        self.rewake(w)?;
                    }
                }
                Ok(())
            }
            Err(e) => Err(self.internal(t, e)),
        }
    }

    /// A thread woken from a condvar re-acquires its mutex at once, on its
    /// behalf (as `FUTEX_CMP_REQUEUE_PI`): it becomes ready if the mutex is
    /// free, else it stays blocked, now on the mutex (and donates to its
    /// owner per the mutex protocol).
    pub(super) fn rewake(&mut self, w: u32) -> R<()> {
        let Some((c, m)) = self.threads[w as usize].wait.take() else {
            self.wake(w)?;
            return Ok(());
        };
        self.instant(w, InstantKind::Woken, c.res);
        if let Some(c) = self.threads[w as usize].rehelp.take() {
            // Helping again, now that it no longer waits.
            let eng = self.threads[w as usize].eng;
            match self.engine.helper_add(c, eng) {
                Ok(ch) => self.apply_changes(&ch),
                Err(EngineError::Cycle { cycle }) => return Err(self.deadlock(&cycle)),
                Err(e) => return Err(self.internal(w, e)),
            }
        }
        let eng = self.threads[w as usize].eng;
        match self.engine.lock_into(eng, m.id, &mut self.changes) {
            Ok(LockResult::Acquired) => {
                self.instant(w, InstantKind::Lock, m.res);
                self.apply_buffered();
                self.wake(w)?;
                Ok(())
            }
            Ok(LockResult::Blocked) => {
                self.instant(w, InstantKind::LockBlocked, m.res);
                self.apply_buffered();
                Ok(())
            }
            Err(EngineError::Cycle { cycle }) => Err(self.deadlock(&cycle)),
            Err(e) => Err(self.internal(w, e)),
        }
    }

    /// `lock` as a micro-step: on success continue at `next`, else resume
    /// there once the mutex is handed over.
    pub(super) fn lock_then(&mut self, t: u32, m: SimMutex, next: Step) -> R<Flow> {
        let got = self.op_lock(t, m)?;
        self.threads[t as usize].step = next;
        Ok(if got { Flow::Same } else { Flow::Leave })
    }

    /// Starts `ns` of CPU work; then the event ends (`next = None`) or
    /// continues at step `next`.
    pub(super) fn start_run(&mut self, t: u32, ns: u64, next: Option<Step>) -> Flow {
        match next {
            Some(s) => self.threads[t as usize].step = s,
            None if ns == 0 => return Flow::Next,
            None => self.finish(t),
        }
        if ns == 0 {
            return Flow::Same;
        }
        let now = self.now;
        let th = &mut self.threads[t as usize];
        th.act = Act::Run { left: ns };
        th.run_start = now;
        th.run_gen = th.run_gen.wrapping_add(1);
        let gen = th.run_gen;
        self.push_run_done(now.saturating_add(ns), t, gen);
        Flow::Leave
    }
}
