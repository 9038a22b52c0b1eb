//! The analysis report: per task the bound, the deadline and the verdict.

use serde_json::{json, Map, Value};

use crate::fp::TaskResult;
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
    pub fn to_json(&self) -> Value {
        let mut tasks = Map::new();
        for t in &self.tasks {
            tasks.insert(
                t.name.clone(),
                json!({
                    "wcrt_us": t.wcrt_us,
                    "deadline_us": t.deadline_us,
                    "schedulable": t.schedulable,
                    "blocking_us": t.blocking_us,
                }),
            );
        }
        json!({ "schedulable": self.schedulable, "tasks": tasks })
    }
}
