"""What every pipeline shares: the :class:`Solution` record, model lookup per role, turning an answer
into a whole program, and the public-tests-only runner that feedback pipelines use.

Hidden tests never reach an agent or the sandbox from a pipeline, by construction:

* agents render prompts from a :class:`~corecode.agents.TaskView`, which has no ``tests`` field;
* feedback goes through :class:`PublicTestRunner`, which keeps only a copy of the problem whose ``tests``
  *are* its public tests (and drops reference solutions and metadata), and runs nothing else.

Failure policy: a :class:`~corecode.errors.BackendError` propagates (with the role, model and problem id
added by the agent), because a dead model server is not a wrong program. An answer without code is data:
the solution's ``program`` is empty and ``failure`` says why ("empty_output" or "no_code").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from corecode.agents import ROLES, Agent, AgentCall, TaskView, format_test
from corecode.backends.base import Backend, SamplingConfig
from corecode.errors import ConfigError
from corecode.parsing import Plan, complete_program, extract_code, parse_plan
from corecode.types import ExecutionResult, IOMode, Problem

__all__ = [
    "Solution",
    "Pipeline",
    "PublicTestRunner",
    "SandboxLike",
    "finish_program",
    "format_feedback",
    "NoOptions",
]

_FEEDBACK_DETAIL_CHARS = 400  # per failing test: enough for a traceback's last lines, short for a 0.5B model


@dataclass(frozen=True)
class Solution:
    """A pipeline's answer to one problem: the program and the trace of every agent call."""

    problem_id: str
    pipeline: str
    program: str  # a whole Python file; "" when the model gave no code
    trace: tuple[AgentCall, ...]
    plan: str | None = None  # the plan the final program was written from (raw text)
    failure: str | None = None  # None, "empty_output" or "no_code"
    rounds: int = 0  # feedback rounds used (reflexion, mapcoder)
    public_passed: bool | None = None  # the final program on the public tests (feedback pipelines)

    @property
    def parsed_plan(self) -> Plan | None:
        return parse_plan(self.plan) if self.plan is not None else None

    @property
    def prompt_tokens(self) -> int:
        return sum(call.prompt_tokens for call in self.trace)

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.trace)

    def to_dict(self) -> dict[str, Any]:
        parsed = self.parsed_plan
        return {
            "problem_id": self.problem_id,
            "pipeline": self.pipeline,
            "program": self.program,
            "plan": self.plan,
            "plan_parts": parsed.to_dict() if parsed else None,
            "failure": self.failure,
            "rounds": self.rounds,
            "public_passed": self.public_passed,
            "n_calls": len(self.trace),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "trace": [call.to_dict() for call in self.trace],
        }


def finish_program(view: TaskView, output: str) -> tuple[str, str | None]:
    """(whole program, failure) from an agent's raw answer."""
    if not output or not output.strip():
        return "", "empty_output"
    function_style = view.io_mode is IOMode.FUNCTION
    code = extract_code(output, entry_point=view.entry_point if function_style else None)
    if code is None:
        return "", "no_code"
    if function_style:
        code = complete_program(code, starter_code=view.starter_code, entry_point=view.entry_point)
    return code, None


class SandboxLike(Protocol):
    """The part of :class:`corecode.sandbox.Sandbox` a pipeline uses."""

    def run(self, program: str, problem: Problem, tests: Any = "all") -> ExecutionResult: ...


class PublicTestRunner:
    """Runs programs on a problem's public tests only; it never holds the hidden tests."""

    def __init__(self, sandbox: SandboxLike, problem: Problem):
        self._sandbox = sandbox
        self.public_tests = tuple(problem.public_tests)
        self._problem = (
            dataclasses.replace(problem, tests=self.public_tests, reference_solutions=(), metadata={})
            if self.public_tests
            else None
        )

    @property
    def available(self) -> bool:
        """Whether there is anything to run (a problem without public tests gives no feedback)."""
        return self._problem is not None

    def run(self, program: str) -> ExecutionResult:
        if self._problem is None:
            raise ConfigError("this problem has no public tests to run")
        return self._sandbox.run(program, self._problem, tests="public")


