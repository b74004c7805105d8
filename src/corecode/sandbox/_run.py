"""Fork and watch the exec children of a job (runs in the job's short-lived leader, never in the program).

Each test group gets one child forked from the job leader (itself forked per job from the warm worker,
which never reads a job): all function tests of a program share one child; each stdin/stdout case gets its
own. The leader watches the child's CPU time (from ``/proc`` and the job's cgroup), wall time, output size
and result frames, and SIGKILLs it at its limit. After every child the sweep kills and reaps everything
the child started (the cgroup's processes, or ``kill(-1)`` from inside the worker's PID namespace, which
also reaches processes that called ``setsid``).

The child compiles the program itself, so a pathological source can only hurt the sacrificial child.
"""

from __future__ import annotations

import fcntl
import json
import marshal
import pickle
import math
import os
import resource
import select
import signal
import socket
import stat
import struct
import sys
import time
import traceback

import _isolation as iso  # loaded by the worker from this directory
import _jobchild as jc
import _judge
from _meter import Meter, _cpu_of, _open_stat
import _safemarshal
import _verdict as vd

FRAME_HEAD = 20  # 16-byte nonce + 4-byte length
PLAIN_TYPES = (str, int, float, bytes, bool, type(None))
PAGE = os.sysconf("SC_PAGE_SIZE")


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
            try:  # never marshal.loads on the program's bytes: bounded shapes only (_safemarshal)
                item = _safemarshal.loads(payload, max_depth=1)
            except Exception:  # noqa: BLE001 - any malformed frame is the program's failure
                item = None
            if type(item) is not tuple or not item or not all(type(x) in PLAIN_TYPES for x in item):
                self.corrupt = True
                return new
            new.append(item)
        self.items.extend(new)
        return new


def job_environment(jobdir: str) -> dict[str, str]:
    """The whole environment of every job process (nothing of the harness's)."""
    return {"HOME": jobdir, "TMPDIR": jobdir, "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
            # one thread for numeric libraries: thread pools hit the address-space limit
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


_ENV_OF = [None]  # the job dir whose job environment this process has (set once by the worker, inherited)


def set_job_environment(jobdir: str) -> None:
    """Give this process exactly the job environment (and ``tempfile``'s directory) for ``jobdir``.

    The worker does it once at start (its job dir's path never changes), so job children inherit it over
    fork instead of building it per child (~50 copy-on-write faults and ~0.1 ms each); only trusted code
    runs between the worker and a job child, and none of it changes the environment.
    """
    if _ENV_OF[0] == jobdir:
        return
    os.environ.clear()
    os.environ.update(job_environment(jobdir))
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = jobdir
    _ENV_OF[0] = jobdir


def _become_job(stdin_fd: int, out_fd: int, err_fd: int, result_fd: int, ctx: dict, cpu_total: float,
                extra_fd: int | None = None) -> None:
    """In the freshly forked exec child, before any untrusted code: isolate, limit, scrub.

    ``result_fd`` becomes fd 3 and ``extra_fd`` (if any) fd 4; everything else above 2 is closed.
    """
    os.setsid()
    meter = ctx.get("meter")
    if meter is not None:
        meter.join()  # the job's cgroups: CPU and memory of everything this child starts are counted
    fds = [(stdin_fd, 0), (out_fd, 1), (err_fd, 2), (result_fd, 3)] + ([(extra_fd, 4)] if extra_fd is not None else [])
    moved = {}
    for fd, target in fds:  # through fresh copies first, so that one target cannot clobber a later source
        moved[target] = fcntl.fcntl(fd, fcntl.F_DUPFD, 16)
    for target, fd in moved.items():
        os.dup2(fd, target)
    os.closerange(5 if extra_fd is not None else 4, 1 << 20)
    os.chdir(ctx["jobdir"])
    set_job_environment(ctx["jobdir"])
    ipc = bool(ctx.get("ipc_namespace"))
    if ipc and not ctx["user_namespace"]:
        iso.unshare(iso.CLONE_NEWIPC)  # System V IPC and POSIX queues of this child only, gone with it
    if ctx["uid_drop"] or ctx["user_namespace"]:
        iso.drop_to_job_user(ctx["job_uid"], ctx["user_namespace"], ipc=ipc)
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    limits = ctx["limits"]
    statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)  # not open(): its io objects cost ~0.1 ms
    try:
        vm_size = int(os.read(statm, 256).split()[0]) * PAGE
    finally:
        os.close(statm)
    cpu = max(1, math.ceil(cpu_total))
    for name, value in ((resource.RLIMIT_AS, vm_size + limits["memory"]),
                        (resource.RLIMIT_CPU, (cpu + 1, cpu + 2)),
                        (resource.RLIMIT_FSIZE, limits["output"]),
                        (resource.RLIMIT_NOFILE, limits["nofile"]),
                        (resource.RLIMIT_CORE, 0),
                        (resource.RLIMIT_NPROC, limits["nproc"])):
        soft, hard = value if isinstance(value, tuple) else (value, value)
        resource.setrlimit(name, (soft, hard))
    if ctx.get("syscall_filter") and not iso.install_program_filter():  # no descriptor in flight, perf event or pidfd
        raise OSError("could not install the program filter in the job child")


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


