"""Red team of the shared stdin/stdout case runner (``SandboxConfig.stdio_shared_runner``, the default;
``sandbox/_cases.py``: ``Template.run_shared``, ``_idle``, ``_charge_as_fresh``; the runner's loop in
``_case_runner.run_shared``).

Each test runs a hostile program in both modes, the shared runner and a fresh process per case (the
reference), and asserts the safe outcome: the program gains nothing in the shared mode (no case passes that
fails with a fresh process per case), nothing survives its job, and the sandbox keeps working.

Found and closed: a warm case that reused an earlier case's work and ended with a non-zero exit after a valid
end frame (forged with the harness frame's ``nonce``, or written by the harness through an ``os.write`` an
earlier case replaced) passed in the judge (``_verdict.stdio_verdict`` failed an exit != 0 only without an end
frame) but was never a candidate for the rerun that charges reused work (``_cases._clean`` requires exit == 0):
3 of 6 cases passed against 0 of 6 alone. Now a non-zero exit is a death whatever the frames say, and the
runner binds what its loop calls before any program code runs.
"""

from __future__ import annotations

import textwrap

import pytest

from corecode.types import Status
from test_sandbox_helpers import SUM_CASES, assert_clean, loops_for, shared_and_fresh, statuses

CASES = SUM_CASES


@pytest.fixture(scope="module")
def boxes():
    with shared_and_fresh() as pair:
        yield pair


def passed(result) -> set[int]:
    return {t.index for t in result.tests if t.status is Status.PASSED}


@pytest.fixture(scope="module")
def table_limit(boxes):
    """(loops of the shared table, loops of a case's own work, a CPU limit that fits either but not both)."""
    _, fresh = boxes
    table, own = loops_for(0.25), loops_for(0.25)
    honest = textwrap.dedent(f"""
        t = sum(i * i for i in range({table}))
        a, b = map(int, input().split())
        if a % 2:
            sum(i * i for i in range({own}))
        print(a + b + (t - t))
        """)
    probe = fresh.execute(honest, CASES[:2], time_limit_s=5.0)  # table alone, table + own work
    t_table, t_both = (t.cpu_time_s for t in probe.tests)
    if not (probe.passed and t_table > 0.1 and t_both - t_table > 0.1):
        pytest.skip(f"the machine is too noisy to calibrate: {t_table}, {t_both}")
    # Table ~ own work ~ 0.7 of the limit: each fits, the two together do not (alone, the odd cases,
    # which need both, time out: test_sandbox_shared_runner.py's charge test checks that with the same
    # calibration).
    return table, own, 0.7 * t_both


# -- the hole: a non-zero exit after the end frame takes a warm case out of the charge --------------------
# (what the cold case adds, what a warm case does after printing its answer)
_FORGED_END = ("", """
    frame = sys._getframe().f_back  # up the harness's frames to the one that holds the case's nonce
    while "nonce" not in frame.f_locals:
        frame = frame.f_back
    nonce = frame.f_locals["nonce"]
    body = marshal.dumps(("end", 0, None, ""))
    os.write(3, nonce + struct.pack("<I", len(body)) + body)
    os._exit(1)
""")
_PATCHED_WRITE = ("""
    real_write, real_exit = os.write, os._exit
    def write(fd, data):  # the next case's harness writes its end frame through this, then we exit 1
        n = real_write(fd, data)
        if fd == 3:
            real_exit(1)
        return n
    os.write = write
""", "")


@pytest.mark.parametrize("attack", [_FORGED_END, _PATCHED_WRITE], ids=["forged_end", "patched_write"])
def test_a_warm_case_that_exits_non_zero_after_its_end_frame_is_charged(boxes, table_limit, attack):
    shared, fresh = boxes
    table, own, limit = table_limit
    cold, warm = (textwrap.indent(textwrap.dedent(part), "    ") for part in attack)
    program = textwrap.dedent(f"""
        import marshal, os, struct, sys
        if not hasattr(sys, "table"):
            sys.table = sum(i * i for i in range({table}))  # cold: pays the table, gives this case up
            print("cold")
        """) + cold + textwrap.dedent(f"""
        else:
            a, b = map(int, input().split())
            if a % 2:
                sum(i * i for i in range({own}))  # this case's own work: with the table, over the limit
            print(a + b + (sys.table - sys.table), flush=True)
        """) + warm
    ours, theirs = shared.execute(program, CASES[:6], time_limit_s=limit), fresh.execute(program, CASES[:6],
                                                                                         time_limit_s=limit)
    assert passed(theirs) == set()
    assert passed(ours) <= passed(theirs), [(t.status.value, round(t.cpu_time_s, 3)) for t in ours.tests]


