//! `tests/c/semantics.c` — static initialisers, normal / recursive /
//! errorcheck / robust mutexes, trylock, timed and clock locks, condition
//! variables (both clocks, the old `GLIBC_2.2.5` symbol), barriers, fork
//! and fork + exec — on glibc (validating the program), then under
//! `LD_PRELOAD` of this crate's `libheir_preload.so`, whose summary lines
//! must count what the program made. No real-time priorities needed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The library cargo built for these tests (`target/<profile>/deps`,
/// beside the test binary).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let lib = exe.parent().expect("deps dir").join("libheir_preload.so");
    assert!(lib.is_file(), "{} not built", lib.display());
    lib
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("heir-preload-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn compile(src: &Path, out: &Path) {
    let o = Command::new("cc")
        .args(["-O1", "-Wall", "-pthread"])
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg("-ldl")
        .output()
        .expect("cc runs");
    assert!(
        o.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `prog args` (with the library when `lib`), killed after 30 s.
fn run(prog: &Path, args: &[&str], lib: Option<(&Path, &Path)>) -> (i32, String, String) {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "30"]).arg(prog).args(args);
    if let Some((lib, summary)) = lib {
        c.env("LD_PRELOAD", lib).env("HEIR_EXEC_SUMMARY", summary);
    }
    let o = c.output().expect("run");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn field(line: &str, key: &str) -> u64 {
    let pat = format!("\"{key}\":");
    let i = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
    line[i..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .expect("a number")
}

#[test]
fn pthread_semantics_are_kept_under_the_preload() {
    let dir = tmp("semantics");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/semantics.c");
    let prog = dir.join("semantics");
    compile(&src, &prog);

    let (rc, out, err) = run(&prog, &["glibc"], None);
    assert_eq!(rc, 0, "on glibc: {out}\n{err}");
    assert!(out.contains("all ok"), "{out}");

    let summary = dir.join("summary.jsonl");
    let lib = library();
    let (rc, out, err) = run(&prog, &[], Some((&lib, &summary)));
    assert_eq!(rc, 0, "under the preload: {out}\n{err}");
    assert!(out.contains("all ok"), "{out}");
    assert!(
        out.contains("child interposed 1"),
        "the exec'd child: {out}"
    );

    let text = std::fs::read_to_string(&summary).expect("summary written");
    let lines: Vec<&str> = text.lines().collect();
    // `timeout` itself, the program, its fork child, its exec'd child.
    let main: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("\"comm\":\"semantics\"") && field(l, "barriers") == 1)
        .collect();
    assert_eq!(main.len(), 1, "one line of the program itself: {text}");
    let m = main[0];
    // normal, recursive, errorcheck, count_lock, robust; pshared and
    // protect to glibc; the static and the monotonic condvar; the barrier.
    assert_eq!(field(m, "mutexes"), 5, "{m}");
    assert_eq!(field(m, "mutexes_glibc"), 2, "{m}");
    assert_eq!(field(m, "conds"), 2, "{m}");
    assert!(field(m, "helpers_learned") >= 1, "{m}");
    // The fork child counts from zero: its own one mutex use only.
    let forked = lines
        .iter()
        .filter(|l| l.contains("\"comm\":\"semantics\"") && field(l, "barriers") == 0)
        .count();
    assert_eq!(forked, 1, "the fork child's line: {text}");
    assert!(
        lines.iter().any(|l| l.contains("\"comm\":\"exe\"")),
        "the exec'd child's line: {text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
