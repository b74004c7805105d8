"""CURE (method=cure): the reward matrix by a hand-labelled table, the generated-test format, the task-pair
sampler, the best-of-n pipeline by generated tests, and a cpu-smoke run end to end (tiny model, real sandbox,
real TRL GRPOTrainer): weights change, logged rewards equal the rewards recomputed from the logged matrix,
and a run resumes from its checkpoint.
"""

import json
import math
import shutil
from pathlib import Path

import pytest

import trl  # noqa: F401 - the [train] extra is required (README): missing, these tests fail, never skip

from corecode.errors import ConfigError
from corecode.parsing.unit_tests import parse_unit_test
from corecode.rewards.cure import cure_task_rewards, unit_test_rewards, zscore
from corecode.types import AssertTest, CallTest, Problem, StdioTest

T, F = True, False


# ----------------------------------------------------------------------------------------- reward matrix
def test_test_rewards_follow_the_table():
    """4 programs (gt 1, 1, 0.5, 0: C = {0, 1}, W = {2, 3}) x 3 tests, labelled by hand:
    test 0 passes all of C; of W, program 2 fails it, program 3 passes it     -> +1/2
    test 1 fails program 1 (in C); both W programs pass it                   -> -2/2
    test 2 fails program 0 (in C); of W only program 2 passes it              -> -1/2"""
    gt = [1.0, 1.0, 0.5, 0.0]
    matrix = [[T, T, F], [T, F, F], [F, T, T], [T, T, F]]
    assert unit_test_rewards(gt, matrix, 3) == [0.5, -1.0, -0.5]
    scored = cure_task_rewards(gt, matrix, 3)
    # z-scores with the population std, computed by hand: mean -1/3, std sqrt(7/18)
    std = math.sqrt(7 / 18)
    assert scored.test == pytest.approx([(0.5 + 1 / 3) / std, (-1 + 1 / 3) / std, (-0.5 + 1 / 3) / std])
    # programs: mean 0.625, std sqrt(0.171875)
    s = math.sqrt(0.171875)
    assert scored.code == pytest.approx([0.375 / s, 0.375 / s, -0.125 / s, -0.625 / s])
    assert scored.code_raw == gt and scored.test_raw == [0.5, -1.0, -0.5]


def test_w_empty_gives_plus_minus_one_and_c_empty_trains_no_test():
    # every program correct: +1 for a test every one passes, -1 otherwise
    assert unit_test_rewards([1.0, 1.0], [[T, F], [T, T]], 2) == [1.0, -1.0]
    # no correct program: the tests are not trained, the programs still are
    scored = cure_task_rewards([0.5, 0.0], [[T, T], [F, T]], 2)
    assert scored.test_raw is None and scored.test is None and scored.test_reward(0) is None
    assert scored.code == pytest.approx([1.0, -1.0])


def test_zero_std_drops_the_list():
    scored = cure_task_rewards([1.0, 1.0, 1.0], [[T, T], [T, T], [T, T]], 2)
    assert scored.test_raw == [1.0, 1.0] and scored.test is None, "all tests equal: dropped"
    assert scored.code is None and scored.code_reward(0) is None, "all programs equal: dropped"
    assert zscore([0.2, 0.2]) is None and zscore([1.0]) is None
    assert zscore([0.0, None, 1.0]) == [-1.0, None, 1.0]


def test_a_program_the_sandbox_failed_on_is_in_neither_c_nor_w():
    # program 1: None (our failure). C = {0}, W = {2}; test 0 passes C and program 2 fails it: +1
    assert unit_test_rewards([1.0, None, 0.0], [[T, F], [F, F], [F, F]], 2) == [1.0, -0.0]
    # a known rate with an unknown row of B counts in neither set either: W empty -> +-1
    assert unit_test_rewards([1.0, 0.0], [[T, F], None], 2) == [1.0, -1.0]
    with pytest.raises(ValueError):
        unit_test_rewards([1.0], [[T]], 2)


