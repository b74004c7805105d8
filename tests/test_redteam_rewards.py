"""Red team of CURE, CodeRL+ and the stdin/stdout case template: model output (a program, a generated unit
test, a prediction) that earned reward it should not have, or crashed / wedged the training, each fixed and
pinned here. Every attack below got through before its fix:

* a traced program forged its own trace frame (it reaches the emitter through its caller's frame) with
  marshal back-references: ten levels of 38 references each (1.9 KiB, 38**10 leaves) hung
  ``sample_from_trace`` (and any ``repr`` / ``json.dumps`` of the trace) in the trainer forever; a
  self-containing list raised ``ValueError`` out of the CodeRL+ reward;
* a failing program with ``x = 10 ** 4500`` (its marshal form fits the recorder's 2 KiB, its decimal form
  exceeds Python's 4,300 digits) made ``json.dumps`` of its alignment sample raise ``ValueError``: CodeRL+
  stopped;
* a variable name with a lone surrogate (``globals()["z\\udcffz"] = 3``, or a forged frame's "name")
  reached the alignment prompt, which no tokenizer can encode;
* the alignment reward matched a recorded int with any float within 1e-6 (``12345679.0`` for 12345678: an
  off-by-one scored as right by writing ``.0``), against "ints exactly" of docs/baselines.md;
* a CURE test with a list in its call (``total([1, 2])``, most MBPP / HumanEval tests) made the generated
  tests unhashable: ``CureReward`` raised ``TypeError`` and training stopped; and tests that differ only in
  1 / 1.0 / True were merged into one column of B;
* a CURE test ``f(0xfff...)`` (hex literals have no digit limit) parsed to an int that cannot be repr'd: the
  log record built for every test row raised ``ValueError`` and stopped training;
* the unit-test parser's regular expressions backtracked quadratically: one 30,000-character answer
  (``**Test Input:**```aaaa...`` with no closing fence, or a marker followed by spaces) took 8-12 s of the
  trainer's time;
* the page cache: a right program read chosen pages of a big library, a later job (any worker) asked
  "cached?" page by page with ``preadv2(RWF_NOWAIT)`` and got its 12-bit answer back, 12 of 12 bits (that
  probe is refused now; counting major page faults does the same and stays open: xfail below);
* kernel keyrings: every case and every job runs as the one job uid, whose user keyring the kernel keeps
  across cases, jobs, workers and harnesses. A case stored its answer with ``add_key`` and the next cases
  of the same program printed it (passing cases it fails alone); a right program stored its outputs and a
  wrong program of a LATER job printed them and passed (a copycat across samples).

Open (strict xfail, with the fix it needs in its reason): the page cache through fault counters from job to
job. Closed since: in-flight Unix sockets (kept alive by an SCM_RIGHTS cycle until the kernel's GC runs)
whose abstract names reached the next case or job (program children refuse sendmsg; its tests are in
tests/test_sandbox_redteam_fdpassing.py with the rest of that red team); the pid counter, the System V id sequence and the tmpfs inode numbers (the case template
sets the pid counter before each case and gives each case its own IPC namespace; the job dir is a fresh
tmpfs for every child), the template's /proc/<pid>/stat (hidepid=2), the job cgroup's CPU counter (cgroup
directories 0700), the host's fork count in /proc/stat (host counters read as empty) and the host's mount
ids (as root no job can make a user namespace to mount in), the network namespace's SNMP counters (no
IPv4 / IPv6 sockets in jobs) and the dentry cache's counters (read as empty).
"""

from __future__ import annotations

import os
import textwrap
import time

import pytest

from corecode.parsing.unit_tests import parse_unit_test
from corecode.rewards.alignment import AlignmentSample, alignment_reward, sample_from_trace, values_match
from corecode.sandbox import Sandbox, SandboxConfig
from corecode.types import AssertTest, CallTest, Problem, Status, StdioTest

I, O = "**Test Input:**", "**Test Output:**"


