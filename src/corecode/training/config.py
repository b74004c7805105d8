"""TrainConfig: every option of `corecode train`, filled from a YAML file, a preset, and `key=value` overrides.

Options map onto TRL's ``GRPOConfig`` where they have a TRL equivalent (see :mod:`corecode.training.grpo`);
anything else of GRPOConfig (DeepSpeed, vLLM tuning, logging cadence ...) goes through ``grpo:`` untouched.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError
from corecode.rewards import RewardConfig

__all__ = ["TrainConfig", "load_config", "PRESETS", "preset_path", "STAGES"]

STAGES = ("planner", "coder", "both", "debugger", "retrieval")
PRESETS = ("cpu-smoke", "cpu-demo")


def _h(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class TrainConfig:
    """One training run: which stages, which models, which data, and the GRPO settings."""

    # what to train
    method: str = field(
        default="corecode",
        metadata=_h("training method: corecode (the stages below) | cure | coderl_plus | focused_dpo (the paper's RL "
                    "baselines, METHOD.md section 6; they train coder_model alone and ignore stage)"),
    )
    method_options: dict[str, Any] = field(
        default_factory=dict,
        metadata=_h("options of a baseline method, checked by its own options dataclass "
                    "(corecode.training.baselines); unknown keys are refused"),
    )
    stage: str = field(
        default="both",
        metadata=_h("planner (stage 1 only) | coder (stage 2 only) | both | debugger / retrieval (MapCoder's "
                    "Debugging / Retrieval agent against the frozen coder_model; see docs/training.md)"),
    )
    rounds: int = field(
        default=1,
        metadata=_h("alternating rounds of the two stages (beyond the paper); in-process partners only: refused "
                    "with coder_backend / planner_backend, which cannot follow the new checkpoints"),
    )
    output_dir: str = field(default="runs/train", metadata=_h("checkpoints, logs, plots and the plan cache"))
    prepare_only: bool = field(
        default=False,
        metadata=_h("stage=coder / debugger: write the plan and debugging-case caches, then stop without training. "
                    "Run it once on one process before a multi-process run: a multi-process run refuses to write "
                    "stage-2 plans (the other ranks would wait at a barrier past the process-group timeout)"),
    )
    resume: bool = field(default=True, metadata=_h("skip finished stages and resume from the last checkpoint"))
    seed: int = field(default=0, metadata=_h("seed of TRL's sampler and of torch"))
    # models
    planner_model: str = field(
        default="builtin:qwen2.5-coder-0.5b",
        metadata=_h("policy of stage 1: builtin:NAME (a GGUF, converted once), tiny:NAME, or a HF path / id"),
    )
    coder_model: str = field(default="builtin:qwen2.5-coder-0.5b", metadata=_h("policy of stage 2 (same forms)"))
    debugger_model: str = field(
        default="builtin:qwen2.5-coder-0.5b", metadata=_h("policy of the debugger stage (same forms)")
    )
    retrieval_model: str = field(
        default="builtin:qwen2.5-coder-0.5b", metadata=_h("policy of the retrieval stage (same forms)")
    )
    retrieval_k: int = field(
        default=1, metadata=_h("retrieval stage: problems the Retrieval agent recalls, each planned from (MapCoder: 3)")
    )
    coder_backend: str | None = field(
        default=None,
        metadata=_h(
            "frozen Coder of stage 1: a corecode backend spec (e.g. openai:MODEL@URL for a vLLM server) or "
            "module:factory; None = coder_model run in-process"
        ),
    )
    planner_backend: str | None = field(
        default=None,
        metadata=_h("frozen Planner of stage 2 (backend spec or module:factory); None = the trained planner in-process"),
    )
    use_plans: bool = field(
        default=True, metadata=_h("stage 2 gives the Coder the Planner's plan; false = plain GRPO on the problem")
    )
    program_style: str = field(
        default="chat",
        metadata=_h("how the Coder policy's completion becomes a program: chat (code block, completed with the "
                    "starter code) | append (starter code + completion, for completion-style models)"),
    )
    # data
    benchmark: str = field(default="mbpp", metadata=_h("training problems: a corecode benchmark name or module:fn"))
    split: str = field(default="train", metadata=_h("split of the training problems"))
    data_path: str | None = field(default=None, metadata=_h("local file for the benchmark (MBPP jsonl ...)"))
    problem_ids: tuple[str, ...] = field(default=(), metadata=_h("train only on these problem ids"))
    limit: int | None = field(default=None, metadata=_h("at most this many training problems"))
    validation_benchmark: str | None = field(
        default=None, metadata=_h("benchmark of the validation set (None = the training benchmark)")
    )
    validation_split: str = field(default="validation", metadata=_h("split of the fixed validation set"))
    validation_ids: tuple[str, ...] = field(default=(), metadata=_h("validate on exactly these problem ids"))
    validation_limit: int = field(default=8, metadata=_h("problems in the validation set (0 = no validation)"))
    eval_steps: int = field(default=10, metadata=_h("pass@1 and Collaboration Gain every N steps (0 = only at the end)"))
    # GRPO (paper defaults: METHOD.md section 3)
    num_generations: int = field(default=5, metadata=_h("G: completions per prompt (paper ablation: 2 vs 4)"))
    coder_samples: int = field(default=2, metadata=_h("M: programs the frozen Coder writes per plan"))
    learning_rate: float = field(default=1e-6, metadata=_h("paper: 1e-6"))
    beta: float = field(default=0.01, metadata=_h("KL coefficient (paper: 0.01)"))
    epsilon: float = field(default=0.2, metadata=_h("lower clip (paper 0.2)"))
    epsilon_high: float = field(default=0.3, metadata=_h("upper clip (paper 0.3)"))
    temperature: float = field(default=1.0, metadata=_h("policy sampling temperature (paper 1.0)"))
    top_p: float = field(default=0.99, metadata=_h("policy nucleus mass (paper 0.99)"))
    max_completion_length: int = field(default=2048, metadata=_h("tokens per completion (paper 2048)"))
    per_device_train_batch_size: int = field(default=10, metadata=_h("rows per device per step"))
    gradient_accumulation_steps: int = field(default=1, metadata=_h("steps per optimizer update"))
    max_steps: int = field(default=-1, metadata=_h("optimizer steps per stage (-1 = epochs)"))
    num_train_epochs: float = field(default=1.0, metadata=_h("epochs over the training problems"))
    save_steps: int = field(default=50, metadata=_h("checkpoint every N steps"))
    logging_steps: int = field(default=1, metadata=_h("log every N steps"))
    scale_rewards: str = field(default="group", metadata=_h("group (GRPO) | batch | none (Dr. GRPO, mean only)"))
    loss_type: str = field(default="grpo", metadata=_h("TRL loss_type: grpo | dapo | dr_grpo | bnpo ..."))
    bf16: bool = field(default=False, metadata=_h("bfloat16 weights and autocast (GPU and modern CPUs)"))
    # partner sampling
    coder_temperature: float = field(default=1.0, metadata=_h("frozen Coder temperature in stage 1 (paper 1.0)"))
    partner_max_tokens: int = field(
        default=1024,
        metadata=_h("max tokens of the frozen Coder's programs in stage 1 (and of the debugger and retrieval stages' "
                    "partners); stage 2's plans are written up to max_completion_length, as the Planner was trained"),
    )
    plan_max_tokens: int | None = field(
        default=None,
        metadata=_h("max tokens of stage 2's plans: the length stage 1 trained the Planner to write. None = "
                    "max_completion_length (right when one config runs both stages); set it when stage=coder runs "
                    "with another max_completion_length than the stage-1 run"),
    )
    plan_min_chars: int = field(default=50, metadata=_h("stage 2 regenerates plans shorter than this"))
    plan_attempts: int = field(default=3, metadata=_h("tries to get a plan of plan_min_chars"))
    debug_attempts: int = field(
        default=4, metadata=_h("debugger stage: programs the frozen Coder writes per problem to find failing ones")
    )
    debug_cases_per_problem: int = field(
        default=2, metadata=_h("debugger stage: failing programs kept per problem as training prompts")
    )
    # LoRA
    use_lora: bool = field(default=True, metadata=_h("LoRA adapters (false = full fine-tuning)"))
    lora_r: int = field(default=16, metadata=_h("LoRA rank"))
    lora_alpha: int = field(default=32, metadata=_h("LoRA alpha"))
    lora_dropout: float = field(default=0.0, metadata=_h("LoRA dropout"))
    lora_target_modules: str = field(default="all-linear", metadata=_h("peft target_modules"))
    generation_batch_size: int = field(
        default=8,
        metadata=_h("conversations per generate() call of the in-process models (the frozen partner run with "
                    "transformers, and the policy at validation); larger batches use the CPU or GPU better"),
    )
    # execution
    sandbox_workers: int | None = field(default=None, metadata=_h("parallel sandbox processes (None = CPU count)"))
    # logging
    report_to: tuple[str, ...] = field(default=("tensorboard",), metadata=_h("TRL report_to: tensorboard, wandb, none"))
    log_completions: bool = field(default=True, metadata=_h("TRL's completion table in the logs"))
    rewards: RewardConfig = field(default_factory=RewardConfig, metadata=_h("reward constants"))
    grpo: dict[str, Any] = field(default_factory=dict, metadata=_h("more GRPOConfig fields, passed as they are"))

    def __post_init__(self) -> None:
        from corecode.training.baselines import METHODS

        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}; got {self.method!r}")
        if self.stage not in STAGES:
            raise ConfigError(f"stage must be one of {', '.join(STAGES)}; got {self.stage!r}")
        if self.rounds < 1:
            raise ConfigError(f"rounds must be >= 1, got {self.rounds}")
        if self.num_generations < 2:
            raise ConfigError(f"num_generations (G) must be >= 2 for a group baseline; got {self.num_generations}")
        if self.generation_batch_size < 1:
            raise ConfigError(f"generation_batch_size must be >= 1, got {self.generation_batch_size}")
        if self.coder_samples < 1:
            raise ConfigError(f"coder_samples (M) must be >= 1, got {self.coder_samples}")
        if self.program_style not in ("chat", "append"):
            raise ConfigError(f"program_style must be chat or append; got {self.program_style!r}")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise ConfigError(f"scale_rewards must be group, batch or none; got {self.scale_rewards!r}")
        if self.rounds > 1 and self.stage != "both":
            raise ConfigError(f"rounds={self.rounds} alternates the two stages: it needs stage=both")
        served = [name for name in ("coder_backend", "planner_backend") if getattr(self, name)]
        if self.rounds > 1 and served:
            raise ConfigError(
                f"rounds={self.rounds} with {' and '.join(served)} set: a served partner is a fixed model, so round 2 "
                "would train against round 1's partner (and reuse its cached plans) instead of the checkpoints round "
                "1 produced. Run one round per invocation and point the spec at the new checkpoint, e.g. "
                "`corecode train ... stage=both output_dir=runs/r2 planner_model=runs/r1/round1/planner/final "
                "coder_model=runs/r1/round1/coder/final coder_backend=<a server of runs/r1/round1/coder/final>`, "
                "or unset the backends so that each round's partner runs in-process from its checkpoint"
            )
        if self.prepare_only and self.stage not in ("coder", "debugger"):
            raise ConfigError(
                f"prepare_only needs stage=coder or stage=debugger (they generate caches before training); "
                f"stage={self.stage} has nothing slow to prepare (stage 2 of 'both' plans from the stage-1 Planner)"
            )
        if self.debug_attempts < 1 or self.debug_cases_per_problem < 1 or self.retrieval_k < 1:
            raise ConfigError("debug_attempts, debug_cases_per_problem and retrieval_k must be >= 1")
        if self.max_steps == 0 or self.eval_steps < 0 or self.validation_limit < 0:
            raise ConfigError("max_steps must be -1 or >= 1, and eval_steps and validation_limit >= 0")

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["problem_ids"], out["report_to"] = list(self.problem_ids), list(self.report_to)
        out["validation_ids"] = list(self.validation_ids)
        return out


def preset_path(name: str) -> Path:
    from importlib import resources

    from corecode.errors import UnknownNameError

    if name not in PRESETS:
        raise UnknownNameError("training preset", name, PRESETS)
    return Path(str(resources.files("corecode.training") / "presets" / f"{name}.yaml"))


def _coerce(name: str, value: Any) -> Any:
    """YAML lists become tuples for tuple fields; the `rewards` mapping becomes a RewardConfig."""
    if name == "rewards":
        if isinstance(value, RewardConfig):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"rewards must be a mapping of RewardConfig fields, got {value!r}")
        valid = {f.name for f in fields(RewardConfig)}
        unknown = sorted(set(value) - valid)
        if unknown:
            raise ConfigError(f"unknown rewards option(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")
        return RewardConfig(**value)
    if name in ("problem_ids", "validation_ids", "report_to") and isinstance(value, (list, str)):
        return tuple([value] if isinstance(value, str) else value)
    if name in _FLOAT_FIELDS and isinstance(value, str):
        # YAML 1.1 reads 1e-6 (no dot) as a string; torch would fail on it deep inside the optimizer
        try:
            return float(value)
        except ValueError as exc:
            raise ConfigError(f"{name} must be a number, got {value!r}") from exc
    return value


_FLOAT_FIELDS = {f.name for f in fields(TrainConfig) if f.type in ("float", float)}


def _apply_override(data: dict[str, Any], item: str) -> None:
    """`key=value` (value parsed as YAML); `rewards.tau=0.5` and `grpo.deepspeed=ds.json` reach nested maps."""
    import yaml

    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise ConfigError(f"override {item!r} is not key=value (e.g. max_steps=10 or rewards.tau=0.5)")
    value = yaml.safe_load(raw) if raw else ""
    head, _, sub = key.partition(".")
    if sub:
        nested = data.setdefault(head, {})
        if isinstance(nested, RewardConfig):
            nested = data[head] = dataclasses.asdict(nested)
        nested[sub] = value
    else:
        data[key] = value


def load_config(path: str | Path | None, overrides: list[str] = (), base: dict[str, Any] | None = None) -> TrainConfig:
    """Read a YAML file (or none), apply overrides, validate; errors name the file and the key."""
    import copy

    import yaml

    data: dict[str, Any] = copy.deepcopy(base or {})  # a dotted override must not change the caller's nested dicts
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read training config {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: a training config is a mapping of options, got {type(loaded).__name__}")
        data.update(loaded)
    for item in overrides:
        _apply_override(data, item)
    valid = {f.name: f for f in fields(TrainConfig)}
    unknown = sorted(set(data) - set(valid))
    if unknown:
        raise ConfigError(f"{path or 'overrides'}: unknown option(s) {', '.join(unknown)}; see `corecode train --help`")
    try:
        return TrainConfig(**{k: _coerce(k, v) for k, v in data.items()})
    except TypeError as exc:
        raise ConfigError(f"{path or 'overrides'}: {exc}") from exc
