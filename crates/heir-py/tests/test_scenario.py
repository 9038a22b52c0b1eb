"""Scenarios: heir's reader and its errors, and the flags' changes."""

from __future__ import annotations

import json

import pytest

import heir
from conftest import example


def test_load_reads_the_bundled_example():
    s = heir.Scenario.load(example("table1-client-server.json"))
    assert s.task_names == ["Client1", "Client2", "Annoyer", "Server"]
    assert s.pi_cv is True
    assert s.duration_s == 60.0
    assert s.file.endswith("table1-client-server.json")


SMALL = {
    "global": {"duration": 1, "default_policy": "SCHED_FIFO"},
    "resources": {"m": {"type": "mutex"}},
    "tasks": {
        "hi": {"priority": 30, "delay": 1000, "lock": "m", "run": 2000, "unlock": "m", "timer": {"ref": "th", "period": 10000}},
        "lo": {"priority": 10, "lock": "m", "run": 5000, "unlock": "m", "timer": {"ref": "tl", "period": 20000}},
    },
}


def test_from_dict_is_the_same_scenario_as_the_file(tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    a = heir.simulate(heir.Scenario.load(path))
    b = heir.simulate(heir.Scenario.from_dict(SMALL))
    assert a.json == b.json
    # hi waits for lo's section (inheritance): 1 ms late, 4 ms + 2 ms.
    assert a.tasks["hi"].response_us.max == 6000.0
    assert a.tasks["hi"].jobs == 100


@pytest.mark.parametrize(
    "doc, path, line, column, words",
    [
        # A value of the wrong type: its JSON path and position.
        ({"tasks": {"a": {"run": "x"}}}, "tasks.a.run", 4, 14, "non-negative integer"),
        # An unknown policy.
        ({"tasks": {"a": {"policy": "SCHED_NOPE", "run": 10}}}, "tasks.a.policy", 4, 17, "SCHED_NOPE"),
    ],
)
def test_from_dict_errors_carry_file_line_column_and_json_path(doc, path, line, column, words):
    with pytest.raises(heir.ScenarioError) as ei:
        heir.Scenario.from_dict(doc, name="mine.json")
    e = ei.value
    assert (e.file, e.line, e.column, e.json_path) == ("mine.json", line, column, path)
    assert words in e.message
    assert str(e).startswith(f"mine.json:{line}:{column}: at {path}: ")
    assert isinstance(e, ValueError)


def test_load_errors_are_the_cli_messages(tmp_path):
    from conftest import run_heir

    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "tasks": {\n    "t": { "run": -5 }\n  }\n}\n')
    with pytest.raises(heir.ScenarioError) as ei:
        heir.Scenario.load(bad)
    e = ei.value
    assert (e.line, e.column, e.json_path) == (3, 19, "tasks.t.run")
    cli = run_heir(["sim", str(bad)])
    assert cli.returncode == 2
    assert str(e) in cli.stderr


def test_a_missing_file_is_a_scenario_error_without_position(tmp_path):
    with pytest.raises(heir.ScenarioError) as ei:
        heir.Scenario.load(tmp_path / "none.json")
    assert ei.value.line is None and ei.value.column is None
    assert "cannot read" in ei.value.message


def test_syntax_error_position():
    with pytest.raises(heir.ScenarioError) as ei:
        heir.Scenario.from_json('{"tasks": {"a": {"run": 10,,}}}', name="s.json")
    assert (ei.value.line, ei.value.column) == (1, 28)


def test_with_changes_return_new_scenarios():
    s = heir.Scenario.load(example("table1-client-server.json"))
    off = s.with_pi_cv(False)
    assert (s.pi_cv, off.pi_cv) == (True, False)
    short = s.with_duration(0.5)
    assert (s.duration_s, short.duration_s) == (60.0, 0.5)
    p = heir.Scenario.load(example("ipcp-t0-t1-t2-inherit.json")).with_protocol("ceiling")
    assert p.protocols == ["all=ceiling"]


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), 1e-9])
def test_bad_durations_are_refused(seconds):
    s = heir.Scenario.load(example("table1-client-server.json"))
    with pytest.raises(heir.ScenarioError, match="positive number"):
        s.with_duration(seconds)


def test_a_duration_beyond_the_limit_is_refused():
    s = heir.Scenario.load(example("table1-client-server.json"))
    with pytest.raises(heir.ScenarioError, match="time limit"):
        s.with_duration(1e12)


@pytest.mark.parametrize(
    "args, kwargs, words",
    [
        (("inherit",), {"mutex": "nope"}, "no mutex \"nope\""),
        (("fast",), {}, "expected NAME=P or all=P"),
        (("ceiling",), {"ceiling": 100}, "ceiling:1 to ceiling:99"),
    ],
)
def test_bad_protocols_are_refused(args, kwargs, words):
    s = heir.Scenario.load(example("ipcp-t0-t1-t2-inherit.json"))
    with pytest.raises(heir.ScenarioError, match=words):
        s.with_protocol(*args, **kwargs)


def test_with_protocol_spells_the_cli_overrides():
    s = heir.Scenario.load(example("ipcp-t0-t1-t2-inherit.json"))
    m = "R1"
    assert s.with_protocol("ceiling", ceiling=60).protocols == ["all=ceiling:60"]
    assert s.with_protocol("bwi").with_protocol("none", mutex=m).protocols == ["all=bwi", f"{m}=none"]
    with pytest.raises(ValueError, match="needs the protocol"):
        s.with_protocol("inherit", ceiling=5)
    # The command line's one-string spelling: deprecated, the same result.
    with pytest.warns(DeprecationWarning, match="with_protocol"):
        old = s.with_protocol("all=ceiling")  # type: ignore[arg-type]
    assert heir.simulate(old).json == heir.simulate(s.with_protocol("ceiling")).json


def test_errors_pickle_with_their_attributes():
    import pickle

    with pytest.raises(heir.ScenarioError) as ei:
        heir.Scenario.from_dict({"tasks": {"a": {"run": "x"}}})
    e = pickle.loads(pickle.dumps(ei.value))
    assert (type(e), e.json_path, e.line, str(e)) == (
        heir.ScenarioError,
        "tasks.a.run",
        ei.value.line,
        str(ei.value),
    )


def test_more_threads_than_heir_run_takes_are_read_as_heir_sim_reads_them(tmp_path):
    # heir run's limit is 1024 real threads; the package, like heir sim and
    # heir analyze, takes what the machine's memory holds.
    from conftest import run_heir

    doc = {
        "global": {"duration": 0.01, "default_policy": "SCHED_FIFO"},
        "tasks": {"w": {"instance": 1100, "priority": 10, "run": 1, "timer": {"ref": "unique", "period": 5000}}},
    }
    path = tmp_path / "many.json"
    path.write_text(json.dumps(doc))
    s = heir.Scenario.load(path)
    assert len(heir.Scenario.from_dict(doc).task_names) == 1
    r = heir.simulate(s)
    assert len(r.tasks) == 1100
    assert all((t.jobs, t.deadline_misses) == (2, 0) for t in r.tasks.values())
    cli = run_heir(["sim", "--json", str(path)])
    assert cli.returncode == 0, cli.stderr
    assert r.json == json.loads(cli.stdout)
    # Beyond any machine's memory: refused with heir sim's message.
    doc["tasks"]["w"]["instance"] = 4_000_000_000
    with pytest.raises(heir.ScenarioError) as ei:
        heir.Scenario.from_dict(doc)
    assert ei.value.json_path == "tasks.w.instance"
    assert "over heir sim's limit of" in ei.value.message
