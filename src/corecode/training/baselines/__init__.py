"""The paper's RL baselines as training methods (``corecode train method=NAME``), METHOD.md section 6.

Each method lives in its own module with an options dataclass (filled from ``method_options``, unknown
keys refused) and one entry point ``train(config, problems, validation) -> {"coder": final checkpoint}``.
The table below names them; nothing registers itself on import, and the module is imported only when its
method runs (torch, trl and peft stay out of ``corecode.training.config``).

* ``corecode``: not a baseline: the Planner / Coder stages of :mod:`corecode.training.runner`.
* ``cure``: CURE, one model as coder and unit-test writer (Gen-Verse/CURE).
* ``coderl_plus``: CodeRL+, GRPO plus the execution-semantics alignment task.
* ``focused_dpo``: Focused-DPO, DPO with the differing middle of a preference pair weighted up.
"""

from __future__ import annotations

from typing import Any

__all__ = ["METHODS", "run_method", "check_option_names"]

# name -> "module:function" (None: the CoRe-Code stages themselves)
METHODS: dict[str, str | None] = {
    "corecode": None,
    "cure": "corecode.training.baselines.cure:train",
    "coderl_plus": "corecode.training.baselines.coderl_plus:train",
    "focused_dpo": "corecode.training.baselines.focused_dpo:train",
}


def run_method(config: Any, problems: list[Any], validation: list[Any]) -> dict[str, str]:
    """Train ``config.method`` (a baseline) on ``problems``; return its final checkpoints."""
    import importlib

    target = METHODS[config.method]
    if target is None:
        raise ValueError("method=corecode runs through corecode.training.runner, not run_method")
    module_name, _, function = target.partition(":")
    return getattr(importlib.import_module(module_name), function)(config, problems, validation)


def check_option_names(method: str, options_class: type, given: Any) -> None:
    """Refuse ``method_options`` keys that ``options_class`` (a dataclass) has no field for, naming the valid ones."""
    from dataclasses import fields

    from corecode.errors import ConfigError

    valid = {f.name for f in fields(options_class)}
    unknown = sorted(set(given or {}) - valid)
    if unknown:
        raise ConfigError(f"method={method} has no option(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")
