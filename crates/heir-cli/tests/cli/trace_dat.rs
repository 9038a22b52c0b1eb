//! `heir run --trace-dat OUT.dat`: the kernel's records of a real run in
//! trace-cmd's file format, read back by `trace-cmd` itself (libtracecmd)
//! and by KernelShark's data library (libkshark, where installed) — and,
//! from the same run, `--trace`'s JSON, whose counts of the run's kernel
//! records and heir markers the trace.dat must match.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// The scenario's threads (the PI-CV paper's Fig. 6).
const THREADS: [&str; 3] = ["Consumer", "Annoyer", "Producer"];

/// A cursor over the trace.dat's bytes (native byte order, as written).
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = self
            .b
            .get(self.at..self.at + n)
            .unwrap_or_else(|| panic!("trace.dat ends at {} (wanted {n} more)", self.at));
        self.at += n;
        s
    }
    fn u16(&mut self) -> u16 {
        u16::from_ne_bytes(self.take(2).try_into().unwrap())
    }
    fn u32(&mut self) -> u32 {
        u32::from_ne_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_ne_bytes(self.take(8).try_into().unwrap())
    }
    fn expect(&mut self, what: &[u8]) {
        let at = self.at;
        assert_eq!(self.take(what.len()), what, "at byte {at}");
    }
    fn cstr(&mut self) -> String {
        let n = self.b[self.at..].iter().position(|&c| c == 0).unwrap();
        let s = String::from_utf8(self.take(n).to_vec()).unwrap();
        self.take(1);
        s
    }
    /// A section: its size (`u32` or `u64`), then that many bytes.
    fn sized(&mut self, wide: bool) -> String {
        let n = if wide {
            self.u64() as usize
        } else {
            self.u32() as usize
        };
        String::from_utf8_lossy(self.take(n)).into_owned()
    }
}

/// Walks the file as trace-cmd.dat.v6(5) lays it out: the event formats,
/// the cmdlines, and per CPU its ring-buffer pages (page-aligned, each
/// page's header a timestamp and a commit no larger than the page).
/// Returns the event names with formats, the cmdlines and the CPUs'
/// sizes.
fn validate(bytes: &[u8]) -> (BTreeSet<String>, String, Vec<u64>) {
    let mut c = Cursor { b: bytes, at: 0 };
    c.expect(b"\x17\x08\x44tracing6\0");
    assert_eq!(c.take(1)[0], u8::from(cfg!(target_endian = "big")));
    assert_eq!(c.take(1)[0], 8, "a long of 8 bytes");
    let page = u64::from(c.u32());
    assert!(page >= 4096 && page.is_power_of_two(), "page size {page}");
    c.expect(b"header_page\0");
    assert!(c.sized(true).contains("field: u64 timestamp;"));
    c.expect(b"header_event\0");
    assert!(c.sized(true).contains("type_len"));
    let mut names = BTreeSet::new();
    let mut format = |text: String| {
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("name: "))
            .expect("an event format's name");
        names.insert(name.to_string());
    };
    for _ in 0..c.u32() {
        format(c.sized(true));
    }
    for _ in 0..c.u32() {
        let system = c.cstr();
        assert!(!system.is_empty());
        for _ in 0..c.u32() {
            format(c.sized(true));
        }
    }
    let _kallsyms = c.sized(false);
    let _printk = c.sized(false);
    let cmdlines = c.sized(true);
    let cpus = c.u32() as usize;
    assert!(cpus >= 1);
    c.expect(b"options  \0");
    while c.u16() != 0 {
        c.sized(false);
    }
    c.expect(b"flyrecord\0");
    let mut sizes = Vec::new();
    for cpu in 0..cpus {
        let (off, size) = (c.u64(), c.u64());
        assert_eq!(off % page, 0, "CPU {cpu}'s data is page-aligned");
        assert_eq!(size % page, 0, "CPU {cpu}: whole pages");
        assert!(off + size <= bytes.len() as u64, "CPU {cpu} in the file");
        for p in (off..off + size).step_by(page as usize) {
            let h = &bytes[p as usize..];
            let ts = u64::from_ne_bytes(h[..8].try_into().unwrap());
            // The commit's low bits: the bytes of events in the page.
            let commit = u64::from_ne_bytes(h[8..16].try_into().unwrap()) & ((1 << 27) - 1);
            assert!(ts > 0, "CPU {cpu}: a page at {p} without a timestamp");
            assert!(
                commit <= page - 16,
                "CPU {cpu}: page at {p}: commit {commit}"
            );
        }
        sizes.push(size);
    }
    (names, cmdlines, sizes)
}

