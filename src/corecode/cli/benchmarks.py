"""`corecode benchmarks list` and `corecode benchmarks show NAME`: what is available, and a readable view."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from corecode.errors import ConfigError
from corecode.types import AssertTest, CallTest, Problem, StdioTest, TestCase

MAX_TEXT_LINES = 40  # a statement longer than this is cut in the text view (--json has everything)
MAX_TEST_CHARS = 300
SHOWN_TESTS = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="the benchmarks corecode knows, their splits and sizes")
    lst.add_argument("--json", action="store_true", help="print JSON instead of a table")
    show = sub.add_parser("show", help="a readable view of the problems of one benchmark")
    show.add_argument("name", help="benchmark name (see `corecode benchmarks list`) or module:object")
    show.add_argument("--split", default=None, help="split to load (default: the benchmark's default; 'all')")
    show.add_argument("--limit", type=int, default=3, help="show the first N problems (default 3; 0 = all)")
    show.add_argument("--id", dest="task_id", default=None, help="show only this problem id")
    show.add_argument("--path", default=None, help="local JSONL / JSON / parquet file instead of the default")
    show.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE",
        help="benchmark option, e.g. start_date=2024-08-01 for livecodebench (repeatable)",
    )
    show.add_argument("--json", action="store_true", help="print one JSON object per problem (JSON lines)")


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option expects KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


def _size(name: str) -> tuple[str, str]:
    """(problems, tests) for benchmarks that load without network; 'hub' / 'local' for the others."""
    from corecode.benchmarks import BENCHMARKS, load_benchmark

    spec = BENCHMARKS[name]
    if spec.builtin is None:
        return ("hub" if spec.hub_id else "local file"), "-"
    problems = load_benchmark(name, "all")
    return str(len(problems)), str(sum(len(p.tests) for p in problems))


def _list(args: argparse.Namespace) -> int:
    from corecode.benchmarks import BENCHMARKS

    rows = []
    for name, spec in BENCHMARKS.items():
        problems, tests = _size(name)
        splits = ",".join(f"{s}*" if s == spec.default_split else s for s in spec.splits)
        rows.append({"name": name, "splits": splits, "problems": problems, "tests": tests,
                     "hub": spec.hub_page or spec.hub_id or "-", "description": spec.description})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    columns = ["name", "splits", "problems", "tests", "hub"]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in columns))
    print("\n* default split; 'problems' counts every split; 'hub' loads from the Hugging Face Hub (extra 'hub')"
          " or from --path")
    return 0


def _clip(text: str, limit: int = MAX_TEST_CHARS) -> str:
    text = text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"
    return text


def _describe_test(test: TestCase) -> str:
    if isinstance(test, AssertTest):
        return _clip(test.code)
    if isinstance(test, StdioTest):
        return f"stdin {_clip(test.input, 150)!r} -> stdout {_clip(test.output, 150)!r}"
    if isinstance(test, CallTest):
        args = ", ".join(repr(a) for a in test.args)
        return _clip(f"{test.fn_name}({args}) == {test.expected!r}")
    raise TypeError(type(test))


def _tests_block(label: str, tests: tuple[TestCase, ...]) -> list[str]:
    kinds: dict[str, int] = {}
    for t in tests:
        kinds[t.kind] = kinds.get(t.kind, 0) + 1
    summary = ", ".join(f"{k} {n}" for k, n in kinds.items()) or "none"
    lines = [f"{label}: {len(tests)} ({summary})"]
    for i, t in enumerate(tests[:SHOWN_TESTS]):
        lines.append(textwrap.indent(f"[{i}] {_describe_test(t)}", "  "))
    if len(tests) > SHOWN_TESTS:
        lines.append(f"  ... {len(tests) - SHOWN_TESTS} more")
    return lines


def _indented(text: str) -> str:
    lines = text.strip("\n").splitlines()
    if len(lines) > MAX_TEXT_LINES:
        lines = lines[:MAX_TEXT_LINES] + [f"... [{len(lines) - MAX_TEXT_LINES} more lines; --json shows all]"]
    return textwrap.indent("\n".join(lines), "  ")


def _field(value: Any, unit: str = "") -> str:
    return "-" if value in (None, "", ()) else f"{value}{unit}"


def render(problem: Problem) -> str:
    """The text view of one problem."""
    p = problem
    lines = [
        f"== {p.id}  ({p.source}, split {_field(p.split)})",
        f"entry point: {_field(p.entry_point)}   io: {p.io_mode.value}   difficulty: {_field(p.difficulty)}"
        f"   tags: {_field(', '.join(p.tags))}",
        f"limits: time {_field(p.time_limit_s, ' s')}, memory {_field(p.memory_limit_mb, ' MB')}"
        f"   contest date: {_field(p.contest_date)}   checker: {'yes' if p.checker else 'no'}"
        f"   reference solutions: {len(p.reference_solutions)}",
        "statement:",
        _indented(p.statement),
    ]
    if p.starter_code and p.starter_code.strip() != p.statement.strip():
        lines += ["starter code:", _indented(p.starter_code)]
    if p.test_setup_code:
        lines += ["test setup code:", _indented(p.test_setup_code)]
    lines += _tests_block("tests", p.tests)
    lines += _tests_block("public tests", p.public_tests)
    return "\n".join(lines)


def _show(args: argparse.Namespace) -> int:
    from corecode.benchmarks import get_problem, load_benchmark_with_report

    options = _options(args.option)
    if args.limit < 0:
        raise ConfigError(f"--limit must be >= 0 (0 = all), got {args.limit}")
    if args.task_id is not None:
        split = args.split or "all"
        problems = [get_problem(args.name, args.task_id, split, path=args.path, **options)]
        report = None
    else:
        problems, report = load_benchmark_with_report(
            args.name, args.split, path=args.path, limit=args.limit or None, **options
        )
    if args.json:
        for problem in problems:
            print(json.dumps(problem.to_dict()))
    else:
        for problem in problems:
            print(render(problem))
            print()
    if report is not None:
        # On stderr so that --json output stays machine-readable.
        print(f"[{report.summary()}]", file=sys.stderr if args.json else sys.stdout)
    return 0


def run(args: argparse.Namespace) -> int:
    return _list(args) if args.action == "list" else _show(args)
