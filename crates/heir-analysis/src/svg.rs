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
    let (w, h) = (720.0f64, 440.0f64);
    let (left, right, top, bottom) = (70.0, 170.0, 40.0, 60.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let (x0, x1) = chart.x_range;
    let (y0, y1) = chart.y_range;
    let xs = |x: f64| {
        left + if x1 > x0 {
            (x - x0) / (x1 - x0) * pw
        } else {
            0.0
        }
    };
    let ys = |y: f64| {
        top + ph
            - if y1 > y0 {
                (y - y0) / (y1 - y0) * ph
            } else {
                0.0
            }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        left + pw / 2.0,
        esc(&chart.title)
    );
    // Grid and ticks: 10 divisions on x, 5 on y.
    for k in 0..=10 {
        let x = x0 + (x1 - x0) * k as f64 / 10.0;
        let px = xs(x);
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
        let py = ys(y);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + pw,
            left - 6.0,
            py + 4.0,
            trim(y)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        h - 18.0,
        esc(&chart.x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
        top + ph / 2.0,
        top + ph / 2.0,
        esc(&chart.y_label)
    );
    for (k, ser) in chart.series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", xs(x), ys(y)))
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
                xs(x),
                ys(y)
            );
        }
        let ly = top + 10.0 + 20.0 * k as f64;
        let lx = left + pw + 15.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            esc(&ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
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
