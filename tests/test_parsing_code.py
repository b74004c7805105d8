"""extract_code / complete_program on hand-written messy answers (real model outputs: test_parsing_real.py)."""

import pytest

from corecode.parsing import code_blocks, complete_program, defines, extract_code

FENCE = "```"

SOLUTION = "def add(a, b):\n    return a + b\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        # one fenced block with prose around it
        (f"Sure! Here is the code:\n{FENCE}python\n{SOLUTION}{FENCE}\nThis adds two numbers.", SOLUTION),
        # a fence without a language
        (f"{FENCE}\n{SOLUTION}{FENCE}", SOLUTION),
        # ```py and an indented fence (inside a list item)
        (f"1. Code:\n   {FENCE}py\n   def add(a, b):\n       return a + b\n   {FENCE}\n", SOLUTION),
        # no fences at all, prose after the code
        (f"{SOLUTION}\nThe function returns the sum.", SOLUTION),
        # no fences, prose before and after
        (f"The answer is simple.\n\n{SOLUTION}\nHope this helps!", SOLUTION),
        # the solution, then a short usage block: the usage block must not win
        (f"{FENCE}python\n{SOLUTION}{FENCE}\nUsage:\n{FENCE}python\nprint(add(1, 2))\n{FENCE}", SOLUTION),
        # a bash block and a python block: only python counts
        (f"{FENCE}bash\npip install numpy\n{FENCE}\n{FENCE}python\n{SOLUTION}{FENCE}", SOLUTION),
    ],
    ids=["prose", "no-lang", "indented-py", "unfenced", "unfenced-prose", "usage-block", "bash-block"],
)
def test_extract_code_table(text, expected):
    assert extract_code(text, entry_point="add") == expected


def test_prefers_the_block_that_defines_the_entry_point():
    helper = "def helper(x):\n    return x * 2\n"
    first = "def solve(xs):\n    return [helper(x) for x in xs]\n"
    text = f"{FENCE}python\n{first}{FENCE}\nAnd a longer unrelated block:\n{FENCE}python\n{helper}{helper.replace('helper', 'other')}{FENCE}"
    assert extract_code(text, entry_point="solve") == first
    # several blocks defining it: the last one (the model's corrected version)
    fixed = "def solve(xs):\n    return [2 * x for x in xs]\n"
    text2 = f"{FENCE}python\n{first}{FENCE}\nOops, fixed:\n{FENCE}python\n{fixed}{FENCE}"
    assert extract_code(text2, entry_point="solve") == fixed


def test_truncated_last_block_is_cut_back_to_compiling_code():
    text = (
        f"{FENCE}python\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    result = 0\n"
        "    for _ in range(b):\n        result += a\n    return res"  # cut mid-identifier: still compiles!
    )
    code = extract_code(text, entry_point="add")
    assert code is not None and defines(code, "add")
    compile(code, "x", "exec")
    text2 = f"{FENCE}python\ndef add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return (a *"
    code2 = extract_code(text2, entry_point="add")
    assert code2 == "def add(a, b):\n    return a + b\n"


def test_unclosed_fence_that_compiles_is_kept_whole():
    assert extract_code(f"{FENCE}python\n{SOLUTION}") == SOLUTION


def test_no_code_gives_none():
    assert extract_code("") is None
    assert extract_code("   \n") is None
    assert extract_code("I am sorry, I cannot solve this problem.") is None
    assert extract_code(f"{FENCE}python\n{FENCE}") is None


def test_a_block_with_a_syntax_error_is_returned_not_hidden():
    broken = "def add(a, b)\n    return a + b\n"  # missing colon: the model's mistake, scored as a syntax error
    assert extract_code(f"{FENCE}python\n{broken}{FENCE}", entry_point="add") == broken


def test_stdio_program_without_entry_point():
    program = "n = int(input())\nprint(n * 2)\n"
    text = f"Read n and double it.\n{FENCE}python\n{program}{FENCE}\nExample: input 3 prints 6."
    assert extract_code(text) == program