def _watch(pid: int, result_r: int, out_fd: int, frames: Frames, limits: dict, phase_cpu: list[float],
           meter: Meter | None = None) -> str | None:
    """Wait for the child, enforcing per-phase CPU and wall limits; return why we killed it, if we did.

    With a ``meter`` the CPU limit is on the child's whole process tree, helpers included.
    """
    cpu_of = meter.cpu if meter is not None else (lambda: _cpu_of(pid))
    tick = meter.tick if meter is not None else 1.0
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(result_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    phase, phase_t, phase_c = 0, time.monotonic(), cpu_of()
    reason = None
    try:
        while True:
            cpu_limit = phase_cpu[min(phase, len(phase_cpu) - 1)]
            wall_limit = cpu_limit * limits["wall_factor"] + limits["wall_extra"]
            now = time.monotonic()
            used = cpu_of() - phase_c
            wait = min(phase_t + wall_limit - now, cpu_limit - used, tick)
            if used > cpu_limit or now - phase_t > wall_limit:
                reason = "timeout"
            elif frames.corrupt or os.fstat(out_fd).st_size >= limits["output"]:
                reason = "output" if not frames.corrupt else "corrupt"
            elif meter is not None and meter.oom():
                reason = "memory"
            if reason:
                os.kill(pid, signal.SIGKILL)
                if meter is not None:
                    meter.kill_all()
                return reason
            done = False
            for fd, _ in poller.poll(max(5, int(wait * 1000) + 1)):
                if fd == result_r:
                    data = os.read(result_r, 1 << 16)
                    if not data:
                        poller.unregister(result_r)
                    for item in frames.feed(data):
                        if item[0] == "begin" and len(item) == 2 and type(item[1]) is int:
                            phase, phase_t, phase_c = item[1] + 1, time.monotonic(), cpu_of()
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


def run_child(ctx: dict, payload: tuple, stdin: bytes | None, phase_cpu: list[float],
              files: tuple[str | None, str | None] = (None, None)) -> dict:
    """Fork one stdin/stdout child, watch it, reap it and everything it started, and describe how it went.

    ``files`` = (input file, output file) for file-I/O problems: the input is also written to that file
    in the job dir, and the output file (not stdout) is what gets judged. CPU time and peak memory are
    those of the child's whole process tree (the job's cgroups, or a sweep of its processes).
    """
    limits, meter = ctx["limits"], ctx["meter"]
    if files[0] and stdin is not None:
        _write_job_file(ctx, files[0], stdin)
    nonce = os.urandom(16)
    result_r, result_w = os.pipe2(os.O_CLOEXEC)
    out_fd, err_fd = _memfd("stdout"), _memfd("stderr")
    in_fd = _memfd("stdin", stdin) if stdin is not None else os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    base = _rss()
    exit_now = os._exit  # bound before the program runs: it may replace os._exit
    meter.start()
    c0, t0 = meter.cpu(), time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _become_job(in_fd, out_fd, err_fd, result_w, ctx, sum(phase_cpu))
            _child_main(payload, nonce)
        except BaseException:  # noqa: BLE001 - our own setup failed: say why on the job's stderr
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)
    os.close(result_w)
    meter.watch(pid)
    frames = Frames(nonce, limits["output"])
    try:
        reason = _watch(pid, result_r, out_fd, frames, limits, phase_cpu, meter)
    finally:
        _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    tree_cpu = meter.cpu() - c0  # before the sweep: what the child and its helpers used
    oom = meter.oom()
    peak = meter.peak()
    output = _read_job_file(ctx, files[1], limits["output"]) if files[1] else None
    ctx["sweep"]()  # kills and reaps whatever the child left behind, wipes the job dir
    report = {
        "frames": frames.items, "corrupt": frames.corrupt, "killed": reason, "oom": oom,
        "exit": os.waitstatus_to_exitcode(status),
        "cpu": max(tree_cpu, usage.ru_utime + usage.ru_stime), "wall": wall,
        "peak": peak if peak is not None else max(0, usage.ru_maxrss * 1024 - base),
        "stdout_size": os.fstat(out_fd).st_size,
        "stdout": _read_capped(out_fd, limits["output"]), "stderr": _read_capped(err_fd, limits["capture"]),
    }
    if output is not None:
        report["stdout"], report["stdout_size"] = output, len(output)
    for fd in (result_r, out_fd, err_fd, in_fd):
        os.close(fd)
    return report


