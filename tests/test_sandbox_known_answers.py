"""Known answers: the benchmarks' reference solutions pass, simple wrong variants of them fail."""

from __future__ import annotations

import pytest

from corecode.benchmarks import load_benchmark
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import Status

# With their test_list and test_setup_code, every MBPP reference passes in this sandbox (measured: 974/974
# full, 427/427 sanitized). Should one start failing, the sweep below names it; this set is the truth.
MBPP_FAILING_REFERENCES: set[str] = set()


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=2, reference_timing=False)) as sandbox:
        yield sandbox


def _failures(sb, jobs):
    results = sb.run_batch(jobs)
    return {problem.id: result for (_, problem), result in zip(jobs, results) if not result.passed}


def _mbpp(name: str):
    """The copies shipped in corecode (tests/test_benchmarks_humaneval_mbpp.py checks them against the
    real files), so these suites run on any clone."""
    return load_benchmark(name, "all")


def test_all_humaneval_canonical_solutions_pass(sb):
    problems = load_benchmark("humaneval")
    assert len(problems) == 164
    failures = _failures(sb, [(p.reference_solutions[0], p) for p in problems])
    assert failures == {}


def test_humaneval_wrong_variants_fail(sb):
    problems = load_benchmark("humaneval")
    results = sb.run_batch([(p.prompt + "    return None\n", p) for p in problems])
    passed = [p.id for p, r in zip(problems, results) if r.passed]
    assert passed == []
    assert all(r.status in (Status.WRONG_ANSWER, Status.RUNTIME_ERROR) for r in results)


def test_mbpp_quick_subset(sb):
    problems = _mbpp("mbpp")[:120]
    failures = _failures(sb, [(p.reference_solutions[0], p) for p in problems])
    assert set(failures) == {p.id for p in problems} & MBPP_FAILING_REFERENCES


def test_mbpp_wrong_variants_fail(sb):
    problems = _mbpp("mbpp")[:120]
    jobs = [(p.reference_solutions[0] + f"\n\ndef {p.entry_point}(*args, **kwargs):\n    return None\n", p)
            for p in problems]
    results = sb.run_batch(jobs)
    assert [p.id for p, r in zip(problems, results) if r.passed] == []


@pytest.mark.slow
@pytest.mark.parametrize("name, count", [("mbpp", 974), ("mbpp-sanitized", 427)])
def test_every_mbpp_reference(sb, name, count):
    problems = _mbpp(name)
    assert len(problems) == count
    failures = _failures(sb, [(p.reference_solutions[0], p) for p in problems])
    details = {pid: r.tests[[t.passed for t in r.tests].index(False)].detail for pid, r in failures.items()}
    assert set(failures) == MBPP_FAILING_REFERENCES & {p.id for p in problems}, details


def test_one_fork_and_two_fork_jobs_give_the_same_verdicts(sb):
    # Issue 15: a job of function tests runs in its leader (one fork, the default); one_fork_jobs=False keeps
    # the leader and a program child. Both must judge alike: references pass, wrong variants fail alike.
    problems = load_benchmark("humaneval")[:40]
    jobs = [(p.reference_solutions[0], p) for p in problems] + [(p.prompt + "    return None\n", p) for p in problems]
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, one_fork_jobs=False)) as two_forks:
        old = two_forks.run_batch(jobs)
    new = sb.run_batch(jobs)  # one fork, the default

    def verdicts(results):
        return [(r.status, [t.status for t in r.tests]) for r in results]

    assert verdicts(new) == verdicts(old)
    assert sum(r.passed for r in new) == len(problems)


def test_function_jobs_run_in_their_leader_only_when_told(sb):
    # pids start over at every job (the worker's PID namespace): with two forks the program child takes the
    # pid right after its leader's; with one fork the program is the leader, forked by the clean zygote.
    # A test can fail either way, so the path is really taken.
    from corecode.types import CallTest

    program = "import os\n\ndef gap():\n    return os.getpid() - os.getppid()\n"
    if not sb.isolation.get("pid_namespace"):
        pytest.skip("pids start over per job only in a PID namespace of the worker's own")
    result = sb.execute(program, [CallTest("gap", (), 1)])  # one fork, the default
    assert not result.passed and result.tests[0].status == Status.WRONG_ANSWER
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, one_fork_jobs=False)) as two_forks:
        assert two_forks.execute(program, [CallTest("gap", (), 1)]).passed


def test_workers_are_pinned_to_one_cpu_each_unless_told_otherwise(sb):
    # pin_workers (default): worker i and its jobs on the i-th allowed CPU, so the judge's calls into the
    # program wake it on the same CPU. A job sees one CPU; with pin_workers=False it sees them all.
    import os

    from corecode.types import CallTest

    cpus = len(os.sched_getaffinity(0))
    if cpus < 2:
        pytest.skip("one CPU: nothing to pin")
    program = "import os\n\ndef cpus():\n    return len(os.sched_getaffinity(0))\n"
    assert sb.execute(program, [CallTest("cpus", (), 1)]).passed
    with Sandbox(SandboxConfig(workers=1, reference_timing=False, pin_workers=False)) as unpinned:
        assert unpinned.execute(program, [CallTest("cpus", (), cpus)]).passed
