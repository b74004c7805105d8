"""The measurement pass and the noise-aware efficiency rewards (issue 13, ../shared/METHOD.md section 3a).

No timing thresholds: only rank order for pairs whose gap is huge (>= 10x: a 2-million-step loop against a
one-line function, a 3-million-element list against none), exact equality for identical programs, and the
deterministic traced-allocation peak.
"""

from __future__ import annotations

import pytest

from corecode.rewards import CoderReward, GroupLayout, Outcome, PlannerReward, RewardConfig, sandbox_executor
from corecode.rewards import coder_group_rewards, planner_group_rewards
from corecode.rewards.ties import snap, tie_resolve
from corecode.sandbox import MeasureConfig, Sandbox, SandboxConfig, normalized_source, run_measured
from corecode.sandbox import measure as measure_one
from corecode.types import AssertTest, CallTest, Problem, StdioTest

PERIMETER = Problem(id="perimeter", source="toy", statement="4 * a", entry_point="square_perimeter",
                    tests=(AssertTest("assert square_perimeter(10) == 40"), AssertTest("assert square_perimeter(5) == 20"),
                           AssertTest("assert square_perimeter(4) == 16")))
TRIVIAL = "def square_perimeter(a):\n    return 4 * a\n"
LOOP = "s = 0\nfor i in range(300000):\n    s += 1\n"
BIG = "big = list(range(300000))\n"
IN_FUNCTION = ("def square_perimeter(a):\n    s = 0\n    for i in range(300000):\n        s += 1\n"
               "    big = list(range(300000))\n    return 4 * a\n")
AT_IMPORT = LOOP + BIG + TRIVIAL
SUM = Problem(id="sum", source="toy", statement="sum of a line", tests=(StdioTest("1 2 3\n", "6\n"), StdioTest("4 5\n", "9\n")))


CHEAP = MeasureConfig(target_round_s=0.002, rounds=2, budget_s=0.02)  # a test needs order, not precision


def measure(sb, program, problem):
    return measure_one(sb, program, problem, config=CHEAP)


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, time_limit_s=5.0)) as sandbox:
        yield sandbox


def test_module_level_work_is_part_of_the_program(sb):
    """The issue's example: the loop and the list at import time are measured like the same work in the
    function (the old per-test times saw ~0 s and 4 KiB for the import-time variant)."""
    trivial, at_import = measure(sb, TRIVIAL, PERIMETER), measure(sb, AT_IMPORT, PERIMETER)
    assert trivial.ok and at_import.ok
    assert at_import.cpu_time_s > 10 * trivial.cpu_time_s
    assert at_import.peak_memory_bytes > 5_000_000 > 100 * trivial.peak_memory_bytes  # deterministic
    passed = run_measured(sb, [(AT_IMPORT, PERIMETER)])[0]
    assert passed.passed and passed.measurement is not None
    assert passed.cpu_time_s == passed.measurement.cpu_time_s  # the whole-program number is the result's
    assert passed.peak_memory_bytes == passed.measurement.peak_memory_bytes


def test_the_module_level_twin_scores_no_better_than_the_in_function_one(sb):
    inside, module = measure(sb, IN_FUNCTION, PERIMETER), measure(sb, AT_IMPORT, PERIMETER)
    config = RewardConfig()
    # the in-function variant runs its loop once per test (3x), the module-level one once per execution
    assert module.peak_memory_bytes == pytest.approx(inside.peak_memory_bytes, rel=0.05)
    a, b = Outcome(1.0, inside.cpu_time_s, inside.peak_memory_bytes), Outcome(1.0, module.cpu_time_s, module.peak_memory_bytes)
    trivial = measure(sb, TRIVIAL, PERIMETER)
    c = Outcome(1.0, trivial.cpu_time_s, trivial.peak_memory_bytes)
    space = coder_group_rewards([a, b, c], config)
    assert space[2] > space[1] and space[2] > space[0]  # the program that does no work wins, not the importer


def test_stdio_programs_are_measured_per_test_input(sb):
    quick = "print(sum(map(int, input().split())))\n"
    slow = "x = sum(range(300000))\n" + quick
    a, b = measure(sb, quick, SUM), measure(sb, slow, SUM)
    assert a.ok and b.ok and b.cpu_time_s > 10 * a.cpu_time_s