def _child_main(payload: tuple, nonce: bytes) -> None:
    """In a stdio child, after isolation: compile (a syntax error is a frame), then run."""
    emit = jc._emitter(nonce)
    try:
        code = compile(payload[0], "solution.py", "exec")
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        emit(("syntax_error", f"{type(exc).__name__}: {exc}"[:500]))
        os._exit(0)
    trace = payload[1] if len(payload) > 1 else None
    if trace is not None:  # a traced run: the call is the caller's (public) input, compiled before the program runs
        trace = (compile(trace["call"], "call.py", "eval") if trace.get("call") else None, int(trace["max_vars"]))
    jc.run_stdio_program(code, nonce, trace)


def _program_main(program: str, setup: str, nonce: bytes) -> None:
    """In the program child of a function group: compile, then answer the judge's calls."""
    _, send = jc._frame_io(jc.REQUEST_FD, jc.REPLY_FD)
    try:
        code = compile(program, "solution.py", "exec")
        setup_code = compile(setup, "test_setup.py", "exec") if setup.strip() else None
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        send(("syntax_error", f"{type(exc).__name__}: {exc}"[:500]))
        os._exit(0)
    jc.serve_program(code, setup_code, nonce)


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


def _frames_of(buf: bytearray) -> list[tuple]:
    out = []
    while len(buf) >= 4:
        (size,) = struct.unpack("<I", buf[:4])
        if len(buf) < 4 + size:
            break
        out.append(marshal.loads(bytes(buf[4 : 4 + size])))
        del buf[: 4 + size]
    return out


def _send_head(fd: int, size: int) -> None:
    head = struct.pack("<I", size)
    while head:
        head = head[os.write(fd, head) :]


def _send_frame(fd: int, *message) -> None:
    data = marshal.dumps(message)
    frame = struct.pack("<I", len(data)) + data
    try:
        while frame:
            frame = frame[os.write(fd, frame) :]
    except (BrokenPipeError, OSError):
        pass  # the judge is gone; its exit is handled by the supervisor


