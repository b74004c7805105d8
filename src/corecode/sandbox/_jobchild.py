"""What runs inside a program child: the untrusted program, and nothing that decides a verdict (stdlib only).

Function tests: the child runs the program once and then only *answers calls*. The tests themselves run in
a separate judge process (``_judge``) that never runs program code; every call the test makes into the
program (the entry point, a class the program defines, a method of an object it returned) arrives here as
a request on a private pipe, and the answer goes back as plain data: built-in scalars and containers of
exact types, read from base storage with functions bound before the program ran (never the program's
``__eq__``/``__iter__``/``__repr__``). Anything else goes back as an opaque reference that the judge can
only hand back to the program. There is no check hook, no report of a verdict and no expected value in
this process: whatever the program does here can only change the values it answers with.

stdin/stdout programs run as ``__main__``; their output is captured by the worker. A short frame on fd 3
(keyed with a per-child nonce) says how the program ended; it only ever adds a failure reason.
"""

from __future__ import annotations

import builtins
import io
import marshal
import os
import pickle
import struct
import sys
import traceback

RESULT_FD = 3
REQUEST_FD, REPLY_FD = 3, 4
MAX_DEPTH = 200
MAX_ITEMS = 2_000_000
REF = "\x00corecode-ref"  # marks an opaque reference in a reply: (REF, n)

BUILTIN_EXCEPTIONS = {v: k for k, v in vars(builtins).items()  # canonical names (OSError, not IOError)
                      if isinstance(v, type) and issubclass(v, BaseException) and v.__name__ == k}


class Unplain(Exception):
    """A value too large or too deep to send back."""


def exception_name(exc: BaseException, _type=type, _mro=type.__dict__["__mro__"].__get__,
                   _names=BUILTIN_EXCEPTIONS) -> str:
    """The name of the first built-in exception class ``exc`` derives from, read from the real MRO.

    Never ``type(exc).__name__``: a metaclass property can make that anything (``None``, "passed").
    """
    for cls in _mro(_type(exc)):
        name = _names.get(cls)
        if name is not None:
            return name
    return "BaseException"


def _make_plain():
    """plain(value, refs) -> a marshal-able copy made only of exact built-in types, or REF markers."""
    _type, _int, _float, _str, _bytes = type, int, float, str, bytes
    _list, _tuple, _dict, _set, _frozenset, _complex = list, tuple, dict, set, frozenset, complex
    _isinstance, _bool, _none, _id = isinstance, bool, type(None), id
    scalars = (_int, _float, _str, _bytes, _bool, _none, _complex)
    int_copy, float_copy, str_copy, bytes_copy = _int.__int__, _float.__float__, _str.__str__, _bytes.__bytes__
    complex_copy = _complex.__complex__
    list_copy, dict_copy, set_copy, fset_copy = _list.copy, _dict.copy, _set.copy, _frozenset.copy
    tuple_get, dict_items, append = _tuple.__getitem__, _dict.items, _list.append
    full = slice(None)
    budget = [0]

    def plain(value, refs, depth=0):
        if depth > MAX_DEPTH:
            raise Unplain("nested too deeply (or a cycle)")
        budget[0] += 1
        if budget[0] > MAX_ITEMS:
            raise Unplain("too large")
        t = _type(value)
        if t in scalars:
            return value
        if t is _list:
            return [plain(v, refs, depth + 1) for v in list_copy(value)]
        if t is _tuple:
            return _tuple([plain(v, refs, depth + 1) for v in tuple_get(value, full)])
        if t is _dict:
            return {plain(k, refs, depth + 1): plain(v, refs, depth + 1) for k, v in dict_items(dict_copy(value))}
        if t is _set or t is _frozenset:
            items = set_copy(value) if t is _set else fset_copy(value)
            return t(plain(v, refs, depth + 1) for v in items)
        # Subclasses (Counter, OrderedDict, namedtuple, IntEnum...) become their base type by reading
        # the base storage, so an overridden __eq__/__iter__ is never consulted.
        if _isinstance(value, _bool):
            return _bool(int_copy(value))
        for base, copy in ((_int, int_copy), (_float, float_copy), (_str, str_copy), (_bytes, bytes_copy),
                           (_complex, complex_copy)):
            if _isinstance(value, base):
                return copy(value)
        if _isinstance(value, _dict):
            return plain(dict_copy(value), refs, depth)
        if _isinstance(value, _list):
            return plain(list_copy(value), refs, depth)
        if _isinstance(value, _tuple):
            return plain(tuple_get(value, full), refs, depth)
        if _isinstance(value, _frozenset):
            return plain(fset_copy(value), refs, depth)
        if _isinstance(value, _set):
            return plain(set_copy(value), refs, depth)
        key = _id(value)
        index = refs[1].get(key)
        if index is None:
            index = refs[1][key] = _len(refs[0])
            append(refs[0], value)
        return (REF, index)

    _len = len

    def reset():
        budget[0] = 0

    return plain, reset


