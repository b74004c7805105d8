"""summary.json from hand-made samples and results: every metric checked against a hand computation."""

import pytest

from corecode.evaluation.config import EvalConfig
from corecode.evaluation.summary import summarize, summary_markdown
from corecode.types import AssertTest, Problem

PROBLEMS = [Problem(id=t, source="toy", statement="s", tests=(AssertTest("assert True"),)) for t in ("p1", "p2")]


def _sample(task, index, program="def f():\n    return 1\n"):
    trace = [
        {"role": "planner", "prompt_tokens": 100, "completion_tokens": 20},
        {"role": "coder_with_plan", "prompt_tokens": 150, "completion_tokens": 30},
    ]
    return {"task_id": task, "sample_index": index, "program": program, "trace": trace}


def _result(task, index, n_passed, n_tests, status="passed", exception=None, cpu=0.1, mem=2_000_000):
    return {"task_id": task, "sample_index": index, "passed": n_passed == n_tests, "n_passed": n_passed,
            "n_tests": n_tests, "status": status, "exception": exception, "cpu_time_s": cpu,
            "peak_memory_bytes": mem}


SAMPLES = [_sample("p1", 0), _sample("p1", 1, "if x:\n    pass\n"), _sample("p2", 0, "def (:"), _sample("p2", 1)]
RESULTS = [
    _result("p1", 0, 3, 3),
    _result("p1", 1, 1, 3, "wrong_answer"),
    _result("p2", 0, 0, 2, "syntax_error"),
    _result("p2", 1, 0, 2, "runtime_error", "IndexError"),
]


def test_summary_metrics_by_hand():
    baseline = {"run_dir": "runs/alone", "reused": True, "per_problem": {"p1": (2, 0), "p2": (2, 0)}}
    s = summarize(EvalConfig(n=2, temperature=0.8), PROBLEMS, SAMPLES, RESULTS, ["planner"], baseline)
    assert s["n_problems"] == 2 and s["n_samples"] == 4
    assert s["pass_at_k"]["1"] == pytest.approx((0.5 + 0.0) / 2)
    assert s["pass_at_k"]["2"] == pytest.approx((1.0 + 0.0) / 2)
    assert s["apr"]["macro"] == pytest.approx(((1 + 1 / 3) / 2 + 0) / 2)
    assert s["apr"]["micro"] == pytest.approx(4 / 10)
    cg = s["collaboration"]
    assert cg["cg_points"] == pytest.approx(25.0) and cg["cg_relative"] is None  # alone solved nothing
    assert s["failures"]["wrong_answer"] == 0.25 and s["failures"]["passed"] == 0.25
    assert s["runtime_errors"] == {"IndexError": 0.25}
    assert s["efficiency"]["n_passing"] == 1 and s["efficiency"]["cpu_time_s_mean"] == pytest.approx(0.1)
    assert s["complexity"] == {"mean": pytest.approx(4 / 3), "mean_passing": 1.0, "n_unparsable": 1, "n_empty": 0}
    assert s["cost"]["calls_per_problem"] == 4.0 and s["cost"]["tokens_per_problem"] == pytest.approx(600.0)
    assert s["per_problem"]["p1"] == {"n": 2, "correct": 1, "pass_rate": pytest.approx(2 / 3)}
    # intervals: p1 pass@1 0.5, p2 0.0 -> resampled means 0, 0.25 or 0.5; the paired CG differences are the same
    assert s["intervals"]["pass_at_k"]["1"] == {"estimate": pytest.approx(0.25), "low": 0.0, "high": 0.5, "n": 2,
                                                "confidence": 0.95}
    assert s["intervals"]["apr_macro"]["low"] == 0.0 and s["intervals"]["apr_macro"]["high"] == pytest.approx(2 / 3)
    assert cg["cg_interval"]["low"] == 0.0 and cg["cg_interval"]["high"] == pytest.approx(50.0)
    assert (cg["cg_interval"]["pipeline_better"], cg["cg_interval"]["alone_better"]) == (1, 0)
    text = summary_markdown(s)
    assert "Collaboration Gain +25.0 points" in text and "| 25.0 |" in text
    assert "| 25.0 | [0.0, 50.0] |" in text and "[+0.0, +50.0] 1/0" in text
    assert "CG 95% paired interval over 2 problems" in text


def test_summary_intervals_are_reproducible_and_cg_flips_count_both_ways():
    problems = [Problem(id=f"q{i}", source="toy", statement="s", tests=(AssertTest("assert True"),)) for i in range(30)]
    samples = [_sample(p.id, 0) for p in problems]
    results = [_result(p.id, 0, int(i % 3 == 0), 1, "passed" if i % 3 == 0 else "wrong_answer")
               for i, p in enumerate(problems)]
    # the Coder alone solves q0..q9: the pipeline (q0, q3, ... q27) wins 6, loses 6 of them
    baseline = {"run_dir": "a", "reused": True, "per_problem": {p.id: (1, int(i < 10)) for i, p in enumerate(problems)}}
    first = summarize(EvalConfig(n=1, temperature=0.0), problems, samples, results, ["planner"], baseline)
    again = summarize(EvalConfig(n=1, temperature=0.0), list(reversed(problems)), samples, results, ["planner"], baseline)
    ci = first["collaboration"]["cg_interval"]
    assert ci == again["collaboration"]["cg_interval"] and first["intervals"] == again["intervals"]
    assert ci["estimate"] == pytest.approx(0.0) and ci["low"] < 0 < ci["high"]
    assert (ci["pipeline_better"], ci["alone_better"]) == (6, 6)


def test_summary_without_auxiliary_agents_has_no_cg():
    s = summarize(EvalConfig(n=2, temperature=0.8, pipeline="direct"), PROBLEMS, SAMPLES, RESULTS, [], None)
    assert s["collaboration"]["cg_points"] is None
    assert "not defined" in s["collaboration"]["note"]


def test_summary_refuses_a_baseline_on_other_problems():
    baseline = {"run_dir": "x", "reused": True, "per_problem": {"p1": (2, 0), "p2": (1, 0)}}
    with pytest.raises(ValueError, match="same sample budget"):
        summarize(EvalConfig(n=2, temperature=0.8), PROBLEMS, SAMPLES, RESULTS, ["planner"], baseline)


def test_complexity_counts_what_the_model_wrote():
    """p1's starter defines a helper with one branch; the model's entry point has none. p2's program is empty
    (no code found in the answer): it is not a program of complexity 1, it is counted apart."""
    starter = "def helper(x):\n    return x if x else 0\n\n\ndef f(x):\n    \"\"\"Return helper(x).\"\"\"\n"
    problems = [Problem(id="p1", source="toy", statement="s", tests=(AssertTest("assert True"),),
                        starter_code=starter, entry_point="f"), PROBLEMS[1]]
    program = "def helper(x):\n    return x if x else 0\n\ndef f(x):\n    return helper(x)\n"
    samples = [_sample("p1", 0, program), _sample("p2", 0, "")]
    results = [_result("p1", 0, 1, 1), _result("p2", 0, 0, 1, "runtime_error", "NameError")]
    s = summarize(EvalConfig(n=1), problems, samples, results)
    assert s["complexity"] == {"mean": 1.0, "mean_passing": 1.0, "n_unparsable": 0, "n_empty": 1}
