"""Cases of one stdin/stdout program (issue 15) with a fresh process per case (``stdio_shared_runner=False``,
``sandbox/_cases.py``): each case runs in a fresh child of the program's case template, so nothing one case
does reaches the next. (The default shared runner gives that up on purpose, with the checks of
tests/test_sandbox_shared_runner.py and tests/test_sandbox_redteam_shared.py; it falls back to this mode
for a program whose output depends on an earlier case, which these programs' often do.)

Each test is a program that tries to carry something from one case to the next to pass cases it should
fail: every case has the same expected output, and the program prints the right answer only if an earlier
case left it behind somewhere (Python state, a file, a System V object or POSIX queue, a helper process,
the template itself). Run alone, each case fails; so every case must fail here too. And a case that
crashes, hangs or attacks its template fails alone.
"""

from __future__ import annotations

import textwrap

import pytest

from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import Problem, StdioTest, Status
from test_sandbox_helpers import assert_clean

SAME = tuple(StdioTest("2 3\n", "5\n") for _ in range(6))  # six cases, one answer: a carried answer passes
SUM = "a, b = map(int, input().split())\nprint(a + b)\n"


@pytest.fixture(scope="module")
def sb():
    config = SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False, stdio_shared_runner=False)
    with Sandbox(config) as sandbox:
        yield sandbox


def statuses(result) -> list[Status]:
    return [t.status for t in result.tests]


def assert_every_case_fails(sb, program: str) -> None:
    result = sb.execute(textwrap.dedent(program), SAME)
    assert statuses(result) == [Status.WRONG_ANSWER] * len(SAME), [(t.status, t.stdout, t.stderr) for t in result.tests]
    assert sb.execute(SUM, SAME).passed  # the same cases pass with a program that computes the answer
    assert_clean(sb)


def test_python_state_does_not_reach_the_next_case(sb):
    assert_every_case_fails(sb, """
        import builtins, sys, os
        carried = getattr(builtins, "carried", None) or sys.modules.get("carried") or os.environ.get("CARRIED")
        if carried is None:
            a, b = map(int, input().split())
            builtins.carried = str(a + b)  # for the next case
            sys.modules["carried"] = str(a + b)
            os.environ["CARRIED"] = str(a + b)
            sys.setrecursionlimit(12345)
            print("first")
        else:
            print(carried)
        """)


def test_files_do_not_reach_the_next_case(sb):
    assert_every_case_fails(sb, """
        import os, tempfile
        places = [os.path.join(os.getcwd(), "carry"), os.path.join(tempfile.gettempdir(), "carry2"),
                  os.path.expanduser("~/carry3"), os.path.join(os.path.dirname(os.getcwd()), "carry4")]
        found = None
        for path in places:
            try:
                with open(path) as f:
                    found = f.read()
                break
            except OSError:
                pass
        if found is None:
            a, b = map(int, input().split())
            for path in places:
                try:
                    with open(path, "w") as f:
                        f.write(str(a + b))
                except OSError:
                    pass
            print("first")
        else:
            print(found)
        """)


def test_the_job_dir_itself_carries_nothing(sb):
    # The case owns its job dir: its mode, times and extended attributes (tmpfs keeps user.* ones) would
    # carry an answer if the directory outlived the case. So would the scratch dir above it, where a case
    # may write (without root).
    assert_every_case_fails(sb, """
        import os
        found = None
        for place in (os.getcwd(), os.path.dirname(os.getcwd())):
            try:
                found = found or os.getxattr(place, "user.carry").decode()
            except OSError:
                pass
            st = os.stat(place)
            if found is None and int(st.st_mtime) == 5:
                found = "5"
            if found is None and st.st_mode & 0o777 == 0o705:
                found = "5"
        if found is None:
            a, b = map(int, input().split())
            for place in (os.getcwd(), os.path.dirname(os.getcwd())):
                for attempt in (lambda: os.setxattr(place, "user.carry", str(a + b).encode()),
                                lambda: os.utime(place, (5, 5)), lambda: os.chmod(place, 0o705)):
                    try:
                        attempt()
                    except OSError:
                        pass
            print("first")
        else:
            print(found)
        """)


def test_pid_numbers_are_the_same_for_every_case_and_job(sb):
    # pids are visible to a program; if a case's pid depended on how many processes the cases (or jobs)
    # before it forked, the pid counter would carry an answer (tests/test_redteam_rewards.py).
    program = textwrap.dedent("""
        import os
        n = int(input())
        print(os.getpid(), os.getppid())
        for _ in range(n):  # move the counter on by n
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        """)
    seen = set()
    for _ in range(2):
        result = sb.execute(program, [StdioTest(f"{n}\n", "") for n in (0, 7, 23, 1, 40)])
        seen |= {t.stdout for t in result.tests}
    assert len(seen) == 1, seen
    assert_clean(sb)


