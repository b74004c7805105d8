"""t_ref from reference solutions: measured in the real sandbox through the rewards' own executor, None for a
reference that is missing or wrong, saved and reloaded for resume, and carried to the reward as a dataset column."""

import json
import math

import pytest

from corecode.benchmarks import load_benchmark
from corecode.errors import ConfigError
from corecode.rewards import (
    Outcome,
    RewardConfig,
    load_reference_times,
    measure_reference_times,
    planner_group_rewards,
    sandbox_executor,
    save_reference_times,
)
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Problem

SLOW_REF = "def f(n):\n    s = 0\n    for i in range(n * 200000):\n        s += i\n    return n\n"
FAST_REF = "def f(n):\n    return n\n"


def toy(pid: str, reference: str | None) -> Problem:
    return Problem(id=pid, source="toy", statement="return n", entry_point="f",
                   tests=(AssertTest("assert f(3) == 3"), AssertTest("assert f(5) == 5")),
                   reference_solutions=(reference,) if reference else ())


@pytest.fixture(scope="module")
def execute():
    with Sandbox(SandboxConfig()) as sandbox:
        calls = []
        inner = sandbox_executor(sandbox)

        def counting(jobs):
            calls.append(len(jobs))
            return inner(jobs)

        counting.calls = calls
        yield counting


def test_real_references_are_timed_and_wrong_or_missing_ones_are_none(execute):
    mbpp = load_benchmark("mbpp", "test")[:3]
    wrong = toy("wrong", "def f(n):\n    return 0\n")
    problems = [*mbpp, toy("slow", SLOW_REF), toy("fast", FAST_REF), wrong, toy("none", None)]
    execute.calls.clear()
    times = measure_reference_times(problems, execute, repeats=3)
    assert execute.calls == [3 * 6], "every run of every reference goes to the sandbox in one batch"
    assert set(times) == {p.id for p in problems}
    for p in mbpp:
        assert times[p.id] is not None and times[p.id] > 0
    assert times["wrong"] is None and times["none"] is None
    assert times["slow"] > 5 * times["fast"], times  # CPU time is measured, not wall-clock or a constant


def test_median_of_the_runs_and_none_when_any_run_fails():
    from corecode.types import ExecutionResult, Status, TestResult

    seconds = iter([0.3, 0.1, 0.2, 0.1, 0.1, 0.1])

    def fake(jobs):
        out = []
        for _program, problem in jobs:
            status = Status.PASSED if problem.id == "a" or len(out) != 4 else Status.TIMEOUT
            out.append(ExecutionResult(tests=(TestResult(0, status, cpu_time_s=next(seconds)),), n_tests=1))
        return out

    times = measure_reference_times([toy("a", FAST_REF), toy("b", FAST_REF)], fake, repeats=3)
    assert times == {"a": pytest.approx(0.2), "b": None}
    with pytest.raises(ConfigError, match="repeats"):
        measure_reference_times([toy("a", FAST_REF)], fake, repeats=0)


def test_saved_times_reload_only_for_the_same_problems(tmp_path):
    problems = [toy("a", FAST_REF), toy("b", None)]
    path = tmp_path / "stage" / "reference_times.json"
    assert load_reference_times(path, problems) is None
    save_reference_times(path, {"a": 0.004, "b": None})
    assert load_reference_times(path, problems) == {"a": 0.004, "b": None}
    assert load_reference_times(path, problems[:1]) is None  # other problems: measure again
    path.write_text(json.dumps({"a": -1, "b": None}))
    with pytest.raises(ConfigError, match=r"reference_times.json.*'a'"):
        load_reference_times(path, problems)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="reference_times.json"):
        load_reference_times(path, problems)


def test_planner_rows_carry_the_reference_time_column():
    from corecode.training.data import planner_rows

    problems = [toy("a", FAST_REF), toy("b", None)]
    assert "reference_time_s" not in planner_rows(problems)[0]
    rows = planner_rows(problems, {"a": 0.01, "b": None})
    assert [r["reference_time_s"] for r in rows] == [0.01, None]


def test_the_reference_time_changes_the_plan_reward():
    # Two plans whose programs all pass; one runs at 10 ms, the other at 40 ms. Against the group median the
    # fast plan beats the slow one; against a 5 ms reference both are slow, and every reward drops.
    fast, slow = [Outcome(1.0, 0.010)] * 2, [Outcome(1.0, 0.040)] * 2
    config = RewardConfig()
    median = planner_group_rewards([fast, slow], [False, False], config, None)
    against_ref = planner_group_rewards([fast, slow], [False, False], config, 0.005)
    assert median[0] > median[1]
    assert against_ref[0] < median[0] and against_ref[1] < median[1]
    assert all(math.isfinite(r) for r in median + against_ref)
