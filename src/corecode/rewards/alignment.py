"""CodeRL+'s execution-semantics alignment task (arXiv 2510.18471; ../shared/METHOD.md section 6): a sample is
a failing program of the policy, run once in the sandbox on its problem's first test input; the model is
asked to predict the run's final output and the program's last (at most 3) module-level variables.

Reward of a prediction (standard library only; formulas in docs/baselines.md, "CodeRL+")::

    r = 0                                          if the answer's last line is not a prediction
    r = 0.1 + 0.9 * (#correct items) / (1 + |V|)   otherwise

where the items are the final output and each of the |V| recorded variables. A prediction is the last
non-empty line of the answer (a closing code fence is skipped), a JSON object (strict JSON: no NaN or
Infinity) with a key ``final_output`` and a key ``variables`` whose value is an object; it is read only
when that line is at most MAX_LINE_CHARS long and nests at most MAX_DEPTH deep.

Tolerant equality (:func:`values_match`), what the recorded value is compared with:

* numbers: ints exactly (also against a float: ``3.0`` matches ``3``, ``12345679.0`` does not match
  ``12345678``); otherwise ``math.isclose(rel_tol=1e-6, abs_tol=1e-9)``.
  bools are not numbers here (``true`` never matches ``1``), and a prediction of ``"3"`` never matches 3;
* strings exactly; lists (recorded tuples, lists, and sets as sorted lists) element by element, in order;
  objects: the same keys (recorded keys as JSON writes them: strings) with matching values;
* the final output of a stdin/stdout program is its stdout: a predicted string matches when both agree
  line by line after trailing whitespace is dropped (and leading / trailing blank lines); a predicted
  number matches a stdout that is one number token (``14`` for ``"14\\n"``); true / false / null match
  ``True`` / ``False`` / ``None``. The final output of a function problem is the call's value (above);
* a variable counts when the prediction has its exact name; names the run did not record are ignored
  (they neither help nor hurt), so padding the object with guesses gains nothing.

What a reward-seeking policy could try, and why it does not pay (tests/test_baseline_coderl_plus.py):
a list of candidates or a string holding several values never equals a scalar; huge numbers, deep nesting,
NaN, duplicate keys or a multi-megabyte line make the prediction unreadable (0, below the 0.1 of any
readable one); several JSON lines: only the last counts; ``1`` for ``True`` does not match. The prompt
shows the program and its input only (never the problem statement, whose examples show expected outputs,
nor the recorded values), so nothing in it can be copied except what the program itself states.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AlignmentSample",
    "parse_prediction",
    "values_match",
    "output_matches",
    "alignment_reward",
    "alignment_inputs",
    "plain_json",
    "sample_from_trace",
    "FORMAT_REWARD",
]

FORMAT_REWARD = 0.1  # a readable prediction, nothing right
MAX_LINE_CHARS = 20_000
MAX_DEPTH = 16
REL_TOL, ABS_TOL = 1e-6, 1e-9
# A recorded int may hold up to ~4,600 digits within its 2 KiB (marshal) but Python writes at most 4,300 as
# text: such a value is not plain JSON (a variable left out, an output no sample), or json.dumps of the
# sample would stop the training. 13,000 bits is ~3,900 digits.
MAX_INT_BITS = 13_000


@dataclass(frozen=True)
class AlignmentSample:
    """One prompt of the alignment task: a failing program, the input it ran on, and what the run left."""

    id: str
    problem_id: str
    program: str
    stdin: str = ""
    call: str | None = None  # function problems: the expression evaluated after the module ran
    output: Any = None  # stdout (stdio problems) or the call's value (function problems), as plain JSON
    variables: tuple[tuple[str, Any], ...] = ()
    step: int | None = field(default=None, compare=False)  # the training step whose program it is

    @property
    def output_kind(self) -> str:
        return "value" if self.call is not None else "stdout"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "problem_id": self.problem_id, "program": self.program, "stdin": self.stdin,
                "call": self.call, "output": self.output, "variables": [list(v) for v in self.variables],
                "step": self.step}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "AlignmentSample":
        return cls(id=data["id"], problem_id=data["problem_id"], program=data["program"], stdin=data["stdin"],
                   call=data["call"], output=data["output"],
                   variables=tuple((str(n), v) for n, v in data["variables"]), step=data.get("step"))


def plain_json(value: Any, depth: int = 0) -> Any:
    """A recorded (plain) value as JSON data: tuples become lists, sets sorted lists, dict keys strings as
    JSON writes them, bytes and complex their repr, non-finite floats the strings "nan" / "inf" / "-inf"."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise ValueError("an int too large to write as JSON")  # json.dumps would raise ValueError later
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [plain_json(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_json(v, depth + 1) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {_json_key(k): plain_json(v, depth + 1) for k, v in value.items()}
    return repr(value)  # bytes, complex


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)  # as json.dumps writes a dict key: True -> "true", 1 -> "1"
    return repr(key)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _depth(value: Any, depth: int = 0) -> int:
    if depth > MAX_DEPTH:
        return depth
    if isinstance(value, list):
        return max([_depth(v, depth + 1) for v in value], default=depth + 1)
    if isinstance(value, dict):
        return max([_depth(v, depth + 1) for v in value.values()], default=depth + 1)
    return depth


def parse_prediction(text: str) -> dict[str, Any] | None:
    """The prediction on the answer's last non-empty line (a closing ``` skipped), or None if unreadable."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    while lines and lines[-1].startswith("```") and lines[-1].strip("`").strip() in ("", "json"):
        lines.pop()
    if not lines:
        return None
    line = lines[-1]
    if len(line) > MAX_LINE_CHARS or not line.startswith("{"):
        return None
    try:
        data = json.loads(line, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError):  # includes ints longer than Python's 4300-digit limit
        return None
    if not isinstance(data, dict) or set(data) != {"final_output", "variables"}:
        return None
    if not isinstance(data["variables"], dict) or _depth(data) > MAX_DEPTH:
        return None
    return data


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_match(predicted: Any, recorded: Any, depth: int = 0) -> bool:
    """Tolerant equality of a JSON prediction with a recorded value (made JSON by :func:`plain_json`)."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(recorded, bool) or recorded is None or isinstance(predicted, bool) or predicted is None:
        return type(predicted) is type(recorded) and predicted == recorded
    if _is_number(recorded):
        if not _is_number(predicted):
            return False
        if isinstance(recorded, int):
            return predicted == recorded  # an int only equals its own value (3.0 is 3; 12345679.0 is not 12345678)
        try:
            return math.isclose(float(predicted), float(recorded), rel_tol=REL_TOL, abs_tol=ABS_TOL)
        except OverflowError:  # an int too large for a float: never close to a float
            return False
    if isinstance(recorded, str):
        return isinstance(predicted, str) and predicted == recorded
    if isinstance(recorded, list):
        return (isinstance(predicted, list) and len(predicted) == len(recorded)
                and all(values_match(p, r, depth + 1) for p, r in zip(predicted, recorded)))
    if isinstance(recorded, dict):
        return (isinstance(predicted, dict) and set(predicted) == set(recorded)
                and all(values_match(predicted[k], recorded[k], depth + 1) for k in recorded))
    return False


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def output_matches(predicted: Any, sample: AlignmentSample) -> bool:
    """Whether the predicted final output matches the run's (stdout or the call's value)."""
    if sample.output_kind == "value":
        return values_match(predicted, sample.output)
    stdout = str(sample.output)
    if isinstance(predicted, str):
        return _lines(predicted) == _lines(stdout)
    if isinstance(predicted, bool) or predicted is None:
        return stdout.strip() == {True: "True", False: "False", None: "None"}[predicted]
    if _is_number(predicted):
        token = stdout.strip()
        if not token or len(token.split()) != 1:
            return False
        try:
            if token.lstrip("-").isascii() and token.lstrip("-").isdigit():
                return int(token) == predicted  # an int token: exactly (a float near it is not it)
            value = float(token)
        except (ValueError, OverflowError):
            return False
        if not math.isfinite(value):
            return False
        try:
            return math.isclose(float(predicted), value, rel_tol=REL_TOL, abs_tol=ABS_TOL)
        except OverflowError:
            return False
    return False


def alignment_reward(text: str, sample: AlignmentSample) -> float:
    """0 if unreadable, else 0.1 + 0.9 * (#correct items) / (1 + |V|)."""
    prediction = parse_prediction(text)
    if prediction is None:
        return 0.0
    correct = int(output_matches(prediction["final_output"], sample))
    predicted_vars = prediction["variables"]
    for name, value in sample.variables:
        if name in predicted_vars and values_match(predicted_vars[name], value):
            correct += 1
    return FORMAT_REWARD + (1.0 - FORMAT_REWARD) * correct / (1 + len(sample.variables))


def alignment_inputs(sample: AlignmentSample) -> dict[str, str]:
    """The ``execution_predictor`` role's inputs for ``sample`` (program, input, what to predict)."""
    if sample.call is not None:
        run_input = f"as a module (standard input empty), and then the expression `{sample.call}` is evaluated."
        output_kind = f"the value of `{sample.call}` as JSON"
    else:
        shown = sample.stdin if sample.stdin.endswith("\n") or not sample.stdin else sample.stdin + "\n"
        run_input = ("with this standard input:\n```\n" + shown + "```" if sample.stdin
                     else "with an empty standard input.")
        output_kind = "everything the program prints to standard output, as a JSON string"
    names = ", ".join(f"`{name}`" for name, _ in sample.variables) or "(none: give an empty object)"
    return {"program": sample.program, "run_input": run_input, "output_kind": output_kind, "variable_names": names}


def sample_from_trace(sample_id: str, problem_id: str, program: str, stdin: str, call: str | None, trace: Any,
                      capture_bytes: int, step: int | None = None) -> AlignmentSample | None:
    """An alignment sample from a :class:`corecode.sandbox.trace.ProgramTrace`, or None when the run cannot
    be one: it timed out or hit a limit; a function problem's call raised or returned no plain value; its
    stdout reached the capture limit (the recorded output would be incomplete); or it left nothing to
    predict (no output and no variable)."""
    if trace.error in ("timeout", "memory_exceeded", "output_limit", "runtime_error", "syntax_error"):
        return None
    if call is not None:
        if not trace.returned or trace.error is not None:
            return None
        try:
            output = plain_json(trace.value)
        except (ValueError, RecursionError):  # nested too deeply, an int too long for JSON: not plain data
            return None
    else:
        if len(trace.stdout.encode("utf-8", "replace")) >= capture_bytes:
            return None
        output = trace.stdout
    kept = []
    for name, value in trace.variables:
        try:
            kept.append((name, plain_json(value)))
        except (ValueError, RecursionError):  # as above: that variable is not simple, left out
            continue
    variables = tuple(kept)
    if output in ("", None) and not variables and call is None:
        return None
    return AlignmentSample(id=sample_id, problem_id=problem_id, program=program, stdin=stdin, call=call,
                           output=output, variables=variables, step=step)

