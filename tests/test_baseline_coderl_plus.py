"""CodeRL+ (method=coderl_plus): the alignment reward by a hand-labelled table, what a reward-seeking policy
could try against it, traced runs in the real sandbox, the mixed 60/40 batches, and a cpu-smoke run end to
end (tiny model, real sandbox, real GRPOTrainer): weights change, logged rewards equal recomputed ones, the
buffer fills with the policy's failing programs and the batches mix them in, resume restores the buffer.
"""

import json
import shutil
from pathlib import Path

import pytest

import trl  # noqa: F401 - the [train] extra is required (README)

from corecode.errors import ConfigError
from corecode.rewards.alignment import (
    AlignmentSample,
    alignment_inputs,
    alignment_reward,
    parse_prediction,
    plain_json,
    sample_from_trace,
    values_match,
)
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.sandbox.trace import ProgramTrace, first_input
from corecode.training.baselines.coderl_plus import (
    CodeRLPlusOptions,
    MixedPrompts,
    MixedSampler,
    append_prediction,
)
from corecode.training.toy import digit_problems
from corecode.types import AssertTest, CallTest, Problem, StdioTest

STDIO = AlignmentSample(id="a", problem_id="p", program="...", stdin="4\n", output="14\n",
                        variables=(("xs", [0, 1, 4, 9]), ("s", 14), ("name", "ab")))
CALL = AlignmentSample(id="b", problem_id="p", program="...", call="f(3)", output=[7, 2.5], variables=(("b", 2.5),))
NONE = AlignmentSample(id="c", problem_id="p", program="...", call="f()", output=True, variables=())

# (completion, sample, reward) labelled by hand: 0 unreadable, else 0.1 + 0.9 * correct / (1 + |V|)
TABLE = [
    ('{"final_output": "14", "variables": {"xs": [0, 1, 4, 9], "s": 14, "name": "ab"}}', STDIO, 1.0),
    ('I trace it: 0+1+4+9.\n{"final_output": "14\\n", "variables": {}}', STDIO, 0.325),
    ('{"final_output": 14, "variables": {"s": 14.0}}', STDIO, 0.55),
    ('{"final_output": "15", "variables": {"s": "14", "xs": [0, 1, 4], "name": "ab"}}', STDIO, 0.325),
    ('{"final_output": "15", "variables": {"S": 14, "nothing": 1}}', STDIO, 0.1),
    ('```json\n{"final_output": "14", "variables": {"name": "ab"}}\n```', STDIO, 0.55),
    ('{"final_output": [7, 2.5000001], "variables": {"b": 2.5}}', CALL, 1.0),
    ('{"final_output": [7, 2.6], "variables": {"b": 2.5}}', CALL, 0.55),
    ('{"final_output": "[7, 2.5]", "variables": {"b": 2.5}}', CALL, 0.55),
    ('{"final_output": [7.0, 2.5], "variables": {"b": 2}}', CALL, 0.55),
    ('{"final_output": true, "variables": {}}', NONE, 1.0),
    ('{"final_output": 1, "variables": {}}', NONE, 0.1),
    ('{"final_output": "14", "variables": {}}\nthat is my answer', STDIO, 0.0),
    ('{"final_output": "14"}', STDIO, 0.0),
    ('{"final_output": "14", "variables": []}', STDIO, 0.0),
    ('', STDIO, 0.0),
]


@pytest.mark.parametrize("completion,sample,expected", TABLE)
def test_alignment_reward_hand_labelled(completion, sample, expected):
    assert alignment_reward(completion, sample) == pytest.approx(expected, abs=1e-12)


