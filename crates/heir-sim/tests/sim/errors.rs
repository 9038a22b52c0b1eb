//! Scenarios that cannot be simulated get a clear `SimError` with a path.

use heir_scenario::{EventKind, MutexProtocol};
use heir_sim::{NullObserver, SimConfig, SimError};

use crate::common::*;

fn err(sc: &heir_scenario::Scenario, cfg: &SimConfig) -> (String, String) {
    match heir_sim::simulate(sc, cfg, &mut NullObserver) {
        Err(SimError::Invalid { path, message, .. }) => (path, message),
        Ok(r) => panic!("expected an error, got {r:?}"),
    }
}

#[test]
fn forever_without_duration_is_refused() {
    let mut b = B::new();
    b.task(fifo("T", 10, vec![run_us(1000)]).loops(None));
    let (path, msg) = err(&b.sc, &SimConfig::default());
    assert_eq!(path, "global.duration");
    assert!(
        msg.contains("set global.duration or pass --duration"),
        "{msg}"
    );
    // A duration from the config or the file makes it fine.
    assert!(heir_sim::simulate(&b.sc, &config(5), &mut NullObserver).is_ok());
    b.sc.global.duration_s = Some(0.005);
    let r = heir_sim::simulate(&b.sc, &SimConfig::default(), &mut NullObserver).unwrap();
    assert_eq!(r.duration_us, 5000.0);
    assert_eq!(r.tasks[0].jobs, 5);
}

#[test]
fn unlocking_a_mutex_not_held_is_an_error_at_the_event() {
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    b.task(fifo("T", 10, vec![run_us(10), EventKind::Unlock(m)]));
    let (path, msg) = err(&b.sc, &SimConfig::default());
    assert_eq!(path, "tasks.T.phases.p0.e1");
    assert!(msg.contains("does not hold"), "{msg}");
}

#[test]
fn zero_time_livelock_is_an_error_not_a_hang() {
    let mut b = B::new();
    let m = b.mutex("m", MutexProtocol::Inherit);
    b.task(fifo("Spin", 10, vec![EventKind::Lock(m), EventKind::Unlock(m)]).loops(None));
    let (path, msg) = err(&b.sc, &config(1));
    assert_eq!(path, "tasks.Spin");
    assert!(msg.contains("no time passes"), "{msg}");
}

#[test]
fn wrong_resource_kind_is_refused() {
    let mut b = B::new();
    let c = b.cond("c", &[]);
    b.task(fifo("T", 10, vec![EventKind::Lock(c)]));
    let (path, msg) = err(&b.sc, &SimConfig::default());
    assert_eq!(path, "tasks.T.phases.p0.e0");
    assert!(msg.contains("expected a mutex"), "{msg}");
}

#[test]
fn a_simulator_runs_once() {
    let mut b = B::new();
    b.task(fifo("T", 10, vec![run_us(10)]));
    let mut obs = NullObserver;
    let mut sim = heir_sim::Simulator::new(&b.sc, &SimConfig::default(), &mut obs).unwrap();
    assert!(sim.run().is_ok());
    assert!(sim.run().is_err());
}
