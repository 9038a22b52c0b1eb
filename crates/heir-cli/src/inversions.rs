//! `heir inversions TRACE.json`: the priority inversions a trace shows.
//!
//! Reads a Chrome trace written by `heir sim --trace` or `heir run --trace`
//! (heir-viz's `ChromeTrace`: `otherData.generator` is `"heir"`) and finds
//! every **wait**: a thread that blocked on a mutex (`blocked`) until it got
//! it (its next `lock` of the same resource), or that waited on a condition
//! variable (`wait`) until it was woken (its next `woken` on it). A wait's
//! **delay** is its length.
//!
//! What the waiter **waited for**: for a mutex, the thread that held it when
//! the waiter blocked (from the `lock`/`unlock` instants of that resource;
//! when none is known, the thread that unlocked it last before the waiter
//! got it); for a condition variable, the thread that signalled or
//! broadcast it last before the waiter was woken.
//!
//! The **chain** of a wait: what it waited for, then, transitively, the
//! owners of the mutexes those threads blocked on during the wait (fig. 7:
//! the consumer waits for the producer, which waits for the mutex's
//! holder); `waited_for` lists it, the direct one first.
//!
//! A wait is an **inversion** when threads of *lower base priority than the
//! waiter* outside its chain ran during it while what it waited
//! for had work pending: their execution slices (on any CPU — no CPU
//! affinity is considered) overlapping the wait, counted for the
//! overlapping time. "Had work pending": from one of its jobs' `release` to
//! that job's `complete` (always, when the trace has no release of it),
//! minus its own condition-variable waits and suspensions — a thread that
//! ran while the signaller had nothing to do delayed nobody. A thread's
//! base priority is the trace's: threads are ordered by base
//! (`thread_sort_index`) and carry it in their slices' `args.base`; equal
//! bases are not lower. Waits whose waited-for thread is unknown count the
//! whole wait.
//!
//! Output: the inversions worst first (longest delay, then most
//! lower-priority time, then earliest), then totals per mutex and per
//! condition variable; `--json` prints the same as one object:
//! `{"file","waits","inversions":[{"waiter","resource","kind","waited_for",
//! "from_ms","to_ms","delay_ms","lower_ran_ms","lower":[{"thread","ms"}]}],
//! "resources":[{"resource","kind","inversions","total_delay_ms",
//! "worst_delay_ms","lower_ran_ms"}],"lower_ran_ms"}`.
//!
//! Exit codes: 0 the trace was read (whatever it shows); 2 bad input (an
//! unreadable file, not JSON, not a heir trace), with nothing on stdout.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::Serialize;
use serde_json::Value;

use crate::output::{print_json, Align, Table};
use crate::{CliError, CliResult};

/// `heir inversions` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A trace written by `heir sim --trace` or `heir run --trace`.
    pub trace: PathBuf,
    /// Print the inversions and totals as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What the trace expects to be.
const EXPECTED: &str = "a Chrome trace-event JSON object written by `heir sim --trace` or \
                        `heir run --trace` (\"traceEvents\" and \"otherData\": {\"generator\": \"heir\"})";

/// A thread of the trace.
#[derive(Clone, Debug, Default)]
struct Thread {
    name: String,
    /// Rank by base urgency, most urgent first (ties by scenario order).
    rank: u64,
    /// The base urgency as the slices print it (`prio 30`), once seen.
    base: Option<String>,
}

/// An execution slice of a thread.
#[derive(Clone, Copy, Debug)]
struct Slice {
    tid: u64,
    start: u64,
    end: u64,
}

/// A synchronisation instant.
#[derive(Clone, Debug)]
struct Instant {
    tid: u64,
    at: u64,
    name: String,
    resource: String,
}

/// Mutex or condition variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Mutex,
    Condvar,
}

/// A lower-priority thread that ran during a wait.
#[derive(Clone, Debug, Serialize)]
struct Ran {
    thread: String,
    ms: f64,
}

