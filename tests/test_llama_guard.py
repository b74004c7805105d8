"""The llama.cpp guard and `corecode doctor`, on the real build and the real default model.

The first test is what makes CI fail on a machine where this llama.cpp build would crash: it loads the
default model (the one `corecode eval` uses) in a child process with llama.cpp's default settings and
generates a few tokens. The crash paths use a real child that really dies on SIGILL.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import llama_cpp  # noqa: F401 - the llama extra is part of the README's setup: missing is a failure

from corecode.backends import ensure_model, llama_probe, load_backend
from corecode.backends.base import SamplingConfig
from corecode.errors import BackendError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def qwen() -> Path:
    return ensure_model("qwen2.5-coder-0.5b")


@pytest.fixture()
def probe_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(llama_probe, "_cache_file", lambda: tmp_path / "llama_probe.json")
    monkeypatch.delenv("CORECODE_LLAMA_MODE", raising=False)
    monkeypatch.setattr(llama_probe, "_WARNED", set())
    return tmp_path / "llama_probe.json"


def _fake_python(tmp_path: Path, crash_in: tuple[str, ...]) -> str:
    """A python that dies on a real SIGILL when asked to probe in one of ``crash_in``; else the real one."""
    script = tmp_path / "python-crashing"
    modes = " ".join(crash_in)
    script.write_text(
        "#!/bin/sh\n"
        f'for m in {modes}; do if [ "$4" = "$m" ]; then kill -ILL $$; fi; done\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_this_build_generates_from_the_default_model_with_default_settings(qwen):
    result = llama_probe.probe(qwen, "default")
    assert result.ok, f"llama.cpp could not run the default model here: {result}"
    out = json.loads(result.detail)
    assert out["tokens"] >= 1 and out["text"].strip()


def test_safe_mode_really_turns_extra_buffer_types_off(qwen, monkeypatch):
    from llama_cpp import Llama

    with llama_probe.model_params_patch("safe"):
        llm = Llama(model_path=str(qwen), n_ctx=128, n_threads=1, verbose=False)
    try:
        assert llm.model_params.use_extra_bufts is False
        text = llm.create_completion("def add(a, b):\n    return", max_tokens=3, temperature=0.0)
        assert text["usage"]["completion_tokens"] >= 1
    finally:
        llm.close()
    with llama_probe.model_params_patch("default"):
        import llama_cpp.llama as llama_module
        assert llama_module.llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_a_build_that_crashes_falls_back_to_safe_mode_once_with_one_warning(qwen, tmp_path, probe_cache):
    python = _fake_python(tmp_path, ("default",))
    calls = []

    def probe_fn(path, mode):
        calls.append(mode)
        return llama_probe.probe(path, mode, python=python)

    with pytest.warns(RuntimeWarning, match=r"SIGILL.*extra buffer types off.*scripts/setup.sh"):
        assert llama_probe.safe_load_mode(qwen, probe_fn=probe_fn) == "safe"
    assert calls == ["default", "safe"]
    cached = json.loads(probe_cache.read_text())
    [verdict] = cached.values()
    assert verdict["mode"] == "safe" and verdict["results"][0]["signal_name"] == "SIGILL"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cached: no second probe and no second warning
        assert llama_probe.safe_load_mode(qwen, probe_fn=probe_fn) == "safe"
    assert calls == ["default", "safe"]


def test_a_build_that_crashes_both_ways_stops_with_the_fix(qwen, tmp_path, probe_cache):
    python = _fake_python(tmp_path, ("default", "safe"))
    with pytest.raises(BackendError, match=r"SIGILL.*Rebuild it for this CPU: bash scripts/setup.sh"):
        llama_probe.safe_load_mode(qwen, probe_fn=lambda p, m: llama_probe.probe(p, m, python=python))


def test_a_healthy_build_is_probed_once_and_loads_in_default_mode(qwen, probe_cache):
    calls = []

    def probe_fn(path, mode):
        calls.append(mode)
        return llama_probe.probe(path, mode)

    assert llama_probe.safe_load_mode(qwen, probe_fn=probe_fn) == "default"
    assert llama_probe.safe_load_mode(qwen, probe_fn=probe_fn) == "default"
    assert calls == ["default"]


def test_forced_mode_loads_the_backend_and_generates(monkeypatch):
    monkeypatch.setenv("CORECODE_LLAMA_MODE", "safe")
    backend = load_backend("smollm2-135m", n_ctx=512)
    try:
        [[c]] = backend.generate([[{"role": "user", "content": "Say hi."}]],
                                 SamplingConfig(temperature=0.0, max_tokens=3))
        assert c.completion_tokens >= 1
        assert backend._shared.llama.model_params.use_extra_bufts is False
    finally:
        backend.close()
    monkeypatch.setenv("CORECODE_LLAMA_MODE", "fast")
    with pytest.raises(BackendError, match="CORECODE_LLAMA_MODE"):
        llama_probe.safe_load_mode(ensure_model("smollm2-135m"))


def test_signal_names_never_raise():
    assert llama_probe._signal_name(int(signal.SIGILL)) == "SIGILL"
    assert llama_probe._signal_name(200) == "signal 200"


def _doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corecode", "doctor", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def test_doctor_reports_the_probe_and_passes_on_this_machine():
    proc = _doctor("--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["main_job_ok"] is True and report["problems"] == []
    assert report["llama_probe"]["ok"] is True and report["llama_probe"]["mode"] in ("default", "safe")
    assert report["libraries"]["llama-cpp-python"]
    assert "CPU" in report["llama_cpp"]["system_info"]
    assert report["sandbox"]["ok"] is True
    assert any(m["name"] == "qwen2.5-coder-0.5b" and m["installed"] for m in report["models"])
    if os.uname().machine == "x86_64":
        assert report["cpu"]["probed"]["GGML_SSE42"] is True


def test_doctor_exits_nonzero_with_the_reason_when_the_model_cannot_run():
    proc = _doctor(env={"CORECODE_LLAMA_MODE": "bogus"})
    assert proc.returncode == 1
    assert "the main job cannot run" in proc.stdout and "CORECODE_LLAMA_MODE" in proc.stdout
