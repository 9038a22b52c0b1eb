//! The C API as a C program sees it: `heir.h` compiles cleanly, declares
//! every exported function, the pkg-config file resolves, and the C
//! producer/consumer example (examples/c) builds, runs and shows the
//! producer boosted while the consumer waits; `heir_apply_stats` and
//! `heir_cond_init_boost` (the helper's priority, as the kernel schedules
//! it and as set, under each boost mode) from C programs in this directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding the freshly built `libheir.so` (the test binary
/// lives in `<target>/<profile>/deps`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for d in [
        deps.clone(),
        deps.parent().expect("profile dir").to_path_buf(),
    ] {
        if d.join("libheir.so").exists() {
            return d;
        }
    }
    panic!("libheir.so not found next to {}", exe.display());
}

fn cc() -> Option<String> {
    for c in ["cc", "gcc", "clang"] {
        if Command::new(c).arg("--version").output().is_ok() {
            return Some(c.to_string());
        }
    }
    None
}

fn need_cc(test: &str) -> Option<String> {
    match cc() {
        Some(c) => Some(c),
        None if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{test}: no C compiler under CI=true")
        }
        None => {
            eprintln!("{test}: SKIPPED: no C compiler");
            None
        }
    }
}

#[test]
fn header_declares_every_exported_function() {
    let header = std::fs::read_to_string(crate_dir().join("include/heir.h")).expect("heir.h");
    let src = std::fs::read_to_string(crate_dir().join("src/capi.rs")).expect("capi.rs");
    let mut n = 0;
    for line in src.lines() {
        let l = line.trim_start();
        if let Some(rest) = l
            .strip_prefix("pub unsafe extern \"C\" fn ")
            .or_else(|| l.strip_prefix("pub extern \"C\" fn "))
        {
            let name = rest.split('(').next().expect("name");
            assert!(header.contains(&format!("{name}(")), "heir.h lacks {name}");
            n += 1;
        }
    }
    assert!(n >= 25, "found {n} exported functions");
}

