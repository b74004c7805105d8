"""Whole-program CPU time and peak memory of passing programs, read from outside the program.

The test run (``Sandbox.run``) judges a program; its per-test CPU times leave out module-level code, and
most MBPP/HumanEval tests take a few microseconds, far below what one reading can resolve. The efficiency
terms of the rewards (../shared/METHOD.md sections 3 and 3a) need more, so programs that pass get a
second, *measurement* job (``_measure.py``; docs/sandbox.md, "Measuring efficiency"):

    one execution  = module-level code + setup + every test (function problems),
                     or the program once per stdin/stdout test (stdio problems)
    runs           = fresh exec children forked by the worker, one per run (no state survives a run):
                     baseline (empty program), single (1 execution), looped (L executions), traced
    cpu_time_s     = max(per_loop, single - cache_slack_s), from the job cgroup's CPU between a
                     pre-program handshake and the run's verified report, minimum over rounds, baseline
                     subtracted
    peak_memory    = max(traced peak, external peak - memory_slack_bytes): tracemalloc inside the run
                     (a lower bound), the job cgroup's / the run's RSS high-water mark outside it

    >>> with Sandbox(SandboxConfig(workers=2)) as sb:                     # doctest: +SKIP
    ...     results = run_measured(sb, [(program, problem), ...])        # ExecutionResult.measurement set
    ...     m = measure(sb, program, problem)                            # one Measurement

Every run reports hashes of its results (``_digest``), which are checked here against hashes of the
expected answers (:class:`_Expected`; they never enter the worker). Identical programs (same
:func:`normalized_source`) of one call are measured once and share the numbers, so they get exactly the
same rewards. A measurement that fails (a wrong or missing result in any run, a crash, an exit, a timeout)
is not silently dropped: the program is charged its limits (CPU = the sum of its tests' time limits,
memory = the memory limit) with ``ok = False``.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Union

from corecode.errors import ConfigError, SandboxError
from corecode.sandbox import _digest
from corecode.sandbox.asserts import rewrite_assert
from corecode.sandbox.jobs import build_job
from corecode.types import AssertTest, CallTest, ExecutionResult, Measurement, Problem, StdioTest, TestCase

__all__ = ["MeasureConfig", "measure", "measure_batch", "run_measured", "attach_measurements", "normalized_source",
           "Measurement"]

TestsArg = Union[str, Sequence[TestCase]]


@dataclass(frozen=True)
class MeasureConfig:
    """How hard the measurement pass works (defaults: see docs/sandbox.md, "Measuring efficiency")."""

    target_round_s: float = field(
        default=0.01, metadata={"help": "CPU seconds one round of repeated executions lasts at least"})
    rounds: int = field(default=5, metadata={"help": "rounds; the best (smallest) per-execution time is kept"})
    budget_s: float = field(
        default=0.3, metadata={"help": "no new round once the timed rounds used this much CPU (>= 2 rounds)"})
    max_repetitions: int = field(default=2000, metadata={"help": "executions in one looped child at most"})
    memory: bool = field(default=True, metadata={"help": "also measure the traced-allocation peak"})
    prefault: bool = field(
        default=True, metadata={"help": "copy the worker's writable pages into each child before it is measured "
                                        "(no copy-on-write faults inside the measured part; ~20 ms per child)"})
    cache_slack_s: float = field(
        default=30e-6, metadata={"help": "time = max(per-loop time, single-execution time - this): what a "
                                         "program caching answers between loops can gain at most"})
    memory_slack_bytes: int = field(
        default=64 << 10, metadata={"help": "memory = max(traced peak, external peak - this): what memory "
                                             "hidden from tracemalloc can gain at most"})

    def __post_init__(self) -> None:
        if self.target_round_s <= 0 or self.budget_s <= 0 or self.cache_slack_s < 0 or self.memory_slack_bytes < 0:
            raise ConfigError("MeasureConfig: target_round_s and budget_s must be > 0")
        if self.rounds < 2 or self.max_repetitions < 1:
            raise ConfigError("MeasureConfig: rounds must be >= 2 and max_repetitions >= 1")


def normalized_source(program: str) -> str:
    """The program's AST *with positions* (``ast.dump(include_attributes=True)``); the source if it does
    not parse. Two programs with the same normalized source are the same program: only comments and
    whitespace that move no statement or expression differ (e.g. a comment at the end of a line or of
    the file). Positions are kept because a program can read them (``f_lineno``, tracebacks): two
    sources that differ only in blank lines may behave differently."""
    try:
        return ast.dump(ast.parse(program), include_attributes=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return program


def _cases(problem: Problem, tests: TestsArg) -> list[TestCase]:
    if tests == "all":
        return list(problem.tests)
    if tests == "public":
        return list(problem.public_tests)
    if isinstance(tests, str):
        raise ConfigError(f"tests must be 'all', 'public' or a sequence of test cases, got {tests!r}")
    return list(tests)


def _limits(sandbox: Any, problem: Problem, tests: TestsArg, cases: list[TestCase]) -> list[float]:
    return list(sandbox._time_limits(problem, tests, cases))  # the same limits as the test run


class _Expected:
    """What a measured execution must report (``_digest`` hashes of the expected answers, kept here)."""

    def __init__(self, cases: list[TestCase]):
        self.allowed: dict[tuple[int, int], set[bytes]] = {}  # (item, site) -> hashes accepted there
        self.is_sites: set[tuple[int, int]] = set()  # sites checked with ``is`` (the second hash)
        self.pairs: set[int] = set()  # items whose other sites are ``A == B`` pairs
        self.required: set[tuple[int, int]] = set()
        function = [c for c in cases if isinstance(c, (CallTest, AssertTest))]
        for index, case in enumerate(function or cases):
            if isinstance(case, CallTest):
                self.allowed[(index, 0)] = {_digest.h_json(case.expected)}
                self.required.add((index, 0))
            elif isinstance(case, AssertTest):
                rewritten = rewrite_assert(case.code)
                for site, (mode, expected) in rewritten.sites.items():
                    if mode == "is":
                        self.allowed[(index, site)] = {_digest.h_is(expected)}
                        self.is_sites.add((index, site))
                    else:
                        self.allowed[(index, site)] = {_digest.h_eq(expected)}
                self.pairs.add(index)
                self.required.update((index, site) for site in rewritten.required)
            elif isinstance(case, StdioTest):
                self.allowed[(index, 0)] = {_digest.h_tokens(case.output)}
                self.required.add((index, 0))

    def check(self, report_hex: str) -> str | None:
        """None if the report is that of a correct execution, else why not."""
        try:
            entries = _digest.unpack(bytes.fromhex(report_hex))
        except (ValueError, TypeError):
            entries = None
        if entries is None:
            return "malformed report"
        seen = set()
        pair_ok = _digest.h_pair(True)
        for item, site, value, is_value in entries:
            key = (item, site)
            if site == _digest.ERROR_SITE:
                return f"test {item} raised during the measurement"
            if key in self.allowed:
                got = is_value if key in self.is_sites else value
                if got not in self.allowed[key]:
                    return f"test {item}: a result differs from the verified answer"
            elif item in self.pairs:
                if value != pair_ok:
                    return f"test {item}: a comparison failed during the measurement"
            else:
                return f"test {item}: an unexpected result"
            seen.add(key)
        missing = self.required - seen
        if missing:
            return f"test {min(missing)[0]}: no result during the measurement"
        return None


def _measure_job(program: str, problem: Problem, cases: list[TestCase], limits: list[float], sandbox: Any,
                 config: MeasureConfig, judged_s: float | None = None) -> tuple[dict, float] | str:
    """The public part of a measurement job and its host-side timeout, or why it cannot be measured."""
    if problem.input_file or problem.output_file:
        return "file-I/O problems are not measured"
    if problem.checker is not None:
        return "problems judged by a checker are not measured (no single expected answer to verify)"
    job = build_job(program, cases, setup_code=problem.test_setup_code, time_limits=limits,
                    checker=problem.checker, config=sandbox.config, memory_limit_mb=problem.memory_limit_mb,
                    compiled=sandbox.compiled_tests() if hasattr(sandbox, "compiled_tests") else None)
    public = job.public
    kinds = {g["kind"] for g in public["groups"]}
    if len(kinds) != 1:
        return "a problem mixing function and stdin/stdout tests is not measured"
    if "function" in kinds:
        items, inputs = public["groups"][0]["items"], None
    else:
        items, inputs = [], [g["input"].encode("utf-8", "surrogateescape") for g in public["groups"]]
    # CPU one child may use, and all of them together (each child: fork, isolation, compile, executions).
    cap = 2.0 + config.budget_s * 2 + 4.0 * (public["limits"]["load_cpu"] + sum(limits))
    params_extra = {}
    if judged_s is not None:  # bounded by the judged run: 1 s + 4x that per execution, per child (_measure)
        per_exec = 4.0 * max(0.0, float(judged_s))
        params_extra["per_execution_cap_s"] = per_exec
        traced = 1.0 + per_exec * TRACED_FACTOR  # tracemalloc: up to 16x slower seen (mbpp/123's reference)
        cap = min(cap, 2 * config.budget_s + 4 * (1.0 + per_exec) + traced + 4.0 * config.target_round_s)
    measure_public = {
        "kind": "measure", "program": program, "setup": public["setup"], "items": items, "inputs": inputs,
        "check_names": public["check_names"], "limits": public["limits"], "cpu_cap_s": cap,
        "entry_point": problem.entry_point,
        "params": {"target_round_s": config.target_round_s, "rounds": config.rounds, "budget_s": config.budget_s,
                   "max_repetitions": config.max_repetitions, "memory": config.memory,
                   "prefault": config.prefault, **params_extra},
    }
    cfg = sandbox.config
    timeout = 2 * (cap * cfg.wall_time_factor + cfg.wall_time_extra_s) + 30.0 + cfg.job_timeout_margin_s
    return measure_public, timeout


TRACED_FACTOR = 8  # as _measure.TRACED_FACTOR: the traced run's CPU allowance, in single-run allowances


def _send(sandbox: Any, public: dict, timeout_s: float) -> dict:
    """Run one raw job on an idle worker of ``sandbox`` (its pool of pre-started, isolated workers)."""
    from corecode.sandbox.worker import WorkerDied

    sandbox.start()
    worker = sandbox._idle.get()
    try:
        try:
            return worker.execute(public, {}, timeout_s)
        except WorkerDied:
            try:
                return worker.execute(public, {}, timeout_s)
            except WorkerDied as exc:
                # The pool's rule for test jobs (Sandbox._killer_job): a job that brings its worker down
                # twice is the program's fault and is charged; only a failing trivial canary is ours.
                ok, canary_exc = sandbox._canary_passes(worker)
                if not ok:
                    raise SandboxError(f"sandbox worker failed twice on the same measurement and on a trivial "
                                       f"job: {canary_exc or exc}") from None
                return {"measure_error": "the program brought the sandbox worker down during its measurement "
                                         "(twice)"}
    finally:
        sandbox._idle.put(worker)


def _charged(limits: list[float], problem: Problem, sandbox: Any, why: str, cost_cpu_s: float = 0.0) -> Measurement:
    memory_mb = problem.memory_limit_mb or sandbox.config.memory_limit_mb
    return Measurement(cpu_time_s=float(sum(limits)), peak_memory_bytes=int(memory_mb) << 20, ok=False, detail=why,
                       cost_cpu_s=float(cost_cpu_s))


def measure(sandbox: Any, program: str, problem: Problem, tests: TestsArg = "all",
            config: MeasureConfig = MeasureConfig(), judged_s: float | None = None) -> Measurement | None:
    """Measure one program (it should pass ``tests``); None when the problem kind is not measurable.

    Every measured execution must report the hashes of the expected answers (:class:`_Expected`); any
    miss, crash, exit or timeout charges the program its limits. ``judged_s`` (the wall time of the
    program's judged run, an upper bound of its CPU there for a single-threaded program) bounds the
    measurement's CPU: each measured child may use 1 s + 4x that per execution it runs.
    """
    cases = _cases(problem, tests)
    limits = _limits(sandbox, problem, tests, cases)
    made = _measure_job(program, problem, cases, limits, sandbox, config, judged_s)
    if isinstance(made, str):
        return None
    public, timeout = made
    reply = _send(sandbox, public, timeout)
    if "measure_error" in reply:
        return _charged(limits, problem, sandbox, str(reply["measure_error"]), float(reply.get("cost_cpu_s") or 0.0))
    if "measure" not in reply:
        raise SandboxError(f"the sandbox worker failed on a measurement: {str(reply.get('error'))[-500:]}")
    m = reply["measure"]
    expected = _Expected(cases)
    for report in m["reports"]:
        why = expected.check(report)
        if why is not None:
            return _charged(limits, problem, sandbox, why)
    return _numbers(m, config)


def _numbers(m: dict, config: MeasureConfig) -> Measurement:
    """time = max(per loop, single - slack), memory = max(traced, external - slack) (module docstring)."""
    base = float(m["baseline_s"])
    single = max(0.0, float(m["single_s"]) - base)
    loops = int(m["loops"])
    per_loop = max(0.0, float(m["loop_s"]) - base) / loops if loops > 1 else single
    cpu = max(per_loop, single - config.cache_slack_s)
    external = max(0, int(m["peak_single"]) - int(m["peak_baseline"]))
    traced = int(m["traced_peak"])
    peak = max(traced, external - config.memory_slack_bytes) if traced >= 0 else external
    return Measurement(cpu_time_s=cpu, peak_memory_bytes=max(0, peak), repetitions=loops, rounds=int(m["rounds"]),
                       cost_cpu_s=float(m["child_cpu_s"]))


def measure_batch(sandbox: Any, jobs: Sequence[tuple[str, Problem]], tests: TestsArg = "all",
                  config: MeasureConfig = MeasureConfig(),
                  cache: dict | None = None, judged_s: Sequence[float | None] | None = None) -> list[Measurement | None]:
    """Measure many programs on all workers; identical programs of one problem are measured once.

    ``judged_s`` (optional, one per job): the wall time of each program's judged run, which bounds its
    measurement's CPU (:func:`measure`); identical programs use the largest.

    ``cache`` (optional, a dict the caller keeps, e.g. for one training step) maps (problem, normalized
    source) to a finished measurement; a program found there is not measured again.
    """
    cache = {} if cache is None else cache
    tests_key = tests if isinstance(tests, str) else repr(tests)
    keys = [(problem.source, problem.id, tests_key, normalized_source(program)) for program, problem in jobs]
    todo: dict[tuple, tuple[str, Problem]] = {}
    bound: dict[tuple, float | None] = {}
    for i, (key, job) in enumerate(zip(keys, jobs)):
        j = None if judged_s is None else judged_s[i]
        if key not in cache and key not in todo:
            todo[key] = job
            bound[key] = j
        elif key in todo:
            bound[key] = None if bound[key] is None or j is None else max(bound[key], j)
    lock = threading.Lock()

    def one(key: tuple) -> None:
        program, problem = todo[key]
        result = measure(sandbox, program, problem, tests, config, bound[key])
        with lock:
            cache[key] = result

    if todo:
        sandbox.start()
        with ThreadPoolExecutor(max_workers=max(1, sandbox.config.n_workers)) as pool:
            for future in [pool.submit(one, key) for key in todo]:
                future.result()
    out: list[Measurement | None] = []
    first_use: set[tuple] = set()
    for key in keys:
        found = cache[key]
        if found is not None and (key in first_use or key not in todo):
            found = replace(found, cached=True)
        first_use.add(key)
        out.append(found)
    return out


def run_measured(sandbox: Any, jobs: Sequence[tuple[str, Problem]], tests: TestsArg = "all",
                 config: MeasureConfig = MeasureConfig(), cache: dict | None = None,
                 on_result: Callable[[int, ExecutionResult], None] | None = None) -> list[ExecutionResult]:
    """``sandbox.run_batch`` and then the measurement pass for the programs that passed every test.

    Results come back in input order with ``measurement`` set on passing programs, so their
    ``cpu_time_s`` / ``peak_memory_bytes`` are the whole-program numbers.
    """
    results = sandbox.run_batch(list(jobs), tests=tests, on_result=on_result)
    return attach_measurements(sandbox, jobs, results, tests, config, cache)


def attach_measurements(sandbox: Any, jobs: Sequence[tuple[str, Problem]], results: Sequence[ExecutionResult | None],
                        tests: TestsArg = "all", config: MeasureConfig = MeasureConfig(),
                        cache: dict | None = None) -> list[Any]:
    """Measure the jobs whose result passed; return the results with their measurement attached."""
    passing = [i for i, r in enumerate(results) if r is not None and r.passed]
    measured = measure_batch(sandbox, [jobs[i] for i in passing], tests, config, cache,
                             judged_s=[float(results[i].wall_time_s) for i in passing])
    out = list(results)
    for i, m in zip(passing, measured):
        if m is not None:
            out[i] = replace(results[i], measurement=m)
    return out
