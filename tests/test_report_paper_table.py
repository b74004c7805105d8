"""`corecode report --table paper`: CoRe-Code and the four RL baselines x the paper's benchmarks, Pass@1 with
its 95 % interval, from real `corecode eval` runs (oracle model double, real sandbox); missing cells say so."""

import json
from collections import Counter

import pytest

from corecode.cli import main
from corecode.errors import ConfigError
from corecode.evaluation import EvalConfig, run_eval
from corecode.evaluation.report import PAPER_BENCHMARKS, PAPER_METHODS, build_paper_table
from corecode.metrics.bootstrap import bootstrap_pass_at_k

ORACLE = "tests.fixtures.evaluation.backends:oracle"
REPO_ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))


@pytest.fixture(scope="module")
def mbpp_runs(tmp_path_factory):
    """Two finished MBPP runs (3 problems, n = 2; the oracle writes a wrong program for some seeds)."""
    root = tmp_path_factory.mktemp("paper")
    out = []
    for name, seed in (("a", 0), ("b", 5)):
        config = EvalConfig(benchmark="mbpp", limit=3, n=2, temperature=0.8, pipeline="direct", model=ORACLE,
                            out=str(root / name), workers=2, seed=seed)
        run_eval(config, progress=False, log=lambda _: None)
        out.append(config.run_dir)
    return out


def _counts(run_dir):
    """(n, correct) per problem, read from the run's results.jsonl (not from its summary)."""
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    n, correct = Counter(r["task_id"] for r in rows), Counter(r["task_id"] for r in rows if r["passed"])
    return {t: (n[t], correct[t]) for t in n}


def test_methods_by_benchmarks_with_pass1_intervals_and_missing_cells(mbpp_runs):
    a, b = mbpp_runs
    table = build_paper_table([f"corecode={a}", f"focused_dpo={b}"])
    for method, run_dir in (("corecode", a), ("focused_dpo", b)):
        counts = _counts(run_dir)
        expected = bootstrap_pass_at_k(counts, 1)
        cell = table.cell(method, "MBPP")
        assert cell["pass1"] == pytest.approx(100 * sum(c / n for n, c in counts.values()) / len(counts))
        assert cell["ci"] == pytest.approx([100 * expected.low, 100 * expected.high])
        assert cell["benchmark"] == "mbpp" and cell["n_problems"] == 3 and cell["n"] == 2
    assert all(table.cell(m, c) is None for m in PAPER_METHODS for c in PAPER_BENCHMARKS
               if (m, c) not in {("corecode", "MBPP"), ("focused_dpo", "MBPP")})

    lines = table.render("md").splitlines()
    assert lines[0].replace(" ", "") == "|method|LiveBench|MBPP|CodeContests|CodeForces|"
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")[1:]]
            for line in lines[2:7]}
    assert list(rows) == ["GRPO", "Focused-DPO", "CURE", "CodeRL+", "CoRe-Code"]
    core = table.cell("corecode", "MBPP")
    assert rows["CoRe-Code"] == ["missing", f"{core['pass1']:.1f} [{core['ci'][0]:.1f}, {core['ci'][1]:.1f}]",
                                 "missing", "missing"]
    assert rows["GRPO"] == ["missing"] * 4
    assert "| GRPO | 45.5 | 80.7 | 33.7 | 12.9 |" in "\n".join(lines)  # the paper's reported row, for reference

    data = {row["key"]: row for row in json.loads(table.render("json"))}
    assert data["focused_dpo"]["cells"]["MBPP"]["run_dir"] == str(b)
    assert data["cure"]["cells"] == {c: None for c in PAPER_BENCHMARKS}
    csv_rows = table.render("csv").splitlines()
    assert csv_rows[0].startswith("method,LiveBench Pass@1,LiveBench low,LiveBench high,LiveBench run,MBPP Pass@1")
    assert csv_rows[5].split(",")[5] == f"{core['pass1']:.1f}" and csv_rows[1].split(",")[5] == ""


def test_cli_prints_the_paper_table(mbpp_runs, capsys):
    assert main(["report", "--table", "paper", f"grpo={mbpp_runs[0]}"]) == 0
    out = capsys.readouterr().out
    grpo = next(line for line in out.splitlines() if line.startswith("| GRPO"))
    assert grpo.count("missing") == 3 and "[" in grpo


def test_bad_items_are_refused_with_what_to_give(mbpp_runs, tmp_path):
    a, b = mbpp_runs
    with pytest.raises(ConfigError, match="METHOD=RUN_DIR"):
        build_paper_table([str(a)])
    with pytest.raises(ConfigError, match="unknown method 'dpo'"):
        build_paper_table([f"dpo={a}"])
    with pytest.raises(ConfigError, match="two runs for GRPO on MBPP"):
        build_paper_table([f"grpo={a}", f"grpo={b}"])
    with pytest.raises(ConfigError, match="not a finished evaluation run"):
        build_paper_table([f"cure={tmp_path}"])
    humaneval = tmp_path / "he"
    humaneval.mkdir()
    summary = json.loads((a / "summary.json").read_text())
    summary["run"]["benchmark"] = "humaneval"
    (humaneval / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ConfigError, match="'humaneval' is not one of the paper's table"):
        build_paper_table([f"cure={humaneval}"])