IPC = """
    import ctypes, ctypes.util, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    KEY = 0x15CA5E
    def shm_stash(data):
        shm = libc.shmget(KEY, 4096, 0o1000 | 0o666)  # IPC_CREAT
        if shm >= 0:
            ctypes.memmove(libc.shmat(shm, None, 0), data, len(data))
    def shm_fetch():
        shm = libc.shmget(KEY, 4096, 0)
        return None if shm < 0 else ctypes.string_at(libc.shmat(shm, None, 0), 8).rstrip(b"\\0").decode()
    def sem_stash(value):
        sem = libc.semget(KEY, 1, 0o1000 | 0o666)
        if sem >= 0:
            libc.semctl(sem, 0, 16, ctypes.c_int(value))  # SETVAL
    def sem_fetch():
        sem = libc.semget(KEY, 1, 0)
        return None if sem < 0 else str(libc.semctl(sem, 0, 12))  # GETVAL
    class Msg(ctypes.Structure):
        _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
    def msg_stash(data):
        q = libc.msgget(KEY, 0o1000 | 0o666)
        if q >= 0:
            libc.msgsnd(q, ctypes.byref(Msg(1, data)), 64, 0)
    def msg_fetch():
        q = libc.msgget(KEY, 0)
        m = Msg()
        if q < 0 or libc.msgrcv(q, ctypes.byref(m), 64, 0, 0o4000) < 0:  # IPC_NOWAIT
            return None
        return m.mtext.decode()
    try:
        rt = ctypes.CDLL(ctypes.util.find_library("rt") or None, use_errno=True)
        rt.mq_open.restype = ctypes.c_int
    except OSError:
        rt = None
    def mq_stash(data):
        if rt is not None:
            q = rt.mq_open(b"/carry", os.O_CREAT | os.O_RDWR, 0o666, None)
            if q >= 0:
                rt.mq_send(q, data, len(data), 0)
    def mq_fetch():
        if rt is None:
            return None
        q = rt.mq_open(b"/carry", os.O_RDWR | os.O_NONBLOCK)
        buf = ctypes.create_string_buffer(8192)
        if q < 0 or rt.mq_receive(q, buf, 8192, None) < 0:
            return None
        return buf.value.decode()
    """


def test_ipc_objects_do_not_reach_the_next_case(sb):
    # Every case has an IPC namespace of its own: an object a case leaves must not be there for the next.
    assert_every_case_fails(sb, IPC + """
    found = shm_fetch() or msg_fetch() or mq_fetch() or (sem_fetch() if sem_fetch() not in (None, "0") else None)
    if found is None:
        a, b = map(int, input().split())
        shm_stash(str(a + b).encode())
        sem_stash(a + b)
        msg_stash(str(a + b).encode())
        mq_stash(str(a + b).encode())
        print("first")
    else:
        print(found)
    """)


def test_a_posix_queue_does_not_reach_the_next_case(sb):
    # A POSIX message queue lives in the IPC namespace too.
    assert_every_case_fails(sb, IPC + """
    found = mq_fetch()
    if found is None:
        a, b = map(int, input().split())
        mq_stash(str(a + b).encode())
        print("first")
    else:
        print(found)
    """)


def test_ipc_still_works_inside_one_case(sb):
    # A program may use System V IPC itself, within a case.
    program = textwrap.dedent(IPC + """
    a, b = map(int, input().split())
    shm_stash(str(a + b).encode())
    sem_stash(a + b)
    print(shm_fetch(), sem_fetch())
    """)
    result = sb.execute(program, [StdioTest("2 3\n", "5 5\n"), StdioTest("4 4\n", "8 8\n"), StdioTest("1 1\n", "2 2\n")])
    assert result.passed, [(t.status, t.stdout, t.stderr) for t in result.tests]
    assert_clean(sb)


def test_a_helper_process_does_not_reach_the_next_case(sb):
    # A daemon left by one case would serve the answer to the next over an abstract unix socket (the
    # network namespace is the worker's): the sweep after each case kills it.
    assert_every_case_fails(sb, """
        import os, socket, time
        ADDR = "\\0corecode-carry"
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(ADDR)
            print(s.recv(64).decode())
        except OSError:
            a, b = map(int, input().split())
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    server.bind(ADDR)
                    server.listen(8)
                    while True:
                        conn, _ = server.accept()
                        conn.sendall(str(a + b).encode())
                        conn.close()
                os._exit(0)
            time.sleep(0.2)
            print("first")
        """)


