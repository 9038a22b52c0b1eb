"""``heir sweep`` on a Dask cluster: ``python -m heir.dask_sweep CONFIG``.

``heir sweep CONFIG --scheduler ADDRESS`` runs this module (the ``heir``
binary does not link Python). With ``--scheduler tcp://HOST:8786`` the
chunks of task sets go to an existing cluster's workers; with
``--scheduler local`` (the default here) a ``LocalCluster`` of
``--workers`` processes is started on this machine for the run. The CSV is
byte for byte the one ``heir sweep CONFIG`` writes.

Exit codes: 0 ok; 2 bad input (an unreadable or invalid configuration, an
output path that cannot be created) with no file written; 1 any other
failure (the cluster cannot be reached, a worker without heir).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, List, Optional

from ._errors import ConfigError
from ._sweep import DEFAULT_CHUNK_SETS, config_outputs, sweep

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client

__all__ = ["main", "connect"]


def connect(scheduler: str, workers: int, threads_per_worker: Optional[int] = None) -> Client:
    """A ``dask.distributed.Client``: to ``scheduler``'s address, or, for
    ``"local"``, to a new ``LocalCluster`` of ``workers`` processes (each
    runs heir's Rust code on its own threads)."""
    from distributed import Client, LocalCluster

    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=threads_per_worker or 1,
            processes=True,
            dashboard_address=None,
        )
        return Client(cluster)
    return Client(scheduler)


def _check_writable(path: str) -> None:
    d = os.path.dirname(path) or "."
    if not os.path.isdir(d):
        raise OSError(f"cannot create {path}: no directory {d}")


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; returns the exit code."""
    p = argparse.ArgumentParser(
        prog="python -m heir.dask_sweep",
        description="heir sweep on a Dask cluster: the same table as heir sweep, computed by the cluster's workers.",
    )
    p.add_argument("config", help="the sweep configuration (JSON, docs/ANALYSIS.md)")
    p.add_argument(
        "--scheduler",
        default="local",
        help="the Dask scheduler's address (tcp://HOST:8786), or 'local' for a LocalCluster on this machine (default)",
    )
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    p.add_argument("--csv", help="write the CSV here instead of the configuration's output.csv")
    p.add_argument("--svg", help="write the SVG plot here instead of the configuration's output.svg")
    p.add_argument(
        "--chunk-sets",
        type=int,
        default=DEFAULT_CHUNK_SETS,
        help=f"task sets per Dask task (default {DEFAULT_CHUNK_SETS})",
    )
    p.add_argument("--quiet", action="store_true", help="no summary line")
    a = p.parse_args(argv)
    if a.workers < 1 or a.chunk_sets < 1:
        print("heir: --workers and --chunk-sets: expected at least 1", file=sys.stderr)
        return 2
    try:
        csv_written, svg_written = config_outputs(a.config)
        csv_path = a.csv or csv_written
        svg_path = a.svg or svg_written
        for what, path in (("csv", csv_path), ("svg", svg_path)):
            if path is None:
                print(
                    f"heir: {a.config}: at output: the configuration has no output.{what}: expected one, or --{what} PATH",
                    file=sys.stderr,
                )
                return 2
        assert csv_path is not None and svg_path is not None
        _check_writable(csv_path)
        _check_writable(svg_path)
    except ConfigError as e:
        print(f"heir: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"heir: {e}", file=sys.stderr)
        return 2
    try:
        client = connect(a.scheduler, a.workers)
    except Exception as e:  # noqa: BLE001 - any failure to reach the cluster
        print(f"heir: cannot reach the Dask scheduler {a.scheduler}: {e}", file=sys.stderr)
        return 1
    try:
        start = time.perf_counter()
        result = sweep(a.config, client=client, chunk_sets=a.chunk_sets)
        elapsed = time.perf_counter() - start
        nworkers = len(client.scheduler_info().get("workers", {}))
    finally:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None and a.scheduler == "local":
            cluster.close()
    try:
        result.write(csv=csv_path, svg=svg_path)
    except OSError as e:
        print(f"heir: {e}", file=sys.stderr)
        return 2
    # The table heir sweep prints, character for character.
    print(result.table(a.config))
    if not a.quiet:
        print(
            f"{result.total_sets} task sets × {len(result.protocols)} protocols in {elapsed:.2f} s "
            f"on {nworkers} Dask workers, {result.chunks} chunks ({result.total_sets / max(elapsed, 1e-9):.0f} sets/s)"
        )
    print(f"wrote {csv_path} and {svg_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
