"""`corecode solve`: solve one benchmark problem with one pipeline and print the trace and the program.

    corecode solve --benchmark humaneval --task-id HumanEval/0 --pipeline planner_coder
    corecode solve --benchmark mbpp --task-id 11 --pipeline direct --model openai:qwen@http://127.0.0.1:8000/v1
    corecode solve ... --model planner=llamacpp:planner.gguf --model coder=qwen2.5-coder-0.5b --json

Models are chosen as in `corecode eval` and `corecode train`: ``--model SPEC`` for every role without its own,
``--model ROLE=SPEC`` (repeatable) for one role or slot. ``--planner-model``, ``--coder-model`` and
``--role-model`` are deprecated aliases (they still work, with a warning).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any, TextIO

from corecode.errors import ConfigError

_RULE = "─" * 78


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", required=True, help="benchmark name (see `corecode benchmarks`)")
    parser.add_argument("--task-id", required=True, help='problem id, e.g. "HumanEval/0" or "11"')
    parser.add_argument("--split", default="all", help="benchmark split to search (default: all)")
    parser.add_argument("--path", default=None, help="local benchmark file (JSONL/JSON/parquet)")
    parser.add_argument("--pipeline", default="planner_coder", help="direct, cot, scot, self_planning, "
                        "planner_coder, reflexion, mapcoder, or module:Class (default: planner_coder)")
    parser.add_argument("--model", action="append", default=[], metavar="SPEC",
                        help="model for every role without its own (a built-in name, KIND:TARGET or module:factory; "
                        "default: the built-in default); repeat as ROLE=SPEC for one role or slot, e.g. "
                        "--model planner=openai:NAME@http://localhost:8000/v1 --model plan_verifier=...")
    parser.add_argument("--planner-model", default=None, help="deprecated: use --model planner=SPEC")
    parser.add_argument("--coder-model", default=None, help="deprecated: use --model coder=SPEC")
    parser.add_argument("--role-model", action="append", default=[], metavar="ROLE=SPEC",
                        help="deprecated: use --model ROLE=SPEC")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    parser.add_argument("--top-p", type=float, default=0.95, help="nucleus sampling mass")
    parser.add_argument("--max-tokens", type=int, default=512, help="maximum new tokens per agent call")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed where the backend allows one")
    parser.add_argument("--k", type=int, default=None, help="mapcoder: similar problems recalled")
    parser.add_argument("--t", type=int, default=None, help="mapcoder: debugging rounds per plan")
    parser.add_argument("--max-rounds", type=int, default=None, help="reflexion: reflect-and-retry rounds")
    parser.add_argument("--prompt-dir", default=None, help="folder of prompt files overriding the built-in ones")
    parser.add_argument("--show-prompts", action="store_true", help="print each call's prompt too")
    parser.add_argument("--json", action="store_true", help="print the solution as one JSON object")


def _deprecated(old: str, new: str) -> None:
    print(f"corecode solve: {old} is deprecated and will be removed; use {new} (as in corecode eval and train)",
          file=sys.stderr)


def _model_specs(args: argparse.Namespace) -> dict[str, str]:
    from corecode.backends import DEFAULT_MODEL
    from corecode.evaluation.config import parse_model_flags

    default, roles = parse_model_flags(args.model)
    aliases: list[tuple[str, str, str]] = []  # (role, spec, the deprecated flag)
    if args.planner_model:
        aliases.append(("planner", args.planner_model, "--planner-model"))
    if args.coder_model:
        aliases.append(("coder", args.coder_model, "--coder-model"))
    for item in args.role_model:
        role, sep, spec = item.partition("=")
        if not sep or not role or not spec:
            raise ConfigError(f"--role-model expects ROLE=SPEC, got {item!r}")
        aliases.append((role.strip(), spec.strip(), "--role-model"))
    for role, spec, flag in aliases:
        _deprecated(flag, f"--model {role}=SPEC")
        if roles.get(role, spec) != spec:
            raise ConfigError(f"two models for role {role!r}: --model {role}={roles[role]} and {flag} {spec}")
        roles[role] = spec
    return {"default": default or DEFAULT_MODEL, **roles}


def _pipeline_options(args: argparse.Namespace) -> dict[str, Any]:
    given = {"k": args.k, "t": args.t, "max_rounds": args.max_rounds}
    return {name: value for name, value in given.items() if value is not None}


def print_solution(solution: Any, out: TextIO, show_prompts: bool = False) -> None:
    """The trace (one block per agent call), the plan in its four parts when there is one, the program."""
    for number, call in enumerate(solution.trace, 1):
        print(f"{_RULE}\n[{number}] {call.role} · model {call.model} · prompt {call.prompt_tokens} tok · "
              f"completion {call.completion_tokens} tok · {call.time_s:.1f} s"
              + (" · TRUNCATED (max tokens)" if call.truncated else ""), file=out)
        if show_prompts:
            for message in call.messages:
                print(f"<{message['role']}>\n{message['content']}", file=out)
            print("<output>", file=out)
        print(call.output.rstrip(), file=out)
    plan = solution.parsed_plan
    if plan is not None and solution.pipeline == "planner_coder":
        missing = f" (missing: {', '.join(plan.missing)})" if plan.missing else ""
        print(f"{_RULE}\nPLAN (Algorithmic Thought, {4 - len(plan.missing)} of 4 parts){missing}\n{plan.format()}",
              file=out)
    print(f"{_RULE}\nPROGRAM" + (f" (none: {solution.failure})" if solution.failure else ""), file=out)
    print(solution.program.rstrip(), file=out)
    tokens = f"{solution.prompt_tokens} prompt + {solution.completion_tokens} completion tokens"
    public = "" if solution.public_passed is None else f", public tests passed: {solution.public_passed}"
    print(f"{_RULE}\n{len(solution.trace)} agent call(s), {tokens}, {solution.rounds} feedback round(s){public}",
          file=out)


def _sandbox_for(pipeline_cls: Any, stack: contextlib.ExitStack) -> Any:
    """A sandbox for the pipelines that run public tests (closed with ``stack``), else None."""
    if not pipeline_cls.needs_sandbox:
        return None
    from corecode.sandbox import Sandbox, SandboxConfig

    return stack.enter_context(Sandbox(SandboxConfig()))


def run(args: argparse.Namespace) -> int:
    from corecode.backends import SamplingConfig, load_backend
    from corecode.benchmarks import get_problem
    from corecode.pipelines import PIPELINES, build_pipeline
    from corecode.registry import resolve

    problem = get_problem(args.benchmark, args.task_id, args.split, path=args.path)
    sampling = SamplingConfig(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                              seed=args.seed)
    pipeline_cls = resolve(PIPELINES, args.pipeline, "pipeline")
    with contextlib.ExitStack() as stack:
        loaded: dict[str, Any] = {}
        models = {}
        for role, spec in _model_specs(args).items():
            if spec not in loaded:
                loaded[spec] = load_backend(spec)
                stack.callback(loaded[spec].close)
            models[role] = loaded[spec]
        sandbox = _sandbox_for(pipeline_cls, stack)
        pipeline = build_pipeline(args.pipeline, models, sampling=sampling, sandbox=sandbox,
                                  prompt_dir=args.prompt_dir, **_pipeline_options(args))
        solution = pipeline.solve(problem)
    if args.json:
        print(json.dumps(solution.to_dict(), indent=2))
    else:
        print_solution(solution, sys.stdout, args.show_prompts)
    return 0
