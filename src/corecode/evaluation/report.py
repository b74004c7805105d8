"""Compare finished runs in one table: rows are setups (pipeline + models), columns are metrics per benchmark.

Runs of the same setup on different benchmarks share a row (the paper's layout: methods x benchmarks);
two runs of the same setup on the same benchmark get separate rows, named by their directories.
Everything is read from each run's ``summary.json``.
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
from corecode.evaluation.summary import format_table, load_summary

__all__ = ["Report", "build_report", "METRICS", "FORMATS"]

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

    def columns(self) -> list[str]:
        return ["run"] + [f"{b} {m}" for b in self.benchmarks for m in self.metric_names()]

    def render(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise ConfigError(f"unknown report format {fmt!r}; valid: {', '.join(FORMATS)}")
        if fmt == "json":
            return json.dumps(self._raw_rows(), indent=1) + "\n"
        rows = [self._text_row(label) for label in self.rows]
        if fmt == "md":
            return format_table(rows, self.columns()) + "\n"
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=self.columns(), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v == "-" else v) for k, v in row.items()} for row in rows)
        return out.getvalue()

    def _text_row(self, label: str) -> dict[str, str]:
        row = {"run": label}
        for b in self.benchmarks:
            for m in self.metric_names():
                value = self.value(label, b, m)
                percent = METRICS[m][1]
                if value is None:
                    row[f"{b} {m}"] = "-"
                elif m == "CG":
                    row[f"{b} {m}"] = f"{value:+.1f}"
                else:
                    row[f"{b} {m}"] = f"{100 * value:.1f}" if percent else f"{value:.0f}"
        return row

    def _raw_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "run": label,
                "benchmarks": {
                    b: {"run_dir": s["run"]["run_dir"], "n_problems": s["n_problems"], "n": s["run"]["n"],
                        **{m: self.value(label, b, m) for m in self.metric_names()}}
                    for b, s in runs.items()
                },
            }
            for label, runs in self.rows.items()
        ]


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
