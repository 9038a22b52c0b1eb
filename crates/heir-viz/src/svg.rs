//! A Gantt chart of a time window, as self-contained SVG.
//!
//! The chart follows the papers' KernelShark figures: one lane per
//! thread (most urgent base on top, the name on the left), execution bars in
//! the thread's colour, boosted execution hatched with stripes in the donor's
//! colour, a release arrow (↑) and a deadline arrow (↓) per job, deadline
//! misses in red (the missed deadline's arrow, and a ✕ where the late job
//! completed), `SCHED_DEADLINE` reservations' throttled spans (from the
//! throttle to the replenishment instant) as grey cross-hatching across the
//! lane, in a real run the spans in which a thread was runnable while a
//! thread outside the run held its CPU (`heir run`'s measured disturbance)
//! as red-orange stripes, a `→CPU n` label where a thread's execution moves to another CPU
//! than its previous bar's (a migration), and a time axis in ms.
//!
//! Only events inside the window are kept, so memory is bounded by the
//! window, not by the run. As a second bound, at most
//! [`SvgOptions::max_items`] bars and marks are kept; past it the chart is
//! drawn with what it has and says "truncated".

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, Write};

use heir_report::{InstantKind, Observer, ThreadInfo, TraceEvent, TraceInfo};

use crate::style::{colour, ms, xml};

/// What [`SvgGantt`] draws.
#[derive(Clone, Debug, PartialEq)]
pub struct SvgOptions {
    /// Start of the window (ns of simulated time).
    pub window_start_ns: u64,
    /// Length of the window (ns); default 200 ms.
    pub window_ns: u64,
    /// The chart's title.
    pub title: String,
    /// Width of the picture in px.
    pub width_px: u32,
    /// Height of one lane in px.
    pub lane_px: u32,
    /// Most bars and marks kept; the rest of the window is dropped and the
    /// chart says it was truncated.
    pub max_items: usize,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions {
            window_start_ns: 0,
            window_ns: 200_000_000,
            title: "heir: simulated schedule".to_string(),
            width_px: 1200,
            lane_px: 36,
            max_items: 200_000,
        }
    }
}

/// One execution bar, clipped to the window.
#[derive(Clone, Copy, Debug)]
struct Bar {
    cpu: u32,
    thread: usize,
    start_ns: u64,
    end_ns: u64,
    urgency: heir_core::Urgency,
    /// The donor when boosted by another thread.
    donor: Option<usize>,
}

/// A release, a deadline, or a late completion.
#[derive(Clone, Copy, Debug)]
struct Mark {
    thread: usize,
    at_ns: u64,
    /// For a deadline: the job missed it.
    missed: bool,
}

/// A span of a thread's lane: a throttled reservation, from its throttle to its
/// replenishment (clipped to the window).
#[derive(Clone, Copy, Debug)]
struct Span {
    thread: usize,
    start_ns: u64,
    end_ns: u64,
}

/// Jobs whose deadline mark may still turn red, per thread (bounded).
const PENDING_JOBS: usize = 64;

/// An [`Observer`] that keeps one time window of a run and renders it as an
/// SVG Gantt chart (see the module docs).
///
/// ```
/// use heir_viz::{SvgGantt, SvgOptions};
/// use heir_report::{Observer, TraceInfo, ThreadInfo, TraceEvent};
/// use heir_core::Urgency;
///
/// let mut svg = SvgGantt::new(SvgOptions { window_ns: 10_000_000, ..SvgOptions::default() });
/// svg.start(&TraceInfo {
///     cpus: 1,
///     threads: vec![ThreadInfo { name: "A".into(), base: Urgency::fixed(10) }],
///     resources: vec![],
/// });
/// svg.event(&TraceEvent::Exec {
///     cpu: 0, thread: 0, start_ns: 0, end_ns: 2_000_000,
///     urgency: Urgency::fixed(10), donor: None,
/// });
/// svg.finish(5_000_000);
/// assert!(svg.render().starts_with("<?xml"));
/// ```
#[derive(Clone, Debug)]
pub struct SvgGantt {
    opts: SvgOptions,
    cpus: u32,
    threads: Vec<ThreadInfo>,
    bars: Vec<Bar>,
    releases: Vec<Mark>,
    deadlines: Vec<Mark>,
    /// Completions of late jobs.
    misses: Vec<Mark>,
    /// Throttled reservations' spans.
    throttled: Vec<Span>,
    /// Per thread: since when its reservation is throttled, if it is now.
    throttled_since: Vec<Option<u64>>,
    /// Real runs: spans in which a thread was displaced (runnable, its
    /// CPU held by a thread outside the run).
    displaced: Vec<Span>,
    /// Per thread: since when it is displaced, if it is now.
    displaced_since: Vec<Option<u64>>,
    /// Per thread: for each job released in the window and not yet
    /// complete, the index of its deadline mark (if drawn).
    pending: Vec<VecDeque<Option<usize>>>,
    end_ns: Option<u64>,
    truncated: bool,
}

