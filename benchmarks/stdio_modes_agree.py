"""Do the two stdin/stdout modes of the sandbox give the same verdicts on real programs, and at what cost?

    python benchmarks/stdio_modes_agree.py [--mbpp PATH] [--workers 2]

Every MBPP reference solution whose tests are all ``assert CALL == LITERAL`` becomes a stdin/stdout
program: it reads ``CALL`` from stdin and prints ``repr`` of its value; each assert becomes a case whose
expected output is ``repr(LITERAL)``. All of them run with ``stdio_shared_runner=True`` (the default: the
cases of a program share one runner, one warm case is rerun alone) and with ``False`` (a fresh process per
case), on the same pool size. Prints the time of each and every case whose verdict differs. Expected
differences: cases near their CPU limit (timing), and outputs that depend on the worker's string hash seed
(a printed ``set`` of strings: each worker process has its own seed, in both modes).
"""

from __future__ import annotations

import argparse
import ast
import time
from pathlib import Path

from corecode.benchmarks import load_benchmark
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import Problem, StdioTest

REPO = Path(__file__).resolve().parents[1]
READER = "\nimport sys as _sys\nprint(repr(eval(_sys.stdin.readline())))\n"


def stdio_jobs(path: str) -> list[tuple[str, Problem]]:
    jobs = []
    for problem in load_benchmark("mbpp", "all", path=path):
        cases = []
        for test in problem.tests:
            try:
                node = ast.parse(test.code).body[0]
                if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
                        and len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.Eq)):
                    raise ValueError("not assert CALL == LITERAL")
                value = ast.literal_eval(node.test.comparators[0])
            except (SyntaxError, ValueError, AttributeError, IndexError):
                cases = []
                break
            cases.append(StdioTest(ast.unparse(node.test.left) + "\n", repr(value) + "\n"))
        if len(cases) >= 2:
            jobs.append((problem.reference_solutions[0] + READER,
                         Problem(id=problem.id + "/stdio", source="mbpp", statement="", tests=tuple(cases))))
    return jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mbpp", default=str(REPO.parent / "shared" / "data" / "mbpp" / "mbpp.jsonl"))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    jobs = stdio_jobs(args.mbpp)
    print(f"{len(jobs)} programs, {sum(len(p.tests) for _, p in jobs)} cases")
    verdicts = {}
    for shared in (True, False):
        config = SandboxConfig(workers=args.workers, stdio_shared_runner=shared, reference_timing=False)
        with Sandbox(config) as sb:
            start = time.perf_counter()
            results = sb.run_batch(jobs)
            seconds = time.perf_counter() - start
        verdicts[shared] = [[t.status.value for t in r.tests] for r in results]
        print(f"stdio_shared_runner={shared}: {seconds:.1f} s, {sum(r.passed for r in results)} programs pass, "
              f"{sum(v == 'passed' for r in verdicts[shared] for v in r)} cases pass")
    differ = [(problem.id, i, a, b) for (_, problem), x, y in zip(jobs, verdicts[True], verdicts[False])
              for i, (a, b) in enumerate(zip(x, y)) if a != b]
    print(f"cases whose verdicts differ: {len(differ)}")
    for pid, index, ours, fresh in differ:
        print(f"  {pid} case {index}: shared runner {ours}, fresh process {fresh}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
