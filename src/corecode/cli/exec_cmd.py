"""`corecode exec PROGRAM.py`: run one program in the sandbox and show every test's outcome.

Tests come from ``--tests TESTS.jsonl`` (one case per line: ``{"kind": "stdio", "input": .., "output": ..}``,
``{"kind": "call", "fn_name": .., "args": [..], "expected": ..}`` or ``{"kind": "assert", "code": ..}``) or
from a benchmark problem (``--benchmark NAME --task-id ID``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corecode.errors import ConfigError, DatasetError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", help="Python source file to run ('-' reads standard input)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--tests", help="JSONL file of test cases")
    source.add_argument("--benchmark", help="benchmark name; use with --task-id")
    parser.add_argument("--task-id", help="problem id within --benchmark")
    parser.add_argument("--split", default="all", help="split to look the task id up in (default: all)")
    parser.add_argument("--path", default=None, help="local benchmark file instead of the default source")
    parser.add_argument("--public", action="store_true", help="run the problem's public tests only")
    parser.add_argument("--setup", default=None, help="file of setup code run before --tests (after the program)")
    parser.add_argument("--time-limit", type=float, default=None, help="CPU seconds per test")
    parser.add_argument("--no-measure", action="store_true",
                        help="skip the measurement pass (whole-program CPU time and memory of a passing program)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def read_tests(path: Path) -> list:
    from corecode.types import test_case_from_dict

    if not path.is_file():
        raise DatasetError(str(path), None, None, "file not found")
    tests = []
    with path.open(encoding="utf-8") as f:
        for row, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(str(path), row, None, f"not valid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise DatasetError(str(path), row, None, "each line must be a JSON object")
            try:
                tests.append(test_case_from_dict(data))
            except KeyError as exc:
                raise DatasetError(str(path), row, str(exc.args[0]), "missing") from None
            except ValueError as exc:
                raise DatasetError(str(path), row, "kind", str(exc)) from None
    if not tests:
        raise DatasetError(str(path), None, None, "no test cases in the file")
    return tests


def _read_program(name: str) -> str:
    import sys

    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    if not path.is_file():
        raise ConfigError(f"program file {name!r} not found")
    return path.read_text(encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    from corecode.sandbox import Sandbox, SandboxConfig

    program = _read_program(args.program)
    config = SandboxConfig(workers=1, time_limit_s=args.time_limit)
    with Sandbox(config) as sandbox:
        if args.tests:
            from corecode.types import Problem

            setup = Path(args.setup).read_text(encoding="utf-8") if args.setup else ""
            tests = read_tests(Path(args.tests))
            result = sandbox.execute(program, tests, setup_code=setup, time_limit_s=args.time_limit)
            problem, which = Problem(id="exec", source="exec", statement="", tests=tuple(tests),
                                     test_setup_code=setup), "all"
        else:
            from corecode.benchmarks import get_problem

            if not args.task_id:
                raise ConfigError("--benchmark needs --task-id")
            problem = get_problem(args.benchmark, args.task_id, args.split, path=args.path)
            which = "public" if args.public else "all"
            result = sandbox.run(program, problem, which)
        if result.passed and not args.no_measure:  # whole-program CPU time and memory, as the rewards see them
            from corecode.sandbox import attach_measurements

            result = attach_measurements(sandbox, [(program, problem)], [result], tests=which)[0]
        isolation = sandbox.isolation
    if args.json:
        print(json.dumps({**result.to_dict(), "isolation": isolation}))
    else:
        _print_human(result, isolation)
    return 0 if result.passed else 1


def _print_human(result, isolation: dict) -> None:
    for t in result.tests:
        line = (f"test {t.index:>3}: {t.status.value:<15} cpu {t.cpu_time_s * 1e3:8.1f} ms  "
                f"wall {t.wall_time_s * 1e3:8.1f} ms  peak {t.peak_memory_bytes / 1024:8.0f} KiB")
        if t.exception:
            line += f"  {t.exception}"
        print(line)
        if t.detail and not t.passed:
            print("           " + t.detail.replace("\n", "\n           ")[:1000])
        if t.stderr.strip() and not t.passed:
            print("   stderr: " + t.stderr.strip().replace("\n", "\n           ")[-1000:])
    if result.measurement is not None:
        m = result.measurement
        print(f"whole program (module-level code + every test): cpu {m.cpu_time_s * 1e6:.2f} us per execution "
              f"(best of {m.rounds} rounds x {m.repetitions}), peak traced memory {m.peak_memory_bytes} bytes"
              + ("" if m.ok else f"; NOT measured: {m.detail}"))
    active = ", ".join(k for k, v in isolation.items() if v is True) or "none"
    print(f"{result.status.value}: {result.n_passed}/{result.n_tests} tests passed "
          f"(wall {result.wall_time_s:.3f} s; isolation: {active})")