impl Default for SvgGantt {
    fn default() -> Self {
        SvgGantt::new(SvgOptions::default())
    }
}

impl SvgGantt {
    /// A chart with the given options.
    pub fn new(opts: SvgOptions) -> Self {
        SvgGantt {
            opts,
            cpus: 0,
            threads: Vec::new(),
            bars: Vec::new(),
            releases: Vec::new(),
            deadlines: Vec::new(),
            misses: Vec::new(),
            throttled: Vec::new(),
            throttled_since: Vec::new(),
            displaced: Vec::new(),
            displaced_since: Vec::new(),
            pending: Vec::new(),
            end_ns: None,
            truncated: false,
        }
    }

    /// The options it draws with.
    pub fn options(&self) -> &SvgOptions {
        &self.opts
    }

    /// Number of execution bars kept.
    pub fn bars(&self) -> usize {
        self.bars.len()
    }

    /// Number of kept bars that ran boosted by another thread.
    pub fn boosted_bars(&self) -> usize {
        self.bars.iter().filter(|b| b.donor.is_some()).count()
    }

    /// The throttled spans kept, as (thread, start ns, end ns), clipped to
    /// the window.
    pub fn throttled_spans(&self) -> Vec<(usize, u64, u64)> {
        self.throttled
            .iter()
            .map(|s| (s.thread, s.start_ns, s.end_ns))
            .collect()
    }

    /// The displaced spans kept (real runs), as (thread, start ns, end ns),
    /// clipped to the window.
    pub fn displaced_spans(&self) -> Vec<(usize, u64, u64)> {
        self.displaced
            .iter()
            .map(|s| (s.thread, s.start_ns, s.end_ns))
            .collect()
    }

    /// True when [`SvgOptions::max_items`] cut the window short.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    fn window_end(&self) -> u64 {
        self.opts
            .window_start_ns
            .saturating_add(self.opts.window_ns)
    }

    fn in_window(&self, at_ns: u64) -> bool {
        at_ns >= self.opts.window_start_ns && at_ns <= self.window_end()
    }

    fn items(&self) -> usize {
        self.bars.len()
            + self.releases.len()
            + self.deadlines.len()
            + self.misses.len()
            + self.throttled.len()
            + self.displaced.len()
    }

    /// Thread `thread`'s reservation was throttled from `start_ns` to `end_ns`.
    fn throttled_span(&mut self, thread: usize, start_ns: u64, end_ns: u64) {
        if let Some(s) = self.clipped_span(thread, start_ns, end_ns) {
            self.throttled.push(s);
        }
    }

    /// Thread `thread` was displaced from `start_ns` to `end_ns`.
    fn displaced_span(&mut self, thread: usize, start_ns: u64, end_ns: u64) {
        if let Some(s) = self.clipped_span(thread, start_ns, end_ns) {
            self.displaced.push(s);
        }
    }

    /// The span clipped to the window, if any of it is inside and there
    /// is room for it.
    fn clipped_span(&mut self, thread: usize, start_ns: u64, end_ns: u64) -> Option<Span> {
        let (ws, we) = (self.opts.window_start_ns, self.window_end());
        if end_ns <= ws || start_ns >= we || end_ns <= start_ns || !self.room() {
            return None;
        }
        Some(Span {
            thread,
            start_ns: start_ns.max(ws),
            end_ns: end_ns.min(we),
        })
    }

    /// Room for one more item; records the truncation otherwise.
    fn room(&mut self) -> bool {
        if self.items() < self.opts.max_items {
            true
        } else {
            self.truncated = true;
            false
        }
    }

    fn pending_mut(&mut self, thread: usize) -> Option<&mut VecDeque<Option<usize>>> {
        self.pending.get_mut(thread)
    }

    /// Writes the SVG document.
    ///
    /// # Errors
    /// Any error of `w`.
    pub fn write_svg(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(self.render().as_bytes())?;
        w.flush()
    }

    /// The SVG document.
    pub fn render(&self) -> String {
        Renderer::new(self).render()
    }

    /// The `<svg>` element alone (no XML declaration), to put inline in an
    /// HTML page (the report: `heir report`), its pattern ids (and the
    /// references to them) prefixed with `id_prefix`, so that several
    /// charts in one page keep their own.
    pub fn render_inline(&self, id_prefix: &str) -> String {
        let doc = self.render();
        let svg = match doc.find("<svg") {
            Some(i) => &doc[i..],
            None => &doc,
        };
        svg.replace("id=\"", &format!("id=\"{id_prefix}"))
            .replace("url(#", &format!("url(#{id_prefix}"))
    }
}

