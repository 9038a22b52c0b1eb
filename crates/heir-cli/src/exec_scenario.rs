//! `heir exec --scenario OUT.json`: the program as observed, written as a
//! heir scenario (rt-app JSON with heir's extensions, docs/SCENARIO.md;
//! the rules in docs/EXEC.md, "Scenario").
//!
//! The interposition library records each synchronisation operation of
//! each thread with the thread's CPU time when it began and ended
//! (`heir_preload::record`: one file per process). A thread becomes a task
//! (`loop` 1, `delay` its start) whose events are its operations in order,
//! with `run` the CPU time it used between the end of one and the start
//! of the next:
//!
//! | operation | event |
//! |---|---|
//! | `pthread_mutex_lock` (and try, timed: when it got the mutex) | `lock` (a recursive relock: nothing) |
//! | `pthread_mutex_unlock` | `unlock` (of a recursive relock: nothing) |
//! | `pthread_cond_*wait` | `wait` `{ref, mutex}` |
//! | `pthread_cond_signal` / `broadcast` | `signal` / `broad` |
//! | `pthread_barrier_wait` | `barrier` |
//! | `sem_post` / `sem_wait` (and `sem_trywait`, `sem_timedwait`, `sem_clockwait` that took a unit) | `push` / `pop` of a queue (capacity 65536) |
//! | `sem_init` with value N | N `push`es of its queue |
//! | `nanosleep`, `clock_nanosleep`, `usleep`, `sleep` | `sleep` of the requested time, or `timer` when the thread was periodic |
//! | a timed wait, lock or semaphore wait that timed out | `sleep` of the time it blocked (a cond wait: between an `unlock` and a `lock` of its mutex) |
//! | the thread's exit | the `run` of the CPU time since its last operation |
//!
//! A thread that changes its own scheduling after its first operation
//! gets a phase per scheduling (docs/EXEC.md, "Phases").
//!
//! **Periodic threads.** A thread is periodic when it slept at least
//! [`PERIODIC_MIN_SLEEPS`] times and the intervals between the ends of
//! consecutive sleeps are all within [`PERIODIC_TOLERANCE`] of their
//! median (and the median is at least 1 ms): each of its sleeps becomes a
//! `timer` of that period (`ref` `unique`, relative mode).
//!
//! Each condition variable's `helpers` are the tasks seen signalling or
//! broadcasting it; mutexes are priority-inheritance mutexes
//! (`pi_enabled`), as heir's are.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

/// Sleeps a thread needs to be called periodic.
pub const PERIODIC_MIN_SLEEPS: usize = 3;
/// How far each interval between sleep ends may be from their median
/// (a fraction of it) for the thread to be periodic.
pub const PERIODIC_TOLERANCE: f64 = 0.02;

/// The record file's layout (heir-preload's `record` module).
const HEADER: usize = 64;
const RECORD: usize = 64;

/// Record kinds (heir-preload's `record::Kind`).
mod kind {
    pub const SCHED: u8 = 1;
    pub const NAME: u8 = 2;
    pub const LOCK: u8 = 3;
    pub const UNLOCK: u8 = 4;
    pub const WAIT: u8 = 5;
    pub const SIGNAL: u8 = 6;
    pub const BROADCAST: u8 = 7;
    pub const BARRIER: u8 = 8;
    pub const SEM_POST: u8 = 9;
    pub const SEM_WAIT: u8 = 10;
    pub const SLEEP: u8 = 11;
    pub const SEM_INIT: u8 = 12;
    pub const EXIT: u8 = 13;
    pub const GAVE_UP: u8 = 14;
    /// Flag (byte 53 of a non-`SCHED` record): a timed wait timed out.
    pub const TIMED_OUT: u8 = 1;
}

/// Items a semaphore's initial value puts in its queue at most (the
/// queue's capacity).
const QUEUE_CAPACITY: u64 = 65536;

/// One record.
#[derive(Clone, Copy, Debug)]
struct Rec {
    mono_in: u64,
    cpu_in: u64,
    mono_out: u64,
    cpu_out: u64,
    obj: u64,
    obj2: u64,
    tid: i32,
    kind: u8,
    /// `SCHED`: the policy; other kinds: flags (`kind::TIMED_OUT`).
    policy: u8,
    prio: i16,
}

impl Rec {
    fn timed_out(&self) -> bool {
        self.kind != kind::SCHED && self.policy & kind::TIMED_OUT != 0
    }

