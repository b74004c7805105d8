"""The unprivileged path (user namespaces instead of root), exercised by running a harness as uid 65534.

Needs root (to switch to uid 65534 with setpriv) and a system Python outside /root that uid 65534 can run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"
SRC = Path(__file__).resolve().parents[1] / "src"

SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, SRC)
    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.types import AssertTest, Problem, StdioTest
    ADD = Problem(id="t", source="t", statement="", tests=(AssertTest("assert add(1, 2) == 3"),))
    GOOD = "def add(a, b): return a + b\\n"
    out = {}
    config = SandboxConfig(workers=1, time_limit_s=0.5, reference_timing=False, python=sys.executable)
    with Sandbox(config) as sb:
        out["isolation"] = sb.isolation
        out["good"] = sb.run(GOOD, ADD).status.value
        out["wrong"] = sb.run("def add(a, b): return a - b", ADD).status.value
        out["loop"] = sb.run("def add(a, b):\\n    while True: pass", ADD).status.value
        out["write"] = sb.run(f"open({TARGET!r}, 'w').write('x')\\n" + GOOD, ADD).status.value
        remount = ("import ctypes\\nlibc = ctypes.CDLL(None, use_errno=True)\\n"
                   "print(libc.mount(None, b'/', None, 32 | 4096, None))")
        out["remount"] = sb.execute(remount, [StdioTest("", "-1")]).status.value
        out["net"] = sb.run("import socket\\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\\n" + GOOD,
                            ADD).status.value
        bomb = "import os\\ndef add(a, b):\\n    while True:\\n        try: os.fork()\\n        except OSError: pass"
        out["bomb"] = sb.run(bomb, ADD).status.value
        escapee = "import subprocess\\nsubprocess.Popen(['sleep', '987654'], start_new_session=True)\\n" + GOOD
        out["escapee"] = sb.run(escapee, ADD).status.value
        # a file left on the scratch tmpfs (the job owns it without root) is gone for the next job
        leave = "import os\\nopen(os.path.join(os.path.dirname(os.getcwd()), 'x'), 'w').write('3')\\n" + GOOD
        sb.run(leave, ADD)
        pick = "import os\\ndef add(a, b):\\n    return int(open(os.path.join(os.path.dirname(os.getcwd()), 'x')).read())"
        out["cheat"] = sb.run(pick, ADD).status.value
        out["after"] = sb.run(GOOD, ADD).status.value
        # stdin/stdout cases of one program (one case template, a child per case; without root a case
        # shares the template's uid): a case that kills or stops its template fails alone, and an answer
        # left on the scratch tmpfs or in a System V segment by one case is not there for the next
        attack = ("import os, signal\\nwhat = input()\\nif what == 'kill': os.kill(os.getppid(), signal.SIGKILL)\\n"
                  "if what == 'stop': os.kill(os.getppid(), signal.SIGSTOP)\\nprint('ok')\\n")
        cases = [StdioTest(k, "ok") for k in ("a", "kill", "b", "stop", "c", "d")]
        out["cases"] = [t.status.value for t in sb.execute(attack, cases).tests]
        carry = ("import ctypes, os\\nlibc = ctypes.CDLL(None)\\nlibc.shmat.restype = ctypes.c_void_p\\n"
                 "path = os.path.join(os.path.dirname(os.getcwd()), 'carry')\\n"
                 "shm = libc.shmget(0x15CA5E, 4096, 0)\\n"
                 "if os.path.exists(path): print(open(path).read())\\n"
                 "elif shm >= 0: print(ctypes.string_at(libc.shmat(shm, None, 0), 1).decode())\\n"
                 "else:\\n    open(path, 'w').write('5')\\n"
                 "    ctypes.memmove(libc.shmat(libc.shmget(0x15CA5E, 4096, 0o1666), None, 0), b'5', 1)\\n"
                 "    print('first')\\n")
        out["carry"] = [t.status.value for t in sb.execute(carry, [StdioTest("", "5")] * 4).tests]
        # metadata of the job dir and of the scratch dir, which a job owns without root
        meta = ("import os\\nplaces = [os.getcwd(), os.path.dirname(os.getcwd())]\\nfound = None\\n"
                "for p in places:\\n    try: found = found or os.getxattr(p, 'user.carry').decode()\\n"
                "    except OSError: pass\\n"
                "    if found is None and int(os.stat(p).st_mtime) == 5: found = '5'\\n"
                "if found: print(found)\\nelse:\\n    for p in places:\\n"
                "        try: os.setxattr(p, 'user.carry', b'5')\\n        except OSError: pass\\n"
                "        os.utime(p, (5, 5))\\n    print('first')\\n")
        out["meta"] = [t.status.value for t in sb.execute(meta, [StdioTest("", "5")] * 3).tests]
        out["meta_jobs"] = [sb.execute(meta, [StdioTest("", "5")]).status.value for _ in range(3)]
    print(json.dumps(out))
""")


def _usable() -> str | None:
    if os.getuid() != 0:
        return "needs root to switch to uid 65534"
    if not (os.access(SYSTEM_PYTHON, os.X_OK) and shutil.which("setpriv")):
        return f"needs {SYSTEM_PYTHON} and setpriv"
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SYSTEM_PYTHON, "-c",
                            f"import sys; sys.path.insert(0, {str(SRC)!r}); import corecode.sandbox"],
                           capture_output=True)
    return None if probe.returncode == 0 else "uid 65534 cannot import corecode with the system Python"


