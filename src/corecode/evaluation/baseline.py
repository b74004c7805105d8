"""The Coder-alone run that Collaboration Gain compares against.

Which runs get a CG: a pipeline with an *auxiliary agent*, i.e. a role (``Pipeline.roles``) that is not
played in the Coder's model slot (``Role.slot != "coder"``). Roles in the Coder's slot write code:
``coder``, ``coder_with_plan``, ``cot``, ``scot``, ``debugger``, ``reflexion_coder``. So, with the built-in
pipelines:

    planner_coder  planner                                      -> CG
    self_planning  self_planner                                 -> CG
    mapcoder       retrieval, exemplar_planner, plan_verifier   -> CG
    reflexion      reflector                                    -> CG
    direct, cot, scot  (the Coder prompting itself)             -> no CG

The rule reads the pipeline class, not the traces (a Reflexion run whose first attempts all pass never calls
its reflector, and still has a CG of its design); a plug-in pipeline is classified the same way.

The Coder alone is pipeline ``direct`` with the Coder's model, on the same problems (same benchmark, split
and benchmark file ``data_path``), with the same number of samples, the same sampling settings and the same
``seed`` (sample i of a problem draws with a seed derived from it). ``baseline: auto`` reuses a finished run in the same parent
directory that matches (or is a superset of the problems with the same n); otherwise it runs one, as a
normal resumable run directory next to this one (``RUN_DIR--coder-alone``). ``baseline: DIR`` uses that
run and fails loudly when it does not match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from corecode.errors import ConfigError
from corecode.evaluation.config import EvalConfig
from corecode.evaluation.summary import CODER_ROLE, load_summary
from corecode.types import Problem

__all__ = ["auxiliary_roles", "resolve_baseline", "baseline_mismatch", "coder_alone_config", "BASELINE_PIPELINE"]

BASELINE_PIPELINE = "direct"


def coder_alone_config(config: EvalConfig, run_dir: Path) -> EvalConfig:
    """The config of the Coder-alone run matching ``config``."""
    return config.replace(
        pipeline=BASELINE_PIPELINE,
        model=config.model_for(CODER_ROLE),
        role_models={},
        out=str(run_dir.parent / f"{run_dir.name}--coder-alone"),
        baseline="off",
    )


def baseline_mismatch(summary: dict[str, Any], config: EvalConfig, problem_ids: Sequence[str]) -> list[str]:
    """Why a finished run cannot serve as this run's Coder alone (empty list: it can)."""
    run = summary["run"]
    want = {
        "pipeline": BASELINE_PIPELINE,
        "coder model": config.model_for(CODER_ROLE),
        "benchmark": config.benchmark,
        "split": config.split,
        "n": config.n,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "seed": config.seed,
        "data_path": _path_key(config.data_path),
    }
    have = {
        "pipeline": run["pipeline"],
        "coder model": (run.get("role_models") or {}).get(CODER_ROLE, run["model"]),
        "benchmark": run["benchmark"],
        "split": run["split"],
        "n": run["n"],
        "temperature": run["temperature"],
        "top_p": run["top_p"],
        "max_tokens": run["max_tokens"],
        "seed": run.get("seed"),
        "data_path": _path_key(run.get("data_path")),
    }
    reasons = [f"{k} is {have[k]!r}, not {v!r}" for k, v in want.items() if have[k] != v]
    per_problem = summary["per_problem"]
    missing = [tid for tid in problem_ids if tid not in per_problem]
    if missing:
        reasons.append(f"{len(missing)} of the problems are missing (e.g. {missing[0]!r})")
    short = [tid for tid in problem_ids if tid in per_problem and per_problem[tid]["n"] != config.n]
    if short:
        reasons.append(f"{len(short)} problems do not have exactly n={config.n} samples (e.g. {short[0]!r})")
    return reasons


def _path_key(path: str | None) -> str | None:
    """A benchmark file as one spelling (``data/x.jsonl`` and ``./data/x.jsonl`` are the same file)."""
    return None if path is None else str(Path(path).expanduser().resolve())


def auxiliary_roles(pipeline: str) -> list[str]:
    """The roles of a pipeline that are not the Coder (see the module docstring)."""
    from corecode.agents import ROLES
    from corecode.pipelines import PIPELINES
    from corecode.registry import resolve

    roles = resolve(PIPELINES, pipeline, "pipeline").roles
    return [r for r in roles if (ROLES[r].slot if r in ROLES else r) != CODER_ROLE]


def resolve_baseline(
    config: EvalConfig,
    problems: Sequence[Problem],
    auxiliary: Sequence[str],
    run_dir: Path,
    *,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any] | None:
    """Per-problem (n, correct) of the Coder alone, or None when CG does not apply or is turned off."""
    if config.baseline == "off" or not auxiliary:
        return None
    ids = [p.id for p in problems]
    if config.baseline != "auto":
        summary = load_summary(config.baseline)
        reasons = baseline_mismatch(summary, config, ids)
        if reasons:
            raise ConfigError(f"--baseline-run {config.baseline} is not this run's Coder alone: {'; '.join(reasons)}")
        return _counts(summary, config.baseline, ids, reused=True)
    found = _find_matching(config, ids, run_dir)
    if found is not None:
        log(f"Collaboration Gain: reusing the Coder-alone run {found}")
        return _counts(load_summary(found), str(found), ids, reused=True)
    from corecode.evaluation.runner import run_eval

    alone = coder_alone_config(config, run_dir)
    log(f"Collaboration Gain: running the Coder alone (pipeline {BASELINE_PIPELINE}) into {alone.run_dir}")
    summary = run_eval(alone, progress=progress, log=log)
    return _counts(summary, str(alone.run_dir), ids, reused=False)


def _find_matching(config: EvalConfig, ids: Sequence[str], run_dir: Path) -> Path | None:
    parent = run_dir.resolve().parent
    for candidate in sorted(parent.glob("*/summary.json")):
        if candidate.parent == run_dir.resolve():
            continue
        try:
            summary = load_summary(candidate.parent)
            if not baseline_mismatch(summary, config, ids):
                return candidate.parent
        except (ConfigError, KeyError, TypeError):
            continue  # not a (compatible) corecode run: not a candidate
    return None


def _counts(summary: dict[str, Any], run_dir: str, ids: Sequence[str], reused: bool) -> dict[str, Any]:
    per_problem = summary["per_problem"]
    return {
        "run_dir": run_dir,
        "reused": reused,
        "per_problem": {tid: (per_problem[tid]["n"], per_problem[tid]["correct"]) for tid in ids},
    }
