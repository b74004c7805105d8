"""CodeContests (Li et al. 2022, AlphaCode), the ``deepmind/code_contests`` schema.

Each row: ``name``, ``description`` (the full statement, examples included), ``public_tests``,
``private_tests`` and ``generated_tests`` (each ``{"input": [...], "output": [...]}``), ``time_limit``
(``{"seconds", "nanos"}``), ``memory_limit_bytes``, ``cf_rating``, ``cf_tags``, ``solutions``
(``{"language": [...], "solution": [...]}``), ``input_file`` / ``output_file`` (rarely set).

Conventions: the scoring tests are public + private + generated, as AlphaCode judged them (identical pairs
kept once); public tests are ``public_tests``. Reference solutions are the Python 3 ones (language code 3,
or the name ``PYTHON3`` in text exports). Difficulty is the Codeforces rating when known (``cf_rating`` >
0), else the dataset's difficulty label. A row with no tests at all is dropped (and reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corecode.benchmarks._common import dedupe, stdio_pairs
from corecode.benchmarks._spec import DropRow, RowContext
from corecode.types import Problem, StdioTest

__all__ = ["parse_row", "DIFFICULTY_NAMES"]

PYTHON3 = 3  # the dataset's Language enum: 0 UNKNOWN, 1 PYTHON (2), 2 CPP, 3 PYTHON3, 4 JAVA

# The dataset's Difficulty enum (index -> name), used when there is no Codeforces rating.
DIFFICULTY_NAMES = (
    "UNKNOWN_DIFFICULTY", "EASY", "MEDIUM", "HARD", "HARDER", "HARDEST", "EXTERNAL",
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T", "U", "V",
)


def _tests(row: Mapping[str, Any], ctx: RowContext, name: str) -> list[StdioTest]:
    value = ctx.get(row, name, Mapping, {})
    if not value:
        return []
    return stdio_pairs(value.get("input", []), value.get("output", []), ctx, name)


def _python3_solutions(row: Mapping[str, Any], ctx: RowContext) -> tuple[str, ...]:
    solutions = ctx.get(row, "solutions", Mapping, {})
    languages = solutions.get("language", []) or []
    codes = solutions.get("solution", []) or []
    if len(languages) != len(codes):
        raise ctx.error("solutions", f"{len(languages)} languages but {len(codes)} solutions")
    return tuple(code for lang, code in zip(languages, codes) if lang in (PYTHON3, "PYTHON3"))


def _time_limit(row: Mapping[str, Any], ctx: RowContext) -> float | None:
    value = ctx.get(row, "time_limit", (Mapping, int, float), None)
    if value is None:
        return None
    if isinstance(value, Mapping):
        seconds = (value.get("seconds") or 0) + (value.get("nanos") or 0) / 1e9
    else:
        seconds = float(value)
    return seconds or None


def _difficulty(row: Mapping[str, Any], ctx: RowContext) -> str | None:
    rating = ctx.get(row, "cf_rating", int, 0)
    if rating > 0:
        return str(rating)
    label = ctx.get(row, "difficulty", (int, str), None)
    if isinstance(label, int):
        return DIFFICULTY_NAMES[label] if 0 < label < len(DIFFICULTY_NAMES) else None
    return label


def parse_row(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    name = ctx.get(row, "name", str)
    description = ctx.get(row, "description", str)
    public = _tests(row, ctx, "public_tests")
    private = _tests(row, ctx, "private_tests")
    generated = _tests(row, ctx, "generated_tests")
    tests = dedupe([*public, *private, *generated])
    if not tests:
        raise DropRow("no public, private or generated tests")
    memory = ctx.get(row, "memory_limit_bytes", int, 0)
    return Problem(
        id=name,
        source=ctx.benchmark,
        statement=description,
        tests=tests,
        public_tests=tuple(public),
        reference_solutions=_python3_solutions(row, ctx),
        time_limit_s=_time_limit(row, ctx),
        memory_limit_mb=memory // 2**20 or None,
        difficulty=_difficulty(row, ctx),
        tags=tuple(ctx.get(row, "cf_tags", list, [])),
        input_file=ctx.get(row, "input_file", str, "") or None,
        output_file=ctx.get(row, "output_file", str, "") or None,
        split=ctx.split,
        metadata={
            "n_public": len(public), "n_private": len(private), "n_generated": len(generated),
            "cf_contest_id": row.get("cf_contest_id"), "cf_index": row.get("cf_index"),
            "source": row.get("source"),
        },
    )
