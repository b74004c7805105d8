"""Build a worker job from a program and tests: the public part and the secret part.

The public part (program, setup code, stdin inputs, limits) is what the worker and the program's
processes see. The secret part (the test code, call arguments and expected values, expected outputs, the
checker, the problem's trusted prompt code) is read only by the job's judge process, straight from the
harness's pipe, after the program's processes were forked. (``items``/``check_names`` in the public part,
tests with expected literals stripped, serve only the measurement pass of programs that already passed.)
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import marshal
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from corecode.errors import ConfigError
from corecode.sandbox.asserts import CHECK_NAME, PAIR_NAME, judge_source, judge_tree, rewrite_assert
from corecode.sandbox.config import SandboxConfig
from corecode.sandbox.refcache import CompiledTests
from corecode.types import AssertTest, CallTest, Checker, StdioTest, TestCase


@dataclass(frozen=True)
class Job:
    public: dict
    secret: dict
    n_tests: int
    timeout_s: float  # how long the harness waits for the worker's answer


@functools.lru_cache(maxsize=8192)  # RL runs the same tests for every sample of a problem
def _judge_code(code: str) -> bytes:
    """The judge's version of an assert test, compiled once here from the rewritten tree (the judge
    unmarshals it; unparsing and parsing it again cost more than the rewrite). ``optimize=0`` whatever the
    harness runs with: under ``python -O`` a plain compile drops the asserts the rewrite keeps (e.g.
    ``assert abs(f(7) - 21) < 1e-9``), and every program passed them (red team)."""
    return marshal.dumps(compile(judge_tree(code), "test.py", "exec", optimize=0))


@functools.lru_cache(maxsize=16)
def _same_interpreter(python: str) -> bool:
    """Whether the workers run this interpreter: then the judge runs the code objects compiled here and
    needs no test source (``_judge.run_function_tests``)."""
    return os.path.realpath(python) == os.path.realpath(sys.executable)


def _is_stub(node: ast.stmt) -> bool:
    """A definition the program is meant to write: a body of only a docstring, ``pass`` or ``...``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return all(isinstance(b, ast.Pass) or (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))
                   for b in node.body)
    if isinstance(node, ast.ClassDef):
        methods = [b for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return all(_is_stub(m) for m in methods)
    return False


@functools.lru_cache(maxsize=1024)
def _helpers_of(starter_code: str, entry_point: str | None) -> str:
    """The problem's own code whose definitions the tests may use from a trusted copy (HumanEval/32's
    ``poly``): the starter code without the entry point and without stubs (bodies of only a docstring,
    ``pass`` or ``...``), which are what the program writes. "" when it does not parse."""
    try:
        tree = ast.parse(starter_code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ""
    tree.body = [n for n in tree.body if not (_is_stub(n) or getattr(n, "name", None) == entry_point)]
    return ast.unparse(tree)


@functools.lru_cache(maxsize=1024)
def _trusted_code(source: str, name: str) -> bytes | None:
    """The problem's own code compiled for the judge; None when it does not compile on its own (e.g. a
    starter code that is only a signature)."""
    try:
        return marshal.dumps(compile(source, name, "exec", optimize=0))  # its asserts kept, as _judge_code's
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError):
        return None


@functools.lru_cache(maxsize=4096)
def _check_setup(code: str) -> None:
    try:
        compile(code, "test_setup.py", "exec")
    except (SyntaxError, ValueError) as exc:
        raise ConfigError(f"test setup code does not compile: {exc}") from None


def build_job(program: str, tests: Sequence[TestCase], *, setup_code: str, time_limits: Sequence[float],
              checker: Checker | None, config: SandboxConfig,
              files: tuple[str | None, str | None] = (None, None), memory_limit_mb: int | None = None,
              trusted_code: str = "", entry_point: str | None = None, measure_items: bool = True,
              compiled: CompiledTests | None = None) -> Job:
    """``files``: (input_file, output_file) of a file-I/O problem, used by its stdin/stdout tests;
    ``memory_limit_mb``: the problem's own limit, instead of the config's; ``trusted_code``: the problem's
    own code (e.g. the HumanEval prompt) whose helpers the tests use from a trusted copy, never the
    program's; ``entry_point``: the name the tests call, always taken from the program; ``measure_items``:
    also the stripped test code the measurement pass runs (test jobs do not send it); ``compiled``: the judge's
    compiled tests kept on disk across runs (``ReferenceCache.compiled``)."""
    for name in files:
        if name is not None and (not name or "/" in name or name in (".", "..")):
            raise ConfigError(f"input/output file name {name!r} must be a plain file name")
    if len(time_limits) != len(tests):
        raise ValueError("one time limit per test is needed")
    groups: list[dict] = []
    checks: list[tuple | None] = []
    outputs: dict[int, str] = {}
    function_tests: list[int] = []
    items: list[tuple] = []
    judged: list[tuple] = []
    for index, test in enumerate(tests):
        if isinstance(test, StdioTest):
            groups.append({"kind": "stdio", "tests": [index], "input": test.input})
            outputs[index] = test.output
            checks.append(None)
        elif isinstance(test, CallTest):
            try:
                args_blob = marshal.dumps(tuple(test.args))
            except ValueError as exc:
                raise ConfigError(f"test {index}: call arguments are not plain values: {exc}") from None
            items.append(("call", test.fn_name, args_blob))
            judged.append(("call", test.fn_name, tuple(test.args), test.expected))
            function_tests.append(index)
            checks.append(({0: ("json", test.expected)}, (0,)))
        elif isinstance(test, AssertTest):
            try:
                source = "" if _same_interpreter(config.python) else judge_source(test.code)
                code = _judge_code(test.code) if compiled is None else compiled.get(test.code, _judge_code)
                judged.append(("assert", code, source))
                rewritten = rewrite_assert(test.code) if measure_items else None
            except (SyntaxError, ValueError) as exc:
                raise ConfigError(f"test {index}: the test code does not compile: {exc}") from None
            items.append(("assert", rewritten.source if rewritten else ""))
            function_tests.append(index)
            checks.append((rewritten.sites, rewritten.required) if rewritten else None)
        else:
            raise ConfigError(f"test {index}: not a test case: {type(test).__name__}")
    if function_tests:
        groups.insert(0, {"kind": "function", "tests": function_tests, "items": items})
    if setup_code.strip():
        _check_setup(setup_code)
    load_cpu = max(time_limits, default=config.default_time_limit_s)
    limits = {
        "cpu": list(time_limits), "load_cpu": load_cpu,
        "wall_factor": config.wall_time_factor, "wall_extra": config.wall_time_extra_s,
        "memory": (memory_limit_mb or config.memory_limit_mb) << 20, "output": config.output_limit_mb << 20,
        "capture": config.capture_bytes, "nofile": config.max_open_files,
        "nproc": config.max_processes * (config.n_workers + 1),
    }
    wall = sum(t * config.wall_time_factor + config.wall_time_extra_s for t in [load_cpu, *time_limits])
    stdio = [time_limits[g["tests"][0]] * config.wall_time_factor + config.wall_time_extra_s
             for g in groups if g["kind"] == "stdio"]
    if config.stdio_shared_runner and len(stdio) > 1:
        wall += sum(stdio) + max(stdio)  # the shared runner's rerun of one case and, if it differs, every case
    if checker is not None:
        wall *= 2
    deadline = wall + 5.0
    public = {
        "kind": "program", "program": program, "setup": setup_code, "groups": groups, "n_tests": len(tests),
        "limits": limits, "deadline_s": deadline, "check_names": (CHECK_NAME, PAIR_NAME),
        "files": files,
    }
    helpers = _helpers_of(trusted_code, entry_point) if trusted_code.strip() else ""
    secret = {"checks": checks, "outputs": outputs, "tests": judged,
              "setup": _trusted_code(setup_code, "test_setup.py") if setup_code.strip() else None,
              "trusted": _trusted_code(helpers, "prompt.py") if helpers.strip() else None,
              "sources": {"setup": setup_code, "trusted": helpers}, "magic": importlib.util.MAGIC_NUMBER,
              "entry_point": entry_point,
              "checker": checker.source if checker is not None else None}
    return Job(public, secret, len(tests), deadline + config.job_timeout_margin_s)
