"""Unit tests written by a model (CURE's test writer): the ``**Test Input:** ... **Test Output:** ...`` format.

One answer holds one test. When it holds several, the LAST ``**Test Input:**`` and the LAST
``**Test Output:**`` count (as the CURE authors' extraction does); each part is either a fenced block right
after its marker or the plain text up to the next marker (``**Test Output:**``, ``**Explanation:**``, another
``**Test Input:**``) or the end. What the parts mean depends on the problem:

* stdin/stdout problems: the input is fed on stdin, the output is the expected stdout
  (:class:`~corecode.types.StdioTest`; the harness compares the program's stdout with it, whitespace
  tolerant as for every stdio test). A literal ``\\n`` becomes a newline and a trailing newline is added,
  as the authors do.
* function-call problems (MBPP, HumanEval, ...): the input is ONE call of the entry point with literal
  arguments, ``f(3, [1, 2], "a")`` (or only the arguments, ``3, [1, 2], "a"``), and the output is ONE
  Python literal, the expected return value: a :class:`~corecode.types.CallTest`. The harness calls the
  function and compares the value outside the program (lists and tuples alike), so neither the arguments'
  code nor the expected value is ever run as code, and the program never sees the expected value.

Anything else (no markers, a non-literal argument, a call of another function, an unparsable output, an
input or output longer than :data:`MAX_PART_CHARS`) is a malformed test: :func:`parse_unit_test` returns a
:class:`GeneratedTest` whose ``test`` is None and whose ``error`` says why. It never raises on model output.

Standard library only.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from corecode.types import CallTest, StdioTest, TestCase

__all__ = ["GeneratedTest", "parse_unit_test", "MAX_PART_CHARS", "INPUT_MARKER", "OUTPUT_MARKER"]

INPUT_MARKER = "**Test Input:**"
OUTPUT_MARKER = "**Test Output:**"
MAX_PART_CHARS = 20_000  # a test's input or output longer than this is malformed (not run)

# Linear time on any text: the whitespace before a fence and the fence's tag are matched atomically
# ("(?=(?P<x>...))(?P=x)", Python 3.10's spelling of a possessive quantifier). With plain backtracking
# "**Test Input:**```" + 30,000 tag characters and no closing fence, or "**Test Input:**" + 30,000
# spaces and no output marker after it, took 8-12 s of the trainer's time per answer (quadratic).
# Matching atomically finds the same parts: a fence's tag cannot hold its closing backticks, and the
# whitespace cannot hold the next marker.
_FENCED = r"(?=(?P<ws>\s*))(?P=ws)```(?=(?P<tag>[^\n`]*))(?P=tag)\n?(?P<body>.*?)```"
_INPUT_FENCED = re.compile(re.escape(INPUT_MARKER) + _FENCED, re.DOTALL)
_OUTPUT_FENCED = re.compile(re.escape(OUTPUT_MARKER) + _FENCED, re.DOTALL)
_INPUT_PLAIN = re.compile(
    re.escape(INPUT_MARKER) + r"(?=(?P<ws>\s*))(?P=ws)(?P<body>.*?)(?=" + re.escape(OUTPUT_MARKER) + ")", re.DOTALL
)
_OUTPUT_PLAIN = re.compile(
    re.escape(OUTPUT_MARKER) + r"\s*(?P<body>.*?)(?=\*\*Explanation:|" + re.escape(INPUT_MARKER) + r"|$)",
    re.DOTALL,
)


@dataclass(frozen=True)
class GeneratedTest:
    """A test parsed from a model's answer: ``test`` is None when the answer is malformed (``error`` says why)."""

    test: TestCase | None
    error: str | None = None
    raw_input: str | None = None
    raw_output: str | None = None

    @property
    def valid(self) -> bool:
        return self.test is not None

    def to_dict(self) -> dict[str, Any]:
        test = self.test
        shown: dict[str, Any] | None
        if isinstance(test, StdioTest):
            shown = {"kind": "stdio", "input": test.input, "output": test.output}
        elif isinstance(test, CallTest):
            shown = {"kind": "call", "fn_name": test.fn_name, "args": repr(test.args), "expected": repr(test.expected)}
        else:
            shown = None
        return {"test": shown, "error": self.error}


