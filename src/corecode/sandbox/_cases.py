"""stdin/stdout cases of one program: compiled once in a *case template*, each case run in a fresh child.

Runs in the job leader (``_run.run_job``); standard library only, loaded by the worker from this directory.

The leader forks one template per program. The template does, once, what every case child used to do on
its own: ``setsid``, membership of the job's cgroups, the job dir as cwd, the fixed environment, the
rlimits other than CPU, the job's groups (as root), compiling the program and making the standard
streams; it never runs program code. Then, per case, the leader sends it four fresh
descriptors (stdin with the case's input, stdout, stderr, the result channel) and the case's CPU limit; the
template puts them on fds 0-3, enters a fresh IPC namespace (as root) and forks the *case child*, which
takes a session of its own, drops to the job's uid (without root: enters a nested user and IPC
namespace), sets its CPU limit and runs the code as ``__main__``. The template reaps it and tells the leader how it ended (wait status, CPU, peak RSS).

The leader watches each case as before (CPU of the job's cgroup, wall time, output size, OOM kills), kills
the case at its limits, and after every case kills every job process but the template and wipes the job
dir (made anew) and the scratch tmpfs. So every case starts from the template's memory (which no program
code ever touched: a fork is one-way), with no process, file or IPC object of an earlier case, and the
same pid; what cases of one program share is what the template set up before any of them ran. A case that
kills or stops the template (possible only without root, when they share a uid) fails itself; the leader
starts a new template for the remaining cases. docs/sandbox.md says what this gives up and why no verdict
can depend on it; tests/test_sandbox_cases.py tries to carry answers from case to case.

Expected outputs never come here: the judge compares the outputs after all cases ran.
"""

from __future__ import annotations

import builtins
import gc
import math
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback

import _isolation as iso
import _jobchild as jc
import _run

GO = struct.Struct("<d16s")  # leader -> template: the case's CPU limit, the result frames' nonce
DONE = struct.Struct("<idq")  # template -> leader: wait status, CPU seconds (rusage), peak RSS (KiB)
SOCK_FD, NULL_FD = 4, 5  # the template's socket and /dev/null; fds 0-3 are the current case's (or /dev/null)
LAST_PID_FD = 6  # /proc/sys/kernel/ns_last_pid of the worker's PID namespace, where it can be written
LAST_FD = 6

# Cases are forked with ``iso.raw_fork``: without Python's at-fork machinery (it reseeds `random`,
# re-creates `threading`'s locks and runs other modules' hooks: about half the cost of a fork here, mostly
# copy-on-write faults in both processes). Safe in the template: it is single-threaded, holds no lock and
# imports nothing while it forks, so there is nothing for those hooks to repair.


