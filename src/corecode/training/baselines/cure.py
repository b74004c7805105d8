"""CURE (Gen-Verse/CURE, arXiv 2506.03136; ../shared/METHOD.md section 6): one model as coder and unit-test writer.

Per task, the policy writes n programs (the ``coder`` prompt) and n unit tests (the ``unit_test_writer``
prompt, one test per answer in the ``**Test Input:** / **Test Output:**`` format of
:mod:`corecode.parsing.unit_tests`), n = ``num_generations``, at the policy temperature (authors: 16 and
1.0). Every program runs in the sandbox on the task's ground-truth tests (the first
``max_ground_truth_tests``) and on every well-formed generated test: the matrix B. The rewards are those of
:mod:`corecode.rewards.cure` (program: ground-truth pass rate; test: how it separates the correct programs
C from the wrong ones W), each z-scored per task; a list with zero std is dropped (``None``: TRL leaves
the rows out of the group and gives them zero advantage).

How this sits on TRL's GRPOTrainer:

* the dataset has two rows per task, code then test; :class:`TaskPairSampler` (TRL's RepeatSampler with
  tasks instead of prompts) yields both rows of a task, each ``num_generations`` times, inside one
  generation batch, so one reward call sees a task's programs and tests together;
* :class:`CureReward`, the one reward callable, gathers every process's rows (like the group-aware rewards
  of :mod:`corecode.rewards.trl_rewards`), splits the sandbox jobs of the whole batch over the processes,
  gathers the results, builds B per task and returns each process's slice;
* the reward returned IS the advantage (already z-scored per task), so TRL's own scaling is off
  (``scale_rewards: none``: advantage = reward - group mean = reward).

Output: ``output_dir/cure/`` with checkpoint-N/, final/, executions-rank<r>.jsonl (one line per row: what
its reward came from; rank 0 also one ``cure-task`` line per task with its ground-truth rows and matrix B),
metrics.jsonl, validation.jsonl (pass@1 of the policy as coder), curves.png.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from trl.trainer.utils import RepeatSampler

from corecode.agents import TaskView, render_prompt
from corecode.errors import ConfigError
from corecode.parsing.unit_tests import INPUT_MARKER, OUTPUT_MARKER, GeneratedTest, parse_unit_test
from corecode.rewards import ExecutionLog, GroupLayout
from corecode.rewards.cure import cure_task_rewards
from corecode.rewards.trl_rewards import Executor, completion_text, prompt_keys
from corecode.training.baselines import check_option_names
from corecode.types import IOMode, Problem, Status, TestCase

__all__ = ["CureOptions", "cure_rows", "CureReward", "TaskPairSampler", "generated_test_of", "train"]

STAGE = "cure"


def _h(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class CureOptions:
    """``method_options`` of ``method=cure``."""

    max_ground_truth_tests: int = field(
        default=8, metadata=_h("ground-truth tests per task that score programs and split them into C / W (authors: 8)")
    )
    test_style: str = field(
        default="chat",
        metadata=_h("how a test-writer completion becomes a test: chat (the **Test Input:** / **Test Output:** "
                    "format) | append (the completion is the expected value of the entry point called with no "
                    "arguments: completion-style tiny models on the toy problems)"),
    )

    def __post_init__(self) -> None:
        if self.max_ground_truth_tests < 1:
            raise ConfigError(f"cure max_ground_truth_tests must be >= 1, got {self.max_ground_truth_tests}")
        if self.test_style not in ("chat", "append"):
            raise ConfigError(f"cure test_style must be chat or append, got {self.test_style!r}")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> "CureOptions":
        check_option_names("cure", cls, options)
        return cls(**dict(options))


def generated_test_of(problem: Problem, completion: str, style: str = "chat") -> GeneratedTest:
    """The test a test-writer completion stands for (malformed: ``test`` None)."""
    function = problem.io_mode is IOMode.FUNCTION
    if style == "append":
        if not function or not problem.entry_point:
            return GeneratedTest(None, "test_style append needs a function problem with an entry point")
        completion = f"{INPUT_MARKER} {problem.entry_point}()\n{OUTPUT_MARKER} {completion}"
    return parse_unit_test(completion, function=function, entry_point=problem.entry_point)


def cure_rows(problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """Two rows per task, code then test: row 2t is task t's coder prompt, row 2t+1 its test-writer prompt."""
    rows = []
    for p in problems:
        view = TaskView.from_problem(p)
        rows.append({"prompt": render_prompt("coder", view), "problem_id": p.id, "cure_role": "code"})
        rows.append({"prompt": render_prompt("unit_test_writer", view), "problem_id": p.id, "cure_role": "test"})
    return rows


