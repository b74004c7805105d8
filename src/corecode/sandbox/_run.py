"""Fork and watch the exec children of a job (runs in the worker, which never runs the program itself).

Each test group gets one child forked straight from the warm worker: all function tests of a program
share one child; each stdin/stdout case gets its own. The worker watches the child's CPU time (from
``/proc``), wall time, output size and result frames, and SIGKILLs it at its limit. After every child
the worker's sweep kills and reaps everything the child started: the worker is pid 1 of its own PID
namespace, so one ``kill(-1)`` reaches even processes that called ``setsid``.

The child compiles the program itself, so a pathological source can only hurt the sacrificial child.
"""

from __future__ import annotations

import marshal
import math
import os
import resource
import select
import signal
import stat
import struct
import sys
import time
import traceback

import _isolation as iso  # loaded by the worker from this directory
import _jobchild as jc

FRAME_HEAD = 20  # 16-byte nonce + 4-byte length
PLAIN_TYPES = (str, int, float, bytes, bool, type(None))
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _rss() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * PAGE


class Frames:
    """Parses the nonce-framed result stream of one exec child; anything malformed marks it corrupt."""

    def __init__(self, nonce: bytes, cap: int):
        self.nonce, self.cap = nonce, cap
        self.buf = bytearray()
        self.items: list[tuple] = []
        self.corrupt = False
        self.total = 0

    def feed(self, data: bytes) -> list[tuple]:
        self.total += len(data)
        if self.corrupt or self.total > self.cap:
            self.corrupt = True
            return []
        self.buf += data
        new = []
        while len(self.buf) >= FRAME_HEAD:
            if bytes(self.buf[:16]) != self.nonce:
                self.corrupt = True
                return new
            (size,) = struct.unpack("<I", self.buf[16:20])
            if len(self.buf) < FRAME_HEAD + size:
                break
            payload = bytes(self.buf[FRAME_HEAD : FRAME_HEAD + size])
            del self.buf[: FRAME_HEAD + size]
            try:
                item = marshal.loads(payload)
            except (ValueError, EOFError, TypeError):
                item = None
            if type(item) is not tuple or not item or not all(type(x) in PLAIN_TYPES for x in item):
                self.corrupt = True
                return new
            new.append(item)
        self.items.extend(new)
        return new


