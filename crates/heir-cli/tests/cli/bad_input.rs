//! Bad input: exit 2, the error (file:line:col) on stderr, nothing on
//! stdout, and no output file created.

use crate::support::*;

/// Runs `heir sim FILE --trace --svg` on `text` (written as `bad.json`) and
/// checks the bad-input contract; returns stderr.
fn rejected(tag: &str, text: &str) -> String {
    let dir = TempDir::new(tag);
    let file = dir.write("bad.json", text);
    let o = heir([
        "sim".as_ref(),
        file.as_os_str(),
        "--trace".as_ref(),
        dir.join("out.json").as_os_str(),
        "--svg".as_ref(),
        dir.join("out.svg").as_os_str(),
    ]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "stderr: {err}");
    assert_eq!(stdout(&o), "", "nothing on stdout");
    assert_eq!(
        dir.files(),
        ["bad.json"],
        "no output file, not even a temporary one"
    );
    assert!(err.starts_with("heir: error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn missing_colon() {
    let err = rejected(
        "colon",
        r#"{
  "tasks" : {
    "A" : {
      "run" 10000
    }
  }
}
"#,
    );
    // Column 12: just after the key, where the colon should be.
    assert!(
        err.contains("bad.json:4:12: at tasks.A: expected ':' after key \"run\""),
        "{err}"
    );
}

#[test]
fn unknown_and_unsupported_events() {
    let err = rejected(
        "fork",
        r#"{
  "global" : { "duration" : 1 },
  "tasks" : {
    "A" : {
      "run" : 1000,
      "fork" : "B"
    }
  }
}
"#,
    );
    assert!(
        err.contains("bad.json:6:7: at tasks.A.fork: event \"fork\" is not modelled by heir"),
        "{err}"
    );

    let err = rejected(
        "jump",
        r#"{
  "global" : { "duration" : 1 },
  "tasks" : {
    "A" : {
      "run" : 1000,
      "jump" : 3
    }
  }
}
"#,
    );
    assert!(
        err.contains("bad.json:6:7: at tasks.A.jump: unknown key \"jump\" in task \"A\""),
        "{err}"
    );
}

#[test]
fn one_name_used_as_two_kinds_of_resource() {
    let err = rejected(
        "kinds",
        r#"{
  "global" : { "duration" : 1 },
  "tasks" : {
    "A" : { "lock" : "m", "run" : 100, "unlock" : "m" },
    "B" : { "signal" : "m", "run" : 100 }
  }
}
"#,
    );
    // Where the second use is: B's signal value "m" (line 5, column 24).
    assert!(
        err.contains(
            "bad.json:5:24: at tasks.B.signal: \"m\" is used as a mutex at tasks.A.lock \
             and as a cond at tasks.B.signal"
        ),
        "{err}"
    );
}

#[test]
fn negative_period() {
    let err = rejected(
        "period",
        r#"{
  "global" : { "duration" : 1 },
  "tasks" : {
    "A" : {
      "run" : 1000,
      "timer" : { "ref" : "t", "period" : -5 }
    }
  }
}
"#,
    );
    // Column 43: the value -5.
    assert!(
        err.contains("bad.json:6:43: at tasks.A.timer.period: period must be positive"),
        "{err}"
    );
}

#[test]
fn a_scenario_the_simulator_refuses() {
    // Loops forever and no duration anywhere: the simulator says so.
    let err = rejected("forever", r#"{ "tasks" : { "A" : { "run" : 1000 } } }"#);
    assert!(
        err.contains("bad.json: cannot simulate: global.duration: "),
        "{err}"
    );
    assert!(
        err.contains("set global.duration or pass --duration"),
        "{err}"
    );
}

#[test]
fn an_unreadable_file() {
    let dir = TempDir::new("missing");
    let missing = dir.join("nope.json");
    let o = heir(["sim".as_ref(), missing.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(
        err.contains("cannot read") && err.contains("nope.json"),
        "{err}"
    );
}

#[test]
fn bad_flags() {
    let file = example("table1-client-server.json");
    for flags in [
        &["--pi-cv", "maybe"][..],
        &["--duration", "-1"],
        &["--duration=-1"],
        &["--duration", "0"],
        &["--duration", "soon"],
        &["--seed", "-3"],
        &["--no-such-flag"],
    ] {
        let mut args = vec!["sim".to_string(), file.display().to_string()];
        args.extend(flags.iter().map(|s| s.to_string()));
        let o = heir(&args);
        assert_eq!(code(&o), 2, "{flags:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{flags:?}");
    }
}

#[test]
fn an_output_path_that_cannot_be_created() {
    let dir = TempDir::new("nodir");
    let o = heir([
        "sim".as_ref(),
        example("table1-client-server.json").as_os_str(),
        "--trace".as_ref(),
        dir.join("no/such/dir/t.json").as_os_str(),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("cannot create"), "{}", stderr(&o));
}

#[test]
fn bwi_affinity_that_is_not_a_bool() {
    let err = rejected(
        "bwi-affinity",
        r#"{
  "global" : { "duration" : 1, "bwi_affinity" : "off" },
  "tasks" : { "A" : { "run" : 1000 } }
}
"#,
    );
    // Column 49: the value "off".
    assert!(
        err.contains(
            "bad.json:2:49: at global.bwi_affinity: expected true or false, found \"off\""
        ),
        "{err}"
    );
}

#[test]
fn donation_model_mistakes() {
    // A timeout without the donation model.
    let err = rejected(
        "timeout",
        r#"{
  "tasks" : {
    "S" : { "serve" : "e" },
    "A" : { "call" : { "server" : "e", "run" : 100, "timeout" : 50 } }
  }
}
"#,
    );
    assert!(
        err.contains(
            "bad.json:4:53: at tasks.A.call.timeout: a call's \"timeout\" needs the donation \
             model: set \"ipc\": \"donation\" in global"
        ),
        "{err}"
    );
    // A handler that ends holding its mutex.
    let err = rejected(
        "handler",
        r#"{
  "global" : { "ipc" : "donation" },
  "tasks" : {
    "S" : { "passive" : true, "serve" : "e" },
    "A" : { "call" : { "server" : "e", "run" : 100, "lock" : "m", "sleep" : 50 } }
  }
}
"#,
    );
    assert!(
        err.contains(
            "bad.json:5:22: at tasks.A.call: this handler ends holding mutex \"m\" (locked at \
             tasks.A.call.lock): unlock \"m\" before the handler ends, the server replies \
             without it"
        ),
        "{err}"
    );
    // A passive task that does more than serve.
    let err = rejected(
        "passive",
        r#"{
  "global" : { "ipc" : "donation" },
  "tasks" : {
    "S" : { "passive" : true, "serve" : "e", "run" : 10 },
    "A" : { "call" : { "server" : "e", "run" : 100 } }
  }
}
"#,
    );
    assert!(
        err.contains(
            "bad.json:4:25: at tasks.S.passive: task \"S\" is passive (it runs only on donated \
             time): its events must all be \"serve\", but tasks.S.run is not"
        ),
        "{err}"
    );
}
