"""Typed, frozen records shared by every layer: problems, their tests, and execution results.

This module is the bottom layer: standard library only, no imports from the rest of corecode except errors.

A :class:`Problem` carries three shapes of test:

* :class:`AssertTest`: Python statements run after the program in the same namespace (HumanEval's
  ``check(candidate)``, MBPP's ``test_list`` with its ``test_setup_code``).
* :class:`StdioTest`: text fed on stdin and the stdout expected back (CodeContests, Codeforces, APPS,
  LiveCodeBench stdin problems).
* :class:`CallTest`: a function name, its positional arguments and the expected return value (APPS/TACO
  ``fn_name``, LiveCodeBench functional problems). The harness compares the value outside the program.

``Problem.tests`` are the tests that score a program (hidden tests; for most benchmarks all tests);
``Problem.public_tests`` are the sample tests a pipeline may show to its agents. Pipelines that use
feedback only ever see ``public_tests``.
"""

from __future__ import annotations

import datetime as _dt
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "AssertTest",
    "StdioTest",
    "CallTest",
    "TestCase",
    "Checker",
    "IOMode",
    "Problem",
    "Status",
    "TestResult",
    "Measurement",
    "ExecutionResult",
]


@dataclass(frozen=True)
class AssertTest:
    """Python statements (usually ``assert``) run after the program, in its namespace."""

    code: str
    kind: str = field(default="assert", init=False)


@dataclass(frozen=True)
class StdioTest:
    """A stdin/stdout pair; the harness compares the program's stdout with ``output``."""

    input: str
    output: str
    kind: str = field(default="stdio", init=False)


@dataclass(frozen=True)
class CallTest:
    """Call ``fn_name(*args)``; the harness compares the returned value with ``expected`` (JSON-like)."""

    fn_name: str
    args: tuple[Any, ...]
    expected: Any
    kind: str = field(default="call", init=False)


TestCase = Union[AssertTest, StdioTest, CallTest]


@dataclass(frozen=True)
class Checker:
    """A custom checker for problems with several valid answers.

    ``source`` is a Python program that defines ``check(input: str, expected: str, actual: str) -> bool``.
    It runs in the sandbox too (it may be contest-provided code), never in the harness process.
    """

    source: str
    language: str = "python"


class IOMode(str, enum.Enum):
    """How a program talks to its tests."""

    FUNCTION = "function"  # defines a function (assert and call tests)
    STDIO = "stdio"  # reads stdin, writes stdout
    FILE = "file"  # reads input_file, writes output_file (some Codeforces problems)


