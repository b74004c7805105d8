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
