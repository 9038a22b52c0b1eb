//! The analysis report: per task the bound, the deadline and the verdict.

use serde_json::{json, Map, Value};

use crate::dl::GroupAdmission;
use crate::fp::TaskResult;
use crate::gang::GangBound;
use crate::model::{Class, Nanos, Task, TaskSet};

/// The analysis of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskBound {
    /// Thread name (as in `heir sim` reports).
    pub name: String,
    pub cpu: u32,
    /// `SCHED_FIFO` priority, `None` for `SCHED_DEADLINE`.
    pub priority: Option<i32>,
    /// `T_i` (µs).
    pub period_us: f64,
    /// Relative deadline (µs).
    pub deadline_us: f64,
    /// `C_i`: local work per job (µs).
    pub wcet_us: f64,
    /// `E_i`: the job's whole demand, RPC work included (µs).
    pub demand_us: f64,
    /// `B_i` (µs); `None` when unbounded.
    pub blocking_us: Option<f64>,
    /// Worst-case response time (µs); `None` when unbounded.
    pub wcrt_us: Option<f64>,
    /// `wcrt ≤ deadline`.
    pub schedulable: bool,
    /// Why there is no bound, for people.
    pub reason: Option<String>,
    /// For a `SCHED_DEADLINE` task: its reservation.
    pub reservation: Option<ReservationBound>,
}

/// The reservation of a `SCHED_DEADLINE` task, as the report shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReservationBound {
    /// `Q` (µs).
    pub runtime_us: f64,
    /// `D`, the server's relative deadline (µs).
    pub deadline_us: f64,
    /// `P` (µs).
    pub period_us: f64,
    /// `None`: pinned to the task's `cpu`; `Some(m)`: global on `m` CPUs.
    pub global_cpus: Option<u32>,
}

/// The analysis of a whole scenario or task set.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisReport {
    /// Every analysed task meets its deadline.
    pub schedulable: bool,
    /// What was analysed: `"as written (PI-CV on)"` or a protocol name.
    pub protocol: String,
    /// In scenario order (servers are not tasks: they have no deadline).
    pub tasks: Vec<TaskBound>,
    /// Threads left out, and why.
    pub skipped: Vec<(String, String)>,
    /// The admission of each group of `SCHED_DEADLINE` tasks (per CPU, then
    /// the global group); empty without them.
    pub admissions: Vec<GroupAdmission>,
    /// GPM: the bound of each gang (empty without gangs).
    pub gangs: Vec<GangBound>,
    /// Why `tasks` is empty although the scenario has tasks (a scenario
    /// with gangs); `schedulable` is then `false` and means nothing.
    pub tasks_note: Option<String>,
}

fn us(ns: Nanos) -> f64 {
    ns as f64 / 1000.0
}

impl TaskBound {
    pub(crate) fn new(set: &TaskSet, task: &Task, r: &TaskResult) -> TaskBound {
        TaskBound {
            name: task.name.clone(),
            cpu: task.cpu,
            priority: match task.class {
                Class::Fixed { priority } => Some(priority),
                Class::Deadline { .. } => None,
            },
            period_us: us(task.period),
            deadline_us: us(task.deadline),
            wcet_us: us(task.wcet),
            demand_us: us(task.demand),
            blocking_us: r.blocking.map(us),
            wcrt_us: r.wcrt.map(us),
            schedulable: r.schedulable,
            reason: r.unbounded.as_ref().map(|u| u.describe(set)),
            reservation: match task.class {
                Class::Deadline {
                    runtime,
                    deadline,
                    period,
                } => Some(ReservationBound {
                    runtime_us: us(runtime),
                    deadline_us: us(deadline),
                    period_us: us(period),
                    global_cpus: task.global_cpus,
                }),
                Class::Fixed { .. } => None,
            },
        }
    }
}

impl AnalysisReport {
    /// The task named `name`.
    pub fn task(&self, name: &str) -> Option<&TaskBound> {
        self.tasks.iter().find(|t| t.name == name)
    }

    /// `{"schedulable":bool,"tasks":{NAME:{"wcrt_us":number|null,
    /// "deadline_us":number,"schedulable":bool,"blocking_us":number|null}}}`.
    ///
    /// A `SCHED_DEADLINE` task also has `"runtime_us"`, `"dl_deadline_us"`,
    /// `"dl_period_us"` (Q, D, P), `"wcet_us"` (C), `"cpu"` (a number, or
    /// `"global"`) and `"reason"` (string or null); with such tasks the
    /// object also has `"admission"`: one object per group, `{"cpu": number
    /// or "global", "cpus", "test", "load", "limit", "needed_load"
    /// (number or null), "admitted"}`.
    ///
    /// With gangs (GPM): `"schedulable": null`, `"tasks": {}`,
    /// `"tasks_note"` and `"gangs": {GANG: {"gpm", "priority", "bound_us",
    /// "blocking_us", "reason", "members": {THREAD: {"cpu", "class",
    /// "work_us", "bound_us"}}, "waiters": {THREAD: {"bound_us"}}}}`.
    pub fn to_json(&self) -> Value {
        let mut tasks = Map::new();
        for t in &self.tasks {
            let mut v = json!({
                "wcrt_us": t.wcrt_us,
                "deadline_us": t.deadline_us,
                "schedulable": t.schedulable,
                "blocking_us": t.blocking_us,
            });
            if let (Some(r), Some(obj)) = (&t.reservation, v.as_object_mut()) {
                obj.insert("runtime_us".into(), json!(r.runtime_us));
                obj.insert("dl_deadline_us".into(), json!(r.deadline_us));
                obj.insert("dl_period_us".into(), json!(r.period_us));
                obj.insert("wcet_us".into(), json!(t.wcet_us));
                let cpu = match r.global_cpus {
                    Some(_) => json!("global"),
                    None => json!(t.cpu),
                };
                obj.insert("cpu".into(), cpu);
                obj.insert("reason".into(), json!(t.reason));
            }
            tasks.insert(t.name.clone(), v);
        }
        let mut out = json!({ "schedulable": self.schedulable, "tasks": tasks });
        if let (Some(note), Some(obj)) = (&self.tasks_note, out.as_object_mut()) {
            obj.insert("schedulable".into(), Value::Null);
            obj.insert("tasks_note".into(), json!(note));
        }
        if !self.gangs.is_empty() {
            let mut gangs = Map::new();
            for g in &self.gangs {
                gangs.insert(g.name.clone(), g.to_json());
            }
            if let Some(obj) = out.as_object_mut() {
                obj.insert("gangs".into(), Value::Object(gangs));
            }
        }
        if !self.admissions.is_empty() {
            let groups: Vec<Value> = self
                .admissions
                .iter()
                .map(|a| {
                    json!({
                        "cpu": a.cpu.map_or(json!("global"), |c| json!(c)),
                        "cpus": a.cpus,
                        "test": a.test,
                        "load": a.load,
                        "limit": a.limit,
                        "needed_load": a.needed_load,
                        "admitted": a.admitted,
                    })
                })
                .collect();
            if let Some(obj) = out.as_object_mut() {
                obj.insert("admission".into(), Value::Array(groups));
            }
        }
        out
    }
}
