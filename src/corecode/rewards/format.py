"""The plan-format term of R_plan: a plan that breaks the Algorithmic Thought's format costs a small penalty.

The format (../shared/METHOD.md sections 1-2): four named parts, in this order, and never code. A format
miss is any of: a part missing (found by :func:`corecode.parsing.parse_plan`, its ``missing`` field), the
parts present but out of order (``"order"``), or Python code in the plan (``"code"``, found by
:func:`corecode.parsing.plan_code`): without the last one a Planner could write the program itself at no cost.
A plan with a format miss is still handed to the Coder as raw text; only the reward notices.

>>> format_term((), RewardConfig(format_penalty=0.1))
0.0
>>> format_term(("Iteration",), RewardConfig(format_penalty=0.1))
-0.1
"""

from __future__ import annotations

from collections.abc import Sequence

from corecode.rewards.config import RewardConfig

__all__ = ["plan_missing_parts", "plan_format_misses", "retrieval_missing_parts", "format_term", "ORDER", "CODE"]

ORDER, CODE = "order", "code"  # the format misses that are not a missing part


def plan_missing_parts(plan_text: str) -> tuple[str, ...]:
    """The names of the Algorithmic Thought parts that ``plan_text`` lacks (empty when complete)."""
    from corecode.parsing import parse_plan  # imported here: a plain function of the parsing layer

    return tuple(parse_plan(plan_text).missing)


def plan_format_misses(plan_text: str) -> tuple[str, ...]:
    """Every format miss of a plan: its missing parts, then ``"order"`` and ``"code"`` (empty when none).

    >>> plan_format_misses("## 4. Iteration\\none loop\\n## 1. Input-Output Definition\\nints")
    ('linear_progression', 'conditional_logic', 'order')
    """
    from corecode.parsing import parse_plan, plan_code

    plan = parse_plan(plan_text)
    return (*plan.missing, *((ORDER,) if not plan.in_order else ()), *((CODE,) if plan_code(plan_text) else ()))


def retrieval_missing_parts(text: str) -> tuple[str, ...]:
    """What MapCoder's retrieval answer lacks: a recalled problem ("## Problem N") and / or the
    "## Algorithm" tutorial (the downstream agents still get what was parsed)."""
    from corecode.parsing import parse_retrieval

    retrieved = parse_retrieval(text)
    return tuple(name for name, ok in (("exemplar", retrieved.exemplars), ("algorithm", retrieved.algorithm)) if not ok)


def format_term(missing: Sequence[str], config: RewardConfig) -> float:
    """-format_penalty when any part is missing, else 0 (flat: one missing part is already a format miss)."""
    return -config.format_penalty if missing else 0.0
