"""The stage-1 learning check's pieces: disjoint toy problems, a frozen Coder that reads the plan (run in the
real sandbox), and the validation probe's intervals and start-vs-now comparison."""

import pytest

from corecode.agents import TaskView, render_prompt
from corecode.backends import SamplingConfig
from corecode.backends.scripted import ScriptedBackend
from corecode.rewards.trl_rewards import program_for, sandbox_executor
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.training.toy import number_problems, plan_reading_coder, plan_reading_reply


def test_training_and_validation_problems_are_disjoint():
    train, validation = number_problems("train"), number_problems("validation")
    assert len(train) == len(validation) == 20
    assert not {p.id for p in train} & {p.id for p in validation}
    assert not {p.statement for p in train} & {p.statement for p in validation}
    with pytest.raises(ValueError):
        number_problems("test")


def _pass_rates(problems, plan):
    prompts = [render_prompt("coder", TaskView.from_problem(p)) if plan is None
               else render_prompt("coder_with_plan", TaskView.from_problem(p), plan=plan) for p in problems]
    answers = [group[0].text for group in plan_reading_coder().generate(prompts, None)]
    with Sandbox(SandboxConfig(workers=2)) as sandbox:
        results = sandbox_executor(sandbox)([(program_for(p, a), p) for p, a in zip(problems, answers)])
    return [r.n_passed / r.n_tests for r in results]


def test_what_the_plan_says_decides_the_programs_in_the_real_sandbox():
    problems = number_problems("validation")[:4]  # K = 30, 31, 32, 33
    assert _pass_rates(problems, None) == [1.0, 0.5, 1.0, 0.5]  # alone: even K right, -1 otherwise
    assert _pass_rates(problems, "4 steps") == [1.0] * 4  # a digit: the output is a number
    assert _pass_rates(problems, "print it") == [0.0] * 4  # a letter: a string, fails both tests
    assert _pass_rates(problems, ". whatever") == [1.0, 0.5, 1.0, 0.5]  # no guidance: as alone
    # the same plan text on different problems gives each problem its own number, not a fixed answer
    assert "return 31" in plan_reading_reply(render_prompt("coder_with_plan", TaskView.from_problem(problems[1]), plan="9"))


def _callbacks():
    pytest.importorskip("transformers")  # the callbacks are transformers TrainerCallbacks
    from corecode.training import callbacks

    return callbacks


class _Result:
    def __init__(self, passed):
        self.passed = passed


def _probe(plans, calls):
    problems = number_problems("validation")

    def coder(model):
        def reply(conversation):
            calls.append(conversation)
            return plan_reading_reply(conversation)

        return ScriptedBackend(reply)

    def execute(jobs):  # pass iff the program returns the problem's own int
        return [_Result(f"return {p.id.split('-')[1]}\n" in prog) for prog, p in jobs]

    return _callbacks().CollaborationProbe(problems, plans=lambda model: [plans[0]] * len(problems), coder=coder, execute=execute,
                              build_program=program_for, coder_sampling=SamplingConfig(temperature=0.0),
                              check_plan_format=False, fixed_alone=True)


def test_probe_rows_carry_intervals_flips_and_reuse_the_frozen_coders_alone_programs():
    calls, plans = [], ["x"]
    probe = _probe(plans, calls)
    bad = probe.measure(None)
    assert bad["pass1_alone"] == 0.5 and bad["pass1_with"] == 0.0 and bad["cg_points"] == -50.0
    assert bad["cg_flips"] == {"with_better": 0, "alone_better": 10} and bad["n_problems"] == 20
    assert bad["cg_ci"][1] < 0  # every flip goes one way: the paired interval excludes 0
    assert bad["per_problem"]["number-30"] == [1, 0] and bad["per_problem"]["number-31"] == [0, 0]
    assert len(calls) == 40
    plans[0] = "7"
    good = probe.measure(None)
    assert len(calls) == 60  # the second validation asks the frozen Coder only for the with-plan programs
    assert good["pass1_alone"] == 0.5 and good["cg_points"] == 50.0 and good["cg_ci"][0] > 0
    change = _callbacks().compare_validations(bad, good)
    assert change["cg"]["diff"] == 100.0 and change["cg"]["up"] == 20 and change["cg"]["down"] == 0
    assert change["pass1_alone"]["diff"] == 0.0 and change["pass1_alone"]["ci"] == [0.0, 0.0]


