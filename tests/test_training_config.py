"""TrainConfig from YAML, presets and key=value overrides; errors that say what to fix. No torch needed."""

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


@pytest.mark.parametrize("name", PRESETS)
def test_presets_load(name):
    config = load_config(preset_path(name))
    assert config.stage == "both"


@pytest.mark.parametrize("path", sorted((REPO / "configs" / "train").glob("*.yaml")), ids=lambda p: p.name)
def test_gpu_configs_load(path):
    config = load_config(path)
    assert config.planner_model and config.coder_model


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
