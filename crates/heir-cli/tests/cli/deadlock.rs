//! A deadlock ends the run: exit 3, the cycle printed, files still written.

use serde_json::Value;

use crate::support::*;

#[test]
fn the_table_names_the_cycle() {
    let o = heir([
        "sim".as_ref(),
        example("deadlock-two-locks.json").as_os_str(),
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let out = stdout(&o);
    // The example's comment: A blocks on m2 at 4 ms while B waits on m1.
    assert!(
        out.contains("deadlock at 4.000 ms: A -> m2 -> B -> m1 -> A"),
        "{out}"
    );
    assert_eq!(stderr(&o), "", "a deadlock is a result, not an error");
}

#[test]
fn json_report_trace_and_svg_still_produced() {
    let dir = TempDir::new("deadlock");
    let o = heir([
        "sim".as_ref(),
        example("deadlock-two-locks.json").as_os_str(),
        "--json".as_ref(),
        "--trace".as_ref(),
        dir.join("d.json").as_os_str(),
        "--svg".as_ref(),
        dir.join("d.svg").as_os_str(),
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let r = one_json(&o);
    assert_eq!(
        keys(&r),
        ["mode", "cpus", "duration_us", "tasks", "deadlock"]
    );
    assert_eq!(r["cpus"], 1);
    assert_eq!(r["deadlock"]["at_us"].as_f64(), Some(4000.0));
    assert_eq!(
        r["deadlock"]["cycle"],
        serde_json::json!(["A", "m2", "B", "m1", "A"])
    );
    assert_eq!(r["duration_us"].as_f64(), Some(4000.0));
    assert_eq!(dir.files(), ["d.json", "d.svg"]);
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("d.json")).unwrap()).unwrap();
    assert!(!trace["traceEvents"].as_array().unwrap().is_empty());
    let svg = std::fs::read_to_string(dir.join("d.svg")).unwrap();
    assert!(svg.trim_end().ends_with("</svg>"));
}

#[test]
fn a_livelock_ends_the_run_like_a_deadlock_and_is_named() {
    // examples/nova-fig7.json: Z's handler calls Y, which serves C and
    // waits for Z: with donation and helping, a livelock at 2 ms.
    let o = heir([
        "sim".as_ref(),
        example("nova-fig7.json").as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let r = one_json(&o);
    assert_eq!(r["deadlock"]["kind"], "livelock");
    assert_eq!(r["deadlock"]["at_us"].as_f64(), Some(2000.0));
    assert_eq!(
        r["deadlock"]["cycle"],
        serde_json::json!(["Z", "y", "Y", "z", "Z"])
    );
    let o = heir(["sim".as_ref(), example("nova-fig7.json").as_os_str()]);
    assert_eq!(code(&o), 3);
    assert!(
        stdout(&o).contains("livelock at 2.000 ms: Z -> y -> Y -> z -> Z"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn aborted_calls_are_counted_in_the_text_and_json_reports() {
    let o = heir([
        "sim".as_ref(),
        example("nova-abort-passive.json").as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = one_json(&o);
    assert_eq!(r["tasks"]["C"]["aborted_calls"], 1);
    assert_eq!(r["tasks"]["L"]["aborted_calls"], 0);
    let o = heir([
        "sim".as_ref(),
        example("nova-abort-passive.json").as_os_str(),
    ]);
    assert!(
        stdout(&o).contains("aborted calls: S 0, C 1, L 0"),
        "{}",
        stdout(&o)
    );
}
