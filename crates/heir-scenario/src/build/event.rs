//! Step 4, continued: events and the resources they name.

use super::task::{Ev, GangEv};
use super::*;

impl Builder<'_> {
    /// A string operand naming a resource (`"lock": "m"`).
    fn name_operand<'v>(m: &'v Member, what: &str, path: &str) -> R<&'v str> {
        match m.value.as_ref().and_then(Value::as_str) {
            Some(s) => {
                check_name(s, value_at(m), path)?;
                Ok(s)
            }
            None => Err(expected(
                m,
                path.to_string(),
                &format!("a string ({what} name)"),
            )),
        }
    }

    /// Reads one event of task `task` into `out` (two for `sync`, none for a
    /// `resume` that wakes nobody).
    pub(super) fn event(
        &mut self,
        task: TaskIdx,
        task_name: &str,
        m: &Member,
        ev: Ev,
        parent: &str,
        out: &mut Vec<Event>,
    ) -> R<()> {
        let path = key_path(parent, &m.name);
        let at = value_at(m);
        let v = m.value.as_ref();
        let (line, column) = self.line_col(m.key_span.start);
        let mut emit = |kind: EventKind| {
            out.push(Event {
                key: m.name.clone(),
                path: path.clone(),
                line,
                column,
                kind,
            })
        };
        match ev {
            Ev::Run => emit(EventKind::Run(micros(v, at, &path, "run")?)),
            Ev::Runtime => emit(EventKind::Runtime(micros(v, at, &path, "runtime")?)),
            Ev::Sleep => emit(EventKind::Sleep(micros(v, at, &path, "sleep")?)),
            Ev::Lock => emit(EventKind::Lock(self.operand(m, Ns::Mutex, &path)?)),
            Ev::Unlock => emit(EventKind::Unlock(self.operand(m, Ns::Mutex, &path)?)),
            Ev::Signal => emit(EventKind::Signal(self.operand(m, Ns::Cond, &path)?)),
            Ev::Broad => emit(EventKind::Broadcast(self.operand(m, Ns::Cond, &path)?)),
            Ev::Wait | Ev::Sync => {
                let (cond, mutex) = self.wait_operands(m, ev, &path)?;
                if ev == Ev::Sync {
                    emit(EventKind::Signal(cond));
                }
                emit(EventKind::Wait { cond, mutex });
            }
            Ev::Timer => emit(self.timer(m, task_name, &path)?),
            Ev::Suspend => emit(self.suspend(task, m, &path)),
            Ev::Resume => {
                if let Some(kind) = self.resume(m, &path)? {
                    emit(kind);
                }
            }
            Ev::Yield => emit(EventKind::Yield),
            Ev::Barrier => emit(self.barrier(task, m, &path)?),
            Ev::Push | Ev::Pop => emit(self.queue_event(task, m, ev, &path)?),
            Ev::Serve => emit(self.serve(task, m, &path)?),
            Ev::Call => emit(self.call(task, m, &path)?),
            Ev::Gang(g) => emit(self.gang_event(m, g, &path)?),
        }
        Ok(())
    }

    /// The resource of kind `ns` that the string operand of event `m` (at
    /// `path`) names (`"lock": "m"`).
    fn operand(&mut self, m: &Member, ns: Ns, path: &str) -> R<ResIdx> {
        let name = Self::name_operand(m, ns.word(), path)?;
        Ok(self.res(name, ns, path, value_at(m)))
    }

    /// The cond and the mutex of a `wait` or `sync` (`ev`):
    /// `{"ref": cond, "mutex": mutex}`.
    fn wait_operands(&mut self, m: &Member, ev: Ev, path: &str) -> R<(ResIdx, ResIdx)> {
        let what = if ev == Ev::Wait { "wait" } else { "sync" };
        let fields = object_fields(
            m,
            path,
            &["ref", "mutex"],
            what,
            "{\"ref\": cond, \"mutex\": mutex}",
        )?;
        let (cond_name, cond_at) = required_str(fields, m, "ref", "cond", path, what)?;
        let (mutex_name, mutex_at) = required_str(fields, m, "mutex", "mutex", path, what)?;
        let cond = self.res(cond_name, Ns::Cond, &key_path(path, "ref"), cond_at);
        let mutex = self.res(mutex_name, Ns::Mutex, &key_path(path, "mutex"), mutex_at);
        if cond_name == mutex_name {
            self.paired.insert(cond_name.to_string());
        }
        Ok((cond, mutex))
    }

    /// A `timer` of task `task_name`: `{"ref": name, "period": µs, "mode":
    /// …}`; a `unique…` timer is the task's own.
    fn timer(&mut self, m: &Member, task_name: &str, path: &str) -> R<EventKind> {
        let fields = object_fields(
            m,
            path,
            &["ref", "period", "mode"],
            "timer",
            "{\"ref\": name, \"period\": µs, \"mode\": \"relative\"|\"absolute\"}",
        )?;
        let (tref, ref_at) = required_str(fields, m, "ref", "timer", path, "timer")?;
        let period = timer_period(fields, value_at(m), path)?;
        let mode = timer_mode(fields, path)?;
        let unique = tref.starts_with("unique");
        let name = if unique {
            format!("{tref}@{task_name}")
        } else {
            tref.to_string()
        };
        let r = self.res(&name, Ns::Timer, &key_path(path, "ref"), ref_at);
        if let ResourceKind::Timer { unique: u, .. } = &mut self.resources[r.0].kind {
            *u = unique;
        }
        if let Some((mode, f)) = mode {
            self.set_timer_mode(r, tref, mode, f, path)?;
        }
        Ok(EventKind::Timer { timer: r, period })
    }

    /// Timer `r` (`tref` in the file) is given `mode` by member `f` of the
    /// timer at `path`: its mode from now on, unless an earlier timer event
    /// gave it another.
    fn set_timer_mode(
        &mut self,
        r: ResIdx,
        tref: &str,
        mode: TimerMode,
        f: &Member,
        path: &str,
    ) -> R<()> {
        let mode_path = key_path(path, "mode");
        match &self.usage[r.0].timer_mode {
            Some((prev, prev_path)) if *prev != mode => fail(
                value_at(f),
                &mode_path,
                format!(
                    "timer {} is {} here but {} at {prev_path}: one timer has one mode",
                    quote_short(tref),
                    mode_word(mode),
                    mode_word(*prev)
                ),
            ),
            Some(_) => Ok(()),
            None => {
                self.usage[r.0].timer_mode = Some((mode, mode_path));
                if let ResourceKind::Timer { mode: m, .. } = &mut self.resources[r.0].kind {
                    *m = mode;
                }
                Ok(())
            }
        }
    }

    /// A `suspend` of task `task`: it waits at its own suspend point.
    fn suspend(&mut self, task: TaskIdx, m: &Member, path: &str) -> EventKind {
        let r = self.suspend_point(task, path);
        self.usage[r.0]
            .first_suspend
            .get_or_insert_with(|| (path.to_string(), m.key_span.start));
        EventKind::Suspend(r)
    }

    /// A `resume` of the task `m` names; `None` (with a warning) when it
    /// names no task.
    fn resume(&mut self, m: &Member, path: &str) -> R<Option<EventKind>> {
        let at = value_at(m);
        let target = Self::name_operand(m, "task", path)?;
        let Some(&t) = self.task_by_name.get(target) else {
            self.warn(
                at,
                path,
                format!(
                    "resume target {} is not a task: rt-app's suspend always waits under the \
                     suspending task's own name, so this resume wakes nobody; heir leaves it out",
                    quote_short(target)
                ),
            );
            return Ok(None);
        };
        let r = self.suspend_point(t, path);
        self.usage[r.0]
            .first_resume
            .get_or_insert_with(|| (path.to_string(), at));
        Ok(Some(EventKind::Resume(r)))
    }

    /// A `barrier` of task `task` on the barrier `m` names.
    fn barrier(&mut self, task: TaskIdx, m: &Member, path: &str) -> R<EventKind> {
        let r = self.operand(m, Ns::Barrier, path)?;
        push_unique(&mut self.usage[r.0].barrier_tasks, task);
        Ok(EventKind::Barrier(r))
    }

    /// A `push` or `pop` (`ev`) of task `task` on the queue `m` names.
    fn queue_event(&mut self, task: TaskIdx, m: &Member, ev: Ev, path: &str) -> R<EventKind> {
        let r = self.operand(m, Ns::Queue, path)?;
        let u = &mut self.usage[r.0];
        if ev == Ev::Push {
            push_unique(&mut u.pushers, task);
            Ok(EventKind::Push(r))
        } else {
            push_unique(&mut u.poppers, task);
            Ok(EventKind::Pop(r))
        }
    }

    /// A gang event (GPM): the gang's name, or an object with
    /// `"gang"` and the event's one option (`mask`, `timeout`, `bits`).
    fn gang_event(&mut self, m: &Member, g: GangEv, path: &str) -> R<EventKind> {
        let (what, option) = match g {
            GangEv::Run => ("gang_run", Some("mask")),
            GangEv::Wait => ("gang_wait", Some("timeout")),
            GangEv::Active => ("gang_active", Some("bits")),
            GangEv::Passive => ("gang_passive", Some("bits")),
            GangEv::Notify => ("gang_notify", None),
            GangEv::Insert => ("gang_insert", None),
            GangEv::Remove => ("gang_remove", None),
        };
        let (gang, opt) = match (option, m.value.as_ref().map(|v| &v.kind)) {
            (Some(key), Some(Kind::Object(_))) => {
                let shape = format!("{{\"gang\": gang, \"{key}\": …}}");
                let fields = object_fields(m, path, &["gang", key], what, &shape)?;
                let (name, at) = required_str(fields, m, "gang", "gang", path, what)?;
                let r = self.res(name, Ns::Gang, &key_path(path, "gang"), at);
                (r, fields.iter().find(|f| f.key == key))
            }
            (Some(key), _) if m.value.as_ref().and_then(Value::as_str).is_none() => {
                return Err(expected(
                    m,
                    path.to_string(),
                    &format!("a gang name (a string) or {{\"gang\": gang, \"{key}\": …}}"),
                ))
            }
            _ => (self.operand(m, Ns::Gang, path)?, None),
        };
        let bits = |f: &Member, what: &str| -> R<u32> {
            match count_of(f.value.as_ref()) {
                Some(n @ 1..) if n <= u64::from(GANG_ALL_BITS) => Ok(n as u32),
                _ => Err(expected(
                    f,
                    key_path(path, &f.key),
                    &format!("{what} (an integer 1..={GANG_ALL_BITS}: 28 membership bits)"),
                )),
            }
        };
        let op = match g {
            GangEv::Run => GangOp::Run {
                mask: opt.map_or(Ok(GANG_ALL_BITS), |f| bits(f, "a mask"))?,
            },
            GangEv::Wait => GangOp::Wait {
                timeout_us: opt.map(|f| positive_timeout(f, path)).transpose()?,
            },
            GangEv::Active => GangOp::Active {
                bits: opt.map_or(Ok(GANG_DEFAULT_BITS), |f| bits(f, "bits"))?,
            },
            GangEv::Passive => GangOp::Passive {
                bits: opt.map_or(Ok(GANG_ALL_BITS), |f| bits(f, "bits"))?,
            },
            GangEv::Notify => GangOp::Notify,
            GangEv::Insert => GangOp::Insert,
            GangEv::Remove => GangOp::Remove,
        };
        Ok(EventKind::Gang { gang, op })
    }

    /// A `serve` by task `task` of the endpoint `m` names.
    fn serve(&mut self, task: TaskIdx, m: &Member, path: &str) -> R<EventKind> {
        let r = self.operand(m, Ns::Endpoint, path)?;
        let u = &mut self.usage[r.0];
        push_unique(&mut u.servers, task);
        u.first_serve
            .get_or_insert_with(|| (path.to_string(), value_at(m)));
        Ok(EventKind::Serve(r))
    }

    /// A `call` by task `task`: `{"server": endpoint, "run": µs}`, and
    /// with the donation model `"timeout": µs` and a handler of several
    /// events (`run`, `lock`, `unlock`, `sleep`, nested `call`).
    fn call(&mut self, task: TaskIdx, m: &Member, path: &str) -> R<EventKind> {
        let spec = self.call_spec(task, m, path, None)?;
        let plain = spec.timeout_us.is_none()
            && matches!(
                spec.handler.as_slice(),
                [HandlerStep {
                    event: HandlerEvent::Run(_),
                    ..
                }]
            );
        let (endpoint, run) = (spec.endpoint, spec.run);
        if !plain {
            self.rpc.calls.push(CallAt {
                path: path.to_string(),
                spec,
            });
        }
        Ok(EventKind::Call { endpoint, run })
    }

    /// One call object at `path`: made by task `task`, or (nested) by the
    /// servers of endpoint `by`. Its keys besides `server` and `timeout`
    /// are its handler, in file order (repeats named as workgen would).
    fn call_spec(
        &mut self,
        task: TaskIdx,
        m: &Member,
        path: &str,
        by: Option<ResIdx>,
    ) -> R<CallSpec> {
        const KEYS: [&str; 7] = [
            "server", "timeout", "run", "lock", "unlock", "sleep", "call",
        ];
        let Some(Kind::Object(fields)) = m.value.as_ref().map(|v| &v.kind) else {
            return fail(
                value_at(m),
                path,
                format!(
                    "expected {{\"server\": endpoint, \"run\": µs}}, found {}",
                    found(m.value.as_ref())
                ),
            );
        };
        for f in fields {
            if !KEYS.contains(&f.key.as_str()) {
                return fail(
                    f.key_span.start,
                    &key_path(path, &f.name),
                    format!(
                        "unknown key {} in a call: expected {}",
                        quote_short(&f.key),
                        quoted_list(&KEYS)
                    ),
                );
            }
            if f.is_repeat() && (f.key == "server" || f.key == "timeout") {
                return fail(
                    f.key_span.start,
                    &key_path(path, &f.name),
                    format!("duplicate key {} in a call", quote_short(&f.key)),
                );
            }
        }
        let (server, server_at) = required_str(fields, m, "server", "endpoint", path, "call")?;
        let donation = self.rpc.model == IpcModel::Donation;
        let needs_donation = |f: &Member, what: &str| -> R<()> {
            if donation {
                return Ok(());
            }
            fail(
                f.key_span.start,
                &key_path(path, &f.name),
                format!("{what} needs the donation model: set \"ipc\": \"donation\" in global"),
            )
        };
        let handler_keys = fields
            .iter()
            .filter(|f| f.key != "server" && f.key != "timeout");
        if handler_keys.clone().all(|f| f.key != "run")
            && (!donation || handler_keys.clone().next().is_none())
        {
            return fail(
                value_at(m),
                path,
                "missing \"run\": a call needs \"server\" (an endpoint) and \"run\" (µs of work done by the server)",
            );
        }
        let timeout_us = match fields.iter().find(|f| f.key == "timeout") {
            Some(f) => {
                needs_donation(f, "a call's \"timeout\"")?;
                Some(positive_timeout(f, path)?)
            }
            None => None,
        };
        let s_path = key_path(path, "server");
        let r = self.res(server, Ns::Endpoint, &s_path, server_at);
        let u = &mut self.usage[r.0];
        match by {
            // A nested call is made by whichever server of `by` takes the
            // request: every serving task of `by` calls `r`.
            Some(b) => {
                if !u.nested_from.contains(&b) {
                    u.nested_from.push(b);
                }
            }
            None => push_unique(&mut u.callers, task),
        }
        u.first_call
            .get_or_insert_with(|| (s_path.clone(), server_at));
        let mut handler = Vec::new();
        let mut run = Micros::Fixed(0);
        // Mutexes the handler holds: (mutex, path of its lock).
        let mut held: Vec<(ResIdx, String)> = Vec::new();
        let mut runs = 0usize;
        for f in handler_keys {
            let h_path = key_path(path, &f.name);
            let event = match f.key.as_str() {
                "run" => {
                    runs += 1;
                    if runs > 1 {
                        needs_donation(f, "a handler's second \"run\"")?;
                    }
                    let m = micros(f.value.as_ref(), value_at(f), &h_path, "run")?;
                    run = micros_sum(run, m);
                    HandlerEvent::Run(m)
                }
                "sleep" => {
                    needs_donation(f, "a handler's \"sleep\"")?;
                    HandlerEvent::Sleep(micros(f.value.as_ref(), value_at(f), &h_path, "sleep")?)
                }
                "lock" => {
                    needs_donation(f, "a handler's \"lock\"")?;
                    let x = self.operand(f, Ns::Mutex, &h_path)?;
                    if let Some((_, at)) = held.iter().find(|(h, _)| *h == x) {
                        return fail(
                            value_at(f),
                            &h_path,
                            format!(
                                "this handler locks mutex {}, which it already holds: it locked it at {at} and has not unlocked it since (a mutex cannot be locked twice)",
                                quote_short(&self.resources[x.0].name)
                            ),
                        );
                    }
                    held.push((x, h_path.clone()));
                    HandlerEvent::Lock(x)
                }
                "unlock" => {
                    needs_donation(f, "a handler's \"unlock\"")?;
                    let x = self.operand(f, Ns::Mutex, &h_path)?;
                    let Some(pos) = held.iter().position(|(h, _)| *h == x) else {
                        let name = quote_short(&self.resources[x.0].name);
                        return fail(
                            value_at(f),
                            &h_path,
                            format!(
                                "this handler unlocks mutex {name}, which it does not hold at this point: lock {name} earlier in the same handler"
                            ),
                        );
                    };
                    held.remove(pos);
                    HandlerEvent::Unlock(x)
                }
                _ => {
                    needs_donation(f, "a nested \"call\"")?;
                    HandlerEvent::Call(Box::new(self.call_spec(task, f, &h_path, Some(r))?))
                }
            };
            handler.push(HandlerStep {
                path: h_path,
                event,
            });
        }
        if let Some((x, at)) = held.first() {
            let name = quote_short(&self.resources[x.0].name);
            return fail(
                value_at(m),
                path,
                format!(
                    "this handler ends holding mutex {name} (locked at {at}): unlock {name} before the handler ends, the server replies without it"
                ),
            );
        }
        Ok(CallSpec {
            endpoint: r,
            run,
            timeout_us,
            handler,
        })
    }
}

