"""mapcoder (Islam et al. 2024, "MapCoder: Multi-Agent Code Generation for Competitive Problem Solving"):

1. Retrieval: one call recalls ``k`` similar problems (description, plan, code) and an algorithm tutorial.
2. Planning: for each recalled problem, a plan for our problem by analogy; the plan verifier gives each
   plan a confidence score in [0, 100] (an unparsable score counts as 0).
3. Coding: plans are tried in order of decreasing confidence; the Coder writes a program from the plan.
4. Debugging: while the program fails the PUBLIC tests, the Debugger fixes it, at most ``t`` times per
   plan; then the next plan is tried.

It stops when a program passes every public test. Otherwise it returns the program with the highest public
pass rate (the earliest among equals, i.e. from the most confident plan). Without public tests there is no
feedback: the most confident plan's program is returned. When the retrieval answer holds no recognizable
problem, one plan is made without an exemplar. Calls: 1 + 2k + k(1 + t) at most.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corecode.agents import AgentCall, TaskView
from corecode.errors import ConfigError
from corecode.parsing import Exemplar, parse_confidence, parse_retrieval
from corecode.pipelines.base import Pipeline, PublicTestRunner, Solution, finish_program, format_feedback

__all__ = ["MapCoder", "MapCoderOptions"]

_NO_EXEMPLAR = Exemplar(description="(no similar problem was recalled)")


@dataclass(frozen=True)
class MapCoderOptions:
    k: int = field(default=3, metadata={"help": "similar problems recalled, hence plans made (MapCoder's k)"})
    t: int = field(default=5, metadata={"help": "debugging rounds per plan on public tests (MapCoder's t)"})

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"mapcoder k must be >= 1, got {self.k}")
        if self.t < 0:
            raise ConfigError(f"mapcoder t must be >= 0, got {self.t}")


class MapCoder(Pipeline):
    name = "mapcoder"
    roles = ("retrieval", "exemplar_planner", "plan_verifier", "coder_with_plan", "debugger")
    needs_sandbox = True
    Options = MapCoderOptions

    def _plans(self, view: TaskView, trace: list[AgentCall]) -> list[tuple[int, str]]:
        """(confidence, plan) pairs, most confident first (stable: recall order breaks ties)."""
        recall = self.agents["retrieval"].call(view, k=self.options.k)[0]
        trace.append(recall)
        retrieved = parse_retrieval(recall.output, self.options.k)
        exemplars = retrieved.exemplars or (_NO_EXEMPLAR,)
        algorithm = retrieved.algorithm or "(none given)"
        scored = []
        for exemplar in exemplars:
            plan = self.agents["exemplar_planner"].call(view, exemplar=exemplar.render(), algorithm=algorithm)[0]
            verdict = self.agents["plan_verifier"].call(view, plan=plan.output.strip() or "(empty plan)")[0]
            trace += [plan, verdict]
            scored.append((parse_confidence(verdict.output) or 0, plan.output.strip()))
        return sorted(scored, key=lambda pair: -pair[0])

    def _solve(self, view: TaskView, runner: PublicTestRunner | None) -> Solution:
        assert runner is not None  # needs_sandbox guarantees it
        trace: list[AgentCall] = []
        best: tuple[float, str, str | None, str] | None = None  # (rate, program, failure, plan)
        rounds = 0
        for _, plan in self._plans(view, trace):
            shown_plan = plan or "(empty plan)"
            call = self.agents["coder_with_plan"].call(view, plan=shown_plan)[0]
            trace.append(call)
            for debug_round in range(self.options.t + 1):
                program, failure = finish_program(view, call.output)
                if not runner.available:
                    return self._result(view, trace, (0.0, program, failure, plan), rounds, None)
                result = runner.run(program) if program else None
                rate = result.pass_rate if result else 0.0
                if best is None or rate > best[0]:
                    best = (rate, program, failure, plan)
                if rate == 1.0:
                    return self._result(view, trace, best, rounds, True)
                if debug_round == self.options.t:
                    break
                rounds += 1
                feedback = format_feedback(result, runner.public_tests) if result else "No program was found."
                shown_program = program.rstrip() or call.output.strip() or "(empty)"
                call = self.agents["debugger"].call(view, plan=shown_plan, program=shown_program, feedback=feedback)[0]
                trace.append(call)
        assert best is not None
        return self._result(view, trace, best, rounds, False)

    def _result(
        self,
        view: TaskView,
        trace: list[AgentCall],
        best: tuple[float, str, str | None, str],
        rounds: int,
        passed: bool | None,
    ) -> Solution:
        _, program, failure, plan = best
        return Solution(
            problem_id=view.id,
            pipeline=self.name,
            program=program,
            trace=tuple(trace),
            plan=plan,
            failure=failure,
            rounds=rounds,
            public_passed=passed,
        )
