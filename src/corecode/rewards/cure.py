"""CURE's rewards (Gen-Verse/CURE, arXiv 2506.03136; ../shared/METHOD.md section 6), as pure functions.

Per task: programs l = 1..n and generated tests k = 1..m.

* ``gt[l]``: the fraction of the task's ground-truth tests (its first <= 8) that program l passes: the
  program reward. ``C`` = programs with ``gt[l] == 1``, ``W`` = the others.
* ``B[l][k]``: whether program l passes generated test k (a malformed test: False for every program).
* Test reward: if test k passes every program of C, ``r_k = |{l in W : not B[l][k]}| / |W|``, else
  ``r_k = -|{l in W : B[l][k]}| / |W|``. W empty: ``r_k = +1`` if test k passes every program of C, else
  ``-1`` (the authors' code). C empty: the task's tests are not trained (None).
* Each of the two reward lists is then z-scored over the task's scored entries, ``(r - mean) / std``
  with the population std; a list whose std is 0 (every entry equal) is dropped (None): no signal.

A program whose execution failed on our side (the sandbox, not the program: ``None``) has no reward and
belongs to neither C nor W; its row of B is not used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["unit_test_rewards", "zscore", "CureTaskRewards", "cure_task_rewards", "ZERO_STD"]

ZERO_STD = 1e-9  # a std at most this is zero: the list is dropped


def unit_test_rewards(gt: Sequence[float | None], matrix: Sequence[Sequence[bool] | None], n_tests: int) -> list[float] | None:
    """The raw reward of each of the ``n_tests`` generated tests; None when C is empty.

    ``gt[l]``: program l's ground-truth pass rate (None: not scored); ``matrix[l]``: its row of B (one bool
    per test; None: not known, then the program is left out like an unscored one).
    """
    if len(gt) != len(matrix):
        raise ValueError(f"{len(gt)} ground-truth rates for {len(matrix)} rows of B")
    scored = [l for l in range(len(gt)) if gt[l] is not None and matrix[l] is not None]
    for l in scored:
        if len(matrix[l]) != n_tests:  # type: ignore[arg-type]
            raise ValueError(f"row {l} of B has {len(matrix[l])} entries for {n_tests} tests")  # type: ignore[arg-type]
    correct = [l for l in scored if gt[l] == 1.0]
    wrong = [l for l in scored if gt[l] != 1.0]
    if not correct:
        return None
    rewards = []
    for k in range(n_tests):
        passes_correct = all(matrix[l][k] for l in correct)  # type: ignore[index]
        if not wrong:
            rewards.append(1.0 if passes_correct else -1.0)
        elif passes_correct:
            rewards.append(sum(not matrix[l][k] for l in wrong) / len(wrong))  # type: ignore[index]
        else:
            rewards.append(-sum(bool(matrix[l][k]) for l in wrong) / len(wrong))  # type: ignore[index]
    return rewards


def zscore(values: Sequence[float | None]) -> list[float | None] | None:
    """(v - mean) / std over the non-None values (population std); None when fewer than two or std is 0."""
    present = [v for v in values if v is not None]
    if len(present) < 2:
        return None
    mean = sum(present) / len(present)
    std = math.sqrt(sum((v - mean) ** 2 for v in present) / len(present))
    if std <= ZERO_STD:
        return None
    return [None if v is None else (v - mean) / std for v in values]


@dataclass(frozen=True)
class CureTaskRewards:
    """One task's rewards: raw and z-scored, for its programs and its tests (None where not trained)."""

    code_raw: list[float | None]
    test_raw: list[float] | None  # None: C empty
    code: list[float | None] | None  # None: dropped (std 0)
    test: list[float | None] | None  # None: C empty or dropped (std 0)

    def code_reward(self, l: int) -> float | None:
        return None if self.code is None else self.code[l]

    def test_reward(self, k: int) -> float | None:
        return None if self.test is None else self.test[k]


def cure_task_rewards(gt: Sequence[float | None], matrix: Sequence[Sequence[bool] | None], n_tests: int) -> CureTaskRewards:
    """Both rewards of one task from its ground-truth pass rates and its matrix B."""
    raw_tests = unit_test_rewards(gt, matrix, n_tests)
    return CureTaskRewards(
        code_raw=list(gt),
        test_raw=raw_tests,
        code=zscore(gt),
        test=None if raw_tests is None else zscore(raw_tests),
    )
