"""Collaboration Gain (CG): what the auxiliary agents add on top of the Coder alone.

METHOD.md section 4:

    CG          = pass@1(Coder given the auxiliary agents' output) - pass@1(the same Coder alone)   [points]
    relative CG = CG / pass@1(the same Coder alone)

"Points" are percentage points: pass@1 values are fractions in [0, 1] here and CG is returned already
multiplied by 100 (0.40 vs 0.25 gives CG = 15.0 points, relative CG = 0.6, i.e. +60 %). Relative CG is
undefined (``None``) when the Coder alone solves nothing.

The comparison is only meaningful on the same problems with the same number of samples per problem;
:func:`collaboration_gain_from_counts` checks both and refuses anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from corecode.metrics.passk import pass_at_k

__all__ = ["CollaborationGain", "collaboration_gain", "collaboration_gain_from_counts", "mean_pass_at_k"]


@dataclass(frozen=True)
class CollaborationGain:
    """CG of one pipeline against its Coder alone."""

    pass1_with: float  # fraction in [0, 1]
    pass1_alone: float  # fraction in [0, 1]
    points: float  # 100 * (with - alone)
    relative: float | None  # (with - alone) / alone; None when alone == 0

    def to_dict(self) -> dict[str, float | None]:
        return {
            "pass1_with": self.pass1_with,
            "pass1_alone": self.pass1_alone,
            "cg_points": self.points,
            "cg_relative": self.relative,
        }


def collaboration_gain(pass1_with: float, pass1_alone: float) -> CollaborationGain:
    """CG from two pass@1 fractions.

    >>> round(collaboration_gain(0.40, 0.25).points, 6)
    15.0
    >>> round(collaboration_gain(0.40, 0.25).relative, 6)
    0.6
    """
    for name, value in (("pass1_with", pass1_with), ("pass1_alone", pass1_alone)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a fraction in [0, 1], got {value}")
    diff = pass1_with - pass1_alone
    relative = diff / pass1_alone if pass1_alone > 0 else None
    return CollaborationGain(pass1_with, pass1_alone, 100.0 * diff, relative)


def mean_pass_at_k(counts: Mapping[str, tuple[int, int]], k: int) -> float:
    """pass@k averaged over problems; ``counts`` maps task id -> (samples n, correct c)."""
    if not counts:
        raise ValueError("pass@k of zero problems is undefined")
    return sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts)


def collaboration_gain_from_counts(
    with_agents: Mapping[str, tuple[int, int]], alone: Mapping[str, tuple[int, int]]
) -> CollaborationGain:
    """CG from per-problem (n, correct) counts of the two runs; same problems and same n required."""
    if set(with_agents) != set(alone):
        only_with = sorted(set(with_agents) - set(alone))[:5]
        only_alone = sorted(set(alone) - set(with_agents))[:5]
        raise ValueError(
            "Collaboration Gain needs the same problems in both runs; "
            f"only in the pipeline run: {only_with}, only in the Coder-alone run: {only_alone}"
        )
    for task_id, (n, _) in with_agents.items():
        if alone[task_id][0] != n:
            raise ValueError(
                f"Collaboration Gain needs the same sample budget; problem {task_id!r} has n={n} "
                f"with the auxiliary agents and n={alone[task_id][0]} for the Coder alone"
            )
    return collaboration_gain(mean_pass_at_k(with_agents, 1), mean_pass_at_k(alone, 1))
