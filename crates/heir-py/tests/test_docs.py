"""docs/PYTHON.md's code blocks, run as they stand: the API example and the
Dask snippet (as a script: LocalCluster's worker processes import it
again, so it needs its `if __name__ == "__main__":` guard)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import heir
from conftest import EXAMPLES, ROOT

DOC = ROOT / "docs" / "PYTHON.md"


def python_block(section: str, containing: str) -> str:
    """The first ```python block after the heading `section` of
    docs/PYTHON.md that contains `containing`."""
    text = DOC.read_text(encoding="utf-8")
    at = text.index(f"\n{section}\n")
    while True:
        start = text.index("```python\n", at) + len("```python\n")
        end = text.index("```\n", start)
        block = text[start:end]
        if containing in block:
            return block
        at = end


def run_script(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path)], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_the_api_example_runs_as_written(tmp_path: Path) -> None:
    # In a scratch directory (it writes off.json, off.svg, out.csv,
    # out.svg) that sees the repository's examples.
    (tmp_path / "examples").symlink_to(EXAMPLES)
    script = tmp_path / "api.py"
    script.write_text(python_block("## API", "heir.Scenario.load"))
    out = run_script(script, tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # The values the comments promise, in order.
    assert lines[0] == "39000.0"
    assert "200" in lines and "19000.0" in lines and "['S0', 'S1']" in lines
    for f in ("off.json", "off.svg", "out.csv", "out.svg"):
        assert (tmp_path / f).stat().st_size > 0, f


def test_the_dask_snippet_runs_as_a_script(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    block = python_block("## Sweeps on Dask", "LocalCluster(")
    assert 'if __name__ == "__main__":' in block
    script = tmp_path / "dask_sweep_example.py"
    script.write_text(block)
    out = run_script(script, ROOT)
    assert out.returncode == 0, out.stderr
    # The table of the same sweep run here, without Dask: the same bit for bit.
    expected = heir.sweep(EXAMPLES / "sweeps" / "small.json").to_pandas()
    assert out.stdout == f"{expected}\n"


def test_the_install_section_names_the_extras_pyproject_defines() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "pip install ./crates/heir-py " in text
    assert "pip install './crates/heir-py[dask]'" in text
    py = (ROOT / "crates/heir-py/pyproject.toml").read_text(encoding="utf-8")
    assert 'dask = ["dask", "distributed", "pandas"]' in py
    # The installed wheel's platform tags are ones the docs name
    # (manylinux_2_34_x86_64 as test.sh builds it here; manylinux2014 and
    # manylinux_2_17 from the Zig build the docs describe).
    wheel = importlib.metadata.distribution("heir").read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    for tag in tags:
        platform = tag.split("-")[-1]
        if platform.startswith("manylinux"):
            assert platform in text, f"docs/PYTHON.md does not name the wheel's platform tag {platform}"
