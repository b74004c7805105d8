"""Synthetic training problems a tiny model can learn, and a scripted frozen Coder, for CI and the learning check.

``digit_problems``: "Write f() that returns the number K", starter code ``def f():\\n    return `` and two
assert tests: ``isinstance(f(), int)`` and ``f() == K`` (and a reference solution, so stage 1 measures t_ref). With ``program_style=append`` and a one-token
completion, a random character-level policy starts near 0.1 (a digit 10% of the time earns 0.5; the right
digit 1% of the time earns 1.0) and the ceiling is 1.0; the two tests give partial credit, so GRPO gets a
signal from the first steps. The statement differs only in K, so the policy must read the prompt.

``digit_debug_problems`` adds ``assert f() == K`` as a public test and ``buggy_coder`` always writes a
wrong program: together they give the debugger stage a failing program and real feedback per problem.

``number_problems`` and ``plan_reading_coder`` are the stage-1 learning check: "Write f() that returns the
number K" for two-digit K (training K = 10..29, validation K = 30..49: disjoint problems), and a frozen
Coder whose program depends on what the plan *says*: the plan's first character is read as its
Input-Output Definition (a digit: "the output is a number", so the Coder returns int K; a letter: "the
output is text", so it returns the string "K", which fails both tests; anything else: no guidance, so it
does what it does alone). Alone, the Coder solves the problems with an even K and returns -1 on the others
(half credit: an int, the wrong one). So a Planner can hurt (CG -50 points: letters), leave it alone
(punctuation, CG 0) or help (digits, CG +50) -- the situation of the real 0.5B models in miniature -- and
only what the plan says decides which; a one-character plan of a random policy is a digit ~10 % of the time.

``exemplar_reading_backend`` is the retrieval learning check's frozen planning path (MapCoder's exemplar
planner and Coder played by one scripted backend, as the retrieval stage calls them): the exemplar planner
passes on the first character of the recalled problem's description as its plan (``(`` when nothing was
recalled), and the Coder is ``plan_reading_reply``. So a Retrieval agent that recalls "a problem" whose
description starts with a digit helps, one with a letter hurts, and nothing recalled leaves the Coder alone.

``scripted_coder`` plays the frozen Coder of stage 1 for the cpu-smoke run: a deterministic function of
the plan text (a correct program for plans whose characters hash to an even number, a wrong one
otherwise), so different plans of one group really get different rewards through the real sandbox.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any

from corecode.types import AssertTest, Problem

__all__ = [
    "digit_problems", "digit_debug_problems", "digit_validation", "scripted_coder", "buggy_coder", "alternating_coder",
    "number_problems", "plan_reading_coder", "plan_reading_reply", "exemplar_reading_backend",
]

STARTER = "def f():\n    return "


def _digit_problem(k: int, split: str, name: str = "digit", source: str = "toy-digits") -> Problem:
    return Problem(
        id=f"{name}-{k}",
        source=source,
        statement=f"Write f() that returns the number {k}.",
        tests=(AssertTest("assert isinstance(f(), int)"), AssertTest(f"assert f() == {k}")),
        starter_code=STARTER,
        entry_point="f",
        split=split,
        reference_solutions=(f"def f():\n    return {k}\n",),
    )


def digit_problems(split: str = "train", *, path: Any = None, limit: int | None = None) -> list[Problem]:
    """The toy training family: K in 3, 5, 7, 9 (validation: the same family, as the mapping is the task)."""
    problems = [_digit_problem(k, split) for k in (3, 5, 7, 9)]
    return problems[:limit] if limit else problems


def digit_debug_problems(split: str = "train", *, path: Any = None, limit: int | None = None) -> list[Problem]:
    """The digit family with ``assert f() == K`` as the public test, for the debugger stage (its feedback)."""
    problems = [dataclasses.replace(p, public_tests=(p.tests[1],)) for p in digit_problems(split)]
    return problems[:limit] if limit else problems


def digit_validation(split: str = "validation", *, path: Any = None, limit: int | None = None) -> list[Problem]:
    return digit_problems(split, limit=limit)


def _scripted_reply(conversation: Any) -> str:
    """A correct or a wrong program, chosen by the plan's hash (the last user message holds the plan)."""
    text = conversation[-1]["content"]
    even = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2 == 0
    digit = next((ch for ch in text.split("returns the number", 1)[-1] if ch.isdigit()), "0")
    value = digit if even else "-1"
    return f"```python\ndef f():\n    return {value}\n```"


