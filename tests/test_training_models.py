"""GGUF -> normal checkpoint conversion (slow: dequantizes a real built-in model)."""

import pytest


@pytest.mark.slow
def test_converted_builtin_model_is_trainable_and_keeps_its_logits(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.backends.builtin_models import ensure_model
    from corecode.training.models import convert_gguf

    from corecode.errors import ModelError

    try:
        gguf = ensure_model("smollm2-135m")
    except ModelError as exc:  # only "not installed": the [models] extra is optional for tests (README, Tests)
        pytest.skip(f"the optional [models] extra (smollm2-135m) is not installed: {exc}")
    out = convert_gguf("smollm2-135m", dest=tmp_path / "smollm2")
    converted = AutoModelForCausalLM.from_pretrained(out, dtype=torch.bfloat16)
    assert getattr(converted.config, "quantization_config", None) is None
    assert getattr(converted, "hf_quantizer", None) is None  # what the Trainer checks before refusing a model
    original = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(out)
    ids = tokenizer("def add(a, b):", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(converted(ids).logits, original(ids).logits)
    assert convert_gguf("smollm2-135m", dest=tmp_path / "smollm2") == out  # cached: no second conversion
