"""A distribution-free interval for the median of a few benchmark rounds (order statistics, binomial).

Round-to-round noise on a shared 2-core VM is large (a HumanEval round's ratio moves by +-0.1), so a
ratio is reported as the median of alternating rounds with the interval [x(k), x(n-k+1)] of the sorted
rounds: it holds the true median with probability 1 - 2 P(Binomial(n, 1/2) <= k - 1), whatever the
distribution of a round. The widest k whose coverage is still >= ``level`` is used; with fewer than 6
rounds no pair reaches 95 %, and the full range is given with its own (lower) coverage.
"""

from __future__ import annotations

import math
import statistics


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float, float, float]:
    """(median, low, high, coverage) of ``values``."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("no rounds")
    low, high, coverage = xs[0], xs[-1], 1 - 2 * 0.5 ** n
    for k in range(2, n // 2 + 1):
        cover = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if cover < level:
            break
        low, high, coverage = xs[k - 1], xs[n - k], cover
    return statistics.median(xs), low, high, coverage


def describe(values: list[float], unit: str = "") -> str:
    """'median 0.64 (0.57-0.71, 98 % interval of the median, 7 rounds)'."""
    median, low, high, coverage = median_interval(values)
    return (f"median {median:.2f}{unit} ({low:.2f}-{high:.2f}{unit}, {coverage * 100:.0f} % interval of the median, "
            f"{len(values)} rounds)")
