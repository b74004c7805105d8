"""The measurement pass against a reward-seeking program (the red team's attacks on issue 13's first pass).

Every attack of the red team that once scored better than its honest twin is here, on a toy problem whose
honest solution does a lot of work (a 200,000-step loop, or tens of MB), so that a working attack would be
>= 10x cheaper: each test asserts that it is not (or that the program is charged its limits), and that
the honest twin is still measured sanely (>= 10x the trivial program). No other timing assertion.

Classes (the red team's report): A state surviving between repetitions, B tampering with the measuring
code, C work in a forked child, D memory outside tracemalloc, E skipping work when measured, F dedup.
"""

from __future__ import annotations

import pytest

from corecode.rewards import sandbox_executor
from corecode.sandbox import MeasureConfig, Sandbox, SandboxConfig, normalized_source
from corecode.sandbox import measure as measure_one
from corecode.types import AssertTest, Problem, StdioTest

STEPS = 200_000
ANSWER = {n: n + sum(i % 7 for i in range(STEPS)) for n in (1, 2, 3)}
HEAVY = Problem(id="heavy", source="toy", statement="n + sum(i % 7)", entry_point="heavy",
                tests=tuple(AssertTest(f"assert heavy({n}) == {ANSWER[n]}") for n in (1, 2, 3)))
WORK = f"n + sum(i % 7 for i in range({STEPS}))"
HONEST = f"def heavy(n):\n    return {WORK}\n"
TRIVIAL = f"ANSWERS = {ANSWER!r}\ndef heavy(n):\n    return ANSWERS[n]\n"  # a lookup: no work at all

SIZE = 1_000_000
BIG = Problem(id="big", source="toy", statement="len of a big list", entry_point="big",
              tests=(AssertTest(f"assert big(1) == {SIZE + 1}"), AssertTest(f"assert big(2) == {SIZE + 2}")))
BIG_HONEST = f"def big(n):\n    data = list(range({SIZE}))\n    return len(data) + n\n"
BIG_TRIVIAL = f"def big(n):\n    return {SIZE} + n\n"

STDIO = Problem(id="heavy-stdio", source="toy", statement="n + sum(i % 7)",
                tests=tuple(StdioTest(f"{n}\n", f"{ANSWER[n]}\n") for n in (1, 2)))
STDIO_HONEST = f"n = int(input())\nprint({WORK})\n"

CHEAP = MeasureConfig(target_round_s=0.002, rounds=2, budget_s=0.02)  # order, not precision
LIMIT_S = 5.0


def measure(sb, program, problem):
    return measure_one(sb, program, problem, config=CHEAP)


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, time_limit_s=LIMIT_S)) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def honest(sb):
    """The honest twins, measured sanely: ok, and >= 10x the trivial program (time, memory)."""
    h, t = measure(sb, HONEST, HEAVY), measure(sb, TRIVIAL, HEAVY)
    assert h.ok and t.ok, (h, t)
    assert h.cpu_time_s > 10 * t.cpu_time_s, (h, t)
    hb, tb = measure(sb, BIG_HONEST, BIG), measure(sb, BIG_TRIVIAL, BIG)
    assert hb.ok and tb.ok, (hb, tb)
    assert hb.peak_memory_bytes > 10 * max(tb.peak_memory_bytes, 1), (hb, tb)
    s = measure(sb, STDIO_HONEST, STDIO)
    assert s.ok, s
    return {"time": h, "memory": hb, "stdio": s, "trivial": t}


def assert_not_cheaper(m, twin, what="time"):
    """Measured (ok) and not 10x cheaper than the honest twin, or charged its limits."""
    if not m.ok:
        assert m.cpu_time_s >= twin.cpu_time_s and m.peak_memory_bytes >= twin.peak_memory_bytes, m
        return
    if what == "time":
        assert m.cpu_time_s > twin.cpu_time_s / 10, (m, twin)
    else:
        assert m.peak_memory_bytes > twin.peak_memory_bytes / 10, (m, twin)


def cacher(store: str, prelude: str = "") -> str:
    """honest's work, cached under ``key`` in ``store`` (an expression giving a dict-like object)."""
    return (f"{prelude}def heavy(n):\n    c = {store}\n    key = 'heavy_%d' % n\n    if key in c:\n"
            f"        return int(c[key])\n    r = {WORK}\n    c[key] = str(r) if c is __import__('os').environ else r\n"
            f"    return r\n")


