"""Red team of the second seccomp filter (``_isolation.install_program_filter``, commit 5f4096a): program children
refuse sendmsg / sendmmsg, so no descriptor can be put in flight with SCM_RIGHTS (a listener kept alive in
an unreferenced socket cycle until the unix GC ran carried an answer by its abstract name from case to case).

Held (these pass, and the fd-passing ones fail when ``install_program_filter`` installs nothing):

* sendmsg / sendmmsg through ctypes ``syscall()`` (numbers 46 / 307), the x32 numbers (| 0x40000000),
  the i386 ABI (``int 0x80``), ``socket.send_fds``, from a thread the program starts, and from a fresh
  interpreter it execs (the filter and no_new_privs are inherited over fork and exec); pidfd_getfd of the
  case template (EPERM: it is not ours to ptrace);
* the in-flight cycle itself over datagram and seqpacket socketpairs, sent by raw ``syscall(sendmsg)``,
  ``sendmmsg`` and from a thread: no case learns the answer;
* a chain of short-lived processes holding the listener (each forks and exits) does not outlive the
  sweep (held by the sweep, not by this filter);
* compatibility: asyncio (subprocess, sock_sendall / sock_recv), subprocess with pipes, threads, stream
  and datagram socketpairs with send / recv, ThreadPoolExecutor and multiprocessing.Manager still work.
  (multiprocessing.Pool / Queue / ProcessPoolExecutor fail with EROFS on the read-only /dev/shm, with or
  without this filter; the forkserver and spawn start methods would also need sendmsg.)

Closed after this red team (each a host-wide counter that a case advanced and the next case or job read;
not a descriptor in flight, but the same kind of leak, found here; the program filter now refuses them):

* perf event ids (perf_event_open; PERF_EVENT_IOC_ID reads one global 64-bit counter): 7 of 8 cases and 3
  of 3 of a later job passed before;
* pidfs inode numbers (every new process takes the next one, host-wide; ns_last_pid does not reset it;
  every way to a pidfd is refused: pidfd_open, clone with CLONE_PIDFD, SO_PASSPIDFD / SO_PEERPIDFD, and
  clone3 reports ENOSYS): 7 of 8 and 3 of 3 before.

Open (strict xfail):

* socket / pipe inode numbers (``get_next_ino``, per CPU, batches of 1024).
"""

from __future__ import annotations

import os

import pytest

from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import CallTest, Problem, StdioTest


ALL_CPUS = os.sched_getaffinity(0)


@pytest.fixture(scope="module")
def sb():
    # One CPU for the worker and everything it starts: the per-CPU inode counter below is then one counter
    # (the other attacks do not need it). Restored afterwards.
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(old)})
    try:
        with Sandbox(SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False)) as sandbox:
            yield sandbox
    finally:
        os.sched_setaffinity(0, old)


def _same(n: int) -> tuple:
    return tuple(StdioTest("2 3\n", "5\n") for _ in range(n))


# The start of every program below that tries to carry an answer by an abstract Unix socket name: it prints
# which "\0NAME-<k>" an earlier case left bound (None: none), then binds `listener` to the name of this case's
# answer (a + b), or exits when that name is taken. What follows it keeps the listener alive.
BIND_ANSWER = r'''
import socket, sys
found = None
for k in range(16):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(f"\0NAME-{k}")
        found = k
    except OSError:
        pass
    probe.close()
print(found)
sys.stdout.flush()  # before any fork
a, b = map(int, input().split())
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    listener.bind(f"\0NAME-{a + b}")
except OSError:
    raise SystemExit(0)
listener.listen(4)
'''


def _bind_answer(name: str) -> str:
    return BIND_ANSWER.replace("NAME", name)


# ----------------------------------------------------------------------------- the cycle by sendmsg
INFLIGHT_CHANNEL = _bind_answer("redteam-inflight") + """
import array
s1, s2 = socket.socketpair()  # s1's queue holds the listener and s1 itself: a cycle no process holds
try:
    s2.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [listener.fileno(), s1.fileno()]))])
except OSError:
    pass
"""


def test_in_flight_sockets_carry_no_answer_from_case_to_case(sb):
    """A Unix socket sent over a socket that sits in its own queue (SCM_RIGHTS) outlived every process of
    its case until the kernel's unix garbage collector ran; a listener kept so stayed bound to its abstract
    name, and the next case that connected learned the answer from the name: 9-23 of 40 equal cases passed
    (a strict xfail until 2026-12-02). Program children now run under a second seccomp filter that refuses
    sendmsg / sendmmsg, the only calls that carry descriptors (io_uring is refused already)."""
    result = sb.execute(INFLIGHT_CHANNEL, _same(40))
    assert [t.passed for t in result.tests] == [False] * 40


