"""The judge: a process of its own that runs the tests and decides every verdict (standard library only).

Forked from the warm worker after the job's program child, so it never ran, and never runs, program code.
It reads the job's secret part (test code, expected values, expected outputs) itself, straight from the
harness's pipe; neither the program's process nor the worker ever holds it. Each function test runs in a
fresh namespace of the judge: the problem's trusted prompt helpers (e.g. HumanEval/32's ``poly``) and setup
code are bound from the judge's own copies, builtins are the judge's, and only the remaining free names
(the entry point, classes the program defines) become *proxies*: calling one sends the arguments to the
program child and gets back plain data (exact built-in types, checked here) or an opaque reference. So
every ``==``, ``abs``, ``<``, ``len`` of a test runs on plain values in a process the program cannot reach:
it runs as another uid (when root) and is not dumpable, so the program cannot ptrace it or read its memory.

The judge writes the whole reply (JSON) into a memfd that the worker passes on to the harness with
``sendfile`` after its sweep, so the worker's memory never holds expected values either.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import io
import json
import marshal
import os
import pickle
import select
import socket
import struct
import sys
import time

import _safemarshal
import _verdict as vd

REF = "\x00corecode-ref"
PLAIN_SCALARS = (int, float, str, bytes, bool, type(None), complex)
BUILTIN_EXCEPTIONS = {k: v for k, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
MAX_REPLY = 64 << 20


class ProgramDied(BaseException):
    """The program child ended (or was killed) while a test needed it."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class Unusable(Exception):
    """The program answered with something the judge cannot use."""


PHASE = struct.Struct("<qqdd")  # job number, test index (of the function group), job CPU and time at its start
# After the phase record: the number of the last job whose secret part the judge read (from the memfd the
# worker or leader moved it into, _run.take_secret), before it calls into the program. The supervisor reads
# it only when the judge is gone without a reply (may another judge take the job over?), so reading the
# secret wakes nobody (a message did, ~0.1 ms per job).
SECRET_AT, SECRET = PHASE.size, struct.Struct("<q")


class Events:
    """The judge's line to the worker (a stream socket): jobs (with their descriptors) come in, test
    boundaries go out (the worker applies each test's limits), and the worker's word that the program
    child died comes in, tagged with the job's number."""

    def __init__(self, sock):
        self.sock = sock
        self.ack_r = sock.fileno()
        self.buf = bytearray()
        self.fds: list[int] = []
        self.jobs: list[tuple[bytes, list[int]]] = []
        self.seq = 0
        self.deaths: dict[int, tuple[str, str]] = {}  # job number -> why its program child died
        self.phase_fd = -1  # the worker's phase memfd (``begin``), set by ``serve``
        self.mark: tuple | None = None  # the supervisor's answer to ``measure``

    @property
    def dead(self) -> tuple[str, str] | None:
        return self.deaths.get(self.seq)

    def send(self, *message) -> None:
        data = marshal.dumps(message)
        self.sock.sendall(struct.pack("<I", len(data)) + data)

    def begin(self, local: int, cpu: float, now: float) -> None:
        """Test ``local`` of this job begins at job CPU ``cpu``, time ``now``: written where the worker reads it
        at its next wake-up (``_run.PHASE``), without waking it (a wake-up per test was ~50 us of both)."""
        os.pwrite(self.phase_fd, PHASE.pack(self.seq, local, float(cpu), float(now)), 0)

    def measure(self, tag: str, local: int) -> tuple[float, int]:
        """Without the job cgroups: test ``local`` begins (``tag`` "test"), ended ("tested"), or ended with
        the next one beginning at once ("next"), measured by the supervisor, which waits for this word.
        The judge cannot measure there: hidepid=2 hides every job process from it (it runs in a user
        namespace of its own), so its own walk of /proc found nothing and every test's CPU read 0 s (red
        team, seventh session: 1.9 s of CPU passed a 1.0 s limit). The answer: the test's CPU so far
        (helpers included) and its peak memory, for "tested" and "next"; zeros for "test"."""
        self.mark = None
        self.send(tag, self.seq, local)
        while self.mark is None:
            select.select([self.ack_r], [], [])
            self.pump()
        return self.mark

    def pump(self) -> None:
        """Read what the worker sent (the caller knows the socket is readable)."""
        data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 16)
        if not data:
            os._exit(0)  # the worker is gone
        self.buf += data
        self.fds.extend(fds)
        while len(self.buf) >= 4:
            (size,) = struct.unpack("<I", self.buf[:4])
            if len(self.buf) < 4 + size:
                break
            item = marshal.loads(bytes(self.buf[4:4 + size]))
            del self.buf[:4 + size]
            if item[0] == "job":
                self.jobs.append((item[1], self.fds))
                self.fds = []
            elif item[0] == "direct" and type(item[1]) is tuple and len(item[1]) == 3:
                self.jobs.append((item[1], self.fds))  # a leader that became its program: its header's figures
                self.fds = []
            elif item[0] == "dead" and item[1] >= self.seq:  # may arrive with its job's own frame
                self.deaths[item[1]] = (item[2], item[3])
            elif item[0] == "mark" and item[1] == self.seq and len(item) == 4:
                self.mark = (float(item[2]), int(item[3]))

    def next_job(self) -> tuple[dict, list[int]]:
        while not self.jobs:
            select.select([self.ack_r], [], [])
            self.pump()
        blob, fds = self.jobs.pop(0)
        if type(blob) is tuple:  # ``_direct``: the rest of the job's view comes with its secret part
            seq, t0, c0 = blob
            job = {"seq": seq, "t0": t0, "load_c0": c0, "program": True, "syntax_error": None, "stdio": []}
        else:
            job = pickle.loads(blob)
        self.seq = job["seq"]
        self.deaths = {k: v for k, v in self.deaths.items() if k >= self.seq}
        return job, fds


