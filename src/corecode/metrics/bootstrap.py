"""95 % intervals by bootstrap over problems, and paired comparisons of two runs on the same problems.

A benchmark score is a mean over problems, and the problems are a sample of the problems one cares about:
the interval says how far the mean would move with another sample of the same size. Per-sample randomness
(n samples per problem) is inside each problem's value and is carried along.

* :func:`bootstrap_mean`: percentile bootstrap of a mean of per-problem values (pass@k, APR, pass rate):
  ``resamples`` times draw ``len(values)`` problems with replacement, take the mean; the interval is the
  ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those means.
* :func:`paired_bootstrap`: B - A on the *same* problems (CG = pipeline - Coder alone, trained - untrained
  Planner, run B - run A in a report). Each resample draws problems and takes both runs' values of the
  drawn problems, i.e. the bootstrap of the mean per-problem difference; problems on which both runs agree
  add no width, which is why a paired interval is much narrower than two separate ones. It also counts the
  problems that flip each way (B better, A better).
* :func:`unpaired_bootstrap`: mean(B) - mean(A) over two *different* sets of problems (e.g. the training
  reward on the problems of a run's first steps against those of its last steps, each seen once): each
  resample draws each set with replacement on its own; no pairing, so the interval is wider.
* :func:`problems_needed`: how many problems a paired difference of a given size needs.

Reproducible: every function draws from its own ``random.Random(seed)`` (default seed 0) over the values
ordered by problem id, so the same numbers give the same interval on every machine and in every order the
problems were read. Standard library only.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from corecode.metrics.passk import pass_at_k

__all__ = [
    "Interval",
    "PairedDifference",
    "bootstrap_mean",
    "bootstrap_pass_at_k",
    "paired_bootstrap",
    "paired_pass_at_k",
    "unpaired_bootstrap",
    "problems_needed",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "CONFIDENCE",
]

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` problems and its bootstrap interval [low, high] (same unit as the values)."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = CONFIDENCE

    def scaled(self, factor: float) -> "Interval":
        """The same interval in other units (100: fractions -> percent / points)."""
        return Interval(self.estimate * factor, self.low * factor, self.high * factor, self.n, self.confidence)

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "confidence": self.confidence}


@dataclass(frozen=True)
class PairedDifference:
    """B - A over the same ``n`` problems: mean difference, its paired bootstrap interval, and the flips."""

    estimate: float
    low: float
    high: float
    n: int
    b_better: int  # problems where B's value is higher
    a_better: int  # problems where A's value is higher
    confidence: float = CONFIDENCE

    @property
    def excludes_zero(self) -> bool:
        """The interval lies entirely on one side of 0 (the difference is not within noise)."""
        return self.low > 0 or self.high < 0

    def scaled(self, factor: float) -> "PairedDifference":
        return PairedDifference(self.estimate * factor, self.low * factor, self.high * factor, self.n,
                                self.b_better, self.a_better, self.confidence)

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "b_better": self.b_better, "a_better": self.a_better, "confidence": self.confidence}


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _ordered(values: Mapping[str, float] | Sequence[float]) -> list[float]:
    if isinstance(values, Mapping):
        return [float(values[key]) for key in sorted(values)]
    return [float(v) for v in values]


def _percentiles(values: list[float], resamples: int, confidence: float, seed: int) -> tuple[float, float]:
    n = len(values)
    if n == 1 or max(values) == min(values):
        return values[0], values[0]
    rng = random.Random(seed)
    return _interval(sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples)), confidence)


def _interval(resampled: list[float], confidence: float) -> tuple[float, float]:
    """The ``(1 -+ confidence) / 2`` quantiles of sorted resampled statistics."""
    count, alpha = len(resampled), (1.0 - confidence) / 2.0
    low_index = min(count - 1, max(0, math.floor(alpha * count)))
    high_index = min(count - 1, max(0, math.ceil((1.0 - alpha) * count) - 1))
    return resampled[low_index], resampled[high_index]


def bootstrap_mean(
    values: Mapping[str, float] | Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """The mean of per-problem ``values`` (a mapping id -> value, or a sequence) with its percentile
    bootstrap interval. One problem, or all values equal, gives a zero-width interval.

    >>> iv = bootstrap_mean([0.0, 1.0] * 25)
    >>> iv.estimate, iv.low < 0.5 < iv.high, iv.n
    (0.5, True, 50)
    """
    _check(resamples, confidence)
    ordered = _ordered(values)
    if not ordered:
        raise ValueError("an interval over zero problems is undefined")
    low, high = _percentiles(ordered, resamples, confidence, seed)
    return Interval(math.fsum(ordered) / len(ordered), low, high, len(ordered), confidence)


def bootstrap_pass_at_k(
    counts: Mapping[str, tuple[int, int]],
    k: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """pass@k (the unbiased estimator per problem, averaged) with its interval over problems;
    ``counts`` maps problem id -> (samples n, correct c)."""
    per_problem = {tid: pass_at_k(int(n), int(c), k) for tid, (n, c) in counts.items()}
    return bootstrap_mean(per_problem, resamples=resamples, confidence=confidence, seed=seed)


def paired_bootstrap(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> PairedDifference:
    """B - A on the same problems (both map problem id -> per-problem value); refuses different problem sets.

    >>> d = paired_bootstrap({"p1": 0.0, "p2": 0.0, "p3": 1.0}, {"p1": 1.0, "p2": 0.0, "p3": 1.0})
    >>> round(d.estimate, 4), d.b_better, d.a_better
    (0.3333, 1, 0)
    """
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5]
        raise ValueError(f"a paired comparison needs the same problems; only in A: {only_a}, only in B: {only_b}")
    if not a:
        raise ValueError("a paired comparison over zero problems is undefined")
    diffs = {tid: float(b[tid]) - float(a[tid]) for tid in a}
    interval = bootstrap_mean(diffs, resamples=resamples, confidence=confidence, seed=seed)
    return PairedDifference(
        interval.estimate,
        interval.low,
        interval.high,
        interval.n,
        b_better=sum(d > 0 for d in diffs.values()),
        a_better=sum(d < 0 for d in diffs.values()),
        confidence=confidence,
    )


def unpaired_bootstrap(
    a: Mapping[str, float] | Sequence[float],
    b: Mapping[str, float] | Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """mean(B) - mean(A) of per-problem values of two different problem sets, with its percentile bootstrap
    interval (each set resampled with replacement on its own, from one ``random.Random(seed)``); ``n`` is the
    number of problems in both.

    >>> d = unpaired_bootstrap([0.0] * 20, [0.0, 1.0] * 10)
    >>> d.estimate, d.low > 0.0, d.high <= 1.0, d.n
    (0.5, True, True, 40)
    """
    _check(resamples, confidence)
    first, second = _ordered(a), _ordered(b)
    if not first or not second:
        raise ValueError("an unpaired difference needs problems on both sides")
    rng = random.Random(seed)
    low, high = _interval(sorted(math.fsum(rng.choices(second, k=len(second))) / len(second)
                                 - math.fsum(rng.choices(first, k=len(first))) / len(first)
                                 for _ in range(resamples)), confidence)
    estimate = math.fsum(second) / len(second) - math.fsum(first) / len(first)
    return Interval(estimate, low, high, len(first) + len(second), confidence)


def paired_pass_at_k(
    a: Mapping[str, tuple[int, int]],
    b: Mapping[str, tuple[int, int]],
    k: int = 1,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> PairedDifference:
    """pass@k of run B - run A on the same problems from per-problem (n, correct) counts (fractions)."""
    return paired_bootstrap(
        {tid: pass_at_k(int(n), int(c), k) for tid, (n, c) in a.items()},
        {tid: pass_at_k(int(n), int(c), k) for tid, (n, c) in b.items()},
        resamples=resamples,
        confidence=confidence,
        seed=seed,
    )


def problems_needed(difference: float, discordant: float, *, confidence: float = CONFIDENCE, power: float = 0.8) -> int:
    """Problems a paired pass@1 comparison needs to tell ``difference`` (a fraction, 0.10 = 10 points) from 0.

    Normal approximation for one greedy sample per problem: a problem contributes +1, -1 or 0 to the
    difference; with a share ``discordant`` of problems that differ between the runs, the variance of one
    problem's contribution is ``discordant - difference**2``, and the two-sided test at ``confidence``
    finds the difference with probability ``power`` once
    ``n >= (z_(1+confidence)/2 + z_power)**2 * (discordant - difference**2) / difference**2``.
    ``power=0.5`` gives the n at which the interval's half-width equals the difference.

    >>> problems_needed(0.10, 0.30)
    228
    >>> problems_needed(0.10, 0.30, power=0.5)
    112
    """
    if not 0.0 < abs(difference) <= discordant <= 1.0:
        raise ValueError(f"need 0 < |difference| <= discordant <= 1; got difference={difference}, discordant={discordant}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power}")
    _check(1, confidence)
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0) + NormalDist().inv_cdf(power)
    variance = discordant - difference**2
    return max(1, math.ceil(z * z * variance / difference**2))
