"""``lora:BASE@ADAPTER``: one base model in memory, one LoRA adapter per role (beyond the paper).

Training with ``use_lora`` keeps each stage's adapter next to its merged checkpoint
(``<stage>/final-trainer``, trained on the same base in round 1). Loading every role as its own merged
model holds the base weights once per role; this backend loads the base once per (base, dtype, device)
in the process and adds each role's adapter to it under its own name. Before each batch it activates its
adapter, under one lock per shared model, so roles can be called from several threads::

    corecode eval --pipeline planner_coder \\
        --model planner=lora:Qwen/Qwen2.5-Coder-7B-Instruct@runs/x/round1/planner/final-trainer \\
        --model coder=lora:Qwen/Qwen2.5-Coder-7B-Instruct@runs/x/round1/coder/final-trainer

(On a GPU server the same idea is vLLM's multi-LoRA serving: ``vllm serve BASE --enable-lora
--lora-modules planner=DIR coder=DIR``, then ``openai:planner@URL`` and ``openai:coder@URL``.)
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.backends.base import Completion, Conversation, SamplingConfig
from corecode.backends.transformers_backend import (
    TransformersBackend,
    TransformersConfig,
    _import_torch_transformers,
    prepare_chat_tokenizer,
)
from corecode.errors import BackendError, ConfigError, MissingDependencyError

__all__ = ["LoraBackend", "create", "shared_models"]


@dataclass
class _Shared:
    model: Any  # a peft PeftModel over the base
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


_SHARED: dict[tuple[str, str, str], _Shared] = {}
_REGISTRY_LOCK = threading.Lock()


def shared_models() -> int:
    """How many base models this process holds for LoRA backends (for tests and diagnostics)."""
    return len(_SHARED)


def _adapter_name(adapter_dir: Path) -> str:
    return "a" + hashlib.sha256(str(adapter_dir.resolve()).encode()).hexdigest()[:12]


class LoraBackend(TransformersBackend):
    """Chat completions from a shared base model with this backend's LoRA adapter active."""

    def __init__(self, base: str, adapter: str | Path, config: TransformersConfig | None = None,
                 name: str | None = None):
        torch, transformers = _import_torch_transformers()
        try:
            from peft import PeftModel
        except ImportError as exc:
            raise MissingDependencyError("peft", "train", "the lora backend") from exc
        self._torch, self._transformers = torch, transformers
        self.config = config = config or TransformersConfig()
        adapter_dir = Path(adapter).expanduser()
        if not (adapter_dir / "adapter_config.json").is_file():
            raise ConfigError(f"lora backend: {adapter_dir} holds no adapter_config.json (a PEFT LoRA adapter directory)")
        self.name = name or f"{base}@{adapter_dir}"
        self.adapter = _adapter_name(adapter_dir)
        if config.n_threads:
            torch.set_num_threads(config.n_threads)
        tokenizer_source = adapter_dir if (adapter_dir / "tokenizer_config.json").is_file() else base
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(tokenizer_source))
        except (OSError, ValueError) as exc:
            raise BackendError(f"lora backend could not load a tokenizer from {tokenizer_source}: {exc}") from exc
        prepare_chat_tokenizer(self.tokenizer, str(tokenizer_source))  # before the shared model counts a user
        key = (str(base), config.dtype, config.device)
        with _REGISTRY_LOCK:
            shared = _SHARED.get(key)
            try:
                if shared is None:
                    dtype = "auto" if config.dtype == "auto" else getattr(torch, config.dtype)
                    model = transformers.AutoModelForCausalLM.from_pretrained(str(base), dtype=dtype)
                    peft_model = PeftModel.from_pretrained(model, str(adapter_dir), adapter_name=self.adapter)
                    shared = _SHARED[key] = _Shared(peft_model.to(config.device).eval())
                elif self.adapter not in shared.model.peft_config:
                    with shared.lock:
                        shared.model.load_adapter(str(adapter_dir), adapter_name=self.adapter)
                        shared.model.to(config.device).eval()
            except (OSError, ValueError, RuntimeError) as exc:
                raise BackendError(f"lora backend could not load {base!r} with adapter {adapter_dir}: {exc}") from exc
            shared.users += 1
        self._shared, self._key = shared, key
        self.model = shared.model

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        if self.model is None:
            raise BackendError(f"backend {self.name!r} is closed")
        with self._shared.lock:  # one active adapter at a time on the shared weights
            self.model.set_adapter(self.adapter)
            return super().generate(conversations, sampling, n)

    def close(self) -> None:
        if self.model is None:
            return
        self.model = None
        with _REGISTRY_LOCK:
            self._shared.users -= 1
            if self._shared.users == 0:
                _SHARED.pop(self._key, None)


def create(target: str, *, name: str | None = None, **options: Any) -> LoraBackend:
    """``lora:BASE@ADAPTER_DIR``: BASE is a Hub id or a checkpoint directory (the adapter's base model)."""
    base, sep, adapter = target.rpartition("@")
    if not sep or not base or not adapter:
        raise ConfigError(f"lora backend: expected lora:BASE@ADAPTER_DIR, got lora:{target}")
    try:
        config = TransformersConfig(**options)
    except TypeError as exc:
        raise ConfigError(f"lora backend: {exc}") from exc
    if config.gguf_file:
        raise ConfigError("lora backend: the base must be a normal checkpoint, not a GGUF")
    return LoraBackend(base, adapter, config, name=name)
