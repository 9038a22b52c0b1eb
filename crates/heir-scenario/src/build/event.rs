//! Step 4, continued: events and the resources they name.

use super::task::Ev;
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

    /// Reads one event of task `task` into `out` (two for `sync`).
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
            Ev::Lock | Ev::Unlock => {
                let name = Self::name_operand(m, "mutex", &path)?;
                let r = self.res(name, Ns::Mutex, &path, at);
                emit(if ev == Ev::Lock {
                    EventKind::Lock(r)
                } else {
                    EventKind::Unlock(r)
                });
            }
            Ev::Signal | Ev::Broad => {
                let name = Self::name_operand(m, "cond", &path)?;
                let r = self.res(name, Ns::Cond, &path, at);
                emit(if ev == Ev::Signal {
                    EventKind::Signal(r)
                } else {
                    EventKind::Broadcast(r)
                });
            }
            Ev::Wait | Ev::Sync => {
                let what = if ev == Ev::Wait { "wait" } else { "sync" };
                let fields = object_fields(
                    m,
                    &path,
                    &["ref", "mutex"],
                    what,
                    "{\"ref\": cond, \"mutex\": mutex}",
                )?;
                let (cond_name, cond_at) = required_str(fields, m, "ref", "cond", &path, what)?;
                let (mutex_name, mutex_at) =
                    required_str(fields, m, "mutex", "mutex", &path, what)?;
                let cond = self.res(cond_name, Ns::Cond, &key_path(&path, "ref"), cond_at);
                let mutex = self.res(mutex_name, Ns::Mutex, &key_path(&path, "mutex"), mutex_at);
                if cond_name == mutex_name {
                    self.paired.insert(cond_name.to_string());
                }
                if ev == Ev::Sync {
                    emit(EventKind::Signal(cond));
                }
                emit(EventKind::Wait { cond, mutex });
            }
            Ev::Timer => {
                let fields = object_fields(
                    m,
                    &path,
                    &["ref", "period", "mode"],
                    "timer",
                    "{\"ref\": name, \"period\": µs, \"mode\": \"relative\"|\"absolute\"}",
                )?;
                let (tref, ref_at) = required_str(fields, m, "ref", "timer", &path, "timer")?;
                let Some(p) = fields.iter().find(|f| f.key == "period") else {
                    return fail(
                        at,
                        &path,
                        "missing \"period\": a timer needs \"ref\" (its name) and \"period\" (µs > 0)",
                    );
                };
                let p_path = key_path(&path, "period");
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
                let mode = match fields.iter().find(|f| f.key == "mode") {
                    None => None,
                    Some(f) => match f.value.as_ref().and_then(Value::as_str) {
                        Some("relative") => Some((TimerMode::Relative, f)),
                        Some("absolute") => Some((TimerMode::Absolute, f)),
                        _ => {
                            return Err(expected(
                                f,
                                key_path(&path, "mode"),
                                "\"relative\" or \"absolute\"",
                            ))
                        }
                    },
                };
                let unique = tref.starts_with("unique");
                let name = if unique {
                    format!("{tref}@{task_name}")
                } else {
                    tref.to_string()
                };
                let r = self.res(&name, Ns::Timer, &key_path(&path, "ref"), ref_at);
                if let ResourceKind::Timer { unique: u, .. } = &mut self.resources[r.0].kind {
                    *u = unique;
                }
                if let Some((mode, f)) = mode {
                    let mode_path = key_path(&path, "mode");
                    match &self.usage[r.0].timer_mode {
                        Some((prev, prev_path)) if *prev != mode => {
                            return fail(
                                value_at(f),
                                &mode_path,
                                format!(
                                "timer {} is {} here but {} at {prev_path}: one timer has one mode",
                                quote_short(tref),
                                mode_word(mode),
                                mode_word(*prev)
                            ),
                            )
                        }
                        Some(_) => {}
                        None => {
                            self.usage[r.0].timer_mode = Some((mode, mode_path));
                            if let ResourceKind::Timer { mode: m, .. } =
                                &mut self.resources[r.0].kind
                            {
                                *m = mode;
                            }
                        }
                    }
                }
                emit(EventKind::Timer { timer: r, period });
            }
            Ev::Suspend => {
                let r = self.suspend_point(task, &path);
                self.usage[r.0]
                    .first_suspend
                    .get_or_insert_with(|| (path.clone(), m.key_span.start));
                emit(EventKind::Suspend(r));
            }
            Ev::Resume => {
                let target = Self::name_operand(m, "task", &path)?;
                match self.task_by_name.get(target) {
                    Some(&t) => {
                        let r = self.suspend_point(t, &path);
                        self.usage[r.0]
                            .first_resume
                            .get_or_insert_with(|| (path.clone(), at));
                        emit(EventKind::Resume(r));
                    }
                    None => self.warn(
                        at,
                        &path,
                        format!(
                            "resume target {} is not a task: rt-app's suspend always waits under the \
                             suspending task's own name, so this resume wakes nobody; heir leaves it out",
                            quote_short(target)
                        ),
                    ),
                }
            }
            Ev::Yield => emit(EventKind::Yield),
            Ev::Barrier => {
                let name = Self::name_operand(m, "barrier", &path)?;
                let r = self.res(name, Ns::Barrier, &path, at);
                push_unique(&mut self.usage[r.0].barrier_tasks, task);
                emit(EventKind::Barrier(r));
            }
            Ev::Push | Ev::Pop => {
                let name = Self::name_operand(m, "queue", &path)?;
                let r = self.res(name, Ns::Queue, &path, at);
                let u = &mut self.usage[r.0];
                push_unique(
                    if ev == Ev::Push {
                        &mut u.pushers
                    } else {
                        &mut u.poppers
                    },
                    task,
                );
                emit(if ev == Ev::Push {
                    EventKind::Push(r)
                } else {
                    EventKind::Pop(r)
                });
            }
            Ev::Serve => {
                let name = Self::name_operand(m, "endpoint", &path)?;
                let r = self.res(name, Ns::Endpoint, &path, at);
                let u = &mut self.usage[r.0];
                push_unique(&mut u.servers, task);
                u.first_serve.get_or_insert_with(|| (path.clone(), at));
                emit(EventKind::Serve(r));
            }
            Ev::Call => {
                let fields = object_fields(
                    m,
                    &path,
                    &["server", "run"],
                    "call",
                    "{\"server\": endpoint, \"run\": µs}",
                )?;
                let (server, server_at) =
                    required_str(fields, m, "server", "endpoint", &path, "call")?;
                let Some(run) = fields.iter().find(|f| f.key == "run") else {
                    return fail(
                        at,
                        &path,
                        "missing \"run\": a call needs \"server\" (an endpoint) and \"run\" (µs of work done by the server)",
                    );
                };
                let run = micros(
                    run.value.as_ref(),
                    value_at(run),
                    &key_path(&path, "run"),
                    "run",
                )?;
                let s_path = key_path(&path, "server");
                let r = self.res(server, Ns::Endpoint, &s_path, server_at);
                let u = &mut self.usage[r.0];
                push_unique(&mut u.callers, task);
                u.first_call
                    .get_or_insert_with(|| (s_path.clone(), server_at));
                emit(EventKind::Call { endpoint: r, run });
            }
        }
        Ok(())
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
                    allowed
                        .iter()
                        .map(|a| format!("\"{a}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
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
