//! `heir run` and `heir sim` give a program that goes wrong the same
//! verdict: exit 2, the same error line on stderr (once, not doubled, with
//! the file, the position and the JSON path), nothing on stdout (issue 7,
//! item 5). The reader refuses these programs before either face runs them;
//! what gets past it is refused while running, with the simulator's words on
//! both faces (heir-rt's `run_errors` tests, which edit a read scenario).

use crate::support::*;

/// Runs `heir sim` and `heir run` on `text`; returns both stderrs after
/// checking the bad-input contract on each.
fn both(tag: &str, text: &str) -> (String, String) {
    let dir = TempDir::new(tag);
    let file = dir.write("prog.json", text);
    let mut errs = Vec::new();
    for cmd in ["sim", "run"] {
        let o = heir([cmd.as_ref(), file.as_os_str()]);
        let all = stderr(&o);
        assert_eq!(code(&o), 2, "heir {cmd}: {all}");
        assert_eq!(stdout(&o), "", "heir {cmd}: nothing on stdout");
        // `heir run` may warn first about other real-time work on the CPUs.
        let err: String = all
            .lines()
            .filter(|l| !l.starts_with("heir: warning: "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(err.lines().count(), 1, "heir {cmd}: one error line: {all}");
        assert!(err.starts_with("heir: error: "), "{all}");
        errs.push(
            err.replace(" cannot simulate: ", " cannot VERB: ")
                .replace(" cannot run: ", " cannot VERB: "),
        );
    }
    let run = errs.pop().expect("run");
    let sim = errs.pop().expect("sim");
    (sim, run)
}

#[test]
fn unlock_without_the_mutex_is_the_same_error() {
    let Some(_rt) = rt_or_skip("run_errors::unlock") else {
        return;
    };
    let (sim, run) = both(
        "unlock",
        r#"{
  "global" : { "duration" : 0.2, "default_policy" : "SCHED_FIFO" },
  "resources" : { "m" : { "type" : "mutex" } },
  "tasks" : {
    "A" : { "priority" : 10, "run" : 100, "unlock" : "m",
            "timer" : { "ref" : "t", "period" : 10000 } }
  }
}
"#,
    );
    assert_eq!(run, sim);
    assert!(run.contains("prog.json:5:43: at tasks.A.unlock: "), "{run}");
    assert!(run.contains("which it does not hold"), "{run}");
    assert!(!run.contains("runtime"), "{run}");
}

#[test]
fn wait_without_the_mutex_is_the_same_error() {
    let Some(_rt) = rt_or_skip("run_errors::wait") else {
        return;
    };
    let (sim, run) = both(
        "wait",
        r#"{
  "global" : { "duration" : 0.2, "default_policy" : "SCHED_FIFO" },
  "resources" : { "m" : { "type" : "mutex" }, "c" : { "type" : "cond" } },
  "tasks" : {
    "A" : { "priority" : 10, "run" : 100, "wait" : { "ref" : "c", "mutex" : "m" },
            "timer" : { "ref" : "t", "period" : 10000 } }
  }
}
"#,
    );
    assert_eq!(run, sim);
    assert!(run.contains("tasks.A.wait: "), "{run}");
}

#[test]
fn a_zero_time_loop_is_the_same_error() {
    let Some(_rt) = rt_or_skip("run_errors::zero_time") else {
        return;
    };
    let (sim, run) = both(
        "zero",
        r#"{
  "global" : { "duration" : 10, "default_policy" : "SCHED_FIFO" },
  "resources" : { "m" : { "type" : "mutex" } },
  "tasks" : {
    "A" : { "priority" : 10, "lock" : "m", "unlock" : "m" }
  }
}
"#,
    );
    assert_eq!(run, sim);
    assert!(run.contains("prog.json:5:5: at tasks.A: "), "{run}");
}
