"""`corecode check` and `corecode exec` end to end, on real HumanEval problems and a real sandbox."""

from __future__ import annotations

import json

import pytest

from corecode.benchmarks import load_benchmark
from corecode.cli import main


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """`check` keeps reference times in $CORECODE_CACHE/sandbox: a fresh one per test, never the user's."""
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def humaneval():
    return {p.id: p for p in load_benchmark("humaneval")[:3]}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_check_scores_both_conventions_and_keeps_fields(tmp_path, humaneval, capsys):
    rows = []
    for task_id, problem in humaneval.items():
        completion = problem.reference_solutions[0][len(problem.prompt):]
        rows.append({"task_id": task_id, "completion": completion, "model": "ref"})
        rows.append({"task_id": task_id, "solution": problem.reference_solutions[0] + "\n", "model": "whole"})
        rows.append({"task_id": task_id, "completion": "    return None\n", "model": "wrong", "seed": 3})
    samples = _write(tmp_path / "samples.jsonl", rows)
    out = tmp_path / "results.jsonl"
    argv = ["check", str(samples), "--benchmark", "humaneval", "--workers", "2", "--out", str(out)]
    assert main(argv) == 0  # the default: no measurement pass, and the summary says how to get one
    printed = capsys.readouterr().out
    assert "pass@1: 0.6667" in printed and "pass@2: 1.0000" in printed and "pass@3: 1.0000" in printed
    assert "efficiency: not measured (add --measure: whole-program CPU time and peak memory" in printed
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["model"] for r in results] == [r["model"] for r in rows]
    assert [r["passed"] for r in results] == [True, True, False] * 3
    assert results[2]["seed"] == 3 and results[2]["status"] == "wrong_answer"
    assert not any(r["measured"] for r in results)
    assert main(argv + ["--no-measure"]) == 0  # still accepted (old scripts): the same as the default
    assert "efficiency: not measured (add --measure" in capsys.readouterr().out
    # --measure: whole-program CPU time and memory per sample, measured for the passing ones (as `exec --json` shows)
    assert main(argv + ["--measure"]) == 0
    assert "efficiency of the 6 passing programs (whole program, measured)" in capsys.readouterr().out
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["measured"] == r["passed"] for r in results)
    assert all(r["cpu_time_s"] > 0 and r["peak_memory_bytes"] > 0 for r in results if r["passed"])
    with pytest.raises(SystemExit):
        main(argv + ["--measure", "--no-measure"])


def test_check_accepts_short_ids_and_rejects_unknown_ones(tmp_path, humaneval, capsys):
    problem = humaneval["HumanEval/0"]
    samples = _write(tmp_path / "s.jsonl", [{"task_id": "0", "solution": problem.reference_solutions[0]}])
    assert main(["check", str(samples), "--benchmark", "humaneval", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["pass@1"] == 1.0 and summary["efficiency"]["measured"] is False
    assert main(["check", str(samples), "--benchmark", "humaneval", "--json", "--measure"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["pass@1"] == 1.0 and summary["efficiency"]["n_passing"] == 1 and summary["efficiency"]["measured"]
    assert 0 < summary["efficiency"]["cpu_time_s_median"] and 0 < summary["efficiency"]["peak_memory_mb_median"]
    mbpp = tmp_path / "mbpp.jsonl"
    _write(mbpp, [{"task_id": "Mbpp/2", "solution": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n"}])
    assert main(["check", str(mbpp), "--benchmark", "mbpp", "--json"]) == 0  # evalplus-style id
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["pass@1"] == 1.0
    bad = _write(tmp_path / "bad.jsonl", [{"task_id": "HumanEval/0", "completion": ""}, {"task_id": "Nope/1", "completion": ""}])
    assert main(["check", str(bad), "--benchmark", "humaneval"]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl, row 2, field 'task_id'" in err and "Nope/1" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"task_id": "HumanEval/0", "completion": "x"}\n{not json\n')
    assert main(["check", str(broken), "--benchmark", "humaneval"]) == 2
    assert "row 2" in capsys.readouterr().err


def test_exec_with_tests_file(tmp_path, capsys):
    program = tmp_path / "prog.py"
    program.write_text("print(int(input()) * 2)\n")
    tests = _write(tmp_path / "tests.jsonl", [{"kind": "stdio", "input": "3\n", "output": "6\n"},
                                              {"kind": "stdio", "input": "4\n", "output": "9\n"}])
    assert main(["exec", str(program), "--tests", str(tests)]) == 1
    out = capsys.readouterr().out
    assert "test   0: passed" in out and "test   1: wrong_answer" in out and "expected '9', got '8'" in out
    assert main(["exec", str(program), "--tests", str(tests), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["n_passed"] == 1 and "isolation" in data
    mbpp = tmp_path / "mbpp.jsonl"
    _write(mbpp, [{"task_id": "Mbpp/2", "solution": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n"}])
    assert main(["check", str(mbpp), "--benchmark", "mbpp", "--json"]) == 0  # evalplus-style id
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["pass@1"] == 1.0
    bad = _write(tmp_path / "bad.jsonl", [{"kind": "stdio", "input": "1"}])
    assert main(["exec", str(program), "--tests", str(bad)]) == 2
    assert "bad.jsonl, row 1, field 'output'" in capsys.readouterr().err


def test_exec_with_benchmark_problem(tmp_path, humaneval, capsys):
    program = tmp_path / "he0.py"
    program.write_text(humaneval["HumanEval/0"].reference_solutions[0])
    assert main(["exec", str(program), "--benchmark", "humaneval", "--task-id", "HumanEval/0"]) == 0
    assert "passed:" in capsys.readouterr().out