@pytest.fixture(scope="module")
def sb():
    with Sandbox(SandboxConfig(workers=1, time_limit_s=1.0, reference_timing=False)) as sandbox:
        yield sandbox


# ------------------------------------------------------------------------------------------- CodeRL+: traces
FORGE = """
import sys, marshal
_emit = sys._getframe(1).f_locals["emit"]   # run_stdio_program's emitter, nonce included
{build}
_emit(("trace", "var", "boom", marshal.dumps(_v)))
x = 3
"""
LAUGHS = "_v = [7]\nfor _ in range(10):\n    _v = [_v] * 38"  # 38**10 leaves in 1.9 KiB of marshal refs
CYCLE = "_v = [1]\n_v.append(_v)"


@pytest.mark.parametrize("build", [LAUGHS, CYCLE], ids=["shared-refs", "cycle"])
def test_a_forged_trace_frame_cannot_hang_or_crash_the_alignment_sampler(sb, build):
    program = FORGE.format(build=build)
    trace = sb.trace(program)
    names = [name for name, _ in trace.variables]  # (never repr the values: a shared tree would expand)
    assert names == ["x"], names
    start = time.monotonic()
    sample = sample_from_trace("i", "p", program, "", None, trace, 2048)
    assert time.monotonic() - start < 1.0
    assert sample is not None and sample.variables == (("x", 3),)


def test_a_value_nested_too_deeply_for_a_sample_is_left_out_not_an_error():
    from corecode.sandbox.trace import ProgramTrace

    deep: list = []
    for _ in range(40):
        deep = [deep]
    trace = ProgramTrace(error=None, stdout="1\n", variables=(("d", deep), ("k", 2)))
    assert sample_from_trace("i", "p", "prog", "", None, trace, 2048).variables == (("k", 2),)
    call = ProgramTrace(error=None, stdout="", returned=True, value=deep)
    assert sample_from_trace("i", "p", "prog", "", "f()", call, 2048) is None


def test_an_int_too_long_for_json_cannot_stop_the_training(sb):
    """10**4500 fits the recorder's 2 KiB (marshal) but has more digits than Python writes as text: the
    sample's json.dumps (the alignment row, the samples log) raised ValueError and stopped CodeRL+."""
    import json

    trace = sb.trace("x = 10 ** 4500\ny = [1, 10 ** 4500]\nz = 5\nprint('hi')\n")
    assert [name for name, _ in trace.variables] == ["x", "y", "z"]
    sample = sample_from_trace("i", "p", "prog", "", None, trace, 2048)
    assert sample.variables == (("z", 5),) and sample.output == "hi\n"
    json.dumps(sample.to_dict())
    call = sb.trace("def f():\n    return 10 ** 4500\n", call="f()")
    assert call.returned and sample_from_trace("i", "p", "prog", "", "f()", call, 2048) is None


def test_recorded_variable_names_are_identifiers_a_prompt_can_show(sb):
    """A module namespace takes any string as a name, and a forged frame any "name": a lone surrogate in the
    alignment prompt's variable list cannot be encoded (no tokenizer takes it: CodeRL+ stopped)."""
    from corecode.rewards.alignment import alignment_inputs

    program = ('import sys, marshal\n_emit = sys._getframe(1).f_locals["emit"]\n'
               '_emit(("trace", "var", "bad\\ud800\\n`injected`", marshal.dumps(1)))\n'
               '_emit(("trace", "var", "y" * 3000, marshal.dumps(2)))\n'
               'globals()["z\\udcffz"] = 3\nok = 4\nnaïve = 5\n')
    trace = sb.trace(program, max_variables=10)
    assert trace.variables == (("ok", 4), ("naïve", 5))
    names = alignment_inputs(sample_from_trace("i", "p", program, "", None, trace, 2048))["variable_names"]
    names.encode("utf-8")


