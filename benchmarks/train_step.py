"""Overhead of collaboration: one stage-1 GRPO step of corecode vs a plain TRL GRPO step, same model and batch.

Both runs use TRL's GRPOTrainer with the same policy (tiny llama-char by default), the same Planner prompts,
G and batch size. The plain step scores completions with a trivial reward (their length); the collaborative
step runs corecode's PlannerReward: the frozen Coder (here the same tiny model, in-process through the
transformers backend) writes M programs per plan, the sandbox runs them all, R_plan is computed.
Times are TRL's own ``step_time`` (generation + reward + backward), mean over the steps after the first.

    OMP_NUM_THREADS=1 python benchmarks/train_step.py [--model tiny:llama-char] [--steps 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from corecode.training import load_config

BASE = {
    "stage": "planner",
    "planner_model": "tiny:llama-char",
    "coder_model": "tiny:llama-char",
    "benchmark": "corecode.training.toy:digit_problems",
    "validation_limit": 0,
    "num_generations": 4,
    "coder_samples": 2,
    "per_device_train_batch_size": 8,
    "learning_rate": 1e-3,
    "beta": 0.0,
    "max_completion_length": 32,
    "partner_max_tokens": 32,
    "use_lora": False,
    "save_steps": 100000,
    "report_to": ["none"],
    "log_completions": False,
    "sandbox_workers": 2,
}

TIMERS: dict[str, list[float]] = {"reward (all)": [], "coder generation": [], "sandbox": []}


def _timed(name, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMERS[name].append(time.perf_counter() - start)

    return wrapper


def collaborative_steps(config) -> list[float]:
    import corecode.training.stage1 as stage1
    from corecode.training.runner import run_training

    writer, executor, reward_class = stage1.coder_writer, stage1.sandbox_executor, stage1.PlannerReward

    class TimedPlannerReward(reward_class):
        def __call__(self, *args, **kwargs):
            return _timed("reward (all)", super().__call__)(*args, **kwargs)

    stage1.PlannerReward = TimedPlannerReward
    stage1.coder_writer = lambda *a, **k: _timed("coder generation", writer(*a, **k))
    stage1.sandbox_executor = lambda *a, **k: _timed("sandbox", executor(*a, **k))
    run_training(config)
    return _step_times(Path(config.output_dir) / "round1" / "planner" / "metrics.jsonl")


def plain_steps(config, root: Path) -> list[float]:
    from trl import GRPOTrainer

    from corecode.training.data import load_problems, planner_rows, to_dataset
    from corecode.training.grpo import grpo_args
    from corecode.training.models import load_policy, resolve_model

    def length_reward(prompts, completions, **kwargs):
        return [float(len(c[0]["content"])) for c in completions]

    problems = load_problems(config.benchmark, config.split)
    model, tokenizer = load_policy(resolve_model(config.planner_model, config.seed), config.bf16)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[length_reward],
        args=grpo_args(config, root / "plain"),
        train_dataset=to_dataset(planner_rows(problems)),
        processing_class=tokenizer,
    )
    trainer.train()
    return [h["step_time"] for h in trainer.state.log_history if "step_time" in h]


def _step_times(path: Path) -> list[float]:
    import json

    return [m["step_time"] for m in map(json.loads, path.read_text().splitlines()) if "step_time" in m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny:llama-char", help="policy and frozen Coder (tiny:, builtin:, dir)")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        overrides = [f"max_steps={args.steps}", f"output_dir={root / 'collab'}",
                     f"planner_model={args.model}", f"coder_model={args.model}"]
        config = load_config(None, overrides, base=BASE)
        plain = plain_steps(config, root)[1:]
        collab = collaborative_steps(config)[1:]
    mean_plain, mean_collab = sum(plain) / len(plain), sum(collab) / len(collab)
    per_step = {name: sum(times[1:]) / max(1, len(times) - 1) for name, times in TIMERS.items()}  # skip warm-up
    print(f"\none GRPO step, {args.model}, G={config.num_generations}, batch={config.per_device_train_batch_size}, "
          f"M={config.coder_samples}, completions <= {config.max_completion_length} tokens")
    print(f"plain TRL step (trivial reward):          {mean_plain:7.2f} s")
    print(f"collaborative step (Coder + sandbox):     {mean_collab:7.2f} s   ratio {mean_collab / mean_plain:.2f}x")
    print(f"  of which the reward call:               {per_step['reward (all)']:7.2f} s")
    print(f"    frozen Coder generation:              {per_step['coder generation']:7.2f} s")
    print(f"    sandbox ({config.per_device_train_batch_size * config.coder_samples} programs):"
          f"                {per_step['sandbox']:7.2f} s")


if __name__ == "__main__":
    main()
