"""Debugger RL: MapCoder's Debugging agent trained with the same GRPO loop (``stage: debugger``).

The Debugger's task is a *debugging case*: a problem, the plan (when plans are used), a program of the
frozen Coder that fails some public tests, and the feedback those tests gave, rendered with the
``debugger`` role prompt exactly as :class:`~corecode.pipelines.MapCoderPipeline` shows it at evaluation
time. Its reward is R_code of the repaired program on **all** tests (accuracy plus space efficiency
against the group's O_target), as for the Coder in stage 2: the same training, extended to another role.

Cases are built once and cached (``debug_cases/cases-<coder hash>.jsonl``): the frozen Coder writes
``debug_attempts`` programs per problem, each runs on the public tests, and up to
``debug_cases_per_problem`` failing ones are kept. A restart reads the cache and regenerates nothing.
Problems without public tests give no feedback and are skipped (counted in the log).

Validation (:class:`DebugProbe`) measures the Collaboration Gain of the Debugger: pass@1 of the frozen
Coder's greedy program alone vs after one greedy debugging round on the programs that fail public tests
(the repaired program is kept when it does at least as well on the public tests, as MapCoder keeps its
best program).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from corecode.agents import TaskView, render_prompt, shown_plan
from corecode.backends import Backend, SamplingConfig
from corecode.errors import TrainingError
from corecode.metrics.collaboration import collaboration_gain
from corecode.pipelines.base import format_feedback
from corecode.rewards import DebuggerReward, ExecutionLog, sandbox_executor
from corecode.rewards.trl_rewards import PROGRAM_BUILDERS, Executor, program_for
from corecode.training.callbacks import MetricsCallback, ValidationCallback
from corecode.training.config import TrainConfig
from corecode.training.data import to_dataset
from corecode.training.grpo import build_trainer, group_layout, grpo_args, open_sandbox, save_final, train_with_resume
from corecode.training.models import distributed_state, load_policy
from corecode.training.partners import PolicyBackend, checkpoint_hash, partner_backend
from corecode.types import Problem

__all__ = [
    "DebugCase", "DebugCaseCache", "DebugProbe", "debugger_rows", "build_debug_cases", "prepare_debug_cases",
    "run_debugger_stage", "NO_PLAN",
]

log = logging.getLogger(__name__)

NO_PLAN = "(no plan was written for this problem)"


@dataclass(frozen=True)
class DebugCase:
    """One training prompt of the Debugger: a failing program of the frozen Coder and its public-test feedback."""

    problem_id: str
    program: str
    feedback: str
    public_pass_rate: float
    plan: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"problem_id": self.problem_id, "program": self.program, "feedback": self.feedback,
                "public_pass_rate": self.public_pass_rate, "plan": self.plan}


def debugger_prompt(problem: Problem, program: str, feedback: str, plan: str | None) -> list[dict[str, str]]:
    """The ``debugger`` role's chat prompt, as the MapCoder pipeline renders it."""
    return render_prompt("debugger", TaskView.from_problem(problem), plan=plan or NO_PLAN,
                         program=program.rstrip() or "(empty)", feedback=feedback)


def debugger_rows(cases: Sequence[DebugCase], problems: Mapping[str, Problem]) -> list[dict[str, Any]]:
    """One dataset row per case: the Debugger's prompt and the problem id the reward looks up."""
    return [{"prompt": debugger_prompt(problems[c.problem_id], c.program, c.feedback, c.plan),
             "problem_id": c.problem_id} for c in cases]


