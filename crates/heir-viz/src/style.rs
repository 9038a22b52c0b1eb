//! Small functions shared by the writers: number formats, escaping, colours.

use std::fmt::Write as _;

use heir_report::InstantKind;

/// Formats `ns` as µs with exactly three decimals (ns precision, no float
/// rounding): `12345` → `12.345`.
pub(crate) fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Formats `ns` as ms with exactly three decimals (µs precision).
pub(crate) fn ms(ns: u64) -> String {
    let us = ns / 1000;
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// `s` as a JSON string literal, quotes included.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` escaped for XML text and attribute values.
pub(crate) fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even as references.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The name an instant kind has in traces (ftrace-like, lower case).
pub(crate) fn instant_name(kind: InstantKind) -> &'static str {
    match kind {
        InstantKind::Lock => "lock",
        InstantKind::Throttle => "throttle",
        InstantKind::Replenish => "replenish",
        InstantKind::Spin => "spin",
        InstantKind::Abort => "abort",
        InstantKind::GangRun => "gang_run",
        InstantKind::GangRunFailed => "gang_run_failed",
        InstantKind::GangNotify => "gang_notify",
        InstantKind::GangWait => "gang_wait",
        InstantKind::GangDone => "gang_done",
        InstantKind::GangTimeout => "gang_timeout",
        InstantKind::GangInsert => "gang_insert",
        InstantKind::GangRemove => "gang_remove",
        InstantKind::Displaced => "displaced",
        InstantKind::Undisplaced => "undisplaced",
        InstantKind::LockBlocked => "blocked",
        InstantKind::Unlock => "unlock",
        InstantKind::Wait => "wait",
        InstantKind::Signal => "signal",
        InstantKind::Broadcast => "broadcast",
        InstantKind::Woken => "woken",
        InstantKind::Push => "push",
        InstantKind::Pop => "pop",
        InstantKind::Call => "call",
        InstantKind::Reply => "reply",
        InstantKind::Barrier => "barrier",
        InstantKind::Suspend => "suspend",
        InstantKind::Resume => "resume",
    }
}

/// Thread colours: Tableau 10 without its red (red marks deadline misses).
const PALETTE: [&str; 9] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf",
];

/// The colour of the thread drawn at position `i`: the palette first, then
/// hues spread by the golden angle, keeping clear of red.
pub(crate) fn colour(i: usize) -> String {
    match PALETTE.get(i) {
        Some(c) => (*c).to_string(),
        None => {
            let hue = 20.0 + ((i - PALETTE.len()) as f64 * 137.508) % 310.0;
            format!("hsl({hue:.0},55%,50%)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_formats_are_exact() {
        assert_eq!(us(0), "0.000");
        assert_eq!(us(12_345), "12.345");
        assert_eq!(us(29_000_000_001), "29000000.001");
        assert_eq!(ms(29_000_000), "29.000");
        assert_eq!(ms(18_995_999), "18.995");
    }

    #[test]
    fn escaping() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(
            xml("<a & 'b'>\"\u{1}"),
            "&lt;a &amp; &apos;b&apos;&gt;&quot;?"
        );
    }

    #[test]
    fn colours_distinct_and_never_pure_red() {
        let cs: Vec<String> = (0..40).map(colour).collect();
        for (i, a) in cs.iter().enumerate() {
            for b in &cs[i + 1..] {
                assert_ne!(a, b);
            }
            assert_ne!(a, "#d62728");
        }
    }
}
