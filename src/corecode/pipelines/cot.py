"""cot: chain-of-thought prompting; the Coder reasons step by step, then writes the program."""

from __future__ import annotations

from corecode.pipelines.direct import SingleCall

__all__ = ["ChainOfThought"]


class ChainOfThought(SingleCall):
    name = "cot"
    roles = ("cot",)
    role = "cot"
