"""Compare finished runs in one table: rows are setups (pipeline + models), columns are metrics per benchmark.

Runs of the same setup on different benchmarks share a row (the paper's layout: methods x benchmarks);
two runs of the same setup on the same benchmark get separate rows, named by their directories.
Everything is read from each run's ``summary.json``; the 95 % intervals of pass@k and APR, and the paired
differences between runs, come from its per-problem counts (:mod:`corecode.evaluation.intervals`), so older
summaries get them too; CG's paired interval needs the Coder-alone run's counts and is read from the summary.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError
from corecode.evaluation.intervals import apr_interval, format_interval, paired_apr, paired_pass1, pass_at_k_interval
from corecode.evaluation.summary import format_table, load_summary

__all__ = ["Report", "build_report", "METRICS", "INTERVALS", "FORMATS"]

FORMATS = ("md", "csv", "json")


def _pass_at(k: int):
    return lambda s: s["pass_at_k"].get(str(k))


# column name -> (value from a summary, is a fraction shown in percent)
METRICS: dict[str, tuple[Any, bool]] = {
    "Pass@1": (_pass_at(1), True),
    "Pass@5": (_pass_at(5), True),
    "APR": (lambda s: s["apr"]["macro"], True),
    "CG": (lambda s: s["collaboration"]["cg_points"], False),
    "tokens/problem": (lambda s: (s.get("cost") or {}).get("tokens_per_problem"), False),
}


def _cg_interval(s: dict[str, Any]) -> tuple[float, float] | None:
    ci = s["collaboration"].get("cg_interval")
    return None if not ci else (ci["low"], ci["high"])


def _fraction_interval(interval: Any) -> tuple[float, float] | None:
    return None if interval is None else (interval.low, interval.high)


# column name -> its 95 % interval from a summary, in the column's unit (fractions, or points for CG)
INTERVALS: dict[str, Any] = {
    "Pass@1": lambda s: _fraction_interval(pass_at_k_interval(s, 1)),
    "Pass@5": lambda s: _fraction_interval(pass_at_k_interval(s, 5)),
    "APR": lambda s: _fraction_interval(apr_interval(s)),
    "CG": _cg_interval,
}


@dataclass
class Report:
    """The comparison: benchmark names, rows (label -> benchmark -> summary) and the run directories."""

    benchmarks: list[str] = field(default_factory=list)
    rows: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def metric_names(self) -> list[str]:
        """Pass@5 only when some run has n >= 5."""
        has5 = any("5" in s["pass_at_k"] for row in self.rows.values() for s in row.values())
        return [m for m in METRICS if m != "Pass@5" or has5]

    def value(self, label: str, benchmark: str, metric: str) -> float | None:
        summary = self.rows[label].get(benchmark)
        return None if summary is None else METRICS[metric][0](summary)

    def interval(self, label: str, benchmark: str, metric: str) -> tuple[float, float] | None:
        """The 95 % interval of a cell (bootstrap over problems; CG: paired, over the same problems)."""
        summary = self.rows[label].get(benchmark)
        if summary is None or metric not in INTERVALS:
            return None
        return INTERVALS[metric](summary)

    def columns(self) -> list[str]:
        return ["run"] + [f"{b} {m}" for b in self.benchmarks for m in self.metric_names()]

    def csv_columns(self) -> list[str]:
        """The columns plus ``low`` / ``high`` of each metric that has an interval."""
        out = ["run"]
        for b in self.benchmarks:
            for m in self.metric_names():
                out.append(f"{b} {m}")
                if m in INTERVALS:
                    out += [f"{b} {m} low", f"{b} {m} high"]
        return out

    def comparisons(self) -> list[dict[str, Any]]:
        """Every row against the first row on the same benchmark: Pass@1 and APR of B - A (points) with
        their paired 95 % intervals over the problems both runs scored, and the problems that flip each way."""
        out = []
        for benchmark in self.benchmarks:
            labels = [label for label, runs in self.rows.items() if benchmark in runs]
            for label in labels[1:]:
                a, b = self.rows[labels[0]][benchmark], self.rows[label][benchmark]
                p1, apr = paired_pass1(a, b), paired_apr(a, b)
                if p1 is None or apr is None:
                    continue
                out.append({"benchmark": benchmark, "a": labels[0], "b": label, "problems": p1.n,
                            "pass1": p1.to_dict(), "apr": apr.to_dict()})
        return out

    def render(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise ConfigError(f"unknown report format {fmt!r}; valid: {', '.join(FORMATS)}")
        if fmt == "json":
            return json.dumps(self._raw_rows(), indent=1) + "\n"
        if fmt == "md":
            rows = [self._text_row(label, with_intervals=True) for label in self.rows]
            text = format_table(rows, self.columns()) + "\n"
            text += "\nCells: value [95% interval, bootstrap over problems; CG: paired over the same problems].\n"
            comparisons = self.comparisons()
            if comparisons:
                text += "\n" + _comparison_table(comparisons) + "\n"
            return text
        rows = [self._csv_row(label) for label in self.rows]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=self.csv_columns(), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v == "-" else v) for k, v in row.items()} for row in rows)
        return out.getvalue()

    def _csv_row(self, label: str) -> dict[str, str]:
        row = self._text_row(label)
        for b in self.benchmarks:
            for m in self.metric_names():
                if m in INTERVALS:
                    interval = self.interval(label, b, m)
                    scale = 100.0 if METRICS[m][1] else 1.0
                    row[f"{b} {m} low"] = "-" if interval is None else f"{scale * interval[0]:.1f}"
                    row[f"{b} {m} high"] = "-" if interval is None else f"{scale * interval[1]:.1f}"
        return row

    def _text_row(self, label: str, with_intervals: bool = False) -> dict[str, str]:
        row = {"run": label}
        for b in self.benchmarks:
            for m in self.metric_names():
                value = self.value(label, b, m)
                percent = METRICS[m][1]
                if value is None:
                    row[f"{b} {m}"] = "-"
                    continue
                if m == "CG":
                    row[f"{b} {m}"] = f"{value:+.1f}"
                else:
                    row[f"{b} {m}"] = f"{100 * value:.1f}" if percent else f"{value:.0f}"
                interval = self.interval(label, b, m) if with_intervals else None
                if interval is not None:
                    scale = 100.0 if percent else 1.0
                    row[f"{b} {m}"] += " " + format_interval(scale * interval[0], scale * interval[1], signed=m == "CG")
        return row

    def _raw_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "run": label,
                "benchmarks": {
                    b: {"run_dir": s["run"]["run_dir"], "n_problems": s["n_problems"], "n": s["run"]["n"],
                        **{m: self.value(label, b, m) for m in self.metric_names()},
                        **{f"{m} 95% CI": self.interval(label, b, m) for m in self.metric_names() if m in INTERVALS}}
                    for b, s in runs.items()
                },
            }
            for label, runs in self.rows.items()
        ] + [{"comparison": c} for c in self.comparisons()]


def _comparison_table(comparisons: list[dict[str, Any]]) -> str:
    """Paired differences B - A in points, with 95 % intervals and the problems each run wins."""
    rows = []
    for c in comparisons:
        p1, apr = c["pass1"], c["apr"]
        rows.append({
            "benchmark": c["benchmark"], "A": c["a"], "B": c["b"], "problems": str(c["problems"]),
            "Pass@1 B-A [95% CI]": f"{p1['estimate']:+.1f} {format_interval(p1['low'], p1['high'], signed=True)}",
            "B better / A better": f"{p1['b_better']} / {p1['a_better']}",
            "APR B-A [95% CI]": f"{apr['estimate']:+.1f} {format_interval(apr['low'], apr['high'], signed=True)}",
        })
    columns = ["benchmark", "A", "B", "problems", "Pass@1 B-A [95% CI]", "B better / A better", "APR B-A [95% CI]"]
    return ("Paired differences against the first run on each benchmark (points; 95% paired bootstrap over the "
            "problems both runs scored):\n\n" + format_table(rows, columns))


def build_report(run_dirs: Sequence[str | Path]) -> Report:
    """Read every run's summary.json into one :class:`Report`."""
    if not run_dirs:
        raise ConfigError("give at least one run directory")
    report = Report()
    for run_dir in run_dirs:
        summary = load_summary(run_dir)
        summary["run"]["run_dir"] = str(run_dir)
        benchmark = summary["run"]["benchmark"]
        if benchmark not in report.benchmarks:
            report.benchmarks.append(benchmark)
        label = summary["label"]
        if benchmark in report.rows.get(label, {}):
            label = f"{label} [{Path(run_dir).name}]"
        report.rows.setdefault(label, {})[benchmark] = summary
    return report
