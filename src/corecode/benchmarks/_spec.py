"""What a benchmark is (:class:`BenchmarkSpec`), how a row parser reports trouble, and the load report.

A row parser is a plain function ``parse(row, ctx) -> Problem``. It either returns a problem, raises
``ctx.error(field, why)`` (a malformed row: a :class:`DatasetError` naming file, row and field, which stops
the load), or raises :class:`DropRow` (a well-formed row corecode cannot use, e.g. no tests: counted in the
:class:`LoadReport` with its reason, never skipped silently).
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.errors import DatasetError
from corecode.types import Problem

__all__ = ["BenchmarkSpec", "RowContext", "DropRow", "FilteredRow", "LoadReport"]


class DropRow(Exception):
    """Raised by a row parser for a valid row that yields no usable problem; carries the reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class FilteredRow(Exception):
    """Raised by a row parser for a row an option leaves out (e.g. outside a date window); not a drop."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class RowContext:
    """Where a row came from, for error messages, and the options of this load."""

    source: str  # file path or hub:ID[config]/split
    row: int  # 1-based
    benchmark: str
    split: str | None  # the split this row belongs to, when known before parsing
    options: Mapping[str, Any] = field(default_factory=dict)

    def error(self, field_name: str | None, problem: str) -> DatasetError:
        return DatasetError(self.source, self.row, field_name, problem)

    def get(self, row: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        """``row[name]`` checked against ``kind``; missing without a default is a malformed row."""
        if name not in row or row[name] is None:
            if default is ...:
                raise self.error(name, "missing required field")
            return default
        value = row[name]
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.error(name, f"expected {names}, got {type(value).__name__}")
        return value

    def literal(self, row: Mapping[str, Any], name: str, default: Any = ...) -> Any:
        """A field that may hold a value or a JSON / Python-literal string of it (common in exports)."""
        value = self.get(row, name, object, default)
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text:
            return default if default is not ... else value
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise self.error(name, f"not a JSON or Python literal ({type(exc).__name__}: {exc})") from None


RowParser = Callable[[Mapping[str, Any], RowContext], Problem]


@dataclass(frozen=True)
class BenchmarkSpec:
    """One entry of :data:`corecode.benchmarks.BENCHMARKS`."""

    name: str
    description: str
    parse: RowParser = field(repr=False)
    splits: tuple[str, ...] = ("test",)
    default_split: str = "test"
    hub_id: str | None = None  # Hugging Face dataset id; None: local files (or built in) only
    hub_config: str | None = None
    hub_splits: Mapping[str, str] = field(default_factory=dict)  # our split -> Hub split, when they differ
    hub_kwargs: Mapping[str, Any] = field(default_factory=dict)  # extra load_dataset arguments
    hub_page: str = ""  # the Hub repo to show users when hub_id is a file loader ("json") reading its files
    # A file shipped with corecode (or an installed package) used when no path is given.
    builtin: Callable[[], Path] | None = field(default=None, repr=False)
    # When the split is a function of the row (MBPP: by task id), local files are filtered with it.
    split_of: Callable[[Mapping[str, Any], RowContext], str] | None = field(default=None, repr=False)
    options: tuple[str, ...] = ()  # names of keyword options the parser reads (e.g. start_date)
    license: str = ""

    def __post_init__(self) -> None:
        if self.default_split not in self.splits:
            raise ValueError(f"{self.name}: default split {self.default_split!r} not in {self.splits}")
        if "all" in self.splits:
            raise ValueError(f"{self.name}: 'all' is reserved for every split")


@dataclass
class LoadReport:
    """What one load read, kept and dropped (and why)."""

    benchmark: str
    split: str
    sources: list[str] = field(default_factory=list)
    rows_read: int = 0
    other_split: int = 0  # rows of a file that belong to another split (not dropped: just not asked for)
    filtered: Counter = field(default_factory=Counter)  # reason -> rows left out by an option (dates)
    dropped: Counter = field(default_factory=Counter)  # reason -> rows that yielded no usable problem
    dropped_rows: list[tuple[str, int, str]] = field(default_factory=list)  # (source, row, reason)
    problems: int = 0
    stopped_at_limit: bool = False  # limit= reached: later rows were not read
    beyond_limit: int = 0  # problems parsed but cut by limit= (cached built-in files are parsed whole)

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def summary(self) -> str:
        parts = [f"{self.benchmark}/{self.split}: {self.rows_read} rows read, {self.problems} problems"]
        if self.other_split:
            parts.append(f"{self.other_split} rows in other splits")
        for reason, count in sorted(self.filtered.items()):
            parts.append(f"{count} filtered ({reason})")
        for reason, count in sorted(self.dropped.items()):
            parts.append(f"{count} dropped ({reason})")
        if self.stopped_at_limit:
            parts.append("stopped at the limit (later rows not read)")
        if self.beyond_limit:
            parts.append(f"{self.beyond_limit} more beyond the limit")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "split": self.split,
            "sources": list(self.sources),
            "rows_read": self.rows_read,
            "problems": self.problems,
            "other_split": self.other_split,
            "filtered": dict(self.filtered),
            "dropped": dict(self.dropped),
            "dropped_rows": [list(r) for r in self.dropped_rows],
            "stopped_at_limit": self.stopped_at_limit,
            "beyond_limit": self.beyond_limit,
        }
