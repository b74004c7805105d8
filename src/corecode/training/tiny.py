"""Tiny models built locally from a config, for CI and the learning check (no download, seconds).

The tokenizer is character-level (printable ASCII, newline, tab, and the ChatML specials) with a ChatML
chat template, so the tiny model goes through exactly the code paths of a real chat model: rendered
prompts, TRL's conversational datasets, chat-template generation. A character vocabulary (~100 tokens)
instead of a real 50k-150k one keeps the embedding small and gives a randomly initialized policy a
non-negligible chance of writing a short answer, which is what lets GRPO show learning in minutes.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TinySpec", "TINY_MODELS", "build_tiny_model", "char_tokenizer"]

SPECIALS = ("<|pad|>", "<|unk|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    """A tiny Llama-architecture decoder (a model type whose AutoTokenizer keeps our tokenizer as saved)."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 4096


TINY_MODELS: dict[str, TinySpec] = {
    "llama-char": TinySpec(),
    "llama-char-wide": TinySpec(hidden_size=128, intermediate_size=256),
}


def char_tokenizer():
    """A fast, character-level tokenizer with ChatML specials; the eos token is <|im_end|>."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|unk|>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<|pad|>",
        unk_token="<|unk|>",
        bos_token=None,
        eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_model(name: str, directory: Path, seed: int = 0) -> Path:
    """Write a randomly initialized tiny model and its tokenizer to ``directory`` (once) and return it."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from corecode.registry import resolve

    spec = resolve(TINY_MODELS, name, "tiny model")
    marker = directory / "corecode-tiny.json"
    if marker.is_file() and json.loads(marker.read_text()) == {"name": name, "seed": seed}:
        return directory
    tokenizer = char_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    marker.write_text(json.dumps({"name": name, "seed": seed}))
    return directory
