"""CodeRL+ (jiangxxxue/CODERLPLUS, arXiv 2510.18471; ../shared/METHOD.md section 6): GRPO with the binary code
reward plus the execution-semantics alignment task built from the policy's own failing programs.

* Code prompts: the Coder prompt of the problem alone; reward 1 iff the program passes every test (0 else;
  ``None`` when the sandbox failed on our side, left out of the group by TRL).
* Every distinct failing program of a batch is run once more in the sandbox as a *traced run*
  (:mod:`corecode.sandbox.trace`) on its problem's first test input (:func:`corecode.sandbox.trace.
  first_input`); its stdout (or, for a function problem, the value of the first test's call) and its last
  <= 3 module-level variables of simple type make an :class:`~corecode.rewards.alignment.AlignmentSample`,
  pushed on a buffer (at most ``buffer_size``, the oldest dropped). Alignment prompts (role
  ``execution_predictor``) ask the policy to predict them; reward :func:`corecode.rewards.alignment.
  alignment_reward`.
* Every generation batch of U = generation_batch_size / G prompts holds A = round(0.4 U) alignment prompts
  (at positions drawn per batch) and U - A code prompts. Alignment prompts take the newest samples first
  ("most recent batch first"), each used once; while the buffer holds fewer than A, the remaining slots
  are code prompts.

How a growing buffer reaches TRL's GRPOTrainer (trl 1.16; checked in its source): the trainer needs a
``datasets.Dataset`` and draws indices from ``_get_train_sampler``. The dataset here is a column of *slot*
numbers with a ``with_transform`` that turns a slot into its row when the dataloader fetches it
(:class:`MixedPrompts`); :class:`MixedSampler` (installed by overriding ``_get_train_sampler``) yields the
slots in TRL's layout: each generation batch's U slots, each repeated G times in a row, the whole block
repeated ``num_iterations * steps_per_generation`` times. The first fetch of any slot of a generation
batch resolves the whole batch from the buffer as it then stands, so every process (each fetches only its
own share of the slots) resolves the same rows; new samples are gathered over processes in the reward, so
every process holds the same buffer. accelerate reads one batch ahead, so the samples of the programs
of generation batch b first appear in batch b + 2. The buffer is saved with every checkpoint
(``alignment_buffer.jsonl``) and restored on resume.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.agents import TaskView, render_prompt
from corecode.errors import ConfigError, SandboxError
from corecode.rewards import ExecutionLog, GroupLayout, completion_text
from corecode.rewards.alignment import AlignmentSample, alignment_inputs, alignment_reward, sample_from_trace
from corecode.rewards.trl_rewards import PROGRAM_BUILDERS, Executor, program_key, prompt_keys
from corecode.training.baselines import check_option_names
from corecode.types import Problem

__all__ = ["CodeRLPlusOptions", "MixedPrompts", "MixedSampler", "CodeRLPlusReward", "code_rows", "append_prediction",
           "train"]

BUFFER_FILE = "alignment_buffer.jsonl"


def _h(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class CodeRLPlusOptions:
    """``method_options`` of ``method=coderl_plus`` (the authors' values are the defaults)."""

    align_fraction: float = field(
        default=0.4, metadata=_h("share of each generation batch's prompts that are alignment prompts (authors 0.4): "
                                 "A = round(align_fraction x prompts per generation batch)"))
    buffer_size: int = field(default=20_000, metadata=_h("alignment samples kept, newest first (authors 20,000)"))
    max_variables: int = field(default=3, metadata=_h("module-level variables recorded per traced run (authors 3)"))
    trace_time_limit_s: float | None = field(
        default=None, metadata=_h("CPU seconds of a traced run (None: the sandbox's default per-test limit)"))
    prediction_style: str = field(
        default="json",
        metadata=_h("how an alignment completion is read: json (the last line is the JSON prediction, the "
                    "authors' format) | append (the completion is the JSON value of final_output alone, variables "
                    "predicted empty: for completion-style tiny models on the toy problems)"))

    def __post_init__(self) -> None:
        if not 0.0 <= self.align_fraction < 1.0:
            raise ConfigError(f"coderl_plus align_fraction must be in [0, 1), got {self.align_fraction}")
        if self.buffer_size < 1 or self.max_variables < 0:
            raise ConfigError("coderl_plus buffer_size must be >= 1 and max_variables >= 0")
        if self.trace_time_limit_s is not None and self.trace_time_limit_s <= 0:
            raise ConfigError(f"coderl_plus trace_time_limit_s must be > 0, got {self.trace_time_limit_s}")
        if self.prediction_style not in ("json", "append"):
            raise ConfigError(f"coderl_plus prediction_style must be json or append, got {self.prediction_style!r}")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> "CodeRLPlusOptions":
        check_option_names("coderl_plus", cls, options)
        return cls(**dict(options))


def append_prediction(completion: str) -> str:
    """``prediction_style=append``: the completion is final_output's JSON value; variables predicted empty."""
    return '{"final_output": ' + completion.strip() + ', "variables": {}}'


def code_rows(problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """The code task's rows: the Coder prompt of each problem alone."""
    return [{"prompt": render_prompt("coder", TaskView.from_problem(p)), "problem_id": p.id, "task": "code",
             "sample": ""} for p in problems]


def alignment_row(sample: AlignmentSample, problem: Problem) -> dict[str, Any]:
    """An alignment prompt: the ``execution_predictor`` role on the sample's program and input; the sample
    itself travels in the row (column ``sample``, JSON), so the reward needs no lookup."""
    prompt = render_prompt("execution_predictor", TaskView.from_problem(problem), **alignment_inputs(sample))
    return {"prompt": prompt, "problem_id": sample.problem_id, "task": "align", "sample": json.dumps(sample.to_dict())}


class MixedPrompts:
    """The buffer of alignment samples and the rows of each generation batch (see the module docstring)."""

    def __init__(self, problems: Sequence[Problem], prompts_per_batch: int, align_fraction: float, buffer_size: int,
                 seed: int = 0):
        if not problems:
            raise ConfigError("coderl_plus needs training problems")
        self.problems = list(problems)
        self.by_id = {p.id: p for p in problems}
        self.rows = code_rows(problems)
        self.per_batch = prompts_per_batch
        self.aligned = round(align_fraction * prompts_per_batch)
        if align_fraction > 0 and self.aligned == 0:
            raise ConfigError(
                f"a generation batch holds {prompts_per_batch} prompt(s) (generation_batch_size / num_generations): "
                f"align_fraction={align_fraction} of them rounds to no alignment prompt; use more prompts per batch")
        if self.aligned >= prompts_per_batch:
            raise ConfigError(f"align_fraction={align_fraction} leaves no code prompt in a batch of {prompts_per_batch}")
        code_per_batch = prompts_per_batch - self.aligned
        self.batches_per_epoch = math.ceil(len(self.problems) / code_per_batch)
        self.buffer: deque[AlignmentSample] = deque(maxlen=buffer_size)
        self.seed, self.epoch = seed, -1
        self.plan: list[tuple[int, bool]] = []  # per slot: (code problem index, alignment slot?)
        self.resolved: dict[int, list[dict[str, Any]]] = {}
        self.history: list[dict[str, int]] = []  # per resolved batch: epoch, batch, alignment rows
        self.start_epoch()

    @property
    def slots(self) -> int:
        return self.batches_per_epoch * self.per_batch

    def start_epoch(self) -> None:
        """A new plan: code problems in a fresh order (each once per epoch, the last batch padded), and which
        positions of each batch are alignment slots."""
        self.epoch += 1
        rng = random.Random(f"coderl_plus-{self.seed}-{self.epoch}")
        order = list(range(len(self.problems)))
        rng.shuffle(order)
        fallback = list(range(len(self.problems)))
        rng.shuffle(fallback)
        code, spare = itertools.cycle(order), itertools.cycle(fallback)
        self.plan = []
        for _ in range(self.batches_per_epoch):
            align = set(rng.sample(range(self.per_batch), self.aligned))
            self.plan += [(next(spare), True) if i in align else (next(code), False) for i in range(self.per_batch)]
        self.resolved = {}

    def add(self, samples: Sequence[AlignmentSample]) -> None:
        self.buffer.extend(samples)

    def _resolve(self, batch: int) -> list[dict[str, Any]]:
        rows = self.resolved.get(batch)
        if rows is not None:
            return rows
        rows, used = [], 0
        for index, is_align in self.plan[batch * self.per_batch : (batch + 1) * self.per_batch]:
            if is_align and self.buffer:
                sample = self.buffer.pop()  # newest first
                rows.append(alignment_row(sample, self.by_id[sample.problem_id]))
                used += 1
            else:
                rows.append(self.rows[index])
        self.resolved = {k: v for k, v in self.resolved.items() if k > batch - 4}
        self.resolved[batch] = rows
        self.history.append({"epoch": self.epoch, "batch": batch, "align": used, "prompts": len(rows)})
        return rows

    def transform(self, batch: Mapping[str, list]) -> dict[str, list]:
        """datasets' on-the-fly transform: slots -> rows."""
        rows = [self._resolve(slot // self.per_batch)[slot % self.per_batch] for slot in batch["slot"]]
        return {key: [row[key] for row in rows] for key in ("prompt", "problem_id", "task", "sample")}

    def dataset(self):
        from datasets import Dataset

        return Dataset.from_dict({"slot": list(range(self.slots))}).with_transform(self.transform)

    def save(self, path: Path) -> None:
        path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in self.buffer), encoding="utf-8")

    def load(self, path: Path) -> None:
        self.buffer.clear()
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                self.buffer.append(AlignmentSample.from_dict(json.loads(line)))


class MixedSampler:
    """Slots in TRL's RepeatSampler layout: per generation batch, its U slots each repeated G times, the
    block repeated ``repeat_count`` times; a new plan (:meth:`MixedPrompts.start_epoch`) per pass."""

    def __init__(self, prompts: MixedPrompts, mini_repeat_count: int, repeat_count: int):
        self.prompts, self.mini_repeat_count, self.repeat_count = prompts, mini_repeat_count, repeat_count
        self._first = True

    def __len__(self) -> int:
        return self.prompts.slots * self.mini_repeat_count * self.repeat_count

    def __iter__(self):
        if not self._first:
            self.prompts.start_epoch()
        self._first = False
        per = self.prompts.per_batch
        for batch in range(self.prompts.batches_per_epoch):
            slots = range(batch * per, (batch + 1) * per)
            for _ in range(self.repeat_count):
                for slot in slots:
                    yield from [slot] * self.mini_repeat_count


Tracer = Callable[[str, str, str | None], Any]  # (program, stdin, call) -> ProgramTrace


class CodeRLPlusReward:
    """One reward callable for both tasks (one callable, so a ``None`` stays unscored in TRL)."""

    __name__ = "coderl_plus_reward"

    def __init__(self, prompts: MixedPrompts, execute: Executor, trace: Tracer, layout: GroupLayout,
                 options: CodeRLPlusOptions, capture_bytes: int, log: ExecutionLog | None = None,
                 samples_log: Path | None = None, build_program: Callable[[Problem, str], str] = PROGRAM_BUILDERS["chat"],
                 workers: int = 1):
        self.prompts, self.execute, self.trace, self.layout = prompts, execute, trace, layout
        self.options, self.capture_bytes, self.build_program = options, capture_bytes, build_program
        self.log = log or ExecutionLog(None)
        self.samples_log = samples_log
        self.workers = max(1, workers)

    def __call__(self, prompts: list[Any], completions: list[Any], problem_id: list[str], task: list[str],
                 sample: list[str], **kwargs: Any) -> list[float | None]:
        state = kwargs.get("trainer_state")
        step = None if state is None else int(state.global_step)
        texts = [completion_text(c) for c in completions]
        problems = self.prompts.by_id
        code = [i for i, t in enumerate(task) if t == "code"]
        programs = {i: self.build_program(problems[problem_id[i]], texts[i]) for i in code}
        results = self.execute([(programs[i], problems[problem_id[i]]) for i in code]) if code else []
        outcome = dict(zip(code, results))
        rewards: list[float | None] = [None] * len(texts)
        samples: dict[int, AlignmentSample] = {}
        for i in code:
            rewards[i] = None if outcome[i] is None else float(outcome[i].passed)
        for i, t in enumerate(task):
            if t == "align":
                samples[i] = AlignmentSample.from_dict(json.loads(sample[i]))
                text = append_prediction(texts[i]) if self.options.prediction_style == "append" else texts[i]
                rewards[i] = alignment_reward(text, samples[i])
        keys = prompt_keys(prompts, [samples[i].id if i in samples else problem_id[i] for i in range(len(texts))])
        # per-row rewards; the gather checks that every run of G rows is one prompt, as TRL groups them
        checked = self.layout.group_and_slice(rewards, lambda group: list(group), keys)
        assert checked == rewards
        new = self._new_samples(code, problem_id, programs, outcome, step)
        everything = [AlignmentSample.from_dict(d) for d in self.layout.gather([s.to_dict() for s in new])]
        self.prompts.add(everything)
        if self.samples_log is not None and self.layout.process_index == 0 and everything:
            with self.samples_log.open("a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(s.to_dict()) + "\n" for s in everything)
        self.log.write([
            {"step": step, "rank": self.layout.process_index, "row": i, "task": task[i], "problem_id": problem_id[i],
             "completion": texts[i], "reward": rewards[i],
             **({"program": programs[i], "passed": None if outcome[i] is None else bool(outcome[i].passed)}
                if task[i] == "code" else {"sample": samples[i].to_dict()})}
            for i in range(len(texts))
        ])
        code_scored = [rewards[i] for i in code if rewards[i] is not None]
        align_scored = [rewards[i] for i in samples]
        _metric(kwargs, "code_reward", code_scored)
        _metric(kwargs, "align_reward", align_scored)
        _metric(kwargs, "align_share", [float(t == "align") for t in task])
        _metric(kwargs, "new_align_samples", [float(len(everything))])
        _metric(kwargs, "align_buffer", [float(len(self.prompts.buffer))])
        return rewards

    def _new_samples(self, code: list[int], problem_id: list[str], programs: Mapping[int, str],
                     outcome: Mapping[int, Any], step: int | None) -> list[AlignmentSample]:
        """Traced runs of this process's distinct failing programs -> alignment samples."""
        from corecode.sandbox.trace import first_input

        jobs, seen = [], set()
        for i in code:
            result = outcome[i]
            if result is None or result.passed:
                continue
            key = (problem_id[i], program_key(programs[i]))
            found = first_input(self.prompts.by_id[problem_id[i]])
            if key in seen or found is None:
                continue
            seen.add(key)
            jobs.append((i, found))

        def run(job):
            i, (stdin, call) = job
            try:
                trace = self.trace(programs[i], stdin, call)
            except SandboxError:  # our failure: no sample, nothing scored
                return None
            return sample_from_trace(f"{step}-{self.layout.process_index}-{i}", problem_id[i], programs[i], stdin,
                                     call, trace, self.capture_bytes, step)

        with ThreadPoolExecutor(self.workers) as pool:
            return [s for s in pool.map(run, jobs) if s is not None]


def _metric(kwargs: Mapping[str, Any], name: str, values: list[float]) -> None:
    if "log_metric" in kwargs and values:
        kwargs["log_metric"](name, sum(values) / len(values))


# ---------------------------------------------------------------------------------------------- training
def _trainer(config: Any, args: Any, model: Any, tokenizer: Any, reward: Any, prompts: MixedPrompts,
             callbacks: list):
    """GRPOTrainer whose train sampler is :class:`MixedSampler` over the slots of ``prompts``."""
    from trl import GRPOTrainer

    class CodeRLPlusTrainer(GRPOTrainer):
        def _get_train_sampler(self, dataset=None):
            return MixedSampler(prompts, self.num_generations, self.num_iterations * self.args.steps_per_generation)

    peft_config = None
    if config.use_lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                 target_modules=config.lora_target_modules, task_type="CAUSAL_LM")
    return CodeRLPlusTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=prompts.dataset(),
                             processing_class=tokenizer, peft_config=peft_config, callbacks=callbacks)


def _buffer_callback(prompts: MixedPrompts):
    from transformers import TrainerCallback

    class BufferCallback(TrainerCallback):
        """Saves the alignment buffer into each checkpoint (restored on resume)."""

        def on_save(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                directory = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                if directory.is_dir():
                    prompts.save(directory / BUFFER_FILE)

    return BufferCallback()


def train(config: Any, problems: list[Problem], validation: list[Problem]) -> dict[str, str]:
    """``corecode train method=coderl_plus``: train ``coder_model``; return {"coder": final checkpoint}."""
    from corecode.backends import SamplingConfig
    from corecode.rewards import sandbox_executor
    from corecode.training.callbacks import CollaborationProbe, MetricsCallback, ValidationCallback
    from corecode.training.grpo import grpo_args, group_layout, last_checkpoint, open_sandbox, save_final
    from corecode.training.models import load_policy, resolve_model
    from corecode.training.partners import PolicyBackend

    options = CodeRLPlusOptions.from_mapping(config.method_options)
    stage_dir = Path(config.output_dir) / "coderl_plus"
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return {"coder": str(final)}
    stage_dir.mkdir(parents=True, exist_ok=True)
    init = resolve_model(config.coder_model, config.seed)
    args = grpo_args(config, stage_dir)
    layout = group_layout(config.num_generations)
    prompts = MixedPrompts(problems, args.generation_batch_size // config.num_generations, options.align_fraction,
                           options.buffer_size, config.seed)
    checkpoint = last_checkpoint(stage_dir) if config.resume else None
    if checkpoint is not None and (Path(checkpoint) / BUFFER_FILE).is_file():
        prompts.load(Path(checkpoint) / BUFFER_FILE)
    model, tokenizer = load_policy(init, config.bf16)
    build_program = PROGRAM_BUILDERS[config.program_style]
    with open_sandbox(config) as sandbox:
        execute = sandbox_executor(sandbox, measure=False)  # the binary reward needs no efficiency figures

        def trace(program: str, stdin: str, call: str | None):
            return sandbox.trace(program, stdin=stdin, call=call, max_variables=options.max_variables,
                                 time_limit_s=options.trace_time_limit_s)

        reward = CodeRLPlusReward(
            prompts, execute, trace, layout, options, sandbox.config.capture_bytes,
            ExecutionLog(stage_dir / f"executions-rank{layout.process_index}.jsonl"),
            stage_dir / "alignment_samples.jsonl", build_program, sandbox.config.n_workers,
        )
        callbacks: list[Any] = [MetricsCallback(stage_dir), _buffer_callback(prompts)]
        if validation:
            probe = CollaborationProbe(
                validation, plans=None,
                coder=lambda model: PolicyBackend(model, tokenizer, name="coder-policy",
                                                  batch_size=config.generation_batch_size),
                execute=execute, build_program=build_program,
                coder_sampling=SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length),
            )
            callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, "coder"))
        trainer = _trainer(config, args, model, tokenizer, reward, prompts, callbacks)
        trainer.train(resume_from_checkpoint=checkpoint)
        final = save_final(trainer, tokenizer, stage_dir, init, config.use_lora, config.bf16)
    return {"coder": str(final)}
