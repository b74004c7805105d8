"""Inference pipelines: one module per method the paper compares, each ``solve(problem) -> Solution``.

``PIPELINES`` is the whole table (name -> class); :func:`build_pipeline` looks a name up (or imports a
``module:Class`` plug-in) and fills the pipeline's options dataclass from keyword arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corecode.backends.base import Backend, SamplingConfig
from corecode.errors import ConfigError
from corecode.pipelines.base import Pipeline, PublicTestRunner, SandboxLike, Solution, finish_program
from corecode.pipelines.cot import ChainOfThought
from corecode.pipelines.direct import Direct
from corecode.pipelines.mapcoder import MapCoder, MapCoderOptions
from corecode.pipelines.planner_coder import PlannerCoder
from corecode.pipelines.reflexion import Reflexion, ReflexionOptions
from corecode.pipelines.scot import StructuredChainOfThought
from corecode.pipelines.self_planning import SelfPlanning
from corecode.pipelines.test_selection import TestSelection, TestSelectionOptions
from corecode.registry import resolve

__all__ = [
    "PIPELINES",
    "build_pipeline",
    "Pipeline",
    "Solution",
    "PublicTestRunner",
    "SandboxLike",
    "finish_program",
    "Direct",
    "ChainOfThought",
    "StructuredChainOfThought",
    "SelfPlanning",
    "PlannerCoder",
    "Reflexion",
    "ReflexionOptions",
    "MapCoder",
    "MapCoderOptions",
    "TestSelection",
    "TestSelectionOptions",
]

PIPELINES: dict[str, type[Pipeline]] = {
    "direct": Direct,
    "cot": ChainOfThought,
    "scot": StructuredChainOfThought,
    "self_planning": SelfPlanning,
    "planner_coder": PlannerCoder,
    "reflexion": Reflexion,
    "mapcoder": MapCoder,
    "test_selection": TestSelection,
}


def build_pipeline(
    name: str,
    models: Backend | Mapping[str, Backend],
    sampling: SamplingConfig | None = None,
    sandbox: SandboxLike | None = None,
    prompt_dir: str | Path | None = None,
    **options: Any,
) -> Pipeline:
    """A pipeline by name. ``models``: one Backend for every role, or a dict role/slot -> Backend with
    an optional "default" (slots: "planner", "coder"; or a role name such as "plan_verifier").
    ``options`` fill the pipeline's Options dataclass (e.g. mapcoder's ``k`` and ``t``)."""
    cls = resolve(PIPELINES, name, "pipeline")
    valid = {f.name for f in dataclasses.fields(cls.Options)}
    unknown = sorted(set(options) - valid)
    if unknown:
        raise ConfigError(
            f"pipeline {name!r} has no option(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid)) or 'none'}"
        )
    return cls(models, sampling=sampling, sandbox=sandbox, options=cls.Options(**options), prompt_dir=prompt_dir)