/// `a + b` as a summary of two durations (the bounds add up).
fn micros_sum(a: Micros, b: Micros) -> Micros {
    match (a, b) {
        (Micros::Fixed(x), Micros::Fixed(y)) => Micros::Fixed(x.saturating_add(y)),
        _ => Micros::Uniform {
            min: a.min().saturating_add(b.min()),
            max: a.max().saturating_add(b.max()),
        },
    }
}

/// A timer's `period` (µs > 0, or a range whose `min` is > 0); `at` is the
/// timer's value, for a missing period.
fn timer_period(fields: &[Member], at: usize, path: &str) -> R<Micros> {
    let Some(p) = fields.iter().find(|f| f.key == "period") else {
        return fail(
            at,
            path,
            "missing \"period\": a timer needs \"ref\" (its name) and \"period\" (µs > 0)",
        );
    };
    let p_path = key_path(path, "period");
    let period = match int_of(p.value.as_ref()) {
        Some(n) if n <= 0 => {
            return fail(
                value_at(p),
                &p_path,
                format!("period must be positive (µs > 0), found {n}"),
            )
        }
        _ => micros(p.value.as_ref(), value_at(p), &p_path, "period")?,
    };
    if period.min() == 0 {
        return fail(
            value_at(p),
            &p_path,
            "period must be positive (µs > 0), found a \"min\" of 0",
        );
    }
    Ok(period)
}