    /// How long the operation took (wall time, µs).
    fn elapsed_us(&self) -> u64 {
        us(self.mono_out.saturating_sub(self.mono_in))
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// The records of one file: (pid, records, records lost).
fn read_file(path: &Path) -> Result<(i32, Vec<Rec>, u64)> {
    let pid: i32 = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("{}: not a PID.rec file", path.display()))?;
    let b = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
    if b.len() < HEADER || &b[..8] != b"HEIRREC1" {
        bail!("{}: not a heir record file", path.display());
    }
    let (slots, cap) = (u64_at(&b, 8), u64_at(&b, 16));
    let n = slots.min(cap) as usize;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let o = HEADER + RECORD * i;
        let Some(r) = b.get(o..o + RECORD) else {
            break;
        };
        if r[52] == 0 {
            continue;
        }
        let mut t = [0u8; 4];
        t.copy_from_slice(&r[48..52]);
        out.push(Rec {
            mono_in: u64_at(r, 0),
            cpu_in: u64_at(r, 8),
            mono_out: u64_at(r, 16),
            cpu_out: u64_at(r, 24),
            obj: u64_at(r, 32),
            obj2: u64_at(r, 40),
            tid: i32::from_le_bytes(t),
            kind: r[52],
            policy: r[53],
            prio: i16::from_le_bytes([r[54], r[55]]),
        });
    }
    Ok((pid, out, slots.saturating_sub(cap)))
}

/// What was written, for the summary.
pub struct Written {
    path: String,
    threads: usize,
    mutexes: usize,
    conds: usize,
    queues: usize,
    barriers: usize,
    periodic: Vec<(String, u64)>,
    lost: u64,
}

impl Written {
    /// One line for stderr.
    pub fn line(&self) -> String {
        let mut s = format!(
            "scenario {}: {} threads, {} mutexes, {} condition variables, {} semaphores (queues), {} barriers",
            self.path, self.threads, self.mutexes, self.conds, self.queues, self.barriers
        );
        for (t, p) in &self.periodic {
            let _ = write!(s, "; {t} periodic, {} µs", p);
        }
        if self.lost > 0 {
            let _ = write!(s, "; {} operations not recorded (the record file was full): the scenario misses the end", self.lost);
        }
        s
    }

    /// The same, for `--json`.
    pub fn json(&self) -> Value {
        json!({
            "file": self.path,
            "threads": self.threads,
            "mutexes": self.mutexes,
            "conds": self.conds,
            "queues": self.queues,
            "barriers": self.barriers,
            "periodic": self.periodic.iter().map(|(t, p)| json!({"thread": t, "period_us": p})).collect::<Vec<_>>(),
            "lost_records": self.lost,
        })
    }
}

/// The program's objects: (pid, address) → their declaration (name,
/// type), in order of first use.
#[derive(Default)]
struct Objects {
    several: bool,
    index: HashMap<(i32, u64), usize>,
    decl: Vec<(String, &'static str)>,
}

impl Objects {
    fn get(&mut self, pid: i32, addr: u64, ty: &'static str) -> usize {
        if let Some(&i) = self.index.get(&(pid, addr)) {
            return i;
        }
        let prefix = if ty == "queue" { "sem" } else { ty };
        let name = if self.several {
            format!("{prefix}@{pid}:{addr:#x}")
        } else {
            format!("{prefix}@{addr:#x}")
        };
        self.decl.push((name, ty));
        self.index.insert((pid, addr), self.decl.len() - 1);
        self.decl.len() - 1
    }
}

/// A thread as observed.
struct Thread {
    pid: i32,
    tid: i32,
    name: String,
    policy: u8,
    prio: i16,
    mask: u64,
    ops: Vec<Rec>,
}

/// A thread's scheduling as recorded: policy, priority (or nice),
/// affinity mask of CPUs 0..63 (0: unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sched {
    policy: u8,
    prio: i16,
    mask: u64,
}

fn policy_name(p: u8) -> &'static str {
    match p {
        1 => "SCHED_FIFO",
        2 => "SCHED_RR",
        3 => "SCHED_BATCH",
        5 => "SCHED_IDLE",
        _ => "SCHED_OTHER",
    }
}

fn us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// The period of a thread's sleeps, if it was periodic (module docs).
fn period_of(ops: &[Rec]) -> Option<u64> {
    let ends: Vec<u64> = ops
        .iter()
        .filter(|r| r.kind == kind::SLEEP)
        .map(|r| r.mono_out)
        .collect();
    if ends.len() < PERIODIC_MIN_SLEEPS {
        return None;
    }
    let mut iv: Vec<u64> = ends.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    iv.sort_unstable();
    let median = iv[iv.len() / 2];
    if median < 1_000_000 {
        return None;
    }
    let tol = (median as f64 * PERIODIC_TOLERANCE) as u64;
    iv.iter()
        .all(|&i| i.abs_diff(median) <= tol)
        .then_some(us(median))
}

