//! `heir run --trace`: the kernel's view of a run ([`crate::tracefs`]),
//! turned into the trace stream the simulator produces
//! ([`heir_report::TraceEvent`]), so that the same writers (heir-viz's
//! Chrome trace and SVG Gantt chart) draw both faces alike.
//!
//! - **Execution** (`Exec`): from `sched_switch`, a slice from a run
//!   thread's switch-in to its switch-out, on the scenario's CPU that the
//!   machine's CPU plays. Its urgency is the kernel's priority of the
//!   thread (`next_prio` at the switch-in; `sched_pi_setprio` — the
//!   kernel's own PI boosts — and heir-rt's `sched_setattr` calls, which
//!   have no kernel event and are marked by heir-rt, split a slice where
//!   they change it), read back in the scenario's terms: kernel prio
//!   `p < 99` is real-time priority `99 − p`, `100..=139` nice `p − 120`,
//!   `-1` the thread's deadline. A slice above the thread's base names its
//!   donor: the engine's, when the engine's last change of the thread has
//!   that urgency, else (a boost only the kernel knows) the thread in whose
//!   context the kernel boosted (the one that blocked), or the run's thread
//!   that last blocked with that urgency.
//! - **Boosts** (`Boost`): every change of a thread's effective urgency
//!   that heir-rt's engine applied, with its donor (as the simulator
//!   reports them), and each `sched_pi_setprio` that changes a thread to
//!   an urgency the engine did not announce.
//! - **Instants, releases, completions**: heir-rt's markers, at their own
//!   ns timestamps.
//!
//! Times are from the run's start (its time 0); what happened before it
//! (threads setting themselves up) is dropped and slices are clipped to
//! the run.

use std::collections::HashMap;

use heir_core::Urgency;
use heir_report::{InstantKind, Observer, ThreadInfo, TraceEvent, TraceInfo};

use crate::tracefs::{MarkDonor, MarkRes, Marker, Parsed, RecordKind};

/// A real run's trace: the stream, and what the recording lost.
#[derive(Clone, Debug, PartialEq)]
pub struct RealTrace {
    /// What an observer learns first (the run's threads with their base
    /// urgencies, its resources and condition variables, its CPUs).
    pub info: TraceInfo,
    /// The events, in the order heir-rt read them (releases may carry an
    /// earlier instant, as the simulator's).
    pub events: Vec<TraceEvent>,
    /// The run's length (ns).
    pub end_ns: u64,
    /// Counts of the recording.
    pub stats: TraceStats,
}

/// What the recording of a real run saw and lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// The ftrace instance it was recorded in.
    pub instance: String,
    /// Kernel scheduler records read (`sched_switch`, wake-ups, PI,
    /// migrations) of the run's threads.
    pub kernel_records: u64,
    /// heir-rt's markers read.
    pub markers: u64,
    /// Events the kernel dropped, per CPU with a non-zero count (from its
    /// `stats`); when not empty the trace misses part of the run.
    pub dropped: Vec<(u32, u64)>,
    /// Events the `trace` file says were lost (`[LOST N EVENTS]`).
    pub lost: u64,
    /// Lines of the `trace` file that could not be read.
    pub unreadable: u64,
}

impl TraceStats {
    /// Every event known lost.
    pub fn lost_total(&self) -> u64 {
        self.lost + self.dropped.iter().map(|&(_, n)| n).sum::<u64>()
    }
}

impl RealTrace {
    /// Adds the run's measured disturbance ([`super::disturb`]) as
    /// `Displaced` / `Undisplaced` instants of each displaced thread, at
    /// the end of the stream (in time order per thread): the Gantt chart
    /// marks those spans. `t0` is the run's start (ns).
    pub fn add_displacements(&mut self, spans: &[super::disturb::Displacement], t0: u64) {
        for s in spans {
            for (at, kind) in [
                (s.start_ns, InstantKind::Displaced),
                (s.end_ns, InstantKind::Undisplaced),
            ] {
                self.events.push(TraceEvent::Instant {
                    thread: s.thread,
                    at_ns: at.saturating_sub(t0),
                    kind,
                    resource: None,
                });
            }
        }
    }

    /// Streams the trace into `obs`, as a simulation does.
    pub fn replay(&self, obs: &mut dyn Observer) {
        obs.start(&self.info);
        if obs.wants_events() {
            for e in &self.events {
                obs.event(e);
            }
        }
        obs.finish(self.end_ns);
    }
}

