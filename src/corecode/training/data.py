"""Training problems -> rows of a Hugging Face dataset with the columns the rewards read.

Each row is ``{"prompt": [system, user messages], "problem_id": str}`` (stage 1 adds ``reference_time_s``): the prompt is the role's chat
prompt rendered by :func:`corecode.agents.render_prompt` (the same prompt the pipelines use at evaluation
time), and ``problem_id`` is the key the reward callables look the :class:`Problem` up with (a dataset
cannot hold the Problem object itself). TRL passes every non-prompt column to the rewards as a keyword.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from corecode.agents import TaskView, render_prompt, shown_plan
from corecode.errors import ConfigError
from corecode.registry import import_path
from corecode.types import Problem

__all__ = ["load_problems", "unique_problems", "planner_rows", "coder_rows", "to_dataset"]


def load_problems(
    benchmark: str, split: str, *, path: str | None = None, limit: int | None = None, ids: Sequence[str] = ()
) -> list[Problem]:
    """Problems of a corecode benchmark, or of a ``module:function(split, path=, limit=)`` plug-in.

    ``split`` may join splits with ``+`` (``validation+test``): their problems in that order, then ``ids``
    and ``limit`` apply to the whole list (a held-out set larger than one split)."""
    if "+" in split:
        problems = [p for part in split.split("+") for p in _load_split(benchmark, part.strip(), path)]
    else:
        problems = _load_split(benchmark, split, path)
    return _select(problems, benchmark, split, path, limit, ids)


def _load_split(benchmark: str, split: str, path: str | None) -> list[Problem]:
    if ":" in benchmark:
        problems = list(import_path(benchmark)(split, path=path, limit=None))  # type: ignore[operator]
    else:
        from corecode.benchmarks import load_benchmark

        problems = load_benchmark(benchmark, split, path=path)
    return problems


def _select(
    problems: list[Problem], benchmark: str, split: str, path: str | None, limit: int | None, ids: Sequence[str]
) -> list[Problem]:
    if ids:
        wanted = set(ids)
        problems = [p for p in problems if p.id in wanted]
        missing = wanted - {p.id for p in problems}
        if missing:
            raise ConfigError(f"problem_ids not in {benchmark} {split}: {', '.join(sorted(missing))}")
    if limit:
        problems = problems[:limit]
    if not problems:
        raise ConfigError(f"no training problems in {benchmark} split {split!r} (path={path})")
    ids_seen: set[str] = set()
    for p in problems:
        if p.id in ids_seen:
            raise ConfigError(f"{benchmark} {split}: duplicate problem id {p.id!r}; rewards look problems up by id")
        ids_seen.add(p.id)
    return problems


def unique_problems(*groups: Sequence[Problem]) -> list[Problem]:
    """The problems of all groups (training, validation), each id once, in first-seen order."""
    return list({p.id: p for group in groups for p in group}.values())


def planner_rows(
    problems: Sequence[Problem],
    reference_times: Mapping[str, float | None] | None = None,
    role: str = "planner",
    **inputs: object,
) -> list[dict[str, Any]]:
    """Stage 1: the Planner's prompt for each problem (or another auxiliary ``role``'s, with its ``inputs``,
    e.g. ``role="retrieval", k=1``), and the problem's reference time (t_ref) when measured."""
    rows = []
    for p in problems:
        row: dict[str, Any] = {"prompt": render_prompt(role, TaskView.from_problem(p), **inputs), "problem_id": p.id}
        if reference_times is not None:
            row["reference_time_s"] = reference_times.get(p.id)
        rows.append(row)
    return rows


def coder_rows(problems: Sequence[Problem], plans: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """Stage 2: the Coder's prompt with the problem's plan, or the plain Coder prompt when ``plans`` is None."""
    rows = []
    for p in problems:
        view = TaskView.from_problem(p)
        prompt = (render_prompt("coder", view) if plans is None
                  else render_prompt("coder_with_plan", view, plan=shown_plan(plans[p.id])))
        rows.append({"prompt": prompt, "problem_id": p.id})
    return rows


def to_dataset(rows: list[dict[str, Any]]):
    from datasets import Dataset

    return Dataset.from_list(rows)
