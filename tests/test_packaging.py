"""What pyproject.toml promises: every integration the training defaults use is installed by the train extra.

A comment once swallowed tensorboard and matplotlib from the extra, and a fresh install crashed at the first
`corecode train` (TensorBoardCallback requires tensorboard) while the test suite, which logs to `none`, passed.
"""

import importlib.util
import re
import tomllib
from pathlib import Path

from corecode.training.config import TrainConfig

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_train_extra_installs_the_default_report_to_and_the_curve_plotter():
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    train = _names(extras["train"])
    for integration in TrainConfig().report_to:
        assert integration == "none" or integration in train, f"report_to default {integration!r} not in [train]"
    assert "matplotlib" in train  # training writes its curves at the end
    assert {"trl", "peft"} <= train


def test_the_default_report_to_is_importable_here():
    for integration in TrainConfig().report_to:
        if integration != "none":
            assert importlib.util.find_spec(integration) is not None, integration