FD_PASSING = """
import array, socket
def passes_fds():
    a, b = socket.socketpair()
    try:
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno()]))])
        return "sent"
    except PermissionError:
        a.send(b"y")  # plain sends still work
        return "refused" if b.recv(1) == b"y" else "broken"
"""


def test_program_children_cannot_put_a_descriptor_in_flight(sb):
    # a function job (the same child setup as measured and traced runs) and a stdin/stdout case refuse
    # SCM_RIGHTS; the sandbox's own descriptor passing (worker -> judge, leader -> case template) goes on,
    # or nothing here would run
    call = Problem(id="fd", source="t", statement="fd", entry_point="passes_fds",
                   tests=(CallTest(fn_name="passes_fds", args=(), expected="refused"),))
    assert sb.run(FD_PASSING, call).passed
    stdio = Problem(id="fd-io", source="t", statement="fd", tests=(StdioTest("", "refused\n"),))
    assert sb.run(FD_PASSING + "print(passes_fds())\n", stdio).passed
    assert sb.isolation.get("syscall_filter") is True


# ----------------------------------------------------------------------------- raw ways to send a descriptor
# the C structures of sendmsg / sendmmsg, and libc's syscall(), as the attacking programs use them
MSG_STRUCTS = r'''
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint), ("iov", ctypes.c_void_p),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]

class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
'''

RAW = r'''
import ctypes, mmap, os, socket, struct, subprocess, sys, threading
''' + MSG_STRUCTS + r'''
a, b = socket.socketpair()
keep = []
def message(fd):
    buf = ctypes.create_string_buffer(b"x")
    iov = iovec(ctypes.cast(buf, ctypes.c_void_p), 1)
    cmsg = ctypes.create_string_buffer(24)
    struct.pack_into("QiiI", cmsg, 0, 20, 1, 1, fd)  # len, SOL_SOCKET, SCM_RIGHTS, the descriptor
    keep.extend((buf, iov, cmsg))
    return msghdr(None, 0, ctypes.addressof(iov), 1, ctypes.addressof(cmsg), 24, 0)

def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *args)
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())

m = message(a.fileno())
mm = mmsghdr(message(a.fileno()), 0)
out = {
    "sendmsg": call(46, a.fileno(), ctypes.byref(m), 0),
    "sendmmsg": call(307, a.fileno(), ctypes.byref(mm), 1, 0),
    "x32 sendmsg": call(46 | 0x40000000, a.fileno(), ctypes.byref(m), 0),
    "x32 sendmsg 518": call(518 | 0x40000000, a.fileno(), ctypes.byref(m), 0),
}
try:  # the i386 ABI: getpid (20) through int 0x80
    mem = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    mem.write(bytes.fromhex("b814000000cd80c3"))  # mov eax, 20; int 0x80; ret
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(mem)))
    out["int 0x80"] = "ok" if fn() > 0 else "refused"
except (OSError, ValueError):
    out["int 0x80"] = "refused"
def send_fds():
    try:
        socket.send_fds(a, [b"x"], [a.fileno()])
        return "ok"
    except OSError as exc:
        return os.strerror(exc.errno)
out["send_fds"] = send_fds()
box = []
t = threading.Thread(target=lambda: box.append(send_fds()))
t.start(); t.join()
out["thread"] = box[0]
child = subprocess.run([sys.executable, "-c",
    "import socket, os\na, b = socket.socketpair()\n"
    "try:\n    socket.send_fds(a, [b'x'], [a.fileno()]); print('ok')\n"
    "except OSError as e:\n    print(os.strerror(e.errno))"], capture_output=True, text=True)
out["exec child"] = child.stdout.strip() or child.stderr[-200:]
try:
    pfd = os.pidfd_open(os.getppid())
    out["pidfd_getfd"] = call(438, pfd, 0, 0)
except OSError as exc:
    out["pidfd_getfd"] = os.strerror(exc.errno)
a.send(b"y")
out["plain send"] = "ok" if b.recv(1) == b"y" else "broken"
'''


def test_every_raw_path_to_sendmsg_is_refused(sb):
    """ctypes syscall numbers, other ABIs, a thread, an exec'd interpreter: none can pass a descriptor."""
    refused = "Operation not permitted"
    want = {"sendmsg": refused, "sendmmsg": refused, "x32 sendmsg": refused, "x32 sendmsg 518": refused,
            "int 0x80": "refused", "send_fds": refused, "thread": refused, "exec child": refused,
            "pidfd_getfd": refused, "plain send": "ok"}
    stdio = Problem(id="raw", source="t", statement="raw", tests=(StdioTest("", f"{want}\n"),))
    result = sb.run(RAW + "print(out)\n", stdio)
    assert result.passed, result.tests[0]
    call = Problem(id="raw-fn", source="t", statement="raw", entry_point="paths",
                   tests=(CallTest(fn_name="paths", args=(), expected=want),))
    assert sb.run(RAW + "def paths():\n    return out\n", call).passed
    assert sb.isolation.get("syscall_filter") is True


