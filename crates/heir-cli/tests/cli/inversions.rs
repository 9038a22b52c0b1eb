//! `heir inversions TRACE.json`: the priority inversions of a trace.

use serde_json::Value;

use crate::support::*;

/// Simulates fig6 with PI-CV `pi_cv`: (`heir sim --json`, trace path).
fn fig6(dir: &TempDir, pi_cv: &str) -> (Value, std::path::PathBuf) {
    let trace = dir.join(&format!("fig6-{pi_cv}.json"));
    let o = heir([
        "sim",
        &example("fig6-producer-consumer.json").display().to_string(),
        "--pi-cv",
        pi_cv,
        "--json",
        "--trace",
        &trace.display().to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    (one_json(&o), trace)
}

fn inversions_json(trace: &std::path::Path) -> Value {
    let o = heir(["inversions", &trace.display().to_string(), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    one_json(&o)
}

#[test]
fn inversions_of_fig6_without_pi_cv_are_the_annoyer_running_while_the_consumer_waits() {
    let dir = TempDir::new("inv-off");
    let (sim, trace) = fig6(&dir, "off");
    let v = inversions_json(&trace);
    assert_eq!(
        keys(&v),
        ["file", "waits", "inversions", "resources", "lower_ran_ms"]
    );
    // 20 consumer jobs: each waits on q.more once and takes q.mutex once.
    assert_eq!(v["waits"], 40);
    let inv = v["inversions"].as_array().unwrap();
    assert_eq!(inv.len(), 20, "{v:#}");
    // Every one: the consumer (prio 30) waits on q.more for the producer
    // (prio 10), which the annoyer (prio 20) preempts for its whole 10 ms.
    for i in inv {
        assert_eq!(i["waiter"], "Consumer");
        assert_eq!(i["resource"], "q.more");
        assert_eq!(i["kind"], "condvar");
        assert_eq!(i["waited_for"], serde_json::json!(["Producer"]));
        assert_eq!(i["lower_ran_ms"], 10.0);
        assert_eq!(
            i["lower"],
            serde_json::json!([{"thread": "Annoyer", "ms": 10.0}])
        );
    }
    // Worst first: 19 waits of 45 ms (the consumer waits from 5 ms after
    // a push, 35 ms into each 50 ms period, to the next push at 80 ms:
    // producer released at 50, 20 ms of work, 10 ms of annoyer), then the
    // first one, 0 → 30 ms.
    for (k, i) in inv[..19].iter().enumerate() {
        let from = 35.0 + 50.0 * k as f64;
        assert_eq!(i["from_ms"], from, "{i}");
        assert_eq!(i["to_ms"], from + 45.0, "{i}");
        assert_eq!(i["delay_ms"], 45.0, "{i}");
    }
    assert_eq!(inv[19]["from_ms"], 0.0);
    assert_eq!(inv[19]["to_ms"], 30.0);
    assert_eq!(inv[19]["delay_ms"], 30.0);
    // The delays are the consumer's response times less its 5 ms of work
    // (heir sim --json): min 35 ms (the first job), mean 49.25 ms.
    let c = &sim["tasks"]["Consumer"];
    assert_eq!(c["jobs"], 20);
    assert_eq!(c["response_us"]["min"], 35000.0);
    assert_eq!(c["response_us"]["max"], 50000.0);
    let total_delay_ms = 20.0 * (c["response_us"]["mean"].as_f64().unwrap() - 5000.0) / 1000.0;
    assert_eq!(total_delay_ms, 885.0);
    // The producer's response: 20 ms of work + the annoyer's 10 ms + the
    // consumer's 5 ms: the annoyer ran 10 ms of each of its jobs.
    assert_eq!(sim["tasks"]["Producer"]["response_us"]["max"], 35000.0);
    assert_eq!(
        v["resources"],
        serde_json::json!([{
            "resource": "q.more",
            "kind": "condvar",
            "inversions": 20,
            "total_delay_ms": total_delay_ms,
            "worst_delay_ms": 45.0,
            "lower_ran_ms": 200.0
        }])
    );
    assert_eq!(v["lower_ran_ms"], 200.0);

    // The table says the same.
    let o = heir(["inversions", &trace.display().to_string()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("40 waits, 20 priority inversions, lower-priority threads ran 200.000 ms"),
        "{out}"
    );
    let first = out
        .lines()
        .find(|l| l.starts_with("Consumer"))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "Consumer",
            "q.more",
            "(condvar)",
            "Producer",
            "35.000",
            "45.000",
            "Annoyer",
            "10.000"
        ],
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == ["q.more", "condvar", "20", "885.000", "45.000", "200.000"]),
        "{out}"
    );
}

#[test]
fn inversions_of_fig6_vanish_with_pi_cv() {
    let dir = TempDir::new("inv-on");
    let (sim, trace) = fig6(&dir, "on");
    let v = inversions_json(&trace);
    // The producer runs at the consumer's priority while it waits: the
    // annoyer runs only while the producer has no job (25 → 35 ms of
    // each period), which delays nobody.
    assert_eq!(v["waits"], 40);
    assert_eq!(v["inversions"], serde_json::json!([]));
    assert_eq!(v["resources"], serde_json::json!([]));
    assert_eq!(v["lower_ran_ms"], 0.0);
    // heir sim --json agrees: the producer is never preempted (20 ms of
    // work + the consumer's 5 ms), the consumer waits 20 ms, then 45.
    assert_eq!(sim["tasks"]["Producer"]["response_us"]["max"], 25000.0);
    assert_eq!(sim["tasks"]["Consumer"]["response_us"]["min"], 25000.0);

    let o = heir(["inversions", &trace.display().to_string()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("40 waits, 0 priority inversions, lower-priority threads ran 0.000 ms"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn inversions_refuses_what_is_not_a_heir_trace() {
    let dir = TempDir::new("inv-bad");
    let cases = [
        ("garbage.json", Some("{\"traceEvents\": ["), "not JSON"),
        (
            "other.json",
            Some("{\"traceEvents\": [], \"otherData\": {}}"),
            "not a heir trace",
        ),
        ("scenario.json", None, "not JSON"),
        ("missing.json", Some(""), "cannot read"),
    ];
    for (name, text, what) in cases {
        let path = match (name, text) {
            ("missing.json", _) => dir.join(name),
            ("scenario.json", _) => example("fig6-producer-consumer.json"),
            (_, Some(t)) => dir.write(name, t),
            _ => unreachable!(),
        };
        let o = heir(["inversions", &path.display().to_string(), "--json"]);
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{name}");
        let err = stderr(&o);
        assert!(err.contains(&path.display().to_string()), "{name}: {err}");
        assert!(err.contains(what), "{name}: {err}");
        assert!(
            err.contains("expected a Chrome trace-event JSON object written by `heir sim --trace`"),
            "{name}: {err}"
        );
    }
}

#[test]
fn a_chain_through_a_mutex_is_what_the_waiter_waited_for() {
    // fig7: the consumer waits for the producer, which blocks on M held by
    // the lowest thread "Mutex": that one is part of the chain, not an
    // inversion; the annoyer is.
    let dir = TempDir::new("inv-chain");
    for (pi_cv, count, lower) in [("off", 20, 200.0), ("on", 0, 0.0)] {
        let trace = dir.join(&format!("fig7-{pi_cv}.json"));
        let o = heir([
            "sim",
            &example("fig7-transitive.json").display().to_string(),
            "--pi-cv",
            pi_cv,
            "--trace",
            &trace.display().to_string(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v = inversions_json(&trace);
        let inv = v["inversions"].as_array().unwrap();
        assert_eq!(inv.len(), count, "{pi_cv}: {v:#}");
        assert_eq!(v["lower_ran_ms"], lower, "{pi_cv}");
        for i in inv {
            assert_eq!(i["waiter"], "Consumer");
            assert_eq!(i["waited_for"], serde_json::json!(["Producer", "Mutex"]));
            assert_eq!(
                i["lower"],
                serde_json::json!([{"thread": "Annoyer", "ms": 10.0}])
            );
        }
    }
}
