"""CI: both stages of the cpu-smoke preset end to end (tiny model, real sandbox, real TRL GRPOTrainer).

Checks that the trained parameters changed, that a stage resumes from its checkpoint, that the plan cache
is reused, and that every logged reward equals the reward functions recomputed on the logged executions.
"""

import json
import math
import statistics
import shutil
from pathlib import Path

import pytest

import peft  # noqa: E402,F401 - the [train] extra is required (README): missing, these tests fail
import trl  # noqa: E402,F401

from corecode.rewards import Outcome, RewardConfig, coder_group_rewards, planner_group_rewards  # noqa: E402
from corecode.training import load_config, preset_path, run_training  # noqa: E402


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _state(directory: str) -> dict:
    from safetensors.torch import load_file

    return load_file(str(Path(directory) / "model.safetensors"))


def _recompute(rows: list[dict], stage: str, group: int, config: RewardConfig) -> list[float | None]:
    out: list[float | None] = []
    for start in range(0, len(rows), group):
        chunk = rows[start : start + group]
        assert len({r["problem_id"] for r in chunk}) == 1, "a TRL group is G rows of one prompt"
        if stage == "planner":
            plans = [[None if o is None else Outcome.from_dict(o) for o in r["outcomes"]] for r in chunk]
            out += planner_group_rewards(plans, [bool(r["missing"]) for r in chunk], config, chunk[0]["reference_time_s"])
        else:
            out += coder_group_rewards([None if r["outcome"] is None else Outcome.from_dict(r["outcome"]) for r in chunk], config)
    return out


def _tie_heads(values: list[float], band: float) -> list[float]:
    """METHOD.md 3a written out again: sorted, a value more than `band` above its class head opens a class."""
    heads, head = {}, None
    for i in sorted(range(len(values)), key=lambda i: values[i]):
        if head is None or values[i] > head * (1 + band):
            head = values[i]
        heads[i] = head
    return [heads[i] for i in range(len(values))]


def _hand_plan_rewards(chunk: list[dict], cfg: RewardConfig) -> list[float | None]:
    """R_plan of one logged group from its raw numbers, by METHOD.md section 3 (sigmoid aggregation), without
    corecode.rewards: times floored and tie-resolved over the group, t_ref = the reference time (snapped to a
    tie class within the band), e = sigmoid(kappa ln(t_ref / t)), q = s + lambda e [s = 1], sigmoid weights."""
    assert cfg.aggregation == "sigmoid" and cfg.time_reference == "auto"
    flat = [o for r in chunk for o in r["outcomes"]]
    passing = [i for i, o in enumerate(flat) if o is not None and o["pass_rate"] == 1.0]
    times = dict(zip(passing, _tie_heads([max(flat[i]["cpu_time_s"], cfg.time_floor_s) for i in passing],
                                         cfg.time_tie_band)))
    reference = chunk[0]["reference_time_s"]
    median = statistics.median(times.values()) if times else None
    t_ref = max(reference, cfg.time_floor_s) if reference is not None else median
    near = [h for h in set(times.values()) if t_ref is not None and abs(math.log(t_ref / h)) <= math.log1p(cfg.time_tie_band)]
    if near:
        t_ref = min(near, key=lambda h: abs(math.log(t_ref / h)))
    rewards, i = [], 0
    for row in chunk:
        q = []
        for o in row["outcomes"]:
            if o is not None:
                e = 1 / (1 + math.exp(-cfg.kappa * math.log(t_ref / times[i]))) if i in times else 0.0
                q.append(o["pass_rate"] + cfg.lambda_time * e)
            i += 1
        if len(q) < len(row["outcomes"]):
            rewards.append(None)
            continue
        mean = sum(q) / len(q)
        w = [1 / (1 + math.exp(-(x - mean) / cfg.tau)) for x in q]
        rewards.append(sum(a * b for a, b in zip(w, q)) / sum(w) - (cfg.format_penalty if row["missing"] else 0.0))
    return rewards


def _hand_code_rewards(chunk: list[dict], cfg: RewardConfig) -> list[float | None]:
    """R_code of one logged group by METHOD.md section 3, without corecode.rewards: memories floored and
    tie-resolved over the group's passing programs, O = the smallest, R = s + lambda_space min(1, O / m) [s = 1]."""
    outs = [r["outcome"] for r in chunk]
    passing = [i for i, o in enumerate(outs) if o is not None and o["pass_rate"] == 1.0]
    memory = dict(zip(passing, _tie_heads([float(max(outs[i]["peak_memory_bytes"], cfg.memory_floor_bytes))
                                           for i in passing], cfg.memory_tie_band)))
    target = min(memory.values()) if memory else None
    return [None if o is None else o["pass_rate"] + (cfg.lambda_space * min(1.0, target / memory[i]) if i in memory else 0.0)
            for i, o in enumerate(outs)]


