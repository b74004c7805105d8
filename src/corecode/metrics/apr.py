"""Average pass rate (APR): how much of the test suite the programs pass, not only whether they pass all.

Definitions (METHOD.md section 4):

* per sample ``s``: ``rate(s) = tests passed / tests run`` (a program that crashes before some tests counts
  them as failed: the denominator is the number of tests *asked for*, ``ExecutionResult.n_tests``);
* **macro APR** = mean over problems of (mean over that problem's samples of ``rate``): every problem
  weighs the same, whatever its number of tests;
* **micro APR** = (tests passed, summed over every sample of every problem) / (tests run, summed the same
  way): a problem with 100 tests weighs 100 times a problem with one.

Both are fractions in [0, 1]; reports print them in percent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["apr_macro", "apr_micro", "per_problem_pass_rate", "TestCounts"]

# (tests passed, tests run) of one sample
TestCounts = tuple[int, int]


def _check(task_id: str, counts: Sequence[TestCounts]) -> None:
    if not counts:
        raise ValueError(f"problem {task_id!r} has no samples; drop it or score its samples first")
    for passed, total in counts:
        if total < 0 or passed < 0 or passed > total:
            raise ValueError(f"problem {task_id!r}: invalid test counts passed={passed}, total={total}")


def apr_macro(samples: Mapping[str, Sequence[TestCounts]]) -> float:
    """Mean over problems of the mean per-sample pass rate.

    >>> apr_macro({"a": [(1, 2), (2, 2)], "b": [(0, 10)]})
    0.375
    """
    if not samples:
        raise ValueError("APR of zero problems is undefined")
    per_problem = []
    for task_id, counts in samples.items():
        _check(task_id, counts)
        rates = [passed / total if total else 0.0 for passed, total in counts]
        per_problem.append(sum(rates) / len(rates))
    return sum(per_problem) / len(per_problem)


def apr_micro(samples: Mapping[str, Sequence[TestCounts]]) -> float:
    """Tests passed over tests run, pooled across all samples of all problems.

    >>> apr_micro({"a": [(1, 2), (2, 2)], "b": [(0, 10)]})
    0.21428571428571427
    """
    if not samples:
        raise ValueError("APR of zero problems is undefined")
    passed_sum = total_sum = 0
    for task_id, counts in samples.items():
        _check(task_id, counts)
        passed_sum += sum(p for p, _ in counts)
        total_sum += sum(t for _, t in counts)
    return passed_sum / total_sum if total_sum else 0.0


def per_problem_pass_rate(samples: Mapping[str, Iterable[TestCounts]]) -> dict[str, float]:
    """Mean per-sample pass rate of each problem (what the per-problem scatter plot compares)."""
    out = {}
    for task_id, counts in samples.items():
        counts = list(counts)
        _check(task_id, counts)
        out[task_id] = sum(p / t if t else 0.0 for p, t in counts) / len(counts)
    return out
