"""Small helpers shared by the contest-style loaders (stdin/stdout tests, limits, statements)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from corecode.benchmarks._spec import RowContext
from corecode.types import StdioTest

__all__ = [
    "as_text",
    "stdio_pairs",
    "pairs_from_dicts",
    "dedupe",
    "parse_seconds",
    "parse_megabytes",
    "contest_statement",
    "parse_date",
    "date_window",
]


def as_text(value: Any) -> str:
    """A test's input or output as one string; some exports store them as a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return str(value)


def stdio_pairs(
    inputs: Any, outputs: Any, ctx: RowContext, field: str
) -> list[StdioTest]:
    """Zip two parallel lists into stdio tests; different lengths are a malformed row."""
    if not isinstance(inputs, (list, tuple)) or not isinstance(outputs, (list, tuple)):
        raise ctx.error(field, "expected two lists (inputs and outputs)")
    if len(inputs) != len(outputs):
        raise ctx.error(field, f"{len(inputs)} inputs but {len(outputs)} outputs")
    return [StdioTest(as_text(i), as_text(o)) for i, o in zip(inputs, outputs)]


def pairs_from_dicts(items: Any, ctx: RowContext, field: str) -> list[StdioTest]:
    """``[{"input": ..., "output": ...}, ...]`` (Codeforces, LiveCodeBench) as stdio tests."""
    if not isinstance(items, (list, tuple)):
        raise ctx.error(field, f"expected a list of {{input, output}}, got {type(items).__name__}")
    tests = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or "input" not in item or "output" not in item:
            raise ctx.error(field, f"item {i} is not an object with 'input' and 'output'")
        tests.append(StdioTest(as_text(item["input"]), as_text(item["output"])))
    return tests


def dedupe(tests: Iterable[StdioTest]) -> tuple[StdioTest, ...]:
    """Keep the first of identical tests (CodeContests repeats public tests among generated ones)."""
    seen: set[StdioTest] = set()
    kept = []
    for t in tests:
        if t not in seen:
            seen.add(t)
            kept.append(t)
    return tuple(kept)


_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)")


def parse_seconds(value: Any, ctx: RowContext, field: str) -> float | None:
    """``2``, ``2.5``, ``"2 seconds"``, ``"1 second"``, ``"500 ms"`` -> seconds."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if value > 0 else None
    match = _NUMBER.match(str(value))
    if not match:
        raise ctx.error(field, f"not a time limit: {value!r}")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit in ("", "s", "sec", "secs", "second", "seconds"):
        return number
    if unit in ("ms", "millisecond", "milliseconds"):
        return number / 1000
    raise ctx.error(field, f"unknown time unit {unit!r} in {value!r}")


def parse_megabytes(value: Any, ctx: RowContext, field: str) -> int | None:
    """``256``, ``"256 megabytes"``, ``"64 MB"``, ``"1 gigabyte"`` -> MiB (as contest sites mean MB)."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value) if value > 0 else None
    match = _NUMBER.match(str(value))
    if not match:
        raise ctx.error(field, f"not a memory limit: {value!r}")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit in ("", "m", "mb", "mib", "megabyte", "megabytes"):
        return int(number)
    if unit in ("g", "gb", "gib", "gigabyte", "gigabytes"):
        return int(number * 1024)
    if unit in ("k", "kb", "kib", "kilobyte", "kilobytes"):
        return max(1, int(number / 1024))
    raise ctx.error(field, f"unknown memory unit {unit!r} in {value!r}")


def contest_statement(
    title: str, body: str, sections: Sequence[tuple[str, str]], examples: Sequence[StdioTest]
) -> str:
    """A contest problem as a contestant reads it: title, legend, input/output sections, examples."""
    parts = [f"# {title}".rstrip() if title else "", body.strip()]
    for heading, text in sections:
        if text and text.strip():
            parts.append(f"## {heading}\n{text.strip()}")
    for i, ex in enumerate(examples, start=1):
        parts.append(f"## Example {i}\nInput:\n{ex.input.rstrip()}\nOutput:\n{ex.output.rstrip()}")
    return "\n\n".join(p for p in parts if p) + "\n"


def parse_date(value: Any, ctx: RowContext | None = None, field: str = "") -> dt.date | None:
    """ISO date or datetime text, a Unix timestamp, or a date/datetime object -> date (UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, tz=dt.timezone.utc).date()
    try:
        return dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        if ctx is None:
            raise
        raise ctx.error(field, f"not an ISO date: {value!r}") from None


def date_window(options: Mapping[str, Any]) -> tuple[dt.date | None, dt.date | None]:
    """``start_date`` / ``end_date`` options (inclusive), as dates; bad text is a ConfigError."""
    from corecode.errors import ConfigError

    window = []
    for name in ("start_date", "end_date"):
        value = options.get(name)
        try:
            window.append(parse_date(value))
        except ValueError:
            raise ConfigError(f"option {name} must be an ISO date like 2024-08-01, got {value!r}") from None
    return window[0], window[1]
