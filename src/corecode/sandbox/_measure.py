"""The measurement pass: CPU time and peak memory of a whole program, above the clock's resolution.

Loaded by the worker (zygote) from this directory, like ``_run``; standard library only. A measurement
job is sent only for a program that already passed its tests (``corecode.sandbox.measure``); it is run
inside the same isolation as a test job (a fresh exec child forked from the warm worker, rlimits, no
network, read-only filesystem, the worker's sweep afterwards).

One *execution* of the program is everything it does for its tests (../shared/METHOD.md section 3a):

- function problems: the module-level code in a fresh namespace, the problem's setup code, then every
  test (calls with fresh copies of their arguments, rewritten asserts) in that namespace;
- stdin/stdout problems: the program run as ``__main__`` once per test, on that test's input.

The child runs one cold execution (discarded: first-time imports and caches), sizes N so that N
executions take at least ``target_round_s`` of CPU, and keeps the best (smallest) per-execution CPU time
over ``rounds`` rounds of N executions (``timeit``'s rule: a busy machine only ever adds time). Only the
executions are timed; preparing argument copies, rewinding stdin and comparing outputs happen between
them, off the clock. CPU time is ``getrusage(RUSAGE_SELF)`` (all threads, microsecond resolution).

Peak memory is the peak of Python's traced allocations (``tracemalloc``) during one more execution:
deterministic (the same program allocates the same bytes every time, whatever the machine's load), counts
module-level data and every test's data, and is not the kernel's RSS high-water mark, which a program can
reset (``/proc/self/clear_refs``) and which moves in whole pages. Allocations made outside Python's
allocators (some C extensions) are not counted.

Between executions, names a program added to ``builtins``, to the modules it found loaded, or to
``sys.modules`` are removed again, so an execution cannot hand its results to the next one through them;
``os._exit`` raises ``SystemExit`` instead of ending the child. Every timed execution must produce the
same return values (function problems) or the same output bytes (stdio problems) as the first one; a
program that does not is reported as inconsistent and gets no efficiency credit.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import marshal
import math
import os
import pickle
import resource
import shutil
import struct
import sys
import time
import traceback

import _run

FRAME = "measured"
RESULT_FD = 3


# ------------------------------------------------------------------------------------- in the child
# Small helpers of our own (not ``_jobchild``'s), bound before the program runs.
def _emitter(nonce: bytes):
    write, dumps, pack = os.write, marshal.dumps, struct.pack

    def emit(payload) -> None:
        data = dumps(payload)
        frame = nonce + pack("<I", len(data)) + data
        while frame:
            frame = frame[write(RESULT_FD, frame) :]

    return emit


def _std_streams() -> None:
    """Fresh text streams over fds 0-2 (the inherited objects belong to the worker)."""
    sys.stdin = sys.__stdin__ = io.open(0, "r", encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = sys.__stdout__ = io.open(1, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = sys.__stderr__ = io.open(2, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.argv = ["solution.py"]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have broken its streams
            pass


def _call(ns: dict, fn_name: str, args, _callable=callable, _getattr=getattr):
    fn = ns.get(fn_name)
    if not _callable(fn) and _callable(ns.get("Solution")):  # LeetCode style: a method of Solution
        fn = _getattr(ns["Solution"](), fn_name)
    if not _callable(fn):
        raise NameError(f"the program defines no function {fn_name!r}")
    return fn(*args)


def _encoder():
    """Bytes that stand for a returned value, to compare repetitions: marshal for built-in values, else
    the value's type (never the program's ``__repr__``, which may print an address)."""
    dumps, _type = marshal.dumps, type

    def encode(value) -> bytes:
        try:
            return dumps(value)
        except BaseException:  # noqa: BLE001 - not a plain value (or a hostile one)
            return b"<" + _type(value).__qualname__.encode("utf-8", "replace") + b">"

    return encode


def _execution(code, setup, items, inputs: list[bytes] | None, names: tuple, encode):
    """Return ``run(keep, memory) -> (cpu seconds, digest, peak bytes)``: one whole execution of the program.

    ``keep``: digest the results (return values, or stdout bytes and exit). ``memory``: (traced,
    reset_peak) of tracemalloc, or None; the peak is taken from just before the program's first
    instruction (fresh namespace, argument copies and std streams already made).
    """
    getrusage, who, loads, dumps = resource.getrusage, resource.RUSAGE_SELF, marshal.loads, marshal.dumps
    _type, _exec, call, std_streams, flush = type, exec, _call, _std_streams, _flush
    builtins_module = builtins
    seek, truncate, pwrite, pread, fstat = os.lseek, os.ftruncate, os.pwrite, os.pread, os.fstat
    sha, check_name, pair_name = hashlib.sha1, names[0], names[1]

    def cpu() -> float:
        usage = getrusage(who)
        return usage.ru_utime + usage.ru_stime

    def run_function(keep: bool, memory=None):
        values: list = []
        record = values.append if keep else (lambda value: None)

        def check_value(site, value):
            record(value)

        def check_pair(site, left, right):
            record(left)
            record(right)

        args = [loads(item[2]) if item[0] == "call" else None for item in items]  # fresh copies, off the clock
        ns = {"__name__": "solution", "__builtins__": builtins_module}
        error, peak = None, 0
        if memory is not None:
            base = memory[0]()[0]
            memory[1]()
        c0 = cpu()
        try:
            _exec(code, ns)
            if setup is not None:
                _exec(setup, ns)
            for item, arg in zip(items, args):
                if item[0] == "call":
                    record(call(ns, item[1], arg))
                else:
                    ns[check_name], ns[pair_name] = check_value, check_pair
                    _exec(item[1], ns)
        except BaseException as exc:  # noqa: BLE001 - a failure is a different result, not a crash
            error = _type(exc).__name__
        c1 = cpu()
        if memory is not None:
            peak = memory[0]()[1] - base
        if not keep:
            return c1 - c0, b"", peak
        digest = sha()
        for value in values:
            try:
                digest.update(encode(value))
            except BaseException as exc:  # noqa: BLE001
                digest.update(_type(exc).__name__.encode())
        digest.update(repr(error).encode())
        return c1 - c0, digest.digest(), peak

    def run_stdio(keep: bool, memory=None):
        digest = sha()
        total, peak = 0.0, 0
        for data in inputs:
            truncate(0, 0)
            pwrite(0, data, 0)
            seek(0, 0, 0)
            truncate(1, 0)
            seek(1, 0, 0)
            std_streams()
            ns = {"__name__": "__main__", "__builtins__": builtins_module}
            error = None
            if memory is not None:
                base = memory[0]()[0]
                memory[1]()
            c0 = cpu()
            try:
                _exec(code, ns)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    error = "SystemExit"
            except BaseException as exc:  # noqa: BLE001
                error = _type(exc).__name__
            flush()
            total += cpu() - c0
            if memory is not None:
                peak = max(peak, memory[0]()[1] - base)
            del ns
            if keep:
                size = fstat(1).st_size
                digest.update(pread(1, size, 0) if size else b"")
                digest.update(repr(error).encode())
        return total, digest.digest() if keep else b"", peak

    return run_stdio if inputs is not None else run_function


def _state_guard():
    """Snapshot builtins, sys.modules and module namespaces; ``restore()`` removes names added since.

    The common case (nothing changed) costs a few microseconds: one dict comparison for builtins, one
    length for sys.modules, and the summed lengths of the module namespaces.
    """
    builtins_dict = builtins.__dict__
    pristine = dict(builtins_dict)
    modules = sys.modules
    snapshot: dict = {}
    namespaces: list = []
    values: list = []
    total = [0]
    _len, _sum, _map = len, sum, map

    def take() -> None:
        snapshot.clear()
        snapshot.update({name: (m, set(getattr(m, "__dict__", None) or ())) for name, m in list(modules.items())})
        namespaces[:] = [ns for ns in (getattr(m, "__dict__", None) for m, _ in snapshot.values())
                         if type(ns) is dict]
        total[0] = _sum(_map(_len, namespaces))
        values[:] = list(modules.values())

    def restore() -> None:
        if builtins_dict != pristine:
            for key in [k for k in builtins_dict if k not in pristine]:
                del builtins_dict[key]
            builtins_dict.update(pristine)
        if _len(modules) != _len(snapshot):
            for name in [n for n in modules if n not in snapshot]:
                del modules[name]
        if _sum(_map(_len, namespaces)) != total[0]:
            for name, (module, keys) in snapshot.items():
                namespace = getattr(module, "__dict__", None)
                if type(namespace) is dict and _len(namespace) != _len(keys):
                    for key in [k for k in namespace if k not in keys]:
                        del namespace[key]
            total[0] = _sum(_map(_len, namespaces))
        if list(modules.values()) != values:  # a module replaced (compared by identity first)
            for name, (module, _) in snapshot.items():
                if modules.get(name) is not module:
                    modules[name] = module

    take()
    return take, restore


def _neutralize_tracemalloc():
    """Bind tracemalloc's real functions, then make the module's own start/stop/reset functions do nothing.

    Done before the program's first instruction: ``import tracemalloc`` in the program then copies the
    no-ops (``from _tracemalloc import *``), so it cannot lower the peak it is measured by.
    """
    import _tracemalloc

    real = (_tracemalloc.start, _tracemalloc.stop, _tracemalloc.is_tracing, _tracemalloc.get_traced_memory,
            _tracemalloc.reset_peak)
    modules = [_tracemalloc] + ([sys.modules["tracemalloc"]] if "tracemalloc" in sys.modules else [])
    for module in modules:
        for name in ("stop", "reset_peak", "clear_traces", "start"):
            if hasattr(module, name):
                setattr(module, name, lambda *a, **k: None)
    return real


def measure_child(payload: tuple, nonce: bytes) -> None:
    """In the exec child (isolated, limited): measure the program and emit one frame, then exit."""
    emit = _emitter(nonce)
    program, setup, items, inputs, names, params = payload
    try:
        code = compile(program, "solution.py", "exec")
        setup_code = compile(setup, "test_setup.py", "exec") if setup.strip() else None
        compiled = [("assert", compile(i[1], "test.py", "exec")) if i[0] == "assert" else i for i in items]
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        emit(("error", f"does not compile: {type(exc).__name__}"))
        os._exit(0)
    run = _execution(code, setup_code, compiled, inputs, tuple(names), _encoder())
    tracer = _neutralize_tracemalloc() if params["memory"] else None
    take, restore = _state_guard()
    real_exit = os._exit

    def no_exit(status=0):
        raise SystemExit(status)

    exit_now = real_exit
    os._exit = no_exit
    target, rounds, budget = float(params["target_round_s"]), int(params["rounds"]), float(params["budget_s"])
    max_reps = int(params["max_repetitions"])
    getrusage, who = resource.getrusage, resource.RUSAGE_SELF
    truncate, seek = os.ftruncate, os.lseek

    count = [0]

    def between() -> None:
        """Off the clock: undo names the execution added; every 64 executions, empty stdout/stderr."""
        restore()
        count[0] += 1
        if count[0] % 64 == 0:
            _flush()
            for fd in (1, 2):
                truncate(fd, 0)
                seek(fd, 0, 0)

    _std_streams()
    try:
        cold, first, _ = run(True)  # warm-up: first-time imports, caches; also the reference result
        between()
        take()  # what the warm-up legitimately loaded (lazy imports) stays from here on
        n = 1 if cold >= target else max(1, min(max_reps, math.ceil(target / max(cold, 1e-6))))
        start = getrusage(who)
        spent0 = start.ru_utime + start.ru_stime
        consistent = [True]

        def one_round(n: int) -> float:
            total = 0.0
            for _ in range(n):
                seconds, digest, _ = run(True)
                between()
                total += seconds
                if digest != first:
                    consistent[0] = False
            return total

        if n == 1:  # a long program: its cold execution is already one round (imports are preloaded)
            best, worst, done = cold, cold, 1
        else:  # the cold execution is slower than warm ones: grow N until a round lasts the target
            total = one_round(n)
            while total < target and n < max_reps:
                n = min(max_reps, max(2 * n, math.ceil(n * 1.2 * target / max(total, 1e-9))))
                total = one_round(n)
            best, worst, done = total / n, total / n, 1
        while done < rounds:
            total = one_round(n)
            done += 1
            best, worst = min(best, total / n), max(worst, total / n)
            usage = getrusage(who)
            if done >= 2 and usage.ru_utime + usage.ru_stime - spent0 > budget:
                break
        consistent = consistent[0]
        traced_peak = -1
        if params["memory"]:
            start_t, stop_t, is_tracing, traced, reset_peak = tracer
            start_t(1)
            _, _, peak = run(False, (traced, reset_peak))
            tracing = is_tracing()
            stop_t()
            between()
            traced_peak = max(0, peak) if tracing else -1
            if not tracing:
                consistent = False
    except BaseException as exc:  # noqa: BLE001 - our harness failed inside the child: say so
        _flush()
        emit(("error", f"measurement failed: {type(exc).__name__}: {exc}"[:300]))
        exit_now(0)
    _flush()
    emit((FRAME, float(best), int(n), int(done), float(worst), int(traced_peak), bool(consistent), float(cold)))
    exit_now(0)


# ------------------------------------------------------------------------------------ in the worker
def _fork_measure(ctx: dict, payload: tuple, cpu_cap: float) -> dict:
    """Fork one exec child for the measurement, watch it like a test child, reap and sweep."""
    limits = ctx["limits"]
    nonce = os.urandom(16)
    result_r, result_w = os.pipe2(os.O_CLOEXEC)
    out_fd, err_fd, in_fd = _run._memfd("stdout"), _run._memfd("stderr"), _run._memfd("stdin")
    base = _run._rss()
    exit_now = os._exit
    meter = ctx.get("meter")  # the job's cgroups, when the worker has them: CPU of the whole process tree
    if meter is not None:
        meter.start()
        c0 = meter.cpu()
    pid = os.fork()
    if pid == 0:
        try:
            _run._become_job(in_fd, out_fd, err_fd, result_w, ctx, cpu_cap)
            measure_child(payload, nonce)
        except BaseException:  # noqa: BLE001
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)
    os.close(result_w)
    if meter is not None:
        meter.watch(pid)
    frames = _run.Frames(nonce, limits["output"])
    try:
        killed = _run._watch(pid, result_r, out_fd, frames, limits, [cpu_cap], meter)
    finally:
        _, status, usage = os.wait4(pid, 0)
    child_cpu = usage.ru_utime + usage.ru_stime
    if meter is not None:
        child_cpu = max(child_cpu, meter.cpu() - c0)
    ctx["sweep"]()
    stderr = _run._read_capped(err_fd, 2000)
    for fd in (result_r, out_fd, err_fd, in_fd):
        os.close(fd)
    return {"frames": frames.items, "corrupt": frames.corrupt, "killed": killed,
            "exit": os.waitstatus_to_exitcode(status), "child_cpu": child_cpu,
            "rss_peak": max(0, usage.ru_maxrss * 1024 - base), "stderr": stderr.decode("utf-8", "replace")}


def _reply(report: dict) -> dict:
    found = [f for f in report["frames"] if f[0] in (FRAME, "error")]
    if report["corrupt"]:
        return {"measure_error": "the program wrote to the harness's result channel"}
    if report["killed"]:
        return {"measure_error": f"killed: {report['killed']} (limit of the measurement)"}
    if not found:
        return {"measure_error": f"the measurement child ended without a result (exit {report['exit']})"
                                 + (f": {report['stderr'][-300:]}" if report["stderr"] else "")}
    frame = found[-1]
    if frame[0] == "error" or len(frame) != 8:
        return {"measure_error": str(frame[1]) if len(frame) > 1 else "malformed measurement frame"}
    _, best, n, rounds, worst, peak, consistent, cold = frame
    return {"measure": {"cpu_time_s": best, "repetitions": n, "rounds": rounds, "worst_round_s": worst,
                        "peak_alloc_bytes": peak, "consistent": consistent, "cold_cpu_time_s": cold,
                        "child_cpu_s": report["child_cpu"], "peak_rss_bytes": report["rss_peak"]}}


def serve(worker, public: dict, recv) -> dict:
    """Answer one measurement job (the zygote's main loop calls this for ``kind == "measure"``)."""
    pickle.loads(recv(worker.ctl_in))  # the (empty) secret part: keeps the protocol in step
    jobdir = os.path.join(worker.scratch, "job")
    worker.jobdir = jobdir
    t0 = time.monotonic()
    try:
        os.mkdir(jobdir, 0o700)
        if worker.info["uid_drop"]:
            os.chown(jobdir, worker.setup["job_uid"], worker.setup["job_uid"])
        ctx = worker.job_context(jobdir, public["limits"])
        payload = (public["program"], public["setup"], public["items"], public["inputs"],
                   tuple(public["check_names"]), public["params"])
        reply = _reply(_fork_measure(ctx, payload, public["cpu_cap_s"]))
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)
    reply["wall"] = time.monotonic() - t0
    return reply


__all__ = ["serve", "measure_child"]
