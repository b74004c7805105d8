"""`corecode eval`: generate, score and summarize one benchmark run (resumable).

With no arguments it runs the quick main job: the planner_coder pipeline with the built-in 0.5B model on
the first QUICK_LIMIT HumanEval problems, QUICK_N samples each, plus the Coder alone for Collaboration Gain.
Every agent call may write at most QUICK_MAX_TOKENS tokens: the 0.5B Planner's plans ran from 191 to 836
tokens on HumanEval/0-1 and most of the job's time went to them; the Coder's answers there took 164-384
(its code comes first; what the cap cuts is the explanation after it).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run", "QUICK_LIMIT", "QUICK_N", "QUICK_MAX_TOKENS"]

# the no-argument main job: sized to finish in under 5 minutes on 2 CPU cores at 13-22 tok/s: about 3,200
# generated tokens (2 problems x 2 samples x (plan ~290 + program ~230), then the Coder alone ~260 each);
# with 3 samples it was ~4,800 tokens, over 6 minutes at 13 tok/s (see README)
QUICK_LIMIT = 2
QUICK_N = 2
QUICK_TEMPERATURE = 0.8
QUICK_MAX_TOKENS = 384


def _help(name: str) -> str:
    """The option's help text, from the EvalConfig field it fills (one place for both)."""
    import dataclasses

    from corecode.evaluation.config import EvalConfig

    field = next(f for f in dataclasses.fields(EvalConfig) if f.name == name)
    default = field.default if field.default is not dataclasses.MISSING else None
    return f"{field.metadata['help']} (default: {default})"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="YAML", help="options from a YAML file (flags override it)")
    parser.add_argument("--benchmark", help=f"{_help('benchmark')}; without it and --config, the quick main "
                        f"job: --limit {QUICK_LIMIT} --n {QUICK_N} --temperature {QUICK_TEMPERATURE} "
                        f"--max-tokens {QUICK_MAX_TOKENS}")
    parser.add_argument("--split", help=_help("split"))
    parser.add_argument("--limit", type=int, help=_help("limit"))
    parser.add_argument("--data-path", dest="data_path", metavar="FILE", help=_help("data_path"))
    parser.add_argument("--pipeline", help=_help("pipeline") + "; direct, cot, scot, self_planning, "
                        "planner_coder, reflexion, mapcoder")
    parser.add_argument(
        "--model", action="append", default=[], metavar="SPEC",
        help=f"{_help('model')}; repeat as ROLE=SPEC for one role, "
        "e.g. --model planner=openai:NAME@http://localhost:8000/v1",
    )
    for name, kind in (("n", int), ("temperature", float), ("top_p", float), ("max_tokens", int), ("seed", int),
                       ("workers", int), ("concurrency", int)):
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, help=_help(name))
    parser.add_argument("--out", metavar="DIR", help=_help("out") + "; a killed run resumes from it")
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--baseline-run", dest="baseline", metavar="DIR",
                      help="use this finished run as the Coder alone for Collaboration Gain")
    base.add_argument("--no-baseline", dest="baseline", action="store_const", const="off",
                      help="do not compute Collaboration Gain")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def config_from_args(args: argparse.Namespace):  # -> EvalConfig
    from corecode.evaluation.config import EvalConfig, parse_model_flags

    flags = {
        name: getattr(args, name)
        for name in ("benchmark", "split", "limit", "data_path", "pipeline", "n", "temperature", "top_p",
                     "max_tokens", "seed", "out", "workers", "concurrency", "baseline")
        if getattr(args, name) is not None
    }
    model, role_models = parse_model_flags(args.model)
    if model:
        flags["model"] = model
    if role_models:
        flags["role_models"] = role_models
    if args.config:
        return EvalConfig.from_yaml(args.config, **flags)
    if "benchmark" not in flags:  # the quick main job; explicit flags still win
        flags = {"limit": QUICK_LIMIT, "n": QUICK_N, "temperature": QUICK_TEMPERATURE,
                 "max_tokens": QUICK_MAX_TOKENS, **flags}
    return EvalConfig.from_mapping(flags, source="command line")


def run(args: argparse.Namespace) -> int:
    from corecode.evaluation import run_eval
    from corecode.evaluation.summary import HEADLINE_COLUMNS, format_table, headline_row

    config = config_from_args(args)
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731 - keeps stdout for the table
    log(f"corecode eval: {config.pipeline} on {config.benchmark} "
        f"({'all' if config.limit is None else config.limit} problems, n={config.n}) -> {config.run_dir}")
    summary = run_eval(config, progress=not args.no_progress, log=log)
    columns = [c for c in HEADLINE_COLUMNS if c != "Pass@5" or "5" in summary["pass_at_k"]]
    print(format_table([headline_row(summary)], columns))
    print("pass@k: " + ", ".join(f"k={k} {100 * v:.1f}" for k, v in summary["pass_at_k"].items()))
    cg = summary["collaboration"]
    if cg["cg_points"] is not None:
        print(f"Coder alone Pass@1 {100 * cg['pass1_alone']:.1f} ({cg['baseline_run']})")
    print(f"full summary: {config.run_dir / 'summary.md'}")
    return 0