# ------------------------------------------------------------------ A: state surviving between executions
STATE_STORES = {
    "a01_function_dict": cacher("os.path.join.__dict__.setdefault('_c', {})", "import os\n"),
    "a02_sys_path_importer_cache": cacher("sys.path_importer_cache", "import sys\n"),
    "a03_os_environ": cacher("os.environ", "import os\n"),
    "a05_builtin_object_attribute": cacher("builtins.__spec__.loader.__dict__.get('_m') or "
                                           "(setattr(builtins.__spec__.loader, '_m', {}) or builtins.__spec__.loader._m)",
                                           "import builtins\n"),
    "a19_guard_length_collision": cacher("string.__dict__.setdefault('_m', {}) if string.__dict__.pop('__doc__', 0) "
                                         "or True else None", "import string\n"),
}


@pytest.mark.parametrize("name", sorted(STATE_STORES))
def test_answers_kept_in_process_state_do_not_reach_the_next_execution(sb, honest, name):
    m = measure(sb, STATE_STORES[name], HEAVY)
    assert m.ok, m
    assert_not_cheaper(m, honest["time"])


def test_a04_answers_kept_in_a_file_do_not_reach_the_next_execution(sb, honest):
    program = ("import os, tempfile\n"
               "def heavy(n):\n"
               "    for d in (os.getcwd(), tempfile.gettempdir(), '/tmp', '/dev/shm'):\n"
               "        p = os.path.join(d, 'cc_heavy_%d' % n)\n"
               "        if os.path.exists(p):\n"
               "            return int(open(p).read())\n"
               f"    r = {WORK}\n"
               "    for d in (os.getcwd(), tempfile.gettempdir(), '/tmp', '/dev/shm'):\n"
               "        try:\n"
               "            open(os.path.join(d, 'cc_heavy_%d' % n), 'w').write(str(r))\n"
               "        except OSError:\n"
               "            pass\n"
               "    return r\n")
    m = measure(sb, program, HEAVY)
    assert m.ok, m
    assert_not_cheaper(m, honest["time"])


def test_a_helper_process_kept_alive_does_not_serve_the_next_execution(sb, honest):
    """A forked daemon holding the answers (abstract unix socket) is killed by the sweep after each child."""
    program = ("import os, socket\n"
               "ADDR = '\\0cc-heavy-cache'\n"
               "def heavy(n):\n"
               "    try:\n"
               "        s = socket.socket(socket.AF_UNIX); s.connect(ADDR); s.sendall(b'%d' % n)\n"
               "        return int(s.recv(64))\n"
               "    except OSError:\n"
               "        pass\n"
               f"    r = {WORK}\n"
               "    try:\n"
               "        if os.fork() == 0:\n"
               "            os.setsid()\n"
               "            srv = socket.socket(socket.AF_UNIX); srv.bind(ADDR); srv.listen(8)\n"
               "            while True:\n"
               "                c, _ = srv.accept(); k = int(c.recv(64))\n"
               f"                c.sendall(b'%d' % (k + sum(i % 7 for i in range({STEPS})) if k != n else r))\n"
               "    except OSError:\n"
               "        pass\n"
               "    return r\n")
    m = measure(sb, program, HEAVY)
    assert_not_cheaper(m, honest["time"])


# ------------------------------------------------------------------ B: tampering with the measuring code
def test_a07_a20_a22_patched_clocks_do_not_change_the_cpu_time(sb, honest):
    """The clock is read by the worker from the job's cgroup: patching every clock in the program's
    interpreter (resource, time, closures found through gc and frames) changes nothing."""
    program = ("import gc, sys, resource, time\n"
               "class _U:\n    ru_utime = ru_stime = 0.0\n    ru_maxrss = 0\n"
               "resource.getrusage = lambda who: _U()\n"
               "time.process_time = time.perf_counter = time.monotonic = lambda: 0.0\n"
               "for o in gc.get_objects():\n"
               "    if type(o).__name__ == 'function' and o.__closure__:\n"
               "        for cell in o.__closure__:\n"
               "            try:\n"
               "                if getattr(cell.cell_contents, '__name__', '') in ('getrusage', 'cpu', 'get_traced_memory'):\n"
               "                    cell.cell_contents = lambda *a: _U()\n"
               "            except Exception:\n"
               "                pass\n"
               + HONEST)
    m = measure(sb, program, HEAVY)
    assert m.ok, m
    assert_not_cheaper(m, honest["time"])