def buggy_coder(**options: Any):
    """`module:factory` target: a frozen Coder whose program always returns -1 (the debugger stage's cases)."""
    from corecode.backends.scripted import ScriptedBackend

    return ScriptedBackend(lambda conversation: "```python\ndef f():\n    return -1\n```", name="buggy-coder")


def alternating_coder(**options: Any):
    """`module:factory` target: a frozen partner whose answers cycle right, right, wrong from call to call, like a
    sampled model whose quality does not depend on its prompt (the retrieval stage's CI run: a one-character
    retrieval answer cannot be parsed, so only the partner's own variation separates a group's rewards)."""
    import itertools
    import threading

    from corecode.backends.scripted import ScriptedBackend

    counter, lock = itertools.count(), threading.Lock()

    def reply(conversation: Any) -> str:
        with lock:
            right = next(counter) % 3 != 2
        text = conversation[-1]["content"]
        digit = next((ch for ch in text.split("returns the number", 1)[-1] if ch.isdigit()), "0")
        return f"```python\ndef f():\n    return {digit if right else '-1'}\n```"

    return ScriptedBackend(reply, name="alternating-coder")


def scripted_coder(**options: Any):
    """`module:factory` target for `coder_backend`: the scripted frozen Coder described above."""
    from corecode.backends.scripted import ScriptedBackend

    return ScriptedBackend(_scripted_reply, name="scripted-coder")


NUMBER_SPLITS = {"train": range(10, 30), "validation": range(30, 50)}


def number_problems(split: str = "train", *, path: Any = None, limit: int | None = None) -> list[Problem]:
    """The stage-1 learning check's problems: K = 10..29 for ``train``, 30..49 for ``validation`` (disjoint)."""
    if split not in NUMBER_SPLITS:
        raise ValueError(f"number_problems has splits {', '.join(NUMBER_SPLITS)}, not {split!r}")
    problems = [
        _digit_problem(k, split, name="number", source="toy-numbers")
        for k in NUMBER_SPLITS[split]
    ]
    return problems[:limit] if limit else problems


PLAN_HEADER = "Plan (the Algorithmic Thought written by the Planner):"


def plan_reading_reply(conversation: Any) -> str:
    """The plan-reading Coder's answer to a ``coder`` or ``coder_with_plan`` prompt (see the module docstring)."""
    text = conversation[-1]["content"]
    problem, has_plan, rest = text.partition(PLAN_HEADER)
    found = re.search(r"returns the number (\d+)", problem)
    k = int(found.group(1)) if found else 0
    alone = str(k) if k % 2 == 0 else "-1"
    value = alone
    if has_plan:
        plan = rest.split("\n\nFollow the plan", 1)[0].strip()
        first = plan[:1]
        if first.isdigit():
            value = str(k)
        elif first.isalpha():
            value = f'"{k}"'
    return f"```python\ndef f():\n    return {value}\n```"


def plan_reading_coder(**options: Any):
    """`module:factory` target for `coder_backend`: the plan-reading frozen Coder described above."""
    from corecode.backends.scripted import ScriptedBackend

    return ScriptedBackend(plan_reading_reply, name="plan-reading-coder")


EXEMPLAR_HEADER = "A problem you solved before, with its plan:"


def exemplar_reading_reply(conversation: Any) -> str:
    """The frozen planning path's answer: an ``exemplar_planner`` prompt gets the first character of the
    recalled problem's description as the plan; any other prompt is the plan-reading Coder's."""
    text = conversation[-1]["content"]
    if EXEMPLAR_HEADER not in text:
        return plan_reading_reply(conversation)
    exemplar = text.split(EXEMPLAR_HEADER, 1)[1].split("\n\nA relevant algorithm", 1)[0]
    found = re.search(r"Problem: (.)", exemplar)
    return found.group(1) if found else "("


def exemplar_reading_backend(**options: Any):
    """`module:factory` target for `coder_backend` in the retrieval learning check (see the module docstring)."""
    from corecode.backends.scripted import ScriptedBackend

    return ScriptedBackend(exemplar_reading_reply, name="exemplar-reading-path")
