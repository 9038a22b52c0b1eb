//! `heir_runner::run` refuses a program that goes wrong while it runs exactly as
//! the simulator does: same JSON path, same message (issue 7, item 5). The
//! programs are built by editing a valid file's events, as a program that
//! got past the reader would be.

use heir_runner::run::{run, RunConfig, RunError};
use heir_scenario::{EventKind, Scenario};
use heir_sim::{NullObserver, SimConfig, SimError};

use crate::common::*;

/// Parses `text`, then drops the events of task 0 whose key is in `drop`.
fn program(text: &str, drop: &[&str], cpu: u32) -> Scenario {
    let mut sc = heir_scenario::parse_str(text, "t.json").expect("valid file");
    for ev in &mut sc.tasks[0].phases {
        ev.events.retain(|e| !drop.contains(&e.key.as_str()));
    }
    for t in &mut sc.tasks {
        t.cpus = Some(vec![cpu]);
    }
    sc
}

/// The simulator's error: (path, line, column, message), and as displayed.
fn sim_error(sc: &Scenario) -> ((String, u32, u32, String), String) {
    match heir_sim::simulate(sc, &SimConfig::default(), &mut NullObserver) {
        Err(e @ SimError::Invalid { .. }) => {
            let shown = e.to_string();
            let SimError::Invalid {
                path,
                line,
                column,
                message,
            } = e;
            ((path, line, column, message), shown)
        }
        Ok(r) => panic!("the simulator accepted it: {r:?}"),
    }
}

/// `heir_runner::run`'s error, as [`sim_error`].
fn run_error(sc: &Scenario) -> ((String, u32, u32, String), String) {
    match run(sc, &RunConfig::default()) {
        Err(e @ RunError::Invalid { .. }) => {
            let shown = e.to_string();
            match e {
                RunError::Invalid {
                    path,
                    line,
                    column,
                    message,
                } => ((path, line, column, message), shown),
                _ => unreachable!(),
            }
        }
        Err(e) => panic!("expected the simulator's error, got {e:?}"),
        Ok(r) => panic!("expected an error, got {:?}", r.report),
    }
}

const LOCKED: &str = r#"{
  "global" : { "duration" : 0.2, "default_policy" : "SCHED_FIFO" },
  "resources" : { "m" : { "type" : "mutex", "protocol" : "PROTOCOL" }, "c" : { "type" : "cond" } },
  "tasks" : {
    "A" : { "priority" : 10, "lock" : "m", "run" : 100, "unlock" : "m",
            "timer" : { "ref" : "unique", "period" : 10000 } },
    "B" : { "priority" : 20, "lock" : "m", "wait" : { "ref" : "c", "mutex" : "m" },
            "unlock" : "m", "timer" : { "ref" : "unique", "period" : 10000 } }
  }
}"#;

#[test]
fn unlock_of_a_mutex_not_held_is_the_simulators_error() {
    let Some(rt) = rt_or_skip("run_errors::unlock", 20) else {
        return;
    };
    for protocol in ["inherit", "none", "ceiling"] {
        let text = LOCKED.replace("PROTOCOL", protocol);
        let text = text.replace(
            r#""protocol" : "ceiling" }"#,
            r#""protocol" : "ceiling", "ceiling" : 30 }"#,
        );
        // A unlocks m without locking it; B never runs into trouble first
        // (it waits on c, which nobody signals).
        let mut sc = program(&text, &["lock"], rt.cpu);
        sc.tasks.truncate(1);
        let sim = sim_error(&sc);
        assert_eq!(sim.0 .0, "tasks.A.unlock");
        assert_eq!(sim.0 .3, "thread A releases mutex m which it does not hold");
        assert!(sim
            .1
            .ends_with(": at tasks.A.unlock: thread A releases mutex m which it does not hold"));
        assert_eq!(run_error(&sc), sim, "{protocol}");
    }
}

#[test]
fn wait_without_its_mutex_is_the_simulators_error() {
    let Some(rt) = rt_or_skip("run_errors::wait", 20) else {
        return;
    };
    for protocol in ["inherit", "none"] {
        let text = LOCKED.replace("PROTOCOL", protocol);
        let mut sc = program(&text, &[], rt.cpu);
        // B waits on c without holding m (its lock and unlock dropped).
        sc.tasks.swap(0, 1);
        sc.tasks[0].phases.iter_mut().for_each(|p| {
            p.events
                .retain(|e| !matches!(e.kind, EventKind::Lock(_) | EventKind::Unlock(_)))
        });
        sc.tasks.truncate(1);
        let sim = sim_error(&sc);
        assert_eq!(sim.0 .0, "tasks.B.wait");
        assert_eq!(
            sim.0 .3,
            "thread B waits on c with mutex m, which it does not hold"
        );
        assert_eq!(run_error(&sc), sim, "{protocol}");
    }
}

#[test]
fn a_zero_time_loop_is_refused_not_spun() {
    let Some(rt) = rt_or_skip("run_errors::zero_time", 20) else {
        return;
    };
    let text = LOCKED.replace("PROTOCOL", "inherit");
    // A: lock m, unlock m, forever, without run or timer.
    let mut sc = program(&text, &["run", "timer"], rt.cpu);
    sc.tasks.truncate(1);
    sc.global.duration_s = Some(30.0);
    let sim = sim_error(&sc);
    let t0 = heir::sys::now_ns();
    let real = run_error(&sc);
    let took_ms = (heir::sys::now_ns() - t0) / 1_000_000;
    assert_eq!(real.0 .0, "tasks.A");
    assert_eq!(
        (&real.0 .0, real.0 .1, real.0 .2),
        (&sim.0 .0, sim.0 .1, sim.0 .2),
        "at the task"
    );
    // The same words; only the instant differs (the simulator's is 0 µs,
    // a real thread's is when it got there).
    let words = |m: &str| m.replace(|c: char| c.is_ascii_digit() || c == '.', "");
    assert_eq!(words(&real.1), words(&sim.1));
    assert!(real
        .0
         .3
        .starts_with("no time passes: thread A keeps executing zero-time events at "));
    // Refused long before the 30 s duration: the spinning is bounded by
    // ZERO_TIME_EVENT_LIMIT, not by the run's end.
    assert!(took_ms < 5_000, "took {took_ms} ms");
}
