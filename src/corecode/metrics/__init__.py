"""Metrics of generated programs: pass@k, APR, Collaboration Gain, complexity, failures, efficiency, cost,
and bootstrap intervals over problems (pass@k, APR, CG, any paired A-vs-B difference).

Standard library only (the metrics layer sits below benchmarks, backends and pipelines). Every metric is a
plain function of plain records, so training can log the same numbers that evaluation reports.
"""

from corecode.metrics.apr import apr_macro, apr_micro, per_problem_pass_rate
from corecode.metrics.bootstrap import (
    Interval,
    PairedDifference,
    bootstrap_mean,
    bootstrap_pass_at_k,
    paired_bootstrap,
    unpaired_bootstrap,
    paired_pass_at_k,
    problems_needed,
)
from corecode.metrics.collaboration import (
    CollaborationGain,
    collaboration_gain,
    collaboration_gain_from_counts,
    mean_pass_at_k,
)
from corecode.metrics.complexity import cyclomatic_complexity, is_empty_program
from corecode.metrics.cost import Cost, inference_cost
from corecode.metrics.efficiency import Efficiency, efficiency
from corecode.metrics.failures import failure_rates, runtime_error_rates
from corecode.metrics.passk import pass_at_k

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
