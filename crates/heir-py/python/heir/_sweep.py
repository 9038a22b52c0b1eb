"""``heir.sweep``: ``heir sweep``'s computation, in this process or on a
Dask cluster.

A sweep is ``points × sets_per_point`` task sets, numbered in order; set
``i`` is a pure function of (seed, point, index), and the result is a count
per point and protocol. Chunks of consecutive sets are counted separately —
on this process's threads, or as tasks on Dask workers — and their counts
summed: the result is the same bit for bit however the sets are split.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union, cast

from . import _heir
from ._core import _pandas

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["SweepResult", "sweep", "chunk_counts"]

PathLike = Union[str, "os.PathLike[str]"]

#: Task sets per Dask task when none is given: small enough that a
#: cluster's workers share the work evenly, large enough that scheduling is
#: cheap.
DEFAULT_CHUNK_SETS = 2000

#: Task sets per call into Rust in this process when none is given (each
#: call ends in a barrier of the thread pool: fewer, larger calls).
LOCAL_CHUNK_SETS = 50_000


@dataclass(frozen=True)
class SweepResult:
    """The result of a sweep: the schedulable ratio per utilisation point and
    protocol, the CSV ``heir sweep`` writes (``csv``) and its SVG plot
    (``svg``)."""

    csv: str
    svg: str
    protocols: List[str]
    tasks: int
    sets_per_point: int
    seed: int
    total_sets: int
    chunks: int
    #: The utilisation of each point.
    points: List[float] = field(default_factory=list)
    #: Schedulable task sets, ``counts[point × len(protocols) + k]``.
    counts: List[int] = field(default_factory=list)

    def table(self, name: str) -> str:
        """The table ``heir sweep`` prints for the configuration ``name``,
        character for character: a title line, then the schedulable ratio
        per utilisation point (rows) and protocol (columns), to three
        decimals; the first column left-aligned, the others right-aligned,
        two spaces between columns."""
        header = ["utilisation", *self.protocols]
        rows = [header]
        n = len(self.protocols)
        for i, u in enumerate(self.points):
            sets = max(self.sets_per_point, 1)
            rows.append([f"{u:.3f}", *(f"{c / sets:.3f}" for c in self.counts[i * n : (i + 1) * n])])
        width = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = []
        for r in rows:
            cells = [r[0].ljust(width[0])] + [c.rjust(w) for c, w in zip(r[1:], width[1:])]
            lines.append("  ".join(cells).rstrip())
        title = f"{name}: {self.tasks} tasks, {self.sets_per_point} sets per point, seed {self.seed}; schedulable ratio"
        return title + "\n\n" + "\n".join(lines) + "\n"

    def rows(self) -> List[Dict[str, Any]]:
        """The table as dicts: ``utilisation``, ``sets``, one ratio per
        protocol (the CSV's values)."""
        lines = self.csv.strip().split("\n")
        header = lines[0].split(",")
        out = []
        for line in lines[1:]:
            cells = line.split(",")
            row: Dict[str, Any] = {}
            for h, c in zip(header, cells):
                row[h] = int(c) if h == "sets" else float(c)
            out.append(row)
        return out

    def to_pandas(self) -> "pandas.DataFrame":
        """The table as a DataFrame (index: utilisation)."""
        pd = _pandas()
        return cast("pandas.DataFrame", pd.DataFrame(self.rows()).set_index("utilisation"))

    def write(self, csv: Optional[PathLike] = None, svg: Optional[PathLike] = None) -> None:
        """Writes the CSV and/or the SVG (each under a temporary name first,
        then renamed: never a half-written file)."""
        for path, body in ((csv, self.csv), (svg, self.svg)):
            if path is None:
                continue
            path = os.fspath(path)
            d, name = os.path.split(path)
            tmp = os.path.join(d, f".{name}.tmp-{os.getpid()}")
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(body)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)


def _config_text(config: Union[PathLike, Mapping[str, Any]]) -> Tuple[str, str]:
    """(name for errors, JSON text) of a configuration path or dict."""
    if isinstance(config, Mapping):
        return "<dict>", json.dumps(config, indent=2)
    path = os.fspath(config)
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def chunk_counts(text: str, start: int, end: int) -> List[int]:
    """The counts of task sets ``start..end`` of the sweep configured by
    ``text`` (run on a Dask worker, or here): ``counts[point × protocols +
    k]``."""
    return _heir.sweep_counts(text, start, end)


def _chunks(total: int, size: int) -> List[Tuple[int, int]]:
    return [(a, min(total, a + size)) for a in range(0, total, size)]


def sweep(
    config: Union[PathLike, Mapping[str, Any]],
    client: Any = None,
    chunk_sets: Optional[int] = None,
) -> SweepResult:
    """Runs the sweep of ``config`` (a ``heir sweep`` configuration: path or
    dict, docs/ANALYSIS.md) — the same computation as ``heir sweep``,
    deterministic from its seed. The result is returned, not written: the
    configuration's ``output`` is optional here and not used
    (:meth:`SweepResult.write` writes the files).

    Without ``client`` it runs here, on every core, in chunks of
    ``chunk_sets`` task sets (default 50000; Ctrl-C stops it within about
    a thousand sets per thread). With a
    ``dask.distributed.Client`` the chunks (default 2000 sets) are tasks
    on the cluster's workers (each needs this package installed) and their counts are
    gathered here. The result is the same either way, bit for bit.

    Raises :class:`heir.ConfigError` for a configuration ``heir sweep``
    refuses (before any work).
    """
    name, text = _config_text(config)
    info = json.loads(_heir.sweep_check(text, name))
    total = int(info["total_sets"])
    size = int(chunk_sets) if chunk_sets else (DEFAULT_CHUNK_SETS if client is not None else LOCAL_CHUNK_SETS)
    if size < 1:
        raise ValueError("chunk_sets must be at least 1")
    chunks = _chunks(total, size)
    width = len(info["points"]) * len(info["protocols"])
    counts = [0] * width
    if client is None:
        for a, b in chunks:
            for k, c in enumerate(_heir.sweep_counts(text, a, b)):
                counts[k] += c
    else:
        futures = client.map(
            chunk_counts,
            [text] * len(chunks),
            [a for a, _ in chunks],
            [b for _, b in chunks],
            pure=False,
        )
        try:
            # Summed as they arrive: memory is one row per chunk at most.
            from distributed import as_completed

            for fut in as_completed(futures):
                for k, c in enumerate(fut.result()):
                    counts[k] += c
        except BaseException:
            client.cancel(futures)
            raise
    csv, svg = _heir.sweep_outputs(text, counts)
    return SweepResult(
        csv=csv,
        svg=svg,
        protocols=list(info["protocols"]),
        tasks=int(info["tasks"]),
        sets_per_point=int(info["sets_per_point"]),
        seed=int(info["seed"]),
        total_sets=total,
        chunks=len(chunks),
        points=[float(u) for u in info["points"]],
        counts=counts,
    )


def config_outputs(config: Union[PathLike, Mapping[str, Any]]) -> Tuple[Optional[str], Optional[str]]:
    """The configuration's ``output.csv`` and ``output.svg`` paths (None
    when it has no ``output``)."""
    name, text = _config_text(config)
    info = json.loads(_heir.sweep_check(text, name))
    return info["csv"], info["svg"]