impl Observer for SvgGantt {
    fn start(&mut self, info: &TraceInfo) {
        self.cpus = info.cpus;
        self.threads = info.threads.clone();
        self.pending = vec![VecDeque::new(); info.threads.len()];
        self.throttled_since = vec![None; info.threads.len()];
        self.displaced_since = vec![None; info.threads.len()];
    }

    fn event(&mut self, ev: &TraceEvent) {
        let (ws, we) = (self.opts.window_start_ns, self.window_end());
        match *ev {
            TraceEvent::Exec {
                cpu,
                thread,
                start_ns,
                end_ns,
                urgency,
                donor,
            } => {
                if end_ns <= ws || start_ns >= we || end_ns <= start_ns || !self.room() {
                    return;
                }
                self.bars.push(Bar {
                    cpu,
                    thread,
                    start_ns: start_ns.max(ws),
                    end_ns: end_ns.min(we),
                    urgency,
                    donor: donor.filter(|&d| d != thread),
                });
            }
            TraceEvent::Release {
                thread,
                at_ns,
                deadline_ns,
            } => {
                if !self.in_window(at_ns) || !self.room() {
                    return;
                }
                self.releases.push(Mark {
                    thread,
                    at_ns,
                    missed: false,
                });
                let dl = match deadline_ns {
                    Some(d) if self.in_window(d) && self.room() => {
                        self.deadlines.push(Mark {
                            thread,
                            at_ns: d,
                            missed: false,
                        });
                        Some(self.deadlines.len() - 1)
                    }
                    _ => None,
                };
                if let Some(q) = self.pending_mut(thread) {
                    if q.len() == PENDING_JOBS {
                        q.pop_front();
                    }
                    q.push_back(dl);
                }
            }
            TraceEvent::Complete {
                thread,
                at_ns,
                missed,
                ..
            } => {
                let dl = self
                    .pending_mut(thread)
                    .and_then(|q| q.pop_front())
                    .flatten();
                if !missed {
                    return;
                }
                if let Some(m) = dl.and_then(|i| self.deadlines.get_mut(i)) {
                    m.missed = true;
                }
                if self.in_window(at_ns) && self.room() {
                    self.misses.push(Mark {
                        thread,
                        at_ns,
                        missed: true,
                    });
                }
            }
            TraceEvent::Instant {
                thread,
                at_ns,
                kind: InstantKind::Throttle,
                ..
            } => {
                if let Some(open) = self.throttled_since.get_mut(thread) {
                    open.get_or_insert(at_ns);
                }
            }
            TraceEvent::Instant {
                thread,
                at_ns,
                kind: InstantKind::Replenish,
                ..
            } => {
                if let Some(start) = self.throttled_since.get_mut(thread).and_then(Option::take) {
                    self.throttled_span(thread, start, at_ns);
                }
            }
            TraceEvent::Instant {
                thread,
                at_ns,
                kind: InstantKind::Displaced,
                ..
            } => {
                if let Some(open) = self.displaced_since.get_mut(thread) {
                    open.get_or_insert(at_ns);
                }
            }
            TraceEvent::Instant {
                thread,
                at_ns,
                kind: InstantKind::Undisplaced,
                ..
            } => {
                if let Some(start) = self.displaced_since.get_mut(thread).and_then(Option::take) {
                    self.displaced_span(thread, start, at_ns);
                }
            }
            TraceEvent::Instant { .. } | TraceEvent::Boost { .. } => {}
        }
    }

