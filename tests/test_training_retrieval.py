"""The retrieval stage: MapCoder's Retrieval agent trained like the stage-1 Planner, its answers scored
through the frozen exemplar planner and Coder. Scripted partners for the control flow, then the tiny model
end to end on real TRL and the real sandbox."""

import json
from pathlib import Path

import pytest

from corecode.backends import SamplingConfig
from corecode.backends.scripted import ScriptedBackend
from corecode.rewards import (
    ExecutionLog,
    GroupLayout,
    Outcome,
    RetrievalReward,
    RewardConfig,
    planner_group_rewards,
    retrieval_missing_parts,
)
from corecode.training.toy import digit_problems

import trl  # noqa: E402,F401 - the [train] extra is required (README): missing, these tests fail, never skip

from corecode.training.retrieval import exemplar_plan_prompts, retrieval_writer  # noqa: E402

RECALL = """## Problem 1
Description: Return the constant seven.
Plan: return 7.
Code:
```python
def g():
    return 7
```

## Problem 2
Description: Return a fixed number given in the statement.
Plan: read the number, return it.

## Algorithm
Constant functions: return the value directly.
"""


def partner(conversation) -> str:
    user = conversation[-1]["content"]
    if "Write a step-by-step plan" in user:  # the exemplar planner
        return "1. PLAN-FROM: " + user.split("A problem you solved before, with its plan:\n", 1)[1].split("\n", 1)[0]
    digit = user.split("returns the number ", 1)[1][0]
    return f"```python\ndef f():\n    return {digit}\n```"


def test_writer_plans_once_per_recalled_problem_then_codes_m_programs_per_plan():
    backend = ScriptedBackend(partner)
    problem = digit_problems()[0]
    write = retrieval_writer(backend, SamplingConfig(), SamplingConfig(), samples=2, k=2)
    answers = write([RECALL, "no structure at all"], [problem, problem])
    assert [len(a) for a in answers] == [4, 2], "k plans x M programs; one exemplar-less plan when nothing parsed"
    planner_prompts = [c[-1]["content"] for c in backend.calls if "Write a step-by-step plan" in c[-1]["content"]]
    assert len(planner_prompts) == 3
    assert "Return the constant seven." in planner_prompts[0] and "Constant functions" in planner_prompts[0]
    assert "Return a fixed number" in planner_prompts[1]
    assert "(no similar problem was recalled)" in planner_prompts[2] and "(none given)" in planner_prompts[2]
    coder_prompts = [c[-1]["content"] for c in backend.calls if "Write a step-by-step plan" not in c[-1]["content"]]
    assert any("PLAN-FROM: Problem: Return the constant seven." in p for p in coder_prompts)
    assert len(exemplar_plan_prompts(problem, RECALL, 1)) == 1


def test_format_term_wants_a_recalled_problem_and_the_algorithm():
    assert retrieval_missing_parts(RECALL) == ()
    assert retrieval_missing_parts(RECALL.split("## Algorithm")[0]) == ("algorithm",)
    assert retrieval_missing_parts("## Algorithm\ngreedy") == ("exemplar",)


def test_retrieval_reward_is_r_plan_of_the_downstream_programs_minus_the_format_term(tmp_path):
    problems = {p.id: p for p in digit_problems()}
    answers = {RECALL: ["pass", "pass"], "junk": ["pass", "fail"]}

    def write(texts, probs):
        return [answers[t] for t in texts]

    def execute(jobs):
        from corecode.types import ExecutionResult, Status, TestResult

        return [ExecutionResult(tests=(TestResult(0, Status.PASSED if "pass" in prog else Status.WRONG_ANSWER,
                                                  cpu_time_s=0.01),), n_tests=1) for prog, _ in jobs]

    import corecode.rewards.trl_rewards as trl_rewards

    config = RewardConfig(format_penalty=0.1)
    reward = RetrievalReward(problems, write, execute, GroupLayout(2), config, ExecutionLog(tmp_path / "log.jsonl"))
    orig = trl_rewards.program_for
    # programs that differ in code, not only in a comment: identical programs share one outcome
    trl_rewards.program_for = lambda problem, answer: f"ANSWER = {answer!r}"
    try:
        got = reward(prompts=[None, None], completions=[RECALL, "junk"], problem_id=["digit-3", "digit-3"])
    finally:
        trl_rewards.program_for = orig
    outcomes = [[Outcome(1.0, 0.01)] * 2, [Outcome(1.0, 0.01), Outcome(0.0, 0.01)]]
    assert got == planner_group_rewards(outcomes, [False, True], config, None)
    rows = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in rows] == ["retrieval", "retrieval"] and rows[1]["missing"] == ["exemplar", "algorithm"]


def test_retrieval_stage_trains_end_to_end_and_logs_true_rewards(tmp_path, monkeypatch):
    from corecode.training import load_config, preset_path, run_training

    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    config = load_config(preset_path("cpu-smoke"), [f"output_dir={out}", "stage=retrieval",
                                                    "retrieval_model=tiny:llama-char", "max_steps=2",
                                                    "coder_backend=corecode.training.toy:alternating_coder"])
    result = run_training(config)
    from safetensors.torch import load_file

    from corecode.training.models import resolve_model

    initial = load_file(str(Path(resolve_model("tiny:llama-char", config.seed)) / "model.safetensors"))
    trained = load_file(str(Path(result["retrieval"]) / "model.safetensors"))
    assert any(not (initial[k] == trained[k]).all() for k in initial), "GRPO did not change the Retrieval agent"
    stage = out / "retrieval"
    executions = [json.loads(line) for line in (stage / "executions-rank0.jsonl").read_text().splitlines()]
    assert {r["stage"] for r in executions} == {"retrieval"} and sorted({r["step"] for r in executions}) == [0, 1]
    for start in range(0, len(executions), config.num_generations):
        chunk = executions[start : start + config.num_generations]
        outcomes = [[None if o is None else Outcome.from_dict(o) for o in r["outcomes"]] for r in chunk]
        assert all(len(o) == config.coder_samples * config.retrieval_k for o in outcomes)
        recomputed = planner_group_rewards(outcomes, [bool(r["missing"]) for r in chunk], config.rewards,
                                           chunk[0]["reference_time_s"])
        assert recomputed == [r["reward"] for r in chunk]
    assert all(r["reference_time_s"] > 0 for r in executions)
    metrics = [json.loads(line) for line in (stage / "metrics.jsonl").read_text().splitlines()]
    assert any("rewards/retrieval_reward/mean" in m for m in metrics)
    assert any("retrieval_format_ok" in k for m in metrics for k in m)
    validation = [json.loads(line) for line in (stage / "validation.jsonl").read_text().splitlines()]
    assert validation[0]["step"] == 0 and "cg_points" in validation[0] and "plan_format_ok" not in validation[0]
