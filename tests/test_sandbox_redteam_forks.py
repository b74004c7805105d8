"""Red team of issue 15 item 2 (commit 09a9db5: function jobs forked with the C library's fork, the job
environment set once in the worker and inherited, no tmpfs remount after a job's last child, no "end" per
test, the judge's CPU read from a kept-open stat file, one sendmsg per job): a program that wants a pass it
did not earn, a lower measured cost than its real one, or a say in another program's verdict.

Got through (fixed, pinned here):

* the judge's temporary directory was the program's job dir. The worker now sets the job environment
  once for itself, ``tempfile.tempdir`` included, and the judge (forked from the worker) reset
  ``os.environ`` but kept ``tempfile.tempdir``: trusted test or checker code that used ``tempfile`` wrote
  into the directory the program runs in. Without root (a user namespace: the judge and the program share
  a uid) a program read a test's temporary file holding the expected value and passed without solving
  it (before 09a9db5 the judge had no usable temporary directory at all); as root a program opened its
  job dir to the judge's uid (``chmod 0777``: it owns it) and passed by answering the size of the
  test's temporary file. ``_become_judge`` now resets ``tempfile.tempdir``.

Held (each test shows what the program tried): CPU of a helper thread that works only while no call is
in progress; work done after the last call (thread, atexit, finalizer, a detached grandchild) and
anything it leaves (files, sockets, processes, fork hooks of a module the program wrote and imported) for
the next job; environment changes (``os.environ``, ``putenv``, the sandbox's own ``_ENV_OF`` marker) in
a function job's program child and in a stdio case; the random state of quietly forked program children
(fresh per job); descriptors a program child could inherit from its leader (the judge's stat file,
sockets); a program that dies or closes its channel between tests; the interpreter's fork machinery that
the quiet fork skips (threads, locks, signals, ``os.fork`` inside the program).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Status, StdioTest

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False)) as sandbox:
        yield sandbox


def answer(sb, program: str, test: str = "assert f() == '\\x00'") -> str:
    """What ``f()`` returned (the test fails on purpose and the detail says what it got)."""
    result = sb.execute(textwrap.dedent(program), [AssertTest(test)])
    detail = result.tests[0].detail or ""
    assert "got " in detail, (result.tests[0].status, detail)
    return detail.split("got ", 1)[1]


# ------------------------------------------------------------------------ the judge's temporary directory
def test_the_judges_temporary_directory_is_not_the_programs_job_dir(sb):
    program = """
        import os
        def f():
            return os.getcwd()
    """
    test = "import tempfile\nassert f() != tempfile.tempdir and f() != tempfile.gettempdir()"
    result = sb.execute(textwrap.dedent(program), [AssertTest(test)])
    # before the fix: wrong_answer (the judge's tempdir was the job dir); now the judge, as before 09a9db5,
    # has no writable temporary directory (its filesystem is read-only): a runtime error, never the job dir
    assert result.tests[0].status != Status.WRONG_ANSWER, result.tests[0].detail
    assert "job" not in (result.tests[0].detail or ""), result.tests[0].detail


def test_a_program_cannot_see_the_judges_temporary_files_as_root(sb):
    # as root the job dir is the program's (uid 65534, mode 0700): it opens it to the judge's uid, which
    # then (before the fix) wrote its temporary files there; their size is the program's answer
    program = """
        import os
        os.chmod(".", 0o777)
        def f():
            for name in os.listdir("."):
                return os.stat(name).st_size
            return -1
    """
    test = ("import os, tempfile\nfd, path = tempfile.mkstemp()\nos.write(fd, b'x' * 271)\nos.close(fd)\n"
            "assert f() == 271\nos.unlink(path)")
    result = sb.execute(textwrap.dedent(program), [AssertTest(test)])
    assert result.tests[0].status != Status.PASSED, result.tests[0].detail


PEEK = """
import os
def f():
    for name in os.listdir("."):
        try:
            return int(open(name).read())
        except (OSError, ValueError):
            pass
    return -1
"""
TEMP_TEST = ("import os, tempfile\nfd, path = tempfile.mkstemp()\nos.write(fd, b'271828')\nos.close(fd)\n"
             "assert f() == 271828\nos.unlink(path)")
UNPRIVILEGED = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, SRC)
    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.types import AssertTest
    config = SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False, python=sys.executable)
    with Sandbox(config) as sb:
        r = sb.execute(PEEK, [AssertTest(TEMP_TEST)])
        print(json.dumps({"user_namespace": sb.isolation.get("user_namespace", False),
                          "status": r.tests[0].status.value, "detail": r.tests[0].detail}))
""")