def test_identical_programs_get_one_measurement_and_identical_rewards(sb):
    twin = TRIVIAL.replace("return 4 * a", "return 4 * a   # comment") + "\n# the same program\n"
    assert normalized_source(twin) == normalized_source(TRIVIAL)
    execute = sandbox_executor(sb)
    results = execute([(TRIVIAL, PERIMETER), (twin, PERIMETER), (IN_FUNCTION, PERIMETER)])
    assert results[0].measurement is not None and results[0].measurement == results[1].measurement
    assert results[0] is results[1]  # run once, shared
    outcomes = [Outcome.from_execution(r) for r in results]
    rewards = coder_group_rewards(outcomes, RewardConfig())
    assert rewards[0] == rewards[1] > rewards[2]
    plans = planner_group_rewards([[o] for o in outcomes], [False] * 3, RewardConfig())
    assert plans[0] == plans[1] > plans[2]


def test_identical_programs_across_processes_share_the_first_outcome():
    """Two ranks measured the same program differently: within the group it is one program, one reward."""
    problems = {"p": PERIMETER}
    program = f"Here:\n```python\n{TRIVIAL}```"

    def execute(jobs):  # what two differently loaded ranks could report for one program
        from corecode.types import ExecutionResult, Measurement, Status, TestResult
        out = []
        for i, _ in enumerate(jobs):
            m = Measurement(cpu_time_s=1e-6 * (1 + i), peak_memory_bytes=500 + 100 * i)
            out.append(ExecutionResult(tests=(TestResult(0, Status.PASSED),), n_tests=1, measurement=m))
        return out

    got = CoderReward(problems, execute, GroupLayout(num_generations=2))(["q", "q"], [program, program], ["p", "p"])
    assert got[0] == got[1]
    plan = "1. Input-Output Definition: a\n2. Linear Progression: b\n3. Conditional Logic: c\n4. Iteration: d\n"
    planner = PlannerReward(problems, lambda plans, probs: [[program, program] for _ in plans], execute,
                            GroupLayout(num_generations=2))
    got = planner(["q", "q"], [plan, plan + " "], ["p", "p"])
    assert got[0] == got[1]


def test_results_that_change_between_repetitions_get_no_efficiency_credit(sb):
    problem = Problem(id="r", source="toy", statement="", entry_point="f", tests=(CallTest("f", (1,), 1),))
    m = measure(sb, "import random\ndef f(x):\n    return random.random()\n", problem)
    assert not m.ok and "differs from the verified answer" in m.detail
    assert m.cpu_time_s == 5.0 and m.peak_memory_bytes == 1024 << 20  # charged the limits


def test_state_stashed_between_executions_is_removed(sb):
    """A program that keeps its answer in sys (or builtins) for the next execution recomputes it every time."""
    honest = ("def square_perimeter(a):\n    s = 0\n    for i in range(300000):\n        s += 1\n"
              "    return 4 * a\n")
    stash = ("import sys, builtins\ndef square_perimeter(a):\n    if hasattr(sys, 'memo_' + str(a)):\n"
             "        return getattr(sys, 'memo_' + str(a))\n    s = 0\n    for i in range(300000):\n        s += 1\n"
             "    setattr(sys, 'memo_' + str(a), 4 * a)\n    builtins.stash = 1\n    return 4 * a\n")
    a, b = measure(sb, honest, PERIMETER), measure(sb, stash, PERIMETER)
    assert a.ok and b.ok and b.cpu_time_s > a.cpu_time_s / 10


def test_a_program_cannot_reset_the_memory_peak_it_is_measured_by(sb):
    cheat = ("import tracemalloc\ndef square_perimeter(a):\n    big = list(range(300000))\n    del big\n"
             "    tracemalloc.reset_peak()\n    tracemalloc.stop()\n    return 4 * a\n")
    m, trivial = measure(sb, cheat, PERIMETER), measure(sb, TRIVIAL, PERIMETER)
    assert m.ok and m.peak_memory_bytes > 5_000_000 > 100 * trivial.peak_memory_bytes


