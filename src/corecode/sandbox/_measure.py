"""The measurement pass: CPU time and peak memory of a whole program, read from outside the program.

Loaded by the worker (zygote) from this directory, like ``_run``; standard library only. A measurement
job is sent only for a program that already passed its tests (``corecode.sandbox.measure``).

One *execution* of the program is everything it does for its tests (../shared/METHOD.md section 3a):

- function problems: the module-level code in a fresh namespace, the problem's setup code, then every
  test (calls with fresh copies of their arguments, rewritten asserts) in that namespace;
- stdin/stdout problems: the program run as ``__main__`` once per test, on that test's input.

Nothing the score relies on lives in, or is reachable from, the program's interpreter:

- **Every repetition is a fresh process.** The worker (which never runs program code) forks a new exec
  child for every measured run, with the same isolation as a test child (``_run._become_job``: rlimits,
  the job's cgroups, its own IPC namespace where available), and after it the worker's sweep kills
  everything the child left behind and empties the job dir and the scratch tmpfs. No state of one run
  (module attributes, files, environment, helper processes) reaches the next one.
- **The worker reads the meters.** A child compiles the program, warms up with an empty program, copies
  its inherited pages, says ``begin`` and waits: no program code has run in it yet. The worker reads the
  job cgroup's ``cpuacct.usage``, resets the cgroup's and the child's memory high-water marks, and lets it
  go. When the child's report arrives (it cannot be sent before the answers exist), the worker SIGSTOPs
  every process of the job and reads again: CPU of every process and thread the child started, forked
  helpers included; peak = the larger of the cgroup's high-water mark (the job cannot reset it) and the
  child's (and its waited-for helpers') RSS high-water mark. Without the job cgroups (no root) the worker
  falls back to the child's own scheduler time and RSS high-water mark (helpers escape: documented).
- **Children report only hashes of their results** (``_digest``), never a number the score uses (the one
  exception, the traced peak, only ever *raises* the memory figure, see below). The harness accepts a
  run only if its hashes are those of the expected answers, which never enter the worker.

Kinds of children (``loops``): 0 = compile only, never runs program code (the baseline: fork, isolation,
compile, exit); 1 = one execution; L = L executions in one process (resolution for sub-millisecond
programs); traced = one execution under tracemalloc. Rounds interleave 0, 1 and L; per kind the minimum
over rounds is kept (a busy machine only adds CPU). The harness then computes
``time = max(per_loop, single - slack)`` with ``single = min(1) - min(0)`` and ``per_loop =
(min(L) - min(0)) / L``: a program that caches answers between the loops of one process is charged what a
single execution costs (up to ``slack``).
"""

from __future__ import annotations

import builtins
import gc
import io
import marshal
import os
import pickle
import resource
import select
import signal
import sys
import time
import traceback

import _digest
import _meter
import _run

FRAME = "report"
ACK_FD = 4


# ------------------------------------------------------------------------------------- in the child
_emitter = _run.jc._emitter  # the same result-frame writer as a test child (fd jc.RESULT_FD)


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


def _test_globals(ns: dict, builtins_dict: dict, entry: str | None) -> dict:
    """Globals of the tests, as in the judge: the program's names, except those that shadow a built-in
    (a program's own ``set`` does not compute a test's ``set((4, 5))`` in the judge, so not here either);
    the entry point is always the program's. A plain dict (the interpreter's fast path for globals);
    taken once per execution, after the module code and the setup."""
    return {k: v for k, v in ns.items() if k not in builtins_dict or k == entry or k.startswith("__")}


