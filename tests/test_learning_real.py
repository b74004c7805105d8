"""benchmarks/learning_real.py without models: the held-out set, the problem filter's rule and the report."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "learning_real.py"


@pytest.fixture(scope="module")
def lr():
    spec = importlib.util.spec_from_file_location("learning_real", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["learning_real"] = module
    spec.loader.exec_module(module)
    return module


def test_held_out_set_is_mbpp_validation_then_test_and_disjoint_from_training(lr):
    pool, heldout = lr.load_sets(lr.parse_args(["--data-path", "", "--train-pool", "374", "--heldout", "100"]))
    ids = [p.id for p in heldout]
    assert len(ids) == 100 and ids[0] == "mbpp/511" and ids[89] == "mbpp/600" and ids[90] == "mbpp/11"
    assert len(pool) == 374 and not {p.id for p in pool} & set(ids)


def test_filter_keeps_only_problems_whose_programs_differ(lr):
    rows = {
        "a": {"pass_rates": [1.0, 1.0, 1.0]},  # always solved
        "b": {"pass_rates": [0.0, 0.0]},  # never
        "c": {"pass_rates": [0.0, 1.0]},  # kept
        "d": {"pass_rates": [0.5, 0.5]},  # constant partial credit: zero variance too
        "e": {"pass_rates": [None, 0.25, 0.5]},  # a sandbox failure is ignored, the rest differ
        "f": {"pass_rates": [None, None]},
    }
    assert lr.classify(list(rows), rows) == (["c", "e"], 1, 2, 1)


def test_report_has_the_validation_tables_with_intervals_and_the_change(lr, tmp_path):
    stage1 = tmp_path / "stage1" / "round1" / "planner"
    stage1.mkdir(parents=True)
    start = {"step": 0, "n_problems": 140, "pass1_alone": 0.3, "pass1_with": 0.2, "cg_points": -10.0,
             "pass1_alone_ci": [0.23, 0.38], "pass1_with_ci": [0.14, 0.27], "cg_ci": [-17.1, -2.9],
             "cg_flips": {"with_better": 6, "alone_better": 20}, "plan_format_ok": 0.4, "plan_chars_mean": 410}
    end = {**start, "step": 60, "pass1_with": 0.35, "cg_points": 5.0, "cg_ci": [-2.1, 12.1],
           "vs_start": {"step": 0, "cg": {"diff": 15.0, "ci": [6.4, 23.6], "up": 25, "down": 4}}}
    (stage1 / "validation.jsonl").write_text(json.dumps(start) + "\n" + json.dumps(end) + "\n")
    (stage1 / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "reward": r, "kl": 0.001 * i}) + "\n"
                                                  for i, r in enumerate([0.2, 0.3, 0.4, 0.5])))
    text = lr.write_report(lr.parse_args(["--out", str(tmp_path)]), tmp_path)
    assert "| 0 | 30.0 [23.0, 38.0] | 20.0 [14.0, 27.0] | -10.0 [-17.1, -2.9] | 6 / 20 | - |" in text
    assert "| 60 |" in text and "+15.0 [+6.4, +23.6], 25 up / 4 down" in text
    assert "reward 0.250 -> 0.450" in text  # first 2 vs last 2 of 4 steps
    assert (tmp_path / "report.md").read_text() == text
    # stage 2: both of the Coder's pass rates change (with the plans, and alone); each has its paired change
    stage2 = tmp_path / "stage2" / "round1" / "coder"
    stage2.mkdir(parents=True)
    trained = {**start, "step": 14, "vs_start": {"step": 0, "pass1_with": {"diff": 6.0, "ci": [1.0, 11.0], "up": 8, "down": 2},
                                                 "pass1_alone": {"diff": -2.0, "ci": [-6.0, 2.0], "up": 1, "down": 3}}}
    (stage2 / "validation.jsonl").write_text(json.dumps(start) + "\n" + json.dumps(trained) + "\n")
    text = lr.write_report(lr.parse_args(["--out", str(tmp_path)]), tmp_path)
    assert "| 14 | 20.0 [14.0, 27.0] | 30.0 [23.0, 38.0] | -10.0 [-17.1, -2.9] | +6.0 [+1.0, +11.0], 8 up / 2 down " \
           "| -2.0 [-6.0, +2.0], 1 up / 3 down |" in text


def test_report_only_lists_every_invocation_and_runs_nothing(lr, tmp_path, capsys):
    stage1 = tmp_path / "stage1" / "round1" / "planner"
    stage1.mkdir(parents=True)
    row = {"step": 0, "n_problems": 100, "pass1_alone": 0.38, "pass1_with": 0.31, "cg_points": -7.0,
           "cg_ci": [-16.0, 2.0], "cg_flips": {"with_better": 8, "alone_better": 15}}
    (stage1 / "validation.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "commands.txt").write_text("2026-12-02 00:17 python benchmarks/learning_real.py --stage1-steps 14\n"
                                           "2026-12-02 01:26 python benchmarks/learning_real.py --stage1-steps 6\n")
    lr.main(["--out", str(tmp_path), "--report-only"])  # no model is loaded: this returns in a second
    text = (tmp_path / "report.md").read_text()
    assert "- `2026-12-02 00:17 python benchmarks/learning_real.py --stage1-steps 14`" in text
    assert "--stage1-steps 6`" in text and "| 0 | 38.0 | 31.0 | -7.0 [-16.0, +2.0] | 8 / 15 |" in text
    assert (tmp_path / "commands.txt").read_text().count("\n") == 2, "--report-only is not an invocation"
    assert not (tmp_path / "stage2").exists() and text in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no run directory"):
        lr.main(["--out", str(tmp_path / "missing"), "--report-only"])


def test_reuse_filter_takes_an_earlier_runs_kept_problems_and_refuses_unknown_ids(lr, tmp_path):
    pool, _ = lr.load_sets(lr.parse_args(["--data-path", "", "--train-pool", "10", "--heldout", "3"]))
    summary = tmp_path / "earlier.json"
    summary.write_text(json.dumps({"pool": 10, "kept": 2, "trained_on": [pool[3].id, pool[7].id]}))
    out = tmp_path / "run"
    out.mkdir()
    args = lr.parse_args(["--data-path", "", "--reuse-filter", str(summary), "--train-problems", "1"])
    assert lr.filter_problems(args, pool, out) == [pool[3].id]  # no model loaded: nothing is measured
    assert json.loads((out / "filter-summary.json").read_text())["reused_from"] == str(summary)
    summary.write_text(json.dumps({"trained_on": ["mbpp/999999"]}))
    with pytest.raises(SystemExit, match="outside the --train-pool"):
        lr.filter_problems(args, pool, out)
    assert lr.parse_args(["--problems-per-step", "4", "--num-generations", "4"]).problems_per_step == 4


def test_problems_per_step_are_accumulated_not_one_big_backward(lr):
    # stage 2 with 16 rows of ~700 tokens in one backward held 24 GB on the 2-core machine and was OOM-killed
    args = lr.parse_args(["--problems-per-step", "4", "--num-generations", "4"])
    overrides = lr._common(args, [], ["mbpp/602"])
    assert "per_device_train_batch_size=4" in overrides and "gradient_accumulation_steps=4" in overrides
    from corecode.training import load_config

    config = load_config(None, overrides + ["stage=coder", "output_dir=/tmp/unused"])
    assert config.per_device_train_batch_size * config.gradient_accumulation_steps == 16


def test_filter_by_coder_alone_keeps_problems_where_a_program_passes_a_test(lr):
    rows = {
        "a": {"pass_rates": [1.0, 1.0, 1.0, 1.0]},  # always solved alone: kept (a plan can still break it)
        "b": {"pass_rates": [0.0, 0.0, 0.0, 0.0]},  # nothing passes: dropped
        "c": {"pass_rates": [0.0, 0.5, 0.0, 0.0]},  # one test of one program: kept
        "d": {"pass_rates": [None, None]},  # nothing measured: dropped
        "e": {"pass_rates": [None, 1.0]},
    }
    assert lr.classify_alone(list(rows), rows) == (["a", "c", "e"], 2, 2, 0)
    args = lr.parse_args(["--filter-by", "alone"])
    assert args.filter_by == "alone" and lr.parse_args([]).filter_by == "pair"


def _stage1_config(lr, **changes):
    from corecode.training import load_config

    args = lr.parse_args(["--data-path", "", "--plan-tokens", "256"])
    overrides = lr._common(args, [], ["mbpp/602"]) + [
        "stage=planner", "planner_model=builtin:qwen2.5-coder-0.5b", "coder_model=builtin:qwen2.5-coder-0.5b",
        "validation_ids=[mbpp/511, mbpp/512]", "max_completion_length=256", "partner_max_tokens=256"]
    return load_config(None, overrides + [f"{k}={v}" for k, v in changes.items()])


def test_start_validation_copies_step_0_only_from_a_run_with_the_same_setup(lr, tmp_path):
    import yaml

    source = tmp_path / "earlier"
    (source / "stage1" / "round1" / "planner").mkdir(parents=True)
    (source / "stage1" / "config.yaml").write_text(yaml.safe_dump(_stage1_config(lr).to_dict()))
    rows = [{"step": 0, "n_problems": 2, "cg_points": -7.0, "per_problem": {"mbpp/511": [1, 0], "mbpp/512": [0, 0]}},
            {"step": 5, "cg_points": -10.0}]
    (source / "stage1" / "round1" / "planner" / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    new = tmp_path / "new" / "stage1"
    lr.seed_start_validation(source, new, _stage1_config(lr))
    copied = [json.loads(line) for line in (new / "round1" / "planner" / "validation.jsonl").read_text().splitlines()]
    assert len(copied) == 1 and copied[0]["step"] == 0 and copied[0]["cg_points"] == -7.0
    assert copied[0]["copied_from"] == str(source)
    text = lr.write_report(lr.parse_args(["--out", str(tmp_path / "new")]), tmp_path / "new")
    assert f"Step 0 is the row of {source} (`--start-validation`" in text
    # a longer plan cap, a different Coder or other held-out problems: the untrained row does not apply
    for change in ({"max_completion_length": 160}, {"coder_model": "builtin:qwen2.5-coder-1.5b"},
                   {"validation_ids": "[mbpp/511]"}):
        with pytest.raises(SystemExit, match="differs in"):
            lr.seed_start_validation(source, tmp_path / "other" / "stage1", _stage1_config(lr, **change))
    with pytest.raises(SystemExit, match="no stage1/config.yaml there"):
        lr.seed_start_validation(tmp_path / "missing", tmp_path / "third" / "stage1", _stage1_config(lr))
    # a stage that has rows already (a resumed run) is left as it is
    lr.seed_start_validation(source, new, _stage1_config(lr, max_completion_length=160))
    assert len((new / "round1" / "planner" / "validation.jsonl").read_text().splitlines()) == 1


def test_report_compares_first_sight_rewards_of_early_and_late_training_problems(lr, tmp_path):
    stage = tmp_path / "stage1" / "round1" / "planner"
    stage.mkdir(parents=True)
    rows = []
    # steps 0-3 train new problems p0..p7 (two per step, two plans each); the later ones score higher;
    # step 4 trains p0 and p1 again
    for step in range(5):
        pids = [f"p{2 * step}", f"p{2 * step + 1}"] if step < 4 else ["p0", "p1"]
        for pid in pids:
            for plan in range(2):
                reward = (0.1 if step < 2 else 0.8) + 0.1 * plan + (0.2 if step == 4 else 0.0)
                rows.append({"step": step, "problem_id": pid, "reward": reward,
                             "outcomes": [{"pass_rate": reward}, {"pass_rate": reward}]})
    (stage / "executions-rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = lr._training_problem_lines(stage)
    first = next(line for line in lines if line.startswith("Training problems at first sight"))
    # steps 0-4: the middle is 2.5, so p0..p5 (steps 0-2) against p6, p7 (step 3)
    assert "steps < 2.5 (6 problems) vs later (2;" in first
    assert "plan reward 0.383 -> 0.850, +0.467 [" in first
    low = float(first.split("+0.467 [")[1].split(",")[0])
    assert low > 0.0  # a gap this clear excludes zero
    twice = next(line for line in lines if line.startswith("Problems trained on twice"))
    assert "(2): plan reward first vs second pass +0.900" in twice and "2 up / 0 down" in twice
    assert lr._training_problem_lines(tmp_path / "missing") == []


def test_num_iterations_reaches_trl_and_is_left_out_by_default(lr):
    assert not any("num_iterations" in o for o in lr._common(lr.parse_args([]), [], ["mbpp/602"]))
    overrides = lr._common(lr.parse_args(["--num-iterations", "4"]), [], ["mbpp/602"])
    assert "grpo.num_iterations=4" in overrides
    with pytest.raises(SystemExit, match="num-iterations"):
        lr._common(lr.parse_args(["--num-iterations", "0"]), [], ["mbpp/602"])


def test_stage2_validates_at_start_and_end_unless_asked_for_a_middle(lr, tmp_path):
    from corecode.training import load_config

    def eval_steps(argv):
        args = lr.parse_args(argv)
        overrides = lr.stage2_overrides(args, tmp_path, [], ["mbpp/602"], tmp_path / "planner")
        return load_config(None, overrides).eval_steps

    assert eval_steps(["--stage2-steps", "14"]) == 0
    assert eval_steps(["--stage2-steps", "14", "--stage2-eval-steps", "7"]) == 7
    with pytest.raises(SystemExit, match="stage2-eval-steps"):
        eval_steps(["--stage2-eval-steps", "-1"])


def test_report_compares_first_sight_rewards_of_stage_2_programs(lr, tmp_path):
    # stage 2 logs one row per program with its own "outcome"; four problems, the later two solved more often
    stage = tmp_path / "stage2" / "round1" / "coder"
    stage.mkdir(parents=True)
    rows = [{"step": step, "problem_id": f"p{step}", "reward": rate, "outcome": {"pass_rate": rate}}
            for step in range(4) for rate in ((0.0, 0.5) if step < 2 else (1.0, 1.0))]
    (stage / "executions-rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = lr._training_problem_lines(stage, "program reward")[0]
    assert "steps < 2 (2 problems) vs later (2;" in first
    assert "program reward 0.250 -> 1.000, +0.750 [" in first
    assert "Coder pass rate with the plans 0.250 -> 1.000, +0.750 [" in first