/// `trace-cmd ARGS`: its stdout, or `None` when trace-cmd is not
/// installed.
fn trace_cmd(args: &[&std::ffi::OsStr]) -> Option<String> {
    let o = match Command::new("trace-cmd").args(args).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("trace-cmd: {e}"),
    };
    assert!(
        o.status.success(),
        "trace-cmd {args:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// One event of `trace-cmd report -R` (raw fields): CPU, event, fields.
fn events(report: &str) -> Vec<(u32, String, String)> {
    report
        .lines()
        .filter_map(|l| {
            // `COMM-PID [CPU] SECONDS.MICROS: EVENT: FIELDS` (a comm may
            // hold spaces and brackets: the first `[digits]`).
            let mut from = 0;
            let (open, close) = loop {
                let o = from + l[from..].find('[')?;
                let c = o + l[o..].find(']')?;
                if c > o + 1 && l[o + 1..c].bytes().all(|b| b.is_ascii_digit()) {
                    break (o, c);
                }
                from = o + 1;
            };
            let cpu = l[open + 1..close].parse().ok()?;
            let rest = l[close + 1..].trim_start();
            let (_ts, rest) = rest.split_once(": ")?;
            let (event, fields) = rest.split_once(':')?;
            Some((cpu, event.to_string(), fields.trim().to_string()))
        })
        .collect()
}

/// The integer after `key=` (its last occurrence).
fn num(fields: &str, key: &str) -> Option<i64> {
    let i = fields.rfind(key)? + key.len();
    let r = &fields[i..];
    let e = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
    r[..e].parse().ok()
}

/// A C program that loads a trace.dat with libkshark (KernelShark 2's
/// data library, `libkshark.so.2`: what its GUI loads a file with) and
/// prints `entries N`, then `task PID COMM` per task it found. The
/// declarations are those of its public API (libkshark.h, not installed
/// by Debian's `libkshark2`).
const KSHARK_C: &str = r#"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
struct kshark_context;
struct kshark_entry;
bool kshark_instance(struct kshark_context **ctx);
int kshark_open(struct kshark_context *ctx, const char *file);
ssize_t kshark_load_entries(struct kshark_context *ctx, int sd, struct kshark_entry ***rows);
ssize_t kshark_get_task_pids(struct kshark_context *ctx, int sd, int **pids);
char *kshark_comm_from_pid(int sd, int pid);
int main(int argc, char **argv)
{
	struct kshark_context *ctx = NULL;
	struct kshark_entry **rows = NULL;
	int *pids = NULL;
	if (argc != 2 || !kshark_instance(&ctx))
		return 2;
	int sd = kshark_open(ctx, argv[1]);
	if (sd < 0) {
		fprintf(stderr, "kshark_open: %d\n", sd);
		return 1;
	}
	printf("entries %zd\n", kshark_load_entries(ctx, sd, &rows));
	ssize_t n = kshark_get_task_pids(ctx, sd, &pids);
	for (ssize_t i = 0; i < n; i++)
		printf("task %d %s\n", pids[i], kshark_comm_from_pid(sd, pids[i]));
	return 0;
}
"#;

/// `dat` loaded by libkshark ([`KSHARK_C`]): its entry count and each
/// task's name; `None` where libkshark is not installed.
fn kshark_load(dir: &TempDir, dat: &std::path::Path) -> Option<(u64, BTreeMap<i64, String>)> {
    let ldconfig = ["ldconfig", "/sbin/ldconfig"]
        .iter()
        .find_map(|c| Command::new(c).arg("-p").output().ok())?;
    let lib = String::from_utf8_lossy(&ldconfig.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("libkshark.so.2 "))
        .find_map(|l| l.rsplit_once("=> ").map(|x| x.1.trim().to_string()))?;
    let src = dir.write("kshark.c", KSHARK_C);
    let exe = dir.join("kshark");
    let o = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg(&lib)
        .output()
        .expect("cc");
    assert!(
        o.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(&exe).arg(dat).output().expect("kshark");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "libkshark: {}\n{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut entries = None;
    let mut tasks = BTreeMap::new();
    for l in out.lines() {
        if let Some(n) = l.strip_prefix("entries ") {
            entries = n.parse().ok();
        } else if let Some((pid, comm)) = l.strip_prefix("task ").and_then(|t| t.split_once(' ')) {
            tasks.insert(pid.parse().expect("pid"), comm.to_string());
        }
    }
    Some((entries.expect("entries"), tasks))
}

#[test]
fn a_real_run_as_a_trace_dat_that_trace_cmd_reads_with_the_json_traces_counts() {
    let Some(_rt) = rt_or_skip("trace_dat") else {
        return;
    };
    let dir = TempDir::new("trace-dat");
    let (json_path, dat) = (dir.join("fig6.json"), dir.join("fig6.dat"));
    let o = heir([
        "run".as_ref(),
        example("fig6-producer-consumer.json").as_os_str(),
        "--duration".as_ref(),
        "0.3".as_ref(),
        "--pi-cv".as_ref(),
        "on".as_ref(),
        "--trace".as_ref(),
        json_path.as_os_str(),
        "--trace-dat".as_ref(),
        dat.as_os_str(),
    ]);
    let err = stderr(&o);
    if code(&o) == 2 && err.contains("cannot trace the kernel") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "trace_dat: tracefs unavailable under CI=true: {err}"
        );
        eprintln!("trace_dat: SKIPPED: {err}");
        return;
    }
    assert_eq!(code(&o), 0, "{err}");
    let out = stdout(&o);
    assert!(out.contains(&format!("wrote {}", dat.display())), "{out}");
    assert!(
        out.contains(&format!("wrote {}", json_path.display())),
        "{out}"
    );

    // The file as trace-cmd.dat.v6(5) lays it out.
    let bytes = std::fs::read(&dat).expect("the trace.dat");
    let (formats, cmdlines, sizes) = validate(&bytes);
    for e in [
        "sched_switch",
        "sched_wakeup",
        "sched_wakeup_new",
        "sched_pi_setprio",
        "sched_migrate_task",
        "print",
    ] {
        assert!(formats.contains(e), "no format for {e}: {formats:?}");
    }
    for n in THREADS {
        assert!(
            cmdlines
                .lines()
                .any(|l| l.split_once(' ').map(|x| x.1) == Some(n)),
            "{n} not in the cmdlines:\n{cmdlines}"
        );
    }
    assert!(sizes.iter().sum::<u64>() > 0, "no pages");

    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let meta = &json["otherData"]["trace"];
    assert_eq!(meta["dropped_events"], 0, "{meta}");

    // trace-cmd's own reading of it.
    let Some(report) = trace_cmd(&["report".as_ref(), "-R".as_ref(), dat.as_os_str()]) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "trace_dat: trace-cmd is not installed under CI=true (test.sh installs it)"
        );
        eprintln!("trace_dat: trace-cmd SKIPPED: not installed (the file's layout was checked)");
        return;
    };
    let evs = events(&report);
    // The run's threads: the pids the kernel switched to under their names.
    let mut tids: BTreeMap<i64, String> = BTreeMap::new();
    for (_, e, f) in &evs {
        if e == "sched_switch" {
            for n in THREADS {
                if f.contains(&format!("next_comm={n} next_pid=")) {
                    tids.insert(num(f, "next_pid=").unwrap(), n.to_string());
                }
            }
        }
    }
    let names: BTreeSet<&str> = tids.values().map(String::as_str).collect();
    assert_eq!(
        names,
        BTreeSet::from(THREADS),
        "sched_switch to each thread"
    );
    // What heir's conversion counts (run/trace.rs): a switch from or to
    // a run thread; a wake-up, PI change or migration of one; its markers.
    let ours = |f: &str, k: &str| num(f, k).is_some_and(|p| tids.contains_key(&p));
    let mut kernel = 0u64;
    let mut markers = 0u64;
    let mut per_thread: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, e, f) in &evs {
        match e.as_str() {
            "sched_switch" => {
                if ours(f, "prev_pid=") || ours(f, "next_pid=") {
                    kernel += 1;
                }
                for k in ["prev_pid=", "next_pid="] {
                    if let Some(n) = num(f, k).and_then(|p| tids.get(&p)) {
                        *per_thread.entry(n.as_str()).or_default() += 1;
                    }
                }
            }
            "sched_wakeup" | "sched_wakeup_new" | "sched_pi_setprio" | "sched_migrate_task"
                if ours(f, " pid=") =>
            {
                kernel += 1;
            }
            "print" if f.contains("buf=heir ") => markers += 1,
            _ => {}
        }
    }
    eprintln!(
        "trace_dat: trace-cmd read {} events; of the run's threads {kernel} kernel records, \
         {markers} heir markers (the JSON: {}, {}); sched_switch per thread {per_thread:?}",
        evs.len(),
        meta["kernel_records"],
        meta["heir_markers"]
    );
    assert_eq!(Some(kernel), meta["kernel_records"].as_u64(), "{meta}");
    assert_eq!(Some(markers), meta["heir_markers"].as_u64(), "{meta}");
    assert!(kernel > 0 && markers > 0);
    for n in THREADS {
        assert!(
            per_thread.get(n).copied().unwrap_or(0) >= 2,
            "{n}: {per_thread:?}"
        );
    }

    // Per CPU, the events add up to the whole; -l and dump accept it.
    let cpus = sizes.len();
    let mut sum = 0;
    for cpu in 0..cpus {
        let one = trace_cmd(&[
            "report".as_ref(),
            "-R".as_ref(),
            "--cpu".as_ref(),
            cpu.to_string().as_ref(),
            dat.as_os_str(),
        ])
        .unwrap();
        let e = events(&one);
        assert!(e.iter().all(|x| x.0 as usize == cpu), "--cpu {cpu}");
        sum += e.len();
    }
    assert_eq!(sum, evs.len(), "the CPUs' events add up");
    let latency = trace_cmd(&["report".as_ref(), "-l".as_ref(), dat.as_os_str()]).unwrap();
    assert!(latency.contains("sched_switch:"), "report -l");
    let summary = trace_cmd(&[
        "dump".as_ref(),
        "--summary".as_ref(),
        "-i".as_ref(),
        dat.as_os_str(),
    ])
    .unwrap();
    assert!(summary.contains("6\t[Version]"), "{summary}");
    assert!(
        summary.contains(&format!("{cpus} [CPUs with tracing data]")),
        "{summary}"
    );

    // KernelShark's own loader: every event, the threads by name.
    match kshark_load(&dir, &dat) {
        Some((entries, tasks)) => {
            eprintln!(
                "trace_dat: libkshark loaded {entries} entries, {} tasks",
                tasks.len()
            );
            assert_eq!(entries, evs.len() as u64, "libkshark's entries");
            for (tid, name) in &tids {
                assert_eq!(
                    tasks.get(tid),
                    Some(name),
                    "libkshark's task {tid}: {tasks:?}"
                );
            }
        }
        None => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "trace_dat: libkshark (KernelShark's library) is not installed under CI=true (test.sh installs libkshark2)"
            );
            eprintln!("trace_dat: libkshark SKIPPED: not installed (apt-get install libkshark2)");
        }
    }
}