# ------------------------------------------------------------------------------------------- CodeRL+: reward
def test_an_int_is_matched_only_by_its_own_value_not_by_a_float_near_it():
    assert values_match(3.0, 3) and values_match(3, 3) and values_match(1e20, 10**20)
    assert not values_match(12345679.0, 12345678)  # off by one, within rel 1e-6
    assert not values_match(1e20, 10**20 + 1)
    assert values_match(2.5000001, 2.5) and values_match(3, 3.0000000001)  # floats stay tolerant
    value = AlignmentSample(id="a", problem_id="p", program="...", call="f()", output=12345678,
                            variables=(("n", 10_000_001),))
    honest = alignment_reward('{"final_output": 12345678, "variables": {"n": 10000001}}', value)
    near = alignment_reward('{"final_output": 12345679.0, "variables": {"n": 10000000.0}}', value)
    assert honest == pytest.approx(1.0) and near == pytest.approx(0.1)
    stdout = AlignmentSample(id="b", problem_id="p", program="...", output="12345678\n")
    assert alignment_reward('{"final_output": 12345678.0, "variables": {}}', stdout) == pytest.approx(1.0)
    assert alignment_reward('{"final_output": 12345679.0, "variables": {}}', stdout) == pytest.approx(0.1)
    assert alignment_reward('{"final_output": 2.5000001, "variables": {}}',
                            AlignmentSample(id="c", problem_id="p", program="...", output="2.5\n")) == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------- CURE
def _reply(test_in: str, test_out: str) -> str:
    return f"{I}\n```python\n{test_in}\n```\n{O}\n```python\n{test_out}\n```"


def test_cure_reward_takes_tests_with_lists_and_keeps_1_and_true_apart(sb, tmp_path):
    from corecode.rewards import ExecutionLog, GroupLayout, sandbox_executor
    from corecode.training.baselines.cure import CureReward

    problem = Problem(id="s", source="t", statement="Sum a list.", entry_point="total",
                      tests=(AssertTest("assert total([1, 2]) == 3"), AssertTest("assert total([]) == 0")))
    programs = ["```python\ndef total(xs):\n    return sum(xs)\n```",
                "```python\ndef total(xs):\n    return 1 if xs == [1] and type(xs[0]) is int else sum(xs) + 1\n```",
                "```python\ndef total(xs):\n    return 0\n```"]
    # a list argument (unhashable), and two tests that == would merge: [1] -> 1 and [True] -> 1
    tests = [_reply("total([1, 2, 3])", "6"), _reply("total([1])", "1"), _reply("total([True])", "1")]
    prompts = [[{"role": "user", "content": "code"}]] * 3 + [[{"role": "user", "content": "test"}]] * 3
    log = ExecutionLog(tmp_path / "log.jsonl")
    reward = CureReward({"s": problem}, sandbox_executor(sb, measure=False), GroupLayout(num_generations=3), log=log)
    rewards = reward(prompts, programs + tests, ["s"] * 6, ["code"] * 3 + ["test"] * 3)
    assert len(rewards) == 6
    import json

    task = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()][-1]
    assert task["code_raw"] == [1.0, 0.0, 0.5]
    # program 1 returns 1 for [1] (right) and 2 for [True]: two different columns
    assert task["matrix"] == [[True, True, True], [False, True, False], [False, False, False]]


def test_a_generated_test_with_an_unprintable_int_is_malformed_not_a_crash():
    """``f(0xfff...)``: hex literals have no digit limit, so the parsed int (6,000 decimal digits) could not be
    repr'd: ``GeneratedTest.to_dict`` (CureReward's log record of every test row) raised ValueError."""
    for text in (f"{I} f(0x{'f' * 5000}) {O} 1", f"{I} f(1) {O} [0x{'f' * 5000}]"):
        parsed = parse_unit_test(text, function=True, entry_point="f")
        assert not parsed.valid and parsed.to_dict()["test"] is None
    big = parse_unit_test(f"{I} f(0x{'f' * 1000}) {O} 1", function=True, entry_point="f")  # 1,204 digits
    assert big.valid and big.to_dict()["test"]["args"].startswith("(")


