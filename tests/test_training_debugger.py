"""The debugger stage: MapCoder's Debugging agent trained with GRPO on the frozen Coder's failing programs.

Unit tests of the case cache and the Collaboration-Gain probe run on the real sandbox with scripted
models; the end-to-end test trains the tiny model as the Debugger (real TRL GRPOTrainer) and checks the
weights changed, the logged rewards equal R_code recomputed, the validation rows carry CG, and a rerun
regenerates no case.
"""

import json
from pathlib import Path

import pytest

from corecode.backends.scripted import ScriptedBackend
from corecode.errors import TrainingError
from corecode.rewards import sandbox_executor
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.training.toy import digit_debug_problems, digit_problems

import trl  # noqa: E402,F401 - the [train] extra is required (README): missing, these tests fail, never skip

from corecode.training.debugger import NO_PLAN, DebugCaseCache, DebugProbe, debugger_rows  # noqa: E402

WRONG = "```python\ndef f():\n    return -1\n```"


def right(conversation) -> str:
    digit = conversation[-1]["content"].split("returns the number ", 1)[1][0]
    return f"```python\ndef f():\n    return {digit}\n```"


@pytest.fixture(scope="module")
def executors():
    with Sandbox(SandboxConfig(workers=2)) as sandbox:
        yield sandbox_executor(sandbox), sandbox_executor(sandbox, tests="public")


def test_cases_are_the_failing_programs_with_public_feedback_and_are_cached(tmp_path, executors):
    _, execute_public = executors
    problems = digit_debug_problems()
    calls = []

    def write(todo):  # digit-3 always right; the others: one wrong program twice, then a right one
        calls.append([p.id for p in todo])
        return [[right([{"content": p.statement}])] * 3 if p.id == "digit-3" else [WRONG, WRONG, right([{"content": p.statement}])]
                for p in todo]

    cache = DebugCaseCache(tmp_path, "coder")
    cases = cache.ensure(problems, write, execute_public, per_problem=2)
    assert [c.problem_id for c in cases] == ["digit-5", "digit-7", "digit-9"], "one case per distinct failing program"
    case = cases[0]
    assert "return -1" in case.program and case.public_pass_rate == 0.0 and case.plan is None
    assert "0 of 1 example tests passed" in case.feedback and "assert f() == 5" in case.feedback
    # a restart reads the cache (digit-3 recorded as tried without a case) and asks the Coder for nothing
    again = DebugCaseCache(tmp_path, "coder").ensure(problems, write, execute_public, per_problem=2)
    assert again == cases and calls == [["digit-3", "digit-5", "digit-7", "digit-9"]]
    # problems without public tests cannot give feedback: skipped, not asked for
    assert DebugCaseCache(tmp_path, "other").ensure(digit_problems(), write, execute_public, 2) == []
    assert len(calls) == 1
    rows = debugger_rows(cases, {p.id: p for p in problems})
    user = rows[0]["prompt"][-1]["content"]
    assert NO_PLAN in user and "return -1" in user and "0 of 1 example tests passed" in user


def test_a_crash_loses_at_most_the_chunk_being_generated(tmp_path, executors):
    _, execute_public = executors
    problems = digit_debug_problems()
    asked = []

    def crashing(todo):
        asked.append([p.id for p in todo])
        if len(asked) == 2:
            raise KeyboardInterrupt("killed while generating the second chunk")
        return [[WRONG] for _ in todo]

    with pytest.raises(KeyboardInterrupt):
        DebugCaseCache(tmp_path, "coder").ensure(problems, crashing, execute_public, 1, chunk_size=2)
    cases = DebugCaseCache(tmp_path, "coder").ensure(problems, crashing, execute_public, 1, chunk_size=2)
    assert asked == [["digit-3", "digit-5"], ["digit-7", "digit-9"], ["digit-7", "digit-9"]]
    assert [c.problem_id for c in cases] == ["digit-3", "digit-5", "digit-7", "digit-9"]


def test_a_corrupt_cache_line_names_the_file_and_row(tmp_path, executors):
    cache = DebugCaseCache(tmp_path, "coder")
    cache.path.write_text(json.dumps({"problem_id": "digit-3", "none": True}) + "\n{broken\n")
    with pytest.raises(TrainingError, match=r"cases-coder.jsonl, row 2"):
        cache.load()


def test_probe_measures_the_debuggers_collaboration_gain(executors, monkeypatch):
    execute, execute_public = executors
    problems = digit_debug_problems()
    coder = ScriptedBackend(lambda conv: WRONG if "number 3" not in conv[-1]["content"] else right(conv))
    import corecode.training.debugger as debugger_module

    def fixing_debugger(model, tokenizer, name, batch_size=8):  # the "policy": repairs digit-5 and digit-7, breaks digit-9
        return ScriptedBackend(lambda conv: "def f():\n    return 'x'\n" if "number 9" in conv[-1]["content"]
                               else right(conv))

    monkeypatch.setattr(debugger_module, "PolicyBackend", fixing_debugger)
    from corecode.backends import SamplingConfig
    from corecode.rewards.trl_rewards import program_for

    probe = DebugProbe(problems, coder, execute, execute_public, program_for, SamplingConfig(temperature=0.0),
                       SamplingConfig(temperature=0.0))
    row = probe.measure(model=None)
    assert row["pass1_alone"] == 0.25 and row["debugged"] == 3
    assert row["pass1_with"] == 0.75 and row["cg_points"] == pytest.approx(50.0)
    probe.measure(model=None)
    assert len(coder.calls) == 4, "the frozen Coder's programs are generated once, not at every validation"


