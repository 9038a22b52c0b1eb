//! Sweeps: the configuration format, reproducibility across thread counts,
//! and the outputs.

use heir_analysis::sweep::{count_items, result_from_counts, run, task_set, SweepConfig};
use heir_analysis::{Analyzer, Family};

use crate::example;

fn small() -> SweepConfig {
    let text = std::fs::read_to_string(example("sweeps/small.json")).unwrap();
    let mut cfg = SweepConfig::from_json_str(&text).unwrap();
    cfg.sets_per_point = 60;
    cfg
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn the_example_config_reads() {
    let text = std::fs::read_to_string(example("sweeps/small.json")).unwrap();
    let cfg = SweepConfig::from_json_str(&text).unwrap();
    assert_eq!(cfg.points.len(), 20);
    assert!((cfg.points[19] - 1.0).abs() < 1e-9);
    assert_eq!(cfg.protocols, Family::ALL);
    assert_eq!(
        (cfg.csv.as_deref(), cfg.svg.as_deref()),
        (Some("sweep-small.csv"), Some("sweep-small.svg"))
    );
    assert_eq!(cfg.params.cs_us, (5, 1280));
    assert_eq!(cfg.total_sets(), 10_000);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let cfg = small();
    let one = in_pool(1, || run(&cfg, &|_| {}));
    let two = in_pool(2, || run(&cfg, &|_| {}));
    let four = in_pool(4, || run(&cfg, &|_| {}));
    assert_eq!(one, two);
    assert_eq!(one, four);
    assert_eq!(one.to_csv(), four.to_csv());
    // Each set is a pure function of (seed, point, index).
    assert_eq!(task_set(&cfg, 3, 7), task_set(&cfg, 3, 7));
    assert_ne!(task_set(&cfg, 3, 7), task_set(&cfg, 3, 8));
    let mut other = cfg.clone();
    other.seed = 2;
    assert_ne!(in_pool(2, || run(&other, &|_| {})), one);
}

#[test]
fn chunked_counts_summed_are_the_whole_sweep() {
    let cfg = small();
    let whole = in_pool(2, || run(&cfg, &|_| {}));
    let total = cfg.points.len() * cfg.sets_per_point;
    // Uneven chunks, one past the end, one empty: the sum is the sweep.
    let mut sum = vec![0u64; cfg.points.len() * cfg.protocols.len()];
    for (a, b) in [(0, 7), (7, 7), (7, 500), (500, 1111), (1111, total + 40)] {
        let part = in_pool(2, || count_items(&cfg, a..b, &|_| {}));
        assert_eq!(part.len(), sum.len());
        sum.iter_mut().zip(part).for_each(|(s, p)| *s += p);
    }
    let chunked = result_from_counts(&cfg, &sum);
    assert_eq!(chunked, whole);
    assert_eq!(chunked.to_csv(), whole.to_csv());
    // A single chunk's counts are only its own sets.
    let first = count_items(&cfg, 0..1, &|_| {});
    assert!(first.iter().sum::<u64>() <= cfg.protocols.len() as u64);
    assert!(first[cfg.protocols.len()..].iter().all(|&c| c == 0));
}

#[test]
fn pi_cv_dominates_inheritance_and_progress_counts_every_set() {
    let cfg = small();
    let done = std::sync::atomic::AtomicU64::new(0);
    let r = run(&cfg, &|n| {
        done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(done.into_inner(), cfg.total_sets());
    let k = |p| r.protocols.iter().position(|&x| x == p).unwrap();
    for pt in &r.points {
        assert_eq!(pt.sets, 60);
        // Same mutex analysis, and an RPC that PI-CV bounds whenever plain
        // inheritance does: per set, inherit ⇒ pi-cv.
        assert!(
            pt.schedulable[k(Family::PiCv)] >= pt.schedulable[k(Family::Inherit)],
            "{pt:?}"
        );
    }
    // At 5% everything but the unbounded inversions passes; at 100% with
    // blocking nothing does.
    assert!(r.points[0].schedulable[k(Family::PiCv)] >= 55);
    assert_eq!(r.points[19].schedulable[k(Family::PiCv)], 0);
    // Per set, the same dominance holds exactly.
    let mut an = Analyzer::new();
    for i in 0..40 {
        let set = task_set(&cfg, 8, i);
        if an.schedulable(&set.with_protocol(Family::Inherit)) {
            assert!(an.schedulable(&set.with_protocol(Family::PiCv)));
        }
    }
}

#[test]
fn without_resources_every_protocol_agrees() {
    let text = r#"{ "seed": 9, "tasks": 8, "sets_per_point": 50,
        "utilisation": { "from": 0.6, "to": 1.0, "step": 0.1 },
        "periods_us": { "min": 1000, "max": 100000 },
        "critical_sections": { "profile": "short", "resources": 0, "access_probability": 0.0 },
        "output": { "csv": "a.csv", "svg": "a.svg" } }"#;
    let cfg = SweepConfig::from_json_str(text).unwrap();
    let r = run(&cfg, &|_| {});
    for pt in &r.points {
        assert!(pt.schedulable.windows(2).all(|w| w[0] == w[1]), "{pt:?}");
    }
    // Rate-monotonic, independent tasks: everything under the Liu & Layland
    // bound for 8 tasks (0.724) passes.
    assert_eq!(r.points[0].schedulable[0], 50);
}

#[test]
fn output_is_optional_but_never_empty() {
    // Without `output` the configuration reads (the Python package returns
    // the result in memory; `heir sweep` then needs --csv and --svg).
    let base = std::fs::read_to_string(example("sweeps/small.json")).unwrap();
    let line = base
        .lines()
        .find(|l| l.contains("\"output\""))
        .unwrap()
        .to_string();
    let without = base.replace(&format!(",\n{line}"), "");
    assert!(!without.contains("output"), "{without}");
    let cfg = SweepConfig::from_json_str(&without).unwrap();
    assert_eq!((cfg.csv.as_deref(), cfg.svg.as_deref()), (None, None));
    assert_eq!(cfg.total_sets(), 10_000);
    let e = SweepConfig::from_json_str(&base.replace("\"sweep-small.csv\"", "\"\"")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at output: expected non-empty \"csv\" and \"svg\" paths"
    );
}

#[test]
fn outputs() {
    let cfg = small();
    let r = run(&cfg, &|_| {});
    let csv = r.to_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "utilisation,sets,none,inherit,ceiling,pi-cv");
    assert_eq!(lines.len(), 21);
    assert!(lines[1].starts_with("0.0500,60,"));
    let svg = r.to_svg();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(svg.matches("<polyline").count(), 4);
    for p in ["none", "inherit", "ceiling", "pi-cv"] {
        assert!(svg.contains(&format!(">{p}</text>")));
    }
    assert!(svg.trim_end().ends_with("</svg>"));
}

#[test]
fn bad_configs_say_where() {
    let base = std::fs::read_to_string(example("sweeps/small.json")).unwrap();
    // Syntax: line and column.
    let e = SweepConfig::from_json_str("{\n  \"seed\": 1,\n  \"tasks\": ,\n}").unwrap_err();
    assert_eq!((e.line, e.column), (3, 12));
    // Unknown field.
    let e = SweepConfig::from_json_str(&base.replace("\"seed\"", "\"sed\"")).unwrap_err();
    assert!(e.message.contains("unknown field `sed`"), "{e}");
    assert_eq!(e.line, 2);
    // Values: JSON path.
    let e = SweepConfig::from_json_str(&base.replace("\"pi-cv\"", "\"pip\"")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at protocols[3]: unknown protocol \"pip\" (expected none, inherit, ceiling or pi-cv)"
    );
    let e = SweepConfig::from_json_str(&base.replace("\"to\": 1.0", "\"to\": 1.5")).unwrap_err();
    assert_eq!(e.path.as_deref(), Some("utilisation"));
    let e = SweepConfig::from_json_str(
        &base.replace("\"access_probability\": 0.3", "\"access_probability\": 3"),
    )
    .unwrap_err();
    assert_eq!(
        e.path.as_deref(),
        Some("critical_sections.access_probability")
    );
}