def test_ties_inside_the_band_and_order_outside_it():
    assert tie_resolve([1.0, 1.05, 2.0, 2.15, 2.3], 0.10) == [1.0, 1.0, 2.0, 2.0, 2.3]
    assert tie_resolve([3, 3, 3], 0.0) == [3, 3, 3]
    assert snap(1.07, [1.0, 2.0], 0.10) == 1.0 and snap(1.5, [1.0, 2.0], 0.10) == 1.5
    config = RewardConfig()
    # stage 1: two programs 5 % apart tie exactly; a 2x slower one scores lower
    plans = [[Outcome(1.0, 1.00e-5)], [Outcome(1.0, 1.05e-5)], [Outcome(1.0, 2.0e-5)]]
    r = planner_group_rewards(plans, [False] * 3, config)
    assert r[0] == r[1] > r[2]
    # stage 2: memories 3 % apart tie exactly; twice the memory scores lower
    r = coder_group_rewards([Outcome(1.0, 0, 1000), Outcome(1.0, 0, 1030), Outcome(1.0, 0, 2000)], config)
    assert r[0] == r[1] > r[2]
    # no band: the old behaviour (every difference counts)
    strict = config.replace(time_tie_band=0.0, memory_tie_band=0.0)
    assert len(set(planner_group_rewards(plans, [False] * 3, strict))) == 3


def test_with_two_programs_per_plan_sigmoid_weighting_is_softmax_at_twice_tau():
    config = RewardConfig(tau=0.25, lambda_time=0.0)
    plans = [[Outcome(1.0), Outcome(0.25)], [Outcome(0.5), Outcome(0.0)]]
    sig = planner_group_rewards(plans, [False, False], config)
    soft = planner_group_rewards(plans, [False, False], config.replace(aggregation="softmax", softmax_temperature=0.5))
    assert sig == pytest.approx(soft, abs=1e-12)


