"""95 % intervals of a run's numbers and paired differences between runs, from ``summary.json``'s per-problem counts.

Everything is computed from ``per_problem`` (n, correct, pass rate of each problem), so a summary written
before intervals existed still gets them in ``corecode report``. The bootstrap is
:mod:`corecode.metrics.bootstrap` (seed 0, 2000 resamples: the same numbers give the same interval).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corecode.metrics.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    PairedDifference,
    bootstrap_mean,
    bootstrap_pass_at_k,
    paired_bootstrap,
    paired_pass_at_k,
)

__all__ = [
    "summary_intervals", "cg_interval", "pass_at_k_interval", "apr_interval", "paired_pass1",
    "paired_apr", "format_interval", "format_paired",
]


# pass@k gets an interval for these k (all of them would cost n bootstraps for large n)
INTERVAL_KS = (1, 2, 5, 10, 20, 50, 100)


def _counts(summary: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    return {tid: (int(p["n"]), int(p["correct"])) for tid, p in summary["per_problem"].items()}


def pass_at_k_interval(summary: Mapping[str, Any], k: int) -> Interval | None:
    """pass@k (fraction) and its interval over the run's problems; None when some problem has n < k."""
    counts = _counts(summary)
    if not counts or min(n for n, _ in counts.values()) < k:
        return None
    return bootstrap_pass_at_k(counts, k)


def apr_interval(summary: Mapping[str, Any]) -> Interval | None:
    """Macro APR (fraction) and its interval: the mean of the per-problem pass rates."""
    rates = {tid: float(p["pass_rate"]) for tid, p in summary["per_problem"].items()}
    return bootstrap_mean(rates) if rates else None


def summary_intervals(counts: Mapping[str, tuple[int, int]], rates: Mapping[str, float]) -> dict[str, Any]:
    """The ``intervals`` block of summary.json: pass@k for k in INTERVAL_KS, and macro APR (fractions)."""
    max_k = min(n for n, _ in counts.values())
    return {
        "confidence": 0.95,
        "method": "percentile bootstrap over problems",
        "resamples": DEFAULT_RESAMPLES,
        "seed": DEFAULT_SEED,
        "pass_at_k": {str(k): bootstrap_pass_at_k(counts, k).to_dict() for k in INTERVAL_KS if k <= max_k},
        "apr_macro": bootstrap_mean(rates).to_dict(),
    }


def cg_interval(with_agents: Mapping[str, tuple[int, int]], alone: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """CG in points with its paired interval over the same problems, and the problems that flip each way."""
    diff = paired_pass_at_k(alone, with_agents, 1).scaled(100.0)
    return {
        "estimate": diff.estimate, "low": diff.low, "high": diff.high, "n": diff.n, "confidence": diff.confidence,
        "pipeline_better": diff.b_better, "alone_better": diff.a_better,
    }


def _shared(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(set(a["per_problem"]) & set(b["per_problem"]))


def paired_pass1(a: Mapping[str, Any], b: Mapping[str, Any]) -> PairedDifference | None:
    """Pass@1 of run B - run A (points) on the problems both scored; None when they share none."""
    shared = _shared(a, b)
    if not shared:
        return None
    ca, cb = _counts(a), _counts(b)
    return paired_pass_at_k({t: ca[t] for t in shared}, {t: cb[t] for t in shared}, 1).scaled(100.0)


def paired_apr(a: Mapping[str, Any], b: Mapping[str, Any]) -> PairedDifference | None:
    """Macro APR of run B - run A (points) on the problems both scored."""
    shared = _shared(a, b)
    if not shared:
        return None
    return paired_bootstrap(
        {t: float(a["per_problem"][t]["pass_rate"]) for t in shared},
        {t: float(b["per_problem"][t]["pass_rate"]) for t in shared},
    ).scaled(100.0)


def format_interval(low: float, high: float, signed: bool = False) -> str:
    """``[low, high]`` with one decimal (``signed``: always with a sign, for differences)."""
    fmt = "{:+.1f}" if signed else "{:.1f}"
    return "[" + fmt.format(low) + ", " + fmt.format(high) + "]"


def format_paired(diff: Mapping[str, Any] | PairedDifference, better: str = "b_better", worse: str = "a_better") -> str:
    """``+6.0 [-4.0, +16.0], 8 up / 5 down`` for a difference in points with its flips."""
    d = diff.to_dict() if isinstance(diff, PairedDifference) else diff
    return (f"{d['estimate']:+.1f} {format_interval(d['low'], d['high'], signed=True)}, "
            f"{d[better]} up / {d[worse]} down")
