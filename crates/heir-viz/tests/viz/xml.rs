//! A tiny XML well-formedness checker (enough for the SVG we write: a
//! prolog, elements, attributes, text, comments, entity references). It
//! avoids a dependency on an XML crate just to check our own output.

use std::collections::BTreeMap;

/// What a well-formed document holds.
#[derive(Debug, Default)]
pub struct Doc {
    pub root: String,
    /// Element name → number of occurrences.
    pub elements: BTreeMap<String, usize>,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == '-' || c == '.'
}

/// Checks an entity reference starting at `s[i] == '&'`; returns its length.
fn entity(s: &str, i: usize) -> Result<usize, String> {
    let rest = &s[i..];
    let end = rest
        .find(';')
        .ok_or_else(|| format!("unterminated entity at byte {i}"))?;
    let body = &rest[1..end];
    let ok = matches!(body, "amp" | "lt" | "gt" | "quot" | "apos")
        || (body.starts_with("#x")
            && body.len() > 2
            && body[2..].chars().all(|c| c.is_ascii_hexdigit()))
        || (body.starts_with('#')
            && body.len() > 1
            && body[1..].chars().all(|c| c.is_ascii_digit()));
    if ok {
        Ok(end + 1)
    } else {
        Err(format!("bad entity &{body}; at byte {i}"))
    }
}

fn name(s: &str, i: usize) -> Result<(String, usize), String> {
    let mut chars = s[i..].char_indices();
    match chars.next() {
        Some((_, c)) if is_name_start(c) => {}
        _ => return Err(format!("expected a name at byte {i}")),
    }
    let len = s[i..]
        .char_indices()
        .find(|&(_, c)| !is_name_char(c))
        .map(|(k, _)| k)
        .unwrap_or(s.len() - i);
    Ok((s[i..i + len].to_string(), i + len))
}

fn skip_ws(s: &str, mut i: usize) -> usize {
    while s[i..].starts_with([' ', '\n', '\t', '\r']) {
        i += 1;
    }
    i
}

/// Parses `s`; an error says what and where.
pub fn check(s: &str) -> Result<Doc, String> {
    let mut doc = Doc::default();
    let mut stack: Vec<String> = Vec::new();
    let mut i = 0;
    if s.starts_with("<?xml") {
        i = s.find("?>").ok_or("unterminated prolog")? + 2;
    }
    let mut roots = 0;
    while i < s.len() {
        let c = s[i..].chars().next().ok_or("bad utf-8 boundary")?;
        if c == '<' {
            if s[i..].starts_with("<!--") {
                let end = s[i..].find("-->").ok_or("unterminated comment")?;
                i += end + 3;
            } else if s[i..].starts_with("</") {
                let (n, j) = name(s, i + 2)?;
                let j = skip_ws(s, j);
                if !s[j..].starts_with('>') {
                    return Err(format!("expected '>' closing </{n} at byte {j}"));
                }
                match stack.pop() {
                    Some(open) if open == n => {}
                    Some(open) => return Err(format!("</{n}> closes <{open}> at byte {i}")),
                    None => return Err(format!("</{n}> with nothing open at byte {i}")),
                }
                i = j + 1;
            } else {
                let (n, mut j) = name(s, i + 1)?;
                if stack.is_empty() {
                    roots += 1;
                    doc.root = n.clone();
                }
                *doc.elements.entry(n.clone()).or_default() += 1;
                let mut attrs: Vec<String> = Vec::new();
                loop {
                    let k = skip_ws(s, j);
                    if s[k..].starts_with("/>") {
                        j = k + 2;
                        break;
                    }
                    if s[k..].starts_with('>') {
                        stack.push(n.clone());
                        j = k + 1;
                        break;
                    }
                    if k == j {
                        return Err(format!(
                            "expected whitespace before an attribute at byte {k}"
                        ));
                    }
                    let (a, k) = name(s, k)?;
                    if attrs.contains(&a) {
                        return Err(format!("duplicate attribute {a} on <{n}>"));
                    }
                    attrs.push(a.clone());
                    let k = skip_ws(s, k);
                    if !s[k..].starts_with('=') {
                        return Err(format!("expected '=' after attribute {a} at byte {k}"));
                    }
                    let k = skip_ws(s, k + 1);
                    let q = s[k..].chars().next().ok_or("eof in attribute")?;
                    if q != '"' && q != '\'' {
                        return Err(format!("unquoted value of {a} at byte {k}"));
                    }
                    let mut m = k + 1;
                    loop {
                        let c = s[m..].chars().next().ok_or("eof in attribute value")?;
                        if c == q {
                            break;
                        }
                        if c == '<' {
                            return Err(format!("'<' in the value of {a} at byte {m}"));
                        }
                        if c == '&' {
                            m += entity(s, m)?;
                        } else {
                            m += c.len_utf8();
                        }
                    }
                    j = m + 1;
                }
                i = j;
            }
        } else if c == '&' {
            i += entity(s, i)?;
        } else {
            if stack.is_empty() && !c.is_whitespace() {
                return Err(format!("text outside the root element at byte {i}"));
            }
            i += c.len_utf8();
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> is never closed"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(doc)
}

#[test]
fn checker_accepts_well_formed_and_rejects_broken_documents() {
    let ok =
        check(r#"<?xml version="1.0"?><a x="1" y='&amp;'><b/>t&lt;<!-- c --><c></c></a>"#).unwrap();
    assert_eq!(ok.root, "a");
    assert_eq!(ok.elements["b"], 1);
    for bad in [
        "<a><b></a></b>",
        "<a x=1/>",
        "<a x=\"1\" x=\"2\"/>",
        "<a>&nbsp;</a>",
        "<a>&amp</a>",
        "<a>",
        "<a/><b/>",
        "<a x=\"<\"/>",
        "text<a/>",
    ] {
        assert!(check(bad).is_err(), "accepted {bad}");
    }
}