/// One inversion.
#[derive(Clone, Debug, Serialize)]
struct Inversion {
    waiter: String,
    resource: String,
    kind: Kind,
    waited_for: Vec<String>,
    from_ms: f64,
    to_ms: f64,
    delay_ms: f64,
    lower_ran_ms: f64,
    lower: Vec<Ran>,
    #[serde(skip)]
    delay_ns: u64,
    #[serde(skip)]
    lower_ns: u64,
    #[serde(skip)]
    from_ns: u64,
}

/// Totals of one resource.
#[derive(Clone, Debug, Serialize)]
struct Totals {
    resource: String,
    kind: Kind,
    inversions: usize,
    total_delay_ms: f64,
    worst_delay_ms: f64,
    lower_ran_ms: f64,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Summary {
    file: String,
    waits: usize,
    inversions: Vec<Inversion>,
    resources: Vec<Totals>,
    lower_ran_ms: f64,
}

fn ms_of(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn ms_text(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000, (ns / 1000) % 1000)
}

/// A `ts`/`dur` (µs, three decimals) as ns.
fn ns_of(v: &Value) -> Option<u64> {
    let us = v.as_f64()?;
    (us.is_finite() && us >= 0.0).then(|| (us * 1000.0).round() as u64)
}

fn bad(path: &Path, what: impl std::fmt::Display) -> CliError {
    CliError::bad_input(anyhow!("{}: {what}; expected {EXPECTED}", path.display()))
}

/// The trace's threads, slices and instants.
struct Trace {
    threads: HashMap<u64, Thread>,
    slices: Vec<Slice>,
    instants: Vec<Instant>,
    /// Job (`release`, `complete`, `deadline miss`) and sync instants of
    /// every thread, in time order.
    marks: Vec<Instant>,
    /// When each condition variable was signalled or broadcast, in time
    /// order.
    signals: HashMap<String, Vec<u64>>,
}

fn parse(path: &Path, text: &str) -> Result<Trace, CliError> {
    let v: Value = serde_json::from_str(text).map_err(|e| bad(path, format!("not JSON ({e})")))?;
    parse_value(path, &v)
}

/// The inversions of a trace heir wrote in memory (`heir report`'s
/// section): the page's table for a face, or `None` if the bytes are not
/// a heir trace.
pub fn table_of(trace_json: &[u8]) -> Option<heir_viz::report::InversionTable> {
    let v: Value = serde_json::from_slice(trace_json).ok()?;
    let path = Path::new("trace");
    let s = parse_value(path, &v).ok()?.summary(path);
    Some(heir_viz::report::InversionTable {
        waits: s.waits,
        lower_ran_ns: s.inversions.iter().map(|i| i.lower_ns).sum(),
        worst: s
            .inversions
            .iter()
            .map(|i| heir_viz::report::InversionRow {
                waiter: i.waiter.clone(),
                resource: format!("{} ({})", i.resource, kind_name(i.kind)),
                waited_for: i.waited_for.clone(),
                from_ns: i.from_ns,
                delay_ns: i.delay_ns,
                lower: i
                    .lower
                    .iter()
                    .map(|r| (r.thread.clone(), (r.ms * 1e6).round() as u64))
                    .collect(),
            })
            .collect(),
    })
}

fn parse_value(path: &Path, v: &Value) -> Result<Trace, CliError> {
    let events = v
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(path, "not a heir trace: no \"traceEvents\" array"))?;
    if v.pointer("/otherData/generator").and_then(Value::as_str) != Some("heir") {
        return Err(bad(
            path,
            "not a heir trace: \"otherData.generator\" is not \"heir\"",
        ));
    }
    let mut threads: HashMap<u64, Thread> = HashMap::new();
    let mut slices = Vec::new();
    let mut instants = Vec::new();
    let mut marks = Vec::new();
    for (i, e) in events.iter().enumerate() {
        // Only the `tasks` process (pid 2): one track per thread.
        if e.get("pid").and_then(Value::as_u64) != Some(2) {
            continue;
        }
        let ph = e.get("ph").and_then(Value::as_str).unwrap_or("");
        let name = e.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(tid) = e.get("tid").and_then(Value::as_u64) else {
            return Err(bad(path, format!("event {i} has no numeric \"tid\"")));
        };
        let args = e.get("args");
        match ph {
            "M" if name == "thread_name" => {
                let n = args
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(path, format!("event {i}: thread_name without a name")))?;
                threads.entry(tid).or_default().name = n.to_string();
            }
            "M" if name == "thread_sort_index" => {
                let r = args
                    .and_then(|a| a.get("sort_index"))
                    .and_then(Value::as_u64)
                    .ok_or_else(|| {
                        bad(path, format!("event {i}: thread_sort_index without one"))
                    })?;
                threads.entry(tid).or_default().rank = r;
            }
            "X" if e.get("cat").and_then(Value::as_str) == Some("exec") => {
                let (Some(start), Some(dur)) =
                    (e.get("ts").and_then(ns_of), e.get("dur").and_then(ns_of))
                else {
                    return Err(bad(path, format!("event {i}: a slice without ts/dur")));
                };
                if let Some(b) = args.and_then(|a| a.get("base")).and_then(Value::as_str) {
                    let t = threads.entry(tid).or_default();
                    if t.base.is_none() {
                        t.base = Some(b.to_string());
                    }
                }
                slices.push(Slice {
                    tid,
                    start,
                    end: start + dur,
                });
            }
            "i" if matches!(
                e.get("cat").and_then(Value::as_str),
                Some("sync") | Some("job")
            ) =>
            {
                let Some(at) = e.get("ts").and_then(ns_of) else {
                    return Err(bad(path, format!("event {i}: an instant without ts")));
                };
                let resource = args
                    .and_then(|a| a.get("resource"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let ev = Instant {
                    tid,
                    at,
                    name: name.to_string(),
                    resource: resource.to_string(),
                };
                if !resource.is_empty() {
                    instants.push(ev.clone());
                }
                marks.push(ev);
            }
            _ => {}
        }
    }
    if threads.values().all(|t| t.name.is_empty()) {
        return Err(bad(path, "not a heir trace: no thread tracks"));
    }
    // Time order; the file's order among equal times (a stable sort).
    instants.sort_by_key(|i| i.at);
    marks.sort_by_key(|i| i.at);
    let mut signals: HashMap<String, Vec<u64>> = HashMap::new();
    for i in &instants {
        if matches!(i.name.as_str(), "signal" | "broadcast") && !i.resource.is_empty() {
            signals.entry(i.resource.clone()).or_default().push(i.at);
        }
    }
    Ok(Trace {
        threads,
        slices,
        instants,
        marks,
        signals,
    })
}

impl Trace {
    fn name(&self, tid: u64) -> String {
        match self.threads.get(&tid) {
            Some(t) if !t.name.is_empty() => t.name.clone(),
            _ => format!("tid {tid}"),
        }
    }

