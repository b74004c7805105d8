"""extract_code / complete_program / parse_plan / parse_retrieval / parse_confidence on REAL raw outputs of the
built-in model (Qwen2.5-Coder-0.5B-Instruct, llama.cpp, greedy). Captured by
tests/fixtures/pipelines/make_real_outputs.py, except the two humaneval_10_*_{retrieval,plan_verifier}.json
files, taken from the trace of `corecode solve --benchmark humaneval --task-id HumanEval/10 --pipeline
mapcoder --k 2 --t 1 --max-tokens 400 --json`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corecode.benchmarks import get_problem
from corecode.parsing import (
    complete_program,
    defines,
    extract_code,
    parse_confidence,
    parse_plan,
    parse_retrieval,
)

REAL = Path(__file__).parent / "fixtures" / "pipelines" / "real_outputs"
FILES = sorted(REAL.glob("*.json"))
CODE_ROLES = {"coder", "coder_with_plan"}


def _load(path):
    return json.loads(path.read_text())


def _problem(path, record):
    stem = path.stem
    if record["benchmark"] == "humaneval":
        number = stem.split("_")[1]
        return get_problem("humaneval", f"HumanEval/{number}")
    return get_problem("mbpp", stem.split("_")[0])  # the copy shipped in the package


def test_fixtures_exist():
    roles = {json.loads(p.read_text())["role"] for p in FILES}
    assert len(FILES) >= 10 and {"planner", "coder", "coder_with_plan"} <= roles


@pytest.mark.parametrize("path", [p for p in FILES if json.loads(p.read_text())["role"] == "planner"], ids=lambda p: p.stem)
def test_real_plans_have_four_parts(path):
    record = _load(path)
    plan = parse_plan(record["output"])
    assert plan.missing == (), plan.raw
    for part in plan.parts().values():
        assert len(part) > 10


@pytest.mark.parametrize(
    "path", [p for p in FILES if json.loads(p.read_text())["role"] in CODE_ROLES], ids=lambda p: p.stem
)
def test_real_code_answers_give_whole_programs(path):
    record = _load(path)
    problem = _problem(path, record)
    code = extract_code(record["output"], entry_point=problem.entry_point)
    if record["finish_reason"] == "length":
        # a truncated answer: whatever comes back must at least compile
        if code is not None:
            compile(code, path.name, "exec")
        return
    assert code is not None and defines(code, problem.entry_point)
    program = complete_program(code, starter_code=problem.starter_code, entry_point=problem.entry_point)
    # it runs on its own (imports present, no failing example asserts at top level), in a fresh interpreter
    check = f"{program}\nassert callable({problem.entry_point})\n"
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def _real(name):
    return _load(REAL / f"{name}.json")


def test_real_truncated_answer_keeps_only_the_complete_function():
    record = _real("humaneval_10_humaneval_coder_truncated")
    assert record["finish_reason"] == "length"
    code = extract_code(record["output"], entry_point="make_palindrome")
    assert defines(code, "is_palindrome") and not defines(code, "make_palindrome")


def test_real_example_assert_is_stripped():
    # the 0.5B model's MBPP/11 program ends with the task's own assert at top level; a test harness imports
    # the function, so the model's example usage is dropped (a wrong one would crash a correct function)
    record = _real("11_mbpp_coder_with_plan")
    code = extract_code(record["output"], entry_point="remove_Occ")
    assert 'assert remove_Occ("hello","l") == "heo"' in code
    program = complete_program(code, starter_code=None, entry_point="remove_Occ")
    assert "assert" not in program and defines(program, "remove_Occ")


def test_real_retrieval_answer():
    # the model numbered its second problem "## Algorithm 2" and wrote three problems for k=2
    output = _real("humaneval_10_humaneval_retrieval")["output"]
    assert "## Algorithm 2" in output
    retrieved = parse_retrieval(output, k=2)
    assert len(retrieved.exemplars) == 2
    assert retrieved.exemplars[1].description.startswith("Find the shortest palindrome")
    assert defines(retrieved.exemplars[1].code, "make_palindrome")


def test_real_verifier_answer():
    assert parse_confidence(_real("humaneval_10_humaneval_plan_verifier")["output"]) == 95
