"""lora:BASE@ADAPTER: the base is loaded once per process, each role activates its own adapter, and a role's
greedy output equals that of its adapter merged into the base (run as an ordinary transformers model)."""

import pytest

import peft  # noqa: E402,F401 - the [train] extra is required (README): missing, these tests fail
import transformers  # noqa: E402,F401

from corecode.backends import SamplingConfig, load_backend  # noqa: E402
from corecode.backends.lora_backend import shared_models  # noqa: E402
from corecode.errors import ConfigError  # noqa: E402

CONVERSATIONS = [[{"role": "user", "content": text}] for text in ("plan: add two numbers", "code it", "x")]
GREEDY = SamplingConfig(temperature=0.0, max_tokens=12)


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.training.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("lora")
    base = build_tiny_model("llama-char", root / "base", seed=0)
    tokenizer = AutoTokenizer.from_pretrained(base)
    out = {"base": str(base)}
    for role, seed in (("planner", 1), ("coder", 2)):
        torch.manual_seed(seed)  # init_lora_weights=False: random A and B, so each adapter changes the model
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                               LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False))
        model.save_pretrained(root / role)
        tokenizer.save_pretrained(root / role)
        merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                                           str(root / role)).merge_and_unload()
        merged.save_pretrained(root / f"{role}-merged")
        tokenizer.save_pretrained(root / f"{role}-merged")
        out[role], out[f"{role}-merged"] = str(root / role), str(root / f"{role}-merged")
    return out


def texts(backend):
    return [group[0].text for group in backend.generate(CONVERSATIONS, GREEDY)]


def test_roles_share_one_base_and_each_matches_its_merged_model(adapters):
    before = shared_models()
    planner = load_backend(f"lora:{adapters['base']}@{adapters['planner']}", dtype="float32")
    coder = load_backend(f"lora:{adapters['base']}@{adapters['coder']}", dtype="float32")
    try:
        assert planner.model is coder.model and shared_models() == before + 1, "one base for both roles"
        first = texts(planner)
        coder_texts = texts(coder)
        assert texts(planner) == first, "switching adapters back and forth must not change a role's output"
        assert first != coder_texts, "two different adapters gave the same output"
        for role, got in (("planner", first), ("coder", coder_texts)):
            merged = load_backend(f"transformers:{adapters[role + '-merged']}", dtype="float32")
            assert texts(merged) == got, f"{role}: adapter on the shared base != adapter merged into the base"
            merged.close()
    finally:
        planner.close()
        coder.close()
    assert shared_models() == before, "closing every role frees the shared base"


def test_bad_specs_say_what_is_expected(adapters, tmp_path):
    with pytest.raises(ConfigError, match="lora:BASE@ADAPTER_DIR"):
        load_backend(f"lora:{adapters['base']}")
    with pytest.raises(ConfigError, match="adapter_config.json"):
        load_backend(f"lora:{adapters['base']}@{tmp_path}")