/// Reads the records in `dir` and writes the scenario to `out`; `t0` and
/// `end` are when the program started and ended (`CLOCK_MONOTONIC` ns).
///
/// # Errors
/// A record file that cannot be read, nothing recorded, `out` not
/// writable.
pub fn write(dir: &Path, out: &Path, t0: u64, end: u64) -> Result<Written> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rec"))
        .collect();
    files.sort();
    let mut threads: Vec<Thread> = Vec::new();
    let mut lost = 0;
    let mut pids = Vec::new();
    for f in &files {
        let (pid, recs, l) = read_file(f)?;
        lost += l;
        pids.push(pid);
        let mut by_tid: BTreeMap<i32, usize> = BTreeMap::new();
        for r in recs {
            let i = *by_tid.entry(r.tid).or_insert_with(|| {
                threads.push(Thread {
                    pid,
                    tid: r.tid,
                    name: String::new(),
                    policy: 0,
                    prio: 0,
                    mask: 0,
                    ops: Vec::new(),
                });
                threads.len() - 1
            });
            let t = &mut threads[i];
            match r.kind {
                // Before its first operation: the thread's scheduling;
                // after: a change it made (a new phase).
                kind::SCHED if t.ops.is_empty() => {
                    t.policy = r.policy;
                    t.prio = r.prio;
                    t.mask = r.obj;
                }
                kind::NAME => {
                    let mut b = Vec::with_capacity(16);
                    b.extend_from_slice(&r.obj.to_le_bytes());
                    b.extend_from_slice(&r.obj2.to_le_bytes());
                    let n: String = String::from_utf8_lossy(&b)
                        .trim_end_matches('\0')
                        .chars()
                        .map(|c| {
                            if c.is_alphanumeric() || c == '_' {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect();
                    t.name = n;
                }
                _ => t.ops.push(r),
            }
        }
    }
    threads.retain(|t| !t.ops.is_empty());
    if threads.is_empty() {
        bail!("--scenario: no synchronisation operation was recorded (a statically linked program, or one that never used pthread objects, semaphores or sleeps)");
    }
    threads.sort_by_key(|t| (t.ops[0].mono_in.saturating_sub(t.ops[0].cpu_in), t.tid));
    // Object names carry the pid when several processes made operations.
    pids.retain(|p| threads.iter().any(|t| t.pid == *p));
    let several = pids.len() > 1;
    let task_name = |t: &Thread| {
        format!(
            "{}-{}",
            if t.name.is_empty() { "thread" } else { &t.name },
            t.tid
        )
    };
    let mut o = Objects {
        several,
        ..Objects::default()
    };
    let mut helpers: HashMap<usize, Vec<String>> = HashMap::new();
    let ncpu = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(64);
    let all_mask = if ncpu >= 64 {
        u64::MAX
    } else {
        (1u64 << ncpu) - 1
    };
    let mut tasks = String::new();
    let mut periodic = Vec::new();
    for (k, t) in threads.iter().enumerate() {
        let name = task_name(t);
        let period = period_of(&t.ops);
        if let Some(p) = period {
            periodic.push((name.clone(), p));
        }
        let start = t.ops[0].mono_in.saturating_sub(t.ops[0].cpu_in);
        // Phases: the thread's scheduling, and its events until it
        // changed it.
        let mut phases: Vec<(Sched, Vec<(&str, Value)>)> = vec![(
            Sched {
                policy: t.policy,
                prio: t.prio,
                mask: t.mask,
            },
            Vec::new(),
        )];
        let mut cpu_end = 0u64;
        let mut held: HashMap<usize, u32> = HashMap::new();
        // When the thread changed its scheduling (phase k + 1 starts at
        // most at changed_at[k]).
        let mut changed_at: Vec<u64> = Vec::new();
        for r in &t.ops {
            let run = us(r.cpu_in.saturating_sub(cpu_end));
            cpu_end = r.cpu_out;
            let mut e: Vec<(&str, Value)> = Vec::new();
            let mut next: Option<Sched> = None;
            match r.kind {
                kind::SCHED => {
                    next = Some(Sched {
                        policy: r.policy,
                        prio: r.prio,
                        mask: r.obj,
                    });
                    changed_at.push(r.mono_in);
                }
                kind::LOCK => {
                    let m = o.get(t.pid, r.obj, "mutex");
                    let c = held.entry(m).or_insert(0);
                    *c += 1;
                    if *c == 1 {
                        e.push(("lock", json!(o.decl[m].0)));
                    }
                }
                kind::UNLOCK => {
                    let m = o.get(t.pid, r.obj, "mutex");
                    match held.get_mut(&m) {
                        Some(c) if *c > 1 => *c -= 1,
                        Some(_) => {
                            held.remove(&m);
                            e.push(("unlock", json!(o.decl[m].0)));
                        }
                        // Not seen locked (locked before recording, or
                        // by another thread): nothing to model.
                        None => {}
                    }
                }
                kind::WAIT if r.timed_out() => {
                    // A wait that timed out: the mutex released, the
                    // thread blocked as long as it waited, the mutex taken
                    // again (no signal woke it: no wait to model).
                    let m = o.get(t.pid, r.obj2, "mutex");
                    if held.contains_key(&m) {
                        e.push(("unlock", json!(o.decl[m].0)));
                        e.push(("sleep", json!(r.elapsed_us())));
                        e.push(("lock", json!(o.decl[m].0)));
                    } else {
                        e.push(("sleep", json!(r.elapsed_us())));
                    }
                }
                kind::WAIT => {
                    let c = o.get(t.pid, r.obj, "cond");
                    let m = o.get(t.pid, r.obj2, "mutex");
                    if held.contains_key(&m) {
                        e.push(("wait", json!({"ref": o.decl[c].0, "mutex": o.decl[m].0})));
                    }
                }
                kind::SIGNAL | kind::BROADCAST => {
                    let c = o.get(t.pid, r.obj, "cond");
                    let h = helpers.entry(c).or_default();
                    if !h.contains(&name) {
                        h.push(name.clone());
                    }
                    e.push((
                        if r.kind == kind::SIGNAL {
                            "signal"
                        } else {
                            "broad"
                        },
                        json!(o.decl[c].0),
                    ));
                }
                kind::BARRIER => {
                    let b = o.get(t.pid, r.obj, "barrier");
                    e.push(("barrier", json!(o.decl[b].0)));
                }
                kind::SEM_INIT => {
                    // The initial value: as many items pushed when the
                    // semaphore is initialised.
                    let q = o.get(t.pid, r.obj, "queue");
                    for _ in 0..r.obj2.min(QUEUE_CAPACITY) {
                        e.push(("push", json!(o.decl[q].0)));
                    }
                }
                kind::SEM_POST => {
                    let q = o.get(t.pid, r.obj, "queue");
                    e.push(("push", json!(o.decl[q].0)));
                }
                kind::SEM_WAIT => {
                    let q = o.get(t.pid, r.obj, "queue");
                    e.push(("pop", json!(o.decl[q].0)));
                }
                kind::SLEEP => e.push(match period {
                    Some(p) => ("timer", json!({"ref": "unique", "period": p})),
                    None => ("sleep", json!(us(r.obj))),
                }),
                // A timed lock or semaphore wait that gave up: the thread
                // was blocked that long.
                kind::GAVE_UP => e.push(("sleep", json!(r.elapsed_us()))),
                // Only the run before it: the CPU time after the thread's
                // last operation.
                kind::EXIT => {}
                _ => {}
            }
            let Some((sched, ev)) = phases.last_mut() else {
                break;
            };
            if run > 0 {
                // Operations that model nothing (an unlock by a non-owner,
                // a recursive relock) leave runs side by side: one run.
                match ev.last_mut() {
                    Some(("run", v)) => *v = json!(v.as_u64().unwrap_or(0) + run),
                    _ => ev.push(("run", json!(run))),
                }
            }
            ev.extend(e);
            match next {
                Some(n) if n == *sched => {}
                // A change before any event of the phase: the phase's own.
                Some(n) if ev.is_empty() => *sched = n,
                Some(n) => phases.push((n, Vec::new())),
                None => {}
            }
        }
        // A change after the thread's last event and run: no phase.
        if phases.len() > 1 && phases.last().is_some_and(|(_, ev)| ev.is_empty()) {
            phases.pop();
        }
        // Work before the thread's first synchronisation, at a scheduling
        // it then changed, is its set-up (the main thread's start, a
        // thread setting its own priority): the task starts with the
        // scheduling it chose, when it chose it.
        let mut start = start;
        if phases.len() > 1 && phases[0].1.iter().all(|(k, _)| *k == "run") {
            phases.remove(0);
            start = changed_at.first().copied().unwrap_or(start);
        }
        let first = phases[0].0;
        let _ = write!(
            tasks,
            "{}\n    {}: {{",
            if k == 0 { "" } else { "," },
            json!(name)
        );
        let _ = write!(
            tasks,
            "\n      \"loop\": 1, \"delay\": {}, \"policy\": {}, \"priority\": {}",
            us(start.saturating_sub(t0)),
            json!(policy_name(first.policy)),
            first.prio
        );
        let cpus_of = |mask: u64| -> Vec<u32> {
            let mask = if mask == 0 { all_mask } else { mask };
            (0..64).filter(|c| mask & (1 << c) != 0).collect()
        };
        if first.mask != 0 && first.mask & all_mask != all_mask {
            let _ = write!(tasks, ", \"cpus\": {}", json!(cpus_of(first.mask)));
        }
        let events = |out: &mut String, ev: &[(&str, Value)], indent: &str| {
            for (key, v) in ev {
                let _ = write!(out, ",\n{indent}\"{key}\": {v}");
            }
        };
        if let [(_, ev)] = phases.as_slice() {
            events(&mut tasks, ev, "      ");
        } else {
            // One phase per scheduling the thread gave itself: each
            // phase after the first says what changed.
            tasks.push_str(",\n      \"phases\": {");
            let mut before = phases[0].0;
            for (n, (sc, ev)) in phases.iter().enumerate() {
                let mut props = String::new();
                if n > 0 {
                    if (sc.policy, sc.prio) != (before.policy, before.prio) {
                        let _ = write!(
                            props,
                            ", \"policy\": {}, \"priority\": {}",
                            json!(policy_name(sc.policy)),
                            sc.prio
                        );
                    }
                    if sc.mask != before.mask {
                        let _ = write!(props, ", \"cpus\": {}", json!(cpus_of(sc.mask)));
                    }
                }
                let _ = write!(
                    tasks,
                    "{}\n        \"p{n}\": {{ \"loop\": 1{props}",
                    if n == 0 { "" } else { "," }
                );
                events(&mut tasks, ev, "          ");
                tasks.push_str("\n        }");
                before = *sc;
            }
            tasks.push_str("\n      }");
        }
        tasks.push_str("\n    }");
    }
    let mut res = String::new();
    let (mut n_m, mut n_c, mut n_q, mut n_b) = (0, 0, 0, 0);
    for (i, (name, ty)) in o.decl.iter().enumerate() {
        let body = match *ty {
            "mutex" => {
                n_m += 1;
                json!({"type": "mutex"})
            }
            "cond" => {
                n_c += 1;
                json!({"type": "cond", "helpers": helpers.get(&i).cloned().unwrap_or_default()})
            }
            "queue" => {
                n_q += 1;
                json!({"type": "queue", "capacity": 65536})
            }
            _ => {
                n_b += 1;
                json!({"type": "barrier"})
            }
        };
        let _ = write!(
            res,
            "{}\n    {}: {}",
            if i == 0 { "" } else { "," },
            json!(name),
            body
        );
    }
    // Twice the observed length: a timer's first period, and a schedule
    // PI-CV changes, may end later than the program did.
    let duration = (2.0 * (end.saturating_sub(t0)) as f64 / 1e9 * 1000.0).ceil() / 1000.0;
    let text = format!(
        "{{\n  \"global\": {{ \"default_policy\": \"SCHED_OTHER\", \"pi_enabled\": true, \"pi_cv\": true, \"duration\": {duration} }},\n  \"resources\": {{{res}\n  }},\n  \"tasks\": {{{tasks}\n  }}\n}}\n"
    );
    let (pending, mut f) = crate::output::PendingFile::create(out)?;
    std::io::Write::write_all(&mut f, text.as_bytes())
        .with_context(|| format!("write {}", out.display()))?;
    pending.commit(f)?;
    Ok(Written {
        path: out.display().to_string(),
        threads: threads.len(),
        mutexes: n_m,
        conds: n_c,
        queues: n_q,
        barriers: n_b,
        periodic,
        lost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleep_at(end_ms: u64) -> Rec {
        Rec {
            mono_in: 0,
            cpu_in: 0,
            mono_out: end_ms * 1_000_000,
            cpu_out: 0,
            obj: 0,
            obj2: 0,
            tid: 1,
            kind: kind::SLEEP,
            policy: 0,
            prio: 0,
        }
    }

    #[test]
    fn periodic_when_sleep_ends_are_evenly_spaced() {
        let even: Vec<Rec> = [10, 20, 30, 40].map(sleep_at).to_vec();
        assert_eq!(period_of(&even), Some(10_000));
        let uneven: Vec<Rec> = [10, 20, 35, 40].map(sleep_at).to_vec();
        assert_eq!(period_of(&uneven), None);
        let two: Vec<Rec> = [10, 20].map(sleep_at).to_vec();
        assert_eq!(period_of(&two), None);
    }
}