def _last(fenced: re.Pattern, plain: re.Pattern, text: str, plain_end: int | None = None) -> str | None:
    found = [m.group("body") for m in fenced.finditer(text)]
    if found:
        return found[-1]
    # plain_end: where the plain pattern can stop looking (an input needs an output marker after it, so
    # markers after the last one need not each be followed to the end of the text)
    found = [m.group("body") for m in plain.finditer(text, 0, len(text) if plain_end is None else plain_end)]
    return found[-1].strip() if found else None


def _stdio_text(part: str) -> str:
    """The authors' clean-up of a stdin/stdout part: no ``plaintext`` tag, literal \\n as newlines, a final newline."""
    part = part.replace("plaintext\n", "").replace("\\n", "\n").lstrip("\n")
    return part if part.endswith("\n") else part + "\n"


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, OverflowError):
        return False, None


def _call_arguments(text: str, entry_point: str) -> tuple[tuple[Any, ...] | None, str | None]:
    """``f(1, 2)`` or ``1, 2`` -> the argument values, or (None, why)."""
    source = text.strip()
    if source.startswith(">>>"):
        source = source[3:].strip()
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None, "the input is not one Python expression"
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name != entry_point:
            return None, f"the input calls {name or 'something'!s}, not {entry_point}"
        if node.keywords:
            return None, "keyword arguments are not supported; write the arguments in order"
        parts = node.args
    elif isinstance(node, ast.Tuple) and "(" not in source[:1]:
        parts = node.elts  # "1, 2": the arguments themselves
    else:
        parts = [node]  # one argument
    values = []
    for part in parts:
        try:
            values.append(ast.literal_eval(part))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, OverflowError):
            return None, "an argument is not a literal value"
    return tuple(values), None


def parse_unit_test(text: str, *, function: bool, entry_point: str | None = None) -> GeneratedTest:
    """The test one answer stands for (see the module docstring); never raises on model output.

    ``function``: the problem is function-call style (then ``entry_point`` names the function), else
    stdin/stdout.
    """
    if not isinstance(text, str) or INPUT_MARKER not in text or OUTPUT_MARKER not in text:
        return GeneratedTest(None, "no **Test Input:** / **Test Output:** pair")
    raw_in = _last(_INPUT_FENCED, _INPUT_PLAIN, text, text.rfind(OUTPUT_MARKER) + len(OUTPUT_MARKER))
    raw_out = _last(_OUTPUT_FENCED, _OUTPUT_PLAIN, text)
    if raw_in is None or raw_out is None:
        return GeneratedTest(None, "the input or the output is missing", raw_in, raw_out)
    if len(raw_in) > MAX_PART_CHARS or len(raw_out) > MAX_PART_CHARS:
        return GeneratedTest(None, f"the input or the output is longer than {MAX_PART_CHARS} characters")
    if not function:
        return GeneratedTest(StdioTest(_stdio_text(raw_in), _stdio_text(raw_out)), None, raw_in, raw_out)
    if not entry_point:
        return GeneratedTest(None, "a function-call problem without an entry point", raw_in, raw_out)
    args, why = _call_arguments(raw_in, entry_point)
    if args is None:
        return GeneratedTest(None, why, raw_in, raw_out)
    ok, expected = _literal(raw_out)
    if not ok:
        return GeneratedTest(None, "the output is not a literal value", raw_in, raw_out)
    try:
        import marshal

        marshal.dumps((args, expected))  # what the sandbox sends to its judge: plain values only
        repr((args, expected))  # and printable (logs): a hex literal can make an int past 4,300 digits
    except ValueError:
        return GeneratedTest(None, "the arguments or the output are not plain values", raw_in, raw_out)
    return GeneratedTest(CallTest(entry_point, args, expected), None, raw_in, raw_out)
