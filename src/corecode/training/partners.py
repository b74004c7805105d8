"""The frozen partner of each stage, and the stage-2 plan cache.

Stage 1's frozen Coder and stage 2's frozen Planner are ordinary corecode backends: ``openai:MODEL@URL``
(a vLLM server: the real-run setup), any other backend spec, a ``package.module:factory`` plug-in, or (no
spec) the partner's checkpoint run in-process with the transformers backend. The policy being trained is
sampled for validation through :class:`PolicyBackend`, the transformers backend over the in-memory model.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from corecode.agents import TaskView, render_prompt, shown_plan
from corecode.backends import Backend, SamplingConfig, load_backend
from corecode.backends.transformers_backend import TransformersBackend, TransformersConfig
from corecode.errors import TrainingError
from corecode.training.models import distributed_state
from corecode.types import Problem

__all__ = ["partner_backend", "PolicyBackend", "coder_writer", "checkpoint_hash", "PlanCache"]


def partner_backend(spec: str | None, checkpoint: str, bf16: bool, batch_size: int = 8) -> Backend:
    """The frozen partner: ``spec`` when given, else ``checkpoint`` in-process (transformers, ``batch_size``
    conversations per generate() call)."""
    if spec:
        return load_backend(spec)
    import torch

    device = f"cuda:{distributed_state().local_process_index}" if torch.cuda.is_available() else "cpu"
    return load_backend(
        f"transformers:{checkpoint}", dtype="bfloat16" if bf16 else "float32", device=device, batch_size=batch_size
    )


class PolicyBackend(TransformersBackend):
    """The transformers backend over a model object already in memory (the policy being trained)."""

    def __init__(self, model: Any, tokenizer: Any, name: str = "policy", batch_size: int = 8):
        import torch

        self._torch = torch
        self.config = TransformersConfig(batch_size=batch_size, device=str(next(model.parameters()).device))
        self.name = name
        self.model = model
        self.tokenizer = copy.copy(tokenizer)  # our padding side must not leak into the trainer's tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def generate(self, conversations, sampling, n=1):
        was_training = self.model.training
        self.model.eval()
        try:
            return super().generate(conversations, sampling, n)
        finally:
            self.model.train(was_training)

    def close(self) -> None:
        self.model = None


def coder_writer(backend: Backend, sampling: SamplingConfig, samples: int):
    """A ProgramWriter: the Coder's M answers per plan, all conversations in one backend call."""

    def write(plans: Sequence[str], problems: Sequence[Problem]) -> list[list[str]]:
        conversations = [
            render_prompt("coder_with_plan", TaskView.from_problem(p), plan=shown_plan(plan))
            for plan, p in zip(plans, problems)
        ]
        groups = backend.generate(conversations, sampling, n=samples)
        return [[c.text for c in group] for group in groups]

    return write


def checkpoint_hash(source: str) -> str:
    """A short content hash of a checkpoint directory's weights and config (or of a backend spec)."""
    path = Path(source)
    digest = hashlib.sha256()
    if not path.is_dir():
        digest.update(source.encode())
        return digest.hexdigest()[:16]
    files = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin", ".json") and p.is_file())
    if not files:
        raise TrainingError(f"no weights in the planner checkpoint {path}")
    for file in files:
        digest.update(file.name.encode())
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(8 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


class PlanCache:
    """One plan per problem, stored as JSONL keyed by problem id, one file per planner checkpoint hash.

    A restart reads the file and asks the Planner only for the problems it lacks. A plan shorter than
    ``min_chars`` is regenerated (authors: 50 characters), up to ``attempts`` tries; the last try is kept.
    """

    def __init__(self, directory: Path, planner_key: str, min_chars: int = 50, attempts: int = 3):
        self.path = Path(directory) / f"plans-{planner_key}.jsonl"
        self.min_chars, self.attempts = min_chars, attempts

    def load(self) -> dict[str, str]:
        plans: dict[str, str] = {}
        if self.path.is_file():
            for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    row = json.loads(line)
                    plans[row["problem_id"]] = row["plan"]
                except (json.JSONDecodeError, KeyError) as exc:
                    raise TrainingError(f"{self.path}, row {number}: not a plan record ({exc})") from exc
        return plans

    def ensure(self, problems: Sequence[Problem], planner: Backend, sampling: SamplingConfig) -> dict[str, str]:
        plans = self.load()
        todo = [p for p in problems if p.id not in plans]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in tqdm(range(self.attempts), desc="stage 2 plans", disable=not todo):
            if not todo:
                break
            conversations = [render_prompt("planner", TaskView.from_problem(p)) for p in todo]
            answers = [group[0].text for group in planner.generate(conversations, sampling, n=1)]
            last = attempt == self.attempts - 1
            retry = []
            with self.path.open("a", encoding="utf-8") as fh:
                for problem, plan in zip(todo, answers):
                    if len(plan.strip()) < self.min_chars and not last:
                        retry.append(problem)
                        continue
                    plans[problem.id] = plan
                    fh.write(json.dumps({"problem_id": problem.id, "plan": plan, "attempt": attempt + 1}) + "\n")
            todo = retry
        return {p.id: plans[p.id] for p in problems}
