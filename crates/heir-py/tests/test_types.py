"""Typed end to end: results read once into dataclasses, the Literal
vocabularies equal to the command line's, one spelling, mypy --strict."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

import heir
from heir import _heir
from conftest import ROOT, example, run_heir

PACKAGE = ROOT / "crates" / "heir-py"
TABLE1 = example("table1-client-server.json")
IPCP = example("ipcp-t0-t1-t2-inherit.json")


def test_the_literal_types_are_the_rust_lists() -> None:
    assert get_args(heir.MutexProtocol) == tuple(_heir.MUTEX_PROTOCOLS)
    assert get_args(heir.AnalysisProtocol) == tuple(_heir.ANALYSIS_PROTOCOLS)
    assert get_args(heir.Generator) == tuple(_heir.GENERATORS)


@pytest.mark.parametrize("protocol", get_args(heir.MutexProtocol))
def test_every_mutex_protocol_is_heir_sim_protocols(protocol: str) -> None:
    # The same name means the same change in Python and on the command line.
    r = heir.simulate(heir.Scenario.load(IPCP).with_protocol(protocol))  # type: ignore[arg-type]
    cli = run_heir(["sim", "--json", str(IPCP), "--protocol", f"all={protocol}"])
    assert cli.returncode == 0, cli.stderr
    assert r.json == json.loads(cli.stdout)


@pytest.mark.parametrize("protocol", get_args(heir.AnalysisProtocol))
def test_every_analysis_protocol_is_heir_analyze_protocols(protocol: str) -> None:
    a = heir.analyze(heir.Scenario.load(TABLE1), protocol)  # type: ignore[arg-type]
    cli = run_heir(["analyze", "--json", str(TABLE1), "--protocol", protocol])
    assert cli.returncode == 0, cli.stderr
    assert a.json == json.loads(cli.stdout)
    assert a.protocol == protocol


@pytest.mark.parametrize("generator", get_args(heir.Generator))
def test_every_generator_draws(generator: str) -> None:
    ts = heir.generate(6, 0.5, generator=generator, seed=2)  # type: ignore[arg-type]
    assert len(ts) == 6 and abs(ts.utilisation - 0.5) < 0.01


def test_results_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    r = heir.simulate(heir.Scenario.load(TABLE1).with_duration(1))
    a = heir.analyze(heir.Scenario.load(TABLE1))
    ts = heir.generate(5, 0.4, seed=1)

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("a result was parsed again")

    monkeypatch.setattr(json, "loads", no_parsing)
    for _ in range(2):
        assert r.tasks["Client1"].jobs == 25
        assert a.tasks["Client1"].wcrt_us == 19_000.0
        assert len(ts.tasks) == 5 and ts.utilisation > 0
    assert r.tasks is r.tasks and a.tasks is a.tasks and ts.tasks is ts.tasks
    # Short reprs: the names, not every field of every task.
    assert repr(r) == f"Report({r.title!r}, tasks=['Client1', 'Client2', 'Annoyer', 'Server'])"
    assert repr(a) == "Analysis('as written (PI-CV on)', schedulable=True, tasks=['Client1', 'Client2', 'Annoyer'])"


def test_every_result_is_a_dataclass_by_name() -> None:
    r = heir.simulate(heir.Scenario.load(example("gpm-fig1.json")))
    a = heir.analyze(heir.Scenario.load(TABLE1))
    ts = heir.generate(5, 0.4, seed=1, servers=1, call_probability=1.0, resources=2, access_probability=1.0)
    for objects, kind in (
        (r.tasks, heir.TaskStats),
        (a.tasks, heir.TaskBound),
        (ts.tasks, heir.GeneratedTask),
        (ts.servers, heir.RpcServer),
        (ts.mutexes, heir.GeneratedMutex),
        (r.gangs, heir.GangStats),
    ):
        assert objects, kind
        for name, o in objects.items():
            assert type(o) is kind and dataclasses.is_dataclass(o)
            assert getattr(o, "name") == name
    assert dataclasses.is_dataclass(r) and dataclasses.is_dataclass(a)
    # The gang of GPM's Fig. 1: one run, S waited 3 ms for it.
    g = r.gangs["G"]
    assert (g.runs, g.failed_runs, g.waiters["S"].completed, g.waiters["S"].latency_us.max) == (1, 0, 1, 3000.0)
    t = next(iter(ts.tasks.values()))
    assert all(type(c) is heir.Call and c.server in ts.servers for c in t.calls)
    assert all(type(c) is heir.Section and c.mutex in ts.mutexes for c in t.sections)
    # Frozen.
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.tasks["Client1"].wcrt_us = 0.0  # type: ignore[misc]


def test_deadline_threads_have_their_server_and_others_none() -> None:
    r = heir.simulate(heir.Scenario.load(example("edf-constrained.json")))
    servers = {n: t.server for n, t in r.tasks.items()}
    assert any(s is not None for s in servers.values())
    for n, s in servers.items():
        j = r.json["tasks"][n].get("server")
        assert (s is None) == (j is None)
        if s is not None:
            assert (s.throttled, s.replenished) == (j["throttled"], j["replenished"])


def test_the_old_spellings_warn_and_still_work() -> None:
    ts = heir.generate(5, 0.4, seed=1)
    with pytest.warns(DeprecationWarning, match="utilisation"):
        assert ts.utilization == ts.utilisation
    with pytest.warns(DeprecationWarning, match="utilisation"):
        old = heir.generate(5, utilization=0.4, seed=1)
    assert old.tasks == ts.tasks
    with pytest.raises(TypeError, match="utilisation"):
        heir.generate(5)


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("mypy", path=os.path.dirname(sys.executable)) is None:
        try:
            import mypy  # noqa: F401
        except ImportError:
            if os.environ.get("CI") == "true":
                pytest.fail("mypy is missing under CI=true (crates/heir-py/requirements-test.txt)")
            pytest.skip("mypy is not installed")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", str(PACKAGE / "pyproject.toml"), *args],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_mypy_strict_passes_on_the_package_and_its_stubs() -> None:
    out = mypy("python/heir")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict_passes_on_the_examples_and_the_docs(tmp_path: Path) -> None:
    # examples/python, and docs/PYTHON.md's blocks as scripts (against the
    # installed package: its py.typed and stubs).
    from test_docs import python_block

    (tmp_path / "doc_api.py").write_text(python_block("## API", "heir.Scenario.load"))
    (tmp_path / "doc_dask.py").write_text(python_block("## Sweeps on Dask", "LocalCluster("))
    out = mypy(str(ROOT / "examples" / "python"), str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues found in 3 source files" in out.stdout


def test_the_stubs_are_the_native_module(tmp_path: Path) -> None:
    # mypy's stubtest: every name, class and signature of heir/_heir.pyi
    # against the built extension (PyO3 gives each its text signature).
    mypy("--version")
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "heir._heir"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
