"""Cyclomatic complexity, failure rates, efficiency and cost on hand-counted inputs."""

import pytest

from corecode.metrics import cyclomatic_complexity, efficiency, failure_rates, inference_cost, runtime_error_rates

CASES = [
    ("straight line", "x = 1\nprint(x)\n", 1),
    ("if/elif/else", "if a:\n    pass\nelif b:\n    pass\nelse:\n    pass\n", 3),
    ("loops with else", "for i in r:\n    pass\nelse:\n    pass\nwhile c:\n    break\n", 3),
    ("boolean chain", "y = a and b and c or d\n", 4),  # and: +2, or: +1
    ("try with two handlers", "try:\n    f()\nexcept A:\n    pass\nexcept B:\n    pass\nfinally:\n    g()\n", 3),
    ("comprehension with filter", "z = [i for i in r if i if i > 2]\n", 4),
    ("ternary and assert", "v = 1 if a else 2\nassert v\n", 3),
    # case 1 and case [y] are decisions; the catch-all case _ is the match's else
    ("match", "match x:\n    case 1:\n        pass\n    case [y]:\n        pass\n    case _:\n        pass\n", 3),
    ("match, capture catch-all", "match x:\n    case 1:\n        pass\n    case other:\n        pass\n", 2),
    ("match, guarded capture", "match x:\n    case 1:\n        pass\n    case y if y > 2:\n        pass\n", 3),
    ("nested function counts", "def f(x):\n    def g(y):\n        return y if y else 0\n    return g(x)\n", 2),
    ("with and lambda do not count", "with open(p) as fh:\n    k = lambda q: q\n", 1),
]


@pytest.mark.parametrize("source,expected", [(src, exp) for _, src, exp in CASES], ids=[c[0] for c in CASES])
def test_cyclomatic_complexity_hand_counted(source, expected):
    assert cyclomatic_complexity(source) == expected


def test_unparsable_program_has_no_complexity():
    assert cyclomatic_complexity("def f(:\n") is None
    assert cyclomatic_complexity("x = 1\x00") is None


@pytest.mark.parametrize("source", ["", "\n\n", "# only a comment\n"])
def test_empty_program_has_no_complexity(source):
    assert cyclomatic_complexity(source) is None  # no program is not a program of complexity 1


def test_the_starter_codes_helpers_do_not_count():
    """HumanEval/38: the starter defines encode_cyclic (two comprehensions, a conditional expression: 3 points)
    and the model writes only decode_cyclic (no branch); complete_program puts the helper in front."""
    from corecode.benchmarks import get_problem
    from corecode.parsing import complete_program

    problem = get_problem("humaneval", "HumanEval/38")
    code = "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n"
    program = complete_program(code, starter_code=problem.starter_code, entry_point=problem.entry_point)
    assert cyclomatic_complexity(program) == 4  # the whole file
    assert cyclomatic_complexity(program, problem.starter_code, problem.entry_point) == 1
    # the entry point's body is the model's even when it is written under the starter's signature
    body = problem.starter_code + "    return s if s else ''\n"
    assert cyclomatic_complexity(body, problem.starter_code, problem.entry_point) == 2


def test_failure_rates_sum_to_one_and_name_every_status():
    rates = failure_rates(["passed", "wrong_answer", "wrong_answer", "timeout"])
    assert rates["wrong_answer"] == 0.5 and rates["timeout"] == 0.25 and rates["passed"] == 0.25
    assert rates["syntax_error"] == 0.0
    assert sum(rates.values()) == pytest.approx(1.0)


def test_runtime_errors_by_exception_class():
    outcomes = [("runtime_error", "IndexError"), ("runtime_error", "IndexError"), ("runtime_error", None),
                ("passed", None)]
    assert runtime_error_rates(outcomes) == {"IndexError": 0.5, "unknown": 0.25}


def test_efficiency_ignores_failing_programs():
    eff = efficiency([(True, 0.2, 1_000_000), (False, 50.0, 900_000_000), (True, 0.4, 3_000_000)])
    assert eff.n_passing == 2
    assert eff.cpu_time_s_mean == pytest.approx(0.3)
    assert eff.peak_memory_mb_median == pytest.approx(2.0)
    assert efficiency([(False, 1.0, 1)]).cpu_time_s_mean is None


def test_cost_per_problem_and_per_sample():
    traces = {
        "a": [[("planner", 100, 50), ("coder", 150, 80)], [("planner", 100, 40), ("coder", 140, 60)]],
        "b": [[("planner", 10, 5), ("coder", 20, 10)], [("planner", 10, 5), ("coder", 20, 10)]],
    }
    cost = inference_cost(traces)
    assert cost.calls_per_problem == 4.0 and cost.calls_per_sample == 2.0
    assert cost.prompt_tokens_per_problem == pytest.approx((490 + 60) / 2)
    assert cost.completion_tokens_per_sample == pytest.approx((230 + 30) / 4)
    assert cost.calls_by_role_per_sample == {"coder": 1.0, "planner": 1.0}