# ----------------------------------------------------------------------------------------- test format
def test_stdio_tests_parse_fenced_plain_and_the_last_one():
    text = "Think.\n**Test Input:**\n```\n3 4\n```\n**Test Output:**\n```\n7\n```\n**Explanation:** 3+4"
    parsed = parse_unit_test(text, function=False)
    assert parsed.test == StdioTest("3 4\n", "7\n")
    plain = "**Test Input:** 1\\n2 **Test Output:** 3\n**Explanation:** sum"
    assert parse_unit_test(plain, function=False).test == StdioTest("1\n2\n", "3\n")
    two = "**Test Input:**\n```\n1\n```\n**Test Output:**\n```\n1\n```\nbetter:\n**Test Input:**\n```\n2\n```\n" \
          "**Test Output:**\n```\n4\n```"
    assert parse_unit_test(two, function=False).test == StdioTest("2\n", "4\n")


def test_function_tests_are_literal_calls_and_everything_else_is_malformed():
    ok = "**Test Input:**\n```python\nadd(2, [1, 2], 'x')\n```\n**Test Output:**\n```python\n(3, None)\n```"
    assert parse_unit_test(ok, function=True, entry_point="add").test == CallTest("add", (2, [1, 2], "x"), (3, None))
    args_only = "**Test Input:** 5 **Test Output:** 25"
    assert parse_unit_test(args_only, function=True, entry_point="sq").test == CallTest("sq", (5,), 25)
    bad = {
        "no markers": "assert sq(5) == 25",
        "a name, not a literal": "**Test Input:** sq(x) **Test Output:** 25",
        "another function": "**Test Input:** cube(2) **Test Output:** 8",
        "code as output": "**Test Input:** sq(2) **Test Output:** __import__('os').getcwd()",
        "unparsable": "**Test Input:** sq(2 **Test Output:** 4",
        "huge": "**Test Input:** sq(2) **Test Output:** " + "9" * 30000,
        "keywords": "**Test Input:** sq(n=2) **Test Output:** 4",
        "not text": None,
    }
    for why, text in bad.items():
        parsed = parse_unit_test(text, function=True, entry_point="sq")  # type: ignore[arg-type]
        assert parsed.test is None and parsed.error, why


# ----------------------------------------------------------------------------------------- options, sampler
def test_options_refuse_unknown_keys_and_bad_values():
    from corecode.training.baselines.cure import CureOptions

    assert CureOptions.from_mapping({}).max_ground_truth_tests == 8
    with pytest.raises(ConfigError, match="max_gt, nonsense"):
        CureOptions.from_mapping({"nonsense": 1, "max_gt": 2})
    with pytest.raises(ConfigError, match="test_style"):
        CureOptions.from_mapping({"test_style": "json"})


