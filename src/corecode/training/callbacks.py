"""Trainer callbacks: pass@1 and Collaboration Gain on a fixed validation set every N steps, and plots.

``validation.jsonl`` and ``metrics.jsonl`` (TRL's logged scalars, one line per log) sit next to the
checkpoints, and ``curves.png`` (reward, pass rate and CG over steps) is redrawn at each validation and at
the end of the stage.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from corecode.agents import TaskView, render_prompt
from corecode.backends import Backend, SamplingConfig
from corecode.metrics.collaboration import collaboration_gain
from corecode.rewards import plan_format_misses
from corecode.rewards.trl_rewards import Executor
from corecode.types import Problem

__all__ = ["CollaborationProbe", "ValidationCallback", "MetricsCallback", "plot_curves"]


@dataclass
class CollaborationProbe:
    """pass@1 of the Coder with and without the Planner's plans on fixed problems (one sample each).

    ``plans(model)`` and ``coder(model)`` are called with the policy's current model: in stage 1 the plans
    come from the policy and the coder is the frozen partner; in stage 2 the plans are the cached ones of
    the frozen Planner and the coder is the policy.
    """

    problems: Sequence[Problem]
    plans: Callable[[Any], list[str]] | None  # None: no Planner (plain GRPO), pass@1 alone only
    coder: Callable[[Any], Backend]
    execute: Executor
    build_program: Callable[[Problem, str], str]
    coder_sampling: SamplingConfig
    check_plan_format: bool = True  # plan_format_ok (the Algorithmic Thought's parts); off for other plan kinds

    def measure(self, model: Any) -> dict[str, Any]:
        views = [TaskView.from_problem(p) for p in self.problems]
        plans = self.plans(model) if self.plans is not None else None
        coder = self.coder(model)
        conversations = [render_prompt("coder", v) for v in views]
        if plans is not None:
            conversations += [render_prompt("coder_with_plan", v, plan=plan) for v, plan in zip(views, plans)]
        answers = [group[0].text for group in coder.generate(conversations, self.coder_sampling)]
        problems = list(self.problems) * (2 if plans is not None else 1)
        results = self.execute([(self.build_program(p, a), p) for a, p in zip(answers, problems)])
        n = len(self.problems)
        passed = [bool(r is not None and r.passed) for r in results]
        row: dict[str, Any] = {"pass1_alone": sum(passed[:n]) / n, "sandbox_errors": sum(r is None for r in results)}
        if plans is not None:
            row.update(collaboration_gain(sum(passed[n:]) / n, row["pass1_alone"]).to_dict())
            if self.check_plan_format:
                row["plan_format_ok"] = sum(not plan_format_misses(p) for p in plans) / n
        return row


class ValidationCallback(TrainerCallback):
    """Runs the probe at step 0, every ``every`` steps (0: never in between) and at the end."""

    def __init__(self, probe: CollaborationProbe, every: int, stage_dir: Path, stage: str):
        self.probe, self.every, self.stage_dir, self.stage = probe, every, Path(stage_dir), stage
        self.history: list[dict[str, Any]] = []

    def _run(self, state: Any, model: Any) -> None:
        if not state.is_world_process_zero or any(h["step"] == state.global_step for h in self.history):
            return
        row = {"stage": self.stage, "step": state.global_step, **self.probe.measure(model)}
        self.history.append(row)
        with (self.stage_dir / "validation.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        plot_curves(self.stage_dir)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._run(state, model)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.every and state.global_step % self.every == 0:
            self._run(state, model)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        self._run(state, model)


class MetricsCallback(TrainerCallback):
    """Appends TRL's logged scalars (reward, rewards/<name>/mean, pass rates, kl ...) to metrics.jsonl."""

    def __init__(self, stage_dir: Path):
        self.path = Path(stage_dir) / "metrics.jsonl"

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"step": state.global_step, **logs}) + "\n")

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            plot_curves(self.path.parent)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def plot_curves(stage_dir: Path) -> Path | None:
    """curves.png: training reward and pass rate per step, validation pass@1 and CG per step."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plots are a convenience: the JSONL files hold the same numbers
        return None
    metrics = [m for m in _read_jsonl(stage_dir / "metrics.jsonl") if "reward" in m]
    validation = _read_jsonl(stage_dir / "validation.jsonl")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    steps = [m["step"] for m in metrics]
    axes[0].plot(steps, [m["reward"] for m in metrics], marker=".")
    axes[0].set_title("training reward (group mean)")
    for key in ("pass_rate", "coder_pass_rate"):
        values = [(m["step"], m[key]) for m in metrics if isinstance(m.get(key), (int, float)) and not math.isnan(m[key])]
        if values:
            axes[1].plot(*zip(*values), marker=".", label=f"train {key}")
    if validation:
        vsteps = [v["step"] for v in validation]
        axes[1].plot(vsteps, [v["pass1_alone"] for v in validation], marker="o", label="val pass@1 alone")
        if "cg_points" in validation[0]:
            helper = "debugging round" if validation[0].get("stage") == "debugger" else "plan"
            axes[1].plot(vsteps, [v["pass1_with"] for v in validation], marker="o", label=f"val pass@1 with {helper}")
            axes[2].plot(vsteps, [v["cg_points"] for v in validation], marker="o")
    axes[1].set_title("pass rate")
    axes[1].legend(fontsize=7)
    axes[2].set_title("Collaboration Gain (points, validation)")
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = stage_dir / "curves.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