    /// Whether `t`'s base priority is below `w`'s.
    fn lower(&self, t: u64, w: u64) -> bool {
        match (self.threads.get(&t), self.threads.get(&w)) {
            (Some(t), Some(w)) => t.rank > w.rank && (t.base.is_none() || t.base != w.base),
            _ => false,
        }
    }

    /// When thread `t` had work pending, sorted and disjoint: from each
    /// job's `release` to its `complete` (or `deadline miss`; all the time
    /// when the trace has no release of it), minus its own condition
    /// variable waits (`wait` to the signal or broadcast that woke it —
    /// the last one of that condition variable before its `woken`, as for
    /// what it waited for — or to `woken` when there is none: a real thread
    /// marks `woken` only when it runs again, and between the two it has
    /// work pending; the simulator marks both at once) and suspensions
    /// (`suspend` to `resume`).
    /// Its mutex waits stay in: what it waits for then is the next link of
    /// the chain.
    fn pending(&self, t: u64) -> Vec<(u64, u64)> {
        let mut jobs = Vec::new();
        let mut idle = Vec::new();
        let mut job: Option<u64> = None;
        let mut off: Option<u64> = None;
        let mut off_res = "";
        let mut released = false;
        for ev in self.marks.iter().filter(|e| e.tid == t) {
            match ev.name.as_str() {
                "release" => {
                    released = true;
                    job.get_or_insert(ev.at);
                }
                "complete" | "deadline miss" => {
                    if let Some(a) = job.take() {
                        jobs.push((a, ev.at));
                    }
                }
                "wait" | "suspend" if off.is_none() => {
                    off = Some(ev.at);
                    off_res = ev.resource.as_str();
                }
                "woken" | "resume" => {
                    if let Some(a) = off.take() {
                        // The last signal or broadcast of it in [a, woken].
                        let signalled = self.signals.get(off_res).and_then(|at| {
                            let n = at.partition_point(|&x| x <= ev.at);
                            n.checked_sub(1).map(|i| at[i]).filter(|&x| x >= a)
                        });
                        idle.push((a, signalled.unwrap_or(ev.at)));
                    }
                }
                _ => {}
            }
        }
        if !released {
            jobs = vec![(0, u64::MAX)];
        } else if let Some(a) = job {
            jobs.push((a, u64::MAX));
        }
        if let Some(a) = off {
            idle.push((a, u64::MAX));
        }
        // jobs minus idle.
        let mut out = Vec::new();
        for (mut a, b) in jobs {
            for &(ia, ib) in &idle {
                if ib <= a || ia >= b {
                    continue;
                }
                if ia > a {
                    out.push((a, ia));
                }
                a = a.max(ib);
            }
            if b > a {
                out.push((a, b));
            }
        }
        out
    }

