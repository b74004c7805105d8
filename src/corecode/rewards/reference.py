"""t_ref of the stage-1 time score: the CPU time of each problem's reference solution, measured once.

``../shared/METHOD.md`` section 3 scores a passing program's speed against "the problem's
reference-solution time when known, else the median time of the passing programs in the group". This
module measures the "when known" part: each problem's first reference solution runs ``repeats`` times
through the *same* executor as the programs being rewarded (same tests, same sandbox, same CPU-time
accounting), and t_ref is the median of those runs. A reference that does not pass every test, or that
fails on our side, gets ``None`` (the reward then falls back to the group median): a wrong reference is no
yardstick.

Results are a plain ``{problem_id: seconds | None}`` dict, which :func:`save_reference_times` /
:func:`load_reference_times` keep next to a training stage so a resumed run does not re-measure (and
does not get different numbers on a noisy machine).
"""

from __future__ import annotations

import json
import logging
import os
import statistics
from collections.abc import Sequence
from pathlib import Path

from corecode.errors import ConfigError
from corecode.rewards.outcome import Outcome
from corecode.rewards.trl_rewards import Executor
from corecode.types import Problem

__all__ = ["measure_reference_times", "save_reference_times", "load_reference_times"]

log = logging.getLogger(__name__)


def measure_reference_times(
    problems: Sequence[Problem], execute: Executor, repeats: int = 3
) -> dict[str, float | None]:
    """Median CPU seconds of each problem's first reference solution over ``repeats`` runs, in one batch.

    Problems without a reference solution map to ``None``; so do references that fail any test or any run.
    """
    if repeats < 1:
        raise ConfigError(f"repeats must be >= 1, got {repeats}")
    with_reference = [p for p in problems if p.reference_solutions]
    jobs = [(p.reference_solutions[0], p) for p in with_reference for _ in range(repeats)]
    results = execute(jobs) if jobs else []
    times: dict[str, float | None] = {p.id: None for p in problems}
    failed = []
    for i, problem in enumerate(with_reference):
        runs = results[i * repeats : (i + 1) * repeats]
        outcomes = [None if r is None else Outcome.from_execution(r) for r in runs]
        if all(o is not None and o.passed for o in outcomes):
            times[problem.id] = statistics.median(o.cpu_time_s for o in outcomes)  # type: ignore[union-attr]
        else:
            failed.append(problem.id)
    known = sum(t is not None for t in times.values())
    log.info(
        "reference times: %d of %d problems (%d without a reference, %d whose reference fails the tests)",
        known, len(problems), len(problems) - len(with_reference), len(failed),
    )
    if failed:
        log.warning("reference solutions that fail their own tests (t_ref falls back to the group median): %s",
                    ", ".join(failed[:10]) + (" ..." if len(failed) > 10 else ""))
    return times


def save_reference_times(path: Path, times: dict[str, float | None]) -> None:
    """Write atomically (a crash leaves the old file or none, never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(times, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_reference_times(path: Path, problems: Sequence[Problem]) -> dict[str, float | None] | None:
    """The saved times if they cover exactly these problems; ``None`` when absent or for other problems."""
    if not path.is_file():
        return None
    try:
        times = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}); delete it to measure the reference times again") from None
    if not isinstance(times, dict) or set(times) != {p.id for p in problems}:
        log.info("%s covers other problems; measuring the reference times again", path)
        return None
    for pid, value in times.items():
        if value is not None and not (isinstance(value, (int, float)) and value >= 0):
            raise ConfigError(f"{path}: problem {pid!r}: reference time must be a number >= 0 or null, got {value!r}")
    return {pid: None if v is None else float(v) for pid, v in times.items()}
