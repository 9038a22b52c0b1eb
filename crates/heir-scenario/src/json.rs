//! A small JSON reader for rt-app files: a tree with source positions.
//!
//! rt-app reads its files with json-c, after `doc/workgen` has renamed
//! repeated keys. This reader accepts what those files contain, and nothing
//! else:
//!
//! * object members keep their order, **including repeated keys**; each
//!   [`Member`] carries the key as written and its workgen name
//!   ([`Member::name`]: `run`, `run1`, `run2`, ...), unique in its object;
//! * C comments (`/* ... */` and `// ...`) wherever whitespace may appear;
//! * a trailing comma before `}` or `]`;
//! * a member without a value (`"suspend",`), as rt-app's own
//!   `video-short.json` writes it ([`Member::value`] is `None`);
//! * a UTF-8 byte order mark at the start.
//!
//! Everything else is refused with a [`SyntaxError`] that names the byte
//! offset of the offending token, the JSON path to it, and what was expected
//! instead. Numbers are kept as their literal text ([`Number`]) and converted
//! where they are used, so an integer-only field can say so.
//!
//! Positions are byte offsets into the text; [`LineIndex`] turns them into
//! 1-based line and column numbers (columns count Unicode scalar values, a tab
//! counts as one).

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

/// Objects and arrays may nest at most this deep (rt-app files nest 5 deep).
pub const MAX_DEPTH: usize = 64;

/// A byte range `[start, end)` of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

/// A JSON value and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// What the value is.
    pub kind: Kind,
    /// The bytes of the value in the text (for objects and arrays, from the
    /// opening to the closing bracket).
    pub span: Span,
}

/// The kinds of JSON values.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, kept as written.
    Number(Number),
    /// A string, escapes decoded.
    String(String),
    /// An array, in order.
    Array(Vec<Value>),
    /// An object: members in file order, repeated keys included.
    Object(Vec<Member>),
}

/// A JSON number as written (always valid JSON number syntax).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Number(String);

impl Number {
    /// The literal text, e.g. `-19` or `1.5e3`.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The value if the number is written as an integer (no fraction, no
    /// exponent) and fits in an `i128`.
    pub fn as_i128(&self) -> Option<i128> {
        if self.is_integer() {
            self.0.parse().ok()
        } else {
            None
        }
    }

    /// True when written without fraction or exponent.
    pub fn is_integer(&self) -> bool {
        !self.0.contains(['.', 'e', 'E'])
    }

    /// The value as a float (nearest `f64`; huge values become infinite).
    pub fn as_f64(&self) -> f64 {
        // The text is valid JSON number syntax, which Rust's float parser
        // accepts; fall back to NaN rather than panic if that ever changed.
        self.0.parse().unwrap_or(f64::NAN)
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One member of an object.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The key as written (escapes decoded).
    pub key: String,
    /// The key after rt-app workgen's renaming of repeated keys: equal to
    /// [`key`](Self::key) unless the key was already used in this object, in
    /// which case it is `key` followed by the object's counter (see
    /// [`WorkgenNames`]). Unique within its object.
    pub name: String,
    /// The key's string token, quotes included.
    pub key_span: Span,
    /// `None` for a member written without a value (`"suspend",`).
    pub value: Option<Value>,
}

impl Member {
    /// True when the key was already used earlier in the same object.
    pub fn is_repeat(&self) -> bool {
        self.name != self.key
    }
}

/// rt-app workgen's renaming of repeated keys, one object at a time.
///
/// workgen keeps, per object, the set of keys seen so far and a counter that
/// starts at 1. A key not seen yet keeps its name. A repeated key becomes
/// `key` + counter; while that name is taken the counter is incremented. The
/// counter is shared by all keys of the object and never goes back, so
/// `run, run, run, lock, lock` becomes `run, run1, run2, lock, lock2`.
#[derive(Clone, Debug)]
pub struct WorkgenNames {
    seen: HashSet<String>,
    counter: u64,
}

impl Default for WorkgenNames {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkgenNames {
    /// The state at the start of an object.
    pub fn new() -> Self {
        WorkgenNames {
            seen: HashSet::new(),
            counter: 1,
        }
    }