    fn finish(&mut self, end_ns: u64) {
        self.end_ns = Some(end_ns);
        // Reservations still throttled when the run ends.
        for thread in 0..self.throttled_since.len() {
            if let Some(start) = self.throttled_since[thread].take() {
                self.throttled_span(thread, start, end_ns);
            }
        }
        for thread in 0..self.displaced_since.len() {
            if let Some(start) = self.displaced_since[thread].take() {
                self.displaced_span(thread, start, end_ns);
            }
        }
    }
}

/// Lays out and draws one chart.
struct Renderer<'a> {
    g: &'a SvgGantt,
    out: String,
    /// Thread index → lane (0 = top).
    lane_of: Vec<usize>,
    /// Lane → thread index.
    order: Vec<usize>,
    t0: u64,
    t1: u64,
    left: f64,
    plot_w: f64,
    top: f64,
    lane: f64,
}

const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 58.0;
const AXIS: f64 = 34.0;
const MISS_RED: &str = "#d62728";
const MARK_GREY: &str = "#333333";
/// Displaced spans (real runs): red-orange, apart from the thread colours.
const DISPLACED: &str = "#e6550d";

impl<'a> Renderer<'a> {
    fn new(g: &'a SvgGantt) -> Self {
        let n = g.threads.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| g.threads[b].base.cmp(&g.threads[a].base).then(a.cmp(&b)));
        let mut lane_of = vec![0; n];
        for (lane, &t) in order.iter().enumerate() {
            lane_of[t] = lane;
        }
        let t0 = g.opts.window_start_ns;
        let mut t1 = g.window_end();
        if let Some(end) = g.end_ns {
            t1 = t1.min(end);
        } else {
            // Not finished: draw up to the last thing seen.
            let last = g
                .bars
                .iter()
                .map(|b| b.end_ns)
                .chain(g.releases.iter().map(|m| m.at_ns))
                .chain(g.deadlines.iter().map(|m| m.at_ns))
                .max();
            if let Some(last) = last {
                t1 = t1.min(last);
            }
        }
        if t1 <= t0 {
            t1 = t0 + 1;
        }
        let width = f64::from(g.opts.width_px.max(400));
        Renderer {
            g,
            out: String::with_capacity(64 * 1024),
            lane_of,
            order,
            t0,
            t1,
            left: LEFT,
            plot_w: width - LEFT - RIGHT,
            top: TOP,
            lane: f64::from(g.opts.lane_px.max(16)),
        }
    }

    fn x(&self, t: u64) -> f64 {
        let t = t.clamp(self.t0, self.t1);
        self.left + (t - self.t0) as f64 / (self.t1 - self.t0) as f64 * self.plot_w
    }

    fn lane_top(&self, thread: usize) -> Option<f64> {
        self.lane_of
            .get(thread)
            .map(|&l| self.top + l as f64 * self.lane)
    }

    fn name(&self, thread: usize) -> String {
        match self.g.threads.get(thread) {
            Some(t) => t.name.clone(),
            None => format!("#{thread}"),
        }
    }

    /// Thread colour, by lane so that neighbours differ.
    fn colour_of(&self, thread: usize) -> String {
        colour(self.lane_of.get(thread).copied().unwrap_or(thread))
    }

    /// Donors that appear in the window, in lane order.
    fn donors(&self) -> Vec<usize> {
        let mut ds: Vec<usize> = self.g.bars.iter().filter_map(|b| b.donor).collect();
        ds.sort_by_key(|&d| (self.lane_of.get(d).copied().unwrap_or(usize::MAX), d));
        ds.dedup();
        ds
    }

    fn render(mut self) -> String {
        let n = self.order.len();
        let plot_h = n as f64 * self.lane;
        let donors = self.donors();
        let legend_rows = 1 + donors.len().div_ceil(4);
        let width = self.left + self.plot_w + RIGHT;
        let height = self.top + plot_h + AXIS + 12.0 + legend_rows as f64 * 20.0 + 8.0;

        let _ = writeln!(self.out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
        let _ = writeln!(
            self.out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(self.out, "<title>{}</title>", xml(&self.g.opts.title));
        self.defs(&donors);
        let _ = writeln!(
            self.out,
            r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#ffffff"/>"##
        );
        self.heading();
        self.lanes();
        self.axis(plot_h);
        self.bars();
        self.marks();
        self.legend(&donors, self.top + plot_h + AXIS + 12.0);
        let _ = writeln!(self.out, "</svg>");
        self.out
    }

    fn defs(&mut self, donors: &[usize]) {
        let _ = writeln!(self.out, "<defs>");
        for &d in donors {
            let c = self.colour_of(d);
            let _ = writeln!(
                self.out,
                r#"<pattern id="boost-{d}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect x="0" y="0" width="3" height="6" fill="{c}"/></pattern>"#
            );
        }
        if !self.g.throttled.is_empty() {
            let _ = writeln!(
                self.out,
                r##"<pattern id="throttled" width="6" height="6" patternUnits="userSpaceOnUse"><path d="M0,0L6,6M6,0L0,6" stroke="#999999" stroke-width="0.8"/></pattern>"##
            );
        }
        if !self.g.displaced.is_empty() {
            let _ = writeln!(
                self.out,
                r##"<pattern id="displaced" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect x="0" y="0" width="2.5" height="6" fill="{DISPLACED}"/></pattern>"##
            );
        }
        let _ = writeln!(self.out, "</defs>");
    }

    fn heading(&mut self) {
        let _ = writeln!(
            self.out,
            r#"<text x="{:.0}" y="22" font-size="16" font-weight="bold">{}</text>"#,
            self.left,
            xml(&self.g.opts.title)
        );
        let mut sub = format!("{}–{} ms", ms(self.t0), ms(self.t1));
        if let Some(end) = self.g.end_ns {
            let _ = write!(sub, " of a {} ms run", ms(end));
        }
        let _ = write!(
            sub,
            "; {} CPU{}",
            self.g.cpus,
            if self.g.cpus == 1 { "" } else { "s" }
        );
        if self.g.bars.iter().any(|b| b.donor.is_some()) {
            sub.push_str("; hatched: boosted, stripes in the donor's colour");
        }
        if !self.g.throttled.is_empty() {
            sub.push_str("; grey cross-hatch: server throttled");
        }
        if !self.g.displaced.is_empty() {
            sub.push_str(
                "; red-orange stripes: runnable while a thread outside the run held the CPU",
            );
        }
        if self.g.truncated {
            sub.push_str("; truncated (too many items)");
        }
        let _ = writeln!(
            self.out,
            r##"<text x="{:.0}" y="40" fill="#555555">{}</text>"##,
            self.left,
            xml(&sub)
        );
    }

    fn lanes(&mut self) {
        for lane in 0..self.order.len() {
            let t = self.order[lane];
            let y = self.top + lane as f64 * self.lane;
            let bg = if lane % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
            let name = xml(&self.name(t));
            let base = self
                .g
                .threads
                .get(t)
                .map(|i| i.base.to_string())
                .unwrap_or_default();
            let _ = writeln!(
                self.out,
                r##"<g class="lane" data-thread="{name}"><rect x="{:.2}" y="{y:.2}" width="{:.2}" height="{:.2}" fill="{bg}"/><rect x="{:.2}" y="{:.2}" width="8" height="8" fill="{}"/><text x="{:.2}" y="{:.2}" text-anchor="end">{name}</text><text x="{:.2}" y="{:.2}" text-anchor="end" font-size="9" fill="#777777">{}</text></g>"##,
                self.left,
                self.plot_w,
                self.lane,
                self.left - 12.0,
                y + self.lane / 2.0 - 8.0,
                self.colour_of(t),
                self.left - 16.0,
                y + self.lane / 2.0,
                self.left - 16.0,
                y + self.lane / 2.0 + 11.0,
                xml(&base),
            );
        }
    }

    fn axis(&mut self, plot_h: f64) {
        let span = self.t1 - self.t0;
        let step = tick_step(span);
        let y0 = self.top;
        let y1 = self.top + plot_h;
        let _ = writeln!(self.out, r#"<g class="axis">"#);
        let _ = writeln!(
            self.out,
            r##"<line x1="{:.2}" y1="{y1:.2}" x2="{:.2}" y2="{y1:.2}" stroke="#000000"/>"##,
            self.left,
            self.left + self.plot_w
        );
        let mut t = self.t0.div_ceil(step).saturating_mul(step);
        while t <= self.t1 {
            let x = self.x(t);
            let _ = writeln!(
                self.out,
                r##"<line x1="{x:.2}" y1="{y0:.2}" x2="{x:.2}" y2="{y1:.2}" stroke="#dddddd" stroke-width="0.5"/><line x1="{x:.2}" y1="{y1:.2}" x2="{x:.2}" y2="{:.2}" stroke="#000000"/><text x="{x:.2}" y="{:.2}" text-anchor="middle" font-size="10">{}</text>"##,
                y1 + 4.0,
                y1 + 16.0,
                ms_label(t)
            );
            match t.checked_add(step) {
                Some(next) => t = next,
                None => break,
            }
        }
        let _ = writeln!(
            self.out,
            r#"<text x="{:.2}" y="{:.2}" text-anchor="middle">time (ms)</text>"#,
            self.left + self.plot_w / 2.0,
            y1 + 30.0
        );
        let _ = writeln!(self.out, "</g>");
    }

    fn bar_geometry(&self, thread: usize) -> Option<(f64, f64)> {
        self.lane_top(thread)
            .map(|y| (y + self.lane * 0.38, self.lane * 0.44))
    }

    /// A span across a thread's lane (throttled, displaced): class
    /// `class`, filled with the pattern of the same id, `what` in its
    /// tooltip.
    fn span_rect(&mut self, sp: &Span, class: &str, what: &str, stroke: &str) {
        let Some(y) = self.lane_top(sp.thread) else {
            return;
        };
        let x0 = self.x(sp.start_ns);
        let w = (self.x(sp.end_ns) - x0).max(0.3);
        let tip = xml(&format!(
            "{}: {what} {}–{} ms",
            self.name(sp.thread),
            ms(sp.start_ns),
            ms(sp.end_ns)
        ));
        let _ = writeln!(
            self.out,
            r##"<rect class="{class}" x="{x0:.2}" y="{:.2}" width="{w:.2}" height="{:.2}" fill="url(#{class})" stroke="{stroke}" stroke-width="0.5"><title>{tip}</title></rect>"##,
            y + self.lane * 0.3,
            self.lane * 0.6
        );
    }

    fn bars(&mut self) {
        let _ = writeln!(self.out, r#"<g class="bars">"#);
        for sp in &self.g.throttled {
            self.span_rect(
                sp,
                "throttled",
                "server throttled (budget exhausted)",
                "#999999",
            );
        }
        for sp in &self.g.displaced {
            self.span_rect(
                sp,
                "displaced",
                "runnable, its CPU held by a thread outside the run (heir run's disturbance report names it)",
                DISPLACED,
            );
        }
        let mut last_cpu: Vec<Option<u32>> = vec![None; self.g.threads.len()];
        for b in &self.g.bars {
            let moved = match last_cpu.get_mut(b.thread) {
                Some(last) => last.replace(b.cpu).is_some_and(|l| l != b.cpu),
                None => false,
            };
            let Some((y, h)) = self.bar_geometry(b.thread) else {
                continue;
            };
            let x0 = self.x(b.start_ns);
            let w = (self.x(b.end_ns) - x0).max(0.3);
            let name = self.name(b.thread);
            let mut tip = format!(
                "{name} on CPU {}: {}–{} ms at {}",
                b.cpu,
                ms(b.start_ns),
                ms(b.end_ns),
                b.urgency
            );
            if let Some(d) = b.donor {
                let _ = write!(tip, ", boosted by {}", self.name(d));
            }
            let tip = xml(&tip);
            let _ = write!(
                self.out,
                r#"<rect class="exec" x="{x0:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{}"><title>{tip}</title></rect>"#,
                self.colour_of(b.thread)
            );
            if let Some(d) = b.donor {
                let _ = write!(
                    self.out,
                    r#"<rect class="boosted" x="{x0:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="url(#boost-{d})" stroke="{}" stroke-width="1"><title>{tip}</title></rect>"#,
                    self.colour_of(d)
                );
            }
            if moved {
                let _ = write!(
                    self.out,
                    r#"<text class="migrate" x="{x0:.2}" y="{:.2}" font-size="9" fill="{MARK_GREY}">→CPU {}<title>{} migrates to CPU {} at {} ms</title></text>"#,
                    y - 2.0,
                    b.cpu,
                    xml(&name),
                    b.cpu,
                    ms(b.start_ns)
                );
            }
            let _ = writeln!(self.out);
        }
        let _ = writeln!(self.out, "</g>");
    }

    /// An arrow at `x` from `from_y` to `to_y` (head at `to_y`).
    fn arrow(&mut self, class: &str, x: f64, from_y: f64, to_y: f64, colour: &str, width: f64) {
        let dir = if to_y < from_y { 1.0 } else { -1.0 };
        let _ = writeln!(
            self.out,
            r#"<path class="{class}" d="M{x:.2},{from_y:.2}V{to_y:.2}M{:.2},{:.2}L{x:.2},{to_y:.2}L{:.2},{:.2}" stroke="{colour}" stroke-width="{width}" fill="none"/>"#,
            x - 3.0,
            to_y + dir * 5.0,
            x + 3.0,
            to_y + dir * 5.0,
        );
    }

    fn marks(&mut self) {
        let _ = writeln!(self.out, r#"<g class="marks">"#);
        let lane = self.lane;
        let shown = |m: &Mark| m.at_ns >= self.t0 && m.at_ns <= self.t1;
        let releases: Vec<Mark> = self.g.releases.iter().copied().filter(shown).collect();
        let deadlines: Vec<Mark> = self.g.deadlines.iter().copied().filter(shown).collect();
        let misses: Vec<Mark> = self.g.misses.iter().copied().filter(shown).collect();
        for m in releases {
            if let Some(y) = self.lane_top(m.thread) {
                let x = self.x(m.at_ns);
                self.arrow(
                    "release",
                    x,
                    y + lane * 0.86,
                    y + lane * 0.1,
                    MARK_GREY,
                    1.0,
                );
            }
        }
        for m in deadlines {
            if let Some(y) = self.lane_top(m.thread) {
                let x = self.x(m.at_ns);
                let (class, c, w) = if m.missed {
                    ("deadline missed", MISS_RED, 2.0)
                } else {
                    ("deadline", MARK_GREY, 1.0)
                };
                self.arrow(class, x, y + lane * 0.1, y + lane * 0.86, c, w);
            }
        }
        for m in misses {
            if let Some((y, h)) = self.bar_geometry(m.thread) {
                let x = self.x(m.at_ns);
                let cy = y + h / 2.0;
                let _ = writeln!(
                    self.out,
                    r#"<path class="miss" d="M{:.2},{:.2}L{:.2},{:.2}M{:.2},{:.2}L{:.2},{:.2}" stroke="{MISS_RED}" stroke-width="2.5"><title>{} completed late at {} ms</title></path>"#,
                    x - 5.0,
                    cy - 5.0,
                    x + 5.0,
                    cy + 5.0,
                    x - 5.0,
                    cy + 5.0,
                    x + 5.0,
                    cy - 5.0,
                    xml(&self.name(m.thread)),
                    ms(m.at_ns)
                );
            }
        }
        let _ = writeln!(self.out, "</g>");
    }

    fn legend(&mut self, donors: &[usize], y: f64) {
        let _ = writeln!(self.out, r#"<g class="legend" font-size="11">"#);
        let mut x = self.left;
        let base_y = y + 12.0;
        // Row 1: marks.
        self.arrow(
            "legend-release",
            x + 4.0,
            base_y + 4.0,
            base_y - 10.0,
            MARK_GREY,
            1.0,
        );
        let _ = writeln!(
            self.out,
            r#"<text x="{:.2}" y="{:.2}">release</text>"#,
            x + 12.0,
            base_y
        );
        x += 90.0;
        self.arrow(
            "legend-deadline",
            x + 4.0,
            base_y - 10.0,
            base_y + 4.0,
            MARK_GREY,
            1.0,
        );
        let _ = writeln!(
            self.out,
            r#"<text x="{:.2}" y="{:.2}">deadline</text>"#,
            x + 12.0,
            base_y
        );
        x += 90.0;
        self.arrow(
            "legend-missed",
            x + 4.0,
            base_y - 10.0,
            base_y + 4.0,
            MISS_RED,
            2.0,
        );
        let _ = writeln!(
            self.out,
            r#"<text x="{:.2}" y="{:.2}">missed deadline</text>"#,
            x + 12.0,
            base_y
        );
        x += 130.0;
        let _ = writeln!(
            self.out,
            r#"<path d="M{:.2},{:.2}L{:.2},{:.2}M{:.2},{:.2}L{:.2},{:.2}" stroke="{MISS_RED}" stroke-width="2.5"/><text x="{:.2}" y="{:.2}">late completion</text>"#,
            x,
            base_y - 8.0,
            x + 8.0,
            base_y,
            x,
            base_y,
            x + 8.0,
            base_y - 8.0,
            x + 14.0,
            base_y
        );
        if !self.g.throttled.is_empty() {
            x += 120.0;
            let _ = writeln!(
                self.out,
                r##"<rect class="legend-throttled" x="{x:.2}" y="{:.2}" width="24" height="10" fill="url(#throttled)" stroke="#999999" stroke-width="0.5"/><text x="{:.2}" y="{:.2}">throttled</text>"##,
                base_y - 9.0,
                x + 30.0,
                base_y
            );
        }
        if !self.g.displaced.is_empty() {
            x += 100.0;
            let _ = writeln!(
                self.out,
                r##"<rect class="legend-displaced" x="{x:.2}" y="{:.2}" width="24" height="10" fill="url(#displaced)" stroke="{DISPLACED}" stroke-width="0.5"/><text x="{:.2}" y="{:.2}">CPU taken by another program</text>"##,
                base_y - 9.0,
                x + 30.0,
                base_y
            );
        }
        // Next rows: one hatch sample per donor.
        for (i, &d) in donors.iter().enumerate() {
            let row = 1 + i / 4;
            let col = i % 4;
            let sx = self.left + col as f64 * 220.0;
            let sy = y + row as f64 * 20.0;
            let name = xml(&self.name(d));
            let _ = writeln!(
                self.out,
                r##"<rect x="{sx:.2}" y="{:.2}" width="24" height="10" fill="#cccccc"/><rect class="legend-boost" x="{sx:.2}" y="{:.2}" width="24" height="10" fill="url(#boost-{d})" stroke="{}"/><text x="{:.2}" y="{:.2}">boosted by {name}</text>"##,
                sy + 3.0,
                sy + 3.0,
                self.colour_of(d),
                sx + 30.0,
                sy + 12.0
            );
        }
        let _ = writeln!(self.out, "</g>");
    }
}

/// The tick step (ns) for a span: 1, 2 or 5 × 10^k µs, at most 10 steps.
fn tick_step(span_ns: u64) -> u64 {
    let mut decade: u64 = 1000;
    loop {
        for m in [1, 2, 5] {
            let step = m * decade;
            if span_ns / step <= 10 {
                return step;
            }
        }
        match decade.checked_mul(10) {
            Some(d) => decade = d,
            None => return u64::MAX,
        }
    }
}

/// A tick label in ms, trailing zeros trimmed (`40`, `2.5`, `0.001`).
fn ms_label(t_ns: u64) -> String {
    let s = ms(t_ns);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_steps_are_round_and_few() {
        assert_eq!(tick_step(200_000_000), 20_000_000);
        assert_eq!(tick_step(100_000_000), 10_000_000);
        assert_eq!(tick_step(60_000_000), 10_000_000);
        assert_eq!(tick_step(3_000_000), 500_000);
        assert_eq!(tick_step(1), 1000);
        assert!(u64::MAX / tick_step(u64::MAX) <= 10);
    }

    #[test]
    fn tick_labels() {
        assert_eq!(ms_label(0), "0");
        assert_eq!(ms_label(40_000_000), "40");
        assert_eq!(ms_label(2_500_000), "2.5");
        assert_eq!(ms_label(1_000), "0.001");
    }
}
