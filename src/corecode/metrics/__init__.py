"""Metrics of generated programs: pass@k, APR, Collaboration Gain, complexity, failures, efficiency, cost,
and bootstrap intervals over problems (pass@k, APR, CG, any paired A-vs-B difference).

Standard library only (the metrics layer sits below benchmarks, backends and pipelines). Every metric is a
plain function of plain records, so training can log the same numbers that evaluation reports.
"""

from typing import TYPE_CHECKING

# Eager: what `corecode check` uses, and `efficiency`, whose name is also a submodule's (importing the
# submodule later would otherwise rebind `corecode.metrics.efficiency` to the module).
from corecode.metrics.efficiency import Efficiency, efficiency
from corecode.metrics.passk import pass_at_k

# The rest on first use (PEP 562): bootstrap and the others cost ~10 ms of a command's start.
_LAZY = {
    "apr_macro": "apr", "apr_micro": "apr", "per_problem_pass_rate": "apr",
    "Interval": "bootstrap", "PairedDifference": "bootstrap", "bootstrap_mean": "bootstrap",
    "bootstrap_pass_at_k": "bootstrap", "paired_bootstrap": "bootstrap", "unpaired_bootstrap": "bootstrap",
    "paired_pass_at_k": "bootstrap", "problems_needed": "bootstrap",
    "CollaborationGain": "collaboration", "collaboration_gain": "collaboration",
    "collaboration_gain_from_counts": "collaboration", "mean_pass_at_k": "collaboration",
    "cyclomatic_complexity": "complexity", "is_empty_program": "complexity",
    "Cost": "cost", "inference_cost": "cost",
    "failure_rates": "failures", "runtime_error_rates": "failures",
}

if TYPE_CHECKING:
    from corecode.metrics.apr import apr_macro, apr_micro, per_problem_pass_rate
    from corecode.metrics.bootstrap import (
        Interval,
        PairedDifference,
        bootstrap_mean,
        bootstrap_pass_at_k,
        paired_bootstrap,
        paired_pass_at_k,
        problems_needed,
        unpaired_bootstrap,
    )
    from corecode.metrics.collaboration import (
        CollaborationGain,
        collaboration_gain,
        collaboration_gain_from_counts,
        mean_pass_at_k,
    )
    from corecode.metrics.complexity import cyclomatic_complexity, is_empty_program
    from corecode.metrics.cost import Cost, inference_cost
    from corecode.metrics.failures import failure_rates, runtime_error_rates


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "pass_at_k",
    "mean_pass_at_k",
    "apr_macro",
    "apr_micro",
    "per_problem_pass_rate",
    "Interval",
    "PairedDifference",
    "bootstrap_mean",
    "bootstrap_pass_at_k",
    "paired_bootstrap",
    "unpaired_bootstrap",
    "paired_pass_at_k",
    "problems_needed",
    "CollaborationGain",
    "collaboration_gain",
    "collaboration_gain_from_counts",
    "cyclomatic_complexity",
    "is_empty_program",
    "Cost",
    "inference_cost",
    "Efficiency",
    "efficiency",
    "failure_rates",
    "runtime_error_rates",
]