/// A timer's `mode`, if given, and the member that gives it.
fn timer_mode<'f>(fields: &'f [Member], path: &str) -> R<Option<(TimerMode, &'f Member)>> {
    let Some(f) = fields.iter().find(|f| f.key == "mode") else {
        return Ok(None);
    };
    match f.value.as_ref().and_then(Value::as_str) {
        Some("relative") => Ok(Some((TimerMode::Relative, f))),
        Some("absolute") => Ok(Some((TimerMode::Absolute, f))),
        _ => Err(expected(
            f,
            key_path(path, "mode"),
            "\"relative\" or \"absolute\"",
        )),
    }
}

fn mode_word(m: TimerMode) -> &'static str {
    match m {
        TimerMode::Relative => "\"relative\"",
        TimerMode::Absolute => "\"absolute\"",
    }
}

const MICROS_EXPECTED: &str = "expected µs as a non-negative integer or {\"min\":…,\"max\":…}";

/// A µs quantity (of `what`, for messages): an integer ≥ 0 or
/// `{"min": a, "max": b}` with a ≤ b, within heir's time limit.
fn micros(v: Option<&Value>, at: usize, path: &str, what: &str) -> R<Micros> {
    let bad = |v: Option<&Value>, at: usize, path: &str| {
        fail(at, path, format!("{MICROS_EXPECTED}, found {}", found(v)))
    };
    match v.map(|v| &v.kind) {
        Some(Kind::Number(_)) => match us_of(v) {
            Us::Ok(us) => Ok(Micros::Fixed(us)),
            Us::Beyond => Err(beyond_us(at, path, what, v)),
            Us::Bad => bad(v, at, path),
        },
        Some(Kind::Object(fields)) => {
            for f in fields {
                if f.key != "min" && f.key != "max" {
                    return fail(
                        f.key_span.start,
                        &key_path(path, &f.key),
                        format!(
                            "unknown key {} in a µs range: expected \"min\" and \"max\"",
                            quote_short(&f.key)
                        ),
                    );
                }
                if f.is_repeat() {
                    return fail(
                        f.key_span.start,
                        &key_path(path, &f.key),
                        format!("duplicate key {}", quote_short(&f.key)),
                    );
                }
            }
            let get = |k: &str| -> R<u64> {
                let Some(f) = fields.iter().find(|f| f.key == k) else {
                    return fail(
                        at,
                        path,
                        format!("missing \"{k}\": a µs range is {{\"min\": µs, \"max\": µs}}"),
                    );
                };
                micros_of(f, key_path(path, k))
            };
            let (min, max) = (get("min")?, get("max")?);
            if min > max {
                let min_at = fields.iter().find(|f| f.key == "min").map_or(at, value_at);
                return fail(
                    min_at,
                    &key_path(path, "min"),
                    format!("min {min} is greater than max {max}"),
                );
            }
            Ok(Micros::Uniform { min, max })
        }
        _ => bad(v, at, path),
    }
}

