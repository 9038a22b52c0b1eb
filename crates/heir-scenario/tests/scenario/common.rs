//! Helpers shared by the test modules.

use heir_scenario::{parse_str, EventKind, Resource, ResourceKind, Scenario, ScenarioError};

/// Parses `text` (named `t.json`), panicking with the error if it fails.
pub fn ok(text: &str) -> Scenario {
    parse_str(text, "t.json").unwrap_or_else(|e| panic!("unexpected error: {e}"))
}

/// Parses `text` (named `t.json`), which must fail.
pub fn err(text: &str) -> ScenarioError {
    match parse_str(text, "t.json") {
        Ok(s) => panic!("expected an error, got {s:#?}"),
        Err(e) => e,
    }
}

/// The displayed error for `text`.
pub fn err_str(text: &str) -> String {
    err(text).to_string()
}

/// A scenario with one task `A` whose body (without braces) is `body`.
pub fn one_task(body: &str) -> String {
    format!("{{\"tasks\": {{\"A\": {{{body}}}}}}}")
}

/// The events of task `t`, phase `p`.
pub fn kinds(s: &Scenario, t: usize, p: usize) -> Vec<EventKind> {
    s.tasks[t].phases[p]
        .events
        .iter()
        .map(|e| e.kind.clone())
        .collect()
}

/// The event keys of task `t`, phase `p`.
pub fn keys(s: &Scenario, t: usize, p: usize) -> Vec<String> {
    s.tasks[t].phases[p]
        .events
        .iter()
        .map(|e| e.key.clone())
        .collect()
}

/// The resource named `name` of the kind whose word is `word`.
pub fn res<'s>(s: &'s Scenario, name: &str, word: &str) -> (usize, &'s Resource) {
    s.resources
        .iter()
        .enumerate()
        .find(|(_, r)| r.name == name && r.kind.word() == word)
        .unwrap_or_else(|| panic!("no {word} {name:?} in {:#?}", s.resources))
}

/// The kind of the resource named `name` and `word`.
pub fn res_kind<'s>(s: &'s Scenario, name: &str, word: &str) -> &'s ResourceKind {
    &res(s, name, word).1.kind
}

/// The warnings, displayed.
pub fn warnings(s: &Scenario) -> Vec<String> {
    s.warnings.iter().map(|w| w.to_string()).collect()
}

/// Where the distribution's `rt-app` package installs rt-app's own example
/// files (top level, `tutorial/`, `merge/`).
pub const RTAPP_EXAMPLES: &str = "/usr/share/doc/rt-app/examples";

/// rt-app's example files ([`RTAPP_EXAMPLES`]). `None` (with the reason
/// printed) when the `rt-app` package is not installed, except under
/// `CI=true`, where their absence fails the test.
pub fn rtapp_examples() -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(RTAPP_EXAMPLES);
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "rt-app's example files not found at {RTAPP_EXAMPLES}: install the `rt-app` package (apt-get install rt-app; test.sh does)"
        );
    }
    eprintln!(
        "skipped: rt-app's example files not found at {RTAPP_EXAMPLES} (install the `rt-app` package; under CI=true this fails)"
    );
    None
}

/// rt-app's example file `name` (relative to [`RTAPP_EXAMPLES`]), read;
/// `None` when the package is not installed (see [`rtapp_examples`]).
pub fn load_rtapp(name: &str) -> Option<Scenario> {
    let dir = rtapp_examples()?;
    Some(heir_scenario::load(&dir.join(name)).unwrap_or_else(|e| panic!("{e}")))
}