def test_what_a_reward_seeking_policy_might_try_does_not_pay():
    honest = alignment_reward('{"final_output": "14", "variables": {"s": 14}}', STDIO)
    attempts = {
        # several candidates at once: a list or a string never equals a scalar / another string
        "candidates": '{"final_output": ["13", "14", "15"], "variables": {"s": [13, 14, 15]}}',
        "joined": '{"final_output": "13 14 15", "variables": {"s": "14"}}',
        # non-standard JSON and values built to break comparisons or the parser
        "nan": '{"final_output": NaN, "variables": {"s": NaN}}',
        "infinity": '{"final_output": "14", "variables": {"s": Infinity}}',
        "huge int": '{"final_output": "14", "variables": {"s": 1' + "0" * 5000 + '}}',
        "deep": '{"final_output": "14", "variables": {"s": ' + "[" * 40 + "]" * 40 + '}}',
        "duplicate keys": '{"final_output": "13", "final_output": "14", "variables": {"s": 14}}',
        "long line": '{"final_output": "14", "variables": {"s": 14, "pad": "' + "x" * 30_000 + '"}}',
        "extra key": '{"final_output": "14", "variables": {"s": 14}, "also": {"final_output": "15"}}',
        # bools are not numbers, strings are not numbers
        "true for 1": '{"final_output": "14", "variables": {"s": true}}',
    }
    for name, text in attempts.items():
        assert alignment_reward(text, STDIO) < honest, name
    # a 1e308 float or a huge int against a float does not crash the comparison
    assert not values_match(1e308, 2.5) and not values_match(10**400, 2.5)
    # padding the variables with extra guesses changes nothing
    padded = '{"final_output": "14", "variables": {"s": 14, "t": 1, "u": 2, "v": 3, "w": 4, "x": 5}}'
    assert alignment_reward(padded, STDIO) == honest
    # only the last line counts: an earlier perfect line does not help
    two = '{"final_output": "14", "variables": {"xs": [0, 1, 4, 9], "s": 14, "name": "ab"}}\n{"final_output": "0", "variables": {}}'
    assert alignment_reward(two, STDIO) == pytest.approx(0.1)


def test_the_alignment_prompt_shows_the_program_and_input_not_the_statement_or_answers():
    from corecode.agents import TaskView, render_prompt

    problem = Problem(id="p", source="t", statement="Print the sum of squares below n. Example: 4 -> 14",
                      tests=(StdioTest("4\n", "14\n"),))
    sample = AlignmentSample(id="a", problem_id="p", program="n = int(input())\nprint(sum(i*i for i in range(n)))\n",
                             stdin="4\n", output="99\n", variables=(("n", 4),))
    user = render_prompt("execution_predictor", TaskView.from_problem(problem), **alignment_inputs(sample))[1]["content"]
    assert sample.program in user and "4\n" in user and "`n`" in user
    assert "Example" not in user and "14" not in user and "99" not in user


def test_plain_json_and_samples_from_traces():
    assert plain_json((1, {2: {3}}, b"x", float("inf"), True)) == [1, {"2": [3]}, "b'x'", "inf", True]
    assert plain_json({frozenset({2, 1}), 0}) in ([0, [1, 2]],)
    ran = ProgramTrace(error=None, stdout="5\n", variables=(("t", (1, 2)),))
    sample = sample_from_trace("i", "p", "prog", "3\n", None, ran, capture_bytes=2048, step=7)
    assert sample.output == "5\n" and sample.variables == (("t", [1, 2]),) and sample.step == 7
    assert AlignmentSample.from_dict(json.loads(json.dumps(sample.to_dict()))) == sample
    # an exception mid-way still leaves an output and variables to predict
    assert sample_from_trace("i", "p", "prog", "", None, ProgramTrace(error="ValueError", stdout="1\n"), 2048)
    for bad in (ProgramTrace(error="timeout", stdout="1\n"), ProgramTrace(error=None, stdout="x" * 2048),
                ProgramTrace(error=None, stdout="")):
        assert sample_from_trace("i", "p", "prog", "", None, bad, 2048) is None
    assert sample_from_trace("i", "p", "prog", "", "f()", ProgramTrace(error=None, stdout="", call_error="ValueError"), 2048) is None
    value = sample_from_trace("i", "p", "prog", "", "f()", ProgramTrace(error=None, stdout="", returned=True, value=None), 2048)
    assert value is not None and value.output is None and value.output_kind == "value"


