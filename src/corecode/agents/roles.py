"""Roles (a prompt plus what it needs) and :class:`Agent`, which calls a backend and records the call.

Every role renders its prompt from a :class:`~corecode.agents.view.TaskView` (never the full problem)
plus the role's own inputs (a plan, a failing program and its test feedback, ...). Each call is recorded
as an :class:`AgentCall` in the pipeline's trace.

A backend failure is not a program failure: :class:`~corecode.errors.BackendError` propagates, re-raised
with the role, the model and the problem id added, so that an evaluation run stops with an actionable
message instead of scoring a dead server as wrong answers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corecode.agents.render import render_template
from corecode.agents.view import TaskView, format_problem, io_instructions, test_instructions
from corecode.backends.base import Backend, Completion, SamplingConfig
from corecode.errors import BackendError

__all__ = ["Role", "ROLES", "AgentCall", "Agent", "role_variables", "render_prompt", "shown_plan", "NO_PLAN"]


@dataclass(frozen=True)
class Role:
    """A role: its prompt template and the variables the caller must supply besides the problem."""

    name: str
    template: str
    inputs: tuple[str, ...] = ()  # supplied by the pipeline (plan, program, feedback ...)
    io: bool = False  # the prompt tells how the program talks to its tests
    tests: bool = False  # the prompt tells what tests to write
    problem: bool = True  # the prompt shows the problem (False: a prompt about a program alone)
    tests_fragment: str = "_tests"  # which fragments tell it: <name>_function / <name>_stdio
    description: str = ""
    # which model plays the role when the caller gives one per slot ({"planner": b1, "coder": b2})
    slot: str = ""

    def __post_init__(self) -> None:
        if not self.slot:
            object.__setattr__(self, "slot", self.name)


_PLAN, _CODE = "planner", "coder"

ROLES: dict[str, Role] = {
    role.name: role
    for role in (
        Role("planner", "planner", description="writes the Algorithmic Thought (four parts, no code)"),
        Role("coder", "coder", io=True, description="writes the program from the problem alone"),
        Role("coder_with_plan", "coder_with_plan", ("plan",), io=True, slot=_CODE, description="codes a plan"),
        Role("cot", "cot", io=True, slot=_CODE, description="reasons step by step, then writes the program"),
        Role("scot", "scot", io=True, slot=_CODE, description="outlines sequence/branch/loop, then codes"),
        Role("self_planner", "self_planner", slot=_PLAN, description="writes a short numbered plan"),
        Role("retrieval", "retrieval", ("k",), description="recalls k similar problems and an algorithm tutorial"),
        Role(
            "exemplar_planner",
            "exemplar_planner",
            ("exemplar", "algorithm"),
            slot=_PLAN,
            description="plans by analogy with a recalled problem (MapCoder)",
        ),
        Role("plan_verifier", "plan_verifier", ("plan",), description="scores a plan's confidence, 0-100"),
        Role(
            "debugger",
            "debugger",
            ("plan", "program", "feedback"),
            io=True,
            slot=_CODE,
            description="fixes a program from its failing public tests",
        ),
        Role("reflector", "reflector", ("program", "feedback"), description="explains a failed attempt"),
        Role(
            "reflexion_coder",
            "reflexion_coder",
            ("program", "feedback", "reflection"),
            io=True,
            slot=_CODE,
            description="writes a new attempt from the last one and its reflection (Reflexion)",
        ),
        Role("test_writer", "test_writer", tests=True, description="writes unit tests for the problem"),
        Role(
            "execution_predictor",
            "execution_predictor",
            ("program", "run_input", "output_kind", "variable_names"),
            problem=False,  # the statement's examples could give away a run's output: only the program is shown
            description="predicts a program's output and final variables on one input (CodeRL+'s alignment task)",
        ),
        Role(
            "unit_test_writer",
            "unit_test_writer",
            tests=True,
            tests_fragment="_unit_test",
            description="writes ONE unit test as **Test Input:** / **Test Output:** (CURE's test writer)",
        ),
    )
}


NO_PLAN = "(no plan)"


def shown_plan(plan: str) -> str:
    """The plan text the Coder's prompt gets: stripped, and ``NO_PLAN`` when nothing is left.

    The one place that decides it, used by the planner_coder pipeline at evaluation and by every training
    stage that builds a ``coder_with_plan`` prompt, so that the Coder is trained on exactly the prompts it
    will see at evaluation.
    """
    return plan.strip() or NO_PLAN


def role_variables(
    role: Role, view: TaskView, inputs: Mapping[str, object], prompt_dir: str | Path | None = None
) -> dict[str, object]:
    """Every variable of ``role``'s prompt: the problem's, then the caller's ``inputs``."""
    variables: dict[str, object] = {"problem": format_problem(view)} if role.problem else {}
    if role.io:
        variables["io_instructions"] = io_instructions(view, prompt_dir)
    if role.tests:
        variables["test_instructions"] = test_instructions(view, prompt_dir, role.tests_fragment)
    variables.update(inputs)
    return variables


