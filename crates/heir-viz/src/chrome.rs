//! Chrome trace-event JSON, streamed.
//!
//! # Layout
//! - process `CPUs` (pid 1): one track per CPU, named `CPU 0`, `CPU 1`, …;
//! - process `tasks` (pid 2): one track per thread, named after the thread,
//!   most urgent base first (`thread_sort_index`).
//!
//! Track ids (`tid`) are unique across both processes (CPU `c` is `10 + c`,
//! thread `i` is `10 + cpus + i`) so that no viewer merges a CPU with a
//! thread, and never equal a pid.
//!
//! # Events
//! - an `X` slice per execution, on the CPU's track and on the thread's track,
//!   named after the thread, with `args` `{"urgency", "base", "donor"}`
//!   (`donor` only while boosted; the task track adds `"cpu"`);
//! - `i` instants (thread scope) on the thread's track: `release`, `complete`
//!   or `deadline miss`, and `lock`, `blocked`, `unlock`, `wait`, `signal`,
//!   `broadcast`, `woken`, `push`, `pop`, `call`, `reply`, `barrier`,
//!   `suspend`, `resume` with `args.resource`;
//! - a `migrate` instant (category `sched`, `args` `{"from", "to"}`) where
//!   a thread's execution starts on another CPU than its previous one;
//! - at each boost whose donor is another thread: a zero-length `donate` slice
//!   on the donor's track and a zero-length `boost` slice on the boosted
//!   thread's track, joined by a flow (`s` then `f` with `"bp":"e"`, both
//!   binding to those enclosing slices, category `boost`). A donor is blocked
//!   when it donates, so the anchors never overlap its execution. Other
//!   urgency changes (a ceiling, the end of a boost) are `boost` instants.
//!
//! Timestamps (`ts`, `dur`) are µs printed with three decimals: ns precision,
//! no floating-point rounding.

use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};

use heir_core::Urgency;
use heir_report::{Observer, TraceEvent, TraceInfo};

use crate::style::{instant_name, json_str, us};

/// pid of the `CPUs` process.
const PID_CPUS: u32 = 1;
/// pid of the `tasks` process.
const PID_TASKS: u32 = 2;
/// First track id.
const TID_BASE: u64 = 10;

/// Why a trace could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TraceWriteError {
    /// The first I/O error the writer met; nothing was written after it.
    #[error("writing the trace: {0}")]
    Io(#[from] io::Error),
    /// [`Observer::finish`] was never called: the JSON is not closed.
    #[error("the trace is incomplete: the run never finished")]
    Unfinished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing written yet.
    Idle,
    /// Header written, events streaming.
    Streaming,
    /// Closed.
    Finished,
}

/// A thread as the trace names it.
#[derive(Clone, Debug)]
struct Track {
    /// The name as a JSON string literal.
    name: String,
    /// The base urgency, as a JSON string literal.
    base: String,
}

/// An [`Observer`] that streams Chrome trace-event JSON into a writer.
///
/// Memory stays flat: every event is formatted and written as it arrives
/// (through an internal [`BufWriter`]). See the module docs for the layout.
///
/// ```
/// use heir_viz::ChromeTrace;
/// use heir_report::{Observer, TraceInfo, ThreadInfo, TraceEvent};
/// use heir_core::Urgency;
///
/// let mut trace = ChromeTrace::new(Vec::new());
/// trace.start(&TraceInfo {
///     cpus: 1,
///     threads: vec![ThreadInfo { name: "A".into(), base: Urgency::fixed(10) }],
///     resources: vec![],
/// });
/// trace.event(&TraceEvent::Exec {
///     cpu: 0, thread: 0, start_ns: 0, end_ns: 1500,
///     urgency: Urgency::fixed(10), donor: None,
/// });
/// trace.finish(1500);
/// let json: serde_json::Value = serde_json::from_slice(&trace.into_inner()?).unwrap();
/// assert_eq!(json["displayTimeUnit"], "ns");
/// # Ok::<(), heir_viz::TraceWriteError>(())
/// ```
pub struct ChromeTrace<W: Write> {
    out: BufWriter<W>,
    error: Option<io::Error>,
    phase: Phase,
    /// No event written yet after the header (no comma needed).
    first: bool,
    cpus: u32,
    threads: Vec<Track>,
    /// Resource names as JSON string literals.
    resources: Vec<String>,
    next_flow: u64,
    /// Per thread, the CPU of its last execution slice.
    last_cpu: Vec<Option<u32>>,
    /// Scratch buffer for one event line.
    line: String,
    /// Extra `otherData` entries: key, JSON value.
    other: Vec<(String, String)>,
}