/// The members of an event's object value, all keys among `allowed`.
fn object_fields<'v>(
    m: &'v Member,
    path: &str,
    allowed: &[&str],
    what: &str,
    shape: &str,
) -> R<&'v [Member]> {
    let Some(Kind::Object(fields)) = m.value.as_ref().map(|v| &v.kind) else {
        return fail(
            value_at(m),
            path,
            format!("expected {shape}, found {}", found(m.value.as_ref())),
        );
    };
    for f in fields {
        if !allowed.contains(&f.key.as_str()) {
            return fail(
                f.key_span.start,
                &key_path(path, &f.key),
                format!(
                    "unknown key {} in a {what}: expected {}",
                    quote_short(&f.key),
                    quoted_list(allowed)
                ),
            );
        }
        if f.is_repeat() {
            return fail(
                f.key_span.start,
                &key_path(path, &f.key),
                format!("duplicate key {} in a {what}", quote_short(&f.key)),
            );
        }
    }
    Ok(fields)
}

/// A required string field of an event's object value, and where it is.
fn required_str<'v>(
    fields: &'v [Member],
    owner: &Member,
    key: &str,
    what: &str,
    path: &str,
    event: &str,
) -> R<(&'v str, usize)> {
    let Some(f) = fields.iter().find(|f| f.key == key) else {
        return fail(
            value_at(owner),
            path,
            format!("missing \"{key}\": a {event} needs \"{key}\" ({what} name)"),
        );
    };
    match f.value.as_ref().and_then(Value::as_str) {
        Some(s) => {
            check_name(s, value_at(f), &key_path(path, key))?;
            Ok((s, value_at(f)))
        }
        None => Err(expected(
            f,
            key_path(path, key),
            &format!("a string ({what} name)"),
        )),
    }
}

/// The `timeout` member `f` of the object at `path`: µs, > 0.
fn positive_timeout(f: &Member, path: &str) -> R<u64> {
    let t_path = key_path(path, "timeout");
    let us = micros_of(f, t_path.clone())?;
    if us == 0 {
        return fail(
            value_at(f),
            &t_path,
            "timeout must be positive (µs > 0), found 0",
        );
    }
    Ok(us)
}
