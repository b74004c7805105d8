"""What a job uses: CPU time, peak memory and its processes, read from the job's cgroups or ``/proc`` by the
process that supervises the job (the worker or a job leader), never by the job itself (standard library only).

Split out of ``_run`` (which forks and watches a job's children) in the eighth session; ``_run``, ``_zygote``,
``_cases`` and ``_measure`` use it through ``_meter.Meter``.
"""

from __future__ import annotations

import os
import signal
import time

TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pid: int, fd: int = -1) -> float:
    """User + system CPU seconds of ``pid`` from its /proc stat (``fd``: that file, kept open; -1: open it)."""
    try:
        if fd >= 0:
            data = os.pread(fd, 1024, 0)
        else:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
        fields = data.rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _read_proc(path: str) -> bytes:
    """A whole /proc file, without io objects (the sweep reads several after every job: ~20 us each
    through ``open``)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _live_threads(pid: int) -> bool:
    """Whether a thread of ``pid`` other than its main one still runs. A process whose main thread ended
    with the ``exit`` syscall (not ``exit_group``) shows Z in its stat while its other threads run on: the
    sweep took it for a zombie, and without job cgroups (unprivileged workers) it outlived its job and
    handed later jobs an answer through the scratch tmpfs (red team: 3 of 3)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            if task != str(pid) and _read_proc(f"/proc/{pid}/task/{task}/stat").rsplit(b")", 1)[1].split()[0] \
                    not in (b"Z", b"X"):
                return True
        except (OSError, IndexError):
            continue
    return False


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        release = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return release >= (major, minor)


# cgroup.procs lists a process whose main thread has exited while others run on since Linux 5.3 (before,
# such a process was missing from it; Meter.sweep then walks /proc whatever the listing says)
_LISTS_DYING_LEADERS = _kernel_at_least(5, 3)


