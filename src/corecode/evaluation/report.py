"""Compare finished runs in one table: rows are setups (pipeline + models), columns are metrics per benchmark.

Runs of the same setup on different benchmarks share a row (the paper's layout: methods x benchmarks);
two runs of the same setup on the same benchmark get separate rows, named by their directories.
Everything is read from each run's ``summary.json``; the 95 % intervals of pass@k and APR, and the paired
differences between runs, come from its per-problem counts (:mod:`corecode.evaluation.intervals`), so older
summaries get them too; CG's paired interval needs the Coder-alone run's counts and is read from the summary.

:func:`build_paper_table` puts runs in the paper's main table instead (``corecode report --table paper``): rows
CoRe-Code and the four RL baselines, columns LiveBench / MBPP / CodeContests / CodeForces, cells Pass@1 with
its 95 % interval, "missing" where no run was given, and the paper's reported numbers below for reference.
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

__all__ = ["Report", "build_report", "METRICS", "INTERVALS", "FORMATS", "PaperTable", "build_paper_table",
           "PAPER_METHODS", "PAPER_BENCHMARKS", "PAPER_REPORTED"]

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


# ---------------------------------------------------------------------------------------------------------------
# The paper's main table: methods x benchmarks, Pass@1 with its 95 % interval (METHOD.md sections 5 and 6)

# method key (as given on the command line) -> row name, in the paper's order
PAPER_METHODS: dict[str, str] = {
    "grpo": "GRPO",
    "focused_dpo": "Focused-DPO",
    "cure": "CURE",
    "coderl_plus": "CodeRL+",
    "corecode": "CoRe-Code",
}
# column -> the corecode benchmarks that stand for it (the original data or the CURE authors' stdio copies)
PAPER_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "LiveBench": ("livebench", "genverse-livebench"),
    "MBPP": ("mbpp", "mbpp-sanitized", "genverse-mbpp"),
    "CodeContests": ("code_contests", "genverse-codecontests"),
    "CodeForces": ("codeforces", "genverse-codeforces"),
}
# Pass@1 the paper reports for Qwen2.5-Coder-14B-Instruct (third-party summaries of the paper, unverified)
PAPER_REPORTED: dict[str, dict[str, float]] = {
    "grpo": {"LiveBench": 45.5, "MBPP": 80.7, "CodeContests": 33.7, "CodeForces": 12.9},
    "focused_dpo": {"LiveBench": 41.9, "MBPP": 78.4, "CodeContests": 31.7, "CodeForces": 9.7},
    "cure": {"LiveBench": 47.5, "MBPP": 78.5, "CodeContests": 32.1, "CodeForces": 12.1},
    "coderl_plus": {"LiveBench": 44.7, "MBPP": 80.4, "CodeContests": 29.2, "CodeForces": 10.4},
    "corecode": {"LiveBench": 48.4, "MBPP": 82.2, "CodeContests": 34.6, "CodeForces": 13.3},
}
MISSING = "missing"


def _paper_column(benchmark: str) -> str | None:
    return next((column for column, names in PAPER_BENCHMARKS.items() if benchmark in names), None)


@dataclass
class PaperTable:
    """cells[method][column] = the run's summary; a method or column without a run is shown as missing."""

    cells: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def cell(self, method: str, column: str) -> dict[str, Any] | None:
        """Pass@1 (percent) with its 95 % interval, the run and its size; None when there is no run."""
        summary = self.cells.get(method, {}).get(column)
        if summary is None:
            return None
        value = METRICS["Pass@1"][0](summary)
        interval = INTERVALS["Pass@1"](summary)
        return {
            "pass1": None if value is None else 100 * value,
            "ci": None if interval is None else [100 * interval[0], 100 * interval[1]],
            "benchmark": summary["run"]["benchmark"], "run_dir": summary["run"]["run_dir"],
            "n_problems": summary["n_problems"], "n": summary["run"]["n"], "label": summary["label"],
        }

    def _text(self, method: str, column: str) -> str:
        cell = self.cell(method, column)
        if cell is None or cell["pass1"] is None:
            return MISSING
        text = f"{cell['pass1']:.1f}"
        return text if cell["ci"] is None else f"{text} {format_interval(*cell['ci'])}"

    def render(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise ConfigError(f"unknown report format {fmt!r}; valid: {', '.join(FORMATS)}")
        columns = list(PAPER_BENCHMARKS)
        if fmt == "json":
            return json.dumps([{"method": PAPER_METHODS[m], "key": m,
                                "cells": {c: self.cell(m, c) for c in columns},
                                "paper_reported_pass1": PAPER_REPORTED[m]} for m in PAPER_METHODS], indent=1) + "\n"
        if fmt == "csv":
            out = io.StringIO()
            names = ["method"] + [f"{c} {part}" for c in columns for part in ("Pass@1", "low", "high", "run")]
            writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
            writer.writeheader()
            for m in PAPER_METHODS:
                row = {"method": PAPER_METHODS[m]}
                for c in columns:
                    cell = self.cell(m, c)
                    fmt1 = (lambda x: "" if x is None else f"{x:.1f}")
                    row[f"{c} Pass@1"] = "" if cell is None else fmt1(cell["pass1"])
                    row[f"{c} low"] = "" if cell is None or cell["ci"] is None else fmt1(cell["ci"][0])
                    row[f"{c} high"] = "" if cell is None or cell["ci"] is None else fmt1(cell["ci"][1])
                    row[f"{c} run"] = "" if cell is None else cell["run_dir"]
                writer.writerow(row)
            return out.getvalue()
        rows = [{"method": PAPER_METHODS[m], **{c: self._text(m, c) for c in columns}} for m in PAPER_METHODS]
        text = format_table(rows, ["method"] + columns) + "\n"
        text += (f"\nCells: Pass@1 (%) [95% interval, bootstrap over problems]; {MISSING}: no run given for that "
                 "method and benchmark.\n")
        runs = [(PAPER_METHODS[m], c, self.cell(m, c)) for m in PAPER_METHODS for c in columns if self.cell(m, c)]
        if runs:
            text += "\nRuns: " + "; ".join(f"{m} / {c}: {cell['run_dir']} ({cell['benchmark']}, "
                                           f"{cell['n_problems']} problems, n={cell['n']})" for m, c, cell in runs) + "\n"
        reported = [{"method": PAPER_METHODS[m], **{c: f"{PAPER_REPORTED[m][c]:.1f}" for c in columns}}
                    for m in PAPER_METHODS]
        text += ("\nReported by the paper, Qwen2.5-Coder-14B-Instruct (third-party summaries, unverified; "
                 "METHOD.md section 5):\n\n" + format_table(reported, ["method"] + columns) + "\n")
        return text


def build_paper_table(assignments: Sequence[str]) -> PaperTable:
    """``METHOD=RUN_DIR`` items (METHOD: a key of :data:`PAPER_METHODS`) -> the paper's table.

    Each run's benchmark (from its summary.json) picks the column; two runs for one cell are refused."""
    if not assignments:
        raise ConfigError("give at least one METHOD=RUN_DIR")
    table = PaperTable()
    for item in assignments:
        method, sep, run_dir = str(item).partition("=")
        if not sep or not run_dir:
            raise ConfigError(f"--table paper takes METHOD=RUN_DIR items (METHOD: {', '.join(PAPER_METHODS)}); "
                              f"got {item!r}")
        if method not in PAPER_METHODS:
            raise ConfigError(f"unknown method {method!r} in {item!r}; the paper's table has {', '.join(PAPER_METHODS)}")
        summary = load_summary(run_dir)
        summary["run"]["run_dir"] = run_dir
        benchmark = summary["run"]["benchmark"]
        column = _paper_column(benchmark)
        if column is None:
            known = ", ".join(f"{c}: {' / '.join(names)}" for c, names in PAPER_BENCHMARKS.items())
            raise ConfigError(f"{run_dir}: benchmark {benchmark!r} is not one of the paper's table ({known})")
        row = table.cells.setdefault(method, {})
        if column in row:
            raise ConfigError(f"two runs for {PAPER_METHODS[method]} on {column}: {row[column]['run']['run_dir']} and "
                              f"{run_dir}; give one")
        row[column] = summary
    return table
