//! Reader warnings go to stderr; stdout keeps exactly one JSON object.

use crate::support::*;

#[test]
fn an_unknown_global_key_is_a_warning_on_stderr() {
    let dir = TempDir::new("warn");
    let file = dir.write(
        "w.json",
        r#"{
  "global" : {
    "duration" : 0.1,
    "frag" : 3
  },
  "tasks" : {
    "A" : { "run" : 1000, "timer" : { "ref" : "t", "period" : 10000 } }
  }
}
"#,
    );
    let o = heir(["sim".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    let prefix = format!("heir: warning: {}:4:5: global.frag: ", file.display());
    assert!(err.starts_with(&prefix), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let r = one_json(&o);
    // Released every 10 ms over 100 ms.
    assert_eq!(r["tasks"]["A"]["jobs"], 10);
    assert_eq!(r["tasks"]["A"]["response_us"]["max"].as_f64(), Some(1000.0));
}
