"""Noise-aware comparison of measured times and memories (../shared/METHOD.md section 3a).

GRPO normalizes rewards within a group, so when every program of a group passes, the efficiency terms
alone set the advantages: a 3 % difference that is only measurement noise would become a +-1 advantage.
Before the time and space scores are computed, the group's measured values are therefore *tie-resolved*:

    sort the values; the smallest opens a tie class; every value <= head * (1 + band) joins it; the
    first value above opens the next class (whose head is thus more than ``band`` above the previous one).
    Every member of a class is then scored with its class's head value.

Members of one class get exactly the same score (a tie); two classes always differ by more than the band.
A value that is the same twice (identical programs share one measurement) is always tied. With
``band = 0`` nothing changes.

>>> tie_resolve([1.00, 1.04, 1.30, 2.0, 2.1], 0.10)
[1.0, 1.0, 1.3, 2.0, 2.0]
>>> snap(1.02, [1.0, 1.3], 0.10)
1.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["tie_resolve", "snap"]


def tie_resolve(values: Sequence[float], band: float) -> list[float]:
    """Each value replaced by the head (smallest member) of its tie class; input order kept."""
    if band < 0:
        raise ValueError(f"band must be >= 0, got {band}")
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    head = None
    for i in order:
        v = values[i]
        if head is None or v > head * (1.0 + band):
            head = v
        out[i] = head
    return [type(values[i])(out[i]) if isinstance(values[i], int) else out[i] for i in range(len(values))]


def snap(value: float, heads: Sequence[float], band: float) -> float:
    """``value`` replaced by the nearest head (in log scale) within the band, if any (e.g. t_ref)."""
    if value <= 0:
        return value
    best, best_d = value, math.inf
    for h in heads:
        if h <= 0:
            continue
        d = abs(math.log(value) - math.log(h))
        if d <= math.log1p(band) and d < best_d:
            best, best_d = h, d
    return best
