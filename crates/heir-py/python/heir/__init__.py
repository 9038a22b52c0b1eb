"""heir: priority inheritance beyond mutexes, from Python.

Read an rt-app scenario (``Scenario.load``), simulate it deterministically
(``simulate``), analyse it (``analyze``), draw random task sets
(``generate``) and run schedulability sweeps (``sweep``) — on this machine
or on a Dask cluster. The computation is heir's Rust code (the same as the
``heir`` command line), run with the GIL released.

>>> import heir
>>> s = heir.Scenario.load("examples/table1-client-server.json")
>>> heir.simulate(s).tasks["Client2"].response_us.max
29000.0
"""

from ._core import (
    Analysis,
    AnalysisProtocol,
    Call,
    Deadlock,
    GangStats,
    GangWaitStats,
    GeneratedMutex,
    GeneratedTask,
    Generator,
    MutexProtocol,
    Report,
    ResponseStats,
    RpcServer,
    Scenario,
    Section,
    ServerStats,
    TaskBound,
    TaskSet,
    TaskStats,
    analyze,
    generate,
    simulate,
)
from ._errors import AnalysisError, ConfigError, HeirError, ScenarioError, SimulationError
from ._heir import __version__
from ._sweep import SweepResult, sweep

__all__ = [
    "Analysis",
    "AnalysisError",
    "AnalysisProtocol",
    "Call",
    "ConfigError",
    "Deadlock",
    "GangStats",
    "GangWaitStats",
    "GeneratedMutex",
    "GeneratedTask",
    "Generator",
    "HeirError",
    "MutexProtocol",
    "Report",
    "ResponseStats",
    "RpcServer",
    "Scenario",
    "ScenarioError",
    "Section",
    "ServerStats",
    "SimulationError",
    "SweepResult",
    "TaskBound",
    "TaskSet",
    "TaskStats",
    "__version__",
    "analyze",
    "generate",
    "simulate",
    "sweep",
]
