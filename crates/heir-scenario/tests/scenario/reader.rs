//! The JSON reader: rt-app's leniencies accepted, positions, syntax errors.

use heir_scenario::json::{self, Kind, LineIndex};
use heir_scenario::{EventKind, Micros};

use crate::common::*;

fn obj(v: &json::Value) -> &[json::Member] {
    v.as_object().expect("an object")
}

#[test]
fn comments_anywhere_whitespace_is() {
    let text = "// leading line comment\n\
                /* block */ { /* before key */ \"a\" /* before colon */ : /* before value */ 1 // after value\n\
                , \"b\" : [ /* in array */ 2 /* after elem */ , 3 ] } /* trailing */ // end";
    let v = json::parse(text).unwrap();
    let m = obj(&v);
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].key, "a");
    assert_eq!(m[0].value.as_ref().unwrap().describe(), "1");
    match &m[1].value.as_ref().unwrap().kind {
        Kind::Array(items) => {
            let d: Vec<String> = items.iter().map(|i| i.describe()).collect();
            assert_eq!(d, ["2", "3"]);
        }
        k => panic!("expected an array, got {k:?}"),
    }
}

#[test]
fn trailing_commas_in_objects_and_arrays() {
    let v = json::parse(r#"{ "a" : [1, 2, ], "b" : { "c" : 3, }, }"#).unwrap();
    let m = obj(&v);
    assert_eq!(
        m.iter().map(|m| m.key.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    match &m[0].value.as_ref().unwrap().kind {
        Kind::Array(items) => assert_eq!(items.len(), 2),
        k => panic!("{k:?}"),
    }
    assert_eq!(obj(m[1].value.as_ref().unwrap()).len(), 1);
}

#[test]
fn a_lone_comma_is_not_an_element() {
    assert_eq!(
        json::parse("[1,,2]").unwrap_err().message,
        "expected a value (object, array, string, number, true, false or null), found ','"
    );
    assert_eq!(
        json::parse("{,}").unwrap_err().message,
        "expected a key (a string in double quotes) or '}', found ','"
    );
}

#[test]
fn member_without_value_reads_as_none() {
    let v = json::parse(r#"{ "suspend", "run" : 5, "yield" }"#).unwrap();
    let m = obj(&v);
    assert_eq!(m.len(), 3);
    assert!(m[0].value.is_none());
    assert_eq!(m[1].value.as_ref().unwrap().describe(), "5");
    assert!(m[2].value.is_none());
}

#[test]
fn valueless_suspend_in_a_task_is_a_suspend_event() {
    // As rt-app's video-short.json writes it.
    let s = ok(r#"{ "tasks" : {
        "A" : { "loop" : -1, "suspend", "run" : 1500 },
        "B" : { "loop" : -1, "resume" : "A", "run" : 10, }, } }"#);
    let sp = res(&s, "A", "suspend point").0;
    assert_eq!(
        kinds(&s, 0, 0),
        [
            EventKind::Suspend(heir_scenario::ResIdx(sp)),
            EventKind::Run(Micros::Fixed(1500))
        ]
    );
    assert_eq!(
        kinds(&s, 1, 0),
        [
            EventKind::Resume(heir_scenario::ResIdx(sp)),
            EventKind::Run(Micros::Fixed(10))
        ]
    );
}

#[test]
fn repeated_keys_are_kept_in_order() {
    let v = json::parse(r#"{"run":1,"sleep":2,"run":3}"#).unwrap();
    let m = obj(&v);
    let seen: Vec<(&str, String)> = m
        .iter()
        .map(|m| (m.key.as_str(), m.value.as_ref().unwrap().describe()))
        .collect();
    assert_eq!(
        seen,
        [
            ("run", "1".into()),
            ("sleep", "2".into()),
            ("run", "3".into())
        ]
    );
}

#[test]
fn numbers_keep_their_text() {
    let v = json::parse("[-19, 0, 1.5, -2e3, 6E+2, 12345678901234567890123]").unwrap();
    let Kind::Array(items) = &v.kind else {
        panic!()
    };
    let nums: Vec<&json::Number> = items
        .iter()
        .map(|i| match &i.kind {
            Kind::Number(n) => n,
            k => panic!("{k:?}"),
        })
        .collect();
    assert_eq!(nums[0].as_i128(), Some(-19));
    assert_eq!(nums[1].as_i128(), Some(0));
    assert_eq!(nums[2].as_i128(), None);
    assert_eq!(nums[2].as_f64(), 1.5);
    assert_eq!(nums[3].as_f64(), -2000.0);
    assert!(!nums[4].is_integer());
    assert_eq!(nums[4].as_f64(), 600.0);
    assert_eq!(nums[5].text(), "12345678901234567890123");
    assert_eq!(nums[5].as_i128(), Some(12345678901234567890123));
}

#[test]
fn strings_decode_escapes() {
    let v = json::parse(r#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#).unwrap();
    assert_eq!(v.as_str(), Some("a\"b\\c/d\n\té😀"));
}

#[test]
fn byte_order_mark_is_skipped() {
    let v = json::parse("\u{feff}{\"a\":1}").unwrap();
    assert_eq!(obj(&v)[0].key, "a");
}

#[test]
fn spans_cover_the_tokens() {
    let text = r#"{ "a" : [1, "xy"] }"#;
    let v = json::parse(text).unwrap();
    assert_eq!((v.span.start, v.span.end), (0, text.len()));
    let m = &obj(&v)[0];
    assert_eq!(&text[m.key_span.start..m.key_span.end], r#""a""#);
    let arr = m.value.as_ref().unwrap();
    assert_eq!(&text[arr.span.start..arr.span.end], r#"[1, "xy"]"#);
}

#[test]
fn line_and_column_count_characters() {
    let text = "ab\n\tcé d\n\nx";
    let idx = LineIndex::new(text);
    assert_eq!(idx.line_col(0), (1, 1));
    assert_eq!(idx.line_col(2), (1, 3)); // the newline itself
    assert_eq!(idx.line_col(3), (2, 1)); // the tab
    assert_eq!(idx.line_col(4), (2, 2)); // c
                                         // é is two bytes: 'd' is at byte 8, the 5th character of line 2.
    assert_eq!(text.find('d'), Some(8));
    assert_eq!(idx.line_col(8), (2, 5));
    assert_eq!(idx.line_col(10), (3, 1)); // the empty line
    assert_eq!(idx.line_col(11), (4, 1));
    assert_eq!(idx.line_col(99), (4, 2)); // past the end: the end
}

#[test]
fn event_positions_are_those_of_the_keys() {
    let s = ok("{\n\"tasks\": {\n  \"A\": {\n    \"run\": 5,\n\t\"sleep\": 6 } } }");
    let e = &s.tasks[0].phases[0].events;
    assert_eq!((e[0].line, e[0].column), (4, 5));
    assert_eq!((e[1].line, e[1].column), (5, 2));
}

#[test]
fn missing_colon_points_where_the_colon_belongs() {
    let e = err("{\n  \"tasks\": {\n    \"A\": { \"run\" 5 } } }");
    // `"run"` is columns 12..=16 of line 3: the colon belongs at column 17.
    assert_eq!(
        e.to_string(),
        "t.json:3:17: at tasks.A: expected ':' after key \"run\", found '5'"
    );
}

#[test]
fn unterminated_string_points_at_its_opening_quote() {
    assert_eq!(
        err_str("{ \"tasks\" : { \"A\" : { \"lock\" : \"m,\n \"run\" : 5 } } }"),
        "t.json:1:32: at tasks.A.lock: unterminated string: no closing '\"' before the end of the line"
    );
    assert_eq!(
        err_str("{ \"tasks\" : { \"A"),
        "t.json:1:15: at tasks: unterminated string: no closing '\"' before the end of the file"
    );
}

#[test]
fn unterminated_comment_points_at_its_start() {
    assert_eq!(
        err_str("{ \"tasks\" : {}\n /* no end"),
        "t.json:2:2: unterminated comment: '/*' has no closing '*/'"
    );
}

#[test]
fn bad_numbers_are_refused_with_their_text() {
    for (text, col, tok) in [
        ("[01]", 2, "01"),
        ("[1.]", 2, "1."),
        ("[-]", 2, "-"),
        ("[1e]", 2, "1e"),
        ("[1e+]", 2, "1e+"),
        ("[-x1]", 2, "-x1"),
        ("[12abc]", 2, "12abc"),
        ("[0x10]", 2, "0x10"),
    ] {
        let e = json::parse(text).unwrap_err();
        assert_eq!(
            e.message,
            format!("bad number \"{tok}\": expected a JSON number such as 12, -3, 0.5 or 1e3"),
            "{text}"
        );
        assert_eq!(LineIndex::new(text).line_col(e.offset), (1, col), "{text}");
        assert_eq!(e.path, "[0]");
    }
    assert_eq!(
        json::parse("[.5]").unwrap_err().message,
        "expected a value (object, array, string, number, true, false or null), found '.'"
    );
}

#[test]
fn trailing_garbage_is_refused() {
    assert_eq!(
        err_str("{ \"tasks\" : { \"A\" : { \"run\" : 1 } } }\n}"),
        "t.json:2:1: unexpected '}' after the end of the JSON document"
    );
    assert_eq!(
        err_str("{ \"tasks\" : { \"A\" : { \"run\" : 1 } } } x"),
        "t.json:1:39: unexpected 'x' after the end of the JSON document"
    );
}

#[test]
fn other_syntax_errors_say_what_was_expected() {
    let cases = [
        ("", "expected a value (object, array, string, number, true, false or null), found end of file", ""),
        ("{\"a\":1 \"b\":2}", "expected ',' or '}' after the member \"a\", found '\"'", ""),
        ("[1 2]", "expected ',' or ']' in the array, found '2'", ""),
        ("{\"a\": tru}", "expected a value (object, array, string, number, true, false or null), found 'tru'", "a"),
        ("{\"a\": truex}", "expected a value (object, array, string, number, true, false or null), found 'truex'", "a"),
        ("{\"a\": \"\\q\"}", "bad escape '\\q' in string: expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", "a"),
        ("{\"a\": \"\\u12\"}", "bad escape: expected four hex digits after \\u", "a"),
        ("{\"a\": \"\\ud800x\"}", "bad escape: a \\uD800-\\uDBFF surrogate must be followed by a \\uDC00-\\uDFFF one", "a"),
        ("{\"a\": \"\\udc00\"}", "bad escape: a lone \\uDC00-\\uDFFF surrogate is not a character", "a"),
        ("{\"a\": \"x\u{1}\"}", "control character U+0001 in string: write it as an escape", "a"),
        ("{\"a\": / }", "expected a comment ('//' or '/*') after '/', found ' '", "a"),
        ("{\"a\": 1,}x", "unexpected 'x' after the end of the JSON document", ""),
        ("{\"a\":}", "expected a value (object, array, string, number, true, false or null), found '}'", "a"),
        ("{a:1}", "expected a key (a string in double quotes) or '}', found 'a'", ""),
    ];
    for (text, message, path) in cases {
        let e = json::parse(text).unwrap_err();
        assert_eq!(e.message, message, "{text:?}");
        assert_eq!(e.path, path, "{text:?}");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = "[".repeat(json::MAX_DEPTH) + &"]".repeat(json::MAX_DEPTH);
    assert!(json::parse(&deep).is_ok());
    let deeper = "[".repeat(json::MAX_DEPTH + 1) + &"]".repeat(json::MAX_DEPTH + 1);
    let e = json::parse(&deeper).unwrap_err();
    assert_eq!(e.message, "objects and arrays nested deeper than 64 levels");
    assert_eq!(e.offset, json::MAX_DEPTH);
    // Far deeper input fails the same way, without exhausting the stack.
    let huge = "[".repeat(1_000_000);
    assert!(json::parse(&huge).is_err());
}

#[test]
fn syntax_error_paths_use_workgen_names() {
    let e = err_str(
        r#"{ "tasks" : { "A" : { "timer" : {"ref":"t","period":5}, "timer" : { "ref" : "t", "period" : 5, "mode" : @ } } } }"#,
    );
    assert_eq!(
        e,
        "t.json:1:105: at tasks.A.timer1.mode: expected a value (object, array, string, number, true, false or null), found '@'"
    );
}

#[test]
fn paths_quote_names_that_are_not_plain() {
    assert_eq!(
        json::push_path("tasks", &json::PathSeg::Key("mp3.decoder".into())),
        "tasks[\"mp3.decoder\"]"
    );
    assert_eq!(
        json::push_path("tasks", &json::PathSeg::Key("Binder-dummy_2".into())),
        "tasks.Binder-dummy_2"
    );
    assert_eq!(
        json::push_path("", &json::PathSeg::Key("tasks".into())),
        "tasks"
    );
    assert_eq!(
        json::push_path("a.cpus", &json::PathSeg::Index(2)),
        "a.cpus[2]"
    );
    assert_eq!(
        json::push_path("a", &json::PathSeg::Key("".into())),
        "a[\"\"]"
    );
}