def test_first_input_is_the_input_never_the_expected_value():
    def problem(test, entry="f"):
        return Problem(id="p", source="t", statement="s", tests=(test,), entry_point=entry)

    assert first_input(problem(StdioTest("1 2\n", "3\n"))) == ("1 2\n", None)
    assert first_input(problem(CallTest("f", (1, [2, "x"]), 99999))) == ("", "f(1, [2, 'x'])")
    assert first_input(problem(CallTest("f", (float("nan"),), 1))) is None
    assert first_input(problem(AssertTest("assert f(3) == 12345"))) == ("", "f(3)")
    assert first_input(problem(AssertTest("assert 12345 == f(3, 'a')"))) == ("", "f(3, 'a')")
    assert first_input(problem(AssertTest("assert math.isclose(f(2), 4.5)"))) == ("", "f(2)")
    assert first_input(problem(AssertTest("assert isinstance(f(), int)"))) == ("", "f()")
    assert first_input(problem(AssertTest("assert g(3) == 9"))) is None


def test_traced_runs_in_the_real_sandbox():
    program = ("import sys\nn = int(input())\nxs = [i * i for i in range(n)]\ns = sum(xs)\nprint(s)\n"
               "def helper():\n    return 1\nclass Node:\n    pass\nnode = Node()\nname = 'ab'\n_hidden = 5\n"
               "class Liar(int):\n    def __eq__(self, other):\n        return True\n    def __repr__(self):\n        return '99'\n"
               "liar = Liar(7)\n")
    with Sandbox(SandboxConfig(workers=1)) as sb:
        trace = sb.trace(program, stdin="4\n")
        # modules, functions, classes, program objects and _names are not simple; subclasses read as their base
        assert trace.error is None and trace.stdout == "14\n"
        assert trace.variables == (("s", 14), ("name", "ab"), ("liar", 7))
        assert type(trace.variables[-1][1]) is int
        call = sb.trace("a = 1\nb = 2.5\ndef f(k):\n    global a\n    a = k\n    return [a, b, (k,)]\n", call="f(3)",
                        max_variables=2)
        assert call.returned and call.value == [3, 2.5, (3,)] and call.variables == (("a", 3), ("b", 2.5))
        failed = sb.trace("x = 3\nprint('half')\nraise ValueError('no')\n")
        assert failed.error == "ValueError" and failed.stdout == "half\n" and failed.variables == (("x", 3),)
        raised = sb.trace("def f():\n    return 1 / 0\n", call="f()")
        assert not raised.returned and raised.call_error == "ZeroDivisionError"
        assert sb.trace("x = 1\nwhile True:\n    pass\n", time_limit_s=0.3).error == "timeout"
        big = sb.trace("x = 'a' * 100000\ny = list(range(5))\n")
        assert big.variables == (("y", [0, 1, 2, 3, 4]),), "a value above 2 KiB is not simple"
        # the toy problems' first input: their traced runs give the alignment samples of the smoke run
        toy = digit_problems()[0]
        stdin, expr = first_input(toy)
        got = sb.trace("def f():\n    return 4\n", stdin=stdin, call=expr)
        assert expr == "f()" and got.returned and got.value == 4


def test_options_are_checked_and_unknown_keys_refused():
    assert CodeRLPlusOptions.from_mapping({}).align_fraction == 0.4
    with pytest.raises(ConfigError, match="bogus"):
        CodeRLPlusOptions.from_mapping({"bogus": 1, "buffer_size": 5})
    for bad in ({"align_fraction": 1.0}, {"buffer_size": 0}, {"prediction_style": "xml"}, {"trace_time_limit_s": 0}):
        with pytest.raises(ConfigError):
            CodeRLPlusOptions.from_mapping(bad)
    with pytest.raises(ConfigError, match="rounds to no alignment"):
        MixedPrompts(digit_problems(), prompts_per_batch=1, align_fraction=0.4, buffer_size=10)


def _sample(i, problem_id="digit-3"):
    return AlignmentSample(id=f"s{i}", problem_id=problem_id, program=f"def f():\n    return {i}", call="f()",
                           output=i)


