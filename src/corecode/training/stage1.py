"""Stage 1, Planner RL: the Planner is the GRPO policy; its reward runs the frozen Coder and the sandbox.

Per step: TRL samples G plans per problem from the policy; :class:`~corecode.rewards.PlannerReward` asks
the frozen Coder (any corecode backend; one batched ``generate`` call, so a vLLM / OpenAI-compatible
server gets every request at once) for M programs per plan, runs all of them in one sandbox batch, and
scores each plan with R_plan. Before the first step each problem's reference solution is timed in the same
sandbox (``reference_times.json``), giving the time score its t_ref where a benchmark ships references.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corecode.agents import TaskView, render_prompt
from corecode.backends import Backend, SamplingConfig
from corecode.rewards import ExecutionLog, PlannerReward, sandbox_executor
from corecode.rewards.trl_rewards import program_for
from corecode.training.callbacks import CollaborationProbe, MetricsCallback, ValidationCallback
from corecode.training.config import TrainConfig
from corecode.training.data import planner_rows, to_dataset
from corecode.training.grpo import (
    build_trainer,
    group_layout,
    grpo_args,
    open_sandbox,
    save_final,
    stage_reference_times,
    train_with_resume,
)
from corecode.training.models import load_policy
from corecode.training.partners import PolicyBackend, coder_writer, partner_backend
from corecode.types import Problem

__all__ = ["run_planner_stage", "PlannerLikeRole", "run_planner_like_stage"]


@dataclass(frozen=True)
class PlannerLikeRole:
    """What differs between agents trained like the stage-1 Planner (the Planner, MapCoder's Retrieval agent).

    ``writer(partner, config)`` turns G policy answers into the frozen partner's M programs each;
    ``rows(problems, reference_times, config)`` are the dataset rows; ``validation_plans(model, tokenizer,
    partner, problems, config)`` are the plans the frozen Coder gets at validation.
    """

    name: str
    reward: type[PlannerReward]
    writer: Callable[[Backend, TrainConfig], Any]
    rows: Callable[[list[Problem], Any, TrainConfig], list[dict[str, Any]]]
    validation_plans: Callable[[Any, Any, Backend, list[Problem], TrainConfig], list[str]]
    check_plan_format: bool = True


def run_planner_like_stage(
    role: PlannerLikeRole,
    config: TrainConfig,
    stage_dir: Path,
    init: str,
    coder_checkpoint: str,
    problems: list[Problem],
    validation: list[Problem],
) -> Path:
    """Train ``role``'s policy from ``init`` against the frozen partner; return its final checkpoint."""
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return final
    stage_dir.mkdir(parents=True, exist_ok=True)
    args = grpo_args(config, stage_dir)
    layout = group_layout(config.num_generations)
    model, tokenizer = load_policy(init, config.bf16)
    partner = partner_backend(config.coder_backend, coder_checkpoint, config.bf16, config.generation_batch_size)
    try:
        with open_sandbox(config) as sandbox:
            execute = sandbox_executor(sandbox)
            reference_times = stage_reference_times(config, stage_dir, problems, execute)
            reward = role.reward(
                {p.id: p for p in problems},
                role.writer(partner, config),
                execute,
                layout,
                config.rewards,
                ExecutionLog(stage_dir / f"executions-rank{layout.process_index}.jsonl"),
            )
            callbacks: list[Any] = [MetricsCallback(stage_dir)]
            if validation:
                probe = CollaborationProbe(
                    validation,
                    plans=lambda model: role.validation_plans(model, tokenizer, partner, validation, config),
                    coder=lambda model: partner,
                    execute=execute,
                    build_program=program_for,
                    coder_sampling=SamplingConfig(temperature=0.0, max_tokens=config.partner_max_tokens),
                    check_plan_format=role.check_plan_format,
                    fixed_alone=True,  # the frozen Coder's greedy programs alone never change
                )
                callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, role.name))
            dataset = to_dataset(role.rows(problems, reference_times, config))
            trainer = build_trainer(config, args, model, tokenizer, reward, dataset, callbacks)
            train_with_resume(trainer, stage_dir, config.resume)
            return save_final(trainer, tokenizer, stage_dir, init, config.use_lora, config.bf16)
    finally:
        partner.close()


def _partner_sampling(config: TrainConfig) -> SamplingConfig:
    return SamplingConfig(temperature=config.coder_temperature, top_p=config.top_p, max_tokens=config.partner_max_tokens)


def _policy_plans(model: Any, tokenizer: Any, partner: Backend, problems: list[Problem], config: TrainConfig) -> list[str]:
    backend = PolicyBackend(model, tokenizer, name="planner-policy", batch_size=config.generation_batch_size)
    conversations = [render_prompt("planner", TaskView.from_problem(p)) for p in problems]
    sampling = SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length)
    return [group[0].text for group in backend.generate(conversations, sampling)]


PLANNER = PlannerLikeRole(
    name="planner",
    reward=PlannerReward,
    writer=lambda partner, config: coder_writer(partner, _partner_sampling(config), config.coder_samples),
    rows=lambda problems, reference_times, config: planner_rows(problems, reference_times),
    validation_plans=_policy_plans,
)


def run_planner_stage(
    config: TrainConfig,
    stage_dir: Path,
    planner_init: str,
    coder_checkpoint: str,
    problems: list[Problem],
    validation: list[Problem],
) -> Path:
    """Train the Planner from ``planner_init`` against the frozen Coder; return its final checkpoint."""
    return run_planner_like_stage(PLANNER, config, stage_dir, planner_init, coder_checkpoint, problems, validation)