class Template:
    """The leader's handle on one case template."""

    def __init__(self, ctx: dict, public: dict):
        self.ctx, self.public = ctx, public
        self.pid, self.sock, self.pidfd = 0, None, -1
        self.base_rss = 0

    # -- start and stop ------------------------------------------------------------------------------
    def start(self) -> tuple[str, str] | None:
        """Fork the template and wait until it compiled the program (under the job's largest CPU limit).

        Returns None when it is ready, ("syntax_error", detail) for a program that does not compile, or
        (status, detail) of a template that could not get ready (every case then gets that verdict, as
        each case child that compiled the program itself would have).
        """
        limits, meter = self.ctx["limits"], self.ctx["meter"]
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        meter.start()
        c0, t0 = meter.cpu(), time.monotonic()
        exit_now = os._exit
        pid = os.fork()
        if pid == 0:
            try:
                parent.close()
                _template_main(child.fileno(), self.ctx, self.public)
            except BaseException:  # noqa: BLE001 - our own failure: say why on stderr
                try:
                    os.write(2, traceback.format_exc().encode()[-4000:])
                except OSError:
                    pass
            finally:
                exit_now(1)
        child.close()
        self.pid, self.sock, self.pidfd = pid, parent, os.pidfd_open(pid)
        meter.spare.add(pid)
        limit = limits["load_cpu"]
        wall = limit * limits["wall_factor"] + limits["wall_extra"]
        while True:
            used, now = meter.cpu() - c0, time.monotonic()
            if used > limit or now - t0 > wall:
                self.stop()
                return "timeout", "the program did not compile within the time limit"
            if meter.oom():
                self.stop()
                return "memory_exceeded", "memory limit exceeded while compiling the program"
            wait = max(0.0, min(meter.tick, limit - used, t0 + wall - now))
            ready, _, _ = select.select([self.sock, self.pidfd], [], [], wait)
            if self.sock in ready:
                try:
                    message = self.sock.recv(1 << 12)
                except OSError:
                    message = b""
                if message[:1] == b"R" and len(message) == 9:
                    self.base_rss = struct.unpack("<q", message[1:])[0]
                    return None
                if message[:1] == b"S":
                    detail = message[1:].decode("utf-8", "replace")
                    self.stop()
                    return "syntax_error", detail
                ready = [self.pidfd]  # EOF or garbage: it is gone or broken
            if self.pidfd in ready:
                code = self.stop()
                return "runtime_error", f"the program's case runner failed while compiling it (status {code})"

    def stop(self) -> int | None:
        """Kill and reap the template (idempotent); its exit status if we reaped it."""
        code = None
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            except ChildProcessError:  # reaped by a sweep already
                pass
            self.ctx["meter"].spare.discard(self.pid)
        if self.sock is not None:
            self.sock.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
        self.pid, self.sock, self.pidfd = 0, None, -1
        return code

    def case_pids(self) -> list[int]:
        """The template's children: the running case child, if any."""
        try:
            with open(f"/proc/{self.pid}/task/{self.pid}/children", "rb") as f:
                return [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            return []

    # -- one case ------------------------------------------------------------------------------------
    def run(self, stdin: bytes, cpu_limit: float, files: tuple) -> dict:
        """Run one case; the same report ``_run.run_child`` gives, for the judge's ``stdio_verdict``."""
        ctx = self.ctx
        limits, meter = ctx["limits"], ctx["meter"]
        if files[0]:
            _run._write_job_file(ctx, files[0], stdin)
        nonce = os.urandom(16)
        fds = [_run._memfd("stdin", stdin), _run._memfd("stdout"), _run._memfd("stderr"), _run._memfd("result")]
        out_fd = fds[1]
        meter.start()
        c0, t0 = meter.cpu(), time.monotonic()
        wall_limit = cpu_limit * limits["wall_factor"] + limits["wall_extra"]
        reason, done, gone = None, None, False
        try:
            socket.send_fds(self.sock, [GO.pack(cpu_limit, nonce)], fds)
        except OSError:
            gone = True
        killed_at, first = 0.0, True
        while not gone:
            now = time.monotonic()
            used = 0.0 if first else meter.cpu() - c0  # nothing to check before the first wait
            if reason is None:
                if first:
                    pass
                elif used > cpu_limit or now - t0 > wall_limit:
                    reason = "timeout"
                elif os.fstat(out_fd).st_size >= limits["output"]:
                    reason = "output"
                elif meter.oom():
                    reason = "memory"
                if reason:
                    self._kill_case()
                    killed_at = now
            elif now - killed_at > 5.0:  # killed, yet the template does not say so: it is wedged
                gone = True
                break
            wait = 0.5 if reason else max(0.0, min(meter.tick, cpu_limit - used, t0 + wall_limit - now))
            first = False
            ready, _, _ = select.select([self.sock, self.pidfd], [], [], wait)
            if self.sock in ready:
                try:
                    message = self.sock.recv(64)
                except OSError:
                    message = b""
                if len(message) == DONE.size:
                    done = DONE.unpack(message)
                    break
                gone = True
            elif self.pidfd in ready:
                gone = True
        if gone:  # the case took its template down (or wedged it): it fails, even if it had finished
            reason = reason or "template"  # (a runtime error: killed); a new template runs the next case
            self._kill_case()
            self.stop()
        wall = time.monotonic() - t0
        tree_cpu = meter.cpu() - c0
        oom = meter.oom()
        peak = meter.peak()
        output = _run._read_job_file(ctx, files[1], limits["output"]) if files[1] else None
        # Every job process but the template (found by a walk of /proc: cgroup v1's cgroup.procs, read
        # again on an open descriptor, repeats a cached list for up to a second), then the job dir (made
        # anew) and the scratch tmpfs.
        ctx["sweep"]()
        frames = _run.Frames(nonce, limits["output"])
        frames.feed(_run._read_capped(fds[3], limits["output"] + 1))
        status, cpu, maxrss = done if done is not None else (signal.SIGKILL, 0.0, 0)
        report = {
            "frames": frames.items, "corrupt": frames.corrupt, "killed": reason, "oom": oom,
            "exit": os.waitstatus_to_exitcode(status) if done is not None else -signal.SIGKILL,
            "cpu": max(tree_cpu, cpu), "wall": wall,
            "peak": peak if peak is not None else max(0, maxrss * 1024 - self.base_rss),
            "stdout_size": os.fstat(out_fd).st_size,
            "stdout": _run._read_capped(out_fd, limits["output"]), "stderr": _run._read_capped(fds[2], limits["capture"]),
        }
        if output is not None:
            report["stdout"], report["stdout_size"] = output, len(output)
        for fd in fds:
            os.close(fd)
        return report

    def _kill_case(self) -> None:
        for pid in self.case_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.ctx["meter"].kill_all()  # helpers (every job process but the template)


def run_cases(ctx: dict, public: dict, groups: list[dict], files: tuple) -> tuple[list[tuple[dict, dict]], str | None]:
    """Every stdin/stdout group of the job, in order: ([(group, report)], syntax error or None)."""
    limits = ctx["limits"]
    template = Template(ctx, public)
    out: list[tuple[dict, dict]] = []
    try:
        for group in groups:
            if not template.pid:
                failed = template.start()
                if failed is not None and failed[0] == "syntax_error":
                    return out, failed[1]
                if failed is not None:  # it could not get ready: so would every case's own child
                    for g in groups[len(out):]:
                        out.append((g, _failed_report(failed)))
                    ctx["sweep"]()
                    return out, None
            data = group["input"].encode("utf-8", "surrogateescape")
            out.append((group, template.run(data, limits["cpu"][group["tests"][0]], files)))
    finally:
        template.stop()
    return out, None


def _failed_report(failed: tuple[str, str]) -> dict:
    """A case that never ran because its program's template could not start (timeout, memory, crash)."""
    status, detail = failed
    killed = {"timeout": "timeout", "memory_exceeded": "memory"}.get(status)
    return {"frames": [], "corrupt": False, "killed": killed, "oom": status == "memory_exceeded",
            "exit": -signal.SIGKILL, "cpu": 0.0, "wall": 0.0, "peak": 0, "stdout_size": 0, "stdout": b"",
            "stderr": detail.encode()[:500]}


# -- in the template ---------------------------------------------------------------------------------------
def _template_main(sock_fd: int, ctx: dict, public: dict) -> None:
    """Set up once what every case shares, compile the program, then fork one child per case."""
    os.setsid()
    ctx["meter"].join()  # the job's cgroups: CPU and memory of the template and every case are counted
    if sock_fd != SOCK_FD:
        os.dup2(sock_fd, SOCK_FD)
    os.closerange(0, SOCK_FD)
    os.closerange(SOCK_FD + 1, 1 << 20)
    _move(os.open("/dev/null", os.O_RDWR), NULL_FD)
    for target in range(SOCK_FD):  # kept occupied, so that a case's descriptors arrive above them
        os.dup2(NULL_FD, target)
    os.chdir("/")  # each case enters the job dir by path: it is made anew after every case
    _run.set_job_environment(ctx["jobdir"])
    iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
    iso.prctl(iso.PR_SET_DUMPABLE, 0)  # without root the cases share our uid: no ptrace, no /proc/N/mem
    limits = ctx["limits"]
    with open("/proc/self/statm", "rb") as f:
        vm_size = int(f.read().split()[0]) * _run.PAGE
    own_cpu = max(1, math.ceil(limits["load_cpu"] + sum(limits["cpu"]))) + 5
    if ctx.get("pid_namespace"):  # the worker's own: every case gets the pid after ours, so the pid
        try:                       # counter carries nothing from one case to the next
            _move(os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY), LAST_PID_FD)
        except OSError:
            pass
    for name, value in ((resource.RLIMIT_AS, vm_size + limits["memory"]),
                        (resource.RLIMIT_CPU, own_cpu),  # the template's own; each case sets its own
                        (resource.RLIMIT_FSIZE, limits["output"]),
                        (resource.RLIMIT_NOFILE, limits["nofile"]),
                        (resource.RLIMIT_CORE, 0),
                        (resource.RLIMIT_NPROC, limits["nproc"])):
        resource.setrlimit(name, (value, value))
    if ctx["uid_drop"]:  # the groups now; the uid only in each case child (we keep forking as root)
        os.setgroups([])
        os.setresgid(ctx["job_uid"], ctx["job_uid"], ctx["job_uid"])
    sock = socket.socket(fileno=SOCK_FD)
    try:
        code = compile(public["program"], "solution.py", "exec")
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        sock.send(b"S" + f"{type(exc).__name__}: {exc}"[:500].encode("utf-8", "replace"))
        os._exit(0)
    # The case's standard streams, made once over fds 0-2 (each case child finds its own descriptors
    # there): unused here, so every child starts them empty, as if it had opened them itself.
    jc._std_streams("solution.py")
    with open("/proc/self/statm", "rb") as f:
        rss = int(f.read().split()[1]) * _run.PAGE
    gc.collect()
    gc.freeze()  # case children must not touch (copy) our objects' headers when they collect
    sock.send(b"R" + struct.pack("<q", rss))
    _serve_cases(sock, code, ctx)