@pytest.mark.parametrize("text", [
    I + "```" + "a" * 30_000 + O + " 1",          # a fence's tag that never closes
    I + " 1 " + O + "```" + "a" * 30_000,
    O + I + " " * 30_000,                          # whitespace, and no output marker after the input
    O + (I + " ") * 2_000,                         # many inputs, none followed by an output
], ids=["input-tag", "output-tag", "spaces", "markers"])
def test_the_unit_test_parser_takes_linear_time_on_hostile_answers(text):
    start = time.monotonic()
    for function in (False, True):
        assert not parse_unit_test(text, function=function, entry_point="f").valid
    assert time.monotonic() - start < 0.5


def test_the_linear_parser_reads_what_the_old_one_read():
    cases = {
        f"{I}\n```\n1 2\n```\n{O}\n```plaintext\n3\n```": StdioTest("1 2\n", "3\n"),
        f"{I}   1\\n2   {O}  3 **Explanation:** one plus two": StdioTest("1\n2\n", "3\n"),
        f"{I} 1 {I} 2 {O} 3 {I} 4": StdioTest("1 **Test Input:** 2\n", "3\n"),
        f"{I} ```x``` {O} ``` y ``` {I} ```z``` {O} 5": StdioTest("\n", "\n"),  # x, y, z are fence tags
    }
    for text, expected in cases.items():
        assert parse_unit_test(text, function=False).test == expected, text
    assert parse_unit_test(f"{I} f([1], (2,)) {O} [3]", function=True, entry_point="f").test == \
        CallTest("f", ([1], (2,)), [3])


# ------------------------------------------------------------------------------------------- keyrings
KEYS = """
import ctypes, sys
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_ADD_KEY, _REQUEST_KEY, _KEYCTL = {{"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}}[__import__("platform").machine()]
def _load(name):
    kid = _libc.syscall(_REQUEST_KEY, b"user", name.encode(), None, ctypes.c_long(-4))  # the user keyring
    if kid <= 0:
        return None
    buf = ctypes.create_string_buffer(256)
    n = _libc.syscall(_KEYCTL, 11, ctypes.c_long(kid), buf, 256)  # KEYCTL_READ
    return buf.raw[:n].decode() if n > 0 else None
def _store(name, value):
    data = value.encode()
    _libc.syscall(_ADD_KEY, b"user", name.encode(), data, len(data), ctypes.c_long(-4))
_tag = "{tag}"
"""


def test_no_case_or_job_can_leave_an_answer_in_a_kernel_keyring(sb):
    tag = f"redteam-{time.time_ns()}"
    keys = KEYS.format(tag=tag)
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(4))
    carry = keys + textwrap.dedent("""
        carried = _load(_tag + "-case")
        if carried is None:
            a, b = map(int, input().split())
            _store(_tag + "-case", str(a + b))
            print("first")
        else:
            print(carried)
        """)
    assert [t.status for t in sb.execute(carry, same).tests] == [Status.WRONG_ANSWER] * 4
    # across jobs: a right program leaves its outputs, a wrong one of a later job prints them
    problem = Problem(id="add", source="t", statement="add", tests=(StdioTest("2 3\n", "5\n"), StdioTest("4 4\n", "8\n")))
    right = keys + "i = input()\na, b = map(int, i.split())\nprint(a + b)\n_store(_tag + i, str(a + b))\n"
    copycat = keys + "i = input()\nprint(_load(_tag + i) or 0)\n"
    assert sb.run(right, problem).passed
    assert not sb.run(copycat, problem).passed
    assert sb.isolation.get("syscall_filter") is True


