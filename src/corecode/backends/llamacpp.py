"""llama.cpp backend (llama-cpp-python): GGUF models on CPU, the built-in default.

The chat template comes from the GGUF's own metadata (llama-cpp-python renders ``tokenizer.chat_template``
when no ``chat_format`` is given). A loaded model is shared process-wide: a pipeline whose Planner and
Coder run on one model loads it once, and calls into one model are serialized by a lock because a
llama.cpp context is not thread-safe. Sample ``j`` of a request uses seed ``sampling.seed + j``, so a
conversation's samples are reproducible whatever else is in the batch (a seeded request re-evaluates its
prompt from an empty cache: see ``_one``). Unseeded requests reuse the cached prompt prefix.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.backends.base import Completion, Conversation, SamplingConfig
from corecode.backends.builtin_models import BUILTIN_MODELS, ensure_model
from corecode.errors import BackendError, ConfigError, MissingDependencyError

__all__ = ["LlamaCppConfig", "LlamaCppBackend", "create", "default_threads"]


def default_threads() -> int:
    """The free cores when the model loads: usable cores minus the 1-minute load average, at least 1.

    llama.cpp's threads spin-wait for each other at every step, so on an oversubscribed machine more
    threads are slower, not faster: on the shared 2-core machine (load ~4) the 0.5B made 2.2-4.8 tok/s
    with 1 thread and 0.9-1.3 tok/s with 2, burning 2.5-3x the CPU time.
    """
    try:
        usable = len(os.sched_getaffinity(0))  # Linux: the cores this process may run on
    except AttributeError:  # macOS has no affinity masks
        usable = os.cpu_count() or 1
    busy = round(os.getloadavg()[0])
    return max(1, min(usable, usable - busy))


@dataclass(frozen=True)
class LlamaCppConfig:
    """How llama.cpp loads a model."""

    n_ctx: int = field(default=4096, metadata={"help": "context window in tokens (prompt + completion)"})
    n_threads: int | None = field(
        default=None, metadata={"help": "CPU threads; None = the free cores at load time (see default_threads)"}
    )
    n_batch: int = field(default=512, metadata={"help": "prompt tokens evaluated per step"})
    n_gpu_layers: int = field(default=0, metadata={"help": "layers offloaded to a GPU build; -1 = all"})
    chat_format: str | None = field(
        default=None, metadata={"help": "llama-cpp-python chat format; None = the GGUF's own template"}
    )
    verbose: bool = field(default=False, metadata={"help": "print llama.cpp's load and timing logs"})

    def __post_init__(self) -> None:
        if self.n_ctx < 16:
            raise ConfigError(f"n_ctx must be >= 16, got {self.n_ctx}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ConfigError(f"n_threads must be >= 1 or None, got {self.n_threads}")
        if self.n_batch < 1:
            raise ConfigError(f"n_batch must be >= 1, got {self.n_batch}")


class _SharedModel:
    """One loaded llama.cpp model, its lock and how many backends use it."""

    def __init__(self, llama: Any):
        self.llama = llama
        self.lock = threading.Lock()
        self.users = 0


_MODELS: dict[tuple[str, LlamaCppConfig], _SharedModel] = {}
_MODELS_LOCK = threading.Lock()


def _acquire(path: Path, config: LlamaCppConfig) -> _SharedModel:
    key = (str(path.resolve()), config)
    with _MODELS_LOCK:
        shared = _MODELS.get(key)
        if shared is None:
            shared = _MODELS[key] = _SharedModel(_load(path, config))
        shared.users += 1
        return shared


def _release(path: Path, config: LlamaCppConfig) -> None:
    key = (str(path.resolve()), config)
    with _MODELS_LOCK:
        shared = _MODELS.get(key)
        if shared is None:
            return
        shared.users -= 1
        if shared.users <= 0:
            del _MODELS[key]
            shared.llama.close()


def _load(path: Path, config: LlamaCppConfig) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise MissingDependencyError("llama-cpp-python", "llama", "the llama.cpp backend") from exc
    if not path.is_file():
        raise ConfigError(f"GGUF file not found: {path}")
    from corecode.backends.llama_probe import model_params_patch, safe_load_mode

    mode = safe_load_mode(path)  # a build that would die on a signal here is caught in a child process
    try:
        with model_params_patch(mode):
            return Llama(
                model_path=str(path),
                n_ctx=config.n_ctx,
                n_threads=config.n_threads or default_threads(),
                n_batch=config.n_batch,
                n_gpu_layers=config.n_gpu_layers,
                chat_format=config.chat_format,
                verbose=config.verbose,
            )
    except ValueError as exc:  # llama-cpp-python reports a bad file as ValueError
        raise BackendError(f"llama.cpp could not load {path}: {exc}") from exc


class LlamaCppBackend:
    """Chat completions from a GGUF file through llama-cpp-python."""

    def __init__(self, model_path: str | Path, config: LlamaCppConfig | None = None, name: str | None = None):
        self.path = Path(model_path)
        self.config = config or LlamaCppConfig()
        self.name = name or self.path.name
        self._shared: _SharedModel | None = _acquire(self.path, self.config)
        self._seeds = random.Random()  # seeds for calls without sampling.seed

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        if self._shared is None:
            raise BackendError(f"backend {self.name!r} is closed")
        if n < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        return [[self._one(conv, sampling, j) for j in range(n)] for conv in conversations]

    def _one(self, conversation: Conversation, sampling: SamplingConfig, index: int) -> Completion:
        assert self._shared is not None
        seed = sampling.seed + index if sampling.seed is not None else self._seeds.randrange(2**31)
        start = time.perf_counter()
        with self._shared.lock:
            if sampling.seed is not None and index == 0:
                # llama-cpp-python reuses the cached prefix of the previous prompt, and logits computed
                # through another split of the prompt differ in the last bits: enough to change a sample.
                # A seeded request starts from an empty cache so its samples repeat exactly.
                self._shared.llama.reset()
            try:
                response = self._shared.llama.create_chat_completion(
                    messages=[dict(m) for m in conversation],
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens,
                    stop=list(sampling.stop) or None,
                    seed=seed,
                )
            except ValueError as exc:  # e.g. the prompt does not fit in n_ctx
                raise BackendError(f"llama.cpp ({self.name}): {exc}") from exc
        choice = response["choices"][0]
        usage = response["usage"]
        return Completion(
            text=choice["message"]["content"] or "",
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            finish_reason=choice["finish_reason"] or "stop",
            latency_s=time.perf_counter() - start,
        )

    def close(self) -> None:
        if self._shared is not None:
            self._shared = None
            _release(self.path, self.config)

    def __enter__(self) -> "LlamaCppBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def create(target: str, *, name: str | None = None, **options: Any) -> LlamaCppBackend:
    """``llamacpp:PATH.gguf`` or ``llamacpp:BUILTIN`` (joined and verified first); options fill LlamaCppConfig."""
    if not target:
        raise ConfigError("the llamacpp backend needs a target: a built-in model name or a .gguf path")
    try:
        config = LlamaCppConfig(**options)
    except TypeError as exc:
        raise ConfigError(f"llamacpp backend: {exc}") from exc
    if target in BUILTIN_MODELS:
        return LlamaCppBackend(ensure_model(target), config, name=name or target)
    return LlamaCppBackend(Path(target).expanduser(), config, name=name)
