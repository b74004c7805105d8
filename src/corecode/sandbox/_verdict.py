"""Turn the reports of a job's exec children into per-test verdicts, in the worker (never in an untrusted process).

Values arrive marshalled from the exec child. They are decoded here and checked to contain only built-in
scalars and containers, then compared with the expected values with Python's own ``==`` on those plain
types (so an always-true ``__eq__`` cannot matter: no program object exists on this side).
"""

from __future__ import annotations

import marshal
import math
import signal

PLAIN_SCALARS = (int, float, str, bytes, bool, type(None), complex)
CAPTURE = 2048


def _is_plain(value, depth: int = 0) -> bool:
    if depth > 250:
        return False
    t = type(value)
    if t in PLAIN_SCALARS:
        return True
    if t in (list, tuple, set, frozenset):
        return all(_is_plain(v, depth + 1) for v in value)
    if t is dict:
        return all(_is_plain(k, depth + 1) and _is_plain(v, depth + 1) for k, v in value.items())
    return False


def _decode(blob):
    if type(blob) is not bytes:
        raise ValueError("no value")
    value = marshal.loads(blob)
    if not _is_plain(value):
        raise ValueError("not a plain value")
    return value


def _json_normal(value):
    if type(value) in (list, tuple):
        return [_json_normal(v) for v in value]
    if type(value) is dict:
        return {str(k) if type(k) is not str else k: _json_normal(v) for k, v in value.items()}
    return value


def _short(value) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits(): a program can return one on purpose
        return "<a value holding an integer too large to print>"
    return text if len(text) <= 200 else text[:200] + "..."


def _check_site(mode: str, expected, blob, err) -> str | None:
    """Return None when the value matches, else a reason."""
    if blob is None:
        return f"returned {err}, not a plain value; expected {_short(expected)}"
    try:
        actual = _decode(blob)
    except (ValueError, EOFError, TypeError):
        return "returned a value that could not be decoded"
    if mode == "is":
        ok = actual is expected
    elif mode == "json":
        try:
            ok = _json_normal(actual) == _json_normal(expected)
        except ValueError:  # str() of a key past the int digit limit: cannot equal a JSON key
            ok = False
    elif mode == "truthy":
        ok = bool(actual) is expected
    else:
        ok = actual == expected
    return None if ok else f"expected {_short(expected)}, got {_short(actual)}"


def _check_pair(item: tuple) -> str | None:
    _, _, _, a, a_err, b, b_err, fallback = item
    if a is None and b is None:
        return None if fallback is True else "the two sides of an assert compared unequal"
    if a is None or b is None:
        return f"compared {a_err or b_err} with a plain value"
    try:
        left, right = _decode(a), _decode(b)
    except (ValueError, EOFError, TypeError):
        return "returned a value that could not be decoded"
    return None if left == right else f"{_short(left)} != {_short(right)}"


def _death(group: dict) -> tuple[str, str]:
    """Status and reason for a child that ended without finishing its current test."""
    code = group["exit"]
    if group["killed"] == "timeout" or code == -signal.SIGXCPU:
        return "timeout", "time limit exceeded"
    if group["killed"] == "output" or code == -signal.SIGXFSZ:
        return "output_limit", "output limit exceeded"
    if group["killed"] == "corrupt" or group["corrupt"]:
        return "runtime_error", "the program wrote to the harness's result channel"
    if code < 0:
        return "runtime_error", f"killed by signal {signal.Signals(-code).name}"
    return "runtime_error", f"the program exited (status {code}) before its tests finished"


def _exception_status(name: str) -> str:
    if name == "AssertionError":
        return "wrong_answer"
    if name == "MemoryError":
        return "memory_exceeded"
    return "runtime_error"


def _result(index: int, status: str, **fields) -> dict:
    return {"index": index, "status": status, "cpu_time_s": 0.0, "wall_time_s": 0.0, "peak_memory_bytes": 0,
            "exception": None, "detail": "", "stdout": "", "stderr": "", **fields}


def _function_group(tests: list[int], group: dict, secret: dict) -> list[dict]:
    frames = group["frames"]
    events: dict[int, dict] = {}
    load_error = None
    for item in frames:
        tag = item[0]
        if tag == "load_error" and len(item) == 3:
            load_error = item
        elif tag in ("begin", "end", "val", "pair") and len(item) >= 2 and type(item[1]) is int:
            state = events.setdefault(item[1], {"checks": [], "end": None})
            if tag == "end" and len(item) == 7:
                state["end"] = item
            elif tag in ("val", "pair"):
                state["checks"].append(item)
    out: list[dict] = []
    death = _death(group)
    death_used = False
    for local, index in enumerate(tests):
        state = events.get(local)
        if load_error is not None:
            out.append(_result(index, _exception_status(str(load_error[1])), exception=str(load_error[1]),
                               detail=str(load_error[2])))
        elif group["corrupt"]:
            out.append(_result(index, "runtime_error", detail="the program wrote to the harness's result channel"))
        elif state is None or state["end"] is None:
            started = state is not None or not any(events)
            if started and not death_used:
                death_used = True
                out.append(_result(index, death[0], detail=death[1]))
            else:
                out.append(_result(index, "not_run", detail="the program ended before this test ran"))
        else:
            out.append(_judge_ended(index, state, secret["checks"][index]))
    return out