class Program:
    """The program child, seen from the judge: calls go out as pickles, answers come back as checked data."""

    def __init__(self, req_w: int, rep_r: int, events: Events):
        self.req_w, self.rep_r, self.events = req_w, rep_r, events
        self.buf = bytearray()
        self.refs: dict[int, Remote] = {}
        self.names: dict[str, Remote] = {}
        self.broken: str | None = None

    def name(self, name: str) -> Remote:
        proxy = self.names.get(name)
        if proxy is None:
            proxy = self.names[name] = Remote(self, ("name", name))
        return proxy

    def lookup(self, name: str):
        """A global of the program: plain data as a value, anything else (functions, classes) as a Remote."""
        return self.request("global", name)

    # -- wire --------------------------------------------------------------------------------------
    def _raise_if_gone(self) -> None:
        if self.events.dead is not None:
            raise ProgramDied(*self.events.dead)
        if self.broken:
            raise ProgramDied("runtime_error", self.broken)

    def receive(self):
        """The next frame of the program child, or ProgramDied when the worker says it is gone."""
        while True:
            if len(self.buf) >= 4:
                (size,) = struct.unpack("<I", self.buf[:4])
                if size > MAX_REPLY:
                    self.broken = "the program wrote a frame too large to read to its result channel"
                    raise ProgramDied("runtime_error", self.broken)
                if len(self.buf) >= 4 + size:
                    body = bytes(self.buf[4:4 + size])
                    del self.buf[:4 + size]
                    try:  # bounded shapes only, never marshal.loads on the program's bytes
                        return _safemarshal.loads(body)
                    except Exception:  # noqa: BLE001 - any malformed frame is the program's failure
                        self.broken = "the program wrote garbage to its result channel"
                        raise ProgramDied("runtime_error", self.broken) from None
            if self.broken:
                raise ProgramDied("runtime_error", self.broken)
            gone = self.events.dead is not None
            ready, _, _ = select.select([self.rep_r] + ([] if gone else [self.events.ack_r]), [], [],
                                        0 if gone else None)
            if self.rep_r in ready:
                data = os.read(self.rep_r, 1 << 16)  # a 1 MiB read cost an mmap, an mremap and a munmap per answer
                if data:
                    self.buf += data
                    continue
                while self.events.dead is None:  # EOF: the child and its helpers are gone; learn why
                    select.select([self.events.ack_r], [], [])
                    self.events.pump()
                self._raise_if_gone()
            if gone:  # the worker says the child died and nothing more is in the pipe
                self._raise_if_gone()
            self.events.pump()

    def request(self, *message):
        self._raise_if_gone()
        data = pickle.dumps(message, protocol=5)
        frame = struct.pack("<I", len(data)) + data
        try:
            while frame:
                frame = frame[os.write(self.req_w, frame):]
        except BrokenPipeError:
            pass  # the child is gone; receive() learns why from the worker
        answer = self.receive()
        if type(answer) is not tuple or not answer or type(answer[0]) is not str:
            raise Unusable("the program's answer is malformed")
        kind = answer[0]
        if kind == "ok" and len(answer) == 2:
            return self.decode(answer[1], 0)
        if kind == "exc" and len(answer) == 3 and type(answer[1]) is str and type(answer[2]) is str:
            raise program_exception(answer[1], answer[2])
        if kind == "unplain" and len(answer) == 2 and type(answer[1]) is str:
            raise Unusable(f"the program returned {answer[1][:200]}")
        raise Unusable("the program's answer is malformed")

    def encode(self, args: tuple, kwargs: dict) -> bytes:
        buf = io.BytesIO()
        pickler = _Pickler(buf)
        try:
            pickler.dump((args, kwargs))
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise TypeError(f"a test argument cannot be passed to the program: {exc}") from None
        return buf.getvalue()

    def encode_call(self, args: tuple, kwargs: dict) -> tuple[str, bytes]:
        """The request kind and blob of a call: ("plain", a plain pickle the program loads with the C
        unpickler) when no argument holds a reference to a program object, else ("call", ``encode``'s
        pickle, whose persistent ids the program resolves). The plain pickler calls no Python code for
        exact built-in containers and scalars (``reducer_override`` is skipped for them), where ``encode``'s
        ``persistent_id`` runs per object: ~6 us of the judge and ~11 us of the program per call."""
        buf = io.BytesIO()
        try:
            _PlainPickler(buf).dump((args, kwargs))
            return "plain", buf.getvalue()
        except _HoldsRemote:
            return "call", self.encode(args, kwargs)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise TypeError(f"a test argument cannot be passed to the program: {exc}") from None

    def decode(self, value, depth: int):
        """Check that the program's answer is plain data of exact built-in types; references become Remotes."""
        if depth > 250:
            raise Unusable("the program returned a value nested too deeply")
        t = type(value)
        if t in PLAIN_SCALARS:
            return value
        if t is tuple:
            if len(value) == 2 and type(value[0]) is str and value[0] == REF and type(value[1]) is int:
                remote = self.refs.get(value[1])
                if remote is None:
                    remote = self.refs[value[1]] = Remote(self, ("ref", value[1]))
                return remote
            return tuple(self.decode(v, depth + 1) for v in value)
        if t is list:
            return [self.decode(v, depth + 1) for v in value]
        if t is dict:
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in value.items()}
        if t is set or t is frozenset:
            return t(self.decode(v, depth + 1) for v in value)
        raise Unusable(f"the program returned a {t.__name__}, which is not plain data")


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if type(obj) is Remote:
            return object.__getattribute__(obj, "_cc_pid")
        return None


