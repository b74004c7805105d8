"""What runs inside an exec child: the untrusted program, then its tests (standard library only).

The child reports through a private pipe (fd 3), one frame per event, each frame prefixed with a
per-job random nonce so that bytes the program writes to fd 3 by accident or on purpose do not parse as
results. Return values are converted to plain built-in values *here* with our own pre-bound functions
(never the program's ``__eq__``/``__repr__``), marshalled, and compared by the worker, which never runs
untrusted code. Everything this module needs is bound before the program runs, so monkeypatching
``marshal``, ``os``, ``builtins`` or ``type`` from the program does not change what is reported.

What this does not stop: a program that deliberately walks the interpreter's memory (``gc``, frames)
to find the nonce and the pipe can forge frames for tests whose expected value it can compute; it
still never sees the expected values of call tests, rewritten asserts or stdio tests (those stay in
the worker).
"""

from __future__ import annotations

import builtins
import io
import marshal
import os
import resource
import struct
import sys
import time
import traceback

RESULT_FD = 3
MAX_DEPTH = 200
MAX_ITEMS = 2_000_000


class Unplain(Exception):
    """A value that is not made only of built-in scalars and containers."""


def _make_plain():
    # Bind everything now: the program may replace these names later.
    _type, _len, _int, _float, _str, _bytes = type, len, int, float, str, bytes
    _list, _tuple, _dict, _set, _frozenset, _complex = list, tuple, dict, set, frozenset, complex
    _isinstance, _bool, _none = isinstance, bool, type(None)
    scalars = (_int, _float, _str, _bytes, _bool, _none, _complex)
    int_copy, float_copy, str_copy, bytes_copy = _int.__int__, _float.__float__, _str.__str__, _bytes.__bytes__
    list_copy, dict_copy, set_copy, fset_copy = _list.copy, _dict.copy, _set.copy, _frozenset.copy
    tuple_get, dict_items = _tuple.__getitem__, _dict.items
    full = slice(None)
    budget = [0]

    def plain(value, depth=0):
        if depth > MAX_DEPTH:
            raise Unplain("nested too deeply (or a cycle)")
        budget[0] += 1
        if budget[0] > MAX_ITEMS:
            raise Unplain("too large")
        t = _type(value)
        if t in scalars:
            return value
        if t is _list:
            return [plain(v, depth + 1) for v in list_copy(value)]
        if t is _tuple:
            return _tuple([plain(v, depth + 1) for v in tuple_get(value, full)])
        if t is _dict:
            return {plain(k, depth + 1): plain(v, depth + 1) for k, v in dict_items(value)}
        if t is _set or t is _frozenset:
            return t(plain(v, depth + 1) for v in (set_copy(value) if t is _set else fset_copy(value)))
        # Subclasses (Counter, OrderedDict, namedtuple, IntEnum...) become their base type by reading
        # the base storage, so an overridden __eq__/__iter__ is never consulted.
        if _isinstance(value, _bool):
            return _bool(int_copy(value))
        for base, copy in ((_int, int_copy), (_float, float_copy), (_str, str_copy), (_bytes, bytes_copy)):
            if _isinstance(value, base):
                return copy(value)
        if _isinstance(value, _dict):
            return plain(dict_copy(value), depth)
        if _isinstance(value, _list):
            return plain(list_copy(value), depth)
        if _isinstance(value, _tuple):
            return plain(tuple_get(value, full), depth)
        if _isinstance(value, _frozenset):
            return plain(fset_copy(value), depth)
        if _isinstance(value, _set):
            return plain(set_copy(value), depth)
        raise Unplain(f"a {t.__module__}.{t.__qualname__} object")

    def reset():
        budget[0] = 0

    return plain, reset


def _emitter(nonce: bytes):
    write, dumps, pack = os.write, marshal.dumps, struct.pack

    def emit(payload) -> None:
        data = dumps(payload)
        frame = nonce + pack("<I", len(data)) + data
        while frame:
            frame = frame[write(RESULT_FD, frame) :]

    return emit


def _memory_probe():
    """Peak RSS above the level at the start of a test, via the kernel's resettable high-water mark."""

    def read(field: str) -> int:
        try:
            with open("/proc/self/status", "rb") as f:
                for line in f:
                    if line.startswith(field):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def start() -> int:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        return read(b"VmRSS:")

    def peak(base: int) -> int:
        return max(0, read(b"VmHWM:") - base)

    return start, peak


