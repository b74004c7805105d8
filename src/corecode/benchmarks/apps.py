"""APPS (Hendrycks et al. 2021) and TACO (Li et al. 2023), and MapCoder's 150-problem APPS selection.

APPS / TACO rows (``codeparrot/apps``, ``BAAI/TACO``): ``problem_id``/``id``, ``question``,
``solutions`` (JSON text: a list of programs), ``input_output`` (JSON text:
``{"inputs": [...], "outputs": [...], "fn_name"?}``), ``starter_code``, ``difficulty``; TACO adds
``tags``/``skill_types``, ``time_limit``, ``memory_limit``.
With ``fn_name`` each test is a :class:`CallTest` (``inputs[i]`` is the argument list); APPS wraps a
return value in a one-element list, and its own checker accepts ``output == outputs[i][0]``, so a
one-element list is unwrapped. Without ``fn_name`` each test is a :class:`StdioTest` (a list of lines
is joined with newlines). Rows without tests are dropped (reported).

MapCoder's selection (``selected150.jsonl``, MIT, shipped with corecode as ``apps-150``): ``id``,
``description``, ``difficulty``, ``starter_code``, ``sample_io`` and ``test_list`` (lists of
``{"input": text, "output": [value]}``, possibly as Python-literal text). Rows with a starter function
are call-based, but the selection flattened the arguments into text, one per line. We rebuild them:
each line is a Python literal when it parses as one, else the raw text; a position where any test has
raw text is text in every test (so ``'69'`` stays a string next to ``'abc'``); more lines than
parameters are joined into the first (a string with newlines). Known limit: a string parameter whose
every test value looks like a number is read as a number.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from corecode.benchmarks._common import as_text, parse_megabytes, parse_seconds
from corecode.benchmarks._spec import DropRow, RowContext
from corecode.types import CallTest, Problem, StdioTest, TestCase

__all__ = ["parse_row", "builtin_path", "split_args"]

_SIGNATURE = re.compile(r"def\s+([A-Za-z_]\w*)\s*\((.*?)\)\s*(?:->[^:]*)?:", re.S)


def builtin_path() -> Path:
    return Path(__file__).with_name("data") / "apps-selected150.jsonl.gz"


def _signature(starter: str) -> tuple[str, list[tuple[str, bool]]] | None:
    """(function name, [(parameter, has default)]) of the first ``def`` in the starter code."""
    match = _SIGNATURE.search(starter)
    if not match:
        return None
    params = []
    for part in match.group(2).split(","):
        part = part.strip()
        if part and part != "self" and not part.startswith("*"):
            params.append((part.split("=")[0].split(":")[0].strip(), "=" in part))
    return match.group(1), params


def _unwrap(output: Any) -> Any:
    return output[0] if isinstance(output, list) and len(output) == 1 else output


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return False, text


def split_args(inputs: Sequence[str], n_params: int) -> list[tuple[Any, ...]]:
    """Rebuild argument tuples from MapCoder's one-argument-per-line text (see the module docstring)."""
    lines_per_test = []
    for text in inputs:
        lines = text.split("\n")
        if n_params and len(lines) > n_params:
            keep = n_params - 1
            lines = ["\n".join(lines[: len(lines) - keep]), *lines[len(lines) - keep :]]
        lines_per_test.append(lines)
    parsed = [[_literal(line) for line in lines] for lines in lines_per_test]
    width = max((len(p) for p in parsed), default=0)
    textual = {i for p in parsed for i, (ok, _) in enumerate(p) if not ok}
    return [
        tuple(lines[i] if i in textual else value for i, (_, value) in enumerate(p))
        for p, lines in zip(parsed, lines_per_test)
    ] if width else []


