"""What agents may see of a problem: :class:`TaskView`, a copy without the hidden tests.

Pipelines turn a :class:`~corecode.types.Problem` into a TaskView first thing, and agents only ever
render prompts from a TaskView. It has no ``tests`` field and no reference solutions, so hidden tests
cannot reach a prompt by construction; only ``public_tests`` (the examples a contestant sees) are shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corecode.agents.render import load_template, render
from corecode.types import AssertTest, CallTest, IOMode, Problem, StdioTest, TestCase

__all__ = ["TaskView", "format_problem", "format_test", "io_instructions", "test_instructions"]


@dataclass(frozen=True)
class TaskView:
    """A problem as agents see it: statement, starter code, interface, and the public tests only."""

    id: str
    source: str
    statement: str
    io_mode: IOMode
    public_tests: tuple[TestCase, ...] = ()
    starter_code: str | None = None
    entry_point: str | None = None
    input_file: str | None = None
    output_file: str | None = None

    @classmethod
    def from_problem(cls, problem: Problem) -> "TaskView":
        return cls(
            id=problem.id,
            source=problem.source,
            statement=problem.statement,
            io_mode=problem.io_mode,
            public_tests=tuple(problem.public_tests),
            starter_code=problem.starter_code,
            entry_point=problem.entry_point,
            input_file=problem.input_file,
            output_file=problem.output_file,
        )


def format_test(test: TestCase) -> str:
    """One public test as a reader would write it."""
    if isinstance(test, AssertTest):
        return test.code.strip()
    if isinstance(test, StdioTest):
        return f"Input:\n{test.input.rstrip()}\nOutput:\n{test.output.rstrip()}"
    if isinstance(test, CallTest):
        args = ", ".join(repr(a) for a in test.args)
        return f"{test.fn_name}({args}) == {test.expected!r}"
    raise TypeError(f"unknown test type {type(test).__name__}")


def format_problem(view: TaskView, *, max_examples: int = 3) -> str:
    """The statement, the starter code when the statement does not already contain it, and examples."""
    text = view.statement.strip()
    if view.starter_code and view.starter_code.strip() not in text:
        text += f"\n\nStarter code:\n```python\n{view.starter_code.strip()}\n```"
    examples = [format_test(t) for t in view.public_tests[:max_examples]]
    if examples and not all(e in text for e in examples):
        joined = "\n\n".join(examples) if view.io_mode is IOMode.STDIO else "\n".join(examples)
        text += f"\n\nExamples:\n{joined}"
    return text


def _fragment(name: str, variables: dict[str, object], prompt_dir: str | Path | None) -> str:
    _, text = load_template(name, prompt_dir)
    return render(text, variables, where=f"prompt fragment {name!r}")


def io_instructions(view: TaskView, prompt_dir: str | Path | None = None) -> str:
    """How the program must talk to its tests: complete a signature, define a function, or use stdin."""
    if view.io_mode is IOMode.STDIO:
        return _fragment("_io_stdio", {}, prompt_dir)
    if view.io_mode is IOMode.FILE:
        files = {"input_file": view.input_file or "input.txt", "output_file": view.output_file or "output.txt"}
        return _fragment("_io_file", files, prompt_dir)
    entry = {"entry_point": view.entry_point or "solution"}
    if view.starter_code and view.entry_point:
        return _fragment("_io_function_starter", entry, prompt_dir)
    return _fragment("_io_function", entry, prompt_dir)


def test_instructions(view: TaskView, prompt_dir: str | Path | None = None, fragment: str = "_tests") -> str:
    """What unit tests the test writer must produce for this kind of problem (``fragment``: which pair of
    fragment files, ``<fragment>_function`` / ``<fragment>_stdio``, says it)."""
    if view.io_mode is IOMode.FUNCTION:
        return _fragment(f"{fragment}_function", {"entry_point": view.entry_point or "solution"}, prompt_dir)
    return _fragment(f"{fragment}_stdio", {}, prompt_dir)
