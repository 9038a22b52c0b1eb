//! From the JSON tree to a checked [`Scenario`].
//!
//! The build runs in five steps; the functions (and submodules) cite theirs.
//!
//! 1. The top level: `tasks` (required), `global`, `resources`; nothing else.
//! 2. `global`, then the task names (so that helpers and `resume` can name
//!    tasks wherever they are declared).
//! 3. `resources`: declared resources, in declaration order.
//! 4. Each task in file order: properties, phases, events. Resources that are
//!    used but not declared are created at their first use.
//! 5. Whole-scenario checks: one name used as two kinds of resource, endpoint
//!    servers, suspend/resume pairing, unused declarations; then the lists
//!    derived from uses (queue pushers/poppers, endpoint servers/callers,
//!    barrier users).

mod event;
mod resources;
mod task;

use std::collections::{HashMap, HashSet};

use crate::json::{push_path, quote_short, Kind, LineIndex, Member, PathSeg, Value};
use crate::model::*;

/// A failure: byte offset of the offending token, JSON path, message.
#[derive(Debug)]
pub(crate) struct Fail {
    pub at: usize,
    pub path: String,
    pub msg: String,
}

type R<T> = Result<T, Fail>;

fn fail<T>(at: usize, path: &str, msg: impl Into<String>) -> R<T> {
    Err(Fail {
        at,
        path: path.to_string(),
        msg: msg.into(),
    })
}

fn key_path(path: &str, key: &str) -> String {
    push_path(path, &PathSeg::Key(key.to_string()))
}

/// "found ..." for a member's value, `no value` for `"key",`.
fn found(v: Option<&Value>) -> String {
    v.map_or_else(|| "no value".to_string(), Value::describe)
}

/// Where a member's value is (its key when it has none).
fn value_at(m: &Member) -> usize {
    m.value.as_ref().map_or(m.key_span.start, |v| v.span.start)
}

/// `expected {what}, found …` at the value of `m`, whose path is `path`.
fn expected(m: &Member, path: String, what: &str) -> Fail {
    Fail {
        at: value_at(m),
        path,
        msg: format!("expected {what}, found {}", found(m.value.as_ref())),
    }
}

/// The value of `m` as µs (a non-negative integer); `path` is its path.
fn micros_of(m: &Member, path: String) -> R<u64> {
    int_of(m.value.as_ref())
        .and_then(|i| u64::try_from(i).ok())
        .ok_or_else(|| expected(m, path, "µs as a non-negative integer"))
}

/// The value as an integer, if it is a number written as one.
fn int_of(v: Option<&Value>) -> Option<i128> {
    match v.map(|v| &v.kind) {
        Some(Kind::Number(n)) => n.as_i128(),
        _ => None,
    }
}

/// `global` keys rt-app understands and heir accepts without using.
const IGNORED_GLOBALS: &[&str] = &[
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "lock_pages",
    "cumulative_slack",
    "io_device",
    "mem_buffer_size",
];

/// The resource name spaces that share names (suspend points live apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ns {
    Mutex,
    Cond,
    Queue,
    Barrier,
    Timer,
    Endpoint,
}

impl Ns {
    /// The word with its article: "a mutex", "an endpoint".
    fn a_word(self) -> &'static str {
        match self {
            Ns::Mutex => "a mutex",
            Ns::Cond => "a cond",
            Ns::Queue => "a queue",
            Ns::Barrier => "a barrier",
            Ns::Timer => "a timer",
            Ns::Endpoint => "an endpoint",
        }
    }
}

/// One use (or the declaration) of a resource name.
struct Use {
    ns: Ns,
    path: String,
    at: usize,
    declared: bool,
}

