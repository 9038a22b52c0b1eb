//! The run report: the same schema for `heir sim` (`mode: "sim"`) and
//! `heir run` (`mode: "real"`).

use serde::Serialize;

use crate::stats::ResponseSummary;

/// `{"mode":…,"duration_us":…,"tasks":{NAME:{…}},"deadlock":null}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub mode: &'static str,
    pub duration_us: f64,
    /// Per thread, in scenario order (serialized as an object keyed by name).
    #[serde(serialize_with = "tasks_as_map")]
    pub tasks: Vec<TaskReport>,
    pub deadlock: Option<DeadlockReport>,
    /// Not serialized: scheduling events processed (for benchmarks).
    #[serde(skip)]
    pub events: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskReport {
    #[serde(skip)]
    pub name: String,
    pub jobs: u64,
    pub deadline_misses: u64,
    pub response_us: ResponseSummary,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadlockReport {
    pub at_us: f64,
    /// Alternating task and resource names; first and last are the same.
    pub cycle: Vec<String>,
}

fn tasks_as_map<S: serde::Serializer>(tasks: &[TaskReport], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(tasks.len()))?;
    for t in tasks {
        m.serialize_entry(&t.name, t)?;
    }
    m.end()
}
