//! Step 3: the `resources` object.

use super::*;

impl Builder<'_> {
    /// Step 3: the declared resources, in declaration order.
    pub(super) fn declared_resources(&mut self, r: &Member) -> R<()> {
        let Some(Kind::Object(members)) = r.value.as_ref().map(|v| &v.kind) else {
            return fail(
                value_at(r),
                "resources",
                format!(
                    "expected an object of resources ({{\"name\": {{\"type\": ...}}}}), found {}",
                    found(r.value.as_ref())
                ),
            );
        };
        self.unique_keys(members, "resources")?;
        for m in members {
            self.declared_resource(m)?;
        }
        Ok(())
    }

    /// One entry of `resources`: `{"type": …}` and the keys of that type.
    fn declared_resource(&mut self, m: &Member) -> R<()> {
        let path = key_path("resources", &m.key);
        check_name(&m.key, m.key_span.start, &path)?;
        let Some(Kind::Object(fields)) = m.value.as_ref().map(|v| &v.kind) else {
            return fail(
                value_at(m),
                &path,
                format!(
                    "expected a resource object ({{\"type\": \"mutex\"}}, ...), found {}",
                    found(m.value.as_ref())
                ),
            );
        };
        self.unique_keys(fields, &path)?;
        let (decl, ns) = declared_type(m, fields, &path)?;
        let allowed = decl.keys();
        if let Some(f) = fields.iter().find(|f| !allowed.contains(&f.key.as_str())) {
            return fail(
                f.key_span.start,
                &key_path(&path, &f.key),
                format!(
                    "unknown key {} in {}: expected {}",
                    quote_short(&f.key),
                    ns.a_word(),
                    quoted_list(allowed)
                ),
            );
        }
        let field = |k: &str| fields.iter().find(|f| f.key == k);
        let kind = match decl {
            Decl::Mutex => ResourceKind::Mutex {
                protocol: self.protocol(field("protocol"), field("ceiling"), &path)?,
            },
            Decl::Cond => ResourceKind::Cond {
                helpers: match field("helpers") {
                    Some(h) => self.helpers(h, &path)?,
                    None => Vec::new(),
                },
            },
            Decl::Queue => ResourceKind::Queue {
                capacity: match field("capacity") {
                    Some(c) => count_within(
                        c,
                        key_path(&path, "capacity"),
                        1,
                        MAX_QUEUE_CAPACITY,
                        "a capacity (an integer ≥ 1)",
                        "items",
                    )?,
                    None => 16,
                },
                pushers: Vec::new(),
                poppers: Vec::new(),
            },
            Decl::Barrier => ResourceKind::Barrier { users: 0 },
            Decl::Gang => ResourceKind::Gang {
                members: match field("members") {
                    Some(ms) => self.gang_members(ms, &m.key, &path)?,
                    None => Vec::new(),
                },
            },
        };
        let idx = ResIdx(self.resources.len());
        self.resources.push(Resource {
            name: m.key.clone(),
            path: path.clone(),
            kind,
        });
        self.usage.push(Usage {
            declared: Some((path.clone(), m.key_span.start)),
            ..Usage::default()
        });
        self.key_resource(&m.key, ns, idx);
        self.record_use(&m.key, ns, &path, m.key_span.start, true);
        Ok(())
    }

    fn protocol(
        &self,
        protocol: Option<&Member>,
        ceiling: Option<&Member>,
        path: &str,
    ) -> R<MutexProtocol> {
        let default = if self.global.pi_enabled {
            MutexProtocol::Inherit
        } else {
            MutexProtocol::None
        };
        let Some(p) = protocol else {
            if let Some(c) = ceiling {
                return fail(
                    c.key_span.start,
                    &key_path(path, "ceiling"),
                    "\"ceiling\" needs \"protocol\": \"ceiling\"",
                );
            }
            return Ok(default);
        };
        let p_path = key_path(path, "protocol");
        let name = p.value.as_ref().and_then(Value::as_str);
        let Some(named) = name.and_then(Protocol::from_name) else {
            return Err(expected(
                p,
                p_path,
                "\"inherit\", \"bwi\", \"ceiling\" or \"none\"",
            ));
        };
        if let (Some(c), None) = (ceiling, named.ceiling()) {
            return fail(
                c.key_span.start,
                &key_path(path, "ceiling"),
                "\"ceiling\" needs \"protocol\": \"ceiling\"",
            );
        }
        // The ceiling's priority, for a ceiling mutex only.
        named.try_map_ceiling(|()| {
            let Some(c) = ceiling else {
                return fail(
                    value_at(p),
                    &p_path,
                    "a \"ceiling\" mutex needs \"ceiling\": its real-time priority (1..=99)",
                );
            };
            let v = c.value.as_ref();
            match int_of(v).and_then(|n| i32::try_from(n).ok()) {
                Some(n) if CEILING_PRIORITIES.contains(&n) => Ok(n),
                _ => fail(
                    value_at(c),
                    &key_path(path, "ceiling"),
                    format!(
                        "expected a ceiling priority (an integer 1..=99), found {}",
                        found(v)
                    ),
                ),
            }
        })
    }

    fn helpers(&self, h: &Member, path: &str) -> R<Vec<TaskIdx>> {
        Ok(self
            .task_names_at(h, path, "helpers", "helper")?
            .into_iter()
            .map(|(t, _)| t)
            .collect())
    }

    /// A gang's `members` (task names); a task listed in a second gang is
    /// refused (a thread is a member of at most one gang, the GPM paper's §2).
    fn gang_members(&mut self, h: &Member, gang: &str, path: &str) -> R<Vec<TaskIdx>> {
        let listed = self.task_names_at(h, path, "members", "member")?;
        let mut out = Vec::with_capacity(listed.len());
        for (t, (at, i_path)) in listed {
            if let Some((other, first)) = self.gang_of.get(&t) {
                return fail(
                    at,
                    &i_path,
                    format!(
                        "task {} is already a member of gang {} (at {first}): a thread is a member of at most one gang",
                        quote_short(&self.task_names[t.0]),
                        quote_short(other)
                    ),
                );
            }
            self.gang_of.insert(t, (gang.to_string(), i_path));
            out.push(t);
        }
        Ok(out)
    }

    /// The array of distinct task names under `key` of the object at
    /// `path` (a condvar's `helpers`, a gang's `members`; `role` names an
    /// entry in errors), with each entry's position and JSON path.
    fn task_names_at(
        &self,
        h: &Member,
        path: &str,
        key: &str,
        role: &str,
    ) -> R<Vec<(TaskIdx, (usize, String))>> {
        let h_path = key_path(path, key);
        let Some(Kind::Array(items)) = h.value.as_ref().map(|v| &v.kind) else {
            return Err(expected(h, h_path, "an array of task names"));
        };
        let mut out: Vec<(TaskIdx, (usize, String))> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let i_path = push_path(&h_path, &PathSeg::Index(i));
            let Some(name) = item.as_str() else {
                return fail(
                    item.span.start,
                    &i_path,
                    format!("expected a task name (a string), found {}", item.describe()),
                );
            };
            let Some(&t) = self.task_by_name.get(name) else {
                return fail(
                    item.span.start,
                    &i_path,
                    format!(
                        "{role} {} is not a task; the tasks are: {}",
                        quote_short(name),
                        self.task_list()
                    ),
                );
            };
            if out.iter().any(|(u, _)| *u == t) {
                return fail(
                    item.span.start,
                    &i_path,
                    format!("{role} {} is listed twice", quote_short(name)),
                );
            }
            out.push((t, (item.span.start, i_path)));
        }
        Ok(out)
    }

    fn task_list(&self) -> String {
        const MAX: usize = 20;
        let mut s = self
            .task_names
            .iter()
            .take(MAX)
            .map(|n| quote_short(n))
            .collect::<Vec<_>>()
            .join(", ");
        if self.task_names.len() > MAX {
            s.push_str(&format!(", ... ({} tasks)", self.task_names.len()));
        }
        s
    }
}

