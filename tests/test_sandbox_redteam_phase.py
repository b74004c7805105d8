"""Red team of the phase memfd (the judge no longer wakes the supervisor per test), the judge's own CPU
check per test, and pin_workers (worker i and its jobs on the i-th CPU).

Got through at first (a strict xfail), closed since:

* **The load phase has no CPU check after the fact.** The judge now compares each *test's* CPU with its
  limit, but the program's module load (limit ``load_cpu``) is only held by the supervisor's looks, and
  its first look comes ``min(tick, nap, load_cpu)`` after it starts. A program that widens its own
  affinity (``os.sched_setaffinity(0, all CPUs)``: pinning is an affinity, not a cpuset, so it can) and
  loads on several processes, finishing before that look, uses up to (cores) x ``load_cpu``; the judge
  then writes test 0 into the phase memfd and the supervisor's next look applies test 0's limit from
  test 0's start, so the load's excess is never seen. Measured on a 2-core VM shared with other work:
  1.01-1.10 s of load CPU under a 1.0 s limit passed (2 of 3 and 3 of 3 runs with 2 and 4 processes);
  without widening (pinned) 0.50-0.53 s. This file: 1.075-1.118 s in 4 of 4 attempts (3 of 4 runs; the
  other run, with the second CPU busier, stayed under 1.03 s), so it needs part of a second CPU free.
  Closed: the judge compares the load's CPU (the job cgroup's, from just before the program started, a
  figure the leader hands it) with ``load_cpu`` when the program says it has loaded, and every test of a
  program whose load went over is a timeout; the test below now passes.

Held (normal tests):

* The phase memfd is out of the program's reach: it holds fds 0-4 only (/dev/null, its stdout/stderr
  memfds, its two pipes) and its /proc shows its own pid only, so no ``memfd:phase`` anywhere.
* A helper that keeps burning after its test returned is charged to the tests it runs during (a 0.1 s
  call with it on the pinned CPU measured 0.208/0.202 s against 0.102/0.104 s without), not to nobody;
  what it does after the last call is swept with the job.
* Pinning: a program cannot change its supervisor's affinity (EPERM); a widened affinity does not carry
  over to the next job on the worker (it is pinned again); a setsid'd helper left burning does not make
  an honest next job on the same worker time out.
"""

from __future__ import annotations

import pytest

from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import CallTest, Status


def _sandbox(limit: float = 1.0) -> Sandbox:
    return Sandbox(SandboxConfig(workers=1, time_limit_s=limit, reference_timing=False))


LOAD_ATTACK = """
import os, time
T0 = time.monotonic()
os.sched_setaffinity(0, set(range(os.cpu_count())))
def _burn():
    x = 0
    while time.monotonic() - T0 < 0.9:
        x += 1
kids = []
for i in range(3):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _burn()
        os.write(w, repr(time.process_time()).encode())
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
_burn()
TOTAL = time.process_time()
for pid, r in kids:
    TOTAL += float(os.read(r, 100))
    os.waitpid(pid, 0)
def f():
    return round(TOTAL, 3)
"""


def test_load_phase_on_widened_affinity_does_not_pass_past_load_cpu():
    limit = 1.0
    got = []
    with _sandbox(limit) as sb:
        for _ in range(4):
            r = sb.execute(LOAD_ATTACK, [CallTest("f", (), -1)])
            t = r.tests[0]
            # f returns the load's CPU (all processes); a wrong_answer means the program ran and answered
            if t.status == Status.WRONG_ANSWER and "got " in (t.detail or ""):
                got.append(float(t.detail.rsplit("got ", 1)[1]))
            else:
                got.append(None)
    over = [c for c in got if c is not None and c > limit]
    assert not over, f"load phases that used more than {limit} s of CPU and ran the tests: {got}"


PROBE = """
import os
def f(k):
    if k == "fds":
        return sorted(os.listdir("/proc/self/fd"))
    if k == "links":
        out = []
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    for fd in os.listdir(f"/proc/{p}/fd"):
                        try:
                            out.append(os.readlink(f"/proc/{p}/fd/{fd}"))
                        except OSError:
                            pass
                except OSError:
                    pass
        return [l for l in out if "phase" in l]
    if k == "parent":
        try:
            os.sched_setaffinity(os.getppid(), set(range(os.cpu_count())))
            return "set"
        except OSError:
            return "denied"
    if k == "aff":
        a = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(range(os.cpu_count())))
        return a
"""


def test_program_cannot_reach_the_phase_memfd_nor_its_supervisors_affinity():
    with _sandbox() as sb:
        r = sb.execute(PROBE, [CallTest("f", ("fds",), ["0", "1", "2", "3", "4", "5"]),
                               CallTest("f", ("links",), []), CallTest("f", ("parent",), "denied")])
        assert [t.status for t in r.tests] == [Status.PASSED] * 3, [t.detail for t in r.tests]
        # an earlier job widened its affinity: the next job's program is pinned again
        for _ in range(2):
            r = sb.execute(PROBE, [CallTest("f", ("aff",), [0])])
            assert r.tests[0].status == Status.PASSED, r.tests[0].detail


CARRY = """
import os, time
def start():
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < 3.0:
            pass
        os._exit(0)
    return 1
def work(s):
    t = time.process_time()
    while time.process_time() - t < s:
        pass
    return 1
"""


def test_a_helper_past_its_test_is_charged_to_the_next_test():
    with _sandbox(1.0) as sb:
        r = sb.execute(CARRY, [CallTest("start", (), 1), CallTest("work", (0.1,), 1),
                               CallTest("work", (0.1,), 1)])
        # the helper shares the pinned CPU: each later test is charged its share (about 2x the 0.1 s of
        # the call itself), so it can only spread work over tests' own windows, each under its limit
        cpu = [t.cpu_time_s for t in r.tests]
        assert cpu[1] > 0.16 and cpu[2] > 0.16, cpu


LEAVE = """
import os, time
def f():
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    for _ in range(2):
        if os.fork() == 0:
            os.setsid()
            while True:
                pass
    time.sleep(0.3)
    return 1
"""

HONEST = """
import time
def g():
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
    return 1
"""


def test_helpers_left_burning_do_not_time_out_an_honest_next_job():
    with _sandbox(1.0) as sb:
        sb.execute(LEAVE, [CallTest("f", (), 1)])
        for _ in range(2):
            r = sb.execute(HONEST, [CallTest("g", (), 1), CallTest("g", (), 1)])
            assert [t.status for t in r.tests] == [Status.PASSED] * 2, [t.detail for t in r.tests]
