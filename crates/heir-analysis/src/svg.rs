//! A tiny self-contained SVG line chart (no scripts, no external fonts), for
//! the schedulability-ratio plot of `heir sweep`.

use std::fmt::Write;

/// One line of the chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// `(x, y)` points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Axis ranges `(min, max)`.
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    pub series: Vec<Series>,
}

/// Colour-blind-friendly palette (Okabe & Ito).
const COLOURS: [&str; 8] = [
    "#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders `chart` as a complete SVG document (720 × 440).
pub fn line_chart(chart: &Chart) -> String {
    let f = Frame::new(chart);
    let mut s = String::new();
    let (w, h) = (f.w, f.h);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        f.left + f.pw / 2.0,
        esc(&chart.title)
    );
    f.grid(&mut s);
    f.axes(&mut s, chart);
    for (k, ser) in chart.series.iter().enumerate() {
        f.series(&mut s, k, ser);
    }
    s.push_str("</svg>\n");
    s
}

/// The chart's geometry: the document's size, the plot area's margins and
/// size, and the axis ranges it maps.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    top: f64,
    /// Plot width and height.
    pw: f64,
    ph: f64,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

impl Frame {
    fn new(chart: &Chart) -> Frame {
        let (w, h) = (720.0f64, 440.0f64);
        let (left, right, top, bottom) = (70.0, 170.0, 40.0, 60.0);
        Frame {
            w,
            h,
            left,
            top,
            pw: w - left - right,
            ph: h - top - bottom,
            x_range: chart.x_range,
            y_range: chart.y_range,
        }
    }

    /// Horizontal position of `x`.
    fn xs(&self, x: f64) -> f64 {
        let (x0, x1) = self.x_range;
        self.left
            + if x1 > x0 {
                (x - x0) / (x1 - x0) * self.pw
            } else {
                0.0
            }
    }

    /// Vertical position of `y`.
    fn ys(&self, y: f64) -> f64 {
        let (y0, y1) = self.y_range;
        self.top + self.ph
            - if y1 > y0 {
                (y - y0) / (y1 - y0) * self.ph
            } else {
                0.0
            }
    }

    /// Grid lines and tick labels: 10 divisions on x, 5 on y.
    fn grid(&self, s: &mut String) {
        let (x0, x1) = self.x_range;
        let (y0, y1) = self.y_range;
        let (left, top, pw, ph) = (self.left, self.top, self.pw, self.ph);
        for k in 0..=10 {
            let x = x0 + (x1 - x0) * k as f64 / 10.0;
            let px = self.xs(x);
            let _ = writeln!(
                s,
                r##"<line x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                top + ph,
                top + ph + 16.0,
                trim(x)
            );
        }
        for k in 0..=5 {
            let y = y0 + (y1 - y0) * k as f64 / 5.0;
            let py = self.ys(y);
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                left + pw,
                left - 6.0,
                py + 4.0,
                trim(y)
            );
        }
    }

    /// The plot's border and the axis labels.
    fn axes(&self, s: &mut String, chart: &Chart) {
        let (left, top, pw, ph) = (self.left, self.top, self.pw, self.ph);
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            left + pw / 2.0,
            self.h - 18.0,
            esc(&chart.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
            top + ph / 2.0,
            top + ph / 2.0,
            esc(&chart.y_label)
        );
    }

    /// Series `k`: its line, its points, and its legend entry.
    fn series(&self, s: &mut String, k: usize, ser: &Series) {
        let colour = COLOURS[k % COLOURS.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.xs(x), self.ys(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
        for &(x, y) in &ser.points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#,
                self.xs(x),
                self.ys(y)
            );
        }
        let ly = self.top + 10.0 + 20.0 * k as f64;
        let lx = self.left + self.pw + 15.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            esc(&ser.name)
        );
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}
