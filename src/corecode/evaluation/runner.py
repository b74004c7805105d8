"""One evaluation run, as named phases: prepare, load, generate, score, baseline, summarize.

Run directory layout (``EvalConfig.run_dir``)::

    config.yaml     the resolved config (a restart must use the same generation settings)
    samples.jsonl   one line per (task_id, sample_index): program, plan, trace of every model call
    results.jsonl   one line per sample: the sandbox's verdict on the problem's hidden tests
    summary.json    every metric (corecode.evaluation.summary), per-problem counts included
    summary.md      the same as a Markdown table

Resuming: samples and results are appended one record at a time with fsync (``store.JsonlStore``); a
restarted run skips every (task_id, sample_index) already stored, so a killed run loses at most the samples
in flight and never generates a finished one twice. Sample ``i`` is drawn with seed ``seed + i`` (and a
per-call offset), so a resumed run asks the model exactly what the uninterrupted run would have asked.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError
from corecode.evaluation.config import EvalConfig
from corecode.evaluation.models import load_models, sample_backends, sampling_of
from corecode.evaluation.store import JsonlStore
from corecode.evaluation.summary import summarize, write_summary
from corecode.types import Problem

__all__ = ["run_eval", "prepare_run_dir", "load_problems", "generate_samples", "score_samples", "RunFiles"]


class RunFiles:
    """Paths of one run directory."""

    def __init__(self, run_dir: Path):
        self.dir = run_dir
        self.config = run_dir / "config.yaml"
        self.samples = run_dir / "samples.jsonl"
        self.results = run_dir / "results.jsonl"
        self.summary_json = run_dir / "summary.json"
        self.summary_md = run_dir / "summary.md"


def run_eval(config: EvalConfig, *, progress: bool = True, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Generate, score and summarize one run (resuming whatever the run directory already holds)."""
    from corecode.evaluation.baseline import auxiliary_roles, resolve_baseline

    auxiliary = auxiliary_roles(config.pipeline)  # an unknown pipeline fails here, before any file is written
    problems = load_problems(config)
    files = prepare_run_dir(config)
    samples = generate_samples(config, problems, files, progress=progress)
    results = score_samples(config, problems, samples, files, progress=progress)
    baseline = resolve_baseline(config, problems, auxiliary, files.dir, progress=progress, log=log)
    summary = summarize(config, problems, samples, results, auxiliary, baseline)
    write_summary(files, summary)
    return summary


# ---------------------------------------------------------------------------------------------- prepare
def prepare_run_dir(config: EvalConfig) -> RunFiles:
    """Create the run directory and write config.yaml; refuse to resume samples made with other settings."""
    import yaml

    files = RunFiles(config.run_dir)
    files.dir.mkdir(parents=True, exist_ok=True)
    has_samples = files.samples.exists() and b"\n" in files.samples.read_bytes()[:1_000_000]
    if files.config.exists() and has_samples:  # with no sample yet there is nothing to mix up
        try:
            old = EvalConfig.from_yaml(files.config)
        except ConfigError as exc:
            raise ConfigError(f"{files.config} is not a corecode eval config ({exc}); use another --out") from exc
        if old.generation_key() != config.generation_key():
            changed = sorted(k for k, v in config.generation_key().items() if old.generation_key()[k] != v)
            raise ConfigError(
                f"{files.dir} holds a run with different settings ({', '.join(changed)}); resuming it would mix "
                "samples of two experiments. Use another --out, or the same settings to resume."
            )
    files.config.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    return files


def load_problems(config: EvalConfig) -> list[Problem]:
    from corecode.benchmarks import load_benchmark

    problems = load_benchmark(config.benchmark, config.split, path=config.data_path, limit=config.limit)
    if not problems:
        raise ConfigError(f"benchmark {config.benchmark!r} (split {config.split!r}) has no problems")
    return list(problems)


