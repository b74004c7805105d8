"""A real `corecode eval` subprocess killed with SIGKILL mid-run, then restarted: same final results as an
uninterrupted run, and no finished sample generated twice (every model call is logged by the test model).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ORACLE = "tests.fixtures.evaluation.backends:oracle"
LIMIT, N = 4, 3
TOTAL = LIMIT * N


def _command(out):  # MBPP from the copy shipped in corecode: runs on any clone
    return [sys.executable, "-m", "corecode", "eval", "--benchmark", "mbpp", "--limit", str(LIMIT), "--n", str(N),
            "--temperature", "0.8", "--pipeline", "direct", "--model", ORACLE, "--out", str(out),
            "--workers", "2", "--no-progress"]


def _env(call_log, delay_s):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    env.update(CORECODE_TEST_CALL_LOG=str(call_log), CORECODE_TEST_DELAY_S=str(delay_s), OMP_NUM_THREADS="1")
    return env


def _lines(path):
    return path.read_text().splitlines() if path.exists() else []


def _final(out):
    results = {}
    for line in _lines(out / "results.jsonl"):
        r = json.loads(line)
        results[(r["task_id"], r["sample_index"])] = (r["status"], r["n_passed"], r["n_tests"])
    summary = json.loads((out / "summary.json").read_text())
    return results, summary["pass_at_k"], summary["apr"]


def test_killed_run_resumes_to_the_same_results_without_regenerating(tmp_path):
    out, log = tmp_path / "killed", tmp_path / "calls.log"
    proc = subprocess.Popen(_command(out), env=_env(log, 0.4), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 120
    while len(_lines(samples)) < 3:
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, "the run never wrote 3 samples"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_at_kill = len(_lines(samples))
    assert 3 <= done_at_kill < TOTAL
    with open(samples, "a") as fh:  # what a kill in the middle of a write leaves behind
        fh.write('{"task_id": "mbpp/1')
    first_pid_calls = len(_lines(log))

    restart = subprocess.run(_command(out), env=_env(log, 0), cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert restart.returncode == 0, restart.stderr
    assert "Pass@1" in restart.stdout
    second_calls = _lines(log)[first_pid_calls:]
    assert len(second_calls) == TOTAL - done_at_kill  # only the missing samples were generated
    keys = [tuple(json.loads(line)[k] for k in ("task_id", "sample_index")) for line in _lines(samples)]
    assert len(keys) == len(set(keys)) == TOTAL

    fresh = tmp_path / "fresh"
    clean = subprocess.run(_command(fresh), env=_env(tmp_path / "fresh.log", 0), cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stderr
    assert _final(out) == _final(fresh)
    assert len(_lines(tmp_path / "fresh.log")) == TOTAL