def render_prompt(
    role: str | Role, view: TaskView, prompt_dir: str | Path | None = None, **inputs: object
) -> list[dict[str, str]]:
    """The chat messages (system, user) of ``role`` for ``view`` and the role's ``inputs``."""
    role = ROLES[role] if isinstance(role, str) else role
    return render_template(role.template, role_variables(role, view, inputs, prompt_dir), prompt_dir)


@dataclass(frozen=True)
class AgentCall:
    """One completion of one agent: what it was asked, what it answered, what it cost."""

    role: str
    model: str
    messages: tuple[Mapping[str, str], ...]
    output: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    time_s: float = 0.0
    finish_reason: str = "stop"

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "output": self.output,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "time_s": self.time_s,
            "finish_reason": self.finish_reason,
        }


class Agent:
    """A role played by a backend with fixed sampling settings."""

    def __init__(
        self,
        role: str | Role,
        backend: Backend,
        sampling: SamplingConfig | None = None,
        prompt_dir: str | Path | None = None,
    ):
        self.role = ROLES[role] if isinstance(role, str) else role
        self.backend = backend
        self.sampling = sampling or SamplingConfig()
        self.prompt_dir = prompt_dir

    def messages(self, view: TaskView, **inputs: object) -> list[dict[str, str]]:
        return render_prompt(self.role, view, self.prompt_dir, **inputs)

    def call(self, view: TaskView, n: int = 1, **inputs: object) -> list[AgentCall]:
        """``n`` sampled answers to one prompt."""
        return self.call_batch([(view, inputs)], n=n)[0]

    def call_batch(
        self, requests: Sequence[tuple[TaskView, Mapping[str, object]]], n: int = 1
    ) -> list[list[AgentCall]]:
        """``n`` answers for each (view, inputs) request, in one backend call (backends batch them)."""
        conversations = [self.messages(view, **inputs) for view, inputs in requests]
        start = time.perf_counter()
        try:
            groups = self.backend.generate(conversations, self.sampling, n=n)
        except BackendError as exc:
            ids = ", ".join(dict.fromkeys(view.id for view, _ in requests))
            raise type(exc)(
                f"{self.role.name} agent (model {self.backend.name!r}) failed on problem {ids}: {exc}"
            ) from exc
        elapsed = time.perf_counter() - start
        share = elapsed / max(1, sum(len(g) for g in groups))
        return [
            [self._record(conv, completion, share) for completion in group]
            for conv, group in zip(conversations, groups)
        ]

    def _record(self, conversation: list[dict[str, str]], completion: Completion, share: float) -> AgentCall:
        return AgentCall(
            role=self.role.name,
            model=self.backend.name,
            messages=tuple(conversation),
            output=completion.text,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            time_s=completion.latency_s or share,
            finish_reason=completion.finish_reason,
        )
