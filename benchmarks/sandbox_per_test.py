"""CPU per function test and per HumanEval job of the sandbox, for several versions in one run.

    python benchmarks/sandbox_per_test.py [--src OLD/src ...] [--rounds 3] [--one-fork] [--two-fork] [--unpinned]

Each *variant* (the checkout this script is in, plus every ``--src`` tree, e.g. the code before a change
exported with ``git archive <commit> src | tar -x -C /tmp/old``; ``--one-fork`` adds this checkout with
``SandboxConfig(one_fork_jobs=True)``, ``--two-fork`` with ``one_fork_jobs=False``, ``--unpinned`` with
``pin_workers=False``) runs in a fresh interpreter, the variants alternating, ``--rounds``
times. A run starts one worker and measures, with ``getrusage`` of the process and of its reaped children
(harness + worker + every job process) after the sandbox closed:
  * 300 jobs of a one-line function with 1 assert test, and the same with 41: the difference / 40 / 300 is
    the cost of one more test (the judge's call into the program, the test's meters, the supervisor);
  * the 164 HumanEval canonical solutions, twice: CPU per job.
Each figure is the median over rounds; ratios are to the first variant.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None
from corecode.benchmarks import load_benchmark
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Problem

kw = json.loads(sys.argv[2])
import dataclasses
if "dedupe_jobs" in {f.name for f in dataclasses.fields(SandboxConfig)}:
    kw.setdefault("dedupe_jobs", False)  # the copies below are the point: each must run

def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

def run(jobs):
    c0 = cpu()
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, **kw)) as sb:
        results = sb.run_batch(jobs)
    assert all(r.passed for r in results), [r.status for r in results if not r.passed][:3]
    return cpu() - c0

program = "def f(x):\n    return x + 1\n"
def job(n):
    tests = tuple(AssertTest(f"assert f({i}) == {i + 1}") for i in range(n))
    return (program, Problem(id=f"t/{n}", source="t", statement="", entry_point="f", tests=tests))

empty = run([])
one, many = run([job(1)] * 300), run([job(41)] * 300)
he = [(p.reference_solutions[0], p) for p in load_benchmark("humaneval")] * 2
he_cpu = run(he)
print(json.dumps({"per_test_us": (many - one) / 300 / 40 * 1e6, "one_test_job_ms": (one - empty) / 300 * 1e3,
                  "he_job_ms": (he_cpu - empty) / len(he) * 1e3}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", action="append", default=[], help="another checkout's src directory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-fork", action="store_true", help="also this checkout with one_fork_jobs=True")
    parser.add_argument("--two-fork", action="store_true", help="also this checkout with one_fork_jobs=False")
    parser.add_argument("--unpinned", action="store_true", help="also this checkout with pin_workers=False")
    args = parser.parse_args()
    variants = [(f"--src {s}", str(Path(s).resolve()), "{}") for s in args.src] + [("this checkout", "", "{}")]
    if args.one_fork:
        variants.append(("this checkout, one_fork_jobs=True", "", json.dumps({"one_fork_jobs": True})))
    if args.two_fork:
        variants.append(("this checkout, one_fork_jobs=False", "", json.dumps({"one_fork_jobs": False})))
    if args.unpinned:
        variants.append(("this checkout, pin_workers=False", "", json.dumps({"pin_workers": False})))
    got: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for r in range(args.rounds):
        for name, src, kw in variants:
            out = subprocess.run([sys.executable, "-c", CHILD, src, kw], capture_output=True, text=True,
                                 env=env, cwd=REPO, check=True).stdout
            got[name].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in got[name][-1].items()), flush=True)
    first = variants[0][0]
    print(f"\nmedians of {args.rounds} rounds (load average now {os.getloadavg()[0]:.2f}):")
    for name, _, _ in variants:
        med = {k: statistics.median(d[k] for d in got[name]) for k in got[name][0]}
        ratio = {k: statistics.median(d[k] for d in got[first]) / med[k] for k in med}
        print(f"  {name:<40} per extra test {med['per_test_us']:6.1f} us ({ratio['per_test_us']:.2f}x), "
              f"1-test job {med['one_test_job_ms']:5.2f} ms ({ratio['one_test_job_ms']:.2f}x), "
              f"HumanEval job {med['he_job_ms']:5.2f} ms ({ratio['he_job_ms']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
