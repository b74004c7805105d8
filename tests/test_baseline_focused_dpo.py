"""Focused-DPO (method=focused_dpo, METHOD.md section 6): the split against a hand-labelled table, the pair choice,
the options, and a cpu-smoke run end to end (tiny model, real sandbox, TRL's DPOTrainer): labels match the
tests, weights change, the logged loss is the focused loss recomputed from the model's log-probs (and not plain
DPO's), and a rerun resumes from the last checkpoint without sampling again."""

import json
import math
import shutil
from pathlib import Path

import pytest

import trl  # noqa: F401 - the [train] extra is required

from corecode.errors import ConfigError, TrainingError
from corecode.training import load_config, run_training
from corecode.training.baselines.focused_dpo import (
    FocusedDPOOptions,
    pair_weights,
    pick_pair,
    require_supported_trl,
    split_pair,
)

REPO = Path(__file__).resolve().parents[1]

# chosen ids, rejected ids -> common prefix, chosen middle, rejected middle, common suffix (labelled by hand)
SPLITS = [
    ([1, 2, 3, 4, 5], [1, 2, 9, 4, 5], [1, 2], [3], [9], [4, 5]),
    ([5, 1, 2], [6, 1, 2], [], [5], [6], [1, 2]),
    ([1, 2, 3], [1, 2, 3, 4], [1, 2, 3], [], [4], []),
    ([1, 1, 1], [1, 1], [1, 1], [1], [], []),
    ([1, 2, 1], [1, 3, 3, 1], [1], [2], [3, 3], [1]),
    ([7, 8], [9, 8, 7, 8], [], [], [9, 8], [7, 8]),
    # prefix first: [2, 1] is a common suffix too, but its 2 is already in the prefix
    ([1, 2, 1], [1, 2, 2, 1], [1, 2], [], [2], [1]),
    ([4, 5, 6], [7, 8], [], [4, 5, 6], [7, 8], []),
]


@pytest.mark.parametrize("chosen,rejected,prefix,mid_c,mid_r,suffix", SPLITS)
def test_split_into_prefix_middles_and_suffix(chosen, rejected, prefix, mid_c, mid_r, suffix):
    p, s = split_pair(chosen, rejected)
    assert chosen[:p] == rejected[:p] == prefix
    assert chosen[p : len(chosen) - s] == mid_c and rejected[p : len(rejected) - s] == mid_r
    assert chosen[len(chosen) - s :] == rejected[len(rejected) - s :] == suffix
    wc, wr = pair_weights(len(chosen), len(rejected), p, s, 2.0)
    assert wc == [0.0] * len(prefix) + [2.0] * len(mid_c) + [1.0] * len(suffix)
    assert wr == [0.0] * len(prefix) + [2.0] * len(mid_r) + [0.0] * len(suffix)


def _s(passed, rate):
    return {"text": "x", "passed": passed, "pass_rate": rate}


def test_pair_is_the_first_correct_and_the_least_passing_incorrect_program():
    assert pick_pair([_s(False, 0.5), _s(True, 1.0), _s(False, 0.0), _s(True, 1.0), _s(False, 0.0)]) == (1, 2)
    assert pick_pair([_s(None, None), _s(False, 0.5), _s(True, 1.0)]) == (2, 1)  # a sandbox failure is neither
    assert pick_pair([_s(True, 1.0), _s(None, None)]) is None
    assert pick_pair([_s(False, 0.0), _s(False, 0.5)]) is None


class _Config:
    def __init__(self, options):
        self.method_options = options


def test_options_refuse_unknown_keys_and_bad_values():
    assert FocusedDPOOptions.from_config(_Config({})) == FocusedDPOOptions()
    assert (FocusedDPOOptions().samples, FocusedDPOOptions().sample_temperature, FocusedDPOOptions().middle_weight) == (
        10, 1.5, 2.0)
    with pytest.raises(ConfigError, match="sampels"):
        FocusedDPOOptions.from_config(_Config({"sampels": 4}))
    with pytest.raises(ConfigError, match="samples must be >= 2"):
        FocusedDPOOptions.from_config(_Config({"samples": 1}))
    with pytest.raises(ConfigError, match="dpo.loss_type"):
        FocusedDPOOptions.from_config(_Config({"dpo": {"loss_type": ["ipo"]}}))
    with pytest.raises(ConfigError, match="dpo must be a mapping"):
        FocusedDPOOptions.from_config(_Config({"dpo": "precompute_ref_log_probs"}))
    assert FocusedDPOOptions.from_config(_Config({"beta": "0.2"})).beta == 0.2