# ---------------------------------------------------------------------------------------------- sampler
class TaskPairSampler(RepeatSampler):
    """TRL's RepeatSampler over tasks: each generation batch (``batch_size`` prompts) holds ``batch_size / 2``
    whole tasks, and for each its code row and its test row, each ``mini_repeat_count`` (G) times in a row
    (every run of G rows is one prompt, as TRL's grouping and :class:`~corecode.rewards.GroupLayout` expect).
    Tasks are shuffled with the sampler's seeded generator; an incomplete last chunk is left out, as TRL does.
    """

    def __init__(self, data_source, mini_repeat_count, batch_size=2, repeat_count=1, shuffle=True, seed=None):
        if len(data_source) % 2:
            raise ValueError(f"a CURE dataset has two rows per task, got {len(data_source)} rows")
        if batch_size % 2:
            raise ConfigError(
                f"CURE needs an even number of prompts per generation batch (a task's code and test prompts); got "
                f"{batch_size}: make per_device_train_batch_size x processes x steps_per_generation a multiple of "
                "2 x num_generations")
        super().__init__(data_source, mini_repeat_count, batch_size, repeat_count, shuffle, seed)

    def __iter__(self):
        tasks = self.num_samples // 2
        order = torch.randperm(tasks, generator=self.generator).tolist() if self.shuffle else list(range(tasks))
        per_chunk = self.batch_size // 2
        chunks = [order[i : i + per_chunk] for i in range(0, tasks, per_chunk)]
        for chunk in (c for c in chunks if len(c) == per_chunk):
            for _ in range(self.repeat_count):
                for task in chunk:
                    for index in (2 * task, 2 * task + 1):
                        for _ in range(self.mini_repeat_count):
                            yield index

    def __len__(self) -> int:
        per_chunk = self.batch_size // 2
        tasks = (self.num_samples // 2) // per_chunk * per_chunk
        return tasks * 2 * self.mini_repeat_count * self.repeat_count


# ---------------------------------------------------------------------------------------------- reward
@dataclass
class _Task:
    problem: Problem
    code_rows: list[int] = field(default_factory=list)  # indices into the gathered batch
    test_rows: list[int] = field(default_factory=list)


def _test_key(test: TestCase) -> str:
    """Which generated tests are the same test. Not the TestCase itself: a CallTest holding a list (an
    argument or the expected value, as most function tests do) is unhashable, and == would also merge
    tests that differ only in 1 / 1.0 / True (a program can tell them apart). The repr of the fields tells
    them apart and is the same every time for one test (the parser checked that the values have one)."""
    return repr((type(test).__name__,) + tuple(getattr(test, f.name) for f in dataclasses.fields(test)))


def _passes(result: Any) -> list[bool] | None:
    return None if result is None else [t.passed for t in sorted(result.tests, key=lambda t: t.index)] + \
        [False] * (result.n_tests - len(result.tests))


class CureReward:
    """CURE's reward for every row of a generation batch (code rows and test rows of whole tasks)."""

    __name__ = "cure_reward"  # TRL logs rewards/cure_reward/mean (the z-scores: about 0; see cure/* metrics)

    def __init__(
        self,
        problems: Mapping[str, Problem],
        execute: Executor,
        layout: GroupLayout,
        options: CureOptions = CureOptions(),
        log: ExecutionLog | None = None,
        build_program: Callable[[Problem, str], str] | None = None,
        num_processes: int = 1,
    ):
        from corecode.rewards.trl_rewards import program_for

        self.problems, self.execute, self.layout, self.options = problems, execute, layout, options
        self.log = log or ExecutionLog(None)
        self.build_program = build_program or program_for
        self.num_processes = num_processes

    # -- execution, split over the processes ------------------------------------------------------
    def _run_jobs(self, jobs: list[tuple[str, Problem]]) -> list[list[bool] | None]:
        """Run ``jobs`` (the same list on every process): this process runs its share, all gather all."""
        rank, size = self.layout.process_index, self.num_processes
        mine = list(range(rank, len(jobs), size))
        results = self.execute([jobs[i] for i in mine]) if mine else []
        local = []
        for i, result in zip(mine, results):
            passes = _passes(result)
            unreached = result is not None and (len(result.tests) < result.n_tests
                                                or any(t.status is Status.NOT_RUN for t in result.tests))
            if unreached and len(jobs[i][1].tests) > 1:
                passes = self._rerun_not_run(jobs[i], result)
            local.append((i, passes))
        gathered = dict(self.layout.gather(local))
        return [gathered[i] for i in range(len(jobs))]

    def _rerun_not_run(self, job: tuple[str, Problem], result: Any) -> list[bool] | None:
        """A test the program never reached (it died on an earlier one) runs again on its own: B[l][k] must
        not depend on the order of the tests."""
        program, problem = job
        done = {t.index: t for t in result.tests}
        todo = [k for k in range(result.n_tests) if k not in done or done[k].status is Status.NOT_RUN]
        singles = [(program, dataclasses.replace(problem, id=f"{problem.id}-{k}", tests=(problem.tests[k],)))
                   for k in todo]
        again = dict(zip(todo, self.execute(singles)))
        passes = []
        for k in range(result.n_tests):
            if k in again:
                if again[k] is None:
                    return None
                passes.append(bool(again[k].passed))
            else:
                passes.append(done[k].passed)
        return passes

    # -- the reward ---------------------------------------------------------------------------------
    def __call__(self, prompts: list[Any], completions: list[Any], problem_id: list[str], cure_role: list[str],
                 **kwargs: Any) -> list[float | None]:
        texts = [completion_text(c) for c in completions]
        keys = prompt_keys(prompts, problem_id)
        everything = self.layout.gather(list(zip(keys, problem_id, cure_role, texts)))
        group = self.layout.num_generations
        if len(everything) % group:
            raise ValueError(f"{len(everything)} rows in the gathered batch is not a multiple of G={group}")
        for start in range(0, len(everything), group):
            if len({row[0] for row in everything[start : start + group]}) > 1:
                raise ValueError(f"rows {start}..{start + group - 1} of the gathered batch mix prompts: TRL's "
                                 "sampler no longer repeats each prompt G times in a row")
        tasks: dict[str, _Task] = {}
        for index, (_, pid, role, _) in enumerate(everything):
            task = tasks.setdefault(pid, _Task(self.problems[pid]))
            (task.code_rows if role == "code" else task.test_rows).append(index)
        for pid, task in tasks.items():
            if not task.code_rows or not task.test_rows:
                raise ValueError(f"task {pid}: its code and test rows are not in one generation batch "
                                 f"({len(task.code_rows)} code rows, {len(task.test_rows)} test rows)")

        programs = {i: self.build_program(tasks[everything[i][1]].problem, everything[i][3])
                    for t in tasks.values() for i in t.code_rows}
        tests = {i: generated_test_of(t.problem, everything[i][3], self.options.test_style)
                 for t in tasks.values() for i in t.test_rows}
        # the jobs of the whole batch: per program, the ground-truth run and the generated-tests run
        jobs: list[tuple[str, Problem]] = []
        slots: dict[tuple[str, int], int] = {}
        unique_tests: dict[str, list[TestCase]] = {}
        for pid, task in tasks.items():
            problem = task.problem
            truth = dataclasses.replace(problem, id=f"{problem.id}#ground-truth",
                                        tests=tuple(problem.tests[: self.options.max_ground_truth_tests]))
            generated = list({_test_key(tests[i].test): tests[i].test
                              for i in task.test_rows if tests[i].valid}.values())
            unique_tests[pid] = generated
            target = None
            if generated:
                target = Problem(id=f"{problem.id}#generated", source=problem.source, statement=problem.statement,
                                 tests=tuple(generated), starter_code=problem.starter_code,
                                 entry_point=problem.entry_point, test_setup_code=problem.test_setup_code,
                                 time_limit_s=problem.time_limit_s, memory_limit_mb=problem.memory_limit_mb,
                                 checker=problem.checker, input_file=problem.input_file,
                                 output_file=problem.output_file)
            for i in task.code_rows:
                slots[("gt", i)] = len(jobs)
                jobs.append((programs[i], truth))
                if target is not None:
                    slots[("gen", i)] = len(jobs)
                    jobs.append((programs[i], target))
        results = self._run_jobs(jobs)

        rewards: list[float | None] = [None] * len(everything)
        raw: list[float | None] = [None] * len(everything)
        task_records, code_raw_all, test_raw_all, dropped = [], [], [], {"code": 0, "test": 0}
        accurate: list[float] = []  # per well-formed test of a task with C: does it pass every program of C
        for pid, task in tasks.items():
            truth_rows = [results[slots[("gt", i)]] for i in task.code_rows]
            gt = [None if r is None else sum(r) / len(r) for r in truth_rows]
            column = {_test_key(test): k for k, test in enumerate(unique_tests[pid])}
            matrix: list[list[bool] | None] = []
            for i in task.code_rows:
                passes = results[slots[("gen", i)]] if ("gen", i) in slots else []
                matrix.append(None if passes is None else
                              [bool(tests[j].valid and passes[column[_test_key(tests[j].test)]])
                               for j in task.test_rows])
            scored = cure_task_rewards(gt, matrix, len(task.test_rows))
            for l, i in enumerate(task.code_rows):
                raw[i], rewards[i] = gt[l], scored.code_reward(l)
            for k, i in enumerate(task.test_rows):
                raw[i] = None if scored.test_raw is None else scored.test_raw[k]
                rewards[i] = scored.test_reward(k)
            correct = [l for l, g in enumerate(gt) if g == 1.0 and matrix[l] is not None]
            if correct:
                accurate += [float(all(matrix[l][k] for l in correct))  # type: ignore[index]
                             for k, j in enumerate(task.test_rows) if tests[j].valid]
            code_raw_all += [g for g in gt if g is not None]
            test_raw_all += scored.test_raw or []
            dropped["code"] += scored.code is None
            dropped["test"] += scored.test is None
            task_records.append({
                "stage": "cure-task", "step": _step(kwargs), "problem_id": pid, "code_rows": task.code_rows,
                "test_rows": task.test_rows, "ground_truth": truth_rows, "matrix": matrix,
                "tests_valid": [tests[j].valid for j in task.test_rows],
                "code_raw": gt, "test_raw": scored.test_raw,
            })

        first = self.layout.process_index * len(prompts)
        mine = range(first, first + len(prompts))
        step = _step(kwargs)
        records = []
        for row, i in enumerate(mine):
            _, pid, role, text = everything[i]
            record: dict[str, Any] = {"stage": STAGE, "step": step, "rank": self.layout.process_index, "row": row,
                                      "batch_row": i, "problem_id": pid, "role": role, "raw_reward": raw[i],
                                      "reward": rewards[i]}
            if role == "code":
                record["program"] = programs[i]
                record["ground_truth"] = results[slots[("gt", i)]]
            else:
                record["completion"] = text
                record.update(tests[i].to_dict())
            records.append(record)
        self.log.write(records + (task_records if self.layout.process_index == 0 else []))
        _metric(kwargs, "cure/code_pass_rate", code_raw_all)
        _metric(kwargs, "cure/test_reward_raw", test_raw_all)
        _metric(kwargs, "cure/test_valid_rate", [float(tests[i].valid) for i in tests])
        _metric(kwargs, "cure/test_accuracy", accurate)
        _metric(kwargs, "cure/tasks_dropped_code", [float(dropped["code"])])
        _metric(kwargs, "cure/tasks_dropped_test", [float(dropped["test"])])
        return [rewards[i] for i in mine]


def _step(kwargs: Mapping[str, Any]) -> int | None:
    state = kwargs.get("trainer_state")
    return None if state is None else int(state.global_step)


def _metric(kwargs: Mapping[str, Any], name: str, values: list[float]) -> None:
    """A value of the whole batch (every process computes the same one; TRL averages over processes)."""
    if "log_metric" in kwargs and values:
        kwargs["log_metric"](name, sum(values) / len(values))


# ---------------------------------------------------------------------------------------------- training
def _trainer(config: Any, args: Any, model: Any, tokenizer: Any, reward: Any, dataset: Any, callbacks: list):
    """GRPOTrainer whose train sampler keeps each task's code and test rows in one generation batch."""
    from trl import GRPOTrainer

    class CureGRPOTrainer(GRPOTrainer):
        def _get_train_sampler(self, dataset=None):
            return TaskPairSampler(
                data_source=self.train_dataset if dataset is None else dataset,
                mini_repeat_count=self.num_generations,
                batch_size=self.args.generation_batch_size // self.num_generations,
                repeat_count=self.num_iterations * self.args.steps_per_generation,
                shuffle=self.shuffle_dataset,
                seed=self.args.seed,
            )

    peft_config = None
    if config.use_lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                 target_modules=config.lora_target_modules, task_type="CAUSAL_LM")
    return CureGRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                           processing_class=tokenizer, peft_config=peft_config, callbacks=callbacks)


