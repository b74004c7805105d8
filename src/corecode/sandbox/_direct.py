"""Function-only jobs with one fork: the job leader becomes the program child, the worker supervises.

Loaded by the worker from this directory (standard library only). Issue 15: a job of function tests (every
HumanEval and MBPP job) used to cost two forks of a worker-sized process (worker -> job leader -> program
child), and the leader, which ran the supervision loop and the sweep in memory it shared copy-on-write
with the worker, took more page faults than the program itself. Here the leader reads its job (as before,
the worker never reads one), writes a small *header* (limits, test indices, deadline, when and at which
job CPU it began: numbers, no program text, no input) into a pipe, closes it, isolates itself exactly as a
program child does (``_run._become_job``) and runs the program. The worker, which forked it, reads the
header, hands the program's pipes and the header's start figures to the judge, supervises the program as
the leader did (``_run._supervise``), sweeps, and forwards the judge's reply with ``sendfile``. The judge
takes its view of the job (test indices, limits) from the secret part the harness sent it, not from the
leader: once, the leader wrote it into a sealed memfd, which cost the leader ~0.2 ms per job.

What stays as it was: the worker's heap holds no program, input, test or expected value (the header is
limits and indices); the program process is forked from a process that only ever saw its own job (the
leader); the judge reads the secret part straight from the harness's pipe; everything of the job is
killed and wiped before the harness gets the answer. What the program can reach of the hand-over: nothing
(the header pipe is closed before any program code, with every other descriptor above 4; the judge's
view of the job never passes through the leader).
"""

from __future__ import annotations

import marshal
import os
import signal
import time

import _isolation as iso
import _run

HEADER_CAP = 1 << 20


def eligible(public: dict) -> bool:
    """Jobs whose only test group is the function group (no stdin/stdout case, no trace)."""
    groups = public.get("groups") or []
    return (public.get("kind") == "program" and public.get("trace") is None and len(groups) == 1
            and groups[0].get("kind") == "function")


class Handover:
    """The descriptors of one job's hand-over, made by the worker before it forks the leader (nothing of a
    job is in them yet): the header pipe, the program's stdout/stderr memfds and its two pipes to the judge."""

    def __init__(self) -> None:
        self.hdr_r, self.hdr_w = os.pipe2(os.O_CLOEXEC)
        self.out, self.err = _run._memfd("stdout"), _run._memfd("stderr")
        self.req_r, self.req_w = os.pipe2(os.O_CLOEXEC)
        self.rep_r, self.rep_w = os.pipe2(os.O_CLOEXEC)

    @classmethod
    def leader_only(cls, hdr_w: int, out: int, err: int, req_r: int, rep_w: int) -> "Handover":
        """The leader's ends, as the clean zygote received them from the worker (the worker keeps its own)."""
        hand = cls.__new__(cls)
        hand.hdr_r, hand.req_w, hand.rep_r = -1, -1, -1
        hand.hdr_w, hand.out, hand.err, hand.req_r, hand.rep_w = hdr_w, out, err, req_r, rep_w
        return hand

    def for_leader(self) -> list[int]:
        return [self.hdr_w, self.out, self.err, self.req_r, self.rep_w]

    def leader_side(self) -> tuple[int, ...]:
        return self.hdr_w, self.req_r, self.rep_w

    def worker_side(self) -> tuple[int, ...]:
        return self.hdr_r, self.out, self.err, self.req_w, self.rep_r

    def close_worker_side(self) -> None:
        """Close the worker's ends, once (later calls close nothing: no descriptor number taken since)."""
        Handover.close(self.worker_side())
        self.hdr_r = self.out = self.err = self.req_w = self.rep_r = -1

    @staticmethod
    def close(fds) -> None:
        for fd in fds:
            if fd < 0:  # closed already (close_worker_side) or never ours (leader_only)
                continue
            try:
                os.close(fd)
            except OSError:
                pass