def _become_job(stdin_fd: int, out_fd: int, err_fd: int, result_fd: int, ctx: dict, cpu_total: float) -> None:
    """In the freshly forked exec child, before any untrusted code: isolate, limit, scrub."""
    os.setsid()
    for fd, target in ((stdin_fd, 0), (out_fd, 1), (err_fd, 2), (result_fd, 3)):
        os.dup2(fd, target)
    os.closerange(4, 1 << 20)
    os.chdir(ctx["jobdir"])
    os.environ.clear()
    os.environ.update({"HOME": ctx["jobdir"], "TMPDIR": ctx["jobdir"], "PATH": "/usr/local/bin:/usr/bin:/bin",
                       "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                       # one thread for numeric libraries: thread pools hit the address-space limit
                       "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = ctx["jobdir"]
    if ctx["uid_drop"] or ctx["user_namespace"]:
        iso.drop_to_job_user(ctx["job_uid"], ctx["user_namespace"])
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    limits = ctx["limits"]
    with open("/proc/self/statm", "rb") as f:
        vm_size = int(f.read().split()[0]) * PAGE
    cpu = max(1, math.ceil(cpu_total))
    for name, value in ((resource.RLIMIT_AS, vm_size + limits["memory"]),
                        (resource.RLIMIT_CPU, (cpu + 1, cpu + 2)),
                        (resource.RLIMIT_FSIZE, limits["output"]),
                        (resource.RLIMIT_NOFILE, limits["nofile"]),
                        (resource.RLIMIT_CORE, 0),
                        (resource.RLIMIT_NPROC, limits["nproc"])):
        soft, hard = value if isinstance(value, tuple) else (value, value)
        resource.setrlimit(name, (soft, hard))


def _memfd(name: str, data: bytes = b"") -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    if data:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_capped(fd: int, cap: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, cap), 0) if size else b""


def _watch(pid: int, result_r: int, out_fd: int, frames: Frames, limits: dict, phase_cpu: list[float]) -> str | None:
    """Wait for the child, enforcing per-phase CPU and wall limits; return why we killed it, if we did."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(result_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    phase, phase_t, phase_c = 0, time.monotonic(), 0.0
    reason = None
    try:
        while True:
            cpu_limit = phase_cpu[min(phase, len(phase_cpu) - 1)]
            wall_limit = cpu_limit * limits["wall_factor"] + limits["wall_extra"]
            now = time.monotonic()
            used = _cpu_of(pid) - phase_c
            wait = min(phase_t + wall_limit - now, cpu_limit - used)
            if used > cpu_limit or now - phase_t > wall_limit:
                reason = "timeout"
            elif frames.corrupt or os.fstat(out_fd).st_size >= limits["output"]:
                reason = "output" if not frames.corrupt else "corrupt"
            if reason:
                os.kill(pid, signal.SIGKILL)
                return reason
            done = False
            for fd, _ in poller.poll(max(5, int(wait * 1000) + 1)):
                if fd == result_r:
                    data = os.read(result_r, 1 << 16)
                    if not data:
                        poller.unregister(result_r)
                    for item in frames.feed(data):
                        if item[0] == "begin" and len(item) == 2 and type(item[1]) is int:
                            phase, phase_t, phase_c = item[1] + 1, time.monotonic(), _cpu_of(pid)
                else:
                    done = True
            if done:
                os.set_blocking(result_r, False)
                try:
                    while data := os.read(result_r, 1 << 16):
                        frames.feed(data)
                except BlockingIOError:
                    pass
                return None
    finally:
        os.close(pidfd)


def _child_main(kind: str, payload: tuple, nonce: bytes) -> None:
    """In the exec child, after isolation: compile (a syntax error is a frame), then run."""
    emit = jc._emitter(nonce)
    try:
        if kind == "checker":
            source, cases_blob = payload
            code = compile(source, "checker.py", "exec")
            jc.run_checker(code, cases_blob, nonce)
        program, setup, items, names = payload
        code = compile(program, "solution.py", "exec")
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        emit(("syntax_error", f"{type(exc).__name__}: {exc}"[:500]))
        os._exit(0)
    if kind == "stdio":
        jc.run_stdio_program(code, nonce)
    setup_code = compile(setup, "test_setup.py", "exec") if setup.strip() else None
    compiled = [("assert", compile(i[1], "test.py", "exec")) if i[0] == "assert" else i for i in items]
    jc.run_function_tests(code, setup_code, compiled, names, nonce)


def run_child(ctx: dict, kind: str, payload: tuple, stdin: bytes | None, phase_cpu: list[float],
              files: tuple[str | None, str | None] = (None, None)) -> dict:
    """Fork one exec child, watch it, reap it and everything it started, and describe how it went.

    ``files`` = (input file, output file) for file-I/O problems: the input is also written to that file
    in the job dir, and the output file (not stdout) is what gets judged.
    """
    limits = ctx["limits"]
    if files[0] and stdin is not None:
        _write_job_file(ctx, files[0], stdin)
    nonce = os.urandom(16)
    result_r, result_w = os.pipe2(os.O_CLOEXEC)
    out_fd, err_fd = _memfd("stdout"), _memfd("stderr")
    in_fd = _memfd("stdin", stdin) if stdin is not None else os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    base = _rss()
    exit_now = os._exit  # bound before the program runs: it may replace os._exit
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _become_job(in_fd, out_fd, err_fd, result_w, ctx, sum(phase_cpu))
            _child_main(kind, payload, nonce)
        except BaseException:  # noqa: BLE001 - our own setup failed: say why on the job's stderr
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)
    os.close(result_w)
    frames = Frames(nonce, limits["output"])
    try:
        reason = _watch(pid, result_r, out_fd, frames, limits, phase_cpu)
    finally:
        _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    output = _read_job_file(ctx, files[1], limits["output"]) if files[1] else None
    ctx["sweep"]()  # kills and reaps whatever the child left behind, wipes the job dir
    report = {
        "frames": frames.items, "corrupt": frames.corrupt, "killed": reason,
        "exit": os.waitstatus_to_exitcode(status), "cpu": usage.ru_utime + usage.ru_stime, "wall": wall,
        "peak": max(0, usage.ru_maxrss * 1024 - base),
        "stdout_size": os.fstat(out_fd).st_size,
        "stdout": _read_capped(out_fd, limits["output"]), "stderr": _read_capped(err_fd, limits["capture"]),
    }
    if output is not None:
        report["stdout"], report["stdout_size"] = output, len(output)
    for fd in (result_r, out_fd, err_fd, in_fd):
        os.close(fd)
    return report


def _job_path(ctx: dict, name: str) -> str:
    if os.path.basename(name) != name or name in ("", ".", ".."):
        raise ValueError(f"file name {name!r} must be a plain name inside the job directory")
    return os.path.join(ctx["jobdir"], name)


def _write_job_file(ctx: dict, name: str, data: bytes) -> None:
    path = _job_path(ctx, name)
    with open(path, "wb") as f:
        f.write(data)
    if ctx["uid_drop"]:
        os.chown(path, ctx["job_uid"], ctx["job_uid"])


def _read_job_file(ctx: dict, name: str, cap: int) -> bytes:
    """The program's output file, read without following links (the program could plant one)."""
    try:
        fd = os.open(_job_path(ctx, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, cap)
    finally:
        os.close(fd)


def run_groups(public: dict, ctx: dict) -> dict:
    """Run every test group of a program job; stop early on a syntax error."""
    limits = public["limits"]
    groups = []
    for group in public["groups"]:
        if group["kind"] == "function":
            cpu = [limits["load_cpu"]] + [limits["cpu"][i] for i in group["tests"]]
            payload = (public["program"], public["setup"], group["items"], tuple(public["check_names"]))
            rep = run_child(ctx, "function", payload, None, cpu)
        else:
            cpu = [limits["cpu"][group["tests"][0]]] * 2
            data = group["input"].encode("utf-8", "surrogateescape")
            files = tuple(public.get("files") or (None, None))
            rep = run_child(ctx, "stdio", (public["program"], "", [], ()), data, cpu, files)
        error = next((f[1] for f in rep["frames"] if f[0] == "syntax_error" and len(f) == 2), None)
        if error is not None and not rep["corrupt"]:
            return {"syntax_error": str(error)}
        groups.append(rep)
    return {"groups": groups}


def run_checker_job(source: str, cases: list, limits: dict, ctx: dict) -> dict:
    cpu = [limits["load_cpu"]] + [limits["cpu"][0]] * len(cases)
    return {"groups": [run_child(ctx, "checker", (source, marshal.dumps(cases)), None, cpu)]}
