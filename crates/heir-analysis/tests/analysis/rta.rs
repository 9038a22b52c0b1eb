//! Response-time analysis: textbook fixed points, the busy window beyond the
//! period, overload, and reservations sharing the CPU.

use heir_analysis::fp::busy_window;
use heir_analysis::model::{Class, Task, TaskSet};
use heir_analysis::{analyze_set, Analyzer, Unbounded};

use crate::MS;

fn independent(tasks: &[(&str, i32, u64, u64)]) -> TaskSet {
    TaskSet {
        tasks: tasks
            .iter()
            .map(|&(n, p, t, c)| Task::fixed(n, 0, p, t, c, vec![], vec![]))
            .collect(),
        servers: vec![],
        mutexes: vec![],
        pi_cv: true,
    }
}

#[test]
fn textbook_response_times() {
    // (T, C) = (7, 3), (12, 3), (20, 5): R = 3, 6, 20 (Burns & Wellings).
    let set = independent(&[
        ("a", 3, 7 * MS, 3 * MS),
        ("b", 2, 12 * MS, 3 * MS),
        ("c", 1, 20 * MS, 5 * MS),
    ]);
    let r = Analyzer::new().analyze(&set);
    assert_eq!(
        r.iter().map(|x| x.wcrt).collect::<Vec<_>>(),
        [Some(3 * MS), Some(6 * MS), Some(20 * MS)]
    );
    assert!(r.iter().all(|x| x.schedulable));
}

#[test]
fn busy_window_beyond_the_period_lehoczky() {
    // Lehoczky (1990): τ1 = (C 26, T 70), τ2 = (C 62, T 100). τ2's first job
    // ends at 114 > T: seven jobs share the busy period [0, 694); the fifth
    // (released at 400, done at 518) is the worst: R2 = 118.
    assert_eq!(
        busy_window(62, 100, 100, 0, &[(26, 70)], &[], false),
        Ok(118)
    );
    let set = independent(&[("t1", 2, 70 * MS, 26 * MS), ("t2", 1, 100 * MS, 62 * MS)]);
    let report = analyze_set(&set).unwrap();
    assert_eq!(report.task("t2").unwrap().wcrt_us, Some(118_000.0));
    assert!(!report.task("t2").unwrap().schedulable);
    assert!(!report.schedulable);
}

#[test]
fn overload_is_unbounded_and_full_load_is_not() {
    assert!(matches!(
        busy_window(3, 4, 4, 0, &[(2, 4)], &[], false),
        Err(Unbounded::Overload { .. })
    ));
    // 1/2 + 1/3 + 1/6 = 1 exactly: the busy period closes at 6.
    assert_eq!(
        busy_window(1, 6, 6, 0, &[(1, 2), (1, 3)], &[], false),
        Ok(6)
    );
}

#[test]
fn blocking_adds_to_the_first_job() {
    // R = B + C + ⌈R/T⌉C_h: 2 + 3 + 2·... = 2 + 3 + 5 = 10 with (T_h 10, C_h 5).
    assert_eq!(busy_window(3, 50, 50, 2, &[(5, 10)], &[], false), Ok(10));
}

#[test]
fn deadline_reservations_interfere_with_fifo_tasks() {
    // A SCHED_DEADLINE reservation (Q 2, P 10) on the CPU of a FIFO task of
    // 5 ms: (⌈w/10⌉ + 1)·2 + 5 → w = 9: 5 + (1 + 1)·2 = 9.
    let mut set = independent(&[("fifo", 50, 100 * MS, 5 * MS)]);
    set.tasks.push(Task {
        class: Class::Deadline {
            runtime: 2 * MS,
            deadline: 10 * MS,
            period: 10 * MS,
        },
        ..Task::fixed("dl", 0, 0, 10 * MS, 2 * MS, vec![], vec![])
    });
    let r = analyze_set(&set).unwrap();
    assert_eq!(r.task("fifo").unwrap().wcrt_us, Some(9_000.0));
    // Admitted (0.2 ≤ 1): the job (2 ms ≤ Q) is the CPU's only deadline
    // work, above the FIFO task: it ends 2 ms after its release (Spuri's
    // bound; D = 10 ms before).
    assert_eq!(r.task("dl").unwrap().wcrt_us, Some(2_000.0));
    assert_eq!(r.task("dl").unwrap().priority, None);
}
