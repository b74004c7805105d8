"""Stage-2 Coder reward R_code (pure; ../shared/METHOD.md section 3).

    R_code(c_i) = s_i + lambda_space * min(1, O_target / m_i) * [s_i = 1]

where s_i is the fraction of tests passed, m_i the program's peak memory above the interpreter baseline,
and O_target the smallest m_j among the programs of the same group (the G programs for one prompt) that pass
every test. Both memories are raised to ``memory_floor_bytes`` first (a guard against division by zero), and
then tie-resolved over the group (../shared/METHOD.md section 3a, ``rewards.ties``): memories within
``memory_tie_band`` of their tie class's smallest member count as that member's, so they score exactly alike.
m_i is the sandbox's measurement over one whole execution (module-level code and every test;
``corecode.sandbox.measure``): the larger of the peak of the program's traced allocations and the peak the
worker's meters (job cgroup, RSS high-water mark) saw, less a 64 KiB slack.

A ``None`` outcome is a program whose execution failed on our side (SandboxError): it gets no reward
(``None``) and does not take part in O_target.

>>> from corecode.rewards.outcome import Outcome
>>> from corecode.rewards.config import RewardConfig
>>> cfg = RewardConfig(memory_floor_bytes=1)
>>> coder_group_rewards([Outcome(1.0, 0.1, 100), Outcome(1.0, 0.1, 200), Outcome(0.5), None], cfg)
[1.2, 1.1, 0.5, None]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from corecode.rewards.config import RewardConfig
from corecode.rewards.outcome import Outcome
from corecode.rewards.ties import tie_resolve

__all__ = ["space_target", "space_score", "coder_reward", "coder_group_rewards", "tie_resolved_memories"]


def _memory(outcome: Outcome, config: RewardConfig) -> int:
    return max(outcome.peak_memory_bytes, config.memory_floor_bytes)


def space_target(group: Sequence[Outcome | None], config: RewardConfig) -> int | None:
    """O_target: the smallest (floored) peak memory among the group's passing programs; None if none passes."""
    memories = [_memory(o, config) for o in group if o is not None and o.passed]
    return min(memories) if memories else None


def space_score(outcome: Outcome, target: int, config: RewardConfig) -> float:
    """min(1, O_target / m_i)."""
    return min(1.0, target / _memory(outcome, config))


def coder_reward(outcome: Outcome, target: int | None, config: RewardConfig) -> float:
    """R_code of one program, given its group's O_target (None when nothing in the group passes)."""
    if not outcome.passed or target is None:
        return outcome.pass_rate
    return outcome.pass_rate + config.lambda_space * space_score(outcome, target, config)


def tie_resolved_memories(group: Sequence[Outcome | None], config: RewardConfig) -> list[Outcome | None]:
    """The outcomes with each passing program's (floored) peak memory replaced by its tie class's memory
    (``rewards.ties``, band ``memory_tie_band``): memories within the band score exactly alike."""
    passing = [i for i, o in enumerate(group) if o is not None and o.passed]
    memories = [float(_memory(group[i], config)) for i in passing]  # type: ignore[arg-type]
    out = list(group)
    for i, head in zip(passing, tie_resolve(memories, config.memory_tie_band)):
        out[i] = dataclasses.replace(group[i], peak_memory_bytes=int(head))  # type: ignore[arg-type]
    return out


def coder_group_rewards(group: Sequence[Outcome | None], config: RewardConfig) -> list[float | None]:
    """R_code for every program of one group; None stays None (execution failed on our side)."""
    group = tie_resolved_memories(group, config)
    target = space_target(group, config)
    return [None if o is None else coder_reward(o, target, config) for o in group]
