"""Parse an Algorithmic Thought (the Planner's plan) into its four named parts.

The format (METHOD.md section 2) has four parts, in this order: Input-Output Definition, Linear
Progression, Conditional Logic, Iteration. Models write the headings in many ways: ``## 1. Input-Output
Definition``, ``**Input/Output Definition:** ...``, ``1) Linear progression -``, ``Iteration`` alone on a
line, or the authors' wording (Sequence / Branch / Loop). :func:`parse_plan` accepts those; a part whose
heading is absent, or whose text is empty, is listed in :attr:`Plan.missing`. A plan with missing parts is
still usable (the Coder gets the raw text); the training rewards may count it as a format miss.

A heading must start its line (after optional markdown ``#``, bold markers, and a number such as ``1.``,
``(2)``, ``Part 3:`` or ``Step 4 -``): the words "loop" or "sequence" in the middle of a sentence are
never taken for headings. Standard library only.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "parse_plan", "plan_code", "PLAN_PARTS", "PART_TITLES"]

PLAN_PARTS: tuple[str, ...] = ("input_output", "linear_progression", "conditional_logic", "iteration")
PART_TITLES: dict[str, str] = {
    "input_output": "Input-Output Definition",
    "linear_progression": "Linear Progression",
    "conditional_logic": "Conditional Logic",
    "iteration": "Iteration",
}

# Heading words for each part. "Strong" words are the format's own names; "weak" ones (the authors'
# Sequence / Branch / Loop wording, and common synonyms) are used only when the strong heading is absent,
# so that a step such as "3. Loop: over the list" does not steal the Iteration heading.
_STRONG: dict[str, str] = {
    "input_output": r"inputs?\s*(?:[-/&]|and)?\s*outputs?",
    "linear_progression": r"linear\s+progression",
    "conditional_logic": r"conditional\s+logic",
    "iteration": r"iterations?",
}
_WEAK: dict[str, str] = {
    "input_output": r"i\s*/\s*o|io",
    "linear_progression": r"sequence|sequential\s+steps|linear\s+steps|steps",
    "conditional_logic": r"conditionals?|conditions|branch(?:es|ing)?|edge\s+cases",
    "iteration": r"loops?|repetition",
}
_SUFFIX = r"(?:\s+(?:definition|structure|logic|section|part|steps|and\s+bounds))*(?:\s*\([^)]*\))?"
# Before the number: a bare "Algorithmic Thought:" title (the 0.5B Planner wrote
# "### Algorithmic Thought: 1. Input-Output Definition") and the words part / step / section / heading
# ("## Heading 1: Input-Output Definition", from the prompt's "use exactly these four headings").
_PREFIX = (
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:[*_]{1,3}[ \t]*)?"
    r"(?:algorithmic[ \t]+thought[ \t]*[:\-–—][ \t]*)?"
    r"(?:(?:part|step|section|heading)[ \t]*)?(?:\(?(?:\d{1,2}|[ivx]{1,4}|[a-d])(?:[.):]|[ \t]+[-–—])|\(?\d{1,2}\))?[ \t]*"
    r"(?:[*_]{1,3}[ \t]*)?"
)
# After the heading words: the end of the line, or a separator followed by the part's first text.
_TAIL = (
    r"[ \t]*(?:[*_]{1,3})?[ \t]*"
    r"(?:[:：\-–—][ \t]*(?:[*_]{1,3})?[ \t]*(?P<rest>.*)|[:：.]?[ \t]*(?:[*_]{1,3})?[ \t]*)$"
)


def _heading_pattern(words: str) -> re.Pattern[str]:
    return re.compile(_PREFIX + rf"(?:{words}){_SUFFIX}" + _TAIL, re.IGNORECASE)


_PATTERNS = {part: (_heading_pattern(_STRONG[part]), _heading_pattern(_WEAK[part])) for part in PLAN_PARTS}


@dataclass(frozen=True)
class Plan:
    """An Algorithmic Thought split into its four parts (None for a part the text lacks)."""

    raw: str
    input_output: str | None = None
    linear_progression: str | None = None
    conditional_logic: str | None = None
    iteration: str | None = None
    missing: tuple[str, ...] = field(default=())
    order: tuple[str, ...] = field(default=())  # the parts found, in the order their headings appear

    @property
    def complete(self) -> bool:
        """All four parts present and non-empty."""
        return not self.missing

    @property
    def in_order(self) -> bool:
        """The parts that are there appear in the format's order (Input-Output ... Iteration)."""
        return list(self.order) == sorted(self.order, key=PLAN_PARTS.index)

    def parts(self) -> dict[str, str | None]:
        return {part: getattr(self, part) for part in PLAN_PARTS}

    def to_dict(self) -> dict[str, Any]:
        return {**self.parts(), "missing": list(self.missing), "order": list(self.order), "raw": self.raw}

    def format(self) -> str:
        """The plan as four headed sections (a missing part is shown as missing), for printing."""
        sections = []
        for number, part in enumerate(PLAN_PARTS, 1):
            text = getattr(self, part)
            sections.append(f"{number}. {PART_TITLES[part]}\n{text if text else '(missing)'}")
        return "\n\n".join(sections)