def run_job(public: dict, ctx: dict, judge: dict) -> None:
    """Run every child of a job, then the judge, which replies to the harness; reply ourselves if it fails.

    stdin/stdout cases run first, each in its own child; then the function group's program child and
    the judge are forked (the judge last, so no program process is ever forked from a process that held
    the secret; the worker itself never reads it).
    """
    limits, meter = public["limits"], ctx["meter"]
    t0 = time.monotonic()
    meter.set_memory_limit(limits["memory"])
    stdio: list[tuple[dict, dict]] = []
    syntax_error = None
    files = tuple(public.get("files") or (None, None))
    stdio_groups = [g for g in public["groups"] if g["kind"] == "stdio"]
    if stdio_groups and public.get("trace") is None:
        # one case template per program (compiled once), a fresh child per case: see _cases
        import _cases  # noqa: PLC0415 - loaded by the worker at start; a module of this directory

        stdio, syntax_error = _cases.run_cases(ctx, public, stdio_groups, files)
        stdio_groups = []
    for group in stdio_groups:
        cpu = [limits["cpu"][group["tests"][0]]] * 2
        data = group["input"].encode("utf-8", "surrogateescape")
        rep = run_child(ctx, (public["program"], public.get("trace")), data, cpu, files)
        error = next((f[1] for f in rep["frames"] if f[0] == "syntax_error" and len(f) == 2), None)
        if error is not None and not rep["corrupt"]:
            syntax_error = str(error)
            break
        stdio.append((group, rep))
    function = next((g for g in public["groups"] if g["kind"] == "function"), None)
    program, load_c0 = None, None
    if function is not None and syntax_error is None:
        load_c0 = meter.cpu()  # the job's CPU before the program child: its load is measured from here
        program = _start_program(ctx, public)
    reply_fd = judge["reply_fd"]  # one per worker, emptied before and after each job
    os.ftruncate(reply_fd, 0)
    budget = 5.0 + limits["load_cpu"] + 2 * sum(limits["cpu"])
    jp = judge["process"]
    jp.seq += 1
    message = pickle.dumps({"public": public, "stdio": stdio, "syntax_error": syntax_error, "t0": t0,
                            "seq": jp.seq, "program": program is not None, "load_c0": load_c0}, protocol=5)
    secret = take_secret(judge["ctl_in"])
    fds = [secret] + ([program["req_w"], program["rep_r"], program["out_fd"], program["err_fd"]] if program else [])
    state = {"secret": False, "replied": False, "killed": False, "judge_exit": "no judge process"}
    phase = None  # when, and at which job CPU, the program's load began: the first attempt's, for every one
    try:
        for _ in range(3):
            # A judge that died before it read this job's secret (e.g. killed, without root, by the last
            # job's program in the moment before the sweep) gets replaced and the job handed over again:
            # no program can make another one fail that way.
            _ensure_judge(ctx, judge)
            try:
                _send_job(jp, message, fds)
            except OSError:
                _judge_gone(jp, ctx["meter"], kill=True)
                continue
            # Held from the first attempt on: a hand-over does not restart the load's clocks (red team: a
            # program that stopped and killed its judges got 2.4 s of load CPU under a 1 s limit)
            phase = phase or (time.monotonic(), meter.cpu())
            state = _supervise(ctx, public, function, program, jp, budget, t0, phase=phase)
            if state["secret"] or state["replied"] or state["killed"]:
                break
    finally:
        os.close(secret)
        if program:
            for fd in (program["req_w"], program["rep_r"], program["out_fd"], program["err_fd"]):
                if fd >= 0:
                    os.close(fd)
    ctx["sweep"](last=True)
    try:
        if state["replied"]:
            size = os.fstat(reply_fd).st_size
            _send_head(judge["ctl_out"], size)
            offset = 0
            while offset < size:  # kernel to kernel: the verdicts (with expected values) never enter us
                offset += os.sendfile(judge["ctl_out"], reply_fd, offset, size - offset)
            return
    finally:
        os.ftruncate(reply_fd, 0)
    reply_failure(judge, state, t0, public["n_tests"], judge["ctl_out"])


