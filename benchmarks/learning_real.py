"""The real experiment (issue 14): does collaborative training make the built-in 0.5B pair better?

One command, resumable after any interruption (rerun the same command: every step skips what is done):

1. **Held-out set**: MBPP validation + test (``--heldout`` problems, default 100 = the 90 validation problems
   and the first 10 test problems), disjoint from training (checked).
2. **Problem filter**: for each of the first ``--train-pool`` MBPP training problems, the base Planner
   (the built-in 0.5B, in-process with transformers, batched, temperature 1.0) writes ``--filter-plans`` plans and the base Coder writes
   ``--filter-programs`` programs per plan; problems whose programs all get the same pass rate (always or
   never solved: zero reward variance, nothing for GRPO) are dropped; their share is logged.
   ``filter.jsonl`` keeps one line per problem (a torn last line is dropped on restart).
   ``--filter-by alone`` is ~10x cheaper: the base Coder alone writes ``--filter-programs`` programs per
   problem, and a problem is kept when one of them passes a test (``filter-alone.jsonl``).
3. **Stage 1** (``corecode train stage=planner``): the built-in 0.5B Planner (LoRA) against the frozen
   built-in 0.5B Coder, run in-process and batched (``generation_batch_size``: on 2 cores a batch of 16 rows
   makes ~100 tok/s with torch bf16 against ~27 tok/s for llama.cpp one sequence at a time), on the kept
   problems; validation CG on the held-out set at the start, the middle and the end, with 95 % paired
   intervals.
4. **Stage 2** (``corecode train stage=coder``): the Coder trained on the trained Planner's plans (written
   once, cached); validation pass@1 with plans at the start (= the base Coder with the trained plans) and
   the end, on the same held-out set.
5. ``report.md``: the validation tables with intervals, the paired changes (trained vs untrained Planner's
   CG; stage-2 Coder vs base Coder, both with the trained plans) and the diagnosis (reward, reward std,
   zero-std share, KL, plan format rate, plan length).

    python benchmarks/learning_real.py --out runs/learning-real            # the full run (torch uses every core)
    OMP_NUM_THREADS=1 python benchmarks/learning_real.py --out /tmp/lr-smoke --smoke         # the path, minutes
    python benchmarks/learning_real.py --out runs/learning-real --report-only                # report.md of a stopped run

Checkpoints stay in ``--out``; only ``report.md`` and the curves belong in the docs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

BUILTIN = "qwen2.5-coder-0.5b"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mbpp" / "mbpp.jsonl"

SMOKE = {"train_pool": 3, "train_problems": 2, "heldout": 3, "filter_plans": 1, "filter_programs": 2, "problems_per_step": 1,
         "stage1_steps": 1, "stage2_steps": 1, "num_generations": 2, "plan_tokens": 96, "code_tokens": 160,
         "fill_unfiltered": True}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/learning-real", help="run directory (rerun to resume)")
    parser.add_argument("--data-path", default=str(DEFAULT_DATA) if DEFAULT_DATA.is_file() else None,
                        help="MBPP jsonl (default: the shared copy when present, else corecode's own)")
    parser.add_argument("--train-pool", type=int, default=40, help="MBPP training problems the filter looks at")
    parser.add_argument("--train-problems", type=int, default=32, help="at most this many kept problems train")
    parser.add_argument("--heldout", type=int, default=100, help="held-out problems: MBPP validation, then test")
    parser.add_argument("--filter-plans", type=int, default=2, help="base plans per problem in the filter")
    parser.add_argument("--filter-programs", type=int, default=2,
                        help="base programs per plan in the filter (--filter-by alone: per problem)")
    parser.add_argument("--filter-by", choices=("pair", "alone"), default="pair",
                        help="pair: the base Planner's plans and the Coder's programs, keep problems whose pass rates "
                             "differ; alone: the base Coder alone (no plan, ~10x cheaper), keep problems where one "
                             "of its programs passes a test (always-solved ones too: the Planner must learn not to "
                             "break them)")
    parser.add_argument("--start-validation", default=None, metavar="RUN_DIR",
                        help="take stage 1's step-0 validation row from an earlier run directory whose stage 1 had "
                             "the same held-out problems, base models, token caps and seed (the untrained Planner's "
                             "greedy plans are the same: ~12 min saved on 2 cores); checked against its config.yaml")
    parser.add_argument("--stage1-steps", type=int, default=16, help="GRPO steps of stage 1")
    parser.add_argument("--stage1-eval-steps", type=int, default=None,
                        help="stage-1 validation every N steps (default: half the steps: start, middle, end; "
                        "0: start and end only, ~15 min less on 2 cores)")
    parser.add_argument("--stage2-steps", type=int, default=8, help="GRPO steps of stage 2")
    parser.add_argument("--stage2-eval-steps", type=int, default=0,
                        help="stage-2 validation every N steps (default 0: start and end only; each one is ~8 min "
                        "on 2 cores: the Coder with plans and alone on the held-out problems)")
    parser.add_argument("--problems-per-step", type=int, default=4,
                        help="training problems per GRPO step (rows per step = G x this); the first design used 1, "
                        "and its per-step reward mostly said which problem it was")
    parser.add_argument("--format-penalty", type=float, default=0.25,
                        help="R_plan's format penalty (rewards.format_penalty); at the library's 0.1 the first "
                        "design's Planner dropped its headings (format rate 0.53 -> 0.22)")
    parser.add_argument("--reuse-filter", default=None, metavar="FILTER_SUMMARY_JSON",
                        help="train on the problems an earlier run's filter kept (its filter-summary.json, "
                        "e.g. docs/results/learning-real-filter-summary.json) instead of measuring the pool again")
    parser.add_argument("--num-generations", type=int, default=4, help="G: completions per problem")
    parser.add_argument("--num-iterations", type=int, default=1,
                        help="mu: optimizer steps per rollout (TRL's num_iterations; the paper's epochs over a rollout "
                             "batch). Generation is most of a step on a CPU (~78 %% in the fourth design), so mu = 4 "
                             "gives 4x the updates for ~1.6x the time. --stage1/2-steps count optimizer steps: the "
                             "number of rollouts (and of problems trained on) is steps / mu")
    parser.add_argument("--plan-tokens", type=int, default=160, help="max tokens of a plan (short plans: fast)")
    parser.add_argument("--code-tokens", type=int, default=256, help="max tokens of a program")
    parser.add_argument("--learning-rate", type=float, default=2e-4, help="LoRA learning rate")
    parser.add_argument("--beta", type=float, default=0.04, help="KL coefficient (0: no reference pass, no KL log)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generation-batch-size", type=int, default=16,
                        help="rows per generate() call of the in-process models (policy and frozen partner)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: every usable core; the run is the machine's only job)")
    parser.add_argument("--fill-unfiltered", action="store_true",
                        help="when the filter keeps fewer than --train-problems, fill up with dropped problems "
                        "(smoke runs: a zero-variance problem gives GRPO nothing)")
    parser.add_argument("--report-only", action="store_true",
                        help="write report.md from what --out holds (e.g. a run stopped after stage 1) and exit")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest configuration (" + ", ".join(f"{k}={v}" for k, v in SMOKE.items()) + ")")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    args.data_path = args.data_path or None  # "": corecode's own MBPP copy
    return args


# ------------------------------------------------------------------------------------------------ data
def load_sets(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    from corecode.training.data import load_problems

    pool = load_problems("mbpp", "train", path=args.data_path, limit=args.train_pool)
    heldout = load_problems("mbpp", "validation+test", path=args.data_path, limit=args.heldout)
    overlap = {p.id for p in pool} & {p.id for p in heldout}
    if overlap:
        raise SystemExit(f"held-out problems overlap the training pool: {sorted(overlap)[:5]}")
    return pool, heldout


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line from a kill: that problem is measured again
            break
    return rows


def reused_problems(args: argparse.Namespace, pool: list[Any], out: Path) -> list[str]:
    """The training problems an earlier run's filter kept (``--reuse-filter``), checked against the pool."""
    path = Path(args.reuse_filter)
    summary = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(summary.get("trained_on"), list):
        raise SystemExit(f"{path}: no 'trained_on' list (a filter-summary.json of learning_real.py is expected)")
    known = {p.id for p in pool}
    unknown = [tid for tid in summary["trained_on"] if tid not in known]
    if unknown:
        raise SystemExit(f"{path}: trained_on names problems outside the --train-pool {len(pool)}: {unknown[:5]}; "
                         "raise --train-pool")
    summary["trained_on"] = summary["trained_on"][: args.train_problems]
    summary["reused_from"] = str(path)
    (out / "filter-summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    log(f"filter: reusing {path}: {len(summary['trained_on'])} training problems")
    return summary["trained_on"]


def _measure_pool(args: argparse.Namespace, pool: list[Any], path: Path, chunk: int, label: str,
                  sample: Callable[[Any, list[Any]], tuple[list[list[str]], list[dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """One row per pool problem in ``path`` (a torn last line is measured again): the base model in-process,
    ``chunk`` problems at a time; ``sample(backend, part)`` gives each problem's program texts and the extra
    fields of its row. The rows, measured now or before, by problem id."""
    from corecode.backends import load_backend
    from corecode.rewards.trl_rewards import program_for, sandbox_executor
    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.training.models import resolve_model

    rows = {r["problem_id"]: r for r in _read_rows(path)}
    path.write_text("".join(json.dumps(rows[p.id]) + "\n" for p in pool if p.id in rows), encoding="utf-8")
    todo = [p for p in pool if p.id not in rows]
    if not todo:
        return rows
    log(f"filter{label}: {len(rows)} of {len(pool)} pool problems measured before; measuring {len(todo)}")
    # the base model in-process, batched: on a 2-core CPU a batch of 16 rows makes ~100 tok/s with torch
    # (bf16), where llama.cpp makes ~27 tok/s one sequence at a time
    backend = load_backend(f"transformers:{resolve_model('builtin:' + BUILTIN)}", dtype="bfloat16",
                           batch_size=args.generation_batch_size)
    try:
        with Sandbox(SandboxConfig(workers=2)) as sandbox, path.open("a", encoding="utf-8") as fh:
            execute = sandbox_executor(sandbox)
            for start in range(0, len(todo), chunk):
                part = todo[start:start + chunk]
                programs, extras = sample(backend, part)
                results = iter(execute([(program_for(p, text), p) for p, texts in zip(part, programs) for text in texts]))
                for i, (problem, texts, extra) in enumerate(zip(part, programs, extras)):
                    mine = [next(results) for _ in texts]
                    rates = [None if r is None else r.n_passed / r.n_tests if r.n_tests else 0.0 for r in mine]
                    rows[problem.id] = {"problem_id": problem.id, "pass_rates": rates, **extra}
                    fh.write(json.dumps(rows[problem.id]) + "\n")
                    log(f"filter {start + i + 1}/{len(todo)} {problem.id}:{label} pass rates {rates}")
                fh.flush()
                os.fsync(fh.fileno())
    finally:
        backend.close()
    return rows


def filter_problems(args: argparse.Namespace, pool: list[Any], out: Path) -> list[str]:
    """The kept training problem ids, measuring each pool problem once (filter.jsonl), or an earlier run's."""
    if args.reuse_filter:
        return reused_problems(args, pool, out)
    if args.filter_by == "alone":
        return filter_alone(args, pool, out)
    from corecode.agents import TaskView, render_prompt, shown_plan
    from corecode.backends import SamplingConfig

    plan_sampling = SamplingConfig(temperature=1.0, top_p=0.99, max_tokens=args.plan_tokens, seed=args.seed)
    code_sampling = SamplingConfig(temperature=1.0, top_p=0.99, max_tokens=args.code_tokens, seed=args.seed)

    def sample(backend: Any, part: list[Any]) -> tuple[list[list[str]], list[dict[str, Any]]]:
        views = [TaskView.from_problem(p) for p in part]
        plan_groups = backend.generate([render_prompt("planner", v) for v in views], plan_sampling, n=args.filter_plans)
        prompts = [render_prompt("coder_with_plan", v, plan=shown_plan(c.text))
                   for v, group in zip(views, plan_groups) for c in group]
        texts = [c.text for group in backend.generate(prompts, code_sampling, n=args.filter_programs) for c in group]
        per = args.filter_plans * args.filter_programs
        return ([texts[i * per:(i + 1) * per] for i in range(len(part))],
                [{"plan_chars": [len(c.text) for c in group]} for group in plan_groups])

    rows = _measure_pool(args, pool, out / "filter.jsonl", max(1, args.generation_batch_size // args.filter_plans),
                         "", sample)
    kept, always, never, constant = classify([p.id for p in pool], rows)
    summary = {"pool": len(pool), "kept": len(kept), "always_solved": always, "never_solved": never,
               "other_constant": constant, "kept_share": len(kept) / len(pool), "trained_on": kept[: args.train_problems]}
    (out / "filter-summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    log(f"filter: kept {len(kept)} of {len(pool)} ({100 * len(kept) / len(pool):.0f} %); dropped {always} always "
        f"solved, {never} never solved, {constant} with another constant pass rate (zero reward variance)")
    chosen = kept[: args.train_problems]
    if args.fill_unfiltered and len(chosen) < args.train_problems:
        extra = [p.id for p in pool if p.id not in kept][: args.train_problems - len(chosen)]
        log(f"filter: filling up with {len(extra)} dropped problem(s) for the smoke run: {extra}")
        chosen += extra
    if not chosen:
        raise SystemExit("the filter kept no training problem: raise --train-pool or --filter-plans")
    summary["trained_on"] = chosen
    (out / "filter-summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return chosen


def filter_alone(args: argparse.Namespace, pool: list[Any], out: Path) -> list[str]:
    """``--filter-by alone``: the base Coder alone writes ``--filter-programs`` programs per pool problem (no
    plan, temperature 1.0, batched); a problem is kept when one of them passes at least one test. One line per
    problem in filter-alone.jsonl (resumable like filter.jsonl)."""
    from corecode.agents import TaskView, render_prompt
    from corecode.backends import SamplingConfig

    sampling = SamplingConfig(temperature=1.0, top_p=0.99, max_tokens=args.code_tokens, seed=args.seed)

    def sample(backend: Any, part: list[Any]) -> tuple[list[list[str]], list[dict[str, Any]]]:
        groups = backend.generate([render_prompt("coder", TaskView.from_problem(p)) for p in part], sampling,
                                  n=args.filter_programs)
        return [[c.text for c in group] for group in groups], [{} for _ in part]

    rows = _measure_pool(args, pool, out / "filter-alone.jsonl", max(1, args.generation_batch_size // args.filter_programs),
                         " (Coder alone)", sample)
    kept, always, never, constant = classify_alone([p.id for p in pool], rows)
    chosen = kept[: args.train_problems]
    summary = {"filter_by": "alone", "pool": len(pool), "kept": len(kept), "always_solved": always,
               "never_solved": never, "other_constant": constant, "kept_share": len(kept) / len(pool),
               "trained_on": chosen}
    (out / "filter-summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    log(f"filter (Coder alone): kept {len(kept)} of {len(pool)} ({100 * len(kept) / len(pool):.0f} %; {always} of them "
        f"always solved alone); dropped {never} where no program passed a test")
    if not chosen:
        raise SystemExit("the filter kept no training problem: raise --train-pool or --filter-programs")
    return chosen


def classify_alone(ids: list[str], rows: dict[str, dict[str, Any]]) -> tuple[list[str], int, int, int]:
    """``--filter-by alone``: kept ids (one of the Coder's programs passes a test: a plan can matter), the
    number of those it always solves (kept), the number dropped (no test passed, or nothing measured) and 0."""
    kept, always, never = [], 0, 0
    for tid in ids:
        rates = [r for r in rows[tid]["pass_rates"] if r is not None]
        if rates and max(rates) > 0.0:
            kept.append(tid)
            always += min(rates) == 1.0
        else:
            never += 1
    return kept, always, never, 0


def classify(ids: list[str], rows: dict[str, dict[str, Any]]) -> tuple[list[str], int, int, int]:
    """Kept ids (the base pair's pass rates differ: GRPO gets a signal), and the counts of the dropped:
    always solved, never solved (or every program failed on our side), another constant pass rate."""
    kept, always, never, constant = [], 0, 0, 0
    for tid in ids:
        rates = [r for r in rows[tid]["pass_rates"] if r is not None]
        if rates and max(rates) > min(rates):
            kept.append(tid)
        elif rates and min(rates) == 1.0:
            always += 1
        elif not rates or max(rates) == 0.0:
            never += 1
        else:
            constant += 1
    return kept, always, never, constant


# ------------------------------------------------------------------------------------------------ stages
def _common(args: argparse.Namespace, heldout: list[Any], train_ids: list[str]) -> list[str]:
    ids = "[" + ", ".join(train_ids) + "]"
    heldout_ids = "[" + ", ".join(p.id for p in heldout) + "]"
    overrides = [
        "benchmark=mbpp", "split=train", f"problem_ids={ids}",
        "validation_split=validation+test", f"validation_ids={heldout_ids}", f"validation_limit={len(heldout)}",
        f"num_generations={args.num_generations}", f"per_device_train_batch_size={args.num_generations}",
        # one problem's group per forward/backward, --problems-per-step of them per optimizer step: 16 rows of
        # ~700 tokens in one backward (stage 2's prompt + plan + program) held 24 GB and was OOM-killed
        f"gradient_accumulation_steps={args.problems_per_step}",
        "coder_samples=2", f"learning_rate={args.learning_rate:.4e}", f"beta={args.beta:.4e}",  # YAML floats need a dot
        "temperature=1.0", "coder_temperature=1.0", "use_lora=true", "lora_r=16", "lora_alpha=32", "bf16=true",
        "save_steps=1", "grpo.save_total_limit=2", "grpo.gradient_checkpointing=false", "sandbox_workers=2",
        "report_to=[tensorboard]", "log_completions=false", f"seed={args.seed}",
        f"generation_batch_size={args.generation_batch_size}", f"rewards.format_penalty={args.format_penalty:.4e}",
    ]
    if args.num_iterations != 1:
        if args.num_iterations < 1:
            raise SystemExit(f"--num-iterations must be >= 1, got {args.num_iterations}")
        overrides.append(f"grpo.num_iterations={args.num_iterations}")
    if args.data_path:
        overrides.append(f"data_path={args.data_path}")
    return overrides


START_KEYS = ("validation_split", "validation_ids", "planner_model", "coder_model", "max_completion_length",
              "partner_max_tokens", "seed", "data_path", "coder_samples")


def seed_start_validation(source: Path, stage_dir: Path, config: Any) -> None:
    """``--start-validation``: copy the step-0 validation row of ``source``'s stage 1 into ``stage_dir`` (the
    trainer then neither measures step 0 again nor the frozen Coder alone), after checking that everything
    that decides that row is the same. A stage directory that has rows already is left alone."""
    import yaml

    target = stage_dir / "round1" / "planner" / "validation.jsonl"
    if target.is_file():
        return
    if not (source / "stage1" / "config.yaml").is_file():
        raise SystemExit(f"--start-validation {source}: no stage1/config.yaml there (a run directory of this "
                         "script whose stage 1 started is expected); leave the option out to measure step 0")
    theirs = yaml.safe_load((source / "stage1" / "config.yaml").read_text(encoding="utf-8"))
    ours = yaml.safe_load(yaml.safe_dump(config.to_dict(), sort_keys=False))  # the same types as theirs
    differ = [k for k in START_KEYS if theirs.get(k) != ours.get(k)]
    if differ:
        raise SystemExit(f"--start-validation {source}: its stage 1 differs in {differ}; its step-0 row does not apply")
    rows = [r for r in _read_rows(source / "stage1" / "round1" / "planner" / "validation.jsonl") if r.get("step") == 0]
    if not rows:
        raise SystemExit(f"--start-validation {source}: no step-0 validation row")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({**rows[0], "copied_from": str(source)}) + "\n", encoding="utf-8")
    log(f"stage 1: step-0 validation copied from {source} (CG {rows[0].get('cg_points')})")


def run_stage1(args: argparse.Namespace, out: Path, heldout: list[Any], train_ids: list[str]) -> Path:
    from corecode.training import load_config, run_training

    overrides = _common(args, heldout, train_ids) + [
        "stage=planner", f"output_dir={out / 'stage1'}", f"planner_model=builtin:{BUILTIN}",
        f"coder_model=builtin:{BUILTIN}",  # the frozen Coder in-process, batched (faster than llama.cpp here)
        f"max_steps={args.stage1_steps}",
        f"eval_steps={max(1, args.stage1_steps // 2) if args.stage1_eval_steps is None else args.stage1_eval_steps}",
        f"max_completion_length={args.plan_tokens}", f"partner_max_tokens={args.code_tokens}",
    ]
    log(f"stage 1: {len(train_ids)} training problems, {args.stage1_steps} steps, {len(heldout)} held-out problems")
    config = load_config(None, overrides)
    if args.start_validation:
        seed_start_validation(Path(args.start_validation), out / "stage1", config)
    return Path(run_training(config)["planner"])


def stage2_overrides(args: argparse.Namespace, out: Path, heldout: list[Any], train_ids: list[str],
                     planner: Path) -> list[str]:
    if args.stage2_eval_steps < 0:
        raise SystemExit(f"--stage2-eval-steps must be >= 0, got {args.stage2_eval_steps}")
    return _common(args, heldout, train_ids) + [
        "stage=coder", f"output_dir={out / 'stage2'}", f"planner_model={planner}", f"coder_model=builtin:{BUILTIN}",
        f"max_steps={args.stage2_steps}", f"eval_steps={args.stage2_eval_steps}",  # 0: the start and the end only
        f"max_completion_length={args.code_tokens}", f"plan_max_tokens={args.plan_tokens}",
    ]


def run_stage2(args: argparse.Namespace, out: Path, heldout: list[Any], train_ids: list[str], planner: Path) -> Path:
    from corecode.training import load_config, run_training

    overrides = stage2_overrides(args, out, heldout, train_ids, planner)
    log(f"stage 2: the Coder on the trained Planner's plans, {args.stage2_steps} steps")
    return Path(run_training(load_config(None, overrides))["coder"])


# ------------------------------------------------------------------------------------------------ report
def _ci(v: dict[str, Any], key: str, points: bool = False) -> str:
    """A pass@1 fraction (in percent) or CG (``points``) with its interval from the validation row."""
    if key not in v:
        return "-"
    value, ci = (v[key], v.get("cg_ci")) if points else (100 * v[key], v.get(f"{key}_ci"))
    if points:
        return f"{value:+.1f}" + ("" if ci is None else f" [{ci[0]:+.1f}, {ci[1]:+.1f}]")
    return f"{value:.1f}" + ("" if ci is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]")


def _change(v: dict[str, Any], key: str) -> str:
    change = (v.get("vs_start") or {}).get(key)
    if not change:
        return "-"
    return f"{change['diff']:+.1f} [{change['ci'][0]:+.1f}, {change['ci'][1]:+.1f}], {change['up']} up / {change['down']} down"


def _diagnosis(stage_dir: Path) -> dict[str, Any]:
    rows = [m for m in _read_rows(stage_dir / "metrics.jsonl") if "reward" in m]
    if not rows:
        return {}
    window = max(1, min(5, len(rows) // 2))

    def mean(key: str, part: list[dict[str, Any]]) -> float | None:
        values = [m[key] for m in part if isinstance(m.get(key), (int, float))]
        return statistics.fmean(values) if values else None

    out: dict[str, Any] = {"steps": len(rows)}
    for key in ("reward", "reward_std", "frac_reward_zero_std", "kl", "completions/mean_length",
                "completions/clipped_ratio", "plan_format_ok"):  # clipped: the share cut at the token cap
        first, last = mean(key, rows[:window]), mean(key, rows[-window:])
        if first is not None:
            out[key] = (first, last)
    return out


def _problem_passes(stage_dir: Path) -> dict[str, list[tuple[int, float, float]]]:
    """Per training problem, one (step, mean plan reward, mean pass rate of the Coder's programs) per step it
    was trained at, in step order, from executions-rank0.jsonl (rows: one plan each)."""
    by: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in _read_rows(stage_dir / "executions-rank0.jsonl"):
        if isinstance(row.get("reward"), (int, float)) and "problem_id" in row:
            by.setdefault((row["problem_id"], int(row.get("step", 0))), []).append(row)
    out: dict[str, list[tuple[int, float, float]]] = {}
    for (pid, step), rows in sorted(by.items(), key=lambda item: item[0][1]):
        # stage 1: a plan's row holds the Coder's programs ("outcomes"); stage 2: a program's row, its own "outcome"
        rates = [o["pass_rate"] for r in rows for o in r.get("outcomes") or [r.get("outcome") or {}]
                 if isinstance(o.get("pass_rate"), (int, float))]
        out.setdefault(pid, []).append((step, statistics.fmean(r["reward"] for r in rows),
                                        statistics.fmean(rates) if rates else 0.0))
    return out


def _training_problem_lines(stage_dir: Path, reward_name: str = "plan reward") -> list[str]:
    """Held-out evidence from the training problems themselves: a problem's reward at the first step that
    trains on it is measured before any update on it, so the first-sight rewards of the first half of the
    steps against those of the second half say whether the Planner got better on problems new to it
    (unpaired: different problems); problems trained on twice add the paired first-vs-second pass."""
    from corecode.metrics import paired_bootstrap, unpaired_bootstrap

    passes = _problem_passes(stage_dir)
    if not passes:
        return []
    steps = sorted({step for seen in passes.values() for step, _, _ in seen})
    middle = steps[0] + (steps[-1] - steps[0] + 1) / 2
    early = {pid: seen[0] for pid, seen in passes.items() if seen[0][0] < middle}
    late = {pid: seen[0] for pid, seen in passes.items() if seen[0][0] >= middle}
    lines = []
    if early and late:
        parts = []
        for name, index in ((reward_name, 1), ("Coder pass rate with the plans", 2)):
            d = unpaired_bootstrap({p: v[index] for p, v in early.items()}, {p: v[index] for p, v in late.items()})
            a = statistics.fmean(v[index] for v in early.values())
            parts.append(f"{name} {a:.3f} -> {a + d.estimate:.3f}, {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}]")
        lines.append(f"Training problems at first sight (each one's reward at the first step that trains on it, "
                     f"before any update on it), steps < {middle:g} ({len(early)} problems) vs later ({len(late)}; "
                     f"95 % unpaired interval): " + "; ".join(parts) + ".")
    twice = {pid: seen for pid, seen in passes.items() if len(seen) >= 2}
    if twice:
        d = paired_bootstrap({p: s[0][1] for p, s in twice.items()}, {p: s[1][1] for p, s in twice.items()})
        lines.append(f"Problems trained on twice ({d.n}): {reward_name} first vs second pass {d.estimate:+.3f} "
                     f"[{d.low:+.3f}, {d.high:+.3f}], {d.b_better} up / {d.a_better} down.")
    return lines + [""] if lines else []


def write_report(args: argparse.Namespace, out: Path) -> str:
    s1 = _read_rows(out / "stage1" / "round1" / "planner" / "validation.jsonl")
    s2 = _read_rows(out / "stage2" / "round1" / "coder" / "validation.jsonl")
    filt = json.loads((out / "filter-summary.json").read_text()) if (out / "filter-summary.json").is_file() else {}
    lines = ["# Collaborative training of the built-in Qwen2.5-Coder-0.5B pair on MBPP", ""]
    invocations = (out / "commands.txt").read_text(encoding="utf-8").splitlines() if (out / "commands.txt").is_file() else []
    if invocations:  # every start of this run directory, restarts included (a changed schedule shows here)
        lines += ["Invocations (UTC):", ""] + [f"- `{line}`" for line in invocations] + [""]
    else:
        lines += ["Command: `python benchmarks/learning_real.py " + " ".join(sys.argv[1:]) + "`", ""]
    if filt.get("filter_by") == "alone":
        lines += [f"Training-problem filter (the base Coder alone, no plan): {filt['kept']} of {filt['pool']} pool "
                  f"problems kept ({100 * filt['kept_share']:.0f} %; {filt['always_solved']} of them always solved "
                  f"alone); dropped {filt['never_solved']} where no program passed a test; trained on "
                  f"{len(filt['trained_on'])}.", ""]
    elif filt:
        lines += [f"Training-problem filter: {filt['kept']} of {filt['pool']} pool problems kept "
                  f"({100 * filt['kept_share']:.0f} %); dropped {filt['always_solved']} always solved, "
                  f"{filt['never_solved']} never solved, {filt['other_constant']} other zero-variance; trained on "
                  f"{len(filt['trained_on'])}.", ""]
    if s1:
        lines += ["## Stage 1: the Planner trained against the frozen Coder (validation, greedy, one sample each)", "",
                  f"{s1[0]['n_problems']} held-out problems (MBPP validation + test); cells: value [95% interval over "
                  "problems; CG: paired against the Coder alone]; change: paired against step 0, problems up / down.", "",
                  "| step | Coder alone | with the Planner's plan | CG (points) | CG flips (with / alone better) "
                  "| change of CG since step 0 | plan format ok | plan chars |",
                  "|---|---|---|---|---|---|---|---|"]
        if s1[0].get("copied_from"):
            lines[-2:-2] = [f"Step 0 is the row of {s1[0]['copied_from']} (`--start-validation`: the same untrained "
                            "Planner, Coder, held-out problems, token caps and seed, checked against its config).", ""]
        for v in s1:
            flips = v.get("cg_flips", {})
            lines.append(f"| {v['step']} | {_ci(v, 'pass1_alone')} | {_ci(v, 'pass1_with')} | {_ci(v, 'cg_points', True)} "
                         f"| {flips.get('with_better', '-')} / {flips.get('alone_better', '-')} | {_change(v, 'cg')} "
                         f"| {v.get('plan_format_ok', float('nan')):.2f} | {v.get('plan_chars_mean', float('nan')):.0f} |")
        lines.append("")
    if s2:
        lines += ["## Stage 2: the Coder trained on the trained Planner's plans (same held-out problems)", "",
                  "| step | Coder with the trained plans | Coder alone | CG (points) | change of pass@1 with plans since "
                  "step 0 | change of pass@1 alone since step 0 |",
                  "|---|---|---|---|---|---|"]
        for v in s2:
            lines.append(f"| {v['step']} | {_ci(v, 'pass1_with')} | {_ci(v, 'pass1_alone')} | {_ci(v, 'cg_points', True)} "
                         f"| {_change(v, 'pass1_with')} | {_change(v, 'pass1_alone')} |")
        lines.append("")
    for name, stage_dir in (("stage 1", out / "stage1" / "round1" / "planner"), ("stage 2", out / "stage2" / "round1" / "coder")):
        diag = _diagnosis(stage_dir)
        if diag:
            parts = [f"{k} {a:.3f} -> {b:.3f}" for k, (a, b) in ((k, v) for k, v in diag.items() if k != "steps")]
            lines.append(f"Diagnosis, {name} ({diag['steps']} steps; mean over the first vs the last 5): " + "; ".join(parts))
            lines.append("")
        lines += _training_problem_lines(stage_dir, "plan reward" if name == "stage 1" else "program reward")
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    if args.report_only:
        if not out.is_dir():
            raise SystemExit(f"--report-only: no run directory {out}")
        print(write_report(args, out))
        return
    import torch

    torch.set_num_threads(args.threads or len(os.sched_getaffinity(0)))
    out.mkdir(parents=True, exist_ok=True)
    with (out / "commands.txt").open("a", encoding="utf-8") as fh:
        fh.write(time.strftime("%Y-%m-%d %H:%M ", time.gmtime()) + "python benchmarks/learning_real.py "
                 + " ".join(sys.argv[1:] if argv is None else argv) + "\n")
    started = time.time()
    pool, heldout = load_sets(args)
    train_ids = filter_problems(args, pool, out)
    planner = run_stage1(args, out, heldout, train_ids)
    log(f"stage 1 done: {planner}")
    coder = run_stage2(args, out, heldout, train_ids, planner)
    log(f"stage 2 done: {coder}")
    print(write_report(args, out))
    log(f"finished in {(time.time() - started) / 60:.1f} min (this invocation); report: {out / 'report.md'}")


if __name__ == "__main__":
    main()
