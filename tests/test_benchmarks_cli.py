"""`corecode benchmarks list` and `corecode benchmarks show`, through corecode.cli.main."""

from __future__ import annotations

import json
from pathlib import Path

from corecode.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


def test_list_table(capsys):
    assert main(["benchmarks", "list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert lines["humaneval"][1:4] == ["test*", "164", "1122"]
    assert lines["mbpp"][1:3] == ["test*,validation,train,prompt", "974"]
    assert lines["mbpp-sanitized"][2] == "427"
    assert lines["apps-150"][2] == "150"
    assert lines["code_contests"][2] == "hub" and lines["code_contests"][-1] == "deepmind/code_contests"
    assert lines["livecodebench"][-1] == "livecodebench/code_generation_lite"


def test_list_json(capsys):
    assert main(["benchmarks", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["humaneval"]["problems"] == "164" and rows["genverse-mbpp"]["hub"] == "Gen-Verse/MBPP"


def test_show_mbpp_limit_1_needs_no_network_or_path(capsys):
    assert main(["benchmarks", "show", "mbpp", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== mbpp/11  (mbpp, split test)")
    assert "entry point: remove_Occ" in out
    assert "tests: 3 (assert 3)" in out and "public tests: 1 (assert 1)" in out
    assert '[0] assert remove_Occ("hello","l") == "heo"' in out
    assert "mbpp/12" not in out
    assert "[mbpp/test: 974 rows read, 1 problems; 474 rows in other splits; 499 more beyond the limit]" in out


def test_show_stdio_problem_with_limits(capsys):
    path = str(FIXTURES / "code_contests.jsonl")
    assert main(["benchmarks", "show", "code_contests", "--path", path, "--limit", "0"]) == 0
    out = capsys.readouterr().out
    assert "== 1000_A. Sum of Two" in out and "== p00001 Echo" in out
    assert "limits: time 2.5 s, memory 256 MB" in out
    assert "difficulty: 800" in out and "tags: math, implementation" in out
    assert "tests: 4 (stdio 4)" in out and "[0] stdin '1 2\\n' -> stdout '3\\n'" in out and "... 1 more" in out
    assert "1 dropped (no public, private or generated tests)" in out


def test_show_json_by_id(capsys):
    assert main(["benchmarks", "show", "humaneval", "--id", "HumanEval/0", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    problem = json.loads(out[0])
    assert problem["id"] == "HumanEval/0" and problem["entry_point"] == "has_close_elements"
    assert len(problem["tests"]) == 7 and problem["tests"][0]["kind"] == "assert"


def test_show_with_option(capsys):
    path = str(FIXTURES / "livecodebench.jsonl")
    args = ["benchmarks", "show", "livecodebench", "--path", path, "--option", "start_date=2024-06-01", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["id"] for line in captured.out.splitlines()] == ["3314"]
    assert "2 filtered" not in captured.out and "filtered" in captured.err  # the report goes to stderr with --json


def test_user_errors_are_clean_messages(capsys):
    assert main(["benchmarks", "show", "nope"]) == 2
    assert "unknown benchmark 'nope'; valid: apps, apps-150, code_contests" in capsys.readouterr().err
    assert main(["benchmarks", "show", "mbpp", "--split", "dev"]) == 2
    assert "valid: all, prompt, test, train, validation" in capsys.readouterr().err
    assert main(["benchmarks", "show", "mbpp", "--path", str(FIXTURES / "mbpp_bad_field.jsonl"), "--split", "all"]) == 2
    assert "mbpp_bad_field.jsonl, row 2, field 'test_list'" in capsys.readouterr().err
    assert main(["benchmarks", "show", "mbpp", "--option", "oops"]) == 2
    assert "--option expects KEY=VALUE" in capsys.readouterr().err
