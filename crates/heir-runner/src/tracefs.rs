//! The kernel's view of a run: a dedicated ftrace instance in tracefs
//! (`heir run --trace`, docs/TRACING.md).
//!
//! [`Instance::create`] finds tracefs (mounting it at `/sys/kernel/tracing`
//! when it is not mounted and the process may), makes the instance
//! `instances/heir-<pid>` — never touching the top-level instance, so a
//! user's own tracing goes on untouched — and sets it up with tracing off:
//! `trace_clock` `mono` (`CLOCK_MONOTONIC`, the clock of heir's own
//! timestamps), `buffer_size_kb` per CPU, `options/overwrite` 0 (a full
//! buffer drops the newest events and counts them, keeping the run's
//! beginning), and the events [`EVENTS`]. [`Instance::start`] limits the
//! events to the run's threads (`set_event_pid`: a `sched_switch` is kept
//! when either side is one of them), turns tracing on and opens the
//! instance's `trace_marker`, where heir-rt writes its own events while the
//! run goes on ([`mark`]: lock, wait, signal, boosts, releases, …; one
//! `write` each, no lock in user space). [`Instance::collect`] stops
//! tracing and reads the `trace` file (the kernel's text format, parsed by
//! [`parse_text`]) and each CPU's `stats` (events the kernel dropped).
//! Dropping the instance removes it (`rmdir`); SIGINT, SIGTERM and SIGHUP
//! remove it too while it exists (the handler closes the marker and
//! removes the directory, then the signal does what it did before), and
//! an instance left by a process that no longer exists is removed by the
//! next one.
//!
//! The text format prints timestamps with µs precision; heir's markers
//! carry their own `CLOCK_MONOTONIC` ns.

use std::ffi::CString;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

use heir::sys;

/// heir-rt's trace hook, which [`Instance::start`] points at the
/// instance's `trace_marker`, and the markers' codes.
pub use heir::trace::{kernel_prio, mark, mark_cond, parse_urgency, tracing, urgency_code};

/// The scheduler events the instance records.
pub const EVENTS: [&str; 5] = [
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_pi_setprio",
    "sched/sched_migrate_task",
];

/// Where tracefs is mounted when nobody mounted it.
pub const TRACEFS_MOUNT: &str = "/sys/kernel/tracing";

/// Why the kernel's trace could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// tracefs is not there, or the process may not use it.
    #[error("cannot trace the kernel: {0}")]
    Unavailable(String),
    /// A tracefs file could not be read or written.
    #[error("tracefs: {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TraceError + '_ {
    move |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An instance's CPUs (`per_cpu/cpuN`), ascending.
pub(crate) fn instance_cpus(per_cpu: &Path) -> Result<Vec<u32>, TraceError> {
    let mut v: Vec<u32> = fs::read_dir(per_cpu)
        .map_err(io(per_cpu))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("cpu")
                .and_then(|n| n.parse().ok())
        })
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// A dedicated ftrace instance (see the module docs). Removed on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    marker: Option<File>,
    /// Its slot in [`CLEANUP_DIRS`], if it got one.
    slot: Option<usize>,
}

/// The instances' directories for the signal handler (leaked C strings;
/// null where there is none): a run's traced instance and its watch.
static CLEANUP_DIRS: [AtomicPtr<libc::c_char>; 2] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];

/// The tracefs mount point: one from `/proc/mounts`, else tracefs mounted
/// at [`TRACEFS_MOUNT`].
fn tracefs_root() -> Result<PathBuf, TraceError> {
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (_, Some(dir), Some(kind)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if kind == "tracefs" && Path::new(dir).join("instances").is_dir() {
            return Ok(PathBuf::from(dir));
        }
    }
    let target = Path::new(TRACEFS_MOUNT);
    if !target.is_dir() {
        return Err(TraceError::Unavailable(format!(
            "tracefs is not mounted and {TRACEFS_MOUNT} does not exist (a kernel without CONFIG_TRACING?)"
        )));
    }
    match sys::mount_tracefs(TRACEFS_MOUNT) {
        Ok(()) => Ok(target.to_path_buf()),
        Err(e) => Err(TraceError::Unavailable(format!(
            "tracefs is not mounted and mounting it at {TRACEFS_MOUNT} failed ({}): run as root, or mount it first (mount -t tracefs nodev {TRACEFS_MOUNT})",
            sys::errno_name(e)
        ))),
    }
}

