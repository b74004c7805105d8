"""Every constant of the CoRe-Code rewards, in one frozen dataclass (see docs/training.md for the formulas)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from corecode.errors import ConfigError

__all__ = ["RewardConfig", "AGGREGATIONS", "TIME_REFERENCES"]

AGGREGATIONS = ("sigmoid", "softmax", "mean", "max")
TIME_REFERENCES = ("auto", "median")


@dataclass(frozen=True)
class RewardConfig:
    """Constants of R_plan (stage 1) and R_code (stage 2). Defaults are ../shared/METHOD.md section 3."""

    kappa: float = field(
        default=2.0, metadata={"help": "slope of the time score e_i = sigmoid(kappa * (ln t_ref - ln t_i))"}
    )
    lambda_time: float = field(
        default=0.2, metadata={"help": "weight of the time score in q_i = s_i + lambda_time * e_i * [s_i = 1]"}
    )
    time_reference: str = field(
        default="auto",
        metadata={
            "help": "t_ref: 'auto' = the problem's reference-solution time when known, else the median time "
            "of the group's passing programs; 'median' = always the group median"
        },
    )
    time_floor_s: float = field(
        default=1e-6,
        metadata={"help": "CPU times below this are raised to it before taking logs (only guards log(0): times "
                  "come from the sandbox's measurement pass, which resolves microseconds)"},
    )
    time_tie_band: float = field(
        default=0.10,
        metadata={"help": "relative difference of two CPU times below which they tie (the measured noise band; "
                  "see rewards.ties)"},
    )
    aggregation: str = field(
        default="sigmoid",
        metadata={"help": "how a plan's M program qualities become R_plan: sigmoid | softmax | mean | max "
                  "(with M = 2, sigmoid equals softmax at T = 2 tau: compare aggregations with M >= 3)"},
    )
    tau: float = field(
        default=0.25, metadata={"help": "temperature of the sigmoid weighting sigmoid((q_i - mean(q)) / tau)"}
    )
    softmax_temperature: float = field(
        default=0.5, metadata={"help": "temperature of the softmax weighting w_i ∝ exp(q_i / T) (authors: 0.5)"}
    )
    format_penalty: float = field(
        default=0.1,
        metadata={"help": "subtracted from R_plan when the plan misses parts of the Algorithmic Thought"},
    )
    lambda_space: float = field(
        default=0.2,
        metadata={"help": "weight of the space score in R_code = s_i + lambda_space * min(1, O/m_i) * [s_i=1]"},
    )
    memory_floor_bytes: int = field(
        default=256,
        metadata={"help": "peak memories (traced allocations, bytes) below this are raised to it (division by 0)"},
    )
    memory_tie_band: float = field(
        default=0.10,
        metadata={"help": "relative difference of two peak memories below which they tie (see rewards.ties)"},
    )

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ConfigError(f"rewards.aggregation must be one of {', '.join(AGGREGATIONS)}; got {self.aggregation!r}")
        if self.time_reference not in TIME_REFERENCES:
            raise ConfigError(
                f"rewards.time_reference must be one of {', '.join(TIME_REFERENCES)}; got {self.time_reference!r}"
            )
        for name in ("tau", "softmax_temperature", "time_floor_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"rewards.{name} must be > 0, got {getattr(self, name)}")
        for name in ("kappa", "lambda_time", "lambda_space", "format_penalty", "time_tie_band", "memory_tie_band"):
            if getattr(self, name) < 0:
                raise ConfigError(f"rewards.{name} must be >= 0, got {getattr(self, name)}")
        if self.memory_floor_bytes < 1:
            raise ConfigError(f"rewards.memory_floor_bytes must be >= 1, got {self.memory_floor_bytes}")

    def replace(self, **changes: object) -> "RewardConfig":
        return dataclasses.replace(self, **changes)