def _frame_io(read_fd: int, write_fd: int):
    """Length-prefixed frames over the two private pipes to the judge."""
    read, write, pack, unpack_from = os.read, os.write, struct.pack, struct.unpack_from
    dumps, loads = marshal.dumps, pickle.loads
    buf = bytearray()

    def receive():
        # Read as much as is there (the judge writes one whole frame, then waits for the answer): one
        # read per request instead of one for the length and one for the body
        while len(buf) < 4 or len(buf) < 4 + unpack_from("<I", buf)[0]:
            chunk = read(read_fd, 1 << 16)
            if not chunk:
                return None
            buf.extend(chunk)
        end = 4 + unpack_from("<I", buf)[0]
        body = bytes(buf[4:end])
        del buf[:end]
        return loads(body)  # from the judge, which is trusted

    def send(payload):
        data = dumps(payload)
        frame = pack("<I", len(data)) + data
        while frame:
            frame = frame[write(write_fd, frame) :]

    return receive, send


def _short_tb(exc: BaseException) -> str:
    try:
        lines = traceback.format_exception_only(type(exc), exc)
        text = "".join(lines).strip()
        return text[-500:] if type(text) is str else ""
    except BaseException:  # noqa: BLE001 - the program's __str__ may raise or lie; the detail is optional
        return exception_name(exc)


_PREMADE: dict = {}  # made by prepare() in the clean zygote; each process takes them once
WARM_PROGRAM = ("import math\nfrom typing import List\n\n\ndef f(x: List[int], *a, **k) -> int:\n"
                "    return sum(v * 2 for v in x if v % 2) + len([a, k])\n\n\nclass C:\n    y = f([1, 2, 3])\n")


def _open_std_streams() -> tuple:
    return (io.open(0, "r", encoding="utf-8", errors="replace", closefd=False),
            io.open(1, "w", encoding="utf-8", errors="replace", closefd=False),
            io.open(2, "w", encoding="utf-8", errors="replace", closefd=False))


