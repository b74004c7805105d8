"""Parsing of model outputs: programs, plans (Algorithmic Thoughts), and the auxiliary roles' answers.

Standard library only (the bottom layers of corecode)."""

from corecode.parsing.code import CodeBlock, code_blocks, complete_program, defines, extract_code
from corecode.parsing.plan import PART_TITLES, PLAN_PARTS, Plan, parse_plan, plan_code
from corecode.parsing.scores import (
    Exemplar,
    Retrieval,
    parse_asserts,
    parse_confidence,
    parse_retrieval,
)

__all__ = [
    "extract_code",
    "code_blocks",
    "complete_program",
    "defines",
    "CodeBlock",
    "parse_plan",
    "plan_code",
    "Plan",
    "PLAN_PARTS",
    "PART_TITLES",
    "parse_confidence",
    "parse_retrieval",
    "parse_asserts",
    "Exemplar",
    "Retrieval",
]
