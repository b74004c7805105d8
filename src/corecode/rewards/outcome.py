"""The three numbers of one program's execution that the rewards read, as a small JSON-able record.

Rewards never see an :class:`~corecode.types.ExecutionResult` directly: reducing it to an
:class:`Outcome` first keeps the reward functions pure and lets training logs store exactly what a reward
was computed from, so a test can recompute every logged reward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corecode.types import ExecutionResult

__all__ = ["Outcome"]


@dataclass(frozen=True)
class Outcome:
    """pass rate s in [0, 1], total CPU seconds over the tests, peak memory above the interpreter's baseline."""

    pass_rate: float
    cpu_time_s: float = 0.0
    peak_memory_bytes: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.pass_rate <= 1.0:
            raise ValueError(f"pass_rate must be in [0, 1], got {self.pass_rate}")
        if self.cpu_time_s < 0 or self.peak_memory_bytes < 0:
            raise ValueError("cpu_time_s and peak_memory_bytes must be >= 0")

    @property
    def passed(self) -> bool:
        """s_i = 1: every test passed (the time and space terms apply only then)."""
        return self.pass_rate == 1.0

    @classmethod
    def from_execution(cls, result: ExecutionResult) -> "Outcome":
        return cls(
            pass_rate=result.pass_rate,
            cpu_time_s=result.cpu_time_s,
            peak_memory_bytes=result.peak_memory_bytes,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"pass_rate": self.pass_rate, "cpu_time_s": self.cpu_time_s, "peak_memory_bytes": self.peak_memory_bytes}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Outcome":
        return cls(float(d["pass_rate"]), float(d["cpu_time_s"]), int(d["peak_memory_bytes"]))
