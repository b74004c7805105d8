"""Reflexion and MapCoder: control flow with a scripted model, and the rule that feedback comes from the
PUBLIC tests only. The programs really run (in a subprocess, through a small stand-in for the sandbox that
records every call), so "passes the public tests" means it.
"""

import subprocess
import sys

import pytest

from corecode.backends.scripted import ScriptedBackend
from corecode.errors import BackendError, ConfigError
from corecode.pipelines import build_pipeline
from corecode.types import AssertTest, ExecutionResult, Problem, Status
from corecode.types import TestResult as Outcome

FENCE = "```"
HIDDEN = "assert add(2, 2) == 4  # HIDDEN-TEST-MARKER"
PROBLEM = Problem(
    id="demo/add",
    source="demo",
    statement="Write a function add(a, b) that returns a + b.",
    tests=(AssertTest(HIDDEN), AssertTest("assert add(-1, 1) == 0  # HIDDEN-TEST-MARKER")),
    public_tests=(AssertTest("assert add(1, 2) == 3"),),
    entry_point="add",
    reference_solutions=("def add(a, b):\n    return a + b  # HIDDEN-REFERENCE\n",),
    metadata={"raw": "HIDDEN-TEST-MARKER"},
)
NO_PUBLIC = Problem(id="demo/np", source="demo", statement="add", tests=(AssertTest(HIDDEN),), entry_point="add")
WRONG = f"{FENCE}python\ndef add(a, b):\n    return a - b\n{FENCE}"
RIGHT = f"{FENCE}python\ndef add(a, b):\n    return a + b\n{FENCE}"


class RecordingSandbox:
    """Runs each assert test after the program in a fresh interpreter; records what it was asked."""

    def __init__(self):
        self.calls = []

    def run(self, program, problem, tests="all"):
        self.calls.append((program, problem, tests))
        cases = {"all": problem.tests, "public": problem.public_tests}.get(tests, tests)
        results = []
        for index, case in enumerate(cases):
            proc = subprocess.run([sys.executable, "-c", program + "\n" + case.code], capture_output=True, text=True, timeout=30)
            status = Status.PASSED if proc.returncode == 0 else Status.WRONG_ANSWER
            results.append(Outcome(index=index, status=status, detail=proc.stderr[-200:]))
        return ExecutionResult(tests=tuple(results), n_tests=len(cases))


def _assert_no_hidden_leak(backends, sandbox):
    for backend in backends:
        for conversation in backend.calls:
            for message in conversation:
                assert "HIDDEN" not in message["content"]
    for _, problem, tests in sandbox.calls:
        assert tests == "public"
        assert problem.tests == PROBLEM.public_tests and problem.public_tests == PROBLEM.public_tests
        assert problem.reference_solutions == () and "HIDDEN" not in repr(problem)


def test_reflexion_stops_early_when_public_tests_pass():
    backend, sandbox = ScriptedBackend([WRONG, "It subtracts instead of adding.", RIGHT]), RecordingSandbox()
    solution = build_pipeline("reflexion", backend, sandbox=sandbox, max_rounds=3).solve(PROBLEM)
    assert [c.role for c in solution.trace] == ["coder", "reflector", "reflexion_coder"]
    assert solution.public_passed is True and solution.rounds == 1
    assert "a + b" in solution.program and len(sandbox.calls) == 2
    reflector_prompt = backend.calls[1][1]["content"]
    assert "assert add(1, 2) == 3" in reflector_prompt and "0 of 1" in reflector_prompt
    assert "It subtracts" in backend.calls[2][1]["content"]
    _assert_no_hidden_leak([backend], sandbox)


def test_reflexion_stops_at_the_round_bound_and_keeps_the_best_attempt():
    replies = [WRONG] + ["reflection", WRONG] * 2
    backend, sandbox = ScriptedBackend(replies), RecordingSandbox()
    solution = build_pipeline("reflexion", backend, sandbox=sandbox, max_rounds=2).solve(PROBLEM)
    assert len(solution.trace) == 5 and solution.rounds == 2 and solution.public_passed is False
    assert len(sandbox.calls) == 3 and "a - b" in solution.program
    _assert_no_hidden_leak([backend], sandbox)


def test_reflexion_zero_rounds_and_no_code_attempts():
    backend, sandbox = ScriptedBackend(["no code here", "You wrote no code.", RIGHT]), RecordingSandbox()
    solution = build_pipeline("reflexion", backend, sandbox=sandbox, max_rounds=1).solve(PROBLEM)
    assert "no Python program" in backend.calls[1][1]["content"]
    assert solution.public_passed is True and len(sandbox.calls) == 1  # the empty attempt was not run
    once = build_pipeline("reflexion", ScriptedBackend([WRONG]), sandbox=RecordingSandbox(), max_rounds=0)
    assert len(once.solve(PROBLEM).trace) == 1
    with pytest.raises(ConfigError):
        build_pipeline("reflexion", ScriptedBackend([]), sandbox=RecordingSandbox(), max_rounds=-1)


