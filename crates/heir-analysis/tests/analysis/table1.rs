//! The PI-CV paper's Table I / Table II: the analytic worst case of the client/server
//! scenario, from the very file the simulator runs.

use heir_analysis::{analyze_scenario, Family, Options};

use crate::example;

fn table1() -> heir_scenario::Scenario {
    heir_scenario::load(&example("table1-client-server.json")).expect("the example reads")
}

#[test]
fn table1_file_gives_19_and_29_ms_exactly() {
    let r = analyze_scenario(&table1(), &Options::default()).unwrap();
    assert_eq!(r.protocol, "as written (PI-CV on)");
    let c1 = r.task("Client1").unwrap();
    let c2 = r.task("Client2").unwrap();
    // Eq. 1: R1 = E1 + I1 = (10 + 4.5) + 4.5: Client1's request can arrive
    // while the server has just started Client2's (Q_1 = {(Client2, Server)}).
    assert_eq!(c1.wcrt_us, Some(19_000.0));
    assert_eq!(c1.blocking_us, Some(4_500.0));
    assert_eq!(c1.demand_us, 14_500.0);
    // R2 = E2 + I2 + ⌈R2/40⌉E1 = 14.5 + 0 + 14.5: no client below Client2
    // (the annoyer calls nobody, so it is in neither Q_2 nor P_2).
    assert_eq!(c2.wcrt_us, Some(29_000.0));
    assert_eq!(c2.blocking_us, Some(0.0));
    // The annoyer (priority 70, 10 ms every 60 ms) is preempted by one job of
    // each client *including its RPC*, which the server runs at the client's
    // priority (90, 80 > 70) under PI-CV: R = 10 + 14.5 + 14.5 = 39 ms. At
    // 39 ms no second Client1 release has happened yet (40 ms), so 39 is the
    // fixed point; nothing below the annoyer can block it (the server holds
    // no lock and serves only clients above it): B = 0.
    let a = r.task("Annoyer").unwrap();
    assert_eq!(a.wcrt_us, Some(39_000.0));
    assert_eq!(a.blocking_us, Some(0.0));
    assert!(r.schedulable);
    // The server is not a periodic task: it has no bound of its own.
    assert!(r.task("Server").is_none());
    assert_eq!(r.tasks.len(), 3);
}

#[test]
fn table1_json_has_the_documented_shape() {
    let r = analyze_scenario(&table1(), &Options::default()).unwrap();
    let v = r.to_json();
    assert_eq!(v["schedulable"], true);
    assert_eq!(v["tasks"]["Client1"]["wcrt_us"], 19000.0);
    assert_eq!(v["tasks"]["Client1"]["deadline_us"], 40000.0);
    assert_eq!(v["tasks"]["Client1"]["schedulable"], true);
    assert_eq!(v["tasks"]["Client1"]["blocking_us"], 4500.0);
    assert_eq!(v["tasks"]["Client2"]["wcrt_us"], 29000.0);
    let keys: Vec<&String> = v["tasks"]["Annoyer"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["wcrt_us", "deadline_us", "schedulable", "blocking_us"]
    );
}

#[test]
fn table1_without_pi_cv_is_unbounded_and_names_the_inversion() {
    let mut sc = table1();
    sc.global.pi_cv = false;
    let r = analyze_scenario(&sc, &Options::default()).unwrap();
    assert_eq!(r.protocol, "as written (PI-CV off)");
    assert!(!r.schedulable);
    let c1 = r.task("Client1").unwrap();
    assert_eq!(c1.wcrt_us, None);
    assert_eq!(c1.blocking_us, None);
    assert!(!c1.schedulable);
    // The first medium task found between the server (50) and Client1 (90).
    assert_eq!(
        c1.reason.as_deref(),
        Some(
            "unbounded priority inversion: while it waits for a reply from server Server (priority 50, no PI-CV), task Client2 can run for as long as it likes"
        )
    );
    // The annoyer itself never waits, but Client1 and Client2 can be
    // suspended on a server below it: their work is deferred, unbounded.
    let a = r.task("Annoyer").unwrap();
    assert_eq!(a.wcrt_us, None);
    assert!(a
        .reason
        .as_deref()
        .unwrap()
        .starts_with("higher-priority task Client1 can be suspended"));
    // --protocol pi-cv on the same file restores the bounds.
    let r = analyze_scenario(
        &sc,
        &Options {
            protocol: Some(Family::PiCv),
        },
    )
    .unwrap();
    assert_eq!(r.task("Client1").unwrap().wcrt_us, Some(19_000.0));
}

#[test]
fn table1_under_the_ceiling_alternative() {
    // The alternative of the PI-CV paper's §6.2: the server at the highest client priority
    // (90). Client1: its own request E1 plus one request of Client2 served
    // at 90 (f = 4.5) = 19; Client2: 14.5 + 14.5 = 29; the annoyer 39.
    let r = analyze_scenario(
        &table1(),
        &Options {
            protocol: Some(Family::Ceiling),
        },
    )
    .unwrap();
    assert_eq!(r.protocol, "ceiling");
    assert_eq!(r.task("Client1").unwrap().wcrt_us, Some(19_000.0));
    assert_eq!(r.task("Client2").unwrap().wcrt_us, Some(29_000.0));
    assert_eq!(r.task("Annoyer").unwrap().wcrt_us, Some(39_000.0));
}
