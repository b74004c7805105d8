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
import io
import marshal
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
GO_FD, DONE_FD = 4, 5  # in a shared runner: the leader's next case, and our "done" with the case's number
DONE_SEQ = struct.Struct("<q")
# Fewer cases: a fresh process each. A shared runner pays a cold first case and the rerun; 200 programs of
# N trivial cases on 2 workers (2026-12-02): shared slower at 3, even at 4-5, faster from 6 (1.2-1.5x at 8).
SHARED_MIN_CASES = 5
# /proc/PID/syscall of a runner waiting for its next case: read(2) on GO_FD
# (read's number on the machines we know; elsewhere None: the runner's state alone, as without root)
_READ_NR = {"x86_64": b"0", "aarch64": b"63", "arm64": b"63", "riscv64": b"63"}.get(os.uname().machine)
READ_GO = [_READ_NR, b"0x%x" % GO_FD] if _READ_NR is not None else None

# Cases are forked with ``iso.raw_fork``: without Python's at-fork machinery (it reseeds `random`,
# re-creates `threading`'s locks and runs other modules' hooks: about half the cost of a fork here, mostly
# copy-on-write faults in both processes). Safe in the template: it is single-threaded, holds no lock and
# imports nothing while it forks, so there is nothing for those hooks to repair.


def _over_limit(used: float, cpu_limit: float, wall: float, wall_limit: float, out_fd: int, limits: dict,
                meter) -> str | None:
    """Why a running case must be killed now (``timeout``, ``output``, ``memory``), or None: the one check
    of a fresh case's watcher and of the shared runner's."""
    if used > cpu_limit or wall > wall_limit:
        return "timeout"
    if os.fstat(out_fd).st_size >= limits["output"]:
        return "output"
    if meter.oom():
        return "memory"
    return None


