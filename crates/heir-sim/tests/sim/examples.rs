//! The bundled example files (`examples/*.json`), simulated with exact
//! expected values. Each expectation is derived by hand in a comment.

use heir_core::Urgency;
use heir_sim::SimConfig;

use crate::common::*;

fn stats(r: &heir_sim::Report, name: &str) -> (u64, u64, f64, f64, f64) {
    let t = task_report(r, name);
    (
        t.jobs,
        t.deadline_misses,
        t.response_us.min.unwrap(),
        t.response_us.mean.unwrap(),
        t.response_us.max.unwrap(),
    )
}

#[test]
fn fig6_producer_consumer_pi_cv_off() {
    // Consumer (30) waits on q from 0. Producer (10) works 20 ms from 0;
    // Annoyer (20, at 5 ms) preempts it 5-15: the consumer waits for the
    // annoyer (priority inversion). Push at 30, Consumer 30-35, the producer
    // reaches its timer at 35 (job 35 ms). Every 50 ms the same: the
    // consumer's later jobs span 35 → 85 = 50 ms. 1 s = 20 periods.
    let sc = example("fig6-producer-consumer.json");
    let (r, rec) = run(&sc, &pi_cv(false));
    assert_eq!(
        rec.merged_before(0, 100.0),
        rows(&[
            ("Producer", 0.0, 5.0),
            ("Annoyer", 5.0, 15.0),
            ("Producer", 15.0, 30.0),
            ("Consumer", 30.0, 35.0),
            ("Producer", 50.0, 55.0),
            ("Annoyer", 55.0, 65.0),
            ("Producer", 65.0, 80.0),
            ("Consumer", 80.0, 85.0),
        ])
    );
    // Consumer: 35, then 19 × 50 → mean 985 / 20 = 49.25 ms.
    assert_eq!(stats(&r, "Consumer"), (20, 0, 35_000.0, 49_250.0, 50_000.0));
    assert_eq!(stats(&r, "Annoyer"), (20, 0, 10_000.0, 10_000.0, 10_000.0));
    assert_eq!(stats(&r, "Producer"), (20, 0, 35_000.0, 35_000.0, 35_000.0));
    assert_eq!(r.duration_us, 1_000_000.0);
}

#[test]
fn fig6_producer_consumer_pi_cv_on() {
    // The consumer's wait on q.more boosts the producer (its helper) to 30 at
    // 0: Producer 0-20 uninterrupted, push, Consumer 20-25; the consumer waits
    // again (the producer, asleep, keeps the boost), the producer reaches its
    // timer at 25 (job 25 ms), Annoyer 25-35 (job 30 ms). Same every 50 ms.
    let sc = example("fig6-producer-consumer.json");
    let (r, rec) = run(&sc, &pi_cv(true));
    assert_eq!(
        rec.merged_before(0, 100.0),
        rows(&[
            ("Producer", 0.0, 20.0),
            ("Consumer", 20.0, 25.0),
            ("Annoyer", 25.0, 35.0),
            ("Producer", 50.0, 70.0),
            ("Consumer", 70.0, 75.0),
            ("Annoyer", 75.0, 85.0),
        ])
    );
    assert_eq!(
        rec.slices()[0],
        (
            s("Producer"),
            0.0,
            20.0,
            Urgency::fixed(30),
            Some(s("Consumer"))
        )
    );
    // Consumer: 25, then 19 × 50 → mean 975 / 20 = 48.75 ms.
    assert_eq!(stats(&r, "Consumer"), (20, 0, 25_000.0, 48_750.0, 50_000.0));
    assert_eq!(stats(&r, "Annoyer"), (20, 0, 30_000.0, 30_000.0, 30_000.0));
    assert_eq!(stats(&r, "Producer"), (20, 0, 25_000.0, 25_000.0, 25_000.0));
}

#[test]
fn fig7_boost_flows_consumer_producer_mutex() {
    // 0 Mutex (5) locks M; 1 Consumer waits on q.more → Producer boosted to
    // 30; Producer 1-6, blocks on M → Mutex inherits 30 (donor Consumer)
    // through q.more → Producer → M; Mutex 6-15 (its 10 ms), unlock; Producer
    // 15-22 (2 + 5 ms), push; Consumer 22-27; Annoyer (at 5) 27-37; Mutex
    // reaches its timer at 37. Every 50 ms the same, Producer/Consumer
    // shifted by their 1 ms delay.
    let sc = example("fig7-transitive.json");
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged_before(0, 50.0),
        rows(&[
            ("Mutex", 0.0, 1.0),
            ("Producer", 1.0, 6.0),
            ("Mutex", 6.0, 15.0),
            ("Producer", 15.0, 22.0),
            ("Consumer", 22.0, 27.0),
            ("Annoyer", 27.0, 37.0),
        ])
    );
    assert!(rec.slices().contains(&(
        s("Mutex"),
        6.0,
        15.0,
        Urgency::fixed(30),
        Some(s("Consumer"))
    )));
    let at6: Vec<_> = rec.boosts().into_iter().filter(|b| b.0 == 6.0).collect();
    assert_eq!(
        at6,
        vec![(6.0, s("Mutex"), Some(s("Consumer")), Urgency::fixed(30))]
    );
    // Consumer: 1 → 27 (26 ms), then 27 → 77 (50 ms) and so on.
    assert_eq!(stats(&r, "Consumer"), (20, 0, 26_000.0, 48_800.0, 50_000.0));
    assert_eq!(stats(&r, "Producer"), (20, 0, 26_000.0, 26_000.0, 26_000.0));
    assert_eq!(stats(&r, "Annoyer"), (20, 0, 32_000.0, 32_000.0, 32_000.0));
    assert_eq!(stats(&r, "Mutex"), (20, 0, 37_000.0, 37_000.0, 37_000.0));
}

