"""CodeContests, Codeforces (open-r1) and xCodeEval: fixture files in each schema, and the real xCodeEval file."""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from corecode.benchmarks import BENCHMARKS, get_problem, load_benchmark, load_benchmark_with_report
from corecode.errors import DatasetError, UnknownNameError
from corecode.types import IOMode, StdioTest

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


def run_stdio(program: str, test: StdioTest) -> bool:
    out = subprocess.run([sys.executable, "-c", program], input=test.input, capture_output=True, text=True, timeout=30)
    return out.stdout.split() == test.output.split()


# ---------------------------------------------------------------- CodeContests


def test_code_contests_fields_and_dropped_row():
    problems, report = load_benchmark_with_report("code_contests", path=FIXTURES / "code_contests.jsonl")
    assert [p.id for p in problems] == ["1000_A. Sum of Two", "p00001 Echo"]
    assert report.dropped == {"no public, private or generated tests": 1}
    assert report.dropped_rows[0][1] == 2
    p = problems[0]
    # public + private + generated, the generated copy of the public test kept once
    assert [t.input for t in p.tests] == ["1 2\n", "5 7\n", "0 0\n", "-4 4\n"]
    assert p.public_tests == (StdioTest("1 2\n", "3\n"),)
    assert p.time_limit_s == 2.5 and p.memory_limit_mb == 256
    assert p.difficulty == "800" and p.tags == ("math", "implementation")
    assert p.reference_solutions == ("a, b = map(int, input().split())\nprint(a + b)\n",)  # Python 3 only
    assert p.io_mode is IOMode.STDIO and p.split == "test"
    assert p.metadata["n_generated"] == 2
    # no Codeforces rating: the dataset's difficulty label
    assert problems[1].difficulty == "EASY" and problems[1].time_limit_s is None


def test_code_contests_reference_passes_and_wrong_program_fails():
    p = load_benchmark("code_contests", path=FIXTURES / "code_contests.jsonl", limit=1)[0]
    assert all(run_stdio(p.reference_solutions[0], t) for t in p.tests)
    wrong = "a, b = map(int, input().split())\nprint(a * b)\n"
    assert not all(run_stdio(wrong, t) for t in p.tests)


def test_code_contests_parquet_equals_jsonl():
    import pyarrow  # noqa: F401 - the [hub] extra (in [train] and [all]) is required
    from_parquet = load_benchmark("code_contests", "valid", path=FIXTURES / "code_contests.parquet")
    from_jsonl = load_benchmark("code_contests", "valid", path=FIXTURES / "code_contests.jsonl")
    assert from_parquet == from_jsonl and from_parquet[0].split == "valid"


def test_code_contests_hub_path_offline(tmp_path):
    import datasets  # noqa: F401 - the [hub] extra (in [train] and [all]) is required
    spec = dataclasses.replace(
        BENCHMARKS["code_contests"], hub_id="parquet",
        hub_kwargs={"data_files": {"test": str(FIXTURES / "code_contests.parquet")}, "cache_dir": str(tmp_path)},
    )
    problems, report = load_benchmark_with_report(spec)
    assert [p.id for p in problems] == ["1000_A. Sum of Two", "p00001 Echo"]
    assert report.sources == ["hub:parquet/test"]


def test_code_contests_unknown_split_lists_valid():
    with pytest.raises(UnknownNameError, match="valid: all, test, train, valid"):
        load_benchmark("code_contests", "validation", path=FIXTURES / "code_contests.jsonl")


def test_code_contests_mismatched_tests_name_the_field(tmp_path):
    bad = tmp_path / "cc.jsonl"
    bad.write_text('{"name": "x", "description": "d", "public_tests": {"input": ["1"], "output": []}}\n')
    with pytest.raises(DatasetError, match=r"cc.jsonl, row 1, field 'public_tests': 1 inputs but 0 outputs"):
        load_benchmark("code_contests", path=bad)


# ---------------------------------------------------------------- Codeforces (open-r1)


def test_codeforces_open_r1_fields_and_drops():
    problems, report = load_benchmark_with_report("codeforces", path=FIXTURES / "codeforces_open_r1.jsonl")
    assert [p.id for p in problems] == ["2063/A", "120/A"]
    assert report.dropped == {"interactive problem": 1, "no official tests": 1}
    p = problems[0]
    assert len(p.tests) == 3 and p.public_tests == (StdioTest("3\n", "6\n"),)
    assert p.time_limit_s == 1.0 and p.memory_limit_mb == 256 and p.difficulty == "800"
    assert p.contest_date == dt.date(2025, 1, 17)
    assert p.statement.startswith("# Double It\n\nYou are given an integer")
    assert "## Input\nOne integer $$$n$$$." in p.statement and "## Example 1\nInput:\n3\nOutput:\n6" in p.statement
    assert p.statement.rstrip().endswith("In the first example 2 * 3 = 6.")
    file_problem = problems[1]
    assert file_problem.io_mode is IOMode.FILE
    assert (file_problem.input_file, file_problem.output_file) == ("input.txt", "output.txt")
    # open-r1's checker has its own calling convention: kept aside, not used as corecode's Checker
    assert file_problem.checker is None and "open-r1" in file_problem.metadata["generated_checker"]


# ---------------------------------------------------------------- xCodeEval


def test_xcodeeval_real_file(shared_data):
    path = shared_data / "xcodeeval" / "prog_syn_val.jsonl"
    problems = load_benchmark("xcodeeval", "validation", path=path)
    assert len(problems) == 106
    p = problems[0]
    assert p.id == "9ce37bc2d361f5bb8a0568fb479b8a38" and p.split == "validation"
    assert p.tests == (StdioTest("8\nbacabcab", "4"), StdioTest("4\nbcda", "3"), StdioTest("6\nabbbbb", "5"))
    assert p.public_tests == p.tests and p.metadata["tests_are_samples"]
    assert p.time_limit_s == 2.0 and p.memory_limit_mb == 256 and p.difficulty == "1600"
    assert p.tags == ("brute force", "constructive algorithms", "strings", "greedy")
    assert "## Output\nPrint one integer" in p.statement and "\n## Note\nThe first example" in p.statement
    assert sum(p.difficulty is None for p in problems) == 2
    assert {p.time_limit_s for p in problems} == {0.4, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.0}
    assert {p.memory_limit_mb for p in problems} == {64, 128, 256, 512}
    assert get_problem("xcodeeval", "9ce37bc2d361f5bb8a0568fb479b8a38", "validation", path=path) == p


def test_xcodeeval_python_literal_samples():
    (p,) = load_benchmark("xcodeeval", path=FIXTURES / "xcodeeval_literal.jsonl")
    assert p.tests == (StdioTest("1 2", "3"), StdioTest("3 4", "7"))
    assert p.time_limit_s == 0.5 and p.memory_limit_mb == 64 and p.difficulty is None


def test_xcodeeval_bad_limit_names_the_field(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text(
        '{"src_uid": "u", "description": "d", "sample_inputs": ["1"], "sample_outputs": ["1"],'
        ' "time_limit": "2 fortnights"}\n'
    )
    with pytest.raises(DatasetError, match=r"row 1, field 'time_limit': unknown time unit 'fortnights'"):
        load_benchmark("xcodeeval", path=bad)