# ---------------------------------------------------------------------------------------------- generate
def sample_seed(base: int, task_id: str, sample_index: int) -> int:
    """A seed per (problem, sample) that does not depend on the order samples are generated in."""
    digest = hashlib.sha256(f"{base}:{task_id}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def generate_samples(
    config: EvalConfig, problems: Sequence[Problem], files: RunFiles, *, progress: bool = True
) -> JsonlStore:
    """Generate every missing (problem, sample index) with the pipeline; returns the sample store."""
    store = JsonlStore.open(files.samples)
    todo = [(p, i) for p in problems for i in range(config.n) if (p.id, i) not in store]
    if not todo:
        return store  # nothing to generate: no model is loaded (scoring a finished run is cheap)
    from corecode.pipelines import PIPELINES, build_pipeline
    from corecode.registry import resolve
    from corecode.sandbox import Sandbox, SandboxConfig

    total = len(problems) * config.n
    needs_sandbox = resolve(PIPELINES, config.pipeline, "pipeline").needs_sandbox
    sampling = sampling_of(config)
    backends = load_models(config)
    sandbox, bar = None, None
    try:
        # feedback pipelines (reflexion, mapcoder) run candidate programs on the *public* tests
        sandbox = Sandbox(SandboxConfig(workers=config.workers)) if needs_sandbox else None
        bar = _bar(progress, total=total, initial=total - len(todo), desc=f"generate {config.pipeline}")

        def solve_one(problem: Problem, index: int) -> None:
            seed = sample_seed(config.seed, problem.id, index)
            models = sample_backends(backends, seed)
            pipeline = build_pipeline(config.pipeline, models, sampling=sampling, sandbox=sandbox)
            start = time.perf_counter()
            solution = pipeline.solve(problem)
            store.append(_sample_record(problem, index, seed, solution, time.perf_counter() - start))
            bar.update(1)

        _run_all(solve_one, todo, config.concurrency)
    finally:
        if bar is not None:
            bar.close()
        if sandbox is not None:
            sandbox.close()
        for backend in {id(b): b for b in backends.values()}.values():
            backend.close()
    return store


def _run_all(fn: Callable[[Problem, int], None], todo: list[tuple[Problem, int]], concurrency: int) -> None:
    """Call fn on every item; the first exception stops the run (finished samples are already saved)."""
    if concurrency == 1:
        for problem, index in todo:
            fn(problem, index)
        return
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(fn, p, i) for p, i in todo]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            if future.exception() is not None:
                for other in futures:
                    other.cancel()
                raise future.exception()  # type: ignore[misc]


def _sample_record(problem: Problem, index: int, seed: int, solution: Any, time_s: float) -> dict[str, Any]:
    return {
        "task_id": problem.id,
        "sample_index": index,
        "seed": seed,
        "program": solution.program,
        "plan": solution.plan,
        "failure": solution.failure,
        "time_s": round(time_s, 3),
        "trace": [call.to_dict() for call in solution.trace],
    }


# ---------------------------------------------------------------------------------------------- score
def score_samples(
    config: EvalConfig, problems: Sequence[Problem], samples: JsonlStore, files: RunFiles, *, progress: bool = True
) -> JsonlStore:
    """Run every unscored sample against its problem's hidden tests (``Problem.tests``) in the sandbox."""
    from corecode.sandbox import Sandbox, SandboxConfig, attach_measurements

    results = JsonlStore.open(files.results)
    by_id = {p.id: p for p in problems}
    todo = [s for s in samples if s["task_id"] in by_id and (s["task_id"], s["sample_index"]) not in results]
    if not todo:
        return results
    todo.sort(key=lambda s: (s["task_id"], s["sample_index"]))
    bar = _bar(progress, total=len(todo), initial=0, desc="score")
    chunk = max(8, 4 * (config.workers or 2))
    try:
        with Sandbox(SandboxConfig(workers=config.workers)) as sandbox:
            for start in range(0, len(todo), chunk):
                part = todo[start : start + chunk]
                jobs = [(s["program"], by_id[s["task_id"]]) for s in part]
                verdicts = sandbox.run_batch(jobs, tests="all")
                # passing samples: whole-program CPU time and memory, as the rewards measure them
                verdicts = attach_measurements(sandbox, jobs, verdicts, tests="all")
                for sample, verdict in zip(part, verdicts):
                    results.append(_result_record(sample, verdict))
                bar.update(len(part))
    finally:
        bar.close()
    return results


def _result_record(sample: dict[str, Any], verdict: Any) -> dict[str, Any]:
    first_failure = next((t for t in verdict.tests if not t.passed), None)
    return {
        "task_id": sample["task_id"],
        "sample_index": sample["sample_index"],
        "exception": first_failure.exception if first_failure else None,
        **verdict.to_dict(),
    }


def _bar(enabled: bool, total: int, initial: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="sample", disable=not enabled, dynamic_ncols=True)