class Template:
    """The leader's handle on one case template."""

    def __init__(self, ctx: dict, public: dict):
        self.ctx, self.public = ctx, public
        self.pid, self.sock, self.pidfd = 0, None, -1
        self.base_rss = 0
        self.runner: dict | None = None  # the shared runner's descriptors (stdin, stdout, stderr, result; go; done)

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
                reason = None if first else _over_limit(used, cpu_limit, now - t0, wall_limit, out_fd, limits, meter)
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

    # -- cases in a shared runner (SandboxConfig.stdio_shared_runner) ----------------------------------
    def run_shared(self, stdin: bytes, cpu_limit: float) -> tuple[dict, bool]:
        """Run one case in the runner, starting one if there is none: (the report ``run`` gives, whether
        the case ran in a runner that had run an earlier case: *warm*). A runner that died, was killed
        or left a process behind is gone after this call (a sweep follows); the next case gets a new one."""
        ctx = self.ctx
        limits, meter = ctx["limits"], ctx["meter"]
        runner = self.runner
        if runner is not None and select.select([self.sock], [], [], 0)[0]:
            self._runner_ended()  # it died between cases (a helper thread of the last case): a new one
            runner = None
        warm = runner is not None
        nonce = os.urandom(16)
        if runner is None:
            fds = [_run._memfd("stdin", stdin), _run._memfd("stdout"), _run._memfd("stderr"), _run._memfd("result")]
            go_r, go_w = os.pipe2(os.O_CLOEXEC)
            done_r, done_w = os.pipe2(os.O_CLOEXEC)
            runner = self.runner = {"fds": fds, "go": go_w, "done": done_r, "seq": 0, "pid": 0, "threads": False,
                                    "syscall": -1, "stat": -1}
        else:
            fds = runner["fds"]
            os.ftruncate(fds[0], 0)  # the runner's fds 0-3 share these open files (and their offsets)
            os.pwrite(fds[0], stdin, 0)
            for fd in fds:
                if fd != fds[0]:
                    os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
            runner["seq"] += 1
        out_fd = fds[1]
        meter.start()
        c0, t0 = meter.cpu(), time.monotonic()
        wall_limit = cpu_limit * limits["wall_factor"] + limits["wall_extra"]
        reason, finished, ended, gone = None, False, None, False
        try:
            if warm:
                os.write(runner["go"], GO.pack(cpu_limit, nonce))
            else:
                socket.send_fds(self.sock, [GO.pack(cpu_limit, nonce)], fds + [go_r, done_w])
                os.close(go_r)
                os.close(done_w)
                ended, gone = self._runner_pid(runner)
        except OSError:
            gone = not warm
        killed_at, first, pending = 0.0, True, False
        while not gone and ended is None:
            now = time.monotonic()
            used = 0.0 if first else meter.cpu() - c0
            if reason is None:
                reason = None if first else _over_limit(used, cpu_limit, now - t0, wall_limit, out_fd, limits, meter)
                if reason:
                    self._kill_runner()
                    killed_at = now
            elif now - killed_at > 5.0:
                gone = True
                break
            wait = 0.5 if reason else max(0.0, min(meter.tick, cpu_limit - used, t0 + wall_limit - now))
            if pending and reason is None:
                if self._idle(runner):
                    finished = True
                    break
                wait = min(wait, 0.0005)  # the runner went on after a "done": look again soon
            first = False
            ready, _, _ = select.select([runner["done"], self.sock, self.pidfd], [], [], wait)
            if runner["done"] in ready:
                try:
                    message = os.read(runner["done"], 4096)
                except OSError:
                    message = b""
                # The last whole number decides (a program that wrote one itself gains nothing: its output
                # is read now, and CPU it goes on using is charged to the next case).
                whole = len(message) // DONE_SEQ.size * DONE_SEQ.size
                if (reason is None and whole
                        and DONE_SEQ.unpack(message[whole - DONE_SEQ.size:whole])[0] == runner["seq"]):
                    # Only the harness's own "done" ends the case: then the runner is blocked reading the
                    # next case (a program that wrote the number itself and went on is still running, and
                    # the case's limits go on applying to it).
                    pending = True
                    if self._settles(runner):
                        finished = True
                        break
                if not message:  # the runner closed it: it is ending; its status comes from the template
                    ready, _, _ = select.select([self.sock, self.pidfd], [], [], 5.0)
                    if not ready:
                        gone = True
                        break
            if self.sock in ready:
                try:
                    message = self.sock.recv(64)
                except OSError:
                    message = b""
                if len(message) == DONE.size:
                    ended = DONE.unpack(message)
                    break
                gone = True
            elif self.pidfd in ready:
                gone = True
        if gone:
            reason = reason or "template"
            self._kill_runner()
            self.stop()
        wall = time.monotonic() - t0
        tree_cpu = meter.cpu() - c0
        oom = meter.oom()
        peak = meter.peak()
        frames = _run.Frames(nonce, limits["output"])
        frames.feed(_run._read_capped(fds[3], limits["output"] + 1))
        status, cpu, maxrss = ended if ended is not None else (0 if finished else signal.SIGKILL, 0.0, 0)
        report = {
            "frames": frames.items, "corrupt": frames.corrupt, "killed": reason, "oom": oom,
            "exit": os.waitstatus_to_exitcode(status) if ended is not None or finished else -signal.SIGKILL,
            "cpu": tree_cpu, "wall": wall,
            "peak": peak if peak is not None else max(0, maxrss * 1024 - self.base_rss),
            "stdout_size": os.fstat(out_fd).st_size,
            "stdout": _run._read_capped(out_fd, limits["output"]), "stderr": _run._read_capped(fds[2], limits["capture"]),
        }
        if finished and not oom and (runner["threads"] or self._left_behind()):
            # A thread or helper process of this case outlives it: as when a case child exits (which
            # ends its threads), it is ended, with the runner; no later case shares the job with it.
            finished = False
        if not finished:
            self._end_runner(ended is not None or gone)
            ctx["sweep"]()  # every job process but the template; the job dir and the scratch tmpfs wiped
        return report, warm

    def _runner_pid(self, runner: dict) -> tuple[tuple | None, bool]:
        """After sending a new runner's first case: the template's word on it, (DONE if it could not fork
        one, whether the template is gone). Opens the runner's /proc files for ``_idle``."""
        ready, _, _ = select.select([self.sock, self.pidfd], [], [], 5.0)
        try:
            message = self.sock.recv(64) if self.sock in ready else b""
        except OSError:
            message = b""
        if len(message) == DONE.size:
            return DONE.unpack(message), False
        if len(message) != 1 + DONE_SEQ.size or message[:1] != b"P":
            return None, True
        pid = runner["pid"] = DONE_SEQ.unpack(message[1:])[0]
        try:
            if READ_GO is None:
                raise OSError("read's syscall number is not known on this machine")
            runner["syscall"] = os.open(f"/proc/{pid}/syscall", os.O_RDONLY | os.O_CLOEXEC)
            os.pread(runner["syscall"], 64, 0)
        except OSError:  # without root the runner is not dumpable (or see READ_GO): its state alone
            if runner["syscall"] >= 0:
                os.close(runner["syscall"])
            runner["syscall"] = -1
        try:
            runner["stat"] = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None, True
        return None, False

    def _kill_runner(self) -> None:
        pid = self.runner["pid"] if self.runner else 0
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._kill_case()

    def _settles(self, runner: dict) -> bool:
        """``_idle``, giving the runner the CPU a few times first: the harness writes its "done" just before
        its read, and the runner shares our CPU (pinned workers), so it usually gets there within one
        yield; sleeping on a timer instead cost up to a millisecond per case."""
        for _ in range(8):
            if self._idle(runner):
                return True
            os.sched_yield()
        return self._idle(runner)

    def _idle(self, runner: dict) -> bool:
        """Whether the runner's main thread is where the harness waits for the next case: blocked in
        ``read`` on GO_FD (/proc/PID/syscall; where the kernel does not let us read it: asleep). Sets ``runner["threads"]`` when the runner has other threads (then it is ended after the
        case, as a case child's exit ends its threads)."""
        try:
            stat = os.pread(runner["stat"], 512, 0)
            fields = stat.rsplit(b")", 1)[1].split()
            if int(fields[17]) != 1:  # num_threads (state and syscall are the main thread's)
                runner["threads"] = True
            if fields[0] != b"S":
                return False
            if runner["syscall"] < 0:
                return True
            return os.pread(runner["syscall"], 64, 0).split()[:2] == READ_GO
        except (OSError, ValueError, IndexError):
            return False

    def _left_behind(self) -> bool:
        """Whether a job process other than the template and its runner is alive (a case's helper)."""
        meter = self.ctx["meter"]
        keep = {self.pid, meter.self_pid, self.runner["pid"] if self.runner else 0}
        return any(p not in keep and p not in meter.spare and p not in meter.exclude for p in meter.pids())

    def _runner_ended(self) -> None:
        """The template said its runner ended (between cases): drop our ends of it, sweep."""
        try:
            message = self.sock.recv(64)
        except OSError:
            message = b""
        self._end_runner(True)
        if len(message) != DONE.size:
            self.stop()
        self.ctx["sweep"]()

    def _end_runner(self, reported: bool) -> None:
        """Close our ends of the runner; unless the template already said it ended, kill it and take the
        template's word for it (keeping the socket in step), or stop the template if it does not say."""
        runner, self.runner = self.runner, None
        if runner is None:
            return
        for fd in runner["fds"] + [runner["go"], runner["done"], runner["syscall"], runner["stat"]]:
            if fd >= 0:
                os.close(fd)
        if reported or not self.pid:
            return
        self.runner = runner
        self._kill_runner()
        self.runner = None
        ready, _, _ = select.select([self.sock], [], [], 5.0)
        message = b""
        if ready:
            try:
                message = self.sock.recv(64)
            except OSError:
                pass
        if len(message) != DONE.size:
            self.stop()

    def finish_shared(self) -> None:
        """After the last case: the runner reads EOF and exits (the template is stopped next)."""
        if self.runner is not None:
            self._end_runner(False)

    def _kill_case(self) -> None:
        for pid in self.case_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.ctx["meter"].kill_all()  # helpers (every job process but the template)