def test_sampler_keeps_a_tasks_code_and_test_rows_in_one_generation_batch():
    from corecode.training.baselines.cure import TaskPairSampler

    rows = list(range(10))  # 5 tasks: rows 2t (code), 2t + 1 (test)
    sampler = TaskPairSampler(rows, mini_repeat_count=3, batch_size=4, repeat_count=1, shuffle=True, seed=1)
    order = list(sampler)
    assert len(order) == len(sampler) == 2 * 4 * 3  # 2 whole chunks of 2 tasks; the 5th task left out
    for start in range(0, len(order), 12):  # one generation batch = 4 prompts x 3
        batch = order[start : start + 12]
        runs = [batch[i : i + 3] for i in range(0, 12, 3)]
        assert all(len(set(run)) == 1 for run in runs), "each prompt G times in a row"
        prompts = [run[0] for run in runs]
        assert prompts[0::2] == [p - 1 for p in prompts[1::2]] and all(p % 2 == 0 for p in prompts[0::2])
    tasks = [i // 2 for i in order[::3]]
    assert len(set(tasks)) == 4
    with pytest.raises(ConfigError, match="even number of prompts"):
        TaskPairSampler(rows, mini_repeat_count=3, batch_size=3)


# ----------------------------------------------------------------------------------------- the reward on the sandbox
def _square_problem() -> Problem:
    return Problem(id="sq", source="test", statement="Return n squared.", entry_point="sq",
                   tests=(AssertTest("assert sq(2) == 4"), AssertTest("assert sq(3) == 9")))


def _reply(test_in: str, test_out: str) -> str:
    return f"**Test Input:**\n```python\n{test_in}\n```\n**Test Output:**\n```python\n{test_out}\n```"


@pytest.fixture(scope="module")
def execute():
    from corecode.rewards import sandbox_executor
    from corecode.sandbox import Sandbox, SandboxConfig

    with Sandbox(SandboxConfig(workers=2)) as sandbox:
        yield sandbox_executor(sandbox, measure=False)


def test_reward_builds_the_matrix_in_the_sandbox(execute, tmp_path):
    """3 programs (right; right only for n <= 2; always 4) and 3 tests (sq(3) == 9, sq(2) == 4, malformed):
    gt = 1, 0.5, 0.5 -> C = {0}, W = {1, 2}; B by hand below. Test rewards: sq(3) passes C and both W programs
    fail it: +1; sq(2) passes C and no W program fails it: 0; the malformed one fails C, no W passes it: -0."""
    from corecode.rewards import ExecutionLog, GroupLayout
    from corecode.training.baselines.cure import CureReward

    problem = _square_problem()
    programs = ["```python\ndef sq(n):\n    return n * n\n```",
                "```python\ndef sq(n):\n    return n * n if n <= 2 else 0\n```",
                "```python\ndef sq(n):\n    return 4\n```"]
    tests = [_reply("sq(3)", "9"), _reply("sq(2)", "4"), "I cannot write a test."]
    prompts = [[{"role": "user", "content": "code"}]] * 3 + [[{"role": "user", "content": "test"}]] * 3
    log = ExecutionLog(tmp_path / "log.jsonl")
    reward = CureReward({"sq": problem}, execute, GroupLayout(num_generations=3), log=log)
    rewards = reward(prompts, programs + tests, ["sq"] * 6, ["code"] * 3 + ["test"] * 3)
    task = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()][-1]
    assert task["stage"] == "cure-task"
    assert task["code_raw"] == [1.0, 0.5, 0.5]
    assert task["matrix"] == [[T, T, F], [F, T, F], [F, T, F]]
    assert task["test_raw"] == [1.0, 0.0, 0.0]
    s = math.sqrt(1 / 18)  # programs: mean 2/3
    assert rewards[:3] == pytest.approx([(1 - 2 / 3) / s, (0.5 - 2 / 3) / s, (0.5 - 2 / 3) / s])
    t = math.sqrt(2 / 9)  # tests: mean 1/3
    assert rewards[3:] == pytest.approx([(2 / 3) / t, (-1 / 3) / t, (-1 / 3) / t])


def test_a_test_after_a_crash_runs_on_its_own(execute, tmp_path):
    """A program that times out on the first generated test must still be judged on the second (B must not
    depend on the order the tests ran in)."""
    from corecode.rewards import ExecutionLog, GroupLayout
    from corecode.training.baselines.cure import CureReward

    problem = _square_problem()
    slow = "```python\ndef sq(n):\n    if n == 5:\n        while True:\n            pass\n    return n * n\n```"
    right = "```python\ndef sq(n):\n    return n * n\n```"
    prompts = [[{"role": "user", "content": "code"}]] * 2 + [[{"role": "user", "content": "test"}]] * 2
    reward = CureReward({"sq": problem}, execute, GroupLayout(num_generations=2), log=ExecutionLog(tmp_path / "l"))
    jobs_seen = []
    original = reward.execute

    def spy(jobs):
        jobs_seen.append([p.id for _, p in jobs])
        return original(jobs)

    reward.execute = spy
    import dataclasses

    fast = dataclasses.replace(problem, time_limit_s=0.5)
    reward.problems = {"sq": fast}
    reward([*prompts], [right, slow, _reply("sq(5)", "25"), _reply("sq(4)", "16")], ["sq"] * 4,
           ["code", "code", "test", "test"])
    assert any(ids and all(i.startswith("sq#generated-") for i in ids) for ids in jobs_seen[1:]), jobs_seen
    task = [json.loads(line) for line in (tmp_path / "l").read_text().splitlines()][-1]
    assert task["matrix"] == [[T, T], [F, T]], "the slow program still passes sq(4) == 16"


