"""`corecode train CONFIG.yaml [key=value ...]` or `corecode train --preset cpu-smoke [key=value ...]`."""

from __future__ import annotations

import argparse
import json

from corecode.errors import ConfigError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="training config (YAML); see configs/train/ and docs/training.md")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. max_steps=10 rewards.tau=0.5")
    parser.add_argument("--preset", help="a built-in config: cpu-smoke (under a minute) or cpu-demo (30-40 min on 2 CPU cores)")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def run(args: argparse.Namespace) -> int:
    from corecode.training.config import load_config, preset_path

    config_path, overrides = args.config, list(args.overrides)
    if config_path and "=" in config_path:  # `corecode train --preset x key=value`: no file, only overrides
        config_path, overrides = None, [config_path, *overrides]
    if args.preset and config_path:
        raise ConfigError("give a config file or --preset, not both (overrides go after either)")
    if not args.preset and not config_path:
        raise ConfigError("give a config file (corecode train CONFIG.yaml) or --preset cpu-smoke|cpu-demo")
    config = load_config(preset_path(args.preset) if args.preset else config_path, overrides)
    if args.print_config:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    from corecode.training.runner import run_training

    result = run_training(config)
    print(json.dumps(result, indent=2))
    return 0
