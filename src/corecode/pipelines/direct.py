"""direct: the Coder answers from the problem alone (the base-model baseline)."""

from __future__ import annotations

from corecode.agents import TaskView
from corecode.pipelines.base import Pipeline, PublicTestRunner, Solution

__all__ = ["Direct", "SingleCall"]


class SingleCall(Pipeline):
    """One agent call per solution; ``n`` solutions are ``n`` samples of one prompt (one backend call)."""

    role = "coder"

    def _solve(self, view: TaskView, runner: PublicTestRunner | None) -> Solution:
        return self._solve_many(view, runner, 1)[0]

    def _solve_many(self, view: TaskView, runner: PublicTestRunner | None, n: int) -> list[Solution]:
        calls = self.agents[self.role].call(view, n=n)
        return [self._solution(view, [call], call.output) for call in calls]


class Direct(SingleCall):
    name = "direct"
    roles = ("coder",)
    role = "coder"
