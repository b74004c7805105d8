"""Backends for an evaluation run: one instance per distinct spec, and a per-sample seeding wrapper.

A model spec is whatever ``corecode.backends.load_backend`` accepts: a built-in model name,
``KIND:TARGET``, or ``package.module:factory`` (a user's or a test's callable returning a Backend; that
form is what lets a subprocess test run ``corecode eval`` with a scripted, slow model).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from corecode.backends.base import Backend, Completion, Conversation, SamplingConfig
from corecode.errors import ConfigError
from corecode.evaluation.config import EvalConfig

__all__ = ["load_models", "model_keys", "sampling_of", "sample_backends", "SeededBackend"]


def model_keys(config: EvalConfig) -> dict[str, str]:
    """The ``models`` keys a pipeline understands ("default", a slot or a role name) -> backend spec."""
    from corecode.agents import ROLES

    valid = {role.slot for role in ROLES.values()} | set(ROLES)
    unknown = sorted(set(config.role_models) - valid)
    if unknown:
        raise ConfigError(
            f"role_models names unknown role(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}"
        )
    return {"default": config.model, **config.role_models}


def load_models(config: EvalConfig) -> dict[str, Backend]:
    """``models`` mapping for build_pipeline; keys with the same spec share one loaded model."""
    from corecode.backends import load_backend

    loaded: dict[str, Backend] = {}
    by_key = {}
    for key, spec in model_keys(config).items():
        if spec not in loaded:
            loaded[spec] = load_backend(spec)
        by_key[key] = loaded[spec]
    return by_key


def sampling_of(config: EvalConfig) -> SamplingConfig:
    """The sampling settings every agent of the run uses (the per-call seed is added by SeededBackend)."""
    return config.sampling()


def sample_backends(backends: Mapping[str, Backend], seed: int) -> dict[str, Backend]:
    """Each backend seen through one sample: its calls are seeded ``seed + call number``."""
    counter = _Counter()
    return {key: SeededBackend(backend, seed, counter) for key, backend in backends.items()}


class _Counter:
    def __init__(self) -> None:
        self._value = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._value += 1
            return self._value - 1


class SeededBackend:
    """A backend seen through one sample: the k-th model call of the sample is drawn with seed ``seed + k``.

    Seeding by (problem, sample index, call number), never by clock or global order, is what makes a
    resumed run ask exactly the questions the uninterrupted run would have asked, in any order.
    """

    def __init__(self, inner: Backend, seed: int, counter: _Counter):
        self.inner = inner
        self.name = inner.name
        self._seed = seed
        self._counter = counter

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        return self.inner.generate(conversations, sampling.replace(seed=self._seed + self._counter.next()), n)

    def close(self) -> None:
        """The run closes the shared backend once, not each sample's view of it."""
