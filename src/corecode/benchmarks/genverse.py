"""The stdin/stdout sets of the CURE / ReasonFlux-Coder authors (Gen-Verse on the Hub), which CoRe-Code
trains and evaluates on: CodeContests_train, CodeContests, CodeForces, LiveBench, LiveCodeBench, MBPP.

Their README's schema: ``question`` (the task), ``test_time_limit`` (seconds, usually 1),
``example_input`` / ``example_output`` (public tests, shown to the model), ``test_input`` /
``test_output`` (the tests that score). A row without examples has no public test: its scoring tests are
never shown (feedback pipelines then have nothing to run, and the debugger stage skips the problem). Functional problems (MBPP, part of LiveCodeBench) were already
converted to stdin/stdout by the authors, so every test here is a :class:`StdioTest`.
The id is the row's ``task_id`` / ``id`` / ``question_id`` when there is one, else its row number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corecode.benchmarks._common import parse_seconds, stdio_pairs
from corecode.benchmarks._spec import DropRow, RowContext
from corecode.types import Problem

__all__ = ["parse_row"]


def _id(row: Mapping[str, Any], ctx: RowContext) -> str:
    for key in ("task_id", "id", "question_id"):
        if row.get(key) not in (None, ""):
            return f"{ctx.benchmark}/{row[key]}"
    return f"{ctx.benchmark}/{ctx.row}"


def parse_row(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    question = ctx.get(row, "question", str)
    tests = stdio_pairs(ctx.literal(row, "test_input"), ctx.literal(row, "test_output"), ctx, "test_output")
    public = stdio_pairs(
        ctx.literal(row, "example_input", []), ctx.literal(row, "example_output", []), ctx, "example_output"
    )
    if not tests:
        raise DropRow("no tests in test_input")
    return Problem(
        id=_id(row, ctx),
        source=ctx.benchmark,
        statement=question,
        tests=tuple(tests),
        public_tests=tuple(public),  # none without examples: a scoring test never reaches a prompt
        time_limit_s=parse_seconds(row.get("test_time_limit"), ctx, "test_time_limit"),
        split=ctx.split,
    )
