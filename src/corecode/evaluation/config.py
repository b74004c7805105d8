"""Every option of an evaluation run, in one frozen dataclass; YAML files and CLI flags only fill it.

Precedence: the dataclass defaults < the YAML file (``--config``) < flags given on the command line.
The resolved config is written to ``RUN_DIR/config.yaml``; a run directory is resumed only with the same
settings (see :meth:`EvalConfig.generation_key`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.backends.base import SamplingConfig
from corecode.errors import ConfigError

__all__ = ["EvalConfig", "DEFAULT_MODEL", "parse_model_flags", "slug"]

DEFAULT_MODEL = "qwen2.5-coder-0.5b"
_ROLE_FLAG = re.compile(r"^([a-z_]+)=(.+)$")


def slug(text: str) -> str:
    """A file-name-safe version of a model spec or name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "x"


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run: which problems, which pipeline and models, how many samples, where to write."""

    benchmark: str = field(default="humaneval", metadata={"help": "benchmark name (corecode benchmarks)"})
    split: str | None = field(default=None, metadata={"help": "split; None = the benchmark's evaluation split"})
    limit: int | None = field(default=None, metadata={"help": "evaluate only the first N problems"})
    data_path: str | None = field(
        default=None, metadata={"help": "local benchmark file (e.g. mbpp.jsonl) instead of the built-in/Hub copy"}
    )
    pipeline: str = field(default="planner_coder", metadata={"help": "pipeline name or module:object"})
    model: str = field(default=DEFAULT_MODEL, metadata={"help": "backend spec used for every role"})
    role_models: Mapping[str, str] = field(
        default_factory=dict, metadata={"help": "backend spec per role, e.g. {planner: ..., coder: ...}"}
    )
    n: int = field(default=5, metadata={"help": "samples per problem (pass@k is reported for every k <= n)"})
    temperature: float = field(default=0.2, metadata={"help": "sampling temperature of every agent"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling mass"})
    max_tokens: int = field(default=1024, metadata={"help": "maximum new tokens per model call"})
    seed: int = field(
        default=0, metadata={"help": "base seed; sample i of problem p draws with a seed derived from (seed, p, i)"}
    )
    out: str | None = field(default=None, metadata={"help": "run directory; default runs/BENCH-PIPELINE-MODEL-nN"})
    workers: int | None = field(default=None, metadata={"help": "sandbox processes; None = one per CPU"})
    concurrency: int = field(
        default=1, metadata={"help": "samples generated at once (threads); >1 only helps with a server backend"}
    )
    baseline: str = field(
        default="auto",
        metadata={
            "help": "Coder-alone run for Collaboration Gain: 'auto' (reuse a matching run next to this one, "
            "else run pipeline 'direct'), 'off', or a run directory"
        },
    )

    def sampling(self) -> SamplingConfig:
        """The sampling settings every agent call of this run uses (validated by SamplingConfig)."""
        return SamplingConfig(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"n (samples per problem) must be >= 1, got {self.n}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be >= 1 (or omitted for all problems), got {self.limit}")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers must be >= 1 (or omitted for one per CPU), got {self.workers}")
        self.sampling()  # the sampling options are checked where they are defined, once
        if self.n > 1 and self.temperature == 0:
            raise ConfigError(
                f"n={self.n} samples at temperature 0 are {self.n} copies of one greedy answer, which makes "
                "pass@k for k > 1 meaningless; set --temperature > 0 (e.g. 0.8) or --n 1"
            )
        if not self.model:
            raise ConfigError("model must be a backend spec, e.g. qwen2.5-coder-0.5b or openai:NAME@URL")
        for role, spec in self.role_models.items():
            if not isinstance(spec, str) or not spec:
                raise ConfigError(f"role_models.{role} must be a backend spec string, got {spec!r}")
        object.__setattr__(self, "role_models", dict(self.role_models))

    # ------------------------------------------------------------------ derived values
    def model_for(self, role: str) -> str:
        """The backend spec of one role (its own, else the run's default model)."""
        return self.role_models.get(role, self.model)

    @property
    def run_dir(self) -> Path:
        if self.out:
            return Path(self.out)
        name = f"{self.benchmark}-{self.pipeline}-{slug(self.model)}-n{self.n}"
        return Path("runs") / slug(name)

    def generation_key(self) -> dict[str, Any]:
        """The settings that decide what the samples are: a run directory resumes only when these match.

        ``limit`` is not one of them: sample i of a problem is the same whichever problems surround it,
        so a run can be extended (``--limit 10`` then ``--limit 20`` generates only the 10 new problems).
        """
        return {
            "benchmark": self.benchmark,
            "split": self.split,
            "pipeline": self.pipeline,
            "models": self.models_by_role(),
            "n": self.n,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def models_by_role(self) -> dict[str, str]:
        return {"default": self.model, **dict(sorted(self.role_models.items()))}

    # ------------------------------------------------------------------ (de)serialization
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["role_models"] = dict(self.role_models)
        return d

    def replace(self, **changes: Any) -> "EvalConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "config") -> "EvalConfig":
        """Build from a mapping (a parsed YAML file); an unknown key is an error that lists the valid ones."""
        valid = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ConfigError(f"{source}: unknown option(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")
        try:
            return cls(**dict(data))
        except TypeError as exc:
            raise ConfigError(f"{source}: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> "EvalConfig":
        """Read a YAML file (a mapping of options), then apply ``overrides`` (e.g. CLI flags)."""
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of options at the top level, got {type(data).__name__}")
        return cls.from_mapping({**data, **overrides}, source=str(path))


def parse_model_flags(flags: list[str]) -> tuple[str | None, dict[str, str]]:
    """``--model`` values: a plain spec sets the default model; ``ROLE=SPEC`` sets one role's model.

    >>> parse_model_flags(["qwen2.5-coder-0.5b", "planner=openai:m@http://h:8000/v1"])
    ('qwen2.5-coder-0.5b', {'planner': 'openai:m@http://h:8000/v1'})
    """
    default: str | None = None
    roles: dict[str, str] = {}
    for flag in flags:
        match = _ROLE_FLAG.match(flag)
        if match:
            roles[match.group(1)] = match.group(2)
        elif default is None:
            default = flag
        else:
            raise ConfigError(
                f"--model given two default models ({default!r} and {flag!r}); "
                "give one default and per-role models as ROLE=SPEC"
            )
    return default, roles
