//! `SCHED_DEADLINE` under M-BWI: interference over blocking
//! chains, admission per CPU and global, guarantees — hand-computed.

use heir_analysis::model::{Class, Mutex, MutexProtocol, Nanos, Section, Task, TaskSet};
use heir_analysis::{analyze_scenario, analyze_set, Options, Unbounded};

use crate::{example, MS};

/// A reservation (Q, D, P) whose jobs of `c` come every `t`, on CPU 0.
fn res(name: &str, (q, d, p): (Nanos, Nanos, Nanos), t: Nanos, c: Nanos, s: Vec<Section>) -> Task {
    Task {
        class: Class::Deadline {
            runtime: q,
            deadline: d,
            period: p,
        },
        ..Task::fixed(name, 0, 0, t, c, s, vec![])
    }
}

fn outer(mutex: usize, length: Nanos) -> Section {
    Section {
        mutex,
        length,
        parent: None,
    }
}

fn inner(mutex: usize, length: Nanos, parent: usize) -> Section {
    Section {
        mutex,
        length,
        parent: Some(parent),
    }
}

fn bwi(names: &[&str]) -> Vec<Mutex> {
    names
        .iter()
        .map(|n| Mutex {
            name: n.to_string(),
            protocol: MutexProtocol::Bwi,
        })
        .collect()
}

fn set(tasks: Vec<Task>, mutexes: Vec<Mutex>) -> TaskSet {
    TaskSet {
        tasks,
        servers: vec![],
        mutexes,
        pi_cv: true,
    }
}

#[test]
fn mbwi_figures_4_and_5() {
    // τ1 (Q 8, D=P 24) 8 ms inside A; τ2 (Q 8, D=P 24) independent;
    // τ3 (Q 24, D=P 72) 24 ms, 20 inside A. Σ Q/D = 1/3 · 3 = 1: admitted.
    // B_1 = τ3's section (D_3 = 72 ≥ 24) = 20 ms: 8 + 20 = 28 > Q = 8, and
    // every later budget (8 ≤ 20) can go to τ3 too: no guarantee.
    // B_3 = 0 (τ1's deadline is shorter) but τ3 waits for τ1, which has no
    // guarantee: none. τ2: B = 0, bound D = 24 ms.
    let s = set(
        vec![
            res(
                "tau1",
                (8 * MS, 24 * MS, 24 * MS),
                24 * MS,
                8 * MS,
                vec![outer(0, 8 * MS)],
            ),
            res("tau2", (8 * MS, 24 * MS, 24 * MS), 24 * MS, 8 * MS, vec![]),
            res(
                "tau3",
                (24 * MS, 72 * MS, 72 * MS),
                72 * MS,
                24 * MS,
                vec![outer(0, 20 * MS)],
            ),
        ],
        bwi(&["A"]),
    );
    let r = analyze_set(&s).unwrap();
    let t1 = r.task("tau1").unwrap();
    assert_eq!(
        (t1.blocking_us, t1.wcrt_us, t1.schedulable),
        (Some(20_000.0), None, false)
    );
    assert_eq!(
        t1.reason.as_deref(),
        Some("a job needs C + B = 28000 µs of budget but Q = 8000 µs, and the interference can take every later budget")
    );
    let t2 = r.task("tau2").unwrap();
    assert_eq!(
        (t2.blocking_us, t2.wcrt_us, t2.schedulable),
        (Some(0.0), Some(24_000.0), true)
    );
    let t3 = r.task("tau3").unwrap();
    assert_eq!((t3.blocking_us, t3.wcrt_us), (Some(0.0), None));
    assert_eq!(
        t3.reason.as_deref(),
        Some("it can wait for task tau1, which has no guarantee itself: that task can then run on this one's budget beyond the bound (the M-BWI paper's §3.5)")
    );
    assert_eq!(r.admissions.len(), 1);
    let a = &r.admissions[0];
    assert!(a.admitted);
    assert_eq!((a.cpu, a.cpus, a.limit), (Some(0), 1, 1.0));
    assert!((a.load - 1.0).abs() < 1e-12);
    // Σ (C+B)/D = 28/24 + 8/24 + 24/72.
    assert!((a.needed_load.unwrap() - (28.0 / 24.0 + 8.0 / 24.0 + 24.0 / 72.0)).abs() < 1e-12);
}

