"""Type stubs of the native module ``heir._heir`` (Rust, PyO3). Use the
``heir`` package's API instead: these functions are its plumbing."""

from typing import List, Optional, Tuple, final

__all__ = [
    "ANALYSIS_PROTOCOLS",
    "GENERATORS",
    "MUTEX_PROTOCOLS",
    "NativeRun",
    "NativeScenario",
    "NativeTaskSet",
    "__version__",
    "analyze",
    "generate",
    "simulate",
    "sweep_check",
    "sweep_counts",
    "sweep_outputs",
]

__version__: str
MUTEX_PROTOCOLS: List[str]
ANALYSIS_PROTOCOLS: List[str]
GENERATORS: List[str]

@final
class NativeScenario:
    @staticmethod
    def load(path: str) -> NativeScenario: ...
    @staticmethod
    def parse(text: str, name: str) -> NativeScenario: ...
    def with_protocol(self, overrides: List[str]) -> NativeScenario: ...
    def with_pi_cv(self, on: bool) -> NativeScenario: ...
    def with_gpm(self, on: bool) -> NativeScenario: ...
    def with_duration(self, seconds: float) -> NativeScenario: ...
    @property
    def file(self) -> str: ...
    @property
    def pi_cv(self) -> bool: ...
    @property
    def gpm(self) -> bool: ...
    @property
    def seed(self) -> int: ...
    @property
    def duration_s(self) -> Optional[float]: ...
    @property
    def protocols(self) -> List[str]: ...
    @property
    def task_names(self) -> List[str]: ...
    @property
    def warnings(self) -> List[str]: ...

@final
class NativeRun:
    def trace(self, path: str) -> None: ...
    def svg(self, path: str, from_ms: float, span_ms: float) -> None: ...
    def response_times(self) -> List[Tuple[str, List[int]]]: ...
    @property
    def title(self) -> str: ...

@final
class NativeTaskSet:
    def to_json(self) -> str: ...
    def analyze(self, protocol: Optional[str] = None) -> str: ...
    def to_scenario(self, duration_s: float) -> NativeScenario: ...

def simulate(
    scenario: NativeScenario, seed: Optional[int] = None, cpus: Optional[int] = None
) -> Tuple[str, NativeRun]: ...
def analyze(
    scenario: NativeScenario, protocol: Optional[str] = None, cpus: Optional[int] = None
) -> str: ...
def generate(
    n_tasks: int,
    utilisation: float,
    generator: str,
    seed: int,
    resources: Optional[int] = None,
    access_probability: Optional[float] = None,
    cs_us: Optional[Tuple[int, int]] = None,
    nest_probability: Optional[float] = None,
    servers: Optional[int] = None,
    call_probability: Optional[float] = None,
    call_us: Optional[Tuple[int, int]] = None,
    periods_us: Optional[Tuple[int, int]] = None,
    period_granularity_us: Optional[int] = None,
) -> NativeTaskSet: ...
def sweep_check(text: str, name: str) -> str: ...
def sweep_counts(text: str, start: int, end: int) -> List[int]: ...
def sweep_outputs(text: str, counts: List[int]) -> Tuple[str, str]: ...