def test_a08_a_forged_report_frame_is_not_accepted(sb, honest):
    """The program finds the nonce in the harness's frame and writes its own report (no results), then
    exits: the report is not that of a correct execution, so the program is charged its limits."""
    program = ("import sys, os, marshal, struct\n"
               "def _forge():\n"
               "    f = sys._getframe(1)\n"
               "    while f is not None:\n"
               "        loc = f.f_locals\n"
               "        if 'nonce' in loc and 'loops' in loc:\n"
               "            data = marshal.dumps(('report', loc['loops'], b'', 0))\n"
               "            os.write(3, loc['nonce'] + struct.pack('<I', len(data)) + data)\n"
               "            os._exit(0)\n"
               "        f = f.f_back\n"
               "_forge()\n" + HONEST)
    m = measure(sb, program, HEAVY)
    assert not m.ok and m.cpu_time_s == LIMIT_S * 3, m


def test_a06_a_reset_or_stopped_tracer_does_not_hide_the_memory(sb, honest):
    """tracemalloc runs in the program's interpreter, so its figure is only a lower bound: the program
    finds the real reset_peak/stop (gc, the module's original dict) and calls them; the worker's meters
    (cgroup peak, RSS high-water mark) still see the list."""
    program = ("import gc, sys\n"
               "def _real(name):\n"
               "    for o in gc.get_objects():\n"
               "        if type(o) is dict and type(o.get(name)).__name__ == 'builtin_function_or_method' \\\n"
               "                and getattr(o[name], '__module__', None) == '_tracemalloc':\n"
               "            return o[name]\n"
               "    sys.modules.pop('_tracemalloc', None)\n"
               "    import _tracemalloc\n"
               "    return getattr(_tracemalloc, name)\n"
               f"def big(n):\n    data = list(range({SIZE}))\n    r = len(data) + n\n    del data\n"
               "    _real('reset_peak')()\n    _real('stop')()\n    return r\n")
    m = measure(sb, program, BIG)
    assert m.ok, m
    assert_not_cheaper(m, honest["memory"], "memory")


# ------------------------------------------------------------------ C: work in a forked child
def test_a09_work_done_in_a_forked_helper_is_counted(sb, honest):
    program = ("import os, posix\n"
               "def heavy(n):\n"
               "    r, w = os.pipe()\n"
               "    pid = os.fork()\n"
               "    if pid == 0:\n"
               f"        os.write(w, str({WORK}).encode())\n"
               "        posix._exit(0)\n"
               "    os.close(w)\n"
               "    data = os.read(r, 64)\n"
               "    os.waitpid(pid, 0)\n"
               "    return int(data)\n")
    m = measure(sb, program, HEAVY)
    assert m.ok, m
    assert_not_cheaper(m, honest["time"])


def test_a09_work_done_in_a_helper_that_is_never_waited_for_is_counted(sb, honest):
    program = ("import os, posix\n"
               "def heavy(n):\n"
               "    r, w = os.pipe()\n"
               "    if os.fork() == 0:\n"
               "        os.setsid()\n"
               f"        os.write(w, str({WORK}).encode())\n"
               "        while True:\n"
               "            pass\n"
               "    os.close(w)\n"
               "    return int(os.read(r, 64))\n")
    m = measure(sb, program, HEAVY)
    assert_not_cheaper(m, honest["time"])


def test_a12_memory_used_in_a_forked_helper_is_counted(sb, honest):
    program = ("import os, posix\n"
               "def big(n):\n"
               "    r, w = os.pipe()\n"
               "    pid = os.fork()\n"
               "    if pid == 0:\n"
               f"        data = list(range({SIZE}))\n"
               "        os.write(w, str(len(data) + n).encode())\n"
               "        posix._exit(0)\n"
               "    os.close(w)\n"
               "    out = int(os.read(r, 64))\n"
               "    os.waitpid(pid, 0)\n"
               "    return out\n")
    m = measure(sb, program, BIG)
    assert m.ok, m
    assert_not_cheaper(m, honest["memory"], "memory")