def test_another_case_expected_output_is_not_in_reach(sb):
    # Each case's expected output is a secret the program cannot compute; the program searches its own
    # memory and every process it can read for any of them. Only the judge ever holds them.
    cases = [StdioTest(f"{i}\n", f"expected-{i}-7f3a9c\n") for i in range(4)]
    program = textwrap.dedent("""
        import os, re
        want = "expected-" + input().strip() + "-"
        found = None
        for pid in ["self"] + [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                maps = open(f"/proc/{pid}/maps").read().splitlines()
                mem = open(f"/proc/{pid}/mem", "rb", 0)
            except OSError:
                continue
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                if "r" not in line.split()[1] or end - start > 1 << 28:
                    continue
                try:
                    mem.seek(start)
                    chunk = mem.read(end - start)
                except (OSError, ValueError, OverflowError):
                    continue
                for m in re.finditer(rb"expected-\\d+-[0-9a-f]{6}", chunk):
                    if m.group().decode().startswith(want) and "{" not in m.group().decode():
                        found = m.group().decode()
            if found:
                break
        print(found)
        """)
    result = sb.execute(program, cases, time_limit_s=5.0)
    assert statuses(result) == [Status.WRONG_ANSWER] * 4, [(t.status, t.stdout, t.stderr[-300:]) for t in result.tests]
    assert_clean(sb)


def test_a_case_that_crashes_hangs_or_attacks_its_template_fails_alone(sb):
    program = textwrap.dedent("""
        import ctypes, os, signal, sys, time
        what = input().strip()
        if what == "segv":
            ctypes.string_at(0)
        elif what == "hang":
            while True:
                pass
        elif what == "sleep":
            time.sleep(100)
        elif what == "parent":
            for target in (os.getppid(), 1):
                for sig in (signal.SIGSTOP, signal.SIGKILL):
                    try:
                        os.kill(target, sig)
                    except OSError:
                        pass
            try:
                os.killpg(0, signal.SIGKILL)
            except OSError:
                pass
            os.kill(-1, signal.SIGKILL)
        elif what == "exit":
            os._exit(3)
        elif what == "raise":
            raise KeyError("no")
        elif what == "memory":
            x = b"x" * (2 << 30)
        elif what == "garbage":  # forged frames on the result channel, then a right answer
            os.write(3, b"\\x00" * 64 + b"not a frame")
        elif what == "flood":
            while True:
                print("x" * 10000)
        print("ok")
        """)
    kinds = ["ok", "segv", "ok", "hang", "ok", "sleep", "ok", "parent", "ok", "exit", "ok", "raise", "ok", "memory", "ok",
             "garbage", "ok", "flood", "ok"]
    result = sb.execute(program, [StdioTest(k + "\n", "ok\n") for k in kinds])
    got = dict(zip(range(len(kinds)), statuses(result)))
    for i, kind in enumerate(kinds):
        if kind == "ok":
            assert got[i] is Status.PASSED, (i, result.tests[i])
    assert got[1] is Status.RUNTIME_ERROR
    assert got[3] is Status.TIMEOUT and got[5] is Status.TIMEOUT
    assert got[7] is not Status.PASSED
    assert got[9] is Status.RUNTIME_ERROR
    assert got[11] is Status.RUNTIME_ERROR and result.tests[11].exception == "KeyError"
    assert got[13] in (Status.MEMORY_EXCEEDED, Status.RUNTIME_ERROR)
    assert got[15] is Status.RUNTIME_ERROR and got[17] is Status.OUTPUT_LIMIT
    assert_clean(sb)


def test_each_case_has_its_own_cpu_time_and_memory(sb):
    # Per-case CPU and memory: a case's figures are its own, not the program's so far.
    program = textwrap.dedent("""
        n = int(input())
        data = b"x" * (n << 20)  # touched, so it is resident
        total = 0
        for i in range(n * 200_000):
            total += i
        print(len(data) >> 20)
        """)
    result = sb.execute(program, [StdioTest("1\n", "1\n"), StdioTest("40\n", "40\n"), StdioTest("1\n", "1\n")],
                        time_limit_s=5.0)
    assert result.passed, result
    small, big, small_again = result.tests
    assert big.cpu_time_s > 5 * small.cpu_time_s and big.cpu_time_s > 5 * small_again.cpu_time_s
    assert big.peak_memory_bytes >= 40 << 20
    assert small_again.peak_memory_bytes < 20 << 20


def test_a_syntax_error_fails_every_case_and_the_next_program_runs(sb):
    result = sb.execute("print(1 +\n", SAME)
    assert statuses(result) == [Status.SYNTAX_ERROR] * len(SAME)
    assert sb.execute(SUM, SAME).passed
    assert_clean(sb)


def test_file_io_cases_see_only_their_own_input(sb):
    problem = Problem(id="t/fileio", source="test", statement="", input_file="in.txt", output_file="out.txt",
                      tests=(StdioTest("2 3\n", "5\n"), StdioTest("10 20\n", "30\n"), StdioTest("1 1\n", "2\n")))
    program = textwrap.dedent("""
        import os
        a, b = map(int, open("in.txt").read().split())
        stale = os.path.exists("out.txt")
        open("out.txt", "w").write("stale" if stale else str(a + b))
        """)
    assert sb.run(program, problem).passed
    assert_clean(sb)
