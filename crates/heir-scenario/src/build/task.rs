//! Step 4: tasks and phases, their properties and scheduling attributes.

use super::*;

/// The event names heir models, in the order rt-app's `events[]` table
/// matches prefixes (so `runtime3` is `runtime`, not `run`), then heir's own.
const EVENTS: &[(&str, Ev)] = &[
    ("lock", Ev::Lock),
    ("unlock", Ev::Unlock),
    ("wait", Ev::Wait),
    ("signal", Ev::Signal),
    ("broad", Ev::Broad),
    ("sync", Ev::Sync),
    ("sleep", Ev::Sleep),
    ("runtime", Ev::Runtime),
    ("run", Ev::Run),
    ("timer", Ev::Timer),
    ("suspend", Ev::Suspend),
    ("resume", Ev::Resume),
    ("yield", Ev::Yield),
    ("barrier", Ev::Barrier),
    ("push", Ev::Push),
    ("pop", Ev::Pop),
    ("call", Ev::Call),
    ("serve", Ev::Serve),
    ("gang_run", Ev::Gang(GangEv::Run)),
    ("gang_wait", Ev::Gang(GangEv::Wait)),
    ("gang_notify", Ev::Gang(GangEv::Notify)),
    ("gang_insert", Ev::Gang(GangEv::Insert)),
    ("gang_remove", Ev::Gang(GangEv::Remove)),
    ("gang_active", Ev::Gang(GangEv::Active)),
    ("gang_passive", Ev::Gang(GangEv::Passive)),
];

/// rt-app keys heir refuses, with the reason.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("memrun", "rt-app's memrun is a memory-bandwidth load"),
    ("mem", "rt-app's mem is a memory-bandwidth load"),
    ("iorun", "rt-app's iorun writes to an I/O device"),
    ("fork", "rt-app's fork creates threads at run time"),
    ("sem_post", "rt-app's sem_post uses a POSIX semaphore"),
    ("sem_wait", "rt-app's sem_wait uses a POSIX semaphore"),
    ("taskgroup", "rt-app's taskgroup places threads in cgroups"),
];

const TASK_PROPS: &[&str] = &[
    "instance",
    "loop",
    "delay",
    "policy",
    "priority",
    "cpus",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "nodes_membind",
    "phases",
    "passive",
];

const PHASE_PROPS: &[&str] = &[
    "loop",
    "cpus",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "nodes_membind",
];

/// The `SCHED_DEADLINE` parameters of a task or phase.
const DL_KEYS: [&str; 3] = ["dl-runtime", "dl-period", "dl-deadline"];

/// A `SCHED_DEADLINE` task or phase without them.
const DL_RUNTIME_NEEDED: &str = "SCHED_DEADLINE needs \"dl-runtime\" (µs, > 0); \"dl-period\" defaults to it and \"dl-deadline\" to the period";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ev {
    Lock,
    Unlock,
    Wait,
    Signal,
    Broad,
    Sync,
    Sleep,
    Runtime,
    Run,
    Timer,
    Suspend,
    Resume,
    Yield,
    Barrier,
    Push,
    Pop,
    Call,
    Serve,
    Gang(GangEv),
}

/// The gang events (GPM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GangEv {
    Run,
    Wait,
    Notify,
    Insert,
    Remove,
    Active,
    Passive,
}

/// What a key of a task or phase object is.
enum Slot {
    Prop(&'static str),
    Event(Ev),
}

/// Classifies `key` of a task or phase object whose properties are `props`.
fn classify(key: &str, props: &[&'static str], at: usize, path: &str, owner: &str) -> R<Slot> {
    if let Some(p) = props.iter().find(|p| **p == key) {
        return Ok(Slot::Prop(p));
    }
    if let Some((_, ev)) = EVENTS.iter().find(|(name, _)| key.starts_with(name)) {
        return Ok(Slot::Event(*ev));
    }
    if let Some((name, why)) = UNSUPPORTED.iter().find(|(name, _)| key.starts_with(name)) {
        let what = if *name == "taskgroup" { "key" } else { "event" };
        return fail(
            at,
            path,
            format!("{what} \"{name}\" is not modelled by heir ({why})"),
        );
    }
    let events: Vec<&str> = EVENTS.iter().map(|(n, _)| *n).collect();
    fail(
        at,
        path,
        format!(
            "unknown key {} in {owner}: expected a property ({}) or an event ({}; \
             a suffix is allowed, as in run1)",
            quote_short(key),
            props.join(", "),
            events.join(", ")
        ),
    )
}

/// The properties of a task or phase object by name, and its events in
/// file order.
type PropsAndEvents<'m> = (HashMap<&'static str, &'m Member>, Vec<(&'m Member, Ev)>);

