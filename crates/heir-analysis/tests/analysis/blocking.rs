//! Blocking terms per protocol, table-driven. Each case draws who uses what
//! (higher priority on top), then states B and R per task (µs).

use heir_analysis::gen::{to_scenario, ScenarioOptions};
use heir_analysis::model::{Mutex, MutexProtocol, Section, Task, TaskSet};
use heir_analysis::rng::Rng;
use heir_analysis::{analyze_scenario, analyze_set, Family, Options};
use heir_sim::{simulate, NullObserver, SimConfig};

use crate::{example, h_m_l_calling_s, US};

fn cs(mutex: usize, us: u64) -> Section {
    Section {
        mutex,
        length: us * US,
        parent: None,
    }
}

fn task(name: &str, prio: i32, period_us: u64, wcet_us: u64, sections: Vec<Section>) -> Task {
    Task::fixed(
        name,
        0,
        prio,
        period_us * US,
        wcet_us * US,
        sections,
        vec![],
    )
}

fn mutexes(n: usize, protocol: MutexProtocol) -> Vec<Mutex> {
    (0..n)
        .map(|k| Mutex {
            name: format!("R{k}"),
            protocol,
        })
        .collect()
}

/// `(task, B, R)` in µs; `None` = unbounded.
type Expect<'a> = &'a [(&'a str, Option<u64>, Option<u64>)];

fn assert_bounds(set: &TaskSet, expect: Expect) {
    let r = analyze_set(set).unwrap();
    for &(name, b, wcrt) in expect {
        let t = r.task(name).unwrap();
        assert_eq!(
            t.blocking_us,
            b.map(|x| x as f64),
            "B of {name}: {:?}",
            t.reason
        );
        assert_eq!(
            t.wcrt_us,
            wcrt.map(|x| x as f64),
            "R of {name}: {:?}",
            t.reason
        );
    }
}

/// The worst response (µs) of task `name` in one default simulation of `sc`.
fn simulated_max_response_us(sc: &heir_scenario::Scenario, name: &str) -> f64 {
    let sim = simulate(sc, &SimConfig::default(), &mut NullObserver).unwrap();
    let t = sim.tasks.iter().find(|t| t.name == name).unwrap();
    t.response_us.max.unwrap()
}

/// ```text
///   H (30)  ──── R0 (1)
///   M (20)               (works 5)
///   L (10)  ──── R0 (3)
/// ```
fn hml(protocol: MutexProtocol) -> TaskSet {
    TaskSet {
        tasks: vec![
            task("H", 30, 100, 2, vec![cs(0, 1)]),
            task("M", 20, 100, 5, vec![]),
            task("L", 10, 100, 4, vec![cs(0, 3)]),
        ],
        servers: vec![],
        mutexes: mutexes(1, protocol),
        pi_cv: true,
    }
}

#[test]
fn inheritance_direct_and_push_through() {
    // H: direct blocking by L's 3. M: push-through (L inherits H's 30).
    assert_bounds(
        &hml(MutexProtocol::Inherit),
        &[
            ("H", Some(3), Some(5)),
            ("M", Some(3), Some(10)),
            ("L", Some(0), Some(11)),
        ],
    );
}

#[test]
fn immediate_ceiling_blocks_once() {
    // Ceiling 30: L runs its section at 30 from the lock on.
    assert_bounds(
        &hml(MutexProtocol::Ceiling(30)),
        &[
            ("H", Some(3), Some(5)),
            ("M", Some(3), Some(10)),
            ("L", Some(0), Some(11)),
        ],
    );
    // Two lower tasks on two mutexes, both used by H:
    //   H (30) ──── R0, R1
    //   A (20) ──── R0 (3)
    //   B (10) ──── R1 (5)
    // Inheritance: both can be inside their section when H arrives (3 + 5).
    // Ceiling: once A holds R0 at 30, B cannot start a section: max(3, 5).
    let two = |p| TaskSet {
        tasks: vec![
            task("H", 30, 100, 2, vec![cs(0, 1), cs(1, 1)]),
            task("A", 20, 100, 3, vec![cs(0, 3)]),
            task("B", 10, 100, 5, vec![cs(1, 5)]),
        ],
        servers: vec![],
        mutexes: mutexes(2, p),
        pi_cv: true,
    };
    assert_bounds(&two(MutexProtocol::Inherit), &[("H", Some(8), Some(10))]);
    assert_bounds(&two(MutexProtocol::Ceiling(30)), &[("H", Some(5), Some(7))]);
}

#[test]
fn no_protocol_is_unbounded_when_a_medium_task_exists() {
    let set = hml(MutexProtocol::None);
    let r = analyze_set(&set).unwrap();
    let h = r.task("H").unwrap();
    assert_eq!(h.wcrt_us, None);
    assert_eq!(
        h.reason.as_deref(),
        Some("unbounded priority inversion: while it waits for mutex R0 held by L without inheritance, task M can run for as long as it likes")
    );
    // M is never blocked (no push-through without inheritance) but H's work
    // can be deferred behind L's section: M's bound is refused too.
    assert!(r
        .task("M")
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .starts_with("higher-priority task H can be suspended"));
    assert_bounds(&set, &[("L", Some(0), Some(11))]);
    // Without the medium task, no protocol blocks like inheritance.
    let mut set = set;
    set.tasks.remove(1);
    assert_bounds(&set, &[("H", Some(3), Some(5)), ("L", Some(0), Some(6))]);
}

/// Found by the soundness property test. heir's mutexes hand the lock to the
/// top waiter on unlock (as FUTEX_UNLOCK_PI does). All four lock users are
/// released together; T4 takes R0 first, T3 and T0 queue on it; T1 is ready
/// but has not asked yet when T0 unlocks, so R0 goes to T3: T1 is blocked
/// by T4 *and* T3 on the same mutex. The "one section per semaphore" bound
/// (1858) is wrong here; heir charges each lower task once (602 + 1858).
///
/// ```text
///   T0 (98, 10 ms) ── R0 (158)
///   T1 (97, 10 ms) ── R0 (829)
///   T2 (96, 15 ms)              (561)
///   T3 (95, 20 ms) ── R0 (602)
///   T4 (94, 55 ms) ── R0 (1858)
/// ```
#[test]
fn hand_off_lets_one_mutex_block_twice() {
    let set = TaskSet {
        tasks: vec![
            task("T0", 98, 10_000, 158, vec![cs(0, 158)]),
            task("T1", 97, 10_000, 829, vec![cs(0, 829)]),
            task("T2", 96, 15_000, 561, vec![]),
            task("T3", 95, 20_000, 602, vec![cs(0, 602)]),
            task("T4", 94, 55_000, 1858, vec![cs(0, 1858)]),
        ],
        servers: vec![],
        mutexes: mutexes(1, MutexProtocol::Inherit),
        pi_cv: false,
    };
    // T1: 829 + 158 (T0) + 602 + 1858.
    assert_bounds(&set, &[("T1", Some(2460), Some(3447))]);
    let sc = to_scenario(
        &set,
        &ScenarioOptions {
            duration_s: 1.0,
            ..ScenarioOptions::default()
        },
        &mut Rng::new(0),
    );
    let sim = simulate(&sc, &SimConfig::default(), &mut NullObserver).unwrap();
    let t1 = sim.tasks.iter().find(|t| t.name == "T1").unwrap();
    // 829 + 158 + 1858 (T4) + 602 (T3): both lower tasks, one after the other.
    assert_eq!(t1.response_us.max, Some(3447.0));
}

#[test]
fn nested_sections_block_transitively() {
    // IPCP's T0/T1/T2 (17 ms sections; T1 nests R2 in R1):
    //   T0 (70) ── R1
    //   T1 (65) ── R1 { R2 }
    //   T2 (60) ──        R2
    // Inheritance: T0 waits on R1 held by T1, which waits on R2 held by T2:
    // T2 inherits 70 through T1 although R2's own ceiling is 65 (the
    // transitive ceiling of R2 is 70). B_T0 = 34 (T1's R1 span) + 17 (T2).
    let inherit = heir_scenario::load(&example("ipcp-t0-t1-t2-inherit.json")).unwrap();
    let r = analyze_scenario(&inherit, &Options::default()).unwrap();
    assert_eq!(r.task("T0").unwrap().blocking_us, Some(51_000.0));
    assert_eq!(r.task("T0").unwrap().wcrt_us, Some(68_000.0));
    let t0 = simulated_max_response_us(&inherit, "T0");
    // The staggered releases of the file reproduce most of the chain: 64 ms.
    assert_eq!(t0, 64_000.0);
    // Immediate ceiling: T1 holds R1 at 70, so T0 waits for T1's whole outer
    // section (34) and nothing else; T1 for T2's R2 (ceiling 65) at most.
    let ceiling = heir_scenario::load(&example("ipcp-t0-t1-t2-ceiling.json")).unwrap();
    let r = analyze_scenario(&ceiling, &Options::default()).unwrap();
    assert_eq!(r.task("T0").unwrap().wcrt_us, Some(51_000.0));
    assert_eq!(r.task("T1").unwrap().blocking_us, Some(17_000.0));
    assert_eq!(r.task("T1").unwrap().wcrt_us, Some(68_000.0));
    assert_eq!(r.task("T2").unwrap().wcrt_us, Some(68_000.0));
    let t0 = simulated_max_response_us(&ceiling, "T0");
    assert!(t0 <= 51_000.0, "{t0}");
}

/// ```text
///   H (90) ──call──▶ S (10)
///   M (70) ── R0 (4)
///   L (50) ──call──▶ S (7)  ── R0 (6)
/// ```
/// One lower task, one item: L is either inside R0 or waiting for S when
/// H arrives, never both.
#[test]
fn calls_and_sections_of_one_lower_task_count_once() {
    let set = h_m_l_calling_s(
        vec![cs(0, 4)],
        vec![cs(0, 6)],
        mutexes(1, MutexProtocol::Inherit),
    );
    // H: max(D_L = 7 (Q_H), cs_L = 6 (R0's ceiling is only 70)) = 7.
    // M: max(7 (P_M: S serves L at H's priority), 6 (direct)) = 7.
    assert_bounds(&set, &[("H", Some(7), Some(20)), ("M", Some(7), Some(30))]);
    // Ceiling family: S at 90 (its highest caller), R0's ceiling 70.
    // H: L's request is served at 90 whoever waits: 7; R0 cannot block H.
    // M: L's request at 90 (7) or L's section at 70 (6): one of them, 7.
    let c = set.with_protocol(Family::Ceiling);
    assert_bounds(&c, &[("H", Some(7), Some(20)), ("M", Some(7), Some(30))]);
}
