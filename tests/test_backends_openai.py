"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1 (corecode's own server).

The server serves a scripted backend here, to drive the error paths (auth, unknown model, 5xx and 429
retries, timeouts, the concurrency limit); tests/test_backends_real_models.py serves the real model.
"""

from __future__ import annotations

import threading
import time

import pytest

import httpx  # noqa: E402,F401 - a core dependency

from corecode.backends import SamplingConfig, load_backend  # noqa: E402
from corecode.backends.scripted import ScriptedBackend  # noqa: E402
from corecode.backends.server import serve  # noqa: E402
from corecode.errors import (  # noqa: E402
    BackendAuthError,
    BackendError,
    BackendModelNotFoundError,
    BackendTimeoutError,
    ConfigError,
)

GREEDY = SamplingConfig(temperature=0.0, max_tokens=16)
HELLO = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hi"}]


def client(server, model="m", **options):
    options.setdefault("backoff_s", 0.01)
    return load_backend(f"openai:{model}@{server.url}", **options)


def test_round_trip_carries_messages_sampling_and_token_counts():
    seen = []

    def reply(conversation):
        seen.append(conversation)
        return "hello there friend"

    with serve(ScriptedBackend(reply, name="m")) as server, client(server) as backend:
        sampling = SamplingConfig(temperature=0.5, max_tokens=7, stop=("\n",), seed=11)
        [[completion]] = backend.generate([HELLO], sampling)
    assert completion.text == "hello there friend"
    assert completion.completion_tokens == 3  # the scripted backend counts words
    assert completion.prompt_tokens == 4
    assert seen == [HELLO]
    assert completion.latency_s > 0


def test_n_samples_server_side_and_by_repeating_requests():
    with serve(ScriptedBackend(lambda conv: conv[-1]["content"].upper(), name="m")) as server:
        with client(server) as backend:
            groups = backend.generate([HELLO, [{"role": "user", "content": "two"}]], GREEDY, n=3)
            assert [[c.text for c in g] for g in groups] == [["SAY HI"] * 3, ["TWO"] * 3]
            assert server.requests == 2
        with client(server, n_strategy="repeat") as backend:
            groups = backend.generate([HELLO], GREEDY, n=3)
            assert [c.text for c in groups[0]] == ["SAY HI"] * 3
            assert server.requests == 2 + 3


def test_wrong_api_key_raises_auth_error_without_retrying():
    with serve(ScriptedBackend(["never"], name="m"), api_key="secret") as server:
        with client(server, api_key="wrong") as backend, pytest.raises(BackendAuthError, match="401"):
            backend.generate([HELLO], GREEDY)
        assert server.requests == 1
        with client(server, api_key="secret") as backend:
            assert backend.generate([HELLO], GREEDY)[0][0].text == "never"


def test_api_key_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    with serve(ScriptedBackend(["ok"], name="m"), api_key="from-env") as server, client(server) as backend:
        assert backend.generate([HELLO], GREEDY)[0][0].text == "ok"


def test_unknown_model_raises_model_not_found():
    with serve(ScriptedBackend(["never"], name="served")) as server:
        with client(server, model="other") as backend:
            with pytest.raises(BackendModelNotFoundError, match="other"):
                backend.generate([HELLO], GREEDY)
        assert server.requests == 1


def test_server_error_then_success_is_retried():
    replies = [BackendError("transient failure"), "recovered"]
    with serve(ScriptedBackend(replies, name="m")) as server, client(server) as backend:
        assert backend.generate([HELLO], GREEDY)[0][0].text == "recovered"
        assert server.requests == 2


def test_persistent_server_error_gives_up_after_the_retries():
    with serve(ScriptedBackend(lambda c: BackendError("down"), name="m")) as server:
        with client(server, max_retries=2) as backend, pytest.raises(BackendError, match="500.*down"):
            backend.generate([HELLO], GREEDY)
        assert server.requests == 3


def test_429_from_an_overloaded_server_is_retried_until_all_succeed():
    def slow(conversation):
        time.sleep(0.2)
        return conversation[-1]["content"]

    convs = [[{"role": "user", "content": f"q{i}"}] for i in range(4)]
    # the server takes one request at a time and answers 429 to the rest; the client sends 4 at once
    with serve(ScriptedBackend(slow, name="m"), max_concurrent=1) as server:
        with client(server, max_concurrency=4, max_retries=8, backoff_s=0.05) as backend:
            groups = backend.generate(convs, GREEDY)
        assert [g[0].text for g in groups] == ["q0", "q1", "q2", "q3"]
        assert server.requests > 4  # some were refused with 429 and sent again


def test_slow_server_raises_timeout_error():
    release = threading.Event()

    def stuck(conversation):
        release.wait(5)
        return "too late"

    with serve(ScriptedBackend(stuck, name="m")) as server:
        with client(server, timeout_s=0.3, max_retries=1) as backend:
            with pytest.raises(BackendTimeoutError, match="timeout"):
                backend.generate([HELLO], GREEDY)
        release.set()
    assert server.requests == 2  # the first try and one retry


def test_client_concurrency_limit_is_honoured_and_used():
    def slow(conversation):
        time.sleep(0.15)
        return "ok"

    convs = [[{"role": "user", "content": str(i)}] for i in range(8)]
    with serve(ScriptedBackend(slow, name="m")) as server:
        with client(server, max_concurrency=3) as backend:
            groups = backend.generate(convs, GREEDY)
        assert len(groups) == 8
        assert server.peak_in_flight == 3


def test_unreachable_server_is_a_backend_error():
    backend = load_backend("openai:m@http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.01)
    with backend, pytest.raises(BackendError, match="connection error"):
        backend.generate([HELLO], GREEDY)


def test_server_rejects_bad_requests_with_400():
    import httpx

    with serve(ScriptedBackend(["x"], name="m")) as server:
        r = httpx.post(server.url + "/chat/completions", json={"model": "m", "messages": "not a list"})
        assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
        r = httpx.post(server.url + "/chat/completions", json={"messages": [], "temperature": -1})
        assert r.status_code == 400 and "temperature" in r.json()["error"]["message"]
        models = httpx.get(server.url + "/models").json()
        assert [m["id"] for m in models["data"]] == ["m"]


def test_config_is_validated():
    with pytest.raises(ConfigError, match="model name"):
        load_backend("openai:@http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="n_strategy"):
        load_backend("openai:m@http://127.0.0.1:1/v1", n_strategy="sometimes")
    with pytest.raises(ConfigError, match="max_concurrency"):
        load_backend("openai:m@http://127.0.0.1:1/v1", max_concurrency=0)


def test_server_command_line_serves_a_backend_in_its_own_process(tmp_path):
    import json
    import subprocess
    import sys

    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["from another process"]))
    command = [sys.executable, "-m", "corecode.backends.server", "--model", f"scripted:{replies}",
               "--served-name", "m", "--port", "0", "--api-key", "k"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = process.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/v1"
        url = banner.rsplit(" ", 1)[-1].strip()
        assert url.startswith("http://127.0.0.1:"), banner + process.stderr.read()
        with load_backend(f"openai:m@{url}", api_key="k", max_retries=0) as backend:
            assert backend.generate([HELLO], GREEDY)[0][0].text == "from another process"
    finally:
        process.terminate()
        process.wait(timeout=10)