def run_cases(ctx: dict, public: dict, groups: list[dict], files: tuple) -> tuple[list[tuple[dict, dict]], str | None]:
    """Every stdin/stdout group of the job, in order: ([(group, report)], syntax error or None)."""
    template = Template(ctx, public)
    shared = bool(ctx.get("shared_runner")) and len(groups) >= SHARED_MIN_CASES and not files[0] and not files[1]
    try:
        out, syntax_error, warm = _run_all(template, ctx, groups, files, shared)
        if shared and syntax_error is None and warm:
            out = _charge_as_fresh(template, ctx, groups, files, out, warm)
    finally:
        template.finish_shared()
        template.stop()
    return out, syntax_error


def _run_all(template: Template, ctx: dict, groups: list[dict], files: tuple, shared: bool):
    """([(group, report)], syntax error or None, positions of the cases that ran in a warm runner)."""
    limits = ctx["limits"]
    out: list[tuple[dict, dict]] = []
    warm: list[int] = []
    for group in groups:
        if not template.pid:
            failed = template.start()
            if failed is not None and failed[0] == "syntax_error":
                return out, failed[1], []
            if failed is not None:  # it could not get ready: so would every case's own child
                for g in groups[len(out):]:
                    out.append((g, _failed_report(failed)))
                ctx["sweep"]()
                return out, None, warm
            # A runner is watched through /proc (_idle); where our /proc does not show the template's
            # processes (without root: hidepid=2 and a nested user namespace), each case gets its own.
            shared = shared and os.path.exists(f"/proc/{template.pid}/stat")
        data = group["input"].encode("utf-8", "surrogateescape")
        cpu = limits["cpu"][group["tests"][0]]
        if shared:
            report, was_warm = template.run_shared(data, cpu)
            if was_warm:
                warm.append(len(out))
        else:
            report = template.run(data, cpu, files)
        out.append((group, report))
    return out, None, warm


