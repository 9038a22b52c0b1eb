//! The donation model (NOVA donation) through `heir sim`: handlers that block,
//! passive servers shown as such.

use crate::support::*;

/// Max response (µs) of each of `names` in a `--json` report.
fn max_us(o: &std::process::Output, names: &[&str]) -> Vec<f64> {
    let r = one_json(o);
    names
        .iter()
        .map(|n| {
            r["tasks"][*n]["response_us"]["max"]
                .as_f64()
                .unwrap_or(f64::NAN)
        })
        .collect()
}

#[test]
fn a_blocking_handler_example_gives_its_hand_worked_values() {
    let file = example("nova-fig5-6-blocking.json");
    let o = heir(["sim".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        max_us(&o, &["O", "B", "D", "L", "Z"]),
        [3000.0, 5500.0, 6300.0, 7500.0, 6500.0]
    );
    // Without inheritance through m the lent timeslices stay parked on Z.
    let o = heir([
        "sim".as_ref(),
        file.as_os_str(),
        "--json".as_ref(),
        "--protocol".as_ref(),
        "m=none".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        max_us(&o, &["O", "B", "D", "L", "Z"]),
        [5500.0, 8000.0, 8800.0, 3500.0, 9000.0]
    );
}

#[test]
fn the_table_shows_a_passive_server_as_passive() {
    let o = heir([
        "sim".as_ref(),
        example("nova-fig5-6-blocking.json").as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let row = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
    };
    assert_eq!(row("Z").as_deref(), Some("passive"), "{out}");
    assert_eq!(row("B").as_deref(), Some("SCHED_FIFO/40"), "{out}");
}