class _HoldsRemote(Exception):
    """An argument holds a Remote: it must go as a persistent id, never be pickled by value (a Remote's
    state is the judge's own Program object)."""


class _PlainPickler(pickle.Pickler):
    def reducer_override(self, obj):  # called for every object but exact built-in scalars and containers
        if type(obj) is Remote:
            raise _HoldsRemote
        return NotImplemented  # anything else pickles as it would with ``_Pickler``


class Remote:
    """A name or an object of the program: it can be called, and its attributes read or set, by RPC.

    It has no truth value, no ordering and no equality but identity: nothing about it is decided by
    program code on the judge's side.
    """

    __slots__ = ("_cc_program", "_cc_pid")

    def __init__(self, program: Program, pid: tuple):
        object.__setattr__(self, "_cc_program", program)
        object.__setattr__(self, "_cc_pid", pid)

    def __call__(self, *args, **kwargs):
        program = object.__getattribute__(self, "_cc_program")
        kind, blob = program.encode_call(args, kwargs)
        return program.request(kind, object.__getattribute__(self, "_cc_pid"), blob)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        program = object.__getattribute__(self, "_cc_program")
        return program.request("getattr", object.__getattribute__(self, "_cc_pid"), name)

    def __setattr__(self, name: str, value) -> None:
        program = object.__getattribute__(self, "_cc_program")
        program.request("setattr", object.__getattribute__(self, "_cc_pid"), name, program.encode(value, {}))

    # Only conversions that take no operand are asked of the program (truth value, length, iteration,
    # text): the answer is plain data the program could have returned directly. Anything that would hand
    # the program the other side of a comparison (==, <, -, in, ...) is never delegated: a Remote compares
    # by identity only, and arithmetic on it is a TypeError.
    def _cc_unary(self, op: str, want: tuple):
        program = object.__getattribute__(self, "_cc_program")
        value = program.request("unary", object.__getattribute__(self, "_cc_pid"), op)
        if want and type(value) not in want:
            raise TypeError(f"the program's {op}() returned a {type(value).__name__}")
        return value

    def __bool__(self):
        return Remote._cc_unary(self, "bool", (bool,))

    def __len__(self):
        return Remote._cc_unary(self, "len", (int,))

    def __iter__(self):
        return Remote._cc_unary(self, "iter", ())

    def __next__(self):
        try:
            return Remote._cc_unary(self, "next", ())
        except StopIteration:
            raise StopIteration from None

    def __str__(self) -> str:
        return Remote._cc_unary(self, "str", (str,))

    def __repr__(self) -> str:
        try:
            return Remote._cc_unary(self, "repr", (str,))
        except Exception:  # noqa: BLE001 - a repr for messages must not fail
            pid = object.__getattribute__(self, "_cc_pid")
            return f"<program {'object' if pid[0] == 'ref' else pid[1]}>"


