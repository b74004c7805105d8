"""reflexion (Shinn et al. 2023, "Reflexion: Language Agents with Verbal Reinforcement Learning"), for code:
act (write a program), evaluate it on the problem's PUBLIC tests in the sandbox, reflect in words on the
failure, and try again with the reflection, for at most ``max_rounds`` reflect-and-retry rounds.

It stops as soon as an attempt passes every public test. The returned program is the attempt with the
highest public pass rate (the latest among equals), so a late regression does not throw away a better
earlier attempt. A problem without public tests gives no feedback: one attempt, no rounds. The original
also has the model write its own tests when none are given; we do not (see the test_writer role).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corecode.agents import AgentCall, TaskView
from corecode.errors import ConfigError
from corecode.pipelines.base import Pipeline, PublicTestRunner, Solution, finish_program, format_feedback

__all__ = ["Reflexion", "ReflexionOptions"]

_NO_CODE_FEEDBACK = "The answer contained no Python program, so no test could run."


@dataclass(frozen=True)
class ReflexionOptions:
    max_rounds: int = field(
        default=3, metadata={"help": "reflect-and-retry rounds after the first attempt (0 = one attempt only)"}
    )

    def __post_init__(self) -> None:
        if self.max_rounds < 0:
            raise ConfigError(f"reflexion max_rounds must be >= 0, got {self.max_rounds}")


class Reflexion(Pipeline):
    name = "reflexion"
    roles = ("coder", "reflector", "reflexion_coder")
    needs_sandbox = True
    Options = ReflexionOptions

    def _solve(self, view: TaskView, runner: PublicTestRunner | None) -> Solution:
        assert runner is not None  # needs_sandbox guarantees it
        trace: list[AgentCall] = list(self.agents["coder"].call(view))
        attempts: list[tuple[float, str, str | None]] = []  # (public pass rate, program, failure)
        rounds = 0
        while True:
            program, failure = finish_program(view, trace[-1].output)
            if not runner.available:
                return self._result(view, trace, [(0.0, program, failure)], rounds, None)
            if program:
                result = runner.run(program)
                rate, feedback = result.pass_rate, format_feedback(result, runner.public_tests)
            else:
                rate, feedback = 0.0, _NO_CODE_FEEDBACK
            attempts.append((rate, program, failure))
            if rate == 1.0 or rounds == self.options.max_rounds:
                return self._result(view, trace, attempts, rounds, rate == 1.0)
            rounds += 1
            shown = program.rstrip() or trace[-1].output.strip() or "(empty answer)"
            reflection = self.agents["reflector"].call(view, program=shown, feedback=feedback)[0]
            retry = self.agents["reflexion_coder"].call(
                view, program=shown, feedback=feedback, reflection=reflection.output.strip()
            )[0]
            trace += [reflection, retry]

    def _result(
        self,
        view: TaskView,
        trace: list[AgentCall],
        attempts: list[tuple[float, str, str | None]],
        rounds: int,
        passed: bool | None,
    ) -> Solution:
        best = max(range(len(attempts)), key=lambda i: (attempts[i][0], i))
        _, program, failure = attempts[best]
        return Solution(
            problem_id=view.id,
            pipeline=self.name,
            program=program,
            trace=tuple(trace),
            failure=failure,
            rounds=rounds,
            public_passed=passed,
        )