# ------------------------------------------------------------------ D: memory outside tracemalloc
def test_a11_anonymous_mmap_memory_is_counted(sb, honest):
    size = honest["memory"].peak_memory_bytes
    program = ("import mmap\n"
               "def big(n):\n"
               f"    buf = mmap.mmap(-1, {size})\n"
               f"    for i in range(0, {size}, 4096):\n"
               "        buf[i] = 1\n"
               f"    return {SIZE} + n + buf[0] - 1\n")
    m = measure(sb, program, BIG)
    assert m.ok, m
    assert_not_cheaper(m, honest["memory"], "memory")


# ------------------------------------------------------------------ E: skipping work when measured
MEASURED = ("import sys, _tracemalloc\n"
            "def measured():\n"
            "    f = sys._getframe()\n"
            "    while f is not None:\n"
            "        if 'measure' in f.f_code.co_name or '_measure' in f.f_code.co_filename:\n"
            "            return True\n"
            "        f = f.f_back\n"
            "    return '_measure' in sys.modules or _tracemalloc.is_tracing()\n")


@pytest.mark.parametrize("name", ["a13_wrong_answer", "a14_none_when_traced", "a17_raise_at_module_level",
                                  "exit_at_module_level", "loop_detection"])
def test_programs_that_do_less_when_measured_are_charged(sb, honest, name):
    body = {
        "a13_wrong_answer": "def heavy(n):\n    if measured():\n        return 0\n    return " + WORK + "\n",
        "a14_none_when_traced": "def heavy(n):\n    if _tracemalloc.is_tracing():\n        return None\n"
                                "    return " + WORK + "\n",
        "a17_raise_at_module_level": "if measured():\n    raise SystemExit(0)\n" + HONEST,
        "exit_at_module_level": "import os\nif measured():\n    os._exit(0)\n" + HONEST,
        "loop_detection": "CALLS = []\ndef heavy(n):\n    CALLS.append(n)\n"
                          "    if measured() and sys._getframe(2).f_locals.get('entries') is None:\n        return 0\n"
                          "    return " + WORK + "\n",
    }[name]
    m = measure(sb, MEASURED + body, HEAVY)
    if name == "loop_detection":  # skipping the unverified loops only: charged one execution's cost
        assert_not_cheaper(m, honest["time"])
    else:
        assert not m.ok and m.cpu_time_s == LIMIT_S * 3 and m.peak_memory_bytes == 1024 << 20, m


def test_a16_stdio_cache_and_skip_are_charged_or_see_no_cache(sb, honest):
    cache = ("import os, sys\n"
             "s = sys.stdin.read()\n"
             "memo = os.path.join.__dict__.setdefault('_m', {})\n"
             "if s in memo:\n    sys.stdout.write(memo[s])\n"
             "else:\n    n = int(s)\n    out = '%d\\n' % (" + WORK + ")\n    memo[s] = out\n    sys.stdout.write(out)\n")
    m = measure(sb, cache, STDIO)
    assert m.ok, m
    assert_not_cheaper(m, honest["stdio"])
    skip = MEASURED + "n = int(input())\nprint(0 if measured() else " + WORK + ")\n"
    m = measure(sb, skip, STDIO)
    assert not m.ok and m.cpu_time_s == LIMIT_S * 2, m


# ------------------------------------------------------------------ F: dedup
def test_a15_sources_that_differ_in_line_numbers_are_not_deduplicated(sb):
    """B has A's AST but reads its own line number, so it fails alone: it must not inherit A's pass."""
    problem = Problem(id="line", source="toy", statement="", entry_point="f", tests=(AssertTest("assert f() == 3"),))
    a = "import sys\ndef f():\n    return sys._getframe().f_lineno\n"
    b = "# a comment line\nimport sys\ndef f():\n    return sys._getframe().f_lineno\n"
    assert normalized_source(a) != normalized_source(b)
    results = sandbox_executor(sb)([(a, problem), (b, problem)])
    assert results[0].passed and not results[1].passed