/// Who uses a resource, gathered while reading events.
#[derive(Default)]
struct Usage {
    pushers: Vec<TaskIdx>,
    poppers: Vec<TaskIdx>,
    servers: Vec<TaskIdx>,
    callers: Vec<TaskIdx>,
    barrier_tasks: Vec<TaskIdx>,
    /// First call / serve / suspend / resume: (path, offset).
    first_call: Option<(String, usize)>,
    first_serve: Option<(String, usize)>,
    first_suspend: Option<(String, usize)>,
    first_resume: Option<(String, usize)>,
    used: bool,
    /// Where the resource was declared, if it was.
    declared: Option<(String, usize)>,
    /// A timer's explicit mode and where it was given.
    timer_mode: Option<(TimerMode, String)>,
}

fn push_unique(v: &mut Vec<TaskIdx>, t: TaskIdx) {
    if !v.contains(&t) {
        v.push(t);
    }
}

/// Reads the JSON tree of a scenario into the model.
pub(crate) fn build(root: &Value, lines: &LineIndex<'_>) -> R<Scenario> {
    let mut b = Builder {
        lines,
        global: Global {
            duration_s: None,
            default_policy: Policy::Other,
            pi_enabled: false,
            pi_cv: true,
            seed: 0,
            calibration_ns_per_loop: None,
        },
        warnings: Vec::new(),
        task_by_name: HashMap::new(),
        task_names: Vec::new(),
        resources: Vec::new(),
        usage: Vec::new(),
        by_key: HashMap::new(),
        suspend_of: HashMap::new(),
        uses: HashMap::new(),
        use_order: Vec::new(),
        paired: HashSet::new(),
    };
    b.scenario(root)
}

struct Builder<'a> {
    lines: &'a LineIndex<'a>,
    global: Global,
    warnings: Vec<Warning>,
    task_by_name: HashMap<String, TaskIdx>,
    task_names: Vec<String>,
    resources: Vec<Resource>,
    /// Parallel to `resources`.
    usage: Vec<Usage>,
    by_key: HashMap<(String, Ns), ResIdx>,
    suspend_of: HashMap<TaskIdx, ResIdx>,
    /// Uses per name, and names in order of first use.
    uses: HashMap<String, Vec<Use>>,
    use_order: Vec<String>,
    /// Names used as both the cond and the mutex of one `wait`/`sync`.
    paired: HashSet<String>,
}

