"""run_batch keeps one job waiting in each worker's pipe while the worker runs the one before (pool.py
``Sandbox._pipeline``). What that must not change: a program cannot read the job behind it (its secret
part, the expected values, is in that pipe), and a worker that dies mid-batch costs no other job."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Problem, Status
from test_sandbox_helpers import ADD, GOOD_ADD, assert_clean

# Reads every descriptor it can reach (its own above the four it answers the judge with, and every
# /proc/<pid>/fd of another process it may list) and says whether the next job's expected value was in any
# of them. The marker is built at run time, so that its own text
# (which the program reads back through its stdin, fds and /proc/self) never contains it.
PROBE = '''
import os
def probe():
    marker = ("PIPE" + "LINE-" + "SECRET").encode()
    seen = b""
    paths = [f"/proc/self/fd/{n}" for n in range(5, 64)]
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                paths += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError:
                pass
    for fd in range(5, 64):
        try:
            seen += os.read(fd, 1 << 16)
        except OSError:
            pass
    for path in paths:
        try:
            k = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            seen += os.pread(k, 1 << 16, 0)
        except OSError:
            try:
                seen += os.read(k, 1 << 16)
            except OSError:
                pass
        os.close(k)
    return "FOUND" if marker in seen else "clean %d" % len(paths)
'''
BEHIND = Problem(id="behind", source="test", statement="",
                 tests=(AssertTest("assert probe() == 'PIPELINE-SECRET'"),))
PROBED = Problem(id="probed", source="test", statement="", tests=(AssertTest("assert probe() == 1"),))


def _probe_batch(sandbox: Sandbox) -> list:
    # each probe is followed by a job whose expected value is the marker; with one worker the job behind
    # waits in the pipe while the probe runs
    jobs = []
    for i in range(3):
        jobs += [(PROBE + f"# probe {i}\n", PROBED), (PROBE + f"# behind {i}\n", BEHIND)]
    return sandbox.run_batch(jobs)


def test_the_probe_finds_the_marker_in_a_pipe_it_holds():
    """The probe is not blind: outside the sandbox, with the marker waiting in a pipe at fd 9, it finds it."""
    import subprocess
    import sys

    setup = "import os\nr, w = os.pipe()\nos.write(w, b'xx PIPELINE-SECRET yy')\nos.dup2(r, 9)\n"
    run = subprocess.run([sys.executable, "-c", setup + PROBE + "print(probe())"], capture_output=True, text=True,
                         timeout=60)
    assert run.stdout.strip() == "FOUND", run.stderr


def test_a_batch_job_cannot_read_the_job_waiting_behind_it():
    config = SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False)
    with Sandbox(config) as sandbox:
        results = _probe_batch(sandbox)
        probes = [r.tests[0].detail for r in results[0::2]]
        assert all(r.status is Status.WRONG_ANSWER for r in results[0::2]), probes
        assert all("FOUND" not in d and "clean" in d for d in probes), probes
        # the marker is the expected value of the job behind: a program that read it would return it
        assert all(r.status is Status.WRONG_ANSWER and "FOUND" not in r.tests[0].detail for r in results[1::2])
        assert_clean(sandbox)


UNPRIVILEGED_PROBE = """
import json, sys
sys.path.insert(0, SRC)
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Problem
BEHIND = Problem(id="behind", source="test", statement="", tests=(AssertTest("assert probe() == 'PIPELINE-SECRET'"),))
PROBED = Problem(id="probed", source="test", statement="", tests=(AssertTest("assert probe() == 1"),))
with Sandbox(SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False, python=sys.executable)) as sb:
    jobs = [(PROBE + f"# {kind} {i}\\n", p) for i in range(3) for kind, p in (("probe", PROBED), ("behind", BEHIND))]
    results = sb.run_batch(jobs)
    print(json.dumps({"user_namespace": sb.isolation.get("user_namespace", False),
                      "details": [r.tests[0].detail for r in results]}))
