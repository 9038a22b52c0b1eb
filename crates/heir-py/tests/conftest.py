"""Shared fixtures: the repository's examples and the `heir` binary."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def example(name: str) -> Path:
    """An example file of the repository."""
    return EXAMPLES / name


def heir_bin() -> str:
    """The `heir` command line: $HEIR_BIN (test.sh sets it), else target/debug/heir,
    else on the PATH. Under CI=true a missing binary fails."""
    for c in (os.environ.get("HEIR_BIN"), str(ROOT / "target/debug/heir"), shutil.which("heir")):
        if c and os.path.exists(c):
            return c
    if os.environ.get("CI") == "true":
        pytest.fail("the heir binary is missing under CI=true (cargo build -p heir-cli)")
    pytest.skip("the heir binary is missing (cargo build -p heir-cli)")


def run_heir(args: List[str], cwd: Path = ROOT, env=None) -> subprocess.CompletedProcess:
    """Runs the heir CLI; returns its completed process (text)."""
    return subprocess.run(
        [heir_bin(), *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env
    )