def _mapcoder_tests(items: Any, signature, ctx: RowContext, field: str) -> list[TestCase]:
    if not isinstance(items, list):
        raise ctx.error(field, f"expected a list of {{input, output}}, got {type(items).__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or "input" not in item or "output" not in item:
            raise ctx.error(field, f"item {i} is not an object with 'input' and 'output'")
    if signature is None:
        return [StdioTest(as_text(t["input"]), as_text(_unwrap(t["output"]))) for t in items]
    name, params = signature
    args = split_args([str(t["input"]) for t in items], len(params))
    return [CallTest(name, a, _unwrap(t["output"])) for a, t in zip(args, items)]


def _parse_mapcoder(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    starter = ctx.get(row, "starter_code", str, "")
    signature = _signature(starter) if starter.strip() else None
    if starter.strip() and signature is None:
        raise ctx.error("starter_code", "has no `def name(...):` to call")
    tests = _mapcoder_tests(ctx.literal(row, "test_list"), signature, ctx, "test_list")
    public = _mapcoder_tests(ctx.literal(row, "sample_io", []), signature, ctx, "sample_io")
    if not tests:
        raise DropRow("no tests in test_list")
    return Problem(
        id=f"{ctx.benchmark}/{ctx.get(row, 'id', (int, str))}",
        source=ctx.benchmark,
        statement=ctx.get(row, "description", str),
        tests=tuple(tests),
        public_tests=tuple(public) or tuple(tests[:1]),
        starter_code=starter or None,
        entry_point=signature[0] if signature else None,
        difficulty=ctx.get(row, "difficulty", str, None),
        split=ctx.split,
        metadata={"name": row.get("name")},
    )


def _apps_tests(io_spec: Mapping[str, Any], ctx: RowContext) -> list[TestCase]:
    inputs, outputs = io_spec.get("inputs"), io_spec.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ctx.error("input_output", "expected 'inputs' and 'outputs' lists of the same length")
    fn_name = io_spec.get("fn_name")
    if not fn_name:
        return [StdioTest(as_text(i), as_text(o)) for i, o in zip(inputs, outputs)]
    tests: list[TestCase] = []
    for i, (args, expected) in enumerate(zip(inputs, outputs)):
        if not isinstance(args, list):
            raise ctx.error("input_output", f"inputs[{i}] of a call-based problem must be the argument list")
        tests.append(CallTest(str(fn_name), tuple(args), _unwrap(expected)))
    return tests


def _solutions(row: Mapping[str, Any], ctx: RowContext) -> tuple[str, ...]:
    value = row.get("solutions") or []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise ctx.error("solutions", "not valid JSON") from None
    if not isinstance(value, list):
        raise ctx.error("solutions", "expected a list of programs")
    return tuple(s for s in value if isinstance(s, str))


def _parse_apps(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    raw = row.get("input_output")
    if raw in (None, ""):
        raise DropRow("no input_output")
    try:
        io_spec = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        raise ctx.error("input_output", "not valid JSON") from None
    if not isinstance(io_spec, Mapping):
        raise ctx.error("input_output", "expected an object with inputs and outputs")
    tests = _apps_tests(io_spec, ctx)
    if not tests:
        raise DropRow("no tests in input_output")
    problem_id = row.get("problem_id", row.get("id"))
    if problem_id is None:
        problem_id = ctx.row
    tags = row.get("tags") or row.get("skill_types") or []
    return Problem(
        id=f"{ctx.benchmark}/{problem_id}",
        source=ctx.benchmark,
        statement=ctx.get(row, "question", str),
        tests=tuple(tests),
        public_tests=tuple(tests[:1]),  # APPS has no separate sample tests; its statements show examples
        starter_code=ctx.get(row, "starter_code", str, "") or None,
        entry_point=io_spec.get("fn_name") or None,
        reference_solutions=_solutions(row, ctx),
        time_limit_s=parse_seconds(row.get("time_limit"), ctx, "time_limit"),
        memory_limit_mb=parse_megabytes(row.get("memory_limit"), ctx, "memory_limit"),
        difficulty=ctx.get(row, "difficulty", str, None),
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        split=ctx.split,
        metadata={"url": row.get("url")},
    )


def parse_row(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    """APPS/TACO rows have ``input_output``; MapCoder's selection has ``test_list``."""
    if "input_output" in row:
        return _parse_apps(row, ctx)
    if "test_list" in row:
        return _parse_mapcoder(row, ctx)
    raise ctx.error("input_output", "missing: neither an APPS/TACO row (input_output) nor MapCoder's (test_list)")
