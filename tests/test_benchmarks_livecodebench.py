"""LiveCodeBench raw rows (JSON and base64-zlib-pickled private tests, date windows) and LiveBench coding."""

from __future__ import annotations

import base64
import datetime as dt
import json
import pickle
import zlib
from pathlib import Path

import pytest

from corecode.benchmarks import load_benchmark, load_benchmark_with_report
from corecode.errors import ConfigError, DatasetError
from corecode.types import CallTest, IOMode, StdioTest

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"
LCB = FIXTURES / "livecodebench.jsonl"


def test_stdin_and_functional_problems():
    stdin, functional, old = load_benchmark("livecodebench", path=LCB)
    assert stdin.id == "abc350_a" and stdin.io_mode is IOMode.STDIO
    assert stdin.tests == (StdioTest("ab\n", "abab\n"), StdioTest("x\n", "xx\n"))
    assert stdin.public_tests == stdin.tests[:1]
    assert stdin.contest_date == dt.date(2024, 4, 20) and stdin.difficulty == "easy" and stdin.tags == ("atcoder",)
    # functional: one JSON argument per input line; private tests were base64(zlib(pickle(json)))
    assert functional.entry_point == "countPairs" and functional.io_mode is IOMode.FUNCTION
    assert functional.tests == (
        CallTest("countPairs", ([1, 2, 3], 4), 1),
        CallTest("countPairs", ([1, 1, 1], 2), 3),
        CallTest("countPairs", ([], 0), 0),
    )
    assert functional.starter_code.startswith("class Solution:")
    assert old.tests == (StdioTest("\n", "1\n"),)  # empty private_test_cases is no tests, not an error


def test_date_window_filters_and_reports():
    problems, report = load_benchmark_with_report("livecodebench", path=LCB, start_date="2024-01-01")
    assert [p.id for p in problems] == ["abc350_a", "3314"]
    assert report.filtered == {"before 2024-01-01": 1} and report.n_dropped == 0
    problems, report = load_benchmark_with_report(
        "livecodebench", path=LCB, start_date="2024-01-01", end_date="2024-08-31"
    )
    assert [p.id for p in problems] == ["abc350_a"]
    assert report.filtered == {"before 2024-01-01": 1, "after 2024-08-31": 1}
    assert "1 filtered (after 2024-08-31)" in report.summary()


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="option start_date must be an ISO date"):
        load_benchmark("livecodebench", path=LCB, start_date="last year")
    with pytest.raises(ConfigError, match="has no option 'since'; its options: start_date, end_date"):
        load_benchmark("livecodebench", path=LCB, since="2024-01-01")
    with pytest.raises(ConfigError, match="has no option 'start_date'; its options: none"):
        load_benchmark("mbpp", start_date="2024-01-01")


def _row(private: str) -> dict:
    return {
        "question_id": "q1", "question_content": "x", "contest_date": "2024-01-01T00:00:00",
        "public_test_cases": json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}]),
        "private_test_cases": private, "metadata": "{}",
    }


def test_pickled_blob_with_code_is_refused_not_run(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    blob = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps(_row(blob)) + "\n")
    with pytest.raises(DatasetError, match=r"row 1, field 'private_test_cases': neither JSON nor base64"):
        load_benchmark("livecodebench", path=path)
    assert not marker.exists()


def test_garbage_private_tests_name_the_field(tmp_path):
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps(_row("not json, not base64!")) + "\n")
    with pytest.raises(DatasetError, match=r"lcb.jsonl, row 1, field 'private_test_cases'"):
        load_benchmark("livecodebench", path=path)


def test_functional_case_without_func_name_is_malformed(tmp_path):
    row = _row("")
    row["public_test_cases"] = json.dumps([{"input": "1", "output": "1", "testtype": "functional"}])
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match=r"field 'metadata': functional test cases but no func_name"):
        load_benchmark("livecodebench", path=path)


def test_livebench_coding_row():
    (p,) = load_benchmark("livebench", path=FIXTURES / "livebench.jsonl")
    assert p.id == "a1b2c3" and p.statement.startswith("### Question:\nRead a line and print it twice.")
    assert p.tests == (StdioTest("ab\n", "abab\n"), StdioTest("x\n", "xx\n"))
    assert p.contest_date == dt.date(2024, 6, 24) and p.tags == ("LCB_generation",) and p.difficulty == "easy"
    assert load_benchmark("livebench", path=FIXTURES / "livebench.jsonl", end_date="2024-06-01") == []
