"""Cyclomatic complexity of a Python program, from its syntax tree (standard library ``ast``).

We use McCabe's count for a whole program: ``1 + number of decision points`` anywhere in the file
(module level, functions, classes, nested functions and lambdas alike: one number per program, because the
generated programs are compared as wholes). A decision point is each of:

* ``if`` and each ``elif`` (``ast.If``), the conditional expression ``a if c else b`` (``ast.IfExp``);
* loops: ``for``, ``async for``, ``while`` (their ``else`` clause adds nothing);
* each ``except`` clause of a ``try`` (``ast.ExceptHandler``; ``finally`` and ``else`` add nothing);
* each ``for`` clause and each ``if`` filter of a comprehension or generator expression;
* boolean operators: ``a and b and c`` adds 2 (one per extra operand), likewise ``or``;
* each ``case`` of a ``match`` statement except a catch-all (``case _:`` or ``case name:`` without a guard),
  which is the statement's ``else``, not a decision;
* ``assert`` adds 1 (it is a branch that raises).

Not counted: ``with``, ``return``/``break``/``continue``, ``try``/``finally`` themselves, function and
class definitions, calls (recursion is not a branch here), comparisons chains (``a < b < c``).
A program that does not parse, or has no statement at all (empty, only comments), has no complexity:
:func:`cyclomatic_complexity` returns ``None``.

What the model did not write does not count: given the problem's ``starter_code``, the program's top-level
statements that are the starter's own (its imports and helper functions, put in front by
:func:`corecode.parsing.complete_program`; the entry point's definition is the model's, it is never left out)
add no decision points.
"""

from __future__ import annotations

import ast
import warnings

__all__ = ["cyclomatic_complexity", "decision_points", "is_empty_program"]

_ONE_POINT = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Assert)


def decision_points(tree: ast.AST) -> int:
    """Number of decision points in a syntax tree (see the module docstring for what counts)."""
    points = 0
    for node in ast.walk(tree):
        if isinstance(node, _ONE_POINT):
            points += 1
        elif isinstance(node, ast.comprehension):
            points += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            points += len(node.values) - 1
        elif isinstance(node, ast.Match):
            points += sum(not _catch_all(case) for case in node.cases)
    return points


def _catch_all(case: ast.match_case) -> bool:
    """``case _:`` / ``case name:`` without a guard: always taken when reached, like ``else``."""
    return isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None and case.guard is None


def _parse(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            # invalid escape sequences in generated code are the program's business, not ours
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return None


def _starter_statements(starter_code: str | None, entry_point: str | None) -> set[str]:
    """The starter code's top-level statements (as ``ast.dump``), its entry point's definition excepted."""
    tree = _parse(starter_code) if starter_code else None
    if tree is None:
        return set()
    return {
        ast.dump(node)
        for node in tree.body
        if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == entry_point)
    }


def is_empty_program(source: str) -> bool:
    """Valid Python without a single statement (empty, blank, only comments): no program at all."""
    tree = _parse(source)
    return tree is not None and not tree.body


def cyclomatic_complexity(
    source: str, starter_code: str | None = None, entry_point: str | None = None
) -> int | None:
    """``1 + decision points`` of a whole program, or ``None`` when it is not valid Python or is empty.

    The starter code's own top-level statements (other than ``entry_point``'s definition) are left out.

    >>> cyclomatic_complexity("def f(x):\\n    return x")
    1
    >>> cyclomatic_complexity("def f(x):\\n    if x > 0 and x < 9:\\n        return 1\\n    return 0")
    3
    >>> cyclomatic_complexity("def f(:") is None, cyclomatic_complexity("# nothing") is None
    (True, True)
    """
    tree = _parse(source)
    if tree is None or not tree.body:
        return None
    starter = _starter_statements(starter_code, entry_point)
    return 1 + sum(decision_points(node) for node in tree.body if ast.dump(node) not in starter)