/// Removes the instances left by heir processes that no longer exist
/// (killed while tracing: their buffers stay allocated, and tracing on,
/// until removed). Any heir command calls it at its start; it never mounts
/// tracefs, and does nothing where tracefs is not mounted or the process
/// may not write it.
pub fn remove_stale_instances() {
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        if let (_, Some(dir), Some("tracefs")) = (f.next(), f.next(), f.next()) {
            remove_stale(&Path::new(dir).join("instances"));
        }
    }
}

/// Removes `instances/heir-<pid>` (and `heir-<pid>-watch`) directories
/// whose process is gone.
fn remove_stale(instances: &Path) {
    let Ok(dir) = fs::read_dir(instances) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // `heir-<pid>` and `heir-<pid>-watch`.
        let Some(pid) = name.strip_prefix("heir-").and_then(|p| {
            p.split('-')
                .next()
                .filter(|n| !n.is_empty())
                .and_then(|n| n.parse::<u32>().ok())
        }) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), TraceError> {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(io(path))?;
    f.write_all(text.as_bytes()).map_err(io(path))
}

impl Instance {
    /// Makes and sets up the instance `heir-<pid>` with `buffer_kb` KiB of
    /// buffer per CPU, tracing off (see the module docs).
    ///
    /// # Errors
    /// [`TraceError::Unavailable`] when tracefs cannot be found or mounted
    /// or the instance cannot be made (with what to do), [`TraceError::Io`]
    /// when setting it up fails; nothing is left behind.
    pub fn create(buffer_kb: u32) -> Result<Instance, TraceError> {
        let inst = Instance::make(&format!("heir-{}", std::process::id()))?;
        inst.setup(buffer_kb)?;
        Ok(inst)
    }

    /// Makes and sets up the instance `heir-<pid>-watch`, tracing off: the
    /// kernel's scheduler records of *every* thread on the machine's
    /// `cpus` (`sched_switch` recorded there, wake-ups and migrations to
    /// or from them), with no pid filter — what measures a run's
    /// disturbance ([`crate::run::disturb`]). `buffer_kb` per CPU.
    ///
    /// # Errors
    /// As [`Instance::create`].
    pub fn create_watch(buffer_kb: u32, cpus: &[u32]) -> Result<Instance, TraceError> {
        let inst = Instance::make(&format!("heir-{}-watch", std::process::id()))?;
        inst.setup_watch(buffer_kb, cpus)?;
        Ok(inst)
    }

    /// Makes the directory `instances/NAME` (removing stale ones first).
    fn make(name: &str) -> Result<Instance, TraceError> {
        let root = tracefs_root()?;
        let instances = root.join("instances");
        remove_stale(&instances);
        let dir = instances.join(name);
        if dir.exists() {
            // Left by an earlier run of this process that could not remove it.
            let _ = fs::remove_dir(&dir);
        }
        fs::create_dir(&dir).map_err(|e| {
            TraceError::Unavailable(format!(
                "cannot create the ftrace instance {}: {e} (run as root)",
                dir.display()
            ))
        })?;
        let slot = arm_cleanup(&dir);
        Ok(Instance {
            dir,
            marker: None,
            slot,
        })
    }

    fn setup_common(&self, buffer_kb: u32) -> Result<(), TraceError> {
        let d = &self.dir;
        write_file(&d.join("tracing_on"), "0")?;
        write_file(&d.join("trace_clock"), "mono")?;
        write_file(&d.join("buffer_size_kb"), &buffer_kb.max(64).to_string())?;
        write_file(&d.join("options/overwrite"), "0")
    }

