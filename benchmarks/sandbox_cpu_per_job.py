"""CPU per job of the sandbox (harness + workers + every job process), steadier than wall time on a busy box.

    python benchmarks/sandbox_cpu_per_job.py he|mbpp|stdio [--src PATH] [--mbpp PATH]
    python benchmarks/sandbox_cpu_per_job.py he --roles [--batches 5]
    python benchmarks/sandbox_cpu_per_job.py start [--runs 60] [--src PATH]

One worker runs the jobs inside ``with Sandbox(...)``; ``getrusage`` of this process and of its reaped
children (the workers, and through them every job process) is read around it, minus an empty sandbox's.
For ``stdio`` it then runs the same cases through a bare fork-per-case loop (a child of this process that
forks one child per case, no isolation) and prints its CPU per case too. ``--src`` puts another
checkout's ``src`` first on ``sys.path`` (e.g. the code before a change, exported
with ``git archive``), so two versions can be compared on the same machine, alternating runs.

``--roles`` (he or mbpp) says where a job's CPU goes, from ``/proc/PID/stat`` of each long-lived process of
one worker (the worker, its clean zygote, its judge; the zygote's reaped children are the job processes)
and ``getrusage`` of this process (the harness), user and system time and minor page faults per job over
``--batches`` warm batches; then the same programs through a bare fork-and-wait loop forked from this
process (the baseline of sandbox_throughput.py): its children and its own fork-and-wait.

``start`` measures what a function job's process costs before the program runs, from inside it: a probe
program reads its own thread CPU time (``time.thread_time``: this process only, from its fork) and minor
page-fault count (``/proc/self/stat``) at its first line and again in its first and second call, through
the sandbox (one-fork jobs: the job leader that became the program) and in a bare fork child that
compiles and runs the same program; medians over ``--runs`` jobs. Unlike wall or whole-tree CPU figures,
these do not move with the machine's load (other processes' CPU is not in them), so a change to the job
set-up path can be compared with ``--src`` to within a few microseconds.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("he", "mbpp", "stdio", "start"))
    parser.add_argument("--src", default=None, help="a checkout's src directory to import corecode from")
    parser.add_argument("--mbpp", default=str(REPO.parent / "shared" / "data" / "mbpp" / "mbpp.jsonl"))
    parser.add_argument("--roles", action="store_true", help="CPU per job by process role, against the bare loop")
    parser.add_argument("--batches", type=int, default=5, help="warm batches measured with --roles")
    parser.add_argument("--runs", type=int, default=60, help="jobs measured with start")
    args = parser.parse_args()
    if args.src:
        sys.path.insert(0, args.src)
    if args.kind == "start":
        return start_cost(args.runs)
    from corecode.benchmarks import load_benchmark
    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.types import StdioTest

    if args.kind == "he":
        jobs = [(p.reference_solutions[0], p) for p in load_benchmark("humaneval")] * 2
    elif args.kind == "mbpp":
        jobs = [(p.reference_solutions[0], p) for p in load_benchmark("mbpp", "all", path=args.mbpp)]
    else:
        jobs = []

    if args.roles:
        if args.kind == "stdio":
            parser.error("--roles measures he or mbpp jobs")
        distinct = list({id(p): (prog, p) for prog, p in jobs}.values())
        roles(distinct, args.batches, Sandbox, SandboxConfig)
        return 0

    import dataclasses

    # HumanEval runs twice in one batch: with deduplication (the default since it was added) the copies
    # would not run, and the figure would be half a job
    no_dedupe = {"dedupe_jobs": False} if "dedupe_jobs" in {f.name for f in dataclasses.fields(SandboxConfig)} else {}

    def cpu() -> float:
        mine, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime

    def run(n: int) -> float:
        c0 = cpu()
        with Sandbox(SandboxConfig(workers=1, reference_timing=False, **no_dedupe)) as sb:
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


def _proc_stat(pid: int) -> dict[str, int]:
    """minflt, cminflt, utime, stime, cutime, cstime (clock ticks) of ``pid`` from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return dict(zip(("minflt", "cminflt", "ut", "st", "cut", "cst"),
                    (int(fields[7]), int(fields[8]), int(fields[11]), int(fields[12]), int(fields[13]), int(fields[14]))))


def _switches(pid: int) -> int:
    """Context switches (voluntary and not) of every thread of ``pid`` so far."""
    import os

    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            total += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
    return total


def _children(pid: int) -> list[int]:
    import os

    kids: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids += [int(k) for k in f.read().split()]
    return sorted(kids)