def test_reward_refuses_a_batch_that_splits_a_task(execute):
    from corecode.rewards import GroupLayout
    from corecode.training.baselines.cure import CureReward

    reward = CureReward({"sq": _square_problem()}, execute, GroupLayout(num_generations=2))
    with pytest.raises(ValueError, match="not in one generation batch"):
        reward([[{"role": "user", "content": "c"}]] * 2, ["x", "y"], ["sq"] * 2, ["code"] * 2)


# ----------------------------------------------------------------------------------------- pipeline
def test_test_selection_picks_the_program_that_passes_most_generated_tests():
    from corecode.backends.scripted import ScriptedBackend
    from corecode.pipelines import build_pipeline
    from corecode.sandbox import Sandbox, SandboxConfig

    answers = iter(["```python\ndef sq(n):\n    return 4\n```", "```python\ndef sq(n):\n    return n * n\n```",
                    "no code at all"])

    def reply(conversation):
        if "**Test Input:**" in conversation[-1]["content"]:  # the test writer's prompt shows the format
            return _reply("sq(3)", "9")
        return next(answers)

    problem = _square_problem()
    with Sandbox(SandboxConfig(workers=2)) as sandbox:
        pipeline = build_pipeline("test_selection", ScriptedBackend(reply), sandbox=sandbox, programs=3, tests=2)
        solution = pipeline.solve(problem)
    assert "n * n" in solution.program
    assert [c.role for c in solution.trace] == ["coder"] * 3 + ["unit_test_writer"] * 2
    with pytest.raises(ConfigError):
        build_pipeline("test_selection", ScriptedBackend(reply), sandbox=None)


# ----------------------------------------------------------------------------------------- cpu-smoke end to end
def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


SMOKE = ["method=cure", "method_options={test_style: append}", "benchmark=corecode.training.toy:digit_problems",
         "num_generations=8", "per_device_train_batch_size=32", "max_steps=3", "save_steps=2"]