PAGE_CACHE = """
import os, sys
mode, base, value, path = sys.stdin.read().split()
fd = os.open(path, os.O_RDONLY)
base, value, spacing = int(base), int(value), 256 * 1024
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: one page per bit
if mode == "write":
    os.posix_fadvise(fd, base, 12 * spacing, os.POSIX_FADV_DONTNEED)
    for bit in range(12):
        if value >> bit & 1:
            os.pread(fd, 1, base + bit * spacing)
    print("wrote")
else:
    got = 0
    for bit in range(12):
        try:
            os.preadv(fd, [bytearray(1)], base + bit * spacing, os.RWF_NOWAIT)  # EAGAIN: not cached
            got |= 1 << bit
        except BlockingIOError:
            pass
    print(got)
"""


def _unmapped_library() -> str:
    """The biggest library under the interpreter's prefix that no process has mapped (its pages can be
    evicted, so a run starts from a known page-cache state)."""
    import glob
    import sys

    mapped = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps) as f:
                mapped.update(line.split(None, 5)[-1].strip() for line in f if "/" in line)
        except OSError:
            pass
    libraries = [p for p in glob.glob(sys.prefix + "/lib/**/*.so*", recursive=True)
                 if os.path.realpath(p) not in mapped and p not in mapped and " " not in p]
    libraries = [p for p in libraries if os.path.getsize(p) >= 16 * 256 * 1024]
    if not libraries:
        pytest.skip("no unmapped library big enough to hold 12 bits")
    return max(libraries, key=os.path.getsize)


def test_no_job_can_read_what_another_left_in_the_page_cache(sb):
    """A right program reads chosen pages of a big library (one page per bit of its answer); a later job
    asks, page by page, "cached?" with RWF_NOWAIT (EAGAIN if not) and reads the answer back: 12 of 12 bits
    right, on any worker, before the filter refused RWF_NOWAIT (and io_uring, cachestat)."""
    import random

    path = _unmapped_library()
    base = random.randrange(0, (os.path.getsize(path) - 13 * 256 * 1024) // 4096) * 4096
    value = random.randrange(1, 1 << 12)
    sb.execute(PAGE_CACHE, [StdioTest(f"write {base} {value} {path}\n", "")])
    reader = sb.execute(PAGE_CACHE, [StdioTest(f"read {base} 0 {path}\n", "")]).tests[0]
    assert reader.status is Status.RUNTIME_ERROR and "PermissionError" in (reader.exception or ""), reader


# ------------------------------------------------------------------------------------------- pid numbers
PID_CHANNEL = """
import os
me, parent = os.getpid(), os.getppid()
if me == parent + 1:  # the template's first case
    a, b = map(int, input().split())
    answer = a + b
    print("first")
else:
    answer = (me - 1) % 64  # what the last case left in the pid counter
    print(answer)
while True:  # leave the answer for the next case: the last pid used is the answer (mod 64)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    if pid % 64 == answer:
        break
"""


def test_the_pid_counter_carries_no_answer_from_case_to_case(sb):
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(5))
    result = sb.execute(PID_CHANNEL, same)
    assert [t.status for t in result.tests] == [Status.WRONG_ANSWER] * 5



# ------------------------------------------------------------------------------------------- the template's /proc
TEMPLATE_STAT_CHANNEL = """
import mmap, os, resource
def cminflt():  # minor faults of the case template's reaped children: every case before this one
    return int(open(f"/proc/{os.getppid()}/stat").read().rsplit(")", 1)[1].split()[8])
STEP = 64
start = cminflt()
print((start // STEP) % 16)  # what the last case left
a, b = map(int, input().split())
mine = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
need = ((start + mine) // (16 * STEP) + 1) * 16 * STEP + (a + b) * STEP + STEP // 2 - start - mine - 8
pages = mmap.mmap(-1, max(1, need) * 4096)
for i in range(max(0, need)):  # one minor fault per fresh page: the template's count lands on the answer
    pages[i * 4096] = 1
"""