def test_trl_outside_the_checked_range_is_refused():
    require_supported_trl("1.16.0")
    for version in ("1.15.2", "1.17.0", "2.0.0"):
        with pytest.raises(TrainingError, match=r"trl >= 1\.16\.0, < 1\.17\.0"):
            require_supported_trl(version)


SMOKE = {
    "method": "focused_dpo",
    "coder_model": "tiny:llama-char",
    "planner_model": "tiny:llama-char",
    "benchmark": "corecode.training.toy:digit_problems",
    "validation_limit": 2,
    "eval_steps": 2,
    "per_device_train_batch_size": 2,
    "learning_rate": 0.01,
    "max_completion_length": 1,
    "program_style": "append",
    "use_lora": False,
    "save_steps": 1,
    "max_steps": 3,
    "report_to": ["none"],
    "sandbox_workers": 2,
    # a random char-level policy writes the right digit ~1 % of the time: enough samples to find pairs
    "method_options": {"samples": 96},
}


def _rows(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _expected_outcome(text, k):
    """What the sandbox must say of `def f():\\n    return <text>` against isinstance(f(), int) and f() == K."""
    if text == str(k):
        return True, 1.0
    return False, 0.5 if len(text) == 1 and text.isdigit() else 0.0


def _completion_logps(model, prompt_ids, completion_ids):
    import torch

    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logps = model(input_ids=ids).logits.log_softmax(-1)[0]
    n = len(prompt_ids)
    return [logps[n - 1 + i, t].item() for i, t in enumerate(completion_ids)]


def test_cpu_smoke_trains_logs_the_focused_loss_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    # prepare_only: sample and label the pairs, then stop (the real-run recipe's first step)
    prepared = run_training(load_config(None, [f"output_dir={out}", "prepare_only=true", "stage=coder"], base=SMOKE))
    stage = out / "focused_dpo"
    samples_file = Path(prepared["samples"])
    assert samples_file.parent == stage and not list(stage.glob("checkpoint-*"))
    sampled_at = samples_file.stat().st_mtime_ns
    config = load_config(None, [f"output_dir={out}"], base=SMOKE)
    result = run_training(config)
    assert result == {"coder": str(stage / "final")}
    assert samples_file.stat().st_mtime_ns == sampled_at, "training sampled again instead of reading the pairs"

    # the labels are the real sandbox's verdicts on the toy tests
    records = {r["problem_id"]: r for r in _rows(samples_file)}
    assert sorted(records) == ["digit-3", "digit-5", "digit-7", "digit-9"]
    for pid, record in records.items():
        k = int(pid.split("-")[1])
        assert len(record["samples"]) == 96
        for sample in record["samples"]:
            assert (sample["passed"], sample["pass_rate"]) == _expected_outcome(sample["text"], k), (pid, sample)
        passed = [s["passed"] for s in record["samples"]]
        assert (record["pair"] is not None) == (True in passed and False in passed)
        if record["pair"] is not None:
            c, r = record["pair"]
            assert passed[c] and not passed[r] and c == passed.index(True)
    with_pair = [pid for pid in sorted(records) if records[pid]["pair"] is not None]
    summary = json.loads((stage / "pairs-summary.json").read_text())
    assert summary["pairs"] == len(with_pair) >= 1
    assert summary["dropped_share"] == pytest.approx(1 - len(with_pair) / 4)

    # weights changed
    from safetensors.torch import load_file

    from corecode.training.models import resolve_model

    init = resolve_model(config.coder_model, config.seed)
    before, after = load_file(f"{init}/model.safetensors"), load_file(str(stage / "final" / "model.safetensors"))
    assert before.keys() == after.keys()
    assert any(not (before[k] == after[k]).all() for k in before), "Focused-DPO changed no parameter"

    # the logged loss of step 2 (weights of checkpoint-1 against the initial model) recomputed by hand
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.agents import TaskView, render_prompt
    from corecode.training.toy import digit_problems

    tokenizer = AutoTokenizer.from_pretrained(init)
    reference = AutoModelForCausalLM.from_pretrained(init).eval()
    policy = AutoModelForCausalLM.from_pretrained(str(stage / "checkpoint-1")).eval()
    problems = {p.id: p for p in digit_problems()}
    steps = {r["step"]: r for r in _rows(stage / "focused-steps-rank0.jsonl")}
    metrics = {m["step"]: m for m in _rows(stage / "metrics.jsonl") if "loss" in m}
    focused_losses, plain_losses = [], []
    for index in steps[1]["pair_index"]:
        record = records[with_pair[index]]
        prompt = render_prompt("coder", TaskView.from_problem(problems[with_pair[index]]))
        prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
        prompt_ids = list(prompt_ids["input_ids"] if hasattr(prompt_ids, "keys") else prompt_ids)
        sides = []
        for j in record["pair"]:
            full = tokenizer.apply_chat_template(prompt + [{"role": "assistant", "content": record["samples"][j]["text"]}],
                                                 tokenize=True)
            full = list(full["input_ids"] if hasattr(full, "keys") else full)
            assert full[: len(prompt_ids)] == prompt_ids
            completion = full[len(prompt_ids) :]
            ratios = [a - b for a, b in zip(_completion_logps(policy, prompt_ids, completion),
                                            _completion_logps(reference, prompt_ids, completion))]
            sides.append((completion, ratios))
        (c_ids, c_lr), (r_ids, r_lr) = sides
        p, s = split_pair(c_ids, r_ids)
        assert s >= 2, "both completions end with the chat template's end of turn"
        mid_c, mid_r = sum(c_lr[p : len(c_ids) - s]), sum(r_lr[p : len(r_ids) - s])
        suffix_c = sum(c_lr[len(c_ids) - s :])
        beta = 0.1
        focused_losses.append(-math.log(1 / (1 + math.exp(-beta * (2 * (mid_c - mid_r) + suffix_c)))))
        plain_losses.append(-math.log(1 / (1 + math.exp(-beta * (sum(c_lr) - sum(r_lr))))))
    focused = sum(focused_losses) / len(focused_losses)
    plain = sum(plain_losses) / len(plain_losses)
    assert metrics[2]["loss"] == pytest.approx(focused, abs=2e-5)  # TRL logs the step-1 batch at step 2
    assert steps[1]["loss"] == pytest.approx(focused_losses, abs=2e-5)
    assert abs(metrics[2]["loss"] - plain) > 1e-3, "the logged loss is plain DPO's, not the focused one"
    assert metrics[2]["rewards/margins"] > 0  # the first update made the focused preference positive
    assert metrics[1]["loss"] == pytest.approx(math.log(2), abs=1e-6)  # step 1: the policy is the reference

    # resume: drop the last checkpoint and the final model; the rerun trains step 3 only and samples nothing
    samples_before, mtime = samples_file.read_text(), samples_file.stat().st_mtime_ns
    shutil.rmtree(stage / "final")
    shutil.rmtree(stage / "checkpoint-3")
    logged_before = len(_rows(stage / "focused-steps-rank0.jsonl"))
    run_training(config)
    assert samples_file.read_text() == samples_before and samples_file.stat().st_mtime_ns == mtime
    assert [r["step"] for r in _rows(stage / "focused-steps-rank0.jsonl")[logged_before:]] == [2]
    assert (stage / "final" / "model.safetensors").is_file()


def test_gpu_config_has_the_authors_constants_and_builds_its_trl_arguments(tmp_path):
    from corecode.training.baselines.focused_dpo import _dpo_args
    from corecode.training.runner import check_launch

    path = REPO / "configs" / "train" / "qwen7b-focused-dpo.yaml"
    config = load_config(path)
    options = FocusedDPOOptions.from_config(config)
    assert config.method == "focused_dpo" and config.coder_model == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert (options.samples, options.sample_temperature, options.middle_weight) == (10, 1.5, 2.0)
    assert config.benchmark == "genverse-codecontests-train" and config.bf16 and config.validation_limit == 0
    import re

    import yaml

    accelerate = re.search(r"--config_file (configs/train/accelerate/\S+\.yaml)", path.read_text()).group(1)
    check_launch(config, yaml.safe_load((REPO / accelerate).read_text())["num_processes"])
    args = _dpo_args(config, options, tmp_path)
    assert (args.beta, args.learning_rate, args.loss_type) == (options.beta, config.learning_rate, ["sigmoid"])
