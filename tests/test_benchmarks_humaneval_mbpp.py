"""HumanEval (built in) and MBPP (shipped, and the real files in shared/data): counts, exact fields, errors."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from corecode.benchmarks import BENCHMARKS, get_problem, load_benchmark, load_benchmark_with_report
from corecode.errors import DatasetError, MissingDependencyError, UnknownNameError
from corecode.types import AssertTest, Problem

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"

# Runs each (program, test) pair in a fresh namespace of ONE child process: our check of the data, not the
# sandbox (which is tested on its own). Prints the keys that raised.
_RUNNER = """
import json, sys
bad = []
for key, program in json.load(sys.stdin):
    try:
        exec(compile(program, key, "exec"), {"__name__": "__main__"})
    except BaseException as exc:
        bad.append(key + ": " + type(exc).__name__)
print(json.dumps(bad))
"""


def failing(jobs: list[tuple[str, str]]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _RUNNER], input=json.dumps(jobs), capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def jobs_for(problems: list[Problem], program_of, which: str = "tests") -> list[tuple[str, str]]:
    jobs = []
    for p in problems:
        for i, test in enumerate(getattr(p, which)):
            jobs.append((f"{p.id}#{which}{i}", f"{program_of(p)}\n{p.test_setup_code}\n{test.code}"))
    return jobs


# ---------------------------------------------------------------- HumanEval


def test_humaneval_is_built_in_with_164_problems():
    problems = load_benchmark("humaneval")
    assert len(problems) == 164
    assert problems[0].id == "HumanEval/0" and problems[-1].id == "HumanEval/163"
    assert all(p.split == "test" and p.source == "humaneval" for p in problems)


def test_humaneval_fields_of_a_known_problem():
    p = get_problem("humaneval", "HumanEval/0")
    assert p.entry_point == "has_close_elements"
    assert p.starter_code == p.statement == p.prompt
    assert p.prompt.startswith("from typing import List")
    assert p.reference_solutions[0].startswith(p.prompt)
    assert "METADATA" in p.test_setup_code
    # check() has 7 plain asserts: 7 tests, each binding `candidate` first
    assert len(p.tests) == 7
    assert p.tests[0].code == (
        "candidate = has_close_elements\n"
        "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    )
    # public tests are the two docstring examples
    assert [t.code for t in p.public_tests] == [
        "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True",
    ]


def test_humaneval_randomised_check_stays_one_test():
    p = get_problem("humaneval", "32")  # a loop over random polynomials
    assert len(p.tests) == 1
    assert p.tests[0].code.rstrip().endswith("check(find_zero)")
    whole = [p.id for p in load_benchmark("humaneval") if p.tests[0].code.startswith("def check")]
    assert whole == ["HumanEval/32", "HumanEval/38", "HumanEval/44", "HumanEval/50", "HumanEval/53"]
    # a stray `print` in check() does not stop the split
    assert len(get_problem("humaneval", "129").tests) > 1


def test_humaneval_constant_asserts_are_not_tests():
    p = get_problem("humaneval", "HumanEval/64")
    assert not any("assert True" in t.code.splitlines()[-1] for t in p.tests)


def test_humaneval_reference_passes_every_test_and_public_test():
    problems = load_benchmark("humaneval")
    ref = lambda p: p.reference_solutions[0]  # noqa: E731
    assert failing(jobs_for(problems, ref) + jobs_for(problems, ref, "public_tests")) == []


def test_humaneval_wrong_solution_fails_some_but_not_all_tests():
    # The split into separate asserts is what makes a pass rate meaningful: a constant answer passes some.
    p = get_problem("humaneval", "HumanEval/0")
    wrong = p.prompt + "    return True\n"
    bad = failing(jobs_for([p], lambda _: wrong))
    assert 0 < len(bad) < len(p.tests)


def test_humaneval_fixture_splitting_and_docstring_fallback():
    spec = dataclasses.replace(BENCHMARKS["humaneval"], builtin=None)
    first, second = load_benchmark(spec, path=FIXTURES / "humaneval_mini.jsonl")
    # x = 10 is a setup statement: the second assert carries it; `assert True` is dropped
    assert [t.code for t in first.tests] == [
        "candidate = add\nassert candidate(1, 2) == 3",
        "candidate = add\nx = 10\nassert candidate(x, 5) == 15",
    ]
    assert first.public_tests == (AssertTest("assert add(2, 3) == 5"),)
    # `twice(ab) => abab` has unquoted strings: not an example; the public test falls back to the test
    assert second.public_tests == second.tests
    assert second.test_setup_code == "import random"


# ---------------------------------------------------------------- MBPP


def test_mbpp_full_counts_and_splits_from_the_shipped_copy():
    problems = load_benchmark("mbpp", "all")
    assert len(problems) == 974
    assert Counter(p.split for p in problems) == {"prompt": 10, "test": 500, "validation": 90, "train": 374}
    assert len(load_benchmark("mbpp")) == 500  # default split: test
    assert [len(load_benchmark("mbpp", s)) for s in ("prompt", "test", "validation", "train")] == [10, 500, 90, 374]


def test_mbpp_shipped_copy_equals_the_shared_file(shared_data):
    shipped = load_benchmark("mbpp", "all")
    local = load_benchmark("mbpp", "all", path=shared_data / "mbpp" / "mbpp.jsonl")
    assert shipped == local


def test_mbpp_known_problem_fields(shared_data):
    p = get_problem("mbpp", "11", path=shared_data / "mbpp" / "mbpp.jsonl")
    assert p.id == "mbpp/11" and p.split == "test" and p.entry_point == "remove_Occ"
    assert p.tests[0] == AssertTest('assert remove_Occ("hello","l") == "heo"')
    assert len(p.tests) == 3 and p.public_tests == p.tests[:1]
    assert p.statement.startswith("Write a python function to remove first and last occurrence")
    assert "Your code should pass these tests:" in p.statement
    assert 'assert remove_Occ("hello","l") == "heo"' in p.statement
    assert 'remove_Occ("abcda","a")' not in p.statement  # hidden tests stay hidden
    assert p.metadata["challenge_test_list"] == ('assert remove_Occ("hellolloll","l") == "helollol"',
                                                 'assert remove_Occ("","l") == ""')
    assert p.reference_solutions[0].startswith("def remove_Occ(s,ch):")
    assert "\r" not in p.reference_solutions[0]


def test_mbpp_setup_code_is_kept():
    p = get_problem("mbpp", "367")
    assert p.test_setup_code.startswith("root = Node(1)")
    assert p.entry_point == "is_tree_balanced"


def test_mbpp_sanitized_counts_imports_and_entry_point(shared_data):
    problems = load_benchmark("mbpp-sanitized", "all")
    assert len(problems) == 427
    assert Counter(p.split for p in problems) == {"prompt": 7, "test": 257, "validation": 43, "train": 120}
    assert load_benchmark("mbpp-sanitized", "all", path=shared_data / "mbpp" / "sanitized-mbpp.json") == problems
    p = get_problem("mbpp-sanitized", "82")
    assert p.test_setup_code == "import math" and p.entry_point == "volume_sphere"
    # the first assert calls set(...) and math.isclose(...): the entry point is the user's function
    assert get_problem("mbpp-sanitized", "2").entry_point == "similar_elements"


def test_mbpp_every_problem_has_an_entry_point_the_reference_defines():
    for name in ("mbpp", "mbpp-sanitized"):
        for p in load_benchmark(name, "all"):
            assert p.entry_point and f"def {p.entry_point}" in p.reference_solutions[0], p.id


def test_mbpp_references_pass_and_a_wrong_program_fails():
    problems = load_benchmark("mbpp", "test", limit=50)
    assert failing(jobs_for(problems, lambda p: p.reference_solutions[0])) == []
    wrong = failing(jobs_for(problems[:5], lambda p: f"def {p.entry_point}(*args):\n    return None\n"))
    assert len(wrong) == sum(len(p.tests) for p in problems[:5])


def test_limit_keeps_the_first_problems_in_file_order():
    assert [p.id for p in load_benchmark("mbpp", "all", limit=3)] == ["mbpp/1", "mbpp/2", "mbpp/3"]
    problems, report = load_benchmark_with_report("mbpp", limit=1)
    assert [p.id for p in problems] == ["mbpp/11"] and report.beyond_limit == 499
    # a file given by path is read only up to the limit
    problems, report = load_benchmark_with_report("mbpp", "all", path=FIXTURES / "mbpp_dropped.jsonl", limit=1)
    assert [p.id for p in problems] == ["mbpp/11"] and report.rows_read == 1 and report.stopped_at_limit


def test_cached_loads_are_independent_copies():
    first = load_benchmark("humaneval")
    first.clear()
    assert len(load_benchmark("humaneval")) == 164


# ---------------------------------------------------------------- bad input


def test_unknown_benchmark_and_split_list_the_valid_ones():
    with pytest.raises(UnknownNameError, match="valid: .*humaneval.*mbpp"):
        load_benchmark("mbppp")
    with pytest.raises(UnknownNameError, match="valid: all, prompt, test, train, validation"):
        load_benchmark("mbpp", "dev")
    with pytest.raises(UnknownNameError, match="mbpp"):
        get_problem("mbpp", "99999")


def test_malformed_row_names_file_row_and_field():
    path = FIXTURES / "mbpp_bad_field.jsonl"
    with pytest.raises(DatasetError) as err:
        load_benchmark("mbpp", "all", path=path)
    assert (err.value.source, err.value.row, err.value.field) == (str(path), 2, "test_list")
    assert str(err.value) == f"{path}, row 2, field 'test_list': expected list, got str"


def test_invalid_json_line_names_its_line_number():
    with pytest.raises(DatasetError, match=r"mbpp_bad_json.jsonl, row 3: not valid JSON"):
        load_benchmark("mbpp", "all", path=FIXTURES / "mbpp_bad_json.jsonl")


def test_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="file not found"):
        load_benchmark("mbpp", path=tmp_path / "nope.jsonl")


def test_dropped_rows_are_counted_and_logged(caplog):
    path = FIXTURES / "mbpp_dropped.jsonl"
    with caplog.at_level(logging.WARNING, logger="corecode.benchmarks"):
        problems, report = load_benchmark_with_report("mbpp", "all", path=path)
    assert [p.id for p in problems] == ["mbpp/11", "mbpp/700"]
    assert report.rows_read == 3 and report.problems == 2
    assert report.dropped == {"no tests in test_list": 1}
    assert report.dropped_rows == [(str(path), 2, "no tests in test_list")]
    assert "1 dropped (no tests in test_list)" in caplog.text
    # rows of other splits are not "dropped": they are counted apart
    _, test_report = load_benchmark_with_report("mbpp", "test", path=path)
    assert test_report.other_split == 1 and test_report.problems == 1


def test_hub_code_path_runs_offline_on_local_files(tmp_path, shared_data):
    import datasets  # noqa: F401 - the [hub] extra (in [train] and [all]) is required
    rows = [json.loads(line) for line in (shared_data / "mbpp" / "mbpp.jsonl").open()]
    files = {}
    for split, lo, hi in (("test", 11, 510), ("train", 601, 974), ("validation", 511, 600), ("prompt", 1, 10)):
        files[split] = str(tmp_path / f"{split}.jsonl")
        with open(files[split], "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows if lo <= r["task_id"] <= hi)
    spec = dataclasses.replace(
        BENCHMARKS["mbpp"], builtin=None, hub_id="json", hub_config=None,
        hub_kwargs={"data_files": files, "cache_dir": str(tmp_path / "cache")},
    )
    problems, report = load_benchmark_with_report(spec, "validation")
    assert len(problems) == 90 and report.sources == ["hub:json/validation"]
    assert len(load_benchmark(spec, "all")) == 974


def test_missing_datasets_names_the_hub_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    spec = dataclasses.replace(BENCHMARKS["mbpp"], builtin=None)
    with pytest.raises(MissingDependencyError, match=r"corecode\[hub\]") as err:
        load_benchmark(spec)
    assert err.value.package == "datasets" and err.value.extra == "hub"


def test_missing_pyarrow_names_the_hub_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingDependencyError, match="reading parquet files"):
        load_benchmark("code_contests", path=FIXTURES / "code_contests.parquet")


def test_importing_benchmarks_imports_no_heavy_library():
    code = "import sys, corecode.benchmarks; print([m for m in ('datasets', 'pyarrow', 'torch') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_unloadable_hub_dataset_is_a_dataset_error_suggesting_path(tmp_path):
    import datasets  # noqa: F401 - the [hub] extra (in [train] and [all]) is required
    spec = dataclasses.replace(
        BENCHMARKS["mbpp"], builtin=None, hub_id="json", hub_config=None,
        hub_kwargs={"data_files": {"test": str(tmp_path / "missing.jsonl")}, "cache_dir": str(tmp_path / "c")},
    )
    with pytest.raises(DatasetError, match=r"hub:json/test: could not load .*pass a local file with --path"):
        load_benchmark(spec)
