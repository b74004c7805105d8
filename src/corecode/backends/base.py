"""The one narrow interface every model backend implements: chat messages in, n completions out.

A conversation is a list of ``{"role": ..., "content": ...}`` dicts (OpenAI chat format). ``generate``
takes a batch of conversations and returns, for each, ``n`` sampled :class:`Completion` records with token
counts. Everything else (retries, batching, chat templates, seeds) is the backend's business.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from corecode.errors import ConfigError

__all__ = ["Message", "Conversation", "SamplingConfig", "Completion", "Backend"]

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}
Conversation = Sequence[Message]


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings shared by all backends."""

    temperature: float = field(default=0.2, metadata={"help": "0 means greedy decoding"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling mass"})
    max_tokens: int = field(default=1024, metadata={"help": "maximum new tokens per completion"})
    stop: tuple[str, ...] = field(default=(), metadata={"help": "stop strings"})
    seed: int | None = field(default=None, metadata={"help": "sampling seed, where the backend allows one"})

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def replace(self, **changes: object) -> "SamplingConfig":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Completion:
    """One sampled completion."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"  # "stop" | "length" | ...
    latency_s: float = 0.0


@runtime_checkable
class Backend(Protocol):
    """A chat model. Implementations: llama.cpp, transformers, vLLM, OpenAI-compatible HTTP, scripted."""

    name: str

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        """Return ``n`` completions for each conversation, in order. Raises BackendError on failure."""
        ...

    def close(self) -> None:
        """Release the model / connections. Idempotent."""
        ...