def _judge_ended(index: int, state: dict, checks: tuple) -> dict:
    sites, required = checks
    _, _, exc_name, detail, cpu, wall, peak = state["end"]
    measures = {"cpu_time_s": float(cpu) if type(cpu) is float else 0.0,
                "wall_time_s": float(wall) if type(wall) is float else 0.0,
                "peak_memory_bytes": int(peak) if type(peak) is int else 0}
    seen = set()
    for item in state["checks"]:
        if item[0] == "val" and len(item) == 5 and item[2] in sites:
            seen.add(item[2])
            mode, expected = sites[item[2]]
            reason = _check_site(mode, expected, item[3], item[4])
        elif item[0] == "pair" and len(item) == 8:
            seen.add(item[2])
            reason = _check_pair(item)
        else:
            reason = "malformed result frame"
        if reason:
            return _result(index, "wrong_answer", detail=reason, **measures)
    if exc_name is not None:
        return _result(index, _exception_status(str(exc_name)), exception=str(exc_name),
                       detail=str(detail), **measures)
    missing = [s for s in required if s not in seen]
    if missing:
        return _result(index, "wrong_answer", detail=f"{len(missing)} check(s) of this test never ran", **measures)
    return _result(index, "passed", **measures)


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
            return False, f"line {n}: expected {_short(e.strip())}, got {_short(a.strip())}"
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


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _stdio_group(index: int, group: dict, expected: str, checker_verdict: dict | None) -> dict:
    end = next((f for f in group["frames"] if f[0] == "end" and len(f) == 7), None)
    measures = {"cpu_time_s": group["cpu"], "wall_time_s": group["wall"], "peak_memory_bytes": group["peak"],
                "stdout": _text(group["stdout"][:CAPTURE]), "stderr": _text(group["stderr"][:CAPTURE])}
    if group["killed"] or group["corrupt"] or group["exit"] != 0 and end is None:
        status, reason = _death(group)
        return _result(index, status, detail=reason, **measures)
    if group["stdout_size"] >= group.get("output_cap", 1 << 62):
        return _result(index, "output_limit", detail="output limit exceeded", **measures)
    if end is not None and end[2] is not None:
        return _result(index, _exception_status(str(end[2])), exception=str(end[2]), detail=str(end[3]), **measures)
    if checker_verdict is not None:
        return _result(index, checker_verdict["status"], detail=checker_verdict["detail"], **measures)
    ok, reason = outputs_match(expected, _text(group["stdout"]))
    return _result(index, "passed" if ok else "wrong_answer", detail=reason, **measures)


def stdio_outputs(public: dict, report: dict) -> list[tuple[int, int, str]]:
    """(group, test index, stdout) of stdio cases that ran cleanly, for a custom checker."""
    out = []
    for g, (group, rep) in enumerate(zip(public["groups"], report.get("groups", []))):
        if group["kind"] == "stdio" and not rep["killed"] and rep["exit"] == 0:
            out.append((g, group["tests"][0], _text(rep["stdout"])))
    return out


def checker_verdicts(report: dict | None, indices: list[int]) -> dict[int, dict]:
    if report is None or "groups" not in report:
        return {i: {"status": "runtime_error", "detail": "the checker failed to run"} for i in indices}
    secret = {"checks": [({0: ("is", True)}, [0])] * len(indices)}
    results = _function_group(list(range(len(indices))), report["groups"][0], secret)
    return {i: {"status": r["status"], "detail": "checker: " + (r["detail"] or r["status"])}
            for i, r in zip(indices, results)}


def judge(public: dict, secret: dict, report: dict, wall: float, checker: dict | None) -> dict:
    n = public["n_tests"]
    if "syntax_error" in report:
        detail = str(report["syntax_error"])
        return {"tests": [_result(i, "syntax_error", detail=detail) for i in range(n)], "wall": wall}
    results: list[dict] = []
    for group, rep in zip(public["groups"], report["groups"]):
        rep["output_cap"] = public["limits"]["output"]
        if group["kind"] == "function":
            group_results = _function_group(group["tests"], rep, secret)
            if rep["stdout_size"] >= rep["output_cap"]:  # the write that hit the cap may have raised EFBIG
                first = next((r for r in group_results if r["status"] != "passed"), None)
                if first is not None:
                    first.update(status="output_limit", detail="output limit exceeded", exception=None)
            _attach_output(group_results, rep)
            results.extend(group_results)
        else:
            index = group["tests"][0]
            verdict = checker.get(index) if checker else None
            results.append(_stdio_group(index, rep, secret["outputs"][index], verdict))
    results.sort(key=lambda r: r["index"])
    return {"tests": results, "wall": wall}


def _attach_output(results: list[dict], group: dict) -> None:
    """A function group shares one process: its captured output goes on its first failing test."""
    if not results:
        return
    target = next((r for r in results if r["status"] != "passed"), results[-1])
    target["stdout"] = _text(group["stdout"][:CAPTURE])
    target["stderr"] = _text(group["stderr"][:CAPTURE])