def _check_logged_rewards(stage_dir: Path, stage: str, config, rollouts: tuple[int, ...] = (0, 1, 2)) -> None:
    executions = _rows(stage_dir / "executions-rank0.jsonl")
    metrics = {m["step"]: m for m in _rows(stage_dir / "metrics.jsonl") if "reward" in m}
    name = "plan_reward" if stage == "planner" else "code_reward"
    steps = sorted({r["step"] for r in executions})
    assert steps == list(rollouts)
    for step in steps:
        rows = [r for r in executions if r["step"] == step]
        assert len(rows) == config.per_device_train_batch_size
        recomputed = _recompute(rows, stage, config.num_generations, config.rewards)
        assert recomputed == [r["reward"] for r in rows]
        hand = _hand_plan_rewards if stage == "planner" else _hand_code_rewards
        for start in range(0, len(rows), config.num_generations):  # every real group, computed by hand
            group = rows[start : start + config.num_generations]
            expected = hand(group, config.rewards)
            assert [r["reward"] is None for r in group] == [e is None for e in expected]
            assert [r["reward"] for r in group if r["reward"] is not None] == pytest.approx(
                [e for e in expected if e is not None], abs=1e-12), (stage, step, start)
        scored = [r for r in recomputed if r is not None]
        # rewards scored while global_step == s are logged by TRL at step s + 1 (float32 mean)
        assert metrics[step + 1][f"rewards/{name}/mean"] == pytest.approx(sum(scored) / len(scored), abs=1e-5)


def test_cpu_smoke_trains_both_stages_resumes_and_logs_true_rewards(tmp_path, monkeypatch):
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    config = load_config(preset_path("cpu-smoke"), [f"output_dir={out}"])
    result = run_training(config)

    from corecode.training.models import resolve_model

    initial = _state(resolve_model(config.planner_model, config.seed))
    for role in ("planner", "coder"):
        trained = _state(result[role])
        assert trained.keys() == initial.keys()
        changed = [k for k in initial if not (initial[k] == trained[k]).all()]
        assert changed, f"GRPO did not change any {role} parameter"
        _check_logged_rewards(out / "round1" / role, role, config)
    # t_ref: the toy problems ship reference solutions, timed once in the sandbox before stage 1 and passed
    # to every plan reward of their problem (the recomputation above used the logged value)
    reference = json.loads((out / "round1" / "planner" / "reference_times.json").read_text())
    assert sorted(reference) == ["digit-3", "digit-5", "digit-7", "digit-9"] and all(t > 0 for t in reference.values())
    for row in _rows(out / "round1" / "planner" / "executions-rank0.jsonl"):
        assert row["reference_time_s"] == pytest.approx(reference[row["problem_id"]])
    validation = _rows(out / "round1" / "planner" / "validation.jsonl")
    assert [v["step"] for v in validation] == [0, 2, 3] and "cg_points" in validation[0]
    assert (out / "round1" / "coder" / "curves.png").stat().st_size > 0

    # resume: drop the coder's last checkpoint and final model; the rerun must continue from checkpoint-2
    coder_dir = out / "round1" / "coder"
    plan_file = next((out / "plans").glob("plans-*.jsonl"))
    plans_before = plan_file.read_text()
    shutil.rmtree(coder_dir / "final")
    shutil.rmtree(coder_dir / "checkpoint-3")
    logged_before = len(_rows(coder_dir / "metrics.jsonl"))
    run_training(config)
    new_metrics = _rows(coder_dir / "metrics.jsonl")[logged_before:]
    assert [m["step"] for m in new_metrics if "reward" in m] == [3], "resumed run should only train step 3"
    assert plan_file.read_text() == plans_before, "cached plans must not be regenerated"
    assert (coder_dir / "final" / "model.safetensors").is_file()


def test_lora_stage_merges_the_adapter_into_a_normal_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    overrides = [f"output_dir={tmp_path / 'run'}", "stage=coder", "use_plans=false", "use_lora=true",
                 "lora_r=4", "lora_alpha=8", "max_steps=1", "validation_limit=0"]
    config = load_config(preset_path("cpu-smoke"), overrides)
    result = run_training(config)
    final = Path(result["coder"])
    assert not (final / "adapter_config.json").exists(), "the final checkpoint must be plain weights"
    from corecode.training.models import resolve_model

    base, trained = _state(resolve_model(config.coder_model, config.seed)), _state(str(final))
    assert trained.keys() == base.keys()
    assert any(not (base[k] == trained[k]).all() for k in base), "the merged LoRA update changed nothing"


def test_each_rollout_serves_num_iterations_optimizer_steps(tmp_path, monkeypatch):
    # grpo.num_iterations = 2 (the paper's epochs over a rollout batch): four optimizer steps, two rollouts;
    # the second step of each pair trains on the same plans, now off-policy, so the clipped ratio shows up
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    config = load_config(preset_path("cpu-smoke"), [f"output_dir={out}", "stage=planner", "max_steps=4",
                                                     "eval_steps=0", "grpo.num_iterations=2"])
    result = run_training(config)
    stage = out / "round1" / "planner"
    executions = _rows(stage / "executions-rank0.jsonl")
    assert sorted({r["step"] for r in executions}) == [0, 2] and len(executions) == 2 * 16
    metrics = [m for m in _rows(stage / "metrics.jsonl") if "clip_ratio/region_mean" in m]
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert [m.get("reward") is not None for m in metrics] == [True, False, True, False]
    assert metrics[0]["clip_ratio/region_mean"] == 0.0, "a rollout's first step is on-policy"
    assert any(m["clip_ratio/region_mean"] > 0.0 for m in metrics[1::2]), "the reused steps are not off-policy"
    _check_logged_rewards(stage, "planner", config, rollouts=(0, 2))
    from corecode.training.models import resolve_model

    initial, trained = _state(resolve_model(config.planner_model, config.seed)), _state(result["planner"])
    assert any(not (initial[k] == trained[k]).all() for k in initial)
