"""The one loading routine every benchmark goes through: pick the rows, parse them, count what happened."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from corecode.benchmarks._files import file_rows, hub_rows
from corecode.benchmarks._spec import BenchmarkSpec, DropRow, FilteredRow, LoadReport, RowContext
from corecode.errors import ConfigError, UnknownNameError
from corecode.types import Problem

__all__ = ["load_with_report", "check_split", "MAX_DROPPED_ROWS_LISTED"]

log = logging.getLogger("corecode.benchmarks")

MAX_DROPPED_ROWS_LISTED = 200  # the report keeps counts of all, and the first rows of each for inspection


def check_split(spec: BenchmarkSpec, split: str | None) -> str:
    split = spec.default_split if split is None else split
    if split != "all" and split not in spec.splits:
        raise UnknownNameError(f"split of {spec.name}", split, (*spec.splits, "all"))
    return split


def _check_options(spec: BenchmarkSpec, options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        valid = ", ".join(spec.options) or "none"
        raise ConfigError(f"benchmark {spec.name!r} has no option {unknown[0]!r}; its options: {valid}")


def _sources(
    spec: BenchmarkSpec, split: str, path: str | Path | None
) -> Iterator[tuple[str, str | None, Iterator[tuple[int, Mapping[str, Any]]]]]:
    """Yield (source name, split of its rows when the source says so, rows)."""
    if path is None and spec.builtin is not None:
        path = spec.builtin()
    if path is not None:
        # A local file holds one split (the one asked for) unless the split is a function of the row.
        if spec.split_of is not None:
            known = None
        elif split != "all":
            known = split
        else:
            known = spec.splits[0] if len(spec.splits) == 1 else None
        yield str(path), known, file_rows(path)
        return
    if spec.hub_id is None:
        raise ConfigError(f"benchmark {spec.name!r} has no Hub dataset; pass a local file with path=/--path")
    for ours in spec.splits if split == "all" else (split,):
        hub_split = spec.hub_splits.get(ours, ours)
        name = f"hub:{spec.hub_id}" + (f"[{spec.hub_config}]" if spec.hub_config else "") + f"/{hub_split}"
        yield name, ours, hub_rows(spec.hub_id, spec.hub_config, hub_split, **dict(spec.hub_kwargs))


# Files shipped with corecode (HumanEval, MBPP) do not change while a process runs, and every eval and test
# loads them: keep their parsed problems. Keyed by the spec object itself so a replaced spec is a new entry.
_BUILTIN_CACHE: dict[tuple[Any, ...], tuple[BenchmarkSpec, tuple[Problem, ...], LoadReport]] = {}


def load_with_report(
    spec: BenchmarkSpec,
    split: str | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[list[Problem], LoadReport]:
    if limit is not None and limit < 0:
        raise ConfigError(f"limit must be >= 0, got {limit}")
    if path is not None or spec.builtin is None:
        return _load(spec, split, path=path, limit=limit, options=options)
    key = (id(spec), spec.name, check_split(spec, split), tuple(sorted((options or {}).items())))
    cached = _BUILTIN_CACHE.get(key)
    if cached is None or cached[0] is not spec:  # an id can be reused once its spec is gone
        problems, report = _load(spec, split, path=None, limit=None, options=options)
        cached = _BUILTIN_CACHE[key] = (spec, tuple(problems), report)
    _, problems, report = cached
    report = copy.deepcopy(report)
    if limit is not None and limit < len(problems):
        report.beyond_limit = len(problems) - limit
        problems = problems[:limit]
        report.problems = len(problems)
    return list(problems), report


def _load(
    spec: BenchmarkSpec,
    split: str | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[list[Problem], LoadReport]:
    split = check_split(spec, split)
    options = dict(options or {})
    _check_options(spec, options)
    report = LoadReport(spec.name, split)
    problems: list[Problem] = []
    if limit == 0:
        report.stopped_at_limit = True
        return problems, report
    for source, known_split, rows in _sources(spec, split, path):
        report.sources.append(source)
        if source.startswith("hub:"):
            from tqdm import tqdm  # only here: importing it costs more than loading a small file

            # Hub sets are large (CodeContests: 13k rows with thousands of tests each); show progress on a TTY.
            rows = tqdm(rows, desc=f"loading {source}", unit="row", leave=False, disable=None)
        for number, row in rows:
            report.rows_read += 1
            ctx = RowContext(source, number, spec.name, known_split, options)
            if spec.split_of is not None:
                row_split = spec.split_of(row, ctx)
                if split != "all" and row_split != split:
                    report.other_split += 1
                    continue
                ctx = RowContext(source, number, spec.name, row_split, options)
            try:
                problem = spec.parse(row, ctx)
            except FilteredRow as why:
                report.filtered[why.reason] += 1
                continue
            except DropRow as why:
                report.dropped[why.reason] += 1
                if len(report.dropped_rows) < MAX_DROPPED_ROWS_LISTED:
                    report.dropped_rows.append((source, number, why.reason))
                continue
            problems.append(problem)
            if limit is not None and len(problems) >= limit:
                break  # rows after this one are not read: the report counts what was read
        if limit is not None and len(problems) >= limit:
            report.stopped_at_limit = True
            break
    report.problems = len(problems)
    if report.n_dropped:
        log.warning("%s", report.summary())
    return problems, report
