"""TrainConfig from YAML, presets and key=value overrides; errors that say what to fix. The configs' TRL
arguments are built too (trl's GRPOConfig, so these tests need the [train] extra, no model)."""

from pathlib import Path

import pytest

from corecode.cli import main
from corecode.errors import ConfigError, UnknownNameError
from corecode.rewards import RewardConfig
from corecode.training import PRESETS, TrainConfig, load_config, preset_path

REPO = Path(__file__).resolve().parents[1]


def test_defaults_are_the_papers():
    c = TrainConfig()
    assert (c.num_generations, c.coder_samples, c.learning_rate, c.beta, c.temperature, c.top_p) == (
        5, 2, 1e-6, 0.01, 1.0, 0.99)
    assert (c.epsilon, c.epsilon_high, c.max_completion_length, c.plan_min_chars) == (0.2, 0.3, 2048, 50)


PRESET_VALUES = {
    # name: (stage, G, M, per-device batch, lr, beta, max_steps, max_completion_length, policy)
    "cpu-smoke": ("both", 4, 2, 16, 0.01, 0.0, 3, 1, "tiny:llama-char"),
    "cpu-demo": ("both", 4, 2, 4, 2e-5, 0.0, 3, 160, "builtin:qwen2.5-coder-0.5b"),
}


@pytest.mark.parametrize("name", PRESETS)
def test_presets_load(name, tmp_path):
    config = load_config(preset_path(name))
    stage, g, m, batch, lr, beta, steps, length, policy = PRESET_VALUES[name]
    assert (config.stage, config.num_generations, config.coder_samples, config.per_device_train_batch_size) == (
        stage, g, m, batch)
    assert (config.learning_rate, config.beta, config.max_steps, config.max_completion_length) == (lr, beta, steps, length)
    assert config.planner_model == config.coder_model == policy
    assert config.validation_limit > 0 and config.eval_steps > 0  # the presets show the CG curve
    _runnable(config, tmp_path, processes=1)


def _runnable(config, tmp_path, processes):
    """What a launch on ``processes`` processes checks before loading anything, and TRL's own arguments."""
    from corecode.training.grpo import grpo_args  # TRL's GRPOConfig: the [train] extra
    from corecode.training.runner import check_launch

    check_launch(config, processes)
    args = grpo_args(config, tmp_path)
    assert (args.num_generations, args.learning_rate, args.beta) == (config.num_generations, config.learning_rate,
                                                                     config.beta)
    return args


def _launch_processes(path):
    """The number of training processes of a GPU config: its header's accelerate config's num_processes."""
    import re

    import yaml

    accelerate = re.search(r"--config_file (configs/train/accelerate/\S+\.yaml)", path.read_text()).group(1)
    return yaml.safe_load((REPO / accelerate).read_text())["num_processes"]


# CoRe-Code's configs; a baseline's (method: cure | coderl_plus | focused_dpo) is checked against its authors'
# constants by its own test (tests/test_baseline_*.py)
GPU_CONFIGS = sorted(p for p in (REPO / "configs" / "train").glob("*.yaml")
                     if load_config(p).method == "corecode")


@pytest.mark.parametrize("path", GPU_CONFIGS, ids=lambda p: p.name)
def test_gpu_configs_are_the_papers_settings_and_launchable(path, tmp_path):
    """METHOD.md section 3: G = 5, M = 2, lr 1e-6 (LoRA: 1e-5, documented in its header), KL 0.01, clip
    0.2 / 0.3, temperature 1.0, top_p 0.99, 2048-token responses, 128 prompts (640 completions) per
    optimizer step and 512 prompts per rollout batch, on Gen-Verse/CodeContests_train; and each config passes
    the launch checks on its accelerate config's processes (no stage=both, no validation probe)."""
    config = load_config(path)
    processes = _launch_processes(path)
    lora = config.use_lora
    assert (config.num_generations, config.coder_samples) == (5, 2)
    assert config.learning_rate == (1e-5 if lora else 1e-6)
    assert (config.beta, config.epsilon, config.epsilon_high) == (0.01, 0.2, 0.3)
    assert (config.temperature, config.top_p, config.max_completion_length) == (1.0, 0.99, 2048)
    assert config.benchmark == "genverse-codecontests-train" and config.bf16
    step = config.per_device_train_batch_size * processes * config.gradient_accumulation_steps
    assert step == 640 == 128 * config.num_generations
    if config.stage != "debugger":  # the paper's rollout batch; the Debugger stage rolls out per optimizer step
        rollout = config.per_device_train_batch_size * processes * config.grpo["steps_per_generation"]
        assert rollout == 2560 == 512 * config.num_generations
        assert config.num_train_epochs == 10 and config.partner_max_tokens == 2048
    assert config.stage != "both"  # a multi-process stage=both is refused (issue 12.8)
    args = _runnable(config, tmp_path, processes)
    assert args.use_vllm and args.gradient_checkpointing