#[test]
fn mbwi_figure_5_from_the_example_file() {
    let sc = heir_scenario::load(&example("mbwi-fig5.json")).unwrap();
    let r = analyze_scenario(&sc, &Options::default()).unwrap();
    let got: Vec<(&str, Option<f64>, Option<f64>)> = r
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.blocking_us, t.wcrt_us))
        .collect();
    assert_eq!(
        got,
        [
            ("tau1", Some(20_000.0), None),
            ("tau2", Some(0.0), Some(24_000.0)),
            ("tau3", Some(0.0), None)
        ]
    );
    // Under "inherit" (deadline inheritance only): τ1's jobs come every
    // P = 24 ms, so a job can start on what a renewed budget left and run
    // out of it holding A (Linux then replenishes the boosted owner with
    // its waiter's budget, charged to nobody): not admitted.
    let mut sc = sc;
    heir_scenario::protocols::apply(
        &mut sc,
        &[heir_scenario::protocols::Override::parse("all=inherit").unwrap()],
    )
    .unwrap();
    let r = analyze_scenario(&sc, &Options::default()).unwrap();
    assert!(r.tasks.iter().all(|t| t.wcrt_us.is_none()));
    assert_eq!(r.task("tau1").unwrap().blocking_us, None);
    assert!(!r.admissions[0].admitted);
    assert!(r
        .task("tau2")
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .starts_with(
            "task tau1 holds A (deadline inheritance), which other reservations of this CPU use"
        ));
    // "none": no bandwidth inheritance, said in words.
    let mut sc2 = sc.clone();
    heir_scenario::protocols::apply(
        &mut sc2,
        &[heir_scenario::protocols::Override::parse("all=none").unwrap()],
    )
    .unwrap();
    let r = analyze_scenario(&sc2, &Options::default()).unwrap();
    assert_eq!(r.task("tau1").unwrap().wcrt_us, None);
    assert_eq!(r.task("tau2").unwrap().wcrt_us, Some(24_000.0));
    assert!(r.task("tau3").unwrap().reason.as_deref().unwrap().starts_with(
        "a blocking chain of this task reaches mutex A (protocol no protocol), which has no bandwidth inheritance"
    ));
}

#[test]
fn figure_5_with_shorter_sections_is_guaranteed() {
    // τ1 (Q 8, D=P 24) 2 ms in A; τ3 (Q 24, D=P 72) 20 ms, 6 in A; τ2 as
    // before. B_1 = 6: 2 + 6 = 8 ≤ 8; B_3 = 0; every task within D.
    // Spuri's bound (Σ Q/P = 1): τ1 and τ2 stay at D = 24 (τ1's job
    // released at a = 48 in the busy period of 68 ms: 3·8 of its own and
    // 24 + 24 of τ2 and τ3 due by 72 → 72 − 48 = 24); τ3: 20 + τ1's and
    // τ2's 3 chunks each due by 72 ms = 68 ms.
    let s = set(
        vec![
            res(
                "tau1",
                (8 * MS, 24 * MS, 24 * MS),
                24 * MS,
                2 * MS,
                vec![outer(0, 2 * MS)],
            ),
            res("tau2", (8 * MS, 24 * MS, 24 * MS), 24 * MS, 8 * MS, vec![]),
            res(
                "tau3",
                (24 * MS, 72 * MS, 72 * MS),
                72 * MS,
                20 * MS,
                vec![outer(0, 6 * MS)],
            ),
        ],
        bwi(&["A"]),
    );
    let r = analyze_set(&s).unwrap();
    let got: Vec<(Option<f64>, Option<f64>, bool)> = r
        .tasks
        .iter()
        .map(|t| (t.blocking_us, t.wcrt_us, t.schedulable))
        .collect();
    assert_eq!(
        got,
        [
            (Some(6_000.0), Some(24_000.0), true),
            (Some(0.0), Some(24_000.0), true),
            (Some(0.0), Some(68_000.0), true)
        ]
    );
    assert!(r.schedulable);
}

