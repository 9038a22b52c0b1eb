//! ChromeTrace: layout, slices, instants, flows, errors, streaming.

use std::cell::Cell;
use std::io::{self, Write};
use std::rc::Rc;

use heir_core::Urgency;
use heir_report::{Observer, ThreadInfo, TraceEvent};
use heir_viz::{ChromeTrace, TraceWriteError};
use serde_json::Value;

use crate::support::*;

fn trace_of(events: &[TraceEvent], end_ns: u64) -> (String, Value) {
    let mut t = ChromeTrace::new(Vec::new());
    play(&mut t, &info(), events, end_ns);
    let bytes = t.into_inner().expect("trace written");
    let text = String::from_utf8(bytes).unwrap();
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    (text, json)
}

fn events(json: &Value) -> &Vec<Value> {
    json["traceEvents"].as_array().expect("traceEvents array")
}

fn with_ph<'a>(json: &'a Value, ph: &str) -> Vec<&'a Value> {
    events(json).iter().filter(|e| e["ph"] == ph).collect()
}

/// The tid of the track named `name` in process `pid`.
fn tid_of(json: &Value, pid: u64, name: &str) -> u64 {
    with_ph(json, "M")
        .into_iter()
        .find(|e| e["name"] == "thread_name" && e["pid"] == pid && e["args"]["name"] == name)
        .unwrap_or_else(|| panic!("no track {name} in pid {pid}"))["tid"]
        .as_u64()
        .unwrap()
}

