"""The harness's handle on one worker process: start it, send it jobs, notice when it dies, restart it."""

from __future__ import annotations

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
    try:
        names = os.listdir(PIDS_CGROUP_ROOT)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if name.startswith("corecode-sbx-") and len(parts) > 3 and parts[2].isdigit():
            if not os.path.exists(f"/proc/{parts[2]}"):
                try:
                    os.rmdir(os.path.join(PIDS_CGROUP_ROOT, name))  # fails unless empty
                except OSError:
                    pass


class WorkerDied(Exception):
    """The worker process ended or stopped answering; it has been restarted."""


def _worker_env() -> dict[str, str]:
    # Never the harness's environment: API keys and tokens must not reach jobs, even via /proc.
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "CORECODE_SANDBOX_WORKER": "1"}


def _need_paths() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    return sorted(paths)


class Worker:
    def __init__(self, index: int, config: SandboxConfig, tag: str):
        self.index, self.config, self.tag = index, config, tag
        self.proc: subprocess.Popen | None = None
        self.isolation: dict = {}
        self.restarts = 0
        self.pid = 0
        self.scratch = ""
        self.cgroup: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.scratch = tempfile.mkdtemp(prefix=f"corecode-sbx-{self.tag}-{self.index}-")
        self.cgroup = self._make_cgroup()
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
        self.to_worker, self.from_worker = to_worker_w, from_worker_r
        setup = {
            "scratch": self.scratch, "scratch_mb": self.config.scratch_mb, "cgroup": self.cgroup,
            "isolate": self.config.isolate, "need_paths": _need_paths(), "preload": list(self.config.preload),
            "job_uid": self.config.job_uid,
        }
        try:
            self._send(pickle.dumps(setup))
            ready = json.loads(self._recv(60.0))
        except (WorkerDied, OSError, ValueError) as exc:
            raise SandboxError(f"sandbox worker failed to start: {exc}; worker stderr: {self._stderr()}") from None
        self.isolation = ready["isolation"]
        self.pid = int(ready["pid"])  # the serving process (with a PID namespace, a child of proc)

    def _make_cgroup(self) -> str | None:
        """A pids cgroup per worker (root only): the one fork-bomb limit the kernel enforces for root."""
        if os.getuid() != 0 or not os.path.isdir(PIDS_CGROUP_ROOT) or not self.config.isolate:
            return None
        path = os.path.join(PIDS_CGROUP_ROOT, os.path.basename(self.scratch))
        try:
            os.mkdir(path)
            with open(os.path.join(path, "pids.max"), "w") as f:
                f.write(str(self.config.max_processes + 3))  # + the worker's two processes, the exec child
        except OSError:
            return None
        return path

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
        if self.cgroup:
            for _ in range(200):  # the kernel frees the cgroup a moment after its last process is reaped
                try:
                    os.rmdir(self.cgroup)
                    break
                except OSError:
                    time.sleep(0.005)
            self.cgroup = None
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
            self._send(pickle.dumps(public))
            self._send(pickle.dumps(secret))
            reply = json.loads(self._recv(timeout_s))
        except (WorkerDied, OSError, ValueError) as exc:
            why = f"{exc}; worker stderr: {self._stderr()}"
            self.restart()
            raise WorkerDied(why) from None
        if "error" in reply:
            self.restart()  # its protocol state is unknown after an internal error
            raise WorkerDied(reply["error"])
        return reply

    def _send(self, body: bytes) -> None:
        view = memoryview(struct.pack("<I", len(body)) + body)
        while view:
            view = view[os.write(self.to_worker, view) :]

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
