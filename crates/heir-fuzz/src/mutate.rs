//! Mutations of a scenario file, of the kinds that broke heir before (issue
//! 7): huge, negative and fractional numbers, long strings and keys, deep
//! nesting, duplicated and removed members, removed braces, truncation,
//! bytes that are not UTF-8 — and members added where heir reads events,
//! properties and resources, so that many mutants still read and reach the
//! simulator and the analysis.
//!
//! Where the text parses, mutations aim at its tokens (the spans of
//! `heir_scenario::json`); otherwise they work on bytes.

use heir_scenario::json::{self, Kind, Value};
use heir_sim::SplitMix64;

/// Numbers that sit on a limit, beyond one, or beyond a machine type.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "-2",
    "1023",
    "1024",
    "1025",
    "65536",
    "65537",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551",
    "18446744073709551615",
    "18446744073709551616",
    "8640000000000",
    "8640000000001",
    "8640000",
    "1e11",
    "1e308",
    "1e400",
    "-1e308",
    "0.5",
    "1.5e3",
    "1e-9",
    "-0",
    "100000000000000000000000000000000000000000",
];

/// Strings heir gives a meaning to, and names the snippets use.
const STRINGS: &[&str] = &[
    "",
    "m",
    "m2",
    "c",
    "q",
    "b",
    "e",
    "t",
    "unique",
    "A",
    "B",
    "SCHED_FIFO",
    "SCHED_RR",
    "SCHED_OTHER",
    "SCHED_IDLE",
    "SCHED_DEADLINE",
    "mutex",
    "cond",
    "queue",
    "barrier",
    "ceiling",
    "inherit",
    "none",
    "absolute",
    "relative",
    "CPU0",
    "a.b c",
    "\u{e9}\u{1F600}",
];

/// Members to add to an object: events, task and phase properties, global
/// keys, resource declarations, whole tasks.
const MEMBERS: &[&str] = &[
    r#""lock": "m""#,
    r#""unlock": "m""#,
    r#""lock": "m2""#,
    r#""unlock": "m2""#,
    r#""wait": {"ref": "c", "mutex": "m"}"#,
    r#""sync": {"ref": "c", "mutex": "m"}"#,
    r#""signal": "c""#,
    r#""broad": "c""#,
    r#""run": 1000"#,
    r#""run": 0"#,
    r#""run": {"min": 0, "max": 2000}"#,
    r#""runtime": 500"#,
    r#""sleep": 200"#,
    r#""timer": {"ref": "unique", "period": 10000}"#,
    r#""timer": {"ref": "t", "period": 5000, "mode": "absolute"}"#,
    r#""suspend""#,
    r#""resume": "A""#,
    r#""yield""#,
    r#""barrier": "b""#,
    r#""push": "q""#,
    r#""pop": "q""#,
    r#""call": {"server": "e", "run": 100}"#,
    r#""serve": "e""#,
    r#""loop": 3"#,
    r#""loop": -1"#,
    r#""loop": 1"#,
    r#""instance": 3"#,
    r#""instance": 0"#,
    r#""cpus": [0, 1]"#,
    r#""cpus": [3]"#,
    r#""priority": 50"#,
    r#""policy": "SCHED_RR""#,
    r#""policy": "SCHED_OTHER""#,
    r#""policy": "SCHED_FIFO""#,
    r#""policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000"#,
    r#""delay": 1000"#,
    r#""phases": {"p": {"loop": 2, "run": 100}, "q": {"sleep": 100}}"#,
    r#""duration": 1"#,
    r#""pi_enabled": true"#,
    r#""pi_cv": false"#,
    r#""seed": 7"#,
    r#""default_policy": "SCHED_FIFO""#,
    r#""m": {"type": "mutex", "protocol": "ceiling", "ceiling": 80}"#,
    r#""q": {"type": "queue", "capacity": 1}"#,
    r#""c": {"type": "cond", "helpers": ["A"]}"#,
    r#""b": {"type": "barrier"}"#,
    r#""A": {"loop": 5, "run": 100, "lock": "m", "signal": "c", "unlock": "m"}"#,
    r#""B": {"priority": 20, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 50}"#,
    r#""S": {"serve": "e"}"#,
    // Utilisation exactly 1 per task with a mutex (F), above 1 per CPU with
    // F (G), above 1 per task (H), a timer a run of 1000 fills (issue 21).
    r#""F": {"priority": 60, "cpus": [0], "run": 1, "lock": "m", "run1": 999, "unlock": "m", "timer": {"ref": "f", "period": 1000}}"#,
    r#""G": {"priority": 55, "cpus": [0], "lock": "m", "run": 500, "unlock": "m", "timer": {"ref": "g", "period": 1000}}"#,
    r#""H": {"priority": 40, "cpus": [0], "run": 1500, "timer": {"ref": "h", "period": 1000}}"#,
    r#""timer": {"ref": "full", "period": 1000}"#,
    r#""resources": {"m": {"type": "mutex"}}"#,
    r#""global": {"duration": 1}"#,
];

