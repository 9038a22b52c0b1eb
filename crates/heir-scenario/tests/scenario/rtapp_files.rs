//! rt-app's own example files (from the distribution's `rt-app` package,
//! /usr/share/doc/rt-app/examples) and heir's examples/ directory.

use std::path::PathBuf;

use heir_scenario::{
    load, parse_str, EventKind, Micros, Policy, ResIdx, ResourceKind, Sched, TaskIdx, TimerMode,
};

use crate::common::*;

#[test]
fn every_supported_rtapp_example_parses() {
    let Some(dir) = rtapp_examples() else { return };
    for name in [
        "mp3-short.json",
        "mp3-long.json",
        "browser-short.json",
        "browser-long.json",
        "video-short.json",
        "video-long.json",
        "template.json",
        "spreading-tasks.json",
        "tutorial/example1.json",
        "tutorial/example2.json",
        "tutorial/example3.json",
        "tutorial/example4.json",
        "tutorial/example5.json",
        "tutorial/example7.json",
        "tutorial/example8.json",
    ] {
        let s = load(&dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.tasks.is_empty(), "{name}");
        assert!(
            s.tasks
                .iter()
                .all(|t| t.phases.iter().any(|p| !p.events.is_empty())),
            "{name}"
        );
    }
}

/// `spreading-tasks.json` names a phase of `thread2` twice: rt-app (json-c)
/// keeps the later value in the first one's place, and so does heir, with
/// a warning at the kept one.
#[test]
fn spreading_tasks_keeps_the_later_repeated_phase() {
    let Some(s) = load_rtapp("spreading-tasks.json") else {
        return;
    };
    let t2 = &s.tasks[1];
    assert_eq!(t2.name, "thread2");
    let phases: Vec<(&str, u64, (u32, u32))> = t2
        .phases
        .iter()
        .map(|p| (p.name.as_str(), p.loops, (p.line, p.column)))
        .collect();
    assert_eq!(
        phases,
        [
            ("light1", 900, (23, 5)),
            ("heavy1", 600, (38, 33)),
            ("light2", 300, (33, 33))
        ]
    );
    assert_eq!(
        warnings(&s),
        ["38:33: tasks.thread2.phases.heavy1: phase \"heavy1\" is given 2 times (first at line 28, column 5): heir keeps only this last one, in the first one's place, as rt-app does (its JSON reader keeps a repeated key's last value)"]
    );
}

/// The example file heir refuses, at the place that says why: rt-app's
/// memory-bandwidth load. (rt-app's `fork` is refused too:
/// `bad_input::unknown_events_fork_and_memrun`.)
#[test]
fn rtapp_examples_heir_refuses_name_why() {
    let Some(dir) = rtapp_examples() else { return };
    let path = dir.join("tutorial/example6.json");
    let e = load(&path).unwrap_err();
    assert_eq!(e.file, path.display().to_string());
    assert_eq!((e.line, e.column), (11, 4));
    assert_eq!(e.path.as_deref(), Some("tasks.thread0.mem"));
    assert_eq!(
        e.message,
        "event \"mem\" is not modelled by heir (rt-app's mem is a memory-bandwidth load)"
    );
}

#[test]
fn mp3_short_exact_values() {
    let Some(s) = load_rtapp("mp3-short.json") else {
        return;
    };
    let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "AudioTick",
            "AudioOut",
            "AudioTrack",
            "mp3.decoder",
            "OMXCall"
        ]
    );
    assert_eq!(s.global.duration_s, Some(6.0));
    assert_eq!(s.global.default_policy, Policy::Other);
    assert_eq!(s.global.calibration_ns_per_loop, None);
    assert_eq!(
        warnings(&s),
        ["65:3: global.frag: unknown global key \"frag\" (ignored)"]
    );

    // AudioTick: nice -19 on CPU 0, two phases sharing the timer "tick".
    let tick = &s.tasks[0];
    assert_eq!(
        tick.sched,
        Sched {
            policy: Policy::Other,
            priority: -19,
            dl: None
        }
    );
    assert_eq!(tick.cpus, Some(vec![0]));
    assert_eq!(tick.loops, None);
    let loops: Vec<(&str, u64)> = tick
        .phases
        .iter()
        .map(|p| (p.name.as_str(), p.loops))
        .collect();
    assert_eq!(loops, [("p1", 1), ("p2", 4)]);
    let (ti, tr) = res(&s, "tick", "timer");
    assert_eq!(
        tr.kind,
        ResourceKind::Timer {
            mode: TimerMode::Relative,
            unique: false
        }
    );
    let out = ResIdx(res(&s, "AudioOut", "suspend point").0);
    let timer = EventKind::Timer {
        timer: ResIdx(ti),
        period: Micros::Fixed(6000),
    };
    assert_eq!(kinds(&s, 0, 0), [EventKind::Resume(out), timer.clone()]);
    assert_eq!(kinds(&s, 0, 1), [timer]);

    // OMXCall: the events in order, under workgen's names.
    let m = ResIdx(res(&s, "mutex", "mutex").0);
    let q = ResIdx(res(&s, "queue", "cond").0);
    assert_eq!(
        keys(&s, 4, 0),
        ["lock", "wait", "unlock", "run", "lock1", "signal", "unlock1"]
    );
    assert_eq!(
        kinds(&s, 4, 0),
        [
            EventKind::Lock(m),
            EventKind::Wait { cond: q, mutex: m },
            EventKind::Unlock(m),
            EventKind::Run(Micros::Fixed(300)),
            EventKind::Lock(m),
            EventKind::Signal(q),
            EventKind::Unlock(m),
        ]
    );
    let e = &s.tasks[4].phases[0].events[4];
    assert_eq!(
        (e.path.as_str(), e.line, e.column),
        ("tasks.OMXCall.lock1", 52, 4)
    );
    // mp3.decoder's path is quoted: its name has a dot.
    assert_eq!(s.tasks[3].path, "tasks[\"mp3.decoder\"]");
    assert_eq!(
        *res_kind(&s, "mp3.decoder", "suspend point"),
        ResourceKind::Suspend { task: TaskIdx(3) }
    );
}