class DebugCaseCache:
    """Debugging cases as JSONL, one file per frozen-Coder key; problems already tried are never retried.

    Each line is a case, or ``{"problem_id": ..., "none": true}`` for a problem whose programs all passed
    the public tests (or that has none), so a restart knows it was tried.
    """

    def __init__(self, directory: Path, coder_key: str):
        self.path = Path(directory) / f"cases-{coder_key}.jsonl"

    def load(self) -> tuple[dict[str, list[DebugCase]], set[str]]:
        cases: dict[str, list[DebugCase]] = {}
        tried: set[str] = set()
        if not self.path.is_file():
            return cases, tried
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                pid = row["problem_id"]
                if not row.get("none"):
                    cases.setdefault(pid, []).append(DebugCase(
                        pid, row["program"], row["feedback"], float(row["public_pass_rate"]), row.get("plan")))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise TrainingError(f"{self.path}, row {number}: not a debugging case ({exc!r})") from exc
            tried.add(pid)
        return cases, tried

    def ensure(
        self,
        problems: Sequence[Problem],
        write: Callable[[list[Problem]], list[list[str]]],
        execute_public: Executor,
        per_problem: int,
        plans: Mapping[str, str] | None = None,
        chunk_size: int = 16,
    ) -> list[DebugCase]:
        """The cases of ``problems`` (in problem order), generating only for problems not tried yet.

        Problems go to the Coder ``chunk_size`` at a time and each chunk is appended to the cache as it
        finishes, so a crash loses at most one chunk's generations.
        """
        cases, tried = self.load()
        todo = [p for p in problems if p.id not in tried and p.public_tests]
        skipped = [p.id for p in problems if p.id not in tried and not p.public_tests]
        chunks = [todo[i : i + chunk_size] for i in range(0, len(todo), chunk_size)]
        for chunk in tqdm(chunks, desc="debugger cases", unit="chunk", disable=not chunks):
            cases.update(self._generate(chunk, write, execute_public, per_problem, plans))  # appended per chunk
        if skipped:
            log.info("debugger stage: %d problem(s) without public tests give no feedback and are skipped",
                     len(skipped))
        out = [case for p in problems for case in cases.get(p.id, [])]
        log.info("debugger stage: %d debugging case(s) from %d problem(s)", len(out), len(problems))
        return out

    def _generate(self, problems: list[Problem], write, execute_public: Executor, per_problem: int,
                  plans: Mapping[str, str] | None) -> dict[str, list[DebugCase]]:
        answers = write(problems)
        programs = [[program_for(p, a) for a in group] for p, group in zip(problems, answers)]
        jobs = [(prog, p) for p, progs in zip(problems, programs) for prog in progs]
        results = iter(execute_public(jobs))
        out: dict[str, list[DebugCase]] = {}
        lines = []
        for problem, progs in zip(problems, programs):
            found: list[DebugCase] = []
            seen: set[str] = set()
            for prog in progs:
                result = next(results)
                if result is None or result.passed or not prog.strip() or prog in seen:
                    continue  # our failure, a passing program, no code, or a duplicate
                seen.add(prog)
                if len(found) < per_problem:
                    plan = plans.get(problem.id) if plans else None
                    found.append(DebugCase(problem.id, prog, format_feedback(result, problem.public_tests),
                                           result.pass_rate, plan))
            lines += [json.dumps(case.to_dict()) for case in found]
            if not found:
                lines.append(json.dumps({"problem_id": problem.id, "none": True}))
            out[problem.id] = found
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())
        return out


@dataclass
class DebugProbe:
    """pass@1 of the frozen Coder alone vs with one round of the Debugger policy (CG of the Debugger)."""

    problems: Sequence[Problem]
    coder: Backend
    execute: Executor
    execute_public: Executor
    build_program: Callable[[Problem, str], str]
    coder_sampling: SamplingConfig
    debugger_sampling: SamplingConfig
    plans: Mapping[str, str] | None = None
    tokenizer: Any = None
    batch_size: int = 8  # conversations per generate() call of the policy
    _alone: tuple[list[str], list[Any], list[Any]] | None = field(default=None, init=False, repr=False)

    def _coder_alone(self) -> tuple[list[str], list[Any], list[Any]]:
        """The frozen Coder's greedy programs and their hidden / public results (the Coder never changes)."""
        if self._alone is None:
            conversations = [_coder_prompt(p, self.plans) for p in self.problems]
            answers = [group[0].text for group in self.coder.generate(conversations, self.coder_sampling)]
            programs = [program_for(p, a) for p, a in zip(self.problems, answers)]
            jobs = list(zip(programs, self.problems))
            self._alone = (programs, self.execute(jobs), self.execute_public(jobs))
        return self._alone

    def measure(self, model: Any) -> dict[str, Any]:
        programs, hidden, public = self._coder_alone()
        failing = [i for i, (p, r) in enumerate(zip(self.problems, public))
                   if p.public_tests and r is not None and not r.passed]
        final = list(hidden)
        if failing:
            debugger = PolicyBackend(model, self.tokenizer, name="debugger-policy", batch_size=self.batch_size)
            conversations = [
                debugger_prompt(self.problems[i], programs[i], format_feedback(public[i], self.problems[i].public_tests),
                                self.plans.get(self.problems[i].id) if self.plans else None)
                for i in failing
            ]
            answers = [group[0].text for group in debugger.generate(conversations, self.debugger_sampling)]
            jobs = [(self.build_program(self.problems[i], a), self.problems[i]) for i, a in zip(failing, answers)]
            fixed_public, fixed_hidden = self.execute_public(jobs), self.execute(jobs)
            for i, fp, fh in zip(failing, fixed_public, fixed_hidden):
                if fp is not None and fp.pass_rate >= public[i].pass_rate:
                    final[i] = fh
        # a sandbox failure (None) is not the Coder's or the Debugger's: that problem is left out of both
        scored = [i for i, (h, f) in enumerate(zip(hidden, final)) if h is not None and f is not None]
        row: dict[str, Any] = {"debugged": len(failing), "unscored_problems": len(self.problems) - len(scored),
                               "sandbox_errors": sum(r is None for r in hidden)}
        if not scored:
            return {"pass1_alone": None, **row}
        alone = sum(hidden[i].passed for i in scored) / len(scored)
        with_debugger = sum(final[i].passed for i in scored) / len(scored)
        return {"pass1_alone": alone, **collaboration_gain(with_debugger, alone).to_dict(), **row}


