"""scot: structured chain-of-thought (Li et al. 2023, "Structured Chain-of-Thought Prompting for Code
Generation"): the model first outlines the solution with the three program structures (sequence, branch,
loop), then writes the code, in one answer. The original uses few-shot examples; we use an instruction
only (zero-shot), which keeps prompts short for small models."""

from __future__ import annotations

from corecode.pipelines.direct import SingleCall

__all__ = ["StructuredChainOfThought"]


class StructuredChainOfThought(SingleCall):
    name = "scot"
    roles = ("scot",)
    role = "scot"
