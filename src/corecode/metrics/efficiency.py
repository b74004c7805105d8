"""Runtime and peak memory of the programs that pass (METHOD.md section 4, the paper's appendix).

Only samples that pass every test are measured: a program that crashes early is "fast" for the wrong reason.
Runtime and memory are the sandbox's whole-program measurement (``corecode.sandbox.measure``, the same
numbers the rewards use): the CPU seconds (user + system) of one whole execution -- module-level code and
every test -- timed by repetition (best of rounds), and the peak of Python's traced allocations during one
execution, in MB (10**6 bytes). We report mean and median; the median is what to compare across runs on a
shared machine (a single slow outlier moves the mean).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Efficiency", "efficiency", "format_efficiency", "format_seconds", "format_bytes"]


@dataclass(frozen=True)
class Efficiency:
    """Runtime and memory statistics over passing programs (None when no program passed)."""

    n_passing: int
    cpu_time_s_mean: float | None = None
    cpu_time_s_median: float | None = None
    peak_memory_mb_mean: float | None = None
    peak_memory_mb_median: float | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "n_passing": self.n_passing,
            "cpu_time_s_mean": self.cpu_time_s_mean,
            "cpu_time_s_median": self.cpu_time_s_median,
            "peak_memory_mb_mean": self.peak_memory_mb_mean,
            "peak_memory_mb_median": self.peak_memory_mb_median,
        }


def efficiency(samples: Iterable[tuple[bool, float, int]]) -> Efficiency:
    """Statistics from (passed, cpu seconds, peak memory bytes) per sample; failing samples are ignored.

    >>> efficiency([(True, 0.5, 2_000_000), (False, 9.0, 0), (True, 1.5, 4_000_000)]).cpu_time_s_mean
    1.0
    """
    times, mems = [], []
    for passed, cpu_time_s, peak_bytes in samples:
        if passed:
            times.append(cpu_time_s)
            mems.append(peak_bytes / 1e6)
    if not times:
        return Efficiency(n_passing=0)
    return Efficiency(
        n_passing=len(times),
        cpu_time_s_mean=statistics.fmean(times),
        cpu_time_s_median=statistics.median(times),
        peak_memory_mb_mean=statistics.fmean(mems),
        peak_memory_mb_median=statistics.median(mems),
    )


def format_seconds(seconds: float) -> str:
    """CPU seconds in a readable unit: 3.2 us, 41 us, 1.20 ms, 0.512 s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def format_bytes(n_bytes: float) -> str:
    if n_bytes < 1e3:
        return f"{n_bytes:.0f} B"
    if n_bytes < 1e6:
        return f"{n_bytes / 1e3:.3g} kB"
    return f"{n_bytes / 1e6:.3g} MB"


def format_efficiency(eff: Efficiency) -> str:
    """One line: how many passing programs were measured, their median CPU time and peak memory."""
    if not eff.n_passing:
        return "efficiency: no passing program was measured"
    return (f"efficiency of the {eff.n_passing} passing programs (whole program, measured): CPU time median "
            f"{format_seconds(eff.cpu_time_s_median or 0.0)} (mean {format_seconds(eff.cpu_time_s_mean or 0.0)}), "
            f"peak memory median {format_bytes((eff.peak_memory_mb_median or 0.0) * 1e6)} "
            f"(mean {format_bytes((eff.peak_memory_mb_mean or 0.0) * 1e6)})")
