"""Model specs -> normal, trainable checkpoints on disk, and loading them for training.

* ``tiny:NAME`` -- a tiny model built from a config (:mod:`corecode.training.tiny`), cached per seed.
* ``builtin:NAME`` -- a built-in GGUF (``corecode models``), dequantized by transformers and saved ONCE as a
  normal checkpoint: the model transformers loads from a GGUF still carries a quantizer that the Trainer
  refuses ("quantization method do not support training"), so we drop it and ``save_pretrained``.
  The converted checkpoint reloads in seconds with identical logits.
* anything else -- a Hugging Face Hub id or a local checkpoint directory, used as it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError, MissingDependencyError, TrainingError

__all__ = ["distributed_state", "resolve_model", "convert_gguf", "load_policy", "import_training_stack"]


def import_training_stack() -> None:
    """Fail early, with the extra to install, when torch / transformers / trl / peft are missing."""
    for package in ("torch", "transformers", "trl", "peft", "datasets"):
        try:
            __import__(package)
        except ImportError as exc:
            raise MissingDependencyError(package, "train", "corecode train") from exc


def _cache_root() -> Path:
    return Path(os.environ.get("CORECODE_CACHE") or Path.home() / ".cache" / "corecode")


def convert_gguf(name: str, dest: Path | None = None) -> Path:
    """Convert the built-in GGUF model ``name`` to a float checkpoint directory (once; cached)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.backends.builtin_models import ensure_model

    gguf = ensure_model(name)
    dest = dest or _cache_root() / "checkpoints" / name
    marker = dest / "corecode-converted.json"
    source = {"gguf": str(gguf), "size": gguf.stat().st_size}
    if marker.is_file() and json.loads(marker.read_text()) == source:
        return dest
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    # the GGUF quantizer is what makes the Trainer refuse the model: forget it, keep the dequantized weights
    model.hf_quantizer = None
    model.is_quantized = False
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    tmp = dest.with_name(dest.name + ".partial")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if dest.exists():
        import shutil

        shutil.rmtree(dest)
    tmp.rename(dest)
    marker.write_text(json.dumps(source))
    return dest


def resolve_model(spec: str, seed: int = 0) -> str:
    """A directory or Hub id that ``from_pretrained`` can load without a quantizer."""
    kind, sep, target = spec.partition(":")
    if sep and kind == "tiny":
        from corecode.training.tiny import build_tiny_model

        return str(build_tiny_model(target, _cache_root() / "tiny" / f"{target}-seed{seed}", seed=seed))
    if sep and kind == "builtin":
        return str(convert_gguf(target))
    if sep and kind not in ("tiny", "builtin") and not Path(spec).exists():
        raise ConfigError(f"model {spec!r}: use tiny:NAME, builtin:NAME, a Hub id or a checkpoint directory")
    return spec


def distributed_state() -> Any:
    """accelerate's PartialState, created as training needs it.

    On a machine without CUDA, torchrun's processes only join one process group (MULTI_CPU) when the first
    PartialState of the process is created with ``cpu=True``; a plain ``PartialState()`` there reports a
    single process, so every ``main_process_first`` is a no-op and both ranks race on shared files (seen
    as a half-written tiny model read by rank 1). Every training module gets its state from here.
    """
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def load_policy(path: str, bf16: bool) -> tuple[Any, Any]:
    """(model, tokenizer) from a checkpoint directory, ready for TRL (eos and pad set)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if bf16 else torch.float32)
    except (OSError, ValueError) as exc:
        raise TrainingError(f"cannot load the policy model {path!r}: {exc}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.chat_template:
        raise TrainingError(f"{path!r} has no chat template: corecode trains chat models (Planner and Coder roles)")
    return model, tokenizer
