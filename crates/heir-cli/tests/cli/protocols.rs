//! `--protocol NAME=P` / `all=P` on `sim` and `analyze`: one file compared
//! under each protocol without editing it.

use crate::support::*;

fn sim_json(file: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<std::ffi::OsString> = vec!["sim".into(), file.into(), "--json".into()];
    args.extend(extra.iter().map(|s| s.into()));
    let o = heir(args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    one_json(&o)
}

#[test]
fn the_ceiling_file_under_all_inherit_is_the_inherit_file() {
    let ceiling = example("ipcp-t0-t1-t2-ceiling.json");
    let inherit = example("ipcp-t0-t1-t2-inherit.json");
    let overridden = sim_json(&ceiling, &["--protocol", "all=inherit"]);
    assert_eq!(overridden["tasks"], sim_json(&inherit, &[])["tasks"]);
    // And back: inherit → ceiling, with the ceilings derived from the
    // highest locker (R1: T0 at 70, R2: T1 at 65), is the ceiling file.
    let back = sim_json(&inherit, &["--protocol", "all=ceiling"]);
    assert_eq!(back["tasks"], sim_json(&ceiling, &[])["tasks"]);
    // T0's response: 17 ms under the ceiling, 64 ms with inheritance.
    assert_eq!(back["tasks"]["T0"]["response_us"]["max"], 17000.0);
    assert_eq!(overridden["tasks"]["T0"]["response_us"]["max"], 64000.0);
}

#[test]
fn later_overrides_win_and_the_header_says_so() {
    let ceiling = example("ipcp-t0-t1-t2-ceiling.json");
    let o = heir([
        "sim".as_ref(),
        ceiling.as_os_str(),
        "--protocol".as_ref(),
        "all=inherit".as_ref(),
        "--protocol".as_ref(),
        "R2=ceiling:65".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.ends_with("pi_cv on, protocols all=inherit R2=ceiling:65")),
        "{out}"
    );
    let o = heir([
        "analyze".as_ref(),
        ceiling.as_os_str(),
        "--protocol".as_ref(),
        "all=none".as_ref(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("as written (PI-CV on), protocols all=none;"));
}

#[test]
fn bad_overrides_exit_2_with_nothing_on_stdout() {
    let ceiling = example("ipcp-t0-t1-t2-ceiling.json");
    for (arg, says) in [
        (
            "zz=none",
            "the scenario has no mutex \"zz\" (its mutexes: R1, R2)",
        ),
        ("R1=fast", "expected NAME=P or all=P"),
        ("R1=ceiling:100", "ceiling:1 to ceiling:99"),
    ] {
        for cmd in ["sim", "analyze"] {
            let o = heir([
                cmd.as_ref(),
                ceiling.as_os_str(),
                "--protocol".as_ref(),
                arg.as_ref(),
            ]);
            assert_eq!(code(&o), 2, "{cmd} {arg}");
            assert!(stdout(&o).is_empty(), "{cmd} {arg}");
            assert!(stderr(&o).contains(says), "{cmd} {arg}: {}", stderr(&o));
        }
    }
}