def run_unprivileged(tmp_path, script: str, timeout: float = 300) -> dict:
    """Run ``script`` as uid 65534 with the system Python (skip where that cannot be done); the JSON object
    its last line prints."""
    reason = _usable()
    if reason:
        pytest.skip(reason)
    tmp_path.chmod(0o777)
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", f"HOME={tmp_path}",
                          SYSTEM_PYTHON, "-c", script], capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    if run.returncode != 0:
        raise RuntimeError(f"the unprivileged run failed: {run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def run_sandbox_unprivileged(tmp_path, script: str, timeout: float = 300, **constants) -> dict:
    """``run_unprivileged`` for a script that starts a Sandbox and prints ``user_namespace`` among its JSON:
    ``SRC`` (this checkout's src) and each of ``constants`` defined before it; skip where the sandbox had no
    user namespace (the unprivileged mode is not available here)."""
    header = f"SRC = {str(SRC)!r}\n" + "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    out = run_unprivileged(tmp_path, header + script, timeout=timeout)
    if not out["user_namespace"]:
        pytest.skip("user namespaces are not available to unprivileged users here")
    return out


def test_unprivileged_user_gets_the_same_protections(tmp_path):
    reason = _usable()
    if reason:
        pytest.skip(reason)
    tmp_path.chmod(0o777)
    target = tmp_path / "pwned.txt"
    script = f"SRC = {str(SRC)!r}\nTARGET = {str(target)!r}\n" + SCRIPT
    before = _sleepers()
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", f"HOME={tmp_path}",
                          SYSTEM_PYTHON, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    iso = out["isolation"]
    if not iso["user_namespace"]:
        pytest.skip(f"user namespaces are not available to unprivileged users here: {iso}")
    assert iso["network"] and iso["readonly_fs"] and iso["pid_namespace"] and not iso["uid_drop"]
    assert iso["ipc_namespace"] and iso["hidden_data"] and not iso["job_cgroup"]
    assert out["cheat"] == "runtime_error"  # FileNotFoundError: the file did not survive its job
    assert out["good"] == "passed" and out["after"] == "passed" and out["wrong"] == "wrong_answer"
    assert out["loop"] == "timeout" and out["write"] == "runtime_error" and not target.exists()
    assert out["remount"] == "passed"  # mount() returned -1: the job cannot undo the read-only binds
    assert out["net"] == "runtime_error" and out["bomb"] in ("timeout", "runtime_error")
    assert out["escapee"] == "passed"
    assert out["cases"][0] == out["cases"][2] == out["cases"][4] == out["cases"][5] == "passed", out["cases"]
    assert out["cases"][1] == "runtime_error" and out["cases"][3] == "timeout", out["cases"]
    assert out["carry"] == ["wrong_answer"] * 4, out["carry"]
    assert out["meta"] == ["wrong_answer"] * 3 and out["meta_jobs"] == ["wrong_answer"] * 3, out
    assert _sleepers() <= before, "a `sleep 987654` started by a job survived"


def _sleepers() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes() == b"sleep\x00987654\x00":
                found.add(int(entry))
        except OSError:
            pass
    return found


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


ZOMBIE_LEADER = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, SRC)
    from corecode.sandbox import Sandbox, SandboxConfig
    from corecode.types import AssertTest
    # A helper whose main thread ends with the exit syscall while another thread runs: its /proc stat says Z
    # (a zombie), and the sweep, without job cgroups here, passed it over; it kept writing the first job's
    # argument to the scratch tmpfs after every wipe, and later jobs read it there (red team: 3 of 3).
    LEAVE = (
        "import os, ctypes, threading, time\\n"
        "libc = ctypes.CDLL(None)\\n"
        "def f(token):\\n"
        "    carry = os.path.join(os.path.dirname(os.getcwd()), 'carry')\\n"
        "    if os.fork() == 0:\\n"
        "        os.setsid()\\n"
        "        def keep_writing():\\n"
        "            while True:\\n"
        "                try:\\n"
        "                    open(carry, 'w').write(token)\\n"
        "                except OSError:\\n"
        "                    pass\\n"
        "                time.sleep(0.005)\\n"
        "        threading.Thread(target=keep_writing).start()\\n"
        "        libc.syscall(SYS_EXIT, 0)\\n"
        "    time.sleep(0.2)\\n"
        "    return 1\\n")
    READ = ("import os\\ndef f():\\n    try:\\n"
            "        return open(os.path.join(os.path.dirname(os.getcwd()), 'carry')).read()\\n"
            "    except OSError as e:\\n        return type(e).__name__\\n")
    out = {}
    config = SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False, python=sys.executable)
    with Sandbox(config) as sb:
        out["isolation"] = sb.isolation
        out["leave"] = sb.execute(LEAVE.replace("SYS_EXIT", str(SYS_EXIT)), [AssertTest("assert f('S3CR3T') == 1")]).status.value
        out["later"] = [sb.execute(READ, [AssertTest("assert f() == 'S3CR3T'")]).status.value for _ in range(3)]
    print(json.dumps(out))
""")


def test_a_process_whose_main_thread_exited_does_not_outlive_its_job(tmp_path):
    """Without job cgroups the sweep finds job processes by walking /proc; one that looks like a zombie (its
    main thread gone) but still runs threads is killed like any other."""
    import platform

    numbers = {"x86_64": 60, "aarch64": 93}
    if platform.machine() not in numbers:
        pytest.skip(f"the exit syscall's number on {platform.machine()} is not in this test")
    out = run_unprivileged(tmp_path, f"SRC = {str(SRC)!r}\nSYS_EXIT = {numbers[platform.machine()]}\n" + ZOMBIE_LEADER)
    if not out["isolation"]["user_namespace"]:
        pytest.skip(f"user namespaces are not available to unprivileged users here: {out['isolation']}")
    assert not out["isolation"]["job_cgroup"]  # the path the walk alone guards
    assert out["leave"] == "passed"
    assert out["later"] == ["wrong_answer"] * 3, out