def test_the_templates_proc_stat_carries_no_answer_from_case_to_case(sb):
    """/proc/<template>/stat is readable by a case (its parent): the reaped children's minor-fault count is
    an exact counter a case sets by touching pages; cases 2-5 passed. The jobs' /proc is now mounted with
    hidepid=2: a job sees only its own uid's processes."""
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(5))
    result = sb.execute(TEMPLATE_STAT_CHANNEL, same)
    assert [t.passed for t in result.tests] == [False] * 5
    seen = sb.execute("import os\nprint(sorted(p for p in os.listdir('/proc') if p.isdigit()) == "
                      "sorted({str(os.getpid()), *(p for p in os.listdir('/proc/self/task'))}))\n",
                      [StdioTest("", "True\n")])
    assert seen.passed, "a job sees only its own processes in /proc"

# ------------------------------------------------------------------------------------------- cgroup counters
CPU_CHANNEL = """
def usage():  # the job cgroup's CPU counter, in ns: readable by every job process
    for line in open("/proc/self/cgroup"):
        _, controllers, path = line.rstrip("\\n").split(":", 2)
        if "cpuacct" in controllers.split(","):
            for root in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpuacct,cpu"):
                try:
                    return int(open(root + path + "/cpuacct.usage").read())
                except OSError:
                    pass
STEP = 10_000_000  # 10 ms of CPU per value, 16 values
print((usage() // STEP) % 16)  # what the last case left (the first case prints whatever it finds)
a, b = map(int, input().split())
while (usage() // STEP) % 16 != a + b:  # burn CPU until the counter encodes this case's answer
    pass
"""


def test_the_cgroup_cpu_counter_carries_no_answer_from_case_to_case(sb):
    """The job cgroup's cpuacct.usage (ns, cumulative per worker) was readable by jobs: a case burned CPU
    until the counter, in 10 ms steps mod 16, encoded its answer and the next case read it at its start
    (cases 2-6 passed; the next job too). The harness now makes the cgroup directories mode 0700."""
    if not sb.isolation.get("job_cgroup"):
        pytest.skip("no job cgroup")
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(6))
    result = sb.execute(CPU_CHANNEL, same)
    assert [t.passed for t in result.tests] == [False] * 6




# ------------------------------------------------------------------------------------------- kernel caches
DENTRY_CHANNEL = """
import os
def negative():  # negative dentries in the host's dentry cache: host-wide, and kept after the lookup
    return int(open("/proc/sys/fs/dentry-state").read().split()[4])
print((negative() % 256) // 16)  # what the last case (or job) left
a, b = map(int, input().split())
tag = os.urandom(8).hex()
for i in range(4096):  # each failed lookup of a new name under /usr adds one
    if (negative() % 256) // 16 == a + b and negative() % 16 < 8:
        break
    try:
        os.stat(f"/usr/redteam-{tag}-{i}")
    except OSError:
        pass
"""


def test_kernel_cache_counters_carry_no_answer_from_case_to_case(sb):
    """/proc/sys/fs/dentry-state counts the host's negative dentries, which a failed lookup adds and keeps: a
    case looked up missing files until the count encoded its answer, the next case (and job) read it:
    cases 2-5 passed. It reads as empty in jobs now, with meminfo, zoneinfo, buddyinfo, inode-nr,
    inode-state, file-nr and pressure/*. (Timing a lookup still tells a cached entry, as for the page cache.)"""
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(5))
    for _ in range(2):
        result = sb.execute(DENTRY_CHANNEL, same)
        assert [t.passed for t in result.tests] == [False] * 5

