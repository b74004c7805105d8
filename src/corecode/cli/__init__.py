"""The `corecode` command line.

Each subcommand lives in its own module of this package, exposing ``add_arguments(parser)`` and
``run(args) -> int``. The table below is the whole list; modules are imported only when their command (or
``--help``) needs them, and they import heavy libraries only inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from corecode.errors import CorecodeError

# command name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "benchmarks": ("corecode.cli.benchmarks", "list benchmarks, or show problems of one"),
    "exec": ("corecode.cli.exec_cmd", "run one program against tests in the sandbox"),
    "check": ("corecode.cli.check", "score a JSONL file of generations (pass@k)"),
    "models": ("corecode.cli.models", "list and prepare the built-in models"),
    "solve": ("corecode.cli.solve", "solve one problem with a pipeline and print the trace"),
    "eval": ("corecode.cli.eval_cmd", "generate, score and summarize a benchmark run"),
    "report": ("corecode.cli.report", "compare evaluation runs in one table and plots"),
    "train": ("corecode.cli.train", "collaborative GRPO training (Planner, then Coder)"),
    "doctor": ("corecode.cli.doctor", "what this machine can run, and what a bug report needs"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command``, only that command's module is imported and given its arguments
    (the others keep their name and help, which is all ``corecode --help`` shows). Importing every command
    module cost ~80 ms of each command's start (eval's and models' modules import their configs)."""
    from corecode import __version__

    parser = argparse.ArgumentParser(
        prog="corecode",
        description="Collaborative reinforcement learning for code generation.",
    )
    parser.add_argument("--version", action="version", version=f"corecode {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            module = importlib.import_module(module_name)  # commands import heavy libraries in run()
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except CorecodeError as exc:
        print(f"corecode {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `corecode ... | head` closed our stdout: not an error; keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
