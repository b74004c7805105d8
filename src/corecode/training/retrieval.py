"""Retrieval RL: MapCoder's Retrieval agent trained like the Planner of stage 1 (``stage: retrieval``).

The Retrieval agent is the policy: TRL samples G answers per problem to the ``retrieval`` role prompt
(``retrieval_k`` recalled problems with plan and code, and an algorithm tutorial). Each answer is handed to
the frozen rest of MapCoder's planning path, one frozen backend playing both roles, exactly as the
MapCoder pipeline calls them: the ``exemplar_planner`` writes one plan per recalled problem (one plan
without an exemplar when nothing could be parsed), and ``coder_with_plan`` writes M programs from each
plan. All programs of the answer run in the sandbox and score it with R_plan (pass rate, time score,
sigmoid weighting; ``../shared/METHOD.md`` section 3); the format term asks for at least one recalled
problem and the algorithm section.

Validation is the Retrieval agent's Collaboration Gain: the frozen Coder's pass@1 alone vs with the plan
the frozen exemplar planner makes from the policy's greedy retrieval (first recalled problem).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corecode.agents import TaskView, render_prompt
from corecode.backends import Backend, SamplingConfig
from corecode.parsing import Exemplar, parse_retrieval
from corecode.rewards import RetrievalReward
from corecode.training.config import TrainConfig
from corecode.training.data import planner_rows
from corecode.training.partners import PolicyBackend
from corecode.training.stage1 import PlannerLikeRole, run_planner_like_stage
from corecode.types import Problem

__all__ = ["run_retrieval_stage", "exemplar_plan_prompts", "retrieval_writer"]

_NO_EXEMPLAR = Exemplar(description="(no similar problem was recalled)")


def exemplar_plan_prompts(problem: Problem, retrieval_text: str, k: int) -> list[list[dict[str, str]]]:
    """The exemplar planner's prompts for one retrieval answer: one per recalled problem (at most k)."""
    retrieved = parse_retrieval(retrieval_text, k)
    algorithm = retrieved.algorithm or "(none given)"
    view = TaskView.from_problem(problem)
    return [render_prompt("exemplar_planner", view, exemplar=e.render(), algorithm=algorithm)
            for e in (retrieved.exemplars or (_NO_EXEMPLAR,))]


def retrieval_writer(backend: Backend, plan_sampling: SamplingConfig, code_sampling: SamplingConfig,
                     samples: int, k: int):
    """A ProgramWriter for RetrievalReward: retrieval answers -> frozen plans -> M programs per plan.

    Two batched backend calls per reward step (all plans, then all programs), so a server sees every
    request of a stage at once.
    """

    def write(retrievals: Sequence[str], problems: Sequence[Problem]) -> list[list[str]]:
        prompts, owner = [], []
        for i, (text, problem) in enumerate(zip(retrievals, problems)):
            for prompt in exemplar_plan_prompts(problem, text, k):
                prompts.append(prompt)
                owner.append(i)
        plans = [group[0].text for group in backend.generate(prompts, plan_sampling, n=1)]
        coder_prompts = [render_prompt("coder_with_plan", TaskView.from_problem(problems[i]), plan=plan.strip()
                                       or "(empty plan)") for i, plan in zip(owner, plans)]
        groups = backend.generate(coder_prompts, code_sampling, n=samples)
        out: list[list[str]] = [[] for _ in retrievals]
        for i, group in zip(owner, groups):
            out[i].extend(c.text for c in group)
        return out

    return write


def _validation_plans(model: Any, tokenizer: Any, partner: Backend, problems: list[Problem],
                      config: TrainConfig) -> list[str]:
    """The frozen exemplar planner's plan from the policy's greedy retrieval (first recalled problem)."""
    policy = PolicyBackend(model, tokenizer, name="retrieval-policy", batch_size=config.generation_batch_size)
    conversations = [render_prompt("retrieval", TaskView.from_problem(p), k=config.retrieval_k) for p in problems]
    retrievals = [group[0].text for group in
                  policy.generate(conversations, SamplingConfig(temperature=0.0, max_tokens=config.max_completion_length))]
    prompts = [exemplar_plan_prompts(p, text, 1)[0] for p, text in zip(problems, retrievals)]
    greedy = SamplingConfig(temperature=0.0, max_tokens=config.partner_max_tokens)
    return [group[0].text for group in partner.generate(prompts, greedy)]


def _writer(partner: Backend, config: TrainConfig):
    sampling = SamplingConfig(temperature=config.coder_temperature, top_p=config.top_p,
                              max_tokens=config.partner_max_tokens)
    return retrieval_writer(partner, sampling, sampling, config.coder_samples, config.retrieval_k)


RETRIEVAL = PlannerLikeRole(
    name="retrieval",
    reward=RetrievalReward,
    writer=_writer,
    rows=lambda problems, reference_times, config: planner_rows(problems, reference_times, role="retrieval",
                                                                k=config.retrieval_k),
    validation_plans=_validation_plans,
    check_plan_format=False,
)


def run_retrieval_stage(
    config: TrainConfig,
    stage_dir: Path,
    retrieval_init: str,
    coder_checkpoint: str,
    problems: list[Problem],
    validation: list[Problem],
) -> Path:
    """Train the Retrieval agent from ``retrieval_init`` against the frozen planning path; return its final checkpoint."""
    return run_planner_like_stage(RETRIEVAL, config, stage_dir, retrieval_init, coder_checkpoint, problems, validation)
