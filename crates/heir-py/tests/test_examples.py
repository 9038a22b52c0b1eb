"""examples/python/: run as scripts, as a user would."""

from __future__ import annotations

import csv
import subprocess
import sys

from conftest import ROOT


def test_table2_script_reproduces_picv_table_ii(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples/python/table2.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "The PI-CV paper's Table II" in out.stdout
    with open(tmp_path / "table2.csv") as f:
        rows = {(r["setting"], r["client"]): r for r in csv.DictReader(f)}
    # The simulated maxima of the Rust tests and the analytic bounds.
    assert rows[("PI-CV", "Client1")]["max_ms"] == "14.500"
    assert rows[("PI-CV", "Client2")]["max_ms"] == "29.000"
    assert rows[("No PI-CV", "Client1")]["max_ms"] == "34.500"
    assert rows[("No PI-CV", "Client2")]["max_ms"] == "39.000"
    assert rows[("PI-CV", "Client1")]["bound_ms"] == "19.000"
    assert rows[("PI-CV", "Client2")]["bound_ms"] == "29.000"
    png = (tmp_path / "table2-cdf.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