def _clean(report: dict) -> bool:
    return not report["killed"] and not report["corrupt"] and not report["oom"] and report["exit"] == 0


def _ending(report: dict):
    end = next((f for f in report["frames"] if f[0] == "end" and len(f) == 4), None)
    return None if end is None else (end[2], end[3])


def _charge_as_fresh(template: Template, ctx: dict, groups: list[dict], files: tuple,
                     out: list[tuple[dict, dict]], warm: list[int]) -> list[tuple[dict, dict]]:
    """Cases that ran after another one in the same runner may have reused its work (modules it imported,
    tables it kept on a module): run one of them, picked at random after all cases ran (so the program
    cannot know which), again in a fresh runner. Same output and ending: every warm case is charged the
    difference in CPU (what a fresh process cost more), so the limits hold as if each case had had a
    process of its own. A different output or ending, or a fresh run that did not finish: the program's
    cases depend on each other, and every case runs again, each in a fresh process (``Template.run``)."""
    limits = ctx["limits"]
    candidates = [i for i in warm if _clean(out[i][1])]
    if not candidates:
        return out
    pos = candidates[int.from_bytes(os.urandom(4), "little") % len(candidates)]
    group, shared_rep = out[pos]
    template.finish_shared()  # a fresh runner for the rerun, in a job dir and scratch tmpfs made anew
    ctx["sweep"]()
    fresh = None
    if template.pid or template.start() is None:
        data = group["input"].encode("utf-8", "surrogateescape")
        fresh, _ = template.run_shared(data, limits["cpu"][group["tests"][0]])
        template.finish_shared()
    if (fresh is not None and _clean(fresh) and fresh["stdout"] == shared_rep["stdout"]
            and _ending(fresh) == _ending(shared_rep)):
        extra = max(0.0, fresh["cpu"] - shared_rep["cpu"])
        for i in warm:
            out[i][1]["cpu"] += extra
        return out
    ctx["sweep"]()
    isolated, _, _ = _run_all(template, ctx, groups, files, shared=False)
    return isolated


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
    cmsg_space, size, _len, _unpack = socket.CMSG_SPACE(4 * 6), GO.size, len, struct.unpack
    pack_pid = DONE_SEQ.pack
    user_ns, uid_drop, job_uid = ctx["user_namespace"], ctx["uid_drop"], ctx["job_uid"]
    ipc = bool(ctx.get("ipc_namespace"))
    own_ipc = ipc and not user_ns
    pwrite, last_pid = os.pwrite, str(os.getpid()).encode()  # our pid in the worker's PID namespace
    try:
        os.fstat(LAST_PID_FD)
        set_pids = True
    except OSError:
        set_pids = False
    run, run_shared = _case_runner(code, user_ns, uid_drop, job_uid, ipc, ctx["jobdir"],
                                   bool(ctx.get("syscall_filter")))
    while True:
        try:
            message, ancillary, _, _ = recvmsg(64, cmsg_space)
        except OSError:
            exit_now(0)
        if _len(message) != size or _len(ancillary) != 1 or _len(ancillary[0][2]) not in (16, 24):
            exit_now(0)  # the leader is done (EOF) or the protocol broke
        cpu, nonce = unpack(message)
        fds = _unpack(f"<{_len(ancillary[0][2]) // 4}i", ancillary[0][2])  # above LAST_FD: 0-LAST_FD are open
        for target in range(4):
            dup2(fds[target], target)  # (replacing the last case's: nothing of a case outlives the next)
        closerange(fds[0], fds[3] + 1)
        shared = fds[4:]  # (go, done): a shared runner, which runs this case and the next ones (run_shared)
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
            if shared:
                run_shared(cpu, nonce, shared[0], shared[1])
            run(cpu, nonce)
        for fd in shared:
            os.close(fd)
        if shared and pid > 0:
            send(b"P" + pack_pid(pid))  # the runner's pid (our /proc children file is not always readable)
        if pid < 0:
            send(pack(1 << 8, 0.0, 0))  # fork failed: exit status 1, a runtime error of this case
            continue
        _, status, usage = wait4(pid, 0)
        send(pack(status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss))


