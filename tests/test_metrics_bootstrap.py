"""Bootstrap intervals over problems and paired comparisons (corecode.metrics.bootstrap)."""

from __future__ import annotations

import math
import random

import pytest

from corecode.metrics import (
    bootstrap_mean,
    bootstrap_pass_at_k,
    paired_bootstrap,
    paired_pass_at_k,
    pass_at_k,
    problems_needed,
)


def test_interval_of_a_fair_coin_matches_the_normal_approximation():
    # 50 problems, half solved: standard error 0.5 / sqrt(50) = 0.0707, so roughly 0.5 +- 0.139
    iv = bootstrap_mean({f"p{i}": float(i % 2) for i in range(50)})
    assert iv.estimate == 0.5 and iv.n == 50
    assert 0.34 <= iv.low <= 0.39 and 0.61 <= iv.high <= 0.66


def test_interval_is_reproducible_and_independent_of_the_order_problems_were_read():
    values = {f"p{i}": random.Random(i).random() for i in range(40)}
    reversed_order = dict(reversed(list(values.items())))
    assert bootstrap_mean(values) == bootstrap_mean(reversed_order) == bootstrap_mean(values, seed=0)
    assert bootstrap_mean(values, seed=1) != bootstrap_mean(values, seed=0)


def test_interval_narrows_with_more_problems():
    small = bootstrap_mean([float(i % 2) for i in range(20)])
    large = bootstrap_mean([float(i % 2) for i in range(200)])
    assert (large.high - large.low) < 0.5 * (small.high - small.low)


def test_one_problem_or_equal_values_give_a_zero_width_interval_and_none_is_refused():
    assert bootstrap_mean([0.7]).low == bootstrap_mean([0.7]).high == 0.7
    iv = bootstrap_mean([1.0] * 10)
    assert (iv.low, iv.high) == (1.0, 1.0)
    with pytest.raises(ValueError):
        bootstrap_mean([])


def test_pass_at_k_interval_is_around_the_unbiased_estimator():
    counts = {"a": (5, 0), "b": (5, 2), "c": (5, 5), "d": (5, 1)}
    iv = bootstrap_pass_at_k(counts, 2)
    expected = sum(pass_at_k(n, c, 2) for n, c in counts.values()) / 4
    assert math.isclose(iv.estimate, expected)
    assert iv.low < expected < iv.high


def test_paired_interval_is_narrow_when_runs_agree_on_most_problems():
    # A and B solve the same 25 of 50 problems, and B solves 5 more: unpaired intervals overlap widely,
    # the paired one is all above 0
    a = {f"p{i}": float(i < 25) for i in range(50)}
    b = {f"p{i}": float(i < 30) for i in range(50)}
    diff = paired_bootstrap(a, b)
    assert math.isclose(diff.estimate, 0.10)
    assert diff.b_better == 5 and diff.a_better == 0
    assert diff.excludes_zero and diff.low > 0
    ia, ib = bootstrap_mean(a), bootstrap_mean(b)
    assert ib.low < ia.high  # separately, the two intervals overlap
    assert (diff.high - diff.low) < 0.6 * (ia.high - ia.low)


def test_paired_interval_counts_flips_both_ways_and_includes_zero_when_they_balance():
    a = {f"p{i}": float(i < 10) for i in range(40)}  # A solves p0..p9
    b = {f"p{i}": float(5 <= i < 15) for i in range(40)}  # B solves p5..p14
    diff = paired_bootstrap(a, b)
    assert diff.estimate == 0.0 and diff.b_better == 5 and diff.a_better == 5
    assert diff.low < 0 < diff.high and not diff.excludes_zero
    scaled = diff.scaled(100)
    assert scaled.low == 100 * diff.low and scaled.b_better == 5


def test_paired_comparison_refuses_different_problems():
    with pytest.raises(ValueError, match="same problems"):
        paired_bootstrap({"a": 1.0}, {"b": 1.0})


def test_paired_pass_at_k_uses_counts():
    a = {"x": (2, 0), "y": (2, 2)}
    b = {"x": (2, 2), "y": (2, 2)}
    diff = paired_pass_at_k(a, b, 1)
    assert diff.estimate == 0.5 and diff.b_better == 1 and diff.a_better == 0


def test_problems_needed_follows_the_formula_and_grows_for_smaller_differences():
    z = 1.959963984540054 + 0.8416212335729143
    assert problems_needed(0.10, 0.30) == math.ceil(z * z * (0.30 - 0.01) / 0.01)
    assert problems_needed(0.05, 0.30) > 3 * problems_needed(0.10, 0.30)
    with pytest.raises(ValueError):
        problems_needed(0.4, 0.3)  # more difference than discordant problems is impossible


def test_problems_needed_is_enough_in_simulation():
    # with the n it asks for, a paired interval excludes 0 in about `power` of the simulated experiments
    n = problems_needed(0.15, 0.35, power=0.8)
    rng = random.Random(7)
    hits = 0
    trials = 40
    for trial in range(trials):
        a, b = {}, {}
        for i in range(n):
            u = rng.random()
            # discordant 35 %: B-only 25 %, A-only 10 % (difference 15 points); concordant: both or neither
            a[f"p{i}"], b[f"p{i}"] = (0.0, 1.0) if u < 0.25 else (1.0, 0.0) if u < 0.35 else (1.0, 1.0) if u < 0.6 else (0.0, 0.0)
        hits += paired_bootstrap(a, b, resamples=400, seed=trial).excludes_zero
    assert 0.6 <= hits / trials <= 0.97


def test_unpaired_difference_matches_the_normal_approximation_and_excludes_zero_only_for_a_real_gap():
    from corecode.metrics import unpaired_bootstrap

    first, second = [0.0, 1.0] * 50, [0.0] * 30 + [1.0] * 70  # 0.5 vs 0.7 over 100 problems each
    d = unpaired_bootstrap(first, second)
    se = math.sqrt(0.25 / 100 + 0.21 / 100)
    assert d.estimate == pytest.approx(0.2) and d.n == 200
    assert d.low == pytest.approx(0.2 - 1.96 * se, abs=0.03) and d.high == pytest.approx(0.2 + 1.96 * se, abs=0.03)
    assert d.low > 0.0
    # two sets with the same mean: the interval holds zero
    same = unpaired_bootstrap([0.0, 1.0] * 20, [1.0, 1.0, 0.0, 0.0] * 10)
    assert same.estimate == 0.0 and same.low < 0.0 < same.high
    assert unpaired_bootstrap(first, second) == d  # seeded: the same numbers, the same interval
    with pytest.raises(ValueError, match="both sides"):
        unpaired_bootstrap([], [1.0])