# -- what held ---------------------------------------------------------------------------------------------
def test_a_tampered_harness_cannot_pass_a_wrong_or_slow_case(boxes):
    """Replace what the runner's harness looks up per case (os.write and marshal.dumps, used by its end-frame
    emitter; sys.setrecursionlimit / settrace / setprofile, which it calls to reset; traceback.print_exc;
    io.open, which makes the next case's streams), rewriting every end frame to "no exception": wrong outputs
    and slow cases still fail, as alone (outputs are compared by the judge, CPU is the leader's cgroup)."""
    shared, fresh = boxes
    program = textwrap.dedent("""
        import builtins, io, marshal, os, struct, sys, traceback
        if not hasattr(builtins, "tampered"):
            builtins.tampered = True
            real_write, real_dumps, real_open = os.write, marshal.dumps, io.open
            def dumps(value, *rest):
                if type(value) is tuple and value and value[0] == "end":
                    value = ("end", 0, None, "")
                return real_dumps(value, *rest)
            marshal.dumps = dumps
            os.write = lambda fd, data: real_write(fd, data)
            io.open = lambda *a, **k: real_open(*a, **k)
            sys.setrecursionlimit = sys.settrace = sys.setprofile = lambda *a: None
            traceback.print_exc = lambda *a, **k: None
            sys.setprofile.__doc__ = "kept"
        a, b = map(int, input().split())
        if a % 2 == 0:
            print(a + b + 1)  # wrong
        else:
            print(a + b, flush=True)
            while True:  # too slow
                pass
        """)
    want = [Status.WRONG_ANSWER, Status.TIMEOUT] * 3
    assert statuses(fresh.execute(program, CASES[:6], time_limit_s=0.2)) == want
    assert statuses(shared.execute(program, CASES[:6], time_limit_s=0.2)) == want
    assert_clean(shared)


_TRICKS = {
    # the go pipe's read end reopened for writing through /proc (it is the leader's pipe: refused), then
    # filled, so that the leader would block writing the next case's "go"
    "reopen_go_for_writing": """
        try:
            w = os.open("/proc/self/fd/4", os.O_WRONLY | os.O_NONBLOCK)
            try:
                while True:
                    os.write(w, b"x" * 24)
            except BlockingIOError:
                pass
            print("reopened", file=sys.stderr)
        except OSError:
            pass
        try:
            os.open("/proc/self/fd/5", os.O_RDONLY | os.O_NONBLOCK)  # steal the harness's "done"s
            print("reopened done", file=sys.stderr)
        except OSError:
            pass
    """,
    # a private pipe over fd 4 and the harness's "done" written ahead: the harness then waits on our pipe
    "private_pipe_on_go": """
        r, w = os.pipe()
        os.dup2(r, 4)
        try:
            os.write(5, struct.pack("<q", n))
        except OSError:
            pass
    """,
    # the "done" written, then blocked in read(4) in our own code (passes _idle), then the next case run by
    # us without the harness, with a wrong answer and a forged end frame
    "steal_the_next_go": """
        try:
            os.write(5, struct.pack("<q", n))
            message = os.read(4, 24)
        except OSError:
            message = b""
        if len(message) == 24:
            nonce = message[8:]
            print(int(os.pread(0, 100, 0).split()[0]) * 2 + 2, flush=True)  # wrong for the next case
            body = marshal.dumps(("end", 0, None, ""))
            os.write(3, nonce + struct.pack("<I", len(body)) + body)
            os.write(5, struct.pack("<q", n + 1))
            os.read(4, 24)
            os._exit(0)
    """,
    # the next case's standard streams swapped (its stdout into the stdin memfd, stdin from stdout)
    "swap_standard_fds": """
        os.dup2(1, 0)
        os.dup2(2, 1)
        fcntl.fcntl(2, fcntl.F_SETFL, os.O_APPEND)
    """,
    # the "done" written, then stopped: /proc shows state T, not a wait for the next case
    "stop_self_after_done": """
        try:
            os.write(5, struct.pack("<q", n))
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGSTOP)
    """,
}


