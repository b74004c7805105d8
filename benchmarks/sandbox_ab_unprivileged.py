"""Two versions of the sandbox in its unprivileged mode (uid 65534: user namespaces, no cgroups), in
alternating rounds of one run, on HumanEval's 164 canonical solutions.

    python benchmarks/sandbox_ab_unprivileged.py BEFORE/src src [--rounds 20]

As benchmarks/sandbox_ab.py, but each version's sandbox runs in a process started as uid 65534 with the
system Python (``setpriv``; needs root to switch, and /usr/bin/python3), so the workers have no job cgroups
and the supervisor measures each test on the judge's word. The jobs are written to a pickle first (the
system Python need not have the benchmark's package). Prints the medians and the ratio second / first of
the wall per batch, with the distribution-free interval of benchmarks/_stats.py.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _stats import describe  # noqa: E402

CHILD = r'''
import sys, time, pickle, json
sys.path.insert(0, SRC)
from corecode.sandbox import Sandbox, SandboxConfig
jobs = pickle.load(open(JOBS, "rb"))
with Sandbox(SandboxConfig(workers=WORKERS, reference_timing=False, python=sys.executable)) as sb:
    sb.run_batch(jobs)
    if not sb.isolation.get("user_namespace"):
        raise SystemExit(f"no user namespace: {sb.isolation}")
    print("ready", flush=True)
    for line in sys.stdin:
        t = time.perf_counter()
        out = sb.run_batch(jobs)
        print(json.dumps([time.perf_counter() - t, sum(r.passed for r in out)]), flush=True)
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if os.getuid() != 0 or not shutil.which("setpriv") or not os.access("/usr/bin/python3", os.X_OK):
        print("needs root (to start the sandboxes as uid 65534), setpriv and /usr/bin/python3", file=sys.stderr)
        return 2
    from corecode.benchmarks import load_benchmark

    work = Path(tempfile.mkdtemp(prefix="ab-unpriv-"))
    jobs_file = work / "jobs.pkl"
    with open(jobs_file, "wb") as f:
        pickle.dump([(p.reference_solutions[0], p) for p in load_benchmark("humaneval")], f)
    for path in [work, jobs_file]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    procs = []
    for src in (args.first, args.second):
        src = str(Path(src).resolve())
        if not (Path(src) / "corecode").is_dir():
            print(f"{src}: holds no corecode/", file=sys.stderr)
            return 2
        code = f"SRC = {src!r}\nJOBS = {str(jobs_file)!r}\nWORKERS = {args.workers}\n" + CHILD
        p = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", f"HOME={work}",
                              "/usr/bin/python3", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=work)
        if p.stdout.readline().strip() != "ready":
            print(f"{src}: the unprivileged sandbox did not start", file=sys.stderr)
            return 1
        procs.append(p)
    walls: list[list[float]] = [[], []]
    for r in range(args.rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            procs[i].stdin.write("go\n")
            procs[i].stdin.flush()
            wall, passed = json.loads(procs[i].stdout.readline())
            if passed != 164:
                print(f"round {r}: {passed} of 164 passed in {(args.first, args.second)[i]}", file=sys.stderr)
            walls[i].append(wall)
    for p in procs:
        p.stdin.close()
        p.wait()
    shutil.rmtree(work, ignore_errors=True)
    print(f"HumanEval, 164 jobs per batch, {args.workers} workers, unprivileged (uid 65534), {args.rounds} alternating "
          f"rounds; load average {os.getloadavg()[0]:.1f}")
    for name, w in zip((args.first, args.second), walls):
        print(f"  {name}: wall {statistics.median(w):.3f} s per batch (median)")
    print(f"  second / first, wall: {describe([b / a for a, b in zip(*walls)])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
