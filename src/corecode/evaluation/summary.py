"""Every metric of one run, from its samples and results: ``summary.json`` and ``summary.md``.

``summary.json`` is self-contained: with the per-problem (n, correct, pass rate) counts in it, reports,
plots and Collaboration Gain baselines never need to reread the big JSONL files.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from corecode.evaluation.config import EvalConfig
from corecode.evaluation.intervals import cg_interval, format_interval, summary_intervals
from corecode.metrics import (
    apr_macro,
    apr_micro,
    cyclomatic_complexity,
    efficiency,
    failure_rates,
    inference_cost,
    is_empty_program,
    pass_at_k,
    runtime_error_rates,
)
from corecode.metrics.efficiency import format_bytes, format_seconds
from corecode.types import Problem


def _efficiency(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Runtime and memory of passing samples from the sandbox's whole-program measurement (``measurement``
    in each result); results scored before that existed (no ``measurement`` key) fall back to per-test sums."""
    measured = [r for r in results if r.get("measurement")]
    rows = measured if measured else results
    out = efficiency((r["passed"], r["cpu_time_s"], r["peak_memory_bytes"]) for r in rows).to_dict()
    out["measured"] = bool(measured)
    return out

__all__ = [
    "summarize", "write_summary", "load_summary", "summary_markdown", "headline_row", "format_table", "run_label",
    "HEADLINE_COLUMNS", "SUMMARY_VERSION",
]

SUMMARY_VERSION = 1
CODER_ROLE = "coder"


def run_label(run: dict[str, Any]) -> str:
    """A short row name for a run: pipeline and models."""
    models = run.get("role_models") or {}
    label = f"{run['pipeline']} / {run['model']}"
    if models:
        label += " (" + ", ".join(f"{r}={m}" for r, m in sorted(models.items())) + ")"
    return label


