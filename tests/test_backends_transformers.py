"""transformers backend: batching, padding, seeds, stop strings and token counts on a tiny Llama built in
the test (random weights, a word-level tokenizer with a ChatML template); the real SmolLM2 GGUF,
dequantized, in a slow test (loading it takes ~30 s on 2 cores)."""

from __future__ import annotations

import pytest

import torch  # noqa: E402 - the [transformers] extra is required (README): missing, these tests fail
import transformers  # noqa: E402

from corecode.backends import SamplingConfig, ensure_model, load_backend  # noqa: E402
from corecode.errors import ModelError  # noqa: E402

WORDS = "the a sky is blue red green cat dog sat on mat hello world why what how one two three".split()
CHATML = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers

    specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>", "system", "user", "assistant"]
    vocab = {token: i for i, token in enumerate(specials + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHATML
    config = transformers.LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        pad_token_id=0, eos_token_id=vocab["<|im_end|>"], bos_token_id=vocab["<|im_start|>"],
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    backend = load_backend(f"transformers:{tiny_dir}", dtype="float32", batch_size=8)
    yield backend
    backend.close()


def conv(text):
    return [{"role": "system", "content": "why"}, {"role": "user", "content": text}]


SHORT, LONG = conv("hello"), conv("the cat sat on the mat and the dog sat on the mat too")
GREEDY = SamplingConfig(temperature=0.0, max_tokens=12)


def test_batched_greedy_equals_one_by_one(tiny):
    # prompts of different lengths share a batch: this holds only if padding is on the left and masked
    batched = tiny.generate([SHORT, LONG, SHORT], GREEDY)
    alone = [tiny.generate([c], GREEDY)[0] for c in (SHORT, LONG, SHORT)]
    assert [g[0].text for g in batched] == [g[0].text for g in alone]
    assert [g[0].completion_tokens for g in batched] == [g[0].completion_tokens for g in alone]
    assert batched[0][0].text != batched[1][0].text or batched[0][0].text == ""


def test_prompt_and_completion_token_counts(tiny, tiny_dir):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_dir)
    [[short], [long]] = tiny.generate([SHORT, LONG], GREEDY)
    text = tokenizer.apply_chat_template(LONG, add_generation_prompt=True, tokenize=False)
    expected = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert long.prompt_tokens == expected  # padding is not counted
    assert short.prompt_tokens < long.prompt_tokens
    for c in (short, long):
        assert c.completion_tokens == 12 if c.finish_reason == "length" else c.completion_tokens < 12
        assert len(c.text.split()) <= c.completion_tokens  # word-level: at most one word per token


def test_seeded_sampling_is_reproducible(tiny):
    sampling = SamplingConfig(temperature=1.5, top_p=1.0, max_tokens=10, seed=3)
    first = [c.text for c in tiny.generate([SHORT], sampling, n=4)[0]]
    assert len(first) == 4 and len(set(first)) > 1
    assert [c.text for c in tiny.generate([SHORT], sampling, n=4)[0]] == first
    assert [c.text for c in tiny.generate([SHORT], sampling.replace(seed=4), n=4)[0]] != first


def test_n_samples_of_several_conversations_keep_their_order(tiny):
    sampling = SamplingConfig(temperature=0.0, max_tokens=6)
    groups = tiny.generate([SHORT, LONG], sampling, n=3)
    assert [len(g) for g in groups] == [3, 3]
    # greedy: the n copies of one conversation agree, and match that conversation alone
    assert {c.text for c in groups[1]} == {tiny.generate([LONG], sampling)[0][0].text}


def test_stop_strings_are_cut_from_the_text(tiny):
    whole = tiny.generate([LONG], GREEDY)[0][0]
    full = whole.text
    words = full.split()
    # the fixture's model is seeded (torch.manual_seed(0)): its answer is fixed, and long enough to cut
    assert len(words) >= 3, f"the tiny model's greedy answer {full!r} is too short to cut: change its seed"
    stop = words[2]
    [[cut]] = tiny.generate([LONG], GREEDY.replace(stop=(stop,)))
    assert cut.text == full[: full.find(stop)]
    assert cut.finish_reason == "stop"
    assert cut.completion_tokens < whole.completion_tokens  # generation itself stopped, not just the text


@pytest.mark.slow
def test_real_smollm2_gguf_dequantized():
    try:
        ensure_model("smollm2-135m")
    except ModelError as exc:
        pytest.skip(str(exc))
    backend = load_backend("transformers:smollm2-135m", dtype="float32")
    sys_msg = {"role": "system", "content": "You are a helpful assistant. Answer in one short sentence."}
    try:
        [[answer], [other]] = backend.generate(
            [[sys_msg, {"role": "user", "content": "What is the capital of France?"}],
             [sys_msg, {"role": "user", "content": "Say hello."}]],
            SamplingConfig(temperature=0.0, max_tokens=16),
        )
    finally:
        backend.close()
    assert "Paris" in answer.text
    assert answer.prompt_tokens > 10 and other.completion_tokens > 0
