"""The shared case runner (``SandboxConfig.stdio_shared_runner``, the default; ``sandbox/_cases.py``): the
stdin/stdout cases of one program run one after another in one process, each with a fresh ``__main__`` and
fresh streams, and one warm case, picked at random, runs again in a fresh runner.

What must hold, each checked against the fresh-process-per-case mode on the same program:
- a case that crashes, raises, exits non-zero or hangs fails alone, and the next case gets a new runner;
- only the harness ends a case: a program that writes the harness's "done" itself and goes on is still
  held to the case's limits;
- work reused from an earlier case is charged to every warm case, so a case that times out alone times
  out here too;
- a program whose answers depend on an earlier case runs again, each case in a fresh process.
tests/test_sandbox_cases.py runs the carry attempts (Python state, files, IPC, helpers) in both modes.
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


def test_the_cases_share_a_runner(boxes):
    shared, fresh = boxes
    program = textwrap.dedent("""
        import builtins, sys
        print("warm" if hasattr(builtins, "seen") else "cold", file=sys.stderr)
        builtins.seen = True
        a, b = map(int, input().split())
        print(a + b)
        """)
    ours, theirs = shared.execute(program, CASES), fresh.execute(program, CASES)
    assert ours.passed and theirs.passed
    assert [t.stderr.strip() for t in theirs.tests] == ["cold"] * len(CASES)
    assert [t.stderr.strip() for t in ours.tests] == ["cold"] + ["warm"] * (len(CASES) - 1)


def test_a_case_that_fails_fails_alone(boxes):
    shared, fresh = boxes
    program = textwrap.dedent("""
        import os, sys
        a, b = map(int, input().split())
        if a == 1:
            print(a + b, flush=True)
            os._exit(0)      # a fast exit, as contest programs do: passes, and ends the runner
        if a == 2:
            os._exit(3)
        if a == 3:
            raise ValueError("three")
        if a == 4:
            sys.exit(2)
        if a == 5:
            while True:
                pass
        if a == 6:
            sys.stdout = open(os.devnull, "w")  # broken streams reach no later case
        print(a + b)
        """)
    want = [Status.PASSED, Status.PASSED, Status.RUNTIME_ERROR, Status.RUNTIME_ERROR, Status.RUNTIME_ERROR,
            Status.TIMEOUT, Status.WRONG_ANSWER, Status.PASSED]
    assert statuses(fresh.execute(program, CASES)) == want
    assert statuses(shared.execute(program, CASES)) == want
    assert_clean(shared)


def test_writing_the_harness_done_does_not_end_a_case(boxes):
    shared, fresh = boxes
    program = textwrap.dedent("""
        import builtins, os, struct
        n = getattr(builtins, "n", 0)
        builtins.n = n + 1
        a, b = map(int, input().split())
        print(a + b, flush=True)
        for fd in range(3, 64):
            for seq in (n, n + 1, n - 1):
                try:
                    os.write(fd, struct.pack("<q", seq))
                except OSError:
                    pass
        while True:
            pass
        """)
    assert statuses(fresh.execute(program, CASES[:5])) == [Status.TIMEOUT] * 5
    assert statuses(shared.execute(program, CASES[:5])) == [Status.TIMEOUT] * 5
    assert_clean(shared)


def test_a_thread_left_running_is_ended_with_the_case(boxes):
    shared, fresh = boxes
    program = textwrap.dedent("""
        import threading
        a, b = map(int, input().split())
        print(a + b)
        threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()
        """)
    for box in (fresh, shared):
        result = box.execute(program, CASES)
        assert result.passed, [(t.status, t.detail) for t in result.tests]
        assert max(t.cpu_time_s for t in result.tests) < 0.4  # no case paid for an earlier case's thread
    assert_clean(shared)


def test_an_answer_that_depends_on_an_earlier_case_is_run_again_alone(boxes):
    shared, fresh = boxes
    program = textwrap.dedent("""
        import sys
        first = not hasattr(sys, "seen")
        sys.seen = True
        a, b = map(int, input().split())
        print(a + b + first)   # right only in a runner that ran a case before
        """)
    for box in (fresh, shared):
        assert statuses(box.execute(program, CASES)) == [Status.WRONG_ANSWER] * len(CASES)


def test_reused_work_is_charged_to_every_warm_case(boxes):
    """A table built once and kept on a module: alone, every case pays for it; in the shared runner only
    the first would, so every warm case is charged what its fresh run cost more, and is judged against its
    limit with that charge (stdio_verdict's after-the-fact CPU check). Uncharged, the warm cases would
    show about a millisecond."""
    shared, fresh = boxes
    program = textwrap.dedent(f"""
        import sys
        if not hasattr(sys, "table"):
            sys.table = sum(i * i for i in range({loops_for(0.3)}))
        a, b = map(int, input().split())
        print(a + b)
        """)
    for box in (fresh, shared):
        result = box.execute(program, CASES[:6], time_limit_s=5.0)
        assert result.passed
        cpu = [t.cpu_time_s for t in result.tests]
        assert min(cpu) > 0.1 and min(cpu) > max(cpu) / 4, cpu  # each case carries the table's cost
    assert_clean(shared)


def test_few_cases_run_in_fresh_processes(boxes):
    """Below SHARED_MIN_CASES a runner would cost more than it saves (a cold case and the rerun):
    each case gets a fresh process, as with ``stdio_shared_runner=False``."""
    shared, _ = boxes
    program = textwrap.dedent("""
        import builtins, sys
        print("warm" if hasattr(builtins, "seen") else "cold", file=sys.stderr)
        builtins.seen = True
        print(sum(map(int, input().split())))
        """)
    result = shared.execute(program, CASES[:4])
    assert result.passed and [t.stderr.strip() for t in result.tests] == ["cold"] * 4
