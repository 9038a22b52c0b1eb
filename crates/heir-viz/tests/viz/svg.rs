//! SvgGantt: well-formed, a lane per thread, boosts, marks, bounded window.

use heir_core::Urgency;
use heir_report::{Observer, TraceEvent};
use heir_viz::{SvgGantt, SvgOptions};

use crate::support::*;
use crate::xml;

fn svg_of(events: &[TraceEvent], end_ns: u64, opts: SvgOptions) -> (SvgGantt, String) {
    let mut g = SvgGantt::new(opts);
    play(&mut g, &info(), events, end_ns);
    let s = g.render();
    (g, s)
}

/// The `data-thread` names of the lanes, top to bottom.
fn lanes(svg: &str) -> Vec<String> {
    svg.split(r#"<g class="lane" data-thread=""#)
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn well_formed_svg_with_one_lane_per_thread_most_urgent_on_top() {
    let (_, s) = svg_of(&classic_pi(), 8 * MS, SvgOptions::default());
    let doc = xml::check(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    assert_eq!(doc.root, "svg");
    assert!(s.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
    assert_eq!(lanes(&s), ["H", "M", "L"]);
    // Self-contained: no external resource, stylesheet or font.
    for needle in ["href", "<style", "@import", "url(http", "<image", "<script"] {
        assert!(!s.contains(needle), "found {needle}");
    }
    // One bar per execution slice.
    assert_eq!(count(&s, r#"class="exec""#), 6);
    assert!(s.contains("<title>heir: simulated schedule</title>"));
}

#[test]
fn boosted_bars_are_hatched_in_the_donor_colour_exactly_when_boosted() {
    let (g, s) = svg_of(&classic_pi(), 8 * MS, SvgOptions::default());
    assert_eq!(g.boosted_bars(), 1);
    assert_eq!(count(&s, r#"class="boosted""#), 1);
    assert_eq!(count(&s, "<pattern "), 1);
    // H (the donor) is on the top lane: the palette's first colour.
    assert!(s.contains(r##"fill="url(#boost-2)" stroke="#1f77b4""##));
    assert!(s.contains(r#"<pattern id="boost-2" "#));
    assert!(s.contains("boosted by H</text>"));
    assert!(s.contains("L on CPU 0: 3.000–4.000 ms at prio 90, boosted by H"));

    let (g, s) = svg_of(&no_boost(), 8 * MS, SvgOptions::default());
    xml::check(&s).unwrap();
    assert_eq!(g.boosted_bars(), 0);
    assert_eq!(count(&s, r#"class="boosted""#), 0);
    assert_eq!(count(&s, "<pattern "), 0);
    assert!(!s.contains("boosted by"));
}

#[test]
fn releases_deadlines_and_misses_are_marked() {
    let (_, s) = svg_of(&classic_pi(), 20 * MS, SvgOptions::default());
    // Three releases; deadlines of L (6 ms) and H (12 ms); M has none.
    assert_eq!(count(&s, r#"<path class="release""#), 3);
    // L completed at 8 ms after its 6 ms deadline: its deadline arrow is
    // red and a red cross marks the completion; H's deadline is not missed.
    assert_eq!(count(&s, r#"<path class="deadline""#), 1);
    assert_eq!(count(&s, r#"<path class="deadline missed""#), 1);
    assert_eq!(count(&s, r#"<path class="miss""#), 1);
    assert!(s.contains("L completed late at 8.000 ms"));
    // A mark past the end of the run is not drawn: the run ends at 8 ms,
    // before H's deadline.
    let (_, s) = svg_of(&classic_pi(), 8 * MS, SvgOptions::default());
    assert_eq!(count(&s, r#"<path class="deadline""#), 0);
    assert_eq!(count(&s, r#"<path class="deadline missed""#), 1);
    // No miss, no red.
    let (_, s) = svg_of(&classic_pi()[..16], 20 * MS, SvgOptions::default());
    assert_eq!(count(&s, r#"<path class="miss""#), 0);
    assert_eq!(count(&s, r#"<path class="deadline missed""#), 0);
    assert_eq!(count(&s, r#"<path class="deadline""#), 2);
}

#[test]
fn time_axis_in_ms_over_the_run_or_the_window() {
    // The run (8 ms) is shorter than the window: the axis spans the run.
    let (_, s) = svg_of(&classic_pi(), 8 * MS, SvgOptions::default());
    assert!(s.contains("0.000–8.000 ms of a 8.000 ms run"));
    let labels: Vec<&str> = s
        .split(r#"text-anchor="middle" font-size="10">"#)
        .skip(1)
        .map(|r| &r[..r.find('<').unwrap()])
        .collect();
    assert_eq!(labels, ["0", "1", "2", "3", "4", "5", "6", "7", "8"]);
    assert!(s.contains("time (ms)"));
    // A long run: the default window is its first 200 ms.
    let (_, s) = svg_of(&classic_pi(), 60_000 * MS, SvgOptions::default());
    assert!(s.contains("0.000–200.000 ms of a 60000.000 ms run"));
    let labels: Vec<&str> = s
        .split(r#"text-anchor="middle" font-size="10">"#)
        .skip(1)
        .map(|r| &r[..r.find('<').unwrap()])
        .collect();
    assert_eq!(
        labels,
        ["0", "20", "40", "60", "80", "100", "120", "140", "160", "180", "200"]
    );
}

#[test]
fn only_the_window_is_kept() {
    let opts = SvgOptions {
        window_start_ns: 2 * MS,
        window_ns: 2 * MS,
        ..SvgOptions::default()
    };
    let (g, s) = svg_of(&classic_pi(), 8 * MS, opts);
    xml::check(&s).unwrap();
    // Slices overlapping [2, 4] ms: L 0-2 (no: ends at 2), H 2-3, L 3-4.
    assert_eq!(g.bars(), 2);
    assert!(s.contains("H on CPU 0: 2.000–3.000 ms"));
    // Releases at 2 and 2.5 ms are inside; L's at 0 is not.
    assert_eq!(count(&s, r#"<path class="release""#), 2);

    // A slice crossing the window's end is clipped to it.
    let opts = SvgOptions {
        window_ns: MS,
        ..SvgOptions::default()
    };
    let (g, s) = svg_of(&classic_pi(), 8 * MS, opts);
    assert_eq!(g.bars(), 1);
    assert!(s.contains("L on CPU 0: 0.000–1.000 ms at prio 50"));
}

#[test]
fn memory_is_bounded_by_the_window_and_by_max_items() {
    let mut g = SvgGantt::new(SvgOptions {
        window_ns: 10 * MS,
        ..SvgOptions::default()
    });
    g.start(&info());
    let slice = |k: u64| TraceEvent::Exec {
        cpu: 0,
        thread: M,
        start_ns: k * MS,
        end_ns: k * MS + MS / 2,
        urgency: Urgency::fixed(70),
        donor: None,
    };
    for k in 0..1_000 {
        g.event(&slice(k));
    }
    let after_1k = g.bars();
    for k in 1_000..100_000 {
        g.event(&slice(k));
    }
    assert_eq!(after_1k, 10);
    assert_eq!(g.bars(), after_1k);
    assert!(!g.truncated());

    let mut g = SvgGantt::new(SvgOptions {
        max_items: 5,
        ..SvgOptions::default()
    });
    g.start(&info());
    for k in 0..100 {
        g.event(&slice(k));
    }
    g.finish(100 * MS);
    assert_eq!(g.bars(), 5);
    assert!(g.truncated());
    let s = g.render();
    xml::check(&s).unwrap();
    assert!(s.contains("truncated"));
}

#[test]
fn names_are_escaped_and_unknown_threads_are_skipped() {
    let mut info = info();
    info.threads[0].name = "<L&amp\"'>".into();
    let mut g = SvgGantt::new(SvgOptions {
        title: "a <b> & c".into(),
        ..SvgOptions::default()
    });
    play(
        &mut g,
        &info,
        &[
            TraceEvent::Exec {
                cpu: 0,
                thread: 7,
                start_ns: 0,
                end_ns: MS,
                urgency: Urgency::fixed(1),
                donor: Some(9),
            },
            TraceEvent::Release {
                thread: 7,
                at_ns: 0,
                deadline_ns: Some(MS),
            },
            TraceEvent::Complete {
                thread: 7,
                at_ns: 2 * MS,
                response_ns: 2 * MS,
                missed: true,
            },
        ],
        3 * MS,
    );
    let s = g.render();
    xml::check(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    assert!(s.contains("&lt;L&amp;amp&quot;&apos;&gt;"));
    assert!(s.contains("a &lt;b&gt; &amp; c"));
    assert_eq!(lanes(&s).len(), 3);
}

#[test]
fn write_svg_writes_the_rendered_document() {
    let (g, s) = svg_of(&classic_pi(), 8 * MS, SvgOptions::default());
    let mut out = Vec::new();
    g.write_svg(&mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), s);
}

#[test]
fn a_migration_is_labelled_with_the_new_cpu() {
    let events = migrating();
    let (_, svg) = svg_of(&events, 6 * MS, SvgOptions::default());
    let labels: Vec<&str> = svg
        .split(r#"<text class="migrate""#)
        .skip(1)
        .map(|rest| {
            let text = &rest[rest.find('>').unwrap() + 1..];
            &text[..text.find('<').unwrap()]
        })
        .collect();
    assert_eq!(labels, ["→CPU 1", "→CPU 0"]);
    assert!(
        svg.contains("<title>L migrates to CPU 1 at 2.000 ms</title>"),
        "{svg}"
    );
}

#[test]
fn throttled_servers_are_cross_hatched_from_throttle_to_replenishment() {
    use heir_report::InstantKind;
    let instant = |thread, at_ns, kind| TraceEvent::Instant {
        thread,
        at_ns,
        kind,
        resource: None,
    };
    // L (thread 0) throttled 2–5 ms, and again from 7 ms to the end (8 ms);
    // a replenishment without a throttle before it draws nothing.
    let events = vec![
        instant(1, MS, InstantKind::Replenish),
        instant(0, 2 * MS, InstantKind::Throttle),
        instant(0, 5 * MS, InstantKind::Replenish),
        instant(0, 7 * MS, InstantKind::Throttle),
    ];
    let (g, s) = svg_of(&events, 8 * MS, SvgOptions::default());
    xml::check(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
    assert_eq!(
        g.throttled_spans(),
        [(0, 2 * MS, 5 * MS), (0, 7 * MS, 8 * MS)]
    );
    assert_eq!(count(&s, r#"class="throttled""#), 2);
    assert!(s.contains("L: server throttled (budget exhausted) 2.000–5.000 ms"));
    assert!(s.contains(r#"<pattern id="throttled""#));
    assert!(s.contains(">throttled</text>"));

    // Clipped to the window; none drawn without throttling.
    let opts = SvgOptions {
        window_start_ns: 3 * MS,
        window_ns: 3 * MS,
        ..SvgOptions::default()
    };
    let (g, _) = svg_of(&events, 8 * MS, opts);
    assert_eq!(g.throttled_spans(), [(0, 3 * MS, 5 * MS)]);
    let (g, s) = svg_of(&classic_pi(), 8 * MS, SvgOptions::default());
    assert!(g.throttled_spans().is_empty());
    assert!(!s.contains("throttled"));
}
