"""`corecode eval` end to end with the real sandbox and real pipelines, and an oracle model double.

The oracle (tests/fixtures/evaluation/backends.py) answers an MBPP problem with its reference solution, or
with a wrong program when the call's seed is divisible by 3: every expected verdict below is computed
from the seeds, so the sandbox must really have run the programs for the tests to pass.
"""

import json

import pytest

from corecode.errors import ConfigError
from corecode.evaluation import EvalConfig, run_eval
from corecode.evaluation.runner import sample_seed

ORACLE = "tests.fixtures.evaluation.backends:oracle"
REPO_ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))  # so that the "tests.fixtures..." model spec imports


def _config(tmp_path, name, **changes):  # MBPP from the copy shipped in corecode: runs on any clone
    base = dict(benchmark="mbpp", limit=3, n=3,
                temperature=0.8, pipeline="direct", model=ORACLE, out=str(tmp_path / name), workers=2)
    return EvalConfig(**{**base, **changes})


def _results(run_dir):
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return {(r["task_id"], r["sample_index"]): r for r in rows}


def _expected_pass(config, task_id, index, call):
    return (sample_seed(config.seed, task_id, index) + call) % 3 != 0


def test_direct_run_scores_what_the_model_wrote(tmp_path):
    config = _config(tmp_path, "direct")
    summary = run_eval(config, progress=False, log=lambda _: None)
    results = _results(config.run_dir)
    assert len(results) == 9
    for (task_id, index), r in results.items():
        assert r["passed"] == _expected_pass(config, task_id, index, call=0), (task_id, index)
    expected = sum(_expected_pass(config, t, i, 0) for t, i in results) / 9
    assert summary["pass_at_k"]["1"] == pytest.approx(expected)
    assert set(summary["pass_at_k"]) == {"1", "2", "3"}
    assert summary["collaboration"]["cg_points"] is None  # direct has no auxiliary agent
    assert (config.run_dir / "summary.md").read_text().startswith("# direct")
    samples = [json.loads(line) for line in (config.run_dir / "samples.jsonl").read_text().splitlines()]
    assert all(s["trace"][0]["role"] == "coder" and s["trace"][0]["messages"] for s in samples)
    assert len({s["seed"] for s in samples}) == 9  # every (problem, sample) draws with its own seed


def test_known_wrong_sample_file_scores_zero(tmp_path):
    # a sample file already complete: nothing is generated (the model spec would not even load)
    config = _config(tmp_path, "wrong", model="scripted:/nonexistent.json", n=1, temperature=0.2)
    config.run_dir.mkdir()
    with open(config.run_dir / "samples.jsonl", "w") as fh:
        for task_id, entry in (("mbpp/11", "remove_Occ"), ("mbpp/12", "sort_matrix"), ("mbpp/13", "count_common")):
            program = f"def {entry}(*args):\n    return [1, 2, 3]\n"
            fh.write(json.dumps({"task_id": task_id, "sample_index": 0, "program": program, "trace": []}) + "\n")
    summary = run_eval(config, progress=False, log=lambda _: None)
    assert summary["pass_at_k"]["1"] == 0.0
    assert summary["apr"]["macro"] == 0.0 and summary["apr"]["micro"] == 0.0
    assert summary["failures"]["wrong_answer"] == 1.0


def test_planner_coder_collaboration_gain_against_the_coder_alone(tmp_path):
    config = _config(tmp_path, "pc", pipeline="planner_coder")
    messages = []
    summary = run_eval(config, progress=False, log=messages.append)
    cg = summary["collaboration"]
    assert cg["auxiliary_roles"] == ["planner"] and cg["baseline_reused"] is False
    assert cg["baseline_run"].endswith("pc--coder-alone")
    keys = [(t, i) for t in ("mbpp/11", "mbpp/12", "mbpp/13") for i in range(3)]
    with_plan = sum(_expected_pass(config, t, i, call=1) for t, i in keys) / 9  # the coder is call 1
    alone = sum(_expected_pass(config, t, i, call=0) for t, i in keys) / 9
    assert cg["pass1_with"] == pytest.approx(with_plan) and cg["pass1_alone"] == pytest.approx(alone)
    assert cg["cg_points"] == pytest.approx(100 * (with_plan - alone))
    # a second pipeline run next to it reuses the finished Coder-alone run instead of generating again
    again = run_eval(_config(tmp_path, "pc2", pipeline="planner_coder"), progress=False,
                     log=messages.append)
    assert again["collaboration"]["baseline_reused"] is True
    assert any("reusing" in m for m in messages)


def test_resuming_with_other_settings_is_refused(tmp_path):
    config = _config(tmp_path, "r", n=1, limit=1, temperature=0.2)
    run_eval(config, progress=False, log=lambda _: None)
    with pytest.raises(ConfigError, match="different settings .*n"):
        run_eval(config.replace(n=2, temperature=0.8), progress=False, log=lambda _: None)


def test_concurrent_generation_gives_the_same_results_as_sequential(tmp_path):
    sequential = _config(tmp_path, "seq", pipeline="planner_coder", baseline="off")
    threaded = _config(tmp_path, "thr", pipeline="planner_coder", baseline="off", concurrency=4)
    run_eval(sequential, progress=False, log=lambda _: None)
    run_eval(threaded, progress=False, log=lambda _: None)
    strip = lambda rows: {k: (r["status"], r["n_passed"]) for k, r in rows.items()}  # noqa: E731
    assert strip(_results(sequential.run_dir)) == strip(_results(threaded.run_dir))


def test_a_run_extends_to_more_problems_generating_only_the_new_ones(tmp_path):
    small = _config(tmp_path, "grow", limit=2, n=2)
    run_eval(small, progress=False, log=lambda _: None)
    before = (small.run_dir / "samples.jsonl").read_text()
    summary = run_eval(small.replace(limit=3), progress=False, log=lambda _: None)
    after = (small.run_dir / "samples.jsonl").read_text()
    assert after.startswith(before) and len(after.splitlines()) == 6
    assert summary["n_problems"] == 3
    assert run_eval(small, progress=False, log=lambda _: None)["n_problems"] == 2  # the summary follows --limit
