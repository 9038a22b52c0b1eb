//! The program checks (issue 7, item 5): what the simulator and the runner
//! found only while running — an unlock or a wait without the mutex, a
//! relock, a task that never lets time pass — is refused at read time, at
//! the event, with what happened.

use crate::common::*;

#[test]
fn unlock_of_a_mutex_never_locked() {
    assert_eq!(
        err_str(&one_task(r#""loop": 1, "run": 1000, "unlock": "m""#)),
        "t.json:1:42: at tasks.A.unlock: task \"A\" unlocks mutex \"m\", which it does not hold \
         at this point: lock \"m\" before the unlock"
    );
}

#[test]
fn unlock_twice() {
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "lock": "m", "run": 10, "unlock": "m", "unlock1": "m""#
        )),
        "t.json:1:68: at tasks.A.unlock1: task \"A\" unlocks mutex \"m\", which it does not hold \
         at this point: it unlocked it at tasks.A.unlock; lock \"m\" before the unlock"
    );
}

#[test]
fn wait_without_the_mutex_says_what_happened() {
    // Was, from the simulator: "thread A releases mutex m which it does not hold".
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "run": 1000, "wait": {"ref": "c", "mutex": "m"}"#
        )),
        "t.json:1:42: at tasks.A.wait: task \"A\" waits on cond \"c\" with mutex \"m\", which it \
         does not hold at this point: lock \"m\" before the wait"
    );
    // sync is a signal and a wait.
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "sync": {"ref": "c", "mutex": "m"}"#
        )),
        "t.json:1:29: at tasks.A.sync: task \"A\" waits on cond \"c\" with mutex \"m\", which it \
         does not hold at this point: lock \"m\" before the wait"
    );
    // After an unlock.
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "lock": "m", "unlock": "m", "wait": {"ref": "c", "mutex": "m"}"#
        )),
        "t.json:1:57: at tasks.A.wait: task \"A\" waits on cond \"c\" with mutex \"m\", which it \
         does not hold at this point: it unlocked it at tasks.A.unlock; lock \"m\" before the wait"
    );
}

#[test]
fn relock_of_a_held_mutex() {
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "lock": "m", "run": 10, "lock1": "m", "unlock": "m""#
        )),
        "t.json:1:53: at tasks.A.lock1: task \"A\" locks mutex \"m\", which it already holds: it \
         locked it at tasks.A.lock and has not unlocked it since (a mutex cannot be locked twice)"
    );
}

