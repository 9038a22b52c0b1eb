//! From the JSON tree to a checked [`Scenario`].
//!
//! The build runs in six steps; the functions (and submodules) cite theirs.
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
//!    barrier users), and heir's limits on them.
//! 6. Each task's program, walked as its threads will run it (`program`):
//!    no relock, no unlock or wait without the mutex, and no task that
//!    never lets time pass while looping forever.

mod event;
mod program;
mod resources;
mod task;

use std::collections::{HashMap, HashSet};

use crate::json::{self, push_path, quote_short, Kind, LineIndex, Member, PathSeg, Value};
use crate::limits::*;
use crate::model::*;
use heir_core::protocol::{Protocol, CEILING_PRIORITIES};

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
    crate::json::push_key(path, key)
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

/// A µs value read from a number.
enum Us {
    /// Within heir's time limit.
    Ok(u64),
    /// A non-negative integer beyond [`MAX_TIME_US`].
    Beyond,
    /// Not a non-negative integer.
    Bad,
}

/// The value as µs: a non-negative integer, at most [`MAX_TIME_US`].
fn us_of(v: Option<&Value>) -> Us {
    let Some(Kind::Number(n)) = v.map(|v| &v.kind) else {
        return Us::Bad;
    };
    let text = n.text();
    if !n.is_integer() || text.starts_with('-') {
        return Us::Bad;
    }
    // Digits only: a failed parse is an overflow.
    match text.parse::<u64>() {
        Ok(us) if us <= MAX_TIME_US => Us::Ok(us),
        _ => Us::Beyond,
    }
}

/// The time-limit error for the µs value of `what` at `at`.
fn beyond_us(at: usize, path: &str, what: &str, v: Option<&Value>) -> Fail {
    Fail {
        at,
        path: path.to_string(),
        msg: beyond_time_limit_us(what, &found(v)),
    }
}

/// The value of `m` as µs (a non-negative integer within heir's time
/// limit); `path` is its path.
fn micros_of(m: &Member, path: String) -> R<u64> {
    let v = m.value.as_ref();
    match us_of(v) {
        Us::Ok(us) => Ok(us),
        Us::Beyond => Err(beyond_us(value_at(m), &path, &m.key, v)),
        Us::Bad => Err(expected(m, path, "µs as a non-negative integer")),
    }
}

/// Refuses a name (of a task, phase or resource) longer than
/// [`MAX_NAME_BYTES`].
fn check_name(name: &str, at: usize, path: &str) -> R<()> {
    if name.len() <= MAX_NAME_BYTES {
        return Ok(());
    }
    fail(
        at,
        path,
        format!(
            "the name {} is longer than heir's limit of {MAX_NAME_BYTES} bytes",
            quote_short(name)
        ),
    )
}

/// The value of `m` (at `path`) as a number of `unit` from `min` to `max`;
/// `what` says what is expected when it is not an integer ≥ `min`.
fn count_within(m: &Member, path: String, min: u64, max: u32, what: &str, unit: &str) -> R<u32> {
    let v = m.value.as_ref();
    let Some(n) = count_of(v).filter(|&n| n >= min) else {
        return Err(expected(m, path, what));
    };
    match u32::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => fail(
            value_at(m),
            &path,
            format!(
                "{} {} is over heir's limit of {max} {unit}",
                m.key,
                found(v)
            ),
        ),
    }
}

/// Keys for a message: `"a", "b", "c"`.
fn quoted_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The value as an integer, if it is a number written as one.
fn int_of(v: Option<&Value>) -> Option<i128> {
    match v.map(|v| &v.kind) {
        Some(Kind::Number(n)) => n.as_i128(),
        _ => None,
    }
}

