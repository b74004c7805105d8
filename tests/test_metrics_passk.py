"""pass@k: the unbiased estimator against brute-force enumeration of sample subsets, and its helpers."""

import itertools
import math

import pytest

from corecode.metrics.passk import average_pass_at_k, pass_at_k, pass_at_k_table, valid_ks


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


def test_large_n_is_stable_and_matches_the_binomial_form():
    n, c, k = 1000, 7, 100
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)
    assert 0.0 <= pass_at_k(100_000, 1, 1) <= 1.0


@pytest.mark.parametrize("args", [(0, 0, 1), (5, 6, 1), (5, 1, 0), (5, 1, 6), (5, -1, 1)])
def test_rejects_impossible_counts(args):
    with pytest.raises(ValueError):
        pass_at_k(*args)


def test_averages_and_tables():
    counts = [(4, 1), (4, 4), (4, 0)]
    assert average_pass_at_k(counts, 1) == pytest.approx((0.25 + 1 + 0) / 3)
    table = pass_at_k_table(counts)
    assert list(table) == [1, 2, 3, 4] and table[4] == pytest.approx(2 / 3)
    assert valid_ks([(10, 1), (5, 0)]) == [1, 2, 5]
    with pytest.raises(ValueError):
        average_pass_at_k([], 1)
