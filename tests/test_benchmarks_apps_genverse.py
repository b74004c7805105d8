"""APPS / TACO (input_output JSON), MapCoder's APPS-150 selection (real file), and the Gen-Verse stdio sets."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from corecode.benchmarks import get_problem, load_benchmark, load_benchmark_with_report
from corecode.benchmarks.apps import split_args
from corecode.errors import DatasetError
from corecode.types import CallTest, IOMode, StdioTest

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


def test_apps_stdio_and_call_based_rows():
    problems, report = load_benchmark_with_report("apps", path=FIXTURES / "apps.jsonl")
    assert [p.id for p in problems] == ["apps/4000", "apps/4001"]
    assert report.dropped == {"no input_output": 1}
    stdio, call = problems
    # a list of lines is joined with newlines
    assert stdio.tests == (StdioTest("1 2 3\n", "6\n"), StdioTest("4 5", "9"))
    assert stdio.io_mode is IOMode.STDIO and stdio.reference_solutions[0].startswith("print(sum(")
    # fn_name: inputs[i] is the argument list; APPS's one-element wrapper around the result is removed
    assert call.entry_point == "solve" and call.io_mode is IOMode.FUNCTION
    assert call.tests == (CallTest("solve", ([3, 1, 2],), [[1, 2, 3], 3]), CallTest("solve", ([],), [[], 0]))
    assert call.starter_code == "def solve(xs):\n\t"


def test_taco_row_limits_and_tags():
    (p,) = load_benchmark("taco", "train", path=FIXTURES / "taco.jsonl")
    assert p.id == "taco/1" and p.split == "train"  # no id column: the row number
    assert p.time_limit_s == 1.0 and p.memory_limit_mb == 256 and p.tags == ("Mathematics",)


def test_apps_150_real_file_matches_shipped_copy(shared_data):
    shipped = load_benchmark("apps-150")
    assert len(shipped) == 150
    assert load_benchmark("apps-150", path=shared_data / "apps" / "selected150.jsonl") == shipped
    assert load_benchmark("apps", path=shared_data / "apps" / "selected150.jsonl") != []
    kinds = Counter(p.io_mode for p in shipped)
    assert kinds == {IOMode.FUNCTION: 98, IOMode.STDIO: 52}
    assert Counter(p.difficulty for p in shipped) == {"interview": 52, "introductory": 50, "competition": 48}
    assert sum(len(p.tests) for p in shipped) == 1842


def test_apps_150_known_problems():
    p = get_problem("apps-150", "3554")
    assert p.entry_point == "get_score" and p.starter_code == "\ndef get_score(dice):\n\t"
    assert p.tests[0] == CallTest("get_score", ([1],), 100)
    assert p.public_tests[0] == CallTest("get_score", ([1, 2, 3],), 100)
    stdio = get_problem("apps-150", "1604")
    assert stdio.io_mode is IOMode.STDIO and stdio.tests[0] == StdioTest("1 1\n.\n", "1\n")
    # a string argument with newlines, split over lines by the selection, is put back together
    markers = get_problem("apps-150", "1613")
    assert markers.tests[0].args == ("apples, pears # and bananas\ngrapes\nbananas !apples", ["#", "!"])


@pytest.mark.parametrize(
    ("inputs", "n_params", "expected"),
    [
        (["1\n2"], 2, [(1, 2)]),  # literals
        (["abc", "69"], 1, [("abc",), ("69",)]),  # one raw text makes the whole position text
        (["69", "7"], 1, [(69,), (7,)]),  # the known limit: numbers stay numbers
        (["a\nb\n[1]"], 2, [("a\nb", [1])]),  # extra lines join into the first argument
        (["5"], 3, [(5,)]),  # fewer lines than parameters: defaults
    ],
)
def test_split_args_table(inputs, n_params, expected):
    assert split_args(inputs, n_params) == expected


def test_apps_bad_input_output_names_the_field(tmp_path):
    path = tmp_path / "apps.jsonl"
    path.write_text(json.dumps({"problem_id": 1, "question": "q", "input_output": "{not json"}) + "\n")
    with pytest.raises(DatasetError, match=r"apps.jsonl, row 1, field 'input_output': not valid JSON"):
        load_benchmark("apps", path=path)


def test_row_of_no_known_schema_is_malformed(tmp_path):
    path = tmp_path / "apps.jsonl"
    path.write_text(json.dumps({"question": "q"}) + "\n")
    with pytest.raises(DatasetError, match=r"row 1, field 'input_output': missing"):
        load_benchmark("apps", path=path)


def test_genverse_json_list():
    problems = load_benchmark("genverse-codecontests", path=FIXTURES / "genverse.json")
    first, second = problems
    assert first.id == "genverse-codecontests/cc-0" and second.id == "genverse-codecontests/2"
    assert first.tests == (StdioTest("3\n", "9\n"), StdioTest("0\n", "0\n"), StdioTest("-2\n", "4\n"))
    assert first.public_tests == (StdioTest("3\n", "9\n"),) and first.time_limit_s == 1.0
    # no examples: no public test; a hidden (scoring) test must never reach a prompt
    assert second.public_tests == () and second.tests
    from corecode.agents import TaskView, render_prompt
    from corecode.agents.view import format_test

    prompt = render_prompt("coder", TaskView.from_problem(second))[1]["content"]
    assert "Examples:" not in prompt and not any(format_test(t) in prompt for t in second.tests)
    assert "Examples:" in render_prompt("coder", TaskView.from_problem(first))[1]["content"]
    train = load_benchmark("genverse-codecontests-train", path=FIXTURES / "genverse.json")
    assert train[0].split == "train"


def test_genverse_mismatched_lists_name_row_and_field():
    path = FIXTURES / "genverse_bad.json"
    with pytest.raises(DatasetError) as err:
        load_benchmark("genverse-mbpp", path=path)
    assert (err.value.row, err.value.field) == (2, "test_output")
    assert "2 inputs but 1 outputs" in str(err.value)
