"""heir.analyze and heir.generate: the values of the Rust tests, the CLI's
JSON, errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

import heir
from conftest import example, run_heir

TABLE1 = example("table1-client-server.json")


def test_table1_bounds_match_the_rust_tests():
    # crates/heir-cli/tests/analyze.rs and heir-analysis's doc example.
    a = heir.analyze(heir.Scenario.load(TABLE1))
    assert a.schedulable
    assert a.tasks["Client1"].wcrt_us == 19_000.0
    assert a.tasks["Client2"].wcrt_us == 29_000.0
    assert a.tasks["Annoyer"].wcrt_us == 39_000.0
    assert a.tasks["Client1"].blocking_us == 4_500.0
    assert a.tasks["Client2"].deadline_us == 50_000.0
    assert a.protocol == "as written (PI-CV on)"


@pytest.mark.parametrize(
    "file, flags, kwargs",
    [
        ("table1-client-server.json", [], {}),
        ("table1-client-server.json", ["--protocol", "inherit"], {"protocol": "inherit"}),
        ("ipcp-t0-t1-t2-ceiling.json", [], {}),
        ("mbwi-fig5.json", [], {}),
    ],
)
def test_the_json_is_heir_analyze_json(file, flags, kwargs):
    a = heir.analyze(heir.Scenario.load(example(file)), **kwargs)
    cli = run_heir(["analyze", "--json", str(example(file)), *flags])
    assert cli.returncode == 0, cli.stderr
    assert a.json == json.loads(cli.stdout)


def test_pi_cv_off_is_not_better():
    s = heir.Scenario.load(TABLE1)
    on = heir.analyze(s.with_pi_cv(True))
    off = heir.analyze(s.with_pi_cv(False))
    assert off.protocol == "as written (PI-CV off)"
    for name in ("Client1", "Client2"):
        b_off = off.tasks[name].wcrt_us
        assert b_off is None or b_off >= on.tasks[name].wcrt_us


def test_to_pandas():
    df = heir.analyze(heir.Scenario.load(TABLE1)).to_pandas()
    assert list(df.index) == ["Client1", "Client2", "Annoyer"]
    assert df.loc["Client2", "wcrt_us"] == 29_000.0


def test_a_scenario_outside_the_model_is_an_analysis_error():
    # A condvar wait is outside the analysed model (heir analyze exits 2).
    path = example("cond-wait-textbook.json")
    with pytest.raises(heir.AnalysisError) as ei:
        heir.analyze(heir.Scenario.load(path))
    cli = run_heir(["analyze", str(path)])
    assert cli.returncode == 2
    assert str(ei.value) in cli.stderr
    assert ei.value.json_path


def test_an_unknown_protocol_family_is_a_value_error():
    with pytest.raises(ValueError, match="unknown protocol"):
        heir.analyze(heir.Scenario.load(TABLE1), protocol="magic")


def test_generate_is_reproducible_and_as_asked():
    a = heir.generate(10, 0.6, seed=3)
    b = heir.generate(10, 0.6, seed=3)
    c = heir.generate(10, 0.6, seed=4)
    assert a.tasks == b.tasks and a.tasks != c.tasks
    assert len(a) == 10
    assert abs(a.utilisation - 0.6) < 0.01
    # Rate-monotonic, distinct priorities.
    periods = [t.period_us for t in a.tasks.values()]
    assert periods == sorted(periods)
    prios = [t.priority for t in a.tasks.values()]
    assert prios == sorted(prios, reverse=True) and len(set(prios)) == 10
    r = heir.generate(8, 0.5, generator="randfixedsum", seed=1, resources=2, servers=0)
    assert len(r.mutexes) == 2 and r.servers == {}
    assert all(t.calls == () for t in r.tasks.values())
    # Two RPC servers unless told otherwise.
    assert len(a.servers) == 2


def test_a_generated_set_is_analysed_and_simulated():
    ts = heir.generate(5, 0.3, seed=11, servers=1, call_probability=1.0)
    a_inherit = heir.analyze(ts, "inherit")
    a_picv = heir.analyze(ts, "pi-cv")
    assert a_picv.protocol == "pi-cv"
    assert set(a_inherit.tasks) == set(ts.tasks)
    # The scenario it runs as: the analysis of the scenario is the set's.
    sc = ts.to_scenario(duration_s=2.0)
    assert heir.analyze(sc).tasks.keys() == a_picv.tasks.keys()
    rep = heir.simulate(sc)
    assert set(ts.tasks) <= set(rep.tasks)
    for name, bound in heir.analyze(sc).tasks.items():
        if bound.wcrt_us is not None and rep.tasks[name].response_us.max is not None:
            assert rep.tasks[name].response_us.max <= bound.wcrt_us


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n_tasks": 0, "utilisation": 0.5}, "n_tasks"),
        ({"n_tasks": 5, "utilisation": 0.0}, "utilisation"),
        ({"n_tasks": 5, "utilisation": 0.5, "generator": "magic"}, "generator"),
        ({"n_tasks": 5, "utilisation": 0.5, "access_probability": 2.0}, "probability"),
        ({"n_tasks": 5, "utilisation": 0.5, "cs_us": (10, 1)}, "cs_us"),
    ],
)
def test_generate_refuses_bad_parameters(kwargs, words):
    with pytest.raises(ValueError, match=words):
        heir.generate(**kwargs)


SLOW_ANALYSIS = r'''
import sys, heir
n = 200
tasks = {
    f"T{k}": {"priority": 50, "cpus": [0], "run": 1000 + k,
              "timer": {"ref": f"t{k}", "period": n * (1000 + k)}}
    for k in range(n)
}
# One priority level at utilisation exactly 1: every busy window runs to
# the step limit (minutes of work in all).
s = heir.Scenario.from_dict({"global": {"duration": 1, "default_policy": "SCHED_FIFO"}, "tasks": tasks})
print("started", flush=True)
try:
    heir.analyze(s)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(0)
print("done", flush=True)
'''


def test_analyze_is_interrupted_by_ctrl_c(tmp_path):
    # In a subprocess: SIGINT a second after a long analysis starts; the
    # KeyboardInterrupt must come within a few seconds (it used to be
    # ignored until the analysis ended).
    script = tmp_path / "slow.py"
    script.write_text(SLOW_ANALYSIS)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "started\n"
        time.sleep(1.0)
        assert p.poll() is None, "the analysis ended before the signal: not long enough"
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        assert time.monotonic() - sent < 5.0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert (out, p.returncode) == ("interrupted\n", 0), err


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), 1e-7])
def test_to_scenario_checks_the_duration_as_with_duration(seconds):
    # One rule for durations everywhere: the same error type and words.
    ts = heir.generate(3, 0.5, generator="uunifast", seed=1)
    with pytest.raises(heir.ScenarioError) as from_set:
        ts.to_scenario(seconds)
    with pytest.raises(heir.ScenarioError) as from_scenario:
        ts.to_scenario(1.0).with_duration(seconds)
    assert from_set.value.message == from_scenario.value.message
    assert "expected seconds as a positive number (at least 1 µs)" in from_set.value.message


def test_uunifast_draws_the_total_asked_above_one():
    # UUniFast-Discard: 3.0 requested on 3 tasks is 3.0 drawn (it was 2.19).
    for total in (1.5, 2.5, 3.0):
        ts = heir.generate(3, total, generator="uunifast", seed=4)
        assert abs(ts.utilisation - total) < 0.01
        assert all(t.utilisation <= 1.0 for t in ts.tasks.values())