    fn setup_watch(&self, buffer_kb: u32, cpus: &[u32]) -> Result<(), TraceError> {
        self.setup_common(buffer_kb)?;
        let any = |field: &str| {
            cpus.iter()
                .map(|c| format!("{field} == {c}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let migrate = format!("{} || {}", any("orig_cpu"), any("dest_cpu"));
        for (ev, filter) in [
            ("sched/sched_switch", any("common_cpu")),
            ("sched/sched_wakeup", any("target_cpu")),
            ("sched/sched_wakeup_new", any("target_cpu")),
            ("sched/sched_migrate_task", migrate),
        ] {
            let e = self.dir.join("events").join(ev);
            if !cpus.is_empty() {
                write_file(&e.join("filter"), &filter)?;
            }
            write_file(&e.join("enable"), "1")?;
        }
        Ok(())
    }

    /// Turns recording on, without a pid filter or heir's markers (a watch
    /// instance: [`Instance::create_watch`]).
    ///
    /// # Errors
    /// A tracefs file that cannot be written.
    pub fn start_watch(&mut self) -> Result<(), TraceError> {
        write_file(&self.dir.join("tracing_on"), "1")
    }

    fn setup(&self, buffer_kb: u32) -> Result<(), TraceError> {
        self.setup_common(buffer_kb)?;
        let d = &self.dir;
        for ev in EVENTS {
            write_file(&d.join("events").join(ev).join("enable"), "1")?;
        }
        Ok(())
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the events of `tids` (and heir's markers) from now on.
    ///
    /// # Errors
    /// A tracefs file that cannot be written or opened.
    pub fn start(&mut self, tids: &[i32]) -> Result<(), TraceError> {
        let mut list = String::new();
        for t in tids.iter().filter(|&&t| t > 0) {
            let _ = write!(list, "{t} ");
        }
        write_file(&self.dir.join("set_event_pid"), list.trim_end())?;
        let path = self.dir.join("trace_marker");
        let marker = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        write_file(&self.dir.join("tracing_on"), "1")?;
        heir::trace::set_sink(std::os::fd::AsRawFd::as_raw_fd(&marker));
        self.marker = Some(marker);
        Ok(())
    }

    /// Records the events of `pid` and of every thread and process it
    /// creates from now on (`options/event-fork`: the kernel adds each
    /// child to `set_event_pid`), with `sched_process_fork` to tell them
    /// apart: what `heir exec --trace` records of a program it starts.
    ///
    /// # Errors
    /// As [`Instance::start`].
    pub fn start_following(&mut self, pid: i32) -> Result<(), TraceError> {
        write_file(
            &self
                .dir
                .join("events/sched/sched_process_fork")
                .join("enable"),
            "1",
        )?;
        write_file(&self.dir.join("options/event-fork"), "1")?;
        self.start(&[pid])
    }

    /// Stops recording (heir's markers first).
    pub fn stop(&mut self) {
        if self.marker.is_some() {
            heir::trace::take_sink();
        }
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        self.marker = None;
    }

    /// Stops recording and reads what was recorded: the `trace` file's
    /// text and the events each CPU dropped.
    ///
    /// # Errors
    /// A file that cannot be read.
    pub fn collect(&mut self) -> Result<Recorded, TraceError> {
        self.stop();
        let mut dropped = Vec::new();
        let per_cpu = self.dir.join("per_cpu");
        for c in instance_cpus(&per_cpu)? {
            let path = per_cpu.join(format!("cpu{c}")).join("stats");
            let text = fs::read_to_string(&path).map_err(io(&path))?;
            let n = stats_dropped(&text);
            if n > 0 {
                dropped.push((c, n));
            }
        }
        let path = self.dir.join("trace");
        let mut text = String::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(io(&path))?;
        Ok(Recorded { text, dropped })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
        disarm_cleanup(self.slot);
        let _ = fs::remove_dir(&self.dir);
    }
}

/// What an instance recorded.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// The instance's `trace` file.
    pub text: String,
    /// Per CPU with a non-zero count, the events the kernel dropped or
    /// overwrote (`per_cpu/cpuN/stats`: `overrun`, `commit overrun`,
    /// `dropped events`).
    pub dropped: Vec<(u32, u64)>,
}

/// The events lost according to one CPU's `stats` file.
pub fn stats_dropped(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "overrun" | "commit overrun" | "dropped events"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

extern "C" fn cleanup_handler(sig: libc::c_int) {
    let fd = heir::trace::take_sink();
    if fd >= 0 {
        // SAFETY: close(2) is async-signal-safe; the fd is the marker's
        // (its File is not used after this: the process is ending).
        unsafe { libc::close(fd) };
    }
    for slot in &CLEANUP_DIRS {
        let dir = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !dir.is_null() {
            // SAFETY: `dir` is a leaked, NUL-terminated C string (never
            // freed); rmdir(2) is async-signal-safe.
            unsafe { libc::rmdir(dir) };
        }
    }
    // SA_RESETHAND restored the default action: do it.
    // SAFETY: raise(3) is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// The signals whose default action ends the process and that a user sends.
const CLEANUP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Removes `dir` on SIGINT/SIGTERM/SIGHUP from now on (for each of them
/// whose action is the default, or already ours); its slot in
/// [`CLEANUP_DIRS`], `None` when none is free.
fn arm_cleanup(dir: &Path) -> Option<usize> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let raw = c.into_raw();
    let Some(slot) = CLEANUP_DIRS.iter().position(|s| {
        s.compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    }) else {
        // SAFETY: `raw` came from `CString::into_raw` just above and was
        // not stored anywhere.
        drop(unsafe { CString::from_raw(raw) });
        return None;
    };
    for sig in CLEANUP_SIGNALS {
        // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, no
        // flags, empty mask).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `old`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            continue;
        }
        // SAFETY: as above.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = cleanup_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        act.sa_flags = libc::SA_RESETHAND;
        // SAFETY: `act` is a live sigaction whose handler only makes
        // async-signal-safe calls.
        unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
    }
    Some(slot)
}

/// Frees `slot` of [`CLEANUP_DIRS`]; with none left in use, gives the
/// signals back their default action (where ours is set).
fn disarm_cleanup(slot: Option<usize>) {
    let dir = slot
        .and_then(|i| CLEANUP_DIRS.get(i))
        .map_or(std::ptr::null_mut(), |s| {
            s.swap(std::ptr::null_mut(), Ordering::AcqRel)
        });
    let in_use = CLEANUP_DIRS
        .iter()
        .any(|s| !s.load(Ordering::Acquire).is_null());
    for sig in CLEANUP_SIGNALS.into_iter().filter(|_| !in_use) {
        // SAFETY: as in `arm_cleanup`.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reads the current action into `old`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        if old.sa_sigaction == cleanup_handler as extern "C" fn(libc::c_int) as libc::sighandler_t {
            // SAFETY: an all-zero sigaction is SIG_DFL.
            let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `dfl` is a live sigaction.
            unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
        }
    }
    if !dir.is_null() {
        // SAFETY: `dir` came from `CString::into_raw` in `arm_cleanup` and
        // was swapped out, so nothing else frees it.
        drop(unsafe { CString::from_raw(dir) });
    }
}

/// One of heir's markers (`heir …` in `trace_marker`), parsed. Times are
/// `CLOCK_MONOTONIC` ns; the writing thread is the record's pid.
#[derive(Clone, Debug, PartialEq)]
pub enum Marker {
    /// `i KIND AT RES`: an instant; `RES` is `r<resource index>`,
    /// `c<condition variable id>` or `-`.
    Instant {
        /// The instant's trace name (`lock`, `wait`, …).
        kind: String,
        /// When.
        at: u64,
        /// Its object.
        res: MarkRes,
    },
    /// `rel AT DL|-`: a job released (at `AT`, maybe earlier than the
    /// marker), with its deadline.
    Release {
        /// Release time.
        at: u64,
        /// Absolute deadline.
        deadline: Option<u64>,
    },
    /// `done AT RESPONSE MISSED`: a job completed.
    Done {
        /// Completion time.
        at: u64,
        /// Response time (ns).
        response: u64,
        /// After its deadline.
        missed: bool,
    },
    /// `boost AT TID DONOR URGENCY`: the engine changed thread `tid`'s
    /// effective urgency; `DONOR` is the donor's tid, `-` (its own base)
    /// or `=` (an object's floor: a ceiling).
    Boost {
        /// When.
        at: u64,
        /// The thread.
        tid: i32,
        /// Where the urgency comes from.
        donor: MarkDonor,
        /// The new effective urgency.
        urgency: heir_core::Urgency,
    },
    /// `prio AT TID PRIO`: heir-rt's `sched_setattr` of `tid` succeeded;
    /// `PRIO` in the kernel's terms (99 − rtprio, 120 + nice, -1 deadline).
    Prio {
        /// When.
        at: u64,
        /// The thread.
        tid: i32,
        /// The kernel priority it now has.
        prio: i32,
    },
}

/// The object of an instant marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkRes {
    /// None.
    None,
    /// A scenario resource, by index.
    Resource(usize),
    /// A condition variable, by engine id.
    Cond(u32),
}

/// The donor of a boost marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkDonor {
    /// Back to the thread's own base.
    Base,
    /// An object's floor (a ceiling).
    Floor,
    /// Another thread, by tid.
    Tid(i32),
}

impl Marker {
    /// Parses a marker's text (after `heir `).
    pub fn parse(s: &str) -> Option<Marker> {
        let mut f = s.split_whitespace();
        let num = |x: Option<&str>| x.and_then(|v| v.parse::<u64>().ok());
        match f.next()? {
            "i" => {
                let kind = f.next()?.to_string();
                let at = num(f.next())?;
                let r = f.next()?;
                let res = if let Some(i) = r.strip_prefix('r') {
                    MarkRes::Resource(i.parse().ok()?)
                } else if let Some(c) = r.strip_prefix('c') {
                    MarkRes::Cond(c.parse().ok()?)
                } else {
                    MarkRes::None
                };
                Some(Marker::Instant { kind, at, res })
            }
            "rel" => {
                let at = num(f.next())?;
                let deadline = num(f.next());
                Some(Marker::Release { at, deadline })
            }
            "done" => Some(Marker::Done {
                at: num(f.next())?,
                response: num(f.next())?,
                missed: f.next()? == "1",
            }),
            "boost" => {
                let at = num(f.next())?;
                let tid = f.next()?.parse().ok()?;
                let donor = match f.next()? {
                    "-" => MarkDonor::Base,
                    "=" => MarkDonor::Floor,
                    d => MarkDonor::Tid(d.parse().ok()?),
                };
                let urgency = parse_urgency(f.next()?)?;
                Some(Marker::Boost {
                    at,
                    tid,
                    donor,
                    urgency,
                })
            }
            "prio" => Some(Marker::Prio {
                at: num(f.next())?,
                tid: f.next()?.parse().ok()?,
                prio: f.next()?.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// One record of the `trace` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The CPU it was recorded on.
    pub cpu: u32,
    /// Its timestamp (ns of `CLOCK_MONOTONIC`, µs precision).
    pub ts_ns: u64,
    /// The current thread then (the marker's writer).
    pub pid: i32,
    /// What it is.
    pub kind: RecordKind,
}

/// The kinds of record heir reads.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordKind {
    /// `sched_switch`.
    Switch {
        /// The thread leaving the CPU.
        prev_pid: i32,
        /// Its name (`prev_comm`).
        prev_comm: String,
        /// Its kernel priority.
        prev_prio: i32,
        /// It is still runnable (`prev_state=R`, preempted).
        prev_runnable: bool,
        /// The thread taking the CPU.
        next_pid: i32,
        /// Its kernel priority.
        next_prio: i32,
        /// Its name (`next_comm`).
        next_comm: String,
    },
    /// `sched_wakeup` / `sched_wakeup_new`.
    Wakeup {
        /// The woken thread.
        pid: i32,
        /// Its kernel priority.
        prio: i32,
        /// The CPU it will run on (`target_cpu`).
        target_cpu: Option<u32>,
    },
    /// `sched_pi_setprio`: the kernel's PI boost (or its end).
    PiSetprio {
        /// The thread.
        pid: i32,
        /// Its new kernel priority.
        newprio: i32,
    },
    /// `sched_migrate_task`.
    Migrate {
        /// The thread.
        pid: i32,
        /// From CPU.
        orig_cpu: u32,
        /// To CPU.
        dest_cpu: u32,
    },
    /// A heir marker.
    Marker(Marker),
}

/// The `trace` file, parsed: its records in file order (the kernel's
/// order, merged across CPUs by full-precision timestamp), and the events
/// it says were lost (`CPU:N [LOST M EVENTS]` lines).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The records heir reads (others are skipped).
    pub records: Vec<Record>,
    /// Events the file says were lost.
    pub lost: u64,
    /// Lines that looked like records but could not be read.
    pub unreadable: u64,
}

/// The integer after `key=` in `s` (the last occurrence: a `comm` before it
/// may contain anything).
fn field(s: &str, key: &str) -> Option<i64> {
    let i = s.rfind(key)? + key.len();
    let rest = &s[i..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Parses the text of an instance's `trace` file (the default
/// `trace_options`: `TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS`).
pub fn parse_text(text: &str) -> Parsed {
    let mut out = Parsed::default();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(i) = line.find("[LOST ") {
            if let Some(n) = line[i + 6..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                out.lost += n;
            }
            continue;
        }
        match parse_line(line) {
            Some(Some(r)) => out.records.push(r),
            Some(None) => {}
            None => out.unreadable += 1,
        }
    }
    out
}

/// One line: `None` if unreadable, `Some(None)` for an event heir skips.
fn parse_line(line: &str) -> Option<Option<Record>> {
    // `TASK-PID [CPU]`: the first `[digits]`.
    let mut search = 0;
    let (open, close) = loop {
        let o = search + line[search..].find('[')?;
        let c = o + line[o..].find(']')?;
        if c > o + 1 && line[o + 1..c].bytes().all(|b| b.is_ascii_digit()) {
            break (o, c);
        }
        search = o + 1;
    };
    let task = line[..open].trim_end();
    let pid: i32 = task.rsplit_once('-')?.1.parse().ok()?;
    let cpu: u32 = line[open + 1..close].parse().ok()?;
    let rest = &line[close + 1..];
    // FLAGS TIMESTAMP: EVENT: FIELDS
    let mut pos = 0;
    let mut ts_ns = None;
    for tok in rest.split(' ') {
        pos += tok.len() + 1;
        if tok.is_empty() {
            continue;
        }
        if let Some(t) = tok.strip_suffix(':') {
            ts_ns = Some(parse_ts(t)?);
            break;
        }
    }
    let ts_ns = ts_ns?;
    let rest = rest.get(pos..)?.trim_start();
    let (event, fields) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    let n = |k: &str| field(fields, k);
    let kind = match event {
        "sched_switch" => {
            let (l, r) = fields.split_once(" ==> ")?;
            let state = l.rsplit_once("prev_state=")?.1.trim();
            RecordKind::Switch {
                prev_pid: field(l, " prev_pid=")? as i32,
                prev_comm: l
                    .split_once("prev_comm=")
                    .and_then(|(_, c)| c.rsplit_once(" prev_pid="))
                    .map_or_else(String::new, |(c, _)| c.to_string()),
                prev_prio: field(l, " prev_prio=")? as i32,
                prev_runnable: state.starts_with('R'),
                next_pid: field(r, " next_pid=")? as i32,
                next_prio: field(r, " next_prio=")? as i32,
                next_comm: r
                    .strip_prefix("next_comm=")
                    .and_then(|c| c.rsplit_once(" next_pid="))
                    .map_or_else(String::new, |(c, _)| c.to_string()),
            }
        }
        "sched_wakeup" | "sched_wakeup_new" => RecordKind::Wakeup {
            pid: n(" pid=")? as i32,
            prio: n(" prio=")? as i32,
            target_cpu: n(" target_cpu=").map(|c| c as u32),
        },
        "sched_pi_setprio" => RecordKind::PiSetprio {
            pid: n(" pid=")? as i32,
            newprio: n(" newprio=")? as i32,
        },
        "sched_migrate_task" => RecordKind::Migrate {
            pid: n(" pid=")? as i32,
            orig_cpu: n(" orig_cpu=")? as u32,
            dest_cpu: n(" dest_cpu=")? as u32,
        },
        "tracing_mark_write" => match fields.trim_end().strip_prefix("heir ") {
            Some(m) => match Marker::parse(m) {
                Some(m) => RecordKind::Marker(m),
                None => return None,
            },
            None => return Some(None),
        },
        _ => return Some(None),
    };
    Some(Some(Record {
        cpu,
        ts_ns,
        pid,
        kind,
    }))
}

/// `SECONDS.MICROS` → ns.
fn parse_ts(t: &str) -> Option<u64> {
    let (s, frac) = t.split_once('.').unwrap_or((t, ""));
    let s: u64 = s.parse().ok()?;
    let mut ns: u64 = 0;
    let mut digits = 0;
    for b in frac.bytes().take(9) {
        if !b.is_ascii_digit() {
            return None;
        }
        ns = ns * 10 + u64::from(b - b'0');
        digits += 1;
    }
    for _ in digits..9 {
        ns *= 10;
    }
    s.checked_mul(1_000_000_000)?.checked_add(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 6/6   #P:2
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          <idle>-0       [001] d..2.  5331.123456: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=Task-1 x next_pid=1234 next_prio=69
     Task-1 x-1234    [001] .....  5331.123460: tracing_mark_write: heir i wait 5331123459876 c7
     Task-1 x-1234    [001] d..2.  5331.123470: sched_switch: prev_comm=Task-1 x prev_pid=1234 prev_prio=69 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
        Producer-1235    [000] d..3.  5331.200000: sched_pi_setprio: comm=Producer pid=1235 oldprio=89 newprio=69
        Producer-1235    [000] .....  5331.200001: tracing_mark_write: heir boost 5331200000500 1235 1234 f30
        Producer-1235    [000] .....  5331.200002: tracing_mark_write: not heir's
CPU:0 [LOST 12 EVENTS]
        Producer-1235    [000] d..3.  5331.300000: sched_wakeup: comm=Task-1 x pid=1234 prio=69 target_cpu=001
";

    #[test]
    fn parses_the_text_format() {
        let p = parse_text(SAMPLE);
        assert_eq!(p.lost, 12);
        assert_eq!(p.unreadable, 0);
        assert_eq!(p.records.len(), 6);
        assert_eq!(
            p.records[0],
            Record {
                cpu: 1,
                ts_ns: 5_331_123_456_000,
                pid: 0,
                kind: RecordKind::Switch {
                    prev_pid: 0,
                    prev_comm: "swapper/1".into(),
                    prev_prio: 120,
                    prev_runnable: true,
                    next_pid: 1234,
                    next_prio: 69,
                    next_comm: "Task-1 x".into()
                }
            }
        );
        assert_eq!(p.records[1].pid, 1234);
        assert_eq!(
            p.records[1].kind,
            RecordKind::Marker(Marker::Instant {
                kind: "wait".into(),
                at: 5_331_123_459_876,
                res: MarkRes::Cond(7)
            })
        );
        assert!(matches!(
            p.records[2].kind,
            RecordKind::Switch {
                prev_runnable: false,
                ..
            }
        ));
        assert_eq!(
            p.records[3].kind,
            RecordKind::PiSetprio {
                pid: 1235,
                newprio: 69
            }
        );
        assert_eq!(
            p.records[4].kind,
            RecordKind::Marker(Marker::Boost {
                at: 5_331_200_000_500,
                tid: 1235,
                donor: MarkDonor::Tid(1234),
                urgency: heir_core::Urgency::fixed(30)
            })
        );
        assert_eq!(
            p.records[5].kind,
            RecordKind::Wakeup {
                pid: 1234,
                prio: 69,
                target_cpu: Some(1)
            }
        );
    }

    #[test]
    fn markers_round_trip() {
        for (text, m) in [
            (
                "rel 10 20",
                Marker::Release {
                    at: 10,
                    deadline: Some(20),
                },
            ),
            (
                "rel 10 -",
                Marker::Release {
                    at: 10,
                    deadline: None,
                },
            ),
            (
                "done 30 20 1",
                Marker::Done {
                    at: 30,
                    response: 20,
                    missed: true,
                },
            ),
            (
                "boost 5 12 - n-3",
                Marker::Boost {
                    at: 5,
                    tid: 12,
                    donor: MarkDonor::Base,
                    urgency: heir_core::Urgency::other(-3),
                },
            ),
            (
                "prio 5 12 69",
                Marker::Prio {
                    at: 5,
                    tid: 12,
                    prio: 69,
                },
            ),
            (
                "i lock 7 r2",
                Marker::Instant {
                    kind: "lock".into(),
                    at: 7,
                    res: MarkRes::Resource(2),
                },
            ),
        ] {
            assert_eq!(Marker::parse(text), Some(m), "{text}");
        }
        assert_eq!(Marker::parse("boost x"), None);
        let u = heir_core::Urgency::deadline(123);
        assert_eq!(parse_urgency(&urgency_code(u).to_string()), Some(u));
    }

    #[test]
    fn stats_count_every_kind_of_loss() {
        let s = "entries: 5\noverrun: 2\ncommit overrun: 1\nbytes: 9\ndropped events: 4\nread events: 0\n";
        assert_eq!(stats_dropped(s), 7);
    }
}
