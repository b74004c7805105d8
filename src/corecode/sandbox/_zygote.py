"""The sandbox worker: a clean, pre-started interpreter that forks one job per request.

Run by the harness as ``python -I _zygote.py CTL_IN CTL_OUT`` with a scrubbed environment. It imports only
the standard library modules that jobs commonly need, enters its own mount and network namespaces once
(read-only filesystem except a private tmpfs, no network), and then serves jobs. It never reads a job
itself: when one is waiting it forks a *job leader* (``Worker.lead_next``), which reads the public part
(program, inputs, limits), forks the job's exec children (see ``_run``), hands the job to the judge
process (which reads the secret part straight from the pipe), sweeps, writes its answer into a memfd and
exits; the worker then forwards that answer with ``sendfile``. So the worker's heap never holds any job,
and every program process is forked from a leader that only ever saw its own job: no program can find
another job's program, inputs or outputs in its (fork-inherited) memory. Measurement jobs go through a
leader too.

Protocol: every message is a 4-byte little-endian length and a body; harness -> worker bodies are pickles
(the harness is trusted), worker -> harness bodies are JSON.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import importlib
import json
import os
import pickle
import select
import shutil
import signal
import socket
import struct
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _isolation as iso  # noqa: E402
import _meter  # noqa: E402
import _run  # noqa: E402
import _measure  # noqa: E402  (the measurement pass of passing programs)
import _cases  # noqa: E402,F401  (stdin/stdout cases: a template per program, _run.run_job)
import _direct  # noqa: E402  (function-only jobs: the leader becomes the program)

sys.path.remove(HERE)


def recv(fd: int) -> bytes | None:
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack("<I", head)[0])
    if body is None:
        raise EOFError("control pipe closed mid-message")
    return body


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def send(fd: int, body: bytes) -> None:
    view = memoryview(struct.pack("<I", len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


HOST_COUNTERS = ("stat", "vmstat", "schedstat", "interrupts", "softirqs", "diskstats", "loadavg", "meminfo",
                 "zoneinfo", "buddyinfo", "sys/fs/dentry-state", "sys/fs/inode-nr", "sys/fs/inode-state",
                 "sys/fs/file-nr", "pressure/cpu", "pressure/memory", "pressure/io")


class Worker:
    def __init__(self, setup: dict, ctl_in: int, ctl_out: int):
        self.setup, self.ctl_in, self.ctl_out = setup, ctl_in, ctl_out
        self.scratch = setup["scratch"]
        self.as_root = os.getuid() == 0
        self.host_pid = os.getpid()
        if setup.get("cgroup"):
            with open(os.path.join(setup["cgroup"], "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        meter_fds = _open_job_cgroups(setup.get("job_cgroups") or {})  # before the filesystem turns read-only
        info = {"network": False, "readonly_fs": False, "user_namespace": False, "ipc_namespace": False,
                "hidden_data": False}
        if setup["isolate"]:
            info = iso.setup_worker(self.scratch, setup["scratch_mb"], setup["need_paths"], self.as_root,
                                    setup.get("hide_paths", []))
        info["pid_namespace"] = setup["isolate"] and self._enter_pid_namespace(info)
        info["pids_cgroup"] = bool(setup.get("cgroup"))
        info["job_cgroup"] = bool(meter_fds)
        # no kernel keyrings and no page-cache probes for any job process (_isolation: what they carried)
        info["syscall_filter"] = bool(setup["isolate"]) and iso.install_syscall_filter(no_user_namespaces=self.as_root)
        self.meter = _meter.Meter(meter_fds)
        self.reply_fd = _run._memfd("reply")  # the judge's reply, passed on with sendfile
        self.leader_out = _run._memfd("leader-out")  # a job leader's whole answer, sent on after its exit
        self.judge = _run.JudgeProcess()  # forked when the first job needs it
        # The pid counter of our PID namespace, set back before every job (see lead_next).
        self.last_pid_fd = -1
        if info["pid_namespace"]:
            try:
                self.last_pid_fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY)
            except OSError:
                pass
        iso.prctl(iso.PR_SET_DUMPABLE, 0)  # same uid as jobs without root: they must not ptrace or read us
        # Jobs drop root only inside the isolated filesystem, where the interpreter is reachable for them.
        info["uid_drop"] = self.as_root and bool(info.get("readonly_fs"))
        self.info = info
        for name in setup["preload"]:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        iso.prctl(iso.PR_SET_CHILD_SUBREAPER, 1)  # orphans of a job come back to us to be reaped
        # Every job child's environment, set here once and inherited (the job dir's path is fixed).
        _run.set_job_environment(os.path.join(self.scratch, "job"))
        self.worker_pid = os.getpid()
        self.quiet_leader = iso.one_thread()  # job leaders forked without Python's fork hooks (lead_next)
        self.quiet_fork = iso.quiet_fork_safe()  # and program children too
        # A leader may become its job's program (_direct) only if it was forked as a program child would be.
        self.one_fork = bool(setup.get("one_fork", True)) and (self.quiet_fork or not self.quiet_leader)
        self.hand = None  # the current job's _direct.Handover, in the worker and its leader
        self.judge_fd = -1  # in the zygote and its leaders: the judge's socket, as the worker sent it
        self.jobdir = os.path.join(self.scratch, "job")  # every job's, fixed (its environment is set for it)
        owner = f",uid={setup['job_uid']},gid={setup['job_uid']}" if info["uid_drop"] else ""
        self.jobdir_options = f"size={setup['scratch_mb']}m,mode=0700{owner}"  # of each job dir's tmpfs
        gc.collect()
        gc.freeze()  # keep forked jobs from touching (copying) the worker's object headers
        self.z_pid, self.z_sock = 0, None
        if self.one_fork:
            self._start_zygote()

    # -- the clean zygote (one_fork_jobs) ---------------------------------------------------------------
    def _start_zygote(self) -> None:
        """With one-fork jobs this process supervises and sweeps programs itself, so what it reads about
        them (process names, exit statuses, pids, CPU figures) lands in its heap, and a job forked from it
        would find an earlier program's bytes there (red team: 3 of 3 later jobs read a token). So every job
        leader is forked by a *zygote*: a child forked once, now, before any job, that never reads anything
        of a job or a program; it learns a leader's end through ``waitid`` into a ctypes buffer that it
        passes on unread and wipes. Leaders are the zygote's children; orphans of jobs still come to us."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            ours.close()
            try:
                self._zygote_loop(theirs)
            finally:
                os._exit(0)
        theirs.close()
        self.z_pid, self.z_sock = pid, ours
        self.meter.spare.add(pid)  # swept around, never killed by a sweep: its children are the job's

    def _zygote_loop(self, sock) -> None:
        iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
        iso.set_name(ZYGOTE_NAME)  # how tests tell it from a job's leftover process (it runs as the worker's uid)
        _run.jc.prepare()  # a program's std streams and answer encoder, made once instead of per job
        gc.collect()
        gc.freeze()
        info = ctypes.create_string_buffer(SIGINFO_SIZE)
        view = memoryview(info).cast("B")
        si_code = ctypes.c_int.from_buffer(info, 8)
        waitid, exit_now = _waitid, os._exit
        jp = self.judge
        while True:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 8)
            if len(msg) != 16 or len(fds) != 6:
                exit_now(0)  # the worker is gone (or broke the protocol)
            seq, judge_pid = struct.unpack("<qq", msg)
            # The judge's socket and pidfd are made by a leader that needs them (``_lead``): one that becomes
            # its program never talks to the judge (the worker does), and here they cost a socket object,
            # five system calls and the page faults of both on every job.
            jp.pid, jp.seq, jp.buf, self.judge_fd = judge_pid, seq, bytearray(), fds[0]
            self.meter.exclude = {judge_pid}
            self.hand = _direct.Handover.leader_only(*fds[1:])
            pid = self._fork_leader()
            _direct.Handover.close(fds)
            self.hand = None
            sock.sendall(struct.pack("<q", pid))
            # The status stays in `info`: no Python object holds it. Only an end counts: a stop reported to a
            # tracer (the program cannot ptrace any more, see _isolation) is waited past.
            while waitid(P_PID, pid, info, WEXITED) != 0 or si_code.value not in (1, 2, 3):  # CLD_EXITED/KILLED/DUMPED
                if ctypes.get_errno() not in (0, errno.EINTR):
                    exit_now(3)
                ctypes.set_errno(0)
            sock.sendall(view)
            ctypes.memset(info, 0, SIGINFO_SIZE)
            # Any other child (none should exist: programs cannot clone with CLONE_PARENT) is reaped too, its
            # status wiped unread: a zombie of ours would keep a pid and a name a program chose.
            while waitid(P_ALL, 0, info, WEXITED | WNOHANG) == 0 and view[16:20] != b"\0\0\0\0":
                ctypes.memset(info, 0, SIGINFO_SIZE)
            ctypes.memset(info, 0, SIGINFO_SIZE)

    def _from_zygote(self, n: int) -> bytes:
        """The zygote's next ``n`` bytes. Without root a program shares the zygote's uid and may stop it
        (SIGSTOP; its parent, once it is a leader's program) before the zygote answered: its job and one
        retry then waited for the harness's deadline (~90 s, red team). It is woken until it answers; it
        is never stopped for a reason of ours."""
        while not select.select([self.z_sock], [], [], 0.05)[0]:
            try:
                os.kill(self.z_pid, signal.SIGCONT)
            except ProcessLookupError:
                break  # gone: _recv_exact sees the end
        return _recv_exact(self.z_sock, n)

    def _lead_via_zygote(self, judge: dict, judge_ctx: dict) -> int:
        """``lead_next`` with the zygote: it forks the leader; we supervise (one-fork jobs) or wait."""
        hand = _direct.Handover()
        self.meter.start()  # as before a program child's fork: the leader may become one
        self._reset_pids()
        # The last job's processes are swept, but one of them may have stopped the zygote after its program
        # ended (without root: same uid); the next job would wait for the deadline (red team, sixth session)
        os.kill(self.z_pid, signal.SIGCONT)
        socket.send_fds(self.z_sock, [struct.pack("<qq", self.judge.seq, self.judge.pid)],
                        [self.judge.sock.fileno()] + hand.for_leader())
        _direct.Handover.close(hand.leader_side())
        pid = struct.unpack("<q", self._from_zygote(8))[0]
        status: list[int] = []

        def reap() -> int:  # the leader's wait status, from the zygote, read once
            if not status:
                status.append(_status_of(self._from_zygote(SIGINFO_SIZE)))
            return status[0]
        try:
            header = _direct.read_header(hand.hdr_r)
            if header is not None:  # the leader became the program: supervise it here
                self.meter.watch(pid)
                try:
                    _direct.supervise(self, pid, header, hand, judge, judge_ctx, reap)
                finally:
                    self.meter.watch(0)  # its pid may be the next job's (the pid counter is set back)
                reap()
                self._reap_nowait()
                return LEADER_DONE  # a judge that died or was killed is already forgotten, in our own state
        finally:
            hand.close_worker_side()
        return self._after_leader(reap())

    def _enter_pid_namespace(self, info: dict) -> bool:
        """Become pid 1 of a PID namespace of our own, so that ``kill(-1)`` reaches every job process.

        The process the harness started stays outside and only waits; the worker continues in its child.
        Every job process (even one that called ``setsid``) lives in this namespace, so after each job one
        ``kill(-1, SIGKILL)`` from pid 1 removes them all; and when the worker dies, the kernel kills them.
        """
        self.host_pid = os.getpid()
        try:
            iso.unshare(iso.CLONE_NEWPID)
        except OSError as exc:
            info["pid_namespace_error"] = str(exc)
            return False
        pid = os.fork()
        if pid != 0:  # the outer process: mirror the worker's fate
            os.close(self.ctl_in)
            os.close(self.ctl_out)
            status = os.waitpid(pid, 0)[1]
            os._exit(max(0, os.waitstatus_to_exitcode(status)))
        iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)  # the harness killed the outer process: go too
        self.host_pid = int(os.readlink("/proc/self"))  # still the host's /proc: our pid out there
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # pid 1 gets only signals it handles: handle none
        if info.get("readonly_fs"):
            # hidepid=2: a job sees only its own uid's processes. The case template's /proc/<pid>/stat (its
            # reaped children's minor faults and CPU) carried a case's answer to the next case (red team).
            iso.mount("proc", "/proc", "proc", iso.MS_NOSUID | iso.MS_NODEV | iso.MS_NOEXEC, "hidepid=2")
            # Host-wide counters a job can move on purpose, which no namespace covers: /proc/stat's fork
            # count and dentry-state's negative dentries (a stat of a missing file under /usr adds one)
            # carried a case's answer to the next case and job (red team). Jobs read them as empty.
            for name in HOST_COUNTERS:
                try:
                    iso.mount("/dev/null", f"/proc/{name}", None, iso.MS_BIND)
                except OSError:  # not on this kernel
                    pass
        return True

    def job_context(self, jobdir: str, limits: dict) -> dict:
        return {"jobdir": jobdir, "job_uid": self.setup["job_uid"], "limits": limits,
                "judge_uid": self.setup.get("judge_uid", self.setup["job_uid"]),
                "user_namespace": self.info.get("user_namespace", False), "uid_drop": self.info["uid_drop"],
                "ipc_namespace": self.info.get("ipc_namespace", False), "meter": self.meter,
                "pid_namespace": self.info.get("pid_namespace", False),
                "syscall_filter": self.info.get("syscall_filter", False),
                "quiet_fork": self.quiet_fork, "sweep": self._sweep,
                "shared_runner": bool(self.setup.get("shared_runner", True))}

    def _sweep(self, last: bool = False) -> None:
        """Between children: nothing of the last one may survive, and the next starts on an empty tmpfs.

        ``last``: no child of this job follows (``_run.run_job``'s final sweep), so with a tmpfs of its own
        the job dir is not mounted anew only to be unmounted by ``_drop_jobdir``; the next job mounts a
        fresh one in ``serve_one`` before its first child, as every job does.
        """
        # Every descendant but the judge, until none is left (we are pid 1 of the namespace and a
        # subreaper: every orphan of a job, also after setsid, is one of our descendants).
        if not self.meter.sweep(self._reap_nowait):
            if self.info["pid_namespace"]:
                try:
                    os.kill(-1, signal.SIGKILL)  # from pid 1: every other process, the judge too
                except ProcessLookupError:
                    pass
                _reap(block=True)
                if self.z_pid:  # the zygote went too: the harness starts a fresh worker
                    os._exit(3)
                _run._judge_gone(self.judge, self.meter, kill=False)
            elif self.setup.get("cgroup"):
                _kill_cgroup(self.setup["cgroup"], {os.getpid(), self.worker_pid, self.judge.pid})
                self._reap_nowait()
        self._wipe_files(last)

    def _wipe_files(self, last: bool = False) -> None:
        # Anything on the scratch tmpfs outside the job dir (without root, jobs own the scratch dir too),
        # then the job dir itself: nothing written by one child is there for the next.
        mounted = self._jobdir_mounted()
        stale = [] if mounted else [os.path.join(self.jobdir, n) for n in os.listdir(self.jobdir)]
        stale += [os.path.join(self.scratch, n) for n in os.listdir(self.scratch) if n != "job"]
        for path in stale:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        if not (last and mounted):
            self._fresh_jobdir()
        if not self.as_root:  # the scratch dir: jobs own it too without root; its metadata back to the start
            _reset_metadata(self.scratch)

    def _jobdir_mounted(self) -> bool:
        return bool(self.info.get("readonly_fs")) and os.path.ismount(self.jobdir)

    def _fresh_jobdir(self) -> None:
        """The job dir made anew, before a job and after every child of it (the next stdin/stdout case, the
        next measured run): a child owns it and could leave bits in its metadata (mode, times, extended
        attributes) or in the inode numbers of the tmpfs below it (one counter per mount, which no wipe
        resets) for the next. With a mount namespace of our own a fresh tmpfs is mounted on it (the old one,
        detached, goes with everything in it; its inode numbers start over), else it is a new directory.
        Children enter it by path."""
        if self.info.get("readonly_fs"):
            try:  # the worker removes the job dir after every job (_drop_jobdir): nothing is mounted on it
                os.mkdir(self.jobdir, 0o700)
            except FileExistsError:  # between children of one job, or after a job that ended early
                _umount_all(self.jobdir)
            iso.mount("tmpfs", self.jobdir, "tmpfs", iso.MS_NOSUID | iso.MS_NODEV, self.jobdir_options)
            return
        try:
            os.rmdir(self.jobdir)
        except FileNotFoundError:
            pass
        except OSError:  # something in it could not be removed: leave it as it was
            return
        os.mkdir(self.jobdir, 0o700)
        if self.info["uid_drop"]:
            os.chown(self.jobdir, self.setup["job_uid"], self.setup["job_uid"])

    def _drop_jobdir(self) -> None:
        """At the end of a job: the job dir's tmpfs unmounted, the directory removed."""
        _umount_all(self.jobdir)
        try:
            os.rmdir(self.jobdir)  # the empty mount point, or a wiped job dir: one call
        except FileNotFoundError:
            pass
        except OSError:
            shutil.rmtree(self.jobdir, ignore_errors=True)

    def _reap_nowait(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.z_pid:  # the zygote died: no clean process is left to fork leaders from
                sys.stderr.write("sandbox zygote ended\n")
                os._exit(3)
            if pid == self.judge.pid:  # the judge died: forget it; the next job forks a new one
                self.judge.pid = 0
                self.meter.exclude.discard(pid)
                _run._judge_gone(self.judge, self.meter, kill=False)

    def serve_one(self, public: dict) -> None:
        """Run all children of a job; its judge process reads the secret part and replies to the harness."""
        judge = {"ctl_in": self.ctl_in, "ctl_out": self.ctl_out, "send": send,
                 "reply_fd": self.reply_fd, "process": self.judge}
        try:
            self._fresh_jobdir()
            ctx = self.job_context(self.jobdir, public["limits"])
            _run.run_job(public, ctx, judge)
        finally:
            self._drop_jobdir()


    # -- job leaders ---------------------------------------------------------------------------------
    def lead_next(self) -> int:
        """Fork the next job's leader, before anything of the job is read, and wait for it.

        The worker itself never reads a job: the leader reads it from the harness pipe, forks all of its
        children, hands it to the judge, sweeps, replies, and exits. So the worker's heap never holds a
        program, test code, message or output, and every program process is forked from a leader that
        only ever saw its own job: freed memory (``/proc/self/mem`` of a child) shows no other job.
        Returns the leader's exit code (``LEADER_EOF`` when the harness closed the pipe).
        """
        select.select([self.ctl_in], [], [])  # a job (or EOF) is there: wait without reading any of it
        self._reap_nowait()  # a judge that died since, orphans of the last leader
        self._reset_pids()
        judge = {"ctl_in": self.ctl_in, "ctl_out": self.ctl_out, "send": send,
                 "reply_fd": self.reply_fd, "process": self.judge}
        # The judge is forked from the clean worker (never from a leader), so it outlives jobs.
        judge_ctx = {"limits": {"memory": self.setup.get("judge_memory", 1 << 30)},
                     "judge_uid": self.setup.get("judge_uid", self.setup["job_uid"]), "uid_drop": self.info["uid_drop"],
                     "user_namespace": self.info.get("user_namespace", False), "meter": self.meter}
        _run._ensure_judge(judge_ctx, judge)
        self.judge.seq += 1  # the leader adds one more: every job's sequence number is new to the judge
        if self.z_pid:  # one-fork jobs: the clean zygote forks the leader
            return self._lead_via_zygote(judge, judge_ctx)
        self._reset_pids()
        pid = self._fork_leader()
        while True:
            try:
                status = os.waitpid(pid, 0)[1]
                break
            except InterruptedError:
                continue
        return self._after_leader(status)

    def _after_leader(self, status: int) -> int:
        """The leader ended with ``status``: pass its answer on, or handle its failure; its exit code."""
        code = os.waitstatus_to_exitcode(status)
        if code in (LEADER_DONE, LEADER_JUDGE_LOST):
            # The leader's answer (frame head and body) goes on kernel to kernel, never entering us, and
            # only now: when the harness has it, nothing of the job is left.
            size, offset = os.fstat(self.leader_out).st_size, 0
            while offset < size:
                offset += os.sendfile(self.ctl_out, self.leader_out, offset, size - offset)
        os.ftruncate(self.leader_out, 0)
        os.lseek(self.leader_out, 0, os.SEEK_SET)
        if code == LEADER_JUDGE_LOST:
            _run._judge_gone(self.judge, self.meter, kill=True)
        elif code not in (LEADER_DONE, LEADER_EOF):
            # The leader died mid-job (protocol state unknown): like the worker's death before leaders,
            # the harness restarts us (and pool's killer-job rule decides about the job).
            sys.stderr.write(f"job leader ended with status {code}\n")
            sys.stderr.flush()
            os._exit(3)
        self._reap_nowait()
        return code

    def _fork_leader(self) -> int:
        """Fork a job leader (in the worker, or with one-fork jobs in the zygote); its pid. Without the
        interpreter's after-fork hooks (_isolation.fork_quiet): the leader is our own code in a single-threaded
        process and uses no random numbers (~110 copy-on-write faults less per job)."""
        exit_now = os._exit
        pid = iso.fork_quiet() if self.quiet_leader else os.fork()
        if pid == 0:
            code = 3
            try:
                code = self._lead()
            except BaseException:  # noqa: BLE001 - our own failure, protocol state unknown
                sys.stderr.write(traceback.format_exc()[-2000:])
                sys.stderr.flush()
            finally:
                exit_now(code)
        return pid

    def _reset_pids(self) -> None:
        """Every job's processes get the same pids whatever the jobs before it did: the pid counter of our
        namespace (pid numbers are visible to jobs) carries nothing from one job to the next."""
        if self.last_pid_fd >= 0:
            try:
                os.pwrite(self.last_pid_fd, b"1", 0)
            except OSError:
                pass

    def _lead(self) -> int:
        """In the job leader: one job, from reading it to its reply; the exit code for ``lead_next``."""
        iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
        judge_pid = self.judge.pid
        self.ctl_out = self.leader_out  # every answer of the job goes there; the worker sends it on
        body = recv(self.ctl_in)
        if body is None:
            return LEADER_EOF
        public = pickle.loads(body)
        del body
        hand, self.hand = self.hand, None
        if hand is not None:
            if _direct.eligible(public):
                _direct.become_program(self, public, hand)  # never returns
            _direct.Handover.close(hand.leader_side() + hand.worker_side())  # no header: the worker waits for our exit
        # A leader that does not become its program forks the job's processes: they are its descendants,
        # and orphans among them come to it. (Set only here: a leader that becomes its program has no child
        # before program code, and one that reads the job has none either; ~30 us of a one-fork job.)
        iso.prctl(iso.PR_SET_CHILD_SUBREAPER, 1)
        self.meter.self_pid = int(os.readlink("/proc/self"))
        if self.judge_fd >= 0:  # forked by the zygote: the judge it was told of, by socket and pidfd
            jp = self.judge
            jp.sock, self.judge_fd = socket.socket(fileno=self.judge_fd), -1
            try:
                jp.pidfd = os.pidfd_open(jp.pid)
            except OSError:  # it died meanwhile: run_job forks a new one
                jp.pid, jp.pidfd = 0, -1
                self.meter.exclude = set()
        if public.get("kind") == "measure":
            try:
                reply = _measure.serve(self, public, recv)
            except Exception:  # noqa: BLE001 - our own failure: report it, the harness raises SandboxError
                reply = {"error": traceback.format_exc()[-2000:]}
            send(self.ctl_out, json.dumps(reply).encode())
        else:
            self.serve_one(public)  # the job's judge (or, if it failed, run_job) has replied
        if self.judge.pid != judge_pid:  # the worker's judge died or was killed; one of ours, if any, goes
            if self.judge.pid:
                _run._judge_gone(self.judge, self.meter, kill=True)
            return LEADER_JUDGE_LOST
        return LEADER_DONE


def _open_job_cgroups(paths: dict) -> dict:
    """Descriptors on the job's cgroup files (see ``_meter.Meter``); {} when there are none."""
    if not paths.get("cpuacct") or not paths.get("memory"):
        return {}
    cpu, mem = paths["cpuacct"], paths["memory"]
    try:
        return {"cpu": os.open(os.path.join(cpu, "cpuacct.usage"), os.O_RDONLY),
                "procs": os.open(os.path.join(cpu, "cgroup.procs"), os.O_RDONLY),
                "usage": os.open(os.path.join(mem, "memory.usage_in_bytes"), os.O_RDONLY),
                "max_usage": os.open(os.path.join(mem, "memory.max_usage_in_bytes"), os.O_RDWR),
                "limit": os.open(os.path.join(mem, "memory.limit_in_bytes"), os.O_WRONLY),
                "oom": os.open(os.path.join(mem, "memory.oom_control"), os.O_RDONLY),
                "join": [os.open(os.path.join(cpu, "cgroup.procs"), os.O_WRONLY),
                         os.open(os.path.join(mem, "cgroup.procs"), os.O_WRONLY)]}
    except OSError:
        return {}


_umount2 = iso._libc.umount2
_umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
MNT_DETACH = 2


def _umount_all(path: str) -> None:
    """Detach every mount on ``path`` (a job dir's tmpfs; not one if none is there)."""
    for _ in range(8):
        if _umount2(path.encode(), MNT_DETACH) != 0:
            return


def _reset_metadata(path: str) -> None:
    """Mode, times and extended attributes (user ones, ACLs) of a directory a job could change."""
    try:
        for name in os.listxattr(path):
            try:
                os.removexattr(path, name)
            except OSError:
                pass
    except OSError:
        pass
    try:
        os.chmod(path, 0o755)
        os.utime(path, (0, 0))
    except OSError:
        pass


def _reap(block: bool) -> None:
    while True:
        try:
            if os.waitpid(-1, 0 if block else os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _kill_cgroup(path: str, keep: set[int]) -> None:
    """Without a PID namespace: SIGKILL every process of the worker's pids cgroup except those in ``keep``
    (the worker, the job leader, the judge)."""
    for _ in range(100):
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = [int(p) for p in f.read().split() if int(p) not in keep]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.001)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


SIGINFO_SIZE, P_ALL, P_PID, WEXITED, WNOHANG, CLD_EXITED = 128, 0, 1, 4, 1, 1
ZYGOTE_NAME = b"sbx-zygote"
_waitid = iso._libc.waitid
_waitid.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int]


def _status_of(info: bytes) -> int:
    """A wait status from a ``siginfo_t`` of ``waitid`` (si_code at byte 8, si_status at 24)."""
    code, value = struct.unpack_from("<i", info, 8)[0], struct.unpack_from("<i", info, 24)[0]
    return (value & 0xFF) << 8 if code == CLD_EXITED else value & 0x7F


def _recv_exact(sock, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            sys.stderr.write("sandbox zygote ended\n")
            os._exit(3)
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# Exit codes of a job leader (see ``Worker.lead``).
LEADER_DONE, LEADER_EOF, LEADER_JUDGE_LOST = 0, 4, 5


def main() -> None:
    ctl_in, ctl_out = int(sys.argv[1]), int(sys.argv[2])
    setup = pickle.loads(recv(ctl_in))
    worker = Worker(setup, ctl_in, ctl_out)
    send(ctl_out, json.dumps({"ready": True, "isolation": worker.info, "pid": worker.host_pid}).encode())
    while True:
        code = worker.lead_next()
        if code == LEADER_EOF:
            return


if __name__ == "__main__":
    main()