def test_batches_mix_code_and_the_newest_alignment_samples():
    problems = digit_problems()  # 4 problems; 5 prompts per batch: 2 alignment + 3 code
    prompts = MixedPrompts(problems, prompts_per_batch=5, align_fraction=0.4, buffer_size=4, seed=1)
    sampler = MixedSampler(prompts, mini_repeat_count=3, repeat_count=2)
    order = list(sampler)
    assert len(order) == len(sampler) == prompts.slots * 3 * 2 == 60
    assert order[:30] == [s for s in range(5) for _ in range(3)] * 2  # TRL's layout: G in a row, block repeated
    dataset = prompts.dataset()
    first = [dataset[s] for s in range(5)]
    assert [r["task"] for r in first] == ["code"] * 5, "an empty buffer: code prompts only"
    # every code problem once per epoch (the last batch padded)
    code_ids = [r["problem_id"] for r in first]
    prompts.add([_sample(i) for i in range(6)])  # buffer_size 4: samples 0 and 1 dropped
    assert [s.id for s in prompts.buffer] == ["s2", "s3", "s4", "s5"]
    second = [dataset[s] for s in range(5, 10)]
    assert [dataset[s] for s in range(5, 10)] == second, "a slot always resolves to the same row"
    align = [r for r in second if r["task"] == "align"]
    assert len(align) == 2 and [json.loads(r["sample"])["id"] for r in align] == ["s5", "s4"]
    assert {r["problem_id"] for r in first + second if r["task"] == "code"} | set(code_ids) == {p.id for p in problems}
    assert "def f():\n    return 5" in align[0]["prompt"][-1]["content"]
    # another process with the same buffer resolves the same rows, whichever slot it fetches first
    twin = MixedPrompts(problems, prompts_per_batch=5, align_fraction=0.4, buffer_size=4, seed=1)
    twin_data = twin.dataset()
    [twin_data[s] for s in range(5)]
    twin.add([_sample(i) for i in range(6)])
    assert [twin_data[s] for s in (9, 8, 7, 6, 5)] == second[::-1]
    assert [s.id for s in prompts.buffer] == ["s2", "s3"], "used samples leave the buffer"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _state(directory) -> dict:
    from safetensors.torch import load_file

    return load_file(str(Path(directory) / "model.safetensors"))


SMOKE = {
    "method": "coderl_plus", "coder_model": "tiny:llama-char", "planner_model": "tiny:llama-char",
    "benchmark": "corecode.training.toy:digit_problems", "validation_limit": 0, "num_generations": 4,
    "per_device_train_batch_size": 20, "max_steps": 4, "save_steps": 2, "learning_rate": 0.01, "beta": 0.0,
    "max_completion_length": 1, "program_style": "append", "use_lora": False, "sandbox_workers": 2,
    "report_to": ["none"], "log_completions": False, "grpo": {"gradient_checkpointing": False},
    "method_options": {"prediction_style": "append"},
}


