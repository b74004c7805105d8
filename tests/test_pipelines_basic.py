"""Control flow of the single-pass pipelines (direct, cot, scot, self_planning, planner_coder) with a
scripted model double, including the failure paths: empty output, no code block, truncated output,
backend error."""

import json

import pytest

from corecode.backends.scripted import ScriptedBackend
from corecode.errors import BackendError, ConfigError, UnknownNameError
from corecode.pipelines import PIPELINES, build_pipeline
from corecode.types import AssertTest, Problem, StdioTest

FENCE = "```"
STARTER = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum of xs."""\n'
PROBLEM = Problem(
    id="demo/0",
    source="demo",
    statement=STARTER,
    tests=(AssertTest("assert total([1, 2]) == 3"), AssertTest("assert total([]) == 0")),
    public_tests=(AssertTest("assert total([1, 2]) == 3"),),
    starter_code=STARTER,
    entry_point="total",
)
STDIO = Problem(id="demo/1", source="demo", statement="Print 2n.", tests=(StdioTest("3\n", "6\n"),))
PLAN = (
    "## 1. Input-Output Definition\nA list of ints; returns their sum.\n## 2. Linear Progression\nAdd them.\n"
    "## 3. Conditional Logic\nEmpty list gives 0.\n## 4. Iteration\nOne pass, O(n) time, O(1) memory."
)
CODE = f"Here you go:\n{FENCE}python\ndef total(xs: List[int]) -> int:\n    return sum(xs)\n{FENCE}\nDone."


def _run(program):
    namespace: dict = {}
    exec(program, namespace)
    return namespace


@pytest.mark.parametrize("name", ["direct", "cot", "scot"])
def test_single_call_pipelines(name):
    backend = ScriptedBackend([CODE], name="m")
    solution = build_pipeline(name, backend).solve(PROBLEM)
    assert [c.role for c in solution.trace] == [PIPELINES[name].roles[0]]
    assert solution.failure is None and solution.plan is None
    assert _run(solution.program)["total"]([1, 2, 3]) == 6  # whole and runnable: the import was added
    json.dumps(solution.to_dict())


def test_planner_coder_passes_the_plan_and_parses_it():
    planner, coder = ScriptedBackend([PLAN], name="planner-m"), ScriptedBackend([CODE], name="coder-m")
    solution = build_pipeline("planner_coder", {"planner": planner, "coder": coder}).solve(PROBLEM)
    assert [(c.role, c.model) for c in solution.trace] == [("planner", "planner-m"), ("coder_with_plan", "coder-m")]
    assert solution.plan == PLAN and solution.parsed_plan.missing == ()
    assert "Empty list gives 0." in coder.calls[0][1]["content"]  # the Coder saw the plan
    assert "```" not in planner.calls[0][1]["content"].split("Problem:")[0]
    assert _run(solution.program)["total"]([]) == 0
    assert solution.to_dict()["plan_parts"]["iteration"].startswith("One pass")


def test_self_planning_uses_one_default_model_for_both_roles():
    backend = ScriptedBackend(["1. add the numbers", CODE])
    solution = build_pipeline("self_planning", backend).solve(PROBLEM)
    assert [c.role for c in solution.trace] == ["self_planner", "coder_with_plan"]
    assert "1. add the numbers" in backend.calls[1][1]["content"]


def test_role_model_lookup_role_then_slot_then_default():
    default, special = ScriptedBackend([PLAN], name="default"), ScriptedBackend([CODE], name="special")
    solution = build_pipeline("planner_coder", {"default": default, "coder_with_plan": special}).solve(PROBLEM)
    assert [c.model for c in solution.trace] == ["default", "special"]
    with pytest.raises(ConfigError, match="no model for role 'planner'"):
        build_pipeline("planner_coder", {"coder": special})


@pytest.mark.parametrize(
    "reply, failure",
    [("", "empty_output"), ("   \n", "empty_output"), ("I cannot solve this.", "no_code")],
)
def test_no_code_is_data_not_an_exception(reply, failure):
    solution = build_pipeline("planner_coder", ScriptedBackend([PLAN, reply])).solve(PROBLEM)
    assert solution.program == "" and solution.failure == failure and len(solution.trace) == 2


def test_empty_plan_still_reaches_the_coder():
    backend = ScriptedBackend(["", CODE])
    solution = build_pipeline("planner_coder", backend).solve(PROBLEM)
    assert solution.parsed_plan.missing == ("input_output", "linear_progression", "conditional_logic", "iteration")
    assert "(no plan)" in backend.calls[1][1]["content"] and solution.failure is None


def test_truncated_output_keeps_the_complete_part():
    truncated = f"{FENCE}python\ndef total(xs):\n    return sum(xs)\n\n\ndef unused(a):\n    return (a +"
    solution = build_pipeline("direct", ScriptedBackend([truncated])).solve(PROBLEM)
    assert _run(solution.program)["total"]([5]) == 5


def test_bare_body_is_wrapped_in_the_signature():
    solution = build_pipeline("direct", ScriptedBackend([f"{FENCE}python\n    return sum(xs)\n{FENCE}"])).solve(PROBLEM)
    assert _run(solution.program)["total"]([1, 1]) == 2


def test_stdio_program_is_kept_as_is():
    program = "n = int(input())\nprint(2 * n)\n"
    solution = build_pipeline("direct", ScriptedBackend([f"{FENCE}python\n{program}{FENCE}"])).solve(STDIO)
    assert solution.program == program
    assert "standard input" in solution.trace[0].messages[1]["content"]


@pytest.mark.parametrize("name", ["direct", "planner_coder", "self_planning"])
def test_backend_error_propagates_with_context(name):
    backend = ScriptedBackend([BackendError("connection refused")], name="dead")
    with pytest.raises(BackendError, match="connection refused") as info:
        build_pipeline(name, backend).solve(PROBLEM)
    assert "demo/0" in str(info.value) and "dead" in str(info.value)


def test_solve_many_batches_and_pairs_plans_with_programs():
    plans = [PLAN.replace("Add them.", f"Add them ({i}).") for i in range(3)]
    codes = [CODE.replace("sum(xs)", f"sum(xs) + {i} - {i}") for i in range(3)]
    planner, coder = ScriptedBackend(plans), ScriptedBackend(codes)
    solutions = build_pipeline("planner_coder", {"planner": planner, "coder": coder}).solve_many(PROBLEM, 3)
    assert len(planner.calls) == 1 and len(coder.calls) == 3  # one planner prompt sampled 3 times
    for i, solution in enumerate(solutions):
        assert f"({i})" in solution.plan and f"+ {i} - {i}" in solution.program
        assert f"({i})" in coder.calls[i][1]["content"]
    direct = build_pipeline("direct", ScriptedBackend([CODE, CODE])).solve_many(PROBLEM, 2)
    assert len(direct) == 2
    with pytest.raises(ConfigError):
        build_pipeline("direct", ScriptedBackend([])).solve_many(PROBLEM, 0)


def test_build_pipeline_errors():
    with pytest.raises(UnknownNameError, match="valid: cot, direct"):
        build_pipeline("nope", ScriptedBackend([]))
    with pytest.raises(ConfigError, match="has no option"):
        build_pipeline("direct", ScriptedBackend([]), k=3)
    with pytest.raises(ConfigError, match="needs a sandbox"):
        build_pipeline("reflexion", ScriptedBackend([]))
