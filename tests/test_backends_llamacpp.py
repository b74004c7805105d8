"""llama.cpp backend on the real built-in models (SmolLM2-135M for speed, one Qwen2.5-Coder-0.5B call),
and the OpenAI client against our own HTTP server serving that real model."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="the optional [llama] extra is not installed (README, Tests)")

from corecode.backends import SamplingConfig, ensure_model, load_backend  # noqa: E402
from corecode.backends import llamacpp  # noqa: E402
from corecode.errors import BackendError, ModelError  # noqa: E402

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer in one short sentence."}
FRANCE = [SYSTEM, {"role": "user", "content": "What is the capital of France?"}]
COLOR = [SYSTEM, {"role": "user", "content": "What color is the sky on a clear day?"}]
ENGLAND = [SYSTEM, {"role": "user", "content": "What is the capital of England?"}]
GREEDY = SamplingConfig(temperature=0.0, max_tokens=10)


def _ensure(name):
    try:
        return ensure_model(name)
    except ModelError as exc:
        pytest.skip(f"the optional [models] extra ({name}) is not installed (README, Tests): {exc}")


@pytest.fixture(scope="module")
def smol():
    _ensure("smollm2-135m")
    backend = load_backend("smollm2-135m", n_ctx=1024)
    yield backend
    backend.close()


def test_greedy_answer_is_real_and_counted(smol):
    [[a], [b]] = smol.generate([FRANCE, ENGLAND], GREEDY)
    assert "Paris" in a.text
    assert "London" in b.text
    assert a.prompt_tokens > 10 and 0 < a.completion_tokens <= 10
    assert a.finish_reason in ("stop", "length")
    assert smol.generate([FRANCE], GREEDY)[0][0].text == a.text  # greedy is deterministic


def test_max_tokens_and_stop_strings(smol):
    [[short]] = smol.generate([FRANCE], GREEDY.replace(max_tokens=2))
    assert short.completion_tokens == 2 and short.finish_reason == "length"
    [[stopped]] = smol.generate([FRANCE], GREEDY.replace(stop=("Paris",)))
    assert "Paris" not in stopped.text and stopped.text.strip()


def test_seeded_samples_are_reproducible_and_differ_from_each_other(smol):
    sampling = SamplingConfig(temperature=1.2, top_p=1.0, max_tokens=6, seed=7)
    first = [c.text for c in smol.generate([COLOR], sampling, n=2)[0]]
    again = [c.text for c in smol.generate([COLOR], sampling, n=2)[0]]
    assert len(first) == 2
    assert first == again
    assert len(set(first)) > 1  # sample j uses seed + j: not two copies of one sample
    other = [c.text for c in smol.generate([COLOR], sampling.replace(seed=8), n=2)[0]]
    assert other != first


def test_backends_on_one_model_share_one_load(smol):
    second = load_backend("smollm2-135m", n_ctx=1024)
    assert second._shared is smol._shared
    second.close()
    assert smol.generate([FRANCE], GREEDY.replace(max_tokens=4))  # still usable: smol still holds it
    second.close()  # idempotent
    with pytest.raises(BackendError, match="closed"):
        second.generate([FRANCE], GREEDY)


def test_prompt_longer_than_the_context_is_a_backend_error(smol):
    with pytest.raises(BackendError, match="llama.cpp"):
        smol.generate([[{"role": "user", "content": "word " * 1200}]], GREEDY)  # n_ctx is 1024


def test_a_file_that_is_not_a_model_fails_clearly(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(BackendError, match="could not load"):
        llamacpp.LlamaCppBackend(bad)


def test_openai_client_round_trip_through_our_server_on_the_real_model(smol):
    from corecode.backends.server import serve

    [[direct]] = smol.generate([FRANCE], GREEDY)
    with serve(smol, model_name="smollm2-135m") as server:
        with load_backend(f"openai:smollm2-135m@{server.url}", max_retries=0) as client:
            [[remote]] = client.generate([FRANCE], GREEDY)
    assert remote.text == direct.text
    assert remote.prompt_tokens == direct.prompt_tokens
    assert remote.completion_tokens == direct.completion_tokens


def test_default_model_writes_code():
    _ensure("qwen2.5-coder-0.5b")
    backend = load_backend("qwen2.5-coder-0.5b", n_ctx=1024)
    try:
        [[completion]] = backend.generate(
            [[
                {"role": "system", "content": "You are a Python programmer. Reply with code only."},
                {"role": "user", "content": "Write a function add(a, b) that returns a + b."},
            ]],
            SamplingConfig(temperature=0.0, max_tokens=40),
        )
    finally:
        backend.close()
    assert backend.name == "qwen2.5-coder-0.5b"
    assert "def add(a, b)" in completion.text and "return a + b" in completion.text
