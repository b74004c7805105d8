"""Small parsers for the auxiliary roles: the plan verifier's confidence, the retrieval agent's similar
problems and algorithm tutorial, and the test writer's assertions. Standard library only.

Each is tolerant (models do not follow formats exactly) and returns an explicit "nothing found" value
(None, an empty tuple) rather than guessing; the pipelines decide what to do with that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corecode.parsing.code import extract_code

__all__ = ["parse_confidence", "parse_retrieval", "parse_asserts", "Exemplar", "Retrieval"]

_CONFIDENCE = re.compile(r"confidence[^0-9\n]{0,30}?(\d{1,3}(?:\.\d+)?)\s*(%|/\s*100)?", re.IGNORECASE)


def parse_confidence(text: str) -> int | None:
    """The plan verifier's confidence score in [0, 100]: the last "Confidence: N" in the text.

    A score written as a fraction of one ("Confidence: 0.8") is scaled to 80. None when absent.

    >>> parse_confidence("The plan handles empty input.\\nConfidence: 85")
    85
    >>> parse_confidence("**Confidence score**: 0.9") , parse_confidence("looks fine")
    (90, None)
    """
    matches = _CONFIDENCE.findall(text or "")
    if not matches:
        return None
    number, unit = matches[-1]
    value = float(number)
    if value <= 1 and "." in number and not unit:
        value *= 100
    return max(0, min(100, round(value)))


@dataclass(frozen=True)
class Exemplar:
    """One similar problem recalled by the retrieval agent (MapCoder)."""

    description: str
    plan: str = ""
    code: str = ""

    def render(self) -> str:
        text = f"Problem: {self.description}\nPlan: {self.plan or '(none)'}"
        return text + (f"\nCode:\n```python\n{self.code}```" if self.code else "")


@dataclass(frozen=True)
class Retrieval:
    """The retrieval agent's answer: k similar problems and an algorithm tutorial."""

    exemplars: tuple[Exemplar, ...] = ()
    algorithm: str = ""
    raw: str = field(default="", repr=False)


# "## Problem 2", "Similar problem #2", and "## Algorithm 2" (a real 0.5B answer numbered a problem so)
_PROBLEM_HEADING = re.compile(
    r"^[ \t#*]*(?:similar\s+)?(?:problem|algorithm|example)\s*#?\s*\d+\b.*$", re.IGNORECASE | re.MULTILINE
)
# the tutorial's heading stands alone on its line: "## Algorithm", "**Algorithm tutorial:**"
_ALGORITHM_HEADING = re.compile(
    r"^[ \t#*]*(?:the\s+)?algorithm(?:\s+tutorial)?[ \t*:]*$", re.IGNORECASE | re.MULTILINE
)
_FIELD = re.compile(
    r"^[ \t*]*(description|plan|planning|code)[ \t*]*:[ \t*]*", re.IGNORECASE | re.MULTILINE
)


def _split_fields(chunk: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    marks = list(_FIELD.finditer(chunk))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(chunk)
        name = mark.group(1).lower().replace("planning", "plan")
        fields.setdefault(name, chunk[mark.end() : end].strip())
    if not marks:
        fields["description"] = chunk.strip()
    return fields


def parse_retrieval(text: str, k: int | None = None) -> Retrieval:
    """Split the retrieval agent's answer into at most ``k`` exemplars and the algorithm tutorial."""
    text = text or ""
    algorithm_matches = list(_ALGORITHM_HEADING.finditer(text))
    algorithm_match = algorithm_matches[-1] if algorithm_matches else None
    body = text[: algorithm_match.start()] if algorithm_match else text
    algorithm = text[algorithm_match.end() :].strip() if algorithm_match else ""
    heads = list(_PROBLEM_HEADING.finditer(body))
    exemplars = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
        fields = _split_fields(body[head.end() : end])
        code = extract_code(fields.get("code", "")) or ""
        description = fields.get("description", "").strip()
        if description or fields.get("plan"):
            exemplars.append(Exemplar(description=description, plan=fields.get("plan", ""), code=code))
    if k is not None:
        exemplars = exemplars[:k]
    return Retrieval(exemplars=tuple(exemplars), algorithm=algorithm, raw=text)


def parse_asserts(text: str) -> tuple[str, ...]:
    """The ``assert`` statements a test writer produced (one per line, each compiles on its own)."""
    found = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped.startswith("assert "):
            continue
        try:
            compile(stripped, "<test>", "exec", dont_inherit=True)
        except SyntaxError:
            continue
        found.append(stripped)
    return tuple(found)