# ------------------------------------------------------------------------------- in the leader
def become_program(worker, public: dict, hand: Handover) -> None:
    """In the job leader, for an ``eligible`` job: hand over, isolate, run the program. Never returns."""
    exit_now = os._exit  # bound before the program runs: it may replace os._exit
    t0 = time.monotonic()
    Handover.close((hand.hdr_r, hand.req_w, hand.rep_r))  # the worker's ends
    limits = public["limits"]
    worker._fresh_jobdir()
    worker.meter.set_memory_limit(limits["memory"])
    c0 = worker.meter.cpu()  # the job's CPU before the program: its load is measured from here
    header = marshal.dumps({"limits": limits, "tests": list(public["groups"][0]["tests"]),
                            "deadline_s": float(public["deadline_s"]), "t0": t0, "c0": c0})
    os.write(hand.hdr_w, header)  # far below PIPE_BUF: one write
    os.close(hand.hdr_w)
    ctx = worker.job_context(worker.jobdir, limits)
    program, setup = public["program"], public["setup"]
    del public
    try:
        if worker.quiet_leader:
            iso.after_quiet_fork()  # random's fresh seed, as os.fork's hook gives a program child
        in_fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        _run._become_job(in_fd, hand.out, hand.err, hand.req_r, ctx, limits["load_cpu"] + sum(limits["cpu"]),
                         extra_fd=hand.rep_w)
        _run._program_main(program, setup, b"")
    except BaseException:  # noqa: BLE001 - our own setup failed: the judge sees the program die
        import traceback

        os.write(2, traceback.format_exc().encode()[-4000:])
    finally:
        exit_now(1)


# ------------------------------------------------------------------------------- in the worker
def read_header(fd: int) -> dict | None:
    """The leader's header: read until the leader closed the pipe (before any program code); None when it
    wrote none (a job the leader runs itself, or it ended first)."""
    chunks, size = [], 0
    while size < HEADER_CAP:
        try:
            chunk = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if not chunks:
        return None
    header = marshal.loads(b"".join(chunks))
    return header if type(header) is dict else None


def supervise(worker, pid: int, header: dict, hand: Handover, judge: dict, judge_ctx: dict, reap) -> None:
    """In the worker: the job of a leader that became its program, until the harness has its answer. A judge
    that died or was killed is forgotten here, in the worker's own state (a leader's copy of it would be
    lost when the leader exits). ``reap()``: the program's wait status, from the zygote."""
    jp, meter = worker.judge, worker.meter
    jp.seq += 1  # the number the leader gave the job (worker.judge.seq + 1)
    limits = header["limits"]
    public = {"limits": limits, "deadline_s": header["deadline_s"]}
    function = {"tests": header["tests"]}
    program = {"pid": pid, "out_fd": hand.out, "err_fd": hand.err, "reap": reap}
    ctx = worker.job_context(worker.jobdir, limits)
    budget = 5.0 + limits["load_cpu"] + 2 * sum(limits["cpu"])
    state = {"secret": False, "replied": False, "killed": False, "judge_exit": "no judge process"}
    secret = _run.take_secret(worker.ctl_in)  # the judge reads it from a memfd: the pipe is past the job now
    # The leader's CPU figure is the job cgroup's; without job cgroups it summed the leader's own
    # descendants (none), while ours sum the program's tree (and every process below the worker we can
    # read), so the load is measured from the program's fork: all of its own CPU is load. Either way one
    # start for every attempt: a hand-over to a new judge does not restart the load's clocks (red team,
    # seventh session).
    phase = (header["t0"], header["c0"] if meter.cgroup else meter.cpu() - meter.cpu_of(pid))
    try:
        for _ in range(3):  # a judge that died before it read the secret is replaced, the job handed over again
            _run._ensure_judge(judge_ctx, judge)
            try:
                # numbers only: the judge's view of the job comes with the secret part, from the harness
                _run._send_job(jp, (jp.seq, float(header["t0"]), float(header["c0"])),
                               [secret, hand.req_w, hand.rep_r, hand.out, hand.err], tag="direct")
            except OSError:
                _run._judge_gone(jp, meter, kill=True)
                continue
            state = _run._supervise(ctx, public, function, program, jp, budget, header["t0"], phase=phase)
            if state["secret"] or state["replied"] or state["killed"]:
                break
    finally:
        os.close(secret)
        if "death" not in program:  # _supervise reaps it when it dies; otherwise it is still ours to end
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            reap()
    hand.close_worker_side()  # before the reply: when the harness has it, the worker holds nothing of the job
    worker._sweep(last=True)
    worker._drop_jobdir()
    reply_fd, ctl_out = judge["reply_fd"], worker.ctl_out
    try:
        if state["replied"]:
            size = os.fstat(reply_fd).st_size
            _run._send_head(ctl_out, size)
            offset = 0
            while offset < size:  # kernel to kernel: the verdicts (with expected values) never enter us
                offset += os.sendfile(ctl_out, reply_fd, offset, size - offset)
        else:
            _run.reply_failure(judge, state, header["t0"], len(header["tests"]), ctl_out)
    finally:
        os.ftruncate(reply_fd, 0)