def _short_tb(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()[-500:]


def _std_streams(name: str) -> None:
    # Fresh text streams over the fds the worker prepared (the inherited objects belong to the worker).
    sys.stdin = sys.__stdin__ = io.open(0, "r", encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = sys.__stdout__ = io.open(1, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = sys.__stderr__ = io.open(2, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.argv = [name]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have broken its streams; output is lost
            pass


def _checkers(emit, current: list[int]):
    """The two hooks rewritten asserts call: send plain values out, never a verdict."""
    plain, reset_budget = _make_plain()
    dumps, _type, unplain = marshal.dumps, type, Unplain

    def encode(value):
        reset_budget()
        try:
            return dumps(plain(value)), None
        except unplain as exc:
            return None, str(exc)
        except (ValueError, RecursionError, MemoryError) as exc:
            return None, f"cannot serialize: {_type(exc).__name__}"

    def check_value(site, value):
        emit(("val", current[0], site) + encode(value))

    def check_pair(site, left, right):
        a, a_err = encode(left)
        b, b_err = encode(right)
        fallback = None
        if a is None and b is None:
            fallback = bool(left == right)  # both sides are program objects: nothing plain to compare
        emit(("pair", current[0], site, a, a_err, b, b_err, fallback))

    return check_value, check_pair


def _call(ns: dict, fn_name: str, args, _callable=callable, _getattr=getattr):
    fn = ns.get(fn_name)
    if not _callable(fn) and _callable(ns.get("Solution")):  # LeetCode style: a method of Solution
        fn = _getattr(ns["Solution"](), fn_name)
    if not _callable(fn):
        raise NameError(f"the program defines no function {fn_name!r}")
    return fn(*args)


def _cpu_clock():
    """CPU seconds of the whole process (every thread), to the microsecond.

    Not ``time.process_time``: with RLIMIT_CPU set (the sandbox always sets it) the kernel's process-wide
    CPU timer is armed and CLOCK_PROCESS_CPUTIME_ID is read from it, which advances only at scheduler
    ticks, so a test under a few milliseconds reads 0.0 or a whole tick. getrusage sums the threads'
    exact run times.
    """
    getrusage, who = resource.getrusage, resource.RUSAGE_SELF

    def cpu() -> float:
        usage = getrusage(who)
        return usage.ru_utime + usage.ru_stime

    return cpu


def run_function_tests(code, setup, items, check_names: tuple[str, str], nonce: bytes) -> None:
    """Run the program once, then each test in its namespace; report values, never verdicts."""
    emit = _emitter(nonce)
    current = [0]
    check_value, check_pair = _checkers(emit, current)
    mem_start, mem_peak = _memory_probe()
    clock, cpu, loads, _type, call = time.perf_counter, _cpu_clock(), marshal.loads, type, _call
    builtins_module, builtins_dict = builtins, builtins.__dict__
    pristine_builtins = dict(builtins_dict)
    exit_now, flush, short_tb = os._exit, _flush, _short_tb
    _std_streams("solution.py")
    ns = {"__name__": "solution", "__builtins__": builtins}
    emit(("load",))
    try:
        exec(code, ns)
        if setup is not None:
            exec(setup, ns)
    except BaseException as exc:  # noqa: BLE001 - any failure of the program is data
        flush()
        emit(("load_error", _type(exc).__name__, short_tb(exc)))
        exit_now(0)
    for index, item in enumerate(items):
        current[0] = index
        builtins_dict.update(pristine_builtins)  # tests see the real builtins, whatever the program did
        ns["__builtins__"] = builtins_module
        emit(("begin", index))
        base = mem_start()
        t0, c0 = clock(), cpu()
        exc_name, detail = None, ""
        try:
            if item[0] == "call":
                check_value(0, call(ns, item[1], loads(item[2])))
            else:
                ns[check_names[0]], ns[check_names[1]] = check_value, check_pair
                exec(item[1], ns)
        except BaseException as exc:  # noqa: BLE001
            exc_name, detail = _type(exc).__name__, short_tb(exc)
        emit(("end", index, exc_name, detail, cpu() - c0, clock() - t0, mem_peak(base)))
    flush()
    emit(("done",))
    exit_now(0)


def run_stdio_program(code, nonce: bytes) -> None:
    """Run the program as ``__main__`` on the stdin the worker prepared; report how it ended."""
    emit = _emitter(nonce)
    _type, exit_now, flush, short_tb, print_exc = type, os._exit, _flush, _short_tb, traceback.print_exc
    _std_streams("solution.py")
    emit(("begin", 0))
    exc_name, detail = None, ""
    try:
        exec(code, {"__name__": "__main__", "__builtins__": builtins})
    except SystemExit as exc:
        if exc.code not in (None, 0):
            exc_name, detail = "SystemExit", f"exit status {exc.code!r}"
    except BaseException as exc:  # noqa: BLE001
        exc_name, detail = _type(exc).__name__, short_tb(exc)
        try:
            print_exc()
        except BaseException:  # noqa: BLE001
            pass
    flush()
    emit(("end", 0, exc_name, detail, 0.0, 0.0, 0))
    emit(("done",))
    exit_now(0)


def run_checker(code, cases_blob: bytes, nonce: bytes) -> None:
    """Run a problem's custom checker on (input, expected, actual) triples; report each verdict value."""
    emit = _emitter(nonce)
    current = [0]
    check_value, _ = _checkers(emit, current)
    _std_streams("checker.py")
    ns = {"__name__": "checker", "__builtins__": builtins}
    emit(("load",))
    try:
        exec(code, ns)
        check = ns["check"]
    except BaseException as exc:  # noqa: BLE001
        emit(("load_error", type(exc).__name__, _short_tb(exc)))
        os._exit(0)
    for index, (given, expected, actual) in enumerate(marshal.loads(cases_blob)):
        current[0] = index
        emit(("begin", index))
        try:
            check_value(0, check(given, expected, actual))
            emit(("end", index, None, "", 0.0, 0.0, 0))
        except BaseException as exc:  # noqa: BLE001
            emit(("end", index, type(exc).__name__, _short_tb(exc), 0.0, 0.0, 0))
    emit(("done",))
    os._exit(0)
