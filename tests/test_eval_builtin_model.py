"""The real thing, slow: `corecode eval` with the built-in Qwen2.5-Coder-0.5B through llama.cpp."""

import json
import sys
import subprocess

import pytest

pytestmark = pytest.mark.slow


def test_planner_coder_on_humaneval_with_the_builtin_model(tmp_path):
    pytest.importorskip("llama_cpp", reason="the optional [llama] extra is not installed (README, Tests)")
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "corecode", "eval", "--limit", "2", "--n", "1", "--temperature", "0",
         "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Pass@1" in proc.stdout and "CG (points)" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["pipeline"] == "planner_coder" and summary["n_problems"] == 2
    assert summary["cost"]["calls_per_problem"] == 2.0  # one Planner call and one Coder call
    assert summary["cost"]["completion_tokens_per_problem"] > 0
    assert summary["collaboration"]["cg_points"] is not None
    alone = json.loads((tmp_path / "run--coder-alone" / "summary.json").read_text())
    assert alone["run"]["pipeline"] == "direct"
