"""R_plan on hand-computed cases (values worked out on paper; see the comment of each row)."""

import math

import pytest

from corecode.errors import ConfigError
from corecode.rewards import Outcome, RewardConfig, aggregate, planner_group_rewards, time_score

PASS = lambda t=0.1: Outcome(1.0, t, 1000)  # noqa: E731
FAIL = Outcome(0.0, 0.05, 1000)
HALF = Outcome(0.5, 0.05, 1000)
SIG_2_2 = 1 / (1 + math.exp(-2.2))  # sigmoid((1.1 - 0.55) / 0.25)
SIG_024 = 1 / (1 + math.exp(-0.24))  # sigmoid((1.16 - 1.10) / 0.25)

CASES = [
    # label, plans (M outcomes each), format misses, reference time, config changes, expected rewards
    ("all-fail group scores 0", [[FAIL, FAIL], [FAIL, FAIL]], [False, False], None, {}, [0.0, 0.0]),
    ("format miss subtracts the penalty", [[FAIL, FAIL], [FAIL, FAIL]], [False, True], None, {}, [0.0, -0.1]),
    # every program passes at the median time: e = 0.5, q = 1 + 0.2 * 0.5 = 1.1; equal weights
    ("all-pass tie", [[PASS(), PASS()], [PASS(), PASS()]], [False, False], None, {}, [1.1, 1.1]),
    # plan A: q = (1.1, 0), sigmoid weights sigmoid(+-2.2) sum to 1 -> R = 1.1 * sigmoid(2.2); plan B: mean 0.5
    ("pass/fail plan vs half plan", [[PASS(), FAIL], [HALF, HALF]], [False, False], None, {}, [1.1 * SIG_2_2, 0.5]),
    # t_ref = 0.2 (reference): t = 0.1 -> e = sigmoid(2 ln 2) = 0.8, q = 1.16; t = 0.4 -> e = 0.2, q = 1.04
    ("reference time, sigmoid", [[PASS(0.1), PASS(0.4)]], [False], 0.2, {},
     [SIG_024 * 1.16 + (1 - SIG_024) * 1.04]),
    ("reference time, mean", [[PASS(0.1), PASS(0.4)]], [False], 0.2, {"aggregation": "mean"}, [1.10]),
    ("reference time, max", [[PASS(0.1), PASS(0.4)]], [False], 0.2, {"aggregation": "max"}, [1.16]),
    # softmax T = 0.5 over two programs: w1 = sigmoid((1.16 - 1.04) / 0.5) = sigmoid(0.24)
    ("reference time, softmax", [[PASS(0.1), PASS(0.4)]], [False], 0.2, {"aggregation": "softmax"},
     [SIG_024 * 1.16 + (1 - SIG_024) * 1.04]),
    # 'median' ignores the reference: median of (0.1, 0.4, 0.1, 0.4) = 0.25
    ("median mode ignores reference", [[PASS(0.25), PASS(0.25)]], [False], 0.01, {"time_reference": "median"},
     [1.1]),
    # a sandbox error: that plan gets None; its passing program still sets the median (0.1, 0.4, 0.4) -> 0.4
    ("sandbox error -> None", [[PASS(0.1), None], [PASS(0.4), PASS(0.4)]], [False, False], None, {}, [None, 1.1]),
    ("lambda_time = 0 gives pass rates", [[PASS(0.001), PASS(5.0)]], [False], None, {"lambda_time": 0.0}, [1.0]),
]


@pytest.mark.parametrize("label,plans,misses,reference,changes,expected", CASES, ids=[c[0] for c in CASES])
def test_plan_reward_table(label, plans, misses, reference, changes, expected):
    got = planner_group_rewards(plans, misses, RewardConfig(**changes), reference)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert (g is None and e is None) or g == pytest.approx(e, abs=1e-9), label


def test_time_score_is_half_at_reference_and_monotone():
    cfg = RewardConfig()
    assert time_score(0.3, 0.3, cfg) == pytest.approx(0.5)
    assert time_score(0.1, 0.2, cfg) == pytest.approx(0.8)  # sigmoid(2 ln 2) = 4/5
    assert time_score(0.0, 0.2, cfg) > time_score(0.01, 0.2, cfg)  # 0 s is floored, not log(0)


def test_a_better_plan_scores_higher():
    """A known-bad plan (its programs fail) must score below a good one, whatever the aggregation."""
    for aggregation in ("sigmoid", "softmax", "mean", "max"):
        good, bad = planner_group_rewards([[PASS(), HALF], [FAIL, HALF]], [False, False],
                                          RewardConfig(aggregation=aggregation))
        assert good > bad, aggregation


def test_sigmoid_weighting_lies_between_mean_and_max():
    q = [1.0, 0.0, 0.5]
    cfg = RewardConfig()
    assert aggregate(q, cfg.replace(aggregation="mean")) < aggregate(q, cfg) < aggregate(q, cfg.replace(aggregation="max"))


@pytest.mark.parametrize("bad", [{"aggregation": "median"}, {"tau": 0}, {"kappa": -1}, {"time_reference": "ref"}])
def test_bad_config_is_rejected_with_the_option_name(bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        RewardConfig(**bad)


def test_a_reference_time_of_zero_is_known_and_floored_like_any_tiny_time():
    """0 s (a reference faster than the clock) is a measurement, not "unknown": it is floored to 1 ms like
    1e-6 s, so both give t_ref = 1 ms. Programs at 4 ms: e = sigmoid(2 (ln 0.001 - ln 0.004)) = 1/17,
    q = 1 + 0.2 / 17 for both programs, R = q (equal weights). The group median (4 ms) would give 1.1.
    (The floor is set to 1 ms here; the default is 1 us since times come from the measurement pass.)"""
    plans = [[PASS(0.004), PASS(0.004)]]
    expected = 1 + 0.2 / 17
    config = RewardConfig(time_floor_s=1e-3)
    for reference in (0.0, 1e-6):
        assert planner_group_rewards(plans, [False], config, reference) == [pytest.approx(expected, abs=1e-12)]
    assert planner_group_rewards(plans, [False], config, None) == [pytest.approx(1.1)]  # unknown: median
    with pytest.raises(ValueError, match="reference time"):
        planner_group_rewards(plans, [False], config, -1.0)