def test_validation_callback_writes_the_change_since_the_stage_start(tmp_path):
    plans = ["x"]
    callback = _callbacks().ValidationCallback(_probe(plans, []), every=0, stage_dir=tmp_path, stage="planner")

    class State:
        is_world_process_zero, global_step = True, 0

    callback.on_train_begin(None, State, None, model=None)
    plans[0], State.global_step = ".", 5
    callback.on_train_end(None, State, None, model=None)
    first, last = callback.history
    assert "vs_start" not in first and last["vs_start"]["step"] == 0
    assert last["vs_start"]["cg"]["diff"] == 50.0 and last["vs_start"]["cg"]["up"] == 10
    assert (tmp_path / "validation.jsonl").read_text().count("\n") == 2


def test_a_held_out_set_can_join_splits():
    from corecode.training.data import load_problems

    both = load_problems("corecode.training.toy:number_problems", "validation+train")
    assert [p.id for p in both][:2] == ["number-30", "number-31"] and len(both) == 40
    picked = load_problems("corecode.training.toy:number_problems", "validation+train", ids=["number-10", "number-49"])
    assert [p.id for p in picked] == ["number-49", "number-10"]  # the order of the joined splits
    assert len(load_problems("corecode.training.toy:number_problems", "validation+train", limit=25)) == 25


def test_a_resumed_stage_does_not_measure_its_starting_step_again_and_compares_with_the_first_row(tmp_path):
    callbacks = _callbacks()
    plans = ["x"]

    class State:
        is_world_process_zero, global_step = True, 0

    first = callbacks.ValidationCallback(_probe(plans, []), every=0, stage_dir=tmp_path, stage="planner")
    first.on_train_begin(None, State, None, model=None)
    calls = []
    resumed = callbacks.ValidationCallback(_probe(plans, calls), every=0, stage_dir=tmp_path, stage="planner")
    resumed.on_train_begin(None, State, None, model=None)  # a restart before the first step
    assert calls == [] and resumed.history == []
    State.global_step = 3  # resumed from checkpoint-3: no extra validation at the resume point either
    resumed.on_train_begin(None, State, None, model=None)
    assert calls == [] and resumed.history == []
    plans[0], State.global_step = "3", 4
    resumed.on_train_end(None, State, None, model=None)
    assert resumed.history[0]["vs_start"]["step"] == 0 and resumed.history[0]["vs_start"]["cg"]["diff"] == 100.0
    # the frozen Coder's alone programs come from the first run's row: only the 20 with-plan programs are new
    assert len(calls) == 20 and resumed.history[0]["pass1_alone"] == 0.5


def test_a_restart_takes_the_alone_outcomes_only_from_a_row_of_the_same_problems(tmp_path):
    callbacks = _callbacks()
    probe = _probe(["x"], [])
    row = probe.measure(None)
    fresh = _probe(["x"], [])
    assert fresh.reuse_alone(row) and fresh._alone == probe._alone
    other = dict(row, per_problem={**row["per_problem"], "number-99": [1, 1]})  # a problem not validated now
    assert not _probe(["x"], []).reuse_alone(other)
    partial = dict(row, per_problem={k: v for k, v in row["per_problem"].items() if k != "number-30"})
    again = _probe(["x"], [])
    assert again.reuse_alone(partial) and again._alone[0] is None and again._alone[1:] == probe._alone[1:]
    again.fixed_alone = False  # a Coder that trains (stage 2) is measured anew
    again._alone = None
    assert not again.reuse_alone(row) and again._alone is None


def test_what_the_recalled_problem_says_decides_the_programs_of_the_retrieval_toy():
    """The retrieval learning check's frozen path: MapCoder's parse of the Retrieval agent's answer, the
    exemplar planner's plan from the recalled problem, the Coder's program, scored in the real sandbox."""
    from corecode.training.retrieval import retrieval_writer
    from corecode.training.toy import exemplar_reading_backend

    problems = number_problems("validation")[:4]  # K = 30, 31, 32, 33
    write = retrieval_writer(exemplar_reading_backend(), SamplingConfig(), SamplingConfig(), samples=1, k=1)

    def rates(answer):
        programs = [group[0] for group in write([answer] * len(problems), problems)]
        with Sandbox(SandboxConfig(workers=2)) as sandbox:
            results = sandbox_executor(sandbox)([(program_for(p, a), p) for p, a in zip(problems, programs)])
        return [r.n_passed / r.n_tests for r in results]

    assert rates("Problem 1\n7") == [1.0, 1.0, 1.0, 1.0]  # a digit: the Coder returns the number
    assert rates("Problem 1\nq") == [0.0, 0.0, 0.0, 0.0]  # a letter: a string, both tests fail
    # nothing parsed ("## Problem N" missing): no exemplar, the Coder alone (even K right, odd K half credit)
    assert rates("7") == rates("") == [1.0, 0.5, 1.0, 0.5]
