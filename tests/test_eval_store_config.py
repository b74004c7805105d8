"""The resumable sample store and the evaluation config (YAML, flags, validation)."""

import json

import pytest

from corecode.errors import ConfigError, DatasetError
from corecode.evaluation.config import EvalConfig, parse_model_flags
from corecode.evaluation.store import JsonlStore


def _rec(task, index, **extra):
    return {"task_id": task, "sample_index": index, **extra}


def test_store_appends_and_reloads(tmp_path):
    path = tmp_path / "samples.jsonl"
    store = JsonlStore.open(path)
    store.append(_rec("a", 0, program="x"))
    store.append(_rec("a", 1, program="y"))
    again = JsonlStore.open(path)
    assert len(again) == 2 and ("a", 1) in again and again.get(("a", 0))["program"] == "x"


def test_store_refuses_a_key_twice(tmp_path):
    store = JsonlStore.open(tmp_path / "s.jsonl")
    store.append(_rec("a", 0))
    with pytest.raises(ValueError, match="generated twice"):
        store.append(_rec("a", 0))


def test_store_drops_a_torn_last_line_and_appends_cleanly(tmp_path):
    path = tmp_path / "s.jsonl"
    good = json.dumps(_rec("a", 0)) + "\n"
    path.write_text(good + '{"task_id": "a", "sample_in')  # killed mid-write
    store = JsonlStore.open(path)
    assert len(store) == 1 and ("a", 0) in store
    assert path.read_text() == good
    store.append(_rec("a", 1))
    assert [json.loads(line)["sample_index"] for line in path.read_text().splitlines()] == [0, 1]


def test_store_reports_a_corrupt_middle_line_with_file_and_row(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(_rec("a", 0)) + "\nnot json\n" + json.dumps(_rec("a", 1)) + "\n")
    with pytest.raises(DatasetError, match=r"s\.jsonl, row 2"):
        JsonlStore.open(path)


def test_store_reports_duplicate_keys(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text((json.dumps(_rec("a", 0)) + "\n") * 2)
    with pytest.raises(DatasetError, match="appears twice"):
        JsonlStore.open(path)


def test_config_from_yaml_with_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("benchmark: mbpp\npipeline: cot\nn: 3\ntemperature: 0.7\nrole_models:\n  planner: p-model\n")
    config = EvalConfig.from_yaml(path, n=1)
    assert (config.benchmark, config.pipeline, config.n) == ("mbpp", "cot", 1)
    assert config.model_for("planner") == "p-model" and config.model_for("coder") == config.model


def test_config_unknown_yaml_key_lists_valid_ones(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("benchmrk: mbpp\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: unknown option\(s\) benchmrk; valid: .*benchmark"):
        EvalConfig.from_yaml(path)


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"n": 0}, "n .* must be >= 1"),
        ({"n": 5, "temperature": 0.0}, "temperature 0"),
        ({"limit": 0}, "limit must be >= 1"),
        ({"top_p": 0.0}, "top_p"),
    ],
)
def test_config_rejects_bad_values(changes, message):
    with pytest.raises(ConfigError, match=message):
        EvalConfig(**changes)


def test_model_flags_default_and_roles():
    assert parse_model_flags(["m1", "coder=openai:x@http://h:1/v1"]) == ("m1", {"coder": "openai:x@http://h:1/v1"})
    with pytest.raises(ConfigError, match="two default models"):
        parse_model_flags(["m1", "m2"])
