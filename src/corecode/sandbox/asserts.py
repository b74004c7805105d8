"""Rewrite assert tests: for the judge process (messages), and for the measurement pass (value digests).

``judge_source``: the test code the judge runs (``assert A == B`` -> ``__corecode_eq__(A, B, side)`` for an
"expected X, got Y" message; the judge evaluates it on plain values, so the semantics stay ``==``).

``rewrite_assert`` (the measurement pass of passing programs only, ``_measure``): ``assert f(x) == LITERAL``
becomes ``CHECK(k, f(x))`` so that the literal stays out of the measured process (the harness checks the
hash of the value against the literal's), also when the expected side is a literal expression of pure
built-ins (``set((4, 5))``), evaluated here; ``assert A == B`` becomes ``PAIR(k, A, B)``; other shapes run
unchanged. It decides no verdict: tests are judged by the
judge process (``_judge``), never in the program's process.
"""

from __future__ import annotations

import ast
import builtins
import functools
import secrets
from dataclasses import dataclass
from typing import Any

_TOKEN = secrets.token_hex(6)
CHECK_NAME = f"_corecode_check_{_TOKEN}"
PAIR_NAME = f"_corecode_pair_{_TOKEN}"


@dataclass(frozen=True)
class RewrittenAssert:
    source: str  # code to run in the sandbox
    sites: dict[int, tuple[str, Any]]  # site -> (mode, expected), kept by the harness
    required: tuple[int, ...]


class _Rewriter(ast.NodeTransformer):
    def __init__(self, bound: frozenset = frozenset()) -> None:
        self.bound = bound  # names the test code binds somewhere
        self.sites: dict[int, tuple[str, Any]] = {}
        self.required: list[int] = []
        self.next_site = 0
        self.conditional = 0

    def _site(self) -> int:
        site = self.next_site
        self.next_site += 1
        if not self.conditional:
            self.required.append(site)
        return site

    def _nested(self, node: ast.AST) -> ast.AST:
        self.conditional += 1
        try:
            return self.generic_visit(node)
        finally:
            self.conditional -= 1

    visit_For = visit_AsyncFor = visit_While = visit_If = visit_Try = visit_With = _nested
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda = _nested
    visit_Match = _nested

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return node
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            for value_side, literal_side in ((left, right), (right, left)):
                ok, literal = _trusted_value(literal_side, self.bound)
                if ok and not _trusted_value(value_side, self.bound)[0]:
                    return self._call(node, CHECK_NAME, "eq", literal, [value_side])
            site = self._site()
            return _stmt(node, PAIR_NAME, [ast.Constant(site), left, right])
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value in (True, False, None):
            return self._call(node, CHECK_NAME, "is", right.value, [left])
        return node

    def _call(self, node: ast.Assert, name: str, mode: str, expected: Any, args: list[ast.expr]) -> ast.AST:
        site = self._site()
        self.sites[site] = (mode, expected)
        return _stmt(node, name, [ast.Constant(site), *args])


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


# Pure built-ins a test's expected side may call (``set((4, 5))``, ``sorted([3, 1])``): evaluated here, by
# the harness, with the real built-ins, so the program cannot change the expected value it is checked
# against (in its own interpreter it could patch ``set``).
_PURE = {name: getattr(builtins, name) for name in ("set", "frozenset", "tuple", "list", "dict", "sorted", "str", "int", "float", "bool",
                      "len", "abs", "round", "sum", "min", "max", "reversed", "complex", "bytes")}
_PURE_NODES = (ast.Expression, ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Load, ast.UnaryOp,
               ast.BinOp, ast.operator, ast.unaryop, ast.Call, ast.Name, ast.Starred)


def _trusted_value(node: ast.expr, bound: frozenset = frozenset()) -> tuple[bool, Any]:
    """``ast.literal_eval``, or a literal expression calling only pure built-ins (positional arguments)
    whose names the test code never binds (``str = ...`` in a test makes ``str(...)`` not a built-in)."""
    ok, value = _literal(node)
    if ok:
        return ok, value
    tree = ast.Expression(body=node)
    callees = {id(sub.func) for sub in ast.walk(tree) if isinstance(sub, ast.Call)}
    for sub in ast.walk(tree):
        if not isinstance(sub, _PURE_NODES):
            return False, None
        if isinstance(sub, ast.Name) and (sub.id not in _PURE or sub.id in bound or id(sub) not in callees):
            return False, None
        if isinstance(sub, ast.Call) and (sub.keywords or not isinstance(sub.func, ast.Name)):
            return False, None
    try:
        value = eval(compile(ast.fix_missing_locations(tree), "<expected>", "eval"), {"__builtins__": {}}, dict(_PURE))
    except Exception:  # noqa: BLE001 - not evaluable: left to the program side as a pair
        return False, None
    if type(value) is reversed:
        return False, None
    return True, value


def _bound_names(tree: ast.AST) -> frozenset:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return frozenset(names)


def _stmt(node: ast.Assert, name: str, args: list[ast.expr]) -> ast.Expr:
    call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])
    return ast.copy_location(ast.Expr(value=call), node)


@functools.lru_cache(maxsize=8192)  # RL runs the same tests for every sample of a problem
def rewrite_assert(code: str) -> RewrittenAssert:
    """Rewrite the asserts of one test's code; raises SyntaxError if the test code does not parse.

    The result is cached and shared: treat it as read-only.
    """
    tree = ast.parse(code)
    rewriter = _Rewriter(_bound_names(tree))
    tree = ast.fix_missing_locations(rewriter.visit(tree))
    return RewrittenAssert(ast.unparse(tree), dict(rewriter.sites), tuple(rewriter.required))


class _JudgeRewriter(ast.NodeTransformer):
    """``assert A == B`` -> ``__corecode_eq__(A, B, side)`` and ``assert X is C`` -> ``__corecode_is__(X, C)``.

    Only for the judge's messages ("expected 3, got 2"): the judge evaluates the test itself, on plain
    values, so the semantics stay Python's ``==`` / ``is``.
    """

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return node
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            side = 2 if _literal(right)[0] and not _literal(left)[0] else 1 if _literal(left)[0] else 0
            # locations for the new nodes only (a fix of the whole tree cost more than the rewrite)
            return ast.fix_missing_locations(_stmt(node, "__corecode_eq__", [left, right, ast.Constant(side)]))
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value in (True, False, None):
            return ast.fix_missing_locations(_stmt(node, "__corecode_is__", [left, right]))
        return node


def judge_tree(code: str) -> ast.Module:
    """The test code the judge process runs, as a tree (raises SyntaxError if it does not parse)."""
    return _JudgeRewriter().visit(ast.parse(code))


@functools.lru_cache(maxsize=8192)
def judge_source(code: str) -> str:
    """The test code the judge process runs, as source (raises SyntaxError if it does not parse)."""
    return ast.unparse(judge_tree(code))
