"""`corecode eval` flags: the no-argument main job, YAML + flag precedence, per-role models."""

import pytest

from corecode.cli import build_parser
from corecode.cli.eval_cmd import QUICK_LIMIT, QUICK_MAX_TOKENS, QUICK_N, config_from_args
from corecode.errors import ConfigError


def _config(*argv):
    return config_from_args(build_parser().parse_args(["eval", *argv]))


def test_no_arguments_is_the_quick_main_job():
    config = _config()
    assert (config.benchmark, config.pipeline, config.model) == ("humaneval", "planner_coder", "qwen2.5-coder-0.5b")
    assert (config.limit, config.n) == (QUICK_LIMIT, QUICK_N) and config.temperature > 0
    assert config.max_tokens == QUICK_MAX_TOKENS < 1024  # bounded: the quick job must stay under 5 minutes
    assert config.baseline == "auto"


def test_flags_override_the_quick_defaults_and_a_benchmark_drops_them():
    assert _config("--n", "1").n == 1 and _config("--n", "1").limit == QUICK_LIMIT
    config = _config("--benchmark", "mbpp", "--pipeline", "cot")
    assert config.limit is None and config.n == 5


def test_yaml_then_flags(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("benchmark: mbpp\npipeline: scot\nn: 5\ntemperature: 0.8\n")
    config = _config("--config", str(path), "--n", "2", "--model", "planner=smollm2-135m", "--no-baseline")
    assert (config.pipeline, config.n, config.baseline) == ("scot", 2, "off")
    assert config.model_for("planner") == "smollm2-135m" and config.model_for("coder") == "qwen2.5-coder-0.5b"


def test_bad_flag_values_are_config_errors():
    with pytest.raises(ConfigError, match="n .* must be >= 1"):
        _config("--n", "0")