# ------------------------------------------------------------------------------------------- mount ids
MOUNT_ID_CHANNEL = """
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def mnt_id(path):  # statx(path, STATX_MNT_ID_UNIQUE): every mount is numbered by one host-wide counter
    buf = ctypes.create_string_buffer(256)
    libc.syscall({statx}, -100, path, 0, 0x4000, buf)
    return struct.unpack_from("<Q", buf.raw, 0x90)[0]
print((mnt_id(b".") % 256) // 16)  # what the last case left: its last mount, then the job dir's fresh tmpfs
a, b = map(int, input().split())
if os.fork() == 0:  # a user and mount namespace of its own, where a job may mount a tmpfs
    if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
        for _ in range(1024):
            libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
            if mnt_id(b"/tmp") % 256 == 16 * (a + b):
                break
    os._exit(0)
os.wait()
"""


def test_mount_ids_carry_no_answer_from_case_to_case(sb):
    """A job (uid 65534, as root) could make a user and mount namespace and mount tmpfs there: each mount takes
    the next number of a host-wide counter, which the next case read off its own job dir (statx
    STATX_MNT_ID_UNIQUE): cases 2-5 passed, and the next job's too. As root the syscall filter now refuses
    new user namespaces (jobs never need one there)."""
    import platform

    if os.getuid() != 0:
        pytest.skip("without root every job child has a user namespace of the sandbox's making")
    statx = {"x86_64": 332, "aarch64": 291}.get(platform.machine())
    if statx is None:
        pytest.skip("statx number unknown here")
    # distinct answers (1, 3, 5, 7, 9): the counter is host-wide, so every mount on the machine (the sandbox's
    # own fresh job dirs, other jobs) moves it, and with the channel closed a case still reads whatever bucket
    # it is in. With one answer for all cases, a bucket that happens to equal it passed several cases in a
    # row (a fresh clone's CI run: cases 4 and 5). A counter the program cannot move matches at most one of
    # distinct answers; the attack, when it works, passes cases 2-5
    cases = tuple(StdioTest(f"{i} {i + 1}\n", f"{2 * i + 1}\n") for i in range(5))
    for _ in range(2):
        result = sb.execute(MOUNT_ID_CHANNEL.format(statx=statx), cases)
        assert sum(t.passed for t in result.tests) <= 1, [t.passed for t in result.tests]


# ------------------------------------------------------------------------------------------- network counters
SNMP_CHANNEL = """
import socket
def noroutes():  # Ip OutNoRoutes of the worker's network namespace, which outlives every case and job
    lines = [line.split() for line in open("/proc/net/snmp") if line.startswith("Ip:")]
    return int(lines[1][lines[0].index("OutNoRoutes")])
print(noroutes() % 16)  # what the last case left
a, b = map(int, input().split())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(64):  # each sendto finds no route (no interface is up) and counts one
    if noroutes() % 16 == a + b:
        break
    try:
        s.sendto(b"x", ("10.1.2.3", 9))
    except OSError:
        pass
"""


def test_network_counters_carry_no_answer_from_case_to_case(sb):
    """The worker's network namespace has no interface up, but its SNMP counters (/proc/net/snmp) count what
    jobs try: a case sent datagrams that found no route until Ip OutNoRoutes encoded its answer, and the next
    case (and job) read it: cases 2-5 passed. IPv4 / IPv6 sockets now fail with EPERM in jobs."""
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(5))
    for _ in range(2):
        result = sb.execute(SNMP_CHANNEL, same)
        assert [t.passed for t in result.tests] == [False] * 5

# ------------------------------------------------------------------------------------------- open: page cache
PAGE_FAULTS = PAGE_CACHE.replace('''    got = 0
    for bit in range(12):
        try:
            os.preadv(fd, [bytearray(1)], base + bit * spacing, os.RWF_NOWAIT)  # EAGAIN: not cached
            got |= 1 << bit
        except BlockingIOError:
            pass
    print(got)''', '''    import mmap, resource
    pages = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    pages.madvise(mmap.MADV_RANDOM)  # no fault-around readahead
    got = 0
    for bit in range(12):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        pages[base + bit * spacing]
        if resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before:  # no major fault: it was cached
            got |= 1 << bit
    print(got)''')