_PROGRAM_EXC_TYPES: dict[type, type] = {}


def program_exception(name: str, detail: str) -> BaseException:
    """An exception of the judge standing for one the program raised (its nearest built-in class)."""
    base = BUILTIN_EXCEPTIONS.get(name, Exception)
    sub = _PROGRAM_EXC_TYPES.get(base)
    if sub is None:
        sub = type(base.__name__, (base,), {"__init__": lambda self, *a: BaseException.__init__(self, *a),
                                           "__module__": "builtins", "_cc_from_program": True})
        _PROGRAM_EXC_TYPES[base] = sub
    exc = sub(detail)
    exc._cc_detail, exc._cc_name = detail, name if name in BUILTIN_EXCEPTIONS else "Exception"
    return exc


class TestNamespace(dict):
    """Globals of one test: a name no trusted code defined is looked up in the program (a proxy)."""

    def __init__(self, program: Program, builtins_dict: dict):
        super().__init__(__builtins__=builtins_dict, __name__="__main__")
        self._program, self._builtins = program, builtins_dict

    def __missing__(self, name: str):
        if name in self._builtins:
            raise KeyError(name)  # the interpreter falls back to the (judge's) builtins
        if name in STDLIB and not name.startswith("_"):
            module = importlib.import_module(name)  # e.g. MBPP/596 uses `sys` that only the program imports
            self[name] = module
            return module
        value = self._program.lookup(name)
        self[name] = value
        return value


def _eq(actual, expected, literal: int) -> None:
    """``assert a == b`` with a message; the values are plain, so this is Python's own ``==``."""
    if not actual == expected:
        if literal == 2:
            raise AssertionError(f"expected {vd.short(expected)}, got {vd.short(actual)}")
        if literal == 1:
            raise AssertionError(f"expected {vd.short(actual)}, got {vd.short(expected)}")
        raise AssertionError(f"{vd.short(actual)} != {vd.short(expected)}")


