"""The plan-format term of R_plan: a plan that misses parts of the Algorithmic Thought costs a small penalty.

A plan missing parts is still handed to the Coder as raw text (../shared/METHOD.md section 2); only the
reward notices. The parts are found by :func:`corecode.parsing.parse_plan` (its ``missing`` field).

>>> format_term((), RewardConfig(format_penalty=0.1))
0.0
>>> format_term(("Iteration",), RewardConfig(format_penalty=0.1))
-0.1
"""

from __future__ import annotations

from collections.abc import Sequence

from corecode.rewards.config import RewardConfig

__all__ = ["plan_missing_parts", "retrieval_missing_parts", "format_term"]


def plan_missing_parts(plan_text: str) -> tuple[str, ...]:
    """The names of the Algorithmic Thought parts that ``plan_text`` lacks (empty when complete)."""
    from corecode.parsing import parse_plan  # imported here: a plain function of the parsing layer

    return tuple(parse_plan(plan_text).missing)


def retrieval_missing_parts(text: str) -> tuple[str, ...]:
    """What MapCoder's retrieval answer lacks: a recalled problem ("## Problem N") and / or the
    "## Algorithm" tutorial (the downstream agents still get what was parsed)."""
    from corecode.parsing import parse_retrieval

    retrieved = parse_retrieval(text)
    return tuple(name for name, ok in (("exemplar", retrieved.exemplars), ("algorithm", retrieved.algorithm)) if not ok)


def format_term(missing: Sequence[str], config: RewardConfig) -> float:
    """-format_penalty when any part is missing, else 0 (flat: one missing part is already a format miss)."""
    return -config.format_penalty if missing else 0.0
