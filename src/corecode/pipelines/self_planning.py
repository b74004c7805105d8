"""self_planning (Jiang et al. 2023, "Self-planning Code Generation with Large Language Models"): the model
first writes a short numbered plan, then implements it. Same two-stage shape as planner_coder, but the plan
is a free numbered list (no four-part format), and by default one model plays both roles. The original
uses few-shot examples; we use instructions only."""

from __future__ import annotations

from corecode.pipelines.planner_coder import TwoStage

__all__ = ["SelfPlanning"]


class SelfPlanning(TwoStage):
    name = "self_planning"
    roles = ("self_planner", "coder_with_plan")
    plan_role = "self_planner"
