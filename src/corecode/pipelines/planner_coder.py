"""planner_coder: CoRe-Code's two agents. The Planner writes an Algorithmic Thought (four parts: Input-Output
Definition, Linear Progression, Conditional Logic, Iteration; no code); the Coder writes the program from
the problem plus that plan. A plan that misses parts is still passed on whole (its raw text); the parsed
parts are in ``Solution.parsed_plan``.

For ``n`` solutions the Planner samples ``n`` plans in one call and the Coder writes one program per plan
(one batched call), so the samples are independent plan-program pairs, as pass@k needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from corecode.agents import AgentCall, TaskView, shown_plan
from corecode.pipelines.base import Pipeline, PublicTestRunner, Solution

__all__ = ["PlannerCoder", "TwoStage"]


class TwoStage(Pipeline):
    """A planning role, then a coding role that receives the plan."""

    plan_role = "planner"
    code_role = "coder_with_plan"

    def _solve(self, view: TaskView, runner: PublicTestRunner | None) -> Solution:
        return self._solve_many(view, runner, 1)[0]

    def _solve_many(self, view: TaskView, runner: PublicTestRunner | None, n: int) -> list[Solution]:
        plans = self.agents[self.plan_role].call(view, n=n)
        return self.code_from_plans(view, plans)

    def code_from_plans(self, view: TaskView, plans: Sequence[AgentCall]) -> list[Solution]:
        """One program per plan (a batched Coder call); each solution's trace is [plan call, code call]."""
        requests = [(view, {"plan": shown_plan(plan.output)}) for plan in plans]
        groups = self.agents[self.code_role].call_batch(requests, n=1)
        return [
            self._solution(view, [plan, group[0]], group[0].output, plan=plan.output)
            for plan, group in zip(plans, groups)
        ]


class PlannerCoder(TwoStage):
    name = "planner_coder"
    roles = ("planner", "coder_with_plan")
