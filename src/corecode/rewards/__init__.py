"""Rewards of collaborative GRPO: pure functions (R_plan, R_code, the plan-format term) and the group-aware
TRL-signature callables built on them. Standard library only: no torch, no model; the Coder and the sandbox
are passed in as callables. Formulas: docs/training.md and ../shared/METHOD.md section 3.
"""

from corecode.rewards.coder import coder_group_rewards, coder_reward, space_score, space_target
from corecode.rewards.config import AGGREGATIONS, RewardConfig
from corecode.rewards.format import format_term, plan_format_misses, plan_missing_parts, retrieval_missing_parts
from corecode.rewards.outcome import Outcome
from corecode.rewards.planner import (
    aggregate,
    plan_reward,
    planner_group_rewards,
    program_quality,
    sigmoid,
    time_reference,
    time_score,
)
from corecode.rewards.reference import load_reference_times, measure_reference_times, save_reference_times
from corecode.rewards.trl_rewards import (
    CoderReward,
    DebuggerReward,
    RetrievalReward,
    ExecutionLog,
    GroupLayout,
    PlannerReward,
    completion_text,
    sandbox_executor,
)

__all__ = [
    "AGGREGATIONS",
    "RewardConfig",
    "Outcome",
    "aggregate",
    "coder_group_rewards",
    "coder_reward",
    "format_term",
    "plan_missing_parts",
    "plan_format_misses",
    "plan_reward",
    "planner_group_rewards",
    "program_quality",
    "sigmoid",
    "space_score",
    "space_target",
    "time_reference",
    "time_score",
    "load_reference_times",
    "measure_reference_times",
    "save_reference_times",
    "CoderReward",
    "DebuggerReward",
    "RetrievalReward",
    "retrieval_missing_parts",
    "ExecutionLog",
    "GroupLayout",
    "PlannerReward",
    "completion_text",
    "sandbox_executor",
]