"""


def test_without_root_a_batch_job_cannot_read_the_job_waiting_behind_it(tmp_path):
    from test_sandbox_unprivileged import run_sandbox_unprivileged

    out = run_sandbox_unprivileged(tmp_path, UNPRIVILEGED_PROBE, timeout=180, PROBE=PROBE)
    assert not any("FOUND" in d for d in out["details"]), out
    assert all("clean" in d for d in out["details"][0::2]), out


def test_a_worker_killed_mid_batch_costs_no_other_job():
    """The worker dies while it runs a job and the next one waits in its pipe: the running job gets its
    second try on the restarted worker, the waiting one is sent again; every verdict is the right one."""
    slow = "import time\ndef add(a, b):\n    time.sleep(0.3)\n    return a + b\n"
    wrong = GOOD_ADD.replace("a + b", "a - b")
    config = SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False, job_timeout_margin_s=5.0)
    with Sandbox(config) as sandbox:
        assert sandbox.run(GOOD_ADD, ADD).passed
        worker = sandbox.worker_pids[0]
        timer = threading.Timer(0.25, os.kill, (worker, signal.SIGKILL))
        timer.start()
        jobs = [(slow, ADD), (GOOD_ADD + "# behind\n", ADD), (wrong, ADD), (GOOD_ADD + "# last\n", ADD)]
        results = sandbox.run_batch(jobs)
        timer.join()
        assert [r.status for r in results] == [Status.PASSED, Status.PASSED, Status.WRONG_ANSWER, Status.PASSED]
        assert [w.restarts for w in sandbox._workers] == [1]
        assert_clean(sandbox)


UNPRIVILEGED_KILLER_BATCH = """
import json, sys
sys.path.insert(0, SRC)
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Problem
P = Problem(id="p", source="t", statement="", tests=(AssertTest("assert f(21) == 42"),))
KILLER = "import os, signal\\ndef f(x):\\n    os.kill(os.getppid(), signal.SIGKILL)\\n    return 2 * x\\n"
config = SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False, python=sys.executable)
with Sandbox(config) as sb:
    jobs = [("def f(x):\\n    return 2 * x\\n", P), (KILLER, P), ("def f(x):\\n    return x + x\\n", P),
            ("def f(x):\\n    return x\\n", P), ("def f(x):\\n    return 42\\n", P)]
    results = sb.run_batch(jobs)
    print(json.dumps({"user_namespace": sb.isolation.get("user_namespace", False),
                      "passed": [r.passed for r in results], "killer": results[1].tests[0].detail,
                      "restarts": [w.restarts for w in sb._workers]}))
"""


def test_without_root_a_batch_job_that_kills_its_zygote_fails_alone(tmp_path):
    """Without root a program may SIGKILL the zygote (its parent): its worker goes down with the job behind
    it waiting in the pipe. The killer fails (twice down: charged to it), the jobs behind it are sent again
    and judged as always."""
    from test_sandbox_unprivileged import run_sandbox_unprivileged

    out = run_sandbox_unprivileged(tmp_path, UNPRIVILEGED_KILLER_BATCH, timeout=180)
    assert out["passed"] == [True, False, True, False, True], out
    assert "down (twice)" in out["killer"], out
    assert out["restarts"] == [2], out


UNPRIVILEGED_JUDGE_WINDOW = """
import json, sys, time
sys.path.insert(0, SRC)
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, Problem
ATTACK = '''
import os, signal, time, random
try:
    os.sched_setaffinity(0, {1})  # off the CPU of the worker and the judge: the judge runs while we wait
except OSError:
    pass
judge = None
for p in range(2, 8):  # without root the judge shares our uid: it can be signalled, though /proc hides it
    if p not in (os.getpid(), os.getppid()):  # pid 1 is the worker, our parent the zygote or job leader
        try:
            os.kill(p, 0)
            judge = p
            break
        except OSError:
            pass
t, d = time.perf_counter(), random.random() * 20e-6
while time.perf_counter() - t < d:
    pass
if judge:
    os.kill(judge, signal.SIGKILL)
def f(x):
    return x * 2
'''
def prob(i, x, y):
    return Problem(id=f"p{i}", source="t", statement="", tests=(AssertTest(f"assert f({x}) == {y}"),))
config = SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False, python=sys.executable,
                       job_timeout_margin_s=2.0, one_fork_jobs=ONE_FORK)
with Sandbox(config) as sb:
    jobs, honest = [], []
    for i in range(40):
        jobs.append((ATTACK + f"# {i}\\n", prob(1000 + i, 2, 4)))
        right = i % 3 != 0
        jobs.append(("def f(x):\\n    return x * 2\\n" if right else "def f(x):\\n    return x + 2\\n", prob(i, i, 2 * i)))
        honest.append(right)
    start = time.monotonic()
    results = sb.run_batch(jobs)
    print(json.dumps({"user_namespace": sb.isolation.get("user_namespace", False),
                      "seconds": time.monotonic() - start, "restarts": [w.restarts for w in sb._workers],
                      "attackers_passed": sum(r.passed for r in results[0::2]),
                      "honest_right": [r.passed == want for r, want in zip(results[1::2], honest)]}))
"""


@pytest.mark.parametrize("one_fork", [True, False])
def test_without_root_killing_the_judge_as_it_reads_the_secret_desyncs_nothing(tmp_path, one_fork):
    """Red team (sixth session): without root a program can SIGKILL its judge (same uid) at a chosen moment
    (it moves itself to the other CPU, so the judge runs while it spins). When the judge read the job's
    secret off the harness's pipe itself, a kill between that read and its mark made the next judge read
    the next job's frames as this job's secret: the worker crashed or hung until the job's deadline (7
    restarts and 53 s for 40 attackers; a second kill could have judged the attacker against the next
    job's tests). Now the secret is moved off the pipe before any judge sees it (``_run.take_secret``)."""
    from test_sandbox_unprivileged import run_sandbox_unprivileged

    out = run_sandbox_unprivileged(tmp_path, UNPRIVILEGED_JUDGE_WINDOW, timeout=300, ONE_FORK=one_fork)
    assert all(out["honest_right"]), out
    assert out["restarts"] == [0], out
    assert out["attackers_passed"] < 40, out  # most attackers kill their judge: their own job fails
