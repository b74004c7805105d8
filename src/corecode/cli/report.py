"""`corecode report RUN_DIR [RUN_DIR ...]`: one comparison table across runs, and plots.

`corecode report --table paper METHOD=RUN_DIR ...`: the paper's main table (methods x benchmarks, Pass@1 with
95 % intervals; METHOD is grpo, focused_dpo, cure, coderl_plus or corecode; missing cells shown as such)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs", nargs="+", metavar="RUN_DIR",
        help="finished `corecode eval` run directories; with --table paper, METHOD=RUN_DIR (METHOD: grpo, "
        "focused_dpo, cure, coderl_plus, corecode)",
    )
    parser.add_argument(
        "--table", choices=("runs", "paper"), default="runs",
        help="runs: one row per setup, every metric per benchmark (default); paper: the paper's main table, rows "
        "GRPO, Focused-DPO, CURE, CodeRL+, CoRe-Code, columns LiveBench, MBPP, CodeContests, CodeForces (the run's "
        "benchmark picks the column), Pass@1 with its 95%% interval, 'missing' where no run was given",
    )
    parser.add_argument("--format", choices=("md", "csv", "json"), default="md", help="table format (default md)")
    parser.add_argument(
        "--plot", metavar="PNG",
        help="write pass@k bars per pipeline to PNG; with two or more runs on one benchmark, also the "
        "per-problem pass-rate scatter of the first two to PNG's name + '_scatter.png'",
    )


def run(args: argparse.Namespace) -> int:
    from corecode.evaluation.plots import plot_pass_at_k, plot_per_problem_scatter
    from corecode.evaluation.report import build_paper_table, build_report

    if getattr(args, "table", "runs") == "paper":
        if args.plot:
            from corecode.errors import ConfigError

            raise ConfigError("--plot draws the runs table; leave it out with --table paper")
        sys.stdout.write(build_paper_table(args.runs).render(args.format))
        return 0
    report = build_report(args.runs)
    sys.stdout.write(report.render(args.format))
    if args.plot:
        bars = plot_pass_at_k(report, args.plot)
        print(f"pass@k plot: {bars}", file=sys.stderr)
        pair = _first_pair(report)
        if pair is not None:
            path = Path(args.plot)
            scatter = plot_per_problem_scatter(*pair, path.with_name(path.stem + "_scatter" + path.suffix))
            print(f"per-problem scatter: {scatter}", file=sys.stderr)
    return 0


def _first_pair(report):  # -> tuple[summary, summary] | None
    """The first two runs (in the order given) on the same benchmark."""
    for benchmark in report.benchmarks:
        runs = [row[benchmark] for row in report.rows.values() if benchmark in row]
        if len(runs) >= 2:
            return runs[0], runs[1]
    return None
