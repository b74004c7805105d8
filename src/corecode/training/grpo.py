"""The phases every stage shares, one function each: TRL arguments, the group layout, the trainer, the run
(with resume), and saving the final model as a normal checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corecode.errors import ConfigError, TrainingError
from corecode.rewards import GroupLayout
from corecode.training.config import TrainConfig
from corecode.training.models import distributed_state
from corecode.types import Problem

__all__ = ["require_trl", "MIN_TRL", "open_sandbox", "grpo_args", "group_layout", "build_trainer", "train_with_resume", "save_final", "last_checkpoint",
           "stage_reference_times"]

# TrainConfig fields that are GRPOConfig fields of the same name and meaning
_SAME_NAME = (
    "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "beta",
    "epsilon", "epsilon_high", "temperature", "top_p", "max_completion_length", "max_steps", "num_train_epochs",
    "save_steps", "logging_steps", "scale_rewards", "loss_type", "bf16", "seed", "log_completions",
)


# The first TRL release in which a row whose every reward is None is left out of its group's mean and std
# and gets zero advantage (GRPOTrainer's ``unscorable_mask``, huggingface/trl#5902): checked in the wheels,
# 1.5.1 lacks it and 1.6.0 has it. Before, nansum turned such a row into reward 0, so a program the sandbox
# failed to run would count as a wrong one. pyproject.toml pins the same lower bound.
MIN_TRL = (1, 6, 0)


def require_trl(version: str | None = None) -> None:
    """Refuse to train with a TRL that would score sandbox failures (``None`` rewards) as 0."""
    from packaging.version import Version  # a dependency of transformers

    if version is None:
        import trl

        version = trl.__version__
    if Version(version).release < MIN_TRL:
        raise TrainingError(
            f"trl {version} is too old: corecode needs trl >= {'.'.join(map(str, MIN_TRL))}, the first release that "
            "leaves a completion whose reward is None (a program the sandbox failed to run) out of its group "
            "instead of scoring it 0; pip install -c constraints.txt -e '.[train]'"
        )


def open_sandbox(config: TrainConfig):
    """The sandbox every reward of the stage runs programs in (a context manager)."""
    from corecode.sandbox import Sandbox, SandboxConfig

    return Sandbox(SandboxConfig(workers=config.sandbox_workers))


def grpo_args(config: TrainConfig, stage_dir: Path):
    """TRL's GRPOConfig for one stage; ``config.grpo`` entries override or extend ours."""
    require_trl()
    from trl import GRPOConfig

    values: dict[str, Any] = {name: getattr(config, name) for name in _SAME_NAME}
    values.update(
        output_dir=str(stage_dir),
        save_strategy="steps",
        report_to=[r for r in config.report_to if r != "none"] or "none",
        num_completions_to_print=0,
    )
    import torch

    if not torch.cuda.is_available():  # Trainer refuses bf16 without a GPU unless told it is a CPU run
        values["use_cpu"] = True
    values.update(config.grpo)
    try:
        return GRPOConfig(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"TRL rejected the GRPO settings: {exc}") from exc


def group_layout(num_generations: int) -> GroupLayout:
    """Rank and all-gather of the current accelerate state (one process: rank 0, identity-like gather)."""
    from accelerate.utils import gather_object

    state = distributed_state()
    gather = gather_object if state.num_processes > 1 else (lambda items: list(items))
    return GroupLayout(num_generations=num_generations, gather=gather, process_index=state.process_index)


def build_trainer(config: TrainConfig, args: Any, model: Any, tokenizer: Any, reward: Any, dataset: Any, callbacks: list):
    """GRPOTrainer with ONE reward callable (see corecode.rewards.trl_rewards on None) and LoRA if asked."""
    from trl import GRPOTrainer

    peft_config = None
    if config.use_lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=config.lora_target_modules,
            task_type="CAUSAL_LM",
        )
    return GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )


def last_checkpoint(stage_dir: Path) -> str | None:
    """The newest ``checkpoint-N`` directory in ``stage_dir``, if any."""
    found = [p for p in stage_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return str(max(found, key=lambda p: int(p.name.split("-")[-1]))) if found else None


def train_with_resume(trainer: Any, stage_dir: Path, resume: bool) -> None:
    checkpoint = last_checkpoint(stage_dir) if resume else None
    trainer.train(resume_from_checkpoint=checkpoint)


def save_final(trainer: Any, tokenizer: Any, stage_dir: Path, base_model: str, use_lora: bool, bf16: bool) -> Path:
    """A normal checkpoint at ``stage_dir/final`` (LoRA merged into the weights): the next stage's input.

    ``trainer.save_model`` first, because it gathers ZeRO-3 / FSDP shards; with LoRA that saves the adapter,
    which rank 0 then merges into a fresh copy of ``base_model``.
    """
    final, saved = stage_dir / "final", stage_dir / "final-trainer"
    trainer.save_model(str(saved))
    if not trainer.is_world_process_zero():
        return final
    if final.exists():
        raise TrainingError(f"{final} already exists; remove it or use a new output_dir")
    if use_lora:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        base = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.bfloat16 if bf16 else torch.float32)
        merged = PeftModel.from_pretrained(base, str(saved)).merge_and_unload()
        partial = stage_dir / "final.partial"
        merged.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.rename(final)
    else:
        tokenizer.save_pretrained(saved)
        saved.rename(final)
    return final


def stage_reference_times(config: TrainConfig, stage_dir: Path, problems: list[Problem], execute: Any):
    """t_ref per problem (time_reference 'auto'): measured once by the main process, saved, reused on resume."""
    if config.rewards.time_reference != "auto":
        return None

    from corecode.rewards import load_reference_times, measure_reference_times, save_reference_times

    path = stage_dir / "reference_times.json"
    with distributed_state().main_process_first():  # the main process measures and saves; the others load its file
        times = load_reference_times(path, problems)
        if times is None:
            times = measure_reference_times(problems, execute)
            if distributed_state().is_main_process:
                save_reference_times(path, times)
    return times