@pytest.mark.xfail(strict=True, reason=(
    "open: the page cache is the machine's, so a job can still read what an earlier job (any worker, any "
    "harness) left in it: the writer reads chosen pages of a big library (POSIX_FADV_DONTNEED first), the "
    "reader maps the file and counts major faults (getrusage ru_majflt) page by page: 12 of 12 bits. The "
    "syscall filter only refuses the direct probes (RWF_NOWAIT, io_uring, cachestat); fault counters and "
    "read timing need no special call. Closing it needs jobs that cannot share file pages (a private copy "
    "of what they may read, or a VM): a copycat of a right program's outputs across samples stays possible "
    "in principle"))
def test_no_job_can_read_the_page_cache_through_fault_counters(sb):
    import random

    path = _unmapped_library()
    base = random.randrange(0, (os.path.getsize(path) - 13 * 256 * 1024) // 4096) * 4096
    value = random.randrange(1, 1 << 12)
    sb.execute(PAGE_FAULTS, [StdioTest(f"write {base} {value} {path}\n", "")])
    reader = sb.execute(PAGE_FAULTS, [StdioTest(f"read {base} 0 {path}\n", "")]).tests[0]
    assert reader.stdout.strip() != str(value)


# ------------------------------------------------------------------------------------------- inode numbers
INODE_CHANNEL = """
import os
def inode():  # the scratch tmpfs numbers its inodes with one counter of its own, which outlives every case
    with open("probe", "w"):
        pass
    number = os.stat("probe").st_ino
    os.unlink("probe")
    return number
print(((inode() - 1) % 128) // 8)  # what the last case left (a few inodes are made between two cases)
a, b = map(int, input().split())
while inode() % 128 != 8 * (a + b):  # make files until the counter encodes this case's answer
    pass
"""


def test_inode_numbers_carry_no_answer_from_case_to_case(sb):
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(5))
    result = sb.execute(INODE_CHANNEL, same)
    assert [t.passed for t in result.tests] == [False] * 5


# ------------------------------------------------------------------------------------------- System V ids
IPC_ID_CHANNEL = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def sem():  # make a semaphore set and remove it: no object is left, but the namespace's id sequence moved on
    ident = libc.semget(0, 1, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    libc.semctl(ident, 0, 0)  # IPC_RMID
    return ident >> 15
print(sem() % 16)  # what the last case left
a, b = map(int, input().split())
while sem() % 16 != a + b:  # make and remove sets until the sequence encodes this case's answer
    pass
"""


def test_system_v_ids_carry_no_answer_from_case_to_case(sb):
    if os.getuid() != 0:
        pytest.skip("without root every case has an IPC namespace of its own")
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(5))
    result = sb.execute(IPC_ID_CHANNEL, same)
    assert [t.passed for t in result.tests] == [False] * 5


# ------------------------------------------------------------------------------------------- host counters
FORK_COUNT_CHANNEL = """
import os
def forks():  # every fork on the machine since boot: /proc/stat is the host's, in any PID namespace
    for line in open("/proc/stat"):
        if line.startswith("processes "):
            return int(line.split()[1])
STEP = 16
print((forks() % (16 * STEP)) // STEP)  # what the last case (or the last job, on any worker) left
a, b = map(int, input().split())
while (forks() % (16 * STEP)) // STEP != a + b or forks() % STEP:  # fork until the count encodes the answer
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_host_counters_carry_no_answer_from_case_to_case(sb):
    """/proc/stat's 'processes' (forks since boot, host-wide, in any PID namespace) carried a case's answer to
    the next case and to the next job on any worker: cases 2-6 passed, and the first case of a second job
    too. The worker now binds /dev/null over /proc/stat, vmstat, schedstat, interrupts, softirqs, diskstats
    and loadavg in the jobs' /proc."""
    same = tuple(StdioTest("2 3\n", "5\n") for _ in range(6))
    result = sb.execute(FORK_COUNT_CHANNEL, same)
    assert [t.passed for t in result.tests] == [False] * 6