impl<W: Write> ChromeTrace<W> {
    /// A trace writing into `out`. Nothing is written before
    /// [`Observer::start`].
    pub fn new(out: W) -> Self {
        ChromeTrace {
            out: BufWriter::with_capacity(64 * 1024, out),
            error: None,
            phase: Phase::Idle,
            first: true,
            cpus: 0,
            threads: Vec::new(),
            resources: Vec::new(),
            next_flow: 1,
            last_cpu: Vec::new(),
            line: String::with_capacity(256),
            other: Vec::new(),
        }
    }

    /// Adds `key` with `json` (a JSON value, written as is) to the trace's
    /// `otherData` (beside `generator` and `end_us`): what a viewer shows
    /// as the trace's metadata (e.g. a real run's dropped events).
    pub fn set_metadata(&mut self, key: &str, json: String) {
        self.other.retain(|(k, _)| k != key);
        self.other.push((key.to_string(), json));
    }

    /// The first I/O error met so far, if any.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Number of flow arrows (donor → boosted thread) written so far.
    pub fn flows(&self) -> u64 {
        self.next_flow - 1
    }

    /// Flushes and returns the writer.
    ///
    /// # Errors
    /// The first I/O error met while writing (or flushing), or
    /// [`TraceWriteError::Unfinished`] when the run never called
    /// [`Observer::finish`] (the JSON would be truncated).
    pub fn into_inner(mut self) -> Result<W, TraceWriteError> {
        if let Some(e) = self.error.take() {
            return Err(TraceWriteError::Io(e));
        }
        if self.phase != Phase::Finished {
            return Err(TraceWriteError::Unfinished);
        }
        self.out
            .into_inner()
            .map_err(|e| TraceWriteError::Io(e.into_error()))
    }