#[test]
fn table1_client_server_pi_cv_on_meets_the_analytic_bounds() {
    // PI-CV on: at 0 Client1 runs 10 ms and calls; the server runs its 4.5 ms
    // at 90 (helper of reply[Client1]): Client1 done at 14.5. Client2 runs
    // 14.5-24.5, calls, the server runs at 80: done at 29 = the paper's
    // bound C2 + D2 + C1 + D1 = 10 + 4.5 + 10 + 4.5. Client1 never waits
    // for more than its own work plus one request: ≤ 19 ms.
    let sc = example("table1-client-server.json");
    let (r, _) = run(&sc, &pi_cv(true));
    let c1 = task_report(&r, "Client1");
    let c2 = task_report(&r, "Client2");
    assert_eq!(c2.response_us.max, Some(29_000.0));
    assert!(c1.response_us.max.unwrap() <= 19_000.0);
    assert_eq!(c1.response_us.max, Some(14_500.0));
    // 60 s: 1500 and 1200 jobs, no miss.
    assert_eq!((c1.jobs, c1.deadline_misses), (1500, 0));
    assert_eq!((c2.jobs, c2.deadline_misses), (1200, 0));
    assert!(r.deadlock.is_none());
    assert_eq!(r.duration_us, 60_000_000.0);
}

#[test]
fn table1_critical_instant_reaches_client1_bound() {
    // Client1 released at 10.001 ms. 0-10 Client2 runs and calls at 10; the
    // server takes the request (at 80) and runs 1 µs before Client1 preempts
    // it at 10.001; Client1 runs to 20.001 and calls; the server, helper of
    // reply[Client1], finishes Client2's request at 90 (20.001-24.5) and then
    // Client1's (24.5-29.0): Client1's response is 29.0 - 10.001 = 18.999 ms,
    // 1 µs short of the analytic C1 + D1 + I1 = 10 + 4.5 + 4.5 = 19 ms.
    let sc = example("table1-critical-instant.json");
    let (r, _) = run(&sc, &pi_cv(true));
    assert_eq!(task_report(&r, "Client1").response_us.max, Some(18_999.0));
    assert_eq!(task_report(&r, "Client2").response_us.max, Some(29_000.0));
    assert_eq!(task_report(&r, "Client1").deadline_misses, 0);
}

#[test]
fn table1_client_server_pi_cv_off_is_worse() {
    // PI-CV off: at 0 Client1 runs 0-10 and calls; the server (50) is
    // preempted by Client2 10-20 and by the Annoyer 20-30 before it serves
    // Client1 30-34.5 (34.5 ms) then Client2 34.5-39 (39 ms).
    let sc = example("table1-client-server.json");
    let (r_off, _) = run(&sc, &pi_cv(false));
    let (r_on, _) = run(&sc, &pi_cv(true));
    for name in ["Client1", "Client2"] {
        let off = task_report(&r_off, name).response_us.max.unwrap();
        let on = task_report(&r_on, name).response_us.max.unwrap();
        assert!(off > on, "{name}: {off} vs {on}");
    }
    assert_eq!(
        task_report(&r_off, "Client1").response_us.max,
        Some(34_500.0)
    );
    assert_eq!(
        task_report(&r_off, "Client2").response_us.max,
        Some(39_000.0)
    );
}

#[test]
fn ipcp_inherit_chains_t0_behind_two_critical_sections() {
    // T2 locks R2 at 0; T1 (2 ms) locks R1; T0 (4 ms) blocks on R1 → T1
    // inherits 70, runs to 19, blocks on R2 → T2 inherits 70 (donor T0) and
    // finishes its section 19-34; T1 34-51; T0 51-68: 64 ms for T0.
    let sc = example("ipcp-t0-t1-t2-inherit.json");
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged_before(0, 100.0),
        rows(&[
            ("T2", 0.0, 2.0),
            ("T1", 2.0, 19.0),
            ("T2", 19.0, 34.0),
            ("T1", 34.0, 51.0),
            ("T0", 51.0, 68.0),
        ])
    );
    assert!(rec
        .boosts()
        .contains(&(19.0, s("T2"), Some(s("T0")), Urgency::fixed(70))));
    // 1 s, period 200 ms: 5 identical jobs each.
    assert_eq!(stats(&r, "T0"), (5, 0, 64_000.0, 64_000.0, 64_000.0));
    assert_eq!(stats(&r, "T1"), (5, 0, 66_000.0, 66_000.0, 66_000.0));
    assert_eq!(stats(&r, "T2"), (5, 0, 68_000.0, 68_000.0, 68_000.0));
}

