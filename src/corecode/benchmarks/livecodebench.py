"""LiveCodeBench (Jain et al. 2024) raw rows, and LiveBench's coding category that reuses its format.

LiveCodeBench (``livecodebench/code_generation_lite``): ``question_id``, ``question_title``,
``question_content``, ``platform``, ``contest_date`` (ISO), ``difficulty``, ``starter_code``,
``public_test_cases`` (JSON text), ``private_test_cases`` (JSON text, or base64 of zlib of a pickled JSON
string), ``metadata`` (JSON text with ``func_name`` for functional problems). A test case is
``{"input", "output", "testtype"}`` with testtype ``stdin`` (a :class:`StdioTest`) or ``functional``
(a :class:`CallTest`: each input line is one JSON argument, the output is the JSON return value; a
``class Solution`` method is called on an instance by the sandbox).

Options: ``start_date`` / ``end_date`` (ISO dates, inclusive) keep problems whose contest date is inside
the window -- how LiveCodeBench avoids contamination. Rows outside are counted as filtered, not dropped.

LiveBench (``livebench/coding``): ``question_id``, ``turns`` (the prompt LiveBench shows), ``task``
(``LCB_generation`` / ``coding_completion``), ``public_test_cases`` / ``private_test_cases`` as above,
``original_json`` (the LiveCodeBench row), ``release_date``. The statement is ``turns[0]``.

Scoring tests are public + private (LiveCodeBench judges on both); public tests are the public ones.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from collections.abc import Mapping
from typing import Any

from corecode.benchmarks._common import date_window, parse_date
from corecode.benchmarks._spec import DropRow, FilteredRow, RowContext
from corecode.types import CallTest, Problem, StdioTest, TestCase

__all__ = ["parse_livecodebench", "parse_livebench", "decode_test_cases"]


class _NoGlobals(pickle.Unpickler):
    """LiveCodeBench pickles a plain ``str``; refusing every global makes unpickling run no code."""

    def find_class(self, module: str, name: str):  # noqa: D401 - pickle API
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a test-case blob")


def decode_test_cases(value: Any, ctx: RowContext, field: str) -> list[Mapping[str, Any]]:
    """A test-case list from JSON text, or from base64(zlib(pickle(JSON text))), or already a list."""
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise ctx.error(field, f"expected JSON text or a list, got {type(value).__name__}")
    if not value.strip():
        return []
    try:
        cases = json.loads(value)
    except json.JSONDecodeError:
        try:
            blob = zlib.decompress(base64.b64decode(value.encode("ascii"), validate=True))
            text = _NoGlobals(io.BytesIO(blob)).load()
            cases = json.loads(text)
        except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
            raise ctx.error(field, f"neither JSON nor base64-zlib-pickled JSON ({exc})") from None
    if not isinstance(cases, list):
        raise ctx.error(field, f"expected a list of test cases, got {type(cases).__name__}")
    return cases


def _case(item: Any, fn_name: str | None, ctx: RowContext, field: str, index: int) -> TestCase:
    if not isinstance(item, Mapping) or "input" not in item or "output" not in item:
        raise ctx.error(field, f"case {index} is not an object with 'input' and 'output'")
    kind = item.get("testtype", "stdin")
    if kind == "stdin":
        return StdioTest(str(item["input"]), str(item["output"]))
    if kind != "functional":
        raise ctx.error(field, f"case {index} has unknown testtype {kind!r} (stdin or functional)")
    if not fn_name:
        raise ctx.error("metadata", "functional test cases but no func_name in metadata")
    try:
        args = tuple(json.loads(line) for line in str(item["input"]).split("\n") if line.strip())
        expected = json.loads(item["output"])
    except json.JSONDecodeError as exc:
        raise ctx.error(field, f"case {index}: functional input/output is not JSON ({exc.msg})") from None
    return CallTest(fn_name, args, expected)


def _func_name(metadata: Any, ctx: RowContext) -> str | None:
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata) if metadata.strip() else {}
        except json.JSONDecodeError:
            raise ctx.error("metadata", "not valid JSON") from None
    if not isinstance(metadata, Mapping):
        return None
    return metadata.get("func_name") or None


def _tests(row: Mapping[str, Any], ctx: RowContext, fn_name: str | None) -> tuple[list[TestCase], list[TestCase]]:
    out = []
    for field in ("public_test_cases", "private_test_cases"):
        cases = decode_test_cases(row.get(field) or [], ctx, field)
        out.append([_case(c, fn_name, ctx, field, i) for i, c in enumerate(cases)])
    return out[0], out[1]


def _in_window(date: Any, ctx: RowContext) -> None:
    start, end = date_window(ctx.options)
    if start is None and end is None:
        return
    if date is None:
        raise FilteredRow("no contest date, date window set")
    if start is not None and date < start:
        raise FilteredRow(f"before {start}")
    if end is not None and date > end:
        raise FilteredRow(f"after {end}")


def parse_livecodebench(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    question_id = str(ctx.get(row, "question_id", (str, int)))
    date = parse_date(row.get("contest_date"), ctx, "contest_date")
    _in_window(date, ctx)
    fn_name = _func_name(row.get("metadata"), ctx)
    public, private = _tests(row, ctx, fn_name)
    if not public and not private:
        raise DropRow("no test cases")
    platform = ctx.get(row, "platform", str, "")
    return Problem(
        id=question_id,
        source=ctx.benchmark,
        statement=ctx.get(row, "question_content", str),
        tests=(*public, *private),
        public_tests=tuple(public),
        starter_code=ctx.get(row, "starter_code", str, "") or None,
        entry_point=fn_name,
        difficulty=ctx.get(row, "difficulty", str, None),
        tags=(platform,) if platform else (),
        contest_date=date,
        split=ctx.split,
        metadata={"title": row.get("question_title"), "platform": platform, "contest_id": row.get("contest_id")},
    )


def parse_livebench(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    question_id = str(ctx.get(row, "question_id", (str, int)))
    turns = ctx.get(row, "turns", list)
    if not turns or not isinstance(turns[0], str):
        raise ctx.error("turns", "expected a non-empty list of prompt strings")
    original = ctx.get(row, "original_json", (Mapping, str), {})
    if isinstance(original, str):
        try:
            original = json.loads(original) if original.strip() else {}
        except json.JSONDecodeError as exc:
            raise ctx.error("original_json", f"not valid JSON ({exc.msg})") from None
    date = parse_date(row.get("release_date") or original.get("contest_date"), ctx, "release_date")
    _in_window(date, ctx)
    fn_name = _func_name(original.get("metadata"), ctx)
    public, private = _tests(row, ctx, fn_name)
    if not public and not private:
        raise DropRow("no test cases")
    return Problem(
        id=question_id,
        source=ctx.benchmark,
        statement=turns[0],
        tests=(*public, *private),
        public_tests=tuple(public),
        starter_code=original.get("starter_code") or None,
        entry_point=fn_name,
        difficulty=original.get("difficulty"),
        tags=(ctx.get(row, "task", str, ""),) if row.get("task") else (),
        contest_date=date,
        split=ctx.split,
        metadata={"task": row.get("task"), "title": row.get("question_title"),
                  "partial_solution": row.get("partial_solution")},
    )