def summarize(
    config: EvalConfig,
    problems: Sequence[Problem],
    samples: Iterable[dict[str, Any]],
    results: Iterable[dict[str, Any]],
    auxiliary: Sequence[str] = (),
    baseline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """All metrics of a run. ``auxiliary``: the pipeline's roles besides the Coder; ``baseline``: the
    Coder-alone run's per-problem (n, correct) for Collaboration Gain, or None."""
    ids = [p.id for p in problems]
    wanted = set(ids)
    results = [r for r in results if r["task_id"] in wanted]
    samples = [s for s in samples if s["task_id"] in wanted]
    by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_problem[r["task_id"]].append(r)
    scored = [tid for tid in ids if by_problem[tid]]
    if not scored:
        raise ValueError("no scored samples to summarize")
    counts = {tid: (len(by_problem[tid]), sum(r["passed"] for r in by_problem[tid])) for tid in scored}
    test_counts = {tid: [(r["n_passed"], r["n_tests"]) for r in by_problem[tid]] for tid in scored}
    max_k = min(n for n, _ in counts.values())
    rates = _per_problem_rates(test_counts)
    summary: dict[str, Any] = {
        "version": SUMMARY_VERSION,
        "run": {**config.to_dict(), "run_dir": str(config.run_dir)},
        "label": run_label(config.to_dict()),
        "n_problems": len(scored),
        "n_samples": len(results),
        "pass_at_k": {
            str(k): statistics.fmean(pass_at_k(n, c, k) for n, c in counts.values()) for k in range(1, max_k + 1)
        },
        "apr": {"macro": apr_macro(test_counts), "micro": apr_micro(test_counts)},
        "collaboration": _collaboration(list(auxiliary), counts, baseline),
        "failures": failure_rates(r["status"] for r in results),
        "runtime_errors": runtime_error_rates((r["status"], r.get("exception")) for r in results),
        "efficiency": _efficiency(results),
        "intervals": summary_intervals(counts, rates),
        "complexity": _complexity(samples, results, problems),
        "cost": _cost(samples),
        "per_problem": {
            tid: {"n": n, "correct": c, "pass_rate": rates[tid]} for tid, (n, c) in counts.items()
        },
    }
    return summary


def _per_problem_rates(test_counts: dict[str, list[tuple[int, int]]]) -> dict[str, float]:
    return {tid: statistics.fmean(p / t if t else 0.0 for p, t in tc) for tid, tc in test_counts.items()}


def _collaboration(
    aux: list[str], counts: dict[str, tuple[int, int]], baseline: dict[str, Any] | None
) -> dict[str, Any]:
    from corecode.metrics import collaboration_gain_from_counts

    out: dict[str, Any] = {"auxiliary_roles": aux, "baseline_run": None, "cg_points": None, "cg_relative": None}
    if not aux:
        out["note"] = "no auxiliary agents in this pipeline: Collaboration Gain is not defined"
        return out
    if baseline is None:
        out["note"] = "no Coder-alone baseline (baseline: off)"
        return out
    alone = {tid: tuple(baseline["per_problem"][tid]) for tid in counts}
    cg = collaboration_gain_from_counts(counts, alone)  # type: ignore[arg-type]
    out.update(cg.to_dict())
    out["cg_interval"] = cg_interval(counts, alone)  # type: ignore[arg-type]
    out["baseline_run"] = baseline["run_dir"]
    out["baseline_reused"] = baseline["reused"]
    return out


def _complexity(
    samples: list[dict[str, Any]], results: list[dict[str, Any]], problems: Sequence[Problem]
) -> dict[str, Any]:
    """Cyclomatic complexity of what the model wrote: the starter code's own statements left out, empty
    programs (no code found) counted apart instead of as complexity 1."""
    passed = {(r["task_id"], r["sample_index"]) for r in results if r["passed"]}
    starters = {p.id: (p.starter_code, p.entry_point) for p in problems}
    values, passing_values, unparsable, empty = [], [], 0, 0
    for s in samples:
        program = s["program"] or ""
        cc = cyclomatic_complexity(program, *starters.get(s["task_id"], (None, None)))
        if cc is None:
            if is_empty_program(program):
                empty += 1
            else:
                unparsable += 1
            continue
        values.append(cc)
        if (s["task_id"], s["sample_index"]) in passed:
            passing_values.append(cc)
    return {
        "mean": statistics.fmean(values) if values else None,
        "mean_passing": statistics.fmean(passing_values) if passing_values else None,
        "n_unparsable": unparsable,
        "n_empty": empty,
    }


def _cost(samples: list[dict[str, Any]]) -> dict[str, Any]:
    traces: dict[str, list[list[tuple[str, int, int]]]] = defaultdict(list)
    for s in samples:
        traces[s["task_id"]].append(
            [(c["role"], c["prompt_tokens"], c["completion_tokens"]) for c in s.get("trace", ())]
        )
    return inference_cost(traces).to_dict() if traces else {}


# ---------------------------------------------------------------------------------------------- output
def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _pct_interval(interval: dict[str, float] | None) -> str:
    return "-" if not interval else format_interval(100 * interval["low"], 100 * interval["high"])


def _cg_interval_cell(ci: dict[str, Any] | None) -> str:
    """``[-22.0, +2.0] 3/8``: the paired interval, problems better with the agents / better alone."""
    if not ci:
        return "-"
    return f"{format_interval(ci['low'], ci['high'], signed=True)} {ci['pipeline_better']}/{ci['alone_better']}"


def format_table(rows: list[dict[str, str]], columns: list[str]) -> str:
    """A Markdown table (the column names double as the header)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(row.get(c, "-") for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def headline_row(summary: dict[str, Any]) -> dict[str, str]:
    """The numbers `corecode eval` prints: Pass@1, Pass@5 (n >= 5), APR, CG, tokens per problem."""
    cg = summary["collaboration"]
    row = {
        "benchmark": summary["run"]["benchmark"],
        "pipeline": summary["run"]["pipeline"],
        "problems": str(summary["n_problems"]),
        "n": str(summary["run"]["n"]),
        "Pass@1": _pct(summary["pass_at_k"].get("1")),
        "Pass@1 95% CI": _pct_interval((summary.get("intervals") or {}).get("pass_at_k", {}).get("1")),
        "Pass@5": _pct(summary["pass_at_k"].get("5")),
        "APR": _pct(summary["apr"]["macro"]),
        "CG (points)": "-" if cg["cg_points"] is None else f"{cg['cg_points']:+.1f}",
        "CG 95% CI (up/down)": _cg_interval_cell(cg.get("cg_interval")),
        "tokens/problem": f"{summary['cost'].get('tokens_per_problem', 0):.0f}",
    }
    return row


# Pass@5 is dropped from printed tables when n < 5
HEADLINE_COLUMNS = [
    "benchmark", "pipeline", "problems", "n", "Pass@1", "Pass@1 95% CI", "Pass@5", "APR", "CG (points)",
    "CG 95% CI (up/down)", "tokens/problem",
]


def summary_markdown(summary: dict[str, Any]) -> str:
    cols = [c for c in HEADLINE_COLUMNS if c != "Pass@5" or "5" in summary["pass_at_k"]]
    parts = [f"# {summary['label']}", "", format_table([headline_row(summary)], cols), ""]
    intervals = summary.get("intervals") or {}
    parts.append("pass@k (95% interval over problems): " + ", ".join(
        f"k={k}: {_pct(v)} {_pct_interval(intervals.get('pass_at_k', {}).get(k))}" for k, v in summary["pass_at_k"].items()))
    parts.append(f"APR macro {_pct(summary['apr']['macro'])} {_pct_interval(intervals.get('apr_macro'))}, "
                 f"micro {_pct(summary['apr']['micro'])}")
    cg = summary["collaboration"]
    if cg["cg_points"] is not None:
        rel = "-" if cg["cg_relative"] is None else f"{100 * cg['cg_relative']:+.1f} %"
        parts.append(
            f"Collaboration Gain {cg['cg_points']:+.1f} points (relative {rel}); Coder alone "
            f"{_pct(cg['pass1_alone'])} vs with {', '.join(cg['auxiliary_roles'])} {_pct(cg['pass1_with'])} "
            f"(baseline run {cg['baseline_run']})"
        )
        if cg.get("cg_interval"):
            ci = cg["cg_interval"]
            parts.append(
                f"CG 95% paired interval over {ci['n']} problems: {format_interval(ci['low'], ci['high'], signed=True)} "
                f"points; {ci['pipeline_better']} problem(s) better with the agents, {ci['alone_better']} better alone"
            )
    else:
        parts.append(f"Collaboration Gain: {cg.get('note', '-')}")
    failures = {k: v for k, v in summary["failures"].items() if v and k != "passed"}
    parts.append("failures: " + (", ".join(f"{k} {_pct(v)}" for k, v in failures.items()) or "none"))
    if summary["runtime_errors"]:
        parts.append("runtime errors: " + ", ".join(f"{k} {_pct(v)}" for k, v in summary["runtime_errors"].items()))
    eff = summary["efficiency"]
    if eff["n_passing"]:
        how = "whole program, measured" if eff.get("measured", True) else "per-test sums, not measured"
        parts.append(
            f"passing programs ({eff['n_passing']}, {how}): CPU time median {format_seconds(eff['cpu_time_s_median'])}, "
            f"peak memory median {format_bytes(eff['peak_memory_mb_median'] * 1e6)}"
        )
    cx = summary["complexity"]
    if cx["mean"] is not None:
        parts.append(f"cyclomatic complexity: mean {cx['mean']:.2f} ({cx['n_unparsable']} programs do not parse, "
                     f"{cx.get('n_empty', 0)} are empty)")
    cost = summary["cost"]
    if cost:
        parts.append(
            f"cost per problem: {cost['calls_per_problem']:.1f} calls, {cost['prompt_tokens_per_problem']:.0f} "
            f"prompt + {cost['completion_tokens_per_problem']:.0f} completion tokens"
        )
    return "\n".join(parts) + "\n"


def write_summary(files: Any, summary: dict[str, Any]) -> None:
    _atomic_write(files.summary_json, json.dumps(summary, indent=1, sort_keys=False) + "\n")
    _atomic_write(files.summary_md, summary_markdown(summary))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """Read a run's summary.json (ConfigError naming the directory when it is not a finished run)."""
    from corecode.errors import ConfigError

    path = Path(run_dir) / "summary.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{run_dir} is not a finished evaluation run (no summary.json)") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != SUMMARY_VERSION:
        raise ConfigError(f"{path} is not a corecode summary (version {SUMMARY_VERSION})")
    return data
