"""CPU per job of the sandbox (harness + workers + every job process), steadier than wall time on a busy box.

    python benchmarks/sandbox_cpu_per_job.py he|mbpp|stdio [--src PATH] [--mbpp PATH]

One worker runs the jobs inside ``with Sandbox(...)``; ``getrusage`` of this process and of its reaped
children (the workers, and through them every job process) is read around it, minus an empty sandbox's.
For ``stdio`` it then runs the same cases through a bare fork-per-case loop (a child of this process that
forks one child per case, no isolation) and prints its CPU per case too. ``--src`` puts another
checkout's ``src`` first on ``sys.path`` (e.g. the code before a change, exported
with ``git archive``), so two versions can be compared on the same machine, alternating runs.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("he", "mbpp", "stdio"))
    parser.add_argument("--src", default=None, help="a checkout's src directory to import corecode from")
    parser.add_argument("--mbpp", default=str(REPO.parent / "shared" / "data" / "mbpp" / "mbpp.jsonl"))
    args = parser.parse_args()
    if args.src:
        sys.path.insert(0, args.src)
    from corecode.benchmarks import load_benchmark
    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.types import StdioTest

    if args.kind == "he":
        jobs = [(p.reference_solutions[0], p) for p in load_benchmark("humaneval")] * 2
    elif args.kind == "mbpp":
        jobs = [(p.reference_solutions[0], p) for p in load_benchmark("mbpp", "all", path=args.mbpp)]
    else:
        jobs = []

    def cpu() -> float:
        mine, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime

    def run(n: int) -> float:
        c0 = cpu()
        with Sandbox(SandboxConfig(workers=1, reference_timing=False)) as sb:
            if args.kind == "stdio":
                for _ in range(n):
                    sb.execute("print(int(input()) * 2)", [StdioTest(str(i), str(2 * i)) for i in range(50)])
            else:
                sb.run_batch(jobs[:n])
        return cpu() - c0

    empty = run(0)
    n = 6 if args.kind == "stdio" else len(jobs)
    units = n * 50 if args.kind == "stdio" else n
    per = (run(n) - empty) / units * 1000
    print(f"{args.kind}: {per:.2f} ms CPU per {'case' if args.kind == 'stdio' else 'job'} "
          f"(harness + workers + jobs, {units} {'cases' if args.kind == 'stdio' else 'jobs'})")
    if args.kind == "stdio":  # the same cases through a bare fork-per-case loop (no isolation), same run
        c0 = cpu()
        ok = bare_stdio(n)
        print(f"stdio, bare fork-per-case loop: {(cpu() - c0) / units * 1000:.2f} ms CPU per case ({ok} of {units} right)")
    return 0


def bare_stdio(n: int) -> int:
    """A child of this process that compiles the program once and forks one child per case (memfds for
    stdin and stdout, exact comparison), as benchmarks/sandbox_throughput.py's bare loop; its CPU is read
    by the caller after it was reaped."""
    import os

    from _bare_loop import run_cases

    cases = [(str(i), f"{2 * i}\n") for i in range(50)] * n
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = run_cases("print(int(input()) * 2)", cases)
        os.write(w, str(ok).encode())
        os._exit(0)
    os.close(w)
    ok = int(os.read(r, 64) or b"0")
    os.waitpid(pid, 0)
    os.close(r)
    return ok


if __name__ == "__main__":
    sys.exit(main())