def _move(fd: int, target: int) -> None:
    if fd != target:
        os.dup2(fd, target)
        os.close(fd)


def _serve_cases(sock, code, ctx: dict) -> None:
    recvmsg, dup2, closerange, wait4, fork, send = sock.recvmsg, os.dup2, os.closerange, os.wait4, iso.raw_fork, sock.send
    exit_now, unpack, pack, unshare, new_ipc = os._exit, GO.unpack, DONE.pack, iso.unshare, iso.CLONE_NEWIPC
    fds_of, cmsg_space, size, _len = struct.Struct("<4i").unpack, socket.CMSG_SPACE(16), GO.size, len
    user_ns, uid_drop, job_uid = ctx["user_namespace"], ctx["uid_drop"], ctx["job_uid"]
    ipc = bool(ctx.get("ipc_namespace"))
    own_ipc = ipc and not user_ns
    pwrite, last_pid = os.pwrite, str(os.getpid()).encode()  # our pid in the worker's PID namespace
    try:
        os.fstat(LAST_PID_FD)
        set_pids = True
    except OSError:
        set_pids = False
    run = _case_runner(code, user_ns, uid_drop, job_uid, ipc, ctx["jobdir"], bool(ctx.get("syscall_filter")))
    while True:
        try:
            message, ancillary, _, _ = recvmsg(64, cmsg_space)
        except OSError:
            exit_now(0)
        if _len(message) != size or _len(ancillary) != 1 or _len(ancillary[0][2]) != 16:
            exit_now(0)  # the leader is done (EOF) or the protocol broke
        cpu, nonce = unpack(message)
        fds = fds_of(ancillary[0][2])  # above LAST_FD: 0-LAST_FD are always open here
        for target in range(4):
            dup2(fds[target], target)  # (replacing the last case's: nothing of a case outlives the next)
        closerange(fds[0], fds[3] + 1)
        # As root, a fresh IPC namespace for every case, entered here and inherited by the case: System V
        # objects and POSIX queues of a case, and the namespace's id sequence, die with it (the last
        # case's namespace goes when we leave it). Without root each case child enters a user and IPC
        # namespace of its own, in _case_runner.
        if own_ipc:
            unshare(new_ipc)
        if set_pids:  # (all processes of the last case are gone and reaped by now)
            try:
                pwrite(LAST_PID_FD, last_pid, 0)
            except OSError:
                pass
        pid = fork()
        if pid == 0:
            run(cpu, nonce)
        if pid < 0:
            send(pack(1 << 8, 0.0, 0))  # fork failed: exit status 1, a runtime error of this case
            continue
        _, status, usage = wait4(pid, 0)
        send(pack(status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss))