/// `heir exec --trace-dat`: a program's processes (a shell, and the
/// `sleep` it starts) in the same format, with their names after `exec`.
#[test]
fn heir_exec_writes_the_programs_records_as_a_trace_dat() {
    let Some(_rt) = rt_or_skip("trace_dat_exec") else {
        return;
    };
    let dir = TempDir::new("trace-dat-exec");
    let (json_path, dat) = (dir.join("sh.json"), dir.join("sh.dat"));
    // The interposition library cargo built beside this test binary.
    let exe = std::env::current_exe().expect("test binary");
    let preload = exe.parent().expect("deps").join("libheir_preload.so");
    let o = Command::new(env!("CARGO_BIN_EXE_heir"))
        .arg("exec")
        .arg("--trace")
        .arg(&json_path)
        .arg("--trace-dat")
        .arg(&dat)
        .args(["--", "/bin/sh", "-c", "sleep 0.05; exit 3"])
        .env("HEIR_PRELOAD", preload)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("heir exec");
    let err = stderr(&o);
    if err.contains("cannot trace the kernel") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "trace_dat_exec: tracefs unavailable under CI=true: {err}"
        );
        eprintln!("trace_dat_exec: SKIPPED: {err}");
        return;
    }
    assert_eq!(code(&o), 3, "the program's exit code: {err}");
    assert!(err.contains(&format!("wrote {}", dat.display())), "{err}");
    let (_, cmdlines, _) = validate(&std::fs::read(&dat).expect("the trace.dat"));
    assert!(
        cmdlines.lines().any(|l| l.ends_with(" sleep")),
        "sleep (the exec'd name) in the cmdlines:\n{cmdlines}"
    );
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let meta = &json["otherData"]["trace"];
    let Some(report) = trace_cmd(&["report".as_ref(), "-R".as_ref(), dat.as_os_str()]) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "trace_dat_exec: trace-cmd is not installed under CI=true (test.sh installs it)"
        );
        eprintln!(
            "trace_dat_exec: trace-cmd SKIPPED: not installed (the file's layout was checked)"
        );
        return;
    };
    let evs = events(&report);
    // The program: heir's child (heir is the instance's `heir-PID`) and,
    // transitively, what it forked.
    let heir_pid: i64 = meta["instance"]
        .as_str()
        .and_then(|i| i.rsplit_once("heir-"))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("instance in {meta}"));
    let mut tids: BTreeSet<i64> = BTreeSet::new();
    for (_, e, f) in &evs {
        if e == "sched_process_fork" {
            let (parent, child) = (
                num(f, "parent_pid=").unwrap(),
                num(f, "child_pid=").unwrap(),
            );
            if (parent == heir_pid && tids.is_empty()) || tids.contains(&parent) {
                tids.insert(child);
            }
        }
    }
    assert!(tids.len() >= 2, "the shell and sleep: {tids:?}");
    let ours = |f: &str, k: &str| num(f, k).is_some_and(|p| tids.contains(&p));
    let kernel = evs
        .iter()
        .filter(|(_, e, f)| match e.as_str() {
            "sched_switch" => ours(f, "prev_pid=") || ours(f, "next_pid="),
            "sched_wakeup" | "sched_wakeup_new" | "sched_pi_setprio" | "sched_migrate_task" => {
                ours(f, " pid=")
            }
            _ => false,
        })
        .count() as u64;
    eprintln!(
        "trace_dat_exec: trace-cmd read {} events, {kernel} kernel records of the program's {} tids (the JSON: {})",
        evs.len(),
        tids.len(),
        meta["kernel_records"]
    );
    assert_eq!(Some(kernel), meta["kernel_records"].as_u64(), "{meta}");
}
