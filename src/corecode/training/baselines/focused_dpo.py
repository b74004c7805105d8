"""Focused-DPO (arXiv 2502.11475; no public code), ``corecode train method=focused_dpo``: METHOD.md section 6.

1. **Pairs.** Per training prompt the policy (``coder_model``) samples ``samples`` = 10 programs at temperature
   1.5 (the plain Coder prompt, no plan); each runs on the problem's ground-truth tests in the real sandbox.
   Correct = passes every test; incorrect = fails at least one; a program the sandbox failed to run (our
   side) is neither. The paper ranks programs with a PageRank over programs and generated tests; we rank by
   the ground-truth pass rate instead (our simplification): chosen = the first correct program in sample
   order, rejected = the incorrect program with the lowest pass rate (the first of those in sample order).
   A prompt without a (correct, incorrect) pair is dropped; the share dropped is printed and written to
   ``pairs-summary.json``. Every prompt's samples, outcomes and pair are appended to
   ``samples-<key>.jsonl`` as soon as they are scored (key: the policy checkpoint and the sampling settings),
   so a rerun samples only the prompts missing from the file. ``prepare_only=true`` (with ``stage=coder``, which
   TrainConfig asks of prepare_only) samples and stops; a multi-process run refuses to sample (rank 0 would
   sample while the other ranks wait at a barrier), so real runs sample first on one process, best with
   ``sample_backend`` pointing at a vLLM server of ``coder_model``.
2. **Split** (token ids, :func:`split_pair`). Chosen c and rejected r are the completion token ids TRL's
   DPOTrainer trains on (prompt + completion through the chat template; the completion ends with the end of
   turn). Prefix: the longest common prefix, P = max p with c[:p] == r[:p]. Suffix: the longest common
   suffix *of what follows the prefix*, S = max s <= min(|c|, |r|) - P with c[|c|-s:] == r[|r|-s:] (the
   prefix is taken first, greedily, so prefix and suffix never overlap; when one sequence is the other plus
   tokens, that middle is empty). Middles: c[P:|c|-S] and r[P:|r|-S].
3. **Loss.** With lr(X) = sum over the tokens X of log pi(token) - log pi_ref(token)::

       L = -log sigmoid(beta * [w (lr(mid_c) - lr(mid_r)) + lr(suffix_c)]),   w = middle_weight = 2

   The common prefix has the same tokens in the same context in both sequences, so its log-ratios cancel
   and it is left out; the rejected suffix is dropped. Implemented as per-token weights (chosen: 0 on the
   prefix, w on its middle, 1 on its suffix; rejected: 0, w, 0) inside a subclass of TRL's DPOTrainer that
   replaces ``_compute_loss`` and ``compute_ref_log_probs``; TRL's tokenization, collator, reference model
   (or disabled LoRA adapter), optimizer, checkpoints and resume are used as they are. The override was
   written against TRL's DPOTrainer internals of :data:`SUPPORTED_TRL`; other versions are refused.

Logged per step (``metrics.jsonl``): TRL's ``loss`` (the focused loss), ``rewards/chosen`` and
``rewards/rejected`` (beta times the weighted log-ratios), ``rewards/margins`` and ``rewards/accuracies``
(the focused preference), ``focused/lr_mid_chosen``, ``focused/lr_mid_rejected``, ``focused/lr_suffix_chosen``;
``focused-steps-rank<r>.jsonl`` has, per step, the pairs of the batch and their losses.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError, TrainingError
from corecode.training.baselines import check_option_names
from corecode.types import Problem

__all__ = ["FocusedDPOOptions", "SUPPORTED_TRL", "require_supported_trl", "split_pair", "pair_weights", "pick_pair",
           "PairStore", "train"]

# [low, high): the TRL releases whose DPOTrainer internals the override below was written against and checked in
# (1.16.0: _compute_loss / compute_ref_log_probs, the fused LM head's ``log_probs``, DataCollatorForPreference)
SUPPORTED_TRL = ((1, 16, 0), (1, 17, 0))


def _h(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class FocusedDPOOptions:
    """``method_options`` of ``method=focused_dpo``."""

    samples: int = field(default=10, metadata=_h("programs sampled per prompt to find a pair (authors: 10)"))
    sample_temperature: float = field(default=1.5, metadata=_h("sampling temperature of the pairs (authors: 1.5)"))
    sample_top_p: float = field(default=1.0, metadata=_h("nucleus mass of the pair sampling (1.0: none)"))
    middle_weight: float = field(default=2.0, metadata=_h("w, the weight of the middles' log-ratios (authors: 2)"))
    beta: float = field(default=0.1, metadata=_h("DPO beta (not stated in METHOD.md; TRL's default)"))
    sample_backend: str | None = field(
        default=None,
        metadata=_h("backend spec that samples the pairs instead of the in-process policy, e.g. openai:NAME@URL of a "
                    "vLLM server of the same coder_model checkpoint (it must serve that checkpoint: not checked)"),
    )
    max_length: int | None = field(
        default=None, metadata=_h("DPOConfig.max_length: prompt + completion tokens (None: no truncation)"))
    dpo: dict[str, Any] = field(default_factory=dict, metadata=_h("more DPOConfig fields, passed as they are"))

    def __post_init__(self) -> None:
        if self.samples < 2:
            raise ConfigError(f"focused_dpo: samples must be >= 2 to find a (correct, incorrect) pair; got {self.samples}")
        if self.sample_temperature <= 0:
            raise ConfigError(f"focused_dpo: sample_temperature must be > 0; got {self.sample_temperature}")
        if not 0 < self.sample_top_p <= 1:
            raise ConfigError(f"focused_dpo: sample_top_p must be in (0, 1]; got {self.sample_top_p}")
        if self.middle_weight <= 0 or self.beta <= 0:
            raise ConfigError("focused_dpo: middle_weight and beta must be > 0")
        if self.max_length is not None and self.max_length < 2:
            raise ConfigError(f"focused_dpo: max_length must be None or >= 2; got {self.max_length}")
        clash = sorted(set(self.dpo) & {"loss_type", "loss_weights", "ld_alpha", "use_weighting", "f_divergence_type",
                                         "beta", "max_length", "output_dir"})
        if clash:
            raise ConfigError(f"focused_dpo: dpo.{', dpo.'.join(clash)} cannot be set: the focused loss replaces TRL's "
                              "loss (beta and max_length are options of their own; output_dir is the run's)")

    @classmethod
    def from_config(cls, config: Any) -> "FocusedDPOOptions":
        given = dict(config.method_options or {})
        check_option_names("focused_dpo", cls, given)
        if "dpo" in given and not isinstance(given["dpo"], dict):
            raise ConfigError("focused_dpo: dpo must be a mapping of DPOConfig fields")
        for name in ("sample_temperature", "sample_top_p", "middle_weight", "beta"):
            if isinstance(given.get(name), str):
                try:
                    given[name] = float(given[name])
                except ValueError as exc:
                    raise ConfigError(f"focused_dpo: {name} must be a number, got {given[name]!r}") from exc
        return cls(**given)


def require_supported_trl(version: str | None = None) -> None:
    """Refuse a TRL whose DPOTrainer internals the focused loss was not written against."""
    from packaging.version import Version

    if version is None:
        import trl

        version = trl.__version__
    low, high = SUPPORTED_TRL
    if not low <= Version(version).release[:3] < high:
        raise TrainingError(
            f"method=focused_dpo overrides TRL DPOTrainer internals checked in trl >= {'.'.join(map(str, low))}, "
            f"< {'.'.join(map(str, high))}; this is trl {version}. Install the pinned one: "
            "pip install -c constraints.txt -e '.[train]'"
        )


# ----------------------------------------------------------------------------------------------- the split


def split_pair(chosen: Sequence[int], rejected: Sequence[int]) -> tuple[int, int]:
    """(P, S): the longest common prefix, then the longest common suffix of the rest (see the module doc)."""
    shorter = min(len(chosen), len(rejected))
    prefix = 0
    while prefix < shorter and chosen[prefix] == rejected[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shorter - prefix and chosen[len(chosen) - 1 - suffix] == rejected[len(rejected) - 1 - suffix]:
        suffix += 1
    return prefix, suffix


def pair_weights(n_chosen: int, n_rejected: int, prefix: int, suffix: int, w: float) -> tuple[list[float], list[float]]:
    """Per-token weights of the completions: chosen 0 (prefix) / w (middle) / 1 (suffix); rejected 0 / w / 0."""
    chosen = [0.0] * prefix + [w] * (n_chosen - prefix - suffix) + [1.0] * suffix
    rejected = [0.0] * prefix + [w] * (n_rejected - prefix - suffix) + [0.0] * suffix
    return chosen, rejected


# ------------------------------------------------------------------------------------------------ the pairs


def pick_pair(samples: Sequence[dict[str, Any]]) -> tuple[int, int] | None:
    """(chosen, rejected) indices: the first correct program, the incorrect one with the lowest pass rate."""
    correct = [i for i, s in enumerate(samples) if s["passed"] is True]
    wrong = [i for i, s in enumerate(samples) if s["passed"] is False]
    if not correct or not wrong:
        return None
    chosen = correct[0]
    rejected = min(wrong, key=lambda i: (samples[i]["pass_rate"], i))
    return chosen, rejected


class PairStore:
    """The sampled programs, their outcomes and the pair of each prompt, one JSON line per prompt (resumable)."""

    def __init__(self, directory: Path, key: str):
        self.path = Path(directory) / f"samples-{key}.jsonl"

    def load(self) -> dict[str, dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    rows[row["problem_id"]] = row
                except (json.JSONDecodeError, KeyError) as exc:
                    raise TrainingError(f"{self.path}, row {number}: not a focused_dpo sample record ({exc})") from exc
        return rows

    def ensure(self, problems: Sequence[Problem], sample, batch: int) -> dict[str, dict[str, Any]]:
        """``sample(problems) -> [[{"text", "passed", "pass_rate"}] per problem]`` for the prompts not on file."""
        rows = self.load()
        todo = [p for p in problems if p.id not in rows]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            with self.path.open("a", encoding="utf-8") as fh:
                for problem, samples in zip(chunk, sample(chunk)):
                    row = {"problem_id": problem.id, "samples": samples, "pair": pick_pair(samples)}
                    rows[problem.id] = row
                    fh.write(json.dumps(row) + "\n")
        return {p.id: rows[p.id] for p in problems}


def _store_key(checkpoint: str, options: FocusedDPOOptions, max_tokens: int, program_style: str, seed: int) -> str:
    from corecode.training.partners import checkpoint_hash

    settings = {"policy": checkpoint_hash(checkpoint), "samples": options.samples, "seed": seed,
                "temperature": options.sample_temperature, "top_p": options.sample_top_p,
                "max_tokens": max_tokens, "program_style": program_style}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _sampler(backend: Any, config: Any, options: FocusedDPOOptions, execute, build_program):
    from corecode.agents import TaskView, render_prompt
    from corecode.backends import SamplingConfig

    sampling = SamplingConfig(temperature=options.sample_temperature, top_p=options.sample_top_p,
                              max_tokens=config.max_completion_length)

    def sample(problems: Sequence[Problem]) -> list[list[dict[str, Any]]]:
        conversations = [render_prompt("coder", TaskView.from_problem(p)) for p in problems]
        groups = backend.generate(conversations, sampling, n=options.samples)
        texts = [[c.text for c in group] for group in groups]
        jobs = [(build_program(p, t), p) for p, group in zip(problems, texts) for t in group]
        results = iter(execute(jobs))
        out = []
        for group in texts:
            rows = []
            for text in group:
                result = next(results)
                rows.append({"text": text, "passed": None if result is None else bool(result.passed),
                             "pass_rate": None if result is None else result.pass_rate})
            out.append(rows)
        return out

    return sample


def preference_rows(problems: Sequence[Problem], records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """TRL's conversational preference rows for the prompts with a pair (``pair_index``: the row's number)."""
    from corecode.agents import TaskView, render_prompt

    rows = []
    for p in problems:
        pair = records[p.id]["pair"]
        if pair is None:
            continue
        samples = records[p.id]["samples"]
        rows.append({
            "prompt": render_prompt("coder", TaskView.from_problem(p)),
            "chosen": [{"role": "assistant", "content": samples[pair[0]]["text"]}],
            "rejected": [{"role": "assistant", "content": samples[pair[1]]["text"]}],
            "problem_id": p.id,
            "pair_index": len(rows),
        })
    return rows


# ---------------------------------------------------------------------------------------------- the trainer


def _trainer_class():
    """FocusedDPOTrainer, built on first use (torch and trl are imported only when the method runs)."""
    import contextlib

    import torch
    import torch.nn.functional as F
    from accelerate.utils import is_peft_model
    from trl import DPOTrainer
    from trl.models.utils import disable_gradient_checkpointing
    from trl.trainer.dpo_trainer import DataCollatorForPreference
    from trl.trainer.utils import pad, use_adapter

    class FocusedCollator(DataCollatorForPreference):
        """TRL's preference collator plus ``focus_segments`` (aligned with ``completion_mask``, the chosen rows first,
        then the rejected ones: 0 prompt or padding, 1 common prefix, 2 middle, 3 common suffix) and ``pair_index``."""

        def torch_call(self, examples):
            out = super().torch_call(examples)
            segments = []
            for side in ("chosen_ids", "rejected_ids"):
                for ex in examples:
                    n, prefix, suffix = len(ex[side]), ex["focus_prefix"], ex["focus_suffix"]
                    segments.append([0] * len(ex["prompt_ids"]) + [1] * prefix + [2] * (n - prefix - suffix) + [3] * suffix)
            if self.max_length is not None:  # the parent's truncation, on the segments
                sl = slice(None, self.max_length) if self.truncation_mode == "keep_start" else slice(-self.max_length, None)
                segments = [s[sl] for s in segments]
            out["focus_segments"] = pad([torch.tensor(s, dtype=torch.long) for s in segments], padding_value=0,
                                        padding_side="right", pad_to_multiple_of=self.pad_to_multiple_of)
            out["pair_index"] = torch.tensor([ex["pair_index"] for ex in examples])
            return out

    class FocusedDPOTrainer(DPOTrainer):
        _extra = ("focus_segments", "pair_index")

        def __init__(self, *args, middle_weight: float, steps_log: Path | None = None, **kwargs):
            self.middle_weight = middle_weight
            self.steps_log = steps_log
            super().__init__(*args, **kwargs)

        def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
            dataset = super()._prepare_dataset(dataset, processing_class, args, dataset_name)

            def add_split(example):
                prefix, suffix = split_pair(example["chosen_ids"], example["rejected_ids"])
                return {"focus_prefix": prefix, "focus_suffix": suffix}

            return dataset.map(add_split, desc=f"Splitting the {dataset_name} pairs")

        def _set_signature_columns_if_needed(self):
            super()._set_signature_columns_if_needed()
            for column in ("focus_prefix", "focus_suffix", "pair_index"):
                if column not in self._signature_columns:
                    self._signature_columns.append(column)

        def _model_inputs(self, inputs):
            skip = {"completion_mask", "ref_chosen_logps", "ref_rejected_logps", *self._extra}
            kwargs = {k: v for k, v in inputs.items() if k not in skip}
            kwargs["use_cache"] = False
            labels = inputs["input_ids"].masked_fill(inputs["completion_mask"] == 0, -100)
            return kwargs, labels

        def _segments(self, inputs, seq_len):
            """The segments of the predicted tokens (log_probs[:, t] scores token t + 1)."""
            segments = inputs["focus_segments"][..., 1:][:, -seq_len:]
            return segments * (inputs["completion_mask"][..., 1:][:, -seq_len:] > 0)

        def _weighted(self, per_token, inputs):
            """Per sequence: sum of w x log-prob over the middle, plus (chosen rows only) the suffix's."""
            segments = self._segments(inputs, per_token.size(1))
            half = segments.size(0) // 2
            suffix_weight = torch.ones_like(segments[:, :1], dtype=per_token.dtype)
            suffix_weight[half:] = 0.0  # the rejected suffix is dropped
            weights = (segments == 2).to(per_token.dtype) * self.middle_weight + (segments == 3).to(per_token.dtype) * suffix_weight
            return (per_token * weights).sum(dim=1)

        def _reference_logps(self, model_kwargs, labels):
            with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
                if is_peft_model(self.model) and self.ref_model is None:
                    unwrapped = self.accelerator.unwrap_model(self.model)
                    with use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None):
                        return self.model(**model_kwargs, labels=labels, fused_lm_head=True).log_probs
                return self.ref_model(**model_kwargs, labels=labels, fused_lm_head=True).log_probs

        def compute_ref_log_probs(self, model, inputs):
            """precompute_ref_log_probs: the reference's weighted sums, as the focused loss reads them."""
            model_kwargs, labels = self._model_inputs(inputs)
            adapter = contextlib.nullcontext()
            if self.ref_model is None and is_peft_model(self.model):
                unwrapped = self.accelerator.unwrap_model(self.model)
                adapter = use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None)
            with (torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs),
                  adapter, self.accelerator.autocast()):
                ref = model(**model_kwargs, labels=labels, fused_lm_head=True).log_probs
            ref = ref[:, -(inputs["completion_mask"].size(1) - 1):]
            return self._weighted(ref, inputs).chunk(2, dim=0)

        def _compute_loss(self, model, inputs, return_outputs):
            if return_outputs:
                raise TrainingError("focused_dpo does not return logits (compute_metrics is not supported)")
            mode = "train" if self.model.training else "eval"
            model_kwargs, labels = self._model_inputs(inputs)
            outputs = model(**model_kwargs, labels=labels, fused_lm_head=True)
            seq_len = inputs["completion_mask"].size(1) - 1
            per_token = outputs.log_probs[:, -seq_len:]
            ref_per_token = None
            if self.precompute_ref_logps:
                ref_chosen, ref_rejected = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
            else:
                ref_per_token = self._reference_logps(model_kwargs, labels)[:, -seq_len:]
                ref_chosen, ref_rejected = self._weighted(ref_per_token, inputs).chunk(2, dim=0)
            chosen, rejected = self._weighted(per_token, inputs).chunk(2, dim=0)
            chosen_lr, rejected_lr = chosen - ref_chosen, rejected - ref_rejected
            score = chosen_lr - rejected_lr  # w (lr(mid_c) - lr(mid_r)) + lr(suffix_c)
            per_pair = -F.logsigmoid(self.beta * score)
            loss = per_pair.mean()

            gather = self.accelerator.gather
            metrics = self._metrics[mode]
            metrics["rewards/chosen"].append(gather(self.beta * chosen_lr.detach()).mean().item())
            metrics["rewards/rejected"].append(gather(self.beta * rejected_lr.detach()).mean().item())
            metrics["rewards/margins"].append(gather(self.beta * score.detach()).mean().item())
            metrics["rewards/accuracies"].append(gather((score.detach() > 0).float()).mean().item())
            if ref_per_token is not None:  # the three unweighted log-ratio sums of the loss
                diff = per_token.detach() - ref_per_token
                segments = self._segments(inputs, seq_len)
                d_c, d_r = diff.chunk(2, dim=0)
                s_c, s_r = segments.chunk(2, dim=0)
                metrics["focused/lr_mid_chosen"].append(gather((d_c * (s_c == 2)).sum(1)).mean().item())
                metrics["focused/lr_mid_rejected"].append(gather((d_r * (s_r == 2)).sum(1)).mean().item())
                metrics["focused/lr_suffix_chosen"].append(gather((d_c * (s_c == 3)).sum(1)).mean().item())
            if mode == "train" and self.steps_log is not None:
                record = {"step": self.state.global_step, "pair_index": inputs["pair_index"].tolist(),
                          "loss": per_pair.detach().double().tolist(), "loss_mean": loss.item()}
                with self.steps_log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
            return loss

    return FocusedDPOTrainer, FocusedCollator


