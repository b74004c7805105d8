"""vLLM in-process backend, for machines with a CUDA GPU (the optional extra ``vllm``).

``vllm.LLM.chat`` applies the model's chat template and batches every conversation of a call on the GPU;
``SamplingParams(n=...)`` draws the samples of a conversation together, sharing its prompt's KV cache.
Not exercised by the CPU test suite (vLLM needs a GPU); to serve vLLM over HTTP instead, run
``vllm serve MODEL`` and use ``openai:MODEL@http://HOST:8000/v1`` (see docs/backends.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from corecode.backends.base import Completion, Conversation, SamplingConfig
from corecode.errors import BackendError, ConfigError, MissingDependencyError

__all__ = ["VLLMBackend", "create"]


class VLLMBackend:
    """Chat completions from ``vllm.LLM``; ``options`` go to its constructor (e.g. ``gpu_memory_utilization``)."""

    def __init__(self, model: str, name: str | None = None, **options: Any):
        try:
            import vllm
        except ImportError as exc:
            raise MissingDependencyError("vllm", "vllm", "the vLLM backend") from exc
        self._vllm = vllm
        self.name = name or model
        self._llm: Any = vllm.LLM(model=model, **options)

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        if self._llm is None:
            raise BackendError(f"backend {self.name!r} is closed")
        if n < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        params = self._vllm.SamplingParams(
            n=n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
            seed=sampling.seed,
        )
        start = time.perf_counter()
        outputs = self._llm.chat([[dict(m) for m in conv] for conv in conversations], params, use_tqdm=False)
        latency = (time.perf_counter() - start) / max(1, len(conversations) * n)
        return [
            [
                Completion(
                    text=sample.text,
                    prompt_tokens=len(output.prompt_token_ids or ()),
                    completion_tokens=len(sample.token_ids),
                    finish_reason=sample.finish_reason or "stop",
                    latency_s=latency,
                )
                for sample in output.outputs
            ]
            for output in outputs
        ]

    def close(self) -> None:
        self._llm = None


def create(target: str, *, name: str | None = None, **options: Any) -> VLLMBackend:
    """``vllm:HUB_ID`` or ``vllm:DIR``; options go to ``vllm.LLM`` (tensor_parallel_size, dtype, ...)."""
    if not target:
        raise ConfigError("the vllm backend needs a target: a Hugging Face model id or a local directory")
    return VLLMBackend(target, name=name, **options)
