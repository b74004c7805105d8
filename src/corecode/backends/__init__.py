"""Model backends: one narrow interface (chat messages in, n completions out) over several engines.

A backend is chosen by a spec string:

- a built-in model name (``qwen2.5-coder-0.5b`` = the default, ``qwen2.5-coder-1.5b``, ``smollm2-135m``):
  that GGUF run with llama.cpp;
- ``KIND:TARGET`` with KIND one of :data:`BACKENDS`: ``llamacpp:PATH.gguf|BUILTIN``,
  ``transformers:HUB_ID|DIR|BUILTIN``, ``lora:BASE@ADAPTER_DIR`` (one shared base, an adapter per role),
  ``vllm:HUB_ID|DIR``, ``openai:MODEL@BASE_URL``,
  ``scripted[:REPLIES.json]``;
- ``package.module:factory``: a plug-in, called with the options, that returns a Backend.

Engines are imported only when chosen, so ``load_backend("openai:...")`` never imports torch.
"""

from __future__ import annotations

from corecode.backends.base import Backend, Completion, Conversation, Message, SamplingConfig
from corecode.backends.builtin_models import BUILTIN_MODELS, DEFAULT_MODEL, ensure_model
from corecode.errors import BackendError, UnknownNameError
from corecode.registry import import_path

__all__ = [
    "BACKENDS",
    "BUILTIN_MODELS",
    "DEFAULT_MODEL",
    "Backend",
    "Completion",
    "Conversation",
    "Message",
    "SamplingConfig",
    "ensure_model",
    "load_backend",
    "parse_spec",
]

# kind -> factory ``(target: str, **options) -> Backend``, as an import path so nothing heavy loads early
BACKENDS: dict[str, str] = {
    "llamacpp": "corecode.backends.llamacpp:create",
    "transformers": "corecode.backends.transformers_backend:create",
    "lora": "corecode.backends.lora_backend:create",
    "vllm": "corecode.backends.vllm_backend:create",
    "openai": "corecode.backends.openai_compat:create",
    "scripted": "corecode.backends.scripted:create",
}


def _valid_specs() -> list[str]:
    return [*BUILTIN_MODELS, *(f"{kind}:TARGET" for kind in BACKENDS), "package.module:factory"]


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a spec into ``(kind, target)``; a bare built-in name means ``("llamacpp", name)``.

    >>> parse_spec("qwen2.5-coder-0.5b")
    ('llamacpp', 'qwen2.5-coder-0.5b')
    >>> parse_spec("openai:gpt-4o-mini@http://127.0.0.1:8000/v1")
    ('openai', 'gpt-4o-mini@http://127.0.0.1:8000/v1')
    """
    spec = spec.strip()
    if spec in BUILTIN_MODELS:
        return "llamacpp", spec
    kind, _, target = spec.partition(":")
    if kind in BACKENDS:
        return kind, target
    if kind and target:  # package.module:object plug-in; load_backend reports it unknown if it fails to import
        return "plugin", spec
    raise UnknownNameError("backend", spec, _valid_specs())


def load_backend(spec: str, **options: object) -> Backend:
    """Build the backend named by ``spec`` (see the module docstring); ``options`` go to its factory."""
    kind, target = parse_spec(spec)
    if kind == "plugin":
        module_name = target.partition(":")[0]
        try:
            factory = import_path(target)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise  # the plug-in exists but one of its own imports is missing: show that
            raise UnknownNameError("backend", spec, _valid_specs()) from exc
        except AttributeError as exc:
            raise UnknownNameError("backend", spec, _valid_specs()) from exc
    else:
        factory = import_path(BACKENDS[kind])
    backend = factory(target, **options) if kind != "plugin" else factory(**options)  # type: ignore[operator]
    if not isinstance(backend, Backend):
        raise BackendError(f"backend factory for {spec!r} returned {type(backend).__name__}, not a Backend")
    return backend