/// The value as a count compared with a limit: a non-negative integer, as
/// `u64::MAX` when it is larger than that (`None` for anything else).
fn count_of(v: Option<&Value>) -> Option<u64> {
    let Some(Kind::Number(n)) = v.map(|v| &v.kind) else {
        return None;
    };
    let text = n.text();
    if !n.is_integer() || text.starts_with('-') {
        return None;
    }
    // Digits only: a failed parse is an overflow.
    Some(text.parse::<u64>().unwrap_or(u64::MAX))
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
    Gang,
}

impl Ns {
    /// The word: "mutex", "endpoint".
    fn word(self) -> &'static str {
        match self {
            Ns::Mutex => "mutex",
            Ns::Cond => "cond",
            Ns::Queue => "queue",
            Ns::Barrier => "barrier",
            Ns::Timer => "timer",
            Ns::Endpoint => "endpoint",
            Ns::Gang => "gang",
        }
    }

    /// The word with its article: "a mutex", "an endpoint".
    fn a_word(self) -> &'static str {
        match self {
            Ns::Mutex => "a mutex",
            Ns::Cond => "a cond",
            Ns::Queue => "a queue",
            Ns::Barrier => "a barrier",
            Ns::Timer => "a timer",
            Ns::Endpoint => "an endpoint",
            Ns::Gang => "a gang",
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
    /// Endpoints whose handlers call this one (nested calls): their
    /// serving tasks are callers too.
    nested_from: Vec<ResIdx>,
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
///
/// `deferred`: the offsets of the tasks' objects that the tree leaves out
/// (`json::parse_deferring_tasks`), read again here one task at a time.
pub(crate) fn build(
    root: &Value,
    deferred: &HashSet<usize>,
    lines: &LineIndex<'_>,
    limit: &ThreadLimit,
) -> R<Scenario> {
    let mut b = Builder {
        lines,
        deferred,
        limit,
        global: Global {
            duration_s: None,
            default_policy: Policy::Other,
            pi_enabled: false,
            pi_cv: true,
            bwi_affinity: true,
            seed: 0,
            gpm: true,
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
        threads: 0,
        rpc: Rpc::default(),
        gang_of: HashMap::new(),
    };
    b.scenario(root)
}

struct Builder<'a> {
    lines: &'a LineIndex<'a>,
    /// Offsets of the tasks' objects left out of the tree.
    deferred: &'a HashSet<usize>,
    /// The face's thread limit.
    limit: &'a ThreadLimit,
    global: Global,
    warnings: Vec<Warning>,
    task_by_name: HashMap<String, TaskIdx>,
    task_names: Vec<String>,
    resources: Vec<Resource>,
    /// Parallel to `resources`.
    usage: Vec<Usage>,
    /// Resources by name, then kind (a name may be used as several kinds,
    /// an error found later): looked up by `&str`, without a copy.
    by_key: HashMap<String, Vec<(Ns, ResIdx)>>,
    suspend_of: HashMap<TaskIdx, ResIdx>,
    /// Uses per name, and names in order of first use.
    uses: HashMap<String, Vec<Use>>,
    use_order: Vec<String>,
    /// Names used as both the cond and the mutex of one `wait`/`sync`.
    paired: HashSet<String>,
    /// Threads of the tasks read so far (at most the limit + one task's).
    threads: u64,
    /// `global.ipc`, passive tasks, calls with a timeout or a nested call.
    rpc: Rpc,
    /// GPM: the gang each task is listed in (a thread is a member of
    /// at most one gang), with the JSON path of the listing.
    gang_of: HashMap<TaskIdx, (String, String)>,
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

    /// Steps 1 to 6, in order.
    fn scenario(&mut self, root: &Value) -> R<Scenario> {
        let top = self.top_level(root)?;
        // Step 2: global, then the task names.
        if let Some(g) = top.global {
            self.global(g)?;
        }
        let tasks_obj = self.task_names(top.tasks)?;
        // Step 3: declared resources.
        if let Some(r) = top.resources {
            self.declared_resources(r)?;
        }
        // Step 4: the tasks.
        let mut out = Vec::with_capacity(tasks_obj.len());
        for (i, m) in tasks_obj.iter().enumerate() {
            let read;
            let m = match self.read_deferred(m)? {
                Some(full) => {
                    read = full;
                    &read
                }
                None => m,
            };
            out.push(self.task(TaskIdx(i), m)?);
        }
        // Step 5: whole-scenario checks and derived lists.
        self.finish(&out)?;
        // Step 6: the programs.
        self.check_programs(&out)?;
        Ok(Scenario {
            global: self.global.clone(),
            resources: std::mem::take(&mut self.resources),
            tasks: out,
            warnings: std::mem::take(&mut self.warnings),
            rpc: std::mem::take(&mut self.rpc),
        })
    }

    /// Task member `m` with its object read again, when the tree left it
    /// out (`deferred`); `None` when the tree has it.
    fn read_deferred(&self, m: &Member) -> R<Option<Member>> {
        let Some(v) = m
            .value
            .as_ref()
            .filter(|v| self.deferred.contains(&v.span.start))
        else {
            return Ok(None);
        };
        let path = vec![PathSeg::Key("tasks".into()), PathSeg::Key(m.name.clone())];
        let value = json::parse_value_at(self.lines.text(), v.span.start, path, 2)
            // The first reading found no error here: this one cannot.
            .map_err(|e| Fail {
                at: e.offset,
                path: e.path,
                msg: e.message,
            })?;
        Ok(Some(Member {
            key: m.key.clone(),
            name: m.name.clone(),
            key_span: m.key_span,
            value: Some(value),
        }))
    }

    /// Step 1: the top-level object, its keys each at most once and among
    /// `tasks` (required), `global` and `resources`.
    fn top_level<'v>(&self, root: &'v Value) -> R<TopLevel<'v>> {
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
        Ok(TopLevel {
            tasks,
            global,
            resources,
        })
    }

    /// Step 2: the names of the tasks of `tasks`, which must be an object of
    /// at least one task, each name unique, not empty and within limits.
    /// Returns the task members.
    fn task_names<'v>(&mut self, tasks: &'v Member) -> R<&'v [Member]> {
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
            check_name(&m.key, m.key_span.start, &key_path("tasks", &m.key))?;
            self.task_by_name.insert(m.key.clone(), TaskIdx(i));
            self.task_names.push(m.key.clone());
        }
        Ok(tasks_obj)
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
            match m.key.as_str() {
                "duration" => self.global.duration_s = duration(m, &path)?,
                "default_policy" => self.global.default_policy = policy(m, &path)?,
                "pi_enabled" => self.global.pi_enabled = boolean(m, &path)?,
                "pi_cv" => self.global.pi_cv = boolean(m, &path)?,
                "bwi_affinity" => self.global.bwi_affinity = boolean(m, &path)?,
                "gpm" => self.global.gpm = boolean(m, &path)?,
                "ipc" => {
                    self.rpc.model = match m.value.as_ref().and_then(Value::as_str) {
                        Some("pi-cv") => IpcModel::PiCv,
                        Some("donation") => IpcModel::Donation,
                        _ => return Err(expected(m, path, "\"pi-cv\" or \"donation\"")),
                    }
                }
                "seed" => {
                    self.global.seed = int_of(m.value.as_ref())
                        .and_then(|i| u64::try_from(i).ok())
                        .ok_or_else(|| {
                            expected(
                                m,
                                path.clone(),
                                &format!("a seed (an integer 0..={})", u64::MAX),
                            )
                        })?;
                }
                "calibration" => self.global.calibration_ns_per_loop = calibration(m, &path)?,
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
        let uses = match self.uses.get_mut(name) {
            Some(uses) => uses,
            None => {
                self.use_order.push(name.to_string());
                self.uses.entry(name.to_string()).or_default()
            }
        };
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
        let found = self
            .by_key
            .get(name)
            .and_then(|kinds| kinds.iter().find_map(|&(k, r)| (k == ns).then_some(r)));
        if let Some(r) = found {
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
            Ns::Gang => ResourceKind::Gang {
                members: Vec::new(),
            },
        };
        let r = self.new_resource(name, path, kind);
        self.key_resource(name, ns, r);
        r
    }

    /// Files resource `r` under its name and kind.
    fn key_resource(&mut self, name: &str, ns: Ns, r: ResIdx) {
        match self.by_key.get_mut(name) {
            Some(kinds) => match kinds.iter_mut().find(|(k, _)| *k == ns) {
                Some(x) => x.1 = r,
                None => kinds.push((ns, r)),
            },
            None => {
                self.by_key.insert(name.to_string(), vec![(ns, r)]);
            }
        }
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
        self.one_kind_per_name()?;
        // Nested calls: the serving tasks of the endpoint whose handler
        // calls on are callers of the endpoint called.
        for i in 0..self.usage.len() {
            for b in self.usage[i].nested_from.clone() {
                for t in self.usage[b.0].servers.clone() {
                    push_unique(&mut self.usage[i].callers, t);
                }
            }
        }
        let mut links = 0u64;
        for i in 0..self.resources.len() {
            let u = std::mem::take(&mut self.usage[i]);
            self.count_links(&mut links, i, &u, tasks)?;
            self.check_uses(i, &u)?;
            self.derive_lists(i, u, tasks);
        }
        Ok(())
    }

    /// One name, one kind — except a cond and a mutex of the same name
    /// that some wait/sync uses together (rt-app keys resources by name
    /// and type, and its own video-short.json relies on it).
    fn one_kind_per_name(&self) -> R<()> {
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
        Ok(())
    }

    /// What the uses `u` of resource `i` say: an endpoint called but not
    /// served is refused; an endpoint served but not called, a suspend that
    /// nobody resumes, a resume of a task that never suspends and a
    /// declaration never used are warned about.
    fn check_uses(&mut self, i: usize, u: &Usage) -> R<()> {
        let name = quote_short(&self.resources[i].name);
        match self.resources[i].kind {
            ResourceKind::Endpoint { .. } => {
                if u.servers.is_empty() {
                    if let Some((path, at)) = &u.first_call {
                        return fail(
                            *at,
                            path,
                            format!(
                                "endpoint {name} is called but no task serves it: add \"serve\": {name} to a server task"
                            ),
                        );
                    }
                }
                if u.callers.is_empty() {
                    if let Some((path, at)) = &u.first_serve {
                        self.warn(
                            *at,
                            path,
                            format!("endpoint {name} is served but no task calls it"),
                        );
                    }
                }
            }
            ResourceKind::Suspend { task } => {
                let task_name = quote_short(&self.task_names[task.0]);
                match (&u.first_suspend, &u.first_resume) {
                    (Some((path, at)), None) => self.warn(
                        *at,
                        path,
                        format!("no task resumes {task_name}: this suspend blocks it for good"),
                    ),
                    (None, Some((path, at))) => self.warn(
                        *at,
                        path,
                        format!("task {task_name} never suspends: this resume is always lost"),
                    ),
                    _ => {}
                }
            }
            _ => {}
        }
        if !u.used {
            if let Some((path, at)) = &u.declared {
                self.warn(
                    *at,
                    path,
                    format!("resource {name} is declared but never used"),
                );
            }
        }
        Ok(())
    }

    /// The lists of resource `i` derived from its uses `u`: a queue's
    /// pushers and poppers, an endpoint's servers and callers, a barrier's
    /// number of threads.
    fn derive_lists(&mut self, i: usize, u: Usage, tasks: &[Task]) {
        match &mut self.resources[i].kind {
            ResourceKind::Queue {
                pushers, poppers, ..
            } => {
                *pushers = u.pushers;
                *poppers = u.poppers;
            }
            ResourceKind::Endpoint { servers, callers } => {
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
            ResourceKind::Suspend { .. }
            | ResourceKind::Gang { .. }
            | ResourceKind::Mutex { .. }
            | ResourceKind::Cond { .. }
            | ResourceKind::Timer { .. } => {}
        }
    }
}