    /// Every wait, as (waiter, resource, kind, waited for, from, to).
    fn waits(&self) -> Vec<(u64, String, Kind, Vec<u64>, u64, u64)> {
        let mut out = Vec::new();
        // Mutex holder per resource, from lock/unlock.
        let mut holder: HashMap<&str, u64> = HashMap::new();
        let mut last_unlock: HashMap<&str, u64> = HashMap::new();
        let mut last_signal: HashMap<&str, u64> = HashMap::new();
        // Open waits: (waiter, resource) → (kind, from, owner at start).
        let mut open: HashMap<(u64, &str), (Kind, u64, Option<u64>)> = HashMap::new();
        for ev in &self.instants {
            let r = ev.resource.as_str();
            match ev.name.as_str() {
                "blocked" => {
                    let owner = holder.get(r).copied().filter(|&o| o != ev.tid);
                    open.insert((ev.tid, r), (Kind::Mutex, ev.at, owner));
                }
                "lock" => {
                    if let Some((Kind::Mutex, from, owner)) = open.remove(&(ev.tid, r)) {
                        let owner = owner.or_else(|| last_unlock.get(r).copied());
                        let waited: Vec<u64> = owner.into_iter().collect();
                        out.push((ev.tid, r.to_string(), Kind::Mutex, waited, from, ev.at));
                    }
                    holder.insert(r, ev.tid);
                }
                "unlock" => {
                    if holder.get(r) == Some(&ev.tid) {
                        holder.remove(r);
                    }
                    last_unlock.insert(r, ev.tid);
                }
                "wait" => {
                    open.insert((ev.tid, r), (Kind::Condvar, ev.at, None));
                }
                "signal" | "broadcast" => {
                    last_signal.insert(r, ev.tid);
                }
                "woken" => {
                    if let Some((Kind::Condvar, from, _)) = open.remove(&(ev.tid, r)) {
                        let waited: Vec<u64> = last_signal.get(r).copied().into_iter().collect();
                        out.push((ev.tid, r.to_string(), Kind::Condvar, waited, from, ev.at));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn summary(&self, file: &Path) -> Summary {
        let waits = self.waits();
        // Mutex waits by their end, and the longest: the ones that overlap
        // a window are found without reading them all.
        let mut mutex_waits: Vec<usize> = (0..waits.len())
            .filter(|&i| waits[i].2 == Kind::Mutex)
            .collect();
        mutex_waits.sort_by_key(|&i| waits[i].5);
        let longest = mutex_waits
            .iter()
            .map(|&i| waits[i].5.saturating_sub(waits[i].4))
            .max()
            .unwrap_or(0);
        // Each thread's slices by start, with the longest: those that
        // meet a window start at most that long before it.
        let mut slices: BTreeMap<u64, (Vec<(u64, u64)>, u64)> = BTreeMap::new();
        for s in &self.slices {
            let e = slices.entry(s.tid).or_default();
            e.0.push((s.start, s.end));
            e.1 = e.1.max(s.end.saturating_sub(s.start));
        }
        for (v, _) in slices.values_mut() {
            v.sort_unstable();
        }
        let mut pending: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        let mut inversions = Vec::new();
        for (w, resource, kind, direct, from, to) in &waits {
            // The chain: what it waited for, and the owners of the mutexes
            // those blocked on during this wait (transitively), in passes
            // over the mutex waits that overlap it, in their order.
            let lo = mutex_waits.partition_point(|&i| waits[i].5 <= *from);
            let hi = mutex_waits
                .partition_point(|&i| waits[i].5 < to.saturating_add(longest))
                .max(lo);
            let mut overlap: Vec<usize> = mutex_waits[lo..hi]
                .iter()
                .copied()
                .filter(|&i| waits[i].4 < *to)
                .collect();
            overlap.sort_unstable();
            let mut waited = direct.clone();
            let mut grew = true;
            while grew {
                grew = false;
                for (w2, _, k2, owners, f2, t2) in overlap.iter().map(|&i| &waits[i]) {
                    if *k2 == Kind::Mutex && waited.contains(w2) && f2 < to && t2 > from {
                        for o in owners {
                            if o != w && !waited.contains(o) {
                                waited.push(*o);
                                grew = true;
                            }
                        }
                    }
                }
            }
            let waited = &waited;
            // When what it waited for had work: the windows that count.
            let windows: Vec<(u64, u64)> = match waited.first() {
                Some(&t) => {
                    let p = pending.entry(t).or_insert_with(|| self.pending(t));
                    // Sorted and disjoint: those that meet the wait.
                    let first = p.partition_point(|&(_, b)| b <= *from);
                    p[first..]
                        .iter()
                        .take_while(|&&(a, _)| a < *to)
                        .map(|&(a, b)| (a.max(*from), b.min(*to)))
                        .filter(|(a, b)| b > a)
                        .collect()
                }
                None => vec![(*from, *to)],
            };
            let mut ran: BTreeMap<u64, u64> = BTreeMap::new();
            for (&tid, (sl, longest)) in &slices {
                if tid == *w || waited.contains(&tid) || !self.lower(tid, *w) {
                    continue;
                }
                for &(wa, wb) in &windows {
                    let first =
                        sl.partition_point(|&(start, _)| start < wa.saturating_sub(*longest));
                    for &(start, end) in sl[first..].iter().take_while(|&&(start, _)| start < wb) {
                        let (a, b) = (start.max(wa), end.min(wb));
                        if b > a {
                            *ran.entry(tid).or_default() += b - a;
                        }
                    }
                }
            }
            if ran.is_empty() {
                continue;
            }
            let mut lower: Vec<(String, u64)> =
                ran.iter().map(|(&t, &ns)| (self.name(t), ns)).collect();
            lower.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let lower_ns: u64 = ran.values().sum();
            let delay_ns = to - from;
            inversions.push(Inversion {
                waiter: self.name(*w),
                resource: resource.clone(),
                kind: *kind,
                waited_for: waited.iter().map(|&t| self.name(t)).collect(),
                from_ms: ms_of(*from),
                to_ms: ms_of(*to),
                delay_ms: ms_of(delay_ns),
                lower_ran_ms: ms_of(lower_ns),
                lower: lower
                    .into_iter()
                    .map(|(thread, ns)| Ran {
                        thread,
                        ms: ms_of(ns),
                    })
                    .collect(),
                delay_ns,
                lower_ns,
                from_ns: *from,
            });
        }
        inversions.sort_by(|a, b| {
            b.delay_ns
                .cmp(&a.delay_ns)
                .then(b.lower_ns.cmp(&a.lower_ns))
                .then(a.from_ns.cmp(&b.from_ns))
        });
        // Per resource: mutexes first, then condition variables, by name.
        let mut per: BTreeMap<(Kind, &str), (usize, u64, u64, u64)> = BTreeMap::new();
        for inv in &inversions {
            let t = per.entry((inv.kind, &inv.resource)).or_default();
            t.0 += 1;
            t.1 += inv.delay_ns;
            t.2 = t.2.max(inv.delay_ns);
            t.3 += inv.lower_ns;
        }
        let resources = per
            .into_iter()
            .map(|((kind, r), (n, total, worst, lower))| Totals {
                resource: r.to_string(),
                kind,
                inversions: n,
                total_delay_ms: ms_of(total),
                worst_delay_ms: ms_of(worst),
                lower_ran_ms: ms_of(lower),
            })
            .collect();
        let lower_ns: u64 = inversions.iter().map(|i| i.lower_ns).sum();
        Summary {
            file: file.display().to_string(),
            waits: waits.len(),
            inversions,
            resources,
            lower_ran_ms: ms_of(lower_ns),
        }
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Mutex => "mutex",
        Kind::Condvar => "condvar",
    }
}

fn print_text(s: &Summary) {
    println!(
        "{}: {} waits, {} priority inversions, lower-priority threads ran {} ms",
        s.file,
        s.waits,
        s.inversions.len(),
        ms_text((s.lower_ran_ms * 1e6).round() as u64)
    );
    if s.inversions.is_empty() {
        return;
    }
    let mut t = Table::new([
        "waiter",
        "resource",
        "waited for",
        "from ms",
        "delay ms",
        "lower-priority threads that ran (ms)",
    ])
    .align(1, Align::Left)
    .align(2, Align::Left)
    .align(5, Align::Left);
    for inv in &s.inversions {
        let lower: Vec<String> = inv
            .lower
            .iter()
            .map(|r| format!("{} {}", r.thread, ms_text((r.ms * 1e6).round() as u64)))
            .collect();
        let waited = if inv.waited_for.is_empty() {
            "?".to_string()
        } else {
            inv.waited_for.join(", ")
        };
        t.row([
            inv.waiter.clone(),
            format!("{} ({})", inv.resource, kind_name(inv.kind)),
            waited,
            ms_text(inv.from_ns),
            ms_text(inv.delay_ns),
            lower.join(", "),
        ]);
    }
    println!();
    print!("{}", t.render());
    let mut r = Table::new([
        "resource",
        "kind",
        "inversions",
        "total delay ms",
        "worst delay ms",
        "lower ran ms",
    ])
    .align(1, Align::Left);
    for tot in &s.resources {
        r.row([
            tot.resource.clone(),
            kind_name(tot.kind).to_string(),
            tot.inversions.to_string(),
            format!("{:.3}", tot.total_delay_ms),
            format!("{:.3}", tot.worst_delay_ms),
            format!("{:.3}", tot.lower_ran_ms),
        ]);
    }
    println!();
    print!("{}", r.render());
}

/// `heir inversions`.
pub fn main(args: Args) -> CliResult {
    let path = &args.trace;
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::bad_input(anyhow!(
            "cannot read {}: {e}; expected {EXPECTED}",
            path.display()
        ))
    })?;
    let trace = parse(path, &text)?;
    let summary = trace.summary(path);
    if args.json {
        print_json(&summary).map_err(CliError::failure)?;
    } else {
        print_text(&summary);
    }
    Ok(())
}
