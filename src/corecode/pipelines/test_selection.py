"""test_selection: best-of-N by generated unit tests, how CURE (Gen-Verse/CURE) uses its trained model.

The Coder writes ``programs`` candidate programs; the unit-test writer (role ``unit_test_writer``, one test
per answer in the ``**Test Input:** / **Test Output:**`` format of :mod:`corecode.parsing.unit_tests`)
writes ``tests`` tests; every candidate runs on every well-formed generated test in the sandbox, and the
candidate that passes the most of them is the answer (the first such candidate on a tie; the first
candidate with code when no test is well-formed). One model can play both roles (CURE's trained model)
or each role its own.

Hidden tests never reach the generated-test runs: the runner keeps a copy of the problem without its tests
and reference solutions, and gives it only the generated tests. The generated tests are run through the
sandbox's normal test path, so a candidate never sees a test's expected output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corecode.agents import AgentCall, TaskView
from corecode.errors import ConfigError
from corecode.parsing.unit_tests import parse_unit_test
from corecode.pipelines.base import Pipeline, PublicTestRunner, SandboxLike, Solution, finish_program
from corecode.types import IOMode, Problem, TestCase

__all__ = ["TestSelection", "TestSelectionOptions", "GeneratedTestRunner"]


@dataclass(frozen=True)
class TestSelectionOptions:
    __test__ = False  # not a pytest test class, despite its name

    programs: int = field(default=16, metadata={"help": "candidate programs per solution (CURE: 16)"})
    tests: int = field(default=16, metadata={"help": "generated unit tests per solution (CURE: 16)"})

    def __post_init__(self) -> None:
        if self.programs < 1 or self.tests < 1:
            raise ConfigError(f"test_selection needs programs >= 1 and tests >= 1, got {self.programs}, {self.tests}")


class GeneratedTestRunner(PublicTestRunner):
    """Runs programs on tests the pipeline's own agents wrote; holds no hidden test of the problem."""

    def __init__(self, sandbox: SandboxLike, problem: Problem):
        super().__init__(sandbox, problem)
        # what a run needs of the problem (interface, limits, setup), never its tests or references
        keep = ("id", "source", "statement", "starter_code", "entry_point", "test_setup_code", "time_limit_s",
                "memory_limit_mb", "checker", "input_file", "output_file", "split")
        self._fields = {name: getattr(problem, name) for name in keep}

    def run_generated(self, programs: list[str], tests: list[TestCase]) -> list[list[bool]]:
        """For each program, whether it passes each test (a program without code passes none)."""
        if not tests:
            return [[] for _ in programs]
        target = Problem(tests=tuple(tests), **self._fields)
        jobs = [(program, target) for program in programs if program]
        run_batch = getattr(self._sandbox, "run_batch", None)
        if run_batch is not None:
            results = iter(run_batch(jobs))
        else:
            results = iter([self._sandbox.run(program, problem) for program, problem in jobs])
        rows = []
        for program in programs:
            if not program:
                rows.append([False] * len(tests))
                continue
            result = next(results)
            passed = {t.index for t in result.tests if t.passed}
            rows.append([k in passed for k in range(len(tests))])
        return rows


class TestSelection(Pipeline):
    __test__ = False

    name = "test_selection"
    roles = ("coder", "unit_test_writer")
    needs_sandbox = True
    Options = TestSelectionOptions

    def _runner(self, problem: Problem) -> PublicTestRunner | None:
        return GeneratedTestRunner(self.sandbox, problem) if self.sandbox else None

    def _solve(self, view: TaskView, runner: PublicTestRunner | None) -> Solution:
        assert isinstance(runner, GeneratedTestRunner)  # needs_sandbox guarantees it
        coder_calls: list[AgentCall] = self.agents["coder"].call(view, n=self.options.programs)
        test_calls: list[AgentCall] = self.agents["unit_test_writer"].call(view, n=self.options.tests)
        finished = [finish_program(view, call.output) for call in coder_calls]
        function = view.io_mode is IOMode.FUNCTION
        parsed = [parse_unit_test(call.output, function=function, entry_point=view.entry_point) for call in test_calls]
        tests = [p.test for p in parsed if p.test is not None]
        rows = runner.run_generated([program for program, _ in finished], tests)
        scores = [sum(row) if program else -1 for row, (program, _) in zip(rows, finished)]
        best = max(range(len(finished)), key=lambda i: (scores[i], -i))
        program, failure = finished[best]
        return Solution(
            problem_id=view.id,
            pipeline=self.name,
            program=program,
            trace=tuple(coder_calls + test_calls),
            failure=failure,
            public_passed=None,
        )