#[test]
fn video_short_values() {
    let Some(s) = load_rtapp("video-short.json") else {
        return;
    };
    assert_eq!(s.tasks.len(), 17);
    // surfaceflinger: `"suspend",` then run.
    let sf = ResIdx(res(&s, "surfaceflinger", "suspend point").0);
    assert_eq!(
        kinds(&s, 0, 0),
        [EventKind::Suspend(sf), EventKind::Run(Micros::Fixed(1500))]
    );
    // "NuPlayerDriver" is both a mutex and the cond synced with it.
    let t = s
        .tasks
        .iter()
        .position(|t| t.name == "NuPlayerDriver2")
        .unwrap();
    let m = ResIdx(res(&s, "NuPlayerDriver", "mutex").0);
    let c = ResIdx(res(&s, "NuPlayerDriver", "cond").0);
    // Its events: suspend, run, (resume "NuPlayerDriver" left out), resume,
    // sleep, run, then lock, sync, unlock.
    let ev = kinds(&s, t, 0);
    assert_eq!(
        ev[5..9],
        [
            EventKind::Lock(m),
            EventKind::Signal(c),
            EventKind::Wait { cond: c, mutex: m },
            EventKind::Unlock(m),
        ]
    );
    assert_eq!(keys(&s, t, 0)[5..9], ["lock", "sync", "sync", "unlock"]);
    // Three resumes name no task ("EventThread", "NuPlayerDriver" twice).
    let dropped: Vec<&str> = s
        .warnings
        .iter()
        .filter(|w| w.message.starts_with("resume target"))
        .map(|w| w.path.as_str())
        .collect();
    assert_eq!(
        dropped,
        [
            "tasks.DispSync.phases.p1.resume",
            "tasks.NuPlayerDriver1.resume",
            "tasks.NuPlayerDriver2.resume"
        ]
    );
}

#[test]
fn example_files_values() {
    let Some(s) = load_rtapp("tutorial/example3.json") else {
        return;
    };
    let t = &s.tasks[0];
    assert_eq!((t.instance, t.loops), (12, Some(1)));
    let phases: Vec<(&str, u64)> = t
        .phases
        .iter()
        .map(|p| (p.name.as_str(), p.loops))
        .collect();
    assert_eq!(phases, [("light", 10), ("heavy", 10)]);
    assert_eq!(s.resources.len(), 1);
    assert_eq!(s.resources[0].name, "unique@thread0");

    let Some(s) = load_rtapp("tutorial/example7.json") else {
        return;
    };
    assert_eq!(keys(&s, 0, 0)[0..3], ["runtime1", "sleep1", "barrier1"]);
    assert_eq!(kinds(&s, 0, 0)[0], EventKind::Runtime(Micros::Fixed(1000)));
    for b in ["FIRST", "SECOND", "THIRD"] {
        assert_eq!(
            *res_kind(&s, b, "barrier"),
            ResourceKind::Barrier { users: 2 }
        );
    }

    let Some(s) = load_rtapp("tutorial/example8.json") else {
        return;
    };
    let t = &s.tasks[0];
    assert_eq!(t.cpus, Some(vec![2]));
    let cpus: Vec<Option<Vec<u32>>> = t.phases.iter().map(|p| p.cpus.clone()).collect();
    assert_eq!(cpus, [Some(vec![0]), Some(vec![1]), None]);
    assert_eq!(t.loops, None);

    let Some(s) = load_rtapp("browser-short.json") else {
        return;
    };
    assert_eq!(s.tasks[0].loops, Some(3));
    assert_eq!(s.tasks[0].phases.len(), 7);
    assert_eq!(s.tasks.last().unwrap().name, "Display");
}

#[test]
fn heir_examples_parse() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            parse_str(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n > 0, "no examples in {}", dir.display());
}

#[test]
fn scenario_reference_examples_parse() {
    // Every complete scenario (a ```json block starting with `{`) in
    // docs/SCENARIO.md must read without error.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/SCENARIO.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut n = 0;
    for block in doc.split("```json\n").skip(1) {
        let body = &block[..block.find("```").unwrap()];
        if body.trim_start().starts_with('{') {
            let s = parse_str(body, "SCENARIO.md").unwrap_or_else(|e| panic!("{e}\n{body}"));
            assert!(!s.tasks.is_empty());
            n += 1;
        }
    }
    assert!(n >= 1, "no complete example in {}", path.display());
}
