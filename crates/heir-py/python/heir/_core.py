"""Scenarios, simulation, analysis and random task sets."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _heir

if TYPE_CHECKING:  # pragma: no cover
    import pandas

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "Scenario",
    "Report",
    "TaskStats",
    "ResponseStats",
    "Analysis",
    "TaskBound",
    "TaskSet",
    "simulate",
    "analyze",
    "generate",
]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas() needs pandas: pip install pandas") from e
    return pandas


class Scenario:
    """A checked scenario: an rt-app JSON file with heir's extensions.

    Read with :meth:`load` (a file) or :meth:`from_dict` (a dict built in
    Python); both use heir's reader and raise :class:`heir.ScenarioError`
    with the file, line, column and JSON path of the first problem, as
    ``heir sim`` reports it.

    A scenario is immutable: :meth:`with_protocol`, :meth:`with_pi_cv`,
    :meth:`with_gpm` and :meth:`with_duration` return a new one, changed as
    ``heir sim``'s ``--protocol``, ``--pi-cv``, ``--gpm`` and ``--duration``
    change it.
    """

    __slots__ = ("_native",)

    def __init__(self, native: "_heir.NativeScenario") -> None:
        self._native = native

    @classmethod
    def load(cls, path: PathLike) -> "Scenario":
        """Reads and checks the scenario file at ``path``."""
        return cls(_heir.NativeScenario.load(os.fspath(path)))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], name: str = "<dict>") -> "Scenario":
        """Reads and checks a scenario given as a dict (the JSON document);
        ``name`` names it in errors. Line and column in errors refer to the
        dict written as indented JSON; the JSON path is the useful part."""
        text = json.dumps(d, indent=2)
        return cls(_heir.NativeScenario.parse(text, name))

    @classmethod
    def from_json(cls, text: str, name: str = "<string>") -> "Scenario":
        """Reads and checks a scenario from JSON text (rt-app's lenient
        syntax: comments, trailing commas, repeated keys)."""
        return cls(_heir.NativeScenario.parse(text, name))

    def with_protocol(self, *overrides: str) -> "Scenario":
        """A mutex protocol instead of the file's, as ``--protocol``:
        ``"NAME=P"`` for one mutex, ``"all=P"`` (or just ``"P"``) for every
        mutex, later ones winning; ``P`` is ``none``, ``inherit``, ``bwi``,
        ``ceiling`` or ``ceiling:N``."""
        spelled = [o if "=" in o else f"all={o}" for o in overrides]
        return Scenario(self._native.with_protocol(spelled))

    def with_pi_cv(self, on: bool) -> "Scenario":
        """PI-CV on or off for condition variables with helpers (replaces
        ``global.pi_cv``; the analysis reads it too)."""
        return Scenario(self._native.with_pi_cv(bool(on)))

    def with_gpm(self, on: bool) -> "Scenario":
        """Gang priority management on or off (GPM; replaces
        ``global.gpm``)."""
        return Scenario(self._native.with_gpm(bool(on)))

    def with_duration(self, seconds: float) -> "Scenario":
        """The simulated duration in seconds (replaces ``global.duration``):
        at least 1 µs, at most heir's 100-day limit."""
        return Scenario(self._native.with_duration(float(seconds)))

    @property
    def file(self) -> str:
        """The file's name as given."""
        return self._native.file

    @property
    def pi_cv(self) -> bool:
        """Whether PI-CV is on."""
        return self._native.pi_cv

    @property
    def gpm(self) -> bool:
        """Whether gang priority management is on."""
        return self._native.gpm

    @property
    def seed(self) -> int:
        """``global.seed``: the simulation's seed unless ``simulate`` is
        given one."""
        return self._native.seed

    @property
    def duration_s(self) -> Optional[float]:
        """The simulated duration in seconds (None: the file has none)."""
        return self._native.duration_s

    @property
    def protocols(self) -> List[str]:
        """The protocol overrides applied, as ``NAME=P``."""
        return self._native.protocols

    @property
    def task_names(self) -> List[str]:
        """The tasks' names, in file order."""
        return self._native.task_names

    @property
    def warnings(self) -> List[str]:
        """The reader's warnings (``FILE:LINE:COL: at PATH: what``)."""
        return self._native.warnings

    def __repr__(self) -> str:
        return f"Scenario({self.file!r}, pi_cv={self.pi_cv}, tasks={self.task_names})"


@dataclass(frozen=True)
class ResponseStats:
    """Response-time statistics of one thread, in µs (None without jobs).
    Percentiles come from a streamed histogram (as ``heir sim``)."""

    min: Optional[float]
    mean: Optional[float]
    p50: Optional[float]
    p90: Optional[float]
    p99: Optional[float]
    max: Optional[float]


@dataclass(frozen=True)
class TaskStats:
    """What one thread did in a run."""

    name: str
    jobs: int
    deadline_misses: int
    response_us: ResponseStats
    migrations: int
    extra: Dict[str, Any]


