"""Two versions of the sandbox on HumanEval's 164 canonical solutions, in alternating rounds of one run.

    git archive HEAD~3 src | tar -x -C /tmp/before      # the code before a change
    python benchmarks/sandbox_ab.py /tmp/before/src src [--rounds 30] [--workers 2]

Each ``src`` is imported by a long-lived process of its own (``Sandbox(workers=N)``, started and warmed
once), so both versions run on the same machine at the same time of day; a round runs one batch of the
164 jobs in each, in turn. Per batch it reads the wall time and the CPU of the whole process tree (the
harness, its workers, zygotes and judges from ``/proc``, the job processes through their reaped parents'
child times), and per round the ratio second / first of both. Medians of the rounds come with the
distribution-free interval of benchmarks/_stats.py; a ratio whose interval holds 1.0 is a difference
inside the noise of this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant, with the child times of those reaped by them."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(k) for k in f.read().split()]
        except OSError:  # ended meanwhile
            pass
    return total / tick


def child(src: str, workers: int) -> int:
    """One version: warm a sandbox, then one batch per line on stdin, 'wall cpu_per_job_ms passed' back."""
    sys.path.insert(0, src)
    import corecode

    if not Path(corecode.__file__).resolve().is_relative_to(Path(src).resolve()):
        print(f"{src}: corecode was imported from {Path(corecode.__file__).parent} instead; pass a src directory "
              "that holds corecode/ (e.g. one exported with git archive)", file=sys.stderr)
        return 2
    from corecode.benchmarks import load_benchmark
    from corecode.sandbox import Sandbox, SandboxConfig

    jobs = [(p.reference_solutions[0], p) for p in load_benchmark("humaneval")]
    with Sandbox(SandboxConfig(workers=workers, reference_timing=False)) as sb:
        sb.run_batch(jobs)
        print("ready", flush=True)
        me = os.getpid()
        for _ in sys.stdin:
            cpu = tree_cpu(me)
            start = time.perf_counter()
            results = sb.run_batch(jobs)
            wall = time.perf_counter() - start
            print(wall, (tree_cpu(me) - cpu) / len(jobs) * 1000, sum(r.passed for r in results), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", help="src directory of the first version (e.g. the code before a change)")
    parser.add_argument("second", help="src directory of the second version")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.workers)
    sys.path.insert(0, str(HERE))
    from _stats import describe

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # each child imports its own src first
    procs = [subprocess.Popen([sys.executable, __file__, "x", "x", "--child", str(Path(src).resolve()),
                               "--workers", str(args.workers)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env) for src in (args.first, args.second)]
    try:
        for src, p in zip((args.first, args.second), procs):
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"{src}: no sandbox started (is it a src directory with corecode/ in it? its "
                                 "error is printed above)")
        walls: list[list[float]] = [[], []]
        cpus: list[list[float]] = [[], []]
        for _ in range(args.rounds):
            for i, p in enumerate(procs):
                p.stdin.write("go\n")
                p.stdin.flush()
                wall, cpu, passed = p.stdout.readline().split()
                if int(passed) != 164:
                    print(f"  version {i + 1}: {passed} of 164 references passed", file=sys.stderr)
                walls[i].append(float(wall))
                cpus[i].append(float(cpu))
    finally:
        for p in procs:
            p.stdin.close()
            p.wait()
    print(f"HumanEval, 164 jobs per batch, {args.workers} workers, {args.rounds} alternating rounds; "
          f"load average {os.getloadavg()[0]:.1f}")
    for i, src in enumerate((args.first, args.second)):
        print(f"  {src}: wall {statistics.median(walls[i]):.3f} s per batch, "
              f"CPU {statistics.median(cpus[i]):.2f} ms per job (medians)")
    print("  second / first, wall: " + describe([b / a for a, b in zip(walls[0], walls[1])]))
    print("  second / first, CPU per job: " + describe([b / a for a, b in zip(cpus[0], cpus[1])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