def take_secret(fd: int) -> int:
    """The job's secret part moved off the harness's pipe ``fd`` into a memfd of its own, kernel to kernel
    (``splice``: its bytes never enter this process), for the judge. Whatever then happens to the judge, the
    pipe is already past the job, and a judge that replaces a dead one reads the same part again: a program
    that kills its judge cannot leave the next job's frames to be read as this job's secret (red team,
    sixth session: without root, a kill between the judge's read and its mark did)."""
    head = b""
    while len(head) < 4:
        chunk = os.read(fd, 4 - len(head))
        if not chunk:
            raise EOFError("the harness's pipe closed before the job's secret part")
        head += chunk
    left = int.from_bytes(head, "little")
    secret = _memfd("secret")
    try:
        while left:
            moved = os.splice(fd, secret, left)
            if not moved:
                raise EOFError("the harness's pipe closed inside the job's secret part")
            left -= moved
    except BaseException:
        os.close(secret)
        raise
    return secret


def _secret_taken(jp: JudgeProcess) -> bool:
    """Whether the judge read this job's secret part (``_judge.SECRET_AT``): from then on it may have called
    into the program, so the job is not handed to another judge."""
    rec = os.pread(jp.phase_fd, _judge.SECRET.size, _judge.SECRET_AT)
    return len(rec) == _judge.SECRET.size and _judge.SECRET.unpack(rec)[0] == jp.seq


def reply_failure(judge: dict, state: dict, t0: float, n_tests: int, out: int) -> None:
    """The answer for a job whose judge did not reply: every test failed, with why."""
    if state["killed"]:
        status, detail = "timeout", "the tests did not finish within the job's time limits"
    else:
        status, detail = "runtime_error", f"the judge process failed (status {state['judge_exit']})"
    tests = [{"index": i, "status": status, "cpu_time_s": 0.0, "wall_time_s": 0.0, "peak_memory_bytes": 0,
              "exception": None, "detail": detail, "stdout": "", "stderr": ""} for i in range(n_tests)]
    judge["send"](out, json.dumps({"tests": tests, "wall": time.monotonic() - t0}).encode())


class JudgeProcess:
    """The worker's judge process: forked from the worker when first needed (and again after it died or
    was killed), it then serves job after job, so a job costs it no fork. It never runs program code and
    no program process is ever forked from it; it holds past jobs' secrets, which is why it runs as
    another uid and is not dumpable."""

    def __init__(self) -> None:
        self.pid, self.sock, self.pidfd, self.seq, self.buf = 0, None, -1, 0, bytearray()
        # Where the judge writes which test began (_judge.PHASE), read by the supervisor at its wake-ups.
        self.phase_fd = _memfd("phase")


def _ensure_judge(ctx: dict, judge: dict) -> None:
    jp, meter = judge["process"], ctx["meter"]
    if jp.pid and select.select([jp.pidfd], [], [], 0)[0]:  # it died since the last job
        _judge_gone(jp, meter, kill=False)
    if jp.pid:
        try:
            os.kill(jp.pid, signal.SIGCONT)  # undo a SIGSTOP a program sent it (possible without root)
        except ProcessLookupError:
            pass
        return
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    exit_now = os._exit
    pid = os.fork()
    if pid == 0:
        try:
            parent.close()
            keep = {judge["reply_fd"], child.fileno(), jp.phase_fd}  # not the harness's pipe: see take_secret
            keep |= {fd for name, fd in meter.fds.items() if name in ("cpu", "procs", "usage", "max_usage", "oom")}
            _become_judge(ctx, keep)
            meter.exclude.add(int(os.readlink("/proc/self")))
            _judge.serve(child, judge, meter)
        except BaseException:  # noqa: BLE001
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)
    child.close()
    jp.pid, jp.sock, jp.pidfd, jp.buf = pid, parent, os.pidfd_open(pid), bytearray()
    meter.exclude.add(pid)


