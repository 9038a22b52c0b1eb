//! Property tests: the reader never panics, and reads back what is written.

use heir_scenario::json::{self, Kind, Value};
use heir_scenario::parse_str;
use proptest::prelude::*;

/// The file the mutations start from: one of heir's examples (a client,
/// a server, a queue, timers).
const SEED_FILE: &str = include_str!("../../../../examples/table1-client-server.json");

/// A JSON tree without positions, as the generator makes it.
#[derive(Clone, Debug, PartialEq)]
enum Tree {
    Null,
    Bool(bool),
    /// The number's text.
    Num(String),
    Str(String),
    Arr(Vec<Tree>),
    /// Members in order; `None` for a member written without a value.
    Obj(Vec<(String, Option<Tree>)>),
}

fn strip(v: &Value) -> Tree {
    match &v.kind {
        Kind::Null => Tree::Null,
        Kind::Bool(b) => Tree::Bool(*b),
        Kind::Number(n) => Tree::Num(n.text().to_string()),
        Kind::String(s) => Tree::Str(s.clone()),
        Kind::Array(items) => Tree::Arr(items.iter().map(strip).collect()),
        Kind::Object(members) => Tree::Obj(
            members
                .iter()
                .map(|m| (m.key.clone(), m.value.as_ref().map(strip)))
                .collect(),
        ),
    }
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (any::<i32>(), 0u32..1000, proptest::option::of(-30i32..30)).prop_map(|(i, f, e)| {
            match e {
                Some(e) => format!("{i}.{f}e{e}"),
                None => format!("{i}.{f}"),
            }
        }),
        (1u32..10, -5i32..5).prop_map(|(m, e)| format!("{m}E+{}", e.abs())),
    ]
}

fn key() -> impl Strategy<Value = String> {
    // A few keys, so that repeats are frequent; and any string.
    prop_oneof![
        3 => prop::sample::select(vec!["run", "lock", "run1", "suspend", "", "a.b"]).prop_map(String::from),
        1 => any::<String>(),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        Just(Tree::Null),
        any::<bool>().prop_map(Tree::Bool),
        number().prop_map(Tree::Num),
        any::<String>().prop_map(Tree::Str),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Tree::Arr),
            prop::collection::vec((key(), proptest::option::weighted(0.85, inner)), 0..6)
                .prop_map(Tree::Obj),
        ]
    })
}

/// A small deterministic generator for the writer's decorations.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Whitespace and comments between tokens.
fn gap(out: &mut String, d: &mut Dice) {
    for _ in 0..d.roll(3) {
        match d.roll(6) {
            0 => out.push(' '),
            1 => out.push('\n'),
            2 => out.push('\t'),
            3 => out.push_str("/* c */"),
            4 => out.push_str("// line comment, \"quoted\" /* not a block\n"),
            _ => out.push_str("/*\n * block *\n */"),
        }
    }
}

fn write(t: &Tree, out: &mut String, d: &mut Dice) {
    match t {
        Tree::Null => out.push_str("null"),
        Tree::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Tree::Num(n) => out.push_str(n),
        Tree::Str(s) => out.push_str(&json::quote(s)),
        Tree::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                gap(out, d);
                write(item, out, d);
                gap(out, d);
            }
            if !items.is_empty() && d.roll(2) == 0 {
                out.push(',');
                gap(out, d);
            }
            out.push(']');
        }
        Tree::Obj(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                gap(out, d);
                out.push_str(&json::quote(k));
                gap(out, d);
                if let Some(v) = v {
                    out.push(':');
                    gap(out, d);
                    write(v, out, d);
                    gap(out, d);
                }
            }
            if !members.is_empty() && d.roll(2) == 0 {
                out.push(',');
                gap(out, d);
            }
            out.push('}');
        }
    }
}

/// Every object's workgen names are unique, and a key keeps its name unless
/// an earlier member of the object already has that name.
fn names_are_workgen(v: &Value) -> bool {
    match &v.kind {
        Kind::Array(items) => items.iter().all(names_are_workgen),
        Kind::Object(members) => {
            let mut seen = std::collections::HashSet::new();
            members.iter().all(|m| {
                let taken = seen.contains(&m.key);
                let renamed = m.name != m.key;
                seen.insert(m.name.clone())
                    && taken == renamed
                    && m.name.starts_with(m.key.as_str())
                    && m.value.as_ref().is_none_or(names_are_workgen)
            })
        }
        _ => true,
    }
}

/// A mutation of a valid file.
#[derive(Clone, Debug)]
enum Edit {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Duplicate { at: usize, len: usize },
    Truncate { at: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    let bit = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "/*",
        "*/",
        "//",
        "\n",
        "-",
        "0",
        "1e",
        "\\",
        "\\u",
        "é",
        "\"run\"",
        "\"tasks\"",
        "null",
        "-1",
        "99999999999999999999999",
        "\"phases\": {}",
    ]);
    prop_oneof![
        (any::<usize>(), 1usize..20).prop_map(|(at, len)| Edit::Delete { at, len }),
        (any::<usize>(), bit).prop_map(|(at, t)| Edit::Insert {
            at,
            text: t.to_string()
        }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Edit::Duplicate { at, len }),
        any::<usize>().prop_map(|at| Edit::Truncate { at }),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(s: &str, at: usize) -> usize {
    let mut i = at % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(s: &mut String, e: &Edit) {
    match e {
        Edit::Delete { at, len } => {
            let a = boundary(s, *at);
            let b = boundary(s, a + len);
            let b = if b < a { s.len() } else { b };
            s.replace_range(a..b, "");
        }
        Edit::Insert { at, text } => {
            let a = boundary(s, *at);
            s.insert_str(a, text);
        }
        Edit::Duplicate { at, len } => {
            let a = boundary(s, *at);
            let b = boundary(s, (a + len).min(s.len()));
            let piece = s[a..b.max(a)].to_string();
            s.insert_str(a, &piece);
        }
        Edit::Truncate { at } => {
            let a = boundary(s, *at);
            s.truncate(a);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        // Either outcome is fine; an error must have a position in the text.
        if let Err(e) = parse_str(&text, "x.json") {
            prop_assert!(e.line >= 1 && e.column >= 1);
            prop_assert!(!e.message.is_empty());
        }
    }

    #[test]
    fn never_panics_on_mutated_files(edits in prop::collection::vec(edit(), 1..6)) {
        let mut text = SEED_FILE.to_string();
        for e in &edits {
            apply(&mut text, e);
        }
        if let Err(e) = parse_str(&text, "x.json") {
            prop_assert!(e.line >= 1 && e.column >= 1);
            let lines = text.split('\n').count() as u32;
            prop_assert!(e.line <= lines, "line {} of {}", e.line, lines);
        }
    }

    #[test]
    fn round_trips_through_comments_and_trailing_commas(t in tree(), seed in any::<u64>()) {
        let mut text = String::new();
        let mut d = Dice(seed | 1);
        gap(&mut text, &mut d);
        write(&t, &mut text, &mut d);
        gap(&mut text, &mut d);
        let v = json::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(strip(&v), t);
        prop_assert!(names_are_workgen(&v));
    }
}
