"""Learning check of Focused-DPO (``method=focused_dpo``) on the toy digit task; run through
``benchmarks/learning_check.py --method focused_dpo`` (or this file directly, same options).

Task (corecode.training.toy.digit_problems): "Write f() that returns the number K", K in 3, 5, 7, 9; the
program is ``def f():\\n    return `` + the policy's one-character completion, labelled by the real sandbox on
``isinstance(f(), int)`` and ``f() == K``. The tiny random character-level policy samples ``--samples`` programs
per prompt at temperature 1.5 (the authors sample 10; a random policy writes the right digit ~1 % of the time,
so the toy needs more to find a (correct, incorrect) pair), then Focused-DPO trains on the pairs.

Prints, per seed: the pairs found; the method's own signal, the focused preference margin beta * [w (lr(mid_c) -
lr(mid_r)) + lr(suffix_c)] and its accuracy, over the first and last steps; and the pass rate on the toy task:
the policy's exact probability of writing the right digit at temperature 1 (its expected pass@1 with sampling,
mean over the 4 problems), at the start and the end, and greedy pass@1 at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from corecode.training import load_config, run_training

FOCUSED_DPO = {
    "method": "focused_dpo",
    "coder_model": "tiny:llama-char",
    "planner_model": "tiny:llama-char",
    "benchmark": "corecode.training.toy:digit_problems",
    "validation_limit": 4,
    "per_device_train_batch_size": 4,
    "learning_rate": 0.003,
    "max_completion_length": 1,
    "program_style": "append",
    "use_lora": False,
    "save_steps": 100000,
    "report_to": ["none"],
    "sandbox_workers": 2,
}


def right_digit_probability(checkpoint: str) -> float:
    """Mean over the toy problems of pi(K | the Coder prompt): the exact expected pass@1 at temperature 1."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.agents import TaskView, render_prompt
    from corecode.training.toy import digit_problems

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint).eval()
    total = 0.0
    problems = digit_problems()
    for problem in problems:
        ids = tokenizer.apply_chat_template(render_prompt("coder", TaskView.from_problem(problem)),
                                            add_generation_prompt=True, tokenize=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        with torch.no_grad():
            probs = model(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)
        total += probs[tokenizer.convert_tokens_to_ids(problem.id.split("-")[1])].item()
    return total / len(problems)


def run_seed(seed: int, steps: int, root: Path, samples: int) -> dict:
    from corecode.training.models import resolve_model

    out = root / f"seed{seed}"
    overrides = [f"seed={seed}", f"max_steps={steps}", f"output_dir={out}", f"eval_steps={steps}",
                 f"method_options.samples={samples}"]
    config = load_config(None, overrides, base=FOCUSED_DPO)
    start = time.perf_counter()
    result = run_training(config)
    elapsed = time.perf_counter() - start
    stage = out / "focused_dpo"
    metrics = [json.loads(line) for line in (stage / "metrics.jsonl").read_text().splitlines() if '"loss"' in line]
    validation = [json.loads(line) for line in (stage / "validation.jsonl").read_text().splitlines()]
    window = min(5, len(metrics) // 2)

    def mean(key, rows):
        return sum(m[key] for m in rows) / len(rows)

    return {
        "seed": seed, "seconds": elapsed, "pairs": json.loads((stage / "pairs-summary.json").read_text())["pairs"],
        "margin": (mean("rewards/margins", metrics[:window]), mean("rewards/margins", metrics[-window:])),
        "accuracy": (mean("rewards/accuracies", metrics[:window]), mean("rewards/accuracies", metrics[-window:])),
        "p_right": (right_digit_probability(resolve_model(config.coder_model, seed)), right_digit_probability(result["coder"])),
        "greedy": (validation[0]["pass1_alone"], validation[-1]["pass1_alone"]),
    }


def report(rows: list[dict], steps: int, samples: int) -> None:
    print(f"\nlearning check (focused_dpo): toy digits, tiny llama-char policy, {samples} samples per prompt at "
          f"temperature 1.5, {steps} DPO steps")
    print(f"{'seed':>4} {'pairs':>5} {'focused margin first/last 5':>28} {'accuracy first/last 5':>22} "
          f"{'P(right digit) start/end':>25} {'greedy pass@1 start/end':>24} {'seconds':>8}")
    for r in rows:
        print(f"{r['seed']:>4} {r['pairs']:>5} {r['margin'][0]:>13.3f} / {r['margin'][1]:<12.3f} "
              f"{r['accuracy'][0]:>10.2f} / {r['accuracy'][1]:<9.2f} {r['p_right'][0]:>12.4f} / {r['p_right'][1]:<10.4f} "
              f"{r['greedy'][0]:>11.2f} / {r['greedy'][1]:<10.2f} {r['seconds']:>8.0f}")
    n = len(rows)
    print(f"mean       {sum(r['margin'][0] for r in rows) / n:>13.3f} / {sum(r['margin'][1] for r in rows) / n:<12.3f} "
          f"{sum(r['accuracy'][0] for r in rows) / n:>10.2f} / {sum(r['accuracy'][1] for r in rows) / n:<9.2f} "
          f"{sum(r['p_right'][0] for r in rows) / n:>12.4f} / {sum(r['p_right'][1] for r in rows) / n:<10.4f} "
          f"{sum(r['greedy'][0] for r in rows) / n:>11.2f} / {sum(r['greedy'][1] for r in rows) / n:<10.2f}")


def main(seeds: list[int], steps: int, keep: str | None, samples: int = 200) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(keep) if keep else Path(tmp)
        for seed in seeds:
            rows.append(run_seed(seed, steps, root, samples))
    report(rows, steps, samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--keep", metavar="DIR")
    args = parser.parse_args()
    main(args.seeds, args.steps, args.keep, args.samples)
