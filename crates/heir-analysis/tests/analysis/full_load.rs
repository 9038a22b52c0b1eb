//! Every fixed point of the analysis ends: a level that fills the CPU
//! exactly (utilisation 1) with blocking or a reservation on top never
//! closes its busy period and is reported unbounded at once; a busy period
//! of more jobs than the step limit is reported unbounded at the limit
//! (issue 21: `heir analyze` spun forever on both).

use std::time::{Duration, Instant};

use heir_analysis::fp::{busy_window, MAX_ITERATIONS};
use heir_analysis::gen::{self, GenParams, UtilGenerator};
use heir_analysis::model::{
    Call, Class, Family, Mutex, MutexProtocol, Section, Server, Task, TaskSet,
};
use heir_analysis::rng::Rng;
use heir_analysis::{analyze_set, Analyzer, Unbounded};

use crate::US;

/// H (priority 2) runs 1 + 999 µs (the 999 in mutex M) every 1000 µs: its
/// own utilisation is exactly 1. L (1) holds M for 50 µs every 10 ms.
fn full_h_sharing_a_mutex() -> TaskSet {
    let sec = |length| {
        vec![Section {
            mutex: 0,
            length,
            parent: None,
        }]
    };
    TaskSet {
        tasks: vec![
            Task::fixed("H", 0, 2, 1000 * US, 1000 * US, sec(999 * US), vec![]),
            Task::fixed("L", 0, 1, 10_000 * US, 100 * US, sec(50 * US), vec![]),
        ],
        servers: vec![],
        mutexes: vec![Mutex {
            name: "M".into(),
            protocol: MutexProtocol::Inherit,
        }],
        pi_cv: true,
    }
}

#[test]
fn full_load_with_blocking_is_unbounded_not_a_hang() {
    // 1000/1000 with 1 ns of blocking: w_q = 1 + (q+1)·1000 > (q+1)·1000.
    assert_eq!(
        busy_window(1000, 1000, 1000, 1, &[], &[], false),
        Err(Unbounded::FullLoad {
            blocking: 1,
            reservations: false
        })
    );
    // The same with the utilisation split over a higher task: 1/2 + 1/2.
    assert_eq!(
        busy_window(500, 1000, 1000, 7, &[(1, 2)], &[], false),
        Err(Unbounded::FullLoad {
            blocking: 7,
            reservations: false
        })
    );
    // No blocking: the busy period closes at the period.
    assert_eq!(busy_window(1000, 1000, 1000, 0, &[], &[], false), Ok(1000));
}

#[test]
fn full_load_with_a_reservation_is_unbounded() {
    // 1/2 own + 1/2 reservation: (⌈w/P⌉ + 1)·Q carries one budget in.
    assert_eq!(
        busy_window(5, 10, 10, 0, &[], &[(5, 10)], false),
        Err(Unbounded::FullLoad {
            blocking: 0,
            reservations: true
        })
    );
    let mut set = TaskSet {
        tasks: vec![Task::fixed(
            "fifo",
            0,
            50,
            10_000 * US,
            5_000 * US,
            vec![],
            vec![],
        )],
        servers: vec![],
        mutexes: vec![],
        pi_cv: true,
    };
    set.tasks.push(Task {
        class: Class::Deadline {
            runtime: 5_000 * US,
            deadline: 10_000 * US,
            period: 10_000 * US,
        },
        ..Task::fixed("dl", 0, 0, 10_000 * US, 5_000 * US, vec![], vec![])
    });
    let r = analyze_set(&set).unwrap();
    let fifo = r.task("fifo").unwrap();
    assert_eq!(fifo.wcrt_us, None);
    assert_eq!(
        fifo.reason.as_deref(),
        Some("the load at this priority and above is exactly 1 and a SCHED_DEADLINE reservation's carried-in budget comes on top: the busy period never closes")
    );
}

#[test]
fn every_protocol_reports_the_full_task_unbounded() {
    let set = full_h_sharing_a_mutex();
    for p in [Family::None, Family::Inherit, Family::Ceiling, Family::PiCv] {
        let start = Instant::now();
        let r = analyze_set(&set.with_protocol(p)).unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{p:?} took {:?}",
            start.elapsed()
        );
        let h = r.task("H").unwrap();
        assert_eq!((h.wcrt_us, h.blocking_us), (None, Some(50.0)), "{p:?}");
        assert_eq!(
            h.reason.as_deref(),
            Some("the load at this priority and above is exactly 1 and 50 µs of blocking comes on top: the busy period never closes"),
            "{p:?}"
        );
        let l = r.task("L").unwrap();
        assert_eq!(l.wcrt_us, None, "{p:?}");
        assert!(!r.schedulable);
        // The sweep's path (stops at the first miss) agrees.
        assert!(!Analyzer::new().schedulable(&set.with_protocol(p)));
    }
}

#[test]
fn full_load_through_an_rpc_is_unbounded() {
    // H: 500 µs + a 500 µs call every 1000 µs; L calls the same server for
    // 10 µs: PI-CV's I_H = 10 µs (Q_H) on top of a full level.
    let call = |wcet| vec![Call { server: 0, wcet }];
    let set = TaskSet {
        tasks: vec![
            Task::fixed("H", 0, 90, 1000 * US, 500 * US, vec![], call(500 * US)),
            Task::fixed("L", 0, 80, 100_000 * US, 100 * US, vec![], call(10 * US)),
        ],
        servers: vec![Server {
            name: "S".into(),
            cpu: 0,
            priority: 10,
            inherits: true,
        }],
        mutexes: vec![],
        pi_cv: true,
    };
    let r = analyze_set(&set).unwrap();
    let h = r.task("H").unwrap();
    assert_eq!((h.wcrt_us, h.blocking_us), (None, Some(10.0)));
    assert!(h
        .reason
        .as_deref()
        .unwrap()
        .contains("exactly 1 and 10 µs of blocking"));
}

#[test]
fn a_busy_period_longer_than_the_step_limit_is_unbounded() {
    // U = 1/2 + 999 999/2 000 000 = 1 − 5·10⁻⁷ with 1 µs of blocking: the
    // busy period is about 2 s of 1-ns-period-2 jobs, ~10⁹ jobs > the limit.
    let start = Instant::now();
    assert_eq!(
        busy_window(1, 2, 2, 1000, &[(999_999, 2_000_000)], &[], false),
        Err(Unbounded::BusyPeriod)
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(MAX_ITERATIONS, 1_000_000);
}

#[test]
fn generated_sets_at_full_utilisation_are_analysed_promptly() {
    // RandFixedSum with a total of n: every task at utilisation 1 (Python's
    // heir.analyze(heir.generate(3, 3.0, generator="randfixedsum"))).
    let params = GenParams {
        tasks: 3,
        generator: UtilGenerator::Randfixedsum,
        ..GenParams::default()
    };
    for seed in 0..20 {
        let set = gen::generate(&params, 3.0, &mut Rng::new(seed));
        for t in &set.tasks {
            assert_eq!(t.demand, t.period, "seed {seed}: {}", t.name);
        }
        let start = Instant::now();
        let r = analyze_set(&set).unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        // The highest task is alone at its level: bounded by its period
        // unless something blocks it; every lower one is overloaded.
        for t in &r.tasks {
            if t.wcrt_us.is_some() {
                assert_eq!((t.wcrt_us, t.blocking_us), (Some(t.period_us), Some(0.0)));
            }
        }
        assert!(r.tasks.iter().filter(|t| t.wcrt_us.is_some()).count() <= 1);
    }
}