def _case_runner(code, user_ns: bool, uid_drop: bool, job_uid: int, ipc: bool, ctx_jobdir: str, program_filter_on: bool):
    """run(cpu, nonce), for a case child: its own session, the job's uid, its CPU limit, then the program as
    ``__main__`` (as ``_jobchild.run_stdio_program``, on the streams the template made). Everything it
    uses is bound here, in the template: a case child touches (and so copies) as few pages as it can."""
    closerange, setsid, setresuid, prctl, setrlimit, exit_now = (os.closerange, os.setsid, os.setresuid, iso.prctl,
                                                                 resource.setrlimit, os._exit)
    chdir, jobdir = os.chdir, ctx_jobdir
    dumpable, pdeathsig, rlimit_cpu, ceil, sigkill = iso.PR_SET_DUMPABLE, iso.PR_SET_PDEATHSIG, resource.RLIMIT_CPU, math.ceil, signal.SIGKILL
    drop, program_filter = iso.drop_to_job_user, iso.install_program_filter
    emitter, exc_name, short_tb, flush, print_exc = jc._emitter, jc.exception_name, jc._short_tb, jc._flush, traceback.print_exc
    _exec, _type, _int, _bool, _builtins = exec, type, int, bool, builtins

    def run(cpu: float, nonce: bytes) -> None:
        try:
            closerange(SOCK_FD, LAST_FD + 1)
            chdir(jobdir)  # by path: the job dir is made anew after every case
            setsid()
            if user_ns:
                drop(job_uid, True, ipc=ipc)  # a nested user namespace (and IPC namespace) of its own
            elif uid_drop:
                setresuid(job_uid, job_uid, job_uid)
                prctl(dumpable, 1)  # keep /proc/self/* owned by the job, as for every job child
            prctl(pdeathsig, sigkill)  # after the uid change, which clears it
            seconds = max(1, ceil(cpu))
            setrlimit(rlimit_cpu, (seconds + 1, seconds + 2))
            if program_filter_on and not program_filter():  # no descriptor in flight, perf event or pidfd
                raise OSError("could not install the program filter in the case child")
            emit = emitter(nonce)
        except BaseException:  # noqa: BLE001 - our own setup failed: say why on the case's stderr
            try:
                os.write(2, traceback.format_exc().encode()[-4000:])
            finally:
                exit_now(1)
        name, detail = None, ""
        try:
            _exec(code, {"__name__": "__main__", "__builtins__": _builtins})
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
        flush()
        emit(("end", 0, name, detail))
        exit_now(0)

    return run