def check_layout(config: Any, generation_batch_size: int, n_tasks: int) -> None:
    """What the sampler needs: whole tasks (code + test prompts) per generation batch, and enough tasks."""
    group = config.num_generations
    prompts = generation_batch_size // group
    if generation_batch_size % group or prompts % 2:
        raise ConfigError(
            f"method=cure: a generation batch of {generation_batch_size} rows holds {generation_batch_size / group:g} "
            f"prompts of G={group} rows; it must hold whole tasks (a code prompt and a test prompt each): make "
            "per_device_train_batch_size x processes x steps_per_generation a multiple of 2 x num_generations")
    if n_tasks < prompts // 2:
        raise ConfigError(f"method=cure: {n_tasks} training task(s), fewer than the {prompts // 2} tasks of one "
                          "generation batch; use more problems or a smaller per_device_train_batch_size")


def train(config: Any, problems: list[Problem], validation: list[Problem]) -> dict[str, str]:
    """Train ``config.coder_model`` with CURE; return {"coder": final checkpoint} (it also writes the tests)."""
    from corecode.backends import SamplingConfig
    from corecode.rewards.trl_rewards import PROGRAM_BUILDERS, sandbox_executor
    from corecode.training.callbacks import CollaborationProbe, MetricsCallback, ValidationCallback
    from corecode.training.data import to_dataset
    from corecode.training.grpo import grpo_args, group_layout, open_sandbox, save_final, train_with_resume
    from corecode.training.models import distributed_state, load_policy, resolve_model
    from corecode.training.partners import PolicyBackend

    options = CureOptions.from_mapping(config.method_options)
    stage_dir = Path(config.output_dir) / STAGE
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return {"coder": str(final)}
    stage_dir.mkdir(parents=True, exist_ok=True)
    if options.test_style == "append":
        bad = [p.id for p in problems if p.io_mode is not IOMode.FUNCTION or not p.entry_point]
        if bad:
            raise ConfigError(f"method=cure test_style=append needs function problems with an entry point: {bad[:3]}")
    # the reward is already CURE's per-task z-score: TRL must only subtract the group mean (which is 0)
    args = grpo_args(config.replace(scale_rewards="none"), stage_dir)
    state = distributed_state()
    check_layout(config, args.generation_batch_size, len(problems))
    init = resolve_model(config.coder_model, config.seed)
    model, tokenizer = load_policy(init, config.bf16)
    build_program = PROGRAM_BUILDERS[config.program_style]
    layout = group_layout(config.num_generations)
    with open_sandbox(config) as sandbox:
        execute = sandbox_executor(sandbox, measure=False)
        reward = CureReward({p.id: p for p in problems}, execute, layout, options,
                            ExecutionLog(stage_dir / f"executions-rank{layout.process_index}.jsonl"),
                            build_program, state.num_processes)
        callbacks: list[Any] = [MetricsCallback(stage_dir)]
        if validation:
            probe = CollaborationProbe(
                validation,
                plans=None,
                coder=lambda model: PolicyBackend(model, tokenizer, name="coder-policy",
                                                  batch_size=config.generation_batch_size),
                execute=execute,
                build_program=build_program,
                coder_sampling=SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length),
            )
            callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, STAGE))
        trainer = _trainer(config, args, model, tokenizer, reward, to_dataset(cure_rows(problems)), callbacks)
        train_with_resume(trainer, stage_dir, config.resume)
        return {"coder": str(save_final(trainer, tokenizer, stage_dir, init, config.use_lora, config.bf16))}
