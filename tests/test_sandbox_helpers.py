"""Helpers shared by the sandbox tests (no tests here): small problems, a check that nothing is left."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from corecode.types import AssertTest, Problem, Status, StdioTest

ADD = Problem(
    id="test/add",
    source="test",
    statement="add two numbers",
    tests=(AssertTest("assert add(1, 2) == 3"), AssertTest("assert add(-5, 5) == 0"),
           AssertTest("assert add(10, 20) == 30")),
    entry_point="add",
)
GOOD_ADD = "def add(a, b):\n    return a + b\n"


def children_of(pid: int) -> list[int]:
    kids: list[int] = []
    task_dir = Path(f"/proc/{pid}/task")
    for task in task_dir.iterdir() if task_dir.is_dir() else []:
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def _is_judge(pid: int, judge_uid: int) -> bool:
    """A worker's judge process (it serves job after job, so it stays): it runs as the judge uid."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1]) == judge_uid
    except OSError:
        pass
    return False


def job_children(sandbox, pid: int) -> list[int]:
    """Children of a worker other than its judge process and its zygote, and the zygote's children."""
    judge_uid = sandbox.config.judge_uid if os.getuid() == 0 else -1
    kids = [k for k in children_of(pid) if not _is_judge(k, judge_uid)]
    return [k for k in kids if not _is_zygote(k)] + [g for k in kids if _is_zygote(k) for g in children_of(k)]


def judge_of(sandbox, pid: int) -> int | None:
    judge_uid = sandbox.config.judge_uid if os.getuid() == 0 else -1
    return next((k for k in children_of(pid) if _is_judge(k, judge_uid)), None)


def _is_zygote(pid: int) -> bool:
    """The zygote of a worker with one-fork jobs (it forks every job leader, so it stays): named
    ``sbx-zygote`` and running as this process's uid (root here; jobs run as another uid)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return False
    fields = {line.split(":", 1)[0]: line.split(":", 1)[1].split() for line in status if ":" in line}
    return fields.get("Name") == ["sbx-zygote"] and int(fields["Uid"][0]) == os.getuid()


def assert_clean(sandbox) -> None:
    """No process of any job survives, no file is left in the workers' scratch dirs, the pool works."""
    judge_uid = sandbox.config.judge_uid if os.getuid() == 0 else -1
    for pid in sandbox.worker_pids:
        zygotes = [k for k in children_of(pid) if _is_zygote(k)]
        assert len(zygotes) == (1 if sandbox.config.one_fork_jobs else 0), f"worker {pid}: zygotes {zygotes}"
        kids = [k for k in children_of(pid) if not _is_judge(k, judge_uid) and k not in zygotes]
        assert kids == [], f"worker {pid} still has children"
        assert all(children_of(z) == [] for z in zygotes), f"worker {pid}: a leader outlived its job"
        assert len(children_of(pid)) - len(kids) - len(zygotes) <= 1, "at most one judge process per worker"
    for worker in sandbox._workers:
        if worker.cgroup:
            procs = {int(p) for p in Path(worker.cgroup, "cgroup.procs").read_text().split()}
            procs = {p for p in procs if not _is_judge(p, judge_uid) and not _is_zygote(p)}
            assert procs <= {worker.proc.pid, worker.pid}, f"processes left in {worker.cgroup}: {procs}"
    # (Other sandboxes on a shared machine also run jobs as the job uid, so the check is by cgroup.)
    for worker in sandbox._workers:
        assert os.listdir(worker.scratch) == [], "the host side of a scratch dir must stay empty"
    result = sandbox.run(GOOD_ADD, ADD)
    assert result.status is Status.PASSED, result


# -- stdin/stdout cases in both modes (tests/test_sandbox_shared_runner.py, _redteam_shared.py) --------------
SUM_CASES = tuple(StdioTest(f"{i} {i + 1}\n", f"{2 * i + 1}\n") for i in range(8))  # "a b" -> a + b


@contextlib.contextmanager
def shared_and_fresh(time_limit_s: float = 0.5):
    """(the default sandbox: a shared runner per program, one with a fresh process per case), one worker each."""
    from corecode.sandbox import Sandbox, SandboxConfig  # noqa: PLC0415

    shared = Sandbox(SandboxConfig(workers=1, time_limit_s=time_limit_s, reference_timing=False))
    fresh = Sandbox(SandboxConfig(workers=1, time_limit_s=time_limit_s, reference_timing=False,
                                  stdio_shared_runner=False))
    with shared, fresh:
        yield shared, fresh


def statuses(result) -> list[Status]:
    return [t.status for t in result.tests]


def loops_for(seconds: float) -> int:
    """How many steps of ``sum(i * i for i in range(n))`` take about ``seconds`` of CPU here (rough: CPU
    time moves by tens of per cent with what runs on the other hyperthread)."""
    n, start = 200_000, time.process_time()
    sum(i * i for i in range(n))
    return int(n * seconds / max(1e-6, time.process_time() - start))
