"""The bare baselines of the sandbox benchmarks (fork-and-wait per program, fork per stdin/stdout case):
standard library only, so that a fresh ``python -I`` process can import it by path without loading
corecode."""

from __future__ import annotations

import io
import os
import sys


def fork_and_wait(programs: list[str]) -> int:
    """Per program a fork that ``exec``s it (program and tests as one script) and exits 0, or 1 if it raised;
    no isolation, no limits, no checking beyond the exit code. Returns the programs that exited 0."""
    ok = 0
    for program in programs:
        pid = os.fork()
        if pid == 0:
            try:
                exec(compile(program, "program", "exec"), {"__name__": "solution"})
            except BaseException:  # noqa: BLE001
                os._exit(1)
            os._exit(0)
        ok += os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    return ok


def run_cases(program: str, cases: list[tuple[str, str]]) -> int:
    """The program compiled once, then per case a fork that reads the case's stdin and writes its stdout
    (memfds), a wait, and an exact comparison; no isolation, no limits. Returns the cases right."""
    code = compile(program, "solution.py", "exec")
    ok = 0
    for given, expected in cases:
        in_fd, out_fd = os.memfd_create("stdin"), os.memfd_create("stdout")
        os.write(in_fd, given.encode())
        os.lseek(in_fd, 0, os.SEEK_SET)
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(in_fd, 0)
                os.dup2(out_fd, 1)
                sys.stdin = io.open(0, "r", closefd=False)
                sys.stdout = io.open(1, "w", closefd=False)
                exec(code, {"__name__": "__main__"})
                sys.stdout.flush()
            except BaseException:  # noqa: BLE001
                os._exit(1)
            os._exit(0)
        status = os.waitpid(pid, 0)[1]
        ok += status == 0 and os.pread(out_fd, 1 << 20, 0).decode() == expected
        os.close(in_fd)
        os.close(out_fd)
    return ok