/// Where the tokens of a parsed text are.
#[derive(Default)]
struct Spans {
    /// Number literals.
    numbers: Vec<(usize, usize)>,
    /// String values (not keys).
    strings: Vec<(usize, usize)>,
    /// Keys.
    keys: Vec<(usize, usize)>,
    /// Whole members: from the key to the end of the value.
    members: Vec<(usize, usize)>,
    /// Just after the `{` of each object.
    object_starts: Vec<usize>,
    /// Any value.
    values: Vec<(usize, usize)>,
}

fn collect(v: &Value, out: &mut Spans) {
    let span = (v.span.start, v.span.end);
    out.values.push(span);
    match &v.kind {
        Kind::Number(_) => out.numbers.push(span),
        Kind::String(_) => out.strings.push(span),
        Kind::Array(items) => items.iter().for_each(|i| collect(i, out)),
        Kind::Object(members) => {
            out.object_starts.push(v.span.start + 1);
            for m in members {
                out.keys.push((m.key_span.start, m.key_span.end));
                let end = m.value.as_ref().map_or(m.key_span.end, |v| v.span.end);
                out.members.push((m.key_span.start, end));
                if let Some(v) = &m.value {
                    collect(v, out);
                }
            }
        }
        Kind::Null | Kind::Bool(_) => {}
    }
}

fn pick<'a, T>(rng: &mut SplitMix64, items: &'a [T]) -> Option<&'a T> {
    if items.is_empty() {
        None
    } else {
        items.get((rng.next_u64() % items.len() as u64) as usize)
    }
}

fn below(rng: &mut SplitMix64, n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (rng.next_u64() % n as u64) as usize
    }
}

/// `bytes` with `range` replaced by `with`.
fn splice(bytes: &[u8], (start, end): (usize, usize), with: &[u8]) -> Vec<u8> {
    let (start, end) = (start.min(bytes.len()), end.min(bytes.len()));
    let mut out = Vec::with_capacity(bytes.len() + with.len());
    out.extend_from_slice(&bytes[..start]);
    out.extend_from_slice(with);
    out.extend_from_slice(&bytes[end.max(start)..]);
    out
}

/// A long string of one repeated character (in quotes when `quoted`).
fn long_text(rng: &mut SplitMix64, quoted: bool) -> Vec<u8> {
    let len = [61, 300, 5_000, 100_000, 1_000_000][below(rng, 5)];
    let c = [b'x', b'r', b'9'][below(rng, 3)];
    let mut s = Vec::with_capacity(len + 2);
    if quoted {
        s.push(b'"');
    }
    // "run" + digits is a run event; "lock…" a lock.
    if c == b'r' {
        s.extend_from_slice(b"run");
    }
    s.resize(s.len() + len, c);
    if quoted {
        s.push(b'"');
    }
    s
}

/// Values nested `depth` deep around `inner`.
fn nested(depth: usize, inner: &[u8], objects: bool) -> Vec<u8> {
    let (open, close): (&[u8], &[u8]) = if objects {
        (b"{\"run\": ", b"}")
    } else {
        (b"[", b"]")
    };
    let mut out = Vec::new();
    for _ in 0..depth {
        out.extend_from_slice(open);
    }
    out.extend_from_slice(inner);
    for _ in 0..depth {
        out.extend_from_slice(close);
    }
    out
}