def test_overrides_reach_nested_options_and_parse_yaml_values(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("stage: planner\nrewards:\n  tau: 0.5\n")
    c = load_config(f, ["max_steps=7", "rewards.aggregation=softmax", "report_to=[none]", "grpo.warmup_ratio=0.1",
                        "validation_ids=[mbpp/514, mbpp/517]"])
    assert c.validation_ids == ("mbpp/514", "mbpp/517")
    assert c.max_steps == 7 and c.stage == "planner"
    assert c.rewards == RewardConfig(tau=0.5, aggregation="softmax")
    assert c.report_to == ("none",) and c.grpo == {"warmup_ratio": 0.1}


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["stage=planer"], "stage must be one of"),
        (["num_generations=1"], "num_generations"),
        (["rounds=2", "stage=coder"], "stage=both"),
        # a served partner cannot follow round 1's new checkpoints: refused, not silently reused
        (["rounds=2", "coder_backend=llamacpp:/models/coder.gguf"], "rounds=2 with coder_backend set"),
        (["rounds=3", "planner_backend=openai:p@http://127.0.0.1:8002/v1"], "rounds=3 with planner_backend set"),
        (["learning_rat=1"], "unknown option"),
        (["rewards.tua=1"], "unknown rewards option"),
        (["rewards.aggregation=median"], "aggregation"),
        (["max_steps"], "key=value"),
    ],
)
def test_bad_options_are_rejected_with_a_useful_message(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_one_round_with_served_partners_and_rounds_with_in_process_partners_are_accepted():
    assert load_config(None, ["rounds=1", "coder_backend=llamacpp:/m.gguf", "planner_backend=x:y"]).rounds == 1
    assert load_config(None, ["rounds=2"]).rounds == 2


def test_exponent_floats_without_a_dot_are_numbers_not_strings():
    # YAML 1.1 reads `1e-6` as a string; the paper's learning rate must not reach the optimizer as one
    c = load_config(None, ["learning_rate=1e-6", "beta=1e-3", "temperature=1"])
    assert c.learning_rate == 1e-6 and isinstance(c.learning_rate, float) and c.beta == 1e-3
    with pytest.raises(ConfigError, match="learning_rate must be a number"):
        load_config(None, ["learning_rate=fast"])


def test_unknown_preset_lists_the_valid_ones():
    with pytest.raises(UnknownNameError, match="cpu-smoke"):
        preset_path("gpu-huge")


def test_cli_prints_the_resolved_config(capsys):
    assert main(["train", "--preset", "cpu-smoke", "max_steps=9", "--print-config"]) == 0
    assert '"max_steps": 9' in capsys.readouterr().out
    assert main(["train"]) == 2  # neither a file nor a preset: a clean error, not a traceback


def test_training_refuses_a_trl_that_scores_sandbox_failures_as_zero():
    """trl 1.5.1's GRPOTrainer nansums an all-None row to reward 0; 1.6.0 first leaves it out of the group
    (checked in both wheels). The pin and the start-up check say the same."""
    from corecode.errors import TrainingError
    from corecode.training.grpo import MIN_TRL, require_trl

    assert MIN_TRL == (1, 6, 0)
    with pytest.raises(TrainingError, match=r"trl 1\.5\.1 is too old.*>= 1\.6\.0"):
        require_trl("1.5.1")
    require_trl("1.6.0")
    require_trl("1.16.0")
    assert '"trl>=1.6.0"' in (REPO / "pyproject.toml").read_text()


def test_train_chooses_models_with_the_same_model_flag_as_eval_and_solve(capsys):
    import json

    assert main(["train", "--preset", "cpu-smoke", "--model", "builtin:qwen2.5-coder-0.5b",
                 "--model", "planner=runs/x/round1/planner/final", "--print-config"]) == 0
    captured = capsys.readouterr()
    config = json.loads(captured.out)
    assert config["planner_model"] == "runs/x/round1/planner/final"
    assert config["coder_model"] == config["debugger_model"] == config["retrieval_model"] == "builtin:qwen2.5-coder-0.5b"
    assert "deprecated" not in captured.err
    # the old spelling, a field-name override, still works and says what to use instead
    assert main(["train", "--preset", "cpu-smoke", "coder_model=tiny:llama-char", "--print-config"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["coder_model"] == "tiny:llama-char"
    assert "coder_model=SPEC is deprecated" in captured.err and "--model coder=SPEC" in captured.err
    assert main(["train", "--preset", "cpu-smoke", "--model", "verifier=x", "--print-config"]) == 2
    assert "training roles are planner, coder, debugger, retrieval" in capsys.readouterr().err


def test_a_dotted_override_leaves_the_callers_base_alone():
    base = {"rewards": {"format_penalty": 0.0}, "grpo": {"gradient_checkpointing": False}}
    config = load_config(None, ["rewards.lambda_time=0.5", "grpo.gradient_checkpointing=true"], base=base)
    assert config.rewards.lambda_time == 0.5
    assert base == {"rewards": {"format_penalty": 0.0}, "grpo": {"gradient_checkpointing": False}}
