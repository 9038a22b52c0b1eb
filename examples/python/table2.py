#!/usr/bin/env python3
"""The PI-CV paper's Table II, from Python: the client/server scenario of Table I
simulated with PI-CV off and on, analysed, as one pandas table, and the
CDF of the clients' response times drawn with matplotlib.

    python examples/python/table2.py [--out DIR]

Writes DIR/table2.csv (the table) and DIR/table2-cdf.png (the figure);
DIR defaults to ./heir-table2. Needs the heir package (docs/PYTHON.md),
pandas and matplotlib. The test suite runs it as a script.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import heir  # noqa: E402

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parent / "table1-client-server.json"
CLIENTS = ["Client1", "Client2"]

# The paper's measurements on Linux over 60 s (ms): Table II.
PAPER = {
    ("No PI-CV", "Client1"): (25.776, 33.71, 33.76),
    ("No PI-CV", "Client2"): (33.587, 38.489, 38.55),
    ("PI-CV", "Client1"): (15.379, 18.913, 18.995),
    ("PI-CV", "Client2"): (22.816, 28.938, 28.996),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="heir-table2", help="output directory")
    out = Path(p.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)

    scenario = heir.Scenario.load(SCENARIO)
    runs = {
        "No PI-CV": heir.simulate(scenario.with_pi_cv(False)),
        "PI-CV": heir.simulate(scenario.with_pi_cv(True)),
    }
    bound = heir.analyze(scenario.with_pi_cv(True))

    rows = []
    for setting, report in runs.items():
        for client in CLIENTS:
            r = report.tasks[client].response_us
            paper = PAPER[(setting, client)]
            rows.append(
                {
                    "setting": setting,
                    "client": client,
                    "avg_ms": r.mean / 1000,
                    "p90_ms": r.p90 / 1000,
                    "max_ms": r.max / 1000,
                    "paper_avg_ms": paper[0],
                    "paper_p90_ms": paper[1],
                    "paper_max_ms": paper[2],
                    "bound_ms": bound.tasks[client].wcrt_us / 1000,
                }
            )
    table = pd.DataFrame(rows).set_index(["setting", "client"])
    with pd.option_context("display.width", 160, "display.precision", 3):
        print("The PI-CV paper's Table II: response times (ms), simulated 60 s, and the analytic bound\n")
        print(table)
    table.to_csv(out / "table2.csv", float_format="%.3f")

    fig, ax = plt.subplots(figsize=(7, 4))
    for setting, report in runs.items():
        samples = report.response_times()
        for client in CLIENTS:
            xs = sorted(v / 1000 for v in samples[client])
            ys = [(k + 1) / len(xs) for k in range(len(xs))]
            style = "-" if setting == "PI-CV" else "--"
            ax.step(xs, ys, style, where="post", label=f"{client}, {setting}")
    for client in CLIENTS:
        ax.axvline(bound.tasks[client].wcrt_us / 1000, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("response time (ms)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("The PI-CV paper's Table I scenario: CDF of response times (dotted: analytic bounds)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "table2-cdf.png", dpi=100)
    print(f"\nwrote {os.fspath(out / 'table2.csv')} and {os.fspath(out / 'table2-cdf.png')}")


if __name__ == "__main__":
    main()
