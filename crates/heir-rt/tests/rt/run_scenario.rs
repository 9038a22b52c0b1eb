//! `heir::run::run_scenario` on the seed examples: the report has the
//! simulator's schema with mode "real", and the Fig. 6 scenario shows the
//! consumer's response time drop with PI-CV.

use heir::run::{run_scenario, RunConfig, RunError};

use crate::common::*;

fn example(name: &str) -> heir_scenario::Scenario {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    heir_scenario::load(&p).expect("example parses")
}

#[test]
fn refuses_a_scenario_without_a_finite_duration() {
    let mut sc = example("fig6-producer-consumer.json");
    sc.global.duration_s = None;
    let r = run_scenario(&sc, &RunConfig::default());
    assert!(matches!(r, Err(RunError::NoDuration)), "{r:?}");
}

#[test]
fn fig6_real_run_reports_like_the_simulator() {
    let Some(_rt) = rt_or_skip("run_scenario::fig6", 30) else {
        return;
    };
    let sc = example("fig6-producer-consumer.json");
    let run = |pi_cv| {
        run_scenario(
            &sc,
            &RunConfig {
                duration_us: Some(520_000),
                pi_cv: Some(pi_cv),
                calibration_ns_per_loop: None,
            },
        )
        .expect("run")
    };
    let off = run(false);
    let on = run(true);
    for r in [&off, &on] {
        assert_eq!(r.mode, "real");
        let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Consumer", "Annoyer", "Producer"]);
        assert!(r.deadlock.is_none());
        // Producer and annoyer: one job per 50 ms period.
        for t in &r.tasks[1..] {
            assert!((9..=11).contains(&t.jobs), "{}: {} jobs", t.name, t.jobs);
        }
        let json = serde_json::to_value(r).expect("json");
        assert_eq!(json["mode"], "real");
        assert!(json["tasks"]["Consumer"]["response_us"]["max"].is_number());
    }
    let prod_mean = |r: &heir_sim::Report| r.tasks[2].response_us.mean.expect("mean");
    // Without PI-CV the annoyer's 10 ms preempt the producer's 20 ms in
    // every period; with PI-CV the producer runs at the waiting consumer's
    // priority and is not preempted.
    assert!(
        prod_mean(&on) + 5_000.0 < prod_mean(&off),
        "producer mean on {} µs vs off {} µs",
        prod_mean(&on),
        prod_mean(&off)
    );
}