def _judge_gone(jp: JudgeProcess, meter: Meter, kill: bool) -> int | None:
    """Forget a judge that died (or kill it first); return its exit status if we reaped it."""
    code = None
    if jp.pid:
        if kill:
            try:
                os.kill(jp.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            code = os.waitstatus_to_exitcode(os.waitpid(jp.pid, 0)[1])
        except ChildProcessError:  # already reaped by a sweep
            pass
        meter.exclude.discard(jp.pid)
    if jp.sock is not None:
        jp.sock.close()
    if jp.pidfd >= 0:
        os.close(jp.pidfd)
    jp.pid, jp.sock, jp.pidfd = 0, None, -1
    return code


def _send_job(jp: JudgeProcess, message: bytes, fds: list[int], tag: str = "job") -> None:
    """A job for the judge: ``("job", message)`` (the leader's pickled message) with the program's
    descriptors, or ``("direct", (seq, t0, c0))`` for a leader that became its program (``_direct``): the
    job's number, and when and at which job CPU the leader began, from its header."""
    body = marshal.dumps((tag, message))
    frame = struct.pack("<I", len(body)) + body
    # The descriptors travel with the frame's first bytes; the whole frame in one call where it fits (one
    # wake-up of the judge, not one for the head and one for the rest).
    sent = socket.send_fds(jp.sock, [frame], fds)
    if sent < len(frame):
        jp.sock.sendall(memoryview(frame)[sent:])


def _become_judge(ctx: dict, keep: set[int]) -> None:
    """In the judge: only its own descriptors, no program data, another uid, not dumpable, limited."""
    for fd in os.listdir("/proc/self/fd"):
        if int(fd) > 2 and int(fd) not in keep:
            try:
                os.close(int(fd))
            except OSError:
                pass
    os.chdir("/")
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    _ENV_OF[0] = None
    # The worker set tempfile's directory to the job dir for its job children (set_job_environment); the
    # judge runs trusted test and checker code, whose temporary files must never land where the program
    # (the same uid without root) can read them (red team: a test's temp file with the expected value).
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None
    if ctx["uid_drop"] or ctx["user_namespace"]:
        iso.drop_to_job_user(ctx["judge_uid"], ctx["user_namespace"])
    iso.prctl(iso.PR_SET_DUMPABLE, 0)  # the program (same uid without root) cannot ptrace or read us
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
                signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGPIPE, signal.SIGTSTP, signal.SIGTTIN,
                signal.SIGTTOU, signal.SIGURG, signal.SIGWINCH, signal.SIGIO, *range(signal.SIGRTMIN, signal.SIGRTMAX + 1)):
        signal.signal(sig, signal.SIG_IGN)  # without root the program shares our uid and can signal us
    statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)  # not open(): its io objects cost ~0.1 ms
    try:
        vm_size = int(os.read(statm, 256).split()[0]) * PAGE
    finally:
        os.close(statm)
    memory = max(ctx["limits"]["memory"], 1 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (vm_size + memory + (256 << 20),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))  # its reply memfd
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _start_program(ctx: dict, public: dict) -> dict:
    """Fork the function group's program child; it answers the judge's calls on two private pipes."""
    req_r, req_w = os.pipe2(os.O_CLOEXEC)
    rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
    out_fd, err_fd = _memfd("stdout"), _memfd("stderr")
    in_fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    limits, meter = ctx["limits"], ctx["meter"]
    exit_now = os._exit
    meter.start()
    quiet = ctx.get("quiet_fork", False)
    pid = iso.fork_quiet() if quiet else os.fork()
    if pid == 0:
        try:
            if quiet:
                iso.after_quiet_fork()
            _become_job(in_fd, out_fd, err_fd, req_r, ctx, limits["load_cpu"] + sum(limits["cpu"]), extra_fd=rep_w)
            _program_main(public["program"], public["setup"], b"")
        except BaseException:  # noqa: BLE001
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)
    for fd in (req_r, rep_w, in_fd):
        os.close(fd)
    meter.watch(pid)
    return {"pid": pid, "req_w": req_w, "rep_r": rep_r, "out_fd": out_fd, "err_fd": err_fd}