def _case_runner(code, user_ns: bool, uid_drop: bool, job_uid: int, ipc: bool, ctx_jobdir: str, program_filter_on: bool):
    """(run, run_shared). run(cpu, nonce), for a case child: its own session, the job's uid, its CPU limit,
    then the program as ``__main__`` (as ``_jobchild.run_stdio_program``, on the streams the template made);
    run_shared: the same set-up once, then case after case (SandboxConfig.stdio_shared_runner). Everything
    they use is bound here, in the template: a case child touches (and so copies) as few pages as it can."""
    closerange, setsid, setresuid, prctl, setrlimit, exit_now = (os.closerange, os.setsid, os.setresuid, iso.prctl,
                                                                 resource.setrlimit, os._exit)
    chdir, jobdir = os.chdir, ctx_jobdir
    dumpable, pdeathsig, rlimit_cpu, ceil, sigkill = iso.PR_SET_DUMPABLE, iso.PR_SET_PDEATHSIG, resource.RLIMIT_CPU, math.ceil, signal.SIGKILL
    drop, program_filter = iso.drop_to_job_user, iso.install_program_filter
    emitter, flush, run_main = jc._emitter, jc._flush, jc.main_runner()
    _builtins, _len = builtins, len

    def isolate(what: str) -> None:
        """A case child's or runner's own set-up, after its descriptors are in place: the job dir, a
        session, the job's uid, PR_SET_PDEATHSIG, the program filter."""
        chdir(jobdir)  # by path: the job dir is made anew after every case
        setsid()
        if user_ns:
            drop(job_uid, True, ipc=ipc)  # a nested user namespace (and IPC namespace) of its own
        elif uid_drop:
            setresuid(job_uid, job_uid, job_uid)
            prctl(dumpable, 1)  # keep /proc/self/* owned by the job, as for every job child
        prctl(pdeathsig, sigkill)  # after the uid change, which clears it
        if program_filter_on and not program_filter():  # no descriptor in flight, perf event or pidfd
            raise OSError(f"could not install the program filter in the {what}")

    def failed_setup() -> None:
        """Our own set-up failed: say why on the case's stderr, and end."""
        try:
            os.write(2, traceback.format_exc().encode()[-4000:])
        finally:
            exit_now(1)

    def run(cpu: float, nonce: bytes) -> None:
        try:
            closerange(SOCK_FD, LAST_FD + 1)
            isolate("case child")
            seconds = max(1, ceil(cpu))
            setrlimit(rlimit_cpu, (seconds + 1, seconds + 2))
            emit = emitter(nonce)
        except BaseException:  # noqa: BLE001
            failed_setup()
        name, detail = run_main(code, {"__name__": "__main__", "__builtins__": _builtins})
        flush()
        emit(("end", 0, name, detail))
        exit_now(0)

    # Everything the runner's loop calls is bound here, before any program code: a case that replaces
    # os.write, io.open, sys.* or the like changes nothing the harness does for the next case (red team).
    getrusage, self_usage, getrlimit, write, read, dup2 = (resource.getrusage, resource.RUSAGE_SELF,
                                                          resource.getrlimit, os.write, os.read, os.dup2)
    sys_, open_, dumps, pack = sys, io.open, marshal.dumps, struct.pack
    go_size, go_unpack, done_pack = GO.size, GO.unpack, DONE_SEQ.pack
    recursion, setrecursionlimit, settrace, setprofile = (sys.getrecursionlimit(), sys.setrecursionlimit,
                                                          sys.settrace, sys.setprofile)
    getsignal, set_handler, setitimer, sigmask = signal.getsignal, signal.signal, signal.setitimer, signal.pthread_sigmask
    sigpending, take, block, set_mask, result_fd = (signal.sigpending, signal.sigtimedwait, signal.SIG_BLOCK,
                                                    signal.SIG_SETMASK, jc.RESULT_FD)
    timers = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
    handlers = {}
    for number in signal.valid_signals():
        try:
            if getsignal(number) is not None:
                handlers[number] = getsignal(number)
        except (OSError, ValueError):
            pass

    def fresh_state() -> tuple:
        """What a fresh case child would find: the template's signal handlers, no timer, no blocked
        signal, the recursion limit, no trace or profile function, new streams over fds 0-2."""
        for timer in timers:
            setitimer(timer, 0)
        for number in sigpending():  # raised while the harness waited (blocked): dropped, as a fresh
            take((number,), 0)           # process never got them (taken, not ignored and set back: the
            # program filter refuses setting SIGCHLD's action, so a case's child that ended during the wait
            # would have ended the runner)
        for number, handler in handlers.items():
            if getsignal(number) is not handler:
                set_handler(number, handler)
        sigmask(set_mask, ())
        setrecursionlimit(recursion)
        settrace(None)
        setprofile(None)
        streams = (open_(0, "r", encoding="utf-8", errors="replace", closefd=False),
                   open_(1, "w", encoding="utf-8", errors="replace", closefd=False),
                   open_(2, "w", encoding="utf-8", errors="replace", closefd=False))
        sys_.stdin = sys_.__stdin__ = streams[0]
        sys_.stdout = sys_.__stdout__ = streams[1]
        sys_.stderr = sys_.__stderr__ = streams[2]
        sys_.argv = ["solution.py"]
        return streams[1:]

    def end_frame(nonce: bytes, name, detail) -> None:
        data = dumps(("end", 0, name, detail))
        frame = nonce + pack("<I", _len(data)) + data
        while frame:
            frame = frame[write(result_fd, frame):]

    def run_shared(cpu: float, nonce: bytes, go_fd: int, done_fd: int) -> None:
        """A shared runner: the same set-up as ``run``, once, then every case the leader sends, one after
        another: fresh streams over fds 0-3 (the leader rewrote and rewound them), a fresh ``__main__``,
        this case's CPU limit on top of what the runner used so far, then ``done`` with the case's
        number. Never returns."""
        try:
            dup2(go_fd, GO_FD)
            dup2(done_fd, DONE_FD)
            closerange(DONE_FD + 1, 1 << 20)  # the template's socket, /dev/null, ns_last_pid; go/done copies
            isolate("case runner")
            hard = getrlimit(rlimit_cpu)[1]  # the template's: the job's whole CPU budget
        except BaseException:  # noqa: BLE001
            failed_setup()
        seq = 0
        while True:
            ours = ()
            try:
                usage = getrusage(self_usage)
                soft = ceil(usage.ru_utime + usage.ru_stime + cpu) + 1
                setrlimit(rlimit_cpu, (min(soft, hard), hard))
                ours = fresh_state()
            except BaseException:  # noqa: BLE001 - the program broke the runner: end it, the next case
                exit_now(1)         # gets a fresh one
            name, detail = run_main(code, {"__name__": "__main__", "__builtins__": _builtins})
            flush()
            for stream in ours:  # also when the program replaced sys.stdout: what it wrote there first
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001
                    pass
            try:
                sigmask(block, handlers)  # no handler of the program runs in the harness's wait
                end_frame(nonce, name, detail)
                write(DONE_FD, done_pack(seq))
                message = read(GO_FD, go_size)
            except BaseException:  # noqa: BLE001
                exit_now(1)
            if _len(message) != go_size:
                exit_now(0)  # the leader is done with this runner
            cpu, nonce = go_unpack(message)
            seq += 1

    return run, run_shared
