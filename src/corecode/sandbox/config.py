"""Options of the sandbox: one frozen dataclass, validated on creation."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from corecode.errors import ConfigError

# Modules imported once in every worker, so that jobs importing them pay nothing. Only the standard
# library: a job must start from the same clean state as a fresh interpreter would give it.
DEFAULT_PRELOAD = (
    "math", "cmath", "collections", "itertools", "functools", "heapq", "bisect", "re", "string", "typing",
    "random", "operator", "copy", "fractions", "decimal", "statistics", "datetime", "array", "hashlib",
    "json", "io", "dataclasses", "enum", "numbers", "textwrap", "unicodedata", "tempfile",
)


@dataclass(frozen=True)
class SandboxConfig:
    """How many workers, which limits, and how much isolation."""

    workers: int | None = field(default=None, metadata={"help": "worker processes; default os.cpu_count()"})
    time_limit_s: float | None = field(
        default=None, metadata={"help": "CPU seconds per test for every problem; overrides all rules below"})
    default_time_limit_s: float = field(
        default=4.0, metadata={"help": "CPU seconds per test when the problem states none and has no reference"})
    time_floor_s: float = field(default=1.0, metadata={"help": "lower bound of a reference-relative limit"})
    reference_factor: float = field(
        default=4.0, metadata={"help": "limit = max(floor, factor x reference CPU time), per test"})
    reference_timing: bool = field(
        default=True, metadata={"help": "measure each problem's reference once (cached) to set its limits"})
    wall_time_factor: float = field(default=2.0, metadata={"help": "wall limit = factor x CPU limit + extra"})
    wall_time_extra_s: float = field(default=1.0, metadata={"help": "added to every wall limit"})
    memory_limit_mb: int = field(
        default=1024, metadata={"help": "address space a job may add above the worker's own size (MiB)"})
    output_limit_mb: int = field(default=16, metadata={"help": "stdout, and any file written, at most (MiB)"})
    max_processes: int = field(default=32, metadata={"help": "processes and threads a job may have at once"})
    max_open_files: int = field(default=64, metadata={"help": "open file descriptors per process"})
    capture_bytes: int = field(default=2048, metadata={"help": "stdout/stderr kept per test in results"})
    isolate: bool = field(
        default=True, metadata={"help": "namespaces: read-only filesystem, no network, own PID namespace"})
    job_uid: int = field(default=65534, metadata={"help": "uid jobs run as when the harness is root"})
    judge_uid: int = field(
        default=65533, metadata={"help": "uid of each job's judge process when the harness is root (not job_uid)"})
    scratch_mb: int = field(default=256, metadata={"help": "size of each worker's private tmpfs (MiB)"})
    preload: tuple[str, ...] = field(default=DEFAULT_PRELOAD, metadata={"help": "modules imported by workers"})
    python: str = field(default=sys.executable, metadata={"help": "interpreter the workers run"})
    pin_workers: bool = field(
        default=True, metadata={"help": "worker i and every process of its jobs on the i-th CPU this process may "
                                         "use: the judge, the supervisor and the program wake each other on one "
                                         "CPU (a job's helpers share it)"})
    one_fork_jobs: bool = field(
        default=True, metadata={"help": "a job of function tests only runs in its job leader (one fork per job), "
                                         "forked by a clean zygote; the worker supervises and sweeps it. False: "
                                         "the leader forks a program child (two forks)"})
    stdio_shared_runner: bool = field(
        default=True, metadata={"help": "the stdin/stdout cases of one program (5 or more) run one after another "
                                         "in one process (a fresh __main__ and fresh streams per case; a new process "
                                         "after a case that crashed, hung or left a helper), and one case is run "
                                         "again alone to charge every case what a fresh process costs "
                                         "(docs/sandbox.md). False: a fresh process per case"})
    dedupe_jobs: bool = field(
        default=True, metadata={"help": "run_batch / arun_batch run the same program text against the same problem "
                                         "once and give every copy that result (a verdict is a function of program, "
                                         "tests and limits; see Sandbox.run_batch). False: every copy runs"})
    job_timeout_margin_s: float = field(
        default=30.0, metadata={"help": "how long past a job's own deadline the harness waits for a worker"})

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"SandboxConfig.workers must be >= 1 (or None for os.cpu_count()), got {self.workers}")
        for name in ("default_time_limit_s", "time_floor_s", "reference_factor", "wall_time_factor"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"SandboxConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.time_limit_s is not None and self.time_limit_s <= 0:
            raise ConfigError(f"SandboxConfig.time_limit_s must be > 0 or None, got {self.time_limit_s}")
        if self.memory_limit_mb < 16:
            raise ConfigError(f"SandboxConfig.memory_limit_mb must be >= 16, got {self.memory_limit_mb}")
        if self.output_limit_mb < 1 or self.max_processes < 1 or self.max_open_files < 16:
            raise ConfigError("SandboxConfig: output_limit_mb >= 1, max_processes >= 1, max_open_files >= 16")
        if not os.path.exists(self.python):
            raise ConfigError(f"SandboxConfig.python: interpreter {self.python!r} does not exist")

    @property
    def n_workers(self) -> int:
        return self.workers or os.cpu_count() or 1
