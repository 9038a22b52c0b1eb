"""examples/python/: run as scripts, as a user would."""

from __future__ import annotations

import csv
import subprocess
import sys

from conftest import ROOT


def test_table2_script_reproduces_the_pi_cv_papers_table_ii(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples/python/table2.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "PI-CV paper, Table II" in out.stdout
    with open(tmp_path / "table2.csv") as f:
        rows = {(r["setting"], r["client"]): r for r in csv.DictReader(f)}
    # The simulated maxima of the Rust tests and the analytic bounds.
    assert rows[("PI-CV", "Client1")]["max_ms"] == "14.500"
    assert rows[("PI-CV", "Client2")]["max_ms"] == "29.000"
    assert rows[("No PI-CV", "Client1")]["max_ms"] == "34.500"
    assert rows[("No PI-CV", "Client2")]["max_ms"] == "39.000"
    # Each row's bound is its own setting's: without PI-CV there is none
    # (not the PI-CV bound, which the simulated maxima exceed).
    assert rows[("PI-CV", "Client1")]["bound_ms"] == "19.000"
    assert rows[("PI-CV", "Client2")]["bound_ms"] == "29.000"
    assert rows[("No PI-CV", "Client1")]["bound_ms"] == "unbounded"
    assert rows[("No PI-CV", "Client2")]["bound_ms"] == "unbounded"
    for r in rows.values():
        if r["bound_ms"] != "unbounded":
            assert float(r["max_ms"]) <= float(r["bound_ms"])
    png = (tmp_path / "table2-cdf.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
