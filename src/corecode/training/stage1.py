"""Stage 1, Planner RL: the Planner is the GRPO policy; its reward runs the frozen Coder and the sandbox.

Per step: TRL samples G plans per problem from the policy; :class:`~corecode.rewards.PlannerReward` asks
the frozen Coder (any corecode backend; one batched ``generate`` call, so a vLLM / OpenAI-compatible
server gets every request at once) for M programs per plan, runs all of them in one sandbox batch, and
scores each plan with R_plan. Before the first step each problem's reference solution is timed in the same
sandbox (``reference_times.json``), giving the time score its t_ref where a benchmark ships references.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corecode.agents import TaskView, render_prompt
from corecode.backends import SamplingConfig
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

__all__ = ["run_planner_stage"]


def run_planner_stage(
    config: TrainConfig,
    stage_dir: Path,
    planner_init: str,
    coder_checkpoint: str,
    problems: list[Problem],
    validation: list[Problem],
) -> Path:
    """Train the Planner from ``planner_init`` against the frozen Coder; return its final checkpoint."""
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return final
    stage_dir.mkdir(parents=True, exist_ok=True)
    args = grpo_args(config, stage_dir)
    layout = group_layout(config.num_generations)
    model, tokenizer = load_policy(planner_init, config.bf16)
    coder = partner_backend(config.coder_backend, coder_checkpoint, config.bf16)
    coder_sampling = SamplingConfig(
        temperature=config.coder_temperature, top_p=config.top_p, max_tokens=config.partner_max_tokens
    )
    try:
        with open_sandbox(config) as sandbox:
            execute = sandbox_executor(sandbox)
            reference_times = stage_reference_times(config, stage_dir, problems, execute)
            reward = PlannerReward(
                {p.id: p for p in problems},
                coder_writer(coder, coder_sampling, config.coder_samples),
                execute,
                layout,
                config.rewards,
                ExecutionLog(stage_dir / f"executions-rank{layout.process_index}.jsonl"),
            )
            callbacks: list[Any] = [MetricsCallback(stage_dir)]
            if validation:
                plan_sampling = SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length)
                probe = CollaborationProbe(
                    validation,
                    plans=lambda model: _policy_plans(model, tokenizer, validation, plan_sampling),
                    coder=lambda model: coder,
                    execute=execute,
                    build_program=program_for,
                    coder_sampling=SamplingConfig(temperature=0.0, max_tokens=config.partner_max_tokens),
                )
                callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, "planner"))
            trainer = build_trainer(config, args, model, tokenizer, reward, to_dataset(planner_rows(problems, reference_times)), callbacks)
            train_with_resume(trainer, stage_dir, config.resume)
            return save_final(trainer, tokenizer, stage_dir, planner_init, config.use_lora, config.bf16)
    finally:
        coder.close()


def _policy_plans(model: Any, tokenizer: Any, problems: list[Problem], sampling: SamplingConfig) -> list[str]:
    backend = PolicyBackend(model, tokenizer, name="planner-policy")
    conversations = [render_prompt("planner", TaskView.from_problem(p)) for p in problems]
    return [group[0].text for group in backend.generate(conversations, sampling)]
