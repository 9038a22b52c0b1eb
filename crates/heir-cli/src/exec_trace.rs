//! `heir exec --trace OUT.json [--svg OUT.svg]`: the kernel's and heir's
//! view of an unmodified program, recorded as `heir run --trace` records a
//! scenario's run and written by the same writers (docs/EXEC.md, "Trace").
//!
//! The ftrace instance (heir-runner's [`heir_runner::tracefs::Instance`]) follows
//! `heir exec` itself and every thread and process created under it
//! (`options/event-fork`), so the program's threads are traced from their
//! first instruction; `sched_process_fork` records tell which tids are the
//! program's (its pid and, transitively, what it created). The
//! interposition library writes its markers (locks, waits, signals,
//! barriers: by the object's address) and heir-rt's (boosts with their
//! donors, `sched_setattr` changes) into the instance's `trace_marker`.
//! heir-runner's [`heir_runner::run::convert_trace`] then turns the records into the
//! trace stream, as for `heir run`; this module only says what the run
//! was: its threads (name: the last `comm` the kernel showed; base
//! priority: the one it had when it last left a CPU), its objects (named
//! `mutex@0x…`, `cond@0x…`, `barrier@0x…` by the instants that use them)
//! and its CPUs (the machine's, as they are).

use std::collections::HashMap;
use std::path::PathBuf;

use heir::Urgency;
use heir_runner::run::{RealTrace, RunFacts};
use heir_runner::tracedat::DatCapture;
use heir_runner::tracefs::{self, Instance, MarkRes, Marker, Parsed, RecordKind};

/// The instance's buffer per CPU when not given (KiB).
pub const DEFAULT_BUFFER_KB: u32 = 16 * 1024;

/// A traced `heir exec` while the program runs.
pub struct Tracing {
    instance: Instance,
    t0: u64,
}

impl Tracing {
    /// Makes the instance and starts recording this process and what it
    /// creates.
    ///
    /// # Errors
    /// tracefs is not available (not root), or cannot be set up.
    pub fn start(buffer_kb: u32) -> Result<Tracing, tracefs::TraceError> {
        let mut instance = Instance::create(buffer_kb)?;
        instance.start_following(std::process::id() as i32)?;
        Ok(Tracing {
            instance,
            t0: heir::sys::now_ns(),
        })
    }

    /// The `trace_marker` file the program writes heir's markers into.
    pub fn marker(&self) -> PathBuf {
        self.instance.dir().join("trace_marker")
    }

    /// Stops recording and converts what the program (`root`, the pid of
    /// the child) did.
    ///
    /// # Errors
    /// The instance cannot be read.
    /// With `dat`, also the instance's ring-buffer pages for a trace.dat
    /// (`--trace-dat`).
    ///
    /// # Errors
    /// The instance cannot be read.
    pub fn finish(
        mut self,
        root: i32,
        dat: bool,
    ) -> Result<(RealTrace, Option<DatCapture>), tracefs::TraceError> {
        let end = heir::sys::now_ns();
        let (rec, dat) = heir_runner::tracedat::collect(&mut self.instance, dat)?;
        let name = self.instance.dir().display().to_string();
        drop(self.instance);
        Ok((
            convert(&rec.text, rec.dropped, name, root, self.t0, end),
            dat,
        ))
    }
}

/// `(parent tid, child tid)` of each `sched_process_fork` line, in order.
fn forks(text: &str) -> Vec<(i32, i32)> {
    let num = |s: &str, key: &str| -> Option<i32> {
        let i = s.rfind(key)? + key.len();
        let rest = &s[i..];
        let e = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        rest[..e].parse().ok()
    };
    text.lines()
        .filter_map(|l| {
            let f = l.split_once("sched_process_fork: ")?.1;
            Some((num(f, " pid=")?, num(f, " child_pid=")?))
        })
        .collect()
}

/// The kernel's `prio` as an urgency (as heir-rt's conversion reads it).
fn urgency_of_prio(p: i32) -> Urgency {
    match p {
        0..=98 => Urgency::fixed((99 - p) as u8),
        100..=139 => Urgency::other((p - 120) as i8),
        _ => Urgency::LOWEST,
    }
}

/// The object kind an instant names.
fn object_kind(instant: &str) -> &'static str {
    match instant {
        "lock" | "blocked" | "unlock" => "mutex",
        "barrier" => "barrier",
        _ => "cond",
    }
}

/// The program's threads, objects and CPUs, then heir-rt's conversion.
pub fn convert(
    text: &str,
    dropped: Vec<(u32, u64)>,
    instance: String,
    root: i32,
    t0: u64,
    end: u64,
) -> RealTrace {
    // The program's tids, in creation order.
    let mut order = vec![root];
    let mut ours: HashMap<i32, usize> = HashMap::from([(root, 0)]);
    for (parent, child) in forks(text) {
        if ours.contains_key(&parent) && !ours.contains_key(&child) {
            ours.insert(child, order.len());
            order.push(child);
        }
    }
    let mut parsed: Parsed = tracefs::parse_text(text);
    let mut names: Vec<Option<String>> = vec![None; order.len()];
    let mut last_prio: Vec<Option<i32>> = vec![None; order.len()];
    // Objects by address, in order of first use.
    let mut objects: HashMap<usize, usize> = HashMap::new();
    let mut resources: Vec<String> = Vec::new();
    parsed.records.retain_mut(|r| match &mut r.kind {
        RecordKind::Switch {
            prev_pid,
            prev_comm,
            prev_prio,
            next_pid,
            next_comm,
            ..
        } => {
            if let Some(&i) = ours.get(prev_pid) {
                names[i] = Some(prev_comm.clone());
                last_prio[i] = Some(*prev_prio);
            }
            if let Some(&i) = ours.get(next_pid) {
                names[i] = Some(next_comm.clone());
            }
            true
        }
        RecordKind::Marker(Marker::Instant { kind, res, .. }) => {
            if !ours.contains_key(&r.pid) {
                return false;
            }
            match *res {
                // heir-rt's own condition-variable instants (by engine
                // id): the library marks the same ones by address.
                MarkRes::Cond(_) => false,
                MarkRes::Resource(addr) => {
                    let i = *objects.entry(addr).or_insert_with(|| {
                        resources.push(format!("{}@{addr:#x}", object_kind(kind)));
                        resources.len() - 1
                    });
                    *res = MarkRes::Resource(i);
                    true
                }
                MarkRes::None => true,
            }
        }
        RecordKind::Marker(_) => ours.contains_key(&r.pid),
        _ => true,
    });
    let tids: Vec<(String, i32)> = order
        .iter()
        .zip(&names)
        .map(|(&t, n)| (format!("{}-{t}", n.as_deref().unwrap_or("?")), t))
        .collect();
    let bases: Vec<Urgency> = last_prio
        .iter()
        .map(|p| p.map_or(Urgency::other(0), urgency_of_prio))
        .collect();
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let cpu_map: Vec<(u32, u32)> = (0..ncpu).map(|c| (c, c)).collect();
    let facts = RunFacts {
        tids: &tids,
        bases,
        resources: &resources,
        conds: Vec::new(),
        cpu_map: &cpu_map,
        t0,
        duration: end.saturating_sub(t0),
    };
    heir_runner::run::convert_trace(&parsed, dropped, instance, &facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_lines_give_parent_and_child() {
        let text = "  a-7 [000] ..... 1.000001: sched_process_fork: comm=a b pid=7 child_comm=a b child_pid=9\n";
        assert_eq!(forks(text), vec![(7, 9)]);
    }
}