def _is(actual, expected) -> None:
    if actual is not expected:
        raise AssertionError(f"expected {vd.short(expected)}, got {vd.short(actual)}")


def _compile(source: str, name: str):
    try:
        return compile(source, name, "exec", optimize=0)
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError):
        return None


def _status_of(exc: BaseException) -> dict:
    if isinstance(exc, ProgramDied):
        return {"status": exc.status, "detail": exc.detail}
    if isinstance(exc, Unusable):
        return {"status": "wrong_answer", "detail": str(exc)[:500]}
    if getattr(type(exc), "_cc_from_program", False):
        name = exc._cc_name
        return {"status": vd.exception_status(name), "exception": name, "detail": exc._cc_detail}
    name = type(exc).__name__
    try:
        detail = f"{name}: {exc}" if str(exc) else name
    except Exception:  # noqa: BLE001
        detail = name
    if isinstance(exc, AssertionError):  # the test's own assert: a wrong answer, not an exception
        return {"status": "wrong_answer", "detail": (str(exc) or "assertion failed")[-500:]}
    return {"status": vd.exception_status(name), "exception": name, "detail": detail[-500:]}


def run_function_tests(program: Program, events: Events, indices: list[int], secret: dict, meter,
                       limits: list[float] | None = None, load: tuple | None = None) -> list[dict]:
    """``limits``: each test's CPU limit (seconds), in the order of ``indices``; ``load``: (the job's CPU
    before the program started, the load's CPU limit)."""
    specs = secret["tests"]
    # Code objects compiled by the harness (trusted), so the judge does not compile per job; compiled here
    # instead when the workers run another Python than the harness (SandboxConfig.python).
    same = secret.get("magic") == importlib.util.MAGIC_NUMBER
    sources = secret.get("sources") or {}

    def code_of(blob, source, name):
        if same:
            return marshal.loads(blob) if blob else None
        return _compile(source, name) if source and source.strip() else None

    trusted = code_of(secret.get("trusted"), sources.get("trusted"), "prompt.py")
    setup = code_of(secret.get("setup"), sources.get("setup"), "test_setup.py")
    entry = secret.get("entry_point")
    first = None
    try:
        first = program.receive()
    except ProgramDied as exc:
        dead = vd.result(indices[0], exc.status, detail=exc.detail)
        return [dead] + [vd.result(i, "not_run", detail="the program ended before this test ran") for i in indices[1:]]
    if type(first) is tuple and first and first[0] == "syntax_error":
        return [vd.result(i, "syntax_error", detail=str(first[1])[:500]) for i in indices]
    if type(first) is tuple and first and first[0] == "load_error" and len(first) == 3:
        name = str(first[1])
        return [vd.result(i, vd.exception_status(name), exception=name, detail=str(first[2])[:500]) for i in indices]
    if first != ("loaded",):
        return [vd.result(i, "runtime_error", detail="the program wrote to its result channel") for i in indices]
    if load is not None and load[0] is not None and meter.cgroup and meter.cpu() - load[0] > load[1]:
        # As for a test: helpers on several cores can finish loading before the supervisor's first look at
        # the job's CPU (red team: ~1.1 s under a 1.0 s load limit, with a widened CPU affinity). Only with
        # the job cgroups: without them the supervisor makes this check when the first test begins.
        used = meter.cpu() - load[0]
        return [vd.result(i, "timeout", detail=f"loading the program used {used:.2f} s of CPU (helpers "
                                                f"included), limit {load[1]:.2f} s") for i in indices]
    out: list[dict] = []
    begun = -1  # the test the supervisor began with the previous one's "next" (no job cgroups)
    for local, index in enumerate(indices):
        if program.events.dead is not None or program.broken:
            out.append(vd.result(index, "not_run", detail="the program ended before this test ran"))
            continue
        spec = specs[local]
        # Measured here, from the job's cgroups (or /proc), which the program cannot write; the supervisor
        # reads where each test began from the phase memfd (Events.begin: no message, no wake-up) to apply
        # the test's CPU and wall limits, which hold until the next test begins or the judge replies.
        # Without the job cgroups the supervisor measures (``Events.measure``): one round trip per test, the
        # end of one test and the start of the next in one ("next"; the program waits for its next call
        # in between), a first "test" and a last "tested".
        local_meter = meter.cgroup
        if local_meter:
            c0 = meter.cpu()
            meter.reset_peak()
            t0 = time.monotonic()
            events.begin(local, c0, t0)
        else:
            if begun != local:
                events.measure("test", local)
            t0 = time.monotonic()
        outcome: dict = {"status": "passed"}
        try:
            if spec[0] == "call":
                _, fn_name, args, expected = spec
                value = program.name(fn_name)(*args)
                try:
                    ok = vd.json_normal(value) == vd.json_normal(expected)
                except ValueError:
                    ok = False
                if not ok:
                    outcome = {"status": "wrong_answer",
                               "detail": f"expected {vd.short(expected)}, got {vd.short(value)}"}
            else:
                code = marshal.loads(spec[1]) if same else compile(spec[2], "test.py", "exec", optimize=0)
                ns = TestNamespace(program, dict(builtins.__dict__))
                if trusted is not None:
                    try:
                        exec(trusted, ns)
                    except Exception:  # noqa: BLE001 - a prompt need not run on its own
                        pass
                if entry:
                    ns[entry] = program.name(entry)
                ns["__corecode_eq__"], ns["__corecode_is__"] = _eq, _is
                if setup is not None:
                    exec(setup, ns)
                exec(code, ns)
        except BaseException as exc:  # noqa: BLE001 - every failure of a test is its verdict
            outcome = _status_of(exc)
        wall = time.monotonic() - t0
        if local_meter:
            cpu, peak = meter.cpu() - c0, meter.peak() or 0
        elif local + 1 < len(indices):
            cpu, peak = events.measure("next", local)
            begun = local + 1
        else:
            cpu, peak = events.measure("tested", local)
        fields = {"cpu_time_s": max(0.0, cpu), "wall_time_s": wall, "peak_memory_bytes": int(peak)}
        if limits is not None and fields["cpu_time_s"] > limits[local]:
            # Work spread over helpers on several cores can end between two looks of the supervisor at
            # the job's CPU (red team: 1.1 s of CPU in 0.57 s of wall passed a 0.6 s limit): the test's
            # own figure decides, whatever it returned.
            outcome = {"status": "timeout", "detail": f"used {fields['cpu_time_s']:.2f} s of CPU (helpers "
                                                      f"included), limit {limits[local]:.2f} s"}
        status = outcome.pop("status")
        out.append(vd.result(index, status, **outcome, **fields))
    return out