# ----------------------------------------------------------------------------- the cycle, by other routes
INFLIGHT_VARIANTS = _bind_answer("redteam-fdpass") + "import ctypes, os, struct, threading\n" + MSG_STRUCTS + r'''
keep = []
def cycle(kind, how):
    s1, s2 = socket.socketpair(socket.AF_UNIX, kind)  # s1's queue holds the listener and s1 itself
    keep.append((s1, s2))
    buf = ctypes.create_string_buffer(b"x")
    iov = iovec(ctypes.cast(buf, ctypes.c_void_p), 1)
    cmsg = ctypes.create_string_buffer(24)
    struct.pack_into("QiiII", cmsg, 0, 24, 1, 1, listener.fileno(), s1.fileno())
    msg = msghdr(None, 0, ctypes.addressof(iov), 1, ctypes.addressof(cmsg), 24, 0)
    keep.append((buf, iov, cmsg, msg))
    if how == "sendmsg":
        libc.syscall(ctypes.c_long(46), s2.fileno(), ctypes.byref(msg), 0)
    else:
        mm = mmsghdr(msg, 0)
        keep.append(mm)
        libc.syscall(ctypes.c_long(307), s2.fileno(), ctypes.byref(mm), 1, 0)
cycle(socket.SOCK_DGRAM, "sendmsg")
cycle(socket.SOCK_SEQPACKET, "sendmmsg")
t = threading.Thread(target=cycle, args=(socket.SOCK_STREAM, "sendmsg"))
t.start(); t.join()
for s1, s2 in [k for k in keep if isinstance(k[0], socket.socket)]:
    s1.detach(); s2.close()  # s1 stays only in flight
'''


def test_in_flight_cycles_by_raw_syscalls_carry_no_answer(sb):
    """The in-flight listener of test_redteam_rewards, put in flight by ``syscall(SYS_sendmsg)``, by
    ``sendmmsg`` and from a thread, over datagram, seqpacket and stream socketpairs: no case learns it.
    (Without the filter, cases 2-N pass whenever the unix GC has not run yet.)"""
    result = sb.execute(INFLIGHT_VARIANTS, _same(20))
    assert [t.passed for t in result.tests] == [False] * 20


CHAIN = _bind_answer("redteam-chain") + r'''
import os
if os.fork() == 0:
    os.setsid()
    while True:  # a chain of short-lived processes, each holding the listener, one step ahead of the sweep
        try:
            pid = os.fork()
        except OSError:
            continue
        if pid:
            os._exit(0)
'''


def test_a_fork_chain_holding_a_listener_does_not_outlive_the_sweep():
    """The sweep's walk of /proc missed a chain process whose parent died mid-walk (on its way to the
    reaper), so now and then the chain outlived the sweep and the next case found the answer: 5 of 150 jobs
    unpinned, 1 of 150 on one CPU, before the sweep also killed what the job cgroup lists. Many jobs, on a
    sandbox free to use every CPU (the race needs the chain and the sweep to run at once), so that a rare
    escape shows."""
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALL_CPUS)  # the module's sandbox runs on one CPU (see `sb`)
    try:
        with Sandbox(SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False)) as free:
            passed = [t.passed for _ in range(200) for t in free.execute(CHAIN, _same(5)).tests]
    finally:
        os.sched_setaffinity(0, pinned)
    assert passed == [False] * 1000


# ----------------------------------------------------------------------------- compatibility
COMPAT = r'''
import asyncio, concurrent.futures, multiprocessing, queue, socket, subprocess, sys, threading

def check():
    r = {}
    async def co():
        p = await asyncio.create_subprocess_exec(sys.executable, "-c", "print(7)", stdout=asyncio.subprocess.PIPE)
        o, _ = await p.communicate()
        s1, s2 = socket.socketpair()
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(s1, b"hi")
        return o.strip().decode() + (await loop.sock_recv(s2, 2)).decode()
    r["asyncio"] = asyncio.run(co())
    r["subprocess"] = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdin.read()[::-1])"],
                                     input="abc", capture_output=True, text=True).stdout
    q = queue.Queue()
    ts = [threading.Thread(target=lambda i=i: q.put(i * i)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    r["threads"] = sorted(q.queue)
    a, b = socket.socketpair()
    a.sendall(b"ping" * 1000)
    got = b""
    while len(got) < 4000:
        got += b.recv(4096)
    r["stream"] = len(got)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.send(b"dg")
    r["dgram"] = b.recv(2).decode()
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        r["threadpool"] = list(ex.map(abs, [-1, -2]))
    m = multiprocessing.Manager()
    d = m.dict()
    d["k"] = 2
    r["manager"] = dict(d)
    m.shutdown()
    return r

if __name__ == "__main__":
    print(check())
'''