    fn write_raw(&mut self, s: &str) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.out.write_all(s.as_bytes()) {
            self.error = Some(e);
        }
    }

    /// Writes `self.line` as one element of `traceEvents`, then clears it.
    fn emit_line(&mut self) {
        if self.error.is_none() {
            let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
            let r = self
                .out
                .write_all(sep)
                .and_then(|()| self.out.write_all(self.line.as_bytes()));
            if let Err(e) = r {
                self.error = Some(e);
            }
        }
        self.first = false;
        self.line.clear();
    }

    fn thread_tid(&self, thread: usize) -> u64 {
        TID_BASE + u64::from(self.cpus) + thread as u64
    }

    fn thread_name(&self, thread: usize) -> String {
        match self.threads.get(thread) {
            Some(t) => t.name.clone(),
            None => json_str(&format!("#{thread}")),
        }
    }

    fn thread_base(&self, thread: usize) -> String {
        match self.threads.get(thread) {
            Some(t) => t.base.clone(),
            None => json_str("?"),
        }
    }

    fn resource_name(&self, res: usize) -> String {
        match self.resources.get(res) {
            Some(r) => r.clone(),
            None => json_str(&format!("#{res}")),
        }
    }

    fn metadata(&mut self, pid: u32, tid: u64, name: &str, args: &str) {
        let _ = write!(
            self.line,
            r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"{name}","args":{args}}}"#
        );
        self.emit_line();
    }

    fn header(&mut self, info: &TraceInfo) {
        self.cpus = info.cpus;
        self.threads = info
            .threads
            .iter()
            .map(|t| Track {
                name: json_str(&t.name),
                base: json_str(&t.base.to_string()),
            })
            .collect();
        self.resources = info.resources.iter().map(|r| json_str(r)).collect();
        self.last_cpu = vec![None; info.threads.len()];
        self.write_raw(r#"{"traceEvents":["#);
        self.phase = Phase::Streaming;

        self.metadata(PID_CPUS, 0, "process_name", r#"{"name":"CPUs"}"#);
        self.metadata(PID_CPUS, 0, "process_sort_index", r#"{"sort_index":0}"#);
        for c in 0..info.cpus {
            let tid = TID_BASE + u64::from(c);
            self.metadata(
                PID_CPUS,
                tid,
                "thread_name",
                &format!(r#"{{"name":"CPU {c}"}}"#),
            );
            self.metadata(
                PID_CPUS,
                tid,
                "thread_sort_index",
                &format!(r#"{{"sort_index":{c}}}"#),
            );
        }
        self.metadata(PID_TASKS, 0, "process_name", r#"{"name":"tasks"}"#);
        self.metadata(PID_TASKS, 0, "process_sort_index", r#"{"sort_index":1}"#);
        // Most urgent base on top; ties keep scenario order.
        let mut order: Vec<usize> = (0..info.threads.len()).collect();
        order.sort_by(|&a, &b| {
            info.threads[b]
                .base
                .cmp(&info.threads[a].base)
                .then(a.cmp(&b))
        });
        for (rank, &i) in order.iter().enumerate() {
            let tid = self.thread_tid(i);
            let name = self.threads[i].name.clone();
            self.metadata(
                PID_TASKS,
                tid,
                "thread_name",
                &format!(r#"{{"name":{name}}}"#),
            );
            self.metadata(
                PID_TASKS,
                tid,
                "thread_sort_index",
                &format!(r#"{{"sort_index":{rank}}}"#),
            );
        }
    }

    fn exec(
        &mut self,
        cpu: u32,
        thread: usize,
        start_ns: u64,
        end_ns: u64,
        urgency: Urgency,
        donor: Option<usize>,
    ) {
        let name = self.thread_name(thread);
        let mut args = format!(
            r#""urgency":{},"base":{}"#,
            json_str(&urgency.to_string()),
            self.thread_base(thread)
        );
        if let Some(d) = donor.filter(|&d| d != thread) {
            let _ = write!(args, r#","donor":{}"#, self.thread_name(d));
        }
        let ts = us(start_ns);
        let dur = us(end_ns.saturating_sub(start_ns));
        let cpu_tid = TID_BASE + u64::from(cpu);
        let _ = write!(
            self.line,
            r#"{{"ph":"X","pid":{PID_CPUS},"tid":{cpu_tid},"ts":{ts},"dur":{dur},"name":{name},"cat":"exec","args":{{{args}}}}}"#
        );
        self.emit_line();
        let tid = self.thread_tid(thread);
        let _ = write!(
            self.line,
            r#"{{"ph":"X","pid":{PID_TASKS},"tid":{tid},"ts":{ts},"dur":{dur},"name":{name},"cat":"exec","args":{{{args},"cpu":{cpu}}}}}"#
        );
        self.emit_line();
        if let Some(last) = self.last_cpu.get_mut(thread) {
            let from = last.replace(cpu);
            if let Some(from) = from.filter(|&f| f != cpu) {
                let args = format!(r#""from":{from},"to":{cpu}"#);
                self.instant(thread, start_ns, "migrate", "sched", &args);
            }
        }
    }

    fn instant(&mut self, thread: usize, at_ns: u64, name: &str, cat: &str, args: &str) {
        let tid = self.thread_tid(thread);
        let ts = us(at_ns);
        let _ = write!(
            self.line,
            r#"{{"ph":"i","s":"t","pid":{PID_TASKS},"tid":{tid},"ts":{ts},"name":"{name}","cat":"{cat}","args":{{{args}}}}}"#
        );
        self.emit_line();
    }

    fn boost(&mut self, at_ns: u64, to: usize, donor: Option<usize>, urgency: Urgency) {
        let u = json_str(&urgency.to_string());
        match donor {
            Some(d) if d != to => {
                let id = self.next_flow;
                self.next_flow += 1;
                let ts = us(at_ns);
                let (d_tid, t_tid) = (self.thread_tid(d), self.thread_tid(to));
                let (d_name, t_name) = (self.thread_name(d), self.thread_name(to));
                // Anchor on the donor's track, then the flow start bound to it.
                let _ = write!(
                    self.line,
                    r#"{{"ph":"X","pid":{PID_TASKS},"tid":{d_tid},"ts":{ts},"dur":0,"name":"donate","cat":"boost","args":{{"to":{t_name},"urgency":{u}}}}}"#
                );
                self.emit_line();
                let _ = write!(
                    self.line,
                    r#"{{"ph":"s","id":{id},"pid":{PID_TASKS},"tid":{d_tid},"ts":{ts},"name":"boost","cat":"boost"}}"#
                );
                self.emit_line();
                // Anchor on the boosted thread's track, the flow end bound to it.
                let _ = write!(
                    self.line,
                    r#"{{"ph":"X","pid":{PID_TASKS},"tid":{t_tid},"ts":{ts},"dur":0,"name":"boost","cat":"boost","args":{{"donor":{d_name},"urgency":{u}}}}}"#
                );
                self.emit_line();
                let _ = write!(
                    self.line,
                    r#"{{"ph":"f","bp":"e","id":{id},"pid":{PID_TASKS},"tid":{t_tid},"ts":{ts},"name":"boost","cat":"boost"}}"#
                );
                self.emit_line();
            }
            Some(_) => {
                let args = format!(r#""urgency":{u},"cause":"ceiling""#);
                self.instant(to, at_ns, "boost", "boost", &args);
            }
            None => {
                let args = format!(r#""urgency":{u},"cause":"base""#);
                self.instant(to, at_ns, "boost", "boost", &args);
            }
        }
    }
}

impl<W: Write> Observer for ChromeTrace<W> {
    fn start(&mut self, info: &TraceInfo) {
        if self.phase == Phase::Idle {
            self.header(info);
        }
    }

    fn event(&mut self, ev: &TraceEvent) {
        if self.phase != Phase::Streaming {
            return;
        }
        match *ev {
            TraceEvent::Exec {
                cpu,
                thread,
                start_ns,
                end_ns,
                urgency,
                donor,
            } => self.exec(cpu, thread, start_ns, end_ns, urgency, donor),
            TraceEvent::Release {
                thread,
                at_ns,
                deadline_ns,
            } => {
                let args = match deadline_ns {
                    Some(d) => format!(r#""deadline_us":{}"#, us(d)),
                    None => String::new(),
                };
                self.instant(thread, at_ns, "release", "job", &args);
            }
            TraceEvent::Complete {
                thread,
                at_ns,
                response_ns,
                missed,
            } => {
                let args = format!(r#""response_us":{}"#, us(response_ns));
                let name = if missed { "deadline miss" } else { "complete" };
                self.instant(thread, at_ns, name, "job", &args);
            }
            TraceEvent::Instant {
                thread,
                at_ns,
                kind,
                resource,
            } => {
                let args = match resource {
                    Some(r) => format!(r#""resource":{}"#, self.resource_name(r)),
                    None => String::new(),
                };
                self.instant(thread, at_ns, instant_name(kind), "sync", &args);
            }
            TraceEvent::Boost {
                at_ns,
                to,
                donor,
                urgency,
            } => self.boost(at_ns, to, donor, urgency),
        }
    }

    fn finish(&mut self, end_ns: u64) {
        match self.phase {
            Phase::Finished => return,
            // A run with no start: still produce a valid (empty) trace.
            Phase::Idle => self.write_raw(r#"{"traceEvents":["#),
            Phase::Streaming => {}
        }
        let mut other = String::new();
        for (k, v) in &self.other {
            let _ = write!(other, ",{}:{v}", json_str(k));
        }
        let tail = format!(
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"heir\",\"end_us\":{}{other}}}}}\n",
            us(end_ns)
        );
        self.write_raw(&tail);
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                self.error = Some(e);
            }
        }
        self.phase = Phase::Finished;
    }
}