#[test]
fn the_held_set_after_a_loop_must_allow_the_next_one() {
    // Forever (the default loop): the second pass relocks.
    assert_eq!(
        err_str(&one_task(r#""lock": "m", "run": 10"#)),
        "t.json:1:18: at tasks.A.lock: task \"A\" locks mutex \"m\", which it already holds: it \
         locked it at tasks.A.lock on its previous loop and has not unlocked it since (a mutex \
         cannot be locked twice)"
    );
    // Once: a thread may exit holding a mutex.
    ok(&one_task(r#""loop": 1, "lock": "m", "run": 10"#));
    // A phase that loops: its second pass.
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "phases": {"p1": {"lock": "m"}, "p2": {"loop": 2, "run": 5, "unlock": "m"}}"#
        )),
        "t.json:1:89: at tasks.A.phases.p2.unlock: task \"A\" unlocks mutex \"m\", which it does \
         not hold at this point: it unlocked it at tasks.A.phases.p2.unlock on the previous pass of \
         phase \"p2\"; lock \"m\" before the unlock"
    );
    assert_eq!(
        err_str(&one_task(
            r#""loop": 1, "phases": {"p": {"loop": 3, "lock": "m", "run": 5}}"#
        )),
        "t.json:1:57: at tasks.A.phases.p.lock: task \"A\" locks mutex \"m\", which it already \
         holds: it locked it at tasks.A.phases.p.lock on the previous pass of phase \"p\" and has \
         not unlocked it since (a mutex cannot be locked twice)"
    );
}

#[test]
fn a_mutex_held_across_phases_and_loops_is_fine() {
    // Locked in one phase, waited with in a looping one, unlocked in the
    // last: every pass starts as the previous one ended.
    ok(r#"{"global": {"duration": 1}, "tasks": {
        "A": {"phases": {
            "take": {"lock": "m"},
            "work": {"loop": 3, "run": 10, "wait": {"ref": "c", "mutex": "m"}},
            "give": {"unlock": "m", "sleep": 100}}},
        "B": {"run": 10, "lock": "m", "signal": "c", "unlock": "m"}}}"#);
    // Unlock first, then lock, in a loop: the first pass unlocks nothing.
    assert!(err_str(&one_task(r#""unlock": "m", "run": 1, "lock": "m""#)).contains(
        "task \"A\" unlocks mutex \"m\", which it does not hold at this point: lock \"m\" before the unlock"
    ));
}

#[test]
fn instances_and_silent_tasks_are_checked_too() {
    // No threads: still read and checked.
    assert!(
        err_str(&one_task(r#""instance": 0, "loop": 1, "unlock": "m""#))
            .contains("task \"A\" unlocks mutex \"m\"")
    );
}

#[test]
fn a_task_that_never_lets_time_pass() {
    // Was: the simulator refused it after 4 million steps; heir run spun at
    // 10 million jobs a second.
    let msg = |how: &str| {
        format!(
            "task \"A\" never lets time pass: none of its events takes time or can block, and \
             {how} (the simulator would spin at one instant, heir run would busy-loop): give it \
             a \"run\", \"runtime\", \"sleep\" or \"timer\" of more than 0 µs"
        )
    };
    assert_eq!(
        err_str(&one_task(
            r#""priority": 10, "policy": "SCHED_FIFO", "run": 0"#
        )),
        format!("t.json:1:12: at tasks.A: {}", msg("it loops forever"))
    );
    assert_eq!(
        err(&one_task(
            r#""lock": "m", "unlock": "m", "signal": "c", "yield", "sleep": {"min": 0, "max": 0}"#
        ))
        .message,
        msg("it loops forever")
    );
    assert_eq!(
        err(&one_task(
            r#""loop": 20000, "phases": {"p": {"loop": 2, "run": 0, "resume": "A"}}"#
        ))
        .message,
        msg("its threads run 80000 of them in all, over heir's limit of 65536 for such a task")
    );
    // A few zero-time passes are fine.
    ok(&one_task(r#""loop": 10, "run": 0"#));
    ok(&one_task(
        r#""loop": 16384, "instance": 2, "lock": "m", "unlock": "m""#,
    ));
}

#[test]
fn time_or_a_possible_block_is_enough() {
    for body in [
        r#""run": 1"#,
        r#""runtime": 1"#,
        r#""sleep": 1"#,
        r#""run": {"min": 0, "max": 1}"#,
        r#""timer": {"ref": "t", "period": 1}"#,
        r#""suspend""#,
        r#""lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m""#,
        r#""push": "q""#,
        r#""pop": "q""#,
        // Another thread of the same task may hold it.
        r#""instance": 2, "lock": "m", "unlock": "m""#,
    ] {
        let s = parse(&one_task(body));
        assert!(s.is_ok(), "{body}: {:?}", s.err());
    }
    // A mutex another task uses can block; a barrier of two too.
    ok(
        r#"{"tasks": {"A": {"lock": "m", "unlock": "m"}, "B": {"loop": 1, "lock": "m", "run": 5, "unlock": "m"}}}"#,
    );
    ok(r#"{"tasks": {"A": {"barrier": "b"}, "B": {"barrier": "b", "run": 5}}}"#);
    // A barrier of one never blocks.
    assert!(err_str(&one_task(r#""barrier": "b""#)).contains("never lets time pass"));
}

fn parse(text: &str) -> Result<heir_scenario::Scenario, heir_scenario::ScenarioError> {
    heir_scenario::parse_str(text, "t.json")
}
