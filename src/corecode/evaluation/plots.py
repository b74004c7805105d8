"""Plots of a report: pass@k bars per pipeline, and a per-problem scatter between two runs.

matplotlib is imported inside the functions (it is the ``plot`` extra), with the file-only Agg backend.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError, MissingDependencyError
from corecode.evaluation.intervals import format_interval, paired_pass1, pass_at_k_interval
from corecode.evaluation.report import Report

__all__ = ["plot_pass_at_k", "plot_per_problem_scatter", "scatter_pairs"]


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "plot", "corecode report --plot") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_pass_at_k(report: Report, path: str | Path) -> Path:
    """One panel per benchmark: for each row (pipeline), a bar per k (in percent), with its 95 % interval."""
    plt = _pyplot()
    benchmarks = report.benchmarks
    fig, axes = plt.subplots(1, len(benchmarks), figsize=(max(6, 1.6 * len(report.rows)) * len(benchmarks), 4.5),
                             squeeze=False)
    for ax, benchmark in zip(axes[0], benchmarks):
        labels = [label for label, runs in report.rows.items() if benchmark in runs]
        ks = sorted({int(k) for label in labels for k in report.rows[label][benchmark]["pass_at_k"]})
        width = 0.8 / max(1, len(ks))
        for j, k in enumerate(ks):
            values = [100 * report.rows[label][benchmark]["pass_at_k"].get(str(k), 0.0) for label in labels]
            positions = [i + (j - (len(ks) - 1) / 2) * width for i in range(len(labels))]
            errors: list[list[float]] = [[], []]
            for label, value in zip(labels, values):
                interval = pass_at_k_interval(report.rows[label][benchmark], k)
                errors[0].append(0.0 if interval is None else max(0.0, value - 100 * interval.low))
                errors[1].append(0.0 if interval is None else max(0.0, 100 * interval.high - value))
            ax.bar(positions, values, width, label=f"pass@{k}", yerr=errors, capsize=3, error_kw={"linewidth": 0.8})
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([label.split(" / ")[0] for label in labels], rotation=30, ha="right")
        ax.set_ylabel("% (error bars: 95% bootstrap interval over problems)", fontsize="small")
        ax.set_ylim(0, 105)  # room for the top caps of error bars that reach 100
        ax.set_title(benchmark)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return _save(fig, plt, path)


def scatter_pairs(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(task_id, pass rate in run a, pass rate in run b) for the problems both runs scored."""
    pa, pb = a["per_problem"], b["per_problem"]
    return [(tid, pa[tid]["pass_rate"], pb[tid]["pass_rate"]) for tid in pa if tid in pb]


def plot_per_problem_scatter(a: dict[str, Any], b: dict[str, Any], path: str | Path) -> Path:
    """Each point a problem: its mean test pass rate in run a (x) and run b (y); above the diagonal, b wins."""
    pairs = scatter_pairs(a, b)
    if not pairs:
        raise ConfigError(f"runs {a['run']['run_dir']} and {b['run']['run_dir']} share no problems to compare")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    xs, ys = [100 * x for _, x, _ in pairs], [100 * y for _, _, y in pairs]
    # many problems land on the same point (0/0, 100/100): the marker area and a label give the count
    points = Counter(zip(xs, ys))
    ax.plot([0, 100], [0, 100], color="grey", linewidth=1, linestyle="--")
    ax.scatter([p[0] for p in points], [p[1] for p in points], s=[30 * c for c in points.values()], alpha=0.5)
    for (x, y), count in points.items():
        if count > 1:
            ax.annotate(str(count), (x, y), ha="center", va="center", fontsize="x-small")
    better = sum(y > x for x, y in zip(xs, ys))
    worse = sum(y < x for x, y in zip(xs, ys))
    ax.set_xlabel(f"{a['label']} (per-problem pass rate, %)", fontsize="small")
    ax.set_ylabel(f"{b['label']} (per-problem pass rate, %)", fontsize="small")
    title = f"{a['run']['benchmark']}: {len(pairs)} problems, {better} better, {worse} worse"
    diff = paired_pass1(a, b)
    if diff is not None:
        title += (f"\nPass@1 B-A {diff.estimate:+.1f} points, 95% paired interval "
                  f"{format_interval(diff.low, diff.high, signed=True)}")
    ax.set_title(title, fontsize="small")
    ax.set_xlim(-3, 103)
    ax.set_ylim(-3, 103)
    fig.tight_layout()
    return _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
