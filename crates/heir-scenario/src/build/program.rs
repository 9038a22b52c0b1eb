//! Step 6: each task's program, walked as its threads will run it, for the
//! mistakes the simulator and the real-time runner would otherwise find only
//! while running (and each in its own way).
//!
//! An rt-app program is straight-line: the task loops over its phases in
//! order, each phase loops over its events. The only state that decides
//! whether an event is legal is the set of mutexes the thread holds, so the
//! walk tracks that set:
//!
//! * `lock m` needs `m` not held (a mutex is not recursive);
//! * `unlock m` needs `m` held;
//! * `wait {ref: c, mutex: m}` (and `sync`) needs `m` held, and holds it
//!   again when it returns.
//!
//! Loops need only two passes. Per mutex, a pass maps "held before" to
//! "held after", and a pass that touches the mutex is legal from one of the
//! two states at most (its first lock needs it free, its first unlock or
//! wait needs it held). So if two passes are legal, the second started where
//! the first did, and every later pass does too. The walk therefore runs
//! each phase `min(loop, 2)` times and the task's list of phases
//! `min(loop, 2)` times (twice for `-1`), in program order, and reports the
//! first illegal event.
//!
//! Last, a task none of whose events takes time (a `run`, `runtime` or
//! `sleep` of more than 0 µs, a `timer`) or can block is refused when it
//! loops forever or runs more than [`MAX_ZERO_TIME_EVENTS`] events: the
//! simulator would spin at one instant and `heir run` would busy-loop.

use super::*;

/// Where the walk is: the task's loop (0 or 1), the phase, and the phase's
/// pass (0 or 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct When {
    tloop: u64,
    phase: usize,
    pass: u64,
}