def _execution(code, setup, items, inputs, names: tuple, entry: str | None = None):
    """``run(entries) -> None``: one whole execution; with a set ``entries``, hash what it produced into it
    (item, site, hash, is-hash); with None, nothing is recorded (the repeated loops of one child)."""
    loads, _type, _exec, call, std_streams, flush = marshal.loads, type, exec, _call, _std_streams, _flush
    test_globals = _test_globals
    builtins_module = builtins
    seek, truncate, pwrite, pread, fstat = os.lseek, os.ftruncate, os.pwrite, os.pread, os.fstat
    h_eq, h_is, h_json, h_pair, h_tokens, h_error = (_digest.h_eq, _digest.h_is, _digest.h_json, _digest.h_pair,
                                                     _digest.h_tokens, _digest.h_error)
    canonical, none16, error_site = _digest.canonical, _digest.NONE16, _digest.ERROR_SITE
    check_name, pair_name = names[0], names[1]

    def run_function(entries) -> None:
        current = [0]
        if entries is None:
            def check_value(site, value):
                pass

            def check_pair(site, left, right):
                pass
        else:
            def check_value(site, value):
                entries.add((current[0], site, h_eq(value), h_is(value)))

            def check_pair(site, left, right):
                try:
                    equal = canonical(left) == canonical(right)
                except BaseException:  # noqa: BLE001 - not plain data
                    equal = False
                entries.add((current[0], site, h_pair(equal), none16))

        args = [loads(item[2]) if item[0] == "call" else None for item in items]  # fresh copies
        ns = {"__name__": "solution", "__builtins__": builtins_module}
        index, base = -1, None
        try:
            _exec(code, ns)
            if setup is not None:
                _exec(setup, ns)
            for index, (item, arg) in enumerate(zip(items, args)):
                current[0] = index
                if item[0] == "call":
                    value = call(ns, item[1], arg)
                    if entries is not None:
                        entries.add((index, 0, h_json(value), none16))
                else:
                    if base is None:
                        base = test_globals(ns, builtins_module.__dict__, entry)
                        base[check_name], base[pair_name] = check_value, check_pair
                    _exec(item[1], base.copy())
        except BaseException as exc:  # noqa: BLE001 - a failure is a wrong result, not a crash
            if entries is not None:
                entries.add((max(index, 0), error_site, h_error(_type(exc).__name__), none16))

    def run_stdio(entries) -> None:
        for index, data in enumerate(inputs):
            truncate(0, 0)
            pwrite(0, data, 0)
            seek(0, 0, 0)
            truncate(1, 0)
            seek(1, 0, 0)
            std_streams()
            ns = {"__name__": "__main__", "__builtins__": builtins_module}
            error = None
            try:
                _exec(code, ns)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    error = "SystemExit"
            except BaseException as exc:  # noqa: BLE001
                error = _type(exc).__name__
            flush()
            del ns
            if entries is not None:
                size = fstat(1).st_size
                out = pread(1, size, 0) if size else b""
                entries.add((index, 0, h_tokens(out.decode("utf-8", "replace")), none16))
                if error is not None:
                    entries.add((index, error_site, h_error(error), none16))

    return run_stdio if inputs is not None else run_function


def _stub(compiled, inputs, names):
    """One execution of an empty program through the same path (test code runs and fails at once)."""
    stub = compile("", "solution.py", "exec")
    return _execution(stub, None, compiled, inputs, names)


def _warm_up(compiled, inputs, names, prefault: bool) -> None:
    """Before the measured part, with no program code: executions of an empty program through the same
    path (first-time costs of the harness: hashing, the test code's first run), ``gc.freeze`` (a collection
    during the program then does not touch, and copy, every page inherited from the worker), and
    optionally every inherited writable page copied now. The same in every child, the baseline's included."""
    run = _stub(compiled, inputs, names)
    for _ in range(2):
        run(set())
    for h in (_digest.h_eq, _digest.h_is, _digest.h_json, _digest.h_pair, _digest.h_tokens, _digest.h_error):
        h("0")
    _flush()
    if inputs is not None:
        os.ftruncate(1, 0)
        os.lseek(1, 0, 0)
    gc.collect()
    gc.freeze()
    if prefault:
        _prefault()


def _prefault() -> None:
    import ctypes
    madvise = ctypes.CDLL(None).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps", "rb") as f:
        lines = f.read().split(b"\n")
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[1] == b"rw-p":
            a, b = (int(x, 16) for x in parts[0].split(b"-"))
            madvise(a, b - a, 23)


def _start_tracing():
    """Start tracemalloc; make the modules' start/stop/reset functions no-ops (a speed bump only: the
    program's interpreter can always reach the real ones, so the traced peak is a lower bound that the
    worker's meters back up, see the module docstring). Returns the real ``get_traced_memory``."""
    import _tracemalloc

    _tracemalloc.start(1)
    get = _tracemalloc.get_traced_memory
    for module in [_tracemalloc] + ([sys.modules["tracemalloc"]] if "tracemalloc" in sys.modules else []):
        for name in ("stop", "reset_peak", "clear_traces", "start"):
            if hasattr(module, name):
                setattr(module, name, lambda *a, **k: None)
    return get