def _coder_prompt(problem: Problem, plans: Mapping[str, str] | None) -> list[dict[str, str]]:
    view = TaskView.from_problem(problem)
    if plans and problem.id in plans:
        return render_prompt("coder_with_plan", view, plan=shown_plan(plans[problem.id]))
    return render_prompt("coder", view)


def _case_writer(coder: Backend, sampling: SamplingConfig, attempts: int, plans: Mapping[str, str] | None):
    def write(problems: list[Problem]) -> list[list[str]]:
        groups = coder.generate([_coder_prompt(p, plans) for p in problems], sampling, n=attempts)
        return [[c.text for c in group] for group in groups]

    return write


def build_debug_cases(
    config: TrainConfig,
    coder: Backend,
    coder_source: str,
    problems: Sequence[Problem],
    cases_dir: Path,
    plans: Mapping[str, str] | None,
    execute_public: Executor,
) -> list[DebugCase]:
    """The stage's debugging cases through the cache (keyed by the frozen Coder and the plans it wrote from)."""
    key = checkpoint_hash(config.coder_backend or coder_source)
    if plans:  # the Coder wrote from these plans: other plans, other cases
        key += "-" + hashlib.sha256(json.dumps(plans, sort_keys=True).encode()).hexdigest()[:8]
    sampling = SamplingConfig(temperature=config.coder_temperature, top_p=config.top_p,
                              max_tokens=config.partner_max_tokens)
    return DebugCaseCache(cases_dir, key).ensure(
        problems, _case_writer(coder, sampling, config.debug_attempts, plans), execute_public,
        config.debug_cases_per_problem, plans)


def prepare_debug_cases(config: TrainConfig, coder_source: str, problems: list[Problem], cases_dir: Path,
                        plans: Mapping[str, str] | None) -> list[DebugCase]:
    """``prepare_only``: build the cases on this process and stop (no policy is loaded)."""
    coder = partner_backend(config.coder_backend, coder_source, config.bf16, config.generation_batch_size)
    try:
        with open_sandbox(config) as sandbox:
            return build_debug_cases(config, coder, coder_source, problems, cases_dir, plans,
                                     sandbox_executor(sandbox, tests="public"))
    finally:
        coder.close()


def run_debugger_stage(
    config: TrainConfig,
    stage_dir: Path,
    debugger_init: str,
    coder_source: str,
    problems: list[Problem],
    validation: list[Problem],
    cases_dir: Path,
    plans: Mapping[str, str] | None = None,
) -> Path:
    """Train the Debugger from ``debugger_init`` on the frozen Coder's failing programs; return its final checkpoint."""
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return final
    stage_dir.mkdir(parents=True, exist_ok=True)
    coder = partner_backend(config.coder_backend, coder_source, config.bf16, config.generation_batch_size)
    build_program = PROGRAM_BUILDERS[config.program_style]
    try:
        with open_sandbox(config) as sandbox:
            execute, execute_public = sandbox_executor(sandbox), sandbox_executor(sandbox, tests="public")
            with distributed_state().main_process_first():  # rank 0 builds the cases; the others read the cache
                cases = build_debug_cases(config, coder, coder_source, problems, cases_dir, plans, execute_public)
            if not cases:
                raise TrainingError(
                    f"the frozen Coder's {config.debug_attempts} program(s) per problem passed the public tests of "
                    f"every one of the {len(problems)} training problems (or they have none): no debugging case "
                    "to train on; use harder problems or more debug_attempts"
                )
            layout = group_layout(config.num_generations)
            model, tokenizer = load_policy(debugger_init, config.bf16)
            reward = DebuggerReward(
                {p.id: p for p in problems}, execute, layout, config.rewards,
                ExecutionLog(stage_dir / f"executions-rank{layout.process_index}.jsonl"), build_program,
            )
            callbacks: list[Any] = [MetricsCallback(stage_dir)]
            if validation:
                probe = DebugProbe(
                    validation, coder, execute, execute_public, build_program,
                    SamplingConfig(temperature=0.0, max_tokens=config.partner_max_tokens),
                    SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length), plans, tokenizer,
                    batch_size=config.generation_batch_size,
                )
                callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, "debugger"))
            dataset = to_dataset(debugger_rows(cases, {p.id: p for p in problems}))
            trainer = build_trainer(config, grpo_args(config, stage_dir), model, tokenizer, reward, dataset, callbacks)
            train_with_resume(trainer, stage_dir, config.resume)
            return save_final(trainer, tokenizer, stage_dir, debugger_init, config.use_lora, config.bf16)
    finally:
        coder.close()
