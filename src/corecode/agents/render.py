"""Prompt templates: data files rendered with strict ``{{name}}`` substitution.

A template file in ``prompts/`` holds a system part and a user part::

    <<<system>>>
    You are ...
    <<<user>>>
    Problem:
    {{problem}}

Substitution is one pass of a regular expression, never ``str.format`` (code is full of braces) and never
recursive (a ``{{...}}`` inside a substituted value, e.g. in a problem statement, stays as it is). A
placeholder with no value, or a value that no placeholder uses, raises :class:`ConfigError`: a typo in a
prompt must fail loudly, not produce a prompt that silently lacks the plan. Files whose names start with
``_`` are fragments (the stdin/stdout vs function-signature instructions), rendered the same way.

Users may tune prompts without editing the package: pass ``prompt_dir`` (a folder with files of the same
names); files missing from it fall back to the built-in ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path

from corecode.errors import ConfigError

__all__ = ["render", "render_template", "load_template", "placeholders", "template_names", "Template"]

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_SECTION = re.compile(r"^<<<(system|user)>>>[ \t]*$", re.MULTILINE)

Template = tuple[str, str]  # (system, user)


def placeholders(text: str) -> set[str]:
    """The placeholder names used in ``text``."""
    return set(_PLACEHOLDER.findall(text))


def render(text: str, variables: Mapping[str, object], *, where: str = "template") -> str:
    """Substitute every ``{{name}}`` in ``text``; raise on a missing or an unused variable."""
    used = placeholders(text)
    missing = sorted(used - variables.keys())
    if missing:
        raise ConfigError(f"{where}: no value for placeholder(s) {', '.join(missing)}")
    unused = sorted(variables.keys() - used)
    if unused:
        raise ConfigError(
            f"{where}: variable(s) {', '.join(unused)} given but not used; the template uses: "
            f"{', '.join(sorted(used)) or 'nothing'}"
        )
    return _PLACEHOLDER.sub(lambda m: str(variables[m.group(1)]), text)


def _builtin_dir() -> Path:
    return Path(str(resources.files("corecode.agents") / "prompts"))


def template_names(prompt_dir: str | Path | None = None) -> list[str]:
    """The names of the built-in templates (and of those in ``prompt_dir``), fragments included."""
    names = {p.stem for p in _builtin_dir().glob("*.txt")}
    if prompt_dir is not None:
        names |= {p.stem for p in Path(prompt_dir).glob("*.txt")}
    return sorted(names)


def _template_path(name: str, prompt_dir: str | Path | None) -> Path:
    if prompt_dir is not None and (Path(prompt_dir) / f"{name}.txt").is_file():
        return Path(prompt_dir) / f"{name}.txt"
    path = _builtin_dir() / f"{name}.txt"
    if not path.is_file():
        from corecode.errors import UnknownNameError

        raise UnknownNameError("prompt template", name, template_names(prompt_dir))
    return path


@lru_cache(maxsize=256)
def _read_cached(path: Path, mtime_ns: int) -> str:
    return path.read_text(encoding="utf-8")


def _read(path: Path) -> str:
    # keyed by modification time, so an edited prompt file is picked up without a restart
    return _read_cached(path, path.stat().st_mtime_ns)


def load_template(name: str, prompt_dir: str | Path | None = None) -> Template:
    """(system, user) texts of a role's template; a fragment (``_name``) has an empty system part."""
    path = _template_path(name, prompt_dir)
    text = _read(path)
    if name.startswith("_"):
        return "", text.strip("\n")
    parts = _SECTION.split(text)
    # split gives ["", "system", body, "user", body]
    sections = dict(zip(parts[1::2], parts[2::2]))
    if parts[0].strip() or set(sections) != {"system", "user"}:
        raise ConfigError(f"{path}: a prompt file needs a <<<system>>> section, then a <<<user>>> section")
    return sections["system"].strip("\n"), sections["user"].strip("\n")


def render_template(
    name: str, variables: Mapping[str, object], prompt_dir: str | Path | None = None
) -> list[dict[str, str]]:
    """The chat messages of template ``name`` with ``variables`` substituted (system first, always)."""
    system, user = load_template(name, prompt_dir)
    if placeholders(system):
        raise ConfigError(f"prompt {name!r}: the system part must not use placeholders")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": render(user, variables, where=f"prompt {name!r}")},
    ]