/// What the conversion needs to know of the run (`heir run`'s, or what
/// `heir exec --trace` learned of the program's threads).
pub struct RunFacts<'a> {
    /// Thread names and tids, in start order.
    pub tids: &'a [(String, i32)],
    /// Their base urgencies (the simulator's).
    pub bases: Vec<Urgency>,
    /// Scenario resource names.
    pub resources: &'a [String],
    /// Condition variables by engine id, and their names.
    pub conds: Vec<(u32, String)>,
    /// The scenario's CPUs and the machine's they ran on.
    pub cpu_map: &'a [(u32, u32)],
    /// The run's start and length (ns, `CLOCK_MONOTONIC`).
    pub t0: u64,
    /// The run's length (ns).
    pub duration: u64,
}

/// A run thread's state while the records are read.
#[derive(Clone, Debug)]
struct Th {
    base: Urgency,
    /// The kernel's current urgency of it.
    cur: Urgency,
    /// Its open slice: (CPU index, start ns absolute, urgency, donor).
    running: Option<(u32, u64, Urgency, Option<usize>)>,
    /// The engine's last change of it: (urgency, donor).
    engine: Option<(Urgency, Option<usize>)>,
    /// The donor of its last kernel-only boost.
    kernel_donor: Option<usize>,
    /// The urgency of its last `Boost` event.
    boosted: Urgency,
    /// When it last blocked (ns).
    blocked_at: u64,
}

/// The kernel's priority `prio` of a thread, in the scenario's terms.
fn urgency_of_prio(prio: i32, th: &Th) -> Urgency {
    match prio {
        0..=98 => Urgency::fixed((99 - prio) as u8),
        100..=139 => Urgency::other((prio - 120) as i8),
        _ => match (th.engine, th.base) {
            (Some((u @ Urgency::Deadline { .. }, _)), _) => u,
            (_, b) => b,
        },
    }
}

struct Conv<'a> {
    f: &'a RunFacts<'a>,
    by_tid: HashMap<i32, usize>,
    th: Vec<Th>,
    out: Vec<TraceEvent>,
    /// Machine CPU → scenario CPU index.
    cpu_of: HashMap<u32, u32>,
    cpus: u32,
    /// Resource names: the scenario's, then the condition variables'.
    res_names: Vec<String>,
    cond_res: HashMap<u32, usize>,
    end: u64,
}