@dataclass(frozen=True)
class Problem:
    """One coding problem, whatever benchmark it came from."""

    id: str
    source: str  # benchmark name, e.g. "humaneval", "mbpp"
    statement: str  # what the model reads
    tests: tuple[TestCase, ...]
    public_tests: tuple[TestCase, ...] = ()
    starter_code: str | None = None  # code prefix (HumanEval prompt, APPS starter code)
    entry_point: str | None = None  # function name for function-style problems
    test_setup_code: str = ""  # run before the tests (MBPP test_setup_code, HumanEval's imports)
    reference_solutions: tuple[str, ...] = ()
    time_limit_s: float | None = None  # per test
    memory_limit_mb: int | None = None
    difficulty: str | None = None  # as the benchmark states it (e.g. "introductory", "1500")
    tags: tuple[str, ...] = ()
    contest_date: _dt.date | None = None
    checker: Checker | None = None
    input_file: str | None = None  # for IOMode.FILE
    output_file: str | None = None
    split: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("Problem.id must be non-empty")
        if not self.tests:
            raise ValueError(f"problem {self.id!r} has no tests")

    @property
    def io_mode(self) -> IOMode:
        if self.input_file or self.output_file:
            return IOMode.FILE
        if all(isinstance(t, StdioTest) for t in self.tests):
            return IOMode.STDIO
        return IOMode.FUNCTION

    @property
    def prompt(self) -> str:
        """The human-eval convention: a completion is appended to this to form the program."""
        return self.starter_code or ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable view (for traces, logs and `benchmarks show --json`)."""

        def case(t: TestCase) -> dict[str, Any]:
            if isinstance(t, AssertTest):
                return {"kind": "assert", "code": t.code}
            if isinstance(t, StdioTest):
                return {"kind": "stdio", "input": t.input, "output": t.output}
            return {"kind": "call", "fn_name": t.fn_name, "args": list(t.args), "expected": t.expected}

        return {
            "id": self.id,
            "source": self.source,
            "split": self.split,
            "statement": self.statement,
            "starter_code": self.starter_code,
            "entry_point": self.entry_point,
            "test_setup_code": self.test_setup_code,
            "io_mode": self.io_mode.value,
            "tests": [case(t) for t in self.tests],
            "public_tests": [case(t) for t in self.public_tests],
            "reference_solutions": list(self.reference_solutions),
            "time_limit_s": self.time_limit_s,
            "memory_limit_mb": self.memory_limit_mb,
            "difficulty": self.difficulty,
            "tags": list(self.tags),
            "contest_date": self.contest_date.isoformat() if self.contest_date else None,
            "checker": self.checker.source if self.checker else None,
            "input_file": self.input_file,
            "output_file": self.output_file,
        }


def test_case_from_dict(d: Mapping[str, Any]) -> TestCase:
    """Inverse of the per-case part of :meth:`Problem.to_dict` (used by ``--tests TESTS.jsonl``)."""
    kind = d.get("kind")
    if kind == "assert":
        return AssertTest(code=str(d["code"]))
    if kind == "stdio":
        return StdioTest(input=str(d["input"]), output=str(d["output"]))
    if kind == "call":
        return CallTest(fn_name=str(d["fn_name"]), args=tuple(d["args"]), expected=d["expected"])
    raise ValueError(f"unknown test kind {kind!r}; valid: assert, stdio, call")


class Status(str, enum.Enum):
    """Outcome of one test (or, for a whole program, of its first failing test)."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_EXCEEDED = "memory_exceeded"
    SYNTAX_ERROR = "syntax_error"
    OUTPUT_LIMIT = "output_limit"
    NOT_RUN = "not_run"  # the program ended (exit, kill) before this test ran


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test case."""

    __test__ = False  # not a pytest test class, despite its name

    index: int
    status: Status
    cpu_time_s: float = 0.0
    wall_time_s: float = 0.0
    peak_memory_bytes: int = 0  # above the interpreter's baseline
    exception: str | None = None  # exception class name for RUNTIME_ERROR
    detail: str = ""  # short human-readable reason (truncated traceback, diff)
    stdout: str = ""  # capped
    stderr: str = ""  # capped

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED


@dataclass(frozen=True)
class Measurement:
    """CPU time and peak memory of one *whole execution* of a passing program (``corecode.sandbox.measure``).

    A whole execution is everything the program does for its tests: its module-level code and every test
    (function problems), or one run per stdin/stdout test (stdio problems). Both numbers are read by the
    sandbox worker from outside the program, every measured run a fresh process whose results are checked
    against the expected answers (docs/sandbox.md, "Measuring efficiency"): CPU = max(per-loop time,
    single-run time - slack), peak = max(traced allocations, the kernel meters' peak - slack). ``ok`` is
    False when the measurement failed or a measured run did not produce the expected answers: then the
    numbers are the limits the program is charged (no efficiency credit), and ``detail`` says why.
    """

    __test__ = False

    cpu_time_s: float
    peak_memory_bytes: int
    repetitions: int = 1  # executions of the looped run
    rounds: int = 1
    ok: bool = True
    detail: str = ""
    cached: bool = False  # copied from an identical program (same normalized source) of the same batch
    cost_cpu_s: float = 0.0  # CPU the measurement job's children used (all their runs, set-up included)

    def to_dict(self) -> dict[str, Any]:
        return {"cpu_time_s": self.cpu_time_s, "peak_memory_bytes": self.peak_memory_bytes,
                "repetitions": self.repetitions, "rounds": self.rounds, "ok": self.ok, "detail": self.detail,
                "cached": self.cached, "cost_cpu_s": self.cost_cpu_s}


@dataclass(frozen=True)
class ExecutionResult:
    """The outcome of one program against a list of tests.

    ``cpu_time_s`` and ``peak_memory_bytes`` are the whole-program :class:`Measurement` when the program was
    measured (it passed and was run through ``corecode.sandbox.measure``), else the sum of the per-test CPU
    times and the largest per-test peak (which leave out module-level work; not comparable across programs).
    """

    tests: tuple[TestResult, ...]
    n_tests: int  # how many tests were asked for (a program that dies early has fewer results)
    wall_time_s: float = 0.0
    measurement: Measurement | None = None

    @property
    def n_passed(self) -> int:
        return sum(1 for t in self.tests if t.passed)

    @property
    def pass_rate(self) -> float:
        return self.n_passed / self.n_tests if self.n_tests else 0.0

    @property
    def passed(self) -> bool:
        return self.n_tests > 0 and self.n_passed == self.n_tests

    @property
    def status(self) -> Status:
        for t in self.tests:
            if not t.passed:
                return t.status
        return Status.PASSED if self.passed else Status.NOT_RUN

    @property
    def cpu_time_s(self) -> float:
        if self.measurement is not None:
            return self.measurement.cpu_time_s
        return sum(t.cpu_time_s for t in self.tests)

    @property
    def peak_memory_bytes(self) -> int:
        if self.measurement is not None:
            return self.measurement.peak_memory_bytes
        return max((t.peak_memory_bytes for t in self.tests), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "n_passed": self.n_passed,
            "n_tests": self.n_tests,
            "cpu_time_s": self.cpu_time_s,
            "wall_time_s": self.wall_time_s,
            "peak_memory_bytes": self.peak_memory_bytes,
            "measurement": None if self.measurement is None else self.measurement.to_dict(),
            "tests": [
                {
                    "index": t.index,
                    "status": t.status.value,
                    "cpu_time_s": t.cpu_time_s,
                    "wall_time_s": t.wall_time_s,
                    "peak_memory_bytes": t.peak_memory_bytes,
                    "exception": t.exception,
                    "detail": t.detail,
                }
                for t in self.tests
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())