impl Builder<'_> {
    fn warn(&mut self, at: usize, path: &str, message: impl Into<String>) {
        let (line, column) = self.lines.line_col(at);
        self.warnings.push(Warning {
            path: path.to_string(),
            line,
            column,
            message: message.into(),
        });
    }

    fn line_col(&self, at: usize) -> (u32, u32) {
        self.lines.line_col(at)
    }

    /// Every key of `members` must be unique (properties, names).
    fn unique_keys(&self, members: &[Member], path: &str) -> R<()> {
        for m in members.iter().filter(|m| m.is_repeat()) {
            if let Some(first) = members.iter().find(|f| f.key == m.key) {
                return self.duplicate(first, m, path);
            }
        }
        Ok(())
    }

    /// `again` repeats the key of `first`, where a key may appear once.
    fn duplicate<T>(&self, first: &Member, again: &Member, path: &str) -> R<T> {
        let (l, c) = self.line_col(first.key_span.start);
        fail(
            again.key_span.start,
            &key_path(path, &again.key),
            format!(
                "duplicate key {} (first at line {l}, column {c}): it may appear only once here",
                quote_short(&again.key)
            ),
        )
    }

    /// Steps 1 to 5, in order.
    fn scenario(&mut self, root: &Value) -> R<Scenario> {
        // Step 1: the top level.
        let Some(top) = root.as_object() else {
            return fail(
                root.span.start,
                "",
                format!(
                    "expected a JSON object at the top level ({{\"tasks\": {{...}}}}), found {}",
                    root.describe()
                ),
            );
        };
        self.unique_keys(top, "")?;
        let (mut tasks, mut global, mut resources) = (None, None, None);
        for m in top {
            match m.key.as_str() {
                "tasks" => tasks = Some(m),
                "global" => global = Some(m),
                "resources" => resources = Some(m),
                other => {
                    return fail(
                        m.key_span.start,
                        &key_path("", other),
                        format!(
                        "unknown top-level key {}: expected \"tasks\", \"global\" or \"resources\"",
                        quote_short(other)
                    ),
                    )
                }
            }
        }
        let Some(tasks) = tasks else {
            return fail(
                root.span.start,
                "",
                "missing \"tasks\": expected an object of tasks at the top level",
            );
        };

        // Step 2: global, then the task names.
        if let Some(g) = global {
            self.global(g)?;
        }
        let tasks_obj = match tasks.value.as_ref().map(|v| &v.kind) {
            Some(Kind::Object(ms)) => ms,
            _ => {
                return fail(
                    value_at(tasks),
                    "tasks",
                    format!(
                        "expected an object of tasks ({{\"name\": {{...}}}}), found {}",
                        found(tasks.value.as_ref())
                    ),
                )
            }
        };
        if tasks_obj.is_empty() {
            return fail(
                value_at(tasks),
                "tasks",
                "expected at least one task in \"tasks\"",
            );
        }
        self.unique_keys(tasks_obj, "tasks")?;
        for (i, m) in tasks_obj.iter().enumerate() {
            if m.key.is_empty() {
                return fail(m.key_span.start, "tasks", "a task name cannot be empty");
            }
            self.task_by_name.insert(m.key.clone(), TaskIdx(i));
            self.task_names.push(m.key.clone());
        }

        // Step 3: declared resources.
        if let Some(r) = resources {
            self.declared_resources(r)?;
        }

        // Step 4: the tasks.
        let mut out = Vec::with_capacity(tasks_obj.len());
        for (i, m) in tasks_obj.iter().enumerate() {
            out.push(self.task(TaskIdx(i), m)?);
        }

        // Step 5: whole-scenario checks and derived lists.
        self.finish(&out)?;
        Ok(Scenario {
            global: self.global.clone(),
            resources: std::mem::take(&mut self.resources),
            tasks: out,
            warnings: std::mem::take(&mut self.warnings),
        })
    }

    /// Step 2: the `global` object.
    fn global(&mut self, g: &Member) -> R<()> {
        let Some(Kind::Object(members)) = g.value.as_ref().map(|v| &v.kind) else {
            return fail(
                value_at(g),
                "global",
                format!("expected an object, found {}", found(g.value.as_ref())),
            );
        };
        self.unique_keys(members, "global")?;
        for m in members {
            let path = key_path("global", &m.key);
            let v = m.value.as_ref();
            let at = value_at(m);
            match m.key.as_str() {
                "duration" => {
                    let secs = match v.map(|v| &v.kind) {
                        Some(Kind::Number(n)) => Some(n.as_f64()),
                        _ => None,
                    };
                    self.global.duration_s = match secs {
                        Some(-1.0) => None,
                        Some(s) if s >= 0.0 && s.is_finite() => Some(s),
                        _ => {
                            return fail(
                                at,
                                &path,
                                format!(
                                    "expected seconds (a number ≥ 0), or -1 for no limit, found {}",
                                    found(v)
                                ),
                            )
                        }
                    };
                }
                "default_policy" => self.global.default_policy = policy(m, &path)?,
                "pi_enabled" => self.global.pi_enabled = boolean(m, &path)?,
                "pi_cv" => self.global.pi_cv = boolean(m, &path)?,
                "seed" => {
                    self.global.seed =
                        int_of(v)
                            .and_then(|i| u64::try_from(i).ok())
                            .ok_or_else(|| {
                                expected(
                                    m,
                                    path.clone(),
                                    &format!("a seed (an integer 0..={})", u64::MAX),
                                )
                            })?;
                }
                "calibration" => {
                    self.global.calibration_ns_per_loop = match (v.map(|v| &v.kind), int_of(v)) {
                        (Some(Kind::String(_)), _) => None,
                        (_, Some(0)) => None,
                        (_, Some(n)) if n > 0 => u64::try_from(n).ok(),
                        _ => {
                            return fail(
                                at,
                                &path,
                                format!(
                                    "expected a CPU to calibrate on (\"CPU0\") or ns per loop (an integer ≥ 0), found {}",
                                    found(v)
                                ),
                            )
                        }
                    };
                }
                k if IGNORED_GLOBALS.contains(&k) => {}
                k => self.warn(
                    m.key_span.start,
                    &path,
                    format!("unknown global key {} (ignored)", quote_short(k)),
                ),
            }
        }
        Ok(())
    }

    /// Records a use of `name` as a resource of kind `ns`.
    fn record_use(&mut self, name: &str, ns: Ns, path: &str, at: usize, declared: bool) {
        let uses = self.uses.entry(name.to_string()).or_default();
        if uses.is_empty() {
            self.use_order.push(name.to_string());
        }
        uses.push(Use {
            ns,
            path: path.to_string(),
            at,
            declared,
        });
    }

    /// The resource `name` of kind `ns`, created with defaults at its first use.
    fn res(&mut self, name: &str, ns: Ns, path: &str, at: usize) -> ResIdx {
        self.record_use(name, ns, path, at, false);
        if let Some(&r) = self.by_key.get(&(name.to_string(), ns)) {
            self.usage[r.0].used = true;
            return r;
        }
        let kind = match ns {
            Ns::Mutex => ResourceKind::Mutex {
                protocol: if self.global.pi_enabled {
                    MutexProtocol::Inherit
                } else {
                    MutexProtocol::None
                },
            },
            Ns::Cond => ResourceKind::Cond {
                helpers: Vec::new(),
            },
            Ns::Queue => ResourceKind::Queue {
                capacity: 16,
                pushers: Vec::new(),
                poppers: Vec::new(),
            },
            Ns::Barrier => ResourceKind::Barrier { users: 0 },
            Ns::Timer => ResourceKind::Timer {
                mode: TimerMode::Relative,
                unique: false,
            },
            Ns::Endpoint => ResourceKind::Endpoint {
                servers: Vec::new(),
                callers: Vec::new(),
            },
        };
        let r = self.new_resource(name, path, kind);
        self.by_key.insert((name.to_string(), ns), r);
        r
    }

    fn new_resource(&mut self, name: &str, path: &str, kind: ResourceKind) -> ResIdx {
        let r = ResIdx(self.resources.len());
        self.resources.push(Resource {
            name: name.to_string(),
            path: path.to_string(),
            kind,
        });
        self.usage.push(Usage {
            used: true,
            ..Usage::default()
        });
        r
    }

    /// The suspend point of `task`, created at its first use.
    fn suspend_point(&mut self, task: TaskIdx, path: &str) -> ResIdx {
        if let Some(&r) = self.suspend_of.get(&task) {
            return r;
        }
        let name = self.task_names[task.0].clone();
        let r = self.new_resource(&name, path, ResourceKind::Suspend { task });
        self.suspend_of.insert(task, r);
        r
    }

    /// Step 5: whole-scenario checks and the lists derived from uses.
    fn finish(&mut self, tasks: &[Task]) -> R<()> {
        // One name, one kind — except a cond and a mutex of the same name
        // that some wait/sync uses together (rt-app keys resources by name
        // and type, and its own video-short.json relies on it).
        for name in &self.use_order {
            let uses = &self.uses[name];
            let first = &uses[0];
            let clash = uses.iter().find(|u| {
                u.ns != first.ns
                    && !(self.paired.contains(name)
                        && matches!(
                            (first.ns, u.ns),
                            (Ns::Mutex, Ns::Cond) | (Ns::Cond, Ns::Mutex)
                        ))
            });
            if let Some(u) = clash {
                let verb = if first.declared { "declared" } else { "used" };
                let second = if first.declared { "used as" } else { "as" };
                return fail(
                    u.at,
                    &u.path,
                    format!(
                        "{} is {verb} as {} at {} and {second} {} at {}",
                        quote_short(name),
                        first.ns.a_word(),
                        first.path,
                        u.ns.a_word(),
                        u.path
                    ),
                );
            }
        }

        for i in 0..self.resources.len() {
            let name = self.resources[i].name.clone();
            let u = std::mem::take(&mut self.usage[i]);
            match &mut self.resources[i].kind {
                ResourceKind::Queue {
                    pushers, poppers, ..
                } => {
                    *pushers = u.pushers;
                    *poppers = u.poppers;
                }
                ResourceKind::Endpoint { servers, callers } => {
                    if u.servers.is_empty() {
                        if let Some((path, at)) = &u.first_call {
                            return fail(
                                *at,
                                path,
                                format!(
                                    "endpoint {} is called but no task serves it: add \"serve\": {} to a server task",
                                    quote_short(&name),
                                    quote_short(&name)
                                ),
                            );
                        }
                    }
                    if u.callers.is_empty() {
                        if let Some((path, at)) = &u.first_serve {
                            self.warnings.push(warning(
                                self.lines,
                                *at,
                                path,
                                format!(
                                    "endpoint {} is served but no task calls it",
                                    quote_short(&name)
                                ),
                            ));
                        }
                    }
                    *servers = u.servers;
                    *callers = u.callers;
                }
                ResourceKind::Barrier { users } => {
                    *users = u
                        .barrier_tasks
                        .iter()
                        .map(|t| tasks[t.0].instance)
                        .fold(0u32, u32::saturating_add);
                }
                ResourceKind::Suspend { task } => {
                    let task_name = quote_short(&self.task_names[task.0]);
                    match (&u.first_suspend, &u.first_resume) {
                        (Some((path, at)), None) => self.warnings.push(warning(
                            self.lines,
                            *at,
                            path,
                            format!("no task resumes {task_name}: this suspend blocks it for good"),
                        )),
                        (None, Some((path, at))) => self.warnings.push(warning(
                            self.lines,
                            *at,
                            path,
                            format!("task {task_name} never suspends: this resume is always lost"),
                        )),
                        _ => {}
                    }
                }
                ResourceKind::Mutex { .. }
                | ResourceKind::Cond { .. }
                | ResourceKind::Timer { .. } => {}
            }
            if !u.used {
                if let Some((path, at)) = &u.declared {
                    self.warnings.push(warning(
                        self.lines,
                        *at,
                        path,
                        format!("resource {} is declared but never used", quote_short(&name)),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn warning(lines: &LineIndex<'_>, at: usize, path: &str, message: String) -> Warning {
    let (line, column) = lines.line_col(at);
    Warning {
        path: path.to_string(),
        line,
        column,
        message,
    }
}

fn policy(m: &Member, path: &str) -> R<Policy> {
    const ALL: [Policy; 6] = [
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Fifo,
        Policy::Rr,
        Policy::Deadline,
    ];
    let names = || ALL.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
    match m.value.as_ref().map(|v| &v.kind) {
        Some(Kind::String(s)) => ALL.iter().copied().find(|p| p.name() == s).map_or_else(
            || {
                fail(
                    value_at(m),
                    path,
                    format!(
                        "unknown policy {}: expected one of {}",
                        quote_short(s),
                        names()
                    ),
                )
            },
            Ok,
        ),
        _ => fail(
            value_at(m),
            path,
            format!(
                "expected a policy name (one of {}), found {}",
                names(),
                found(m.value.as_ref())
            ),
        ),
    }
}

fn boolean(m: &Member, path: &str) -> R<bool> {
    match m.value.as_ref().map(|v| &v.kind) {
        Some(Kind::Bool(b)) => Ok(*b),
        _ => fail(
            value_at(m),
            path,
            format!("expected true or false, found {}", found(m.value.as_ref())),
        ),
    }
}
