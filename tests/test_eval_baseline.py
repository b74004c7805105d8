"""Which pipelines get a Collaboration Gain, and when a finished run may serve as the Coder alone."""

import pytest

from corecode.errors import ConfigError
from corecode.evaluation.baseline import auxiliary_roles, baseline_mismatch, coder_alone_config, resolve_baseline
from corecode.evaluation.config import EvalConfig
from corecode.evaluation.runner import RunFiles
from corecode.evaluation.summary import summarize, write_summary
from corecode.types import AssertTest, Problem


@pytest.mark.parametrize(
    "pipeline,expected",
    [
        ("direct", []),
        ("cot", []),
        ("scot", []),
        ("planner_coder", ["planner"]),
        ("self_planning", ["self_planner"]),
        ("reflexion", ["reflector"]),
        ("mapcoder", ["retrieval", "exemplar_planner", "plan_verifier"]),
    ],
)
def test_auxiliary_agents_of_each_pipeline(pipeline, expected):
    assert auxiliary_roles(pipeline) == expected


PROBLEMS = [Problem(id=f"p{i}", source="toy", statement="s", tests=(AssertTest("assert True"),)) for i in range(3)]


def _finished_direct(tmp_path, name, problems, **changes):
    config = EvalConfig(pipeline="direct", n=2, temperature=0.8, out=str(tmp_path / name), **changes)
    samples = [{"task_id": p.id, "sample_index": i, "program": "", "trace": []} for p in problems for i in range(2)]
    results = [{"task_id": p.id, "sample_index": i, "passed": i == 0, "n_passed": int(i == 0), "n_tests": 1,
                "status": "passed" if i == 0 else "wrong_answer", "exception": None, "cpu_time_s": 0.0,
                "peak_memory_bytes": 0} for p in problems for i in range(2)]
    files = RunFiles(config.run_dir)
    files.dir.mkdir(parents=True)
    write_summary(files, summarize(config, problems, samples, results))
    return files.dir


def test_a_matching_run_on_more_problems_is_reused(tmp_path):
    config = EvalConfig(pipeline="planner_coder", n=2, temperature=0.8, out=str(tmp_path / "pc"))
    _finished_direct(tmp_path, "direct-all", PROBLEMS)
    baseline = resolve_baseline(config, PROBLEMS[:2], ["planner"], config.run_dir, log=lambda _: None)
    assert baseline["reused"] and baseline["per_problem"] == {"p0": (2, 1), "p1": (2, 1)}


def test_explicit_baseline_that_does_not_match_says_why(tmp_path):
    other = _finished_direct(tmp_path, "direct-hot", PROBLEMS[:1], top_p=0.5)
    config = EvalConfig(pipeline="planner_coder", n=2, temperature=0.8, out=str(tmp_path / "pc"),
                        baseline=str(other))
    with pytest.raises(ConfigError, match=r"top_p is 0\.5, not 0\.95; 2 of the problems are missing"):
        resolve_baseline(config, PROBLEMS, ["planner"], config.run_dir, log=lambda _: None)


def test_the_coder_alone_uses_the_coders_model():
    config = EvalConfig(pipeline="planner_coder", model="big", role_models={"coder": "small"}, n=2,
                        temperature=0.8, out="runs/x")
    alone = coder_alone_config(config, config.run_dir)
    assert (alone.pipeline, alone.model, alone.role_models, alone.baseline) == ("direct", "small", {}, "off")
    assert str(alone.run_dir) == "runs/x--coder-alone"
    summary = {"run": {**alone.to_dict()}, "per_problem": {"p0": {"n": 2}}}
    assert baseline_mismatch(summary, config, ["p0"]) == []


@pytest.mark.parametrize("changes,reason", [
    ({"seed": 7}, "seed is 7, not 0"),
    ({"data_path": "other/mbpp.jsonl"}, "data_path is"),
])
def test_a_run_with_another_seed_or_benchmark_file_is_not_the_coder_alone(tmp_path, changes, reason):
    other = _finished_direct(tmp_path, "direct-other", PROBLEMS, **changes)
    config = EvalConfig(pipeline="planner_coder", n=2, temperature=0.8, out=str(tmp_path / "pc"), baseline=str(other))
    with pytest.raises(ConfigError, match=reason):
        resolve_baseline(config, PROBLEMS, ["planner"], config.run_dir, log=lambda _: None)
    # baseline: auto does not reuse it either (it runs a fresh Coder alone instead)
    from corecode.evaluation.baseline import _find_matching

    assert _find_matching(config.replace(baseline="auto"), [p.id for p in PROBLEMS], config.run_dir) is None
    same = config.replace(**changes)
    assert resolve_baseline(same, PROBLEMS, ["planner"], same.run_dir, log=lambda _: None)["reused"]


def test_the_same_benchmark_file_spelled_two_ways_matches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _finished_direct(tmp_path, "direct", PROBLEMS, data_path="data/mbpp.jsonl")
    config = EvalConfig(pipeline="planner_coder", n=2, temperature=0.8, out=str(tmp_path / "pc"),
                        data_path=str(tmp_path / "data" / "mbpp.jsonl"), baseline=str(tmp_path / "direct"))
    assert resolve_baseline(config, PROBLEMS, ["planner"], config.run_dir, log=lambda _: None)["reused"]