def test_without_root_a_program_cannot_read_the_judges_temporary_files(tmp_path):
    from test_sandbox_unprivileged import SYSTEM_PYTHON, _usable

    reason = _usable()
    if reason:
        pytest.skip(reason)
    tmp_path.chmod(0o777)
    script = f"SRC = {str(SRC)!r}\nPEEK = {PEEK!r}\nTEMP_TEST = {TEMP_TEST!r}\n" + UNPRIVILEGED
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", f"HOME={tmp_path}",
                          SYSTEM_PYTHON, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    if not out["user_namespace"]:
        pytest.skip("user namespaces are not available to unprivileged users here")
    assert out["status"] != "passed", out  # it passed (read 271828 from the judge's temp file) before the fix


# ----------------------------------------------------------------------- CPU outside the judge's windows
def test_a_helper_thread_working_only_between_calls_is_charged(sb):
    """Each test's CPU is read by the judge just before it says 'begin' and just after it judged the answer;
    a helper that works only while the main thread waits for the next call mostly runs inside those
    windows (the judge's own work around each call): the gap between two windows is a few statements."""
    program = """
        import threading, time
        inside = [False]
        spent = [0.0]
        def spin():
            t0 = time.thread_time()
            while True:
                if not inside[0]:
                    x = 0
                    for i in range(2000):
                        x += i
                else:
                    time.sleep(0.0001)
                spent[0] = time.thread_time() - t0
        threading.Thread(target=spin, daemon=True).start()
        def f(i):
            inside[0] = True
            inside[0] = False
            return spent[0]
    """
    n = 60
    result = sb.execute(textwrap.dedent(program), [AssertTest(f"assert f({i}) == -1") for i in range(n)])
    assert all(t.status == Status.WRONG_ANSWER for t in result.tests), [t.status for t in result.tests]
    helper = float(result.tests[-1].detail.split("got ", 1)[1])
    charged = sum(t.cpu_time_s for t in result.tests)
    assert helper > 0.005, helper  # the helper did work
    assert charged >= 0.5 * helper, (charged, helper)  # 0.8-0.9 here, 09a9db5 and before


# ------------------------------------------------------ after the last call: nothing for the next job
LEAVER = """
import atexit, ctypes, os, socket, threading, time, weakref, sys

def leave(tag):
    for d in (os.getcwd(), os.path.dirname(os.getcwd()), "/tmp", "/var/tmp", "/dev/shm", "/run", "/dev/mqueue"):
        try:
            with open(os.path.join(d, "carried_" + tag), "w") as fh:
                fh.write("1")
        except OSError:
            pass
    try:
        os.makedirs("deep/a/b", exist_ok=True)
        open("deep/a/b/x", "w").write("1")
        os.chmod("deep/a", 0)
        os.mkfifo("fifo_" + tag)
    except OSError:
        pass

open("hook_mod.py", "w").write(
    "import os\\n"
    "def _mark():\\n"
    "    open(os.path.join(os.getcwd(), 'hooked'), 'w').write('1')\\n"
    "os.register_at_fork(before=_mark, after_in_child=_mark)\\n")
sys.path.insert(0, os.getcwd())
import hook_mod

atexit.register(leave, "atexit")

class Late:
    def __del__(self):
        leave("del")

keep = Late()
weakref.finalize(keep, leave, "finalize")

def later():
    time.sleep(0.05)
    leave("thread")
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(b"\\0corecode_redteam_forks")
        s.listen()
        keep.sock = s
    except OSError:
        pass
    time.sleep(30)

calls = [0]
def f():
    calls[0] += 1
    if calls[0] == 1:
        threading.Thread(target=later, daemon=True).start()
        pid = os.fork()  # a detached grandchild, in its own session, that outlives its parent
        if pid == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(0.05)
                leave("grandchild")
                time.sleep(30)
            os._exit(0)
        os.waitpid(pid, 0)
        del globals()["keep"]
    return calls[0]
"""

LOOKER = """
import os, socket
def f():
    seen = []
    for d in (os.getcwd(), os.path.dirname(os.getcwd()), "/tmp", "/var/tmp", "/dev/shm", "/run", "/dev/mqueue"):
        try:
            seen += [os.path.join(d, n) for n in os.listdir(d) if n.startswith(("carried", "fifo", "deep", "hook"))]
        except OSError:
            pass
    seen += sorted(os.listdir("."))
    try:
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(b"\\0corecode_redteam_forks")
        seen.append("socket")
    except OSError:
        pass
    procs = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    seen += ["process " + p for p in procs]
    pid = os.fork()  # a hook the last program registered would run here
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    seen += [n for n in os.listdir(".") if n == "hooked"]
    st = os.stat(".")
    seen += [] if (st.st_mode & 0o777) == 0o700 else ["mode %o" % st.st_mode]
    return seen
"""