# --------------------------------------------------------------------------------------------------- train


def _sample_pairs(config, options, store, problems, model, tokenizer, execute, build_program):
    """The store's records of ``problems``, sampling the missing ones with the policy (or ``sample_backend``)."""
    import torch

    from corecode.training.partners import PolicyBackend, partner_backend

    if not set(p.id for p in problems) - set(store.load()):
        return store.ensure(problems, None, 1)
    torch.manual_seed(config.seed)
    if options.sample_backend:
        backend = partner_backend(options.sample_backend, "", config.bf16, config.generation_batch_size)
    else:
        if torch.cuda.is_available():  # sample on this process's GPU; the Trainer places the model again later
            from corecode.training.models import distributed_state

            model.to(f"cuda:{distributed_state().local_process_index}")
        backend = PolicyBackend(model, tokenizer, name="focused-dpo-policy", batch_size=config.generation_batch_size)
    try:
        return store.ensure(problems, _sampler(backend, config, options, execute, build_program),
                            batch=max(1, config.generation_batch_size))
    finally:
        if options.sample_backend:
            backend.close()


def _dpo_args(config: Any, options: FocusedDPOOptions, stage_dir: Path):
    import torch
    from trl import DPOConfig

    values: dict[str, Any] = {
        "output_dir": str(stage_dir), "learning_rate": config.learning_rate, "beta": options.beta,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps, "max_steps": config.max_steps,
        "num_train_epochs": config.num_train_epochs, "save_steps": config.save_steps, "save_strategy": "steps",
        "logging_steps": config.logging_steps, "bf16": config.bf16, "seed": config.seed,
        "report_to": [r for r in config.report_to if r != "none"] or "none", "max_length": options.max_length,
        "loss_type": ["sigmoid"],
    }
    if not torch.cuda.is_available():
        values["use_cpu"] = True
    values.update(options.dpo)
    try:
        return DPOConfig(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"TRL rejected the focused_dpo DPO settings: {exc}") from exc


