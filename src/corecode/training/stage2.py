"""Stage 2, Coder RL: the specialized (frozen) Planner writes one plan per problem, cached on disk; the
Coder is the GRPO policy on problem + plan, rewarded with R_code (O_target over its own group).

With ``use_plans: false`` the Coder trains on the problem alone: the plain GRPO baseline of the paper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corecode.backends import SamplingConfig
from corecode.errors import TrainingError
from corecode.rewards import CoderReward, ExecutionLog, sandbox_executor
from corecode.rewards.trl_rewards import PROGRAM_BUILDERS
from corecode.training.callbacks import CollaborationProbe, MetricsCallback, ValidationCallback
from corecode.training.config import TrainConfig
from corecode.training.data import coder_rows, to_dataset, unique_problems
from corecode.training.grpo import (
    build_trainer,
    group_layout,
    grpo_args,
    open_sandbox,
    save_final,
    train_with_resume,
)
from corecode.training.models import distributed_state, load_policy
from corecode.training.partners import PlanCache, PolicyBackend, checkpoint_hash, partner_backend
from corecode.types import Problem

__all__ = ["run_coder_stage", "stage2_plans", "require_cached_plans"]


def _plan_cache(config: TrainConfig, planner_source: str, plans_dir: Path) -> PlanCache:
    key_source = config.planner_backend or planner_source
    return PlanCache(plans_dir, checkpoint_hash(key_source), config.plan_min_chars, config.plan_attempts)


def require_cached_plans(config: TrainConfig, planner_source: str, problems: list[Problem], plans_dir: Path) -> None:
    """A multi-process run never writes stage-2 plans: refuse it when the cache lacks some.

    Rank 0 would write every plan while the other ranks wait at a barrier: hours for a 7B Planner in-process,
    past the process group's timeout. Every rank checks the cache itself (before any barrier), so all stop
    together with the recipe: write the plans on one process first (``prepare_only=true``).
    """
    if not config.use_plans or distributed_state().num_processes == 1:
        return
    cache = _plan_cache(config, planner_source, plans_dir)
    missing = {p.id for p in problems} - set(cache.load())
    if missing:
        raise TrainingError(
            f"{len(missing)} of the {len(problems)} stage-2 plans of planner {config.planner_backend or planner_source} "
            f"are not in {cache.path}, and a multi-process run does not write them (the other ranks would wait at "
            "a barrier until the process group times out). Write them first on ONE process: `corecode train CONFIG "
            f"stage=coder --model planner={planner_source} prepare_only=true` (add planner_backend=openai:NAME@URL to "
            "write them with a served Planner), then launch with stage=coder and the same --model planner= / "
            "planner_backend; see docs/training.md"
        )


def stage2_plans(
    config: TrainConfig, planner_source: str, problems: list[Problem], plans_dir: Path
) -> dict[str, str] | None:
    """One plan per problem from the frozen Planner, through the on-disk cache (None without plans)."""
    if not config.use_plans:
        return None
    cache = _plan_cache(config, planner_source, plans_dir)
    if {p.id for p in problems} <= set(cache.load()):
        return cache.ensure(problems, None, None)  # type: ignore[arg-type]  # nothing to generate
    require_cached_plans(config, planner_source, problems, plans_dir)
    planner = partner_backend(config.planner_backend, planner_source, config.bf16, config.generation_batch_size)
    try:
        # the length the Planner was trained to write (stage 1's max_completion_length), not the partners' cap
        max_tokens = config.plan_max_tokens or config.max_completion_length
        sampling = SamplingConfig(temperature=1.0, top_p=config.top_p, max_tokens=max_tokens)
        return cache.ensure(problems, planner, sampling)
    finally:
        planner.close()


def run_coder_stage(
    config: TrainConfig,
    stage_dir: Path,
    coder_init: str,
    planner_source: str,
    problems: list[Problem],
    validation: list[Problem],
    plans_dir: Path,
) -> Path:
    """Train the Coder from ``coder_init`` on the cached plans of ``planner_source``; return its final checkpoint."""
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return final
    stage_dir.mkdir(parents=True, exist_ok=True)
    unique = unique_problems(problems, validation)
    require_cached_plans(config, planner_source, unique, plans_dir)  # every rank, before the barrier
    with distributed_state().main_process_first():  # one process: rank 0 writes the plans; else all read the cache
        plans = stage2_plans(config, planner_source, unique, plans_dir)
    args = grpo_args(config, stage_dir)
    layout = group_layout(config.num_generations)
    model, tokenizer = load_policy(coder_init, config.bf16)
    build_program = PROGRAM_BUILDERS[config.program_style]
    with open_sandbox(config) as sandbox:
        execute = sandbox_executor(sandbox)
        reward = CoderReward(
            {p.id: p for p in problems},
            execute,
            layout,
            config.rewards,
            ExecutionLog(stage_dir / f"executions-rank{layout.process_index}.jsonl"),
            build_program,
        )
        callbacks: list[Any] = [MetricsCallback(stage_dir)]
        if validation:
            probe = CollaborationProbe(
                validation,
                plans=None if plans is None else (lambda model: [plans[p.id] for p in validation]),
                coder=lambda model: PolicyBackend(model, tokenizer, name="coder-policy", batch_size=config.generation_batch_size),
                execute=execute,
                build_program=build_program,
                coder_sampling=SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length),
            )
            callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, "coder"))
        dataset = to_dataset(coder_rows(problems, plans))
        trainer = build_trainer(config, args, model, tokenizer, reward, dataset, callbacks)
        train_with_resume(trainer, stage_dir, config.resume)
        return save_final(trainer, tokenizer, stage_dir, coder_init, config.use_lora, config.bf16)
