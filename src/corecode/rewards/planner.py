"""Stage-1 Planner reward R_plan (pure; ../shared/METHOD.md section 3).

For one problem the Planner samples G plans; the frozen Coder writes M programs per plan; each program's
:class:`Outcome` gives its pass rate s_i, CPU time t_i and peak memory. Then, per program:

    e_i = sigmoid(kappa * (ln t_ref - ln t_i))            time score, only when s_i = 1
    q_i = s_i + lambda_time * e_i * [s_i = 1]             program quality

and per plan, over its M programs (``aggregation``):

    sigmoid: w_i = sigmoid((q_i - mean(q)) / tau) / sum_j sigmoid((q_j - mean(q)) / tau);  R = sum_i w_i q_i
    softmax: w_i ∝ exp(q_i / T)      (the authors' code weights by exp(s_i / 0.5); we weight q_i, which equals
                                      s_i when lambda_time = 0 -- a deliberate deviation, so time counts too)
    mean:    R = mean(q)             max: R = max(q)

    R_plan = R - format_penalty * [the plan misses parts of the Algorithmic Thought]

t_ref is the problem's reference-solution CPU time when it is known (and ``time_reference`` is "auto"),
else the median CPU time of the passing programs of the whole group (all G x M programs of the problem:
our choice, so that plans of one problem are compared on one time scale). A plan any of whose programs
failed on our side (``None`` outcome, a SandboxError) gets no reward (``None``): scoring it on the
remaining programs would bias it.

Ties (../shared/METHOD.md section 3a): before scoring, the passing programs' times are tie-resolved over the
whole group (``rewards.ties``): times within ``time_tie_band`` of their tie class's fastest member are
scored as that member's time, and t_ref is snapped to a class within the band of it, so programs whose
times differ only by measurement noise get exactly the same e_i. With M = 2 the sigmoid weighting equals
softmax with T = 2 * tau (w = sigmoid(d / tau) for d = +-(q_1 - q_2) / 2): comparing aggregations needs M >= 3.

>>> from corecode.rewards.outcome import Outcome
>>> cfg = RewardConfig(lambda_time=0.0)
>>> [round(r, 4) for r in planner_group_rewards([[Outcome(1.0), Outcome(0.0)], [Outcome(0.0), Outcome(0.0)]], [False, True], cfg)]
[0.8808, -0.1]
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from corecode.rewards.config import RewardConfig
from corecode.rewards.outcome import Outcome
from corecode.rewards.ties import snap, tie_resolve

__all__ = [
    "sigmoid",
    "time_reference",
    "time_score",
    "program_quality",
    "aggregate",
    "plan_reward",
    "planner_group_rewards",
    "tie_resolved_times",
]


def sigmoid(x: float) -> float:
    """Numerically stable logistic function."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def time_reference(
    outcomes: Sequence[Outcome | None], reference_time_s: float | None, config: RewardConfig
) -> float | None:
    """t_ref: the reference solution's time (mode 'auto', when known), else the median of passing programs.

    ``None`` is the only "unknown": a measured 0 (faster than the clock) is known and floored like any time.
    """
    if config.time_reference == "auto" and reference_time_s is not None:
        if reference_time_s < 0 or math.isnan(reference_time_s):
            raise ValueError(f"a reference time must be >= 0 seconds or None (unknown), got {reference_time_s}")
        return max(reference_time_s, config.time_floor_s)
    times = [max(o.cpu_time_s, config.time_floor_s) for o in outcomes if o is not None and o.passed]
    return statistics.median(times) if times else None


def time_score(cpu_time_s: float, t_ref: float, config: RewardConfig) -> float:
    """e_i = sigmoid(kappa * (ln t_ref - ln t_i)): 0.5 at t_ref, towards 1 for faster programs."""
    t_i = max(cpu_time_s, config.time_floor_s)
    return sigmoid(config.kappa * (math.log(t_ref) - math.log(t_i)))


def program_quality(outcome: Outcome, t_ref: float | None, config: RewardConfig) -> float:
    """q_i = s_i + lambda_time * e_i * [s_i = 1]."""
    if not outcome.passed or t_ref is None:
        return outcome.pass_rate
    return outcome.pass_rate + config.lambda_time * time_score(outcome.cpu_time_s, t_ref, config)


def aggregate(qualities: Sequence[float], config: RewardConfig) -> float:
    """Combine one plan's M program qualities into one number (``config.aggregation``)."""
    if not qualities:
        raise ValueError("a plan needs at least one program to be scored")
    if config.aggregation == "mean":
        return sum(qualities) / len(qualities)
    if config.aggregation == "max":
        return max(qualities)
    if config.aggregation == "sigmoid":
        mean_q = sum(qualities) / len(qualities)
        raw = [sigmoid((q - mean_q) / config.tau) for q in qualities]
    else:  # softmax, shifted by the max for stability (the weights do not change)
        top = max(qualities)
        raw = [math.exp((q - top) / config.softmax_temperature) for q in qualities]
    total = sum(raw)
    return sum(w / total * q for w, q in zip(raw, qualities))


def plan_reward(
    outcomes: Sequence[Outcome | None], t_ref: float | None, format_miss: bool, config: RewardConfig
) -> float | None:
    """R_plan of one plan from its M programs' outcomes; None when any execution failed on our side."""
    if any(o is None for o in outcomes):
        return None
    qualities = [program_quality(o, t_ref, config) for o in outcomes]  # type: ignore[arg-type]
    return aggregate(qualities, config) - (config.format_penalty if format_miss else 0.0)


def planner_group_rewards(
    plans: Sequence[Sequence[Outcome | None]],
    format_misses: Sequence[bool],
    config: RewardConfig,
    reference_time_s: float | None = None,
) -> list[float | None]:
    """R_plan for the G plans of one problem; ``plans[g]`` holds the M outcomes of plan g's programs."""
    if len(plans) != len(format_misses):
        raise ValueError(f"{len(plans)} plans but {len(format_misses)} format flags")
    everything = tie_resolved_times([o for programs in plans for o in programs], config)
    t_ref = time_reference(everything, reference_time_s, config)
    if t_ref is not None:  # a t_ref inside the band of a tie class counts as that class's time
        heads = {o.cpu_time_s for o in everything if o is not None and o.passed}
        t_ref = snap(t_ref, sorted(heads), config.time_tie_band)
    resolved, start = [], 0
    for programs in plans:
        resolved.append(everything[start : start + len(programs)])
        start += len(programs)
    return [plan_reward(programs, t_ref, miss, config) for programs, miss in zip(resolved, format_misses)]


def tie_resolved_times(outcomes: Sequence[Outcome | None], config: RewardConfig) -> list[Outcome | None]:
    """The outcomes with each passing program's (floored) CPU time replaced by its tie class's time
    (``rewards.ties``, band ``time_tie_band``): times inside the noise band score exactly alike."""
    passing = [i for i, o in enumerate(outcomes) if o is not None and o.passed]
    times = [max(outcomes[i].cpu_time_s, config.time_floor_s) for i in passing]  # type: ignore[union-attr]
    out = list(outcomes)
    for i, head in zip(passing, tie_resolve(times, config.time_tie_band)):
        out[i] = dataclasses.replace(outcomes[i], cpu_time_s=head)  # type: ignore[arg-type]
    return out
