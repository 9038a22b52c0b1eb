//! Running the binary, temporary directories, JSON utilities.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

/// Runs `heir` with `args` (no stdin).
pub fn heir<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_heir"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run heir")
}

/// A bundled example (`examples/NAME`).
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// The exit code (a signal is a test failure).
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

/// Parses stdout as exactly one JSON value (nothing before or after).
pub fn one_json(o: &Output) -> Value {
    let text = stdout(o);
    let mut values = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let first = values
        .next()
        .unwrap_or_else(|| panic!("no JSON on stdout; stderr: {}", stderr(o)))
        .expect("valid JSON");
    assert!(
        values.next().is_none(),
        "more than one JSON value on stdout"
    );
    assert!(first.is_object(), "not an object: {first}");
    first
}

/// The keys of a JSON object, in order.
pub fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

/// A directory under the system temp dir, unique to this test, removed on
/// drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "heir-cli-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `text` to `name` in the directory.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.join(name);
        std::fs::write(&p, text).expect("write scenario");
        p
    }

    /// File names in the directory, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("read temp dir")
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Holds what a test that runs real-time threads (`heir run`, `heir demo`)
/// needs: this binary's real-time tests one at a time, and — through the
/// lock file every heir real-time test takes — no other heir test binary's
/// either.
pub struct Rt {
    _serial: std::sync::MutexGuard<'static, ()>,
    _across: heir::caps::FileLock,
}

/// Takes the real-time tests' locks (whether or not real-time priorities
/// are allowed: for a test that checks both cases itself).
pub fn rt_serial(test: &str) -> Rt {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let across = heir::caps::FileLock::acquire(&heir::caps::rt_tests_lock_path())
        .unwrap_or_else(|e| panic!("{test}: cannot take the real-time tests' lock: {e}"));
    Rt {
        _serial: serial,
        _across: across,
    }
}

/// Returns the real-time environment, or `None` (after printing why) when
/// this process may not use real-time priorities; under `CI=true` that
/// panics instead.
pub fn rt_or_skip(test: &str) -> Option<Rt> {
    let rt = rt_serial(test);
    if let Some(why) = heir::caps::Capabilities::detect().realtime_missing() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: real-time capability missing under CI=true: {why}"
        );
        eprintln!("{test}: SKIPPED: {why}");
        return None;
    }
    Some(rt)
}

/// A real run that lost at least this much (ms, summed over its threads)
/// to threads outside it — another program, the kernel's fair server, a
/// kernel thread — counts as disturbed for a test that asserts an exact
/// order: 100 µs, a tenth of the shortest step of the scenarios tested.
pub const DISTURBED_MS: f64 = 0.1;

/// How often [`run_undisturbed`] runs a scenario at most.
pub const ATTEMPTS: usize = 5;

/// Why `heir run --json`'s output `v` (with its `stderr`) is no run to
/// assert an exact order on, if it is not: its measured disturbance
/// (`"disturbance"`) reached [`DISTURBED_MS`], could not be measured, or
/// a thread started late.
pub fn disturbed(v: &Value, stderr: &str) -> Option<String> {
    let d = &v["disturbance"];
    if d["measured"] == Value::Bool(false) {
        return Some(format!("not measured: {}", d["why"]));
    }
    let lost = d["lost_ms"].as_f64().unwrap_or(0.0);
    if lost >= DISTURBED_MS {
        let by: Vec<String> = d["by"]
            .as_array()
            .map(|a| {
                a.iter()
                    .take(3)
                    .map(|b| {
                        format!(
                            "{} {} ({}) {:.3} ms",
                            b["tid"],
                            b["comm"],
                            b["what"],
                            b["lost_ms"].as_f64().unwrap_or(0.0)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        return Some(format!("lost {lost:.3} ms to {}", by.join(", ")));
    }
    if d["dropped"].as_u64().unwrap_or(0) > 0 {
        return Some("the kernel dropped scheduler records".into());
    }
    stderr
        .lines()
        .find(|l| l.contains(" late: "))
        .map(|l| l.to_string())
}

/// Runs `heir` with `args` (a `run … --json`) until a run is undisturbed
/// ([`disturbed`]), at most [`ATTEMPTS`] times: its exit code, JSON and
/// stderr. Every disturbed attempt is printed with what disturbed it; when
/// all were, the test fails saying so (an exact order cannot be asserted
/// on a run something else took the CPU from).
pub fn run_undisturbed<S: AsRef<std::ffi::OsStr>>(test: &str, args: &[S]) -> (i32, Value, String) {
    let mut why = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let o = heir(args);
        let err = stderr(&o);
        let v = one_json(&o);
        match disturbed(&v, &err) {
            None => return (code(&o), v, err),
            Some(w) => {
                eprintln!("{test}: attempt {attempt} of {ATTEMPTS} disturbed: {w}; again");
                why.push(w);
            }
        }
    }
    panic!("{test}: every one of {ATTEMPTS} real runs was disturbed: {why:#?}");
}