def roles(jobs: list, batches: int, Sandbox, SandboxConfig) -> None:
    """CPU per job by process role (one worker), then the bare fork-and-wait loop on the same programs."""
    import os

    sys.path.insert(0, str(REPO / "benchmarks"))
    from _bare_loop import fork_and_wait
    from sandbox_throughput import flat_program

    tick = os.sysconf("SC_CLK_TCK")
    n = batches * len(jobs)
    with Sandbox(SandboxConfig(workers=1, reference_timing=False)) as sb:
        sb.run_batch(jobs)  # warm: first-time costs of the worker, zygote and judge
        worker = sb.worker_pids[0]
        kids = _children(worker)
        if not any(open(f"/proc/{k}/comm").read().strip() == "sbx-zygote" for k in kids):
            worker = kids[0]  # an outer process (the PID namespace's parent): the worker is its child
            kids = _children(worker)
        names = {k: open(f"/proc/{k}/comm").read().strip() for k in kids}
        zygote = next(k for k in kids if names[k] == "sbx-zygote")
        judge = next(k for k in kids if k != zygote)
        pids = {"worker": worker, "zygote": zygote, "judge": judge}
        before = {r: _proc_stat(p) for r, p in pids.items()}
        switches0 = {r: _switches(p) for r, p in pids.items()}
        me0 = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(batches):
            results = sb.run_batch(jobs)
        me1 = resource.getrusage(resource.RUSAGE_SELF)
        after = {r: _proc_stat(p) for r, p in pids.items()}
        switches = {r: (_switches(p) - switches0[r]) / n for r, p in pids.items()}
    passed = sum(r.passed for r in results)

    def ms(role: str, field: str) -> float:
        return (after[role][field] - before[role][field]) / tick * 1000 / n

    rows = [("job processes", ms("zygote", "cut"), ms("zygote", "cst"),
             (after["zygote"]["cminflt"] - before["zygote"]["cminflt"]) / n)]
    rows += [(role, ms(role, "ut"), ms(role, "st"), (after[role]["minflt"] - before[role]["minflt"]) / n)
             for role in ("zygote", "worker", "judge")]
    rows.append(("harness", (me1.ru_utime - me0.ru_utime) * 1000 / n, (me1.ru_stime - me0.ru_stime) * 1000 / n,
                 (me1.ru_minflt - me0.ru_minflt) / n))
    switches["harness"] = (me1.ru_nvcsw + me1.ru_nivcsw - me0.ru_nvcsw - me0.ru_nivcsw) / n
    print(f"corecode, {len(jobs)} distinct jobs x {batches} warm batches, one worker ({passed} passed in the last):")
    for name, user, system, faults in rows:
        extra = f"  context switches {switches[name]:5.1f}" if name in switches else ""
        print(f"  {name:14s} user {user:5.2f} ms  system {system:5.2f} ms  minor faults {faults:5.0f}{extra}")
    total = sum(u + s for _, u, s, _ in rows)
    print(f"  {'total':14s} {total:.2f} ms CPU per job")
    programs = [flat_program(p) for _, p in jobs]
    kids0, mine0 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    ok = sum(fork_and_wait(programs) for _ in range(batches))
    kids1, mine1 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    bare = [("children", kids1.ru_utime - kids0.ru_utime, kids1.ru_stime - kids0.ru_stime, kids1.ru_minflt - kids0.ru_minflt),
            ("fork and wait", mine1.ru_utime - mine0.ru_utime, mine1.ru_stime - mine0.ru_stime, mine1.ru_minflt - mine0.ru_minflt)]
    print(f"bare fork-and-wait loop, same programs ({ok} of {n} exited 0):")
    for name, user, system, faults in bare:
        print(f"  {name:14s} user {user * 1000 / n:5.2f} ms  system {system * 1000 / n:5.2f} ms  minor faults {faults / n:5.0f}")
    bare_total = sum(u + s for _, u, s, _ in bare) * 1000 / n
    print(f"  {'total':14s} {bare_total:.2f} ms CPU per program; CPU ratio bare / corecode {bare_total / total:.2f}")


START_PROBE = """import time
def _now():
    with open("/proc/self/stat", "rb") as f:
        faults = int(f.read().rsplit(b")", 1)[1].split()[7])
    return (time.thread_time(), faults)
AT_LOAD = _now()
def at_load():
    return AT_LOAD
def now():
    return _now()
"""


def start_cost(runs: int) -> int:
    """CPU and faults of a function job's process before its program runs (see the module doc)."""
    import ast
    import os
    import statistics

    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.types import CallTest

    def report(name: str, samples: list[list[tuple[float, int]]]) -> None:
        warm = samples[max(1, len(samples) // 10):]  # the first jobs fault in what later ones share
        cells = []
        for i, label in enumerate(("program's first line", "first call", "second call")):
            cpu = statistics.median(s[i][0] for s in warm) * 1e6
            faults = statistics.median(s[i][1] for s in warm)
            cells.append(f"{label} {cpu:5.0f} us {faults:4.0f} faults")
        print(f"  {name:9s} " + ";  ".join(cells))

    ours = []
    with Sandbox(SandboxConfig(workers=1, reference_timing=False)) as sb:
        for _ in range(runs):
            result = sb.execute(START_PROBE, [CallTest("at_load", [], 0), CallTest("now", [], 0), CallTest("now", [], 0)])
            ours.append([tuple(float(x) for x in t.detail.split("got ", 1)[1].strip("[]()").split(","))
                         for t in result.tests])
    bare = []
    for _ in range(runs):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # as benchmarks/_bare_loop.py: exec the program, then call it twice
            ns = {"__name__": "solution"}
            exec(compile(START_PROBE, "solution.py", "exec"), ns)
            os.write(w, repr([ns["at_load"](), ns["now"](), ns["now"]()]).encode())
            os._exit(0)
        os.close(w)
        chunks = []
        while chunk := os.read(r, 4096):
            chunks.append(chunk)
        os.close(r)
        os.waitpid(pid, 0)
        bare.append(ast.literal_eval(b"".join(chunks).decode()))
    print(f"a function job's own process, from its fork (medians of {runs} jobs):")
    report("corecode", ours)
    report("bare", bare)
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