/// The last event that changed whether a mutex is held.
#[derive(Clone, Copy)]
enum Last<'t> {
    Locked(&'t Event, When),
    Unlocked(&'t Event, When),
}

/// `then` relative to `now` in `t`'s walk: "", " on its previous loop",
/// " on the previous pass of phase …".
fn since(t: &Task, then: When, now: When) -> String {
    if then.tloop < now.tloop {
        " on its previous loop".to_string()
    } else if then.phase == now.phase && then.pass < now.pass {
        let name = t.phases.get(now.phase).map_or("", |p| p.name.as_str());
        format!(" on the previous pass of phase {}", quote_short(name))
    } else {
        String::new()
    }
}

impl Builder<'_> {
    /// Step 6: every task's program (see the module docs).
    pub(super) fn check_programs(&self, tasks: &[Task]) -> R<()> {
        let users = mutex_users(tasks, self.resources.len());
        for t in tasks {
            self.check_locks(t)?;
            self.check_time(t, &users)?;
        }
        Ok(())
    }

    /// A failure at event `ev`.
    fn at_event(&self, ev: &Event, msg: String) -> Fail {
        Fail {
            at: self.lines.offset(ev.line, ev.column),
            path: ev.path.clone(),
            msg,
        }
    }

    fn mutex_name(&self, r: ResIdx) -> String {
        self.resources
            .get(r.0)
            .map_or_else(|| format!("#{}", r.0), |r| quote_short(&r.name))
    }

    /// The held set along the program: no relock, no unlock or wait
    /// without the mutex.
    fn check_locks(&self, t: &Task) -> R<()> {
        let mut last: HashMap<ResIdx, Last<'_>> = HashMap::new();
        for tloop in 0..t.loops.map_or(2, |l| l.min(2)) {
            for (phase, ph) in t.phases.iter().enumerate() {
                for pass in 0..ph.loops.min(2) {
                    let now = When { tloop, phase, pass };
                    for ev in &ph.events {
                        self.lock_step(t, ev, now, &mut last)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Event `ev` of `t`'s walk, at `now`; `last` holds, per mutex, the
    /// event that last locked or unlocked it.
    fn lock_step<'t>(
        &self,
        t: &Task,
        ev: &'t Event,
        now: When,
        last: &mut HashMap<ResIdx, Last<'t>>,
    ) -> R<()> {
        match ev.kind {
            EventKind::Lock(m) => {
                if let Some(Last::Locked(at, then)) = last.get(&m) {
                    return Err(self.at_event(
                        ev,
                        format!(
                            "task {} locks mutex {}, which it already holds: \
                             it locked it at {}{} and has not unlocked it since \
                             (a mutex cannot be locked twice)",
                            quote_short(&t.name),
                            self.mutex_name(m),
                            at.path,
                            since(t, *then, now)
                        ),
                    ));
                }
                last.insert(m, Last::Locked(ev, now));
            }
            EventKind::Unlock(m) => match last.get(&m) {
                Some(Last::Locked(..)) => {
                    last.insert(m, Last::Unlocked(ev, now));
                }
                l => {
                    return Err(self.at_event(
                        ev,
                        format!(
                            "task {} unlocks mutex {}, which it does not hold \
                             at this point: {}",
                            quote_short(&t.name),
                            self.mutex_name(m),
                            self.not_held(t, m, l, now, "unlock")
                        ),
                    ))
                }
            },
            EventKind::Wait { cond, mutex } => {
                let l = last.get(&mutex);
                if !matches!(l, Some(Last::Locked(..))) {
                    let cond = self
                        .resources
                        .get(cond.0)
                        .map_or_else(String::new, |r| quote_short(&r.name));
                    return Err(self.at_event(
                        ev,
                        format!(
                            "task {} waits on cond {cond} with mutex {}, which \
                             it does not hold at this point: {}",
                            quote_short(&t.name),
                            self.mutex_name(mutex),
                            self.not_held(t, mutex, l, now, "wait")
                        ),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Why `m` is not held by `t` at `now` (`l`: what last changed it): it
    /// was unlocked, or never locked; `what` is the event that needs it.
    fn not_held(&self, t: &Task, m: ResIdx, l: Option<&Last<'_>>, now: When, what: &str) -> String {
        let name = self.mutex_name(m);
        match l {
            Some(Last::Unlocked(ev, then)) => format!(
                "it unlocked it at {}{}; lock {name} before the {what}",
                ev.path,
                since(t, *then, now)
            ),
            _ => format!("lock {name} before the {what}"),
        }
    }

    /// A task that never lets time pass must not loop forever, nor long.
    fn check_time(&self, t: &Task, mutex_users: &[u64]) -> R<()> {
        let events = || t.phases.iter().flat_map(|p| p.events.iter());
        let lets_time_pass = events().any(|e| match &e.kind {
            EventKind::Run(m) | EventKind::Runtime(m) | EventKind::Sleep(m) => m.max() > 0,
            EventKind::Timer { .. } => true,
            // Blocks only when another thread may hold it.
            EventKind::Lock(m) => mutex_users.get(m.0).copied().unwrap_or(0) > 1,
            EventKind::Barrier(b) => matches!(
                self.resources.get(b.0).map(|r| &r.kind),
                Some(ResourceKind::Barrier { users }) if *users > 1
            ),
            EventKind::Wait { .. }
            | EventKind::Suspend(_)
            | EventKind::Push(_)
            | EventKind::Pop(_)
            | EventKind::Call { .. }
            | EventKind::Serve(_)
            | EventKind::Gang {
                op: GangOp::Wait { .. },
                ..
            } => true,
            EventKind::Gang { .. } => false,
            EventKind::Unlock(_)
            | EventKind::Signal(_)
            | EventKind::Broadcast(_)
            | EventKind::Resume(_)
            | EventKind::Yield => false,
        });
        if lets_time_pass {
            return Ok(());
        }
        let per_pass = t.phases.iter().fold(0u64, |n, p| {
            n.saturating_add(p.loops.saturating_mul(p.events.len() as u64))
        });
        let how = match t.loops {
            None => "it loops forever".to_string(),
            Some(loops) => {
                let total = loops
                    .saturating_mul(per_pass)
                    .saturating_mul(u64::from(t.instance.max(1)));
                if total <= MAX_ZERO_TIME_EVENTS {
                    return Ok(());
                }
                format!(
                    "its threads run {total} of them in all, over heir's limit of \
                     {MAX_ZERO_TIME_EVENTS} for such a task"
                )
            }
        };
        let (line, column) = (t.line, t.column);
        fail(
            self.lines.offset(line, column),
            &t.path,
            format!(
                "task {} never lets time pass: none of its events takes time or can block, and \
                 {how} (the simulator would spin at one instant, heir run would busy-loop): give it \
                 a \"run\", \"runtime\", \"sleep\" or \"timer\" of more than 0 µs",
                quote_short(&t.name)
            ),
        )
    }
}

/// Per resource, the threads that lock it or wait with it (0 for other
/// kinds).
fn mutex_users(tasks: &[Task], nres: usize) -> Vec<u64> {
    let mut users = vec![0u64; nres];
    for t in tasks {
        let mut seen: HashSet<ResIdx> = HashSet::new();
        for ev in t.phases.iter().flat_map(|p| p.events.iter()) {
            let m = match ev.kind {
                EventKind::Lock(m) => m,
                EventKind::Wait { mutex, .. } => mutex,
                _ => continue,
            };
            if seen.insert(m) {
                if let Some(u) = users.get_mut(m.0) {
                    *u += u64::from(t.instance);
                }
            }
        }
    }
    users
}
