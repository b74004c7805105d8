"""Collaborative GRPO training (the only layer that imports torch and trl, inside its functions).

``run_training(TrainConfig)`` runs stage 1 (Planner RL against a frozen Coder), stage 2 (Coder RL on the
specialized Planner's cached plans), or R alternating rounds; ``corecode train`` is its command line.
Importing this package is cheap: torch / transformers / trl load when a stage starts.
"""

from corecode.training.config import PRESETS, STAGES, TrainConfig, load_config, preset_path

__all__ = ["TrainConfig", "load_config", "preset_path", "PRESETS", "STAGES", "run_training"]


def run_training(config: TrainConfig) -> dict[str, str]:
    from corecode.training.runner import run_training as _run

    return _run(config)