def test_work_after_the_last_call_leaves_nothing_for_the_next_job(sb):
    result = sb.execute(textwrap.dedent(LEAVER), [AssertTest(f"assert f() == {i}") for i in (1, 2, 3)])
    assert [t.status for t in result.tests] == [Status.PASSED] * 3, [(t.status, t.detail) for t in result.tests]
    for _ in range(2):  # the next job on the same worker (then the one after it)
        assert answer(sb, LOOKER) == "[]"


def test_a_fork_hook_a_program_registers_runs_only_in_its_own_process(sb):
    program = """
        import os
        marks = []
        os.register_at_fork(before=lambda: marks.append("b"), after_in_parent=lambda: marks.append("p"),
                            after_in_child=lambda: marks.append("c"))
        def f():
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.write(w, "".join(marks).encode())
                os._exit(0)
            os.waitpid(pid, 0)
            return "".join(marks) + "/" + os.read(r, 10).decode()
    """
    assert answer(sb, program) == "'bp/bc'"  # as after os.fork: the program's own hooks, in its own process
    assert answer(sb, LOOKER) == "[]"


# ------------------------------------------------------------------------------------- the environment
ENV_KEYS = {"HOME", "TMPDIR", "PATH", "LANG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}
ENV_TAMPER = """
import ctypes, os, sys, tempfile
def tamper():
    os.environ["CARRIED"] = "1"
    os.environ["PATH"] = "/carried"
    ctypes.CDLL(None).putenv(b"CARRIED_C=1")
    tempfile.tempdir = "/carried"
    run = sys.modules.get("_run")
    if run is not None and hasattr(run, "_ENV_OF"):  # the worker's "environment already set" marker
        run._ENV_OF[0] = None
        run.job_environment = lambda jobdir: {"CARRIED": "1"}
"""
ENV_CHECK = """
import os, tempfile
def check():
    bad = sorted(set(os.environ) ^ WANT)
    if os.environ.get("PATH") != "/usr/local/bin:/usr/bin:/bin":
        bad.append("PATH")
    with open("/proc/self/environ", "rb") as fh:
        if b"CARRIED" in fh.read():
            bad.append("C environ")
    if tempfile.gettempdir() != os.getcwd():
        bad.append("tempdir")
    return ",".join(bad) or "clean"
"""


def test_environment_changes_of_a_function_job_do_not_reach_the_next(sb):
    program = ENV_TAMPER + ENV_CHECK.replace("WANT", repr(ENV_KEYS)) + "def f():\n    c = check()\n    tamper()\n    return c\n"
    for _ in range(3):
        assert answer(sb, program) == "'clean'"


def test_environment_changes_of_a_stdio_case_do_not_reach_the_next_case(sb):
    program = ENV_TAMPER + ENV_CHECK.replace("WANT", repr(ENV_KEYS)) + "print(check())\ntamper()\n"
    result = sb.execute(program, [StdioTest(str(i), "clean") for i in range(4)])
    assert [t.status for t in result.tests] == [Status.PASSED] * 4, [t.detail for t in result.tests]


# ---------------------------------------------------------------------------------- random, fork state
def test_random_state_is_fresh_for_every_program_child(sb):
    program = """
        import random, hashlib
        A = hashlib.sha256(repr(random.getstate()).encode()).hexdigest()[:16] + str(random.gauss(0, 1))
        def f():
            return A
    """
    stdio = "import random, hashlib\nprint(hashlib.sha256(repr(random.getstate()).encode()).hexdigest()[:16])\n"
    seen = [answer(sb, program) for _ in range(3)]
    seen += [sb.execute(stdio, [StdioTest("", "x")]).tests[0].detail.split("got ", 1)[1] for _ in range(2)]
    assert len(set(seen)) == len(seen), seen  # no job starts from the worker's (or another job's) state


def test_a_quietly_forked_program_child_works_like_one_forked_by_os_fork(sb):
    program = """
        import concurrent.futures, logging, os, signal, threading, importlib
        def f():
            ok = []
            ok.append(threading.current_thread() is threading.main_thread())
            signal.signal(signal.SIGUSR1, lambda *a: None)  # only the main thread may do this
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                ok.append(sorted(pool.map(lambda x: x * x, range(8))) == [x * x for x in range(8)])
                ok.append(all(pool.map(lambda n: importlib.import_module(n) is not None, ["colorsys", "glob"])))
            logging.getLogger("t").warning("ok")
            pid = os.fork()
            if pid == 0:
                ok2 = threading.current_thread() is threading.main_thread()
                logging.getLogger("t").warning("child")
                os._exit(0 if ok2 else 3)
            ok.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0)
            ok.append(threading.active_count() == 1)
            return all(ok)
    """
    result = sb.execute(textwrap.dedent(program), [AssertTest("assert f() is True")] * 3)
    assert [t.status for t in result.tests] == [Status.PASSED] * 3, [(t.status, t.detail) for t in result.tests]


def test_a_program_child_inherits_no_descriptor_of_its_leader(sb):
    program = """
        import os
        def f():
            out = []
            for fd in sorted(os.listdir("/proc/self/fd"), key=int):
                try:
                    out.append(fd + "=" + os.readlink("/proc/self/fd/" + fd).split("[")[0].split(" (")[0])
                except OSError:
                    pass  # the listing's own descriptor, closed by now
            return " ".join(out)
    """
    got = answer(sb, program).strip("'")
    assert got == "0=/dev/null 1=/memfd:stdout 2=/memfd:stderr 3=pipe: 4=pipe:", got


# ------------------------------------------------------------ failing tests that try to count as passed
@pytest.mark.parametrize("how", ["os._exit(0)", "os.kill(os.getpid(), 9)", "os.close(3); os.close(4)",
                                 "os.write(4, b'\\x00' * 8)"])
def test_a_program_that_leaves_after_its_first_answer_passes_no_later_test(sb, how):
    program = f"""
        import os, threading, time
        calls = [0]
        def bye():
            time.sleep(0.02)
            {how}
        def f(i):
            calls[0] += 1
            if calls[0] == 1:
                threading.Thread(target=bye).start()
                return 0
            time.sleep(0.5)
            return i
    """
    tests = [AssertTest("assert f(0) == 0")] + [AssertTest(f"assert f({i}) == {i}") for i in range(1, 4)]
    result = sb.execute(textwrap.dedent(program), tests)
    statuses = [t.status for t in result.tests]
    assert statuses[0] == Status.PASSED, statuses
    assert all(s != Status.PASSED for s in statuses[1:]), statuses


# ------------------------------------------------------------------ the sweep without a /proc walk
def _running_threads_named(name: str) -> list[str]:
    """Threads anywhere on the machine (this is the host's /proc) named ``name`` that still run."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
                state = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if comm == name and state not in ("Z", "X"):
                found.append(f"{pid}/{tid}")
    return found


@pytest.mark.parametrize("how", ["thread", "daemon"])
def test_nothing_a_job_leaves_running_outlives_it_when_the_sweep_skips_the_walk(sb, how):
    """With job cgroups the sweep reads the job cgroup's process list and walks /proc only when a job
    process is listed (``Meter.sweep``). A helper whose main thread ended with the exit syscall while
    another thread runs on (it looks like a zombie in /proc) and a detached grandchild must both be listed,
    and killed, before the job's reply reaches us."""
    import platform

    numbers = {"x86_64": 60, "aarch64": 93}
    if platform.machine() not in numbers:
        pytest.skip(f"the exit syscall's number on {platform.machine()} is not in this test")
    if not (sb.isolation.get("job_cgroup") and sb.isolation.get("uid_drop")):
        pytest.skip(f"needs root with job cgroups (the path under test): {sb.isolation}")
    leave = textwrap.dedent(f"""
        import ctypes, os, threading, time
        libc = ctypes.CDLL(None)
        def f():
            if os.fork() == 0:
                os.setsid()
                if {how!r} == "daemon" and os.fork():
                    os._exit(0)
                def spin():
                    libc.prctl(15, b"cc-survivor", 0, 0, 0)  # PR_SET_NAME, of this thread
                    while True:
                        time.sleep(0.002)
                threading.Thread(target=spin).start()
                time.sleep(0.05)
                if {how!r} == "thread":
                    libc.syscall({numbers[platform.machine()]}, 0)  # the main thread only: the process looks dead
                while True:
                    time.sleep(1)
            time.sleep(0.2)
            return 1
    """)
    for _ in range(3):
        assert sb.execute(leave, [AssertTest("assert f() == 1")]).status is Status.PASSED
        assert _running_threads_named("cc-survivor") == []