def train(config: Any, problems: list[Problem], validation: list[Problem]) -> dict[str, str]:
    """Sample and label the pairs (resumably), then Focused-DPO on them; return {"coder": final checkpoint}."""
    options = FocusedDPOOptions.from_config(config)
    require_supported_trl()
    from corecode.backends import SamplingConfig
    from corecode.rewards import sandbox_executor
    from corecode.rewards.trl_rewards import PROGRAM_BUILDERS
    from corecode.training.callbacks import CollaborationProbe, MetricsCallback, ValidationCallback
    from corecode.training.data import to_dataset
    from corecode.training.grpo import last_checkpoint, open_sandbox, save_final
    from corecode.training.models import distributed_state, load_policy, resolve_model
    from corecode.training.partners import PolicyBackend

    stage_dir = Path(config.output_dir) / "focused_dpo"
    final = stage_dir / "final"
    if config.resume and final.is_dir():
        return {"coder": str(final)}
    stage_dir.mkdir(parents=True, exist_ok=True)
    init = resolve_model(config.coder_model, config.seed)
    model, tokenizer = load_policy(init, config.bf16)
    state = distributed_state()
    build_program = PROGRAM_BUILDERS[config.program_style]
    with open_sandbox(config) as sandbox:
        execute = sandbox_executor(sandbox, measure=False)
        store = PairStore(stage_dir, _store_key(init, options, config.max_completion_length, config.program_style,
                                                config.seed))
        missing = {p.id for p in problems} - set(store.load())
        if missing and state.num_processes > 1:  # every rank checks before any barrier, so all stop together
            raise TrainingError(
                f"{len(missing)} of the {len(problems)} prompts have no Focused-DPO samples in {store.path}, and a "
                "multi-process run does not write them (the other ranks would wait at a barrier past the process "
                "group's timeout while rank 0 samples). Sample them first on ONE process: the same command with "
                "prepare_only=true stage=coder (method_options.sample_backend=openai:NAME@URL samples with a vLLM "
                "server of coder_model), then launch the training")
        with state.main_process_first():  # the main process samples; the others read its file
            records = _sample_pairs(config, options, store, problems, model, tokenizer, execute, build_program)
        if config.prepare_only:
            return {"samples": str(store.path)}
        rows = preference_rows(problems, records)
        summary = {"prompts": len(problems), "pairs": len(rows), "dropped": len(problems) - len(rows),
                   "dropped_share": (len(problems) - len(rows)) / len(problems), "samples_file": store.path.name}
        if state.is_main_process:
            (stage_dir / "pairs-summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
            print(f"corecode train focused_dpo: {summary['pairs']} pairs from {summary['prompts']} prompts; "
                  f"{summary['dropped']} ({100 * summary['dropped_share']:.1f} %) dropped without a (correct, "
                  "incorrect) pair", file=sys.stderr)
        if not rows:
            raise TrainingError(f"focused_dpo: none of the {len(problems)} prompts has a (correct, incorrect) pair among "
                                f"its {options.samples} samples ({store.path}); nothing to train on")
        callbacks: list[Any] = [MetricsCallback(stage_dir)]
        if validation:
            probe = CollaborationProbe(
                validation, plans=None,
                coder=lambda m: PolicyBackend(m, tokenizer, name="coder-policy", batch_size=config.generation_batch_size),
                execute=execute, build_program=build_program,
                coder_sampling=SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length),
            )
            callbacks.append(ValidationCallback(probe, config.eval_steps, stage_dir, "coder"))
        trainer_class, collator_class = _trainer_class()
        args = _dpo_args(config, options, stage_dir)
        collator = collator_class(pad_token_id=tokenizer.pad_token_id, max_length=args.max_length,
                                  truncation_mode=args.truncation_mode, pad_to_multiple_of=args.pad_to_multiple_of)
        peft_config = None
        if config.use_lora:
            from peft import LoraConfig

            peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                     target_modules=config.lora_target_modules, task_type="CAUSAL_LM")
        trainer = trainer_class(
            model=model, args=args, data_collator=collator, train_dataset=to_dataset(rows), processing_class=tokenizer,
            peft_config=peft_config, callbacks=callbacks, middle_weight=options.middle_weight,
            steps_log=stage_dir / f"focused-steps-rank{state.process_index}.jsonl",
        )
        trainer.train(resume_from_checkpoint=last_checkpoint(stage_dir) if config.resume else None)
        (stage_dir / "options.json").write_text(json.dumps(asdict(options), indent=2), encoding="utf-8")
        return {"coder": str(save_final(trainer, tokenizer, stage_dir, init, config.use_lora, config.bf16))}
