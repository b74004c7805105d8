"""Runtime and peak memory of the programs that pass (METHOD.md section 4, the paper's appendix).

Only samples that pass every test are measured: a program that crashes early is "fast" for the wrong reason.
Runtime is the CPU time (user + system) summed over the program's tests, as the sandbox measures it: a
low-noise count, unlike one wall-clock reading. Peak memory is the largest resident memory above the
interpreter's baseline over the tests, in MB (10**6 bytes). We report mean and median; the median is what
to compare across runs on a shared machine (a single slow outlier moves the mean).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Efficiency", "efficiency"]


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
