"""MBPP (Austin et al. 2021), full (974 problems) and sanitized (427), CC-BY 4.0.

Both ship inside corecode (``data/mbpp.jsonl.gz``, ``data/sanitized-mbpp.json.gz``) so that MBPP works on
a machine without network; ``path=`` loads another copy, and the Hub id is ``google-research-datasets/mbpp``
(configs ``full`` and ``sanitized``).

Conventions:

* Splits are by task id, as the dataset README defines them: 1-10 ``prompt`` (few-shot examples),
  11-510 ``test``, 511-600 ``validation``, 601-974 ``train``. The sanitized subset keeps the ids and so the
  ranges (7 / 257 / 43 / 120 problems).
* Tests are ``test_list`` (one :class:`AssertTest` each) with ``test_setup_code`` (full) or the joined
  ``test_imports`` (sanitized) as setup. ``challenge_test_list`` is not in the default tests (the usual
  practice; it stays in ``metadata``).
* The text alone does not name the function the tests call, so the statement follows the MBPP paper's
  prompt and appends "Your code should pass these tests:" with the *first* test only; that first test is
  also the one public test. (Showing all three, as some harnesses do, would leak every hidden test.)
* ``entry_point`` is the function the first assert calls: a name the reference solution defines when there
  is one, else the first non-builtin name called.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corecode.benchmarks._spec import DropRow, RowContext
from corecode.types import AssertTest, Problem

__all__ = ["parse_full", "parse_sanitized", "split_of", "entry_point_of", "full_path", "sanitized_path"]

DATA = Path(__file__).with_name("data")
SPLITS = ("prompt", "test", "validation", "train")


def full_path() -> Path:
    return DATA / "mbpp.jsonl.gz"


def sanitized_path() -> Path:
    return DATA / "sanitized-mbpp.json.gz"


def _split_for_id(task_id: int) -> str:
    if task_id <= 10:
        return "prompt"
    if task_id <= 510:
        return "test"
    if task_id <= 600:
        return "validation"
    return "train"


def split_of(row: Mapping[str, Any], ctx: RowContext) -> str:
    return _split_for_id(ctx.get(row, "task_id", int))


def _parse(source: str) -> ast.Module:
    # MBPP code has strings like "\d" that make the parser warn; the warning is no news to the user.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.parse(source)


def _called_names(statements: list[ast.stmt]) -> list[str]:
    """Names called in the statements, in source order (``f(g(x))`` -> ``['f', 'g']``)."""
    calls = [
        n for stmt in statements for n in ast.walk(stmt) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    ]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return [n.func.id for n in calls]  # type: ignore[attr-defined]


_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def _defined_functions(code: str) -> set[str]:
    # A regex, not ast.walk: walking 974 whole solutions took most of the load time.
    return set(_DEF.findall(code))


def entry_point_of(first_test: str | list[ast.stmt], code: str = "") -> str | None:
    """The function a test (source, or its parsed statements) calls; see the module docstring."""
    called = _called_names(_parse(first_test).body if isinstance(first_test, str) else first_test)
    defined = _defined_functions(code)
    for name in called:
        if name in defined:
            return name
    for name in called:
        if not hasattr(builtins, name):
            return name
    return None


def _tests(row: Mapping[str, Any], ctx: RowContext) -> tuple[tuple[AssertTest, ...], list[ast.stmt]]:
    """The tests, and the parsed statements of the first one (for the entry point)."""
    test_list = ctx.get(row, "test_list", list)
    for i, item in enumerate(test_list):
        if not isinstance(item, str):
            raise ctx.error("test_list", f"item {i} is {type(item).__name__}, expected an assert string")
    if not test_list:
        raise DropRow("no tests in test_list")
    try:
        # One parse for all tests: parsing was most of MBPP's load time.
        module = _parse("\n".join(test_list))
    except SyntaxError:
        for i, item in enumerate(test_list):
            try:
                _parse(item)
            except SyntaxError as exc:
                raise ctx.error("test_list", f"item {i} is not valid Python ({exc.msg})") from None
        raise ctx.error("test_list", "the tests are not valid Python together") from None
    first_lines = test_list[0].count("\n") + 1
    return tuple(AssertTest(t) for t in test_list), [n for n in module.body if n.lineno <= first_lines]


def _problem(
    row: Mapping[str, Any], ctx: RowContext, text: str, setup: str, extra: Mapping[str, Any]
) -> Problem:
    task_id = ctx.get(row, "task_id", int)
    code = ctx.get(row, "code", str, "").replace("\r\n", "\n")  # the full set has Windows line ends
    tests, first_test = _tests(row, ctx)
    entry_point = entry_point_of(first_test, code)
    if entry_point is None:
        raise ctx.error("test_list", "the first test calls no function to name as entry point")
    statement = f"{text.strip()}\nYour code should pass these tests:\n\n{tests[0].code}\n"
    return Problem(
        id=f"{ctx.benchmark}/{task_id}",
        source=ctx.benchmark,
        statement=statement,
        tests=tests,
        public_tests=tests[:1],
        entry_point=entry_point,
        test_setup_code=setup,
        reference_solutions=(code,) if code else (),
        split=_split_for_id(task_id),
        metadata={"task_id": task_id, **extra},
    )


def parse_full(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    text = ctx.get(row, "text", str)
    setup = ctx.get(row, "test_setup_code", str, "").replace("\r\n", "\n")
    challenge = ctx.get(row, "challenge_test_list", list, [])
    return _problem(row, ctx, text, setup, {"challenge_test_list": tuple(challenge)})


def parse_sanitized(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    text = ctx.get(row, "prompt", str)
    imports = ctx.get(row, "test_imports", list, [])
    if not all(isinstance(i, str) for i in imports):
        raise ctx.error("test_imports", "expected a list of import statements (strings)")
    return _problem(row, ctx, text, "\n".join(imports), {"source_file": row.get("source_file", "")})
