"""`corecode solve`: the trace, the plan in four parts, and the program. Fast tests use a scripted model
(the `scripted:REPLIES.json` backend spec); the slow test runs the built-in model for real."""

import json
import os
import subprocess
import sys

import pytest

from corecode.cli import main

PLAN = (
    "## 1. Input-Output Definition\nA list of floats and a threshold; returns a bool.\n"
    "## 2. Linear Progression\nCompare every pair.\n## 3. Conditional Logic\nReturn True when a pair is close.\n"
    "## 4. Iteration\nTwo nested loops, O(n^2)."
)
CODE = (
    "```python\ndef has_close_elements(numbers, threshold):\n    return any(abs(a - b) < threshold "
    "for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```"
)


@pytest.fixture
def replies(tmp_path):
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([PLAN, CODE]))
    return f"scripted:{path}"


def test_solve_prints_trace_plan_and_program(replies, capsys):
    code = main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--pipeline", "planner_coder",
                 "--model", replies])
    out = capsys.readouterr().out
    assert code == 0
    assert "[1] planner · model scripted" in out and "[2] coder_with_plan · model scripted" in out
    assert "PLAN (Algorithmic Thought, 4 of 4 parts)" in out
    for heading in ("1. Input-Output Definition", "2. Linear Progression", "3. Conditional Logic", "4. Iteration"):
        assert heading in out
    program = out.split("PROGRAM\n", 1)[1]
    assert program.startswith("from typing import List") and "def has_close_elements" in program


def test_solve_json_and_per_role_models(tmp_path, capsys):
    """Models are chosen as in `corecode eval`: --model SPEC (default) and --model ROLE=SPEC (repeatable)."""
    planner, coder, unused = tmp_path / "p.json", tmp_path / "c.json", tmp_path / "none.json"
    planner.write_text(json.dumps([PLAN]))
    coder.write_text(json.dumps([CODE]))
    unused.write_text("[]")  # the default model: asked anything, it raises
    code = main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--model",
                 f"planner=scripted:{planner}", "--model", f"coder=scripted:{coder}", "--model", f"scripted:{unused}",
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0 and "deprecated" not in captured.err
    data = json.loads(captured.out)
    assert data["plan_parts"]["missing"] == [] and "def has_close_elements" in data["program"]
    assert [c["role"] for c in data["trace"]] == ["planner", "coder_with_plan"]


def test_the_old_model_flags_still_work_with_a_deprecation_warning(tmp_path, capsys):
    planner, coder = tmp_path / "p.json", tmp_path / "c.json"
    planner.write_text(json.dumps([PLAN]))
    coder.write_text(json.dumps([CODE]))
    code = main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--planner-model",
                 f"scripted:{planner}", "--role-model", f"coder_with_plan=scripted:{coder}", "--json"])
    captured = capsys.readouterr()
    assert code == 0 and "def has_close_elements" in json.loads(captured.out)["program"]
    assert "--planner-model is deprecated" in captured.err and "use --model planner=SPEC" in captured.err
    assert "--role-model is deprecated" in captured.err
    # the same role twice with different models is an error, not a silent choice
    assert main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--model", f"planner=scripted:{coder}",
                 "--planner-model", f"scripted:{planner}"]) == 2
    assert "two models for role 'planner'" in capsys.readouterr().err


def test_solve_direct_prints_no_plan(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(["no code, sorry"]))
    assert main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--pipeline", "direct",
                 "--model", f"scripted:{path}"]) == 0
    out = capsys.readouterr().out
    assert "PLAN" not in out and "PROGRAM (none: no_code)" in out


def test_solve_user_errors_exit_2(replies, capsys):
    assert main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--pipeline", "nope",
                 "--model", replies]) == 2
    assert "unknown pipeline 'nope'" in capsys.readouterr().err
    assert main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--model", replies,
                 "--role-model", "broken"]) == 2
    assert main(["solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0", "--model", replies,
                 "--k", "2"]) == 2  # planner_coder has no option k


@pytest.mark.slow
def test_solve_planner_coder_on_the_builtin_model():
    """The acceptance check: the real 0.5B model writes a plan in four parts and a program (~1-4 min)."""
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    proc = subprocess.run(
        [sys.executable, "-m", "corecode", "solve", "--benchmark", "humaneval", "--task-id", "HumanEval/0",
         "--pipeline", "planner_coder", "--max-tokens", "400"],
        capture_output=True, text=True, timeout=900, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "PLAN (Algorithmic Thought, 4 of 4 parts)" in proc.stdout
    program = proc.stdout.split("\nPROGRAM\n", 1)[1]
    assert "def has_close_elements" in program
    compile(program.rsplit("─" * 78, 1)[0], "program", "exec")