def _kill(pidfd: int) -> None:
    """SIGKILL through a pidfd: never another process that took the pid, and no error for one that already
    ended (a one-fork program's zygote reaps it the moment it exits, maybe before we saw it end)."""
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap_program(program: dict) -> int:
    """The ended program's exit code: from the zygote (one-fork jobs: ``program["reap"]``) or waited for."""
    status = program["reap"]() if "reap" in program else os.waitpid(program["pid"], 0)[1]
    return os.waitstatus_to_exitcode(status)


def _supervise(ctx: dict, public: dict, function: dict | None, program: dict | None, jp: JudgeProcess,
               budget: float, t0: float, phase: tuple[float, float] | None = None) -> dict:
    """Serve the judge's events (test boundaries: the limits to apply), watch the program child and the
    judge, enforce the limits; return when the judge has replied, died or was killed. ``phase``: when
    and at which job CPU the program's load phase began, if before this call (``_direct``)."""
    limits, meter = public["limits"], ctx["meter"]
    state = {"secret": False, "replied": False, "killed": False, "judge_exit": None}
    p_alive = program is not None and "death" not in program
    pfd = -1
    if p_alive:
        try:
            pfd = os.pidfd_open(program["pid"])
        except ProcessLookupError:  # a one-fork program that ended at once, already reaped by the zygote
            program["death"] = vd.death(None, _reap_program(program))
            p_alive = False
    sock = jp.sock.fileno()
    poller = select.poll()
    for fd in (sock, jp.pidfd) + ((pfd,) if p_alive else ()):
        poller.register(fd, select.POLLIN)
    if program is not None and not p_alive:  # a judge before this one saw it die
        _send_frame(sock, "dead", jp.seq, *program["death"])
    p_reason = None
    phase_limit = limits["load_cpu"] if program else None
    phase_t, phase_c = phase if phase is not None else (time.monotonic(), meter.cpu())
    deadline = t0 + public["deadline_s"] + 10.0  # the harness waits job_timeout_margin_s (30 s) longer
    judge_stat = _open_stat(jp.pid)  # read again at every wake-up: one pread, not an open and a close
    judge_cpu0 = _cpu_of(jp.pid, judge_stat)
    # The judge does not wake us when a test begins: it writes the test's index and its start (job CPU,
    # time) into the phase memfd, read here at every wake-up. We sleep at most the smallest limit of the
    # job, so a test that began while we slept has used less than its own limit when we next look, and is
    # then held to it exactly as if we had been woken. The judge's CPU budget is read at most every 20 ms.
    test_limits = [limits["cpu"][i] for i in function["tests"]] if function else []
    nap = min([limits["load_cpu"]] + test_limits)
    seen = -1
    top = 0.0  # the most CPU the current phase was seen to use
    judge_checked = -1.0
    try:
        while True:
            now = time.monotonic()
            if function is not None and meter.cgroup:  # (without them the judge asks: "test", below)
                rec = os.pread(jp.phase_fd, _judge.PHASE.size, 0)
                if len(rec) == _judge.PHASE.size:
                    seq, local, c_begin, t_begin = _judge.PHASE.unpack(rec)
                    if seq == jp.seq and local != seen and 0 <= local < len(test_limits):
                        seen, phase_limit, phase_t, phase_c, top = local, test_limits[local], t_begin, c_begin, 0.0
            used = None
            if p_alive and phase_limit is not None:
                used = meter.cpu() - phase_c
                top = max(top, used)
                if p_reason is None:
                    wall_limit = phase_limit * limits["wall_factor"] + limits["wall_extra"]
                    if used > phase_limit or now - phase_t > wall_limit:
                        p_reason = "timeout"
                    elif os.fstat(program["out_fd"]).st_size >= limits["output"]:
                        p_reason = "output"
                    elif meter.oom():
                        p_reason = "memory"
                    if p_reason:
                        _kill(pfd)
                        meter.kill_all()
            judge_over = False
            if now - judge_checked >= 0.02:
                judge_checked = now
                judge_over = _cpu_of(jp.pid, judge_stat) - judge_cpu0 > budget
            if now > deadline or judge_over:
                state["killed"] = True
                state["judge_exit"] = _judge_gone(jp, meter, kill=True)
                return state
            wait = min(meter.tick, nap)
            if used is not None:
                wall_left = phase_t + phase_limit * limits["wall_factor"] + limits["wall_extra"] - now
                wait = min(wait, max(0.0, phase_limit - used), max(0.0, wall_left))
            for fd, _ in poller.poll(max(5, int(wait * 1000) + 1)):
                if fd == sock:
                    try:
                        data = os.read(sock, 1 << 16)
                    except OSError:
                        data = b""
                    if not data:
                        poller.unregister(sock)
                        continue
                    jp.buf += data
                    for item in _frames_of(jp.buf):
                        tag = item[0]
                        if tag == "replied":
                            state["replied"] = True
                            return state
                        if tag in ("test", "tested", "next") and len(item) == 3 and item[1] == jp.seq \
                                and not meter.cgroup and type(item[2]) is int and 0 <= item[2] < len(test_limits):
                            # Without the job cgroups the judge sees no job process (hidepid=2): it asks us
                            # to measure a test's start and end (``_judge.Events.measure``).
                            now_c = meter.cpu()  # one walk of the job's processes serves both ends
                            if p_alive and phase_limit is not None:
                                top = max(top, now_c - phase_c)
                            local, mark = item[2], (0.0, 0)
                            if tag != "test":  # a test ended: its figures
                                mark = (top, meter.peak() or 0)
                                local += 1
                            elif seen == -1 and p_alive and p_reason is None and top > limits["load_cpu"]:
                                # the load's helpers on several cores can finish between two of our looks
                                p_reason = "timeout"
                                _kill(pfd)
                                meter.kill_all()
                            if tag != "tested" and local < len(test_limits):  # the next test begins now
                                seen, phase_limit, phase_t, phase_c, top = (local, test_limits[local], time.monotonic(),
                                                                            now_c, 0.0)
                                meter.reset_peak()
                            _send_frame(sock, "mark", jp.seq, *mark)  # (after the reset: the judge calls at once)
                elif fd == pfd:
                    poller.unregister(pfd)
                    code = _reap_program(program)
                    p_alive = False
                    if p_reason is None and meter.oom():
                        p_reason = "memory"
                    program["death"] = vd.death(p_reason, code)
                    _send_frame(sock, "dead", jp.seq, *program["death"])
                elif fd == jp.pidfd:
                    state["judge_exit"] = _judge_gone(jp, meter, kill=False)
                    return state
    finally:
        state["secret"] = state["replied"] or _secret_taken(jp)
        if judge_stat >= 0:
            os.close(judge_stat)
        if pfd >= 0:
            # A judge that went before it read this job's secret never called into the program, which is
            # still waiting for its first call: it waits for the next judge (the caller hands the job over).
            # Ended here, the job failed whatever the next judge did: a judge killed a moment before the
            # job was sent (without root, by the previous job's program) failed an honest job (3 % of jobs
            # under load in tests/test_sandbox_cheats.py's judge-killing test).
            handed_over = not (state["secret"] or state["killed"]) and p_reason is None  # not one we killed
            if p_alive and not handed_over:  # the job is over or lost: the program ends with it, its death
                # recorded for the caller
                _kill(pfd)
                program["death"] = vd.death(p_reason or "judge", _reap_program(program))
            os.close(pfd)
