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

/// mp3-short.json from rt-app's doc/examples, embedded so that these tests
/// do not depend on files outside the repository.
pub const MP3_SHORT: &str = r#"{
	"tasks" : {
		"AudioTick" : {
			"priority" : -19,
			"loop" : -1,
			"cpus" : [0],
			"phases" : {
				"p1" : {
					"loop" : 1,
					"resume" : "AudioOut",
					"timer" :  { "ref" : "tick", "period": 6000 }
				},
				"p2" : {
					"loop" : 4,
					"timer" :  { "ref" : "tick", "period": 6000 }
				}
			}
		},
		"AudioOut" : {
			"priority" : -19,
			"loop" : -1,
			"run" :  275,
			"resume" : "AudioTrack",
			"run" : 4725,
			"suspend" : "AudioOut"
		},
		"AudioTrack" : {
			"priority" : -16,
			"loop" : -1,
				"suspend" : "AudioTrack",
				"run" :  300,
				"resume" : "mp3.decoder"
		},
		"mp3.decoder" : {
			"priority" : -2,
			"loop" : -1,
				"suspend" : "mp3.decoder",
				"run" :  1000,
				"lock" : "mutex",
				"signal" : "queue",
				"wait" : { "ref" : "queue", "mutex": "mutex" },
				"unlock" : "mutex",
				"run" :  150
		},
		"OMXCall" : {
			"priority" : -2,
			"loop" : -1,
			"lock" : "mutex",
			"wait" : { "ref" : "queue", "mutex": "mutex" },
			"unlock" : "mutex",
			"run" :  300,
			"lock" : "mutex",
			"signal" : "queue",
			"unlock" : "mutex"
		}
	},
	"global" : {
		"default_policy" : "SCHED_OTHER",
		"duration" : 6,
		"gnuplot" : false,
		"logdir" : "./",
		"log_basename" : "mp3",
		"lock_pages" : true,
		"frag" : 1,
		"calibration" : "CPU0"
	}
}
"#;
