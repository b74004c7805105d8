"""Learning check: GRPO through corecode raises the reward of a tiny model on a task it can learn.

Task (corecode.training.toy.digit_problems): "Write f() that returns the number K" for K in 3, 5, 7, 9;
the program is ``def f():\n    return `` + the policy's one-character completion, run in the real sandbox
against two tests (``isinstance(f(), int)``, ``f() == K``). A randomly initialized character-level policy
(~100 symbols) starts near 0.1 (ceiling 1.0): it must learn to write a digit, then the right one for each
prompt. This is stage 2 of `corecode train` (Coder GRPO, R_code, group-aware rewards, sandbox), with
``use_plans: false`` so that the prompt is the problem alone.

    OMP_NUM_THREADS=1 python benchmarks/learning_check.py --seeds 0 1 2 --steps 40
    OMP_NUM_THREADS=1 python benchmarks/learning_check.py --stage debugger --seeds 0 1 2 --steps 40
    OMP_NUM_THREADS=1 python benchmarks/learning_check.py --stage retrieval --seeds 0 1 2 --steps 40

``--stage debugger`` runs the debugger stage instead: the frozen Coder (``toy:buggy_coder``) always writes
``return -1``; the policy, as MapCoder's Debugging agent, sees the problem, that program and the public
test's feedback (``expected K, got -1``) and writes the one-character repair (``toy:digit_debug_problems``).

``--stage cure`` runs the CURE baseline (``method=cure``): the policy also writes a one-character unit test
(the expected value of ``f()``); printed: the programs' ground-truth pass rate, and the test writer's accuracy.

``--stage focused_dpo`` runs the Focused-DPO baseline (``method=focused_dpo``; see
``benchmarks/learning_check_focused_dpo.py`` for what it prints).

``--stage coderl_plus`` runs the CodeRL+ baseline (``method=coderl_plus``): the policy's failing programs become
execution-prediction prompts (one character: the value of ``f()``), 40 % of each batch; printed: the mixed reward,
and per task the code reward (1 iff all tests pass) and the alignment reward.

``--stage planner`` runs stage 1: the policy is the Planner, its one-character plan goes to a frozen Coder
that reads it (``toy:plan_reading_coder``: a digit makes it return the number, a letter a string, anything
else leaves it to its own rule, right only for even K); training problems K = 10..29, validation K = 30..49
(``toy:number_problems``, disjoint). Ceiling 1.0; validation CG from -50 (letters) to +50 points (digits).

``--stage retrieval`` runs the retrieval stage: the policy is MapCoder's Retrieval agent; its answer is parsed
as MapCoder parses it and goes to a frozen exemplar planner and Coder (``toy:exemplar_reading_backend``: the
recalled problem's description's first character becomes the plan, which the plan-reading Coder follows). A
random policy cannot write the parsed structure, so each seed first gets a short supervised warm start on
answers ``Problem 1\n<slot>`` with the slot uniform over 10 digits (help) and 10 letters (hurt); GRPO must
then learn the helpful slots. Same problems and validation as the planner stage.

Prints, per seed, the mean training reward over the first and the last 5 steps; for the planner stage also
validation CG (greedy plans, 20 held-out problems) at the start and the end with 95 % paired intervals, and
the paired change of CG between them.
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


PLANNER = {
    **BASE,
    "stage": "planner",
    "planner_model": "tiny:llama-char",
    "coder_backend": "corecode.training.toy:plan_reading_coder",
    "benchmark": "corecode.training.toy:number_problems",
    "validation_split": "validation",
    "validation_limit": 20,
    "coder_samples": 1,  # the scripted Coder is deterministic: a second program would be a copy
    "rewards": {"format_penalty": 0.0, "lambda_time": 0.0},  # reward = the tests' pass rate, ceiling 1.0
}

# CURE (method=cure): the same policy writes the program (one character after `return `) and the unit test
# (test_style append: one character, the expected value of f()), 2 tasks x (8 programs + 8 tests) per step.
# Its logged reward is a per-task z-score (mean 0); its signal is the raw one: the programs' ground-truth pass
# rate, and the share of well-formed generated tests that pass every correct program (test accuracy).
CURE = {**BASE, "method": "cure", "method_options": {"test_style": "append"}, "per_device_train_batch_size": 32}
SIGNAL = {"cure": "cure/code_pass_rate"}

# CodeRL+ (method=coderl_plus): 5 prompts x 8 rollouts per step, 2 of them alignment prompts once the buffer has
# samples; prediction_style append: the one-character completion is the predicted value of f().
CODERL_PLUS = {**BASE, "method": "coderl_plus", "per_device_train_batch_size": 40,
               "method_options": {"prediction_style": "append"}}

# Retrieval (stage=retrieval): MapCoder's Retrieval agent as the policy; its answer goes through the frozen
# exemplar planner and Coder (toy:exemplar_reading_backend: the recalled problem's description's first character
# becomes the plan, read like the planner stage's). A random policy cannot write the "## Problem N" structure the
# answer is parsed by, so each seed starts from the tiny model after a short supervised warm start on answers
# "Problem 1\n<slot>" with the slot uniform over digits and letters (the format is known, the content is not:
# the situation of a real instruction model); GRPO must then learn which slot helps the Coder.
RETRIEVAL = {
    **PLANNER,
    "stage": "retrieval",
    "coder_backend": "corecode.training.toy:exemplar_reading_backend",
    "retrieval_k": 1,
    "max_completion_length": 12,  # "Problem 1\n" + the slot + end of text
    # 0.01 (the random-init checks' rate) and 3e-3 wipe out the warm start's format within a few steps: an answer
    # that parses to nothing leaves the Coder alone (0.75 on average), a safer bet than a random slot
    "learning_rate": 1e-3,
    "beta": 0.04,  # KL to the warm start: keeps the answer format while the slot is learned
}

STAGES = {"coder": (BASE, "round1/coder"), "debugger": (DEBUGGER, "debugger"), "planner": (PLANNER, "round1/planner"), "cure": (CURE, "cure"),
          "coderl_plus": (CODERL_PLUS, "coderl_plus"), "retrieval": (RETRIEVAL, "retrieval")}

WARM_SLOTS = "0123456789abcdefghij"  # 10 digits (they help), 10 letters (they hurt): a digit half the time


def warm_start_retrieval(seed: int, root: Path, steps: int = 300) -> Path:
    """The tiny model after supervised steps on retrieval answers ``Problem 1\n<slot>`` (slot uniform over
    WARM_SLOTS) for the training problems' retrieval prompts: it knows the answer's format, not which slot helps."""
    import random

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.agents import TaskView, render_prompt
    from corecode.training.models import resolve_model
    from corecode.training.toy import number_problems

    out = root / f"retrieval-warm-seed{seed}"
    if (out / "config.json").is_file():
        return out
    source = resolve_model("tiny:llama-char", seed)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source)
    prompts = [tokenizer.apply_chat_template(render_prompt("retrieval", TaskView.from_problem(p), k=1),
                                             tokenize=False, add_generation_prompt=True)
               for p in number_problems("train")]
    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        rows, labels = [], []
        for prompt in rng.choices(prompts, k=8):
            prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            answer_ids = tokenizer(f"Problem 1\n{rng.choice(WARM_SLOTS)}{tokenizer.eos_token}",
                                   add_special_tokens=False)["input_ids"]
            rows.append(prompt_ids + answer_ids)
            labels.append([-100] * len(prompt_ids) + answer_ids)
        width = max(len(r) for r in rows)  # the prompts differ only in K (two digits): equal lengths in practice
        ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])
        lab = torch.tensor([x + [-100] * (width - len(x)) for x in labels])
        loss = model(input_ids=ids, attention_mask=(ids != tokenizer.pad_token_id).long(), labels=lab).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out



def run_seed(seed: int, steps: int, root: Path, stage: str = "coder") -> dict:
    out = root / f"seed{seed}"
    base, stage_dir = STAGES[stage]
    overrides = [f"seed={seed}", f"max_steps={steps}", f"output_dir={out}"]
    if stage in ("planner", "retrieval"):
        overrides.append(f"eval_steps={max(1, steps // 2)}")  # validation at the start, the middle and the end
    if stage == "retrieval":
        overrides.append(f"retrieval_model={warm_start_retrieval(seed, root)}")
    config = load_config(None, overrides, base=base)
    start = time.perf_counter()
    run_training(config)
    elapsed = time.perf_counter() - start
    metrics = [json.loads(line) for line in (out / stage_dir / "metrics.jsonl").read_text().splitlines()]
    signal = SIGNAL.get(stage, "reward")
    rewards = [m[signal] for m in metrics if signal in m]
    window = min(5, len(rewards) // 2)
    row = {"seed": seed, "first": sum(rewards[:window]) / window, "last": sum(rewards[-window:]) / window,
           "seconds": elapsed, "zero_std": [m.get("frac_reward_zero_std") for m in metrics if "reward" in m]}
    for key, name in (("test_accuracy", "cure/test_accuracy"), ("test_valid", "cure/test_valid_rate"),
                      ("code_reward", "code_reward"), ("align_reward", "align_reward")):
        values = [m[name] for m in metrics if name in m]
        if values:
            row[key] = (sum(values[:10]) / len(values[:10]), sum(values[-10:]) / len(values[-10:]))
    validation = out / stage_dir / "validation.jsonl"
    if validation.is_file():
        row["validation"] = [json.loads(line) for line in validation.read_text().splitlines()]
    return row


def _cg(v: dict) -> str:
    return f"{v['cg_points']:+6.1f} [{v['cg_ci'][0]:+.1f}, {v['cg_ci'][1]:+.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--stage", choices=sorted(STAGES) + ["focused_dpo"], default="coder")
    parser.add_argument("--keep", metavar="DIR", help="write the runs here instead of a temporary directory")
    args = parser.parse_args()
    if args.stage == "focused_dpo":  # DPO, not GRPO: its own run and table (learning_check_focused_dpo.py)
        from learning_check_focused_dpo import main as focused_dpo_check

        return focused_dpo_check(args.seeds, args.steps, args.keep)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        for seed in args.seeds:
            rows.append(run_seed(seed, args.steps, root, args.stage))
    task = "toy numbers, plan-reading frozen Coder" if args.stage == "planner" else "toy digits"
    if args.stage == "retrieval":
        task = "toy numbers, warm-started Retrieval agent, frozen exemplar planner and plan-reading Coder"
    if args.stage == "cure":
        task = "toy digits, one policy as coder and unit-test writer; signal: programs' ground-truth pass rate"
    print(f"\nlearning check ({args.stage} stage): {task}, tiny llama-char policy, {args.steps} GRPO steps, "
          "ceiling 1.0")
    print(f"{'seed':>4} {'reward first 5 steps':>21} {'reward last 5 steps':>20} {'seconds':>8}")
    for r in rows:
        print(f"{r['seed']:>4} {r['first']:>21.3f} {r['last']:>20.3f} {r['seconds']:>8.0f}")
    mean_first = sum(r["first"] for r in rows) / len(rows)
    mean_last = sum(r["last"] for r in rows) / len(rows)
    print(f"mean {mean_first:>21.3f} {mean_last:>20.3f}")
    if args.stage == "cure":
        print("\nCURE's test writer, per seed: test accuracy (well-formed tests passing every correct program) and "
              "well-formed share, mean of the first / last 10 steps that have them")
        for r in rows:
            print(f"{r['seed']:>4} accuracy {r['test_accuracy'][0]:.3f} -> {r['test_accuracy'][1]:.3f}   "
                  f"well-formed {r['test_valid'][0]:.3f} -> {r['test_valid'][1]:.3f}")
    if args.stage == "coderl_plus":
        print("\nCodeRL+ per task, mean of the first / last 10 steps that have it (alignment prompts from step 2 on)")
        for r in rows:
            print(f"{r['seed']:>4} code reward {r['code_reward'][0]:.3f} -> {r['code_reward'][1]:.3f}   "
                  f"alignment reward {r['align_reward'][0]:.3f} -> {r['align_reward'][1]:.3f}")
    if args.stage in ("planner", "retrieval"):
        print("\nvalidation (greedy plans, held-out problems; CG in points [95% paired interval over problems]):")
        print(f"{'seed':>4} {'problems':>8} {'alone':>6} {'CG at step 0':>22} {'CG at the end':>22} "
              f"{'change of CG [95% CI], up/down':>34} {'zero-std share first/last':>26}")
        for r in rows:
            start, end = r["validation"][0], r["validation"][-1]
            change = end.get("vs_start", {}).get("cg")
            moved = "-" if not change else (f"{change['diff']:+.1f} [{change['ci'][0]:+.1f}, {change['ci'][1]:+.1f}], "
                                            f"{change['up']}/{change['down']}")
            zs = [z for z in r["zero_std"] if z is not None]
            zero = "-" if not zs else f"{zs[0]:.2f} / {zs[-1]:.2f}"
            print(f"{r['seed']:>4} {start['n_problems']:>8} {start['pass1_alone']:>6.2f} {_cg(start):>22} "
                  f"{_cg(end):>22} {moved:>34} {zero:>26}")


if __name__ == "__main__":
    main()