def measure_child(payload: tuple, nonce: bytes, loops: int, traced: bool) -> None:
    """In a fresh exec child (isolated, limited): compile, run ``loops`` executions, emit one report, exit.

    The report holds the hashes of the first execution's results (and, traced, the traced peak); how long
    it all took is read by the worker, not here.
    """
    emit, exit_now = _emitter(nonce), os._exit
    program, setup, items, inputs, names, prefault, entry = payload
    try:
        code = compile(program, "solution.py", "exec")
        setup_code = compile(setup, "test_setup.py", "exec") if setup.strip() else None
        compiled = [("assert", compile(i[1], "test.py", "exec")) if i[0] == "assert" else i for i in items]
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        emit(("error", f"does not compile: {type(exc).__name__}"))
        exit_now(0)
    run = _execution(code, setup_code, compiled, inputs, tuple(names), entry)
    pack = _digest.pack
    _std_streams()
    _warm_up(compiled, inputs, tuple(names), prefault)
    # The worker reads its meters while we wait here: what follows, and only that, is measured.
    emit(("begin",))
    os.read(ACK_FD, 1)
    os.close(ACK_FD)
    if loops == 0:  # the baseline child: never runs program code, one execution of the empty program
        _stub(compiled, inputs, tuple(names))(set())
        _flush()
        emit((FRAME, 0, b"", -1))
        os.kill(os.getpid(), signal.SIGSTOP)
        exit_now(0)
    entries: set = set()
    peak = -1
    if traced:
        get = _start_tracing()
        base = get()[0]
        run(entries)
        peak = max(0, get()[1] - base)  # the program may have reset or stopped it: only ever lowers this
    else:
        run(entries)
        for _ in range(loops - 1):
            run(None)
    _flush()
    emit((FRAME, int(loops), pack(entries), int(peak)))
    os.kill(os.getpid(), signal.SIGSTOP)  # the worker reads its meters now, then kills us
    exit_now(0)


# ------------------------------------------------------------------------------------ in the worker
def _reset_hwm(pid: int) -> int | None:
    """Reset the child's RSS high-water mark (it waits for us, still running only our code); its RSS now."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _meter._status_field(pid, b"VmRSS:")


def _wait_begin(pid: int, result_r: int, frames, limit_s: float) -> bool:
    """Until the child (still running only our code) says it is about to run the program; False if it
    ended or wrote something else first."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(result_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + limit_s
    try:
        while time.monotonic() < deadline:
            for fd, _ in poller.poll(100):
                if fd == pidfd:
                    return False
                data = os.read(result_r, 1 << 16)
                if not data:
                    return False
                items = frames.feed(data)
                if items:
                    return items[0] == ("begin",) and len(frames.items) == 1
        return False
    finally:
        os.close(pidfd)


