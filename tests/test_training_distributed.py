"""Two real processes (torchrun, as `python -m torch.distributed.run`; accelerate picks up the env and uses gloo on CPU): a TRL group straddles the processes, and corecode's rewards
still score it as one group. Starts two Python processes (about 15 s on 2 idle cores)."""

import json
import os
import subprocess
import sys

import trl  # noqa: F401 - the [train] extra is required (README): missing, these tests fail, never skip

from corecode.rewards import Outcome, RewardConfig, coder_group_rewards


def test_groups_straddling_two_processes_are_scored_as_one(tmp_path):
    out = tmp_path / "run"
    # 2 processes x 6 rows = 12 rows = 3 prompts x G=4: the second group is split 2 + 2 across the ranks
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "corecode", "train", "--preset", "cpu-smoke", f"output_dir={out}",
        "stage=coder", "use_plans=false", "validation_limit=0", "per_device_train_batch_size=6", "max_steps=2",
    ]
    env = {**os.environ, "CORECODE_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    stage = out / "round1" / "coder"
    ranks = [[json.loads(line) for line in (stage / f"executions-rank{r}.jsonl").read_text().splitlines()]
             for r in (0, 1)]
    for step in (0, 1):
        rows = [row for rank in ranks for row in rank if row["step"] == step]  # process 0 first, like TRL
        assert len(rows) == 12
        groups = [rows[i : i + 4] for i in range(0, 12, 4)]
        assert all(len({r["problem_id"] for r in g}) == 1 for g in groups)
        assert {r["rank"] for r in groups[1]} == {0, 1}, "the middle group should straddle the two ranks"
        recomputed = [x for g in groups for x in coder_group_rewards(
            [None if r["outcome"] is None else Outcome.from_dict(r["outcome"]) for r in g], RewardConfig())]
        assert recomputed == [r["reward"] for r in rows]
    assert (stage / "final" / "model.safetensors").is_file()


def test_torchrun_processes_see_each_other_before_training_starts(tmp_path):
    # Regression: a plain accelerate.PartialState() on a CPU machine reports ONE process under torchrun, so
    # the refusal of multi-process validation below never fired and main_process_first did not order the
    # ranks (rank 1 once read the tiny model while rank 0 was still writing it).
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "corecode", "train", "--preset", "cpu-smoke",
        f"output_dir={tmp_path / 'run'}", "stage=coder", "use_plans=false", "validation_limit=2",
    ]
    env = {**os.environ, "CORECODE_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "validation_limit=0 for multi-process training" in done.stderr, done.stderr[-2000:]