def test_cpu_smoke_trains_mixes_alignment_prompts_logs_true_rewards_and_resumes(tmp_path, monkeypatch):
    from corecode.training import load_config, run_training
    from corecode.training.models import resolve_model

    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    config = load_config(None, [f"output_dir={out}"], base=SMOKE)
    result = run_training(config)
    stage = out / "coderl_plus"
    initial, trained = _state(resolve_model(config.coder_model, config.seed)), _state(result["coder"])
    assert trained.keys() == initial.keys()
    assert any(not (initial[k] == trained[k]).all() for k in initial), "GRPO changed no parameter"

    rows = _rows(stage / "executions-rank0.jsonl")
    metrics = {m["step"]: m for m in _rows(stage / "metrics.jsonl") if "reward" in m}
    assert sorted({r["step"] for r in rows}) == [0, 1, 2, 3]
    problems = {p.id: p for p in digit_problems()}
    with Sandbox(SandboxConfig(workers=2)) as sb:
        # code rows: 1 iff every test passes, recomputed by running the logged programs again
        code = [r for r in rows if r["task"] == "code"]
        distinct = sorted({(r["problem_id"], r["program"]) for r in code})
        passed = dict(zip(distinct, (res.passed for res in sb.run_batch([(prog, problems[pid]) for pid, prog in distinct]))))
        for r in code:
            assert r["program"] == problems[r["problem_id"]].prompt + r["completion"]
            assert r["reward"] == float(passed[(r["problem_id"], r["program"])])
        # alignment rows: the reward recomputed from the logged completion and sample
        align = [r for r in rows if r["task"] == "align"]
        assert align, "no alignment prompt reached a batch"
        for r in align:
            sample = AlignmentSample.from_dict(r["sample"])
            assert r["reward"] == alignment_reward(append_prediction(r["completion"]), sample)
        # each sample is a failing program of an earlier step, and its recorded output is the real one
        failing = {(r["problem_id"], r["program"], r["step"]) for r in code if r["reward"] == 0.0}
        for r in align:
            s = r["sample"]
            assert any((s["problem_id"], s["program"], step) in failing for step in range(r["step"])), s
        for s in {json.dumps(r["sample"], sort_keys=True): r["sample"] for r in align}.values():
            again = sb.trace(s["program"], stdin=s["stdin"], call=s["call"])
            assert again.returned and plain_json(again.value) == s["output"]
    for step in range(4):
        step_rows = [r for r in rows if r["step"] == step]
        assert len(step_rows) == 20
        shares = sum(r["task"] == "align" for r in step_rows) / 20
        # accelerate reads one batch ahead: samples of batch b's programs reach batch b + 2
        assert shares == (0.0 if step < 2 else 0.4), (step, shares)
        mean = sum(r["reward"] for r in step_rows) / len(step_rows)
        assert metrics[step + 1]["rewards/coderl_plus_reward/mean"] == pytest.approx(mean, abs=1e-5)
    logged_samples = _rows(stage / "alignment_samples.jsonl")
    assert {json.dumps(r["sample"], sort_keys=True) for r in align} <= {json.dumps(s, sort_keys=True) for s in logged_samples}

    # resume from checkpoint-2: the buffer comes back with it, so the first resumed batch mixes at once
    saved_buffer = _rows(stage / "checkpoint-2" / "alignment_buffer.jsonl")
    assert saved_buffer, "the checkpoint holds the alignment buffer"
    shutil.rmtree(stage / "final")
    shutil.rmtree(stage / "checkpoint-4")
    logged_before, rows_before = len(_rows(stage / "metrics.jsonl")), len(rows)
    run_training(config)
    new_metrics = _rows(stage / "metrics.jsonl")[logged_before:]
    assert [m["step"] for m in new_metrics if "reward" in m] == [3, 4], "resumed run should train steps 3 and 4"
    resumed = _rows(stage / "executions-rank0.jsonl")[rows_before:]
    first = [r for r in resumed if r["step"] == 2]
    assert sum(r["task"] == "align" for r in first) == 8
    newest = {s["id"] for s in saved_buffer[-2:]}
    assert {r["sample"]["id"] for r in first if r["task"] == "align"} == newest
    assert (stage / "final" / "model.safetensors").is_file()


