"""`corecode train CONFIG.yaml [key=value ...]` or `corecode train --preset cpu-smoke [key=value ...]`.

Models are chosen as in `corecode eval` and `corecode solve`: ``--model ROLE=SPEC`` (repeatable; roles
planner, coder, debugger, retrieval: the policy of that stage, and the frozen partner's checkpoint) or
``--model SPEC`` for all of them. The ``planner_model=SPEC`` style overrides (the config file's field names)
still work on the command line, with a deprecation warning.
"""

from __future__ import annotations

import argparse
import json
import sys

from corecode.errors import ConfigError

__all__ = ["add_arguments", "run", "model_overrides", "TRAIN_ROLES"]

TRAIN_ROLES = ("planner", "coder", "debugger", "retrieval")  # each is the TrainConfig field <role>_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="training config (YAML); see configs/train/ and docs/training.md")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. max_steps=10 rewards.tau=0.5")
    parser.add_argument("--preset", help="a built-in config: cpu-smoke (under a minute) or cpu-demo (30-40 min on 2 CPU cores)")
    parser.add_argument("--model", action="append", default=[], metavar="SPEC",
                        help="model of every role (a HF id or path, builtin:NAME, tiny:NAME); repeat as ROLE=SPEC "
                        f"for one role ({', '.join(TRAIN_ROLES)}), e.g. --model planner=runs/x/round1/planner/final")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def model_overrides(flags: list[str], overrides: list[str]) -> list[str]:
    """``--model`` values as ``<role>_model=SPEC`` overrides, put before ``overrides`` (which win); a
    ``<role>_model=`` override of the command line is the deprecated spelling (a warning on stderr)."""
    from corecode.evaluation.config import parse_model_flags

    default, roles = parse_model_flags(flags)
    unknown = sorted(set(roles) - set(TRAIN_ROLES))
    if unknown:
        raise ConfigError(f"--model {unknown[0]}=...: training roles are {', '.join(TRAIN_ROLES)}")
    models = {role: default for role in TRAIN_ROLES} if default else {}
    models.update(roles)
    for item in overrides:
        key = item.partition("=")[0]
        if key in {f"{role}_model" for role in TRAIN_ROLES}:
            role = key[: -len("_model")]
            print(f"corecode train: the override {key}=SPEC is deprecated on the command line; use --model {role}=SPEC "
                  "(as in corecode eval and solve)", file=sys.stderr)
    return [f"{role}_model={spec}" for role, spec in models.items()] + list(overrides)


def run(args: argparse.Namespace) -> int:
    from corecode.training.config import load_config, preset_path

    config_path, overrides = args.config, list(args.overrides)
    if config_path and "=" in config_path:  # `corecode train --preset x key=value`: no file, only overrides
        config_path, overrides = None, [config_path, *overrides]
    if args.preset and config_path:
        raise ConfigError("give a config file or --preset, not both (overrides go after either)")
    if not args.preset and not config_path:
        raise ConfigError("give a config file (corecode train CONFIG.yaml) or --preset cpu-smoke|cpu-demo")
    overrides = model_overrides(args.model, overrides)
    config = load_config(preset_path(args.preset) if args.preset else config_path, overrides)
    if args.print_config:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    from corecode.training.runner import run_training

    result = run_training(config)
    print(json.dumps(result, indent=2))
    return 0
