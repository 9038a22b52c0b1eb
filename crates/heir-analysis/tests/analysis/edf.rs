//! EDF / CBS admission (seed 001 §3.3).

use heir_analysis::edf::{blocking_test, utilisation_test, Reservation};
use heir_analysis::model::{Class, LockProtocol, Mutex, Section, Task, TaskSet};
use heir_analysis::{analyze_set, Unbounded};

use crate::MS;

fn res(q: u64, d: u64, p: u64, b: u64) -> Reservation {
    Reservation {
        runtime: q,
        deadline: d,
        period: p,
        blocking: b,
    }
}

#[test]
fn utilisation_test_is_exact_at_one() {
    let ok = utilisation_test(&[res(1, 2, 2, 0), res(1, 3, 3, 0), res(1, 6, 6, 0)]);
    assert!(ok.admitted);
    assert!((ok.load[0] - 1.0).abs() < 1e-12);
    let over = utilisation_test(&[res(1, 2, 2, 0), res(1, 3, 3, 0), res(2, 11, 11, 0)]);
    assert!(!over.admitted);
}

#[test]
fn blocking_test_checks_every_deadline_level() {
    // τ1 (Q 2, D=P 10, B 3): 2/10 + 3/10 = 0.5 ≤ 1.
    // τ2 (Q 4, D=P 20, B 0): 2/10 + 4/20 = 0.4.
    // τ3 (Q 10, D=P 20, B 0): 2/10 + 4/20 + 10/20 = 0.9.
    let set = [res(2, 10, 10, 3), res(4, 20, 20, 0), res(10, 20, 20, 0)];
    let a = blocking_test(&set);
    assert!(a.admitted);
    assert!((a.load[0] - 0.5).abs() < 1e-12 && (a.load[2] - 0.9).abs() < 1e-12);
    // The same with B1 = 9: 2/10 + 9/10 = 1.1 > 1 although Σ Q/P = 0.9.
    let mut bad = set;
    bad[0].blocking = 9;
    assert!(utilisation_test(&bad).admitted);
    assert!(!blocking_test(&bad).admitted);
}

fn dl(name: &str, q: u64, d: u64, p: u64, c: u64, sections: Vec<Section>) -> Task {
    Task {
        class: Class::Deadline {
            runtime: q,
            deadline: d,
            period: p,
        },
        ..Task::fixed(name, 0, 0, p, c, sections, vec![])
    }
}

#[test]
fn reservations_in_a_task_set_get_blocking_from_longer_deadlines() {
    // a (Q 2, D=P 10) and b (Q 5, D=P 40) share m: a can be blocked by b's
    // 3 ms section: B_a = 3, 0.2 + 0.3 = 0.5; the admitted job of a ends
    // within D = 10 ms; b's job of 5 ms within 40 ms.
    let sec = |l| {
        vec![Section {
            mutex: 0,
            length: l,
            parent: None,
        }]
    };
    let set = TaskSet {
        tasks: vec![
            dl("a", 2 * MS, 10 * MS, 10 * MS, 2 * MS, sec(MS)),
            dl("b", 5 * MS, 40 * MS, 40 * MS, 5 * MS, sec(3 * MS)),
        ],
        servers: vec![],
        mutexes: vec![Mutex {
            name: "m".into(),
            protocol: LockProtocol::Inherit,
        }],
        pi_cv: true,
    };
    let r = analyze_set(&set).unwrap();
    assert_eq!(r.task("a").unwrap().blocking_us, Some(3_000.0));
    assert_eq!(r.task("a").unwrap().wcrt_us, Some(10_000.0));
    assert_eq!(r.task("b").unwrap().blocking_us, Some(0.0));
    assert_eq!(r.task("b").unwrap().wcrt_us, Some(40_000.0));
    // A job larger than its budget takes ⌈C/Q⌉ server periods: c needs
    // 5 ms with Q = 2 ms every 10 ms: (3 − 1)·10 + 10 = 30 ms ≤ its 40 ms
    // job period.
    let set = TaskSet {
        tasks: vec![Task {
            period: 40 * MS,
            deadline: 40 * MS,
            ..dl("c", 2 * MS, 10 * MS, 10 * MS, 5 * MS, vec![])
        }],
        servers: vec![],
        mutexes: vec![],
        pi_cv: true,
    };
    assert_eq!(
        analyze_set(&set).unwrap().task("c").unwrap().wcrt_us,
        Some(30_000.0)
    );
}

#[test]
fn overbooked_reservations_are_not_admitted() {
    let set = TaskSet {
        tasks: vec![
            dl("a", 6 * MS, 10 * MS, 10 * MS, 6 * MS, vec![]),
            dl("b", 5 * MS, 10 * MS, 10 * MS, 5 * MS, vec![]),
        ],
        servers: vec![],
        mutexes: vec![],
        pi_cv: true,
    };
    let r = heir_analysis::Analyzer::new().analyze(&set);
    assert!(
        matches!(r[0].unbounded, Some(Unbounded::NotAdmitted { load }) if (load - 1.1).abs() < 1e-9)
    );
    assert_eq!(r[1].wcrt, None);
    assert!(!r[1].schedulable);
}