#[test]
fn chains_through_nested_sections_and_isolation() {
    // The chain of the M-BWI paper's §3.5, τ1 → R1 → τ2 → R2 → τ3: τ2 locks R2 inside R1.
    // τ4 uses only R3. closure(τ1) = {R1, R2}: B_1 = 4 (τ2's R1 section)
    // + 3 (τ3's R2) = 7; closure(τ2) = {R1, R2}: B_2 = τ3's 3 (τ1's
    // deadline is shorter); closure(τ3) = {R2}: τ2's section is shorter-
    // deadline, B_3 = 0; τ4: 0. Σ Q/D = 8/20 + 7/40 + 3/80 + 1/10.
    // Spuri's bounds (jobs needing C + B = 8, 7, 3, 1 ms): τ1 with τ4's
    // first chunk, 8 + 1 = 9 ms; τ2 after τ1's and τ4's, 7 + 8 + 1 + 1
    // (τ4's second, released at 10 and due at 20 ≤ 40) = 17 ms; τ3 after
    // τ1 (8), τ2 (7) and τ4 (2 chunks by 20) = 3 + 8 + 7 + 2 = 20 ms; τ4
    // alone at its deadline: 1 ms.
    let s = set(
        vec![
            res(
                "t1",
                (8 * MS, 20 * MS, 20 * MS),
                20 * MS,
                MS,
                vec![outer(0, MS)],
            ),
            res(
                "t2",
                (7 * MS, 40 * MS, 40 * MS),
                40 * MS,
                4 * MS,
                vec![outer(0, 4 * MS), inner(1, 2 * MS, 0)],
            ),
            res(
                "t3",
                (3 * MS, 80 * MS, 80 * MS),
                80 * MS,
                3 * MS,
                vec![outer(1, 3 * MS)],
            ),
            res(
                "t4",
                (MS, 10 * MS, 10 * MS),
                10 * MS,
                MS,
                vec![outer(2, MS)],
            ),
        ],
        bwi(&["R1", "R2", "R3"]),
    );
    let r = analyze_set(&s).unwrap();
    let got: Vec<(Option<f64>, Option<f64>)> =
        r.tasks.iter().map(|t| (t.blocking_us, t.wcrt_us)).collect();
    assert_eq!(
        got,
        [
            (Some(7_000.0), Some(9_000.0)),
            (Some(3_000.0), Some(17_000.0)),
            (Some(0.0), Some(20_000.0)),
            (Some(0.0), Some(1_000.0))
        ]
    );
    assert!((r.admissions[0].load - (0.4 + 0.175 + 0.0375 + 0.1)).abs() < 1e-12);
}

#[test]
fn a_job_over_its_budget_takes_several_server_periods() {
    // a (Q 4, D=P 10, jobs of 6 every 40, 1 ms in A) and b (Q 2, D=P 20,
    // 2 ms in A). B_a = 2 (b's deadline is longer), Σ L = 2: a's job needs
    // 8 > 4. Its bound, k = 1 + ⌈(8 − 4)/(4 − 2)⌉ = 3 reservation periods,
    // would need b to be self-sufficient, but a (over its budget) can run
    // on b's budget when its own runs out inside A: neither is guaranteed.
    let s = set(
        vec![
            res(
                "a",
                (4 * MS, 10 * MS, 10 * MS),
                40 * MS,
                6 * MS,
                vec![outer(0, MS)],
            ),
            res(
                "b",
                (2 * MS, 20 * MS, 20 * MS),
                20 * MS,
                2 * MS,
                vec![outer(0, 2 * MS)],
            ),
        ],
        bwi(&["A"]),
    );
    let r = heir_analysis::Analyzer::new().analyze(&s);
    assert_eq!(r[0].blocking, Some(2 * MS));
    assert_eq!(r[0].unbounded, Some(Unbounded::Interferer { other: 1 }));
    assert_eq!(r[1].unbounded, Some(Unbounded::Interferer { other: 0 }));
    // Without the mutex, a alone: k = ⌈6/4⌉ = 2 → 10 + 10 = 20 ms ≤ 40;
    // with jobs every 15 ms the 20 ms bound would let jobs queue up. b
    // (2 ms, due 20 ms after its release) beside a's renewable server
    // (at most (⌊20/10⌋ + 1)·4 = 12 ms due by then, but only
    // (⌈t/10⌉ + 1)·4 = 8 ms taken up by t = 10): 2 + 8 = 10 ms (Spuri).
    let mut s2 = s.clone();
    s2.tasks[0].sections.clear();
    let r = heir_analysis::Analyzer::new().analyze(&s2);
    assert_eq!((r[0].blocking, r[0].wcrt), (Some(0), Some(20 * MS)));
    assert_eq!((r[1].blocking, r[1].wcrt), (Some(0), Some(10 * MS)));
    s2.tasks[0].period = 15 * MS;
    s2.tasks[0].deadline = 15 * MS;
    let r = heir_analysis::Analyzer::new().analyze(&s2);
    assert_eq!(
        r[0].unbounded,
        Some(Unbounded::JobsOverlap { bound: 20 * MS })
    );
}

