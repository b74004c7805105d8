"""Every prompt renders with exactly its role's variables; strict substitution fails loudly."""

import pytest

from corecode.agents import ROLES, TaskView, load_template, render, render_prompt, template_names
from corecode.agents.render import placeholders
from corecode.errors import ConfigError
from corecode.types import AssertTest, IOMode, StdioTest

FUNCTION_VIEW = TaskView(
    id="t/1",
    source="test",
    statement='def f(x):\n    """Return x doubled. Braces {} and {{literal}} stay as they are."""\n',
    io_mode=IOMode.FUNCTION,
    public_tests=(AssertTest("assert f(2) == 4"),),
    starter_code='def f(x):\n    """Return x doubled. Braces {} and {{literal}} stay as they are."""\n',
    entry_point="f",
)
MBPP_VIEW = TaskView(
    id="t/2", source="test", statement="Write a function to double x.", io_mode=IOMode.FUNCTION,
    public_tests=(AssertTest("assert double(2) == 4"),), entry_point="double",
)
STDIO_VIEW = TaskView(
    id="t/3", source="test", statement="Read n, print 2n.", io_mode=IOMode.STDIO,
    public_tests=(StdioTest("3\n", "6\n"),),
)
FILE_VIEW = TaskView(
    id="t/4", source="test", statement="Read n from a file.", io_mode=IOMode.FILE,
    input_file="in.txt", output_file="out.txt",
)
VIEWS = [FUNCTION_VIEW, MBPP_VIEW, STDIO_VIEW, FILE_VIEW]


def _inputs(role):
    return {name: f"<{name} value with {{{{braces}}}}>" for name in role.inputs}


@pytest.mark.parametrize("role_name", sorted(ROLES))
@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.io_mode.value + "-" + v.id)
def test_every_role_renders_with_no_placeholder_left(role_name, view):
    role = ROLES[role_name]
    messages = render_prompt(role_name, view, **_inputs(role))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"].strip(), "a system prompt of our own, always"
    user = messages[1]["content"]
    for name in role.inputs:
        assert f"<{name} value with" in user, f"{name} not used by {role_name}"
    # nothing left but the literal braces that came from the values and the statement
    leftover = placeholders(user.replace("{{braces}}", "").replace("{{literal}}", ""))
    assert leftover == set()
    shows_problem = "Read n" in user or "double" in user or "Return x doubled" in user or "file" in user
    # a role about a program alone (problem=False) must not leak the statement (its examples' outputs)
    assert shows_problem == role.problem, role_name


def test_every_prompt_file_belongs_to_a_role_or_is_a_fragment():
    roles_templates = {role.template for role in ROLES.values()}
    for name in template_names():
        assert name.startswith("_") or name in roles_templates, f"prompt file {name}.txt has no role"
    assert roles_templates <= set(template_names())


@pytest.mark.parametrize("role_name", sorted(ROLES))
def test_missing_and_unused_role_inputs_raise(role_name):
    role = ROLES[role_name]
    with pytest.raises(ConfigError, match="not used"):
        render_prompt(role_name, STDIO_VIEW, **_inputs(role), surplus="x")
    if role.inputs:
        partial = _inputs(role)
        partial.pop(role.inputs[0])
        with pytest.raises(ConfigError, match="no value"):
            render_prompt(role_name, STDIO_VIEW, **partial)


def test_render_is_strict_and_single_pass():
    assert render("a {{x}} b", {"x": "{{y}}"}) == "a {{y}} b"
    assert render("{ not a placeholder } {{ x }}", {"x": 1}) == "{ not a placeholder } 1"
    with pytest.raises(ConfigError, match="no value for placeholder"):
        render("{{x}} {{y}}", {"x": 1})
    with pytest.raises(ConfigError, match="given but not used"):
        render("{{x}}", {"x": 1, "y": 2})


def test_io_style_follows_the_problem():
    function_prompt = render_prompt("coder", FUNCTION_VIEW)[1]["content"]
    assert "complete function `f`" in function_prompt and "standard input" not in function_prompt
    mbpp_prompt = render_prompt("coder", MBPP_VIEW)[1]["content"]
    assert "function named `double`" in mbpp_prompt and "assert double(2) == 4" in mbpp_prompt
    stdio_prompt = render_prompt("coder", STDIO_VIEW)[1]["content"]
    assert "standard input" in stdio_prompt and "Input:\n3\nOutput:\n6" in stdio_prompt
    file_prompt = render_prompt("coder", FILE_VIEW)[1]["content"]
    assert "`in.txt`" in file_prompt and "`out.txt`" in file_prompt


def test_starter_code_is_not_repeated_when_the_statement_has_it():
    user = render_prompt("coder", FUNCTION_VIEW)[1]["content"]
    assert user.count("def f(x):") == 1


def test_planner_prompt_names_the_four_parts_and_forbids_code():
    system, user = load_template("planner")
    for heading in ("Input-Output Definition", "Linear Progression", "Conditional Logic", "Iteration"):
        assert heading in user
    assert "no code" in system.lower() or "never write code" in system.lower()


def test_prompt_dir_overrides_one_file(tmp_path):
    (tmp_path / "coder.txt").write_text("<<<system>>>\nS\n<<<user>>>\nSolve: {{problem}} {{io_instructions}}\n")
    messages = render_prompt("coder", STDIO_VIEW, prompt_dir=tmp_path)
    assert messages[0]["content"] == "S" and messages[1]["content"].startswith("Solve: Read n")
    # other roles still use the built-in files
    assert render_prompt("planner", STDIO_VIEW, prompt_dir=tmp_path)[0]["content"].startswith("You are the Planner")
    (tmp_path / "coder.txt").write_text("no sections {{problem}}")
    with pytest.raises(ConfigError, match="<<<system>>>"):
        render_prompt("coder", STDIO_VIEW, prompt_dir=tmp_path)
