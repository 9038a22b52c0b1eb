//! Every `.json` file of the distribution's `rt-app` package
//! (/usr/share/doc/rt-app/examples, with `tutorial/`, `merge/` and
//! `cpufreq_governor_efficiency/`) through `heir sim`: the verdict of each,
//! and a file the table does not know fails the test.

use std::path::{Path, PathBuf};

use crate::support::*;

/// Where Debian's `rt-app` package installs rt-app's example files.
const RTAPP_EXAMPLES: &str = "/usr/share/doc/rt-app/examples";

/// What `heir sim` does with a file.
enum Verdict {
    /// Exit 0; stderr holds this warning when there is one to check.
    Runs(Option<&'static str>),
    /// Exit 2; stderr is `heir: error: FILE:` then this prefix.
    Refused(&'static str),
}
use Verdict::*;

/// The verdict of each file, by its path under [`RTAPP_EXAMPLES`].
const VERDICTS: &[(&str, Verdict)] = &[
    ("browser-long.json", Runs(None)),
    ("browser-short.json", Runs(None)),
    ("cpufreq_governor_efficiency/calibration.json", Runs(None)),
    ("cpufreq_governor_efficiency/dvfs.json", Runs(None)),
    // Fragments that rt-app's doc/merge.py joins into one file; each alone
    // is not a scenario (rt-app refuses them too).
    (
        "merge/global.json",
        Refused("1:1: missing \"tasks\": expected an object of tasks at the top level"),
    ),
    (
        "merge/resources.json",
        Refused("1:1: missing \"tasks\": expected an object of tasks at the top level"),
    ),
    // A pre-1.0 syntax (`exec`, ...) that rt-app 1.0 rejects too.
    (
        "merge/thread0.json",
        Refused("4:10: at tasks.thread0.exec: unknown key \"exec\" in task \"thread0\": "),
    ),
    (
        "merge/thread1.json",
        Refused("4:10: at tasks.thread1.exec: unknown key \"exec\" in task \"thread1\": "),
    ),
    (
        "merge/thread2.json",
        Refused("4:10: at tasks.thread2.exec: unknown key \"exec\" in task \"thread2\": "),
    ),
    (
        "merge/thread3.json",
        Refused("4:10: at tasks.thread3.exec: unknown key \"exec\" in task \"thread3\": "),
    ),
    ("mp3-long.json", Runs(None)),
    ("mp3-short.json", Runs(None)),
    // `heavy1` twice: rt-app keeps the later value, so does heir.
    (
        "spreading-tasks.json",
        Runs(Some(
            "spreading-tasks.json:38:33: tasks.thread2.phases.heavy1: phase \"heavy1\" is given 2 times (first at line 28, column 5): heir keeps only this last one, in the first one's place, as rt-app does (its JSON reader keeps a repeated key's last value)\n",
        )),
    ),
    ("template.json", Runs(None)),
    ("tutorial/example1.json", Runs(None)),
    ("tutorial/example2.json", Runs(None)),
    ("tutorial/example3.json", Runs(None)),
    ("tutorial/example4.json", Runs(None)),
    ("tutorial/example5.json", Runs(None)),
    // rt-app's memory-bandwidth load, which heir does not model.
    (
        "tutorial/example6.json",
        Refused("11:4: at tasks.thread0.mem: event \"mem\" is not modelled by heir (rt-app's mem is a memory-bandwidth load)\n"),
    ),
    ("tutorial/example7.json", Runs(None)),
    ("tutorial/example8.json", Runs(None)),
    ("video-long.json", Runs(None)),
    ("video-short.json", Runs(None)),
];

/// The `.json` files under `dir`, as paths relative to it, sorted.
fn json_files(dir: &Path, under: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read the examples directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            json_files(&path, under, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            let rel = path.strip_prefix(under).expect("under the directory");
            out.push(rel.to_str().expect("a UTF-8 name").to_string());
        }
    }
}

#[test]
fn every_rtapp_example_file_has_its_verdict() {
    let dir = PathBuf::from(RTAPP_EXAMPLES);
    if !dir.is_dir() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "rt-app's example files not found at {RTAPP_EXAMPLES}: install the `rt-app` package (apt-get install rt-app; test.sh does)"
            );
        }
        eprintln!(
            "skipped: rt-app's example files not found at {RTAPP_EXAMPLES} (install the `rt-app` package; under CI=true this fails)"
        );
        return;
    }
    let mut found = Vec::new();
    json_files(&dir, &dir, &mut found);
    found.sort();
    let known: Vec<&str> = VERDICTS.iter().map(|(name, _)| *name).collect();
    assert_eq!(found, known, "the package's .json files and the table");
    for (name, verdict) in VERDICTS {
        let path = dir.join(name);
        let out = heir([
            "sim".as_ref(),
            path.as_os_str(),
            "--duration".as_ref(),
            "0.2".as_ref(),
        ]);
        let err = stderr(&out);
        match verdict {
            Runs(warning) => {
                assert_eq!(code(&out), 0, "{name}: {err}");
                assert!(!err.contains("error"), "{name}: {err}");
                if let Some(w) = warning {
                    let line = format!("heir: warning: {}", dir.display());
                    assert!(err.contains(&format!("{line}/{w}")), "{name}: {err}");
                }
            }
            Refused(prefix) => {
                assert_eq!(code(&out), 2, "{name}: {err}");
                assert!(out.stdout.is_empty(), "{name}: {}", stdout(&out));
                let want = format!("heir: error: {}:{prefix}", path.display());
                assert!(err.starts_with(&want), "{name}:\n{err}\nwanted:\n{want}");
            }
        }
    }
}
