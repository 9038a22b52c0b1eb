//! `heir exec [OPTIONS] -- PROGRAM [ARGS…]`: runs an unmodified,
//! dynamically linked pthread program with heir's interposition library
//! (`libheir_preload.so`, found beside the `heir` binary) in `LD_PRELOAD`,
//! then prints what was interposed (docs/EXEC.md).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, Context};
use clap::ValueEnum;
use serde_json::{Map, Value};

use crate::{CliError, CliResult};

/// The library's file name.
pub const PRELOAD: &str = "libheir_preload.so";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MutexMode {
    /// heir's PI mutexes (the kernel's PI futex, chains known to heir).
    Inherit,
    /// glibc's mutexes as they are (condition variables stay glibc's too).
    Keep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CondMode {
    /// heir's PI condition variables; a thread that signals becomes a helper.
    Learn,
    /// heir's condition variables without helpers (no boost).
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// pthread mutexes: heir's PI mutexes, or glibc's as they are.
    #[arg(long, value_enum, default_value = "inherit")]
    pub mutex: MutexMode,
    /// pthread condition variables: helpers learned from who signals, or none.
    #[arg(long, value_enum, default_value = "learn")]
    pub cond: CondMode,
    /// pthread barriers: waiters lend their priority to the threads not yet
    /// arrived (gang priority management), or glibc's barriers.
    #[arg(long, value_enum, default_value = "on")]
    pub gpm: OnOff,
    /// Most helpers learned per condition variable (1..=8).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub helpers: u64,
    /// A learned helper is dropped this long after its last signal (ms).
    #[arg(long, default_value_t = 1000)]
    pub helper_ttl_ms: u64,
    /// A barrier's waiter lends after waiting this long (µs; 0: at once).
    #[arg(long, default_value_t = 10_000)]
    pub gpm_grace_us: u64,
    /// Print the summary as one JSON object on stdout after the program's
    /// own output (the text summary still goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Record the kernel's trace of the program's threads (and of their
    /// children) with heir's events, as `heir run --trace` does, and write
    /// it as a Chrome trace (docs/EXEC.md, "Trace"). Needs root (tracefs).
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// Write an SVG Gantt chart of the same trace.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<PathBuf>,
    /// Also write the kernel's records of the program's threads (with
    /// heir's markers) as a trace.dat in trace-cmd's format, for
    /// `trace-cmd report` and KernelShark (docs/TRACING.md).
    #[arg(long, value_name = "OUT.dat")]
    pub trace_dat: Option<PathBuf>,
    /// The ftrace instance's buffer per CPU, in KiB.
    #[arg(long, default_value_t = crate::exec_trace::DEFAULT_BUFFER_KB)]
    pub trace_buffer_kb: u32,
    /// Write the program as observed as a heir scenario (rt-app JSON):
    /// its threads, the CPU time between their synchronisation
    /// operations, its mutexes, condition variables (with the helpers
    /// seen signalling), barriers, semaphores and periods (docs/EXEC.md,
    /// "Scenario").
    #[arg(long, value_name = "OUT.json")]
    pub scenario: Option<PathBuf>,
    /// The interposition library (default: HEIR_PRELOAD, else
    /// libheir_preload.so beside the heir binary).
    #[arg(long)]
    pub preload: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

/// Where the library is: `--preload`, `HEIR_PRELOAD`, else beside the
/// binary (`target/{debug,release}`), else its `deps/`, else where an
/// installed heir keeps it: `PREFIX/lib/MULTIARCH/heir/` (the .deb:
/// `/usr/lib/x86_64-linux-gnu/heir/`) or `PREFIX/lib/heir/`.
fn find_preload(flag: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("HEIR_PRELOAD").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("where is the heir binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let lib = dir.join("../lib");
    let multiarch = lib.join(format!("{}-linux-gnu/heir", std::env::consts::ARCH));
    for cand in [
        dir.join(PRELOAD),
        dir.join("deps").join(PRELOAD),
        multiarch.join(PRELOAD),
        lib.join("heir").join(PRELOAD),
    ] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    Err(CliError::bad_input(anyhow!(
        "{PRELOAD} is not beside {} (build it: cargo build -p heir-preload, with the same profile), \
         and neither --preload nor HEIR_PRELOAD names it",
        exe.display()
    )))
}

/// The counters of the summary lines, added up.
const COUNTS: [(&str, &str); 17] = [
    ("mutexes", "mutexes on heir's PI mutexes"),
    ("mutexes_glibc", "mutexes left to glibc"),
    ("conds", "condition variables on heir's"),
    ("conds_glibc", "condition variables left to glibc"),
    ("cond_waits", "condition-variable waits"),
    ("cond_fallback_waits", "waits with a glibc mutex (no boost)"),
    ("barriers", "barriers on heir's"),
    ("barriers_glibc", "barriers left to glibc"),
    ("helpers_learned", "helpers learned"),
    ("helpers_dropped", "helpers dropped"),
    ("cond_cycles", "waits that dropped their helpers (a cycle)"),
    ("barrier_slow_waits", "barrier waits past the grace"),
    ("barrier_boosts", "threads a barrier lent to"),
    (
        "barrier_cycles",
        "barrier waits that could not lend (a cycle)",
    ),
    ("unlock_not_owner", "unlocks refused: not the owner (EPERM)"),
    (
        "setattr_calls",
        "sched_setattr calls (boosts and their ends)",
    ),
    ("setattr_errors", "of which failed"),
];

/// Adds up the processes' lines.
fn total(lines: &[Value]) -> Map<String, Value> {
    let mut t = Map::new();
    for (k, _) in COUNTS {
        let n: u64 = lines.iter().filter_map(|l| l[k].as_u64()).sum();
        t.insert(k.to_string(), Value::from(n));
    }
    t
}

pub fn main(a: Args) -> CliResult {
    let lib = find_preload(a.preload.as_deref())?;
    let lib = std::fs::canonicalize(&lib)
        .with_context(|| format!("interposition library {}", lib.display()))
        .map_err(CliError::bad_input)?;
    let (prog, args) = a.command.split_first().ok_or_else(|| {
        CliError::bad_input(anyhow!("no program given (heir exec -- PROGRAM ...)"))
    })?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let summary =
        std::env::temp_dir().join(format!("heir-exec-{}-{stamp}.jsonl", std::process::id()));
    std::fs::write(&summary, b"").with_context(|| format!("create {}", summary.display()))?;
    let mut preload = lib.clone().into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    // Output paths are checked before the program runs.
    for p in [&a.trace, &a.svg, &a.scenario, &a.trace_dat]
        .into_iter()
        .flatten()
    {
        drop(crate::output::PendingFile::create(p).map_err(CliError::bad_input)?);
    }
    let record_dir = match &a.scenario {
        Some(_) => {
            let d =
                std::env::temp_dir().join(format!("heir-exec-rec-{}-{stamp}", std::process::id()));
            std::fs::create_dir(&d).with_context(|| format!("create {}", d.display()))?;
            Some(d)
        }
        None => None,
    };
    let tracing = if a.trace.is_some() || a.svg.is_some() || a.trace_dat.is_some() {
        Some(
            crate::exec_trace::Tracing::start(a.trace_buffer_kb)
                .map_err(|e| CliError::failure(anyhow!("--trace: {e}")))?,
        )
    } else {
        None
    };
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .env("LD_PRELOAD", &preload)
        .env(
            "HEIR_EXEC_MUTEX",
            match a.mutex {
                MutexMode::Inherit => "inherit",
                MutexMode::Keep => "keep",
            },
        )
        .env(
            "HEIR_EXEC_COND",
            match a.cond {
                CondMode::Learn => "learn",
                CondMode::Off => "off",
            },
        )
        .env(
            "HEIR_EXEC_GPM",
            if a.gpm == OnOff::On { "on" } else { "off" },
        )
        .env("HEIR_EXEC_COND_HELPERS", a.helpers.to_string())
        .env("HEIR_EXEC_COND_TTL_MS", a.helper_ttl_ms.to_string())
        .env("HEIR_EXEC_GPM_GRACE_US", a.gpm_grace_us.to_string())
        .env("HEIR_EXEC_SUMMARY", &summary);
    if let Some(t) = &tracing {
        cmd.env("HEIR_EXEC_TRACE_MARKER", t.marker());
    }
    if let Some(d) = &record_dir {
        cmd.env("HEIR_EXEC_RECORD", d);
    }
    let t0 = heir::sys::now_ns();
    let (status, root) = match cmd.spawn() {
        Ok(mut child) => {
            let pid = child.id() as i32;
            (child.wait(), pid)
        }
        Err(e) => (Err(e), 0),
    };
    let t_end = heir::sys::now_ns();
    let text = std::fs::read_to_string(&summary).unwrap_or_default();
    let _ = std::fs::remove_file(&summary);
    if status.is_err() {
        if let Some(d) = &record_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    let status = status
        .with_context(|| format!("cannot run {}", Path::new(prog).display()))
        .map_err(CliError::bad_input)?;
    let code = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    };
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let t = total(&lines);
    eprintln!("{}", text_summary(&lines, &t, code));
    if let Some(n) = t
        .get("unlock_not_owner")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
    {
        eprintln!(
            "heir exec: warning: {n} unlocks by a thread that did not hold the mutex were refused (EPERM): \
             the program uses a mutex as a semaphore (locked by one thread, unlocked by another), which POSIX \
             leaves undefined and no priority-inheritance mutex allows (glibc's refuse it too); \
             run it with --mutex keep"
        );
    }
    let mut extra = Map::new();
    if let Some(tr) = tracing {
        let (trace, dat) = tr
            .finish(root, a.trace_dat.is_some())
            .map_err(|e| CliError::failure(anyhow!("--trace: {e}")))?;
        let title = format!(
            "heir exec {}: kernel trace, --cond {}",
            Path::new(prog).display(),
            match a.cond {
                CondMode::Learn => "learn",
                CondMode::Off => "off",
            }
        );
        let mut outputs = crate::output::RunOutputs::with_svg_window(
            a.trace.as_deref(),
            a.svg.as_deref(),
            &title,
            Some((0, trace.end_ns.max(1))),
        )?;
        outputs.trace_metadata("trace", crate::run::trace_metadata(&trace));
        trace.replay(&mut outputs.observer());
        let mut written = outputs.commit().map_err(CliError::failure)?;
        if let (Some(path), Some(dat)) = (&a.trace_dat, &dat) {
            written.push(crate::trace_dat::write(path, dat)?);
        }
        eprintln!("{}", crate::run::trace_line(&trace));
        if let Some(w) = crate::run::dropped_warning(&trace) {
            eprintln!("heir: warning: {w}");
        }
        for p in &written {
            eprintln!("wrote {}", p.display());
        }
        let mut v: Value = serde_json::from_str(&crate::run::trace_metadata(&trace))
            .map_err(|e| CliError::failure(anyhow!(e)))?;
        v["files"] = written.iter().map(|p| p.display().to_string()).collect();
        extra.insert("trace".into(), v);
    }
    if let (Some(dir), Some(out)) = (&record_dir, &a.scenario) {
        let r = crate::exec_scenario::write(dir, out, t0, t_end);
        let _ = std::fs::remove_dir_all(dir);
        let s = r.map_err(CliError::failure)?;
        eprintln!("{}", s.line());
        extra.insert("scenario".into(), s.json());
    }
    if a.json {
        let v = serde_json::json!({
            "program": prog.to_string_lossy(),
            "exit_code": code,
            "preload": lib.display().to_string(),
            "processes": lines,
            "total": t,
        });
        let mut v = v;
        if let Value::Object(o) = &mut v {
            o.extend(extra);
        }
        println!("{v}");
    }
    if code == 0 {
        Ok(())
    } else {
        Err(CliError::quiet(code))
    }
}

fn text_summary(lines: &[Value], t: &Map<String, Value>, code: i32) -> String {
    if lines.is_empty() {
        return format!(
            "heir exec: exit {code}; no summary: the program did not load {PRELOAD} \
             (statically linked, setuid, or it cleared LD_PRELOAD) or did not end through exit()"
        );
    }
    // Each program once, in order of first exit, with its count.
    let mut by_comm: Vec<(&str, usize)> = Vec::new();
    for l in lines {
        let c = l["comm"].as_str().unwrap_or("?");
        match by_comm.iter_mut().find(|(n, _)| *n == c) {
            Some((_, k)) => *k += 1,
            None => by_comm.push((c, 1)),
        }
    }
    let who: Vec<String> = by_comm
        .iter()
        .map(|(c, k)| {
            if *k == 1 {
                c.to_string()
            } else {
                format!("{c} ×{k}")
            }
        })
        .collect();
    let mut s = format!(
        "heir exec: exit {code}; {} process{}: {}",
        lines.len(),
        if lines.len() == 1 { "" } else { "es" },
        who.join(", ")
    );
    for (k, words) in COUNTS {
        let n = t.get(k).and_then(Value::as_u64).unwrap_or(0);
        s.push_str(&format!("\n  {n:>10}  {words}"));
    }
    s
}