def test_corpus_pairs_with_huge_gaps_are_ranked_by_both_terms(sb):
    """A few pairs of benchmarks/efficiency_corpus.py whose gap is >= 10x on their real problems' tests."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import efficiency_corpus as corpus

    from corecode.benchmarks import load_benchmark

    problems = {p.id: p for name in ("mbpp", "humaneval") for p in load_benchmark(name, "all")}
    config = RewardConfig()
    time_pairs = [p for p in corpus.TIME_PAIRS if p[1] in ("HumanEval/147", "HumanEval/31", "mbpp/583")]
    memory_pairs = [p for p in corpus.MEMORY_PAIRS if p[1] in ("HumanEval/147", "HumanEval/83")]
    assert len(time_pairs) == 3 and len(memory_pairs) == 2
    for _, task, fast, slow in time_pairs:
        a, b = measure(sb, fast, problems[task]), measure(sb, slow, problems[task])
        r = planner_group_rewards([[Outcome(1.0, a.cpu_time_s)], [Outcome(1.0, b.cpu_time_s)]], [False] * 2, config)
        assert r[0] > r[1], (task, a, b)
    for _, task, small, large in memory_pairs:
        a, b = measure(sb, small, problems[task]), measure(sb, large, problems[task])
        r = coder_group_rewards([Outcome(1.0, 0.0, a.peak_memory_bytes), Outcome(1.0, 0.0, b.peak_memory_bytes)], config)
        assert r[0] > r[1], (task, a, b)


UNPRIVILEGED_MEASURE = """
import json, sys
sys.path.insert(0, SRC)
from corecode.sandbox import MeasureConfig, Sandbox, SandboxConfig, measure
from corecode.types import AssertTest, Problem
P = Problem(id="p", source="toy", statement="4 * a", entry_point="f", tests=(AssertTest("assert f(10) == 40"),))
WORK = "def work():\\n    s = 0\\n    for i in range(2000000):\\n        s += 1\\n"
PROGRAMS = {
    "trivial": "def f(a):\\n    return 4 * a\\n",
    "inline": WORK + "def f(a):\\n    work()\\n    return 4 * a\\n",
    "thread": "import threading\\n" + WORK + "def f(a):\\n    t = threading.Thread(target=work)\\n    t.start()\\n"
              "    t.join()\\n    return 4 * a\\n",
    "helper": "import os\\n" + WORK + "def f(a):\\n    pid = os.fork()\\n    if pid == 0:\\n        work()\\n"
              "        os._exit(0)\\n    os.waitpid(pid, 0)\\n    return 4 * a\\n",
    # the same work in slices of ~5 ms, each in a helper's second thread or in a child the helper reaps,
    # the helpers never reaped: each slice under the 10 ms tick that /proc's utime and cutime round down to
    "ticks": "import os, _thread\\n"
             "def chunk(lo, hi):\\n    s = 0\\n    for i in range(lo, hi):\\n        s += 1\\n    return s\\n"
             "def helper(own, child, w):\\n    def t():\\n        g = os.fork()\\n        if g == 0:\\n"
             "            os.write(w, b'%d\\\\n' % chunk(*child))\\n            os._exit(0)\\n"
             "        s = chunk(*own)\\n        os.waitpid(g, 0)\\n        os.write(w, b'%d\\\\n' % s)\\n"
             "        os._exit(0)\\n    lock = _thread.allocate_lock()\\n    lock.acquire()\\n"
             "    _thread.start_new_thread(t, ())\\n    lock.acquire()\\n"
             "def f(a):\\n    r, w = os.pipe()\\n    lo = 0\\n    while lo < 2000000:\\n"
             "        a1 = min(2000000, lo + 150000)\\n        a2 = min(2000000, a1 + 150000)\\n"
             "        if os.fork() == 0:\\n            os.close(r)\\n            helper((lo, a1), (a1, a2), w)\\n"
             "        lo = a2\\n    os.close(w)\\n    data = b''\\n    while True:\\n        b = os.read(r, 4096)\\n"
             "        if not b:\\n            break\\n        data += b\\n"
             "    assert sum(int(x) for x in data.split()) == 2000000\\n    return 4 * a\\n",
    # the work in a child of a new PID namespace's init: when the init exits, the kernel kills and reaps
    # the child itself (in a plain waited helper where the namespace cannot be made)
    "pidns": "import ctypes, os, signal\\n" + WORK +
             "def f(a):\\n    libc = ctypes.CDLL(None, use_errno=True)\\n    pidns = libc.unshare(0x20000000) == 0\\n"
             "    r, w = os.pipe()\\n    init = os.fork()\\n    if init == 0:\\n"
             "        if not pidns or os.fork() == 0:\\n            work()\\n            os.write(w, b'1')\\n"
             "            if not pidns:\\n                os._exit(0)\\n            while True:\\n"
             "                signal.pause()\\n        os.read(r, 1)\\n        os._exit(0)\\n"
             "    os.close(w)\\n    os.waitpid(init, 0)\\n    return 4 * a\\n",
}
out = {}
with Sandbox(SandboxConfig(workers=1, reference_timing=False, time_limit_s=5.0, python=sys.executable)) as sb:
    for name, source in PROGRAMS.items():
        m = measure(sb, source, P, config=MeasureConfig(target_round_s=0.002, rounds=2, budget_s=0.02))
        out[name] = [m.ok, m.cpu_time_s]
    out["user_namespace"] = sb.isolation.get("user_namespace", False)
print(json.dumps(out))
"""


def test_without_root_work_in_a_thread_or_a_helper_is_measured(tmp_path):
    """Without the job cgroups (no root) the measurement read the main thread's schedstat only, so a
    program that ran its work in a thread or in a helper process it waited for was measured as almost free
    (an efficiency reward for hiding work). It now reads the process's CPU clock (all threads), its reaped
    children's times and every other live process of the job; and since /proc gives those in whole ticks,
    rounded down per field and process, also the total of everything the run's processes used once they
    are all reaped (a red team hid ~4/5 of the work in slices under a tick, each in its own helper). A
    third red team did the work in a child of a new PID namespace's init, which the kernel kills and reaps
    itself when the init exits: the program filter now refuses new PID namespaces."""
    from test_sandbox_unprivileged import run_sandbox_unprivileged

    out = run_sandbox_unprivileged(tmp_path, UNPRIVILEGED_MEASURE, timeout=300)
    assert all(ok for ok, _ in (out[k] for k in ("trivial", "inline", "thread", "helper", "ticks", "pidns"))), out
    trivial, inline = out["trivial"][1], out["inline"][1]
    assert inline > 10 * trivial, out  # the work is visible at all
    for name in ("thread", "helper", "ticks", "pidns"):  # were ~1/60, 1/60, 1/5 and 1/20 of inline
        assert out[name][1] > 10 * trivial and out[name][1] > inline / 2, out
