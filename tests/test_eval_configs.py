"""Every shipped configs/eval/*.yaml loads, and names a real benchmark, pipeline and backend."""

from pathlib import Path

import pytest

from corecode.backends import parse_spec
from corecode.benchmarks import BENCHMARKS
from corecode.evaluation.config import EvalConfig
from corecode.pipelines import PIPELINES

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs" / "eval").glob("*.yaml"))


def test_the_paper_grid_is_complete():
    names = {p.stem for p in CONFIGS}
    for benchmark in ("livebench", "mbpp", "code_contests", "codeforces"):
        for pipeline in ("direct", "cot", "scot", "reflexion", "mapcoder", "planner_coder"):
            assert f"{benchmark}-{pipeline}" in names


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_is_runnable(path):
    config = EvalConfig.from_yaml(path)
    assert config.benchmark in BENCHMARKS
    assert config.pipeline in PIPELINES
    assert parse_spec(config.model)[0] == "openai"
    assert config.run_dir == Path("runs/paper") / path.stem
