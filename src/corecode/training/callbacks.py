"""Trainer callbacks: pass@1 and Collaboration Gain on a fixed validation set every N steps, and plots.

``validation.jsonl`` and ``metrics.jsonl`` (TRL's logged scalars, one line per log) sit next to the
checkpoints, and ``curves.png`` (reward, pass rate and CG over steps) is redrawn at each validation and at
the end of the stage. Each validation row carries 95 % intervals over its problems (pass@1 by bootstrap, CG
by a paired bootstrap against the Coder alone, with the problems that flip each way), the per-problem
outcomes, and ``vs_start``: the paired change since the stage's first validation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from corecode.agents import TaskView, render_prompt, shown_plan
from corecode.backends import Backend, SamplingConfig
from corecode.metrics.bootstrap import bootstrap_mean, paired_bootstrap
from corecode.metrics.collaboration import collaboration_gain
from corecode.rewards import plan_format_misses
from corecode.rewards.trl_rewards import Executor
from corecode.types import Problem

__all__ = ["CollaborationProbe", "ValidationCallback", "MetricsCallback", "plot_curves", "compare_validations"]


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
    # the Coder is frozen and greedy (stage 1): its programs alone are measured once and reused
    fixed_alone: bool = False
    _alone: list[bool | None] | None = field(default=None, init=False, repr=False)

    def reuse_alone(self, row: dict[str, Any]) -> bool:
        """Take the frozen Coder's alone outcomes from an earlier validation ``row`` of this stage (a restarted
        run: the Coder and the problems are the same, so its greedy programs are too). Only with
        ``fixed_alone``; a problem the row left out (a sandbox error on our side) stays out. False when the
        row does not cover these problems."""
        per_problem = row.get("per_problem") or {}
        ids = [p.id for p in self.problems]
        if not self.fixed_alone or not per_problem or not set(per_problem) <= set(ids):
            return False
        self._alone = [None if tid not in per_problem else bool(per_problem[tid][0]) for tid in ids]
        return True

    def measure(self, model: Any) -> dict[str, Any]:
        views = [TaskView.from_problem(p) for p in self.problems]
        plans = self.plans(model) if self.plans is not None else None
        coder = self.coder(model)
        reuse = self.fixed_alone and self._alone is not None
        conversations = [] if reuse else [render_prompt("coder", v) for v in views]
        if plans is not None:
            conversations += [render_prompt("coder_with_plan", v, plan=shown_plan(plan)) for v, plan in zip(views, plans)]
        answers = [group[0].text for group in coder.generate(conversations, self.coder_sampling)]
        problems = list(self.problems) * (len(conversations) // len(self.problems))
        results = self.execute([(self.build_program(p, a), p) for a, p in zip(answers, problems)])
        n = len(self.problems)
        # None: the sandbox failed on our side. Not a failure of the Coder: such a problem is left out of
        # pass@1 and CG (of both columns, so that CG stays a paired comparison on the same problems)
        outcome = [None if r is None else bool(r.passed) for r in results]
        if reuse:
            outcome = self._alone + outcome  # type: ignore[operator]
        elif self.fixed_alone:
            self._alone = outcome[:n]
        with_plans = outcome[n:] if plans is not None else [False] * n
        scored = [i for i in range(n) if outcome[i] is not None and with_plans[i] is not None]
        alone = [bool(outcome[i]) for i in scored]
        row: dict[str, Any] = {
            "pass1_alone": sum(alone) / len(scored) if scored else None,
            "sandbox_errors": sum(o is None for o in outcome),
            "unscored_problems": n - len(scored),
        }
        if not scored:
            return row
        passed_with = [bool(with_plans[i]) for i in scored] if plans is not None else None
        row.update(_intervals([self.problems[i].id for i in scored], alone, passed_with))
        if plans is not None:
            row.update(collaboration_gain(sum(passed_with) / len(scored), row["pass1_alone"]).to_dict())
            row["plan_chars_mean"] = sum(len(p) for p in plans) / n
            if self.check_plan_format:
                row["plan_format_ok"] = sum(not plan_format_misses(p) for p in plans) / n
        return row


def _intervals(ids: list[str], alone: list[bool], with_plans: list[bool] | None) -> dict[str, Any]:
    """95 % intervals over the validation problems (corecode.metrics.bootstrap, seed 0), and per-problem
    outcomes so that two validations of one stage can be compared problem by problem."""
    alone_map = {tid: float(ok) for tid, ok in zip(ids, alone)}
    iv = bootstrap_mean(alone_map)
    out: dict[str, Any] = {"n_problems": len(ids), "pass1_alone_ci": [iv.low, iv.high]}
    per_problem = {tid: [int(ok)] for tid, ok in zip(ids, alone)}
    if with_plans is not None:
        with_map = {tid: float(ok) for tid, ok in zip(ids, with_plans)}
        iv = bootstrap_mean(with_map)
        cg = paired_bootstrap(alone_map, with_map).scaled(100.0)
        out.update({"pass1_with_ci": [iv.low, iv.high], "cg_ci": [cg.low, cg.high],
                    "cg_flips": {"with_better": cg.b_better, "alone_better": cg.a_better}})
        for tid, ok in zip(ids, with_plans):
            per_problem[tid].append(int(ok))
    out["per_problem"] = per_problem  # problem id -> [passed alone, passed with the plan]
    return out


def compare_validations(start: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """Paired differences (points) between two validation rows of one stage on the same problems:
    pass@1 alone, pass@1 with the plans, and CG (its per-problem term: with - alone), each with its 95 %
    interval and the problems that moved up / down. Empty when the rows lack per-problem outcomes."""
    a, b = start.get("per_problem"), now.get("per_problem")
    if not a or not b or set(a) != set(b):
        return {}
    out: dict[str, Any] = {}
    columns = {"pass1_alone": lambda v: v[0]}
    if all(len(v) == 2 for v in a.values()) and all(len(v) == 2 for v in b.values()):
        columns.update({"pass1_with": lambda v: v[1], "cg": lambda v: v[1] - v[0]})
    for name, value in columns.items():
        d = paired_bootstrap({t: float(value(v)) for t, v in a.items()}, {t: float(value(v)) for t, v in b.items()})
        d = d.scaled(100.0)
        out[name] = {"diff": d.estimate, "ci": [d.low, d.high], "up": d.b_better, "down": d.a_better}
    return out


class ValidationCallback(TrainerCallback):
    """Runs the probe at step 0, every ``every`` steps (0: never in between) and at the end."""

    def __init__(self, probe: CollaborationProbe, every: int, stage_dir: Path, stage: str):
        self.probe, self.every, self.stage_dir, self.stage = probe, every, Path(stage_dir), stage
        self.history: list[dict[str, Any]] = []
        # rows an interrupted run of this stage already wrote: the resumed run does not measure its starting
        # step again, and compares with the stage's first validation
        self.logged = _read_jsonl(self.stage_dir / "validation.jsonl")
        reuse_alone = getattr(probe, "reuse_alone", None)  # CollaborationProbe's; the debugger's probe has none
        if self.logged and reuse_alone is not None:  # the frozen Coder's programs alone need not be run again
            reuse_alone(self.logged[0])

    def _run(self, state: Any, model: Any) -> None:
        if not state.is_world_process_zero or any(h["step"] == state.global_step for h in self.history):
            return
        row = {"stage": self.stage, "step": state.global_step, **self.probe.measure(model)}
        start = next(iter(self.logged + self.history), None)
        if start is not None and start["step"] != row["step"]:
            row["vs_start"] = {"step": start["step"], **compare_validations(start, row)}
        self.history.append(row)
        with (self.stage_dir / "validation.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        plot_curves(self.stage_dir)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        # only a stage's first start measures its starting point: a run resumed at step N after an interruption
        # already has its start row, and an extra validation at N would cost as much as a scheduled one
        if not self.logged:
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
            cg = [v["cg_points"] for v in validation]
            if all("cg_ci" in v for v in validation):
                errors = [[c - v["cg_ci"][0] for c, v in zip(cg, validation)],
                          [v["cg_ci"][1] - c for c, v in zip(cg, validation)]]
                axes[2].errorbar(vsteps, cg, yerr=errors, marker="o", capsize=3)
                axes[2].axhline(0, color="grey", linewidth=0.8)
            else:
                axes[2].plot(vsteps, cg, marker="o")
    axes[1].set_title("pass rate")
    axes[1].legend(fontsize=7)
    axes[2].set_title("CG (points, validation, 95% paired CI)")
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = stage_dir / "curves.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