#[test]
fn object_form_with_ns_display_unit() {
    let (text, json) = trace_of(&classic_pi(), 8 * MS);
    assert!(text.starts_with(r#"{"traceEvents":["#));
    assert_eq!(json["displayTimeUnit"], "ns");
    assert_eq!(json["otherData"]["end_us"].as_f64(), Some(8000.0));
}

#[test]
fn metadata_goes_into_other_data_the_last_value_of_a_key_wins() {
    let mut t = ChromeTrace::new(Vec::new());
    t.set_metadata("trace", r#"{"dropped_events":1}"#.to_string());
    t.set_metadata("trace", r#"{"dropped_events":3}"#.to_string());
    play(&mut t, &info(), &classic_pi(), 8 * MS);
    let json: Value = serde_json::from_slice(&t.into_inner().unwrap()).unwrap();
    assert_eq!(json["otherData"]["generator"], "heir");
    assert_eq!(json["otherData"]["trace"]["dropped_events"], 3);
}

#[test]
fn one_process_for_cpus_one_for_tasks_most_urgent_first() {
    let (_, json) = trace_of(&classic_pi(), 8 * MS);
    let meta = with_ph(&json, "M");
    let procs: Vec<(u64, String)> = meta
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        procs,
        vec![(1, "CPUs".to_string()), (2, "tasks".to_string())]
    );
    let cpu0 = tid_of(&json, 1, "CPU 0");
    let (l, m, h) = (
        tid_of(&json, 2, "L"),
        tid_of(&json, 2, "M"),
        tid_of(&json, 2, "H"),
    );
    // Track ids are unique across processes and never equal a pid.
    let mut tids = vec![cpu0, l, m, h];
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), 4);
    assert!(tids.iter().all(|&t| t > 2));
    let sort_index = |tid: u64| {
        meta.iter()
            .find(|e| e["name"] == "thread_sort_index" && e["pid"] == 2 && e["tid"] == tid)
            .unwrap()["args"]["sort_index"]
            .as_u64()
            .unwrap()
    };
    assert_eq!((sort_index(h), sort_index(m), sort_index(l)), (0, 1, 2));
}

#[test]
fn execution_is_a_slice_on_the_cpu_and_on_the_task_track() {
    let (text, json) = trace_of(&classic_pi(), 8 * MS);
    let exec: Vec<&Value> = with_ph(&json, "X")
        .into_iter()
        .filter(|e| e["cat"] == "exec")
        .collect();
    let n_exec = classic_pi()
        .iter()
        .filter(|e| matches!(e, TraceEvent::Exec { .. }))
        .count();
    assert_eq!(exec.len(), 2 * n_exec);
    let cpu0 = tid_of(&json, 1, "CPU 0");
    let l = tid_of(&json, 2, "L");
    // The boosted slice of L: 3..4 ms at prio 90 from donor H.
    let boosted: Vec<&&Value> = exec.iter().filter(|e| e["args"]["donor"] == "H").collect();
    assert_eq!(boosted.len(), 2);
    for e in &boosted {
        assert_eq!(e["name"], "L");
        assert_eq!(e["ts"].as_f64(), Some(3000.0));
        assert_eq!(e["dur"].as_f64(), Some(1000.0));
        assert_eq!(e["args"]["urgency"], "prio 90");
        assert_eq!(e["args"]["base"], "prio 50");
    }
    assert_eq!(boosted[0]["pid"], 1);
    assert_eq!(boosted[0]["tid"], cpu0);
    assert_eq!(boosted[1]["pid"], 2);
    assert_eq!(boosted[1]["tid"], l);
    assert_eq!(boosted[1]["args"]["cpu"], 0);
    // Unboosted slices carry no donor.
    assert_eq!(
        exec.iter()
            .filter(|e| e["args"].get("donor").is_none())
            .count(),
        exec.len() - 2
    );
    // Timestamps are exact decimal µs (three decimals, no float noise).
    assert!(text.contains(r#""ts":3000.000,"dur":1000.000"#));
}

#[test]
fn timestamps_keep_nanosecond_precision() {
    let ev = [TraceEvent::Exec {
        cpu: 0,
        thread: H,
        start_ns: 1_234_567,
        end_ns: 29_000_000_001,
        urgency: Urgency::fixed(90),
        donor: None,
    }];
    let (text, _) = trace_of(&ev, 29_000_000_001);
    assert!(
        text.contains(r#""ts":1234.567,"dur":28998765.434"#),
        "{text}"
    );
}

#[test]
fn instants_for_jobs_and_synchronisation() {
    let (_, json) = trace_of(&classic_pi(), 8 * MS);
    let inst = with_ph(&json, "i");
    let names: Vec<&str> = inst.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "release",
            "lock",
            "release",
            "release",
            "blocked",
            "unlock",
            "boost",
            "lock",
            "complete",
            "complete",
            "deadline miss"
        ]
    );
    let h = tid_of(&json, 2, "H");
    let blocked = inst.iter().find(|e| e["name"] == "blocked").unwrap();
    assert_eq!(blocked["tid"], h);
    assert_eq!(blocked["s"], "t");
    assert_eq!(blocked["ts"].as_f64(), Some(3000.0));
    assert_eq!(blocked["args"]["resource"], "m");
    let rel = inst.iter().find(|e| e["name"] == "release").unwrap();
    assert_eq!(rel["args"]["deadline_us"].as_f64(), Some(6000.0));
    let miss = inst.iter().find(|e| e["name"] == "deadline miss").unwrap();
    assert_eq!(miss["tid"], tid_of(&json, 2, "L"));
    assert_eq!(miss["args"]["response_us"].as_f64(), Some(8000.0));
    // The end of the boost is an instant saying L is back to its base.
    let unboost = inst.iter().find(|e| e["name"] == "boost").unwrap();
    assert_eq!(unboost["args"]["urgency"], "prio 50");
    assert_eq!(unboost["args"]["cause"], "base");
}

#[test]
fn a_boost_draws_a_flow_from_the_donor_to_the_boosted_thread() {
    let mut t = ChromeTrace::new(Vec::new());
    play(&mut t, &info(), &classic_pi(), 8 * MS);
    assert_eq!(t.flows(), 1);
    let json: Value = serde_json::from_slice(&t.into_inner().unwrap()).unwrap();
    let (h, l) = (tid_of(&json, 2, "H"), tid_of(&json, 2, "L"));
    let s = with_ph(&json, "s");
    let f = with_ph(&json, "f");
    assert_eq!((s.len(), f.len()), (1, 1));
    assert_eq!(s[0]["id"], f[0]["id"]);
    assert_eq!(
        (s[0]["tid"].as_u64(), f[0]["tid"].as_u64()),
        (Some(h), Some(l))
    );
    assert_eq!(s[0]["ts"].as_f64(), Some(3000.0));
    assert_eq!(f[0]["ts"].as_f64(), Some(3000.0));
    assert_eq!(f[0]["bp"], "e");
    assert_eq!((&s[0]["cat"], &s[0]["name"]), (&f[0]["cat"], &f[0]["name"]));
    // Each end binds to an enclosing zero-length anchor slice at that time,
    // written just before it.
    let all = events(&json);
    let si = all.iter().position(|e| e["ph"] == "s").unwrap();
    let fi = all.iter().position(|e| e["ph"] == "f").unwrap();
    for (i, tid, name) in [(si, h, "donate"), (fi, l, "boost")] {
        let anchor = &all[i - 1];
        assert_eq!(anchor["ph"], "X");
        assert_eq!(anchor["name"], name);
        assert_eq!(anchor["tid"], tid);
        assert_eq!(anchor["ts"].as_f64(), Some(3000.0));
        assert_eq!(anchor["dur"].as_f64(), Some(0.0));
    }
    assert_eq!(all[si - 1]["args"]["to"], "L");
    assert_eq!(all[fi - 1]["args"]["donor"], "H");
}

#[test]
fn no_flow_without_a_donor() {
    let (_, json) = trace_of(&no_boost(), 8 * MS);
    assert!(with_ph(&json, "s").is_empty());
    assert!(with_ph(&json, "f").is_empty());
    // A ceiling (the thread is its own donor) is an instant, not a flow.
    let ceiling = [TraceEvent::Boost {
        at_ns: 0,
        to: L,
        donor: Some(L),
        urgency: Urgency::fixed(95),
    }];
    let (_, json) = trace_of(&ceiling, MS);
    assert!(with_ph(&json, "s").is_empty());
    let i = with_ph(&json, "i");
    assert_eq!(i.len(), 1);
    assert_eq!(i[0]["args"]["cause"], "ceiling");
}

#[test]
fn names_are_escaped() {
    let mut info = info();
    info.threads.push(ThreadInfo {
        name: "we\"ird\\name\n".into(),
        base: Urgency::other(0),
    });
    info.resources = vec!["m\"1".into()];
    let mut t = ChromeTrace::new(Vec::new());
    t.start(&info);
    t.event(&TraceEvent::Instant {
        thread: 3,
        at_ns: 5,
        kind: heir_report::InstantKind::Lock,
        resource: Some(0),
    });
    // Unknown indices are named, never a panic.
    t.event(&TraceEvent::Instant {
        thread: 3,
        at_ns: 6,
        kind: heir_report::InstantKind::Unlock,
        resource: Some(42),
    });
    t.finish(10);
    let json: Value = serde_json::from_slice(&t.into_inner().unwrap()).unwrap();
    assert_eq!(tid_of(&json, 2, "we\"ird\\name\n"), 10 + 1 + 3);
    let i = with_ph(&json, "i");
    assert_eq!(i[0]["args"]["resource"], "m\"1");
    assert_eq!(i[0]["ts"].as_f64(), Some(0.005));
    assert_eq!(i[1]["args"]["resource"], "#42");
}

/// A writer that fails once `limit` bytes were written.
struct Failing {
    written: usize,
    limit: usize,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written + buf.len() > self.limit {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
        }
        self.written += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_first_write_error_is_kept_and_returned() {
    for limit in [0, 100, 64 * 1024 + 10] {
        let mut t = ChromeTrace::new(Failing { written: 0, limit });
        t.start(&info());
        for k in 0..5000 {
            for e in classic_pi() {
                let e = match e {
                    TraceEvent::Exec {
                        cpu,
                        thread,
                        start_ns,
                        end_ns,
                        urgency,
                        donor,
                    } => TraceEvent::Exec {
                        cpu,
                        thread,
                        start_ns: start_ns + k * 10 * MS,
                        end_ns: end_ns + k * 10 * MS,
                        urgency,
                        donor,
                    },
                    e => e,
                };
                t.event(&e);
            }
        }
        t.finish(50_000 * MS);
        assert_eq!(
            t.error().map(|e| e.kind()),
            Some(io::ErrorKind::StorageFull),
            "limit {limit}"
        );
        match t.into_inner() {
            Err(TraceWriteError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::StorageFull),
            Err(e) => panic!("unexpected {e}"),
            Ok(_) => panic!("a failed write must not pass"),
        }
    }
}

#[test]
fn an_unfinished_trace_is_an_error() {
    let mut t = ChromeTrace::new(Vec::new());
    t.start(&info());
    t.event(&classic_pi()[0]);
    assert!(matches!(t.into_inner(), Err(TraceWriteError::Unfinished)));
}

#[test]
fn finish_without_start_is_an_empty_valid_trace() {
    let mut t = ChromeTrace::new(Vec::new());
    t.finish(0);
    let json: Value = serde_json::from_slice(&t.into_inner().unwrap()).unwrap();
    assert!(events(&json).is_empty());
}

/// Counts bytes as they reach the writer.
struct Counting(Rc<Cell<usize>>);

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn events_are_streamed_not_kept() {
    let seen = Rc::new(Cell::new(0));
    let mut t = ChromeTrace::new(Counting(seen.clone()));
    t.start(&info());
    let mut at_checkpoints = Vec::new();
    for k in 0..30_000u64 {
        t.event(&TraceEvent::Exec {
            cpu: 0,
            thread: L,
            start_ns: k * MS,
            end_ns: k * MS + MS / 2,
            urgency: Urgency::fixed(50),
            donor: None,
        });
        if k % 10_000 == 9_999 {
            at_checkpoints.push(seen.get());
        }
    }
    // Bytes reach the writer while the run goes on, growing with it: what
    // is buffered stays below the 64 KiB buffer.
    assert!(at_checkpoints[0] > 1_000_000, "{at_checkpoints:?}");
    assert!(at_checkpoints[1] > at_checkpoints[0] + 1_000_000);
    assert!(at_checkpoints[2] > at_checkpoints[1] + 1_000_000);
    t.finish(30_000 * MS);
    let before = seen.get();
    t.into_inner().unwrap();
    assert_eq!(seen.get(), before, "finish flushed everything");
    assert!(before - at_checkpoints[2] < 64 * 1024 + 200);
}

#[test]
fn a_migration_is_an_instant_on_the_thread_track() {
    let mut t = ChromeTrace::new(Vec::new());
    let two = heir_report::TraceInfo { cpus: 2, ..info() };
    play(&mut t, &two, &migrating(), 6 * MS);
    let json: Value = serde_json::from_slice(&t.into_inner().expect("written")).expect("JSON");
    let l = tid_of(&json, 2, "L");
    let moves: Vec<(f64, u64, u64, u64)> = with_ph(&json, "i")
        .into_iter()
        .filter(|e| e["name"] == "migrate")
        .map(|e| {
            assert_eq!(e["cat"], "sched");
            (
                e["ts"].as_f64().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["args"]["from"].as_u64().unwrap(),
                e["args"]["to"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(moves, vec![(2000.0, l, 0, 1), (5000.0, l, 1, 0)]);
}
