"""Issue 15 item 2: how function jobs are forked. Job leaders and (with a standard-library worker) program
children are forked without the interpreter's Python fork hooks, the job environment is set once in the
worker, and the job dir's tmpfs is not remounted after the job's last child. What a program can see of
that must be what ``os.fork`` and a fresh job dir gave it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest

SANDBOX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "corecode", "sandbox")


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False)) as sandbox:
        yield sandbox


def answer(sb, program: str) -> str:
    """What ``f()`` returned (the test fails on purpose and the detail says what it got)."""
    result = sb.execute(textwrap.dedent(program), [AssertTest("assert f() == '\\x00'")])
    detail = result.tests[0].detail or ""
    assert "got " in detail, (result.tests[0].status, detail)
    return detail.split("got ", 1)[1]


def test_every_program_child_gets_its_own_random_seed(sb):
    program = """
        import random
        A = random.getrandbits(64)
        def f():
            return str(A)
    """
    seen = {answer(sb, program) for _ in range(4)}
    assert len(seen) == 4  # re-seeded per child, as after os.fork: never the worker's state


def test_program_child_environment_is_exactly_the_job_environment(sb):
    program = """
        import os, tempfile
        def f():
            want = {"HOME", "TMPDIR", "PATH", "LANG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}
            if set(os.environ) != want:
                return "keys " + ",".join(sorted(set(os.environ) ^ want))
            if not (os.environ["HOME"] == os.environ["TMPDIR"] == os.getcwd() == tempfile.gettempdir()):
                return "dirs"
            os.environ["CARRIED"] = "1"  # must not reach the next job
            return "ok"
    """
    assert answer(sb, program) == "'ok'"
    assert answer(sb, program) == "'ok'"


def test_threads_work_in_a_program_child(sb):
    program = """
        import os, threading
        def f():
            out = []
            t = threading.Thread(target=lambda: out.append(threading.get_ident()))
            t.start()
            t.join()
            ok = (len(out) == 1 and threading.current_thread() is threading.main_thread()
                  and threading.active_count() == 1 and threading.get_native_id() == os.getpid())
            return "ok" if ok else "bad"
    """
    assert answer(sb, program) == "'ok'"


def test_files_of_one_job_are_gone_for_the_next(sb):
    writer = """
        import os, tempfile
        def f():
            open("carry", "w").write("1")
            open(os.path.join(tempfile.gettempdir(), "carry2"), "w").write("1")
            os.mkdir("d")
            return sorted(os.listdir("."))
    """
    reader = """
        import os
        def f():
            return sorted(os.listdir(".")) + sorted(os.listdir(os.path.dirname(os.getcwd())))
    """
    for _ in range(2):
        assert answer(sb, writer) == "['carry', 'carry2', 'd']"
        assert answer(sb, reader) == "['job']"


def _quiet_fork_safe(tmp_path, *imports: str) -> str:
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); sys.path.insert(0, {SANDBOX_DIR!r}); "
            + "".join(f"import {name}; " for name in imports)
            + "import _isolation; print(_isolation.quiet_fork_safe())")
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_quiet_forks_only_where_every_fork_hook_is_known(tmp_path):
    (tmp_path / "hooky.py").write_text("import os\nos.register_at_fork(after_in_child=lambda: None)\n")
    (tmp_path / "plain_module.py").write_text("X = 1\n")
    assert _quiet_fork_safe(tmp_path, "random", "decimal", "json") == "True"
    assert _quiet_fork_safe(tmp_path, "plain_module") == "True"
    assert _quiet_fork_safe(tmp_path, "hooky") == "False"  # a hook we do not know: os.fork for programs
    (tmp_path / "threaded.py").write_text("import threading, time\n"
                                          "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n")
    assert _quiet_fork_safe(tmp_path, "threaded") == "False"  # another thread could hold a lock at the fork
