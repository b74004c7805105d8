"""The execution engine's contract: statuses, the three test shapes, measurements, batch/async, limits."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
import time

import pytest

from corecode.errors import ConfigError, SandboxError
from corecode.sandbox import Sandbox, SandboxConfig, outputs_match, program_from_completion
from corecode.sandbox.asserts import rewrite_assert
from corecode.types import AssertTest, CallTest, Checker, Problem, StdioTest, Status
from test_sandbox_helpers import ADD, GOOD_ADD


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=2, time_limit_s=1.0, reference_timing=False)) as sandbox:
        yield sandbox


def test_statuses_of_function_tests(sb):
    assert sb.run(GOOD_ADD, ADD).status is Status.PASSED
    wrong = sb.run("def add(a, b):\n    return a * b\n", ADD)
    assert [t.status for t in wrong.tests] == [Status.WRONG_ANSWER] * 3
    assert wrong.tests[0].detail == "expected 3, got 2"
    crash = sb.run("def add(a, b):\n    return a / 0\n", ADD)
    assert crash.status is Status.RUNTIME_ERROR and crash.tests[0].exception == "ZeroDivisionError"
    syntax = sb.run("def add(a, b) return a\n", ADD)
    assert [t.status for t in syntax.tests] == [Status.SYNTAX_ERROR] * 3
    missing = sb.run("def plus(a, b):\n    return a + b\n", ADD)
    assert missing.status is Status.RUNTIME_ERROR and missing.tests[0].exception == "NameError"


def test_load_error_fails_every_test(sb):
    result = sb.run("raise ValueError('at import')\ndef add(a, b): return a + b\n", ADD)
    assert [t.exception for t in result.tests] == ["ValueError"] * 3


def test_call_tests_compare_outside_with_json_semantics(sb):
    tests = [CallTest("pair", (1,), [1, 1]), CallTest("pair", (2,), [2, 3]), CallTest("twice", ("ab",), "abab")]
    program = "def pair(x):\n    return (x, x)\nclass Solution:\n    def twice(self, s):\n        return s * 2\n"
    result = sb.execute(program, tests)
    assert [t.status for t in result.tests] == [Status.PASSED, Status.WRONG_ANSWER, Status.PASSED]


def test_call_arguments_are_fresh_copies(sb):
    tests = [CallTest("pop", ([1, 2, 3],), 3), CallTest("pop", ([1, 2, 3],), 3)]
    result = sb.execute("def pop(xs):\n    return xs.pop()\n", tests)
    assert result.passed


def test_assert_shapes(sb):
    program = "def f(x):\n    return [x] * 2\n"
    tests = [AssertTest("assert f(1) == [1, 1]"), AssertTest("assert [2, 2] == f(2)"),
             AssertTest("assert f(3) == f(3)"), AssertTest("assert len(f(4)) == 2"),
             AssertTest("for i in range(3):\n    assert f(i) == [i, i]"), AssertTest("assert f(5) == [5]"),
             AssertTest("assert (f(1) == [1, 1]) is True")]
    statuses = [t.status for t in sb.execute(program, tests).tests]
    assert statuses == [Status.PASSED] * 5 + [Status.WRONG_ANSWER, Status.PASSED]


def test_rewrite_keeps_expected_values_out_of_the_program():
    rewritten = rewrite_assert("candidate = f\nassert candidate(1) == 'secret-answer'\nassert g(2)")
    assert "secret-answer" not in rewritten.source
    assert list(rewritten.sites.values()) == [("eq", "secret-answer")] and rewritten.required == (0,)
    looped = rewrite_assert("for i in range(3):\n    assert f(i) == 1")
    assert looped.required == ()


def test_required_checks_cannot_be_skipped(sb):
    # The program replaces every global of its namespace it does not know, including the check hook.
    program = textwrap.dedent("""
        def add(a, b):
            g = globals()
            for name in list(g):
                if name.startswith("_corecode"):
                    g[name] = lambda *args: None
            return 0
        """)
    result = sb.run(program, ADD)
    assert not result.passed


def test_stdio_statuses_and_measurements(sb):
    program = "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data)))\n"
    tests = [StdioTest("1 2 3\n", "6\n"), StdioTest("5\n", "6\n"), StdioTest("1\n2\n", "  3  \n\n")]
    result = sb.execute(program, tests)
    assert [t.status for t in result.tests] == [Status.PASSED, Status.WRONG_ANSWER, Status.PASSED]
    assert result.tests[0].stdout == "6\n"
    crash = sb.execute("import sys\nsys.exit(3)\n", [StdioTest("", "")])
    assert crash.status is Status.RUNTIME_ERROR
    clean_exit = sb.execute("import sys\nprint(1)\nsys.exit(0)\n", [StdioTest("", "1")])
    assert clean_exit.passed


def test_stdin_is_empty_for_function_tests(sb):
    result = sb.execute("import sys\ndef f():\n    return sys.stdin.read()\n", [CallTest("f", (), "")])
    assert result.passed


@pytest.mark.parametrize("expected, actual, ok", [
    ("1 2\n", "1 2", True), ("a\nb\n", "a  \nb", True), ("0.5\n", "0.5000001\n", True),
    ("0.5\n", "0.51\n", False), ("1000000000\n", "1000000001\n", False), ("yes", "YES", False),
    ("1 2", "1\n2", True), ("", "x", False), ("nan", "nan", True),
])
def test_outputs_match(expected, actual, ok):
    assert outputs_match(expected, actual)[0] is ok


def test_custom_checker_runs_in_sandbox(sb):
    checker = Checker("def check(inp, expected, actual):\n    return sorted(actual.split()) == sorted(expected.split())\n")
    problem = Problem(id="t/any-order", source="test", statement="", tests=(StdioTest("", "1 2 3"),), checker=checker)
    assert sb.run("print('3 1 2')", problem).passed
    assert sb.run("print('3 1 1')", problem).status is Status.WRONG_ANSWER
    liar = Checker("class T:\n    def __bool__(self): return True\ndef check(i, e, a):\n    return T()\n")
    fooled = Problem(id="t/liar", source="test", statement="", tests=(StdioTest("", "x"),), checker=liar)
    assert sb.run("print('y')", fooled).status is Status.WRONG_ANSWER  # only a real True passes


def test_measurements(sb):
    program = textwrap.dedent("""
        def work(n):
            return sum(i * i for i in range(n))
        def grow(mb):
            block = bytearray(mb * 2**20)
            return len(block)
        """)
    result = sb.execute(program, [CallTest("work", (300_000,), sum(i * i for i in range(300_000))),
                                  CallTest("grow", (64,), 64 * 2**20)])
    assert result.passed
    assert result.tests[0].cpu_time_s > 0.005
    assert 60 * 2**20 <= result.tests[1].peak_memory_bytes < 200 * 2**20
    stdio = sb.execute("x = bytearray(48 * 2**20)\nprint(len(x))\n", [StdioTest("", str(48 * 2**20))])
    assert stdio.passed and stdio.tests[0].peak_memory_bytes >= 40 * 2**20



def test_short_tests_get_a_nonzero_cpu_time_that_grows_with_the_work(sb):
    # Regression: the CPU clock used to be CLOCK_PROCESS_CPUTIME_ID, which RLIMIT_CPU turns into a
    # tick-granular clock, so most sub-millisecond tests read exactly 0.0 (and t_ref, the time score and
    # the runtime metric with them). Each test here does ~0.1 ms or ~10 ms of work.
    program = "def work(n):\n    return sum(i * i for i in range(n))\n"
    light, heavy = (CallTest("work", (n,), sum(i * i for i in range(n))) for n in (2_000, 200_000))
    runs = sb.run_batch([(program, Problem(id=f"cpu/{i}", source="test", statement="", entry_point="work",
                                           tests=(light, heavy, light))) for i in range(12)])
    times = [[t.cpu_time_s for t in r.tests] for r in runs]
    assert all(r.passed for r in runs)
    assert all(t > 0 for row in times for t in row), times
    light_median = sorted(row[0] for row in times)[6]
    heavy_median = sorted(row[1] for row in times)[6]
    assert heavy_median > 10 * light_median, (light_median, heavy_median)

def test_setup_code_public_tests_and_completion(sb):
    problem = Problem(id="t/setup", source="test", statement="", starter_code="def area(r):\n",
                      tests=(AssertTest("assert area(2) == 4 * PI"),), public_tests=(AssertTest("assert area(1) == PI"),),
                      test_setup_code="PI = 3")
    program = program_from_completion(problem, "    return PI * r * r\n")
    assert program == "def area(r):\n    return PI * r * r\n"
    assert sb.run(program, problem).passed
    assert sb.run(program, problem, "public").passed
    assert sb.run(program, problem, [AssertTest("assert area(3) == 27")]).passed
    with pytest.raises(ConfigError):
        sb.run(program, ADD, "hidden")


def test_batch_keeps_order_and_async(sb):
    programs = [GOOD_ADD if i % 3 else "def add(a, b):\n    return 0\n" for i in range(12)]
    results = sb.run_batch([(p, ADD) for p in programs])
    assert [r.passed for r in results] == [bool(i % 3) for i in range(12)]

    async def go():
        single = await sb.arun(GOOD_ADD, ADD)
        many = await sb.arun_batch([(p, ADD) for p in programs[:4]])
        return single, many

    single, many = asyncio.run(go())
    assert single.passed and [r.passed for r in many] == [False, True, True, False]


def _count_runs(monkeypatch, sandbox) -> list[tuple[str, str]]:
    """Every job the sandbox really runs (run, run_batch and arun_batch build each job with _prepare)."""
    ran: list[tuple[str, str]] = []
    real_prepare = sandbox._prepare

    def counting(program, problem, tests="all"):
        ran.append((program, problem.id))
        return real_prepare(program, problem, tests)

    monkeypatch.setattr(sandbox, "_prepare", counting)
    return ran


def test_batch_runs_identical_jobs_once(sb, monkeypatch):
    ran = _count_runs(monkeypatch, sb)
    wrong = GOOD_ADD.replace("a + b", "a - b")  # one character apart, and it fails
    commented = GOOD_ADD + "# copy 2\n"  # the same function, another program text: not merged
    twin = Problem(id=ADD.id, source=ADD.source, statement=ADD.statement, tests=ADD.tests)  # equal, not the same object
    jobs = [(GOOD_ADD, ADD), (wrong, ADD), (GOOD_ADD, ADD), (commented, ADD), (wrong, ADD), (GOOD_ADD, ADD),
            (GOOD_ADD, twin)]
    called: list[int] = []
    results = sb.run_batch(jobs, on_result=lambda i, r: called.append(i))
    assert [r.passed for r in results] == [True, False, True, True, False, True, True]
    assert sorted(called) == list(range(len(jobs)))  # once per input index: progress bars count every sample
    assert len(ran) == 4  # GOOD_ADD against ADD and against its equal twin, wrong, commented
    assert ran.count((GOOD_ADD, ADD.id)) == 2 and ran.count((wrong, ADD.id)) == 1 and ran.count((commented, ADD.id)) == 1
    assert results[0] == results[2] == results[5] and results[1] == results[4]
    assert [t.status for t in results[1].tests] == [Status.WRONG_ANSWER] * 3
    ran.clear()
    many = asyncio.run(sb.arun_batch(jobs))
    assert [r.passed for r in many] == [r.passed for r in results] and len(ran) == 4


def test_batch_without_dedupe_runs_every_copy(monkeypatch):
    config = SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False, dedupe_jobs=False)
    with Sandbox(config) as sandbox:
        ran = _count_runs(monkeypatch, sandbox)
        results = sandbox.run_batch([(GOOD_ADD, ADD)] * 3 + [("def add(a, b):\n    return 0\n", ADD)] * 2)
        assert [r.passed for r in results] == [True, True, True, False, False] and len(ran) == 5


def test_reference_relative_time_limit():
    reference = "def f(n):\n    return sum(range(n))\n"
    slow = "def f(n):\n    total = 0\n    for _ in range(200):\n        total = sum(range(n))\n    return total\n"
    problem = Problem(id="t/ref", source="test", statement="", tests=(CallTest("f", (200_000,), sum(range(200_000))),),
                      reference_solutions=(reference,))
    config = SandboxConfig(workers=1, time_floor_s=0.05, reference_factor=3.0)
    with Sandbox(config) as sandbox:
        assert sandbox.run(reference, problem).passed
        times = sandbox.reference_times(problem, "all", problem.tests)
        assert times[0] is not None and times[0] < 0.05
        assert sandbox.run(slow, problem).status is Status.TIMEOUT


def test_dead_worker_is_restarted(sb):
    os.kill(sb.worker_pids[0], signal.SIGKILL)
    time.sleep(0.05)
    results = sb.run_batch([(GOOD_ADD + f"# copy {i}\n", ADD) for i in range(6)])  # distinct: all 6 run
    assert all(r.passed for r in results)
    assert sum(w.restarts for w in sb._workers) >= 1


def test_worker_that_cannot_start_is_a_sandbox_error(tmp_path):
    with pytest.raises(SandboxError):
        with Sandbox(SandboxConfig(workers=1, python="/bin/false")):
            pass


@pytest.mark.parametrize("bad", [{"workers": 0}, {"time_limit_s": -1}, {"memory_limit_mb": 1},
                                 {"python": "/no/such/python"}, {"reference_factor": 0}])
def test_config_validation(bad):
    with pytest.raises(ConfigError):
        SandboxConfig(**bad)


def test_file_io_problem(sb):
    problem = Problem(id="t/file", source="test", statement="", tests=(StdioTest("2 3\n", "5\n"),),
                      input_file="input.txt", output_file="output.txt")
    program = "a, b = map(int, open('input.txt').read().split())\nopen('output.txt', 'w').write(str(a + b))\n"
    assert sb.run(program, problem).passed
    assert sb.run("print(5)", problem).status is Status.WRONG_ANSWER  # stdout is not the output file
    link = "import os\nos.symlink('/etc/passwd', 'output.txt')\n"
    assert sb.run(link, problem).status is Status.WRONG_ANSWER


def test_without_isolation_limits_still_hold():
    with Sandbox(SandboxConfig(workers=1, isolate=False, time_limit_s=0.5, reference_timing=False)) as sandbox:
        assert not any(sandbox.isolation.values())
        assert sandbox.run(GOOD_ADD, ADD).passed
        assert sandbox.run("def add(a, b):\n    while True: pass\n", ADD).status is Status.TIMEOUT
        assert sandbox.run("class A:\n    __eq__ = lambda s, o: True\ndef add(a, b): return A()\n", ADD).status \
            is Status.WRONG_ANSWER


def test_problem_memory_limit_applies(sb):
    problem = Problem(id="t/mem", source="test", statement="", tests=(StdioTest("", "ok"),), memory_limit_mb=64)
    assert sb.run("print('ok')", problem).passed
    assert sb.run("x = bytes(200 * 2**20)\nprint('ok')", problem).status is Status.MEMORY_EXCEEDED


def test_zygote_prepared_streams_are_a_fresh_open_and_a_missing_fd_is_no_failure():
    """``_jobchild.prepare`` (run once in the clean zygote) makes the std streams a job would open over its
    own fds; they must behave as ``io.open`` over a memfd does, leave the process's fds 0-2 as they were,
    and with a descriptor 0-2 missing it makes none (every job opens its own) instead of failing."""
    import subprocess
    import sys
    from pathlib import Path

    sandbox_dir = Path(__file__).resolve().parents[1] / "src" / "corecode" / "sandbox"
    script = (
        "import os, sys\n"
        f"sys.path.insert(0, {str(sandbox_dir)!r})\n"
        "import _jobchild as jc\n"
        "before = [os.fstat(fd).st_ino if fd_ok else None for fd, fd_ok in ((0, FD0), (1, True), (2, True))]\n"
        "jc.prepare()\n"
        "after = [os.fstat(fd).st_ino if fd_ok else None for fd, fd_ok in ((0, FD0), (1, True), (2, True))]\n"
        "streams = jc._PREMADE.get('streams')\n"
        "desc = None if streams is None else [(s.mode, s.encoding, s.errors, s.line_buffering, s.seekable(),\n"
        "    s.fileno()) for s in streams]\n"
        "print(before == after, desc, 'plain' in jc._PREMADE)\n")
    ok = subprocess.run([sys.executable, "-I", "-c", script.replace("FD0", "True")], capture_output=True, text=True,
                        stdin=subprocess.DEVNULL, timeout=60)
    # as io.open makes them over a job's memfds (here the process's own fds 0-2 are /dev/null and pipes)
    assert ok.stdout.strip() == ("True [('r', 'utf-8', 'replace', False, True, 0), ('w', 'utf-8', 'replace', False, "
                                 "True, 1), ('w', 'utf-8', 'replace', False, True, 2)] True"), ok.stderr
    closed = subprocess.run([sys.executable, "-I", "-c", script.replace("FD0", "False")], capture_output=True,
                            text=True, stdin=subprocess.DEVNULL, timeout=60, preexec_fn=lambda: os.close(0))
    assert closed.returncode == 0 and closed.stdout.strip() == "True None True", closed.stderr


def test_call_arguments_keep_their_types_and_program_objects_go_by_reference(sb):
    """Calls whose arguments are plain data go as a plain pickle (``_judge.Program.encode_call``), calls
    that pass an object of the program back go with persistent ids: both must give the program exactly
    what the test passed (types, shared references) and its own objects, never a copy of the judge's proxy."""
    program = textwrap.dedent("""
        class Box:
            def __init__(self, v):
                self.v = v
        def make(v):
            return Box(v)
        def unbox(b):
            return b.v if type(b) is Box else ("not a Box", type(b).__name__)
        def unbox_all(bs, key=None):
            return [b.v for b in bs] + ([key.v] if key is not None else [])
        def kinds(*xs, **kw):
            return [type(x).__name__ for x in xs] + sorted(f"{k}:{type(v).__name__}" for k, v in kw.items())
        def same(pair):
            return pair[0] is pair[1]
    """)
    tests = [AssertTest("assert unbox(make(3)) == 3"),
             AssertTest("assert unbox_all([make(1), make(2)], key=make(5)) == [1, 2, 5]"),
             AssertTest("assert kinds(bytearray(b'x'), b'y', (1,), [1], {1}, frozenset(), 1.5, None, True, z={}) == "
                        "['bytearray', 'bytes', 'tuple', 'list', 'set', 'frozenset', 'float', 'NoneType', 'bool', "
                        "'z:dict']"),
             AssertTest("x = [1, 2]\nassert same([x, x]) is True"),
             AssertTest("assert same([[1], [1]]) is False")]
    result = sb.execute(program, tests)
    assert [t.status for t in result.tests] == [Status.PASSED] * 5, [t.detail for t in result.tests]
    wrong = sb.execute(program.replace("return b.v if", "return -1 if"), tests[:1])
    assert wrong.tests[0].status is Status.WRONG_ANSWER
