"""`corecode report`: the comparison table (md, csv, json) and the plots, from finished runs' summaries."""

import csv
import io
import json

import pytest

from corecode.cli import main
from corecode.errors import ConfigError
from corecode.evaluation.config import EvalConfig
from corecode.evaluation.report import build_report
from corecode.evaluation.runner import RunFiles
from corecode.evaluation.summary import summarize, write_summary
from corecode.types import AssertTest, Problem

PROBLEMS = [Problem(id=f"p{i}", source="toy", statement="s", tests=(AssertTest("assert True"),)) for i in range(4)]


def _run(tmp_path, name, pipeline, benchmark, passes, aux=(), baseline=None):
    """A finished run: problem i passes (both samples) when passes[i]."""
    config = EvalConfig(benchmark=benchmark, pipeline=pipeline, n=2, temperature=0.8, out=str(tmp_path / name))
    samples, results = [], []
    for problem, ok in zip(PROBLEMS, passes):
        for index in range(2):
            samples.append({"task_id": problem.id, "sample_index": index, "program": "x = 1",
                            "trace": [{"role": "coder", "prompt_tokens": 10, "completion_tokens": 5}]})
            results.append({"task_id": problem.id, "sample_index": index, "passed": ok, "n_passed": int(ok),
                            "n_tests": 1, "status": "passed" if ok else "wrong_answer", "exception": None,
                            "cpu_time_s": 0.01, "peak_memory_bytes": 1000})
    summary = summarize(config, PROBLEMS, samples, results, list(aux), baseline)
    files = RunFiles(config.run_dir)
    files.dir.mkdir(parents=True)
    write_summary(files, summary)
    return files.dir


@pytest.fixture
def runs(tmp_path):
    alone = {"run_dir": "d", "reused": True, "per_problem": {p.id: (2, 2 * (i == 0)) for i, p in enumerate(PROBLEMS)}}
    return [
        _run(tmp_path, "direct-mbpp", "direct", "mbpp", [1, 0, 0, 0]),
        _run(tmp_path, "pc-mbpp", "planner_coder", "mbpp", [1, 1, 1, 0], ["planner"], alone),
        _run(tmp_path, "pc-humaneval", "planner_coder", "humaneval", [1, 1, 0, 0], ["planner"], alone),
    ]


def test_rows_are_setups_and_columns_are_metrics_per_benchmark(runs):
    report = build_report(runs)
    assert report.benchmarks == ["mbpp", "humaneval"]
    assert len(report.rows) == 2  # planner_coder's two benchmarks share a row
    table = report.render("md")
    assert "| mbpp Pass@1 | mbpp APR | mbpp CG |" in table.splitlines()[0].replace(" | mbpp tokens/problem", "")
    pc_row = next(line for line in table.splitlines() if line.startswith("| planner_coder"))
    cells = [c.strip() for c in pc_row.strip("|").split("|")]
    # mbpp: 3 of 4 problems; CG 75 - 25 points; each cell carries its 95 % interval
    assert [c.split(" [")[0] for c in cells[1:4]] == ["75.0", "75.0", "+50.0"]
    assert [c.split(" [")[0] for c in cells[5:8]] == ["50.0", "50.0", "+25.0"]  # humaneval
    assert cells[1] == "75.0 [25.0, 100.0]"  # 4 problems 1,1,1,0: resampled means run from 1/4 to 4/4
    assert cells[3] == "+50.0 [+0.0, +100.0]"  # CG per problem +1 (p1, p2) or 0: paired, never below 0


def test_csv_and_json_carry_the_same_numbers(runs):
    report = build_report(runs)
    rows = list(csv.DictReader(io.StringIO(report.render("csv"))))
    assert rows[0]["mbpp Pass@1"] == "25.0" and rows[0]["humaneval Pass@1"] == ""
    assert (rows[1]["mbpp Pass@1 low"], rows[1]["mbpp Pass@1 high"]) == ("25.0", "100.0")
    assert (rows[1]["mbpp CG low"], rows[1]["mbpp CG high"]) == ("0.0", "100.0")
    data = json.loads(report.render("json"))
    assert data[1]["benchmarks"]["mbpp"]["Pass@1"] == pytest.approx(0.75)
    assert data[1]["benchmarks"]["mbpp"]["CG"] == pytest.approx(50.0)
    assert data[1]["benchmarks"]["mbpp"]["Pass@1 95% CI"] == pytest.approx([0.25, 1.0])


def test_report_compares_runs_on_one_benchmark_with_paired_intervals_and_flips(runs, tmp_path):
    # direct solves p0; a second direct run solves p1, p2: B - A = +25 points, 2 problems up, 1 down
    other = _run(tmp_path, "direct-mbpp-2", "direct", "mbpp", [0, 1, 1, 0])
    report = build_report([runs[0], other])
    (comparison,) = report.comparisons()
    assert comparison["problems"] == 4
    assert comparison["pass1"]["estimate"] == pytest.approx(25.0)
    assert (comparison["pass1"]["b_better"], comparison["pass1"]["a_better"]) == (2, 1)
    assert comparison["pass1"]["low"] < 0 < comparison["pass1"]["high"]  # 2 up / 1 down of 4 is noise
    table = report.render("md")
    assert "Paired differences" in table and "| 2 / 1 |" in table
    assert any("comparison" in row for row in json.loads(report.render("json")))


def test_same_setup_twice_on_one_benchmark_gets_two_rows(runs, tmp_path):
    again = _run(tmp_path, "direct-mbpp-2", "direct", "mbpp", [1, 1, 0, 0])
    report = build_report([*runs, again])
    assert len(report.rows) == 3 and any("[direct-mbpp-2]" in label for label in report.rows)


def test_not_a_run_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not a finished evaluation run"):
        build_report([tmp_path])


def test_cli_report_writes_table_and_both_plots(runs, tmp_path, capsys):
    png = tmp_path / "plots" / "cmp.png"
    assert main(["report", *map(str, runs), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| run |")
    assert png.stat().st_size > 1000
    scatter = png.with_name("cmp_scatter.png")
    assert scatter.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
