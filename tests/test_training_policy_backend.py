"""PolicyBackend samples a LoRA policy through a merged copy: the same greedy text as the adapter itself, the
policy untouched (weights, adapter state, gradients, train mode), and no copy where it cannot be made."""

import pytest

import peft  # noqa: F401 - the [train] extra is required (README): missing, these tests fail

from corecode.backends import SamplingConfig
from corecode.training import partners
from corecode.training.partners import PolicyBackend, merged_for_generation

CONVERSATIONS = [[{"role": "user", "content": text}] for text in ("plan: add two numbers", "code it", "x = 1")]
GREEDY = SamplingConfig(temperature=0.0, max_tokens=16)


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.training.tiny import build_tiny_model

    base = build_tiny_model("llama-char", tmp_path_factory.mktemp("policy") / "base", seed=0)
    tokenizer = AutoTokenizer.from_pretrained(base)
    torch.manual_seed(3)  # init_lora_weights=False: a random B, so the adapter changes what the model writes
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                           LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False))
    plain = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    return model, plain, tokenizer


def texts(backend):
    return [group[0].text for group in backend.generate(CONVERSATIONS, GREEDY)]


def test_merged_sampling_matches_the_adapter_and_leaves_the_policy_as_it_was(policy, monkeypatch):
    import torch

    model, plain, tokenizer = policy
    assert merged_for_generation(model) is not None, "a LoRA policy must be sampled through a merged copy"
    model.train()
    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.full_like(p, 0.5)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}

    merged_texts = texts(PolicyBackend(model, tokenizer))

    assert model.training, "train mode must come back after sampling"
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name]), f"sampling changed the policy's {name}"
        if p.requires_grad:
            assert p.grad is not None and torch.all(p.grad == 0.5), f"sampling dropped the gradient of {name}"
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in model.modules() if isinstance(m, BaseTunerLayer)]
    assert layers and not any(m.merged for m in layers), "the policy's adapter must stay unmerged"

    monkeypatch.setattr(partners, "merged_for_generation", lambda m: None)  # the adapter itself, unmerged
    assert merged_texts == texts(PolicyBackend(model, tokenizer)), "merged copy and adapter wrote different text"
    assert merged_texts != texts(PolicyBackend(plain, tokenizer)), "the adapter changed nothing: the test shows nothing"


def test_no_copy_for_a_plain_model_or_sharded_weights(policy, monkeypatch):
    import torch

    model, plain, _ = policy
    assert merged_for_generation(plain) is None
    weight = next(p for p in model.parameters())
    saved = weight.data
    weight.data = torch.empty(0)  # how ZeRO-3 leaves a parameter on a rank: a placeholder
    try:
        assert merged_for_generation(model) is None
    finally:
        weight.data = saved