impl Conv<'_> {
    fn rel(&self, t: u64) -> u64 {
        t.saturating_sub(self.f.t0)
    }

    fn in_run(&self, t: u64) -> bool {
        t >= self.f.t0 && t <= self.end
    }

    fn cpu(&mut self, machine: u32) -> u32 {
        if let Some(&c) = self.cpu_of.get(&machine) {
            return c;
        }
        let c = self.cpus;
        self.cpus += 1;
        self.cpu_of.insert(machine, c);
        c
    }

    fn donor_for(&self, i: usize, u: Urgency) -> Option<usize> {
        let th = &self.th[i];
        if u <= th.base {
            return None;
        }
        match th.engine {
            Some((eu, d)) if eu == u => d,
            _ => th.kernel_donor,
        }
    }

    /// Closes thread `i`'s open slice at `t` (absolute ns).
    fn close(&mut self, i: usize, t: u64) {
        if let Some((cpu, start, urgency, donor)) = self.th[i].running.take() {
            let (s, e) = (start.max(self.f.t0), t.min(self.end));
            if e > s {
                self.out.push(TraceEvent::Exec {
                    cpu,
                    thread: i,
                    start_ns: self.rel(s),
                    end_ns: self.rel(e),
                    urgency,
                    donor,
                });
            }
        }
    }

    fn open(&mut self, i: usize, cpu: u32, t: u64) {
        let u = self.th[i].cur;
        let d = self.donor_for(i, u);
        self.th[i].running = Some((cpu, t, u, d));
    }

    /// Thread `i`'s kernel urgency is `u` from `t` on.
    fn set_urgency(&mut self, i: usize, u: Urgency, t: u64) {
        if self.th[i].cur == u {
            return;
        }
        self.th[i].cur = u;
        if let Some((cpu, ..)) = self.th[i].running {
            self.close(i, t);
            self.open(i, cpu, t);
        }
    }

    /// The run's thread that blocked last at urgency `u` (the donor of a
    /// boost only the kernel knows, recorded in another thread's context).
    fn kernel_donor(&self, to: usize, u: Urgency) -> Option<usize> {
        (0..self.th.len())
            .filter(|&j| j != to && self.th[j].running.is_none() && self.th[j].cur == u)
            .max_by_key(|&j| self.th[j].blocked_at)
    }

    fn instant(&mut self, i: usize, at: u64, kind: InstantKind, res: Option<usize>) {
        if self.in_run(at) {
            self.out.push(TraceEvent::Instant {
                thread: i,
                at_ns: self.rel(at),
                kind,
                resource: res,
            });
        }
    }

    fn resource(&mut self, r: MarkRes) -> Option<usize> {
        match r {
            MarkRes::None => None,
            MarkRes::Resource(i) => Some(i),
            MarkRes::Cond(c) => Some(match self.cond_res.get(&c) {
                Some(&i) => i,
                None => {
                    self.res_names.push(format!("cond#{c}"));
                    let i = self.res_names.len() - 1;
                    self.cond_res.insert(c, i);
                    i
                }
            }),
        }
    }

    fn marker(&mut self, pid: i32, m: Marker) {
        match m {
            Marker::Instant { kind, at, res } => {
                let (Some(&i), Some(k)) = (self.by_tid.get(&pid), instant_kind(&kind)) else {
                    return;
                };
                let r = self.resource(res);
                self.instant(i, at, k, r);
            }
            Marker::Release { at, deadline } => {
                if let Some(&i) = self.by_tid.get(&pid) {
                    if self.in_run(at) {
                        self.out.push(TraceEvent::Release {
                            thread: i,
                            at_ns: self.rel(at),
                            deadline_ns: deadline.map(|d| self.rel(d)),
                        });
                    }
                }
            }
            Marker::Done {
                at,
                response,
                missed,
            } => {
                if let Some(&i) = self.by_tid.get(&pid) {
                    if self.in_run(at) {
                        self.out.push(TraceEvent::Complete {
                            thread: i,
                            at_ns: self.rel(at),
                            response_ns: response,
                            missed,
                        });
                    }
                }
            }
            Marker::Boost {
                at,
                tid,
                donor,
                urgency,
            } => {
                let Some(&i) = self.by_tid.get(&tid) else {
                    return;
                };
                let donor = match donor {
                    MarkDonor::Base => None,
                    MarkDonor::Floor => Some(i),
                    MarkDonor::Tid(d) => self.by_tid.get(&d).copied(),
                };
                self.th[i].engine = Some((urgency, donor));
                self.th[i].boosted = urgency;
                if self.in_run(at) {
                    self.out.push(TraceEvent::Boost {
                        at_ns: self.rel(at),
                        to: i,
                        donor,
                        urgency,
                    });
                }
            }
            Marker::Prio { at, tid, prio } => {
                if let Some(&i) = self.by_tid.get(&tid) {
                    let u = urgency_of_prio(prio, &self.th[i]);
                    self.set_urgency(i, u, at);
                }
            }
        }
    }
}

/// The trace-stream kind of a marker's instant name (the writers' names).
fn instant_kind(name: &str) -> Option<InstantKind> {
    Some(match name {
        "lock" => InstantKind::Lock,
        "blocked" => InstantKind::LockBlocked,
        "unlock" => InstantKind::Unlock,
        "wait" => InstantKind::Wait,
        "signal" => InstantKind::Signal,
        "broadcast" => InstantKind::Broadcast,
        "woken" => InstantKind::Woken,
        "push" => InstantKind::Push,
        "pop" => InstantKind::Pop,
        "call" => InstantKind::Call,
        "reply" => InstantKind::Reply,
        "barrier" => InstantKind::Barrier,
        "suspend" => InstantKind::Suspend,
        "resume" => InstantKind::Resume,
        "throttle" => InstantKind::Throttle,
        "replenish" => InstantKind::Replenish,
        "spin" => InstantKind::Spin,
        "abort" => InstantKind::Abort,
        "gang_run" => InstantKind::GangRun,
        "gang_run_failed" => InstantKind::GangRunFailed,
        "gang_notify" => InstantKind::GangNotify,
        "gang_wait" => InstantKind::GangWait,
        "gang_done" => InstantKind::GangDone,
        "gang_timeout" => InstantKind::GangTimeout,
        "gang_insert" => InstantKind::GangInsert,
        "gang_remove" => InstantKind::GangRemove,
        _ => return None,
    })
}

