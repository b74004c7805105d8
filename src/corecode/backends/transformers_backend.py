"""transformers backend: any Hugging Face model id or local directory, or a GGUF dequantized by transformers.

The same loading path training uses, so a trained checkpoint can be sampled as it is. The chat template
comes from the tokenizer. Conversations are batched (padding on the left, so every row's last token is its
prompt's end) and ``n`` samples of a conversation are drawn together with ``num_return_sequences``.
A seed seeds torch's global generator before each batch (``generate`` takes no generator of its own), so
the same batch with the same seed gives the same samples; it also resets torch's global random state.
Stop strings end a row's generation and are cut from its text, as OpenAI servers do. Greedy decoding
(temperature 0) draws one completion per conversation and repeats it ``n`` times.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.backends.base import Completion, Conversation, SamplingConfig
from corecode.backends.builtin_models import BUILTIN_MODELS, ensure_model
from corecode.errors import BackendError, ConfigError, MissingDependencyError

__all__ = ["TransformersConfig", "TransformersBackend", "create"]

_DTYPES = ("auto", "bfloat16", "float16", "float32")


@dataclass(frozen=True)
class TransformersConfig:
    """How transformers loads and batches a model."""

    gguf_file: str | None = field(default=None, metadata={"help": "GGUF file name inside the model dir"})
    dtype: str = field(default="bfloat16", metadata={"help": f"one of {_DTYPES}; bfloat16 is ~2x float32 on CPU"})
    device: str = field(default="cpu", metadata={"help": "torch device, e.g. 'cpu', 'cuda', 'cuda:1'"})
    batch_size: int = field(default=8, metadata={"help": "conversations per generate() call"})
    n_threads: int | None = field(default=None, metadata={"help": "torch CPU threads; None = leave as set"})

    def __post_init__(self) -> None:
        if self.dtype not in _DTYPES:
            raise ConfigError(f"dtype must be one of {_DTYPES}, got {self.dtype!r}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ConfigError(f"n_threads must be >= 1 or None, got {self.n_threads}")


def _import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "transformers", "transformers", "the transformers backend") from exc
    return torch, transformers


class TransformersBackend:
    """Chat completions from a causal LM loaded in-process with transformers."""

    def __init__(self, model: str | Path, config: TransformersConfig | None = None, name: str | None = None):
        torch, transformers = _import_torch_transformers()
        self._torch = torch
        self._transformers = transformers
        self.config = config = config or TransformersConfig()
        self.name = name or str(model)
        if config.n_threads:
            torch.set_num_threads(config.n_threads)
        dtype = "auto" if config.dtype == "auto" else getattr(torch, config.dtype)
        kwargs = {"gguf_file": config.gguf_file} if config.gguf_file else {}
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(model), **kwargs)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(str(model), dtype=dtype, **kwargs)
        except (OSError, ValueError) as exc:
            raise BackendError(f"transformers could not load {model!r}: {exc}") from exc
        self.model.to(config.device).eval()
        prepare_chat_tokenizer(self.tokenizer, model)

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        if self.model is None:
            raise BackendError(f"backend {self.name!r} is closed")
        if n < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        from tqdm import tqdm

        out: list[list[Completion]] = []
        size = self.config.batch_size
        batches = range(0, len(conversations), size)
        # a bar only for calls of several batches (validation sets, plan caches): they take minutes on a CPU
        for start in tqdm(batches, desc=f"{self.name}: generate", unit="batch", leave=False, disable=len(batches) < 2):
            out.extend(self._batch(conversations[start:start + size], sampling, n))
        return out

    def _batch(self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int) -> list[list[Completion]]:
        torch = self._torch
        prompts = [
            self.tokenizer.apply_chat_template([dict(m) for m in conv], tokenize=False, add_generation_prompt=True)
            for conv in conversations
        ]
        # the template already holds the special tokens: do not add a second BOS
        inputs = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        inputs = inputs.to(self.config.device)
        prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
        greedy = sampling.temperature == 0
        draws = 1 if greedy else n  # greedy samples are all the same: decode once, copy n times
        options: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "num_return_sequences": draws}
        if not greedy:
            options.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        else:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if sampling.stop:
            stopping = _stop_on_strings(self.tokenizer, sampling.stop, inputs["input_ids"].shape[1])
            options["stopping_criteria"] = self._transformers.StoppingCriteriaList([stopping])
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        start = time.perf_counter()
        with torch.inference_mode():
            output = self.model.generate(**inputs, pad_token_id=self.tokenizer.pad_token_id, **options)
        latency = (time.perf_counter() - start) / max(1, len(conversations) * draws)
        new_tokens = output[:, inputs["input_ids"].shape[1]:]
        groups: list[list[Completion]] = []
        for i in range(len(conversations)):
            rows = new_tokens[i * draws:(i + 1) * draws]  # generate() repeats each prompt in place
            group = [self._completion(row, prompt_lengths[i], sampling, latency) for row in rows]
            groups.append(group * n if greedy else group)
        return groups

    def _completion(self, row: Any, prompt_tokens: int, sampling: SamplingConfig, latency: float) -> Completion:
        ids = row.tolist()
        eos = self.model.generation_config.eos_token_id
        # generation ends at EOS; rows that ended early (a stop string) are filled with padding after that
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}
        eos_ids.add(self.tokenizer.pad_token_id)
        end = next((k for k, token in enumerate(ids) if token in eos_ids), None)
        kept = ids[:end] if end is not None else ids
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        cut = [text.find(s) for s in sampling.stop if s in text]
        finish = "stop" if end is not None or cut else "length"
        if cut:
            text = text[:min(cut)]
        return Completion(
            text=text,
            prompt_tokens=int(prompt_tokens),
            completion_tokens=len(kept),  # like llama.cpp and OpenAI servers: the EOS token is not counted
            finish_reason=finish,
            latency_s=latency,
        )

    def close(self) -> None:
        self.model = None  # frees the weights once no one else holds them


def prepare_chat_tokenizer(tokenizer: Any, source: object) -> None:
    """Left padding (each row's prompt ends at the same position), a pad token, and a chat template."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.chat_template:
        raise BackendError(f"{source!r} has no chat template in its tokenizer: it is not a chat model")


def _stop_on_strings(tokenizer: Any, stops: Sequence[str], prompt_length: int) -> Any:
    """A stopping criterion that ends each row once its new text contains a stop string.

    transformers' own ``stop_strings`` needs a tokenizer whose token strings carry their spacing (BPE,
    SentencePiece); decoding a short tail of each row works with any tokenizer. Every token decodes to at
    least one character, so a tail of ``longest stop + 4`` tokens holds any stop string just completed.
    """
    from transformers import StoppingCriteria

    window = max(len(s) for s in stops) + 4

    class StopOnStrings(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            import torch

            tails = input_ids[:, max(prompt_length, input_ids.shape[1] - window):]
            texts = tokenizer.batch_decode(tails, skip_special_tokens=True)
            done = [any(stop in text for stop in stops) for text in texts]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StopOnStrings()


def create(target: str, *, name: str | None = None, **options: Any) -> TransformersBackend:
    """``transformers:HUB_ID``, ``transformers:DIR``, ``transformers:FILE.gguf`` or ``transformers:BUILTIN``."""
    if not target:
        raise ConfigError("the transformers backend needs a target: a Hub id, a directory, a .gguf or a built-in name")
    path = Path(target).expanduser()
    if target in BUILTIN_MODELS:
        path = ensure_model(target)
        name = name or target
    if path.suffix == ".gguf":
        if options.get("gguf_file"):
            raise ConfigError(f"transformers:{target} is already a GGUF file; do not also pass gguf_file=")
        options["gguf_file"] = path.name
        target = str(path.parent)
    try:
        config = TransformersConfig(**options)
    except TypeError as exc:
        raise ConfigError(f"transformers backend: {exc}") from exc
    return TransformersBackend(target, config, name=name or target)