def run_checker(source: str, cases: list[tuple[str, str, str]]) -> list[dict]:
    """A problem's own checker (trusted code) on the program's outputs; only a real ``True`` passes."""
    ns = {"__name__": "checker", "__builtins__": dict(builtins.__dict__)}
    try:
        exec(compile(source, "checker.py", "exec", optimize=0), ns)
        check = ns["check"]
    except BaseException as exc:  # noqa: BLE001
        return [{"status": "runtime_error", "detail": f"checker: {type(exc).__name__}: {exc}"[:300]} for _ in cases]
    out = []
    for given, expected, actual in cases:
        try:
            verdict = check(given, expected, actual)
            ok = verdict is True
            out.append({"status": "passed" if ok else "wrong_answer", "detail": "" if ok else "checker: wrong_answer"})
        except BaseException as exc:  # noqa: BLE001
            out.append({"status": vd.exception_status(type(exc).__name__),
                        "detail": f"checker: {type(exc).__name__}: {exc}"[:300]})
    return out


def serve(sock, judge: dict, meter) -> None:
    """The judge process's loop: one job after another, until the worker goes away."""
    events = Events(sock)
    events.phase_fd = judge["process"].phase_fd
    while True:
        job, fds = events.next_job()
        try:
            judge_one(job, fds, events, judge, meter)
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass


