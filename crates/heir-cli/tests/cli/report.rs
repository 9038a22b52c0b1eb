//! `heir report`: the page's sections and figures (the simulated ones are
//! `heir sim --json`'s), a missing real run said, and bad input refused
//! with nothing written.

use crate::support::*;

#[test]
fn the_page_has_every_section_and_the_simulators_figures() {
    let dir = TempDir::new("report");
    let page = dir.join("fig6.html");
    let file = example("fig6-producer-consumer.json");
    let o = heir([
        "report".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "1".as_ref(),
        "-o".as_ref(),
        page.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), format!("wrote {}", page.display()));
    let html = std::fs::read_to_string(&page).unwrap();
    for h in [
        "Settings compared",
        "Response times (ms)",
        "Response-time CDFs",
        "Schedules",
        "Boosts: who lent to whom",
    ] {
        assert!(html.contains(&format!("<h2>{h}</h2>")), "{h}");
    }
    assert!(
        html.contains("No real run"),
        "the missing real run is not said"
    );
    // The simulated mean of each task, PI-CV off then on, as heir sim says.
    for pi_cv in ["off", "on"] {
        let sim = heir([
            "sim".as_ref(),
            file.as_os_str(),
            "--duration".as_ref(),
            "1".as_ref(),
            "--pi-cv".as_ref(),
            pi_cv.as_ref(),
            "--json".as_ref(),
        ]);
        let r = one_json(&sim);
        for (name, t) in r["tasks"].as_object().unwrap() {
            let mean = t["response_us"]["mean"].as_f64().unwrap();
            let cell = format!("<td>{:.3}</td>", mean / 1000.0);
            assert!(html.contains(&cell), "{name}: {cell}");
        }
    }
    // PI-CV on: the producer is boosted by the consumer (the boosts table).
    assert!(
        html.contains("<tr><td class=\"l\">Consumer</td><td class=\"l\">Producer</td>"),
        "no Consumer → Producer boost"
    );
    // Two CDFs, two simulated Gantt charts with their own pattern ids.
    assert_eq!(html.matches("<svg class=\"chart cdf\"").count(), 2);
    assert_eq!(html.matches("<figure class=\"chart gantt\">").count(), 2);
    assert!(
        html.contains("id=\"s1-boost-0\""),
        "pattern ids not prefixed"
    );
}

