"""Explicit name -> object tables, and `module:object` paths for user plug-ins.

Nothing registers itself on import: each package keeps a plain dict, and :func:`resolve` looks a name up
in it, or imports ``package.module:attribute`` when the name contains a colon.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TypeVar

from corecode.errors import UnknownNameError

__all__ = ["resolve", "import_path"]

T = TypeVar("T")


def import_path(path: str) -> object:
    """Import ``package.module:attr.sub`` and return the object."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise UnknownNameError("import path", path, ["package.module:object"])
    module = importlib.import_module(module_name)
    obj: object = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def resolve(table: Mapping[str, T], name: str, kind: str) -> T:
    """Return ``table[name]``; a ``module:object`` name is imported; an unknown name lists the valid ones."""
    if name in table:
        return table[name]
    if ":" in name:
        return import_path(name)  # type: ignore[return-value]
    raise UnknownNameError(kind, name, table.keys())