def test_cpu_smoke_trains_logs_true_rewards_and_resumes(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from corecode.training import load_config, preset_path, run_training
    from corecode.training.models import resolve_model

    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    config = load_config(preset_path("cpu-smoke"), [f"output_dir={out}", *SMOKE])
    result = run_training(config)
    initial = load_file(str(Path(resolve_model(config.coder_model, config.seed)) / "model.safetensors"))
    trained = load_file(str(Path(result["coder"]) / "model.safetensors"))
    assert any(not (initial[k] == trained[k]).all() for k in initial), "CURE did not change the policy"

    stage = out / "cure"
    logged = _rows(stage / "executions-rank0.jsonl")
    rows = [r for r in logged if r["stage"] == "cure"]
    tasks = [r for r in logged if r["stage"] == "cure-task"]
    assert sorted({r["step"] for r in rows}) == [0, 1, 2] and len(rows) == 3 * 32
    trained_tests = 0
    for task in tasks:  # recompute every reward from the logged ground-truth rows and matrix B, by hand
        batch = {r["batch_row"]: r for r in rows if r["step"] == task["step"]}
        gt = [sum(g) / len(g) for g in task["ground_truth"]]
        assert gt == task["code_raw"] == [batch[i]["raw_reward"] for i in task["code_rows"]]
        correct = [l for l, g in enumerate(gt) if g == 1.0]
        wrong = [l for l, g in enumerate(gt) if g != 1.0]
        expected_tests = None
        if correct:
            expected_tests = []
            for k in range(len(task["test_rows"])):
                column = [row[k] for row in task["matrix"]]
                if all(column[l] for l in correct):
                    expected_tests.append(sum(not column[l] for l in wrong) / len(wrong) if wrong else 1.0)
                else:
                    expected_tests.append(-sum(column[l] for l in wrong) / len(wrong) if wrong else -1.0)
        assert task["test_raw"] == pytest.approx(expected_tests) if expected_tests else task["test_raw"] is None

        def z(values):
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
            return None if std <= 1e-9 else [(v - mean) / std for v in values]

        for indices, values in ((task["code_rows"], gt), (task["test_rows"], expected_tests)):
            want = None if values is None else z(values)
            got = [batch[i]["reward"] for i in indices]
            assert got == ([None] * len(indices) if want is None else pytest.approx(want))
        trained_tests += expected_tests is not None and z(expected_tests) is not None
        # the logged matrix agrees with the logged tests: a malformed test fails every program
        for k, i in enumerate(task["test_rows"]):
            if batch[i]["test"] is None:
                assert not any(row[k] for row in task["matrix"])
    metrics = [m for m in _rows(stage / "metrics.jsonl") if "cure/code_pass_rate" in m]
    assert len(metrics) == 3
    assert (stage / "validation.jsonl").is_file()

    # resume: drop the last checkpoint and the final model; the rerun continues from checkpoint-2
    shutil.rmtree(stage / "final")
    shutil.rmtree(stage / "checkpoint-3")
    before = len(_rows(stage / "metrics.jsonl"))
    run_training(config)
    new = [m["step"] for m in _rows(stage / "metrics.jsonl")[before:] if "cure/code_pass_rate" in m]
    assert new == [3], "the resumed run should train step 3 only"
    assert (stage / "final" / "model.safetensors").is_file()


def test_layout_and_options_are_checked_before_training(tmp_path, monkeypatch):
    from corecode.training import load_config, preset_path, run_training

    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    base = [f"output_dir={tmp_path / 'run'}", "method=cure", "benchmark=corecode.training.toy:digit_problems"]
    with pytest.raises(ConfigError, match="whole tasks"):
        run_training(load_config(preset_path("cpu-smoke"), [*base, "num_generations=4",
                                                             "per_device_train_batch_size=12"]))
    with pytest.raises(ConfigError, match="no option"):
        run_training(load_config(preset_path("cpu-smoke"), [*base, "method_options={n: 3}"]))


def test_gpu_config_has_the_authors_constants_and_is_launchable(tmp_path):
    """configs/train/qwen7b-cure.yaml: n = 16 programs and 16 tests at temperature 1.0, first 8 ground-truth
    tests, clip 0.2 both sides, KL 0.01, lr 1e-6, 350 steps, full fine-tuning; passes the launch checks of
    its accelerate config's processes, TRL accepts its arguments, and a generation batch holds whole tasks."""
    import re

    import yaml

    from corecode.training import load_config
    from corecode.training.baselines.cure import CureOptions, check_layout
    from corecode.training.grpo import grpo_args
    from corecode.training.runner import check_launch

    repo = Path(__file__).resolve().parents[1]
    path = repo / "configs" / "train" / "qwen7b-cure.yaml"
    config = load_config(path)
    options = CureOptions.from_mapping(config.method_options)
    assert config.method == "cure" and config.num_generations == 16 and config.temperature == 1.0
    assert (config.learning_rate, config.beta, config.epsilon, config.epsilon_high) == (1e-6, 0.01, 0.2, 0.2)
    assert config.max_steps == 350 and not config.use_lora and config.bf16
    assert (options.max_ground_truth_tests, options.test_style) == (8, "chat")
    assert config.benchmark == "genverse-codecontests-train" and config.program_style == "chat"
    accelerate = re.search(r"--config_file (configs/train/accelerate/\S+\.yaml)", path.read_text()).group(1)
    processes = yaml.safe_load((repo / accelerate).read_text())["num_processes"]
    check_launch(config, processes)
    args = grpo_args(config.replace(scale_rewards="none"), tmp_path)
    assert (args.num_generations, args.beta, args.epsilon, args.epsilon_high) == (16, 0.01, 0.2, 0.2)
    assert args.use_vllm and args.gradient_checkpointing and args.scale_rewards == "none"
    rollout = config.per_device_train_batch_size * processes * config.grpo["steps_per_generation"]
    assert rollout == config.per_device_train_batch_size * processes * config.gradient_accumulation_steps == 1024
    check_layout(config, rollout, n_tasks=4500)  # 32 whole tasks per generation batch
    with pytest.raises(ConfigError, match="whole tasks"):
        check_layout(config, rollout - 16, n_tasks=4500)