impl Builder<'_> {
    /// Adds the PI-CV helper links of resource `i` (used as `u`) to
    /// `links`, refusing a scenario over [`MAX_HELPER_LINKS`].
    fn count_links(&self, links: &mut u64, i: usize, u: &Usage, tasks: &[Task]) -> R<()> {
        let threads = |ts: &[TaskIdx]| -> u64 {
            ts.iter()
                .map(|t| u64::from(tasks.get(t.0).map_or(0, |t| t.instance)))
                .sum()
        };
        let res = &self.resources[i];
        let (n, why, at) = match &res.kind {
            ResourceKind::Cond { helpers } => {
                let n = threads(helpers);
                (n, format!("{n} helper threads"), u.declared.clone())
            }
            ResourceKind::Queue { .. } => {
                let (push, pop) = (threads(&u.pushers), threads(&u.poppers));
                (
                    push + pop,
                    format!("{push} pushing and {pop} popping threads"),
                    u.declared.clone().or_else(|| self.first_use(&res.name)),
                )
            }
            ResourceKind::Endpoint { .. } => {
                let (call, serve) = (threads(&u.callers), threads(&u.servers));
                (
                    call * serve,
                    format!("{call} calling threads × {serve} serving threads"),
                    u.first_call.clone().or_else(|| u.first_serve.clone()),
                )
            }
            _ => return Ok(()),
        };
        *links += n;
        if *links <= MAX_HELPER_LINKS {
            return Ok(());
        }
        let (path, at) = at.unwrap_or_else(|| (res.path.clone(), 0));
        fail(
            at,
            &path,
            format!(
                "{} {} brings the PI-CV helper links to {links} ({why}), over heir's limit of {MAX_HELPER_LINKS}",
                res.kind.word(),
                quote_short(&res.name)
            ),
        )
    }

    /// Where `name` is first declared or used.
    fn first_use(&self, name: &str) -> Option<(String, usize)> {
        self.uses
            .get(name)
            .and_then(|u| u.first())
            .map(|u| (u.path.clone(), u.at))
    }
}