#[test]
fn bad_input_writes_nothing() {
    let dir = TempDir::new("report-bad");
    let file = example("fig6-producer-consumer.json");
    for (args, want) in [
        (vec!["--real=-1"], "--real"),
        (vec!["--window", "0"], "--window"),
        (vec!["-o", "/nonexistent-dir/x.html"], "cannot create"),
    ] {
        let mut all = vec![
            "report".to_string(),
            file.display().to_string(),
            "--duration".into(),
            "0.2".into(),
        ];
        all.extend(args.iter().map(|s| s.to_string()));
        if !args.contains(&"-o") {
            all.push("-o".into());
            all.push(dir.join("r.html").display().to_string());
        }
        let o = heir(&all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

/// `heir report FILE --vary WHAT ARGS`: the page's setting headings, and
/// each setting's simulated mean per task as `heir sim FILE SIM_ARGS`
/// gives it, one `SIM_ARGS` per heading.
fn varied_page_matches_sim(file: &str, vary: &str, settings: &[(&str, &[&str])]) {
    let dir = TempDir::new("report-vary");
    let page = dir.join("page.html");
    let file = example(file);
    let o = heir([
        "report".as_ref(),
        file.as_os_str(),
        "--vary".as_ref(),
        vary.as_ref(),
        "--duration".as_ref(),
        "1".as_ref(),
        "-o".as_ref(),
        page.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let mut at = 0;
    for (label, sim_args) in settings {
        // The settings in the order given.
        let h = format!("<h3>{label}</h3>");
        let pos = html[at..]
            .find(&h)
            .unwrap_or_else(|| panic!("{h} after {at}"));
        at += pos + h.len();
        let mut args: Vec<&std::ffi::OsStr> = vec!["sim".as_ref(), file.as_os_str()];
        args.extend(
            ["--duration", "1", "--json"]
                .iter()
                .map(std::ffi::OsStr::new),
        );
        args.extend(sim_args.iter().map(std::ffi::OsStr::new));
        let r = one_json(&heir(args));
        for (name, t) in r["tasks"].as_object().unwrap() {
            let mean = t["response_us"]["mean"].as_f64().unwrap();
            let cell = format!("<td>{:.3}</td>", mean / 1000.0);
            assert!(html.contains(&cell), "{label}: {name}: {cell}");
        }
    }
    assert_eq!(
        html.matches("<svg class=\"chart cdf\"").count(),
        settings.len(),
        "one CDF per setting"
    );
}

#[test]
fn vary_gpm_compares_gang_priority_management_off_and_on() {
    varied_page_matches_sim(
        "gpm-fig1.json",
        "gpm",
        &[("GPM off", &["--gpm", "off"]), ("GPM on", &["--gpm", "on"])],
    );
}

#[test]
fn vary_protocol_gives_a_setting_per_protocol() {
    varied_page_matches_sim(
        "mbwi-fig2.json",
        "protocol=all=none,inherit,bwi",
        &[
            ("all=none", &["--protocol", "all=none"]),
            ("all=inherit", &["--protocol", "all=inherit"]),
            ("all=bwi", &["--protocol", "all=bwi"]),
        ],
    );
}

#[test]
fn vary_refuses_what_the_scenario_cannot_vary_and_writes_nothing() {
    let dir = TempDir::new("report-vary-bad");
    let page = dir.join("page.html");
    let file = example("fig6-producer-consumer.json");
    for (vary, says) in [
        ("gpm", "has no gang"),
        ("ipc", "has no RPC endpoint"),
        ("protocol=nope=none,inherit", "no mutex \"nope\""),
        ("protocol=all=none", "at least two protocols"),
        ("sideways", "expected pi-cv, gpm, ipc or protocol="),
    ] {
        let o = heir([
            "report".as_ref(),
            file.as_os_str(),
            "--vary".as_ref(),
            vary.as_ref(),
            "-o".as_ref(),
            page.as_os_str(),
        ]);
        assert_eq!(code(&o), 2, "{vary}");
        assert!(stderr(&o).contains(says), "{vary}: {}", stderr(&o));
        assert!(dir.files().is_empty(), "{vary}: wrote {:?}", dir.files());
    }
}

/// The page's "Priority inversions" section says, per setting, what `heir
/// inversions` finds in `heir sim --trace` of the same setting: the
/// Fig. 6 consumer inverted behind the annoyer with PI-CV off (its worst
/// wait first), none with PI-CV on.
#[test]
fn the_inversions_section_is_heir_inversions_of_each_setting() {
    let dir = TempDir::new("report-inversions");
    let page = dir.join("fig6.html");
    let file = example("fig6-producer-consumer.json");
    let o = heir([
        "report".as_ref(),
        file.as_os_str(),
        "--duration".as_ref(),
        "1".as_ref(),
        "-o".as_ref(),
        page.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let section = &html[html
        .find("<h2>Priority inversions</h2>")
        .expect("the section")..];
    let mut counts = Vec::new();
    for pi_cv in ["off", "on"] {
        let trace = dir.join(&format!("{pi_cv}.json"));
        let o = heir([
            "sim".as_ref(),
            file.as_os_str(),
            "--pi-cv".as_ref(),
            pi_cv.as_ref(),
            "--duration".as_ref(),
            "1".as_ref(),
            "--trace".as_ref(),
            trace.as_os_str(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let o = heir(["inversions".as_ref(), trace.as_os_str(), "--json".as_ref()]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let (waits, n) = (
            v["waits"].as_u64().unwrap(),
            v["inversions"].as_array().unwrap().len(),
        );
        let line = format!(
            "<h3>PI-CV {pi_cv}, simulated</h3>\n<p>{waits} waits, {n} priority inversions;"
        );
        assert!(section.contains(&line), "{line}\n{section}");
        if let Some(first) = v["inversions"].get(0) {
            let row = format!(
                "<tr><td class=\"l\">{}</td><td class=\"l\">{} (condvar)</td><td class=\"l\">{}</td>",
                first["waiter"].as_str().unwrap(),
                first["resource"].as_str().unwrap(),
                first["waited_for"][0].as_str().unwrap()
            );
            assert!(section.contains(&row), "{row}\n{section}");
        }
        counts.push(n);
    }
    assert!(counts[0] > 0 && counts[1] == 0, "{counts:?}");
}