#[test]
fn global_edf_on_two_cpus() {
    // m = 2, all global: t1 (Q 3, D=P 10, C 1 in A), t2 (Q 4, D=P 10, C 2,
    // 1 in A), t3 (Q 5, D=P 10, C 5). GFB: Σ Q/D = 1.2 ≤ 2 − 1·0.5 = 1.5.
    // B_1 = ⌈(10 + 10)/10⌉·1 = 2: 1 + 2 ≤ 3; B_2 = 2·1 = 2: 2 + 2 ≤ 4.
    let g = |t: Task| Task {
        global_cpus: Some(2),
        ..t
    };
    let s = set(
        vec![
            g(res(
                "t1",
                (3 * MS, 10 * MS, 10 * MS),
                10 * MS,
                MS,
                vec![outer(0, MS)],
            )),
            g(res(
                "t2",
                (4 * MS, 10 * MS, 10 * MS),
                10 * MS,
                2 * MS,
                vec![outer(0, MS)],
            )),
            g(res(
                "t3",
                (5 * MS, 10 * MS, 10 * MS),
                10 * MS,
                5 * MS,
                vec![],
            )),
        ],
        bwi(&["A"]),
    );
    let r = analyze_set(&s).unwrap();
    let got: Vec<(Option<f64>, Option<f64>)> =
        r.tasks.iter().map(|t| (t.blocking_us, t.wcrt_us)).collect();
    assert_eq!(
        got,
        [
            (Some(2_000.0), Some(10_000.0)),
            (Some(2_000.0), Some(10_000.0)),
            (Some(0.0), Some(10_000.0))
        ]
    );
    let a = &r.admissions[0];
    assert_eq!((a.cpu, a.cpus, a.admitted), (None, 2, true));
    assert!((a.load - 1.2).abs() < 1e-12 && (a.limit - 1.5).abs() < 1e-12);
    // t1 with Q = 2: 1 + 2 > 2, and several reservation periods with an
    // interferer are not analysed globally; t2 then waits for it.
    let mut s2 = s.clone();
    s2.tasks[0].class = Class::Deadline {
        runtime: 2 * MS,
        deadline: 10 * MS,
        period: 10 * MS,
    };
    let r = heir_analysis::Analyzer::new().analyze(&s2);
    assert_eq!(
        r[0].unbounded,
        Some(Unbounded::OverBudget {
            needed: 3 * MS,
            runtime: 2 * MS,
            global: true
        })
    );
    assert_eq!(r[1].unbounded, Some(Unbounded::Interferer { other: 0 }));
    assert_eq!(r[2].wcrt, Some(10 * MS));
    // GFB fails: Q/D = 0.9 for t3: 0.3 + 0.4 + 0.9 = 1.6 > 2 − 0.9 = 1.1.
    let mut s3 = s.clone();
    s3.tasks[2].class = Class::Deadline {
        runtime: 9 * MS,
        deadline: 10 * MS,
        period: 10 * MS,
    };
    s3.tasks[2].wcet = 9 * MS;
    s3.tasks[2].demand = 9 * MS;
    let r = analyze_set(&s3).unwrap();
    assert!(!r.admissions[0].admitted);
    assert_eq!(
        r.task("t3").unwrap().reason.as_deref(),
        Some("SCHED_DEADLINE admission fails on the 2 CPUs (global EDF, GFB: load 1.600 > 1.100)")
    );
}

#[test]
fn global_and_pinned_users_of_one_mutex_are_refused() {
    let sc = heir_scenario::parse_str(
        r#"{"resources": {"A": {"type": "mutex", "protocol": "bwi"}},
            "tasks": {
              "g": {"policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 10000,
                    "lock": "A", "run": 100, "unlock": "A", "timer": {"ref": "a", "period": 10000}},
              "p": {"policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 10000, "cpus": [1],
                    "lock": "A", "run": 100, "unlock": "A", "timer": {"ref": "b", "period": 10000}}}}"#,
        "t.json",
    )
    .unwrap();
    let e = analyze_scenario(&sc, &Options::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "6:21: at tasks.p.lock: mutex A is used by g (free on every CPU) and by p (pinned to CPU 1): bandwidth inheritance across affinities is not analysed (the M-BWI paper's §4.3: the owner would run another CPU's bandwidth); make all its users global or all pinned to one CPU"
    );
}