def _code_free_lines(text: str) -> list[tuple[int, str]]:
    """(index, line) for the lines outside fenced code blocks."""
    out, in_fence = [], False
    for index, line in enumerate(text.splitlines()):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and len(line) <= 200:
            out.append((index, line))
    return out


def _markdown_style(lines: list[tuple[int, str]]) -> bool:
    """True when at least two parts have markdown ``#`` headings under their own names.

    Then the plan's heading style is markdown, and a numbered bold label inside a section (a model that
    writes ``1. **Input-Output Definition**`` under ``### Linear Progression``) is content, not a heading.
    """
    hashed = [(index, line) for index, line in lines if line.lstrip().startswith("#")]
    parts = {part for part in PLAN_PARTS for _, line in hashed if _PATTERNS[part][0].match(line)}
    return len(parts) >= 2


def _find_headings(text: str) -> dict[str, tuple[int, str]]:
    """part -> (line index, text after the heading) for each part found; strong headings win."""
    lines = _code_free_lines(text)
    if _markdown_style(lines):
        lines = [(index, line) for index, line in lines if line.lstrip().startswith("#")]
    found: dict[str, tuple[int, str]] = {}
    for strength in (0, 1):
        used = {index for index, _ in found.values()}
        for part in PLAN_PARTS:
            if part in found:
                continue
            for index, line in lines:
                match = _PATTERNS[part][strength].match(line)
                if match and index not in used:
                    found[part] = (index, (match.group("rest") or "").strip().strip("*_").strip())
                    used.add(index)
                    break
    return found


def parse_plan(text: str) -> Plan:
    """Split ``text`` into the four parts; the text between two headings belongs to the earlier one.

    >>> plan = parse_plan("1. Input-Output Definition: a list of ints -> int\\n2. Linear Progression:\\n"
    ...                   "sum them\\n3. Conditional Logic: empty list gives 0\\n4. Iteration: one loop, O(n)")
    >>> plan.linear_progression, plan.missing
    ('sum them', ())
    >>> parse_plan("just add the numbers").missing
    ('input_output', 'linear_progression', 'conditional_logic', 'iteration')
    """
    text = text or ""
    lines = text.splitlines()
    headings = sorted((index, part, rest) for part, (index, rest) in _find_headings(text).items())
    parts: dict[str, str | None] = dict.fromkeys(PLAN_PARTS)
    for position, (index, part, rest) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(lines)
        body = "\n".join([rest, *lines[index + 1 : end]]).strip().strip("*_").strip()
        parts[part] = body or None
    missing = tuple(part for part in PLAN_PARTS if not parts[part])
    order = tuple(part for _, part, _ in headings)
    return Plan(raw=text, missing=missing, order=order, **parts)


_CODE_START = re.compile(r"^[ \t]*(?:def|class|for|while|if|with|try|import|from|return|async)\b")


def _python_statements(source: str) -> list[ast.stmt] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source).body
    except (SyntaxError, ValueError):
        return None


def _is_program(statements: list[ast.stmt] | None) -> bool:
    """Real code: some statement is more than a bare expression (``3``, ``[1, 2]``, ``f(x)``)."""
    return bool(statements) and any(not isinstance(node, ast.Expr) for node in statements)


def plan_code(text: str) -> str | None:
    """The first piece of Python code in a plan (which must have none), or None.

    Code is a fenced block whose body parses as Python with a statement beyond a bare expression (example
    input, pseudocode or prose in a fence is not code), or, outside fences, a line that starts like Python
    (``def``, ``for``, ``import`` ...) and, with the more-indented lines under it, parses as Python: a pasted
    program without fences. Prose such as "for each query, if it is empty, return 0" does not parse.

    >>> plan_code("## 2. Linear Progression\\nfor each i, add a[i] to the total") is None
    True
    >>> plan_code("```python\\ndef f(a):\\n    return sum(a)\\n```")
    'def f(a):\\n    return sum(a)'
    """
    fence: list[str] | None = None
    outside: list[str] = []
    for line in (text or "").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            if fence is None:
                fence = []
                continue
            body = textwrap.dedent("\n".join(fence)).strip("\n")
            if _is_program(_python_statements(body)):
                return body
            fence = None
        elif fence is not None:
            fence.append(line)
        else:
            outside.append(line)
    for position, line in enumerate(outside):
        if not _CODE_START.match(line):
            continue
        indent = len(line) - len(line.lstrip())
        block = [line]
        for following in outside[position + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            block.append(following)
        source = textwrap.dedent("\n".join(block)).strip("\n")
        if _is_program(_python_statements(source)):
            return source
    return None
