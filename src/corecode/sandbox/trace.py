"""Traced runs: run a program once on one input and record what it left (stdout, a call's value, its last
module-level variables of simple type), for prompts that ask a model to predict a program's execution
(CodeRL+'s execution-semantics alignment, docs/baselines.md). Standard library only.

A traced run is a job with one stdin/stdout case and a ``trace`` entry in its public part: the stdio child
runs the program as ``__main__`` on ``stdin``, evaluates ``call`` (an expression such as ``f(3)``, the
caller's *input*, never an expected value) in the program's namespace if the module ran to its end, and
then sends, on its result channel, the call's value and the last ``max_variables`` module-level names
(not starting with ``_``) whose values are plain data: built-in scalars and containers of them, read as
the judge's program child reads answers (exact types from base storage, with functions bound before the
program ran; ``_jobchild._make_recorder``), at most 2 KiB each in marshal form. "Last" is the namespace's
order, i.e. the order in which names were *first* bound. The worker and the judge decode nothing of it
(the judge forwards the bytes as hex); this module decodes them with the bounded decoder
(``_safemarshal``). Nothing changes for test jobs: no expected value is part of a traced job (its one
stdio case expects ""; its verdict is ignored), and whatever the program does to its recorder can only
change its own recorded values, as for the answers of a program child.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

from corecode.errors import ConfigError
from corecode.sandbox import _safemarshal
from corecode.sandbox.jobs import build_job
from corecode.types import AssertTest, CallTest, ExecutionResult, Problem, StdioTest

__all__ = ["ProgramTrace", "run_trace", "first_input"]

# statuses of the traced stdio case that mean "the program ran to its end" (the verdict against "" is moot)
_RAN = ("passed", "wrong_answer")


@dataclass(frozen=True)
class ProgramTrace:
    """What one traced run left. ``error`` is None when the module ran to its end, else what stopped it (an
    exception class name, ``timeout``, ``memory_exceeded`` ...); ``stdout`` is capped (SandboxConfig.
    capture_bytes). ``returned`` says whether ``call`` was evaluated and gave a plain ``value``;
    ``call_error`` names its exception (or ``unplain``). ``variables``: (name, value) pairs, oldest first."""

    error: str | None
    stdout: str
    returned: bool = False
    value: Any = None
    call_error: str | None = None
    variables: tuple[tuple[str, Any], ...] = ()


def run_trace(sandbox: Any, program: str, *, stdin: str = "", call: str | None = None, max_variables: int = 3,
              time_limit_s: float | None = None) -> ProgramTrace:
    """One traced run of ``program`` in ``sandbox`` (a :class:`corecode.sandbox.Sandbox`)."""
    if call is not None:
        try:
            compile(call, "call.py", "eval")
        except (SyntaxError, ValueError) as exc:
            raise ConfigError(f"trace call {call!r} is not an expression: {exc}") from None
    if max_variables < 0:
        raise ConfigError(f"max_variables must be >= 0, got {max_variables}")
    config = sandbox.config
    limit = time_limit_s or config.time_limit_s or config.default_time_limit_s
    job = build_job(program, [StdioTest(input=stdin, output="")], setup_code="", time_limits=[limit],
                    checker=None, config=config, measure_items=False)
    job.public["trace"] = {"call": call, "max_vars": int(max_variables)}
    reply = sandbox._execute_reply(job)
    if isinstance(reply, ExecutionResult):  # it brought its worker down twice
        return ProgramTrace(error="runtime_error", stdout="")
    test = reply["tests"][0]
    status = test["status"]
    error = None if status in _RAN else (test.get("exception") or status)
    frames = test.get("trace") or []
    returned, value, call_error, variables = False, None, None, []
    for frame in frames:
        if not isinstance(frame, list) or not frame:
            continue
        try:
            if frame[0] == "return" and len(frame) == 2:
                value, returned = _decode(frame[1]), True
            elif frame[0] == "return_error" and len(frame) == 2:
                call_error = str(frame[1])
            elif frame[0] == "return_unplain":
                call_error = "unplain"
            elif frame[0] == "var" and len(frame) == 3 and _variable_name(frame[1]):
                variables.append((frame[1], _decode(frame[2])))
        except ValueError:  # a malformed value (only the program itself could forge one): left out
            continue
    return ProgramTrace(error=error, stdout=str(test.get("stdout", "")), returned=returned, value=value,
                        call_error=call_error, variables=tuple(variables[-max_variables:] if max_variables else ()))


def _variable_name(name: Any) -> bool:
    """A name a prompt can show: an identifier of at most 100 characters. The namespace can hold any string
    (``globals()["z\\udcffz"] = 3``, or a forged frame's "name" with newlines): a lone surrogate in a
    prompt cannot be encoded as UTF-8, so no tokenizer takes it, and CodeRL+ stopped."""
    return type(name) is str and len(name) <= 100 and name.isidentifier() and not name.startswith("_")


def _decode(text: Any) -> Any:
    if type(text) is not str or len(text) > 2 * 2048:
        raise ValueError("not a recorded value")
    data = bytes.fromhex(text)
    value = _safemarshal.loads(data, max_depth=16)
    _tree(value, len(data))
    return value


def _tree(value: Any, budget: int) -> None:
    """Raise ValueError unless ``value`` is a tree of at most ``budget`` nodes.

    The recorder sends copies, in which no container is shared, so their node count is at most their byte
    count. A frame the program forged (it can reach the emitter through its caller's frame) can use
    marshal's back-references to share a container: a cycle (``[[...]]``), or 10 levels of 38 references
    each (2 KiB: 38**10 leaves), which anything that walks it (``plain_json``, ``repr``, ``json.dumps``)
    would expand without end in the trainer.
    """
    stack, seen = [value], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > budget:
            raise ValueError("a recorded value shares containers (not a tree)")
        if type(item) is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif type(item) in (list, tuple, set, frozenset):
            stack.extend(item)


def first_input(problem: Problem) -> tuple[str, str | None] | None:
    """(stdin, call) of the problem's first test, the input of a traced run; None when the first test has
    no input that can be separated from its expected value.

    * stdin/stdout test: (its input, None);
    * call test: ("", ``fn(arg, ...)``) when every argument's ``repr`` reads back as the same literal;
    * assert test: ("", the first call of the entry point in it, outermost first), e.g. ``f(3)`` of
      ``assert f(3) == 9`` or of ``assert isinstance(f(3), int)``: the program's input, never the expected
      side; None when the test does not parse or never calls the entry point.
    """
    test = problem.tests[0]
    if isinstance(test, StdioTest):
        return test.input, None
    if isinstance(test, CallTest):
        parts = []
        for arg in test.args:
            text = repr(arg)
            try:
                same = ast.literal_eval(text) == arg and not (isinstance(arg, float) and not math.isfinite(arg))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                same = False
            if not same:
                return None
            parts.append(text)
        return "", f"{test.fn_name}({', '.join(parts)})"
    if isinstance(test, AssertTest) and problem.entry_point:
        try:
            tree = ast.parse(test.code)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        name = problem.entry_point
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
        return ("", ast.unparse(calls[0])) if calls else None
    return None
