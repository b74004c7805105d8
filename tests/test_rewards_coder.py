"""R_code on hand-computed cases, and the plan-format term."""

import pytest

from corecode.rewards import Outcome, RewardConfig, coder_group_rewards, format_term, plan_missing_parts

CFG = RewardConfig(memory_floor_bytes=1)


def P(mem):  # a passing program with this peak memory
    return Outcome(1.0, 0.1, mem)


CASES = [
    ("all-fail group: pass rates only", [Outcome(0.0), Outcome(0.5, 0, 10), Outcome(0.0)], CFG, [0.0, 0.5, 0.0]),
    ("all-pass tie: full space score", [P(100), P(100)], CFG, [1.2, 1.2]),
    # O_target = 100: 1 + 0.2 * min(1, 100/m)
    ("space ladder", [P(100), P(200), P(400)], CFG, [1.2, 1.1, 1.05]),
    ("partial passes do not set O_target", [Outcome(0.5, 0, 10), P(100)], CFG, [0.5, 1.2]),
    ("sandbox error -> None, left out of O_target", [None, P(200), P(400)], CFG, [None, 1.2, 1.1]),
    # floor 1000: 0 and 1000 bytes are the same; 4000 -> 1 + 0.2 / 4
    ("memory floor", [P(0), P(1000), P(4000)], RewardConfig(memory_floor_bytes=1000), [1.2, 1.2, 1.05]),
    ("lambda_space = 0", [P(100), P(400)], CFG.replace(lambda_space=0.0), [1.0, 1.0]),
    ("all None", [None, None], CFG, [None, None]),
]


@pytest.mark.parametrize("label,group,config,expected", CASES, ids=[c[0] for c in CASES])
def test_code_reward_table(label, group, config, expected):
    got = coder_group_rewards(group, config)
    assert [None if g is None else pytest.approx(g, abs=1e-12) for g in got] == expected, label


def test_a_failing_program_never_beats_a_passing_one():
    got = coder_group_rewards([P(10**9), Outcome(0.99, 0.0, 1)], CFG)
    assert got[0] > got[1]


def test_format_term():
    cfg = RewardConfig(format_penalty=0.3)
    complete = (
        "1. Input-Output Definition: a list of ints, return their sum\n"
        "2. Linear Progression: start at 0 and add each number\n"
        "3. Conditional Logic: an empty list gives 0\n"
        "4. Iteration: one pass over the list, O(n) time, O(1) memory\n"
    )
    assert plan_missing_parts(complete) == ()
    assert format_term(plan_missing_parts(complete), cfg) == 0.0
    assert format_term(plan_missing_parts("def f(xs): return sum(xs)"), cfg) == -0.3