def test_reflexion_without_public_tests_makes_one_attempt_and_runs_nothing():
    sandbox = RecordingSandbox()
    solution = build_pipeline("reflexion", ScriptedBackend([WRONG]), sandbox=sandbox).solve(NO_PUBLIC)
    assert len(solution.trace) == 1 and sandbox.calls == [] and solution.public_passed is None


def _retrieval(n):
    problems = "\n".join(f"## Problem {i}\nDescription: task {i}.\nPlan: step {i}.\n" for i in range(1, n + 1))
    return problems + "\n## Algorithm\nSimple arithmetic."


def _mapcoder_models(retrieval, plans, confidences, codes, debugs):
    return {
        "retrieval": ScriptedBackend([retrieval], name="retrieval"),
        "exemplar_planner": ScriptedBackend(plans, name="planner"),
        "plan_verifier": ScriptedBackend([f"Confidence: {c}" for c in confidences], name="verifier"),
        "coder_with_plan": ScriptedBackend(codes, name="coder"),
        "debugger": ScriptedBackend(debugs, name="debugger"),
    }


def test_mapcoder_tries_plans_by_confidence_and_respects_k_and_t():
    # 5 problems recalled but k=2: two plans; plan B is more confident, so it is coded first.
    models = _mapcoder_models(_retrieval(5), ["plan A", "plan B"], [30, 90], [WRONG, RIGHT], [WRONG])
    sandbox = RecordingSandbox()
    solution = build_pipeline("mapcoder", models, sandbox=sandbox, k=2, t=1).solve(PROBLEM)
    roles = [c.role for c in solution.trace]
    assert roles == ["retrieval", "exemplar_planner", "plan_verifier", "exemplar_planner", "plan_verifier",
                     "coder_with_plan", "debugger", "coder_with_plan"]
    assert "Recall 2 relevant" in models["retrieval"].calls[0][1]["content"]
    assert "plan B" in models["coder_with_plan"].calls[0][1]["content"]  # most confident first
    assert "plan A" in models["coder_with_plan"].calls[1][1]["content"]
    assert solution.public_passed is True and solution.plan == "plan A" and "a + b" in solution.program
    assert solution.rounds == 1 and len(models["debugger"].calls) == 1  # t=1 debugging round per plan
    _assert_no_hidden_leak(models.values(), sandbox)


def test_mapcoder_gives_up_after_k_plans_and_t_rounds_each():
    models = _mapcoder_models(_retrieval(2), ["p1", "p2"], [50, 50], [WRONG, WRONG], [WRONG] * 6)
    sandbox = RecordingSandbox()
    solution = build_pipeline("mapcoder", models, sandbox=sandbox, k=2, t=3).solve(PROBLEM)
    assert len(models["debugger"].calls) == 6 and len(sandbox.calls) == 8  # 2 plans x (1 + 3) runs
    assert len(solution.trace) == 1 + 2 * 2 + 2 * (1 + 3)
    assert solution.public_passed is False and solution.plan == "p1"  # ties keep recall order
    _assert_no_hidden_leak(models.values(), sandbox)


def test_mapcoder_with_unparsable_retrieval_and_scores():
    models = _mapcoder_models("I recall nothing.", ["only plan"], ["no score"], [RIGHT], [])
    models["plan_verifier"] = ScriptedBackend(["looks fine"])
    solution = build_pipeline("mapcoder", models, sandbox=RecordingSandbox(), k=3, t=2).solve(PROBLEM)
    assert solution.public_passed is True and solution.plan == "only plan"
    assert "no similar problem was recalled" in models["exemplar_planner"].calls[0][1]["content"]


def test_mapcoder_backend_error_propagates():
    models = _mapcoder_models(_retrieval(1), ["p"], [80], [BackendError("server died")], [])
    with pytest.raises(BackendError, match="coder_with_plan agent .* demo/add: server died"):
        build_pipeline("mapcoder", models, sandbox=RecordingSandbox(), k=1, t=1).solve(PROBLEM)


def test_mapcoder_options_are_validated():
    with pytest.raises(ConfigError, match="k must be >= 1"):
        build_pipeline("mapcoder", ScriptedBackend([]), sandbox=RecordingSandbox(), k=0)


def test_reflexion_and_mapcoder_with_the_real_sandbox():
    from corecode.sandbox import Sandbox, SandboxConfig

    with Sandbox(SandboxConfig(workers=1)) as sandbox:
        backend = ScriptedBackend([WRONG, "It subtracts.", RIGHT])
        solution = build_pipeline("reflexion", backend, sandbox=sandbox).solve(PROBLEM)
        assert solution.public_passed is True and solution.rounds == 1
        assert "expected 3, got -1" in backend.calls[1][1]["content"]  # the sandbox's real feedback
        assert sandbox.run(solution.program, PROBLEM).passed  # and the hidden tests pass too
        models = _mapcoder_models(_retrieval(1), ["p"], [80], [WRONG], [RIGHT])
        solution = build_pipeline("mapcoder", models, sandbox=sandbox, k=1, t=2).solve(PROBLEM)
        assert solution.public_passed is True and len(models["debugger"].calls) == 1
        wrong_only = build_pipeline("direct", ScriptedBackend([WRONG])).solve(PROBLEM)
        assert not sandbox.run(wrong_only.program, PROBLEM).passed  # the check can fail
