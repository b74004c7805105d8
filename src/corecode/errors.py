"""The one exception tree of corecode.

A failing *program* is data (see :class:`corecode.types.Status`); a failure of corecode's own machinery
(a bad file, an unknown name, a missing extra, a broken sandbox, an unreachable model server) is one of
these exceptions, with a message that says what to fix.

    CorecodeError
    ├── ConfigError              bad option values or combinations
    ├── UnknownNameError         a name not in a table (lists the valid ones)
    ├── MissingDependencyError   an optional extra is not installed (names the extra)
    ├── DatasetError             a malformed data file (names the file, row and field)
    ├── SandboxError             the execution engine itself failed (never a program's fault)
    ├── ModelError               the built-in model files are missing or corrupt
    ├── BackendError             a model backend failed
    │   ├── BackendAuthError
    │   ├── BackendModelNotFoundError
    │   └── BackendTimeoutError
    └── TrainingError
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CorecodeError",
    "ConfigError",
    "UnknownNameError",
    "MissingDependencyError",
    "DatasetError",
    "SandboxError",
    "ModelError",
    "BackendError",
    "BackendAuthError",
    "BackendModelNotFoundError",
    "BackendTimeoutError",
    "TrainingError",
]


class CorecodeError(Exception):
    """Base class of every error corecode raises on purpose."""


class ConfigError(CorecodeError, ValueError):
    """An option has a bad value, or two options do not go together."""


class UnknownNameError(CorecodeError, KeyError):
    """A name that is not in one of corecode's tables (benchmarks, pipelines, backends, ...)."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]):
        self.kind = kind
        self.name = name
        self.valid = sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid: {', '.join(self.valid)}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class MissingDependencyError(CorecodeError, ImportError):
    """An optional dependency is missing; the message names the extra that installs it."""

    def __init__(self, package: str, extra: str, feature: str):
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the package {package!r}, which is not installed; "
            f"install it with: pip install -c constraints.txt 'corecode[{extra}]'"
        )


class DatasetError(CorecodeError, ValueError):
    """A malformed row in a data file. Names the file, the row (1-based) and the field."""

    def __init__(self, source: str, row: int | None, field: str | None, problem: str):
        self.source = source
        self.row = row
        self.field = field
        where = source
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {problem}")


class SandboxError(CorecodeError, RuntimeError):
    """The execution engine failed on our side. Never turned into a score of 0."""


class ModelError(CorecodeError, RuntimeError):
    """Model files are missing, incomplete or do not match their checksum."""


class BackendError(CorecodeError, RuntimeError):
    """A model backend failed to produce completions."""


class BackendAuthError(BackendError):
    """The server refused our credentials (HTTP 401/403)."""


class BackendModelNotFoundError(BackendError):
    """The server does not serve the requested model (HTTP 404)."""


class BackendTimeoutError(BackendError):
    """The backend did not answer in time, after all retries."""


class TrainingError(CorecodeError, RuntimeError):
    """Training could not start or continue."""