@pytest.mark.parametrize("trick", list(_TRICKS))
def test_descriptor_and_pipe_games_gain_nothing(boxes, trick):
    """Games with the runner's descriptors (go = fd 4, done = fd 5, the four memfds on fds 0-3), played in
    case 1 after its answer: no later case passes that fails alone, and nothing is left behind."""
    shared, fresh = boxes
    program = textwrap.dedent("""
        import builtins, fcntl, marshal, os, signal, struct, sys
        n = getattr(builtins, "n", 0)
        builtins.n = n + 1
        a, b = map(int, input().split())
        print(a + b, flush=True)
        if a == 1:
        """) + textwrap.indent(textwrap.dedent(_TRICKS[trick]), "    ")
    ours, theirs = shared.execute(program, CASES[:5], time_limit_s=0.3), fresh.execute(program, CASES[:5],
                                                                                        time_limit_s=0.3)
    assert "reopened" not in "".join(t.stderr for t in ours.tests)
    assert passed(ours) <= passed(theirs), ([t.status.value for t in ours.tests], [t.status.value for t in theirs.tests])
    assert_clean(shared)


def test_a_timer_between_cases_gains_nothing(boxes):
    """An interval timer whose handler runs in the runner's main thread while the harness waits for the
    next case (between "done" and "go": CPU no case is charged) builds a table chunk by chunk. It got a few
    chunks per gap; now the runner blocks the program's signals while it waits and disarms its timers at
    the next case, and cases that use work kept from an earlier case are charged or rerun alone."""
    shared, fresh = boxes
    table = loops_for(0.3)
    program = textwrap.dedent(f"""
        import builtins, signal, sys
        st = getattr(builtins, "st", None)
        if st is None:
            st = builtins.st = {{"i": 0, "busy": False}}
            def chunk(*_):
                if st["busy"] or st["i"] >= {table}:
                    return
                st["busy"] = True
                st["i"] = min({table}, st["i"] + 5000)
                sum(k * k for k in range(5000))
                st["busy"] = False
            signal.signal(signal.SIGALRM, chunk)
            signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        a, b = map(int, input().split())
        while st["i"] < {table}:   # finish the table in this case if the gaps did not
            chunk()
        print(a + b + (st["i"] > 10 ** 12))
        """)
    limit = 0.1  # the table alone does not fit (by a margin: calibrated CPU moves by up to ~40 % here)
    assert passed(fresh.execute(program, CASES[:6], time_limit_s=limit)) == set()
    ours = shared.execute(program, CASES[:6], time_limit_s=limit)
    assert passed(ours) == set(), [(t.status.value, round(t.cpu_time_s, 3)) for t in ours.tests]
    assert_clean(shared)


def test_a_daemon_of_the_last_case_reaches_no_later_job(boxes):
    """The last case of a job leaves a daemon serving an answer on an abstract socket (and the runner
    keeps one in a thread); the next job of the same worker finds neither."""
    shared, _ = boxes
    program = textwrap.dedent("""
        import os, socket, sys, threading, time
        a, b = map(int, input().split())
        try:
            c = socket.socket(socket.AF_UNIX)
            c.settimeout(0.2)
            c.connect("\\0corecode-redteam-shared")
            print("found", c.recv(64), file=sys.stderr)
        except OSError:
            pass
        def serve():
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind("\\0corecode-redteam-shared")
            except OSError:
                return
            s.listen(8)
            while True:
                conn, _ = s.accept()
                conn.sendall(b"%d" % (a + b))
                conn.close()
        if a == 3:
            threading.Thread(target=serve, daemon=True).start()
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    serve()
                os._exit(0)
            time.sleep(0.05)
        print(a + b)
        """)
    first = shared.execute(program, CASES[:5])  # (the shared runner serves programs of 5 or more cases)
    second = shared.execute(program, CASES[:5])
    assert first.passed and second.passed, (statuses(first), statuses(second))
    assert all("found" not in t.stderr for t in second.tests), [t.stderr for t in second.tests]
    assert_clean(shared)