#[test]
fn header_compiles_standalone_with_warnings_as_errors() {
    let Some(cc) = need_cc("capi::header") else {
        return;
    };
    let out = std::env::temp_dir().join(format!("heir-h-{}.o", std::process::id()));
    let st = Command::new(&cc)
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-x",
            "c",
            "-c",
        ])
        .arg(crate_dir().join("include/heir.h"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cc");
    let _ = std::fs::remove_file(&out);
    assert!(st.success());
}

/// Flags that compile against `heir.h` and link the freshly built
/// `libheir.so` (found at run time through the rpath).
fn heir_flags() -> Vec<String> {
    let lib = lib_dir();
    vec![
        format!("-I{}", crate_dir().join("include").display()),
        format!("-L{}", lib.display()),
        "-lheir".to_string(),
        format!("-Wl,-rpath,{}", lib.display()),
        "-lpthread".to_string(),
    ]
}

/// Builds the C program `src` (C11, warnings as errors) into `out`.
fn build_c(cc: &str, src: &Path, flags: &[String], out: &Path) {
    let output = Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg(src)
        .args(flags)
        .arg("-o")
        .arg(out)
        .output()
        .expect("cc");
    assert!(
        output.status.success(),
        "building {} failed: {}",
        src.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs the built program `exe` with `args`, removes it, and returns its
/// stdout; fails the test if the program failed. The loader looks in the
/// freshly built library's directory first: `cargo test` puts
/// `<target>/<profile>` on `LD_LIBRARY_PATH`, which outranks the rpath, and
/// a `libheir.so` left there by an older `cargo build` lacks new symbols.
fn run_c(exe: &Path, args: &[String]) -> String {
    let mut path = lib_dir().into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let out = Command::new(exe)
        .args(args)
        .env("LD_LIBRARY_PATH", path)
        .output()
        .expect("run C program");
    let _ = std::fs::remove_file(exe);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{} failed: {stdout}{}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `cargo cinstall` (cargo-c) is on the PATH: `Some(cargo)`; missing, the
/// test skips with the reason, and fails under CI=true (test.sh installs it).
fn cargo_c(test: &str) -> Option<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let ok = Command::new(&cargo)
        .args(["cinstall", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    match ok {
        true => Some(cargo),
        false if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{test}: cargo-c (cargo cinstall) missing under CI=true: test.sh installs it")
        }
        false => {
            eprintln!("{test}: SKIPPED: cargo-c missing (apt-get install cargo-c, or cargo install --locked cargo-c --version 0.10.24)");
            None
        }
    }
}

/// The files under `dir`, recursively, relative to it (symlinks as files).
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if e.file_type().expect("file type").is_dir() {
                todo.push(p);
            } else {
                out.push(p.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// libheir installed the way C libraries are: `cargo cinstall` into a
/// temporary prefix gives the versioned library behind its soname, heir.h
/// and a generated heir.pc; the C examples build with nothing but
/// `pkg-config --cflags --libs heir`, load libheir.so.1, and the
/// producer/consumer example runs with its boost.
#[test]
fn cinstall_into_a_prefix_then_the_examples_build_with_pkg_config_alone() {
    let test = "capi::cinstall";
    let Some(cc) = need_cc(test) else {
        return;
    };
    let Some(cargo) = cargo_c(test) else {
        return;
    };
    let root = crate_dir().join("../..");
    let prefix = std::env::temp_dir().join(format!("heir-prefix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    // Its own target directory: the workspace's is cargo test's, and it
    // stays between runs (only heir-rt's crates, built once).
    let out = Command::new(&cargo)
        .args([
            "cinstall",
            "--locked",
            "--release",
            "-p",
            "heir-rt",
            "--prefix",
        ])
        .arg(&prefix)
        .arg("--libdir")
        .arg(prefix.join("lib"))
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/cinstall"))
        // Debian 12's cargo-c (0.9.14, cargo 0.66) reads crates.io's sparse
        // index only with this; without it, it clones the git index. Later
        // cargo-c versions ignore it.
        .env("CARGO_UNSTABLE_SPARSE_REGISTRY", "true")
        .output()
        .expect("cargo cinstall");
    assert!(
        out.status.success(),
        "cargo cinstall failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = tree(&prefix);
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    for f in [
        "include/heir.h",
        "lib/libheir.so.1.0.0",
        "lib/libheir.so.1",
        "lib/libheir.so",
        "lib/libheir.a",
        "lib/pkgconfig/heir.pc",
    ] {
        assert!(names.iter().any(|n| n == f), "{f} not installed: {names:?}");
    }
    // The soname chain: libheir.so -> libheir.so.1 -> libheir.so.1.0.0
    // (the library's ABI version, `[package.metadata.capi.library]
    // version`, not the crate's: the C ABI broke at 1).
    let lib = prefix.join("lib");
    assert_eq!(
        std::fs::read_link(lib.join("libheir.so.1")).expect("link"),
        PathBuf::from("libheir.so.1.0.0")
    );
    assert_eq!(
        std::fs::read_link(lib.join("libheir.so")).expect("link"),
        PathBuf::from("libheir.so.1.0.0")
    );
    // The library's own soname, what a program linked against it records.
    if let Ok(o) = Command::new("readelf")
        .arg("-d")
        .arg(lib.join("libheir.so.1.0.0"))
        .output()
    {
        let dynamic = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            dynamic.contains("Library soname: [libheir.so.1]"),
            "{dynamic}"
        );
    }
    // The installed header is the source's.
    assert_eq!(
        std::fs::read(prefix.join("include/heir.h")).expect("installed heir.h"),
        std::fs::read(crate_dir().join("include/heir.h")).expect("heir.h")
    );
    let pc = std::fs::read_to_string(lib.join("pkgconfig/heir.pc")).expect("heir.pc");
    assert!(pc.contains("Name: heir"), "{pc}");
    assert!(
        pc.contains(&format!("Version: {}", env!("CARGO_PKG_VERSION"))),
        "{pc}"
    );

    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "heir"])
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
        .output();
    let Ok(flags) = flags else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("pkg-config missing under CI=true");
        }
        eprintln!("{test}: SKIPPED: no pkg-config");
        return;
    };
    assert!(
        flags.status.success(),
        "{}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let flags: Vec<String> = String::from_utf8_lossy(&flags.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert!(flags.contains(&"-lheir".to_string()), "{flags:?}");
    assert!(
        flags.contains(&format!("-I{}", prefix.join("include").display())),
        "{flags:?}"
    );
    assert!(flags.contains(&format!("-L{}", lib.display())), "{flags:?}");

    let examples = root.join("examples/c");
    let mut built = Vec::new();
    for src in ["producer_consumer.c", "rpc_donation.c", "gang_barrier.c"] {
        let exe = std::env::temp_dir().join(format!(
            "heir-installed-{}-{}",
            src.trim_end_matches(".c"),
            std::process::id()
        ));
        build_c(&cc, &examples.join(src), &flags, &exe);
        // Linked against the soname, not the development link.
        if let Ok(o) = Command::new("readelf").arg("-d").arg(&exe).output() {
            let dynamic = String::from_utf8_lossy(&o.stdout).to_string();
            assert!(dynamic.contains("[libheir.so.1]"), "{src}: {dynamic}");
        }
        built.push(exe);
    }
    let run = run_installed(test, &built[0], &lib);
    for exe in &built {
        let _ = std::fs::remove_file(exe);
    }
    let _ = std::fs::remove_dir_all(&prefix);
    let Some(stdout) = run else {
        return;
    };
    assert!(
        stdout.contains("producer priority while consumer waits: 30"),
        "{stdout}"
    );
    assert!(
        stdout.contains("consumed 5 items in priority order"),
        "{stdout}"
    );
}

/// Runs an example built against the installed library (found through
/// `LD_LIBRARY_PATH`, as for any library under a private prefix) on a
/// real-time test CPU; `None` when real-time tests skip here.
fn run_installed(test: &str, exe: &Path, lib: &Path) -> Option<String> {
    let rt = rt_or_skip(test, 30)?;
    let out = Command::new(exe)
        .arg(rt.cpu.to_string())
        .env("LD_LIBRARY_PATH", lib)
        .output()
        .expect("run the installed example");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{} failed: {stdout}{}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(stdout)
}

#[test]
fn c_producer_consumer_example_runs_with_helpers() {
    let Some(rt) = rt_or_skip("capi::example", 30) else {
        return;
    };
    let Some(cc) = need_cc("capi::example") else {
        return;
    };
    let exe = std::env::temp_dir().join(format!("heir-example-{}", std::process::id()));
    let src = crate_dir().join("../../examples/c/producer_consumer.c");
    build_c(&cc, &src, &heir_flags(), &exe);
    let stdout = run_c(&exe, &[rt.cpu.to_string()]);
    // The producer saw its own priority raised to the consumer's while the
    // consumer waited, and back to its base afterwards.
    assert!(
        stdout.contains("producer priority while consumer waits: 30"),
        "{stdout}"
    );
    assert!(
        stdout.contains("producer priority after the push: 10"),
        "{stdout}"
    );
    assert!(
        stdout.contains("consumed 5 items in priority order"),
        "{stdout}"
    );
}

#[test]
fn c_reads_a_refused_boost_with_heir_apply_stats() {
    let Some(cc) = need_cc("capi::apply_stats") else {
        return;
    };
    let exe = std::env::temp_dir().join(format!("heir-apply-stats-{}", std::process::id()));
    let src = crate_dir().join("tests/rt/apply_stats.c");
    build_c(&cc, &src, &heir_flags(), &exe);
    let stdout = run_c(&exe, &[]);
    // The C struct is the Rust one.
    type S = heir::capi::heir_apply_stats_t;
    let layout = format!(
        "layout {} {} {}",
        std::mem::size_of::<S>(),
        std::mem::offset_of!(S, last_engine_errno),
        std::mem::offset_of!(S, engine_errors)
    );
    assert!(stdout.contains(&layout), "{layout}: {stdout}");
    assert!(stdout.contains("null 1"), "{stdout}");
    assert!(stdout.contains("timedwait ETIMEDOUT"), "{stdout}");
    assert!(stdout.contains(" errno 1 on-helper 1"), "{stdout}");
    assert!(!stdout.contains("failed 0 "), "{stdout}");
}

#[test]
fn c_cond_init_lend_lends_the_waiters_priority_to_the_helper() {
    let Some(rt) = rt_or_skip("capi::cond_init_boost", 30) else {
        return;
    };
    let Some(cc) = need_cc("capi::cond_init_boost") else {
        return;
    };
    let src = crate_dir().join("tests/rt/cond_boost.c");
    for mode in ["kernel", "user"] {
        let exe =
            std::env::temp_dir().join(format!("heir-cond-boost-{mode}-{}", std::process::id()));
        build_c(&cc, &src, &heir_flags(), &exe);
        let stdout = run_c(&exe, &[rt.cpu.to_string(), mode.to_string()]);
        assert!(stdout.contains("unknown lend EINVAL"), "{mode}: {stdout}");
        assert!(
            stdout.contains("process-shared ENOTSUP"),
            "{mode}: {stdout}"
        );
        // While the FIFO 30 waiter waits, the FIFO 10 helper runs at 30:
        // under HEIR_BOOST_KERNEL the kernel boosts it (sched_getparam, what
        // was set, still says 10); under HEIR_BOOST_USER heir set it.
        let boosted = match mode {
            "kernel" => "helper while the waiter waits: kernel 30 set 10",
            _ => "helper while the waiter waits: kernel 30 set 30",
        };
        assert!(stdout.contains(boosted), "{mode}: {stdout}");
        assert!(
            stdout.contains("helper after its signal: kernel 10 set 10"),
            "{mode}: {stdout}"
        );
        assert!(stdout.contains("waiter woken"), "{mode}: {stdout}");
        assert!(stdout.contains("helper ok, waiter ok"), "{mode}: {stdout}");
    }
}

#[test]
fn c_rpc_donation_example_boosts_the_server_aborts_and_helps() {
    let Some(rt) = rt_or_skip("capi::rpc_donation", 30) else {
        return;
    };
    let Some(cc) = need_cc("capi::rpc_donation") else {
        return;
    };
    let exe = std::env::temp_dir().join(format!("heir-rpc-donation-{}", std::process::id()));
    let src = crate_dir().join("../../examples/c/rpc_donation.c");
    build_c(&cc, &src, &heir_flags(), &exe);
    let stdout = run_c(&exe, &[rt.cpu.to_string()]);
    // The kernel ran the FIFO-10 server at the FIFO-30 client's priority.
    assert!(
        stdout.contains("server priority while serving: 30"),
        "{stdout}"
    );
    assert!(
        stdout.contains("call with a 10 ms timeout: ETIMEDOUT"),
        "{stdout}"
    );
    // The aborted request was finished boosted by the next caller (helping).
    assert!(
        stdout.contains("server finished the aborted request at priority 30"),
        "{stdout}"
    );
    assert!(
        stdout.contains("next call helped the server finish, then got reply 3"),
        "{stdout}"
    );
    assert!(stdout.contains("destroy: 0"), "{stdout}");
}

#[test]
fn c_gang_barrier_example_shows_fig1_without_and_with_gpm() {
    let Some(rt) = rt_or_skip("capi::gang_barrier", 30) else {
        return;
    };
    let Some(cc) = need_cc("capi::gang_barrier") else {
        return;
    };
    let exe = std::env::temp_dir().join(format!("heir-gang-barrier-{}", std::process::id()));
    let src = crate_dir().join("../../examples/c/gang_barrier.c");
    build_c(&cc, &src, &heir_flags(), &exe);
    let stdout = run_c(&exe, &[rt.cpu.to_string()]);
    for line in [
        // Without GPM T_M delays T_L, and the barrier, until it stops.
        "gpm off: T_L priority while the barrier runs: 10",
        "gpm off: T_L reached its point after T_M stopped",
        "gpm off: barrier complete after T_M stopped",
        // With GPM T_L runs at the gang priority (T_H's 30) until its
        // notify, and the barrier completes first.
        "gpm on: T_L priority while the barrier runs: 30",
        "gpm on: T_L reached its point before T_M stopped",
        "gpm on: barrier complete before T_M stopped",
        "gpm off: T_L priority after release: 10",
        "gpm on: T_L priority after release: 10",
        "gpm off: fd readable while running 0, after completion 1",
        "gpm on: fd readable while running 0, after completion 1",
        "gpm on: second start while active: EBUSY",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

/// Builds `tests/rt/reliability.c` and runs it in `mode` on the test's CPU
/// (issue 21's cases, one per mode); its stdout.
fn reliability(mode: &str) -> Option<String> {
    let test = format!("capi::reliability_{mode}");
    let rt = rt_or_skip(&test, 60)?;
    let cc = need_cc(&test)?;
    let exe = std::env::temp_dir().join(format!("heir-reliability-{mode}-{}", std::process::id()));
    build_c(
        &cc,
        &crate_dir().join("tests/rt/reliability.c"),
        &heir_flags(),
        &exe,
    );
    Some(run_c(&exe, &[rt.cpu.to_string(), mode.to_string()]))
}

fn expect_lines(stdout: &str, lines: &[&str]) {
    for line in lines {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

/// `heir_queue_destroy` while a thread waits in `heir_queue_timedpop`, or
/// in `heir_queue_push` on a full queue, is refused with `EBUSY` (it freed
/// the queue under the waiter, which then died with SIGSEGV); the waiter
/// is served normally, and the idle queue is destroyed.
#[test]
fn c_queue_destroy_is_busy_while_a_pop_or_push_waits() {
    let Some(stdout) = reliability("queue") else {
        return;
    };
    expect_lines(
        &stdout,
        &[
            "destroy while a timed pop waits: EBUSY",
            "push: 0",
            "popper got the item: 1",
            "destroy while a push waits: EBUSY",
            "pusher done: 1",
            "popped 0 0: 8 9",
            "destroy when idle: 0",
            "use after destroy: EINVAL",
        ],
    );
}

/// `heir_rpc_call` with an absolute timeout already past returns
/// `ETIMEDOUT` every time and the server waiting in `heir_rpc_receive`
/// never gets the request (it was queued, received and run, and the call
/// sometimes returned 0).
#[test]
fn c_rpc_call_past_its_deadline_is_never_delivered() {
    let Some(stdout) = reliability("rpc") else {
        return;
    };
    expect_lines(
        &stdout,
        &[
            "server waits: 1",
            "expired calls: 50 ETIMEDOUT, 0 replied",
            "stop call: 0, server: 0",
            "server ran 0 expired requests",
            "destroy: 0",
        ],
    );
}

/// A ceiling mutex whose owner exits holding it is robust as a PI mutex:
/// the next locker (here the main thread) and a waiter blocked at the
/// owner's death get `EOWNERDEAD` holding it (at the ceiling);
/// `heir_ceiling_mutex_consistent` recovers it; unlocked without it, the
/// mutex is `ENOTRECOVERABLE`. Before, the next locker got 0 and the
/// blocked waiter was never woken.
#[test]
fn c_ceiling_mutex_whose_owner_died_is_robust() {
    let Some(stdout) = reliability("ceiling") else {
        return;
    };
    expect_lines(
        &stdout,
        &[
            "owner locked: 0",
            "consistent by a non-owner: EPERM",
            "next lock: EOWNERDEAD",
            "consistent: 0",
            "consistent again: EINVAL",
            "lock after recovery: 0",
            "owner locked, waiter started: 1",
            "waiter: EOWNERDEAD at priority 30",
            "waiter unlocks: 0",
            "lock after an unrepaired unlock: ENOTRECOVERABLE",
            "destroy: 0",
        ],
    );
}

/// A member's exit is its removal, also for a member inserted by tid that
/// never called heir (seen through its pidfd by the waiting thread) and
/// for one that only called `heir_barrier_join`: the waits return 0 at
/// once, `heir_gang_get` of the exited members answers `ENOENT`. Before,
/// an untimed wait never returned and the gang kept the dead tids.
#[test]
fn c_gang_and_barrier_members_that_exit_are_removed() {
    let Some(stdout) = reliability("gang") else {
        return;
    };
    expect_lines(
        &stdout,
        &[
            "insert by tid: 0 0",
            "run: 0, active 1",
            "gang wait after the counted member exited: 0 within 1 s: 1",
            "has_member of the exited counted member: 0, member 0",
            "has_member of the exited passive member: 0, member 0",
            "close: 0",
            "barrier join: 0",
            "barrier start: 0, active 1",
            "barrier wait after the member exited: 0 within 1 s: 1",
            "release: 0",
            "barrier destroy: 0",
        ],
    );
}

/// `tests/rt/static_init.c`: objects made only with `heir.h`'s static
/// initialisers (no init call) work under real contention: two threads
/// racing to first use a static mutex exclude each other 400000 times and
/// pass tokens through a static condition variable; a static mutex's
/// holder is boosted (FIFO 10 → 30 → 10); a static
/// ceiling mutex lifts its holder to its ceiling, refuses trylock and
/// timedlock while held, and works with `heir_cond_timedwait_ceiling`.
#[test]
fn c_static_initialisers_work_without_init_calls() {
    let Some(rt) = rt_or_skip("capi::static_init", 30) else {
        return;
    };
    let Some(cc) = need_cc("capi::static_init") else {
        return;
    };
    let exe = std::env::temp_dir().join(format!("heir-static-init-{}", std::process::id()));
    let src = crate_dir().join("tests/rt/static_init.c");
    let source = std::fs::read_to_string(&src).expect("static_init.c");
    // The objects under test are never initialised by a call: only the
    // attribute check's own object is.
    let inits: usize = [
        "mutex",
        "cond",
        "ceiling_mutex",
        "queue",
        "rpc",
        "gang",
        "barrier",
    ]
    .iter()
    .map(|o| source.matches(&format!("heir_{o}_init(")).count())
    .sum();
    assert_eq!(inits, 1, "{src:?}");
    assert!(source.contains("heir_mutex_init(&shared, &ma)"));
    build_c(&cc, &src, &heir_flags(), &exe);
    let stdout = run_c(&exe, &[rt.cpu.to_string()]);
    expect_lines(
        &stdout,
        &[
            "exclusion: threads 0 0, counter 400000 of 400000",
            "tokens passed: all",
            // The kernel's PI boost, and heir's engine, which saw the
            // contention, set the same priority.
            "holder while contended: kernel 30 set 30",
            "holder after unlock: kernel 10 set 10",
            "contender lock: 0",
            "contender relock: EBUSY",
            "boost threads: 0 0",
            "ceiling lock: 0 at 20",
            "ceiling relock by its owner: EDEADLK",
            "ceiling trylock while held: EBUSY",
            "ceiling timedlock while held: ETIMEDOUT",
            "ceiling unlock: 0, back at 5",
            "wait_ceiling: 0 ready 1 at 20",
            "ceiling threads: 0 0",
            "zeroed mutex: EINVAL",
            "bad static ceiling: EINVAL",
            "destroy unused static: 0",
            "lock after destroy: EINVAL",
            "destroy used static: 0 0 0",
            "process-shared mutex: ENOTSUP",
        ],
    );
}

/// The declarations of `heir.h`, in order: (name, the comment just above
/// it). A declaration is a line starting with a return type and naming a
/// `heir_*` function, up to its `;`; the comment is the `/** ... */` block
/// ending on the line before it (a `HEIR_DEPRECATED(...)` line between
/// them belongs to the declaration).
fn header_functions(header: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = header.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let l = line.trim_start();
        let decl = l
            .strip_prefix("HEIR_DEPRECATED(")
            .and_then(|r| r.split_once(')'))
            .map_or(l, |(_, rest)| rest.trim_start());
        let Some(rest) = ["int ", "pid_t ", "uint32_t "]
            .iter()
            .find_map(|t| decl.strip_prefix(t))
        else {
            continue;
        };
        let Some(name) = rest.split('(').next().filter(|n| n.starts_with("heir_")) else {
            continue;
        };
        if !rest.contains('(') {
            continue;
        }
        // The comment: walk up over a HEIR_DEPRECATED line, then the block.
        let mut j = i;
        if j > 0 && lines[j - 1].trim_start().starts_with("HEIR_DEPRECATED(") {
            j -= 1;
        }
        let mut comment = Vec::new();
        if j > 0 && lines[j - 1].trim_end().ends_with("*/") {
            let mut k = j - 1;
            loop {
                comment.push(lines[k]);
                if lines[k].trim_start().starts_with("/**") || k == 0 {
                    break;
                }
                k -= 1;
            }
            comment.reverse();
        }
        out.push((name.to_string(), comment.join("\n")));
    }
    out
}

/// Every function `heir.h` declares has its own `/** */` comment saying
/// what it returns (or that it returns as another function) and its
/// safety line: thread safety (`MT-Safe`), async-signal safety (`AS-Safe`
/// or `AS-Unsafe`), cancellation (`cancel: no`) and fork (`fork:`).
#[test]
fn every_function_in_heir_h_has_a_comment() {
    let header = std::fs::read_to_string(crate_dir().join("include/heir.h")).expect("heir.h");
    let fns = header_functions(&header);
    assert!(fns.len() >= 80, "found {} declarations", fns.len());
    let mut missing = Vec::new();
    for (name, comment) in &fns {
        let c = comment.replace("\n *", " ");
        let ok = c.starts_with("/**")
            && (c.contains("Returns") || c.contains("returns as") || name == "heir_rpc_call")
            && c.contains("MT-Safe")
            && (c.contains("AS-Unsafe") || c.contains("AS-Safe"))
            && c.contains("cancel: no")
            && c.contains("fork: ");
        if !ok {
            missing.push(format!("{name}: {comment:?}"));
        }
    }
    assert!(
        missing.is_empty(),
        "without a full comment:\n{}",
        missing.join("\n")
    );
    // Every exported function is declared (and so commented).
    let src = std::fs::read_to_string(crate_dir().join("src/capi.rs")).expect("capi.rs");
    let names: Vec<&str> = fns.iter().map(|(n, _)| n.as_str()).collect();
    for line in src.lines() {
        let l = line.trim_start();
        if let Some(rest) = l
            .strip_prefix("pub unsafe extern \"C\" fn ")
            .or_else(|| l.strip_prefix("pub extern \"C\" fn "))
        {
            let name = rest.split('(').next().expect("name");
            assert!(names.contains(&name), "heir.h does not declare {name}");
        }
    }
}

/// heir.h follows its own conventions: every object type has `_init` and
/// `_destroy`; no function returns something else than `int` but
/// `heir_gettid` and the deprecated ones; the deprecated names are marked.
#[test]
fn heir_h_names_follow_one_convention() {
    let header = std::fs::read_to_string(crate_dir().join("include/heir.h")).expect("heir.h");
    let fns = header_functions(&header);
    let names: Vec<&str> = fns.iter().map(|(n, _)| n.as_str()).collect();
    for obj in [
        "mutex",
        "cond",
        "ceiling_mutex",
        "queue",
        "rpc",
        "gang",
        "barrier",
    ] {
        for verb in ["init", "destroy"] {
            let f = format!("heir_{obj}_{verb}");
            assert!(names.contains(&f.as_str()), "no {f}");
        }
    }
    for (add, remove) in [
        ("heir_cond_add_helper", "heir_cond_remove_helper"),
        ("heir_queue_add_producer", "heir_queue_remove_producer"),
        ("heir_queue_add_consumer", "heir_queue_remove_consumer"),
        ("heir_rpc_add_server", "heir_rpc_remove_server"),
        ("heir_gang_add_member", "heir_gang_remove_member"),
        ("heir_barrier_add_member", "heir_barrier_remove_member"),
    ] {
        assert!(
            names.contains(&add) && names.contains(&remove),
            "{add}/{remove}"
        );
    }
    for line in header.lines() {
        let l = line.trim_start();
        if let Some(rest) = l
            .strip_prefix("pid_t heir_")
            .or(l.strip_prefix("uint32_t heir_"))
        {
            assert!(
                rest.starts_with("gettid(") || header.contains(&format!("\") {l}")),
                "returns no errno and is not deprecated: {l}"
            );
        }
    }
    for old in [
        "heir_thread_join",
        "heir_gang_create",
        "heir_gang_close",
        "heir_gang_insert",
        "heir_gang_remove(",
        "heir_gang_get",
        "heir_gang_set_active",
        "heir_cond_helpers_add",
        "heir_rpc_server_join",
        "heir_barrier_join",
    ] {
        let line = header
            .lines()
            .find(|l| {
                l.contains(old)
                    && !l.trim_start().starts_with("/**")
                    && !l.trim_start().starts_with('*')
            })
            .unwrap_or_else(|| panic!("{old} not declared"));
        assert!(
            line.contains("HEIR_DEPRECATED("),
            "{old} not deprecated: {line}"
        );
    }
}