def _open_stat(pid: int) -> int:
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def process_cpu(pid: int) -> float | None:
    """Every thread's CPU of a process of our PID namespace (live, or ended and not yet reaped), in seconds
    with ns resolution: its process CPU clock, which the kernel gives without any permission; None if gone."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # CPUCLOCK_SCHED of the process ``pid``
    except OSError:
        return None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class Meter:
    """CPU time and peak memory of *everything* a job's child starts, read by the worker, never by the job.

    With the job's cgroups (root, cgroup v1 ``cpuacct`` + ``memory``; each child joins them before any
    untrusted code): ``cpuacct.usage`` counts every process and thread of the job, including helpers that
    were never waited for and ones reaped by the kernel; ``memory.max_usage_in_bytes`` is the tree's
    high-water mark, reset by the worker before each test (root-only files: the job cannot reset them);
    ``memory.limit_in_bytes`` caps the tree's memory as a whole. Without them: the supervisor sums the
    job's processes every ``tick`` (each one's process CPU clock plus its reaped children's times from
    ``/proc``, whole ticks; a helper that lives and dies between two samples counts once it is reaped, and
    the program filter keeps the kernel from reaping any itself), and the peak is the main process's own
    high-water mark (which a job that is not root's inferior, the unprivileged mode, can reset).
    """

    def __init__(self, fds: dict | None):
        self.fds = fds or {}
        self.cgroup = "cpu" in self.fds
        self.tick = 1.0 if self.cgroup else 0.02
        self.exclude: set[int] = set()
        self.spare: set[int] = set()  # job processes a sweep leaves alive (a case template, ``_cases``)
        self.main = 0
        self.base = 0
        self.oom_base = 0
        self.self_pid = int(os.readlink("/proc/self"))

    # -- in the child, before untrusted code ---------------------------------------------------------
    def join(self) -> None:
        for fd in self.fds.get("join", ()):
            os.write(fd, b"0")

    # -- in the worker -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Before a child is forked."""
        if self.cgroup:
            self.oom_base = self._oom_kills()
            self.reset_peak()

    def watch(self, pid: int) -> None:
        self.main = pid

    def _read(self, name: str) -> bytes:
        return os.pread(self.fds[name], 4096, 0)

    def cpu(self) -> float:
        if self.cgroup:
            return int(self._read("cpu")) / 1e9
        spare = self.spare  # (a case template or the zygote: their own CPU is not the job's, as before)
        return sum(self.cpu_of(pid, pid not in spare) for pid in self.pids())

    @staticmethod
    def cpu_of(pid: int, clock: bool = True) -> float:
        """One process's CPU (all its threads, from its process CPU clock, in ns: /proc's utime and stime are
        whole ticks, each rounded down, and a red team hid ~10 ms per helper in a second thread) and its
        reaped children's (from /proc, in ticks). For a process whose /proc we cannot read (not dumpable,
        without root), its own CPU alone, unless ``clock`` is off; 0 if it is gone."""
        try:
            fields = _read_proc(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()
            children = (int(fields[13]) + int(fields[14])) / TICK
        except (OSError, ValueError, IndexError):
            if not clock:
                return 0.0
            fields, children = None, 0.0
        own = process_cpu(pid)
        if own is None:  # gone since
            own = (int(fields[11]) + int(fields[12])) / TICK if fields is not None else 0.0
        return own + children

    def _cgroup_empty(self) -> bool:
        """True only if the job cgroup's process list was read and holds no job process (``sweep``)."""
        if not self.cgroup or not _LISTS_DYING_LEADERS:
            return False
        pids = self._cgroup_pids()
        return pids is not None and all(p in self.exclude or p in self.spare or p == self.self_pid for p in pids)

    def _cgroup_pids(self) -> list[int] | None:
        """The job cgroup's process list; None when it cannot be read."""
        # Opened afresh each time: cgroup v1 serves a cgroup.procs read again on an open descriptor from the
        # pid list it cached at the first read (for as long as it is read within a second), so helpers
        # forked since would be missed and dead pids listed.
        try:
            fd = os.open(f"/proc/self/fd/{self.fds['procs']}", os.O_RDONLY)
            try:
                chunks = []
                while chunk := os.read(fd, 1 << 16):
                    chunks.append(chunk)
            finally:
                os.close(fd)
            return [int(p) for p in b"".join(chunks).split()]
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        """The job's processes: every descendant of the worker outside the judge's subtree."""
        if self.cgroup:
            return self._cgroup_pids() or []
        return list(self._descendants())

    def tree(self) -> list[int]:
        """Every live descendant of the worker outside the judge (zombies left out), whatever the mode."""
        out = []
        for kid in self._descendants():
            if kid in self.spare:
                continue
            try:
                if _read_proc(f"/proc/{kid}/stat").rsplit(b")", 1)[1].split()[0] == b"Z" and not _live_threads(kid):
                    continue
            except (OSError, IndexError):
                # Gone, or hidden from us (not dumpable, without root: hidepid=2). One that is there is
                # killed like the rest: the sweep left such a helper running into later jobs (red team,
                # eighth session; the program filter now refuses PR_SET_DUMPABLE, this is for other ways).
                if not _exists(kid):
                    continue
            out.append(kid)
        return out

    def _descendants(self):
        """Every descendant of the worker outside ``exclude`` (the judge's subtree), from /proc, parents first.

        The watched main process (``watch``) and its descendants too, found or not: without root a one-fork
        job's program is the child of the zygote, whose /proc the worker cannot read (it is not dumpable and
        /proc is mounted hidepid=2), so a walk from the worker stopped there and the job's CPU read 0 s."""
        todo = [self.self_pid]
        main = self.main
        if main and main != self.self_pid and main not in self.exclude and main not in self.spare:
            todo.append(main)
            yield main
        while todo:
            pid = todo.pop()
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    kids = [int(k) for k in _read_proc(f"/proc/{pid}/task/{task}/children").split()]
                except (OSError, ValueError):
                    continue
                for kid in kids:
                    if kid not in self.exclude and kid != main:
                        todo.append(kid)
                        yield kid

    def sweep(self, reap) -> bool:
        """SIGKILL every process of the job (all descendants but the judge) until none is left; reap them.

        False if some would not go (the caller then falls back to ``kill(-1)``, which ends the judge too).

        With the job cgroups, a job whose cgroup is empty is swept without walking ``/proc`` (~27 system
        calls and ~0.15 ms of the worker's CPU per job): every job process joins the cgroup before any
        program code runs and cannot leave it (the cgroup files are root's), a process a job forks is in its
        parent's cgroup from its first instruction, and a dying main thread whose other threads run on is
        still listed (Linux >= 5.3). So an empty listing, read afresh, means no job process is left to
        fork one; what is left to do is reaping. Otherwise (and without job cgroups) the walk runs as before.
        """
        if self._cgroup_empty():
            reap()
            return True
        for round_ in range(2000):
            live = self.tree()
            if self.cgroup:  # the job cgroup lists every job process, also one a walk missed: a process whose
                seen = set(live)  # parent died during the walk, on its way to the reaper's children (a fork chain)
                live += [p for p in self.pids() if p not in seen and p not in self.exclude and p not in self.spare
                         and p != self.self_pid]
            reap()
            if not live:
                return True
            for pid in live:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if round_ > 2:
                time.sleep(0.0002)
        return False

    def kill_all(self) -> None:
        """SIGKILL every process of the job (not the worker, not the judge)."""
        for _ in range(50):
            pids = [p for p in self.pids() if p not in self.exclude and p not in self.spare and p != self.self_pid]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def reset_peak(self) -> None:
        if self.cgroup:
            try:
                os.write(self.fds["max_usage"], b"0")
                self.base = int(self._read("usage"))
            except (OSError, ValueError):
                self.base = 0
            return
        try:
            fd = os.open(f"/proc/{self.main}/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, b"5")
            finally:
                os.close(fd)
        except OSError:
            pass
        self.base = _status_field(self.main, b"VmRSS:") or 0

    def peak(self) -> int | None:
        if self.cgroup:
            try:
                return max(0, int(self._read("max_usage")) - self.base)
            except (OSError, ValueError):
                return None
        hwm = _status_field(self.main, b"VmHWM:")
        return None if hwm is None else max(0, hwm - self.base)

    def _oom_kills(self) -> int:
        if "oom" not in self.fds:
            return 0
        try:
            for line in self._read("oom").split(b"\n"):
                if line.startswith(b"oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def oom(self) -> bool:
        return self.cgroup and self._oom_kills() > self.oom_base

    def set_memory_limit(self, memory: int) -> None:
        """The whole tree's memory: the job's own limit plus room for the interpreter's copied pages."""
        if "limit" in self.fds:
            try:
                os.write(self.fds["limit"], str(memory + (128 << 20)).encode())
            except OSError:
                pass


def _status_field(pid: int, field: bytes) -> int | None:
    """A ``kB`` field of /proc/PID/status, in bytes (read without io objects: the supervisor of a job
    without cgroups reads it at every test boundary)."""
    try:
        data = _read_proc(f"/proc/{pid}/status")
        at = data.find(b"\n" + field)
        if at >= 0:
            return int(data[at + 1 + len(field):data.index(b"\n", at + 1)].split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