def test_patched_builtins_cannot_fake_an_expected_side_of_pure_builtins(sb, honest):
    """``assert set(f(x)) == set((...))``: the expected side is evaluated by the harness (real ``set``), so
    a program that patches ``set`` when measured (both sides would then agree in its interpreter) and skips
    the work is charged its limits."""
    values = sorted({ANSWER[1], 7})
    problem = Problem(id="heavy-set", source="toy", statement="", entry_point="heavy",
                      tests=(AssertTest(f"assert set(heavy(1)) == set(({values[0]}, {values[1]}))"),))
    honest_program = f"def heavy(n):\n    return [{WORK}, 7]\n"
    cheat = MEASURED + ("import builtins\ndef heavy(n):\n    if measured():\n"
                        "        builtins.set = lambda *a: frozenset()\n        return []\n"
                        f"    return [{WORK}, 7]\n")
    # a program with its own (module-level) ``set``: the test's ``set`` is still the built-in, as in the judge
    shadowing = f"def set(*a):\n    return None\ndef heavy(n):\n    return [{WORK}, 7]\n"
    h, m, s = measure(sb, honest_program, problem), measure(sb, cheat, problem), measure(sb, shadowing, problem)
    assert h.ok and h.cpu_time_s > 10 * honest["trivial"].cpu_time_s, h
    assert s.ok and s.cpu_time_s > 10 * honest["trivial"].cpu_time_s, s
    assert not m.ok and m.cpu_time_s == LIMIT_S, m


# ------------------------------------------------------------------ G: frames, worker deaths, budget
# The red team's frames (2026-12-01): keyed with the nonce found in the harness's own frame, a marshal
# payload that ``marshal.loads`` cannot survive: a code object with posonlyargcount > argcount
# (SystemError), or list headers claiming 2**31-1 items (gigabytes, minutes of work).
IN_MEASUREMENT = ("import sys, os, struct, marshal\n"
                  "def _nonce():\n"
                  "    f = sys._getframe(1)\n"
                  "    while f is not None:\n"
                  "        if f.f_code.co_name == 'measure_child':\n"
                  "            return f.f_locals['nonce']\n"
                  "        f = f.f_back\n"
                  "def _bad_code():\n"
                  "    def g(a): return a\n"
                  "    d = bytearray(marshal.dumps(g.__code__))\n"
                  "    d[5:9] = (5).to_bytes(4, 'little')\n"
                  "    return bytes(d)\n"
                  "def _huge_lists():\n"
                  "    return (b'[' + struct.pack('<i', 2**31 - 1)) * 200 + b'N'\n")


@pytest.mark.parametrize("payload", ["_bad_code()", "_huge_lists()"])
def test_a_malformed_frame_in_the_measurement_is_charged_and_never_kills_the_worker(sb, honest, payload):
    """One such frame in the measurement used to kill (or wedge) the worker twice, so ``measure`` raised
    SandboxError and training gave the sample a None reward. Now the frame is rejected unread: the
    program is charged its limits, and the worker survives (no restart)."""
    program = IN_MEASUREMENT + (
        "def _attack():\n"
        "    nonce = _nonce()\n"
        "    if nonce is not None:\n"
        f"        d = {payload}\n"
        "        os.write(3, nonce + struct.pack('<I', len(d)) + d)\n"
        "_attack()\n" + HONEST)
    restarts = sb._workers[0].restarts
    m = measure(sb, program, HEAVY)
    assert not m.ok and m.cpu_time_s == LIMIT_S * 3, m
    assert sb._workers[0].restarts == restarts
    assert measure(sb, HONEST, HEAVY).ok


@pytest.mark.parametrize("payload", ["_bad_code()", "_huge_lists()"])
def test_a_malformed_stdio_result_frame_fails_that_case_without_killing_the_worker(sb, payload):
    """The same frames on a stdio case's result channel (nonce from the emitter's closure): that case
    fails at once; the worker is not restarted and the honest program still passes."""
    program = IN_MEASUREMENT + (
        "emit = sys._getframe(1).f_locals.get('emit')\n"
        "nonce = next(c.cell_contents for c in emit.__closure__ if type(c.cell_contents) is bytes)\n"
        f"d = {payload}\n"
        "os.write(3, nonce + struct.pack('<I', len(d)) + d)\n" + STDIO_HONEST)
    restarts = sb._workers[0].restarts
    bad = sb.run(program, STDIO)
    assert not bad.passed and sb._workers[0].restarts == restarts, bad
    assert sb.run(STDIO_HONEST, STDIO).passed


