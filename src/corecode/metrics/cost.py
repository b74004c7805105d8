"""Inference cost: LLM calls and prompt / completion tokens, per problem and per sample.

Input: for each sample, the (role, prompt tokens, completion tokens) of every model call in its trace.
*Per sample* is the mean over all samples; *per problem* is the mean over problems of the total over that
problem's n samples (so per problem = n x per sample when every problem has n samples). Token counts are
what the backend reports (the model's tokenizer); a backend that reports none counts 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Cost", "inference_cost", "CallTokens"]

# (role, prompt tokens, completion tokens) of one model call
CallTokens = tuple[str, int, int]


@dataclass(frozen=True)
class Cost:
    """Mean inference cost; ``calls_by_role_per_sample`` shows which agent spends it."""

    n_problems: int
    n_samples: int
    calls_per_problem: float
    prompt_tokens_per_problem: float
    completion_tokens_per_problem: float
    calls_per_sample: float
    prompt_tokens_per_sample: float
    completion_tokens_per_sample: float
    calls_by_role_per_sample: dict[str, float] = field(default_factory=dict)

    @property
    def tokens_per_problem(self) -> float:
        return self.prompt_tokens_per_problem + self.completion_tokens_per_problem

    def to_dict(self) -> dict[str, object]:
        return {
            "n_problems": self.n_problems,
            "n_samples": self.n_samples,
            "calls_per_problem": self.calls_per_problem,
            "prompt_tokens_per_problem": self.prompt_tokens_per_problem,
            "completion_tokens_per_problem": self.completion_tokens_per_problem,
            "tokens_per_problem": self.tokens_per_problem,
            "calls_per_sample": self.calls_per_sample,
            "prompt_tokens_per_sample": self.prompt_tokens_per_sample,
            "completion_tokens_per_sample": self.completion_tokens_per_sample,
            "calls_by_role_per_sample": dict(self.calls_by_role_per_sample),
        }


def inference_cost(traces: Mapping[str, Sequence[Iterable[CallTokens]]]) -> Cost:
    """Cost from ``{task_id: [calls of sample 0, calls of sample 1, ...]}``.

    >>> c = inference_cost({"a": [[("planner", 10, 5), ("coder", 20, 8)]], "b": [[("coder", 4, 2)]]})
    >>> (c.calls_per_problem, c.prompt_tokens_per_problem, c.completion_tokens_per_problem)
    (1.5, 17.0, 7.5)
    """
    if not traces:
        raise ValueError("inference cost of zero problems is undefined")
    calls = prompt = completion = n_samples = 0
    by_role: dict[str, int] = defaultdict(int)
    for samples in traces.values():
        for sample_calls in samples:
            n_samples += 1
            for role, prompt_tokens, completion_tokens in sample_calls:
                calls += 1
                by_role[role] += 1
                prompt += prompt_tokens
                completion += completion_tokens
    n_problems = len(traces)
    per_sample = max(n_samples, 1)
    return Cost(
        n_problems=n_problems,
        n_samples=n_samples,
        calls_per_problem=calls / n_problems,
        prompt_tokens_per_problem=prompt / n_problems,
        completion_tokens_per_problem=completion / n_problems,
        calls_per_sample=calls / per_sample,
        prompt_tokens_per_sample=prompt / per_sample,
        completion_tokens_per_sample=completion / per_sample,
        calls_by_role_per_sample={role: count / per_sample for role, count in sorted(by_role.items())},
    )