def test_legitimate_programs_still_run_under_the_filter():
    want = {"asyncio": "7hi", "subprocess": "cba\n", "threads": [0, 1, 4, 9], "stream": 4000, "dgram": "dg",
            "threadpool": [1, 2], "manager": {"k": 2}}
    with Sandbox(SandboxConfig(workers=1, time_limit_s=5.0, reference_timing=False)) as sandbox:
        stdio = Problem(id="compat", source="t", statement="compat", tests=(StdioTest("", f"{want}\n"),))
        result = sandbox.run(COMPAT, stdio)
        assert result.passed, result.tests[0]
        call = Problem(id="compat-fn", source="t", statement="compat", entry_point="check",
                       tests=(CallTest(fn_name="check", args=(), expected=want),))
        assert sandbox.run(COMPAT, call).passed


# ----------------------------------------------------------------------------- open: host-wide counters
PERF_ID_CHANNEL = r'''
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
attr = ctypes.create_string_buffer(128)
struct.pack_into("IIQ", attr, 0, 1, 128, 1)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_TASK_CLOCK
struct.pack_into("Q", attr, 40, (1 << 5) | (1 << 6))  # exclude_kernel, exclude_hv
def event_id():  # every perf event, host-wide, takes the next id of one global counter
    fd = libc.syscall(298, attr, 0, -1, -1, 0)
    if fd < 0:
        return None
    i = ctypes.c_ulonglong()
    libc.ioctl(fd, 0x80082407, ctypes.byref(i))  # PERF_EVENT_IOC_ID
    os.close(fd)
    return i.value
n = event_id()
print(None if n is None else (n % 256) // 16)  # what the last case (or job) left
a, b = map(int, input().split())
for _ in range(512):  # leave the answer: the last id taken is 16 * answer (mod 256)
    n = event_id()
    if n is None or n % 256 == 16 * (a + b):
        break
'''


def test_perf_event_ids_carry_no_answer_from_case_to_case(sb):
    first = sb.execute(PERF_ID_CHANNEL, _same(8))
    second = sb.execute(PERF_ID_CHANNEL, _same(3))  # a later job
    assert [t.passed for t in first.tests + second.tests] == [False] * 11


PIDFS_CHANNEL = r'''
import os
def ino(pid):  # pidfs: every new process, host-wide, takes the next inode number
    fd = os.pidfd_open(pid)
    n = os.fstat(fd).st_ino
    os.close(fd)
    return n
print((ino(os.getpid()) % 256) // 16)  # our own number: the last case's last child's, plus one
a, b = map(int, input().split())
for _ in range(512):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    n = ino(pid)
    os.waitpid(pid, 0)
    if n % 256 == 16 * (a + b):
        break
'''


def test_pidfs_inode_numbers_carry_no_answer_from_case_to_case(sb):
    first = sb.execute(PIDFS_CHANNEL, _same(8))
    second = sb.execute(PIDFS_CHANNEL, _same(3))
    assert [t.passed for t in first.tests + second.tests] == [False] * 11


SOCKET_INO_CHANNEL = r'''
import os, socket
def ino():  # sockets and pipes take the next number of get_next_ino() (per CPU, batches of 1024)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    n = os.fstat(s.fileno()).st_ino
    s.close()
    return n
print((ino() % 256) // 16)  # what the last case left
a, b = map(int, input().split())
for _ in range(512):  # leave the answer: the last inode taken is 16 * answer (mod 256)
    if ino() % 256 == 16 * (a + b):
        break
'''


@pytest.mark.xfail(strict=True, reason=(
    "open: socket and pipe inode numbers come from get_next_ino(), a host-wide per-CPU counter; the sandbox "
    "takes a fixed number between cases (1), so a case that makes sockets until the last inode encodes its "
    "answer hands it to the next case on the same CPU: 7 of 8 cases passed. No namespace and no seccomp "
    "rule hides st_ino, and refusing pipes and sockets would not help: new /proc/<pid>/... inodes take "
    "their numbers from the same counter (fork, then stat the child's /proc entries). Fix: before each case and job child the template / "
    "leader takes pipes until the counter on its CPU is at a batch boundary plus a random offset (pin "
    "case children to that CPU), leaving only the batch number (moved by the whole host) to carry anything"))
def test_socket_inode_numbers_carry_no_answer_from_case_to_case(sb):
    first = sb.execute(SOCKET_INO_CHANNEL, _same(8))
    second = sb.execute(SOCKET_INO_CHANNEL, _same(3))
    assert [t.passed for t in first.tests + second.tests] == [False] * 11