class Report:
    """A simulated run: per thread jobs, deadline misses, response-time
    statistics (the report of ``heir sim --json``).

    :meth:`trace`, :meth:`svg` and :meth:`response_times` simulate the run
    again with a writer attached: the simulator is deterministic, so it is
    the same run, event for event.
    """

    def __init__(self, data: Dict[str, Any], run: "_heir.NativeRun") -> None:
        self._data = data
        self._run = run
        self._samples: Optional[Dict[str, List[int]]] = None

    @property
    def json(self) -> Dict[str, Any]:
        """The report exactly as ``heir sim --json`` prints it."""
        return self._data

    @property
    def mode(self) -> str:
        """``"sim"``."""
        return self._data["mode"]

    @property
    def cpus(self) -> int:
        """Simulated CPUs."""
        return self._data["cpus"]

    @property
    def duration_us(self) -> float:
        """Simulated time, in µs."""
        return self._data["duration_us"]

    @property
    def deadlock(self) -> Optional[Dict[str, Any]]:
        """The deadlock the run ended in, with its cycle; None if none."""
        return self._data.get("deadlock")

    @property
    def tasks(self) -> Dict[str, TaskStats]:
        """Per thread, by name, in the report's order."""
        out: Dict[str, TaskStats] = {}
        for name, t in self._data["tasks"].items():
            known = {"jobs", "deadline_misses", "response_us", "migrations"}
            out[name] = TaskStats(
                name=name,
                jobs=t["jobs"],
                deadline_misses=t["deadline_misses"],
                response_us=ResponseStats(**t["response_us"]),
                migrations=t.get("migrations", 0),
                extra={k: v for k, v in t.items() if k not in known},
            )
        return out

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per thread (index: its name): jobs, deadline_misses,
        min/mean/p50/p90/p99/max response (µs), migrations."""
        pd = _pandas()
        rows = []
        for name, t in self.tasks.items():
            r = t.response_us
            rows.append(
                {
                    "task": name,
                    "jobs": t.jobs,
                    "deadline_misses": t.deadline_misses,
                    "min_us": r.min,
                    "mean_us": r.mean,
                    "p50_us": r.p50,
                    "p90_us": r.p90,
                    "p99_us": r.p99,
                    "max_us": r.max,
                    "migrations": t.migrations,
                }
            )
        return pd.DataFrame(rows).set_index("task")

    def response_times(self, task: Optional[str] = None) -> Any:
        """Every job's response time in µs, in completion order: a list for
        ``task``, else a dict of lists by thread name."""
        if self._samples is None:
            self._samples = {n: s for n, s in self._run.response_times()}
        if task is not None:
            return [ns / 1000.0 for ns in self._samples[task]]
        return {n: [ns / 1000.0 for ns in s] for n, s in self._samples.items()}

    def trace(self, path: PathLike) -> None:
        """Writes the run's Chrome trace-event JSON to ``path`` (open it in
        ui.perfetto.dev), as ``heir sim --trace``."""
        self._run.trace(os.fspath(path))

    def svg(self, path: PathLike, from_ms: float = 0.0, span_ms: float = 200.0) -> None:
        """Writes the SVG Gantt chart of ``span_ms`` ms from ``from_ms`` to
        ``path``, as ``heir sim --svg``."""
        if span_ms <= 0:
            raise ValueError("span_ms must be positive")
        self._run.svg(os.fspath(path), float(from_ms), float(span_ms))

    @property
    def title(self) -> str:
        """The trace's and chart's title."""
        return self._run.title

    def __repr__(self) -> str:
        return f"Report({self.title!r}, tasks={list(self._data['tasks'])})"


def simulate(scenario: Scenario, seed: Optional[int] = None, cpus: Optional[int] = None) -> Report:
    """Simulates ``scenario`` deterministically, as ``heir sim``: from
    ``seed`` (else ``global.seed``) on ``cpus`` CPUs (else 1 + the largest
    CPU the file names).

    The GIL is released while it runs; Ctrl-C raises KeyboardInterrupt at
    once. Raises :class:`heir.SimulationError` for a scenario the simulator
    refuses. A deadlock is not an error: ``report.deadlock`` has its cycle.
    """
    text, run = _heir.simulate(scenario._native, seed, cpus)
    return Report(json.loads(text), run)


@dataclass(frozen=True)
class TaskBound:
    """The analysis of one task (times in µs; None when unbounded)."""

    name: str
    cpu: int
    priority: Optional[int]
    period_us: float
    deadline_us: float
    wcet_us: float
    demand_us: float
    blocking_us: Optional[float]
    wcrt_us: Optional[float]
    schedulable: bool
    reason: Optional[str]


class Analysis:
    """The analytic worst case of a scenario or task set (``heir analyze``):
    per task the bound (WCRT), the blocking term, the deadline, the verdict."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self._data = data
        self.tasks: Dict[str, TaskBound] = {t["name"]: TaskBound(**t) for t in data["tasks"]}
        """Per task, by name, in scenario order."""

    @property
    def schedulable(self) -> bool:
        """Every analysed task meets its deadline."""
        return self._data["schedulable"]

    @property
    def protocol(self) -> str:
        """What was analysed: ``"as written (PI-CV on)"`` or a protocol."""
        return self._data["protocol"]

    @property
    def skipped(self) -> Dict[str, str]:
        """Threads left out of the analysis, and why."""
        return {s["name"]: s["why"] for s in self._data["skipped"]}

    @property
    def json(self) -> Dict[str, Any]:
        """The result exactly as ``heir analyze --json`` prints it."""
        return self._data["json"]

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per task (index: its name), every field of its bound."""
        pd = _pandas()
        return pd.DataFrame([t.__dict__ for t in self.tasks.values()]).set_index("name")

    def __repr__(self) -> str:
        return f"Analysis({self.protocol!r}, schedulable={self.schedulable})"


def analyze(
    scenario: Union[Scenario, "TaskSet"],
    protocol: Optional[str] = None,
    cpus: Optional[int] = None,
) -> Analysis:
    """Schedulability analysis of a scenario (as ``heir analyze``) or of a
    generated task set: under its own protocols, or under the protocol
    family ``protocol`` (``"none"``, ``"inherit"``, ``"ceiling"``,
    ``"pi-cv"``). Raises :class:`heir.AnalysisError` for a scenario outside
    the analysed model."""
    if isinstance(scenario, TaskSet):
        return Analysis(json.loads(scenario._native.analyze(protocol)))
    return Analysis(json.loads(_heir.analyze(scenario._native, protocol, cpus)))


class TaskSet:
    """A random task set (heir-analysis's generator, exactly as a sweep
    draws them): periodic fixed-priority tasks (rate-monotonic), critical
    sections on mutexes, RPCs to servers."""

    def __init__(self, native: "_heir.NativeTaskSet") -> None:
        self._native = native
        self._data: Dict[str, Any] = json.loads(native.to_json())

    @property
    def tasks(self) -> List[Dict[str, Any]]:
        """The tasks: name, cpu, priority, period/deadline/wcet/demand (µs),
        utilisation, sections (mutex, length_us, inside: index of the
        enclosing section or None), calls (server, wcet_us)."""
        return self._data["tasks"]

    @property
    def servers(self) -> List[Dict[str, Any]]:
        """The RPC servers: name, cpu, priority."""
        return self._data["servers"]

    @property
    def mutexes(self) -> List[Dict[str, Any]]:
        """The mutexes: name, protocol."""
        return self._data["mutexes"]

    @property
    def utilization(self) -> float:
        """Total utilisation (demand / period, summed)."""
        return sum(t["utilisation"] for t in self.tasks)

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per task (index: its name), without sections and calls
        (their counts instead)."""
        pd = _pandas()
        rows = []
        for t in self.tasks:
            row = {k: v for k, v in t.items() if k not in ("sections", "calls")}
            row["sections"] = len(t["sections"])
            row["calls"] = len(t["calls"])
            rows.append(row)
        return pd.DataFrame(rows).set_index("name")

    def to_scenario(self, duration_s: float = 1.0) -> Scenario:
        """A scenario that runs the set (to simulate it): one periodic task
        per task, one serve loop per server."""
        return Scenario(self._native.to_scenario(float(duration_s)))

    def __len__(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return f"TaskSet({len(self)} tasks, U={self.utilization:.3f})"


def generate(
    n_tasks: int,
    utilization: float,
    generator: str = "uunifast",
    seed: int = 0,
    resources: Optional[int] = None,
    access_probability: Optional[float] = None,
    cs_us: Optional[Sequence[int]] = None,
    nest_probability: Optional[float] = None,
    servers: Optional[int] = None,
    call_probability: Optional[float] = None,
    call_us: Optional[Sequence[int]] = None,
    periods_us: Optional[Sequence[int]] = None,
    period_granularity_us: Optional[int] = None,
) -> TaskSet:
    """One random task set of ``n_tasks`` tasks and total ``utilization``,
    reproducible from ``seed``.

    ``generator``: ``"uunifast"`` (above a total of 1, UUniFast-Discard:
    every task at most 1, the total as asked) or ``"randfixedsum"``. The other parameters
    are those of a sweep configuration (docs/ANALYSIS.md), None for the
    defaults: 4 resources used with probability 0.3 for 1–100 µs, no
    nesting, 2 servers called with probability 0.2 for 10–500 µs, periods
    log-uniform in 10–1000 ms rounded to 1 ms.
    """

    def pair(v: Optional[Sequence[int]]) -> Optional[tuple]:
        return None if v is None else (int(v[0]), int(v[1]))

    return TaskSet(
        _heir.generate(
            int(n_tasks),
            float(utilization),
            generator,
            int(seed),
            resources,
            access_probability,
            pair(cs_us),
            nest_probability,
            servers,
            call_probability,
            pair(call_us),
            pair(periods_us),
            period_granularity_us,
        )
    )

