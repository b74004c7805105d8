"""parse_plan: the four parts of an Algorithmic Thought under many heading styles."""

import pytest

from corecode.parsing import PLAN_PARTS, parse_plan, plan_code

BODIES = ("a list of ints; returns an int", "sort, then scan", "empty list returns 0", "one pass, O(n log n)")


def _plan(headings, sep="\n"):
    return "\n\n".join(f"{h}{sep}{b}" for h, b in zip(headings, BODIES))


@pytest.mark.parametrize(
    "text",
    [
        _plan(["## 1. Input-Output Definition", "## 2. Linear Progression", "## 3. Conditional Logic", "## 4. Iteration"]),
        _plan(["**Input/Output Definition:**", "**Linear Progression:**", "**Conditional Logic:**", "**Iteration:**"], " "),
        _plan(["1) Input and Output", "2) Linear progression", "3) Conditional logic", "4) Iterations"]),
        _plan(["### Input-Output", "### Sequence", "### Branch", "### Loop"]),
        _plan(["Input Output Definition -", "Linear Progression -", "Conditional Logic -", "Iteration -"], " "),
        _plan(["Part 1: Input-Output Definition", "Part 2: Linear Progression", "Part 3: Conditional Logic", "Part 4: Iteration"]),
        _plan(["**1. Input-Output Definition**", "**2. Linear Progression**", "**3. Conditional Logic**", "**4. Iteration**"]),
        # written by the built-in 0.5B Planner during the real experiment (runs/learning-real-3)
        _plan(["### Algorithmic Thought: 1. Input-Output Definition", "### Algorithmic Thought: 2. Linear Progression",
               "### Algorithmic Thought: 3. Conditional Logic", "### Algorithmic Thought: 4. Iteration"]),
        _plan(["## Heading 1: Input-Output Definition", "## heading 2: Linear Progression", "## Heading 3: Conditional Logic",
               "## Heading 4: Iteration"]),
    ],
    ids=["markdown-numbered", "bold-inline", "paren-numbers", "authors-words", "dash", "part-n", "bold-numbered",
         "titled", "heading-n"],
)
def test_four_parts_in_many_styles(text):
    plan = parse_plan(text)
    assert plan.missing == ()
    assert [plan.parts()[p] for p in PLAN_PARTS] == list(BODIES)


def test_a_title_or_a_list_of_the_heading_names_is_not_a_plan():
    # the title alone, or the four names listed without content, are still format misses
    assert parse_plan("## Algorithmic Thought: the plan\nsort, then scan").missing == PLAN_PARTS
    listed = "## Headings\n1. Input-Output Definition\n2. Linear Progression\n3. Conditional Logic\n4. Iteration"
    assert parse_plan(listed).missing == PLAN_PARTS


def test_missing_parts_are_listed_and_raw_kept():
    text = "Input-Output Definition: a string\nLinear Progression: reverse it"
    plan = parse_plan(text)
    assert plan.missing == ("conditional_logic", "iteration")
    assert plan.raw == text and not plan.complete
    assert plan.input_output == "a string"


def test_empty_heading_counts_as_missing():
    plan = parse_plan("## Input-Output Definition\n\n## Linear Progression\nsteps\n## Conditional Logic\nx\n## Iteration\ny")
    assert plan.missing == ("input_output",)


def test_words_inside_steps_are_not_headings():
    text = (
        "## Input-Output Definition\nints\n## Linear Progression\n1. Loop: go over the list.\n"
        "2. Sequence of checks follows\n## Conditional Logic\nif empty return 0\n## Iteration\nfor loop, O(n)"
    )
    plan = parse_plan(text)
    assert plan.missing == ()
    assert "Loop: go over the list." in plan.linear_progression
    assert plan.iteration == "for loop, O(n)"


def test_out_of_order_and_code_fences():
    text = "Iteration: a loop\n```\nInput-Output: fake heading inside code\n```\nInput-Output Definition: real"
    plan = parse_plan(text)
    assert plan.input_output == "real"
    assert plan.iteration.startswith("a loop")


def test_no_plan_at_all():
    assert parse_plan("").missing == PLAN_PARTS
    assert parse_plan("Just add the numbers.").missing == PLAN_PARTS


def test_format_and_to_dict():
    plan = parse_plan("Input-Output Definition: x\nIteration: y")
    shown = plan.format()
    assert "1. Input-Output Definition\nx" in shown and "2. Linear Progression\n(missing)" in shown
    assert plan.to_dict()["missing"] == ["linear_progression", "conditional_logic"]


def test_bold_label_inside_a_markdown_section_is_content_not_a_heading():
    # Seen in a real cpu-demo plan of Qwen2.5-Coder-0.5B: the model restated the I/O definition as a
    # numbered bold label under "### Linear Progression"; that section must keep its text.
    text = (
        "### Linear Progression\n"
        "1. **Input-Output Definition**: a list of ints -> bool\n"
        "2. sort, then compare neighbours\n"
        "### Conditional Logic\nif fewer than 2 items return False\n"
        "### Iteration\nfor i in range(n - 1)\n"
    )
    plan = parse_plan(text)
    assert plan.missing == ("input_output",)
    assert "sort, then compare neighbours" in plan.linear_progression
    assert plan.conditional_logic == "if fewer than 2 items return False"


FOUR = ("## 1. Input-Output Definition\nA list of ints; return their sum.\n## 2. Linear Progression\nAdd them up.\n"
        "## 3. Conditional Logic\nAn empty list gives 0.\n## 4. Iteration\nOne loop, O(n) time, O(1) memory.\n")


def test_parts_out_of_order_are_found_present_but_not_in_order():
    swapped = FOUR.replace("## 2. Linear Progression", "## X").replace("## 4. Iteration", "## 2. Linear Progression")
    swapped = swapped.replace("## X", "## 4. Iteration")
    plan = parse_plan(swapped)
    assert plan.missing == () and not plan.in_order
    assert plan.order == ("input_output", "iteration", "conditional_logic", "linear_progression")
    assert parse_plan(FOUR).in_order and parse_plan(FOUR).order == PLAN_PARTS


@pytest.mark.parametrize("text", [
    FOUR + "\n```python\ndef f(a):\n    return sum(a)\n```\n",  # the program itself, fenced
    FOUR + "\ndef solve(a):\n    total = 0\n    for x in a:\n        total += x\n    return total\n",  # unfenced
    FOUR.replace("Add them up.", "for x in a: total += x"),  # one line of Python in a part
    FOUR + "\n~~~\nimport sys\nn = int(sys.stdin.readline())\n~~~\n",  # any fence, Python inside
])
def test_code_in_a_plan_is_found(text):
    assert plan_code(text) is not None


@pytest.mark.parametrize("text", [
    FOUR,
    FOUR.replace("Add them up.", "for each x in the list, if it is positive, add it; return the total"),
    FOUR + "\nExample:\n```\n3\n1 2 3\n```\n",  # example input in a fence is not code
    FOUR + "\n```\nfor each query:\n    answer it with the prefix sums\n```\n",  # pseudocode does not parse
    FOUR.replace("Add them up.", "Use `sum(a)` on the list `a`."),  # inline names are prose
    "",
])
def test_prose_and_examples_are_not_code(text):
    assert plan_code(text) is None