/// The kinds a `resources` entry may declare.
#[derive(Clone, Copy)]
enum Decl {
    Mutex,
    Cond,
    Queue,
    Barrier,
    Gang,
}

impl Decl {
    /// The keys an entry of this kind may have.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Decl::Mutex => &["type", "protocol", "ceiling"],
            Decl::Cond => &["type", "helpers"],
            Decl::Queue => &["type", "capacity"],
            Decl::Barrier => &["type"],
            Decl::Gang => &["type", "members"],
        }
    }
}

/// The kind the `type` of resource `m` (at `path`, with members `fields`)
/// declares, and its name space.
fn declared_type(m: &Member, fields: &[Member], path: &str) -> R<(Decl, Ns)> {
    let Some(ty) = fields.iter().find(|f| f.key == "type") else {
        return fail(
            value_at(m),
            path,
            "missing \"type\": expected \"mutex\", \"cond\", \"queue\", \"barrier\" or \"gang\"",
        );
    };
    let ty_path = key_path(path, "type");
    match ty.value.as_ref().and_then(Value::as_str) {
        Some("mutex") => Ok((Decl::Mutex, Ns::Mutex)),
        Some("cond" | "wait") => Ok((Decl::Cond, Ns::Cond)),
        Some("queue") => Ok((Decl::Queue, Ns::Queue)),
        Some("barrier") => Ok((Decl::Barrier, Ns::Barrier)),
        Some("gang") => Ok((Decl::Gang, Ns::Gang)),
        Some("endpoint") => fail(
            value_at(ty),
            &ty_path,
            "endpoints are not declared: \"call\" and \"serve\" events create them",
        ),
        Some("timer") => fail(
            value_at(ty),
            &ty_path,
            "timers are not declared: \"timer\" events create them",
        ),
        _ => fail(
            value_at(ty),
            &ty_path,
            format!(
                "unknown resource type {}: expected \"mutex\", \"cond\" (or rt-app's \"wait\"), \"queue\", \"barrier\" or \"gang\"",
                found(ty.value.as_ref())
            ),
        ),
    }
}