def test_gpu_config_has_the_authors_constants_and_is_launchable(tmp_path):
    """configs/train/qwen7b-coderl-plus.yaml: G = 8, KL 0.001, lr 1e-6, clip 0.2 both sides, 40 % alignment
    prompts from a buffer of 20,000, 3 variables; binary reward needs no LoRA; passes the launch checks of its
    accelerate config's processes, TRL accepts its arguments, and a generation batch mixes 205 of 512 prompts."""
    import re

    import yaml

    from corecode.training import load_config
    from corecode.training.grpo import grpo_args
    from corecode.training.runner import check_launch

    repo = Path(__file__).resolve().parents[1]
    path = repo / "configs" / "train" / "qwen7b-coderl-plus.yaml"
    config = load_config(path)
    options = CodeRLPlusOptions.from_mapping(config.method_options)
    assert config.method == "coderl_plus" and config.num_generations == 8
    assert (config.learning_rate, config.beta, config.epsilon, config.epsilon_high) == (1e-6, 0.001, 0.2, 0.2)
    assert (options.align_fraction, options.buffer_size, options.max_variables) == (0.4, 20_000, 3)
    assert options.prediction_style == "json" and config.program_style == "chat" and config.bf16
    assert config.benchmark == "genverse-codecontests-train"
    accelerate = re.search(r"--config_file (configs/train/accelerate/\S+\.yaml)", path.read_text()).group(1)
    processes = yaml.safe_load((repo / accelerate).read_text())["num_processes"]
    check_launch(config, processes)
    args = grpo_args(config, tmp_path)
    assert (args.num_generations, args.beta, args.epsilon, args.epsilon_high) == (8, 0.001, 0.2, 0.2)
    assert args.use_vllm and args.gradient_checkpointing
    assert config.per_device_train_batch_size * processes * config.gradient_accumulation_steps == 128 * 8
    rollout = config.per_device_train_batch_size * processes * config.grpo["steps_per_generation"]
    assert rollout == 512 * 8
    mixed = MixedPrompts(digit_problems(), rollout // 8, options.align_fraction, options.buffer_size)
    assert (mixed.per_batch, mixed.aligned) == (512, 205)


def test_reward_scores_each_row_by_its_own_task_and_buffers_distinct_failing_programs():
    from types import SimpleNamespace

    from corecode.rewards import GroupLayout
    from corecode.training.baselines.coderl_plus import CodeRLPlusReward, alignment_row

    problems = digit_problems()
    prompts = MixedPrompts(problems, prompts_per_batch=5, align_fraction=0.4, buffer_size=100)
    ran, traced = [], []

    def execute(jobs):
        ran.extend(program for program, _ in jobs)
        return [None if program.endswith("x") else SimpleNamespace(passed=program.endswith("3")) for program, _ in jobs]

    def trace(program, stdin, call):
        traced.append((program, stdin, call))
        return ProgramTrace(error=None, stdout="", returned=True, value=int(program[-1]))

    reward = CodeRLPlusReward(prompts, execute, trace, GroupLayout(num_generations=2),
                              CodeRLPlusOptions(prediction_style="append"), capture_bytes=2048,
                              build_program=lambda problem, text: problem.prompt + text)
    code = prompts.rows[[p.id for p in problems].index("digit-3")]
    sample = _sample(4)
    align = alignment_row(sample, problems[0])
    rows = [code, code, code, code, align, align]
    completions = ["3", "4", "4", "x", "4", "5"]
    got = reward([r["prompt"] for r in rows], completions, [r["problem_id"] for r in rows], [r["task"] for r in rows],
                 [r["sample"] for r in rows], trainer_state=SimpleNamespace(global_step=7))
    assert got == [1.0, 0.0, 0.0, None, 1.0, 0.1]  # "5": readable, wrong
    # only code rows run; the one distinct failing program (twice "4") is traced once on f(); the sandbox
    # failure ("x") and the passing program make no sample
    assert ran == [problems[0].prompt + c for c in "344x"]
    assert traced == [(problems[0].prompt + "4", "", "f()")]
    assert [(s.id, s.output, s.step) for s in prompts.buffer] == [("7-0-1", 4, 7)]
    # a batch whose rows are not G-row groups of one prompt is refused, as TRL's layout requires
    with pytest.raises(ValueError, match="one prompt"):
        reward([code["prompt"], align["prompt"]], ["3", "4"], ["digit-3", "digit-3"], ["code", "align"],
               ["", align["sample"]])


def test_a_program_cannot_change_how_its_trace_is_recorded():
    hostile = ("import builtins, marshal\nbuiltins.eval = lambda *a, **k: 42\nmarshal.dumps = lambda *a, **k: b'\\xff'\n"
               "builtins.type = lambda *a: int\nx = 5\ndef f():\n    return 'real'\n")
    with Sandbox(SandboxConfig(workers=1)) as sb:
        trace = sb.trace(hostile, call="f()")
        assert trace.returned and trace.value == "real" and trace.variables == (("x", 5),)
        # garbage on the result channel: the run is corrupt, so no sample comes of it
        corrupt = sb.trace("import os\nos.write(3, b'garbage' * 10)\nx = 1\n")
        assert corrupt.error == "runtime_error" and corrupt.variables == ()
        assert sample_from_trace("i", "p", "prog", "", None, corrupt, 2048) is None
        # a cycle is not plain data
        assert sb.trace("x = [1]\nx.append(x)\ny = 2\n").variables == (("y", 2),)
