"""heir's exceptions: where in the input, and what was expected."""

from __future__ import annotations

from typing import Any, Optional, Tuple

__all__ = ["HeirError", "ScenarioError", "SimulationError", "AnalysisError", "ConfigError"]


class HeirError(Exception):
    """Base class of heir's errors."""


class _Located(HeirError, ValueError):
    """An error at a place in an input file.

    ``str(error)`` is the CLI's message (``FILE:LINE:COL: at PATH: what``).

    Attributes:
        file: the file's name as given (``"<dict>"`` for ``from_dict``).
        line: 1-based line, or ``None`` when the error has no position.
        column: 1-based column (in characters), or ``None``.
        json_path: JSON path of the culprit (``tasks.Client1.phases.p1``),
            or ``None`` when unknown.
        message: what was expected and what was found, without the place.
    """

    def __init__(
        self,
        text: str,
        file: str,
        line: Optional[int] = None,
        column: Optional[int] = None,
        json_path: Optional[str] = None,
        message: Optional[str] = None,
    ) -> None:
        super().__init__(text)
        self.file = file
        self.line = line
        self.column = column
        self.json_path = json_path
        self.message = message if message is not None else text

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # Picklable with its attributes (Dask sends errors between processes).
        return (
            type(self),
            (str(self), self.file, self.line, self.column, self.json_path, self.message),
        )


class ScenarioError(_Located):
    """A scenario file heir's reader refuses (the same reader and messages as
    ``heir sim``), or a change (``with_protocol``, ``with_duration``) that
    does not apply to it."""


class SimulationError(ScenarioError):
    """A scenario the simulator refuses (``heir sim`` exits 2 on it)."""


class AnalysisError(ScenarioError):
    """A scenario outside the analysed model, a missing period, a task over
    100%, a cycle of nested locks (``heir analyze`` exits 2 on it)."""


class ConfigError(_Located):
    """A sweep configuration ``heir sweep`` refuses."""
