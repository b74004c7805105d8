"""Cyclomatic complexity of a Python program, from its syntax tree (standard library ``ast``).

We use McCabe's count for a whole program: ``1 + number of decision points`` anywhere in the file
(module level, functions, classes, nested functions and lambdas alike: one number per program, because the
generated programs are compared as wholes). A decision point is each of:

* ``if`` and each ``elif`` (``ast.If``), the conditional expression ``a if c else b`` (``ast.IfExp``);
* loops: ``for``, ``async for``, ``while`` (their ``else`` clause adds nothing);
* each ``except`` clause of a ``try`` (``ast.ExceptHandler``; ``finally`` and ``else`` add nothing);
* each ``for`` clause and each ``if`` filter of a comprehension or generator expression;
* boolean operators: ``a and b and c`` adds 2 (one per extra operand), likewise ``or``;
* each ``case`` of a ``match`` statement (a wildcard ``case _`` too: it is a branch);
* ``assert`` adds 1 (it is a branch that raises).

Not counted: ``with``, ``return``/``break``/``continue``, ``try``/``finally`` themselves, function and
class definitions, calls (recursion is not a branch here), comparisons chains (``a < b < c``).
A program that does not parse has no complexity: :func:`cyclomatic_complexity` returns ``None``.
"""

from __future__ import annotations

import ast
import warnings

__all__ = ["cyclomatic_complexity", "decision_points"]

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
            points += len(node.cases)
    return points


def cyclomatic_complexity(source: str) -> int | None:
    """``1 + decision points`` of a whole program, or ``None`` when it is not valid Python.

    >>> cyclomatic_complexity("def f(x):\\n    return x")
    1
    >>> cyclomatic_complexity("def f(x):\\n    if x > 0 and x < 9:\\n        return 1\\n    return 0")
    3
    >>> cyclomatic_complexity("def f(:") is None
    True
    """
    try:
        with warnings.catch_warnings():
            # invalid escape sequences in generated code are the program's business, not ours
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return None
    return 1 + decision_points(tree)