def _reaped_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _until_report(pid: int, result_r: int, out_fd: int, frames, limits: dict, cap: float, meter, c0: float):
    """Watch the child until its report (or error) frame arrives, or it ends, or a limit is hit.

    Returns (why it was killed or None, CPU at the report). The report holds the hashes of the answers,
    which the child can only send once it has computed them: what it does after it is not counted, and
    does not matter (the child then stops itself and is killed).
    """
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(result_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    t0 = time.monotonic()
    wall_limit = cap * limits["wall_factor"] + limits["wall_extra"]
    try:
        while True:
            used = meter.cpu() - c0
            if used > cap or time.monotonic() - t0 > wall_limit:
                return "timeout", used
            if frames.corrupt:
                return "corrupt", used
            if os.fstat(out_fd).st_size >= limits["output"]:
                return "output", used
            if meter.oom():
                return "memory", used
            for fd, _ in poller.poll(20):
                if fd == pidfd:
                    used = meter.cpu() - c0
                    os.set_blocking(result_r, False)
                    try:
                        while data := os.read(result_r, 1 << 16):
                            frames.feed(data)
                    except BlockingIOError:
                        pass
                    return None, used
                data = os.read(result_r, 1 << 16)
                items = frames.feed(data)
                if any(item[0] in (FRAME, "error") for item in items):
                    _stop_all(meter, pid)  # off the CPUs: the cgroup's count is then complete
                    return None, meter.cpu() - c0
                if not data:
                    poller.unregister(result_r)
    finally:
        os.close(pidfd)


def _state(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return b"X"


def _stop_all(meter, pid: int) -> None:
    """SIGSTOP every process of the job and wait until none runs: a running task's CPU reaches the cgroup's
    count only when it leaves the CPU (or at the next tick)."""
    for _ in range(200):
        pids = [p for p in meter.pids() if p not in meter.exclude and p != meter.self_pid and p not in meter.spare]
        running = []
        for p in pids:
            if _state(p) not in (b"T", b"t", b"Z", b"X"):
                running.append(p)
                try:
                    os.kill(p, signal.SIGSTOP)
                except (ProcessLookupError, PermissionError):
                    pass
        if not running:
            return
        time.sleep(0.0002)


def _one_child(ctx: dict, payload: tuple, loops: int, traced: bool, cpu_cap: float) -> dict:
    """Fork one exec child, watch it, kill it, sweep everything it left; read the meters.

    CPU and peak memory are counted from the child's ``begin`` (it then waits for our reading; no program
    code has run in it yet) until its report arrives (the hashes of its answers: it cannot send them before
    it has done the work), every process and thread it started included (the job cgroup; without it,
    ``Meter.cpu``'s sum of the job's processes, and at least their reaped total, below: until the eighth
    session only the child's main thread counted there, and work moved into a thread or a helper was
    measured as almost free).
    """
    limits, meter = ctx["limits"], ctx["meter"]
    nonce = os.urandom(16)
    result_r, result_w = os.pipe2(os.O_CLOEXEC)
    ack_r, ack_w = os.pipe2(os.O_CLOEXEC)
    out_fd, err_fd, in_fd = _run._memfd("stdout"), _run._memfd("stderr"), _run._memfd("stdin")
    exit_now = os._exit
    meter.start()
    reaped0 = _reaped_cpu()
    pid = os.fork()
    if pid == 0:
        try:
            _run._become_job(in_fd, out_fd, err_fd, result_w, ctx, cpu_cap, extra_fd=ack_r)
            measure_child(payload, nonce, loops, traced)
        except BaseException:  # noqa: BLE001
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)
    os.close(result_w)
    os.close(ack_r)
    meter.watch(pid)
    frames = _run.Frames(nonce, limits["output"])
    killed, cpu, peak, rss0, c0, stopped, exit_cost = None, 0.0, None, None, 0.0, None, 0.0
    try:
        begun = _wait_begin(pid, result_r, frames, limits["wall_extra"] + cpu_cap * limits["wall_factor"])
        if begun:
            c0 = meter.cpu()
            meter.reset_peak()
            rss0 = _reset_hwm(pid)
            os.write(ack_w, b"g")
            killed, cpu = _until_report(pid, result_r, out_fd, frames, limits, cpu_cap, meter, c0)
            stopped = None if meter.cgroup else _meter.process_cpu(pid)  # (all its threads, stopped or ended now)
            peak = meter.peak() if meter.cgroup else None
            hwm = _meter._status_field(pid, b"VmHWM:")
            if hwm is not None and rss0 is not None:
                peak = max(peak or 0, hwm - rss0)
    finally:
        os.close(ack_w)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if stopped is not None:  # what its exit cost, read before it is reaped (below)
            try:
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                ended = _meter.process_cpu(pid)
                exit_cost = ended - stopped if ended is not None else 0.0
            except ChildProcessError:
                pass
        _, status, usage = os.wait4(pid, 0)
    if rss0 is not None:  # helpers the child waited for count too (their high-water marks)
        peak = max(peak or 0, usage.ru_maxrss * 1024 - rss0)
    oom = meter.oom()
    ctx["sweep"]()  # kills and reaps whatever the child left behind, empties the job dir and scratch
    if begun and not meter.cgroup:
        # Without the job cgroups the live sum reads other processes in whole clock ticks, per field and
        # process, so work spread over many helpers of < 10 ms each (left unreaped, or reaped by a helper)
        # read as nothing (red team, eighth session: ~1/5 of the same work inline). Now that every process
        # of the run is reaped (the child by wait4, the rest by the sweep, as our subreaped orphans), all
        # their CPU is in our children's times, in microseconds: the run's is that total less what the
        # child had used at its begin and what its own exit cost (helpers' exits stay counted).
        cpu = max(cpu, _reaped_cpu() - reaped0 - c0 - exit_cost)
    stderr = _run._read_capped(err_fd, 2000)
    for fd in (result_r, out_fd, err_fd, in_fd):
        os.close(fd)
    found = [f for f in frames.items if f[0] in (FRAME, "error")]
    error = None
    if frames.corrupt:
        error = "the program wrote to the harness's result channel"
    elif killed or oom:
        error = f"killed: {killed or 'memory'} (limit of the measurement)"
    elif not begun:
        error = "the measurement child failed before the program ran" + (
            f": {stderr.decode('utf-8', 'replace')[-300:]}" if stderr else "")
    elif len(found) != 1:
        error = (f"the measurement child ended without one report (exit {os.waitstatus_to_exitcode(status)})"
                 + (f": {stderr.decode('utf-8', 'replace')[-300:]}" if stderr else ""))
    elif found[0][0] == "error" or len(found[0]) != 4 or found[0][1] != loops or type(found[0][2]) is not bytes \
            or type(found[0][3]) is not int:
        error = str(found[0][1]) if found[0][0] == "error" else "malformed report"
    whole = usage.ru_utime + usage.ru_stime  # the whole child (isolation, warm-up, prefault): its cost
    if error is not None:
        return {"error": error, "cpu": cpu, "whole": whole}
    return {"cpu": cpu, "peak": max(0, peak or 0), "report": found[0][2], "traced": found[0][3], "whole": whole}


TRACED_FACTOR = 8  # the traced run's allowance, in single runs (measure.py adds it to the whole cap)


def _measure(ctx: dict, payload: tuple, params: dict, cap: float) -> dict:
    rounds, budget, target = int(params["rounds"]), float(params["budget_s"]), float(params["target_round_s"])
    max_loops = int(params["max_repetitions"])
    spent, whole = [0.0], [0.0]
    # Bounded by what the program used when it was judged (measure.py, ``judged_s``): each child may use
    # 1 s + 4x the judged CPU per execution it runs (the traced run TRACED_FACTOR times that: tracemalloc
    # made mbpp/123's reference 16x slower); the timed children together the timed budget twice plus one
    # round of every kind. Without a judged figure, the old cap (from the limits) applies to both.
    per_exec = params.get("per_execution_cap_s")
    total = [cap]

    def child_cap(loops: int, traced: bool = False) -> float:
        if per_exec is None:
            return cap
        return min(cap, 1.0 + float(per_exec) * max(1, loops) * (TRACED_FACTOR if traced else 1))
    reports: list[str] = []
    runs: dict[str, list] = {"0": [], "1": [], "L": []}

    def child(loops: int, traced: bool = False) -> dict:
        if spent[0] > total[0]:
            raise _Fail("the measurement used more CPU than its cap", whole[0])
        got = _one_child(ctx, payload, loops, traced, child_cap(loops, traced))
        spent[0] += got["cpu"]
        whole[0] += max(got["whole"], got["cpu"])
        if "error" in got:
            raise _Fail(got["error"], whole[0])
        if loops:
            reports.append(got["report"].hex())
        return got

    zero, one = child(0), child(1)
    runs["0"].append(zero)
    runs["1"].append(one)
    single = max(0.0, one["cpu"] - zero["cpu"])
    loops = 1 if single >= target else max(2, min(max_loops, int(target / max(single, 5e-6)) + 1))
    if per_exec is not None:
        total[0] = min(cap, 2 * budget + child_cap(0) + 2 * child_cap(1) + child_cap(loops))
    done = 0
    while done < rounds:
        if done:  # round 0 reuses the calibration pair
            runs["0"].append(child(0))
            runs["1"].append(child(1))
        if loops > 1:
            runs["L"].append(child(loops))
        done += 1
        if done >= 2 and spent[0] > budget:
            break
    traced = child(1, traced=True)["traced"] if params["memory"] else -1
    cpu = {k: min(r["cpu"] for r in v) for k, v in runs.items() if v}
    peak = {k: min(r["peak"] for r in v) for k, v in runs.items() if v}
    return {"baseline_s": cpu["0"], "single_s": cpu["1"], "loop_s": cpu.get("L", cpu["1"]), "loops": loops,
            "rounds": done, "peak_baseline": peak["0"], "peak_single": peak["1"], "traced_peak": traced,
            "measured_cpu_s": spent[0], "child_cpu_s": whole[0], "reports": reports,
            "runs": {k: [r["cpu"] for r in v] for k, v in runs.items()}, "cgroup": bool(ctx["meter"].cgroup)}


class _Fail(Exception):
    def __init__(self, why: str, cost: float):
        super().__init__(why)
        self.cost = cost  # CPU the measurement's children used until it failed


def serve(worker, public: dict, recv) -> dict:
    """Answer one measurement job (the zygote's main loop calls this for ``kind == "measure"``)."""
    pickle.loads(recv(worker.ctl_in))  # the (empty) secret part: keeps the protocol in step
    jobdir = os.path.join(worker.scratch, "job")
    worker.jobdir = jobdir
    t0 = time.monotonic()
    try:
        worker._fresh_jobdir()  # a new tmpfs (or directory); made anew after every child too
        ctx = worker.job_context(jobdir, public["limits"])
        payload = (public["program"], public["setup"], public["items"], public["inputs"],
                   tuple(public["check_names"]), bool(public["params"].get("prefault", True)),
                   public.get("entry_point"))
        try:
            reply = {"measure": _measure(ctx, payload, public["params"], public["cpu_cap_s"])}
        except _Fail as exc:
            reply = {"measure_error": str(exc), "cost_cpu_s": exc.cost}
    finally:
        worker._drop_jobdir()
    reply["wall"] = time.monotonic() - t0
    return reply


__all__ = ["serve", "measure_child"]
