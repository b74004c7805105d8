"""APR (macro, micro) and Collaboration Gain on hand-computed cases."""

import pytest

from corecode.metrics import (
    apr_macro,
    apr_micro,
    collaboration_gain,
    collaboration_gain_from_counts,
    mean_pass_at_k,
    per_problem_pass_rate,
)

# problem a: 2 samples on 4 tests (passes 4/4 and 1/4); problem b: 1 sample on 1 test (0/1);
# problem c: 2 samples on 2 tests (1/2, 1/2)
SAMPLES = {"a": [(4, 4), (1, 4)], "b": [(0, 1)], "c": [(1, 2), (1, 2)]}


def test_apr_macro_by_hand():
    # per problem: a = (1 + 0.25) / 2 = 0.625, b = 0, c = 0.5 -> mean 1.125 / 3
    assert apr_macro(SAMPLES) == pytest.approx(0.375)


def test_apr_micro_by_hand():
    # tests passed 4 + 1 + 0 + 1 + 1 = 7 of 4 + 4 + 1 + 2 + 2 = 13
    assert apr_micro(SAMPLES) == pytest.approx(7 / 13)


def test_apr_per_problem():
    assert per_problem_pass_rate(SAMPLES) == pytest.approx({"a": 0.625, "b": 0.0, "c": 0.5})


def test_apr_of_all_wrong_is_zero_and_all_right_is_one():
    assert apr_macro({"x": [(0, 3)], "y": [(0, 1)]}) == 0.0
    assert apr_micro({"x": [(3, 3)], "y": [(1, 1)]}) == 1.0


def test_apr_rejects_impossible_counts():
    with pytest.raises(ValueError, match="invalid test counts"):
        apr_macro({"x": [(3, 2)]})
    with pytest.raises(ValueError, match="no samples"):
        apr_micro({"x": []})


def test_cg_points_and_relative_by_hand():
    cg = collaboration_gain(0.45, 0.30)
    assert cg.points == pytest.approx(15.0)
    assert cg.relative == pytest.approx(0.5)


def test_cg_negative_when_agents_hurt_and_relative_undefined_at_zero():
    assert collaboration_gain(0.2, 0.5).points == pytest.approx(-30.0)
    assert collaboration_gain(0.3, 0.0).relative is None


def test_cg_from_per_problem_counts_by_hand():
    # with agents: pass@1 = mean(3/5, 1/5, 0/5) = 4/15; alone: mean(1/5, 1/5, 0/5) = 2/15
    with_agents = {"a": (5, 3), "b": (5, 1), "c": (5, 0)}
    alone = {"a": (5, 1), "b": (5, 1), "c": (5, 0)}
    cg = collaboration_gain_from_counts(with_agents, alone)
    assert cg.pass1_with == pytest.approx(4 / 15)
    assert cg.points == pytest.approx(100 * 2 / 15)
    assert cg.relative == pytest.approx(1.0)
    assert mean_pass_at_k(with_agents, 5) == pytest.approx(2 / 3)


def test_cg_refuses_different_problems_or_budgets():
    with pytest.raises(ValueError, match="same problems"):
        collaboration_gain_from_counts({"a": (1, 1)}, {"b": (1, 1)})
    with pytest.raises(ValueError, match="same sample budget"):
        collaboration_gain_from_counts({"a": (5, 1)}, {"a": (1, 1)})