def format_feedback(result: ExecutionResult, public_tests: Sequence[Any], max_failures: int = 3) -> str:
    """The failing public tests, their status and detail, as an agent reads them."""
    failing = [t for t in result.tests if not t.passed]
    lines = [f"{result.n_passed} of {result.n_tests} example tests passed."]
    for test_result in failing[:max_failures]:
        case = public_tests[test_result.index] if test_result.index < len(public_tests) else None
        shown = format_test(case) if case is not None else f"test {test_result.index}"
        detail = test_result.detail.strip()[-_FEEDBACK_DETAIL_CHARS:]
        lines.append(f"Test:\n{shown}\nResult: {test_result.status.value}" + (f"\n{detail}" if detail else ""))
    if len(result.tests) < result.n_tests:
        lines.append(f"{result.n_tests - len(result.tests)} test(s) did not run (the program stopped early).")
    return "\n\n".join(lines)


@dataclass(frozen=True)
class NoOptions:
    """This pipeline has no options of its own."""


def _as_models(models: Backend | Mapping[str, Backend]) -> dict[str, Backend]:
    if isinstance(models, Mapping):
        return dict(models)
    return {"default": models}


class Pipeline:
    """Base class: subclasses set ``name``, ``roles`` and ``Options``, and implement ``_solve``."""

    name: ClassVar[str] = ""
    roles: ClassVar[tuple[str, ...]] = ()
    needs_sandbox: ClassVar[bool] = False
    Options: ClassVar[type] = NoOptions

    def __init__(
        self,
        models: Backend | Mapping[str, Backend],
        sampling: SamplingConfig | None = None,
        sandbox: SandboxLike | None = None,
        options: Any = None,
        prompt_dir: str | Path | None = None,
    ):
        self.models = _as_models(models)
        self.sampling = sampling or SamplingConfig()
        self.sandbox = sandbox
        self.options = options if options is not None else self.Options()
        if self.needs_sandbox and sandbox is None:
            raise ConfigError(
                f"pipeline {self.name!r} runs public tests and needs a sandbox: "
                "build_pipeline(..., sandbox=Sandbox(SandboxConfig()))"
            )
        self.agents = {role: Agent(role, self._backend_for(role), self.sampling, prompt_dir) for role in self.roles}

    def _backend_for(self, role: str) -> Backend:
        """The role's own model, else its slot's ("planner" / "coder"), else "default"."""
        for key in (role, ROLES[role].slot, "default"):
            if key in self.models:
                return self.models[key]
        raise ConfigError(
            f"pipeline {self.name!r}: no model for role {role!r}; give models[{role!r}], "
            f"models[{ROLES[role].slot!r}] or models['default'] (given: {', '.join(sorted(self.models))})"
        )

    def solve(self, problem: Problem) -> Solution:
        """One solution; feedback pipelines see only ``problem.public_tests``."""
        return self._solve(TaskView.from_problem(problem), self._runner(problem))

    def solve_many(self, problem: Problem, n: int) -> list[Solution]:
        """``n`` independent solutions (for pass@k); batched where the pipeline allows it."""
        if n < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        return self._solve_many(TaskView.from_problem(problem), self._runner(problem), n)

    def _runner(self, problem: Problem) -> PublicTestRunner | None:
        return PublicTestRunner(self.sandbox, problem) if self.needs_sandbox and self.sandbox else None

    def _solve(self, view: TaskView, runner: PublicTestRunner | None) -> Solution:
        raise NotImplementedError

    def _solve_many(self, view: TaskView, runner: PublicTestRunner | None, n: int) -> list[Solution]:
        return [self._solve(view, runner) for _ in range(n)]

    def _solution(self, view: TaskView, trace: Sequence[AgentCall], output: str, **fields: Any) -> Solution:
        program, failure = finish_program(view, output)
        return Solution(
            problem_id=view.id, pipeline=self.name, program=program, trace=tuple(trace), failure=failure, **fields
        )

    def close(self) -> None:
        """Close every distinct backend this pipeline holds."""
        for backend in {id(b): b for b in self.models.values()}.values():
            backend.close()
