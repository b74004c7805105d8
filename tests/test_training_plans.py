"""Stage-2 plan cache, checkpoint hashing, and dataset rows (no model: a scripted Planner)."""

import json

import pytest

from corecode.backends import SamplingConfig
from corecode.backends.scripted import ScriptedBackend
from corecode.errors import ConfigError
from corecode.training.data import coder_rows, load_problems, planner_rows
from corecode.training.partners import PlanCache, checkpoint_hash
from corecode.training.toy import digit_problems

LONG = "1. Input-Output Definition: nothing in, an int out. 2. Linear Progression: return it."


def test_short_plans_are_regenerated_and_a_restart_reads_the_cache(tmp_path):
    problems = digit_problems()[:2]
    planner = ScriptedBackend(["too short", LONG, LONG + " (second)"])
    plans = PlanCache(tmp_path, "abc", min_chars=50, attempts=3).ensure(problems, planner, SamplingConfig())
    assert plans == {"digit-3": LONG + " (second)", "digit-5": LONG}  # digit-3 was asked twice
    assert len(planner.calls) == 3
    rows = [json.loads(line) for line in (tmp_path / "plans-abc.jsonl").read_text().splitlines()]
    assert [(r["problem_id"], r["attempt"]) for r in rows] == [("digit-5", 1), ("digit-3", 2)]

    silent = ScriptedBackend([])  # raises if asked anything
    again = PlanCache(tmp_path, "abc", min_chars=50).ensure(problems, silent, SamplingConfig())
    assert again == plans and silent.calls == []


def test_the_last_attempt_is_kept_even_if_short(tmp_path):
    planner = ScriptedBackend(["a", "b"])
    plans = PlanCache(tmp_path, "k", min_chars=50, attempts=2).ensure(digit_problems()[:1], planner, SamplingConfig())
    assert plans == {"digit-3": "b"}


