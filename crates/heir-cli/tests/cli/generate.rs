//! `heir completions SHELL` and `heir man DIR`: generated from the same
//! clap definition as `--help`, one page per subcommand.

use crate::support::{code, heir, stderr, stdout, TempDir};

/// The subcommands `heir --help` lists, in its order.
fn subcommands() -> Vec<String> {
    let o = heir(["--help"]);
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    let list = out
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: section")
        .split("\n\n")
        .next()
        .expect("its lines");
    list.lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn man_writes_one_page_per_subcommand_named_as_typed() {
    let dir = TempDir::new("man");
    let out_dir = dir.join("man1");
    let o = heir([std::ffi::OsStr::new("man"), out_dir.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let subs = subcommands();
    assert!(subs.len() >= 10, "{subs:?}");
    let mut expected: Vec<String> = vec!["heir.1".into()];
    expected.extend(subs.iter().map(|s| format!("heir-{s}.1")));
    let mut written: Vec<String> = std::fs::read_dir(&out_dir)
        .expect("the directory")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    expected.sort();
    assert_eq!(written, expected, "no temporary file left behind either");
    // stdout lists the pages it wrote, one per line.
    assert_eq!(stdout(&o).lines().count(), expected.len());

    let top = std::fs::read_to_string(out_dir.join("heir.1")).unwrap();
    assert!(
        top.starts_with(".ie") || top.contains(".TH heir 1"),
        "{top}"
    );
    for s in &subs {
        assert!(top.contains(s.as_str()), "heir.1 lists {s}");
    }
    let run = std::fs::read_to_string(out_dir.join("heir-run.1")).unwrap();
    assert!(run.contains(".TH heir-run 1"), "{run}");
    // The synopsis names the command as typed, and the options are there.
    assert!(run.contains("heir run"), "{run}");
    for opt in ["\\-\\-partition", "\\-\\-trace", "\\-\\-compare"] {
        assert!(run.contains(opt), "heir-run.1 documents {opt}");
    }
}

#[test]
fn completions_name_every_subcommand_and_option() {
    let subs = subcommands();
    let o = heir(["completions", "bash"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let bash = stdout(&o);
    assert!(bash.contains("-F _heir"), "registers the function");
    for s in &subs {
        assert!(
            bash.contains(&format!("heir__subcmd__{}", s.replace('-', "__"))),
            "{s}"
        );
    }
    assert!(bash.contains("--partition"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = heir(["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("inversions"), "{shell}");
    }
}

#[test]
fn an_unknown_shell_is_bad_input() {
    let o = heir(["completions", "tcsh"]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
    assert!(stdout(&o).is_empty());
}
