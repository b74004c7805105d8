"""Spec strings, the backend table, plug-ins, and the errors for missing optional engines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from corecode.backends import Backend, SamplingConfig, load_backend, parse_spec
from corecode.backends.scripted import ScriptedBackend
from corecode.errors import BackendError, ConfigError, MissingDependencyError, UnknownNameError

GREEDY = SamplingConfig(temperature=0.0, max_tokens=8)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("qwen2.5-coder-0.5b", ("llamacpp", "qwen2.5-coder-0.5b")),
        ("smollm2-135m", ("llamacpp", "smollm2-135m")),
        ("llamacpp:/models/x.gguf", ("llamacpp", "/models/x.gguf")),
        ("transformers:Qwen/Qwen2.5-Coder-0.5B-Instruct", ("transformers", "Qwen/Qwen2.5-Coder-0.5B-Instruct")),
        ("openai:gpt-4o-mini@http://127.0.0.1:8000/v1", ("openai", "gpt-4o-mini@http://127.0.0.1:8000/v1")),
        ("vllm:Qwen/Qwen2.5-Coder-7B-Instruct", ("vllm", "Qwen/Qwen2.5-Coder-7B-Instruct")),
        ("scripted", ("scripted", "")),
        ("my_pkg.backends:make", ("plugin", "my_pkg.backends:make")),
    ],
)
def test_spec_grammar(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec", ["gpt5", "ollama:llama3", "qwen2.5-coder-7b"])
def test_unknown_specs_list_the_valid_ones(spec):
    with pytest.raises(UnknownNameError) as info:
        load_backend(spec)
    assert "qwen2.5-coder-0.5b" in str(info.value) and "openai:TARGET" in str(info.value)


def test_every_kind_resolves_to_a_factory_without_importing_engines():
    # in a fresh interpreter: choosing the HTTP backend must never import torch, llama_cpp or vllm
    code = (
        "import sys\n"
        "from corecode.backends import BACKENDS, load_backend\n"
        "from corecode.registry import import_path\n"
        "assert all(callable(import_path(p)) for p in BACKENDS.values())\n"
        "load_backend('openai:m@http://127.0.0.1:9/v1').close()\n"
        "print(sorted(m for m in ('torch', 'transformers', 'llama_cpp', 'vllm') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_scripted_from_options_and_from_a_json_file(tmp_path):
    backend = load_backend("scripted", replies=["a", "b"])
    assert [g[0].text for g in backend.generate([[{"role": "user", "content": "x"}]] * 2, GREEDY)] == ["a", "b"]
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(["from file"]))
    backend = load_backend(f"scripted:{path}")
    assert backend.generate([[{"role": "user", "content": "x"}]], GREEDY)[0][0].text == "from file"
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(ConfigError, match="JSON list of strings"):
        load_backend(f"scripted:{path}")
    with pytest.raises(ConfigError, match="replies"):
        load_backend("scripted")


def make_plugin(**options):
    return ScriptedBackend([options["greeting"]], name="plugin")


def not_a_backend(**options):
    return object()


def test_plugins_are_imported_by_path_and_checked():
    backend = load_backend(f"{__name__}:make_plugin", greeting="hi")
    assert isinstance(backend, Backend)
    assert backend.generate([[{"role": "user", "content": "x"}]], GREEDY)[0][0].text == "hi"
    with pytest.raises(BackendError, match="not a Backend"):
        load_backend(f"{__name__}:not_a_backend")
    with pytest.raises(UnknownNameError):
        load_backend("no_such_package.mod:thing")


def test_vllm_without_vllm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail even where it is installed
    with pytest.raises(MissingDependencyError, match=r"'vllm'.*corecode\[vllm\]"):
        load_backend("vllm:Qwen/Qwen2.5-Coder-7B-Instruct")


def test_llamacpp_without_llama_cpp_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingDependencyError, match=r"llama-cpp-python.*corecode\[llama\]"):
        load_backend("llamacpp:/nonexistent/model.gguf")


def test_transformers_without_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingDependencyError, match=r"corecode\[transformers\]"):
        load_backend("transformers:some/model")


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="n_ctx"):
        load_backend("llamacpp:/x.gguf", n_ctx=0)
    with pytest.raises(ConfigError, match="unexpected keyword"):
        load_backend("llamacpp:/x.gguf", temprature=0.1)
    with pytest.raises(ConfigError, match="dtype"):
        load_backend("transformers:some/model", dtype="int3")
    with pytest.raises(ConfigError, match="target"):
        load_backend("llamacpp:")