def test_probe_leaves_a_problem_the_sandbox_failed_on_out_of_both_columns(executors, monkeypatch):
    """As above, but the sandbox fails (None) on digit-3's hidden run, the one problem the Coder solved alone:
    scored on the other three, alone 0/3 and with the debugger 2/3 (not 1/4 and 3/4: an error is no failure)."""
    execute, execute_public = executors
    problems = digit_debug_problems()
    coder = ScriptedBackend(lambda conv: WRONG if "number 3" not in conv[-1]["content"] else right(conv))
    import corecode.training.debugger as debugger_module

    monkeypatch.setattr(debugger_module, "PolicyBackend", lambda model, tokenizer, name, batch_size=8: ScriptedBackend(
        lambda conv: "def f():\n    return 'x'\n" if "number 9" in conv[-1]["content"] else right(conv)))
    from corecode.backends import SamplingConfig
    from corecode.rewards.trl_rewards import program_for

    def flaky(jobs):
        return [None if p.id == "digit-3" else r for (_, p), r in zip(jobs, execute(jobs))]

    row = DebugProbe(problems, coder, flaky, execute_public, program_for, SamplingConfig(temperature=0.0),
                     SamplingConfig(temperature=0.0)).measure(model=None)
    assert row["pass1_alone"] == 0.0 and row["pass1_with"] == pytest.approx(2 / 3)
    assert row["sandbox_errors"] == 1 and row["unscored_problems"] == 1


def test_debugger_stage_trains_logs_true_rewards_and_reuses_its_cases(tmp_path, monkeypatch):
    from corecode.rewards import Outcome, coder_group_rewards
    from corecode.training import load_config, preset_path, run_training

    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    overrides = [f"output_dir={out}", "stage=debugger", "debugger_model=tiny:llama-char", "use_plans=false",
                 "coder_backend=corecode.training.toy:buggy_coder", "benchmark=corecode.training.toy:digit_debug_problems",
                 "validation_split=validation", "debug_attempts=2", "debug_cases_per_problem=1", "max_steps=2"]
    config = load_config(preset_path("cpu-smoke"), overrides)
    result = run_training(config)
    stage = out / "debugger"
    from safetensors.torch import load_file

    from corecode.training.models import resolve_model

    initial = load_file(str(Path(resolve_model("tiny:llama-char", config.seed)) / "model.safetensors"))
    trained = load_file(str(Path(result["debugger"]) / "model.safetensors"))
    assert any(not (initial[k] == trained[k]).all() for k in initial), "GRPO did not change the Debugger"

    cases = [json.loads(line) for line in next((out / "debug_cases").glob("cases-*.jsonl")).read_text().splitlines()]
    assert sorted(c["problem_id"] for c in cases) == ["digit-3", "digit-5", "digit-7", "digit-9"]
    assert all("return -1" in c["program"] for c in cases)

    executions = [json.loads(line) for line in (stage / "executions-rank0.jsonl").read_text().splitlines()]
    assert {r["stage"] for r in executions} == {"debugger"} and sorted({r["step"] for r in executions}) == [0, 1]
    for start in range(0, len(executions), config.num_generations):
        chunk = executions[start : start + config.num_generations]
        outcomes = [None if r["outcome"] is None else Outcome.from_dict(r["outcome"]) for r in chunk]
        assert coder_group_rewards(outcomes, config.rewards) == [r["reward"] for r in chunk]
    metrics = [json.loads(line) for line in (stage / "metrics.jsonl").read_text().splitlines()]
    assert any("rewards/debug_reward/mean" in m for m in metrics)
    validation = [json.loads(line) for line in (stage / "validation.jsonl").read_text().splitlines()]
    assert validation[0]["step"] == 0 and validation[0]["debugged"] == 2 and "cg_points" in validation[0]

    cache_before = next((out / "debug_cases").glob("cases-*.jsonl")).read_text()
    import shutil

    shutil.rmtree(stage / "final")
    run_training(config)  # resumes from checkpoint-2 (already at max_steps): no new cases, a new final model
    assert next((out / "debug_cases").glob("cases-*.jsonl")).read_text() == cache_before
    assert (stage / "final" / "model.safetensors").is_file()


def test_prepare_only_writes_the_cases_and_trains_nothing(tmp_path, monkeypatch):
    from corecode.errors import ConfigError
    from corecode.training import load_config, preset_path, run_training

    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    overrides = [f"output_dir={out}", "stage=debugger", "debugger_model=tiny:llama-char", "use_plans=false",
                 "coder_backend=corecode.training.toy:buggy_coder", "benchmark=corecode.training.toy:digit_debug_problems",
                 "validation_limit=0", "debug_attempts=1", "prepare_only=true"]
    result = run_training(load_config(preset_path("cpu-smoke"), overrides))
    assert result["debug_cases"].startswith("4 case(s)")
    assert len(next((out / "debug_cases").glob("cases-*.jsonl")).read_text().splitlines()) == 4
    assert not (out / "debugger").exists(), "prepare_only must not train"
    with pytest.raises(ConfigError, match="prepare_only needs stage=coder or stage=debugger"):
        load_config(preset_path("cpu-smoke"), ["prepare_only=true"])
