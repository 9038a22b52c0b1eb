"""heir.simulate: the values of the Rust tests, the CLI's report, the
outputs, determinism, interruption."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

import heir
from conftest import example, run_heir

TABLE1 = example("table1-client-server.json")


def maxima(report: heir.Report) -> dict:
    return {n: t.response_us.max for n, t in report.tasks.items()}


def test_table1_pi_cv_on_matches_the_rust_tests():
    # crates/heir-sim/tests/sim/examples.rs
    r = heir.simulate(heir.Scenario.load(TABLE1))
    c1, c2 = r.tasks["Client1"], r.tasks["Client2"]
    assert (c1.jobs, c1.deadline_misses, c1.response_us.max) == (1500, 0, 14_500.0)
    assert (c2.jobs, c2.deadline_misses, c2.response_us.max) == (1200, 0, 29_000.0)
    assert r.duration_us == 60_000_000.0
    assert r.deadlock is None and r.cpus == 1 and r.mode == "sim"


def test_table1_pi_cv_off_is_worse_as_in_the_rust_tests():
    s = heir.Scenario.load(TABLE1)
    off = maxima(heir.simulate(s.with_pi_cv(False)))
    on = maxima(heir.simulate(s.with_pi_cv(True)))
    assert (off["Client1"], off["Client2"]) == (34_500.0, 39_000.0)
    for name in ("Client1", "Client2"):
        assert off[name] > on[name]


def test_critical_instant_reaches_18999_us():
    r = heir.simulate(heir.Scenario.load(example("table1-critical-instant.json")))
    assert maxima(r)["Client1"] == 18_999.0
    assert maxima(r)["Client2"] == 29_000.0


@pytest.mark.parametrize(
    "file, expected",
    [
        ("ipcp-t0-t1-t2-inherit.json", {"T0": 64_000.0, "T1": 66_000.0, "T2": 68_000.0}),
        ("ipcp-t0-t1-t2-ceiling.json", {"T0": 17_000.0, "T1": 66_000.0, "T2": 68_000.0}),
    ],
)
def test_ipcp_examples(file, expected):
    r = heir.simulate(heir.Scenario.load(example(file)))
    for name, mx in expected.items():
        t = r.tasks[name]
        assert (t.jobs, t.deadline_misses, t.response_us.min, t.response_us.max) == (5, 0, mx, mx)


@pytest.mark.parametrize(
    "file, flags, change",
    [
        ("table1-client-server.json", [], lambda s: s),
        ("table1-client-server.json", ["--pi-cv", "off", "--duration", "3"], lambda s: s.with_pi_cv(False).with_duration(3)),
        ("ipcp-t0-t1-t2-inherit.json", ["--protocol", "all=ceiling"], lambda s: s.with_protocol("ceiling")),
        ("fig6-producer-consumer.json", ["--seed", "7"], lambda s: s),
        ("gpm-fig1.json", ["--gpm", "off"], lambda s: s.with_gpm(False)),
        ("mbwi-fig6.json", [], lambda s: s),
    ],
)
def test_the_report_is_heir_sim_json(file, flags, change):
    seed = int(flags[flags.index("--seed") + 1]) if "--seed" in flags else None
    r = heir.simulate(change(heir.Scenario.load(example(file))), seed=seed)
    cli = run_heir(["sim", "--json", str(example(file)), *flags])
    assert cli.returncode == 0, cli.stderr
    assert r.json == json.loads(cli.stdout)


def test_deadlock_is_reported_not_raised():
    r = heir.simulate(heir.Scenario.load(example("deadlock-two-locks.json")))
    assert r.deadlock is not None
    d = r.deadlock
    assert d.kind == "deadlock" and d.cycle[0] == d.cycle[-1] and len(d.cycle) == 5
    assert d.at_us == r.json["deadlock"]["at_us"]
    cli = run_heir(["sim", "--json", str(example("deadlock-two-locks.json"))])
    assert cli.returncode == 3
    assert r.json == json.loads(cli.stdout)


def test_same_seed_same_report_other_seed_other_report():
    s = heir.Scenario.load(example("fig6-producer-consumer.json"))
    assert heir.simulate(s, seed=5).json == heir.simulate(s, seed=5).json


def test_to_pandas_has_a_row_per_thread():
    df = heir.simulate(heir.Scenario.load(TABLE1)).to_pandas()
    assert list(df.index) == ["Client1", "Client2", "Annoyer", "Server"]
    assert df.loc["Client2", "max_us"] == 29_000.0
    assert df.loc["Client1", "jobs"] == 1500
    assert (df["deadline_misses"] == 0).all()


def test_response_times_are_every_job():
    r = heir.simulate(heir.Scenario.load(TABLE1).with_duration(6))
    every = r.response_times()
    # One type: a dict by thread name, every thread of the report.
    assert list(every) == list(r.tasks)
    c2 = every["Client2"]
    assert len(c2) == r.tasks["Client2"].jobs == 120
    assert max(c2) == r.tasks["Client2"].response_us.max == 29_000.0
    assert min(c2) == r.tasks["Client2"].response_us.min
    # Simulated once, then kept.
    assert r.response_times() is every


def test_trace_and_svg_are_the_cli_files(tmp_path):
    s = heir.Scenario.load(TABLE1).with_duration(1)
    r = heir.simulate(s)
    r.trace(tmp_path / "py.json")
    r.svg(tmp_path / "py.svg")
    cli = run_heir(
        ["sim", str(TABLE1), "--duration", "1", "--trace", str(tmp_path / "cli.json"), "--svg", str(tmp_path / "cli.svg")]
    )
    assert cli.returncode == 0, cli.stderr
    # The CLI names the file as given: the same path gives the same title.
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert (tmp_path / "py.svg").read_text() == (tmp_path / "cli.svg").read_text()
    assert [p.name for p in sorted(tmp_path.iterdir())] == ["cli.json", "cli.svg", "py.json", "py.svg"]


def test_a_scenario_the_simulator_refuses_is_a_simulation_error():
    s = heir.Scenario.load(TABLE1)
    with pytest.raises(heir.SimulationError) as ei:
        heir.simulate(s, cpus=1_000_000)
    assert isinstance(ei.value, heir.ScenarioError)


def test_simulate_is_interrupted_by_ctrl_c():
    # A long run (92 simulated days: minutes of work); SIGINT shortly after it starts.
    s = heir.Scenario.load(TABLE1).with_duration(8_000_000)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            heir.simulate(s)
    finally:
        timer.cancel()


def test_the_gil_is_released_while_simulating():
    # A Python thread keeps counting while Rust simulates: with the GIL
    # held for the whole call it could not count at all.
    s = heir.Scenario.load(TABLE1).with_duration(120)
    count = [0]
    stop = threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=counter)
    t.start()
    try:
        before = count[0]
        r = heir.simulate(s)
        during = count[0] - before
    finally:
        stop.set()
        t.join()
    assert r.tasks["Client1"].jobs == 3000
    assert during > 1000, during