def judge_one(job: dict, fds: list[int], events: Events, judge: dict, meter) -> None:
    """Read the job's secret, run its function tests, judge its stdio cases, write the reply."""
    job_fds = fds  # closed before the reply is announced: when the harness has it, the judge holds none of them
    secret_fd, fds = fds[0], fds[1:]  # the harness's bytes, moved into a memfd unread (_run.take_secret)
    blob, size = b"", os.fstat(secret_fd).st_size
    while len(blob) < size:
        chunk = os.pread(secret_fd, size - len(blob), len(blob))
        if not chunk:
            break
        blob += chunk
    # Read: from here on this judge may call into the program, so the job is not handed to another one
    os.pwrite(events.phase_fd, SECRET.pack(events.seq), SECRET_AT)
    secret = pickle.loads(blob)
    del blob
    public = job.get("public") or secret["public"]  # the leader's copy, or (``_direct``) the harness's
    n = public["n_tests"]
    results: list[dict] = []
    if job["syntax_error"] is not None:
        results = [vd.result(i, "syntax_error", detail=str(job["syntax_error"])) for i in range(n)]
    else:
        function = next((g for g in public["groups"] if g["kind"] == "function"), None)
        if function is not None and job["program"]:
            req_w, rep_r, out_fd, err_fd = fds
            program = Program(req_w, rep_r, events)
            cpu_limits = [public["limits"]["cpu"][i] for i in function["tests"]]
            function_results = run_function_tests(program, events, function["tests"], secret, meter, cpu_limits,
                                                  (job.get("load_c0"), public["limits"]["load_cpu"]))
            cap = public["limits"]["output"]
            if os.fstat(out_fd).st_size >= cap:  # the write that hit the cap may have raised EFBIG
                first = next((r for r in function_results if r["status"] != "passed"), None)
                if first is not None:
                    first.update(status="output_limit", detail="output limit exceeded", exception=None)
            target = next((r for r in function_results if r["status"] != "passed"),
                          function_results[-1] if function_results else None)
            if target is not None:
                target["stdout"] = vd.text(os.pread(out_fd, vd.CAPTURE, 0))
                target["stderr"] = vd.text(os.pread(err_fd, vd.CAPTURE, 0))
            results.extend(function_results)
        results.extend(_stdio_results(public, secret, job["stdio"]))
    results.sort(key=lambda r: r["index"])
    reply = json.dumps({"tests": results, "wall": time.monotonic() - job["t0"]}).encode()
    offset = 0
    while offset < len(reply):  # into the worker's memfd: the worker sends it on, after its sweep, unread
        offset += os.pwrite(judge["reply_fd"], reply[offset:], offset)
    for fd in job_fds:
        os.close(fd)
    job_fds.clear()  # (serve closes what is left only when we did not get here)
    events.send("replied")


def _stdio_results(public: dict, secret: dict, reports: list[tuple[dict, dict]]) -> list[dict]:
    checker = secret.get("checker")
    verdicts: dict[int, dict] = {}
    if checker:
        clean = [(g, r) for g, r in reports if not r["killed"] and r["exit"] == 0 and not r["corrupt"]]
        cases = [(g["input"], secret["outputs"][g["tests"][0]], vd.text(r["stdout"])) for g, r in clean]
        for (g, _), verdict in zip(clean, run_checker(checker, cases)):
            verdicts[g["tests"][0]] = verdict
    out = []
    for group, rep in reports:
        index = group["tests"][0]
        rep["output_cap"] = public["limits"]["output"]
        rep["cpu_limit"] = public["limits"]["cpu"][index]
        out.append(vd.stdio_verdict(index, rep, secret["outputs"][index], verdicts.get(index)))
        if public.get("trace") is not None:  # a traced run (sandbox/trace.py): what the program left, as hex
            out[-1]["trace"] = [[str(x) if type(x) is not bytes else x.hex() for x in f[1:]]
                                for f in rep["frames"] if f[0] == "trace" and not rep["corrupt"]]
    return out
