"""Synthetic training problems a tiny model can learn, and a scripted frozen Coder, for CI and the learning check.

``digit_problems``: "Write f() that returns the number K", starter code ``def f():\\n    return `` and two
assert tests: ``isinstance(f(), int)`` and ``f() == K`` (and a reference solution, so stage 1 measures t_ref). With ``program_style=append`` and a one-token
completion, a random character-level policy starts near 0.1 (a digit 10% of the time earns 0.5; the right
digit 1% of the time earns 1.0) and the ceiling is 1.0; the two tests give partial credit, so GRPO gets a
signal from the first steps. The statement differs only in K, so the policy must read the prompt.

``digit_debug_problems`` adds ``assert f() == K`` as a public test and ``buggy_coder`` always writes a
wrong program: together they give the debugger stage a failing program and real feedback per problem.

``scripted_coder`` plays the frozen Coder of stage 1 for the cpu-smoke run: a deterministic function of
the plan text (a correct program for plans whose characters hash to an even number, a wrong one
otherwise), so different plans of one group really get different rewards through the real sandbox.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from corecode.types import AssertTest, Problem

__all__ = ["digit_problems", "digit_debug_problems", "digit_validation", "scripted_coder", "buggy_coder", "alternating_coder"]

STARTER = "def f():\n    return "


def _digit_problem(k: int, split: str) -> Problem:
    return Problem(
        id=f"digit-{k}",
        source="toy-digits",
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
