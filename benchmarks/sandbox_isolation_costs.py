"""What each per-job isolation step of the sandbox costs, against a bare fork-and-exit, in one run.

    python benchmarks/sandbox_isolation_costs.py [--jobs 300] [--rounds 7]

The bare fork-and-wait loop that issue 15's "per program" ratio compares with does none of these; a one-fork
HumanEval job does all of them. Each variant forks ``--jobs`` children of this interpreter (the sandbox's
modules imported, as in a worker) that do the step and exit, waited for one by one; the variants alternate,
``--rounds`` times. Per variant and round: wall time, and CPU of this process plus its reaped children
(``getrusage``), per job. Printed: the extra wall and CPU per job of each step over the bare loop (median of
the rounds' differences, with the distribution-free interval of benchmarks/_stats.py; an interval that
holds 0 is a cost inside the noise). Steps:
  * ipc: ``unshare(CLONE_NEWIPC)`` in the child (every job child without a user namespace of its own; the
    kernel builds and tears down an IPC namespace and its mqueue mount per job);
  * filter: the program seccomp filter (``_isolation.install_program_filter``, no_new_privs first);
  * jobdir (root only): a fresh tmpfs job dir per job, made (mkdir, mount) before the fork and removed
    (unmount, rmdir) after the wait, as the worker does, in a scratch tmpfs of a private mount namespace.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src" / "corecode" / "sandbox"))

import _isolation as iso  # noqa: E402  (the sandbox's own calls, as the worker loads them)
from _stats import describe  # noqa: E402


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run(step: str, jobs: int, jobdir: str) -> tuple[float, float]:
    """(wall, CPU) per job, in seconds."""
    t0, c0 = time.perf_counter(), _cpu()
    for _ in range(jobs):
        if step == "jobdir":
            os.mkdir(jobdir)
            iso.mount("tmpfs", jobdir, "tmpfs", iso.MS_NOSUID | iso.MS_NODEV, "size=64m,mode=0700")
        pid = os.fork()
        if pid == 0:
            try:
                if step == "ipc":
                    iso.unshare(iso.CLONE_NEWIPC)
                elif step == "filter" and not iso.install_program_filter():
                    os._exit(2)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"the {step} child failed (status {status})")
        if step == "jobdir":
            if iso._libc.umount2(jobdir.encode(), 2) != 0:  # MNT_DETACH, as the worker's _umount_all
                raise OSError(f"umount {jobdir} failed")
            os.rmdir(jobdir)
    return (time.perf_counter() - t0) / jobs, (_cpu() - c0) / jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    steps = ["bare", "ipc", "filter"]
    scratch = tempfile.mkdtemp(prefix="isocost-")
    jobdir = os.path.join(scratch, "job")
    if os.getuid() == 0:
        try:
            iso.unshare(iso.CLONE_NEWNS)
            iso.mount(None, "/", None, iso.MS_REC | iso.MS_PRIVATE)
            iso.mount("tmpfs", scratch, "tmpfs", iso.MS_NOSUID | iso.MS_NODEV, "size=64m,mode=0755")  # as the worker's
            steps.append("jobdir")
        except OSError as exc:
            print(f"jobdir: left out ({exc})")
    else:
        print("jobdir: left out (needs root, as the sandbox's own job dirs do)")
    results: dict[str, list[tuple[float, float]]] = {s: [] for s in steps}
    for _ in range(2):  # warm-up
        for step in steps:
            run(step, 20, jobdir)
    for r in range(args.rounds):
        for step in steps if r % 2 == 0 else steps[::-1]:
            results[step].append(run(step, args.jobs, jobdir))
    if "jobdir" in steps:
        iso._libc.umount2(scratch.encode(), 2)
    os.rmdir(scratch)
    bare = results["bare"]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.jobs} jobs x {args.rounds} rounds per step")
    print(f"bare fork-and-exit: wall {sorted(w for w, _ in bare)[len(bare) // 2] * 1e6:.0f} us, "
          f"CPU {sorted(c for _, c in bare)[len(bare) // 2] * 1e6:.0f} us per job (medians)")
    for step in steps[1:]:
        wall = [(w - b) * 1e6 for (w, _), (b, _) in zip(results[step], bare)]
        cpu = [(c - b) * 1e6 for (_, c), (_, b) in zip(results[step], bare)]
        print(f"  + {step:7s} extra per job: wall {describe(wall, ' us')}")
        print(f"            extra per job: CPU  {describe(cpu, ' us')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
