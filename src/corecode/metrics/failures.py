"""Why programs fail: the share of samples per outcome, and runtime errors by exception class.

A sample's outcome is the status of its *first* failing test (``ExecutionResult.status``): a program that
gives a wrong answer on test 2 and times out on test 5 counts as a wrong answer. Rates are fractions of
*all* scored samples (so the rates of every status, ``passed`` included, sum to 1); runtime errors are also
broken down by exception class (``ZeroDivisionError``, ``IndexError``...), as fractions of all samples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from corecode.types import Status

__all__ = ["failure_rates", "runtime_error_rates", "FAILURE_STATUSES"]

FAILURE_STATUSES = tuple(s for s in Status if s is not Status.PASSED)


def failure_rates(statuses: Iterable[Status | str]) -> dict[str, float]:
    """Fraction of samples per outcome, keyed by status value; every status is present (0.0 if unseen).

    >>> failure_rates(["passed", "timeout", "timeout", "wrong_answer"])["timeout"]
    0.5
    """
    counts = Counter(Status(s).value for s in statuses)
    total = sum(counts.values())
    if total == 0:
        return {}
    return {s.value: counts.get(s.value, 0) / total for s in Status}


def runtime_error_rates(outcomes: Iterable[tuple[Status | str, str | None]]) -> dict[str, float]:
    """Fraction of all samples that ended in a runtime error of each exception class, most common first.

    ``outcomes`` are (status, exception class name or None) pairs; an unnamed runtime error counts as
    ``"unknown"``.

    >>> runtime_error_rates([("runtime_error", "IndexError"), ("passed", None)])
    {'IndexError': 0.5}
    """
    outcomes = list(outcomes)
    if not outcomes:
        return {}
    counts = Counter(
        exception or "unknown" for status, exception in outcomes if Status(status) is Status.RUNTIME_ERROR
    )
    return {name: count / len(outcomes) for name, count in counts.most_common()}
