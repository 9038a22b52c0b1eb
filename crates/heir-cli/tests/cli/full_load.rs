//! Issue 21: `heir analyze` on a task whose own utilisation is exactly 1
//! and which can be blocked returned never; now at once, "unbounded".

use std::time::{Duration, Instant};

use crate::support::*;

/// H runs 1 + 999 µs (in M) every 1000 µs; L holds M for 50 µs every 10 ms.
const FULL: &str = r#"{
    "global": { "duration": 1, "default_policy": "SCHED_FIFO" },
    "resources": { "M": { "type": "mutex", "protocol": "inherit" } },
    "tasks": {
        "H": { "priority": 20, "cpus": [0], "run": 1, "lock": "M", "run1": 999, "unlock": "M",
               "timer": { "ref": "h", "period": 1000 } },
        "L": { "priority": 10, "cpus": [0], "run": 50, "lock": "M", "run1": 50, "unlock": "M",
               "timer": { "ref": "l", "period": 10000 } }
    }
}"#;

#[test]
fn full_utilisation_with_blocking_is_unbounded_at_once() {
    let dir = TempDir::new("full-load");
    let file = dir.write("full.json", FULL);
    // Every protocol family; --compare simulates the file as written.
    let runs: Vec<Vec<&str>> = ["none", "inherit", "ceiling", "pi-cv"]
        .iter()
        .map(|p| vec!["--protocol", p])
        .chain([vec!["--compare", "--duration", "0.1"]])
        .collect();
    for extra in runs {
        let mut args = vec!["analyze", file.to_str().unwrap(), "--json"];
        args.extend(extra);
        let start = Instant::now();
        let o = heir(&args);
        assert!(start.elapsed() < Duration::from_secs(20), "{args:?}");
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let v = one_json(&o);
        let h = &v["tasks"]["H"];
        assert_eq!(h["wcrt_us"], serde_json::Value::Null, "{args:?}");
        assert_eq!(h["blocking_us"], 50.0, "{args:?}");
        assert_eq!(h["schedulable"], false, "{args:?}");
    }
    // The table says "unbounded", and why.
    let o = heir(["analyze", file.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("unbounded"), "{text}");
    assert!(
        text.contains("the load at this priority and above is exactly 1 and 50 µs of blocking comes on top: the busy period never closes"),
        "{text}"
    );
}