def test_code_blocks_reports_closed_and_language():
    blocks = code_blocks(f"a\n{FENCE}python\nx = 1\n{FENCE}\n{FENCE}text\nhi\n{FENCE}\n{FENCE}\ny = 2")
    assert [(b.language, b.closed) for b in blocks] == [("python", True), ("text", True), ("", False)]


def test_other_language():
    assert extract_code(f"{FENCE}cpp\nint main() {{}}\n{FENCE}", language="cpp") == "int main() {}\n"


STARTER = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum of xs."""\n'


def test_complete_program_adds_missing_imports():
    code = "def total(xs: List[int]) -> int:\n    return sum(xs)\n"
    program = complete_program(code, starter_code=STARTER, entry_point="total")
    assert program.startswith("from typing import List")
    namespace: dict = {}
    exec(program, namespace)
    assert namespace["total"]([1, 2, 3]) == 6


def test_complete_program_keeps_helpers_from_the_starter_and_does_not_duplicate_imports():
    starter = "import math\n\n\ndef helper(x):\n    return x + 1\n\n\ndef f(x):\n    \"\"\"doc\"\"\"\n"
    code = "import math\n\ndef f(x):\n    return helper(math.floor(x))\n"
    program = complete_program(code, starter_code=starter, entry_point="f")
    assert program.count("import math") == 1 and "def helper" in program
    namespace: dict = {}
    exec(program, namespace)
    assert namespace["f"](2.5) == 3


def test_complete_program_wraps_a_bare_body():
    body = "    return sum(xs)\n"
    program = complete_program(body, starter_code=STARTER, entry_point="total")
    namespace: dict = {}
    exec(program, namespace)
    assert namespace["total"]([4, 5]) == 9
    # unindented body too
    program2 = complete_program("result = 0\nfor x in xs:\n    result += x\nreturn result\n", starter_code=STARTER, entry_point="total")
    namespace2: dict = {}
    exec(program2, namespace2)
    assert namespace2["total"]([1, 1]) == 2


def test_complete_program_leaves_unrelated_code_alone():
    code = "def other():\n    return 1\n"
    assert complete_program(code, starter_code=STARTER, entry_point="total") == code
    assert complete_program(code, starter_code=None, entry_point=None) == code


def test_extract_then_complete_a_fenced_body():
    text = f"Here is the body:\n{FENCE}python\n    return sum(xs)\n{FENCE}"
    code = extract_code(text, entry_point="total")
    program = complete_program(code, starter_code=STARTER, entry_point="total")
    namespace: dict = {}
    exec(program, namespace)
    assert namespace["total"]([2, 2]) == 4


def test_example_usage_is_stripped_from_function_solutions():
    code = (
        "import sys\n\nLIMIT = 10\n\n\ndef total(xs):\n    return sum(xs)\n\n# Examples:\n"
        "assert total([1]) == 99  # the model's own wrong example\nprint(total([1, 2]))\ntotal([3])\n"
        "for case in ([1], [2]):\n    print(total(case))\n"
        "if __name__ == '__main__':\n    data = input()\n    print(total(map(int, data.split())))\n"
    )
    program = complete_program(code, starter_code=None, entry_point="total")
    assert "assert" not in program and "print" not in program and "__main__" not in program
    assert "LIMIT = 10" in program and "import sys" in program
    assert _exec(program)["total"]([2, 3]) == 5


def _exec(program):
    namespace: dict = {}
    exec(program, namespace)
    return namespace


def test_a_fenced_body_beats_a_usage_block():
    text = f"{FENCE}python\nresult = 0\nfor x in xs:\n    result += x\nreturn result\n{FENCE}\nUsage:\n{FENCE}python\nprint(total([1]))\n{FENCE}"
    code = extract_code(text, entry_point="total")
    assert code.startswith("result = 0")
    assert _exec(complete_program(code, starter_code=STARTER, entry_point="total"))["total"]([1, 2]) == 3
