"""Learning check: GRPO through corecode raises the reward of a tiny model on a task it can learn.

Task (corecode.training.toy.digit_problems): "Write f() that returns the number K" for K in 3, 5, 7, 9;
the program is ``def f():\n    return `` + the policy's one-character completion, run in the real sandbox
against two tests (``isinstance(f(), int)``, ``f() == K``). A randomly initialized character-level policy
(~100 symbols) starts near 0.1 (ceiling 1.0): it must learn to write a digit, then the right one for each
prompt. This is stage 2 of `corecode train` (Coder GRPO, R_code, group-aware rewards, sandbox), with
``use_plans: false`` so that the prompt is the problem alone.

    OMP_NUM_THREADS=1 python benchmarks/learning_check.py --seeds 0 1 2 --steps 40
    OMP_NUM_THREADS=1 python benchmarks/learning_check.py --stage debugger --seeds 0 1 2 --steps 40

``--stage debugger`` runs the debugger stage instead: the frozen Coder (``toy:buggy_coder``) always writes
``return -1``; the policy, as MapCoder's Debugging agent, sees the problem, that program and the public
test's feedback (``expected K, got -1``) and writes the one-character repair (``toy:digit_debug_problems``).

Prints, per seed, the mean training reward over the first and the last 5 steps.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from corecode.training import load_config, run_training

BASE = {
    "stage": "coder",
    "use_plans": False,
    "coder_model": "tiny:llama-char",
    "planner_model": "tiny:llama-char",
    "benchmark": "corecode.training.toy:digit_problems",
    "validation_limit": 0,
    "num_generations": 8,
    "per_device_train_batch_size": 16,
    "learning_rate": 0.01,
    "beta": 0.0,
    "max_completion_length": 1,
    "program_style": "append",
    "use_lora": False,
    "save_steps": 100000,
    "report_to": ["none"],
    "log_completions": False,
    "sandbox_workers": 2,
}


DEBUGGER = {
    **BASE,
    "stage": "debugger",
    "debugger_model": "tiny:llama-char",
    "coder_backend": "corecode.training.toy:buggy_coder",
    "benchmark": "corecode.training.toy:digit_debug_problems",
    "debug_attempts": 1,
    "debug_cases_per_problem": 1,
}


def run_seed(seed: int, steps: int, root: Path, stage: str = "coder") -> tuple[float, float, float]:
    out = root / f"seed{seed}"
    base = DEBUGGER if stage == "debugger" else BASE
    config = load_config(None, [f"seed={seed}", f"max_steps={steps}", f"output_dir={out}"], base=base)
    start = time.perf_counter()
    run_training(config)
    elapsed = time.perf_counter() - start
    metrics = [json.loads(line) for line in (out / ("debugger" if stage == "debugger" else "round1/coder") / "metrics.jsonl").read_text().splitlines()]
    rewards = [m["reward"] for m in metrics if "reward" in m]
    window = min(5, len(rewards) // 2)
    return sum(rewards[:window]) / window, sum(rewards[-window:]) / window, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--stage", choices=["coder", "debugger"], default="coder")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            rows.append((seed, *run_seed(seed, args.steps, Path(tmp), args.stage)))
    print(f"\nlearning check ({args.stage} stage): toy digits, tiny llama-char policy, {args.steps} GRPO steps, "
          "ceiling 1.0")
    print(f"{'seed':>4} {'reward first 5 steps':>21} {'reward last 5 steps':>20} {'seconds':>8}")
    for seed, first, last, elapsed in rows:
        print(f"{seed:>4} {first:>21.3f} {last:>20.3f} {elapsed:>8.0f}")
    mean_first = sum(r[1] for r in rows) / len(rows)
    mean_last = sum(r[2] for r in rows) / len(rows)
    print(f"mean {mean_first:>21.3f} {mean_last:>20.3f}")


if __name__ == "__main__":
    main()
