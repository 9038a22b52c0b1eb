#!/usr/bin/env python3
"""Table II of the PI-CV paper (Cucinotta, Abeni, Lelli, Lipari), from
Python: the client/server scenario of its Table I simulated with PI-CV off
and on, each setting analysed, as one pandas table, and the CDF of the
clients' response times drawn with matplotlib.

    python examples/python/table2.py [--out DIR]

Writes DIR/table2.csv (the table) and DIR/table2-cdf.png (the figure);
DIR defaults to ./heir-table2. Needs the heir package (docs/PYTHON.md),
pandas and matplotlib. The test suite runs it as a script, and checks it
with mypy --strict.

Each row's bound is the analysis of that row's setting: with PI-CV the
clients' worst cases (19 and 29 ms); without it there is none (the server
runs at its own priority while a client waits for it, and a task between
them can delay it without limit), shown as "unbounded".
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import heir  # noqa: E402

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parent / "table1-client-server.json"
CLIENTS = ["Client1", "Client2"]

# The paper's measurements on Linux over 60 s (ms): Table II.
PAPER: Dict[Tuple[str, str], Tuple[float, float, float]] = {
    ("No PI-CV", "Client1"): (25.776, 33.71, 33.76),
    ("No PI-CV", "Client2"): (33.587, 38.489, 38.55),
    ("PI-CV", "Client1"): (15.379, 18.913, 18.995),
    ("PI-CV", "Client2"): (22.816, 28.938, 28.996),
}


def ms(us: Optional[float]) -> Optional[float]:
    """µs to ms; None (no jobs, or no bound) stays None."""
    return None if us is None else us / 1000


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", default="heir-table2", help="output directory")
    out = Path(p.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)

    scenario = heir.Scenario.load(SCENARIO)
    settings = {"No PI-CV": scenario.with_pi_cv(False), "PI-CV": scenario.with_pi_cv(True)}
    runs = {name: heir.simulate(s) for name, s in settings.items()}
    bounds = {name: heir.analyze(s) for name, s in settings.items()}

    rows: List[Dict[str, Union[str, float, None]]] = []
    for setting, report in runs.items():
        for client in CLIENTS:
            r = report.tasks[client].response_us
            paper = PAPER[(setting, client)]
            rows.append(
                {
                    "setting": setting,
                    "client": client,
                    "avg_ms": ms(r.mean),
                    "p90_ms": ms(r.p90),
                    "max_ms": ms(r.max),
                    "paper_avg_ms": paper[0],
                    "paper_p90_ms": paper[1],
                    "paper_max_ms": paper[2],
                    # This setting's bound: none without PI-CV.
                    "bound_ms": ms(bounds[setting].tasks[client].wcrt_us),
                }
            )
    table = pd.DataFrame(rows).set_index(["setting", "client"])
    with pd.option_context("display.width", 160, "display.precision", 3):
        print("PI-CV paper, Table II: response times (ms), simulated 60 s, and each setting's analytic bound\n")
        print(table.to_string(na_rep="unbounded"))
    table.to_csv(out / "table2.csv", float_format="%.3f", na_rep="unbounded")

    fig, ax = plt.subplots(figsize=(7, 4))
    for setting, report in runs.items():
        samples = report.response_times()
        for client in CLIENTS:
            xs = sorted(v / 1000 for v in samples[client])
            ys = [(k + 1) / len(xs) for k in range(len(xs))]
            style = "-" if setting == "PI-CV" else "--"
            ax.step(xs, ys, style, where="post", label=f"{client}, {setting}")
    for client in CLIENTS:
        bound = ms(bounds["PI-CV"].tasks[client].wcrt_us)
        if bound is not None:
            ax.axvline(bound, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("response time (ms)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("PI-CV paper, Table I scenario: CDF of response times (dotted: bounds with PI-CV)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "table2-cdf.png", dpi=100)
    print(f"\nwrote {os.fspath(out / 'table2.csv')} and {os.fspath(out / 'table2-cdf.png')}")


if __name__ == "__main__":
    main()