impl Builder<'_> {
    /// Sorts the members of the task or phase object at `path` (named
    /// `owner` in messages) into its properties, among `allowed`, each at
    /// most once, and its events.
    fn props_and_events<'m>(
        &self,
        members: &'m [Member],
        allowed: &[&'static str],
        path: &str,
        owner: &str,
    ) -> R<PropsAndEvents<'m>> {
        let mut props: HashMap<&'static str, &Member> = HashMap::new();
        let mut events = Vec::new();
        for f in members {
            match classify(
                &f.key,
                allowed,
                f.key_span.start,
                &key_path(path, &f.name),
                owner,
            )? {
                Slot::Prop(k) => {
                    if let Some(first) = props.insert(k, f) {
                        return self.duplicate(first, f, path);
                    }
                }
                Slot::Event(ev) => events.push((f, ev)),
            }
        }
        Ok((props, events))
    }

    /// Step 4: one task of `tasks`.
    pub(super) fn task(&mut self, idx: TaskIdx, m: &Member) -> R<Task> {
        let name = m.key.as_str();
        let path = key_path("tasks", name);
        let Some(Kind::Object(members)) = m.value.as_ref().map(|v| &v.kind) else {
            return fail(
                value_at(m),
                &path,
                format!("expected a task object, found {}", found(m.value.as_ref())),
            );
        };
        let owner = format!("task {}", quote_short(name));
        let (props, events) = self.props_and_events(members, TASK_PROPS, &path, &owner)?;
        let prop = |k: &str| props.get(k).copied();

        let instance = match prop("instance") {
            Some(f) => self.instance(f, key_path(&path, "instance"))?,
            None => 1,
        };
        self.add_threads(instance, m, prop("instance"), &path)?;
        let loops = match prop("loop") {
            Some(f) => task_loops(f, &path)?,
            None => None,
        };
        let delay_us = match prop("delay") {
            Some(f) => micros_of(f, key_path(&path, "delay"))?,
            None => 0,
        };
        let cpus = match prop("cpus") {
            Some(f) => Some(cpus(f, &path)?),
            None => None,
        };
        self.ignored_props(&props, &path);
        let sched = self.task_sched(&props, &path, m.key_span.start)?;
        let phases = match prop("phases") {
            Some(ph) => self.phases(idx, m, ph, &events, sched, &path)?,
            None => vec![self.implicit_phase(idx, m, &events, &path)?],
        };
        if phases.iter().all(|p| p.events.is_empty()) {
            return fail(
                m.key_span.start,
                &path,
                format!(
                    "task {} has no event heir can run (its only events were resumes that wake nobody)",
                    quote_short(name)
                ),
            );
        }
        if let Some(f) = prop("passive") {
            self.passive(idx, name, f, (&sched, &phases), &path)?;
        }
        let (line, column) = self.line_col(m.key_span.start);
        Ok(Task {
            name: name.to_string(),
            path,
            line,
            column,
            instance,
            sched,
            cpus,
            delay_us,
            loops,
            phases,
        })
    }

    /// heir (NOVA donation): `"passive": true` on task `name`: it runs only on
    /// donated time, so it needs the donation model and serves only.
    fn passive(
        &mut self,
        idx: TaskIdx,
        name: &str,
        f: &Member,
        (sched, phases): (&Sched, &[Phase]),
        path: &str,
    ) -> R<()> {
        let p_path = key_path(path, "passive");
        if !boolean(f, &p_path)? {
            return Ok(());
        }
        if self.rpc.model != IpcModel::Donation {
            return fail(
                value_at(f),
                &p_path,
                "a passive task runs only on time donated through calls: it needs \"ipc\": \"donation\" in global",
            );
        }
        let other = phases
            .iter()
            .flat_map(|p| p.events.iter())
            .find(|e| !matches!(e.kind, EventKind::Serve(_)));
        if let Some(e) = other {
            return fail(
                value_at(f),
                &p_path,
                format!(
                    "task {} is passive (it runs only on donated time): its events must all be \"serve\", but {} is not",
                    quote_short(name),
                    e.path
                ),
            );
        }
        // No time of its own: not a SCHED_DEADLINE reservation either.
        let reserved = std::iter::once(Some(sched))
            .chain(phases.iter().map(|p| p.sched.as_ref()))
            .flatten()
            .any(|s| s.policy == Policy::Deadline);
        if reserved {
            return fail(
                value_at(f),
                &p_path,
                format!(
                    "task {} is passive (it runs only on donated time): it cannot have a SCHED_DEADLINE reservation of its own; remove its \"policy\" or \"passive\"",
                    quote_short(name)
                ),
            );
        }
        self.rpc.passive.push(idx);
        Ok(())
    }

    /// The `instance` member `f` (at `path`): an integer ≥ 0 within the
    /// face's thread limit.
    fn instance(&self, f: &Member, path: String) -> R<u32> {
        let v = f.value.as_ref();
        let Some(n) = count_of(v) else {
            return Err(expected(f, path, "a number of threads (an integer ≥ 0)"));
        };
        match u32::try_from(n) {
            Ok(n) if n <= self.limit.max => Ok(n),
            _ => fail(
                value_at(f),
                &path,
                format!("instance {} is {}", found(v), self.limit.over(n)),
            ),
        }
    }

    /// Counts the `instance` threads of task `m` (at `path`; `f` is its
    /// `instance` member, if any), refusing more than the face's limit in
    /// all.
    fn add_threads(&mut self, instance: u32, m: &Member, f: Option<&Member>, path: &str) -> R<()> {
        self.threads += u64::from(instance);
        if self.threads <= u64::from(self.limit.max) {
            return Ok(());
        }
        let (at, at_path) = match f {
            Some(f) => (value_at(f), key_path(path, "instance")),
            None => (m.key_span.start, path.to_string()),
        };
        fail(
            at,
            &at_path,
            format!(
                "task {} brings the threads to {} in all, {}",
                quote_short(&m.key),
                self.threads,
                self.limit.over(self.threads),
            ),
        )
    }

    /// The `phases` object `ph` of task `m` (at `path`), whose own `events`
    /// must be none; `sched` is the task's, the start of the phases' changes.
    fn phases(
        &mut self,
        idx: TaskIdx,
        m: &Member,
        ph: &Member,
        events: &[(&Member, Ev)],
        sched: Sched,
        path: &str,
    ) -> R<Vec<Phase>> {
        if let Some((first, _)) = events.first() {
            return fail(
                first.key_span.start,
                &key_path(path, &first.name),
                format!(
                    "task {} has both \"phases\" and events: move {} into a phase",
                    quote_short(&m.key),
                    quote_short(&first.key)
                ),
            );
        }
        let ph_path = key_path(path, "phases");
        let Some(Kind::Object(list)) = ph.value.as_ref().map(|v| &v.kind) else {
            return Err(expected(
                ph,
                ph_path,
                "an object of phases ({\"name\": {...}})",
            ));
        };
        if list.is_empty() {
            return fail(value_at(ph), &ph_path, "expected at least one phase");
        }
        let list = self.last_of_each_phase(list, &ph_path);
        let mut current = sched;
        let mut phases = Vec::with_capacity(list.len());
        for p in list {
            phases.push(self.phase(idx, &m.key, p, &ph_path, &mut current)?);
        }
        Ok(phases)
    }

    /// The phases of `list` (at `ph_path`) as rt-app runs them: json-c keeps
    /// the last value of a repeated key, in the place of its first, so a
    /// phase name given again replaces the earlier phase (which is not read)
    /// where that one was. A warning at the last one says what was kept.
    fn last_of_each_phase<'m>(&mut self, list: &'m [Member], ph_path: &str) -> Vec<&'m Member> {
        let mut kept: Vec<&Member> = Vec::with_capacity(list.len());
        // Per key: its place in `kept`, its first member and how many times.
        let mut seen: HashMap<&str, (usize, &Member, usize)> = HashMap::new();
        for m in list {
            match seen.get_mut(m.key.as_str()) {
                Some((slot, _, times)) => {
                    kept[*slot] = m;
                    *times += 1;
                }
                None => {
                    seen.insert(&m.key, (kept.len(), m, 1));
                    kept.push(m);
                }
            }
        }
        for &last in &kept {
            let (_, first, times) = seen[last.key.as_str()];
            if times > 1 {
                let (l, c) = self.line_col(first.key_span.start);
                self.warn(
                    last.key_span.start,
                    &key_path(ph_path, &last.key),
                    format!(
                        "phase {} is given {times} times (first at line {l}, column {c}): \
                         heir keeps only this last one, in the first one's place, as rt-app \
                         does (its JSON reader keeps a repeated key's last value)",
                        quote_short(&last.key)
                    ),
                );
            }
        }
        kept
    }

    /// The one unnamed phase of task `m` (at `path`) written without
    /// `phases`: its `events`, at least one.
    fn implicit_phase(
        &mut self,
        idx: TaskIdx,
        m: &Member,
        events: &[(&Member, Ev)],
        path: &str,
    ) -> R<Phase> {
        if events.is_empty() {
            return fail(
                m.key_span.start,
                path,
                format!(
                    "task {} has no events: expected \"phases\" or events such as \"run\"",
                    quote_short(&m.key)
                ),
            );
        }
        let mut evs = Vec::new();
        for (f, ev) in events {
            self.event(idx, &m.key, f, *ev, path, &mut evs)?;
        }
        let (line, column) = self.line_col(m.key_span.start);
        Ok(Phase {
            name: String::new(),
            path: path.to_string(),
            line,
            column,
            loops: 1,
            cpus: None,
            sched: None,
            events: evs,
        })
    }

    /// Warns about rt-app properties heir reads but does not use.
    fn ignored_props(&mut self, props: &HashMap<&str, &Member>, path: &str) {
        for k in ["util_min", "util_max", "nodes_membind"] {
            if let Some(f) = props.get(k) {
                let what = if k == "nodes_membind" {
                    "NUMA memory binding"
                } else {
                    "utilization clamping"
                };
                self.warn(
                    f.key_span.start,
                    &key_path(path, k),
                    format!("heir ignores {k} ({what})"),
                );
            }
        }
    }

    /// A task's scheduling attributes; the policy defaults to
    /// `global.default_policy`, the priority to the policy's default.
    fn task_sched(
        &mut self,
        props: &HashMap<&str, &Member>,
        path: &str,
        obj_at: usize,
    ) -> R<Sched> {
        self.sched(props, path, None, obj_at)
    }

    /// A phase's scheduling change: `Some` only if the phase sets `policy`,
    /// `priority` or a `dl-*` key; what it leaves unset comes from `current`,
    /// the attributes in effect before the phase (in file order).
    fn phase_sched(
        &mut self,
        props: &HashMap<&str, &Member>,
        path: &str,
        current: Sched,
        obj_at: usize,
    ) -> R<Option<Sched>> {
        let set = ["policy", "priority"]
            .iter()
            .chain(&DL_KEYS)
            .any(|k| props.contains_key(k));
        if set {
            self.sched(props, path, Some(current), obj_at).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Scheduling attributes from `policy`, `priority` and `dl-*` of a task
    /// (`current == None`) or a phase (`current`: the attributes before it).
    fn sched(
        &mut self,
        props: &HashMap<&str, &Member>,
        path: &str,
        current: Option<Sched>,
        obj_at: usize,
    ) -> R<Sched> {
        let pol = props.get("policy").copied();
        let base_policy = current.map_or(self.global.default_policy, |c| c.policy);
        let policy = match pol {
            Some(f) => policy(f, &key_path(path, "policy"))?,
            None => base_policy,
        };
        let priority = match props.get("priority") {
            Some(f) => self.priority(f, policy, path)?,
            None => match current {
                Some(c) if pol.is_none() => c.priority,
                _ => default_priority(policy),
            },
        };
        let dl = if policy == Policy::Deadline {
            Some(self.deadline_sched(props, path, current, obj_at, pol)?)
        } else {
            self.ignored_dl_keys(props, path, policy);
            None
        };
        Ok(Sched {
            policy,
            priority,
            dl,
        })
    }

    /// The `priority` member `f` of the object at `path`, under `policy`:
    /// 1..=99 for the real-time policies, a nice value for `SCHED_OTHER` and
    /// `SCHED_BATCH`, ignored (0) otherwise.
    fn priority(&mut self, f: &Member, policy: Policy, path: &str) -> R<i32> {
        let p_path = key_path(path, "priority");
        let v = f.value.as_ref();
        let Some(n) = int_of(v) else {
            return fail(
                value_at(f),
                &p_path,
                format!("expected a priority (an integer), found {}", found(v)),
            );
        };
        match policy {
            Policy::Fifo | Policy::Rr if !(1..=99).contains(&n) => fail(
                value_at(f),
                &p_path,
                format!(
                    "priority {n} is out of range for {}: expected 1..=99",
                    policy.name()
                ),
            ),
            Policy::Other | Policy::Batch if !(-20..=19).contains(&n) => fail(
                value_at(f),
                &p_path,
                format!(
                    "priority {n} is out of range for {} (a nice value): expected -20..=19",
                    policy.name()
                ),
            ),
            Policy::Idle | Policy::Deadline => {
                if n != 0 {
                    self.warn(
                        f.key_span.start,
                        &p_path,
                        format!("\"priority\" is ignored under {}", policy.name()),
                    );
                }
                Ok(0)
            }
            _ => Ok(n as i32),
        }
    }

    /// The `SCHED_DEADLINE` parameters of the object at `path` (at
    /// `obj_at`, with `policy` member `pol`): its `dl-*` keys, else those in
    /// effect before it (`current`).
    fn deadline_sched(
        &self,
        props: &HashMap<&str, &Member>,
        path: &str,
        current: Option<Sched>,
        obj_at: usize,
        pol: Option<&Member>,
    ) -> R<DlParams> {
        if DL_KEYS.iter().any(|k| props.contains_key(k)) {
            return self.dl_params(props, path, obj_at);
        }
        match current.and_then(|c| c.dl) {
            Some(dl) => Ok(dl),
            None => fail(pol.map_or(obj_at, value_at), path, DL_RUNTIME_NEEDED),
        }
    }

    /// Warns about `dl-*` keys under a policy other than `SCHED_DEADLINE`.
    fn ignored_dl_keys(&mut self, props: &HashMap<&str, &Member>, path: &str, policy: Policy) {
        for k in DL_KEYS {
            if let Some(f) = props.get(k) {
                self.warn(
                    f.key_span.start,
                    &key_path(path, k),
                    format!(
                        "{k} is ignored: the policy is {}, not SCHED_DEADLINE",
                        policy.name()
                    ),
                );
            }
        }
    }

    fn dl_params(&self, props: &HashMap<&str, &Member>, path: &str, obj_at: usize) -> R<DlParams> {
        let get = |k: &str| -> R<Option<(u64, usize)>> {
            match props.get(k) {
                None => Ok(None),
                Some(f) => micros_of(f, key_path(path, k)).map(|v| Some((v, value_at(f)))),
            }
        };
        let runtime = get("dl-runtime")?;
        let period = get("dl-period")?;
        let deadline = get("dl-deadline")?;
        let (runtime_us, r_at) = match runtime {
            Some((r, at)) if r > 0 => (r, at),
            Some((_, at)) => {
                return fail(
                    at,
                    &key_path(path, "dl-runtime"),
                    "expected \"dl-runtime\" > 0 µs, found 0",
                )
            }
            None => return fail(obj_at, path, DL_RUNTIME_NEEDED),
        };
        let period_us = period.map_or(runtime_us, |p| p.0);
        let deadline_us = deadline.map_or(period_us, |d| d.0);
        if runtime_us > deadline_us || deadline_us > period_us {
            let (at, k) = if runtime_us > deadline_us {
                match (deadline, period) {
                    (Some((_, at)), _) => (at, "dl-deadline"),
                    (None, Some((_, at))) => (at, "dl-period"),
                    (None, None) => (r_at, "dl-runtime"),
                }
            } else {
                match period {
                    Some((_, at)) => (at, "dl-period"),
                    None => (deadline.map_or(r_at, |d| d.1), "dl-deadline"),
                }
            };
            return fail(
                at,
                &key_path(path, k),
                format!(
                    "SCHED_DEADLINE needs dl-runtime ≤ dl-deadline ≤ dl-period, found {runtime_us} ≤ {deadline_us} ≤ {period_us}"
                ),
            );
        }
        Ok(DlParams {
            runtime_us,
            deadline_us,
            period_us,
        })
    }

    fn phase(
        &mut self,
        task: TaskIdx,
        task_name: &str,
        p: &Member,
        phases_path: &str,
        current: &mut Sched,
    ) -> R<Phase> {
        let path = key_path(phases_path, &p.key);
        check_name(&p.key, p.key_span.start, &path)?;
        let Some(Kind::Object(members)) = p.value.as_ref().map(|v| &v.kind) else {
            return fail(
                value_at(p),
                &path,
                format!("expected a phase object, found {}", found(p.value.as_ref())),
            );
        };
        let owner = format!("phase {}", quote_short(&p.key));
        let (props, events) = self.props_and_events(members, PHASE_PROPS, &path, &owner)?;
        if events.is_empty() {
            return fail(
                value_at(p),
                &path,
                format!(
                    "phase {} has no events: expected at least one event such as \"run\"",
                    quote_short(&p.key)
                ),
            );
        }
        let loops = match props.get("loop") {
            Some(f) => int_of(f.value.as_ref())
                .and_then(|i| u64::try_from(i).ok())
                .filter(|&n| n >= 1)
                .ok_or_else(|| {
                    expected(
                        f,
                        key_path(&path, "loop"),
                        "a phase loop count (an integer ≥ 1)",
                    )
                })?,
            None => 1,
        };
        let cpus = match props.get("cpus") {
            Some(f) => Some(cpus(f, &path)?),
            None => None,
        };
        self.ignored_props(&props, &path);
        let sched = self.phase_sched(&props, &path, *current, value_at(p))?;
        if let Some(s) = sched {
            *current = s;
        }
        let mut evs = Vec::new();
        for (f, ev) in &events {
            self.event(task, task_name, f, *ev, &path, &mut evs)?;
        }
        let (line, column) = self.line_col(p.key_span.start);
        Ok(Phase {
            name: p.key.clone(),
            path,
            line,
            column,
            loops,
            cpus,
            sched,
            events: evs,
        })
    }
}

/// A task's `loop` member `f`: `None` for -1 (forever), else a count ≥ 1;
/// `path` is the task's.
fn task_loops(f: &Member, path: &str) -> R<Option<u64>> {
    match int_of(f.value.as_ref()) {
        Some(-1) => Ok(None),
        Some(n) if n >= 1 => u64::try_from(n).map(Some).map_err(|_| Fail {
            at: value_at(f),
            path: key_path(path, "loop"),
            msg: format!("loop count {n} is too large"),
        }),
        _ => Err(expected(
            f,
            key_path(path, "loop"),
            "a loop count: -1 (forever) or an integer ≥ 1",
        )),
    }
}

fn default_priority(p: Policy) -> i32 {
    if matches!(p, Policy::Fifo | Policy::Rr) {
        10
    } else {
        0
    }
}

fn cpus(f: &Member, owner_path: &str) -> R<Vec<u32>> {
    let path = key_path(owner_path, "cpus");
    let Some(Kind::Array(items)) = f.value.as_ref().map(|v| &v.kind) else {
        return Err(expected(
            f,
            path,
            "an array of CPU numbers (such as [0, 1])",
        ));
    };
    if items.is_empty() {
        return fail(
            value_at(f),
            &path,
            "expected at least one CPU in \"cpus\" (leave \"cpus\" out for every CPU)",
        );
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match count_of(Some(item)) {
            Some(c) if c < u64::from(MAX_CPUS) => out.push(c as u32),
            Some(_) => {
                return fail(
                    item.span.start,
                    &push_path(&path, &PathSeg::Index(i)),
                    format!(
                    "CPU {} is over heir's limit: CPU numbers go from 0 to {} ({MAX_CPUS} CPUs)",
                    item.describe(),
                    MAX_CPUS - 1
                ),
                )
            }
            None => {
                return fail(
                    item.span.start,
                    &push_path(&path, &PathSeg::Index(i)),
                    format!(
                        "expected a CPU number (an integer ≥ 0), found {}",
                        item.describe()
                    ),
                )
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