    /// The name of the next key of the object.
    pub fn name(&mut self, key: &str) -> String {
        let name = if self.seen.contains(key) {
            loop {
                let candidate = format!("{key}{}", self.counter);
                if !self.seen.contains(&candidate) {
                    break candidate;
                }
                self.counter += 1;
            }
        } else {
            key.to_string()
        };
        self.seen.insert(name.clone());
        name
    }
}

impl Value {
    /// A short description for messages: `"abc"`, `-5`, `true`, `null`,
    /// `an object`, `an array`.
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Null => "null".into(),
            Kind::Bool(b) => b.to_string(),
            Kind::Number(n) => text_short(n.text()),
            Kind::String(s) => quote_short(s),
            Kind::Array(_) => "an array".into(),
            Kind::Object(_) => "an object".into(),
        }
    }

    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    /// The members, if the value is an object.
    pub fn as_object(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }
}

/// Messages show at most this many characters of a name, a string or a
/// number from the file; longer ones are cut (see [`quote_short`]).
pub const SHOWN_CHARS: usize = 60;

/// The first [`SHOWN_CHARS`] characters of `s`, or `None` when `s` is not
/// longer than that.
fn cut(s: &str) -> Option<&str> {
    let (end, _) = s.char_indices().nth(SHOWN_CHARS)?;
    Some(&s[..end])
}

/// `s` in JSON quotes for a message; a string longer than [`SHOWN_CHARS`]
/// characters is cut, with its length: `"aaaa…" (1000000 bytes)`.
pub fn quote_short(s: &str) -> String {
    match cut(s) {
        None => quote(s),
        Some(head) => format!("{} ({} bytes)", quote(&format!("{head}…")), s.len()),
    }
}

/// `s` as it is for a message, cut like [`quote_short`] (without quotes):
/// `123456…` `(1000000 bytes)`.
pub fn text_short(s: &str) -> String {
    match cut(s) {
        None => s.to_string(),
        Some(head) => format!("{head}… ({} bytes)", s.len()),
    }
}

/// `s` as a JSON string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    /// An object member, by its workgen name.
    Key(String),
    /// An array element.
    Index(usize),
}

/// Appends one step to a JSON path written as text.
///
/// Keys made of ASCII letters, digits, `_` and `-` are written `a.b`; other
/// keys (with a `.`, a space, ...) are quoted: `tasks["mp3.decoder"].run`.
/// A key longer than [`SHOWN_CHARS`] characters is cut as [`quote_short`]
/// cuts it: `tasks.A["runrunrun…" (1000000 bytes)]`. Array elements are
/// written `cpus[1]`.
pub fn push_path(path: &str, seg: &PathSeg) -> String {
    match seg {
        PathSeg::Key(k) => push_key(path, k),
        PathSeg::Index(i) => format!("{path}[{i}]"),
    }
}

/// `path` followed by the key `k`, as [`push_path`] writes a
/// [`PathSeg::Key`].
pub fn push_key(path: &str, k: &str) -> String {
    let plain = !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && cut(k).is_none();
    match (plain, path.is_empty()) {
        (true, true) => k.to_string(),
        (true, false) => {
            let mut out = String::with_capacity(path.len() + 1 + k.len());
            out.push_str(path);
            out.push('.');
            out.push_str(k);
            out
        }
        (false, _) => format!("{path}[{}]", quote_short(k)),
    }
}

/// A path from segments, as [`push_path`] writes it.
pub fn path_string(segs: &[PathSeg]) -> String {
    segs.iter().fold(String::new(), |p, s| push_path(&p, s))
}

