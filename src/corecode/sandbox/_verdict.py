"""Verdict helpers shared by the worker and the judge process (standard library only, never raise on bad data).

Nothing here runs program code: values reaching these functions are plain built-in data, and statuses of
dead children are computed from exit codes with names that cannot raise (any signal number, real-time
signals included).
"""

from __future__ import annotations

import math
import signal

CAPTURE = 2048


def json_normal(value):
    if type(value) in (list, tuple):
        return [json_normal(v) for v in value]
    if type(value) is dict:
        return {str(k) if type(k) is not str else k: json_normal(v) for k, v in value.items()}
    return value


def short(value) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits(): a program can return one on purpose
        return "<a value holding an integer too large to print>"
    return text if len(text) <= 200 else text[:200] + "..."


def signal_name(number: int) -> str:
    """A name for any signal number, never raising (``signal.Signals(40)`` raises ValueError)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        low, high = int(signal.SIGRTMIN), int(signal.SIGRTMAX)
        if low <= number <= high:
            return f"SIGRTMIN+{number - low}"
        return f"signal {number}"


def death(killed: str | None, code: int, corrupt: bool = False, oom: bool = False) -> tuple[str, str]:
    """Status and reason for a child that ended without finishing its current test. Never raises."""
    if killed == "timeout" or code == -signal.SIGXCPU:
        return "timeout", "time limit exceeded"
    if killed == "output" or code == -signal.SIGXFSZ:
        return "output_limit", "output limit exceeded"
    if killed == "memory" or oom:
        return "memory_exceeded", "memory limit exceeded (the job's processes together)"
    if killed == "judge":
        return "runtime_error", "the judge ended before the program's tests did (killed from inside the job?)"
    if killed == "corrupt" or corrupt:
        return "runtime_error", "the program wrote to the harness's result channel"
    if type(code) is not int:
        return "runtime_error", "the program ended abnormally"
    if code < 0:
        return "runtime_error", f"killed by {signal_name(-code)}"
    return "runtime_error", f"the program exited (status {code}) before its tests finished"


def exception_status(name: str) -> str:
    if name == "AssertionError":
        return "wrong_answer"
    if name == "MemoryError":
        return "memory_exceeded"
    return "runtime_error"


def clean_text(value) -> str:
    """Text a program chose (exception messages, reprs), safe to write anywhere: no lone surrogates."""
    text = value if type(value) is str else str(value)
    return text.encode("utf-8", "replace").decode("utf-8")


def result(index: int, status: str, **fields) -> dict:
    out = {"index": index, "status": status, "cpu_time_s": 0.0, "wall_time_s": 0.0, "peak_memory_bytes": 0,
           "exception": None, "detail": "", "stdout": "", "stderr": "", **fields}
    for key in ("detail", "stdout", "stderr"):
        out[key] = clean_text(out[key])
    return out


def outputs_match(expected: str, actual: str) -> tuple[bool, str]:
    """Exact, then whitespace-normalized, then token-wise with a tolerance for non-integer numbers."""
    if actual == expected:
        return True, ""
    exp_tokens, act_tokens = expected.split(), actual.split()
    if exp_tokens == act_tokens:
        return True, ""
    if len(exp_tokens) == len(act_tokens):
        for e, a in zip(exp_tokens, act_tokens):
            if e != a and not _close_numbers(e, a):
                break
        else:
            return True, ""
    exp_lines, act_lines = expected.strip().splitlines(), actual.strip().splitlines()
    for n, (e, a) in enumerate(zip(exp_lines, act_lines), 1):
        if e.strip() != a.strip():
            return False, f"line {n}: expected {short(e.strip())}, got {short(a.strip())}"
    return False, f"expected {len(exp_lines)} line(s), got {len(act_lines)}"


def _close_numbers(expected: str, actual: str) -> bool:
    # Integers must match exactly (a tolerance would accept 1000000001 for 1000000000).
    try:
        int(expected)
        return False
    except ValueError:
        pass
    try:
        e, a = float(expected), float(actual)
    except ValueError:
        return False
    return math.isfinite(e) and math.isclose(e, a, rel_tol=1e-6, abs_tol=1e-6)


def text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def stdio_verdict(index: int, group: dict, expected: str, checker_verdict: dict | None) -> dict:
    """The verdict of one stdin/stdout case from the worker's raw report of its child."""
    end = next((f for f in group["frames"] if f[0] == "end" and len(f) == 4), None)
    measures = {"cpu_time_s": group["cpu"], "wall_time_s": group["wall"], "peak_memory_bytes": group["peak"],
                "stdout": text(group["stdout"][:CAPTURE]), "stderr": text(group["stderr"][:CAPTURE])}
    # The harness exits 0 after its end frame: a non-zero exit is a death even after a frame that says
    # otherwise (a program can write one itself; red team: a warm case that did, then exited 1, was
    # judged on its output and left out of the shared runner's charge).
    if group["killed"] or group["corrupt"] or group.get("oom") or group["exit"] != 0:
        status, reason = death(group["killed"], group["exit"], group["corrupt"], group.get("oom", False))
        return result(index, status, detail=reason, **measures)
    if group.get("cpu_limit") is not None and group["cpu"] > group["cpu_limit"]:  # helpers on other cores
        return result(index, "timeout", detail=f"used {group['cpu']:.2f} s of CPU (helpers included), limit "
                                               f"{group['cpu_limit']:.2f} s", **measures)
    if group["stdout_size"] >= group["output_cap"]:
        return result(index, "output_limit", detail="output limit exceeded", **measures)
    if end is not None and end[2] is not None:
        return result(index, exception_status(str(end[2])), exception=str(end[2]), detail=str(end[3]), **measures)
    if checker_verdict is not None:
        return result(index, checker_verdict["status"], detail=checker_verdict["detail"], **measures)
    ok, reason = outputs_match(expected, text(group["stdout"]))
    return result(index, "passed" if ok else "wrong_answer", detail=reason, **measures)
