"""Agents: roles, their prompts (data files with strict substitution), and recorded calls to a backend."""

from corecode.agents.render import load_template, render, render_template, template_names
from corecode.agents.roles import NO_PLAN, ROLES, Agent, AgentCall, Role, render_prompt, role_variables, shown_plan
from corecode.agents.view import TaskView, format_problem, format_test, io_instructions, test_instructions

__all__ = [
    "ROLES",
    "Role",
    "Agent",
    "AgentCall",
    "TaskView",
    "render_prompt",
    "shown_plan",
    "NO_PLAN",
    "render",
    "render_template",
    "load_template",
    "template_names",
    "role_variables",
    "format_problem",
    "format_test",
    "io_instructions",
    "test_instructions",
]