def prepare() -> None:
    """In the clean zygote, before it forks any job leader: the text streams over fds 0-2 and the
    ``plain`` encoder that a function job's program process needs, made once here instead of in every job
    (they cost each job ~0.3 ms of CPU, mostly copy-on-write faults of the io and codec machinery), and a
    first run of the compiler.

    The streams are made over a memfd put on fds 0-2 for the moment, so they are what ``io.open`` makes
    over a job's own fds (memfds, or /dev/null for stdin: seekable, not a terminal, at offset 0; the
    buffers empty); then the zygote's own fds 0-2 are put back. Nothing here ever reads or writes through
    them, so every job gets an untouched copy; a process takes them once (``_std_streams``), and any later
    call (the next case of a shared runner) opens fresh ones as before.
    """
    saved: list[int] = []
    try:
        saved = [os.dup(fd) for fd in (0, 1, 2)]
    except OSError:  # a worker started without one of them: every job makes its own streams, as before
        for copy in saved:
            os.close(copy)
        saved = []
    if saved:
        blank = os.memfd_create("std-streams", os.MFD_CLOEXEC)
        try:
            for fd in (0, 1, 2):
                os.dup2(blank, fd)
            _PREMADE["streams"] = _open_std_streams()
        finally:
            for fd, copy in zip((0, 1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
            os.close(blank)
    _PREMADE["plain"] = _make_plain()
    # The compiler's first run in a process is its dearest: run it once here, on a constant program, so that
    # a job's compile of its program finds it warm (~70 us of the leader's CPU per job).
    exec(compile(WARM_PROGRAM, "solution.py", "exec"), {"__name__": "warm-up"})
    # The streams a job replaces stay referenced here, so that replacing them does not finalize (flush and
    # close, touching their pages) the worker's own stream objects in every job: ~0.15 ms per job.
    _PREMADE["replaced"] = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)


def _std_streams(name: str) -> None:
    # Fresh text streams over the fds the worker prepared (the inherited objects belong to the worker).
    streams = _PREMADE.pop("streams", None) or _open_std_streams()
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
    sys.argv = [name]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have broken its streams; output is lost
            pass


class _Unpickler(pickle.Unpickler):
    """Arguments from the judge; persistent ids name program objects (references and global names)."""

    def __init__(self, data, lookup):
        super().__init__(io.BytesIO(data))
        self.lookup = lookup

    def persistent_load(self, pid):
        return self.lookup(pid)


def serve_program(code, setup, nonce: bytes) -> None:
    """Run the program (and the problem's setup code) once, then answer the judge's calls until EOF."""
    receive, send = _frame_io(REQUEST_FD, REPLY_FD)
    plain, reset = _PREMADE.pop("plain", None) or _make_plain()
    exc_name, short_tb, flush, exit_now = exception_name, _short_tb, _flush, os._exit
    _callable, _getattr, _setattr, _str = callable, getattr, setattr, str
    unpickler, loads = _Unpickler, pickle.loads
    _std_streams("solution.py")
    ns = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(code, ns)
        if setup is not None:
            exec(setup, ns)
    except BaseException as exc:  # noqa: BLE001 - any failure of the program is data
        flush()
        send(("load_error", exc_name(exc), short_tb(exc)))
        exit_now(0)
    send(("loaded",))
    unary = {"bool": bool, "len": len, "iter": iter, "next": next, "str": str, "repr": repr}
    refs: tuple[list, dict] = ([], {})
    get = dict.get

    missing = object()

    def by_name(name):
        fn = get(ns, name, missing)
        if (fn is missing or not _callable(fn)) and _callable(get(ns, "Solution")):  # LeetCode style
            fn = _getattr(ns["Solution"](), name)
        if fn is missing:
            raise NameError(f"name {name!r} is not defined by the program")
        return fn

    def lookup(pid):
        kind, key = pid
        if kind == "ref":
            return refs[0][key]
        return by_name(key)

    while True:
        request = receive()
        if request is None:
            break
        reset()
        try:
            op = request[0]
            if op == "plain":  # arguments without references to our objects (_judge.Program.encode_call)
                target = lookup(request[1])
                args, kwargs = loads(request[2])
                value = target(*args, **kwargs)
            elif op == "call":
                target = lookup(request[1])
                args, kwargs = unpickler(request[2], lookup).load()
                value = target(*args, **kwargs)
            elif op == "global":  # a name the test uses that no trusted code defined
                value = get(ns, request[1], missing)
                if value is missing:
                    value = by_name(request[1])
            elif op == "getattr":
                value = _getattr(lookup(request[1]), request[2])
            elif op == "setattr":
                obj = lookup(request[1])
                _setattr(obj, request[2], unpickler(request[3], lookup).load()[0])
                value = None
            elif op == "unary":  # conversions that take no operand: they cannot see an expected value
                value = unary[request[2]](lookup(request[1]))
            else:
                raise ValueError("unknown request")
            try:
                answer = ("ok", plain(value, refs))
            except Unplain as why:
                answer = ("unplain", _str(why))
            except (ValueError, RecursionError, MemoryError) as why:
                answer = ("unplain", f"cannot serialize: {exc_name(why)}")
        except BaseException as exc:  # noqa: BLE001 - the program's exception is its answer
            answer = ("exc", exc_name(exc), short_tb(exc))
        flush()
        try:
            send(answer)
        except (ValueError, OverflowError):  # marshal: too large / unmarshallable after all
            send(("unplain", "cannot serialize the value"))
    flush()
    exit_now(0)


def _emitter(nonce: bytes):
    write, dumps, pack = os.write, marshal.dumps, struct.pack

    def emit(payload) -> None:
        data = dumps(payload)
        frame = nonce + pack("<I", len(data)) + data
        while frame:
            frame = frame[write(RESULT_FD, frame) :]

    return emit


TRACE_VALUE_BYTES = 2048  # a recorded value whose marshal form is larger is not "simple": left out


def _make_recorder(emit, call, max_vars: int):
    """record(ns, loaded): after a traced run, the call's return value (if a call was given and the module
    ran) and the last ``max_vars`` module-level variables of simple type, as ``trace`` frames.

    Everything it uses is bound here, before the program runs; values go out as :func:`_make_plain`
    copies (exact built-in types read from base storage), never through the program's methods. A value
    that is not plain data (a function, a module, an instance of the program's class, or anything holding
    one) or whose marshal form exceeds TRACE_VALUE_BYTES is not simple and is skipped. Whatever the
    program does here can only change its own recorded values.
    """
    plain, reset = _make_plain()
    dumps, items, _list, _type, _str, _len = marshal.dumps, dict.items, list, type, str, len
    startswith, exc_name, _eval = str.startswith, exception_name, eval

    def value_blob(value):
        reset()
        refs: tuple[list, dict] = ([], {})
        copy = plain(value, refs)
        if refs[0]:
            return None
        blob = dumps(copy)
        return blob if _len(blob) <= TRACE_VALUE_BYTES else None

    def record(ns, loaded):
        if call is not None and loaded:
            try:
                value = _eval(call, ns)
                try:
                    blob = value_blob(value)
                except BaseException:  # noqa: BLE001 - unplain: too deep, too large, unserializable
                    blob = None
                emit(("trace", "return", blob) if blob is not None else ("trace", "return_unplain"))
            except BaseException as exc:  # noqa: BLE001 - the program's exception is its outcome
                emit(("trace", "return_error", exc_name(exc)))
        found = []
        try:
            for key, value in _list(items(ns)):
                if _type(key) is not _str or startswith(key, "_"):
                    continue
                try:
                    blob = value_blob(value)
                except BaseException:  # noqa: BLE001
                    blob = None
                if blob is not None:
                    found.append((key, blob))
        except BaseException:  # noqa: BLE001 - the program broke its namespace: no variables
            found = []
        for key, blob in found[_len(found) - max_vars:] if max_vars else []:
            emit(("trace", "var", key, blob))

    return record


def main_runner():
    """``run_main(code, ns)``: run ``code`` as a program's ``__main__`` in ``ns`` and say how it ended,
    (exception name or None, detail); ``sys.exit(0)`` / ``sys.exit()`` end it cleanly, and a traceback
    goes to stderr as Python would print it. What it calls is bound now, before any program code, so a
    program that replaces a module attribute changes nothing for a later run (``_cases``' shared runner)."""
    exc_name, short_tb, print_exc = exception_name, _short_tb, traceback.print_exc
    _exec, _type, _int, _bool = exec, type, int, bool

    def run_main(code, ns: dict) -> tuple:
        name, detail = None, ""
        try:
            _exec(code, ns)
        except SystemExit as exc:
            try:
                code_ = exc.code
                if code_ is not None and not (_type(code_) in (_int, _bool) and code_ == 0):
                    name, detail = "SystemExit", "the program exited with a non-zero status"
            except BaseException:  # noqa: BLE001
                name = "SystemExit"
        except BaseException as exc:  # noqa: BLE001
            name, detail = exc_name(exc), short_tb(exc)
            try:
                print_exc()
            except BaseException:  # noqa: BLE001
                pass
        return name, detail

    return run_main


def run_stdio_program(code, nonce: bytes, trace=None) -> None:
    """Run the program as ``__main__`` on the stdin the worker prepared; report how it ended.

    ``trace`` = (compiled call expression or None, max variables): also record what the run left (see
    :func:`_make_recorder`), for prompts that ask a model to predict a program's execution.
    """
    emit = _emitter(nonce)
    exc_name, exit_now, flush, short_tb, print_exc = exception_name, os._exit, _flush, _short_tb, traceback.print_exc
    record = _make_recorder(emit, trace[0], trace[1]) if trace is not None else None
    _std_streams("solution.py")
    emit(("begin", 0))
    name, detail = None, ""
    ns = {"__name__": "__main__", "__builtins__": builtins}
    # The program runs in this frame (not in main_runner's): the red team's forged-frame tests reach our
    # ``emit`` as the program's caller (tests/test_redteam_rewards.py).
    try:
        exec(code, ns)
    except SystemExit as exc:
        try:
            code_ = exc.code
            if code_ is not None and not (type(code_) in (int, bool) and code_ == 0):
                name, detail = "SystemExit", "the program exited with a non-zero status"
        except BaseException:  # noqa: BLE001
            name = "SystemExit"
    except BaseException as exc:  # noqa: BLE001
        name, detail = exc_name(exc), short_tb(exc)
        try:
            print_exc()
        except BaseException:  # noqa: BLE001
            pass
    if record is not None:
        record(ns, name is None)
    flush()
    emit(("end", 0, name, detail))
    exit_now(0)