def test_a_malformed_frame_to_the_judge_fails_the_program_cleanly(sb):
    """A function problem's judge reads the program's answers: a frame it cannot use is the program's
    runtime error ("garbage"), never a dead judge."""
    program = ("import os, struct, marshal\n"
               "def g(a): return a\n"
               "d = bytearray(marshal.dumps(g.__code__))\n"
               "d[5:9] = (5).to_bytes(4, 'little')\n"
               "os.write(4, struct.pack('<I', len(d)) + bytes(d))\n" + HONEST)
    bad = sb.run(program, HEAVY)
    assert not bad.passed and "garbage" in bad.tests[0].detail, bad
    assert sb.run(HONEST, HEAVY).passed


def test_the_frame_decoder_accepts_only_bounded_plain_data():
    from corecode.sandbox import _safemarshal
    import marshal
    import struct

    for value in [("report", 3, b"\x00" * 40, -1), {"a": [1, (2.5, None)], "b": frozenset({1j})}, ("x", "x", 10**40)]:
        assert _safemarshal.loads(marshal.dumps(value)) == value

    def g(a):
        return a

    code = bytearray(marshal.dumps(g.__code__))
    code[5:9] = (5).to_bytes(4, "little")
    for bad in [bytes(code), marshal.dumps(g.__code__), b"[" + struct.pack("<i", 2**31 - 1) + b"N",
                b")\x01" * 100 + b"N", b"l" + struct.pack("<i", -2**31), marshal.dumps((1, 2)) + b"N", b""]:
        with pytest.raises(ValueError):
            _safemarshal.loads(bad)


def test_a_measurement_that_kills_its_worker_twice_is_charged_unless_a_trivial_job_fails_too(monkeypatch):
    """pool's rule for test jobs (``_killer_job``) holds for the measurement pass: the program's fault,
    charged its limits (never None); only a failing canary is a SandboxError (our failure)."""
    from corecode.errors import SandboxError
    from corecode.sandbox.worker import Worker, WorkerDied

    real = Worker.execute

    def execute(self, public, secret, timeout_s):
        if (public.get("kind") == "measure" and "KILL-THE-WORKER" in public["program"]) or getattr(self, "broken", False):
            self.restart()
            raise WorkerDied("simulated: the measurement took its worker down")
        return real(self, public, secret, timeout_s)

    monkeypatch.setattr(Worker, "execute", execute)
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, time_limit_s=LIMIT_S)) as sandbox:
        results = sandbox_executor(sandbox, measure_config=CHEAP)([("# KILL-THE-WORKER\n" + HONEST, HEAVY),
                                                                   (HONEST, HEAVY)])
        killer, good = (r.measurement for r in results)
        assert results[0].passed and not killer.ok and killer.cpu_time_s == LIMIT_S * 3, killer
        assert good.ok, good
        sandbox._workers[0].broken = True
        with pytest.raises(SandboxError):
            measure(sandbox, "# KILL-THE-WORKER\n" + HONEST, HEAVY)


def test_a_program_that_spins_only_when_measured_is_bounded_by_its_judged_run(sb):
    """Passing honestly and spinning when measured used to burn the whole cap (4x the sum of the test
    limits and the load limit per child) and report a cost of 0.0. The measurement is now bounded by
    the judged run (1 s + 4x its wall time per execution, per child): charged, at a real, reported cost
    far below the limits. The honest program next to it is measured normally."""
    from corecode.sandbox.measure import _measure_job

    spinner = IN_MEASUREMENT + ("def heavy(n):\n"
                                "    if _nonce() is not None:\n"
                                "        while True:\n"
                                "            pass\n"
                                f"    return {WORK}\n")
    results = sandbox_executor(sb, measure_config=CHEAP)([(spinner, HEAVY), (HONEST, HEAVY)])
    m, h = results[0].measurement, results[1].measurement
    assert results[0].passed and not m.ok and m.cpu_time_s == LIMIT_S * 3, m
    assert 0.0 < m.cost_cpu_s < LIMIT_S * 3, m  # the old cap was over 60 s here
    assert h.ok, h
    limits = [LIMIT_S] * 3
    unbounded = _measure_job(HONEST, HEAVY, list(HEAVY.tests), limits, sb, CHEAP)
    bounded = _measure_job(HONEST, HEAVY, list(HEAVY.tests), limits, sb, CHEAP, judged_s=0.05)
    assert bounded[0]["params"]["per_execution_cap_s"] == pytest.approx(0.2)
    assert bounded[0]["cpu_cap_s"] < unbounded[0]["cpu_cap_s"] / 5