#[test]
fn ipcp_ceiling_t0_is_never_blocked() {
    // T2 locks R2 at 0 and runs at its ceiling 65: T1 (65, at 2 ms) cannot
    // preempt; T0 (70, at 4 ms) does, finds R1 free: 4-21, 17 ms. T2 21-34,
    // then T1 34-68 at R1's ceiling 70.
    let sc = example("ipcp-t0-t1-t2-ceiling.json");
    let (r, rec) = run(&sc, &SimConfig::default());
    assert_eq!(
        rec.merged_before(0, 100.0),
        rows(&[
            ("T2", 0.0, 4.0),
            ("T0", 4.0, 21.0),
            ("T2", 21.0, 34.0),
            ("T1", 34.0, 68.0),
        ])
    );
    assert_eq!(rec.slices()[0].3, Urgency::fixed(65));
    assert_eq!(stats(&r, "T0"), (5, 0, 17_000.0, 17_000.0, 17_000.0));
    assert_eq!(stats(&r, "T1"), (5, 0, 66_000.0, 66_000.0, 66_000.0));
    assert_eq!(stats(&r, "T2"), (5, 0, 68_000.0, 68_000.0, 68_000.0));
}

#[test]
fn deadlock_two_locks() {
    // See the file: A 0-1 (holds m1), B 1-3 (holds m2), B blocks on m1 at 3
    // (A inherits 20), A blocks on m2 at 4: A -> m2 -> B -> m1 -> A.
    let sc = example("deadlock-two-locks.json");
    let (r, rec) = run(&sc, &SimConfig::default());
    let d = r.deadlock.as_ref().expect("deadlock");
    assert_eq!(d.at_us, 4000.0);
    assert_eq!(d.cycle, vec!["A", "m2", "B", "m1", "A"]);
    assert_eq!(r.duration_us, 4000.0);
    assert_eq!(
        rec.merged(0),
        rows(&[("A", 0.0, 1.0), ("B", 1.0, 3.0), ("A", 3.0, 4.0)])
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["deadlock"]["at_us"], 4000.0);
    assert_eq!(json["tasks"]["A"]["jobs"], 0);
}

#[test]
fn cond_wait_textbook_pattern() {
    // Every 10 ms: the consumer (30, CPU 0) holds m 0-2 and waits on c with
    // it; the producer (10, CPU 1), a helper of c, blocked on m since 0.5,
    // gets m at 2 (the wait gives it up). PI-CV on: it runs 2-3 at the
    // consumer's 30 and signals at 3; the woken consumer blocks on m, the
    // producer (now at 30 through the PI mutex) unlocks at once; the
    // consumer runs 3-4 (response 4 ms); the annoyer (20, from 2.5) runs
    // 3-6 (3.5 ms); the producer's job ends at 6 (timer; 5.5 ms from 0.5).
    // PI-CV off: the annoyer preempts the producer 2.5-5.5; signal at 6,
    // consumer 6-7 (7 ms), annoyer 3 ms, producer 5.5 ms.
    let sc = example("cond-wait-textbook.json");
    let (on, rec) = run(&sc, &pi_cv(true));
    assert!(on.deadlock.is_none());
    assert_eq!(
        rec.merged_before(1, 10.0),
        rows(&[("Producer", 2.0, 3.0), ("Annoyer", 3.0, 6.0)])
    );
    assert_eq!(stats(&on, "Consumer"), (10, 0, 4_000.0, 4_000.0, 4_000.0));
    assert_eq!(stats(&on, "Producer"), (10, 0, 5_500.0, 5_500.0, 5_500.0));
    assert_eq!(stats(&on, "Annoyer"), (10, 0, 3_500.0, 3_500.0, 3_500.0));
    let (off, rec) = run(&sc, &pi_cv(false));
    assert!(off.deadlock.is_none());
    assert_eq!(
        rec.merged_before(1, 10.0),
        rows(&[
            ("Producer", 2.0, 2.5),
            ("Annoyer", 2.5, 5.5),
            ("Producer", 5.5, 6.0)
        ])
    );
    assert_eq!(stats(&off, "Consumer"), (10, 0, 7_000.0, 7_000.0, 7_000.0));
    assert_eq!(stats(&off, "Producer"), (10, 0, 5_500.0, 5_500.0, 5_500.0));
    assert_eq!(stats(&off, "Annoyer"), (10, 0, 3_000.0, 3_000.0, 3_000.0));
}