def test_checkpoint_hash_follows_the_weights(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights-1")
    (tmp_path / "config.json").write_text("{}")
    first = checkpoint_hash(str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"weights-2")
    assert checkpoint_hash(str(tmp_path)) != first
    assert checkpoint_hash("openai:m@http://x") != checkpoint_hash("openai:n@http://x")


def test_rows_carry_the_rendered_prompts_and_the_problem_id():
    problems = digit_problems()[:2]
    rows = planner_rows(problems)
    assert rows[0]["problem_id"] == "digit-3"
    assert "returns the number 3" in rows[0]["prompt"][-1]["content"]
    assert "Algorithmic Thought" in rows[0]["prompt"][-1]["content"]
    with_plan = coder_rows(problems, {"digit-3": "PLAN-3", "digit-5": "PLAN-5"})
    assert "PLAN-5" in with_plan[1]["prompt"][-1]["content"]
    assert "PLAN" not in coder_rows(problems, None)[0]["prompt"][-1]["content"]


def test_load_problems_checks_ids():
    assert [p.id for p in load_problems("corecode.training.toy:digit_problems", "train", limit=2)] == [
        "digit-3", "digit-5"]
    with pytest.raises(ConfigError, match="digit-4"):
        load_problems("corecode.training.toy:digit_problems", "train", ids=["digit-4"])


@pytest.mark.parametrize("plan", ["", "  \n", "\n  1. Input-Output Definition: an int.\n\n"])
def test_the_coder_is_trained_on_the_prompt_it_sees_at_evaluation(plan):
    """The planner_coder pipeline (evaluation) and every training path that builds a coder_with_plan prompt
    (stage-2 dataset rows, stage 1's frozen Coder, the validation probe) give the Coder the same messages for
    the same plan text: an empty plan is "(no plan)" everywhere, surrounding blank lines are dropped."""
    from corecode.pipelines import build_pipeline
    from corecode.training.callbacks import CollaborationProbe
    from corecode.training.partners import coder_writer

    problem = digit_problems()[0]
    coder = ScriptedBackend(lambda conversation: "```python\nreturn 3\n```")
    build_pipeline("planner_coder", {"planner": ScriptedBackend([plan]), "coder": coder}).solve(problem)
    evaluation = coder.calls[-1]

    assert coder_rows([problem], {problem.id: plan})[0]["prompt"] == evaluation  # stage 2's dataset
    frozen = ScriptedBackend(lambda conversation: "x")
    coder_writer(frozen, SamplingConfig(), samples=1)([plan], [problem])  # stage 1's frozen Coder
    assert frozen.calls == [evaluation]
    probed = ScriptedBackend(lambda conversation: "x")
    CollaborationProbe([problem], plans=lambda model: [plan], coder=lambda model: probed,
                       execute=lambda jobs: [None] * len(jobs), build_program=lambda p, a: a,
                       coder_sampling=SamplingConfig()).measure(None)
    assert probed.calls[-1] == evaluation


def test_stage_two_plans_are_as_long_as_the_planner_was_trained_to_write(tmp_path, monkeypatch):
    """Stage 1 trains the Planner to write up to max_completion_length tokens; stage 2 must not cut its
    plans at partner_max_tokens (the frozen partners' cap), or the Coder trains on truncated plans."""
    from corecode.training import stage2
    from corecode.training.config import TrainConfig

    planner = ScriptedBackend(lambda conversation: LONG)
    seen = []
    original = planner.generate
    monkeypatch.setattr(planner, "generate", lambda convs, sampling, n=1: seen.append(sampling) or original(convs, sampling, n))
    monkeypatch.setattr(stage2, "partner_backend", lambda spec, source, bf16, batch_size=8: planner)
    config = TrainConfig(max_completion_length=2048, partner_max_tokens=1024, planner_backend="served-planner")
    plans = stage2.stage2_plans(config, "unused", digit_problems()[:2], tmp_path)
    assert set(plans.values()) == {LONG}
    assert [s.max_tokens for s in seen] == [2048]
    # a stage=coder run with its own (Coder) max_completion_length names the stage-1 length explicitly
    stage2.stage2_plans(config.replace(plan_max_tokens=300, planner_backend="other"), "unused", digit_problems()[:2],
                        tmp_path)
    assert [s.max_tokens for s in seen] == [2048, 300]


def test_the_validation_probe_leaves_sandbox_errors_out_instead_of_counting_them_failed():
    """4 problems; every program passes, except that the sandbox fails (None) on problem 1's program with the
    plan and on problem 2's alone. Those two problems are left out of both columns (CG stays paired):
    pass@1 alone = with = 2/2, CG 0. Counting the errors as failures would give 3/4 and 3/4."""
    from corecode.training.callbacks import CollaborationProbe
    from corecode.types import ExecutionResult, Status, TestResult

    problems = digit_problems()[:4]
    ok = ExecutionResult(tests=(TestResult(0, Status.PASSED),), n_tests=1)
    broken = {("with", problems[1].id), ("alone", problems[2].id)}

    def execute(jobs):
        return [None if (("with" if "PLAN" in prog else "alone"), p.id) in broken else ok for prog, p in jobs]

    coder = ScriptedBackend(lambda conversation: "PLAN" if "Plan (the Algorithmic" in conversation[-1]["content"] else "x")
    row = CollaborationProbe(problems, plans=lambda model: ["a plan"] * 4, coder=lambda model: coder, execute=execute,
                             build_program=lambda p, a: a, coder_sampling=SamplingConfig()).measure(None)
    assert row["pass1_alone"] == 1.0 and row["pass1_with"] == 1.0 and row["cg_points"] == 0.0
    assert row["sandbox_errors"] == 2 and row["unscored_problems"] == 2 and row["n_problems"] == 2
    assert set(row["per_problem"]) == {problems[0].id, problems[3].id}


class _Processes:
    """What distributed_state() says in a multi-process run (only what the code under test reads)."""

    num_processes, process_index, is_main_process = 2, 0, True


def test_a_multi_process_run_never_writes_stage_two_plans(tmp_path, monkeypatch):
    """Rank 0 writing every plan with an in-process 7B model while the other ranks wait at a barrier outlasts
    the process group's timeout: a multi-process run refuses before any barrier, naming prepare_only; with the
    plans cached (prepare_only on one process) it reads them and loads no Planner."""
    from corecode.errors import TrainingError
    from corecode.training import stage2
    from corecode.training.config import TrainConfig

    problems = digit_problems()[:2]
    monkeypatch.setattr(stage2, "distributed_state", lambda: _Processes())
    monkeypatch.setattr(stage2, "partner_backend", lambda *a: pytest.fail("no Planner may be loaded"))
    config = TrainConfig()
    with pytest.raises(TrainingError, match=r"2 of the 2 stage-2 plans .*prepare_only=true"):
        stage2.require_cached_plans(config, "planner-ckpt", problems, tmp_path)
    with pytest.raises(TrainingError, match="multi-process run does not write them"):
        stage2.stage2_plans(config, "planner-ckpt", problems, tmp_path)
    PlanCache(tmp_path, checkpoint_hash("planner-ckpt")).ensure(problems, ScriptedBackend([LONG, LONG]), SamplingConfig())
    stage2.require_cached_plans(config, "planner-ckpt", problems, tmp_path)
    assert stage2.stage2_plans(config, "planner-ckpt", problems, tmp_path) == {p.id: LONG for p in problems}
    stage2.require_cached_plans(config.replace(use_plans=False), "other", problems, tmp_path)  # plain GRPO: no plans


def test_a_multi_process_stage_both_is_refused_before_stage_one(tmp_path, monkeypatch):
    """stage=both would stop at stage 2 after hours of stage 1: refused at the start, with the three commands."""
    from corecode.training import load_config, preset_path, runner

    monkeypatch.setattr(runner, "distributed_state", lambda: _Processes())
    config = load_config(preset_path("cpu-smoke"), [f"output_dir={tmp_path}", "validation_limit=0"])
    with pytest.raises(ConfigError, match=r"stage=both in a multi-process run.*stage=planner"):
        runner.run_training(config)
    assert not (tmp_path / "round1").exists()
