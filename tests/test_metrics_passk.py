"""pass@k (written by the sandbox engineer) checked against brute-force enumeration of sample subsets."""

import itertools
import math

import pytest

from corecode.metrics.passk import pass_at_k


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """Fraction of the k-subsets of n samples (c of them correct) that contain a correct sample."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_enumeration_of_subsets(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(n, c, k), abs=1e-12), (n, c, k)


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)


def test_large_n_stays_finite_and_in_range():
    value = pass_at_k(200, 3, 100)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(1 - math.comb(197, 100) / math.comb(200, 100))
