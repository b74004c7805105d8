"""`corecode train`: stage 1, stage 2, or R alternating rounds of both, with resume.

Layout of ``output_dir``::

    config.yaml                       the resolved TrainConfig
    validation-overlap.json           ids of validation problems that are also training problems (a note on
                                      stderr when there are any)
    plans/plans-<planner hash>.jsonl  stage-2 plan cache (one file per frozen-Planner checkpoint)
    round1/planner/                   stage 1: checkpoint-N/, final/, executions-rank0.jsonl,
                                      metrics.jsonl, validation.jsonl, curves.png, runs/ (TensorBoard)
    round1/coder/                     stage 2: the same files
    round2/...                        further rounds (rounds > 1) start from the previous round's finals
    debug_cases/cases-<coder hash>.jsonl  debugger stage: the frozen Coder's failing programs
    debugger/                         stage=debugger: the same files as a stage directory
    retrieval/                        stage=retrieval: the same files as a stage directory
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from corecode.errors import ConfigError
from corecode.training.config import TrainConfig
from corecode.training.data import load_problems, unique_problems
from corecode.training.models import distributed_state, import_training_stack, resolve_model

__all__ = ["run_training", "check_launch"]


def run_training(config: TrainConfig) -> dict[str, str]:
    """Run the configured stages; return the final checkpoints {"planner": dir, "coder": dir} (or
    {"debugger" | "retrieval": dir, "coder": dir} for those stages)."""
    import_training_stack()
    from corecode.training.stage1 import run_planner_stage
    from corecode.training.stage2 import run_coder_stage

    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    import yaml

    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
    problems = load_problems(
        config.benchmark, config.split, path=config.data_path, limit=config.limit, ids=config.problem_ids
    )
    validation = []
    if config.validation_limit:
        same = config.validation_benchmark in (None, config.benchmark)
        validation = load_problems(
            config.benchmark if same else config.validation_benchmark,
            config.validation_split,
            path=config.data_path if same else None,
            limit=config.validation_limit,
            ids=config.validation_ids,
        )
        shared = {p.id for p in validation} & {p.id for p in problems}
        if shared:
            print(f"corecode train: note: {len(shared)} of {len(validation)} validation problems are training "
                  "problems; validation then measures fit to them, not what carries over to new problems",
                  file=sys.stderr)
        (out / "validation-overlap.json").write_text(json.dumps(sorted(shared)), encoding="utf-8")

    state = distributed_state()
    check_launch(config, state.num_processes)
    with state.main_process_first():  # one process builds / converts the models, the others reuse them
        planner = resolve_model(config.planner_model, config.seed)
        coder = resolve_model(config.coder_model, config.seed)
        auxiliary = None
        if config.stage in ("debugger", "retrieval"):
            auxiliary = resolve_model(getattr(config, f"{config.stage}_model"), config.seed)
    if config.method != "corecode":  # a baseline of METHOD.md section 6: it trains coder_model alone
        from corecode.training.baselines import run_method

        result = run_method(config, problems, validation)
        (out / "final.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
        return result
    if config.prepare_only:
        result = _prepare(config, planner, coder, problems, validation)
        (out / "prepared.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
        return result
    if auxiliary is not None:
        result = {config.stage: _run_auxiliary_stage(config, auxiliary, planner, coder, problems, validation), "coder": coder}
        (out / "final.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
        return result
    for round_number in range(1, config.rounds + 1):
        round_dir = out / f"round{round_number}"
        if config.stage in ("planner", "both"):
            planner = str(run_planner_stage(config, round_dir / "planner", planner, coder, problems, validation))
        if config.stage in ("coder", "both"):
            coder = str(
                run_coder_stage(config, round_dir / "coder", coder, planner, problems, validation, out / "plans")
            )
    result = {"planner": planner, "coder": coder}
    (out / "final.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def check_launch(config: TrainConfig, num_processes: int) -> None:
    """What a run on ``num_processes`` processes refuses before it loads anything."""
    if config.validation_limit and num_processes > 1:
        raise ConfigError(
            "the validation probe samples the policy on one process, which deadlocks sharded (ZeRO-3 / FSDP) "
            "runs: set validation_limit=0 for multi-process training and evaluate the checkpoints with corecode eval"
        )
    if num_processes > 1 and config.method == "corecode" and config.stage == "both" and config.use_plans:
        raise ConfigError(
            "stage=both in a multi-process run would stop at stage 2: its plans come from the stage-1 Planner and "
            "must be written on one process first (a multi-process run never writes them; the other ranks would "
            "wait at a barrier past the process group's timeout). Run the stages as three commands: stage=planner "
            "(multi-process); stage=coder --model planner=OUTPUT_DIR/round1/planner/final prepare_only=true (one "
            "process); stage=coder with the same --model planner= (multi-process). See docs/training.md"
        )


def _run_auxiliary_stage(config: TrainConfig, init: str, planner: str, coder: str, problems, validation) -> str:
    """stage=debugger or stage=retrieval: one of MapCoder's auxiliary agents against the frozen Coder."""
    out = Path(config.output_dir)
    if config.stage == "retrieval":
        from corecode.training.retrieval import run_retrieval_stage

        return str(run_retrieval_stage(config, out / "retrieval", init, coder, problems, validation))

    from corecode.training.debugger import run_debugger_stage
    from corecode.training.stage2 import require_cached_plans, stage2_plans

    unique = unique_problems(problems, validation)
    require_cached_plans(config, planner, unique, out / "plans")  # every rank, before the barrier
    with distributed_state().main_process_first():
        plans = stage2_plans(config, planner, unique, out / "plans")
    return str(run_debugger_stage(config, out / "debugger", init, coder, problems, validation, out / "debug_cases", plans))


def _prepare(config: TrainConfig, planner: str, coder: str, problems, validation) -> dict[str, str]:
    """prepare_only: the stage-2 plans and / or the debugging cases, written to their caches."""
    from corecode.training.stage2 import stage2_plans

    out = Path(config.output_dir)
    unique = unique_problems(problems, validation)
    plans = stage2_plans(config, planner, unique, out / "plans")
    result = {"plans": str(out / "plans") if plans is not None else "none (use_plans=false)"}
    if config.stage == "debugger":
        from corecode.training.debugger import prepare_debug_cases

        cases = prepare_debug_cases(config, coder, problems, out / "debug_cases", plans)
        result["debug_cases"] = f"{len(cases)} case(s) in {out / 'debug_cases'}"
    return result