/// The members of the top-level object.
struct TopLevel<'v> {
    tasks: &'v Member,
    global: Option<&'v Member>,
    resources: Option<&'v Member>,
}

/// `global.duration`: seconds ≥ 0 within heir's time limit, or -1 (`None`)
/// for no limit.
fn duration(m: &Member, path: &str) -> R<Option<f64>> {
    let v = m.value.as_ref();
    let secs = match v.map(|v| &v.kind) {
        Some(Kind::Number(n)) => Some(n.as_f64()),
        _ => None,
    };
    match secs {
        Some(-1.0) => Ok(None),
        Some(s) if seconds_to_us(s).is_some() => Ok(Some(s)),
        Some(s) if s > 0.0 => fail(
            value_at(m),
            path,
            beyond_time_limit_s("duration", &found(v)),
        ),
        _ => fail(
            value_at(m),
            path,
            format!(
                "expected seconds (a number ≥ 0), or -1 for no limit, found {}",
                found(v)
            ),
        ),
    }
}

/// `global.calibration`: ns per loop, `None` for a CPU to calibrate on
/// (`"CPU0"`) or 0.
fn calibration(m: &Member, path: &str) -> R<Option<u64>> {
    let v = m.value.as_ref();
    match (v.map(|v| &v.kind), int_of(v)) {
        (Some(Kind::String(_)), _) => Ok(None),
        (_, Some(0)) => Ok(None),
        (_, Some(n)) if n > 0 => Ok(u64::try_from(n).ok()),
        _ => fail(
            value_at(m),
            path,
            format!(
                "expected a CPU to calibrate on (\"CPU0\") or ns per loop (an integer ≥ 0), found {}",
                found(v)
            ),
        ),
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