/// One mutation of `bytes`, aimed at its tokens when it parses.
fn mutate_once(bytes: &[u8], rng: &mut SplitMix64, pool: &[Vec<u8>]) -> Vec<u8> {
    let parsed = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| json::parse(t).ok());
    let mut spans = Spans::default();
    if let Some(v) = &parsed {
        collect(v, &mut spans);
    }
    let structured = parsed.is_some() && !rng.next_u64().is_multiple_of(4);
    if structured {
        match rng.next_u64() % 10 {
            0 | 1 => {
                if let (Some(&at), Some(n)) = (pick(rng, &spans.numbers), pick(rng, NUMBERS)) {
                    let n = if rng.next_u64().is_multiple_of(16) {
                        "7".repeat(5_000)
                    } else {
                        n.to_string()
                    };
                    return splice(bytes, at, n.as_bytes());
                }
            }
            2 => {
                if let Some(&at) = pick(rng, &spans.strings) {
                    let s = if rng.next_u64().is_multiple_of(3) {
                        long_text(rng, true)
                    } else {
                        json::quote(pick(rng, STRINGS).copied().unwrap_or("m")).into_bytes()
                    };
                    return splice(bytes, at, &s);
                }
            }
            3 => {
                if let Some(&at) = pick(rng, &spans.keys) {
                    let k = if rng.next_u64().is_multiple_of(2) {
                        long_text(rng, true)
                    } else {
                        let m = pick(rng, MEMBERS).copied().unwrap_or("\"run\"");
                        m.split(':').next().unwrap_or("\"run\"").as_bytes().to_vec()
                    };
                    return splice(bytes, at, &k);
                }
            }
            4 => {
                // Duplicate a member right after itself.
                if let Some(&(s, e)) = pick(rng, &spans.members) {
                    let mut copy = b", ".to_vec();
                    copy.extend_from_slice(&bytes[s..e]);
                    return splice(bytes, (e, e), &copy);
                }
            }
            5 => {
                // Remove a member (and a comma after it, if any).
                if let Some(&(s, mut e)) = pick(rng, &spans.members) {
                    if bytes.get(e) == Some(&b',') {
                        e += 1;
                    }
                    return splice(bytes, (s, e), b"");
                }
            }
            6..=8 => {
                // Add a member at the start of an object.
                if let (Some(&at), Some(m)) = (pick(rng, &spans.object_starts), pick(rng, MEMBERS))
                {
                    let close = bytes[at..]
                        .iter()
                        .find(|b| !b.is_ascii_whitespace())
                        .is_some_and(|&b| b == b'}');
                    let mut add = m.as_bytes().to_vec();
                    if !close {
                        add.extend_from_slice(b", ");
                    }
                    return splice(bytes, (at, at), &add);
                }
            }
            _ => {
                // Nest a value deep.
                if let Some(&at) = pick(rng, &spans.values) {
                    let depth = [3, 20, 63, 64, 65, 200][below(rng, 6)];
                    let inner = bytes[at.0..at.1].to_vec();
                    return splice(
                        bytes,
                        at,
                        &nested(depth, &inner, rng.next_u64().is_multiple_of(2)),
                    );
                }
            }
        }
    }
    match rng.next_u64() % 6 {
        0 => bytes[..below(rng, bytes.len() + 1)].to_vec(),
        1 => {
            let bad: &[&[u8]] = &[
                b"\xff",
                b"\xc3",
                b"\xe2\x82",
                b"\xed\xa0\x80",
                b"\xc0\xaf",
                b"\0",
            ];
            let at = below(rng, bytes.len() + 1);
            splice(bytes, (at, at), pick(rng, bad).copied().unwrap_or(b"\xff"))
        }
        2 => {
            // Remove a brace or bracket.
            let braces: Vec<usize> = bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| matches!(b, b'{' | b'}' | b'[' | b']'))
                .map(|(i, _)| i)
                .collect();
            match pick(rng, &braces) {
                Some(&i) => splice(bytes, (i, i + 1), b""),
                None => bytes.to_vec(),
            }
        }
        3 => {
            let s = below(rng, bytes.len() + 1);
            let e = s + below(rng, 64);
            splice(bytes, (s, e), b"")
        }
        4 => {
            // A piece of another file.
            let other = pick(rng, pool).map_or(&[][..], Vec::as_slice);
            let s = below(rng, other.len() + 1);
            let e = (s + below(rng, 200)).min(other.len());
            let at = below(rng, bytes.len() + 1);
            splice(bytes, (at, at), &other[s..e])
        }
        _ => {
            let at = below(rng, bytes.len() + 1);
            let junk: &[&[u8]] = &[
                b"/*", b"//", b"\"", b",", b",,", b":", b"\\u", b"\n", b"-", b".",
            ];
            splice(bytes, (at, at), pick(rng, junk).copied().unwrap_or(b","))
        }
    }
}

/// A mutant of `bytes`: one to three mutations, drawn from `rng`; `pool`
/// gives pieces of other files to splice in.
pub fn mutate(bytes: &[u8], rng: &mut SplitMix64, pool: &[Vec<u8>]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..1 + below(rng, 3) {
        out = mutate_once(&out, rng, pool);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_deterministic_and_change_the_input() {
        let base =
            br#"{"tasks": {"A": {"loop": 2, "run": 100, "lock": "m", "unlock": "m"}}}"#.to_vec();
        let pool = vec![base.clone()];
        let a: Vec<Vec<u8>> = {
            let mut rng = SplitMix64::new(5);
            (0..50).map(|_| mutate(&base, &mut rng, &pool)).collect()
        };
        let b: Vec<Vec<u8>> = {
            let mut rng = SplitMix64::new(5);
            (0..50).map(|_| mutate(&base, &mut rng, &pool)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().filter(|m| **m != base).count() > 40);
    }
}