/// Text that is not JSON as rt-app writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the offending token (or where a missing one belongs).
    pub offset: usize,
    /// JSON path of the value being read, empty at the top level.
    pub path: String,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at byte {}: {}", self.offset, self.message)
        } else {
            write!(
                f,
                "at byte {}: at {}: {}",
                self.offset, self.path, self.message
            )
        }
    }
}

impl std::error::Error for SyntaxError {}

/// Maps byte offsets to 1-based line and column numbers.
#[derive(Clone, Debug)]
pub struct LineIndex<'a> {
    text: &'a str,
    /// Offset of the first byte of each line.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text` (lines end at `\n`).
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, starts }
    }

    /// The text it indexes.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// 1-based (line, column) of byte `offset`; the column counts characters
    /// from the start of the line. Offsets past the end map to the end.
    pub fn line_col(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1) - 1;
        let start = self.starts[line];
        let column = self
            .text
            .get(start..offset)
            .map(|s| s.chars().count())
            // An offset inside a multi-byte character: count the bytes.
            .unwrap_or(offset - start);
        (to_u32(line + 1), to_u32(column + 1))
    }

    /// The byte offset of 1-based (`line`, `column`): the inverse of
    /// [`line_col`](Self::line_col). Line 0 (no position) is offset 0; a
    /// column past the end of the text maps to the end.
    pub fn offset(&self, line: u32, column: u32) -> usize {
        let Some(&start) = (line as usize)
            .checked_sub(1)
            .and_then(|l| self.starts.get(l))
        else {
            return 0;
        };
        let skip = (column as usize).saturating_sub(1);
        self.text
            .get(start..)
            .and_then(|rest| rest.char_indices().nth(skip))
            .map_or(self.text.len(), |(i, _)| start + i)
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Reads one JSON document (with rt-app's leniencies, see the module docs).
pub fn parse(text: &str) -> Result<Value, SyntaxError> {
    parse_inner(text, false).0
}

/// [`parse`], keeping the tree small for a scenario of many tasks: the
/// value of each member of the top-level `tasks` object that is an object
/// is read (every syntax error is found, in the same order, with the same
/// message) and then left out — an empty object in the tree, its span
/// kept — and its offset is returned. [`parse_value_at`] reads it again
/// when it is needed, one task at a time.
pub fn parse_deferring_tasks(text: &str) -> Result<(Value, HashSet<usize>), SyntaxError> {
    let mut p = Parser::new(text, true);
    let result = p.document();
    result.map(|v| (v, std::mem::take(&mut p.deferred)))
}

/// The value at byte `at` of `text`, nested `depth` deep at JSON path
/// `path` (its syntax errors are those [`parse`] would report there).
pub fn parse_value_at(
    text: &str,
    at: usize,
    path: Vec<PathSeg>,
    depth: usize,
) -> Result<Value, SyntaxError> {
    let mut p = Parser::new(text, false);
    p.pos = at.min(text.len());
    p.path = path;
    p.value(depth)
}

/// For `text` cut short where the file stops being UTF-8: the JSON path of
/// the value the cut falls in (empty outside any value), or the syntax
/// error that comes before the cut, if there is one.
pub fn path_at_end(text: &str) -> Result<String, SyntaxError> {
    match parse_inner(text, false) {
        (Ok(_), _) => Ok(String::new()),
        (Err(e), true) => Ok(e.path),
        (Err(e), false) => Err(e),
    }
}

/// The document, and whether the reader ran into the end of the text (an
/// error caused by the end: an unterminated string, a missing value).
fn parse_inner(text: &str, defer_tasks: bool) -> (Result<Value, SyntaxError>, bool) {
    let mut p = Parser::new(text, defer_tasks);
    let result = p.document();
    (result, p.hit_end.get())
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    path: Vec<PathSeg>,
    /// Set when an error is caused by the end of the text.
    hit_end: Cell<bool>,
    /// Leave the objects of the top-level `tasks` out of the tree
    /// ([`parse_deferring_tasks`]).
    defer_tasks: bool,
    /// Their offsets.
    deferred: HashSet<usize>,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text` (after a UTF-8 byte-order mark).
    fn new(text: &'a str, defer_tasks: bool) -> Self {
        let bom = text.as_bytes().starts_with(b"\xEF\xBB\xBF");
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: if bom { 3 } else { 0 },
            path: Vec::new(),
            hit_end: Cell::new(false),
            defer_tasks,
            deferred: HashSet::new(),
        }
    }

    fn document(&mut self) -> Result<Value, SyntaxError> {
        self.skip_ws()?;
        let value = self.value(0)?;
        self.skip_ws()?;
        if self.pos < self.bytes.len() {
            return Err(self.error(
                self.pos,
                format!(
                    "unexpected {} after the end of the JSON document",
                    self.found()
                ),
            ));
        }
        Ok(value)
    }

    fn error(&self, offset: usize, message: String) -> SyntaxError {
        SyntaxError {
            offset,
            path: path_string(&self.path),
            message,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Describes the token at `self.pos` for "found ..." messages.
    fn found(&self) -> String {
        let rest = &self.text[self.pos..];
        match rest.chars().next() {
            None => {
                self.hit_end.set(true);
                "end of file".into()
            }
            Some(c) if c.is_alphanumeric() || c == '_' => {
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .take(20)
                    .collect();
                format!("'{word}'")
            }
            Some(c) if c.is_control() => format!("U+{:04X}", c as u32),
            Some(c) => format!("'{c}'"),
        }
    }

    /// Skips whitespace and comments.
    fn skip_ws(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') => self.comment()?,
                _ => return Ok(()),
            }
        }
    }

    /// Skips the comment at `self.pos` (a `/`): `// …` to the end of the
    /// line, or `/* … */`.
    fn comment(&mut self) -> Result<(), SyntaxError> {
        match self.bytes.get(self.pos + 1) {
            Some(b'/') => {
                while let Some(b) = self.peek() {
                    if b == b'\n' {
                        break;
                    }
                    self.pos += 1;
                }
                Ok(())
            }
            Some(b'*') => {
                let start = self.pos;
                match self.text[self.pos + 2..].find("*/") {
                    Some(i) => {
                        self.pos += 2 + i + 2;
                        Ok(())
                    }
                    None => {
                        self.hit_end.set(true);
                        Err(self.error(
                            start,
                            "unterminated comment: '/*' has no closing '*/'".into(),
                        ))
                    }
                }
            }
            _ => Err(self.error(
                self.pos,
                format!(
                    "expected a comment ('//' or '/*') after '/', found {}",
                    self.found_at(self.pos + 1)
                ),
            )),
        }
    }

    fn found_at(&self, pos: usize) -> String {
        let mut saved = Parser::new(self.text, false);
        saved.pos = pos.min(self.bytes.len());
        let found = saved.found();
        if saved.hit_end.get() {
            self.hit_end.set(true);
        }
        found
    }

    fn value(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        let start = self.pos;
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => {
                let s = self.string()?;
                Ok(Value {
                    kind: Kind::String(s),
                    span: Span {
                        start,
                        end: self.pos,
                    },
                })
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') if self.bytes[self.pos..].starts_with(b"true") => {
                self.literal(4, Kind::Bool(true))
            }
            Some(b'f') if self.bytes[self.pos..].starts_with(b"false") => {
                self.literal(5, Kind::Bool(false))
            }
            Some(b'n') if self.bytes[self.pos..].starts_with(b"null") => {
                self.literal(4, Kind::Null)
            }
            _ => Err(self.error(
                start,
                format!(
                    "expected a value (object, array, string, number, true, false or null), found {}",
                    self.found()
                ),
            )),
        }
    }

    fn literal(&mut self, len: usize, kind: Kind) -> Result<Value, SyntaxError> {
        let start = self.pos;
        let end = start + len;
        if self
            .bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            return Err(self.error(
                start,
                format!(
                    "expected a value (object, array, string, number, true, false or null), found {}",
                    self.found()
                ),
            ));
        }
        self.pos = end;
        Ok(Value {
            kind,
            span: Span { start, end },
        })
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        // Take the whole token (anything a number could be confused with),
        // then check it against JSON's grammar:
        //   -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        let mut end = start;
        while let Some(&b) = self.bytes.get(end) {
            let sign_after_e = (b == b'+' || b == b'-')
                && end > start
                && matches!(self.bytes[end - 1], b'e' | b'E');
            if b.is_ascii_alphanumeric()
                || b == b'.'
                || b == b'_'
                || sign_after_e
                || (end == start && b == b'-')
            {
                end += 1;
            } else {
                break;
            }
        }
        let tok = &self.text[start..end];
        if !is_json_number(tok) {
            return Err(self.error(
                start,
                format!(
                    "bad number {}: expected a JSON number such as 12, -3, 0.5 or 1e3",
                    quote_short(tok)
                ),
            ));
        }
        self.pos = end;
        Ok(Value {
            kind: Kind::Number(Number(tok.to_string())),
            span: Span { start, end },
        })
    }

    /// Reads a string token at `self.pos` (which is a `"`).
    fn string(&mut self) -> Result<String, SyntaxError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let Some(c) = rest.chars().next() else {
                self.hit_end.set(true);
                return Err(self.error(
                    open,
                    "unterminated string: no closing '\"' before the end of the file".into(),
                ));
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                '\n' | '\r' => {
                    return Err(self.error(
                        open,
                        "unterminated string: no closing '\"' before the end of the line".into(),
                    ))
                }
                '\\' => self.escape(&mut out)?,
                c if (c as u32) < 0x20 && c != '\t' => {
                    return Err(self.error(
                        self.pos,
                        format!(
                            "control character U+{:04X} in string: write it as an escape",
                            c as u32
                        ),
                    ))
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// Decodes the escape at `self.pos` (a `\`) of a string into `out`.
    fn escape(&mut self, out: &mut String) -> Result<(), SyntaxError> {
        let esc_at = self.pos;
        self.pos += 1;
        let e = self.peek();
        self.pos += 1;
        let c = match e {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => self.unicode_escape(esc_at)?,
            _ => {
                if e.is_none() {
                    self.hit_end.set(true);
                }
                self.pos = esc_at;
                let shown: String = self.text[esc_at..].chars().take(2).collect();
                return Err(self.error(
                    esc_at,
                    format!(
                        "bad escape '{shown}' in string: expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"
                    ),
                ));
            }
        };
        out.push(c);
        Ok(())
    }

    /// After `\u` (self.pos is on the first hex digit).
    fn unicode_escape(&mut self, esc_at: usize) -> Result<char, SyntaxError> {
        let first = self.hex4(esc_at)?;
        if (0xD800..0xDC00).contains(&first) {
            // A high surrogate must be followed by `\u` and a low one.
            if self.bytes[self.pos..].starts_with(b"\\u") {
                let second_at = self.pos;
                self.pos += 2;
                let second = self.hex4(second_at)?;
                if (0xDC00..0xE000).contains(&second) {
                    let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                    if let Some(c) = char::from_u32(c) {
                        return Ok(c);
                    }
                }
            }
            if self.bytes.len() < self.pos + 6 {
                self.hit_end.set(true);
            }
            return Err(self.error(
                esc_at,
                "bad escape: a \\uD800-\\uDBFF surrogate must be followed by a \\uDC00-\\uDFFF one"
                    .into(),
            ));
        }
        char::from_u32(first).ok_or_else(|| {
            self.error(
                esc_at,
                "bad escape: a lone \\uDC00-\\uDFFF surrogate is not a character".into(),
            )
        })
    }

    fn hex4(&mut self, esc_at: usize) -> Result<u32, SyntaxError> {
        let digits = self.bytes.get(self.pos..self.pos + 4);
        if digits.is_none() {
            self.hit_end.set(true);
        }
        let value = digits
            .filter(|d| d.iter().all(u8::is_ascii_hexdigit))
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match value {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => Err(self.error(
                esc_at,
                "bad escape: expected four hex digits after \\u".into(),
            )),
        }
    }

    fn enter(&self, depth: usize) -> Result<(), SyntaxError> {
        if depth >= MAX_DEPTH {
            Err(self.error(
                self.pos,
                format!("objects and arrays nested deeper than {MAX_DEPTH} levels"),
            ))
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.enter(depth)?;
        let start = self.pos;
        self.pos += 1;
        let mut members: Vec<Member> = Vec::new();
        let mut names = WorkgenNames::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                Some(b'"') => {}
                _ => {
                    let what = if members.is_empty() {
                        "a key (a string in double quotes) or '}'"
                    } else {
                        "a key (a string in double quotes) or '}' after ','"
                    };
                    return Err(
                        self.error(self.pos, format!("expected {what}, found {}", self.found()))
                    );
                }
            }
            members.push(self.member(&mut names, depth)?);
            let key = &members[members.len() - 1].key;
            if self.item_end(b'}', || {
                format!("expected ',' or '}}' after the member {}", quote_short(key))
            })? {
                break;
            }
        }
        Ok(Value {
            kind: Kind::Object(members),
            span: Span {
                start,
                end: self.pos,
            },
        })
    }

    /// The member at `self.pos` (its key's opening quote) of an object at
    /// `depth`, whose keys so far `names` has seen: the key, then `:` and
    /// the value, or no value (`"suspend",`).
    fn member(&mut self, names: &mut WorkgenNames, depth: usize) -> Result<Member, SyntaxError> {
        let key_start = self.pos;
        let key = self.string()?;
        let key_span = Span {
            start: key_start,
            end: self.pos,
        };
        let name = names.name(&key);
        self.skip_ws()?;
        let value = match self.peek() {
            Some(b':') => {
                self.pos += 1;
                self.path.push(PathSeg::Key(name.clone()));
                self.skip_ws()?;
                let mut v = self.value(depth + 1)?;
                if self.defer_tasks
                    && depth == 1
                    && matches!(self.path.as_slice(), [PathSeg::Key(t), _] if t == "tasks")
                    && matches!(v.kind, Kind::Object(_))
                {
                    // A task: read (checked), then left out of the tree.
                    self.deferred.insert(v.span.start);
                    v.kind = Kind::Object(Vec::new());
                }
                self.path.pop();
                Some(v)
            }
            // A member without a value: `"suspend",` or `"suspend" }`.
            Some(b',' | b'}') => None,
            _ => {
                return Err(self.error(
                    key_span.end,
                    format!(
                        "expected ':' after key {}, found {}",
                        quote_short(&key),
                        self.found()
                    ),
                ))
            }
        };
        Ok(Member {
            key,
            name,
            key_span,
            value,
        })
    }

    /// After an object member or an array item: `,` (another follows:
    /// `false`) or `close` (the end: `true`), consumed; anything else is the
    /// error `{expected}, found …`.
    fn item_end(
        &mut self,
        close: u8,
        expected: impl FnOnce() -> String,
    ) -> Result<bool, SyntaxError> {
        self.skip_ws()?;
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => {
                let msg = format!("{}, found {}", expected(), self.found());
                Err(self.error(self.pos, msg))
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.enter(depth)?;
        let start = self.pos;
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws()?;
            if self.peek() == Some(b']') {
                self.pos += 1;
                break;
            }
            self.path.push(PathSeg::Index(items.len()));
            let v = self.value(depth + 1)?;
            self.path.pop();
            items.push(v);
            if self.item_end(b']', || "expected ',' or ']' in the array".to_string())? {
                break;
            }
        }
        Ok(Value {
            kind: Kind::Array(items),
            span: Span {
                start,
                end: self.pos,
            },
        })
    }
}

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let digits = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == digits {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let digits = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == digits {
            return false;
        }
    }
    i == b.len()
}