/// Converts what the instance recorded into the trace stream (see the
/// module docs). Markers name resources by index into
/// [`RunFacts::resources`] and condition variables by the engine ids of
/// [`RunFacts::conds`] (others get `cond#ID`).
pub fn convert(
    parsed: &Parsed,
    dropped: Vec<(u32, u64)>,
    instance: String,
    f: &RunFacts<'_>,
) -> RealTrace {
    let mut cpu_of = HashMap::new();
    let mut cpus = 0;
    for &(l, p) in f.cpu_map {
        cpu_of.insert(p, l);
        cpus = cpus.max(l + 1);
    }
    let mut res_names: Vec<String> = f.resources.to_vec();
    let mut cond_res = HashMap::new();
    for (id, name) in &f.conds {
        res_names.push(name.clone());
        cond_res.insert(*id, res_names.len() - 1);
    }
    let mut c = Conv {
        f,
        by_tid: f
            .tids
            .iter()
            .enumerate()
            .filter(|(_, (_, t))| *t > 0)
            .map(|(i, (_, t))| (*t, i))
            .collect(),
        th: f
            .bases
            .iter()
            .map(|&b| Th {
                base: b,
                cur: b,
                running: None,
                engine: None,
                kernel_donor: None,
                boosted: b,
                blocked_at: 0,
            })
            .collect(),
        out: Vec::new(),
        cpu_of,
        cpus: cpus.max(1),
        res_names,
        cond_res,
        end: f.t0.saturating_add(f.duration),
    };
    let mut stats = TraceStats {
        instance,
        dropped,
        lost: parsed.lost,
        unreadable: parsed.unreadable,
        ..TraceStats::default()
    };
    let mut last_ts = f.t0;
    for r in &parsed.records {
        let t = r.ts_ns;
        last_ts = last_ts.max(t);
        match &r.kind {
            RecordKind::Switch {
                prev_pid,
                prev_prio,
                prev_runnable,
                next_pid,
                next_prio,
                ..
            } => {
                let cpu = c.cpu(r.cpu);
                let (p, n) = (
                    c.by_tid.get(prev_pid).copied(),
                    c.by_tid.get(next_pid).copied(),
                );
                if p.is_some() || n.is_some() {
                    stats.kernel_records += 1;
                }
                if let Some(i) = p {
                    c.close(i, t);
                    c.th[i].cur = urgency_of_prio(*prev_prio, &c.th[i]);
                    if !prev_runnable {
                        c.th[i].blocked_at = t;
                    }
                }
                if let Some(i) = n {
                    // A slice left open (a lost switch-out) ends here.
                    c.close(i, t);
                    c.th[i].cur = urgency_of_prio(*next_prio, &c.th[i]);
                    c.open(i, cpu, t);
                }
            }
            RecordKind::PiSetprio { pid, newprio } => {
                let Some(&i) = c.by_tid.get(pid) else {
                    continue;
                };
                stats.kernel_records += 1;
                let u = urgency_of_prio(*newprio, &c.th[i]);
                if u > c.th[i].base {
                    // The kernel boosts in the context of the thread that
                    // blocks: the donor, when it is one of the run's.
                    let current = c.by_tid.get(&r.pid).copied();
                    c.th[i].kernel_donor = match current {
                        Some(j) if j != i && c.th[j].cur >= u => Some(j),
                        _ => c.kernel_donor(i, u),
                    };
                }
                c.set_urgency(i, u, t);
                if u != c.th[i].boosted {
                    c.th[i].boosted = u;
                    let donor = if u > c.th[i].base {
                        c.th[i].kernel_donor
                    } else {
                        None
                    };
                    if c.in_run(t) {
                        c.out.push(TraceEvent::Boost {
                            at_ns: c.rel(t),
                            to: i,
                            donor,
                            urgency: u,
                        });
                    }
                }
            }
            RecordKind::Wakeup { pid, .. } | RecordKind::Migrate { pid, .. } => {
                if c.by_tid.contains_key(pid) {
                    stats.kernel_records += 1;
                }
            }
            RecordKind::Marker(m) => {
                stats.markers += 1;
                c.marker(r.pid, m.clone());
            }
        }
    }
    let close_at = last_ts.min(c.end);
    for i in 0..c.th.len() {
        c.close(i, close_at);
    }
    RealTrace {
        info: TraceInfo {
            cpus: c.cpus,
            threads: f
                .tids
                .iter()
                .zip(&f.bases)
                .map(|((name, _), &base)| ThreadInfo {
                    name: name.clone(),
                    base,
                })
                .collect(),
            resources: c.res_names,
        },
        events: c.out,
        end_ns: f.duration,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::parse_text;

    fn line(cpu: u32, us: u64, pid: i32, ev: &str) -> String {
        format!(
            "   t-{pid} [{cpu:03}] d..2. {}.{:06}: {ev}\n",
            us / 1_000_000,
            us % 1_000_000
        )
    }

    fn switch(prev: i32, pp: i32, state: &str, next: i32, np: i32) -> String {
        format!("sched_switch: prev_comm=a prev_pid={prev} prev_prio={pp} prev_state={state} ==> next_comm=b next_pid={next} next_prio={np}")
    }

    /// Consumer (tid 10, prio 30) waits; Producer (tid 11, prio 10) runs
    /// boosted by the engine, then de-boosted by heir-rt's setattr.
    #[test]
    fn slices_carry_the_kernel_priority_and_the_engine_donor() {
        let t0 = 1_000_000_000u64; // 1 s
        let us = |x: u64| t0 / 1000 + x;
        let mut text = String::new();
        text.push_str(&line(0, us(0), 0, &switch(0, 120, "R", 10, 69)));
        text.push_str(&line(
            0,
            us(5),
            10,
            &format!("tracing_mark_write: heir i wait {} c3", t0 + 5_000),
        ));
        text.push_str(&line(
            0,
            us(6),
            10,
            &format!("tracing_mark_write: heir boost {} 11 10 f30", t0 + 6_000),
        ));
        text.push_str(&line(
            0,
            us(6),
            10,
            &format!("tracing_mark_write: heir prio {} 11 69", t0 + 6_500),
        ));
        text.push_str(&line(0, us(10), 10, &switch(10, 69, "S", 11, 69)));
        text.push_str(&line(
            0,
            us(20),
            11,
            &format!("tracing_mark_write: heir i signal {} c3", t0 + 20_000),
        ));
        text.push_str(&line(
            0,
            us(21),
            11,
            &format!("tracing_mark_write: heir boost {} 11 - f10", t0 + 21_000),
        ));
        text.push_str(&line(
            0,
            us(22),
            11,
            &format!("tracing_mark_write: heir prio {} 11 89", t0 + 22_000),
        ));
        text.push_str(&line(0, us(25), 11, &switch(11, 89, "R", 10, 69)));
        let parsed = parse_text(&text);
        let tids = vec![("Consumer".to_string(), 10), ("Producer".to_string(), 11)];
        let facts = RunFacts {
            tids: &tids,
            bases: vec![Urgency::fixed(30), Urgency::fixed(10)],
            resources: &["q".to_string()],
            conds: vec![(3, "q.more".to_string())],
            cpu_map: &[(0, 0)],
            t0,
            duration: 1_000_000,
        };
        let tr = convert(&parsed, vec![(1, 4)], "heir-1".into(), &facts);
        assert_eq!(tr.info.resources, vec!["q", "q.more"]);
        assert_eq!(tr.stats.lost_total(), 4);
        let execs: Vec<_> = tr
            .events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Exec {
                    thread,
                    start_ns,
                    end_ns,
                    urgency,
                    donor,
                    ..
                } => Some((*thread, *start_ns, *end_ns, *urgency, *donor)),
                _ => None,
            })
            .collect();
        assert_eq!(
            execs,
            vec![
                (0, 0, 10_000, Urgency::fixed(30), None),
                (1, 10_000, 22_000, Urgency::fixed(30), Some(0)),
                (1, 22_000, 25_000, Urgency::fixed(10), None),
                // Open when the records end: closed there.
            ]
        );
        assert!(tr.events.contains(&TraceEvent::Instant {
            thread: 0,
            at_ns: 5_000,
            kind: InstantKind::Wait,
            resource: Some(1)
        }));
        assert!(tr.events.contains(&TraceEvent::Boost {
            at_ns: 6_000,
            to: 1,
            donor: Some(0),
            urgency: Urgency::fixed(30)
        }));
    }

    #[test]
    fn kernel_pi_boosts_name_the_thread_that_blocked() {
        let t0 = 1_000_000_000u64;
        let us = |x: u64| t0 / 1000 + x;
        let mut text = String::new();
        text.push_str(&line(0, us(0), 0, &switch(0, 120, "R", 11, 89)));
        text.push_str(&line(0, us(2), 11, &switch(11, 89, "R", 10, 69)));
        text.push_str(&line(0, us(4), 10, &switch(10, 69, "S", 11, 89)));
        text.push_str(&line(
            0,
            us(4),
            11,
            "sched_pi_setprio: comm=p pid=11 oldprio=89 newprio=69",
        ));
        let parsed = parse_text(&text);
        let tids = vec![("H".to_string(), 10), ("L".to_string(), 11)];
        let facts = RunFacts {
            tids: &tids,
            bases: vec![Urgency::fixed(30), Urgency::fixed(10)],
            resources: &[],
            conds: vec![],
            cpu_map: &[(0, 0)],
            t0,
            duration: 10_000,
        };
        let tr = convert(&parsed, vec![], "heir-1".into(), &facts);
        assert!(tr.events.contains(&TraceEvent::Boost {
            at_ns: 4_000,
            to: 1,
            donor: Some(0),
            urgency: Urgency::fixed(30)
        }));
    }
}
