"""Codeforces problems in two schemas: ``open-r1/codeforces`` and xCodeEval program synthesis.

open-r1 (``open-r1/codeforces``): ``id`` ("2063/A"), ``title``, ``description``, ``input_format``,
``output_format``, ``interaction_format``, ``note``, ``examples`` and ``official_tests`` (lists of
``{input, output}``), ``official_tests_complete``, ``time_limit`` (s), ``memory_limit`` (MB), ``rating``,
``tags``, ``input_mode`` ("stdio" / "file") with ``input_file`` / ``output_file``, ``contest_start``
(Unix time), ``generated_checker``. Scoring tests are ``official_tests``; public tests are ``examples``.
Dropped (and reported): interactive problems (stdin/stdout pairs cannot judge them) and rows without
official tests. The dataset's ``generated_checker`` uses its own calling convention, not corecode's
``check(input, expected, actual)``, so it is kept in ``metadata`` and not used as ``Problem.checker``; a
row with a ``checker`` field in corecode's convention gets one.

xCodeEval (``NTU-NLP-SG/xCodeEval``, program_synthesis; the 106-problem file of MapCoder):
``src_uid``, ``description``, ``input_spec``, ``output_spec``, ``notes``, ``sample_inputs`` /
``sample_outputs`` (lists, or their Python-literal text), ``time_limit`` ("2 seconds"), ``memory_limit``
("256 megabytes"), ``difficulty`` (rating), ``tags``, ``input_from`` / ``output_to``. The file has only
the sample tests, so they are both the tests and the public tests (``metadata["tests_are_samples"]``).

Statements are what a contestant reads: title, legend, input and output sections, examples, note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corecode.benchmarks._common import (
    contest_statement,
    pairs_from_dicts,
    parse_date,
    parse_megabytes,
    parse_seconds,
    stdio_pairs,
)
from corecode.benchmarks._spec import DropRow, RowContext
from corecode.types import Checker, Problem

__all__ = ["parse_open_r1", "parse_xcodeeval"]


def parse_open_r1(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    problem_id = ctx.get(row, "id", str)
    if ctx.get(row, "interaction_format", str, "").strip():
        raise DropRow("interactive problem")
    examples = pairs_from_dicts(ctx.get(row, "examples", list, []), ctx, "examples")
    tests = pairs_from_dicts(ctx.get(row, "official_tests", list, []), ctx, "official_tests")
    if not tests:
        raise DropRow("no official tests")
    statement = contest_statement(
        ctx.get(row, "title", str, ""),
        ctx.get(row, "description", str),
        [("Input", ctx.get(row, "input_format", str, "")), ("Output", ctx.get(row, "output_format", str, ""))],
        examples,
    )
    note = ctx.get(row, "note", str, "")
    if note.strip():
        statement += f"\n## Note\n{note.strip()}\n"
    file_mode = ctx.get(row, "input_mode", str, "stdio") == "file"
    checker = ctx.get(row, "checker", str, "")
    rating = ctx.get(row, "rating", int, None)
    return Problem(
        id=problem_id,
        source=ctx.benchmark,
        statement=statement,
        tests=tuple(tests),
        public_tests=tuple(examples),
        time_limit_s=parse_seconds(row.get("time_limit"), ctx, "time_limit"),
        memory_limit_mb=parse_megabytes(row.get("memory_limit"), ctx, "memory_limit"),
        difficulty=str(rating) if rating else None,
        tags=tuple(ctx.get(row, "tags", list, [])),
        contest_date=parse_date(row.get("contest_start"), ctx, "contest_start"),
        checker=Checker(checker) if checker.strip() else None,
        input_file=(ctx.get(row, "input_file", str, "") or None) if file_mode else None,
        output_file=(ctx.get(row, "output_file", str, "") or None) if file_mode else None,
        split=ctx.split,
        metadata={
            "official_tests_complete": row.get("official_tests_complete"),
            "generated_checker": row.get("generated_checker"),
            "contest_name": row.get("contest_name"),
        },
    )


def _io_file(value: str) -> str | None:
    # xCodeEval says "standard input" / "standard output" or names the file
    return None if not value or value.startswith("standard") else value


def parse_xcodeeval(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    src_uid = ctx.get(row, "src_uid", str)
    inputs = ctx.literal(row, "sample_inputs")
    outputs = ctx.literal(row, "sample_outputs")
    samples = stdio_pairs(inputs, outputs, ctx, "sample_outputs")
    if not samples:
        raise DropRow("no sample tests")
    statement = contest_statement(
        "",
        ctx.get(row, "description", str),
        [("Input", ctx.get(row, "input_spec", str, "")), ("Output", ctx.get(row, "output_spec", str, ""))],
        samples,
    )
    notes = ctx.get(row, "notes", str, "").strip()
    notes = notes[len("Note"):] if notes.startswith("Note") else notes  # the scrape glued the heading on
    if notes.strip():
        statement += f"\n## Note\n{notes.strip()}\n"
    difficulty = ctx.get(row, "difficulty", (int, str), None)
    return Problem(
        id=src_uid,
        source=ctx.benchmark,
        statement=statement,
        tests=tuple(samples),
        public_tests=tuple(samples),
        time_limit_s=parse_seconds(row.get("time_limit"), ctx, "time_limit"),
        memory_limit_mb=parse_megabytes(row.get("memory_limit"), ctx, "memory_limit"),
        difficulty=str(difficulty) if difficulty is not None else None,
        tags=tuple(ctx.get(row, "tags", list, [])),
        input_file=_io_file(ctx.get(row, "input_from", str, "")),
        output_file=_io_file(ctx.get(row, "output_to", str, "")),
        split=ctx.split,
        metadata={"tests_are_samples": True},
    )
