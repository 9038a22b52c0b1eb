"""Scenarios, simulation, analysis and random task sets.

Every result is read once, when it is made, into frozen dataclasses:
``Report.tasks``, ``Analysis.tasks`` and ``TaskSet.tasks`` are each a dict
by name (in the order of the scenario or the set) of dataclasses, and
``Report.json`` / ``Analysis.json`` are the command line's ``--json``
documents, as dicts.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union, cast

from . import _heir

if TYPE_CHECKING:  # pragma: no cover
    import pandas

PathLike = Union[str, "os.PathLike[str]"]

#: A mutex protocol, as ``heir sim --protocol NAME=P`` spells ``P`` (and the
#: scenario's ``"protocol"``): ``ceiling`` alone is the file's ceiling, or
#: the highest priority among the mutex's lockers; :meth:`Scenario.with_protocol`
#: takes an explicit one as ``ceiling=N``. Tested equal to the Rust list
#: ``heir_scenario::protocols::NAMES`` (``heir._heir.MUTEX_PROTOCOLS``).
MutexProtocol = Literal["none", "inherit", "bwi", "ceiling"]

#: A protocol family of the analysis and of sweeps, as ``heir analyze
#: --protocol FAMILY`` and a sweep configuration's ``"protocols"`` spell it:
#: every mutex with that protocol, and RPC servers run at their own priority
#: (``none``, ``inherit``), at their highest caller's (``ceiling``) or at
#: their waiting callers' (``pi-cv``). Tested equal to
#: ``heir_analysis::Protocol::ALL`` (``heir._heir.ANALYSIS_PROTOCOLS``).
AnalysisProtocol = Literal["none", "inherit", "ceiling", "pi-cv"]

#: How :func:`generate` draws per-task utilisations (a sweep
#: configuration's ``"generator"``; ``heir._heir.GENERATORS``).
Generator = Literal["uunifast", "randfixedsum"]

__all__ = [
    "AnalysisProtocol",
    "Generator",
    "MutexProtocol",
    "Scenario",
    "Report",
    "TaskStats",
    "ResponseStats",
    "ServerStats",
    "Deadlock",
    "GangStats",
    "GangWaitStats",
    "Analysis",
    "TaskBound",
    "TaskSet",
    "GeneratedTask",
    "Section",
    "Call",
    "RpcServer",
    "GeneratedMutex",
    "simulate",
    "analyze",
    "generate",
]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas() needs pandas: pip install pandas (or the heir[pandas] extra)") from e
    return pandas


class Scenario:
    """A checked scenario: an rt-app JSON file with heir's extensions.

    Read with :meth:`load` (a file), :meth:`from_dict` (a dict built in
    Python) or :meth:`from_json` (text); all use heir's reader and raise
    :class:`heir.ScenarioError` with the file, line, column and JSON path of
    the first problem, as ``heir sim`` reports it. The thread limit is
    ``heir sim``'s: what the machine's memory holds (the package runs no
    real threads, so ``heir run``'s 1024 does not apply).

    A scenario is immutable: :meth:`with_protocol`, :meth:`with_pi_cv`,
    :meth:`with_gpm` and :meth:`with_duration` return a new one, changed as
    ``heir sim``'s ``--protocol``, ``--pi-cv``, ``--gpm`` and ``--duration``
    change it.
    """

    __slots__ = ("_native",)

    def __init__(self, native: _heir.NativeScenario) -> None:
        self._native = native

    @classmethod
    def load(cls, path: PathLike) -> Scenario:
        """Reads and checks the scenario file at ``path``."""
        return cls(_heir.NativeScenario.load(os.fspath(path)))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], name: str = "<dict>") -> Scenario:
        """Reads and checks a scenario given as a dict (the JSON document);
        ``name`` names it in errors. Line and column in errors refer to the
        dict written as indented JSON; the JSON path is the useful part."""
        text = json.dumps(d, indent=2)
        return cls(_heir.NativeScenario.parse(text, name))

    @classmethod
    def from_json(cls, text: str, name: str = "<string>") -> Scenario:
        """Reads and checks a scenario from JSON text (rt-app's lenient
        syntax: comments, trailing commas, repeated keys)."""
        return cls(_heir.NativeScenario.parse(text, name))

    def with_protocol(
        self,
        protocol: MutexProtocol,
        mutex: Optional[str] = None,
        *,
        ceiling: Optional[int] = None,
    ) -> Scenario:
        """The mutex protocol ``protocol`` for mutex ``mutex`` (None: every
        mutex) instead of the file's, as ``heir sim --protocol NAME=P`` /
        ``all=P``. ``ceiling=N`` (1–99) with ``"ceiling"`` gives the ceiling
        explicitly (``ceiling:N``); without it a ceiling mutex keeps the
        file's ceiling, or gets the highest real-time priority among the
        tasks that lock it. Chain calls for several mutexes (a later call
        wins for the mutexes it names).

        Raises :class:`heir.ScenarioError` for a mutex the scenario does not
        have, and ``ValueError`` for ``ceiling`` with another protocol.

        The command line's spelling ``"NAME=P"`` (one string) is still read,
        with a ``DeprecationWarning``."""
        if "=" in protocol:
            warnings.warn(
                "with_protocol(\"NAME=P\") is deprecated: use with_protocol(P, mutex=NAME)",
                DeprecationWarning,
                stacklevel=2,
            )
            if mutex is not None or ceiling is not None:
                raise ValueError("with_protocol(\"NAME=P\") takes no mutex or ceiling")
            return Scenario(self._native.with_protocol([protocol]))
        spelled: str = protocol
        if ceiling is not None:
            if protocol != "ceiling":
                raise ValueError(f"ceiling={ceiling} needs the protocol \"ceiling\", not {protocol!r}")
            spelled = f"ceiling:{int(ceiling)}"
        return Scenario(self._native.with_protocol([f"{mutex if mutex is not None else 'all'}={spelled}"]))

    def with_pi_cv(self, on: bool) -> Scenario:
        """PI-CV on or off for condition variables with helpers (replaces
        ``global.pi_cv``; the analysis reads it too)."""
        return Scenario(self._native.with_pi_cv(bool(on)))

    def with_gpm(self, on: bool) -> Scenario:
        """Gang priority management (GPM) on or off (replaces
        ``global.gpm``)."""
        return Scenario(self._native.with_gpm(bool(on)))

    def with_duration(self, seconds: float) -> Scenario:
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
        """The protocol overrides applied, as ``NAME=P`` (the command line's
        spelling, as the titles of traces and charts show them)."""
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


# ---------------------------------------------------------------- simulation


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

    @staticmethod
    def _read(d: Mapping[str, Any]) -> ResponseStats:
        return ResponseStats(d["min"], d["mean"], d["p50"], d["p90"], d["p99"], d["max"])


@dataclass(frozen=True)
class ServerStats:
    """A ``SCHED_DEADLINE`` thread's server: times its budget ran out
    (``throttled``) and times it was replenished."""

    throttled: int
    replenished: int


@dataclass(frozen=True)
class TaskStats:
    """What one thread did in a run (``heir sim --json``'s ``tasks.NAME``)."""

    name: str
    jobs: int
    deadline_misses: int
    """Jobs that missed their deadline, completed late or not completed
    when the run ended (those also counted in ``unfinished_misses``)."""
    unfinished_misses: int
    response_us: ResponseStats
    migrations: int
    """Times the thread ran on another CPU than the one it last ran on."""
    server: Optional[ServerStats] = None
    """A ``SCHED_DEADLINE`` thread's server; None for other threads."""
    aborted_calls: Optional[int] = None
    """Calls that timed out and were aborted; None for threads of tasks
    whose calls have no ``timeout``."""

    @staticmethod
    def _read(name: str, d: Mapping[str, Any]) -> TaskStats:
        server = d.get("server")
        return TaskStats(
            name=name,
            jobs=d["jobs"],
            deadline_misses=d["deadline_misses"],
            unfinished_misses=d["unfinished_misses"],
            response_us=ResponseStats._read(d["response_us"]),
            migrations=d["migrations"],
            server=None if server is None else ServerStats(server["throttled"], server["replenished"]),
            aborted_calls=d.get("aborted_calls"),
        )


@dataclass(frozen=True)
class Deadlock:
    """The cycle a run ended in: ``kind`` ``"deadlock"`` (threads waiting
    for each other) or ``"livelock"`` (NOVA donation: servers that would
    help each other forever), closed at ``at_us``; ``cycle`` alternates
    thread and resource names, its first and last the same."""

    kind: Literal["deadlock", "livelock"]
    at_us: float
    cycle: Tuple[str, ...]


@dataclass(frozen=True)
class GangWaitStats:
    """What one thread's ``gang_wait`` calls on a gang saw: waits that
    completed (one latency each, in µs) and waits that timed out."""

    thread: str
    completed: int
    timeouts: int
    latency_us: ResponseStats


@dataclass(frozen=True)
class GangStats:
    """A gang's runs (GPM): ``gang_run`` calls that started a run, those
    that failed, and per waiting thread what it saw."""

    name: str
    runs: int
    failed_runs: int
    waiters: Dict[str, GangWaitStats]


@dataclass(frozen=True)
class Report:
    """A simulated run (``heir sim --json``): per thread jobs, deadline
    misses and response-time statistics, the deadlock if the run ended in
    one, per gang its runs.

    :meth:`trace`, :meth:`svg` and :meth:`response_times` simulate the run
    again with a writer attached: the simulator is deterministic, so it is
    the same run, event for event.
    """

    mode: str
    """``"sim"``."""
    cpus: int
    """Simulated CPUs."""
    duration_us: float
    """Simulated time, in µs."""
    tasks: Dict[str, TaskStats]
    """Per thread, by name, in the scenario's order."""
    deadlock: Optional[Deadlock]
    """The deadlock the run ended in, with its cycle; None if none."""
    gangs: Dict[str, GangStats]
    """Per gang, by name (empty without gangs)."""
    title: str
    """The trace's and chart's title."""
    json: Dict[str, Any] = field(repr=False)
    """The report exactly as ``heir sim --json`` prints it."""
    _run: _heir.NativeRun = field(repr=False, compare=False)
    _samples: Dict[str, List[float]] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def _read(text: str, run: _heir.NativeRun) -> Report:
        d: Dict[str, Any] = json.loads(text)
        dl = d.get("deadlock")
        gangs = {
            g: GangStats(
                name=g,
                runs=v["runs"],
                failed_runs=v["failed_runs"],
                waiters={
                    t: GangWaitStats(t, w["completed"], w["timeouts"], ResponseStats._read(w["latency_us"]))
                    for t, w in v["waiters"].items()
                },
            )
            for g, v in d.get("gangs", {}).items()
        }
        return Report(
            mode=d["mode"],
            cpus=d["cpus"],
            duration_us=d["duration_us"],
            tasks={n: TaskStats._read(n, t) for n, t in d["tasks"].items()},
            deadlock=None if dl is None else Deadlock(dl["kind"], dl["at_us"], tuple(dl["cycle"])),
            gangs=gangs,
            title=run.title,
            json=d,
            _run=run,
        )

    def to_pandas(self) -> pandas.DataFrame:
        """One row per thread (index: its name): jobs, deadline_misses,
        unfinished_misses, min/mean/p50/p90/p99/max response (µs),
        migrations."""
        pd = _pandas()
        rows = []
        for name, t in self.tasks.items():
            r = t.response_us
            rows.append(
                {
                    "name": name,
                    "jobs": t.jobs,
                    "deadline_misses": t.deadline_misses,
                    "unfinished_misses": t.unfinished_misses,
                    "min_us": r.min,
                    "mean_us": r.mean,
                    "p50_us": r.p50,
                    "p90_us": r.p90,
                    "p99_us": r.p99,
                    "max_us": r.max,
                    "migrations": t.migrations,
                }
            )
        return cast("pandas.DataFrame", pd.DataFrame(rows).set_index("name"))

    def response_times(self) -> Dict[str, List[float]]:
        """Every job's response time in µs, in completion order, per thread
        by name (``report.response_times()["Client2"]``). Simulated again
        the first time, then kept."""
        if not self._samples:
            for n, s in self._run.response_times():
                self._samples[n] = [ns / 1000.0 for ns in s]
        return self._samples

    def __repr__(self) -> str:
        return f"Report({self.title!r}, tasks={list(self.tasks)})"

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


def simulate(scenario: Scenario, seed: Optional[int] = None, cpus: Optional[int] = None) -> Report:
    """Simulates ``scenario`` deterministically, as ``heir sim``: from
    ``seed`` (else ``global.seed``) on ``cpus`` CPUs (else 1 + the largest
    CPU the file names).

    The GIL is released while it runs; Ctrl-C raises KeyboardInterrupt at
    once. Raises :class:`heir.SimulationError` for a scenario the simulator
    refuses. A deadlock is not an error: ``report.deadlock`` has its cycle.
    """
    text, run = _heir.simulate(scenario._native, seed, cpus)
    return Report._read(text, run)


# ------------------------------------------------------------------ analysis


@dataclass(frozen=True)
class TaskBound:
    """The analysis of one task (times in µs; None when unbounded)."""

    name: str
    cpu: int
    priority: Optional[int]
    """``SCHED_FIFO`` priority; None for a ``SCHED_DEADLINE`` task."""
    period_us: float
    deadline_us: float
    wcet_us: float
    """Local work per job (C)."""
    demand_us: float
    """The job's whole demand, RPC work included."""
    blocking_us: Optional[float]
    wcrt_us: Optional[float]
    """The worst-case response time (the bound)."""
    schedulable: bool
    reason: Optional[str]
    """Why there is no bound, for people; None when bounded."""


@dataclass(frozen=True)
class Analysis:
    """The analytic worst case of a scenario or task set (``heir analyze``):
    per task the bound (WCRT), the blocking term, the deadline, the verdict."""

    schedulable: bool
    """Every analysed task meets its deadline."""
    protocol: str
    """What was analysed: ``"as written (PI-CV on)"`` (or off), or an
    :data:`AnalysisProtocol`."""
    tasks: Dict[str, TaskBound]
    """Per task, by name, in scenario order."""
    skipped: Dict[str, str]
    """Threads left out of the analysis, and why."""
    json: Dict[str, Any] = field(repr=False)
    """The result exactly as ``heir analyze --json`` prints it."""

    @staticmethod
    def _read(text: str) -> Analysis:
        d: Dict[str, Any] = json.loads(text)
        return Analysis(
            schedulable=d["schedulable"],
            protocol=d["protocol"],
            tasks={t["name"]: TaskBound(**t) for t in d["tasks"]},
            skipped={s["name"]: s["why"] for s in d["skipped"]},
            json=d["json"],
        )

    def __repr__(self) -> str:
        return f"Analysis({self.protocol!r}, schedulable={self.schedulable}, tasks={list(self.tasks)})"

    def to_pandas(self) -> pandas.DataFrame:
        """One row per task (index: its name), every field of its bound."""
        pd = _pandas()
        rows = [dataclasses.asdict(t) for t in self.tasks.values()]
        return cast("pandas.DataFrame", pd.DataFrame(rows).set_index("name"))


def analyze(
    scenario: Union[Scenario, TaskSet],
    protocol: Optional[AnalysisProtocol] = None,
    cpus: Optional[int] = None,
) -> Analysis:
    """Schedulability analysis of a scenario (as ``heir analyze``) or of a
    generated task set: as written, or under the protocol family
    ``protocol`` (as ``heir analyze --protocol FAMILY``). To analyse a
    scenario with one mutex's protocol changed, change the scenario:
    ``analyze(s.with_protocol("ceiling", mutex="m"))``. ``cpus`` applies to
    scenarios only. Raises :class:`heir.AnalysisError` for a scenario
    outside the analysed model, ``ValueError`` for an unknown protocol."""
    if isinstance(scenario, TaskSet):
        return Analysis._read(scenario._native.analyze(protocol))
    return Analysis._read(_heir.analyze(scenario._native, protocol, cpus))


# ----------------------------------------------------------------- task sets


@dataclass(frozen=True)
class Section:
    """A critical section of a generated task: ``length_us`` on ``mutex``,
    ``inside`` the index (in the task's ``sections``) of the section it
    nests in, or None."""

    mutex: str
    length_us: float
    inside: Optional[int]


@dataclass(frozen=True)
class Call:
    """An RPC of a generated task: ``wcet_us`` of work done by the RPC
    server ``server`` on the caller's behalf."""

    server: str
    wcet_us: float


@dataclass(frozen=True)
class GeneratedTask:
    """A periodic task of a generated set (times in µs)."""

    name: str
    cpu: int
    priority: Optional[int]
    period_us: float
    deadline_us: float
    wcet_us: float
    """Local work per job (C)."""
    demand_us: float
    """The job's whole demand, RPC work included."""
    utilisation: float
    """``demand_us / period_us``."""
    sections: Tuple[Section, ...]
    calls: Tuple[Call, ...]


@dataclass(frozen=True)
class RpcServer:
    """An RPC server thread of a generated set (below every task)."""

    name: str
    cpu: int
    priority: int


@dataclass(frozen=True)
class GeneratedMutex:
    """A mutex of a generated set and its protocol (``none``, ``inherit``,
    ``bwi`` or ``ceiling:N``)."""

    name: str
    protocol: str


class TaskSet:
    """A random task set (heir-analysis's generator, exactly as a sweep
    draws them): periodic fixed-priority tasks (rate-monotonic), critical
    sections on mutexes, RPCs to servers. Made by :func:`generate`."""

    __slots__ = ("_native", "tasks", "servers", "mutexes", "pi_cv")

    def __init__(self, native: _heir.NativeTaskSet) -> None:
        self._native = native
        d: Dict[str, Any] = json.loads(native.to_json())
        self.tasks: Dict[str, GeneratedTask] = {
            t["name"]: GeneratedTask(
                name=t["name"],
                cpu=t["cpu"],
                priority=t["priority"],
                period_us=t["period_us"],
                deadline_us=t["deadline_us"],
                wcet_us=t["wcet_us"],
                demand_us=t["demand_us"],
                utilisation=t["utilisation"],
                sections=tuple(Section(c["mutex"], c["length_us"], c["inside"]) for c in t["sections"]),
                calls=tuple(Call(c["server"], c["wcet_us"]) for c in t["calls"]),
            )
            for t in d["tasks"]
        }
        """The tasks, by name, in priority order (highest first)."""
        self.servers: Dict[str, RpcServer] = {
            s["name"]: RpcServer(s["name"], s["cpu"], s["priority"]) for s in d["servers"]
        }
        """The RPC servers, by name."""
        self.mutexes: Dict[str, GeneratedMutex] = {
            m["name"]: GeneratedMutex(m["name"], m["protocol"]) for m in d["mutexes"]
        }
        """The mutexes, by name."""
        self.pi_cv: bool = d["pi_cv"]
        """Whether the set is analysed with PI-CV when no protocol is given."""

    @property
    def utilisation(self) -> float:
        """Total utilisation (demand / period, summed)."""
        return sum(t.utilisation for t in self.tasks.values())

    @property
    def utilization(self) -> float:
        """Deprecated spelling of :attr:`utilisation`."""
        warnings.warn("TaskSet.utilization is deprecated: use TaskSet.utilisation", DeprecationWarning, stacklevel=2)
        return self.utilisation

    def to_pandas(self) -> pandas.DataFrame:
        """One row per task (index: its name), with the numbers of its
        sections and calls instead of their lists."""
        pd = _pandas()
        rows = []
        for t in self.tasks.values():
            row: Dict[str, Any] = dataclasses.asdict(t)
            row["sections"] = len(t.sections)
            row["calls"] = len(t.calls)
            rows.append(row)
        return cast("pandas.DataFrame", pd.DataFrame(rows).set_index("name"))

    def to_scenario(self, duration_s: float = 1.0) -> Scenario:
        """A scenario that runs the set (to simulate it): one periodic task
        per task, one serve loop per RPC server."""
        return Scenario(self._native.to_scenario(float(duration_s)))

    def __len__(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return f"TaskSet({len(self)} tasks, U={self.utilisation:.3f})"


def generate(
    n_tasks: int,
    utilisation: Optional[float] = None,
    generator: Generator = "uunifast",
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
    *,
    utilization: Optional[float] = None,
) -> TaskSet:
    """One random task set of ``n_tasks`` tasks and total ``utilisation``
    (required; ``utilization=`` is its deprecated spelling), reproducible
    from ``seed``.

    ``generator``: ``"uunifast"`` (above a total of 1, UUniFast-Discard:
    every task at most 1, the total as asked) or ``"randfixedsum"``. The
    other parameters are those of a sweep configuration (docs/ANALYSIS.md),
    None for the defaults: 4 resources used with probability 0.3 for
    1–100 µs, no nesting, **2 RPC servers** called with probability 0.2 for
    10–500 µs (``servers=0`` for none), periods log-uniform in 10–1000 ms
    rounded to 1 ms.
    """
    if utilization is not None:
        warnings.warn("generate(utilization=…) is deprecated: use utilisation=…", DeprecationWarning, stacklevel=2)
        if utilisation is not None:
            raise TypeError("generate() got both utilisation and utilization")
        utilisation = utilization
    if utilisation is None:
        raise TypeError("generate() missing the total utilisation (utilisation=…)")

    def pair(v: Optional[Sequence[int]]) -> Optional[Tuple[int, int]]:
        return None if v is None else (int(v[0]), int(v[1]))

    return TaskSet(
        _heir.generate(
            int(n_tasks),
            float(utilisation),
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
